"""A device: where a stack of blocks runs, and the runner contract every device gives the engine.

    runner = device.upload(stack, options)   # weights on the device, caches reserved, or UploadRefused naming why
    seq = runner.new_sequence()              # one conversation's KV cache (and recurrent state)
    logits = runner.forward(rows)            # logits of the rows that ask for them, in row order
    seq.truncate(n)                          # back to its first n tokens
    blob = seq.save(); runner.load(blob)     # its state as bytes, and back (exact: Warm Start resumes from it)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Sequence

import numpy as np

from kinetic.errors import KineticError

if TYPE_CHECKING:  # blocks.py imports the package, whose __init__ imports this module
    from kinetic.contracts.blocks import Stack


class DeviceSequence(Protocol):
    n_tokens: int  # tokens held in its cache
    hidden: dict[int, np.ndarray]  # position -> [n_embd] float32, of the rows that asked (Row.hidden), until cut

    def truncate(self, n: int) -> None:
        """Forget every token from position n on."""

    def save(self) -> bytes:
        """Its state (what its n_tokens tokens left behind), for runner.load."""


@dataclass(frozen=True)
class Row:
    """One token of a forward pass. Rows of one pass may belong to several sequences (Convoy), and may
    form a tree inside one (RAD-1): a row sees its sequence's cached tokens, then the rows of its path."""

    sequence: DeviceSequence
    token: int
    position: int
    parent: int = -1  # index in the pass of the row before this one on its path; -1 if none
    logits: bool = False  # whether to compute this row's logits
    top: int = 0  # with logits, k > 0: only its k largest logits are read, so any logit that cannot be among
    # them may come back as -inf (Shortlist); 0: every logit
    hidden: bool = False  # keep its hidden state after the output norm in its sequence: seq.hidden[position]
    vector: Optional[np.ndarray] = field(default=None, compare=False)  # [n_embd] float32, for a stack with an
    # input (Stack.input): the hidden state it is made from


def linear_batches(rows: Sequence[Row], device: str) -> list[tuple[Any, list[int]]]:
    """(sequence, row indices) per sequence, for a device that runs linear batches only: each row must
    continue its sequence, after the row before it; else a KineticError naming `device` ("the CPU")."""
    groups: dict[int, tuple[Any, list[int]]] = {}
    for index, row in enumerate(rows):
        seq, batch = groups.setdefault(id(row.sequence), (row.sequence, []))
        parent = batch[-1] if batch else -1
        if row.position != seq.n_tokens + len(batch) or row.parent != parent:
            raise KineticError(f"{device} runs linear batches: each row continues its sequence "
                               f"(row {index} is at position {row.position} after row {row.parent})")
        batch.append(index)
    return list(groups.values())


def forward_by_sequence(rows: Sequence[Row], device: str, most: int, n_vocab: int,
                        run_pass: Callable[[Any, list[Row], list[int]], Optional[np.ndarray]],
                        owned: bool = False) -> np.ndarray:
    """Runner.forward for a device that runs one sequence's linear batch at a time, in passes of at most `most`
    rows: run_pass(sequence, its rows, the indices among them that ask for logits) -> their logits [asks, n_vocab]
    (None without any); every asking row's logits in row order. owned: run_pass's logits are a new array each
    time, so a forward of one pass returns them as they are (a decode step's logits are not copied again)."""
    batches = linear_batches(rows, device)
    if owned and len(batches) == 1 and len(rows) <= most:
        seq, indices = batches[0]
        logits = run_pass(seq, list(rows), [i for i in indices if rows[i].logits])
        return logits if logits is not None else np.empty((0, n_vocab), np.float32)
    slot = {i: j for j, i in enumerate(i for i, row in enumerate(rows) if row.logits)}
    out = np.empty((len(slot), n_vocab), np.float32)
    for seq, indices in batches:
        for start in range(0, len(indices), most):
            part = indices[start : start + most]
            asks = [j for j, i in enumerate(part) if rows[i].logits]
            logits = run_pass(seq, [rows[i] for i in part], asks)
            if asks:
                out[[slot[part[j]] for j in asks]] = logits
    return out


def state_blob(magic: bytes, n_tokens: int, payload: Sequence[bytes]) -> bytes:
    """A sequence state as seq.save() gives it: the device's 8-byte magic, n_tokens as int64, the payload."""
    return b"".join([magic, np.int64(n_tokens).tobytes(), *payload])


def state_magic(device_magic: bytes, cache_types: tuple[str, str]) -> bytes:
    """A device's state magic for these cache types, so that a state never loads into a cache of other types."""
    return device_magic + ",".join(cache_types).encode() + b";"


def state_tokens(blob: bytes, magic: bytes, device: str) -> tuple[int, int]:
    """(n_tokens, where the payload starts) of a state_blob; a KineticError naming device if blob is not one."""
    head = len(magic) + 8
    if blob[: len(magic)] != magic or len(blob) < head:
        raise KineticError(f"not a saved {device} sequence state")
    return int(np.frombuffer(blob, np.int64, 1, len(magic))[0]), head


class Runner(Protocol):
    stack: "Stack"  # what it runs
    device_name: str  # as status lines print it: "the CPU", "NVIDIA H200"
    device_class: str  # what decides its bits besides the build, as receipts record it: "cpu-x86_64-avx2", "cuda-sm90"
    context_length: int  # tokens per sequence: UploadOptions' own, or less where the device shrank it to fit
    cache_types: tuple[str, str]  # the keys' and the values' cache types, as UploadOptions asked
    context_note: Optional[str]  # why it shrank, as "context 8k <note>; -c to change" says it: "to fit the GPU"
    compile_seconds: float  # time this process has spent compiling the device's kernels (none for cached ones);
    # the engine reports it on its own and leaves it out of the prompt and generation speeds
    shares_passes: bool  # forward reads each weight once for the rows of all its sequences (Convoy runs
    # requests side by side); False: it runs them one sequence after another, and requests take turns

    def new_sequence(self) -> DeviceSequence:
        """A new empty sequence."""

    def forward(self, rows: Sequence[Row]) -> np.ndarray:
        """Run the rows; return [rows asking for logits, n_vocab] float32 logits."""

    def load(self, blob: bytes, into: Optional[DeviceSequence] = None) -> DeviceSequence:
        """A sequence in the state seq.save() gave (into `into`, replacing what it held, if given); a
        KineticError if the blob is not a state of this model on this device."""

    def start_shortlist(self) -> bool:
        """Keep what Shortlist needs (once), so that rows with a top k get only the logits that can be among
        their k largest (Row.top); False where the runner cannot."""

    def start_torque(self) -> bool:
        """Run passes of a few rows from here on as fused calls, one a run of the blocks it takes (Torque), bit
        for bit what the kernel-at-a-time pass gives; False where the runner cannot for this model."""

    def predictor(self) -> Optional["Runner"]:
        """A runner of the stack's prediction block (Stack.prediction) sharing this one's weights; None for a
        stack without one, or where the device cannot run it."""


# the KV cache types every device keeps, by llama.cpp's names: float16, and ggml's q8_0 (blocks of 32 values
# along a head as a float16 scale and 32 int8, about half the memory)
CACHE_TYPES = ("f16", "q8_0")


def cache_rotations(head_dim: int, cache_types: tuple[str, str]) -> tuple[int, int]:
    """The orders of the Walsh-Hadamard rotations a quantized cache's heads take, as llama.cpp 11434 does
    (llama_kv_cache: attn_rot_k, attn_rot_v), for keys and values; 0 for none. Queries and keys turn by one
    orthonormal matrix (so their dot products stay), the largest power of 2 from 64 that divides the head;
    values by one of order 64, and attention's output turns back by it. Spreading a head's outliers over its
    blocks keeps q8_0's error small on models with large keys (Qwen 2.5's)."""
    if head_dim % 64:
        return 0, 0
    keys = 64
    while head_dim % (2 * keys) == 0:
        keys *= 2
    key_type, value_type = cache_types
    return (keys if key_type == "q8_0" else 0), (64 if value_type == "q8_0" else 0)


@dataclass(frozen=True)
class UploadOptions:
    threads: Optional[int] = None  # CPU threads; None for all
    context_length: Optional[int] = None  # tokens per sequence; None for the device's default
    context_given: bool = False  # the user chose it (-c): a device may not shrink it to fit its memory
    cache_types: tuple[str, str] = ("f16", "f16")  # the keys' and the values' (-ctk, -ctv), each of CACHE_TYPES
    gpu_memory: Optional[int] = None  # the most bytes a GPU device takes (--gpu-memory); None for all it has free


class UploadRefused(KineticError):
    """Raised by Device.upload for a stack the device cannot run: a block or weight type it has no kernel
    for, or too little memory. With --device auto the engine then tries the next device and names `reason`
    in its one line; with the device named, str(error) is the failure shown."""

    def __init__(self, title: str, reason: str):
        super().__init__(f"{title} cannot run this model: {reason}")
        self.reason = reason  # one line: "CUDA has no kernel for Q2_K weights (blk.1.ffn_up.weight)"


def check_cache_types(stack: Stack, cache_types: tuple[str, str], title: str) -> None:
    """UploadRefused naming the device (title) where a q8_0 cache cannot hold a head: one not whole blocks of 32."""
    from kinetic.contracts.blocks import Attention

    odd = [b.head_dim for b in stack.mixers() if isinstance(b, Attention) and b.head_dim % 32]
    if "q8_0" in cache_types and odd:
        raise UploadRefused(title, f"a q8_0 KV cache holds heads of a multiple of 32 values, and this model's "
                                   f"have {odd[0]}; use -ctk f16 -ctv f16")


def always_present() -> bool:
    return True


def not_known() -> None:
    return None


@dataclass(frozen=True)
class Device:
    """A place stacks run, registered by a plugin (register_devices). The engine calls present() and probe()
    when choosing the device for a model, then upload() once per model loaded; a plugin imports its heavy
    dependencies inside them, never at import time."""

    name: str  # what --device takes: "cpu", "cuda" (llama.cpp's "cuda0" also works)
    title: str  # how messages name it: "the CPU", "CUDA"
    priority: int  # --device auto tries devices from the highest priority down: CUDA 20, the CPU 0
    probe: Callable[[], Optional[str]]  # None when usable, else the one-line reason it is not
    upload: Callable[[Stack, UploadOptions], Runner]  # a runner of the stack, or raises UploadRefused
    # whether its hardware is here at all (a driver found): --device auto passes over an absent device
    # silently, and names the reason of one present but unusable
    present: Callable[[], bool] = always_present
    # bytes free on the device now, for choosing what fits (kinetic pull, fit); None where it cannot say
    free_memory: Callable[[], Optional[int]] = not_known
    # its memory's nominal bandwidth in bytes per second (kinetic fit, doctor); None where it cannot say
    bandwidth: Callable[[], Optional[float]] = not_known
    # why --device auto passes over the device although it is usable (only a software adapter); None: auto tries it
    passed_over: Callable[[], Optional[str]] = not_known

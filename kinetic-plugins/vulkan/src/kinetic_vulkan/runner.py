"""Running a Stack through Vulkan: weights uploaded once, each sequence's float16 KV cache reserved whole, and a pass
of up to ROWS rows of one sequence recorded as one command buffer."""

from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

import numpy as np

from kinetic.contracts.blocks import Attention, Stack
from kinetic.contracts.device import Row, UploadOptions, forward_by_sequence, state_blob, state_magic, state_tokens
from kinetic.errors import KineticError
from kinetic_vulkan import kernels
from kinetic_vulkan.adapter import Gpu
from kinetic_vulkan.layers import (Uploads, VkAttention, VkFeedForward, embed_steps, ff_width, norm_step, products,
                                   quantized)
from kinetic_vulkan.plan import Step, Workspace, record

STATE_MAGIC = b"KVULKKV1"
ROWS = 64  # rows a pass takes at most (fewer where the logits would outgrow a binding)
CACHE_TYPES = ("f16", "f16")  # the only cache it keeps (the reference docs: Vulkan ignores -ctk and -ctv)
Caches = list[tuple[Any, Any]]  # each attention block's keys and values buffers


class VulkanSequence:
    """One conversation: a float16 KV cache per attention block, [context, kv_width / 2] words each, and its pass
    steps on them (made at its first pass)."""

    def __init__(self, runner: "VulkanRunner", caches: Caches):
        self.caches, self._runner = caches, runner
        self.n_tokens = 0
        self.hidden: dict[int, np.ndarray] = {}
        self.steps: Optional[list[Step]] = None

    def truncate(self, n: int) -> None:
        """Forget positions n on: attention never reads past a row's own position, so later ones are rewritten."""
        self.n_tokens = min(self.n_tokens, n)
        self.hidden = {p: h for p, h in self.hidden.items() if p < n}

    def save(self) -> bytes:
        """n_tokens, then each block's keys and values for them: the cache's own bits, so exact."""
        queue, n = self._runner.gpu.device.queue, self.n_tokens
        parts = [bytes(queue.read_buffer(buffer, 0, n * size)) if n else b""
                 for buffer, size in self._runner.cache_buffers(self.caches)]
        return state_blob(state_magic(STATE_MAGIC, CACHE_TYPES), n, parts)

    def restore(self, blob: bytes) -> None:
        n, at = state_tokens(blob, state_magic(STATE_MAGIC, CACHE_TYPES), "Vulkan")
        buffers = self._runner.cache_buffers(self.caches)
        if not 0 <= n <= self._runner.context_length or len(blob) != at + n * sum(s for _, s in buffers):
            raise KineticError("the saved state does not fit this model and context")
        for buffer, size in buffers:
            if n:
                self._runner.gpu.device.queue.write_buffer(buffer, 0, blob[at : at + n * size])
            at += n * size
        self.n_tokens, self.hidden = n, {}


class VulkanRunner:
    context_note = "to fit a Vulkan binding"  # the only reason it shrinks a context (_context)
    shares_passes = False  # requests take turns (the reference docs: Convoy does not run on Vulkan yet)
    cache_types = CACHE_TYPES

    def __init__(self, stack: Stack, options: UploadOptions, gpu: Gpu):
        self.stack, self.gpu = stack, gpu
        self.device_name = gpu.name
        self.device_class = f"vulkan-{gpu.name}; {gpu.driver}"  # the driver compiles the shaders: its bits
        attention = [b for b in stack.mixers() if isinstance(b, Attention)]
        self._widths = [b.n_head_kv * b.head_dim for b in attention]
        self.context_length = _context(options.context_length or stack.context_length, self._widths, gpu.binding_limit)
        q_width = max([b.n_head * b.head_dim for b in attention], default=1)
        rows = max(1, min(ROWS, gpu.binding_limit // (4 * stack.n_vocab)))
        self.ws = Workspace(gpu.device, rows, stack.n_embd, q_width, max(self._widths, default=1),
                            ff_width(stack.mixers()), stack.n_vocab, max([b.n_head for b in attention], default=1))
        up = Uploads(gpu.device, gpu.binding_limit, self.context_length)
        self._embed_steps = embed_steps(up, self.ws, up.matrix(stack.embedding), stack.embedding_scale)
        scale = stack.residual_scale
        self.blocks = [VkAttention(b, up, self.ws, stack.n_embd, scale) if isinstance(b, Attention) else
                       VkFeedForward(b, up, self.ws, stack.n_embd, scale) for b in stack.blocks]
        output = up.matrix(stack.output)
        self._logit_steps = [norm_step(up, self.ws, stack.output_norm, self.ws.x, self.ws.h, stack.n_embd, gather=True,
                                       quantize=quantized([output])),
                             *products(up, self.ws, self.ws.h, output, self.ws.logits, stack.n_vocab,
                                       scale=stack.logit_scale, logits=True)]
        self._hidden_step = norm_step(up, self.ws, stack.output_norm, self.ws.x, self.ws.hidden, stack.n_embd)
        self._spare: list[Caches] = []
        self._ahead: Optional[tuple[tuple, Any]] = None  # (a pass's shape, its command buffer), recorded ahead

    @property
    def compile_seconds(self) -> float:
        return kernels.CLOCK.seconds

    def cache_buffers(self, caches: Caches) -> list[tuple[Any, int]]:
        """Each cache buffer with the bytes a token takes in it, in block order, keys before values."""
        return [(buffer, 2 * width) for pair, width in zip(caches, self._widths) for buffer in pair]

    def new_sequence(self) -> VulkanSequence:
        """A sequence on a reserved cache; its cache is reused by a later sequence once it is collected."""
        caches = self._spare.pop() if self._spare else self._new_caches()
        seq = VulkanSequence(self, caches)
        weakref.finalize(seq, self._spare.append, caches)
        return seq

    def _new_caches(self) -> Caches:
        import wgpu

        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        # whole 16-byte words: attention reads the keys four words at a time
        return [tuple(self.gpu.device.create_buffer(size=-(-2 * width * self.context_length // 16) * 16, usage=usage)
                      for _ in range(2)) for width in self._widths]

    def load(self, blob: bytes, into: Optional[VulkanSequence] = None) -> VulkanSequence:
        seq = into if into is not None else self.new_sequence()
        seq.restore(blob)
        return seq

    def start_shortlist(self) -> bool:
        return False  # every row gets its whole logits

    def predictor(self) -> None:
        return None  # support.refusal refuses stacks with a prediction input; none runs here

    def forward(self, rows: Sequence[Row]) -> np.ndarray:
        """Rows of linear batches of one or more sequences; logits of the rows that ask, in row order."""
        return forward_by_sequence(rows, "the Vulkan device", self.ws.rows, self.stack.n_vocab, self._pass,
                                   owned=True)  # read_back's arrays are new each pass

    def _pass(self, seq: VulkanSequence, batch: list[Row], asks: list[int]) -> Optional[np.ndarray]:
        """Append batch to seq; the logits [len(asks), n_vocab] of batch[asks]."""
        self.ws.set_inputs(np.array([row.token for row in batch]), np.array([row.position for row in batch]),
                           np.array(asks))
        shape = (seq, len(batch), len(asks), any(row.hidden for row in batch))
        ahead, self._ahead = self._ahead, None
        self.gpu.device.queue.submit([ahead[1] if ahead and ahead[0] == shape else self._record(*shape)])
        # While the GPU runs it, record the next pass, guessing it has this one's shape (a decode step's next step,
        # a long prompt's next part): a command buffer is recorded once and submitted once.
        self._ahead = (shape, self._record(*shape))
        logits, normed = self.ws.read_back((len(asks), self.stack.n_vocab), (len(batch) if shape[3] else 0,
                                                                              self.stack.n_embd))
        seq.hidden.update((row.position, normed[i].copy()) for i, row in enumerate(batch) if row.hidden)
        seq.n_tokens = batch[-1].position + 1
        return logits if asks else None

    def _record(self, seq: VulkanSequence, n: int, n_logits: int, hidden: bool):
        """The command buffer of a pass of n rows of seq, n_logits of them asking for logits."""
        outputs = [(self.ws.logits, 4 * n_logits * self.stack.n_vocab),
                   (self.ws.hidden, 4 * n * self.stack.n_embd if hidden else 0)]
        return record(self.gpu.device, self.pass_steps(seq, n_logits, hidden), n, n_logits, outputs,
                      self.ws.readback)

    def pass_steps(self, seq: VulkanSequence, n_logits: int, hidden: bool) -> list[Step]:
        """The steps of a pass of seq's rows: the embeddings' lookup, the blocks', then the normed hidden rows' with
        hidden, then the logits' where n_logits rows ask for them."""
        if seq.steps is None:
            caches = iter(seq.caches)
            seq.steps = [s for b in self.blocks for s in (b.steps(*next(caches)) if isinstance(b, VkAttention)
                                                            else b.steps())]
        return (self._embed_steps + seq.steps + ([self._hidden_step] if hidden else [])
                + (self._logit_steps if n_logits else []))


def _context(wanted: int, widths: list[int], binding_limit: int) -> int:
    """wanted, or fewer tokens where one block's keys would outgrow a binding."""
    return min([wanted] + [binding_limit // (2 * width) for width in widths])

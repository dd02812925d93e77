"""Running a Stack on the GPU: weights uploaded once, the KV cache of one sequence reserved at upload,
a pass of up to ws.rows rows queued as kernels, and the one-token decode step and repeated passes of a few rows
(drafts, Convoy's shared passes) replayed as CUDA graphs."""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional, Sequence

import cupy
import numpy as np

from kinetic.contracts.blocks import Attention, Experts, GatedDeltaNet, Mamba2, Parallel, Rope, ShortConv, Stack, Weight
from kinetic.contracts.device import (Row, UploadOptions, UploadRefused, check_cache_types, forward_by_sequence,
                                      linear_batches, state_blob, state_magic, state_tokens)
from kinetic.errors import KineticError
from kinetic.recurrent import RecurrentStates, cut, has_recurrent
from kinetic.system import memory
from kinetic_cuda import cache as cache_module
from kinetic_cuda import ops
from kinetic_cuda.expert_cache import ExpertCache
from kinetic_cuda.gpu import free_memory, gpu_name
from kinetic_cuda.layers import (GpuAttention, GpuDeltaNet, GpuExperts, GpuFeedForward, GpuInput, GpuMamba2, GpuNorm,
                                 GpuParallel, GpuShortConv, products, rope_table)
from kinetic_cuda.module import CLOCK, kernel
from kinetic_cuda.support import TITLE, matrices, refusal
from kinetic_cuda.weights import GpuMatrix, aligned_bytes, upload_bytes
from kinetic_cuda.workspace import Shape, Workspace, rows_per_pass, workspace_bytes

GIB = 1 << 30
STATE_MAGIC = b"KCUDAKV2"
MIN_CONTEXT = 4096  # shrinking to fit stops here (reference docs, -c)
RESERVE = 256 << 20  # GPU memory Flywheel leaves free, for CUDA graphs and kernel modules
HOST_SPARE = 3 * GIB  # RAM left to other programs when Flywheel copies the experts into page-locked memory
FLYWHEEL_LEAST = ", with Flywheel keeping {} experts a layer on the GPU and the rest in system memory"
GRAPHS = 64  # shapes of passes of a few rows a runner remembers, with the CUDA graphs of those seen twice
GRAPHED_ROWS = 64  # passes of more rows (prompt chunks) are queued: their shapes seldom come back
PINNED_ROWS = 64  # rows of logits a pass takes in page-locked memory (more, which few passes ask, in pageable)
KERNELS = ("quantize_q8", "gate", "add", "scale", "rms_norm", "rope_store", "store_q8", "store_f16", "hadamard",
           "short_conv_keep", "short_conv", "conv_keep", "conv_silu", "ssm_scan", "delta_net_scan", "split_gate",
           "sigmoid_mul", "mul_rows", "silu_gate_rows", "route", "combine_experts", "group_pairs",
           *ops.ATTENTION_KERNELS)
Caches = tuple[list[tuple[cupy.ndarray, cupy.ndarray]], list[cupy.ndarray]]  # keys and values; convolutions' rows
Spans = list[tuple[int, int, "CudaSequence"]]  # each sequence's rows in a pass: its first row, row count, sequence


class CudaSequence:
    """One conversation: a KV cache per attention block (keys, values: kinetic_cuda.cache), each short
    convolution's kept rows ([context, channels] float32, a row per position), the recurrent mixers' states
    (kinetic.recurrent), which a cut between kept states computes again through `replay`(sequence, tokens, first
    position), and its decode graphs."""

    def __init__(self, stack: Stack, context_length: int, caches: Caches, stream, cache_types: tuple[str, str],
                 widths: list[int], replay):
        self.caches, self.conv_rows = caches
        self.stream = stream  # the runner's, which every pass and copy of this cache goes on
        self.cache_types, self.widths = cache_types, widths
        self.recurrent = RecurrentStates(stack, context_length, self.token_bytes(), cupy, cupy.asnumpy) \
            if has_recurrent(stack) else None
        self._replay = replay
        self.n_tokens = 0
        self.hidden: dict[int, np.ndarray] = {}  # position -> hidden state after the output norm (Row.hidden)
        self.decode_graphs: dict = {}  # the one-token pass's CUDA graphs (CudaRunner._decode)
        self.pointers = tuple(array.data.ptr for pair in self.caches for array in pair) + \
            tuple(rows.data.ptr for rows in self.conv_rows)  # what a graph writes

    def token_bytes(self) -> int:
        """What its caches hold for each token."""
        per_token = sum(cache_module.bytes_per_token(t, width) for width in self.widths for t in self.cache_types)
        return per_token + sum(rows[0].nbytes for rows in self.conv_rows)

    def truncate(self, n: int) -> None:
        cut(self, n, self._replay)

    def save(self) -> bytes:
        """n_tokens, then each block's keys and values for them, each short convolution's rows, then the recurrent
        states (kinetic.recurrent): the cache's own bits, so exact."""
        n = self.n_tokens
        parts = []
        with self.stream:
            for pair, width in zip(self.caches, self.widths):
                for cache, cache_type in zip(pair, self.cache_types):
                    parts += cache_module.held(cache, cache_type, n, width, self.stream)
            parts += [rows[:n].get(stream=self.stream).tobytes() for rows in self.conv_rows]
            parts += self.recurrent.parts(n) if self.recurrent is not None else []
            self.stream.synchronize()
        return state_blob(state_magic(STATE_MAGIC, self.cache_types), n, parts)

    def restore(self, blob: bytes) -> None:
        """The state save() gave; a KineticError if blob is not one of this model's on this device."""
        n, head = state_tokens(blob, state_magic(STATE_MAGIC, self.cache_types), "CUDA")
        per_token = self.token_bytes()
        context = len(self.conv_rows[0]) if self.conv_rows else \
            cache_module.positions(self.caches[0][0], self.cache_types[0], self.widths[0])
        states = self.recurrent.saved_bytes(n) if self.recurrent is not None else 0
        if not 0 <= n <= context or len(blob) != head + n * per_token + states:
            raise KineticError("the saved state does not fit this model and context")
        with self.stream:
            at = head
            for pair, width in zip(self.caches, self.widths):
                for cache, cache_type in zip(pair, self.cache_types):
                    at = cache_module.put(cache, cache_type, n, width, blob, at, self.stream)
            for rows in self.conv_rows:
                rows[:n].set(np.frombuffer(blob, np.float32, n * rows.shape[1], at).reshape(n, -1), stream=self.stream)
                at += n * rows[0].nbytes
            if self.recurrent is not None:
                self.recurrent.load(blob, at, n)
            self.stream.synchronize()
        self.n_tokens = n


class CudaRunner:
    context_note = "to fit the GPU"  # the only reason it shrinks a context (_fit)

    @property
    def compile_seconds(self) -> float:
        return CLOCK.seconds

    def __init__(self, stack: Stack, options: UploadOptions, shared: Optional[dict[str, GpuMatrix]] = None):
        """shared: the uploaded matrices of the runner whose prediction block this one runs, by name."""
        check_cache_types(stack, options.cache_types, TITLE)
        self.stack = stack
        self.cache_types = options.cache_types
        shape = Shape.of(stack)
        self._widths = [b.n_head_kv * b.head_dim for b in stack.mixers() if isinstance(b, Attention)]
        self._conv_widths = shape.conv_widths
        fit = _fit(stack, shape, self._widths, options)
        self.context_length, self._slots = fit.context, fit.slots
        # several sequences' rows in one pass (Convoy) with every weight on the GPU, but not with kept convolution
        # rows or recurrent states, which the blocks take from one sequence a pass, nor a prediction block's input
        self.shares_passes = fit.slots is None and not (has_recurrent(stack) or stack.input is not None or any(
            isinstance(b, ShortConv) for b in stack.mixers()))
        self._pinned = fit.slots is not None and _host_fits(stack)
        rows = rows_per_pass(shape, self.context_length)
        self.device_name = gpu_name()
        self.device_class = f"cuda-sm{cupy.cuda.Device(0).compute_capability}"  # its kernels' bits: the chip's
        self._matrices: dict[str, GpuMatrix] = shared if shared is not None else {}
        self._predictor: Optional[CudaRunner] = None
        self._tables: dict[tuple, tuple] = {}
        scale = stack.residual_scale
        self.blocks = [self._block(b, scale, rows) for b in stack.blocks]
        self.embedding, self.output = self._matrix(stack.embedding), self._matrix(stack.output)
        self.output_norm = GpuNorm(stack.output_norm)
        self.input = GpuInput(stack.input, self._matrix, rows) if stack.input is not None else None
        self.ws = Workspace(shape, rows, self.context_length)
        for name in KERNELS:  # fetched before any graph capture
            kernel(name)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._spare_caches = [self._new_caches()]
        self._graphs: OrderedDict = OrderedDict()  # CudaRunner._replayed
        cupy.cuda.Device().synchronize()  # the uploads (default stream) are done before any pass or copy starts

    def _block(self, b, scale: float, rows: int):
        if isinstance(b, Parallel):  # its mixers add into the block's sum, which it scales
            return GpuParallel(b, [self._block(m, 1.0, rows) for m in b.mixers], scale)
        if isinstance(b, Attention):
            return GpuAttention(b, self._matrix, self._table, self.cache_types, scale)
        if isinstance(b, ShortConv):
            return GpuShortConv(b, self._matrix, scale)
        if isinstance(b, Mamba2):
            return GpuMamba2(b, self._matrix, scale)
        if isinstance(b, GatedDeltaNet):
            return GpuDeltaNet(b, self._matrix, scale, rows)
        if isinstance(b, Experts):
            cache = ExpertCache(b, self._slots, self._pinned) if self._slots is not None else None
            return GpuExperts(b, self._matrix, scale, cache)
        return GpuFeedForward(b, self._matrix, scale)

    def _matrix(self, weight: Weight) -> GpuMatrix:
        if weight.key not in self._matrices:
            self._matrices[weight.key] = GpuMatrix.of(weight)
        return self._matrices[weight.key]

    def _table(self, rope: Rope) -> tuple:
        key = (rope.n_dims, rope.base, rope.scale, rope.freq_factors.name if rope.freq_factors else None, rope.yarn,
               rope.attn_factor)
        if key not in self._tables:
            self._tables[key] = rope_table(rope, self.context_length)
        return self._tables[key]

    def _new_caches(self) -> Caches:
        kv = [tuple(cache_module.new_cache(t, self.context_length, width) for t in self.cache_types)
              for width in self._widths]
        return kv, [cupy.zeros((self.context_length, width), cupy.float32) for width in self._conv_widths]

    def sequences_that_fit(self) -> int:
        """Sequences whose caches fit on the GPU at once: the one reserved at upload, and as many more as free GPU
        memory holds, RESERVE kept free (the server's default slot count)."""
        per_sequence = sum(self.context_length * cache_module.bytes_per_token(t, width) for width in self._widths
                           for t in self.cache_types) + self.context_length * 4 * sum(self._conv_widths)
        return 1 + max(0, (free_memory() - RESERVE) // max(1, per_sequence))

    def new_sequence(self) -> CudaSequence:
        """A sequence on a reserved cache; its cache is reused by a later sequence once it is collected."""
        caches = self._spare_caches.pop() if self._spare_caches else self._new_caches()
        seq = CudaSequence(self.stack, self.context_length, caches, self.stream, self.cache_types, self._widths,
                           self._replay)
        weakref.finalize(seq, self._spare_caches.append, caches)
        return seq

    def _replay(self, seq: CudaSequence, tokens: np.ndarray, first: int) -> None:
        """Append tokens at positions first, first + 1, ... to seq again (a cut between kept recurrent states)."""
        self.forward([Row(seq, int(t), first + i, parent=i - 1) for i, t in enumerate(tokens)])

    def load(self, blob: bytes, into: Optional[CudaSequence] = None) -> CudaSequence:
        seq = into if into is not None else self.new_sequence()
        seq.restore(blob)
        return seq

    def start_shortlist(self) -> bool:
        return False  # every row gets its whole logits (Row.top is read by the CPU's Shortlist only)

    def predictor(self) -> Optional["CudaRunner"]:
        """A runner of stack.prediction whose weights are this one's (the output layer, often the largest, too);
        None where the device cannot run the block or it does not fit beside this runner."""
        prediction = self.stack.prediction
        if prediction is None or refusal(prediction) is not None:
            return None
        if self._predictor is None:
            options = UploadOptions(context_length=self.context_length, context_given=True,
                                    cache_types=self.cache_types)
            try:
                self._predictor = CudaRunner(prediction, options, self._matrices)
            except UploadRefused:
                return None
        return self._predictor

    def forward(self, rows: Sequence[Row]) -> np.ndarray:
        """Rows of linear batches of one or more sequences; logits of the rows that ask, in row order: several
        sequences' rows in one pass where they fit one (Convoy), else a sequence at a time."""
        batches = linear_batches(rows, "the CUDA device")
        if len(rows) > self.ws.rows or (len(batches) > 1 and not self.shares_passes):
            return forward_by_sequence(rows, "the CUDA device", self.ws.rows, self.stack.n_vocab,
                                       lambda seq, batch, asks: self._pass(batch, [(0, len(batch), seq)], asks))
        order = [i for _, indices in batches for i in indices]
        spans, first = [], 0
        for seq, indices in batches:
            spans.append((first, len(indices), seq))
            first += len(indices)
        batch = [rows[i] for i in order]
        asks = [j for j, row in enumerate(batch) if row.logits]
        logits = self._pass(batch, spans, asks)
        if not asks:
            return np.empty((0, self.stack.n_vocab), np.float32)
        if order == sorted(order):  # the rows came grouped by sequence (one sequence's, or Convoy's): in row order
            return logits
        slot = {i: a for a, i in enumerate(order[j] for j in asks)}  # row index -> its logits' place in the pass
        return logits[[slot[i] for i, row in enumerate(rows) if row.logits]]

    def _pass(self, batch: list[Row], spans: Spans, asks: list[int]) -> Optional[np.ndarray]:
        """Append each span (first row, row count, sequence) of batch to its sequence; the logits [len(asks),
        n_vocab] of batch[asks]."""
        n = len(batch)
        inputs = np.zeros((3, self.ws.rows), np.int32)
        inputs[0, :n] = [row.token for row in batch]
        inputs[1, :n] = [row.position for row in batch]
        inputs[2, : len(asks)] = asks
        for first, count, seq in spans:
            if seq.recurrent is not None:
                seq.recurrent.tokens[inputs[1, first : first + count]] = inputs[0, first : first + count]
        with self.stream:
            self.stream.synchronize()  # the last pass may still read the inputs
            self.ws.inputs.set(inputs, stream=self.stream)
            if self.input is not None:
                vectors = np.array([row.vector for row in batch], np.float32)
                self.input.vectors[:n].set(vectors, stream=self.stream)
            seq = spans[0][2]
            graphed = len(spans) == 1 and self._slots is None and \
                (seq.recurrent is None or (batch[0].position + 1) % seq.recurrent.interval)
            if n == 1 and asks and graphed:
                self._decode(seq, batch[0].position)
            elif n <= GRAPHED_ROWS and self._slots is None and all(s.recurrent is None for _, _, s in spans):
                self._replayed(spans, n, len(asks))
            else:
                self._queue(spans, n, len(asks), batch[0].position)
            if any(row.hidden for row in batch):
                self.output_norm(self.ws.x, n, self.ws.h)
                normed = self.ws.h[:n].get(stream=self.stream)
                self.stream.synchronize()
                for first, count, seq in spans:
                    seq.hidden.update((row.position, normed[first + i])
                                      for i, row in enumerate(batch[first : first + count]) if row.hidden)
            if asks:
                host = pinned_rows(len(asks), self.stack.n_vocab) if len(asks) <= PINNED_ROWS else None
                logits = self.ws.logits[: len(asks)].get(stream=self.stream, out=host)
                self.stream.synchronize()
            else:
                logits = None
        for first, count, seq in spans:
            seq.n_tokens = batch[first + count - 1].position + 1
        return logits

    def _decode(self, seq: CudaSequence, position: int) -> None:
        """The one-token pass at position, replaying the sequence's CUDA graph of it: one graph, or with recurrent
        states one for each of the two buffers a layer's state alternates between (kinetic.recurrent), captured
        at its first use (which keeps the states as the pass would). A pass that keeps a snapshot copies it, so
        it is queued rather than replayed."""
        key = seq.recurrent.current[0].data.ptr if seq.recurrent is not None else None
        graph = seq.decode_graphs.get(key)
        if graph is None:
            self.stream.begin_capture()
            self._queue([(0, 1, seq)], 1, 1, position)
            graph = seq.decode_graphs[key] = self.stream.end_capture()
        elif seq.recurrent is not None:
            seq.recurrent.advance(position)
        graph.launch(self.stream)

    def _replayed(self, spans: Spans, n: int, n_logits: int) -> None:
        """A pass of a few rows (a draft, or Convoy's rows of several sequences), replaying its CUDA graph from the
        second pass of its shape on: the rows of each sequence, the logits asked and the caches written, the only
        things a graph keeps that the inputs do not give (a new sequence reuses a freed one's caches, and with
        them its graphs). A shape seen once is queued, so passes of shapes that do not come back pay no capture.
        Not with Flywheel, whose pass reads back the experts picked, nor recurrent states, whose pass takes its
        first position from Python."""
        key = (n_logits, tuple((count, seq.pointers) for _, count, seq in spans))
        seen = key in self._graphs
        graph = self._graphs.pop(key, None)
        if seen and graph is None:
            self.stream.begin_capture()
            self._queue(spans, n, n_logits)
            graph = self.stream.end_capture()
        self._graphs[key] = graph
        if len(self._graphs) > GRAPHS:
            self._graphs.popitem(last=False)
        if graph is None:
            self._queue(spans, n, n_logits)
        else:
            graph.launch(self.stream)

    def _queue(self, spans: Spans, n: int, n_logits: int, first: int = 0) -> None:
        """Queue a pass of n rows whose inputs are in ws.inputs, spans (first row, row count, sequence) of them
        continuing each its sequence, at positions first, ... where there is one; logits of the first n_logits
        asking rows. Only attention runs per sequence: a runner that keeps convolution rows or recurrent states
        takes one sequence a pass (shares_passes)."""
        ws = self.ws
        ops.embed(self.embedding, ws.inputs[0], n, ws.x, self.stack.embedding_scale)
        if self.input is not None:
            self.input.run(ws, n)
        seq = spans[0][2]
        attentions, conv_rows, layers = itertools.count(), iter(seq.conv_rows), itertools.count()

        def run(block) -> None:  # its kept state is the next of its kind, in block order
            if isinstance(block, GpuParallel):
                block.run(ws, n, run)
            elif isinstance(block, GpuAttention):
                at = next(attentions)
                block.run(ws, n, [(start, count, *s.caches[at]) for start, count, s in spans])
            elif isinstance(block, GpuShortConv):
                block.run(ws, n, next(conv_rows))
            elif isinstance(block, (GpuMamba2, GpuDeltaNet)):
                block.run(ws, n, seq.recurrent, next(layers), first)
            else:
                block.run(ws, n)

        for block in self.blocks:
            run(block)
        if n_logits:
            self.output_norm(ws.x, n_logits, ws.h, rows=ws.inputs[2], acts=ws.acts if self.output.quantized else None)
            products(ws, ws.h, n_logits, [(self.output, ws.logits, None)], prepared=True)
            if self.stack.logit_scale != 1:
                ops.scale(ws.logits, n_logits, self.stack.logit_scale)


def pinned_rows(rows: int, width: int) -> np.ndarray:
    """[rows, width] float32 in page-locked host memory, which copies from the GPU fill at full speed: from
    CuPy's pool, which takes it back once the array and its views are dropped, so each pass's logits are the
    caller's to keep. Blocks hold a power of two of rows, so the pool keeps few sizes (up to PINNED_ROWS)."""
    size = (1 << (rows - 1).bit_length()) * width
    return np.frombuffer(cupy.cuda.alloc_pinned_memory(4 * size), np.float32, rows * width).reshape(rows, width)


@dataclass(frozen=True)
class Fit:
    context: int
    slots: Optional[int] = None  # Flywheel's GPU slots for each mixture layer's experts; None: every expert there


def _fit(stack: Stack, shape: Shape, widths: list[int], options: UploadOptions) -> Fit:
    """The context asked for if the weights, its KV cache and scratch fit in free GPU memory (less RESERVE under
    --gpu-memory); else, unless -c chose it, the largest multiple of 1024 (at least MIN_CONTEXT) that fits; else,
    for a mixture, the first of those contexts with Flywheel's slots for as many experts a layer as fit beside
    the rest (no fewer than a row picks); else a refusal with the sizes."""
    wanted = options.context_length or stack.context_length
    contexts = [wanted]
    if not options.context_given:
        contexts += [c for c in range(wanted // 1024 * 1024, MIN_CONTEXT - 1, -1024) if c < wanted]
    mixtures = [b for b in stack.mixers() if isinstance(b, Experts)]
    weights, free = upload_bytes(matrices(stack)), free_memory()
    rest, per_slot = flywheel_bytes(stack)
    least = max((b.n_used for b in mixtures), default=0)
    headroom = RESERVE if options.gpu_memory is not None else 0  # a cap's limit is hard: CuPy refuses past it
    for context in contexts:
        if weights + _scratch_bytes(shape, widths, context, options.cache_types) + headroom <= free:
            return Fit(context)
    for context in contexts if mixtures else ():
        scratch = _scratch_bytes(shape, widths, context, options.cache_types)
        slots = (free - rest - scratch - RESERVE) // per_slot
        if slots >= least:
            return Fit(context, min(slots, *(b.n_expert for b in mixtures)))
    scratch = _scratch_bytes(shape, widths, contexts[-1], options.cache_types)
    needed = (rest + RESERVE + least * per_slot if mixtures else weights + headroom) + scratch
    raise UploadRefused(TITLE, f"it needs {needed / GIB:.1f} GiB on the GPU ({weights / GIB:.1f} GiB of weights"
                               f"{FLYWHEEL_LEAST.format(least) if mixtures else ''}), and {gpu_name()} has "
                               f"{free / GIB:.1f} GiB free")


def flywheel_bytes(stack: Stack) -> tuple[int, int]:
    """(the GPU bytes of every matrix but the experts', those of a slot in every mixture layer)."""
    mixtures = [b for b in stack.mixers() if isinstance(b, Experts)]
    experts = {w.key for b in mixtures for w in (b.gate, b.up, b.down)}
    rest = upload_bytes([w for w in matrices(stack) if w.key not in experts])
    return rest, sum(aligned_bytes(w) // b.n_expert for b in mixtures for w in (b.gate, b.up, b.down))


def _host_fits(stack: Stack) -> bool:
    """Whether every expert's bytes fit in page-locked memory with HOST_SPARE of RAM to spare."""
    available = memory()[1]
    needed = sum(aligned_bytes(w) for b in stack.mixers() if isinstance(b, Experts) for w in (b.gate, b.up, b.down))
    return available is not None and needed + HOST_SPARE <= available


def _scratch_bytes(shape: Shape, widths: list[int], context: int, cache_types: tuple[str, str] = ("f16", "f16")) -> int:
    """The KV cache of one sequence and the pass workspace, for a context of this many tokens."""
    cache = sum(context * cache_module.bytes_per_token(t, width) for width in widths for t in cache_types)
    cache += context * 4 * sum(shape.conv_widths)
    return cache + workspace_bytes(shape, rows_per_pass(shape, context), context)

"""A pass as a list of steps (a pipeline, its bind group made once, and its workgroup count for a pass of n rows,
n_logits of them asking for logits), recorded into one command buffer per pass; and the workspace buffers the
steps read and write."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

Groups = Callable[[int, int], tuple[int, int, int]]  # (n, n_logits) -> workgroups x, y, z
MOST_GROUPS = 65535  # workgroups along one dimension (WebGPU's default limit)
TILE, MATMUL_THREADS = 8, 128  # a matrix product's workgroup: tokens and threads, LANES a row (rows.wgsl)
LANE_THREADS = 131072  # the threads a matrix product's rows should take in all (layers.lanes_of)
SPLITS = 16  # workgroups attention splits a row's positions among at most (splits.wgsl)


@dataclass(frozen=True)
class Step:
    pipeline: Any
    bind_group: Any
    groups: Groups


def grid(count: int, z: int = 1) -> tuple[int, int, int]:
    """count workgroups laid out along x, then y (shaders read the index as x + y * groups.x)."""
    return (min(count, MOST_GROUPS), -(-count // MOST_GROUPS), z) if count else (0, 0, 0)


def bind(device: Any, pipeline: Any, *buffers: Any):
    """A bind group of buffers at bindings 0, 1, ... of the pipeline's group 0."""
    entries = [{"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}} for i, b in enumerate(buffers)]
    return device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)


def record(device: Any, steps: list[Step], n: int, n_logits: int, outputs: list[tuple[Any, int]],
           readback: Any) -> Any:
    """The command buffer running steps for a pass of n rows, then copying outputs ((buffer, bytes) each, the first
    bytes of each) one after another into readback.

    The dispatches go straight to wgpu-native's functions: wgpu-py's checked wrappers cost three times as much a
    dispatch, and a decode step makes hundreds of them. A mistake in the pass still raises, from finish(), where
    wgpu-native reports the pass's validation errors."""
    from wgpu.backends.wgpu_native._ffi import ffi, lib

    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    handle, none = compute._internal, ffi.NULL
    set_pipeline, set_bind_group = lib.wgpuComputePassEncoderSetPipeline, lib.wgpuComputePassEncoderSetBindGroup
    dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
    for step in steps:
        x, y, z = step.groups(n, n_logits)
        if x and y and z:
            set_pipeline(handle, step.pipeline._internal)
            set_bind_group(handle, 0, step.bind_group._internal, 0, none)
            dispatch(handle, x, y, z)
    compute.end()
    copy_outputs(encoder, outputs, readback)
    return encoder.finish()


def copy_outputs(encoder: Any, outputs: list[tuple[Any, int]], readback: Any) -> None:
    """Copies the first bytes of each output buffer, one after another, into readback."""
    at = 0
    for buffer, size in outputs:
        if size:
            encoder.copy_buffer_to_buffer(buffer, 0, readback, at, size)
        at += size


class Workspace:
    """The buffers of a pass of up to `rows` rows: its inputs (the run's counts, the rows' tokens and positions, which
    rows ask for logits), the residual stream x, scratch rows, attention's splits (part: their outputs; stats: their
    peaks and sums), a product's input as int8 chunks (xq: four to a word; xd: their scales; xs: their sums), the
    logits, and what the host reads back."""

    def __init__(self, device: Any, rows: int, d: int, q_width: int, kv_width: int, ff_width: int, n_vocab: int,
                 n_head: int):
        import wgpu

        self.device, self.rows = device, rows
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC

        def floats(width: int, label: str):
            return device.create_buffer(label=label, size=4 * rows * max(width, 1), usage=usage)

        self.run = device.create_buffer(label="run", size=16, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        self.tokens, self.positions = floats(1, "tokens"), floats(1, "positions")
        self.logit_rows = floats(1, "logit rows")
        self.x, self.y, self.h, self.hidden = (floats(d, name) for name in ("x", "y", "h", "hidden"))
        self.qa, self.qb, self.att = (floats(q_width, name) for name in ("qa", "qb", "att"))
        self.ka, self.kb, self.v = (floats(kv_width, name) for name in ("ka", "kb", "v"))
        self.part, self.stats = floats(SPLITS * q_width, "splits"), floats(2 * SPLITS * n_head, "split stats")
        self.gu, self.gate = floats(2 * ff_width, "gate and up"), floats(ff_width, "gate")
        widest = max(d, q_width, ff_width)
        self.xq, self.xd, self.xs = (floats(widest // size, name) for size, name in ((4, "xq"), (32, "xd"), (32, "xs")))
        self.logits = floats(n_vocab, "logits")
        # what a pass sends back, its logits then its hidden rows, copied where the host can map them
        self.readback = device.create_buffer(label="readback", size=4 * rows * (n_vocab + d),
                                             usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self.none = floats(1, "none")  # bound where a shader's optional input (a bias) is off
        self.unused = floats(1, "unused")  # and where its optional outputs are
        self._written: dict[str, bytes] = {}  # what _write_if_new last wrote, by buffer

    def set_inputs(self, tokens: np.ndarray, positions: np.ndarray, logit_rows: np.ndarray) -> None:
        """A pass's inputs: tokens [n] (the pass looks up their embeddings), positions [n], logit_rows [n_logits]
        (indices)."""
        queue = self.device.queue
        self._write_if_new(self.run, np.array([len(tokens), len(logit_rows), 0, 0], np.uint32))
        queue.write_buffer(self.tokens, 0, tokens.astype(np.uint32))
        queue.write_buffer(self.positions, 0, positions.astype(np.uint32))
        if len(logit_rows):
            self._write_if_new(self.logit_rows, logit_rows.astype(np.uint32))

    def _write_if_new(self, buffer: Any, data: np.ndarray) -> None:
        """Writes data at the start of buffer unless the last pass wrote the same (decode steps' counts and logit
        rows): a write costs a decode step about 15 us on the host."""
        data = data.tobytes()
        if self._written.get(buffer.label) != data:
            self.device.queue.write_buffer(buffer, 0, data)
            self._written[buffer.label] = data

    def read_back(self, *shapes: tuple[int, int]) -> list[np.ndarray]:
        """The float32 arrays of these (rows, width) shapes that the pass copied into readback one after another
        (record's outputs), once the queue's work is done."""
        total = 4 * sum(rows * width for rows, width in shapes)
        data = map_and_copy(self.device, self.readback, total).view(np.float32)
        ends = np.cumsum([rows * width for rows, width in shapes])
        return [part.reshape(shape) for part, shape in zip(np.split(data, ends[:-1]), shapes)]


def map_and_copy(device: Any, buffer: Any, size: int) -> np.ndarray:
    """A copy of buffer's first size bytes (a MAP_READ buffer), once the queue's work is done.

    It waits on this thread, straight through wgpu-native: wgpu-py's map_sync submits an empty command buffer first
    and hands the wait to its poll thread and back, a cost every decode step pays after the GPU is done. Only this
    function maps the buffer, so wgpu-py's own record of its map state stays "unmapped" throughout."""
    from wgpu.backends.wgpu_native._ffi import ffi, lib

    if not size:
        return np.empty(0, np.uint8)
    statuses: list[int] = []  # the callback's report
    handle = ffi.new_handle(statuses)
    info = ffi.new("WGPUBufferMapCallbackInfo *", {"mode": lib.WGPUCallbackMode_AllowProcessEvents,
                                                    "callback": _map_callback(), "userdata1": handle})
    lib.wgpuBufferMapAsync(buffer._internal, lib.WGPUMapMode_Read, 0, size, info[0])
    while not statuses:
        lib.wgpuDevicePoll(device._internal, True, ffi.NULL)  # waits for the queue, then runs the callback
    if statuses[0] != lib.WGPUMapAsyncStatus_Success:
        raise RuntimeError(f"could not map the Vulkan read-back buffer (status {statuses[0]})")
    try:
        pointer = lib.wgpuBufferGetConstMappedRange(buffer._internal, 0, size)
        return np.frombuffer(ffi.buffer(pointer, size), np.uint8).copy()
    finally:
        lib.wgpuBufferUnmap(buffer._internal)


@lru_cache(maxsize=None)
def _map_callback():
    from wgpu.backends.wgpu_native._ffi import ffi

    @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
    def mapped(status, _message, statuses, _unused):
        ffi.from_handle(statuses).append(status)

    return mapped

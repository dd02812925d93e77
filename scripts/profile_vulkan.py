#!/usr/bin/env python3
"""Where a Vulkan pass goes, shader by shader: a 512-token prompt and decode steps of a scripts/bench_gpu.py shape,
each dispatch in a compute pass of its own between two GPU timestamps, summed per shader (and weight type).

    python scripts/profile_vulkan.py --model 1b [--layers 16] [--steps 16]

It first times plain decode steps (as bench_gpu.py does) and splits one step's wall time into what the host does
(the inputs, recording, submitting) and what it waits for. Timestamps need the adapter's timestamp-query feature;
a pass of its own per dispatch adds the driver's cost of a pass, so compare shaders with each other and speeds with
bench_gpu.py.

    python scripts/profile_vulkan.py --model 1b --gpu-step [VARIANT ...]

times the GPU alone instead: one decode step's command buffer submitted back to back, each VARIANT of its steps
beside the whole step: without:LABEL leaves out the steps whose shader label starts with LABEL, twice:LABEL runs
each twice (their outputs are then wrong, their cost is what the difference shows).
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import numpy as np

from bench_gpu import SHAPES, write_model
from kinetic.contracts.device import Row, UploadOptions
from kinetic.model.load import load_stack
from kinetic.plugins import plugins

PROMPT = 512


def timed_record(totals: collections.Counter, counts: collections.Counter):
    """A stand-in for kinetic_vulkan.plan.record that brackets each dispatch with timestamps and, once the pass's
    queue work is done, adds each one's nanoseconds to totals under its pipeline's label."""
    import wgpu

    from kinetic_vulkan.plan import copy_outputs

    def record(device, steps, n, n_logits, outputs, readback):
        live = [s for s in steps if all(s.groups(n, n_logits))]
        queries = device.create_query_set(type=wgpu.QueryType.timestamp, count=2 * len(live))
        resolved = device.create_buffer(size=16 * len(live), usage=wgpu.BufferUsage.QUERY_RESOLVE
                                        | wgpu.BufferUsage.COPY_SRC)
        encoder = device.create_command_encoder()
        for i, step in enumerate(live):
            writes = {"query_set": queries, "beginning_of_pass_write_index": 2 * i,
                      "end_of_pass_write_index": 2 * i + 1}
            compute = encoder.begin_compute_pass(timestamp_writes=writes)
            compute.set_pipeline(step.pipeline)
            compute.set_bind_group(0, step.bind_group)
            compute.dispatch_workgroups(*step.groups(n, n_logits))
            compute.end()
        copy_outputs(encoder, outputs, readback)
        encoder.resolve_query_set(queries, 0, 2 * len(live), resolved, 0)
        pending.append((live, resolved))
        return encoder.finish()

    pending: list = []

    def collect(device) -> None:
        from wgpu.backends.wgpu_native._ffi import lib

        period = lib.wgpuQueueGetTimestampPeriod(device.queue._internal)  # nanoseconds a tick
        for live, resolved in pending:
            stamps = np.frombuffer(device.queue.read_buffer(resolved), np.uint64).reshape(-1, 2)
            if not stamps.any():
                continue  # recorded ahead (kinetic_vulkan.runner) and never submitted
            for step, (start, end) in zip(live, stamps):
                totals[step.pipeline.label] += int(end - start) * period
                counts[step.pipeline.label] += 1
        pending.clear()

    return record, collect


def decode_split(runner, decode, steps: int) -> None:
    """The speed of plain decode steps (decode() makes them), and where a step's wall time goes on the host."""
    import kinetic_vulkan.runner as vk_runner

    spent = collections.Counter()
    original_record, original_read = vk_runner.record, runner.ws.read_back

    def record(*args):
        start = time.perf_counter()
        buffer = original_record(*args)
        spent["record"] += time.perf_counter() - start
        return buffer

    def read(*args):
        start = time.perf_counter()
        out = original_read(*args)
        spent["wait and read the logits"] += time.perf_counter() - start
        return out

    vk_runner.record, runner.ws.read_back = record, read
    try:
        start = time.perf_counter()
        decode()
        wall = time.perf_counter() - start
    finally:
        vk_runner.record, runner.ws.read_back = original_record, original_read
    print(f"decode after a {PROMPT}-token prompt: {steps / wall:.1f} t/s, {1e3 * wall / steps:.2f} ms a step: "
          + ", ".join(f"{k} {1e3 * v / steps:.2f} ms" for k, v in spent.items())
          + f", the rest {1e3 * (wall - sum(spent.values())) / steps:.2f} ms")


def report(title: str, totals: collections.Counter, counts: collections.Counter, passes: int) -> None:
    whole = sum(totals.values())
    print(f"{title}: {whole / passes / 1e3:.1f} us of dispatches a {title} ({sum(counts.values()) // passes} "
          "dispatches)")
    for label, ns in totals.most_common():
        print(f"  {label:28} {ns / passes / 1e3:9.1f} us  {counts[label] // passes:4} a {title}  "
              f"{100 * ns / whole:5.1f}%")


def timed(runner, run) -> tuple[collections.Counter, collections.Counter]:
    """Each dispatch's GPU nanoseconds and count, summed per pipeline label, over the passes run() makes."""
    import kinetic_vulkan.runner as vk_runner

    totals, counts = collections.Counter(), collections.Counter()
    record, collect = timed_record(totals, counts)
    plain, vk_runner.record = vk_runner.record, record
    try:
        run()
        collect(runner.gpu.device)
    finally:
        vk_runner.record = plain
    return totals, counts


def variant(steps: list, spec: str) -> list:
    """steps as a --gpu-step VARIANT has them: "all", without:LABEL or twice:LABEL."""
    if spec == "all":
        return steps
    how, _, label = spec.partition(":")
    if how not in ("without", "twice") or not label:
        raise SystemExit(f"profile_vulkan.py: a variant is all, without:LABEL or twice:LABEL, not {spec!r}")
    hit = [s.pipeline.label.startswith(label) for s in steps]
    return [s for s, h in zip(steps, hit) for _ in range(0 if h and how == "without" else 2 if h else 1)]


def gpu_step(runner, seq, n_vocab: int, variants: list[str], repeats: int = 200) -> None:
    """The GPU's time for a decode step of seq after the prompt, its command buffer submitted `repeats` times back
    to back, best of 3, for each variant of its steps."""
    from kinetic_vulkan.plan import map_and_copy, record

    device, ws = runner.gpu.device, runner.ws
    steps = runner.pass_steps(seq, 1, False)
    ws.set_inputs(np.zeros(1), np.array([PROMPT]), np.array([0]))
    for spec in variants:
        chosen, best = variant(steps, spec), float("inf")
        for _ in range(3):
            buffers = [record(device, chosen, 1, 1, [(ws.logits, 4 * n_vocab)], ws.readback) for _ in range(repeats)]
            start = time.perf_counter()
            for buffer in buffers:
                device.queue.submit([buffer])
            map_and_copy(device, ws.readback, 4)
            best = min(best, (time.perf_counter() - start) / repeats)
        print(f"GPU step {spec:32} {len(chosen):4} dispatches {1e6 * best:8.1f} us")


def profile(name: str, layers: int, steps: int, folder: Path, variants: list[str]) -> None:
    shape = SHAPES[name]._replace(n_layer=layers, label=f"{SHAPES[name].label}-{layers}l")
    path = folder / f"{shape.label}-shape-q4_k_m.gguf"
    if not path.exists():
        write_model(path, shape)
    runner = plugins().devices["vulkan"].upload(load_stack(path), UploadOptions(context_length=4096))
    print(f"{shape.label} on {runner.device_name}")
    seq = runner.new_sequence()
    tokens = np.random.default_rng(1).integers(0, shape.n_vocab, PROMPT + steps).tolist()

    def prompt() -> None:
        seq.truncate(0)
        runner.forward([Row(seq, t, p, parent=p - 1, logits=p == PROMPT - 1) for p, t in enumerate(tokens[:PROMPT])])

    def decode() -> None:
        for p in range(PROMPT, PROMPT + steps):
            runner.forward([Row(seq, tokens[p], p, logits=True)])

    prompt()
    if variants:
        gpu_step(runner, seq, shape.n_vocab, variants)
        return
    decode_split(runner, decode, steps)
    report("prompt", *timed(runner, prompt), 1)
    prompt()
    report("decode step", *timed(runner, decode), steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="1b", choices=[k for k, s in SHAPES.items() if s.experts is None])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kinetic-bench"))
    parser.add_argument("--gpu-step", nargs="*", metavar="VARIANT",
                        help="time the GPU alone on a decode step: all, without:LABEL, twice:LABEL (see above)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    variants = None if args.gpu_step is None else (args.gpu_step or ["all"])
    profile(args.model, args.layers, args.steps, args.dir, variants)


if __name__ == "__main__":
    main()

"""`kinetic bench`: llama-bench's pp512 and tg128, best of -r, as a table or JSON; --compare runs llama-bench."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Collection, Optional

import typer

from kinetic import progress
from kinetic.cli.llama_bench import compare_card, find_llama_bench, run_llama_bench
from kinetic.contracts.drafting import Drafter
from kinetic.engine.bench import EDIT_TOKENS, edit_prompt, edit_run, peak_rss_bytes, run_bench
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.system import GIB

# they need repeated, typed or concurrent requests, which bench never sends
NEEDS_REQUESTS = {"warm-start": "Warm Start", "zero-wait": "Zero Wait", "convoy": "Convoy"}


def bench_command(model: Path, repetitions: int, threads: Optional[int], device: str, as_json: bool,
                  compare: Optional[str], off: Collection[str] = (), gpu_layers: Optional[int] = None,
                  cache_types: tuple[str, str] = ("f16", "f16"), gpu_memory: Optional[int] = None) -> None:
    llama_bench = find_llama_bench(compare) if compare is not None else None  # a bad path fails before the model loads
    start = time.perf_counter()
    options = SessionOptions(device=device, threads=threads, ctx_size=2048, off=off,  # room for edit256
                             gpu_layers=gpu_layers, cache_types=cache_types, gpu_memory=gpu_memory)
    session = Session(model, options)
    load_seconds = time.perf_counter() - start
    session.settle()
    n_threads = threads or _all_threads()
    with progress.showing(f"running pp512 and tg128, best of {repetitions}"):
        result = run_bench(session.runner, session.tokenizer.n_vocab, repetitions)
    with progress.showing(f"running edit{EDIT_TOKENS}, plain once and drafted {repetitions} times"):
        edited = edit_report(session, repetitions)
    report = {
        "model": model.name, "backend": session.device.name, "device": session.runner.device_name,
        "threads": n_threads, "repetitions": repetitions, "load_seconds": round(load_seconds, 4),
        "size_bytes": model.stat().st_size,
        "parameters": sum(t.n_elements for t in session.model.tensors.values()),
        "prefill_tokens": 512, "prefill_tokens_per_second": round(result.prefill_tokens_per_second, 2),
        "decode_tokens": 128, "decode_tokens_per_second": round(result.decode_tokens_per_second, 2),
        **edited,
        "technologies": "on: " + (", ".join(t.title for t in session.speed_on if t.name not in NEEDS_REQUESTS)
                                  or "none"),
        "peak_rss_bytes": peak_rss_bytes(),
    }
    gpu = session.device.name != "cpu"
    llama = None
    if llama_bench is not None:
        with progress.showing("running llama-bench"):
            llama = run_llama_bench(llama_bench, model, n_threads, repetitions, gpu, cache_types)
    if as_json:
        print(json.dumps({**report, "llama_cpp": llama} if llama else report, indent=2))
    else:
        print("\n".join(table(report, session.name)))
        if llama:
            print("\n" + "\n".join(compare_card(report, llama, session.name)))
    if not report["edit_identical"]:
        raise typer.Exit(1)


def edit_report(session: Session, repetitions: int) -> dict:
    """edit256, drafted as RAD-1 drafts unless it is off, best of `repetitions`, each checked against plain
    decoding. RAD-1 attaches afresh before each run, so no run drafts from an earlier one's answer."""
    prompt = edit_prompt(lambda text: session.tokenizer.encode(text, add_special=True))
    plain, _ = edit_run(session.runner, prompt, session.context_length, None)
    runs = [edit_run(session.runner, prompt, session.context_length, fresh_drafter(session))
            for _ in range(repetitions)]
    return {"edit_tokens": EDIT_TOKENS, "edit_tokens_per_second": round(EDIT_TOKENS / min(s for _, s in runs), 2),
            "edit_drafted": session.drafter is not None, "edit_identical": all(t == plain for t, _ in runs)}


def fresh_drafter(session: Session) -> Optional[Drafter]:
    """A new RAD-1 drafter for the session's model, or None when RAD-1 is off."""
    rad1 = next((technology for technology in session.speed_on if technology.name == "rad1"), None)
    provision = rad1.attach(session.speed_host) if rad1 is not None else None
    return provision.drafter if provision is not None else None


def table(report: dict, name: str) -> list[str]:
    size = f"{report['size_bytes'] / GIB:.2f} GiB"
    params = f"{report['parameters'] / 1e9:.2f} B"
    backend = report["backend"].upper()
    rows = [("pp512", report["prefill_tokens_per_second"]), ("tg128", report["decode_tokens_per_second"]),
            ("edit256", report["edit_tokens_per_second"])]
    lines = ["| model | size | params | backend | threads | test | t/s |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    lines += [f"| {name} | {size} | {params} | {backend} | {report['threads']} | {test} | {rate:.2f} |"
              for test, rate in rows]
    no_part = ", ".join(list(NEEDS_REQUESTS.values())[:-1]) + " and " + list(NEEDS_REQUESTS.values())[-1]
    return lines + ["", f"on {report['device']}, best of {report['repetitions']}, load {report['load_seconds']:.2f} s",
                    f"speed technologies {report['technologies']}; {no_part} take no part", edit_line(report),
                    f"peak memory {report['peak_rss_bytes'] / GIB:.2f} GiB"]


def edit_line(report: dict) -> str:
    if not report["edit_drafted"]:
        return "edit: RAD-1 off, plain decoding"
    return "edit: drafted output identical to plain decoding: " + ("yes" if report["edit_identical"] else "NO")


def _all_threads() -> int:
    import os

    return os.cpu_count() or 1

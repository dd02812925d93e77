"""`kinetic bench --compare`: llama-bench's numbers and peak memory beside Kinetic's, from a stand-in
llama-bench that answers as the real one does (-o json) after holding a known amount of memory. The peak
is the child's own, not Kinetic's: the test's Kinetic holds less than the stand-in's HELD."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from kinetic.testing.gguf_factory import Dims, write_random_model

HELD = 300 << 20  # bytes the stand-in touches


def stand_in(tmp_path):
    script = tmp_path / "llama-bench"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""
        import json, sys, time
        held = bytearray({HELD})
        held[::4096] = b"x" * len(held[::4096])  # every page resident
        time.sleep(0.5)  # as the real one holds its model while it runs
        assert sys.argv[sys.argv.index("-o") + 1] == "json"
        runs = [dict(n_prompt=512, n_gen=0, samples_ts=[100.0, 120.0]), dict(n_prompt=0, n_gen=128, samples_ts=[40.0])]
        print(json.dumps([dict(run, build_number=1, build_commit="abc", cpu_info="Test CPU", gpu_info="")
                          for run in runs]))
    """))
    script.chmod(0o755)
    return script


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", "bench", *args], capture_output=True, text=True,
                          timeout=600)


def test_compare_reports_llama_benchs_speeds_and_peak_memory(tmp_path):
    model = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128), "Q8_0")
    common = [str(model), "-r", "1", "--device", "cpu", "--off", "rad1", "--compare", str(stand_in(tmp_path))]
    done = bench(*common, "--json")
    assert done.returncode == 0, done.stderr
    llama = json.loads(done.stdout)["llama_cpp"]
    assert (llama["pp512"], llama["tg128"], llama["build"]) == (120.0, 40.0, "b1 (abc)")
    assert HELD <= llama["peak_rss_bytes"] < HELD + (200 << 20)
    lines = bench(*common).stdout.splitlines()
    card = lines[lines.index("## Kinetic vs llama.cpp: m") :]
    assert "| 40.0 |" in next(line for line in card if line.startswith("| generate tg128 |"))
    memory = next(line for line in card if line.startswith("peak memory: Kinetic "))
    assert memory.endswith(f", llama-bench {llama['peak_rss_bytes'] / (1 << 30):.2f} GiB")


def test_a_missing_or_unrunnable_llama_bench_is_one_line_before_the_model_loads(tmp_path):
    not_a_model = tmp_path / "m.gguf"
    not_a_model.write_bytes(b"not a model")  # were it read first, the error would be about it
    not_a_program = tmp_path / "llama-bench"
    not_a_program.write_text("not a program")
    for given, says in [(tmp_path / "nowhere" / "llama-bench", "llama-bench not found at "),
                        (not_a_program, "llama-bench is not executable at ")]:
        done = bench(str(not_a_model), "--compare", str(given))
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
        assert "--compare PATH" in done.stderr

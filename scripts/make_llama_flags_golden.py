#!/usr/bin/env python3
"""The golden data of tests/test_llama_flags*.py, written into tests/golden/llama_flags/:

    llama-server-help.txt, llama-cli-help.txt   `--help` of llama.cpp 11434's llama-server and llama-cli
    props.json                                  llama-server's GET /props, started with the sampling flags
                                                of tests/test_llama_flags_serve.py on Gemma 3 270M
    spec_table.tsv                              the reference docs' "llama.cpp flags" table, one row a line

    python scripts/make_llama_flags_golden.py /work/shared/spec/kinetic-reference-docs.txt
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kinetic.testing.llama_cpp import VERSION, build
from kinetic.testing.real_models import fetch

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden" / "llama_flags"
# The flags /props is compared on (tests/test_llama_flags_serve.py takes them from props.json's "flags").
SAMPLING_FLAGS = ["--temp", "0.7", "--seed", "42", "--top-k", "33", "--top-p", "0.9", "--min-p", "0.02",
                  "--repeat-penalty", "1.1", "--repeat-last-n", "32", "--presence-penalty", "0.1",
                  "--frequency-penalty", "0.2", "--typical", "0.95", "--mirostat", "2", "--mirostat-lr", "0.2",
                  "--mirostat-ent", "4", "--dry-multiplier", "0.5", "--dry-base", "1.5", "--dry-allowed-length", "3",
                  "--dry-penalty-last-n", "100", "--xtc-probability", "0.1", "--xtc-threshold", "0.2",
                  "--top-nsigma", "1.5", "-n", "64"]
TABLE_START, MEANING = "llama.cpp flagIn Kinetic", re.compile(r"(?=[A-Za-z])")
FLAGS = re.compile(r"--?[A-Za-z][\w-]*(?:, --?[A-Za-z][\w-]*)*")


def spec_table(spec: Path) -> list[tuple[str, str]]:
    """(flags, meaning) of each row; the docs' rows run the two columns together ("-sysworks, as --system"),
    so a row splits at the first place where what comes before is a list of flags and what follows starts
    a word that is no flag's."""
    lines = spec.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_START) + 1
    rows = []
    for line in lines[start:]:
        if not line.startswith("-"):
            break
        rows.append(_split_row(line))
    return rows


def _split_row(line: str) -> tuple[str, str]:
    for cut in range(2, len(line)):
        flags, meaning = line[:cut], line[cut:]
        if FLAGS.fullmatch(flags) and re.match(r"(works|accepted|Kinetic|use |built-in|speculative|download|pipe|"
                                               r"send|control vectors|constrained|pass|the server)", meaning):
            return flags, meaning
    raise ValueError(f"cannot split the table row {line!r}")


def props_with_flags(llama_server: Path, model: Path) -> dict:
    """llama-server's /props, started on model with SAMPLING_FLAGS."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(llama_server), "-m", str(model), "--port", str(port), "-c", "512", "-t", "1", *SAMPLING_FLAGS]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/props", timeout=5) as answer:
                    return json.load(answer)
            except OSError:
                time.sleep(1)
        raise RuntimeError("llama-server did not answer /props")
    finally:
        server.terminate()
        server.wait()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    bin_dir = build(("llama-server", "llama-cli"))
    for tool in ("llama-server", "llama-cli"):
        shown = subprocess.run([str(bin_dir / tool), "--help"], capture_output=True, text=True, check=True)
        (GOLDEN / f"{tool}-help.txt").write_text(shown.stdout + shown.stderr)
    props = props_with_flags(bin_dir / "llama-server", fetch("gemma"))
    (GOLDEN / "props.json").write_text(json.dumps({
        "source": f"llama.cpp {VERSION} llama-server, GET /props on gemma-3-270m-q4_k_m.gguf",
        "flags": SAMPLING_FLAGS, "default_generation_settings": props["default_generation_settings"]}, indent=1) + "\n")
    rows = spec_table(Path(argv[0]))
    header = ["# The reference docs' chapter \"llama.cpp flags\", its table of flags (kinetic-reference-docs.txt),",
              "# split into columns by scripts/make_llama_flags_golden.py: flags<TAB>what Kinetic does"]
    (GOLDEN / "spec_table.tsv").write_text("\n".join(header + [f"{f}\t{m}" for f, m in rows]) + "\n")
    print(GOLDEN)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

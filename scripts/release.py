#!/usr/bin/env python3
"""Build every distribution's wheel and sdist, check them, write SHA256SUMS, and (--smoke) install them into a fresh
virtual environment and run Kinetic from there.

    python scripts/release.py [--out dist] [--smoke [MODEL]] [--set-version X.Y.Z]

The version lives in one place, kinetic-core/src/kinetic/__init__.py; --set-version writes it there and into every
pyproject.toml (each distribution's version and its pins of the others), and tests/test_plugins.py checks that
they agree. --smoke installs kinetic-engine[vulkan] and the example family plugin (examples/) from the built wheels
alone (their other needs from the package index), then runs `kinetic --version`, `kinetic doctor` (which must list
the example plugin), `kinetic info` and a short greedy `kinetic run` on MODEL (default: the Qwen test model).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = ROOT / "kinetic-core" / "src" / "kinetic" / "__init__.py"
FOLDERS = [ROOT / "kinetic-core", *sorted((ROOT / "kinetic-plugins").iterdir()), ROOT / "llama-cpp-kinetic", ROOT,
           ROOT / "examples" / "kinetic-family-example"]
PINNED = re.compile(r'("(?:kinetic-engine|kinetic-engine-core|kinetic-[a-z]+|kinetic-family-[a-z]+)(?:\[[a-z0-9]+\])?'
                    r'==)[0-9][0-9a-z.]*(")')


def version() -> str:
    return re.search(r'__version__ = "([^"]+)"', VERSION_FILE.read_text())[1]


def set_version(new: str) -> None:
    """new in the version file and in every pyproject.toml: its version and its pins of the others."""
    VERSION_FILE.write_text(re.sub(r'__version__ = "[^"]+"', f'__version__ = "{new}"', VERSION_FILE.read_text()))
    for folder in FOLDERS:
        toml = folder / "pyproject.toml"
        text = re.sub(r'(?m)^version = "[^"]+"', f'version = "{new}"', toml.read_text())
        toml.write_text(PINNED.sub(rf"\g<1>{new}\g<2>", text))


def build(out: Path) -> list[Path]:
    """Every distribution's wheel and sdist in out, checked with twine; SHA256SUMS beside them."""
    out.mkdir(parents=True, exist_ok=True)
    for folder in FOLDERS:
        subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(folder)], check=True,
                       stdout=subprocess.DEVNULL)
    built = sorted(p for p in out.iterdir() if p.suffix in (".whl", ".gz"))
    subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)], check=True)
    sums = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in built)
    (out / "SHA256SUMS").write_text(sums)
    return built


def smoke(out: Path, model: Path) -> None:
    """kinetic-engine[vulkan] and the example plugin from out's wheels in a fresh environment, run there."""
    from kinetic.testing.gguf_factory import write_random_model

    with tempfile.TemporaryDirectory(prefix="kinetic-smoke-") as folder:
        venv.create(folder, with_pip=True)
        python = Path(folder) / "bin" / "python"
        wheels = [str(p) for p in out.glob("*.whl")]
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--find-links", str(out), "--no-cache-dir",
                        "kinetic-engine[vulkan]", *[w for w in wheels if "kinetic_family_example" in w]], check=True)
        kinetic = [str(Path(folder) / "bin" / "kinetic")]
        example = write_random_model(Path(folder) / "example.gguf", "llama", named="example-llama")
        template = Path(folder) / "plain.jinja"  # the random file has no chat template
        template.write_text("{% for message in messages %}{{ message.content }}{% endfor %}")
        checks = [(["--version"], f"kinetic {version()}"), (["doctor"], "family_example (kinetic-family-example"),
                  (["info", str(model)], "(supported)"), (["info", str(example)], "example-llama (supported)"),
                  (["run", str(model), "Say hello.", "--temp", "0", "-n", "8", "-c", "512"], ""),
                  (["run", str(example), "Say hello.", "--temp", "0", "-n", "4", "--chat-template-file", str(template)],
                   "")]
        for args, expected in checks:
            done = subprocess.run(kinetic + args, capture_output=True, text=True, cwd=folder)
            if done.returncode or expected not in done.stdout:
                raise SystemExit(f"smoke test failed: kinetic {' '.join(args)}\n{done.stdout}{done.stderr}")
            print(f"ok: kinetic {' '.join(args[:1])} {Path(args[1]).name if len(args) > 1 else ''}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--smoke", nargs="?", const="", metavar="MODEL")
    parser.add_argument("--set-version")
    args = parser.parse_args()
    if args.set_version:
        set_version(args.set_version)
    built = build(args.out)
    print(f"built {len(built)} files of Kinetic {version()} into {args.out} (SHA256SUMS beside them)")
    if args.smoke is not None:
        from kinetic.testing import real_models

        smoke(args.out, Path(args.smoke) if args.smoke else real_models.fetch("qwen"))


if __name__ == "__main__":
    main()

"""Installing a third-party plugin distribution into a folder the way pip installs it (a module and its
dist-info with the entry point), for tests that run kinetic with that folder on PYTHONPATH."""

from __future__ import annotations

import textwrap
from pathlib import Path


def install_distribution(site: Path, dist: str, module: str, source: str) -> None:
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[kinetic]\n{module.removeprefix('kinetic_')} = {module}\n")

"""llama.cpp's greedy tokens for the real test models, and the rule an engine's greedy tokens meet.

tests/golden/greedy/*.json (scripts/make_greedy_golden.py) hold, per prompt, llama.cpp's greedy tokens
and each step's top-2 margin, from two runs of llama.cpp: on the file's weights dequantized to F32
("dequantized") and on the file as shipped ("as_shipped"). A divergence is allowed only at a step where
llama.cpp's own top-2 margin is under a near-tie bound, and the comparison of that prompt stops there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

GOLDEN = Path(__file__).resolve().parent / "golden" / "greedy"


def load_golden(key: str, model: Path, n_tokens: int) -> dict:
    golden = json.loads((GOLDEN / f"{key}.json").read_text())
    assert golden["model"] == model.name and golden["n_predict"] >= n_tokens
    return golden


def load_family_golden(name: str) -> dict:
    """llama.cpp's run on the comparable random file `name` (kinetic.testing.gguf_factory.COMPARABLE): its sha256
    and prompts, as load_golden's."""
    golden = json.loads((GOLDEN / "families.json").read_text())
    return golden["files"][name]


def first_divergence(theirs: list[int], ours: list[int]) -> Optional[int]:
    return next((step for step, (a, b) in enumerate(zip(theirs, ours)) if a != b), None)


def divergences(golden: dict, run: str, outputs: list[list[int]], near_tie: float) -> list[str]:
    """One line per prompt whose tokens part from llama.cpp's run at a step that is no near-tie."""
    problems = []
    for prompt, ours in zip(golden["prompts"], outputs):
        expected = prompt[run]
        step = first_divergence(expected["tokens"], ours)
        if step is not None and expected["margins"][step] >= near_tie:
            problems.append(f"{prompt['text']!r}: step {step}: llama.cpp {expected['tokens'][step]}, ours "
                            f"{ours[step]}, llama.cpp's top-2 margin {expected['margins'][step]:.3f} nats")
    return problems

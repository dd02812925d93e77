"""Greedy generation with the reference executor, for tests."""

from __future__ import annotations

from typing import Sequence as Seq, Union

import numpy as np

from kinetic.contracts.blocks import Stack
from kinetic.contracts.device import Row
from kinetic.reference.executor import ReferenceRunner


def generate(model: Union[Stack, ReferenceRunner], prompt_ids: Seq[int], n: int) -> list[int]:
    """n tokens after the prompt, each the argmax of the logits (ties to the lowest id)."""
    return generate_many(model, [prompt_ids], n)[0]


def generate_many(model: Union[Stack, ReferenceRunner], prompts: Seq[Seq[int]], n: int) -> list[list[int]]:
    """generate() for several prompts at once: one sequence each, their rows sharing every forward pass."""
    if not all(prompts):
        raise ValueError("every prompt needs at least one token")
    runner = model if isinstance(model, ReferenceRunner) else ReferenceRunner(model)
    seqs = [runner.new_sequence() for _ in prompts]
    rows, start = [], 0
    for seq, prompt in zip(seqs, prompts):  # each prompt's rows follow one another in the pass
        rows += [Row(seq, int(token), p, parent=start + p - 1 if p else -1, logits=p == len(prompt) - 1)
                 for p, token in enumerate(prompt)]
        start += len(prompt)
    outputs: list[list[int]] = [[] for _ in prompts]
    for step in range(n):
        if step:
            rows = [Row(seq, out[-1], seq.n_tokens, logits=True) for seq, out in zip(seqs, outputs)]
        for out, logits in zip(outputs, runner.forward(rows)):
            out.append(int(np.argmax(logits)))
    return outputs

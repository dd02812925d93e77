"""An example family plugin, as docs/plugins.md teaches: SmolLM-style files whose general.architecture is
"example-llama" (the llama block layout under another name), mapped onto the shared decoder blocks."""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader
from kinetic.hookspecs import hookimpl
from kinetic_families.decoder import attention, feed_forward, read_dims, rotary, stack


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    rope = rotary(loader, d, neox=False)
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim)), feed_forward(loader, i, d, "silu")]
    return stack(loader, d, blocks)


@hookimpl
def register_families(register):
    register(Family(name="example-llama", architectures=("example-llama",), build=build))

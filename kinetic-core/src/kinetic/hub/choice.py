"""Which model of a repository to pull: the named quantization, the repository's only model, or the largest
of the usual quantizations that fits the memory the model will run in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kinetic.errors import HubError
from kinetic.hub import budget
from kinetic.hub.files import Model, shows_quant
from kinetic.system import GIB

AUTOMATIC = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0")  # smallest first
# Room for the context besides the weights: an 8k-token KV cache in float16 and the pass's scratch take about
# 1 GiB for the 1-8B models a consumer GPU holds; larger models have more layers and wider caches, so a tenth
# of the weights is added for them.
CONTEXT_ROOM_FIXED = 1 * GIB
CONTEXT_ROOM_SHARE = 0.1


@dataclass(frozen=True)
class Choice:
    model: Model
    why: str  # one line: "Q6_K, the largest of ... that fits ..."


def context_room(model: Model) -> int:
    return CONTEXT_ROOM_FIXED + int(CONTEXT_ROOM_SHARE * model.size)


def choose(found: list[Model], quant: Optional[str], repo: str) -> Choice:
    """The model to pull from found (the repository's, smallest first)."""
    if not found:
        raise HubError(f"{repo} holds no GGUF model; pick a repository with .gguf files (their names often end "
                       f"in -GGUF)")
    if quant:
        named = [model for model in found if shows_quant(model.parts[0].name, quant)]
        if not named:
            raise HubError(f"{repo} has no {quant.upper()} file; it has {quants_text(found)}: "
                           f"kinetic pull {repo}:<quant>")
        return Choice(named[-1], f"{quant.upper()}, as named")
    if len(found) == 1:
        return Choice(found[0], f"{found[0].quant or found[0].parts[0].name}, the repository's only model")
    return automatic(found, budget.memory_budget(), repo)


def automatic(found: list[Model], memory: budget.Budget, repo: str) -> Choice:
    """The largest of AUTOMATIC that fits memory with room for context, else the smallest of them here."""
    candidates = [model for name in AUTOMATIC for model in found if model.quant == name]
    if not candidates:
        raise HubError(f"{repo} has none of {', '.join(AUTOMATIC)}; name one of its quantizations, "
                       f"{quants_text(found)}: kinetic pull {repo}:<quant>")
    fitting = [model for model in candidates if model.size + context_room(model) <= memory.bytes]
    usual = ", ".join(AUTOMATIC)
    model = fitting[-1] if fitting else candidates[0]
    room, free = f"{context_room(model) / GIB:.1f} GiB", f"{memory.bytes / GIB:.1f} GiB {memory.where}"
    if fitting:
        return Choice(model, f"{model.quant}, the largest of {usual} here that fits, with {room} for context, "
                             f"in {free}")
    return Choice(model, f"{model.quant}, the smallest of {usual} here, though with {room} for context it needs "
                         f"more than {free}")


def quants_text(found: list[Model]) -> str:
    names = sorted({model.quant or model.parts[0].name for model in found})
    return ", ".join(names)

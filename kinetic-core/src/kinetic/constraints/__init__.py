"""Constrained decoding: a grammar (GBNF, JSON Schema, any JSON) as a token mask over the vocabulary at each
step, through llguidance (docs/grammars.md says why that library)."""

from kinetic.constraints.grammar import Grammar, GrammarError
from kinetic.constraints.matcher import Matcher

__all__ = ["Grammar", "GrammarError", "Matcher"]

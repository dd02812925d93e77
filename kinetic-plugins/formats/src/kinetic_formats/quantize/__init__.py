"""Quantizing a GGUF file as llama-quantize does without an importance matrix (kinetic quantize)."""

from kinetic_formats.quantize.writer import TARGETS, quantize_gguf

__all__ = ["TARGETS", "quantize_gguf"]

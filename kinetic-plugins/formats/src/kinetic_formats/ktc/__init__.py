"""Kinetic's .ktc model files (docs/FORMAT.md): weights, tokenizer, chat template and profile in hashed sections."""

from kinetic_formats.ktc.reader import is_ktc, open_ktc
from kinetic_formats.ktc.verify import verify_ktc
from kinetic_formats.ktc.writer import convert_to_ktc

__all__ = ["convert_to_ktc", "is_ktc", "open_ktc", "verify_ktc"]

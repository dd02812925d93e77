"""GGUF, llama.cpp's model file format."""

from kinetic_formats.gguf.reader import is_gguf, open_gguf

__all__ = ["is_gguf", "open_gguf"]

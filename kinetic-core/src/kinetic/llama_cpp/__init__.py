"""The commonly used part of llama-cpp-python's high-level API on Kinetic (reference docs, Python): code written
for `from llama_cpp import Llama` runs unchanged with `from kinetic.llama_cpp import Llama`, or with the
llama-cpp-kinetic distribution installed, which makes `import llama_cpp` load this (docs/python.md)."""

from kinetic import __version__
from kinetic.llama_cpp.grammar import LlamaGrammar
from kinetic.llama_cpp.llama import LLAMA_DEFAULT_SEED, Llama

__all__ = ["LLAMA_DEFAULT_SEED", "Llama", "LlamaGrammar", "__version__"]

"""llama-cpp-python's `llama_cpp` module name, answered by Kinetic (kinetic.llama_cpp): an installed
llama-cpp-python is shadowed while this distribution is installed, and comes back when it is uninstalled."""

from kinetic.llama_cpp import LLAMA_DEFAULT_SEED, Llama, LlamaGrammar, __version__

__all__ = ["LLAMA_DEFAULT_SEED", "Llama", "LlamaGrammar", "__version__"]

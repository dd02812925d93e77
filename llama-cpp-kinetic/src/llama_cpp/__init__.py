"""llama-cpp-python's `llama_cpp` module name, answered by Kinetic (kinetic.llama_cpp). Both distributions install
a package of this name: uninstall llama-cpp-python before installing this one, and reinstall it to go back."""

from kinetic.llama_cpp import LLAMA_DEFAULT_SEED, Llama, LlamaGrammar, __version__

__all__ = ["LLAMA_DEFAULT_SEED", "Llama", "LlamaGrammar", "__version__"]

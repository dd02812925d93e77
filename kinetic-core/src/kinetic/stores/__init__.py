"""The GGUF models already on this computer (Kinetic's folder, Ollama's, LM Studio's, the Hugging Face and
llama.cpp caches), the names they go by, and a name back to its file."""

from kinetic.stores.found import Found
from kinetic.stores.resolve import all_found, resolve_model

__all__ = ["Found", "all_found", "resolve_model"]

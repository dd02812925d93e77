"""Model files and the Stack of blocks their family builds from them."""

from kinetic.model.load import load_stack, open_model

__all__ = ["load_stack", "open_model"]

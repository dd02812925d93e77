"""Model files and the blocks families build from them."""

from kinetic.model.files import open_model
from kinetic.model.load import load_stack
from kinetic.model.loader import Loader

__all__ = ["Loader", "load_stack", "open_model"]

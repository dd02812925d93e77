"""Model files and the blocks families build from them."""

from kinetic.model.files import open_model

__all__ = ["open_model"]

"""Kinetic: an open engine that runs GGUF models locally, exactly and fast."""

__version__ = "0.1.0"


def open_model(path):
    """Open a model file's header and tensor table (see kinetic.model.open_model)."""
    from kinetic.model import open_model as _open_model

    return _open_model(path)


def load_tokenizer(path):
    """The tokenizer of a model file, read from its header alone (see kinetic.tokenizer.Tokenizer)."""
    from kinetic.tokenizer import load_tokenizer as _load_tokenizer

    return _load_tokenizer(path)


def __getattr__(name):
    """kinetic.Model, imported when first used so that `import kinetic` stays light."""
    if name == "Model":
        from kinetic.library import Model

        return Model
    raise AttributeError(f"module 'kinetic' has no attribute {name!r}")

"""The kinetic-formats plugin: registers the GGUF format and every GGUF weight type."""

from kinetic.contracts import ModelFormat
from kinetic.hookspecs import hookimpl

from kinetic_formats.gguf import is_gguf, open_gguf
from kinetic_formats.types import TENSOR_TYPES


@hookimpl
def register_model_formats(register):
    register(ModelFormat(name="gguf", suffixes=(".gguf",), sniff=is_gguf, open=open_gguf))


@hookimpl
def register_tensor_types(register):
    for tensor_type in TENSOR_TYPES:
        register(tensor_type)

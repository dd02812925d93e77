"""The kinetic-formats plugin: registers the GGUF and .ktc formats and every GGUF weight type."""

from kinetic.contracts import ModelFormat
from kinetic.hookspecs import hookimpl

from kinetic_formats.gguf import is_gguf, open_gguf
from kinetic_formats.ktc import convert_to_ktc, is_ktc, open_ktc, verify_ktc
from kinetic_formats.quantize import TARGETS, quantize_gguf
from kinetic_formats.types import TENSOR_TYPES


@hookimpl
def register_model_formats(register):
    register(ModelFormat(name="gguf", suffixes=(".gguf",), sniff=is_gguf, open=open_gguf, quantize=quantize_gguf,
                         quantize_targets=TARGETS))
    register(ModelFormat(name="ktc", suffixes=(".ktc",), sniff=is_ktc, open=open_ktc, verify=verify_ktc,
                         convert=convert_to_ktc))


@hookimpl
def register_tensor_types(register):
    for tensor_type in TENSOR_TYPES:
        register(tensor_type)

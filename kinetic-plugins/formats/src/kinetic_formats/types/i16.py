"""I16: each weight stored as a little-endian int16."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(25, "I16", 1, 2, elementwise("<i2"))

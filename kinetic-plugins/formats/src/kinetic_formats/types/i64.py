"""I64: each weight stored as a little-endian int64."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(27, "I64", 1, 8, elementwise("<i8"))

"""F64: each weight stored as a little-endian float64."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(28, "F64", 1, 8, elementwise("<f8"))

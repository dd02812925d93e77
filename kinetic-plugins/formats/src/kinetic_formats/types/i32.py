"""I32: each weight stored as a little-endian int32."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(26, "I32", 1, 4, elementwise("<i4"))

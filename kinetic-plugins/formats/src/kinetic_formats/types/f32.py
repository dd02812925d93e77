"""F32: each weight stored as a little-endian float32."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(0, "F32", 1, 4, elementwise("<f4"))

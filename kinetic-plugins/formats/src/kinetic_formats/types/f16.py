"""F16: each weight stored as a little-endian float16."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(1, "F16", 1, 2, elementwise("<f2"))

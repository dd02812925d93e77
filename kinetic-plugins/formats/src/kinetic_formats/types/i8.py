"""I8: each weight stored as an int8."""

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise

TENSOR_TYPE = TensorType(24, "I8", 1, 1, elementwise("i1"))

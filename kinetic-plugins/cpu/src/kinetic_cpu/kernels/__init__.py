"""The CPU device's kernels (numba). Importing this imports numba and compiles nothing until first use."""

from kinetic_cpu.kernels.matmul import Matrix, activations, compile_kernels, matmul

__all__ = ["Matrix", "activations", "compile_kernels", "matmul"]

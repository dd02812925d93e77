"""Kinetic's CUDA device: CuPy RawModule kernels written here, compiled at run time by NVRTC.

Importing this package imports nothing heavy: CuPy is imported inside probe() and upload().
"""

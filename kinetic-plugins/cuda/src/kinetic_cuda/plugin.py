"""The kinetic-cuda plugin: registers the CUDA device."""

from kinetic.hookspecs import hookimpl

from kinetic_cuda.device import CUDA


@hookimpl
def register_devices(register):
    register(CUDA)

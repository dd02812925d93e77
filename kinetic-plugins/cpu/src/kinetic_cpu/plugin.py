"""The kinetic-cpu plugin: registers the CPU device."""

from kinetic.hookspecs import hookimpl

from kinetic_cpu.device import CPU


@hookimpl
def register_devices(register):
    register(CPU)

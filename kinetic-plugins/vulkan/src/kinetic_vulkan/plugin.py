"""The kinetic-vulkan plugin: registers the Vulkan device."""

from kinetic.hookspecs import hookimpl

from kinetic_vulkan.device import VULKAN


@hookimpl
def register_devices(register):
    register(VULKAN)

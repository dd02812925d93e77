"""Kinetic's Vulkan device: WGSL compute shaders written here, run through wgpu on any GPU with a Vulkan driver
(AMD, Intel, NVIDIA) or on Mesa's lavapipe.

Importing this package imports nothing heavy: wgpu is imported inside probe() and upload().
"""

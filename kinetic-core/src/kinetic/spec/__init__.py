"""The contracts between the core and its plugins (see DESIGN.md)."""

from kinetic.spec.device import Device
from kinetic.spec.family import Family
from kinetic.spec.model_file import ModelFile, ModelFormat, TensorInfo
from kinetic.spec.speed import SpeedTechnology
from kinetic.spec.tensor_type import TensorType

__all__ = ["Device", "Family", "ModelFile", "ModelFormat", "SpeedTechnology", "TensorInfo", "TensorType"]

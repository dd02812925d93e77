"""The contracts between the core and its plugins (see docs/architecture.md, section 2)."""

from kinetic.contracts.device import Device
from kinetic.contracts.family import Family
from kinetic.contracts.model_file import ModelFile, ModelFormat, TensorInfo
from kinetic.contracts.speed import Provision, SpeedHost, SpeedTechnology
from kinetic.contracts.tensor_type import TensorType

__all__ = ["Device", "Family", "ModelFile", "ModelFormat", "Provision", "SpeedHost", "SpeedTechnology", "TensorInfo",
           "TensorType"]

"""The hooks a Kinetic plugin implements. Each receives `register`; the core checks for duplicates."""

import pluggy

hookspec = pluggy.HookspecMarker("kinetic")
hookimpl = pluggy.HookimplMarker("kinetic")


@hookspec
def register_model_formats(register):
    """Call register(ModelFormat) for each model-file format the plugin reads."""


@hookspec
def register_tensor_types(register):
    """Call register(TensorType) for each GGUF weight type the plugin defines."""


@hookspec
def register_families(register):
    """Call register(Family) for each model family the plugin maps onto blocks."""


@hookspec
def register_devices(register):
    """Call register(Device) for each device the plugin runs stacks on."""


@hookspec
def register_speed_technologies(register):
    """Call register(SpeedTechnology) for each speed technology the plugin provides."""

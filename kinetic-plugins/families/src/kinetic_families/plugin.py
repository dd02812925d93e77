"""The kinetic-families plugin: registers every built-in family."""

from kinetic.hookspecs import hookimpl

from kinetic_families import gemma3, llama, qwen2, qwen3

FAMILIES = (llama.FAMILY, qwen2.FAMILY, qwen3.FAMILY, gemma3.FAMILY)


@hookimpl
def register_families(register):
    for family in FAMILIES:
        register(family)

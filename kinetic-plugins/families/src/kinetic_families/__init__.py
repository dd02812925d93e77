"""Kinetic's built-in model families: each file maps one GGUF architecture onto the core's blocks."""

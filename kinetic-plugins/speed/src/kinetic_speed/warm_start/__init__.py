"""Warm Start: each prompt resumes from the longest start an earlier request left a state for."""

from kinetic_speed.warm_start.states import WarmStart

__all__ = ["WarmStart"]

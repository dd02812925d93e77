"""Kinetic's exact speed technologies: RAD-1 and Warm Start."""

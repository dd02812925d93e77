"""The kinetic command."""

"""kinetic-formats: the GGUF reader and every GGUF weight type, as a Kinetic plugin."""

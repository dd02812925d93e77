"""The engine: sessions, generation, and the sampler chain that turns logits into tokens."""

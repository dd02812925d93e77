"""`kinetic pull`: choosing a GGUF model's files in a Hugging Face repository (files.py, choice.py) and
downloading them, resumed and checked against the hashes the hub publishes (remote.py, download.py).
remote.py and download.py import huggingface_hub: nothing outside the pull command imports them, so no other
command can touch the network."""

"""llama.cpp's flags on Kinetic's command line: renamed, accepted and ignored, refused with what to use, or
refused as not available yet.

The table is the reference docs' "llama.cpp flags" chapter. translate() rewrites argv before typer
parses it, so every command takes the same spellings llama-cli and llama-server do.
"""

from __future__ import annotations

RENAMED = {
    "-sys": "--system", "--system-prompt": "--system", "--temperature": "--temp", "-dev": "--device",
    "-a": "--alias", "-rea": "--reasoning",
}

# Things Kinetic does by itself: accepted and not needed. Values: whether the flag takes an argument.
ACCEPTED = {
    "-fa": True, "--flash-attn": True, "--jinja": False, "--mmap": False, "-cb": False, "--cont-batching": False,
    "-nocb": False, "--no-cont-batching": False, "--no-warmup": False, "--metrics": False,
    "--no-webui": False, "--embedding": False, "--embeddings": False, "-no-cnv": False, "--no-conversation": False,
    "-st": False, "--single-turn": False, "-b": True, "--batch-size": True, "-ub": True, "--ubatch-size": True,
    "-tb": True, "--threads-batch": True, "--cache-reuse": True, "--numa": True, "--prio": True, "--poll": True,
    "-to": True, "--timeout": True, "--threads-http": True,
}

_ONE_DEVICE = "Kinetic runs the model wholly on one device; choose it with --device"
_NO_DRAFT = "speculative decoding is automatic and needs no draft model"
_CHAT = "use kinetic chat <model>"
_PULL = "download with kinetic pull <org>/<repo>[:<quant>], then run it by name"
REFUSED = {
    **dict.fromkeys(["-sm", "--split-mode", "-ts", "--tensor-split", "-mg", "--main-gpu", "-ot",
                     "--override-tensor"], _ONE_DEVICE),
    **dict.fromkeys(["-cnv", "--conversation", "-i", "--interactive", "--interactive-first"], _CHAT),
    "--chat-template": "built-in template names are not supported; pass a Jinja file with --chat-template-file",
    **dict.fromkeys(["-md", "--model-draft", "--draft", "--draft-max", "--draft-min", "-ngld"], _NO_DRAFT),
    **dict.fromkeys(["-hf", "--hf-repo", "-mu", "--model-url"], _PULL),
    **dict.fromkeys(["-f", "--file"], "pipe the prompt in: kinetic run <model> < prompt.txt"),
    "--image": "send images to the server: kinetic serve <model> --mmproj <projector>",
    **dict.fromkeys(["--control-vector", "--control-vector-scaled"],
                    "control vectors are not supported yet; LoRA adapters are, with --lora"),
    "--api-key-file": "pass the key itself with --api-key",
    **dict.fromkeys(["--ssl-key-file", "--ssl-cert-file"], "the server speaks plain HTTP; put a TLS proxy in front"),
}


# Flags the reference docs give Kinetic in a later version, in llama.cpp's spelling and in Kinetic's own.
_F16_CACHE = "Kinetic keeps keys and values in a float16 cache, llama.cpp's default"
NOT_YET = {
    **dict.fromkeys(["-ctk", "--cache-type-k", "-ctv", "--cache-type-v"], _F16_CACHE),
}


class RefusedFlag(Exception):
    """A llama.cpp flag with no equivalent; str() is the one line to print."""


def translate(argv: list[str]) -> list[str]:
    """argv with llama.cpp spellings rewritten and accepted no-op flags removed."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        flag, has_value, value = arg.partition("=")
        if flag in REFUSED:
            raise RefusedFlag(f"{flag} is a llama.cpp flag: {REFUSED[flag]}.")
        if flag in NOT_YET:
            raise RefusedFlag(f"{flag} is not available yet: {NOT_YET[flag]}.")
        if flag in ACCEPTED:
            if ACCEPTED[flag] and not has_value:
                next(args, None)
            continue
        if flag in ("-ngl", "--n-gpu-layers", "--gpu-layers"):
            out += gpu_layers(value if has_value else next(args, ""))
            continue
        out.append(RENAMED[flag] + has_value + value if flag in RENAMED else arg)
    return out


def gpu_layers(value: str) -> list[str]:
    """-ngl 0 means the CPU; all (or 99 and up, as llama.cpp users write it) CUDA with every layer; any other
    number CUDA with --gpu-layers N, which the Session refuses when N is below the model's layer count."""
    if value.strip() == "0":
        return ["--device", "cpu"]
    if value in ("all", "auto") or (value.isdigit() and int(value) >= 99):
        return ["--device", "cuda"]
    return ["--device", "cuda", "--gpu-layers", value]

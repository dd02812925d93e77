#!/usr/bin/env python3
"""Compile kinetic-cuda's kernels with NVRTC, as the device does at load, on a machine without a GPU.

    pip install nvidia-cuda-nvrtc-cu12
    python scripts/check_cuda_kernels.py [--arch compute_90]

NVRTC needs no driver or device, so a kernel edit is checked for errors before any time on a GPU is spent.
Prints NVRTC's log; exits 1 if the module does not compile.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kinetic-plugins" / "cuda" / "src"))

from kinetic_cuda.module import OPTIONS, source  # noqa: E402


def nvrtc() -> ctypes.CDLL:
    import nvidia.cuda_nvrtc

    folder = Path(next(iter(nvidia.cuda_nvrtc.__path__))) / "lib"
    return ctypes.CDLL(str(next(folder.glob("libnvrtc.so.*"))))


def compile_log(lib: ctypes.CDLL, code: str, options: list[str]) -> tuple[int, str]:
    """(NVRTC's result, 0 for success; its log) for code compiled with options."""
    program = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(program), code.encode(), b"kinetic.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    encoded = [option.encode() for option in options]
    result = lib.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(program, log)
    lib.nvrtcDestroyProgram(ctypes.byref(program))
    return result, log.value.decode(errors="replace")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="compute_90", help="virtual architecture (default: Hopper's)")
    args = parser.parse_args(argv)
    result, log = compile_log(nvrtc(), source(), [*OPTIONS, f"--gpu-architecture={args.arch}"])
    print(log.strip() or "no messages")
    print("compiled" if result == 0 else f"NVRTC failed ({result})")
    return 0 if result == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

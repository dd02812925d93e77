#!/usr/bin/env python3
"""Compile kinetic-cuda's kernels with NVRTC into the files the plugin ships, on any machine (no GPU needed).

    pip install nvidia-cuda-nvrtc-cu12
    python scripts/build_cuda_kernels.py           # writes kinetic_cuda/kernels/built/
    python scripts/build_cuda_kernels.py --check   # compiles for one architecture, writes nothing

The folder gets a cubin per architecture in ARCHITECTURES (machine code: loads at once on a chip of that major
revision) and PTX for the oldest (the driver compiles it for a chip newer than every cubin), and stamp.json:
the SHA-256 of the sources and options they were built from, the compiler, and each file's own SHA-256.
kinetic_cuda.module loads them only while the stamp matches the sources; a kernel edit means running this again
(tests/test_cuda_shipped_kernels.py fails until then). Prints NVRTC's log; exits 1 if a compile fails.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kinetic-plugins" / "cuda" / "src"))

from kinetic_cuda.module import BUILT, OPTIONS, STAMP, source, source_digest  # noqa: E402

ARCHITECTURES = ("sm_80", "sm_90", "sm_100", "sm_120")  # Ampere, Hopper, Blackwell, Blackwell workstation
PTX = "compute_80"  # the oldest chip the device takes (gpu.MIN_CAPABILITY)


def nvrtc() -> ctypes.CDLL:
    import nvidia.cuda_nvrtc

    folder = Path(next(iter(nvidia.cuda_nvrtc.__path__))) / "lib"
    return ctypes.CDLL(str(next(folder.glob("libnvrtc.so.*"))))


def nvrtc_version(lib: ctypes.CDLL) -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"NVRTC {major.value}.{minor.value}"


def compile_for(lib: ctypes.CDLL, code: str, architecture: str) -> tuple[bytes | None, str]:
    """(the cubin for an sm_ architecture or the PTX for a compute_ one, None if the compile failed; NVRTC's log)."""
    program = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(program), code.encode(), b"kinetic.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    encoded = [option.encode() for option in (*OPTIONS, f"--gpu-architecture={architecture}")]
    failed = lib.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(program, log)
    output = None
    if not failed:
        kind = "CUBIN" if architecture.startswith("sm_") else "PTX"
        getattr(lib, f"nvrtcGet{kind}Size")(program, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        getattr(lib, f"nvrtcGet{kind}")(program, buffer)
        output = buffer.raw[: size.value].rstrip(b"\0") if kind == "PTX" else buffer.raw[: size.value]
    lib.nvrtcDestroyProgram(ctypes.byref(program))
    return output, log.value.decode(errors="replace").strip()


def file_name(architecture: str) -> str:
    return f"{architecture}.cubin" if architecture.startswith("sm_") else f"{architecture}.ptx"


def build(lib: ctypes.CDLL, folder: Path) -> int:
    code, files = source(), {}
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()
    for architecture in (*ARCHITECTURES, PTX):
        started = time.perf_counter()
        output, log = compile_for(lib, code, architecture)
        if output is None:
            print(f"{architecture}: NVRTC failed\n{log}")
            return 1
        name = file_name(architecture)
        (folder / name).write_bytes(output)
        files[name] = hashlib.sha256(output).hexdigest()
        print(f"{name}: {len(output) / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s{': ' + log if log else ''}")
    stamp = {"sources": source_digest(), "compiler": nvrtc_version(lib), "files": files}
    (folder / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compile for --arch, write nothing")
    parser.add_argument("--arch", default="compute_90", help="the architecture --check compiles for")
    args = parser.parse_args(argv)
    lib = nvrtc()
    if not args.check:
        return build(lib, BUILT)
    output, log = compile_for(lib, source(), args.arch)
    print(log or "no messages")
    print("compiled" if output is not None else "NVRTC failed")
    return 0 if output is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

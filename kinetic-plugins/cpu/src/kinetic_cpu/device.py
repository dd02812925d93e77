"""The CPU device: usable wherever numba imports; it runs every block and every weight type."""

from __future__ import annotations

from typing import Optional

from kinetic.contracts import Device
from kinetic.contracts.blocks import Stack
from kinetic.contracts.device import UploadOptions


def probe() -> Optional[str]:
    try:
        import numba  # noqa: F401
    except ImportError as error:
        return f"numba is not installed ({error}); pip install numba"
    return None


def upload(stack: Stack, options: UploadOptions):
    from kinetic_cpu.runner import CpuRunner
    from kinetic_cpu.threads import thread_count

    return CpuRunner(stack, options, thread_count(options.threads))


CPU = Device(name="cpu", title="the CPU", priority=0, probe=probe, upload=upload)

"""Kinetic's CPU device: numba kernels.

Importing this package points numba's on-disk cache at the user cache before numba loads, so kernels
compile once per machine. It does not import numba itself: the plugin must stay cheap to load.
"""

from kinetic_cpu.numba_cache import use_kinetic_cache

use_kinetic_cache()

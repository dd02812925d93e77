"""Kinetic's CPU device: numba kernels.

Importing this package sets numba's environment before numba loads: its on-disk cache under the user
cache, so kernels compile once per machine, and passive OpenMP waiting (see numba_setup.py). It does not
import numba itself: the plugin must stay cheap to load.
"""

from kinetic_cpu.numba_setup import prepare_numba

prepare_numba()

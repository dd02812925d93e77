"""numba's on-disk cache shared by processes compiling at once (numba_setup.lock_index_saves): two processes
that compile two specializations of one function together both find their entries in its index, so a third
loads both without compiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

KERNEL = """
from numba import njit


@njit(cache=True)
def twice(x):
    return x * 2
"""

# compiles twice(value) into NUMBA_CACHE_DIR, each read of the index held for `pause` seconds, so that two
# processes started together read it before either writes it back; prints what twice did not find cached
COMPILE = """
import json, sys, time

import kinetic_cpu.compile_clock  # noqa: F401  (the lock, as the runner has it)
from numba.core import caching

kind, pause, folder = sys.argv[1], float(sys.argv[2]), sys.argv[3]
read = caching.IndexDataCacheFile._load_index


def slow_read(self):
    overloads = read(self)
    time.sleep(pause)
    return overloads


caching.IndexDataCacheFile._load_index = slow_read
sys.path.insert(0, folder)
import doubled

assert doubled.twice({"int": 3, "float": 3.0}[kind]) == 6
print(json.dumps([str(sig) for sig in doubled.twice.stats.cache_misses]))
"""


def run(script, tmp_path, *args) -> subprocess.Popen:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.Popen([sys.executable, str(script), *args, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            text=True)


def test_two_processes_compiling_one_function_keep_both_entries(tmp_path):
    (tmp_path / "doubled.py").write_text(KERNEL)
    script = tmp_path / "compile.py"
    script.write_text(textwrap.dedent(COMPILE))
    together = [run(script, tmp_path, kind, "1.0") for kind in ("int", "float")]
    for child, kind in zip(together, ("int", "float")):
        out, _ = child.communicate(timeout=300)
        assert child.returncode == 0 and len(json.loads(out)) == 1  # each compiled its own
    for kind in ("int", "float"):
        child = run(script, tmp_path, kind, "0")
        out, _ = child.communicate(timeout=300)
        assert child.returncode == 0 and json.loads(out) == [], f"twice({kind}) was not in the cache"

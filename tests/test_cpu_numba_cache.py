"""numba's on-disk cache shared by processes that compile at once (numba_setup.lock_cache): they compile one
at a time, and two that compile two specializations of one function together both find their entries in its
index, so a third loads both without compiling.

Without the compile lock, two processes compiling the real kernels of Q5_0 and Q4_K, and of Q8_0 and Q6_K, at
once left a cached Q8_0 product that gave NaN to every later process (checked against each kernel compiled
alone); with it, every product matched."""

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

import kinetic_cpu.compile_clock  # noqa: F401  (the locks, as the runner has them)
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


# compiles twice(value), the outermost compilation held for `pause` seconds once it has the lock; prints when
# it started and ended
TIMED = """
import json, sys, time

import kinetic_cpu.compile_clock  # noqa: F401
from numba.core import event

kind, pause, folder = sys.argv[1], float(sys.argv[2]), sys.argv[3]
spans = []


class Timed(event.Listener):  # registered after the lock's listener: it runs once the lock is held
    def on_start(self, ev):
        spans.append(time.time())
        time.sleep(pause)

    def on_end(self, ev):
        spans.append(time.time())


event.register("numba:compile", Timed())
sys.path.insert(0, folder)
import doubled

assert doubled.twice({"int": 3, "float": 3.0}[kind]) == 6
print(json.dumps([spans[0], spans[-1]]))
"""


def test_processes_sharing_the_cache_compile_one_at_a_time(tmp_path):
    (tmp_path / "doubled.py").write_text(KERNEL)
    script = tmp_path / "timed.py"
    script.write_text(textwrap.dedent(TIMED))
    together = [run(script, tmp_path, kind, "1.0") for kind in ("int", "float")]
    spans = []
    for child in together:
        out, _ = child.communicate(timeout=300)
        assert child.returncode == 0
        spans.append(json.loads(out))
    first, second = sorted(spans)
    # the second began after the first's pause, which the first spent holding the lock (its end is timed after
    # the lock's listener let go, so the second may begin a few microseconds before it)
    assert first[0] + 1.0 <= second[0] and first[1] - 0.1 <= second[0]

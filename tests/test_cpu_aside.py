"""Kernels compiled aside (kinetic_cpu.aside): on a machine whose numba cache is empty, Torque's and Shortlist's
kernels compile in another process while the first passes run without them; the technologies start at the first
pass after, loading what that process compiled, and every pass gives the bits the others give."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from kinetic.testing.gguf_factory import Dims, write_random_model

FIRST_PASSES = """
import json, sys
import numpy as np
from numba.core import event
from kinetic.contracts.device import Row, UploadOptions
from kinetic.model import load_stack
from kinetic.plugins import plugins

compiled = []
class Compiled(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__module__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Compiled())

runner = plugins().devices["cpu"].upload(load_stack(sys.argv[1]), UploadOptions(context_length=64, threads=2))
started = [runner.start_torque(), runner.start_shortlist()]
at_once = [runner._torque is not None, runner._shortlist is not None]

def steps():
    seq, picked = runner.new_sequence(), []
    for position, token in enumerate([1, 5, 9, 13, 17, 21]):
        logits = runner.forward([Row(seq, token, position, parent=-1, logits=True, top=1)])[0]
        picked.append([int(np.argmax(logits)), float(logits.max())])
    return picked

before = steps()
loaded_from = len(compiled)
runner.settle()
settled = [runner._torque is not None, runner._shortlist is not None]
after = steps()
print(json.dumps({"started": started, "at_once": at_once, "settled": settled, "same": before == after,
                  "compiled_after": sorted(set(compiled[loaded_from:]))}))
"""


def first_passes(path, cache) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", FIRST_PASSES, str(path)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_torque_and_shortlist_compile_aside_then_start_with_the_same_bits(tmp_path):
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256),
                              "Q8_0", seed=5)
    first = first_passes(path, tmp_path / "numba")
    assert first["started"] == [True, True] and first["at_once"] == [False, False]
    assert first["settled"] == [True, True] and first["same"]
    assert first["compiled_after"] == []  # what they call was loaded from the other process's work
    aside = tmp_path / "numba" / "aside"  # each job's mark, and the log of the process that did it: empty
    assert (aside / "torque-2-0-0").exists() and (aside / "shortlist").exists()
    assert [log.read_text() for log in sorted(aside.glob("*.log"))] == ["", ""]
    again = first_passes(path, tmp_path / "numba")
    assert again["at_once"] == [True, True] and again["same"] and again["compiled_after"] == []

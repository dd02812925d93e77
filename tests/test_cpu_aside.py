"""Kernels compiled aside (kinetic_cpu.aside), on a machine whose numba cache is empty: the product kernels of
every weight type but the first compile in another process while a warming pass leaves their products out and
compiles the rest; Torque's and Shortlist's compile in others while the first passes run without them, and start
at the first pass after. Every kernel the answering process then runs is loaded, not compiled again, and every
pass gives the bits it gives once all is compiled."""

from __future__ import annotations

import json
import os
import subprocess
import sys

FIRST_LOAD = """
import json, sys
import numpy as np
from numba.core import event
from kinetic.contracts.device import Row, UploadOptions
from kinetic.model import load_stack
from kinetic.plugins import plugins

compiled = []
class Compiled(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Compiled())

runner = plugins().devices["cpu"].upload(load_stack(sys.argv[1]), UploadOptions(context_length=64, threads=2))
started = [runner.start_torque(), runner.start_shortlist()]

def warm_passes(seq):
    for start, n in ((0, 1), (1, 16)):
        runner.forward([Row(seq, 9, start + i, parent=i - 1, logits=i == n - 1, top=int(n == 1)) for i in range(n)])
    seq.truncate(0)

def steps():
    seq, picked = runner.new_sequence(), []
    for position, token in enumerate([9707, 11, 1879, 0, 576, 3974]):
        logits = runner.forward([Row(seq, token, position, parent=-1, logits=True, top=1)])[0]
        picked.append([int(np.argmax(logits)), float(logits.max())])
    return picked

with runner.warming() as left_out:
    warm_passes(runner.new_sequence())
at_first = len(compiled)
warm_passes(runner.new_sequence())
again = compiled[at_first:]
at_once = [runner._torque is not None, runner._shortlist is not None]
before = steps()
from_here = len(compiled)
runner.settle()
print(json.dumps({"started": started, "left_out": left_out, "compiled_again": again, "at_once": at_once,
                  "settled": [runner._torque is not None, runner._shortlist is not None], "same": before == steps(),
                  "compiled_after": compiled[from_here:]}))
"""


def first_load(path, cache) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", FIRST_LOAD, str(path)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_first_load_compiles_aside_and_loads_what_was_compiled_there(qwen_gguf, tmp_path):
    first = first_load(qwen_gguf, tmp_path / "numba")
    assert first["started"] == [True, True] and first["left_out"]
    assert first["compiled_again"] == []  # the warming pass left nothing for the second
    assert first["settled"] == [True, True] and first["same"]
    assert first["compiled_after"] == []  # Torque and Shortlist loaded what another process compiled
    aside = tmp_path / "numba" / "aside"  # each job's mark, and the logs of the processes: empty
    assert sorted(mark.name for mark in aside.iterdir() if not mark.suffix) == [
        "products-Q4_K", "products-Q6_K", "products-Q8_0", "shortlist", "torque-8-0-0"]
    assert [log.read_text() for log in aside.glob("*.log")] == ["", "", ""]
    again = first_load(qwen_gguf, tmp_path / "numba")
    assert not again["left_out"] and again["at_once"] == [True, True] and again["same"]
    assert again["compiled_again"] == again["compiled_after"] == []

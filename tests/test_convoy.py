"""Convoy: requests on several slots share passes, and each answer is token for token the answer it gets
alone, greedy and seeded, whatever runs beside it (docs/exactness.md, section 1), on both real models."""

from __future__ import annotations

import threading
import time

import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import make_app
from kinetic.server.served import Job, ServedModel
from kinetic.testing.gguf_factory import Dims, write_random_model

try:
    from kinetic_cuda.device import probe
except ImportError:  # the kinetic-cuda plugin is not installed
    def probe() -> str:
        return "the kinetic-cuda plugin is not installed"

cuda = pytest.mark.skipif(probe() is not None, reason=f"CUDA is not usable here: {probe()}")

TEXTS = ["Rivers of the world, a list:\n1.", "def fibonacci(n):\n", "The three laws of motion are",
         "Q: What is a mutex?\nA:"]
LONG = "Once upon a time, in a land of rivers and hills, " * 60  # more than one prompt chunk (512 tokens)
LENGTHS = [24, 40, 16, 32]


@pytest.fixture(scope="module", params=["qwen", "gemma", pytest.param("qwen-cuda", marks=cuda),
                                        pytest.param("gemma-cuda", marks=cuda)])
def servers(request) -> tuple[ServedModel, ServedModel]:
    """(the model on three slots, the same on one), RAD-1 on, Warm Start off; on the CPU, and on CUDA."""
    model, _, device = request.param.partition("-")
    session = Session(request.getfixturevalue(f"{model}_gguf"),
                      SessionOptions(device=device or "cpu", ctx_size=1024, off=("warm-start",)))
    return ServedModel(session, parallel=3), ServedModel(session, parallel=1)


def jobs(served: ServedModel, settings: dict) -> list[Job]:
    encode = served.session.tokenizer.encode
    texts = [*TEXTS, LONG + "The end. What was it about?"]
    lengths = [*LENGTHS, 12]
    return [Job(encode(text, add_special=True), {**settings, "seed": settings.get("seed", 0) + i}, n)
            for i, (text, n) in enumerate(zip(texts, lengths))]


def tokens(served: ServedModel, job: Job) -> list[int]:
    return [piece.token for piece in served.run(job) if piece.token is not None]


def side_by_side(convoy: ServedModel, asked: list[Job], apart: float = 0.01) -> tuple[list[list[int]], int]:
    """The answers to jobs sent to convoy one after another, `apart` seconds apart, while the others run; and
    the most slots busy at once, counted as each slot is taken (sampling can miss a short overlap)."""
    got: dict[int, list[int]] = {}
    busy = []
    take = convoy.pool._take

    def counted_take(prompt):
        slot = take(prompt)
        busy.append(convoy.pool.busy)
        return slot

    def ask(i: int, job: Job) -> None:
        time.sleep(apart * i)
        got[i] = tokens(convoy, job)

    convoy.pool._take = counted_take
    try:
        threads = [threading.Thread(target=ask, args=(i, job)) for i, job in enumerate(asked)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        del convoy.pool._take
    assert convoy.pool.busy == 0 and convoy.pool.waiting == 0
    return [got[i] for i in range(len(asked))], max(busy)


@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.8, "seed": 11}], ids=["greedy", "seeded"])
def test_answers_side_by_side_are_the_answers_alone(servers, settings):
    convoy, alone = servers
    wanted = [tokens(alone, job) for job in jobs(alone, settings)]
    assert side_by_side(convoy, jobs(convoy, settings)) == (wanted, 3)  # the fifth waited for a slot


@pytest.mark.parametrize("device, arch", [("cpu", "lfm2"), ("cpu", "granitehybrid"), ("cpu", "falcon-h1"), ("cpu", "qwen35"),
                                          ("cpu", "qwen3moe"), ("cpu", "gpt-oss"),
                                          pytest.param("cuda", "qwen2", marks=cuda),
                                          pytest.param("cuda", "qwen3moe", marks=cuda),
                                          pytest.param("cuda", "lfm2", marks=cuda),
                                          pytest.param("cuda", "granitehybrid", marks=cuda),
                                          pytest.param("cuda", "falcon-h1", marks=cuda),
                                          pytest.param("cuda", "qwen35", marks=cuda)])
@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.8, "seed": 11}], ids=["greedy", "seeded"])
def test_random_weights_side_by_side(tmp_path, device, arch, settings):
    """A random-weight model (with short convolutions, Mamba-2 mixers or experts, which group the rows of every
    sequence in a pass, and on the GPU qwen2 too): prompts of token ids, one longer than a prompt batch."""
    path = write_random_model(tmp_path / "m.gguf", arch, Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512), "Q8_0",
                              seed=3)
    session = Session(path, SessionOptions(device=device, ctx_size=1024, off=("warm-start",)),
                      announce=lambda line: None)
    prompts = [[1, *(260 + i % 40 for i in range(n))] for n in (5, 17, 600, 33, 9)]  # a vocabulary of 300
    asked = [Job(prompt, {**settings, "seed": i}, 300) for i, prompt in enumerate(prompts)]
    wanted = [tokens(ServedModel(session, parallel=1), job) for job in asked]
    assert side_by_side(ServedModel(session, parallel=3), asked) == (wanted, 3)


def test_a_request_that_leaves_frees_its_slot_and_the_others_go_on(servers):
    convoy, alone = servers
    first, second = jobs(convoy, {"temp": 0})[:2]
    wanted = tokens(alone, second)
    left = []
    leaving = convoy.run(first, cancelled=lambda: len(left) >= 3)
    staying = iter(convoy.run(second))
    got = [next(staying).token]
    for piece in leaving:
        left.append(piece)
    got += [piece.token for piece in staying if piece.token is not None]
    assert len(left) == 3 and got == wanted
    assert convoy.pool.busy == 0


def test_the_slots_are_reported_and_no_slots_hides_them(servers):
    convoy, _ = servers
    client = testing.TestClient(make_app(convoy), headers={"Host": "localhost"})
    assert client.simulate_get("/health").json == {"status": "ok", "slots_idle": 3, "slots_processing": 0}
    assert client.simulate_get("/props").json["total_slots"] == 3
    assert [slot["id"] for slot in client.simulate_get("/slots").json] == [0, 1, 2]
    assert "llamacpp:requests_processing 0" in client.simulate_get("/metrics").text
    hidden = testing.TestClient(make_app(convoy, slots_route=False), headers={"Host": "localhost"})
    assert hidden.simulate_get("/slots").status_code == 404

"""kinetic.Model, as the reference docs' Python chapter uses it, on both real models: greedy continuations are
llama.cpp's tokens, a chat is `kinetic run`'s answer, streams join to the answer and a dropped one frees the
model, seeds repeat, threads take turns, and failures are the command line's one line."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

import kinetic
from greedy_golden import load_golden
from kinetic.testing import real_models

PROMPT = "Name one river."
STEPS = 12  # greedy tokens compared with llama.cpp's, up to its first near-tie
NEAR_TIE = 0.1


@pytest.fixture(scope="module", params=["qwen", "gemma"])
def loaded(request):
    path = real_models.fetch(request.param)
    with kinetic.Model(path, device="cpu", ctx_size=512) as model:
        yield request.param, path, model


def test_the_name_is_the_files_stem(loaded):
    _, path, model = loaded
    assert model.name == path.stem


def clear_steps(prompt: dict) -> int:
    """How many of llama.cpp's first greedy steps on prompt are no near-tie (top two NEAR_TIE apart or more)."""
    margins = prompt["as_shipped"]["margins"][:STEPS]
    return next((step for step, margin in enumerate(margins) if margin < NEAR_TIE), len(margins))


def test_greedy_generate_continues_as_llama_cpp(loaded):
    key, path, model = loaded
    prompt = max(load_golden(key, path, STEPS)["prompts"], key=clear_steps)
    steps = clear_steps(prompt)
    assert steps >= 6 and model.tokenize(prompt["text"]) == prompt["prompt_ids"]
    text = model.generate(prompt["text"], max_tokens=steps, temperature=0)
    assert text == model.detokenize(prompt["as_shipped"]["tokens"][:steps])


def test_a_chat_is_kinetic_runs_answer(loaded):
    key, path, model = loaded
    run = subprocess.run([sys.executable, "-m", "kinetic", "run", str(path), PROMPT, "--temp", "0", "-n", "6",
                          "--device", "cpu", "-c", "512"], capture_output=True, text=True)
    messages = [{"role": "user", "content": PROMPT}]
    if run.returncode:  # a file without a chat template: the same line, as an exception
        with pytest.raises(RuntimeError) as refused:
            model.chat(messages, max_tokens=6, temperature=0)
        assert f"kinetic: {refused.value}\n" == run.stderr
        return
    assert model.chat(messages, max_tokens=6, temperature=0) + "\n" == run.stdout


def test_a_stream_joins_to_the_answer_and_dropping_it_frees_the_model(loaded):
    _, _, model = loaded
    whole = model.generate("Once upon a time", max_tokens=10, temperature=0)
    assert "".join(model.generate("Once upon a time", max_tokens=10, temperature=0, stream=True)) == whole
    stream = model.generate("Once upon a time", max_tokens=200, temperature=0, stream=True)
    next(stream)
    del stream  # the generation stops; the next call runs at once
    assert model.generate("Once upon a time", max_tokens=10, temperature=0) == whole


def test_a_seed_repeats_its_sample(loaded):
    _, _, model = loaded
    first = model.generate("Once upon a time", max_tokens=16, temperature=0.8, seed=42)
    assert model.generate("Once upon a time", max_tokens=16, temperature=0.8, seed=42) == first


def test_threads_take_turns(loaded):
    _, _, model = loaded
    prompts = ["The capital of France is", "Once upon a time", "def add(a, b):"]
    alone = [model.generate(p, max_tokens=8, temperature=0) for p in prompts]
    together = [None] * len(prompts)

    def answer(i: int) -> None:
        together[i] = model.generate(prompts[i], max_tokens=8, temperature=0)

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert together == alone


def test_bad_calls_say_what_to_use(loaded):
    _, _, model = loaded
    with pytest.raises(TypeError, match="unknown sampling setting 'temperture'; use one of"):
        model.generate("x", temperture=0)
    with pytest.raises(ValueError, match="max_tokens must be at least 1"):
        model.generate("x", max_tokens=0)


def test_a_file_that_cannot_load_is_the_command_lines_line(tmp_path):
    missing = tmp_path / "missing.gguf"
    run = subprocess.run([sys.executable, "-m", "kinetic", "run", str(missing), "hi"], capture_output=True, text=True)
    with pytest.raises(RuntimeError) as refused:
        kinetic.Model(missing)
    assert run.returncode == 1 and run.stderr == f"kinetic: {refused.value}\n"
    with pytest.raises(TypeError, match="unexpected keyword argument 'context'"):
        kinetic.Model(missing, context=512)


def test_a_closed_model_refuses_calls(tmp_path):
    from kinetic.testing.gguf_factory import Dims, write_random_model

    model = kinetic.Model(write_random_model(tmp_path / "m.gguf", "llama", Dims(), "F32"), device="cpu")
    assert model.generate("tok1", max_tokens=2, temperature=0)
    model.close()
    with pytest.raises(RuntimeError, match="the model m is closed"):
        model.generate("tok1", max_tokens=2)


def test_an_embedding_model_embeds_and_a_text_model_does_not(tmp_path, loaded):
    """embed() gives the server's /v1/embeddings vectors; the other kind of call says what the model is."""
    from kinetic.engine.embedding import Embedder
    from kinetic.engine.options import SessionOptions
    from kinetic.engine.session import Session
    from kinetic.testing.gguf_factory import Dims, write_random_model

    path = write_random_model(tmp_path / "emb.gguf", "qwen3", Dims(), "F32", metadata={"qwen3.pooling_type": 3})
    with kinetic.Model(path, device="cpu") as embedder:
        vectors = embedder.embed(["tok5", "tok9 tok1"])
        reference = Embedder(Session(path, SessionOptions(device="cpu")))
        assert vectors == [reference.embed(embedder.tokenize(t)).tolist() for t in ("tok5", "tok9 tok1")]
        assert embedder.embed("tok5") == vectors[:1]
        with pytest.raises(RuntimeError, match="emb is an embedding model; use embed()"):
            embedder.chat([{"role": "user", "content": "hi"}])
    _, _, text_model = loaded
    with pytest.raises(RuntimeError, match="is not an embedding model; embed needs one"):
        text_model.embed(["hi"])


def test_a_threads_open_stream_is_said_not_waited_for(loaded):
    _, _, model = loaded
    stream = model.generate("Once upon a time", max_tokens=50, temperature=0, stream=True)
    next(stream)
    with pytest.raises(RuntimeError, match="stream still holds the model"):
        model.generate("x", max_tokens=1)
    stream.close()
    assert model.generate("Once upon a time", max_tokens=2, temperature=0)

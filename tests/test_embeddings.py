"""Embedding models (kinetic.engine.embedding, kinetic.server.embeddings): encoders (BERT) and decoders whose file
sets a pooling type give llama.cpp's vectors (tests/golden/embeddings.json, scripts/make_embedding_golden.py: cosine similarity
0.9999 or more), a text's vector does not depend on the others of its request, and the routes answer in the
OpenAI SDK's, LangChain's, llama-server's and Ollama's shapes; generating routes refuse an embedding model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from falcon import testing

from kinetic.contracts.device import Row, UploadOptions
from kinetic.engine.embedding import Embedder, normalized, pooling_of
from kinetic.errors import PromptTooLong
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.reference.executor import ReferenceRunner
from kinetic.server import ServedModel, make_app
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic.testing.reranker import write_cross_encoder, write_reranker

GOLDEN = json.loads((Path(__file__).parent / "golden" / "embeddings.json").read_text())
LOCAL = {"Host": "localhost:8080"}
SIMILAR = 0.9999
SCORE_TOLERANCE = 1e-3  # a probability's difference from llama.cpp's, from hidden states 0.9999 alike


def golden_file(tmp_path_factory, name: str) -> Path:
    spec = GOLDEN["files"][name]
    path = tmp_path_factory.mktemp("embeddings") / f"{name}.gguf"
    write_random_model(path, spec["arch"], Dims(), spec["weight_type"], seed=GOLDEN["seed"],
                       metadata={f"{spec['arch']}.pooling_type": spec["pooling"]})
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec["sha256"], "not the file llama.cpp ran"
    return path


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("name", GOLDEN["files"])
def test_vectors_are_llama_cpps(tmp_path_factory, name):
    embedder = Embedder(Session(golden_file(tmp_path_factory, name), SessionOptions(device="cpu", ctx_size=256)))
    for tokens, theirs in zip(GOLDEN["inputs"], GOLDEN["files"][name]["embeddings"]):
        ours = np.atleast_2d(embedder.embed(tokens))
        assert ours.shape == np.shape(theirs)
        assert min(cosine(a, np.array(b)) for a, b in zip(ours, theirs)) >= SIMILAR


def test_normalisation_is_llama_cpps():
    vector = np.array([3.0, -4.0, 0.0], np.float32)
    assert normalized(vector).tolist() == pytest.approx([0.6, -0.8, 0.0])
    assert normalized(vector, 1).tolist() == pytest.approx([3 / 7, -4 / 7, 0.0])
    assert normalized(vector, 0).tolist() == pytest.approx([3 * 32760 / 4, -32760.0, 0.0])
    assert normalized(vector, -1).tolist() == vector.tolist()
    assert normalized(np.zeros(3, np.float32)).tolist() == [0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    path = golden_file(tmp_path_factory, "qwen3-last")
    return ServedModel(Session(path, SessionOptions(device="cpu", ctx_size=256)), "emb")


@pytest.fixture(scope="module")
def client(served):
    return testing.TestClient(make_app(served), headers=LOCAL)


def embed(client, body: dict, path: str = "/v1/embeddings"):
    return client.simulate_post(path, json=body)


def test_a_texts_vector_does_not_depend_on_its_company(client):
    alone = embed(client, {"input": "tok9 tok12"}).json["data"][0]["embedding"]
    together = embed(client, {"input": ["tok5", "tok9 tok12", "tok7 tok7 tok7"]}).json["data"]
    assert [d["index"] for d in together] == [0, 1, 2] and together[1]["embedding"] == alone


def test_the_openai_shapes(client, served):
    answer = embed(client, {"input": [[5, 7, 9, 11], [42]], "model": "whatever"}).json
    assert answer["object"] == "list" and answer["model"] == "whatever"
    assert answer["usage"] == {"prompt_tokens": 5, "total_tokens": 5}
    assert len(answer["data"][0]["embedding"]) == served.embedder.n_embd
    packed = embed(client, {"input": [[5, 7, 9, 11]], "encoding_format": "base64"}).json["data"][0]["embedding"]
    assert np.frombuffer(__import__("base64").b64decode(packed), "<f4").tolist() == answer["data"][0]["embedding"]


@pytest.mark.parametrize("body, status, words", [
    ({"input": []}, 400, "input must not be empty"),
    ({"input": [[]]}, 400, "empty text"),
    ({"input": ["x"] * 257}, 400, "at most 256"),
    ({"input": "x", "encoding_format": "hex"}, 400, "float or base64"),
    ({"input": "x", "dimensions": 8}, 400, "cannot shorten them"),
    ({"input": {"text": "x"}}, 400, "must be a string"),
    ({"input": [[5, 10**9]]}, 400, "token id"),
    ({"input": "x", "embd_normalize": "two"}, 400, "embd_normalize"),
])
def test_bad_requests_say_what_to_send(client, body, status, words):
    answer = embed(client, body)
    assert answer.status_code == status and words in answer.json["error"]["message"]


def test_llama_servers_and_ollamas_routes(client, served):
    openai = embed(client, {"input": ["tok5", [5, 7]]}).json["data"]
    assert embed(client, {"input": ["tok5", [5, 7]], "embd_normalize": None}).json["data"] == openai
    llama = embed(client, {"content": ["tok5", [5, 7]]}, "/embedding").json
    assert llama == [{"index": i, "embedding": [d["embedding"]]} for i, d in enumerate(openai)]
    assert embed(client, {"content": "tok5"}, "/v1/embeddings").json == llama[:1]  # content: llama-server's answer
    ollama = embed(client, {"model": "emb", "input": ["tok5", "tok5"]}, "/api/embed").json
    assert ollama["embeddings"] == [openai[0]["embedding"]] * 2
    assert ollama["prompt_eval_count"] == 2 * len(served.session.tokenizer.encode("tok5"))
    pooled = embed(client, {"model": "emb", "prompt": "tok5"}, "/api/embeddings").json["embedding"]
    assert normalized(np.array(pooled, np.float32)).tolist() == openai[0]["embedding"]


@pytest.mark.parametrize("path, route", [("/v1/chat/completions", "/v1/embeddings"), ("/completion", "/v1/embeddings"),
                                         ("/api/chat", "/api/embed"), ("/api/generate", "/api/embed")])
def test_generating_routes_name_the_embedding_routes(client, path, route):
    answer = client.simulate_post(path, json={"model": "emb", "messages": [{"role": "user", "content": "hi"}],
                                              "prompt": "hi"})
    message = answer.json["error"] if path.startswith("/api/") else answer.json["error"]["message"]
    assert answer.status_code == 400
    assert message == f"emb is an embedding model and {path} needs a text model; use {route}"


def test_the_official_clients(served):
    """The openai package (base64 by its default) and LangChain's OpenAIEmbeddings against a live server."""
    import threading

    import waitress

    openai = pytest.importorskip("openai")
    langchain_openai = pytest.importorskip("langchain_openai")
    server = waitress.create_server(make_app(served), host="127.0.0.1", port=0)
    threading.Thread(target=server.run, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.effective_port}/v1"
        client = openai.OpenAI(base_url=base, api_key="local", max_retries=0)
        vectors = [d.embedding for d in client.embeddings.create(model="emb", input=["tok5", "tok9"]).data]
        plain = [served.embedder.embed(served.session.tokenizer.encode(text)).tolist() for text in ("tok5", "tok9")]
        assert vectors == plain
        chain = langchain_openai.OpenAIEmbeddings(model="emb", base_url=base, api_key="local",
                                                  check_embedding_ctx_length=False)
        assert chain.embed_documents(["tok5", "tok9"]) == plain
        assert chain.embed_query("tok5") == plain[0]
    finally:
        server.close()


def test_an_embedding_model_has_one_slot_and_run_names_the_route(served, tmp_path_factory):
    import subprocess
    import sys

    from kinetic.server.parallel import slots_for

    assert slots_for(served.session, 4) == 1
    path = golden_file(tmp_path_factory, "qwen3-last")
    run = subprocess.run([sys.executable, "-m", "kinetic", "run", str(path), "hi", "--device", "cpu"],
                         capture_output=True, text=True)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == ("kinetic: qwen3-last is an embedding model: it gives vectors, not text; serve it with "
                          "kinetic serve and use /v1/embeddings, or kinetic.Model(...).embed in Python\n")


@pytest.fixture(scope="module")
def reranker(tmp_path_factory):
    path = write_reranker(tmp_path_factory.mktemp("rerank") / "reranker.gguf", GOLDEN["seed"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == GOLDEN["rerank"]["sha256"], "not the file llama.cpp ran"
    return ServedModel(Session(path, SessionOptions(device="cpu", ctx_size=256)), "ranker")


def test_rerank_scores_are_llama_cpps(reranker):
    golden = GOLDEN["rerank"]
    client = testing.TestClient(make_app(reranker), headers=LOCAL)
    answer = client.simulate_post("/v1/rerank", json={"query": golden["query"], "documents": golden["documents"],
                                                     "top_n": 3, "return_documents": True}).json
    assert answer["object"] == "list" and answer["model"] == "ranker"
    assert answer["usage"]["prompt_tokens"] == golden["prompt_tokens"]
    scores = {r["index"]: r["relevance_score"] for r in answer["results"]}
    theirs = sorted(range(len(golden["scores"])), key=lambda i: -golden["scores"][i])
    assert [r["index"] for r in answer["results"]] == theirs[:3]  # most relevant first, top_n of them
    assert all(abs(scores[i] - golden["scores"][i]) < SCORE_TOLERANCE for i in scores)
    assert all(r["document"]["text"] == golden["documents"][r["index"]] for r in answer["results"])
    tei = client.simulate_post("/rerank", json={"query": golden["query"], "texts": golden["documents"],
                                                "return_text": True}).json
    assert [(t["index"], t["score"], t["text"]) for t in tei][:3] == [
        (r["index"], r["relevance_score"], r["document"]["text"]) for r in answer["results"]]


@pytest.mark.parametrize("path, words", [("/v1/embeddings", "needs an embedding model; use /v1/rerank"),
                                         ("/v1/chat/completions", "needs a text model; use /v1/rerank"),
                                         ("/api/embed", "needs an embedding model; use /v1/rerank")])
def test_a_reranker_serves_rerank_alone(reranker, path, words):
    client = testing.TestClient(make_app(reranker), headers=LOCAL)
    answer = client.simulate_post(path, json={"model": "ranker", "input": "x", "messages": []})
    message = answer.json["error"] if path.startswith("/api/") else answer.json["error"]["message"]
    assert answer.status_code == 400 and message == f"ranker is a reranking model and {path} {words}"


@pytest.mark.parametrize("body, words", [({"documents": ["a"]}, "query must be a string"),
                                         ({"query": "q", "documents": []}, "non-empty list"),
                                         ({"query": "q", "documents": [3]}, "documents[0] must be a string"),
                                         ({"query": "q", "documents": ["a"] * 257}, "at most 256")])
def test_bad_rerank_requests(reranker, body, words):
    answer = testing.TestClient(make_app(reranker), headers=LOCAL).simulate_post("/v1/rerank", json=body)
    assert answer.status_code == 400 and words in answer.json["error"]["message"]


def test_kinetic_model_reranks_as_the_route(reranker):
    import kinetic

    golden = GOLDEN["rerank"]
    with kinetic.Model(reranker.session.path, device="cpu", ctx_size=256) as model:
        scores = model.rerank(golden["query"], golden["documents"])
        with pytest.raises(RuntimeError, match="is a reranking model; use rerank"):
            model.generate("x")
    ranker = reranker.ranker
    assert scores == [ranker.score(ranker.prompt(golden["query"], d)) for d in golden["documents"]]


def test_cross_encoder_scores_are_llama_cpps(tmp_path_factory):
    """A BERT-style cross-encoder ranks by its [CLS] state through its dense layer (tanh) and head."""
    golden = GOLDEN["cross_encoder"]
    path = write_cross_encoder(tmp_path_factory.mktemp("cross") / "cross.gguf", GOLDEN["seed"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == golden["sha256"], "not the file llama.cpp ran"
    client = testing.TestClient(make_app(ServedModel(Session(path, SessionOptions(device="cpu")), "cross")),
                                headers=LOCAL)
    answer = client.simulate_post("/v1/rerank", json={"query": golden["query"], "documents": golden["documents"]}).json
    assert answer["usage"]["prompt_tokens"] == golden["prompt_tokens"]
    scores = {r["index"]: r["relevance_score"] for r in answer["results"]}
    assert all(abs(scores[i] - golden["scores"][i]) < SCORE_TOLERANCE for i in range(len(golden["documents"])))


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    return golden_file(tmp_path_factory, "bert-cls")


def hidden_states(runner, texts: list[list[int]]) -> list[np.ndarray]:
    """Each text's hidden states [len, n_embd], the texts in one pass on sequences of their own."""
    sequences, rows = [runner.new_sequence() for _ in texts], []
    for seq, text in zip(sequences, texts):
        first = len(rows)
        rows += [Row(seq, t, p, parent=first + p - 1 if p else -1, hidden=True) for p, t in enumerate(text)]
    runner.forward(rows)
    return [np.stack([seq.hidden[p] for p in range(len(text))]) for seq, text in zip(sequences, texts)]


def test_an_encoder_attends_both_ways_and_alone(bert):
    """BERT's first token sees the last; a text's states are bit for bit the same beside another text; the CPU
    gives the reference executor's states within int8 activations' error."""
    stack = load_stack(bert)
    assert not stack.causal
    cpu = plugins().devices["cpu"].upload(stack, UploadOptions(context_length=256))
    text, other = [101, 140, 150, 160, 102], [101, 7, 102]
    alone, changed = hidden_states(cpu, [text])[0], hidden_states(cpu, [[*text[:-2], 170, 102]])[0]
    assert not np.array_equal(alone[0], changed[0])
    together = hidden_states(cpu, [other, text])
    assert np.array_equal(together[1], alone)
    reference = hidden_states(ReferenceRunner(stack), [text])[0]
    assert np.abs(reference - alone).max() < 1e-3 * np.abs(reference).max()


def test_an_encoders_text_fits_its_positions(bert):
    embedder = Embedder(Session(bert, SessionOptions(device="cpu", ctx_size=1024)))
    with pytest.raises(PromptTooLong):
        embedder.embed([101] * 300)


def test_an_encoder_without_a_pooling_type_gives_each_tokens_vector(bert):
    session = Session(bert, SessionOptions(device="cpu"))
    del session.model.metadata["bert.pooling_type"]  # as a file that sets none
    assert pooling_of(session) == "none"
    assert Embedder(session).embed([101, 140, 102]).shape == (3, 64)

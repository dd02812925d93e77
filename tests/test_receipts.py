"""Receipts, as a user makes and checks them: `kinetic run --receipt` on the real Qwen (sampled, every speed
technology on) verifies as identical when `kinetic verify-receipt` reruns it alone with them off; a changed
token, setting or signature and another model file are each caught with exit 1."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kinetic.receipt import tokens_blake3
from kinetic.testing import real_models


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    folder = tmp_path_factory.mktemp("receipts")
    key = folder / "receipt.key"
    key.write_text("11" * 32 + "\n")
    receipt = folder / "answer.json"
    # seed 1: seed 2 answers otherwise from the first token (with a seed drawn at random, the next seed gave the
    # same 12 tokens now and then)
    done = kinetic("run", str(real_models.fetch("qwen")), "Name three rivers.", "--temp", "0.8", "-n", "12",
                   "--seed", "1", "--device", "cpu", "-c", "512", "--receipt", str(receipt), "--sign-key", str(key))
    assert done.returncode == 0, done.stderr
    return json.loads(receipt.read_text()), done.stdout


def changed(tmp_path, receipt: dict) -> str:
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(receipt))
    return str(path)


def test_a_receipt_holds_the_answer_and_verifies_identical(made, tmp_path):
    receipt, stdout = made
    assert receipt["output"]["text"] + "\n" == stdout and receipt["sampling"]["seed"] >= 0
    assert receipt["output"]["tokens"]["count"] == len(receipt["output"]["tokens"]["ids"]) <= 12
    assert receipt["device"]["settings"]["ctx-size"] == 512 and receipt["signature"]["public_key"]
    done = kinetic("verify-receipt", changed(tmp_path, receipt))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("signature: valid, public key ") and lines[2].startswith("model:     qwen2.5")
    assert lines[3].startswith(f"rerun:     identical, {len(receipt['output']['tokens']['ids'])} of ")


def test_a_changed_token_breaks_its_hash_or_the_signature(made, tmp_path):
    receipt, _ = made
    tokens = dict(receipt["output"]["tokens"], ids=[1] + receipt["output"]["tokens"]["ids"][1:])
    unhashed = {**receipt, "output": {**receipt["output"], "tokens": tokens}}
    done = kinetic("verify-receipt", changed(tmp_path, unhashed))
    assert done.returncode == 1 and "output tokens do not match their BLAKE3" in done.stderr
    rehashed = {**unhashed, "output": {**unhashed["output"], "tokens": {**tokens, "blake3": tokens_blake3(tokens["ids"])}}}
    done = kinetic("verify-receipt", changed(tmp_path, rehashed))
    assert done.returncode == 1 and "the signature does not match the receipt" in done.stderr


def test_another_seed_gives_another_answer_and_says_where(made, tmp_path):
    receipt, _ = made
    unsigned = {k: v for k, v in receipt.items() if k != "signature"}
    unsigned["sampling"] = {**receipt["sampling"], "seed": receipt["sampling"]["seed"] + 1}
    done = kinetic("verify-receipt", changed(tmp_path, unsigned))
    assert done.returncode == 1 and "signature: none" in done.stdout
    assert "rerun:     differs at output token" in done.stdout and "this is a bug" in done.stdout


def test_another_model_file_is_refused(made, tmp_path):
    receipt, _ = made
    done = kinetic("verify-receipt", changed(tmp_path, receipt), "--model", str(real_models.fetch("gemma")))
    assert done.returncode == 1
    assert done.stderr == (f"kinetic: {real_models.fetch('gemma')} is not the receipt's model "
                           "qwen2.5-coder-0.5b-instruct.gguf (its BLAKE3 differs)\n")


@pytest.mark.parametrize("key, words", [("abc", "is no Ed25519 secret key"), (None, "give --receipt FILE too")])
def test_bad_keys_and_flags_are_one_line(tmp_path, key, words):
    args = ["run", str(real_models.fetch("qwen")), "hi", "-n", "1", "--sign-key"]
    if key is not None:
        (tmp_path / "bad.key").write_text(key)
        args += [str(tmp_path / "bad.key"), "--receipt", str(tmp_path / "r.json")]
    else:
        args += [str(tmp_path / "any.key")]
    done = kinetic(*args)
    assert done.returncode in (1, 2) and words in done.stderr and done.stderr.count("\n") == 1


def test_a_servers_streamed_receipt_verifies(tmp_path):
    """A seeded, streamed chat on the server (two slots, every speed technology on): the receipt in its last
    chunk, signed with the server's key, reruns identical."""
    from falcon import testing

    from kinetic.engine.options import SessionOptions
    from kinetic.engine.session import Session
    from kinetic.server import ServedModel, make_app
    from kinetic.server.defaults import ServerDefaults

    session = Session(real_models.fetch("qwen"), SessionOptions(device="cpu", ctx_size=512))
    served = ServedModel(session, "coder", 2, ServerDefaults(sign_key=bytes.fromhex("22" * 32)))
    client = testing.TestClient(make_app(served), headers={"Host": "localhost"})
    body = {"messages": [{"role": "user", "content": "Name three rivers."}], "max_tokens": 10, "temperature": 0.8,
            "seed": 7, "stream": True, "receipt": True}
    events = [json.loads(line[6:]) for line in client.simulate_post("/v1/chat/completions", json=body).text.split("\n")
              if line.startswith("data: {")]
    receipt = events[-1]["receipt"]
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert receipt["sampling"]["seed"] == 7 and receipt["output"]["text"] == text
    done = kinetic("verify-receipt", changed(tmp_path, receipt))
    assert done.returncode == 0 and "rerun:     identical" in done.stdout and "signature: valid" in done.stdout


def test_a_constrained_answers_receipt_verifies_with_its_grammar(tmp_path):
    """A sampled answer held to a JSON schema on the server: its receipt records the grammar and reruns identical;
    rerun without it, the answer parts from the receipt's."""
    from falcon import testing

    from kinetic.engine.options import SessionOptions
    from kinetic.engine.session import Session
    from kinetic.server import ServedModel, make_app

    session = Session(real_models.fetch("qwen"), SessionOptions(device="cpu", ctx_size=512))
    client = testing.TestClient(make_app(ServedModel(session, "coder", 1)), headers={"Host": "localhost"})
    schema = {"type": "object", "properties": {"river": {"type": "string"}}, "required": ["river"]}
    body = {"messages": [{"role": "user", "content": "Name a river."}], "max_tokens": 16, "temperature": 0.8,
            "seed": 3, "receipt": True, "response_format": {"type": "json_schema",
                                                            "json_schema": {"name": "r", "schema": schema}}}
    receipt = client.simulate_post("/v1/chat/completions", json=body).json["receipt"]
    assert receipt["output"]["text"].startswith("{") and receipt["sampling"]["grammar"]["kind"] == "JSON schema"
    done = kinetic("verify-receipt", changed(tmp_path, receipt))
    assert done.returncode == 0 and "rerun:     identical" in done.stdout, done.stdout + done.stderr
    del receipt["sampling"]["grammar"]
    done = kinetic("verify-receipt", changed(tmp_path, receipt))
    assert done.returncode == 1 and "rerun:     differs at output token" in done.stdout


def test_chats_receipt_command_saves_the_last_answer(tmp_path):
    receipt = tmp_path / "turn.json"
    done = subprocess.run([sys.executable, "-m", "kinetic", "chat", str(real_models.fetch("qwen")), "-n", "8",
                           "--device", "cpu", "-c", "512", "--temp", "0.8"],
                          input=f"/receipt {receipt}\nName one river.\nAnd one more?\n/receipt {receipt}\n",
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "no answer yet" in done.stdout and f"receipt saved to {receipt}" in done.stdout
    saved = json.loads(receipt.read_text())
    assert [m["content"] for m in saved["input"]] == ["Name one river.", saved["input"][1]["content"], "And one more?"]
    verified = kinetic("verify-receipt", str(receipt))
    assert verified.returncode == 0 and "rerun:     identical" in verified.stdout

"""kinetic serve with llama-server's command line: server-wide sampling defaults and -n, /props compared field
by field with llama-server's (tests/golden/llama_flags/props.json, scripts/make_llama_flags_golden.py),
--cors-origins, and llama-server's acceptance line run through a link named llama-server."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from falcon import testing

from kinetic.cli.main import main
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app
from kinetic.server.cors import Cors
from kinetic.server.defaults import ServerDefaults
from kinetic.testing.gguf_factory import Dims, write_random_model

GOLDEN = json.loads((Path(__file__).parent / "golden" / "llama_flags" / "props.json").read_text())
LOCAL = {"Host": "localhost:8080"}
SITE = "https://app.example.com"
TEMPLATE = "{% for message in messages %}{{ message.content }}{% endfor %}"

# llama-server's /props fields Kinetic does not report, and why; every other field is compared.
NOT_REPORTED = {
    "chat_format": "Kinetic names the tool-call format it reads (kinetic.tools), not llama.cpp's parser",
    "reasoning_format": "Kinetic always returns the thinking in reasoning_content",
    "reasoning_in_content": "the same", "generation_prompt": "set per request",
    "speculative.types": "Kinetic drafts by itself", "timings_per_token": "a request field",
    "post_sampling_probs": "a request field", "backend_sampling": "Kinetic samples on the CPU",
    "lora": "LoRA adapters are not available yet",
}
# Reported differently, and why: llama-server 11434's /props shows -1 for -n, while it applies -n to requests.
DIFFERENT = {"n_predict": 64, "max_tokens": 64}


@pytest.fixture(scope="module")
def random_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("serve")
    (folder / "plain.jinja").write_text(TEMPLATE)
    return write_random_model(folder / "m.gguf", "llama", Dims(n_layer=2), "Q8_0",
                              metadata={"llama.context_length": 1024})


@contextmanager
def serving(command: list[str], env: dict[str, str]) -> Iterator[str]:
    """The base URL of a server started with command, which prints `Serving ... at URL/v1` when it listens."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        match = re.search(r" at (http://\S+)/v1$", line.strip())
        if not match:
            pytest.fail(f"the server did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}")
        yield match.group(1)
    finally:
        proc.kill()
        proc.wait()


def get(url: str) -> tuple[int, dict]:
    """(status, JSON body; {} for an error)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, {}


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


def test_props_report_the_flags_as_llama_server_does(gemma_gguf, tmp_path):
    """The same flags on llama-server and kinetic serve, their /props params field by field."""
    env = {**os.environ, "KINETIC_CACHE": str(tmp_path)}
    command = [sys.executable, "-m", "kinetic", "serve", str(gemma_gguf), "--port", "0", "-c", "512", "--device",
               "cpu", *GOLDEN["flags"]]
    with serving(command, env) as url:
        _, props = get(f"{url}/props")
    theirs, ours = GOLDEN["default_generation_settings"]["params"], props["default_generation_settings"]["params"]
    for name, value in theirs.items():
        if name in NOT_REPORTED:
            continue
        expected = DIFFERENT.get(name, value)
        if isinstance(value, float):
            assert math.isclose(ours[name], expected, rel_tol=1e-6), name  # llama-server's are float32
        else:
            assert ours[name] == expected, name


def test_requests_that_set_no_field_take_the_servers(random_model):
    defaults = ServerDefaults({"temp": 0.0, "top_k": 5, "seed": 42}, n_predict=4)
    session = Session(random_model, SessionOptions(device="cpu", ctx_size=128,
                                                   chat_template_file=random_model.parent / "plain.jinja"))
    client = testing.TestClient(make_app(ServedModel(session, defaults=defaults)), headers=LOCAL)
    plain = client.simulate_post("/completion", json={"prompt": "tok7 tok8"}).json
    assert plain["tokens_predicted"] == 4 and plain["stop_type"] == "limit"
    settings = plain["generation_settings"]  # under llama-server's names
    assert {k: settings[k] for k in ("temperature", "top_k", "seed")} == {"temperature": 0.0, "top_k": 5, "seed": 42}
    own = client.simulate_post("/completion", json={"prompt": "tok7", "n_predict": 2, "temperature": 0.5}).json
    assert own["tokens_predicted"] == 2 and own["generation_settings"]["temperature"] == 0.5
    chat = client.simulate_post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "tok7"}]})
    assert chat.json["usage"]["completion_tokens"] == 4


@pytest.fixture(scope="module")
def cors_client(random_model):
    def client(**cors) -> testing.TestClient:
        session = Session(random_model, SessionOptions(device="cpu", ctx_size=64))
        return testing.TestClient(make_app(ServedModel(session), api_key="key", cors=Cors(**cors)), headers=LOCAL)
    return client


@pytest.mark.parametrize("origins, origin, status", [
    ((), SITE, 403), ((SITE,), SITE, 200), ((SITE + "/",), SITE.upper(), 200), ((SITE,), "https://evil.com", 403),
    (("localhost",), "http://localhost:3000", 200), ((SITE,), "http://localhost:3000", 200),
])
def test_cors_origins_is_the_allow_list_of_web_pages(cors_client, origins, origin, status):
    result = cors_client(origins=origins).simulate_get("/v1/models", headers={
        "Origin": origin, "Authorization": "Bearer key"})
    assert result.status_code == status
    listed = status == 200 and (origin.lower() != "http://localhost:3000" or "localhost" in origins)
    assert result.headers.get("Access-Control-Allow-Origin") == (origin if listed else None)


def test_an_allowed_pages_preflight_needs_no_key(cors_client):
    headers = {"Origin": SITE, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type"}
    result = cors_client(origins=(SITE,), credentials=False).simulate_options("/v1/chat/completions", headers=headers)
    assert result.status_code == 200 and result.headers["Access-Control-Allow-Origin"] == SITE
    assert result.headers["Access-Control-Allow-Headers"] == "authorization, content-type"
    assert "POST" in result.headers["Access-Control-Allow-Methods"]
    assert "Access-Control-Allow-Credentials" not in result.headers
    refused = cors_client(origins=(SITE,)).simulate_options("/v1/chat/completions", headers={
        **headers, "Origin": "https://evil.com"})
    assert refused.status_code == 403


def test_cors_origins_star_is_refused(capsys):
    assert main(["serve", "missing.gguf", "--cors-origins", "*"]) == 2
    assert capsys.readouterr().err.startswith("kinetic serve: --cors-origins '*' would let every web page use the model")


ACCEPTANCE = ["--temp", "0.8", "--seed", "42", "--host", "127.0.0.1", "--alias", "A", "--ctx-size", "512",
              "--parallel", "2", "-n", "64", "--no-slots", "--batch-size", "32", "--jinja"]


def test_llama_servers_command_line_through_a_link(random_model, tmp_path):
    """The issue's acceptance line, run by a link that `kinetic link` made."""
    env = {**os.environ, "KINETIC_CACHE": str(tmp_path / "cache")}
    made = subprocess.run([sys.executable, "-m", "kinetic", "link", str(tmp_path)], capture_output=True, text=True,
                          env=env)
    assert made.returncode == 0, made.stderr
    link = tmp_path / "llama-server"
    assert link.is_symlink() and f"{link} -> " in made.stdout
    command = [str(link), "--port", "0", *ACCEPTANCE[:6], "--model", str(random_model), *ACCEPTANCE[6:],
               "--chat-template-file", str(random_model.parent / "plain.jinja")]
    with serving(command, env) as url:
        assert get(f"{url}/health")[0] == 200
        answer = post(f"{url}/completion", {"prompt": "tok7 tok8"})
        assert answer["model"] == "A" and answer["tokens_predicted"] <= 64
        settings = answer["generation_settings"]
        assert settings["temperature"] == pytest.approx(0.8) and settings["seed"] == 42
        assert get(f"{url}/slots")[0] == 404
        props = get(f"{url}/props")[1]
        assert props["total_slots"] == 2 and props["default_generation_settings"]["params"]["n_predict"] == 64

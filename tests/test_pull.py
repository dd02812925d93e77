"""`kinetic pull` against a local stand-in for the Hugging Face hub (hub_server.py) named by HF_ENDPOINT:
which files it takes, resuming, the hash check, the disk check and the failures' lines. No network."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hub_server import COMMIT, FakeHub, Repo

import kinetic.hub.budget
import kinetic.hub.download
import kinetic.system
from kinetic.cli.main import main
from kinetic.contracts.device import Device
from kinetic.hookspecs import hookimpl
from kinetic.hub.budget import Budget, memory_budget
from kinetic.plugins import load_plugins
from kinetic.testing.gguf_factory import Dims, write_random_model

GIB = 1 << 30


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """The stand-in hub as HF_ENDPOINT, models going to tmp_path/models, no token, 12 GiB of RAM for models."""
    served = FakeHub()
    monkeypatch.setenv("HF_ENDPOINT", served.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("KINETIC_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(kinetic.hub.budget, "memory_budget", lambda: Budget(12 * GIB, "(half the free RAM)"))
    yield served
    served.close()


def content(name: str, size: int = 3000) -> bytes:
    return hashlib.sha256(name.encode()).digest() * (size // 32) + b"x" * (size % 32)


def repo(*names: str, **served) -> Repo:
    return Repo({name: content(name) for name in names}, **served)


def pull(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["pull", *args])
    out, err = capsys.readouterr()
    return code, out, err


def pulled(tmp_path: Path, name: str = "org/repo") -> set[str]:
    folder = tmp_path / "models" / name
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}


LAYOUTS = [
    (["m-Q4_K_M.gguf", "m-Q8_0.gguf"], "q4_k_m", ["m-Q4_K_M.gguf"]),
    (["m-Q4_K_M.gguf", "m-UD-Q4_K_XL.gguf"], "UD-Q4_K_XL", ["m-UD-Q4_K_XL.gguf"]),
    (["m.Q4_K_M.gguf", "m.Q5_K_M.gguf", "m.F16.gguf"], "Q5_K_M", ["m.Q5_K_M.gguf"]),
    (["m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf", "m-Q8_0.gguf"], "Q4_K_M",
     ["m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf"]),
    (["Q4_K_M/m-Q4_K_M-00001-of-00002.gguf", "Q4_K_M/m-Q4_K_M-00002-of-00002.gguf", "Q8_0/m-00001-of-00002.gguf",
      "Q8_0/m-00002-of-00002.gguf"], "Q8_0", ["Q8_0/m-00001-of-00002.gguf", "Q8_0/m-00002-of-00002.gguf"]),
]


@pytest.mark.parametrize("names, quant, expected", LAYOUTS)
def test_a_named_quant_takes_its_files_and_every_split_part(hub, capsys, tmp_path, names, quant, expected):
    hub.repos["org/repo"] = repo(*names, "README.md")
    code, out, err = pull(capsys, f"org/repo:{quant}")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"  source   {hub.endpoint}/org/repo (commit {COMMIT[:12]})"
    assert lines[1] == f"  quant    {quant.upper()}, as named"
    assert lines[2].split() == ["files", expected[0], "3000", "bytes"]
    assert f"{3000 * len(expected)} bytes in all, into {tmp_path / 'models' / 'org/repo'}" in out
    assert lines[-1] == f"Run it with: kinetic run org/repo:{quant.upper()}"
    assert pulled(tmp_path) == set(expected)
    for name in expected:
        assert (tmp_path / "models/org/repo" / name).read_bytes() == content(name)
        assert f"           {name}: downloaded, SHA256 checked" in lines


@pytest.mark.parametrize("budget, quant, why", [
    (GIB + 100, "Q4_K_M", "the smallest of Q4_K_M, Q5_K_M, Q6_K, Q8_0 here, though with 1.0 GiB for context it "
                          "needs more than 1.0 GiB (half the free RAM)"),
    (GIB + 6700, "Q6_K", "the largest of Q4_K_M, Q5_K_M, Q6_K, Q8_0 here that fits, with 1.0 GiB for context, in "
                         "1.0 GiB free on CUDA"),
    (10 * GIB, "Q8_0", "the largest of Q4_K_M, Q5_K_M, Q6_K, Q8_0 here that fits, with 1.0 GiB for context, in "
                       "10.0 GiB free on CUDA"),
])
def test_without_a_quant_the_largest_that_fits_the_memory(hub, capsys, tmp_path, monkeypatch, budget, quant, why):
    sizes = {"Q4_K_M": 4000, "Q5_K_M": 5000, "Q6_K": 6000, "Q8_0": 8000, "F16": 16000}
    hub.repos["org/repo"] = Repo({f"m-{name}.gguf": content(name, size) for name, size in sizes.items()})
    where = "(half the free RAM)" if budget < GIB + 1000 else "free on CUDA"
    monkeypatch.setattr(kinetic.hub.budget, "memory_budget", lambda: Budget(budget, where))
    code, out, err = pull(capsys, "org/repo")
    assert (code, err) == (0, "")
    assert f"  quant    {quant}, {why}" in out.splitlines()
    assert pulled(tmp_path) == {f"m-{quant}.gguf"}


def test_a_repository_with_one_model_gives_it_and_its_name(hub, capsys, tmp_path):
    hub.repos["org/repo"] = repo("model.gguf")
    code, out, err = pull(capsys, "org/repo")
    assert (code, err) == (0, "")
    assert "  quant    model.gguf, the repository's only model" in out
    assert out.splitlines()[-1] == "Run it with: kinetic run org/repo"


@pytest.mark.parametrize("flags, projector", [([], "mmproj-m-F16.gguf"), (["--no-mmproj"], None)])
def test_the_vision_projector_comes_unless_no_mmproj(hub, capsys, tmp_path, flags, projector):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf", "mmproj-m-BF16.gguf", "mmproj-m-F16.gguf", "mmproj-m-Q8_0.gguf")
    code, out, err = pull(capsys, "org/repo:Q4_K_M", *flags)
    assert (code, err) == (0, "")
    assert pulled(tmp_path) == {"m-Q4_K_M.gguf"} | ({projector} if projector else set())


class Interrupted:
    """A file that takes `limit` bytes, then stops the download as Ctrl+C would."""

    def __init__(self, stream, limit: int):
        self.stream, self.limit = stream, limit

    def write(self, chunk: bytes) -> None:
        self.stream.write(chunk[: self.limit])
        raise KeyboardInterrupt

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def test_an_interrupted_download_resumes_with_a_range_request(hub, capsys, tmp_path, monkeypatch):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf")
    http_get = kinetic.hub.download.http_get
    with monkeypatch.context() as patched:
        patched.setattr(kinetic.hub.download, "http_get",
                        lambda url, stream, **given: http_get(url, Interrupted(stream, 1234), **given))
        code, _, err = pull(capsys, "org/repo:Q4_K_M")
    assert (code, err) == (130, "kinetic: interrupted; repeat kinetic pull to resume the download\n")
    assert pulled(tmp_path) == {"m-Q4_K_M.gguf.part"}
    code, out, err = pull(capsys, "org/repo:Q4_K_M")
    assert (code, err) == (0, "")
    assert [request.range for request in hub.downloads()] == [None, "bytes=1234-"]
    final = tmp_path / "models/org/repo/m-Q4_K_M.gguf"
    assert hashlib.sha256(final.read_bytes()).digest() == hashlib.sha256(content("m-Q4_K_M.gguf")).digest()
    assert pulled(tmp_path) == {"m-Q4_K_M.gguf"}


def test_files_in_place_with_the_right_hash_are_not_fetched_again(hub, capsys, tmp_path):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf", "mmproj-F16.gguf")
    assert pull(capsys, "org/repo:Q4_K_M")[0] == 0
    hub.requests.clear()
    code, out, err = pull(capsys, "org/repo:Q4_K_M")
    assert (code, err, hub.downloads()) == (0, "", [])
    assert "           m-Q4_K_M.gguf: already here, SHA256 checked" in out.splitlines()


@pytest.mark.parametrize("name, args, checked", [
    ("m-Q4_K_M.gguf", ["org/repo:Q4_K_M"], "SHA256"),
    ("README.md", ["org/repo", "--file", "README.md"], "git hash"),
])
def test_a_corrupt_download_is_refused_and_deleted(hub, capsys, tmp_path, name, args, checked):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf", "README.md", served={name: content("something else")})
    code, out, err = pull(capsys, *args)
    assert code == 1
    assert err == (f"kinetic: {name}: the download does not match the {checked} the hub publishes and was "
                   f"deleted; repeat kinetic pull\n")
    assert pulled(tmp_path) == set()


def test_a_download_that_would_fill_the_disk_is_refused(hub, capsys, tmp_path, monkeypatch):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf")
    monkeypatch.setattr(kinetic.system, "disk_free", lambda path: (path, 2 * GIB + 2999))
    code, out, err = pull(capsys, "org/repo:Q4_K_M")
    assert (code, hub.downloads()) == (1, [])
    assert err == (f"kinetic: the download needs 3000 bytes and {tmp_path / 'models/org/repo'} has 2.00 GiB free, "
                   f"which would leave less than 2 GiB; free some space or pull into another --dir\n")
    assert "  files    m-Q4_K_M.gguf  3000 bytes" in out


def test_a_gated_repository_needs_hf_token(hub, capsys, tmp_path, monkeypatch):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf", token="hf_secret")
    code, _, err = pull(capsys, "org/repo:Q4_K_M")
    assert code == 1
    assert err == (f"kinetic: org/repo is gated: accept its terms on {hub.endpoint}/org/repo and set HF_TOKEN to a "
                   f"token of that account\n")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    code, _, err = pull(capsys, "org/repo:Q4_K_M")
    assert (code, err) == (0, "")
    assert pulled(tmp_path) == {"m-Q4_K_M.gguf"}
    assert hub.downloads()[-1].authorization == "Bearer hf_secret"


def test_file_takes_one_file_checked_against_its_git_hash(hub, capsys, tmp_path):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf", "mmproj-F16.gguf", "README.md")
    code, out, err = pull(capsys, "org/repo", "--file", "README.md")
    assert (code, err) == (0, "")
    assert "           README.md: downloaded, git hash checked" in out.splitlines()
    assert out.splitlines()[-1] == f"Saved as {tmp_path / 'models/org/repo/README.md'}"
    assert pulled(tmp_path) == {"README.md"}


@pytest.mark.parametrize("args, line", [
    (["org/nothing"], "kinetic: {endpoint} has no repository org/nothing (a private one needs HF_TOKEN); "
                       "check the name"),
    (["org/repo:Q3_K_S"], "kinetic: org/repo has no Q3_K_S file; it has F16, Q4_K_M, Q8_0: "
                          "kinetic pull org/repo:<quant>"),
    (["org/repo:Q4_K"], "kinetic: org/repo has no Q4_K file; it has F16, Q4_K_M, Q8_0: kinetic pull org/repo:<quant>"),
    (["org/repo", "--file", "m.gguf"], "kinetic: org/repo has no file m.gguf; its GGUF files: m-Q4_K_M.gguf, "
                                       "m-Q8_0.gguf, m-F16.gguf"),
])
def test_what_is_not_there_is_named(hub, capsys, tmp_path, args, line):
    hub.repos["org/repo"] = repo("m-Q4_K_M.gguf", "m-Q8_0.gguf", "m-F16.gguf")
    code, _, err = pull(capsys, *args)
    assert (code, err) == (1, line.format(endpoint=hub.endpoint) + "\n")
    assert hub.downloads() == []


def test_an_unreachable_hub_says_to_check_the_connection(hub, capsys, monkeypatch):
    hub.close()
    code, _, err = pull(capsys, "org/repo")
    assert code == 1
    assert err.startswith(f"kinetic: cannot reach {hub.endpoint} (ConnectError: ")
    assert err.endswith("); check the connection or HF_ENDPOINT and repeat kinetic pull\n")


@pytest.mark.parametrize("spec", ["repo-only", "org/repo/extra", "org/repo:Q4:K"])
def test_a_bad_repository_name_is_a_usage_error(hub, capsys, spec):
    code, _, err = pull(capsys, spec)
    assert code == 2 and "give ORG/REPO[:QUANT]" in err and hub.requests == []


def test_kinetic_info_reads_the_pulled_model(hub, capsys, tmp_path):
    model = write_random_model(tmp_path / "tiny.gguf", "llama", Dims(n_layer=1, n_embd=32, n_head=2, n_head_kv=1,
                                                                    n_ff=64, n_vocab=64))
    hub.repos["org/tiny-GGUF"] = Repo({"tiny-F16.gguf": model.read_bytes()})
    assert pull(capsys, "org/tiny-GGUF")[0] == 0
    assert main(["info", str(tmp_path / "models/org/tiny-GGUF/tiny-F16.gguf")]) == 0
    assert "  architecture   llama (supported)" in capsys.readouterr().out.splitlines()


def device(name: str, priority: int, reason=None, free=None) -> Device:
    return Device(name=name, title=name.upper(), priority=priority, probe=lambda: reason, upload=None,
                  free_memory=lambda: free)


@pytest.mark.parametrize("devices, expected", [
    ([device("cpu", 0), device("gpu", 20, free=5 * GIB)], Budget(5 * GIB, "free on GPU")),
    ([device("cpu", 0), device("gpu", 20, reason="no driver", free=5 * GIB)], Budget(3 * GIB, "(half the free RAM)")),
    ([device("cpu", 0)], Budget(3 * GIB, "(half the free RAM)")),
])
def test_the_memory_budget_is_the_usable_gpus_free_memory_else_half_the_free_ram(monkeypatch, devices, expected):
    module = types.ModuleType("fake_devices")
    module.register_devices = hookimpl(lambda register: [register(one) for one in devices])
    registered = load_plugins(extra=[("fake_devices", module)], use_entry_points=False)
    monkeypatch.setattr(kinetic.hub.budget, "plugins", lambda: registered)
    monkeypatch.setattr(kinetic.system, "memory", lambda: (16 * GIB, 6 * GIB))
    assert memory_budget() == expected


def test_no_other_command_loads_the_network_client():
    modules = "kinetic.cli.main kinetic.cli.run kinetic.cli.chat kinetic.cli.serve kinetic.cli.bench kinetic.cli.doctor"
    check = (f"import sys; import {', '.join(modules.split())}; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('huggingface_hub', 'httpx2', 'httpx')))")
    found = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    assert found == "[]\n"

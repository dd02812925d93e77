"""Models by name: `kinetic models` over fake stores (Kinetic's folder, Ollama's, LM Studio's, the Hugging Face
cache) in a temporary HOME, names in place of files, and `kinetic fit`. Tiny random-weight models; no network."""

from __future__ import annotations

import hashlib
import json
import re
import types
import shutil
from pathlib import Path

import numpy as np
import pytest

import kinetic.cli.fit
from kinetic.cli.main import main
from kinetic.cli.pull import size_text
from kinetic.model import open_model
from kinetic.model.footprint import bytes_per_token, cache_bytes, expert_bytes, weight_bytes
from kinetic.paths import cache_dir
from kinetic.testing.gguf_factory import Dims, write_gguf, write_random_model

CHAT = {"tokenizer.chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
        "general.file_type": 0}
STORE_VARIABLES = ("KINETIC_MODELS", "OLLAMA_MODELS", "HF_HUB_CACHE", "HF_HOME", "LLAMA_CACHE", "XDG_CACHE_HOME",
                   "XDG_DATA_HOME")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_random_model(tmp_path_factory.mktemp("tiny") / "tiny.gguf", metadata=CHAT)


def place(source: Path, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return path


def ollama_model(store: Path, manifest: str, model: Path, projector: Path | None = None) -> Path:
    """manifest: <registry>/<namespace>/<name>/<tag>; the blobs named by their SHA256 as Ollama names them."""
    layers = []
    for media, source in (("model", model), ("projector", projector)):
        if source is not None:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()
            place(source, store / "blobs" / f"sha256-{digest}")
            layers.append({"mediaType": f"application/vnd.ollama.image.{media}", "digest": f"sha256:{digest}"})
    path = store / "manifests" / manifest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    return store / "blobs" / layers[0]["digest"].replace(":", "-")


def hf_cached(hub: Path, repo: str, files: dict[str, Path]) -> Path:
    """A repository in the hub cache: each file a link from snapshots/<rev>/ into blobs/."""
    folder = hub / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("abc123")
    for name, source in files.items():
        blob = place(source, folder / "blobs" / hashlib.sha256(source.read_bytes()).hexdigest())
        link = folder / "snapshots" / "abc123" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../..") / "blobs" / blob.name)
    return folder / "snapshots" / "abc123"


@pytest.fixture
def stores(tmp_path, monkeypatch, tiny) -> dict[str, Path]:
    """Every store in tmp_path, through HOME and the variables; the model files by what they are."""
    monkeypatch.setenv("KINETIC_CACHE", str(cache_dir()))  # the compiled kernels stay where they are
    for variable in STORE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    home, kinetic_dir = tmp_path / "home", tmp_path / "kinetic"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KINETIC_MODELS", str(kinetic_dir))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    projector = write_gguf(tmp_path / "mmproj.gguf", "clip", {}, {"v.weight": np.zeros(4, np.float32)})
    unknown = write_gguf(tmp_path / "odd.gguf", "lfm9", {}, {"x.weight": np.zeros(4, np.float32)})
    ollama = home / ".ollama" / "models"
    (kinetic_dir / "broken.gguf").parent.mkdir(parents=True)
    (kinetic_dir / "broken.gguf").write_bytes(b"not a model")
    return {
        "broken": kinetic_dir / "broken.gguf",
        "loose": place(tiny, kinetic_dir / "loose.gguf"),
        "q8": place(tiny, kinetic_dir / "acme" / "tiny-GGUF" / "tiny-Q8_0.gguf"),
        "f16": place(tiny, kinetic_dir / "acme" / "tiny-GGUF" / "tiny-UD-F16.gguf"),
        "odd": place(unknown, kinetic_dir / "odd" / "arch-GGUF" / "odd-Q4_0.gguf"),
        "ollama": ollama_model(ollama, "registry.ollama.ai/library/tiny/latest", tiny, projector),
        "ollama_hf": ollama_model(ollama, "hf.co/acme/other-GGUF/Q8_0", unknown),
        "lmstudio": place(tiny, home / ".lmstudio" / "models" / "studio" / "small-GGUF" / "small-F32.gguf"),
        "hf": hf_cached(tmp_path / "hf" / "hub", "hf-org/hf-repo", {"m-F32.gguf": tiny, "mmproj-F16.gguf": projector})
        / "m-F32.gguf",
    }


def table(capsys, *args: str) -> list[list[str]]:
    assert main(list(args)) == 0
    return [line.split() for line in capsys.readouterr().out.splitlines()]


def test_models_lists_every_store(stores, capsys):
    def row(name, key, quant, arch, runs, source):
        return [name, *size_text(stores[key].stat().st_size).split(), quant, arch, *runs.split(), source]

    assert table(capsys, "models") == [
        ["NAME", "SIZE", "QUANT", "ARCH", "RUNS", "ON", "KINETIC", "FROM"],
        row("broken", "broken", "?", "?", "no: not a GGUF file", "folder"),
        row("loose", "loose", "F32", "llama", "yes", "folder"),
        row("acme/tiny-GGUF:Q8_0", "q8", "F32", "llama", "yes", "folder"),
        row("acme/tiny-GGUF:F16", "f16", "F32", "llama", "yes", "folder"),
        row("odd/arch-GGUF", "odd", "Q4_0", "lfm9", "no: architecture lfm9", "folder"),
        row("hf.co/acme/other-GGUF:Q8_0", "ollama_hf", "?", "lfm9", "no: architecture lfm9", "ollama"),
        row("tiny:latest", "ollama", "F32", "llama", "yes", "ollama"),
        row("studio/small-GGUF", "lmstudio", "F32", "llama", "yes", "lmstudio"),
        row("hf-org/hf-repo", "hf", "F32", "llama", "yes", "huggingface"),
    ]


def test_a_manifest_whose_blob_is_gone_is_listed_with_the_reason(stores, capsys):
    stores["ollama_hf"].unlink()
    [row] = [line for line in table(capsys, "models") if line[0] == "hf.co/acme/other-GGUF:Q8_0"]
    assert row[1:] == ["0", "bytes", "?", "?", "no:", "no", "such", "file", "ollama"]


def test_doctor_counts_the_models(stores):
    from kinetic.cli.doctor import models_line

    assert models_line() == "9 found, 6 that Kinetic runs (`kinetic models` lists them)"


@pytest.mark.parametrize("name, key", [
    ("loose", "loose"), ("acme/tiny-GGUF:Q8_0", "q8"), ("ACME/tiny-gguf:f16", "f16"), ("tiny:latest", "ollama"),
    ("acme/tiny-GGUF:ud-f16", "f16"), ("tiny", "ollama"), ("studio/small-GGUF", "lmstudio"), ("studio/small-GGUF:F32", "lmstudio"),
    ("hf-org/hf-repo", "hf"), ("odd/arch-GGUF:Q4_0", "odd"),
])
def test_names_resolve_to_their_files(stores, name, key):
    from kinetic.stores import resolve_model

    assert resolve_model(Path(name)).resolve() == stores[key].resolve()


def test_the_projector_is_recorded_beside_its_model(stores):
    from kinetic.stores import all_found

    projectors = {found.name: found.projector for found in all_found()}
    assert projectors["tiny:latest"].read_bytes()[:4] == b"GGUF"
    assert projectors["hf-org/hf-repo"].name == "mmproj-F16.gguf"
    assert projectors["loose"] is None and not any("mmproj" in name for name in projectors)


def test_info_and_run_by_name(stores, capsys):
    assert main(["info", "acme/tiny-GGUF:Q8_0"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "tiny-Q8_0.gguf"
    assert main(["run", "tiny", "Hello", "--device", "cpu", "-n", "2", "--temp", "0"]) == 0
    assert main(["run", "-m", "studio/small-GGUF", "Hello", "--device", "cpu", "-n", "2", "--temp", "0"]) == 0
    assert main(["info", str(stores["loose"])]) == 0  # an existing path wins


@pytest.mark.parametrize("given, alias", [("tiny", "tiny"), ("loose.gguf", None)])
def test_serve_by_name_serves_under_that_name(stores, monkeypatch, given, alias):
    import kinetic.cli.serve

    monkeypatch.chdir(stores["loose"].parent)
    served = []
    monkeypatch.setattr(kinetic.cli.serve, "serve_command", lambda path, alias, *rest: served.append((path, alias)))
    assert main(["serve", given]) == 0
    assert served == [(stores["ollama"] if alias else Path(given), alias)]


@pytest.mark.parametrize("name, line", [
    ("tiny:lates", "tiny:lates is no file and no model's name; the closest: tiny:latest (`kinetic models` lists "
                   "them)"),
    ("acme/tiny-GGUF", "acme/tiny-GGUF names 2 models: acme/tiny-GGUF:Q8_0, acme/tiny-GGUF:F16; give one of these "
                       "names"),
])
def test_unknown_and_ambiguous_names(stores, capsys, name, line):
    assert main(["info", name]) == 1
    assert capsys.readouterr().err == f"kinetic: {line}\n"


def test_fit_a_folder(stores, capsys, monkeypatch, tiny):
    monkeypatch.setattr(kinetic.system, "memory_read_speed", lambda threads: 1e9)
    monkeypatch.setattr(kinetic.cli.fit, "usable_gpu", lambda: None)
    rate = 1e9 / bytes_per_token(open_model(tiny))
    decode = f"{rate * 0.65:.0f}-{rate * 1.2:.0f} t/s".split()
    size = size_text(tiny.stat().st_size).split()
    assert table(capsys, "fit", str(stores["loose"].parent / "acme")) == [
        ["MODEL", "SIZE", "RUNS", "ON", "EXPECTED", "DECODE"],
        ["tiny-GGUF/tiny-Q8_0", *size, "CPU", *decode],
        ["tiny-GGUF/tiny-UD-F16", *size, "CPU", *decode],
    ]


MOE = Dims(n_layer=1, n_embd=64, n_ff=32, n_vocab=300)


@pytest.fixture(scope="module")
def moe(tmp_path_factory) -> Path:
    """A llama file with 8 experts of which 2 run, stacked as llama.cpp stacks them."""
    experts = {f"blk.0.ffn_{kind}_exps.weight": np.zeros((8, 32, 64), np.float32) for kind in ("gate", "up")}
    return write_random_model(tmp_path_factory.mktemp("moe") / "moe.gguf", dims=MOE, extra_tensors=experts,
                              metadata={"llama.expert_count": 8, "llama.expert_used_count": 2})


def test_bytes_per_token_reads_one_embedding_row_and_the_used_experts(moe):
    model = open_model(moe)
    experts = 2 * 8 * 32 * 64 * 4
    embedding = 300 * 64 * 4
    assert bytes_per_token(model) == weight_bytes(model) - experts + experts * 2 // 8 - embedding + 64 * 4


def test_fit_places_a_mixture_of_experts_and_reads_faster_the_more_is_on_the_gpu(moe, capsys, monkeypatch):
    model = open_model(moe)
    others = weight_bytes(model) - expert_bytes(model) + cache_bytes(model, 4096, 2)
    gpu = types.SimpleNamespace(bandwidth=lambda: 1e12)
    monkeypatch.setattr(kinetic.system, "memory_read_speed", lambda threads: 1e9)
    rates = []
    for free, runs_on in ((others + expert_bytes(model), "GPU"), (others, "GPU, experts on CPU"), (others - 1, "CPU")):
        monkeypatch.setattr(kinetic.cli.fit, "usable_gpu", lambda: (gpu, free))
        assert main(["fit", str(moe)]) == 0
        found = re.search(rf"(B|bytes)  {runs_on} +([0-9]+)-([0-9]+) t/s$", capsys.readouterr().out.splitlines()[1])
        rates.append((int(found.group(2)), int(found.group(3))))
    assert rates == sorted(rates, reverse=True) and all(slow < fast for slow, fast in rates)
    assert rates[2] == tuple(round(f * 1e9 / bytes_per_token(model)) for f in (0.65, 1.2))  # the CPU's read speed


def test_fit_by_name_and_a_missing_file(stores, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(kinetic.system, "memory_read_speed", lambda threads: 1e9)
    monkeypatch.setattr(kinetic.cli.fit, "usable_gpu", lambda: None)
    assert [row[:1] + row[3:4] for row in table(capsys, "fit", "tiny")[1:]] == [["tiny:latest", "CPU"]]
    assert main(["fit", str(tmp_path / "none.gguf")]) == 1
    assert capsys.readouterr().err == f"kinetic: {tmp_path / 'none.gguf'}: no such file; check the path\n"


def test_names_in_a_repository_folder(tmp_path):
    from kinetic.stores.found import repository_models

    for name in ("a-Q4_K_M.gguf", "b-Q4_K_M.gguf", "c-Q8_0.gguf", "mmproj-F16.gguf", "d-Q6_K-00001-of-00002.gguf",
                 "d-Q6_K-00002-of-00002.gguf", "readme.md"):
        (tmp_path / name).write_bytes(b"")
    found = {model.name: model for model in repository_models("org/repo", tmp_path, "folder")}
    assert sorted(found) == ["org/repo:Q6_K", "org/repo:Q8_0", "org/repo:a-Q4_K_M", "org/repo:b-Q4_K_M"]
    assert [part.name for part in found["org/repo:Q6_K"].parts] == ["d-Q6_K-00001-of-00002.gguf",
                                                                     "d-Q6_K-00002-of-00002.gguf"]
    assert {model.projector.name for model in found.values()} == {"mmproj-F16.gguf"}

"""The one options object a Session loads with: from flags, from the environment, from keywords; and
--gpu-layers, honoured as far as a model on one device can be."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kinetic.cli.options import session_options
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.testing.gguf_factory import Dims, write_random_model

QUIET = {"announce": lambda line: None}


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory) -> Path:
    return write_random_model(tmp_path_factory.mktemp("options") / "m.gguf", "llama", Dims(n_layer=2), "Q8_0")


def test_keywords_take_any_collection_of_names_to_turn_off():
    options = SessionOptions(device="cpu", off=["rad1"])
    assert options.off == frozenset({"rad1"}) and options.threads is None and options.state_dir is None


def test_from_env_reads_the_documented_variables():
    env = {"KINETIC_DEVICE": "cpu", "KINETIC_THREADS": "2", "KINETIC_CTX_SIZE": " 512 ",
           "KINETIC_CHAT_TEMPLATE_FILE": "t.jinja", "KINETIC_MODEL": "m.gguf"}
    assert SessionOptions.from_env(env) == SessionOptions(device="cpu", threads=2, ctx_size=512,
                                                          chat_template_file=Path("t.jinja"))
    assert SessionOptions.from_env({"KINETIC_DEVICE": "", "KINETIC_THREADS": " "}) == SessionOptions()
    with pytest.raises(KineticError, match="^KINETIC_CTX_SIZE must be a whole number, not 'big'$"):
        SessionOptions.from_env({"KINETIC_CTX_SIZE": "big"})
    assert SessionOptions.from_env({"KINETIC_OFF": "rad1, convoy"}).off == {"rad1", "convoy"}
    with pytest.raises(KineticError, match="^unknown speed technology 'warp'; use a comma-separated list of rad1"):
        SessionOptions.from_env({"KINETIC_OFF": "warp"})


def test_flags_make_the_same_options():
    flags = {"device": "cpu", "threads": 3, "ctx_size": 0, "gpu_layers": 24, "chat_template_file": None,
             "off": frozenset({"rad1"}), "no_prompt_cache": True, "cache_dir": Path("states"), "cache_type_k": "q8_0",
             "cache_type_v": "f16", "gpu_memory": 2 << 30}
    assert session_options(flags) == SessionOptions(device="cpu", threads=3, ctx_size=0, gpu_layers=24,
                                                    off={"rad1", "warm-start"}, state_dir=Path("states"),
                                                    cache_types=("q8_0", "f16"), gpu_memory=2 << 30)


def test_a_session_keeps_its_options(two_layers):
    options = SessionOptions(device="cpu", ctx_size=64, off=("rad1", "warm-start"))
    session = Session(two_layers, options, **QUIET)
    assert session.options is options and session.context_length == 64
    assert session.drafter is None and session.prompt_states is None


@pytest.mark.parametrize("gpu_layers", [None, 2, 99])
def test_gpu_layers_covering_the_model_load_it_whole(two_layers, gpu_layers):
    session = Session(two_layers, SessionOptions(device="cpu", ctx_size=64, gpu_layers=gpu_layers), **QUIET)
    assert session.runner.context_length == 64


@pytest.mark.parametrize("given, layers", [(None, None), ("all", -1), ("AUTO", -1), ("0", 0), ("99", 99)])
def test_gpu_layers_flag_values(given, layers):
    from kinetic.cli.options import gpu_layers

    assert gpu_layers(given) == layers


def test_gpu_layers_zero_is_the_cpu(two_layers):
    session = Session(two_layers, SessionOptions(ctx_size=64, gpu_layers=0), **QUIET)
    assert session.device.name == "cpu"


def test_llama_cpps_ngl_runs_on_a_computer_without_a_gpu(two_layers, tmp_path):
    """A script written for a GPU machine (-ngl 99) still runs here, saying so; --device cuda still fails."""
    template = tmp_path / "plain.jinja"
    template.write_text("{% for message in messages %}{{ message.content }}{% endfor %}")
    ran = kinetic("run", str(two_layers), "hi", "-ngl", "99", "-n", "2", "--temp", "0", "-c", "64",
                  "--chat-template-file", str(template))
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.splitlines()[0].startswith("kinetic: no usable GPU for --gpu-layers, running on the CPU; CUDA")
    named = kinetic("run", str(two_layers), "hi", "-ngl", "99", "--device", "cuda", "-c", "64")
    assert named.returncode == 1 and named.stderr.startswith("kinetic: CUDA is not usable: ")


def test_gpu_layers_below_the_models_layers_are_refused(two_layers):
    with pytest.raises(KineticError) as refused:
        Session(two_layers, SessionOptions(device="cpu", gpu_layers=1), **QUIET)
    assert str(refused.value) == ("--gpu-layers 1: Kinetic runs all 2 layers of this model on one device until "
                                  "layers can be split; use --gpu-layers all, or --device cpu")


@pytest.mark.parametrize("flags", [["--gpu-layers", "1"], ["-ngl", "1"], ["--n-gpu-layers=1"]])
def test_a_layer_split_on_the_command_line_fails_with_one_line(two_layers, flags):
    result = kinetic("run", str(two_layers), "Hi", "-n", "1", *flags)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("kinetic: --gpu-layers 1: Kinetic runs all 2 layers of this model on one device "
                             "until layers can be split; use --gpu-layers all, or --device cpu\n")


def test_cache_types_reach_the_device(two_layers):
    """-ctv q8_0 reaches the CPU, which refuses heads of 16 values for it in one line; a session keeps its types."""
    refused = kinetic("run", str(two_layers), "Hi", "--device", "cpu", "-ctv", "q8_0")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "a q8_0 KV cache holds heads of a multiple of 32 values, and this model's have 16" in refused.stderr
    session = Session(two_layers, SessionOptions(device="cpu", ctx_size=64, off=("rad1", "warm-start")), **QUIET)
    assert session.runner.cache_types == ("f16", "f16")


@pytest.mark.parametrize("given, size", [("2GiB", 2 << 30), ("1536MiB", 1536 << 20), ("2G", 2 << 30),
                                         ("2GB", 2 * 10**9), ("1.5 GiB", 3 << 29), (str(64 << 20), 64 << 20)])
def test_gpu_memory_sizes(given, size):
    from kinetic.cli.options import memory_size

    assert memory_size(given) == size


@pytest.mark.parametrize("given", ["2XB", "lots", "-1GiB", "512"])
def test_gpu_memory_refuses_what_is_no_size(given):
    import typer

    from kinetic.cli.options import memory_size

    with pytest.raises(typer.BadParameter, match="use for example 2GiB"):
        memory_size(given)

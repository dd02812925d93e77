"""The one options object a Session loads with: from flags, from the environment, from keywords."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf_factory import Dims, write_random_model

from kinetic.cli.options import session_options
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError

QUIET = {"announce": lambda line: None}


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


def test_flags_make_the_same_options():
    flags = {"device": "cpu", "threads": 3, "ctx_size": 0, "gpu_layers": None, "chat_template_file": None,
             "off": frozenset({"rad1"}), "no_prompt_cache": True, "cache_dir": Path("states")}
    assert session_options(flags) == SessionOptions(device="cpu", threads=3, ctx_size=0, off={"rad1", "warm-start"},
                                                    state_dir=Path("states"))


def test_a_session_keeps_its_options(two_layers):
    options = SessionOptions(device="cpu", ctx_size=64, off=("rad1", "warm-start"))
    session = Session(two_layers, options, **QUIET)
    assert session.options is options and session.context_length == 64
    assert session.drafter is None and session.prompt_states is None

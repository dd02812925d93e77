"""The .ktc format (docs/FORMAT.md): kinetic convert writes a file that runs bit for bit as its GGUF source,
kinetic verify catches every changed byte and checks the signature, and a file with bytes that belong to no
section is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kinetic.contracts.device import UploadOptions
from kinetic.errors import ModelFileError
from kinetic.model.load import load_stack, open_model
from kinetic.plugins import plugins
from kinetic.testing.gguf_factory import Dims, write_random_model

from device_checks import in_batches

KEY = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"  # RFC 8032's first test key


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def random_gguf(tmp_path_factory) -> Path:
    return write_random_model(tmp_path_factory.mktemp("ktc") / "m.gguf", "qwen2", Dims(), "Q8_0", seed=2,
                              metadata={"tokenizer.chat_template": "{{ messages[0].content }}"})


def converted(source: Path, out: Path, *flags: str) -> Path:
    done = kinetic("convert", str(source), str(out), "--device", "cpu", *flags)
    assert done.returncode == 0 and done.stdout == f"wrote {out}{' (signed)' if flags else ''}\n", done.stderr
    return out


def verified(path: Path) -> bool:
    """Whether verify finds the file intact (a damaged layout counts as not)."""
    try:
        return plugins().model_formats["ktc"].verify(path).intact
    except ModelFileError:
        return False


def test_a_converted_model_runs_bit_for_bit_as_its_gguf(real_gguf, tmp_path):
    ktc = converted(real_gguf, tmp_path / "m.ktc")
    gguf_file, ktc_file = open_model(real_gguf), open_model(ktc)
    assert ktc_file.format == "ktc" and dict(ktc_file.metadata).keys() == dict(gguf_file.metadata).keys()
    assert list(ktc_file.tensors) == list(gguf_file.tensors)
    assert all(np.array_equal(ktc_file.raw(name), gguf_file.raw(name)) for name in gguf_file.tensors)
    tokens = [1, 400, 3000, 52, 9, 81, 2024, 7]
    logits = [in_batches(plugins().devices["cpu"].upload(load_stack(path), UploadOptions(context_length=64)), tokens,
                         8) for path in (real_gguf, ktc)]
    assert np.array_equal(*logits)


def test_the_profile_prices_the_convoys_passes_on_its_device_class(random_gguf, tmp_path):
    """The profile records the source, the build, the device class converted on and the seconds of a pass of each
    size; a server on that device class prices its first passes with them."""
    from kinetic.engine.options import SessionOptions
    from kinetic.engine.profile import SIZES
    from kinetic.engine.session import Session
    from kinetic.server import ServedModel

    path = converted(random_gguf, tmp_path / "m.ktc")
    profile = open_model(path).profile
    session = Session(path, SessionOptions(device="cpu", ctx_size=256), announce=lambda line: None)
    assert profile["converted_from"]["file"] == "m.gguf" and profile["device_class"] == session.runner.device_class
    assert sorted(map(int, profile["pass_seconds"])) == list(SIZES) and min(profile["pass_seconds"].values()) > 0
    costs = ServedModel(session, "m", 2).convoy.costs
    assert [costs.of(size) for size in SIZES] == [profile["pass_seconds"][str(size)] for size in SIZES]
    elsewhere = ServedModel(Session(random_gguf, SessionOptions(device="cpu", ctx_size=256), announce=lambda _: None),
                            "m", 2)
    assert elsewhere.convoy.costs.of(1) is None


def test_verify_reports_each_section_and_the_signature(random_gguf, tmp_path):
    plain = converted(random_gguf, tmp_path / "plain.ktc")
    done = kinetic("verify", str(plain))
    assert done.returncode == 0
    assert done.stdout.splitlines()[-2:] == ["not signed", "plain.ktc: intact"]
    assert [line.split()[0] for line in done.stdout.splitlines()[:6]] == ["metadata", "tokenizer", "chat_template",
                                                                         "tensors", "weights", "profile"]
    (tmp_path / "key").write_text(KEY)
    signed = converted(random_gguf, tmp_path / "signed.ktc", "--sign-key", str(tmp_path / "key"))
    done = kinetic("verify", str(signed))
    public = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # RFC 8032's for that key
    assert done.returncode == 0
    assert done.stdout.splitlines()[-2:] == [f"signed with Ed25519 key {public}: the signature holds",
                                             "signed.ktc: intact"]


def test_every_changed_byte_is_caught(random_gguf, tmp_path):
    """A byte of the header, manifest or signature, any byte of padding, and bytes all through each section:
    each changed alone makes verify fail."""
    (tmp_path / "key").write_text(KEY)
    path = converted(random_gguf, tmp_path / "m.ktc", "--sign-key", str(tmp_path / "key"))
    original = path.read_bytes()
    manifest = json.loads(original[64 : 64 + int.from_bytes(original[16:24], "little")])
    first_section = min(s["offset"] for s in manifest["sections"])
    places = list(range(first_section)) + list(range(first_section, len(original), 97)) + [len(original) - 1]
    for place in places:
        changed = bytearray(original)
        changed[place] ^= 0x10
        path.write_bytes(changed)
        assert not verified(path), f"a changed byte at {place} went unnoticed"
    path.write_bytes(original)
    assert verified(path)


def test_bytes_that_belong_to_no_section_are_refused(random_gguf, tmp_path):
    path = converted(random_gguf, tmp_path / "m.ktc")
    path.write_bytes(path.read_bytes() + b"hidden")
    with pytest.raises(ModelFileError, match=r"^m\.ktc: the header says the file has \d+ bytes and it has \d+ "
                                             r"\(truncated or extended\)$"):
        open_model(path)
    done = kinetic("verify", str(path))
    assert done.returncode == 1 and done.stderr.startswith("kinetic: m.ktc: the header says")


def test_verify_and_convert_refuse_what_they_do_not_do(random_gguf, tmp_path):
    done = kinetic("verify", str(random_gguf))
    assert (done.returncode, done.stderr) == (1, "kinetic: m.gguf is a GGUF file, which holds no hashes to check; "
                                                 "kinetic verify checks .ktc files (kinetic convert writes them)\n")
    done = kinetic("convert", str(random_gguf), str(tmp_path / "out.bin"))
    assert (done.returncode, done.stderr) == (1, "kinetic: kinetic convert writes .ktc files; give the output a .ktc "
                                                 "name, not out.bin\n")
    assert not (tmp_path / "out.bin").exists()

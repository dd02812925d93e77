"""Constrained decoding: grammars and JSON Schemas as token masks, exact with drafting, on the real models."""

from __future__ import annotations

import json

import gbnf_languages
import jsonschema
import numpy as np
import pytest
import regex
from llguidance.gbnf_to_lark import gbnf_to_lark

from kinetic.constraints import Grammar, GrammarError, Matcher
from kinetic.constraints.gbnf import gbnf_as_lark
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session

CITY = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"]}
RECORD = '{"city": "Lyon", "population": 522250, "region": "Auvergne-Rhone-Alpes", "river": "Rhone"}'
COPY = f"Here is a record:\n{RECORD}\nThe same record again, exactly:\n"


@pytest.mark.parametrize("make, message", [
    (lambda: Grammar.from_gbnf("root ::= item"), "the grammar is not valid GBNF: Rule 'item' not found"),
    (lambda: Grammar.from_gbnf('root ::= "a'), "the grammar is not valid GBNF: Unexpected end of input at line 1"),
    (lambda: Grammar.from_json_schema({"type": 3}), "the JSON schema cannot be used: type must be a string"),
    (lambda: Grammar.from_json_schema(["a"]), "the JSON schema must be an object"),
    (lambda: Grammar.from_json_schema({"type": "string", "pattern": "(?=x)"}), "look-around"),
], ids=["undefined-rule", "unterminated", "bad-type", "not-an-object", "lookahead"])
def test_a_grammar_that_cannot_constrain_is_one_line_naming_why(make, message):
    with pytest.raises(GrammarError) as error:
        make()
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.fixture(scope="module", params=["qwen", "gemma"])
def sessions(request) -> tuple[Session, Session]:
    """The same model with RAD-1 drafting and without."""
    path = request.getfixturevalue(f"{request.param}_gguf")
    make = lambda off: Session(path, SessionOptions(device="cpu", ctx_size=1024, off=off),  # noqa: E731
                               announce=lambda line: None)
    return make(("warm-start",)), make(("warm-start", "rad1"))


def generate(session: Session, text: str, grammar: Grammar, settings: dict, n: int) -> list[int]:
    prompt = session.tokenizer.encode(text, add_special=True)
    return list(session.generate(session.new_sequence(), prompt, session.settings(settings), n, grammar=grammar))


@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.7, "seed": 7}], ids=["greedy", "seeded"])
def test_constrained_answers_validate_and_drafting_changes_no_token(sessions, settings, monkeypatch):
    drafted, plain = sessions
    kept, record = [], drafted.drafter.feedback
    monkeypatch.setattr(drafted.drafter, "feedback", lambda proposed, accepted: (kept.append(accepted),
                                                                                  record(proposed, accepted)))
    grammar = Grammar.from_json_schema(CITY)
    answer = generate(plain, COPY, grammar, settings, 80)
    assert generate(drafted, COPY, grammar, settings, 80) == answer
    assert sum(kept) > 0  # drafts were checked against the masks of their own positions, and some landed
    text = plain.tokenizer.decode(answer, special=False)
    if len(answer) < 80:  # it ended by itself: the whole object is there
        jsonschema.validate(json.loads(text), CITY)
    else:
        assert text.lstrip().startswith("{")


MOVE = r"(?:(?:[a-h]x)?[a-h][1-8](?:=[NBKQR])?|[NBKQR][a-h]?[1-8]?x?[a-h][1-8]|O-O(?:-O)?)[+#]?"
EN = r"""[a-zA-Z0-9!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]+"""
JA = r"[ぁ-ゟァ-ヿ、-〾一-鿿]+"
# llama.cpp's grammars/ file -> a prompt, and the language as a regular expression, written from the file by
# hand: an independent check of the answer, whole or (where the answer was cut off) its start.
GRAMMARS = {
    "json": ("The cat's name and age, as a JSON object:\n", None),
    "json_arr": ("Three colours, as a JSON array:\n", None),
    "list": ("Three fruits, as a list:\n", r"(- [^\r\n]+\n)+"),
    "chess": ("A short chess game in algebraic notation:\n", rf"1\. {MOVE} {MOVE}\n([1-9][0-9]?\. {MOVE} {MOVE}\n)+"),
    "english": ("The sea, in one sentence:\n", rf"{EN}([ \t\n]{EN})*"),
    "japanese": ("日本の首都について一文で:\n", rf"{JA}([ \t\n]{JA})*"),
}
ALL = ("arithmetic", "c", *GRAMMARS)  # every file of the folder


@pytest.mark.parametrize("name", ALL)
def test_every_llama_cpp_grammar_compiles(llama_cpp_source, name):
    assert Grammar.from_gbnf((llama_cpp_source / "grammars" / f"{name}.gbnf").read_text()).kind == "grammar"


@pytest.mark.parametrize("name", GRAMMARS)
def test_llama_cpp_grammars_constrain(sessions, llama_cpp_source, name):
    _, plain = sessions
    grammar = Grammar.from_gbnf((llama_cpp_source / "grammars" / f"{name}.gbnf").read_text())
    prompt, language = GRAMMARS[name]
    most = 200 if language is None else 80  # a regular language can be checked cut off
    answer = generate(plain, prompt, grammar, {"temp": 0}, most)
    text = plain.tokenizer.decode(answer, special=False)
    ended = len(answer) < most
    if language is None:  # JSON: the answer must end, and parse
        assert ended and isinstance(json.loads(text), list if name == "json_arr" else (dict, list, str, int, float))
    else:
        assert regex.fullmatch(language, text, partial=not ended), text


# llama.cpp's context-free grammars/ files -> a prompt, and the recognizer of the file's language written by hand
# from the file (tests/gbnf_languages.py): an independent check of the answer, whole or cut off.
CONTEXT_FREE = {
    "c": ("A C function that returns the square of its argument:\n", gbnf_languages.c_rules),
    "arithmetic": ("Equations, one per line:\n1+1=2\n2*3=6\n", gbnf_languages.arithmetic_rules),
}


@pytest.mark.parametrize("name, text, cut_off, inside", [
    ("c", "int main(){return 0;}", False, True),
    ("c", "int f(int x){while(x<10){x = x*2;}return x;}char g(){/* none */}", False, True),
    ("c", "int main(){x=1;}", False, False),  # "=" needs white space around it
    ("c", "int main(){return 0;", False, False),
    ("c", "int main(){return 0;", True, True),
    ("c", "int main(){return 0;}\nint", True, False),  # no white space between declarations
    ("arithmetic", "1+2= 3\n(a*b)/c = x\n", False, True),
    ("arithmetic", "1+2=3", False, False),
    ("arithmetic", "1+2=3", True, True),
    ("arithmetic", "1 + 2=3\n", False, False),  # no white space after an operator
], ids=lambda value: repr(value) if isinstance(value, str) else None)
def test_the_context_free_checkers_know_their_languages(name, text, cut_off, inside):
    assert gbnf_languages.recognizes(CONTEXT_FREE[name][1](), text, cut_off) == inside


@pytest.mark.parametrize("name", CONTEXT_FREE)
def test_llama_cpp_context_free_grammars_constrain(sessions, llama_cpp_source, name):
    _, plain = sessions
    grammar = Grammar.from_gbnf((llama_cpp_source / "grammars" / f"{name}.gbnf").read_text())
    prompt, rules = CONTEXT_FREE[name]
    answer = generate(plain, prompt, grammar, {"temp": 0}, 60)
    text = plain.tokenizer.decode(answer, special=False)
    assert gbnf_languages.recognizes(rules(), text, cut_off=len(answer) == 60), text


@pytest.mark.parametrize("convert, completes", [(Grammar.from_gbnf, True),
                                                (lambda text: Grammar.from_lark(gbnf_to_lark(text), "grammar"), False)],
                         ids=["kinetic", "llguidance-conversion"])
def test_arithmetic_completes_once_a_line_has_ended(sessions, llama_cpp_source, convert, completes):
    """llguidance's own conversion makes a greedy lexeme of `num ::= [0-9]+ ws`, which eats the new line that
    ends each of root's lines (docs/grammars.md); Kinetic keeps `ws`, which may match nothing, a grammar rule."""
    _, plain = sessions
    matcher = Matcher(convert((llama_cpp_source / "grammars" / "arithmetic.gbnf").read_text()), plain.tokenizer)
    ends = []
    for token in plain.tokenizer.encode("3*(x+1) = 12\n", add_special=False):
        ends.append(np.isfinite(matcher.mask(np.zeros(plain.tokenizer.n_vocab, np.float32))[plain.tokenizer.eos_id]))
        matcher.accept(token)
    ends.append(np.isfinite(matcher.mask(np.zeros(plain.tokenizer.n_vocab, np.float32))[plain.tokenizer.eos_id]))
    assert ends == [False] * (len(ends) - 1) + [completes]


@pytest.mark.parametrize("name", ["c", "chess", "english", "japanese", "list"])
def test_grammars_with_no_rule_matching_nothing_convert_as_llguidance_converts_them(llama_cpp_source, name):
    text = (llama_cpp_source / "grammars" / f"{name}.gbnf").read_text()
    lines = lambda lark: [line for line in lark.splitlines() if line.strip()]  # noqa: E731
    assert lines(gbnf_as_lark(text)) == lines(gbnf_to_lark(text))


def test_a_rule_kept_out_of_lexemes_takes_a_free_name():
    """`ws` may match nothing, so it is no longer the lexeme WS; `Ws` holds the name ws already."""
    lark = gbnf_as_lark('root ::= x "!" Ws\nx ::= [a-z]+ ws\nws ::= [ ]* | "-"\nWs ::= "a" Ws | "b"\n')
    assert "x: X_1 ws_1\n" in lark and 'ws_1: /[ ]/*\n     | "-"' in lark and 'ws: "a" ws' in lark
    assert Grammar.from_lark(lark, "grammar").kind == "grammar"

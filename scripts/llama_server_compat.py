#!/usr/bin/env python3
"""Kinetic's llama-server API beside llama-server's own: the same requests to both, every field that differs.

    python scripts/llama_server_compat.py [MODEL.gguf] [--save tests/golden/llama_server/qwen.json]

Starts llama-server (llama.cpp's, built once in the user cache) and then kinetic serve on the same GGUF,
one after the other, each with one slot of CONTEXT tokens, and sends both the same requests (CASES):
/completion with text, token ids and mixed prompts, n_probs, stops, response_fields, n_indent, streams;
/infill; /apply-template;
/tokenize, /detokenize; the OpenAI routes; /slots. Each answer is compared field by field: a field
llama-server has and Kinetic lacks is "missing", the other way "extra", a field of another JSON type
"type", and a field whose value differs "value" (values are compared everywhere but where they cannot
match: ids, times, the model's name). Requests are greedy, so the answers' tokens and text must match.
Each difference is printed with its reason when EXPLAINED lists it; the exit status is 1 if any is not.
--save writes llama-server's answers, which tests/test_llama_server_api.py compares Kinetic with.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from chat_servers import add_server_arguments, events, servers

from kinetic.testing import llama_cpp, real_models

CONTEXT = 4096  # above llama-server's batch of 2048, so that /infill's input_extra makes it into the prompt
GREEDY = {"temperature": 0}
CODE = "def add(a, b):\n"


@dataclass(frozen=True)
class Case:
    """One request; body may be a function of the server's own /tokenize, for token-id prompts."""

    name: str
    path: str
    body: Any = None  # None: GET
    stream: bool = False


def _ids(tokenize: Callable[[str], list[int]]) -> list[int]:
    return tokenize(CODE)


CASES = [
    Case("completion", "/completion", {"prompt": CODE, "n_predict": 8, **GREEDY}),
    Case("completion_probs", "/completion", {"prompt": CODE, "n_predict": 6, "n_probs": 3, "return_tokens": True,
                                             **GREEDY}),
    Case("completion_ids", "/completion", lambda tok: {"prompt": _ids(tok), "n_predict": 6, **GREEDY}),
    Case("completion_mixed", "/completion",
         lambda tok: {"prompt": ["# add two numbers\n", *_ids(tok), "    return"], "n_predict": 6, **GREEDY}),
    Case("completion_stop", "/completion", {"prompt": CODE, "n_predict": 16, "stop": ["b"], "n_probs": 1,
                                            **GREEDY}),
    Case("completion_no_cache", "/completion", {"prompt": CODE, "n_predict": 4, "cache_prompt": False, **GREEDY}),
    Case("completion_stream", "/completion", {"prompt": CODE, "n_predict": 5, "n_probs": 1, "stream": True,
                                              **GREEDY}, stream=True),
    Case("completion_fields", "/completion", {"prompt": CODE, "n_predict": 4, "response_fields": [
        "content", "generation_settings/n_predict", "tokens_predicted", "no/such"], **GREEDY}),
    Case("completion_indent", "/completion", {"prompt": CODE, "n_indent": 4, "n_predict": 24, **GREEDY}),
    Case("infill", "/infill", {"input_prefix": "def add(a, b):\n    ", "input_suffix": "\n\nprint(add(1, 2))\n",
                               "input_extra": [{"filename": "util.py", "text": "def sub(a, b):\n    return a - b\n"}],
                               "n_predict": 8, "return_tokens": True, **GREEDY}),
    Case("infill_prompt", "/infill", {"input_prefix": "x = [1, 2, 3]\n", "input_suffix": "\nprint(total)\n",
                                      "prompt": "total =", "n_predict": 6, **GREEDY}),
    Case("infill_indent", "/infill", {"input_prefix": "def add(a, b):\n    ", "input_suffix": "\n\nprint(add(1, 2))\n",
                                      "n_indent": 4, "n_predict": 12, **GREEDY}),
    Case("apply_template", "/apply-template", {"messages": [{"role": "system", "content": "Be brief."},
                                                            {"role": "user", "content": "Hi"}]}),
    Case("tokenize", "/tokenize", {"content": CODE, "with_pieces": True}),
    Case("detokenize", "/detokenize", lambda tok: {"tokens": _ids(tok)}),
    Case("v1_completions", "/v1/completions", {"prompt": CODE, "max_tokens": 6, **GREEDY}),
    Case("v1_completions_stream", "/v1/completions", {"prompt": CODE, "max_tokens": 4, "stream": True, **GREEDY},
         stream=True),
    Case("v1_completions_suffix", "/v1/completions", {"prompt": "def add(a, b):\n    ", "suffix": "\n\nprint(1)\n",
                                                      "max_tokens": 6, **GREEDY}),
    Case("v1_chat", "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
                                             **GREEDY}),
    Case("v1_chat_stream", "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                    "max_tokens": 3, "stream": True,
                                                    "stream_options": {"include_usage": True}, **GREEDY},
         stream=True),
    Case("slots", "/slots"),
    Case("health", "/health"),
]

# values that cannot match between two servers: ids, clocks, names, speeds
VARYING = ["*/id", "*/created", "*/model", "*/system_fingerprint", "*/timings/*_ms", "*/timings/*_per_second",
           "*/generation_settings/seed", "slots/*/params/seed", "slots/*/id_task"]

# every remaining difference, and why (case/path patterns, fnmatch)
EXPLAINED = {
    "*/generation_settings/dry_penalty_last_n": "Kinetic's documented DRY default is -1 (the whole history)",
    "slots/*/params/dry_penalty_last_n": "Kinetic's documented DRY default is -1 (the whole history)",
    "*/adaptive_*": "llama.cpp's adaptive-p sampler: Kinetic has no such sampler",
    "*/generation_settings/grammar*": "Kinetic compiles grammars for llguidance and keeps no GBNF text",
    "*/generation_settings/preserved_tokens": "a detail of llama.cpp's lazy grammars, which Kinetic does not use",
    "*/chat_format": "a completion has no chat format; /props reports the chat route's",
    "*/reasoning_*": "a completion parses no reasoning, in either server",
    "*/generation_prompt": "a completion applies no chat template, in either server",
    "*/speculative.types": "Kinetic drafts by itself (RAD-1), with no draft model to name",
    "*/backend_sampling": "llama.cpp's GPU sampling option; Kinetic samples on the host",
    "slots/*/speculative": "Kinetic's slots draft with RAD-1 unless --off rad1; llama-server's need a draft model",
    "slots/*/prompt": "Kinetic shows the slot's last prompt, as the reference docs say (llama-server: debug only)",
    "slots/*/n_prompt_tokens*": "Kinetic reports the slot's last request, as the reference docs say; "
                                "llama-server resets these when a request ends",
    "slots/*/next_token/*/n_*": "Kinetic reports the slot's last request, as the reference docs say; "
                                "llama-server resets these when a request ends",
    "*/timings/cache_n": "Warm Start: Kinetic resumes a prompt from the state of any earlier prompt that started "
                         "the same way; llama-server from what its slot holds",
    "*/timings/prompt_n": "prompt tokens run: see timings/cache_n",
    "*/usage/prompt_tokens_details/cached_tokens": "prompt tokens reused: see timings/cache_n",
    "*/tokens_cached": "when the server ends an answer itself (a stop string, n_indent), Kinetic's sequence has "
                       "already run the last token picked",
    "*stream/*/id_slot": "llama-server streams id_slot -1 before its last event; Kinetic the slot's id",
    "v1_chat_stream/first/choices/*/delta/content": "the opening delta: Kinetic sends \"\", as OpenAI does; "
                                                    "llama-server null",
    "*/choices/*/logprobs": "Kinetic writes logprobs: null without them, as OpenAI does",
    "v1_chat_stream/*/usage": "Kinetic's chunks carry usage: null before the last with include_usage, as OpenAI's",
    "v1_completions_stream/last/usage": "Kinetic sends usage only with stream_options.include_usage, as OpenAI",
    "v1_completions_suffix/*": "llama-server ignores suffix; Kinetic fills in the middle where the model has "
                               "FIM tokens (the issue's choice)",
    "health/*": "Kinetic's /health also counts idle and busy slots",
}

# llama.cpp rounds activations to 8 bits for its CPU dot products, so the two servers' log-probabilities of the
# same logits differ slightly; greedy tokens still match
LOGPROB_TOLERANCE = 0.25


def request(base: str, case: Case, body: Any) -> Any:
    """The answer: a JSON value, or for a stream its first, middle and last events and their text joined."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + case.path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as response:
            if not case.stream:
                return json.load(response)
            chunks = list(events(response))
    except urllib.error.HTTPError as error:
        return {"status": error.code, **json.loads(error.read() or b"{}")}
    return {"first": chunks[0], "middle": chunks[len(chunks) // 2], "last": chunks[-1],
            "text": "".join(_text(chunk) for chunk in chunks)}


def _text(chunk: dict) -> str:
    if "content" in chunk:
        return chunk["content"]
    choice = (chunk.get("choices") or [{}])[0]
    return choice.get("text") or (choice.get("delta") or {}).get("content") or ""


def answers(base: str) -> dict[str, dict[str, Any]]:
    """Every case's body and answer from the server at base (its root, without /v1)."""
    def tokenize(text: str) -> list[int]:
        req = urllib.request.Request(base + "/tokenize", data=json.dumps({"content": text}).encode())
        with urllib.request.urlopen(req, timeout=60) as response:
            return json.load(response)["tokens"]

    asked = {}
    for case in CASES:
        body = case.body(tokenize) if callable(case.body) else case.body
        asked[case.name] = {"path": case.path, "body": body, "answer": request(base, case, body)}
    return asked


@dataclass(frozen=True)
class Difference:
    kind: str  # missing, extra, type, value
    path: str
    detail: str = ""

    def reason(self) -> Optional[str]:
        return next((why for pattern, why in EXPLAINED.items() if fnmatch.fnmatchcase(self.path, pattern)), None)


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def _same(ours: Any, theirs: Any, path: str) -> bool:
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and not isinstance(ours, bool):
        # llama-server's float32 settings read as float64: 0.95 is 0.949999988
        tolerance = LOGPROB_TOLERANCE if path.endswith("/logprob") else 0.0
        return math.isclose(ours, theirs, rel_tol=1e-6, abs_tol=tolerance)
    return ours == theirs


def differences(ours: Any, theirs: Any, path: str) -> Iterator[Difference]:
    """Kinetic's answer (ours) against llama-server's (theirs), field by field."""
    if _kind(ours) != _kind(theirs):
        yield Difference("type", path, f"kinetic {_kind(ours)}, llama-server {_kind(theirs)}")
    elif isinstance(theirs, dict):
        for key in theirs.keys() - ours.keys():
            yield Difference("missing", f"{path}/{key}")
        for key in ours.keys() - theirs.keys():
            yield Difference("extra", f"{path}/{key}")
        for key in theirs.keys() & ours.keys():
            yield from differences(ours[key], theirs[key], f"{path}/{key}")
    elif isinstance(theirs, list) and theirs and isinstance(theirs[0], (dict, list)):
        if len(ours) != len(theirs):
            yield Difference("value", path, f"kinetic {len(ours)} items, llama-server {len(theirs)}")
        for i, (mine, other) in enumerate(zip(ours, theirs)):
            yield from differences(mine, other, f"{path}/{i}")
    elif not _same(ours, theirs, path) and not any(fnmatch.fnmatchcase(path, p) for p in VARYING):
        yield Difference("value", path, f"kinetic {json.dumps(ours)[:80]}, llama-server {json.dumps(theirs)[:80]}")


def report(kinetic: dict[str, Any], llama: dict[str, Any]) -> int:
    """Print every difference, explained ones with their reason; the number left unexplained."""
    unexplained, used = 0, set()
    for case in CASES:
        found = sorted(set(differences(kinetic[case.name]["answer"], llama[case.name]["answer"], case.name)),
                       key=lambda d: d.path)
        print(f"{case.name} ({case.path}): {'same fields' if not found else f'{len(found)} differences'}")
        for difference in found:
            why = difference.reason()
            unexplained += why is None
            used.add(why)
            detail = f" ({difference.detail})" if difference.detail else ""
            print(f"  {difference.kind:8} {difference.path}{detail}: {why or 'NOT EXPLAINED'}")
    stale = [pattern for pattern, why in EXPLAINED.items() if why not in used]
    print(f"{unexplained} differences not explained" + (f"; explained but not seen: {stale}" if stale else ""))
    return unexplained


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", type=Path, help="the GGUF [default: Qwen2.5-Coder 0.5B, fetched once]")
    parser.add_argument("--save", type=Path, help="write llama-server's answers here (a test golden)")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    model = args.model or real_models.fetch("qwen")
    got = {}
    for launch in servers(args, model, parallel=1, context=CONTEXT):
        with launch.start() as url:
            got[launch.name] = answers(url.removesuffix("/v1"))
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        golden = {"model": model.name, "llama_cpp": llama_cpp.VERSION, "context": CONTEXT,
                  "requests": got["llama.cpp"]}
        args.save.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    return 1 if report(got["Kinetic"], got["llama.cpp"]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

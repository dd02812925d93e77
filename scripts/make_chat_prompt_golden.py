#!/usr/bin/env python3
"""Record llama-server's chat prompt token ids for every template in llama.cpp's models/templates/.

    python scripts/make_chat_prompt_golden.py [TEMPLATE.jinja ...]

For each template, llama-server runs on a real model with --chat-template-file; for each conversation
below (one with an earlier turn's reasoning, two with a tool offered, one of them with its call and
result) it renders the prompt (/apply-template, as /v1/chat/completions
does) and tokenizes it as a completion does (/tokenize with add_special and parse_special). Each template gets
tests/golden/chat_prompts/<name>.json with the model used, the day the prompts were made (templates
print today's date) and per conversation the prompt text and token ids, or the error llama-server
answered. A template llama-server refuses to load gets the reason instead of conversations.
Templates that write bos_token run on Gemma, whose tokenizer adds a BOS itself; the rest on Qwen.
Builds llama-server once if it is missing. tests/test_chat_prompts.py compares Kinetic's prompts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
from datetime import datetime, timezone
from pathlib import Path

from make_greedy_golden import free_port, post, wait_ready

from kinetic.testing import llama_cpp, real_models

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden" / "chat_prompts"

SYSTEM = {"role": "system", "content": "You are a terse assistant. Answer in one sentence."}
CONVERSATIONS = {
    "user_only": [{"role": "user", "content": "Hello, who are you?"}],
    "several_turns": [
        SYSTEM,
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "Tell me a joke about cats."},
    ],
    "reasoning_in_history": [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "reasoning_content": "The user greets me; greet back.", "content": "Hello!"},
        {"role": "user", "content": "What is 17 * 23?"},
    ],
}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}},
                   "required": ["city"]}}}
ASK_WEATHER = {"role": "user", "content": "What is the weather in Paris?"}
# Conversations with tools offered: (messages, tools)
TOOL_CONVERSATIONS = {
    "tools_offered": [ASK_WEATHER],
    "tool_result": [
        ASK_WEATHER,
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call-1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call-1", "content": "{\"temp_c\": 18, \"sky\": \"clear\"}"},
    ],
}


def model_for(source: str) -> str:
    """Gemma where the template writes the BOS itself (its tokenizer adds one too), else Qwen."""
    return "gemma" if "bos_token" in source else "qwen"


def prompt_of(port: int, messages: list, tools: list | None = None) -> dict:
    try:
        prompt = post(port, "/apply-template", {"messages": messages, **({"tools": tools} if tools else {})})["prompt"]
    except urllib.error.HTTPError as error:
        return {"error": json.load(error)["error"]["message"]}
    tokens = post(port, "/tokenize", {"content": prompt, "add_special": True, "parse_special": True})["tokens"]
    return {"prompt": prompt, "tokens": tokens}


def record(tools: Path, template: Path) -> dict:
    key = model_for(template.read_text(encoding="utf-8"))
    golden = {"template": f"models/templates/{template.name}", "model": key,
              "date": datetime.now(timezone.utc).date().isoformat(), "llama_cpp": llama_cpp.VERSION}
    port = free_port()
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(
            [str(tools / "llama-server"), "-m", str(real_models.fetch(key)), "--jinja", "--chat-template-file",
             str(template), "--host", "127.0.0.1", "--port", str(port), "-c", "1024", "-np", "1", "-t", "1",
             "--no-webui", "--no-warmup"],
            stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "TZ": "UTC"},
        )
        try:
            wait_ready(port, server)
            golden["cases"] = [{"name": name, "messages": messages, **prompt_of(port, messages)}
                               for name, messages in CONVERSATIONS.items()]
            golden["cases"] += [{"name": name, "messages": messages, "tools": [WEATHER],
                                 **prompt_of(port, messages, [WEATHER])} for name, messages in TOOL_CONVERSATIONS.items()]
        except RuntimeError:
            log.seek(0)
            errors = [line.strip() for line in log if "error" in line.lower()]
            golden["refused"] = errors[0] if errors else "llama-server did not start"
        finally:
            server.terminate()
            server.wait()
    return golden


def main(names: list[str]) -> int:
    tools = llama_cpp.build(("llama-server",))
    templates = sorted((llama_cpp.source() / "models" / "templates").glob("*.jinja"))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for template in templates:
        if names and template.name not in names:
            continue
        golden = record(tools, template)
        out = OUT_DIR / f"{template.stem}.json"
        text = json.dumps(golden, indent=1, ensure_ascii=False)
        text = re.sub(r"\[[\d,\s]+\]", lambda ids: json.dumps(json.loads(ids.group(0))), text)  # ids on one line
        out.write_text(text + "\n", encoding="utf-8")
        sizes = ", ".join(str(len(case["tokens"])) if "tokens" in case else "error" for case in golden.get("cases", ()))
        print(f"{out.name}: {golden.get('refused') or sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

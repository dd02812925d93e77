#!/usr/bin/env python3
"""Render chat templates with Hugging Face's own code and write the results as golden files.

    .venv/bin/pip install transformers            # the oracle; needed only by this script
    .venv/bin/python scripts/make_template_golden.py

The templates are the real test models' own (tokenizer.chat_template in their GGUF files) and
llama.cpp's models/templates/. Each gets tests/golden/templates/<name>.json: the bos/eos text used,
and for every conversation below what transformers renders, or the error it raises. The templates
themselves are not copied; tests/test_chat_template.py reads them from the same sources.
strftime_now is fixed at FIXED_NOW, which the golden files record for the test. Reading the GGUF
files with gguf's GGUFReader (independent of Kinetic's reader) takes about a minute.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import transformers
from gguf import GGUFReader
from transformers.utils import chat_template_utils
from transformers.utils.chat_template_utils import _normalize_chat_messages, render_jinja_template

from kinetic.testing import llama_cpp, real_models

REPO = Path(__file__).resolve().parent.parent

GOLDEN = REPO / "tests" / "golden" / "templates"
FIXED_NOW = datetime(2025, 3, 14, 15, 9, 26)  # what strftime_now sees; the golden files record it

# llama.cpp template file -> (bos, eos) as that model's tokenizer has them.
LLAMA_CPP_TEMPLATES = {
    "Qwen-Qwen3-0.6B.jinja": ("", "<|im_end|>"),
    "Qwen3.5-4B.jinja": ("", "<|im_end|>"),
    "Qwen3-Coder.jinja": ("", "<|im_end|>"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("", "<|im_end|>"),
    "Qwen-QwQ-32B.jinja": ("", "<|im_end|>"),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("<s>", "</s>"),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": ("<s>", "</s>"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("<s>", "</s>"),
    "unsloth-mistral-Devstral-Small-2507.jinja": ("<s>", "</s>"),
    "google-gemma-2-2b-it.jinja": ("<bos>", "<eos>"),
    "google-gemma-4-31B-it.jinja": ("<bos>", "<eos>"),
    "LFM2-8B-A1B.jinja": ("<|startoftext|>", "<|im_end|>"),
    "LFM2.5-Instruct.jinja": ("<|startoftext|>", "<|im_end|>"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("<|end_of_text|>", "<|end_of_text|>"),
    "ibm-granite-granite-4.0.jinja": ("<|end_of_text|>", "<|end_of_text|>"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "HuggingFaceTB-SmolLM3-3B.jinja": ("", "<|im_end|>"),
    "microsoft-Phi-3.5-mini-instruct.jinja": ("<s>", "<|endoftext|>"),
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "deepseek-ai-DeepSeek-V3.2.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "Kimi-K2-Thinking.jinja": ("[BOS]", "[EOS]"),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": ("<s>", "<|im_end|>"),
    "Apertus-8B-Instruct.jinja": ("<s>", "</s>"),
    "llm-jp-llm-jp-4.1-8b-thinking.jinja": ("<s>", "</s>"),
    "upstage-Solar-Open-100B.jinja": ("<s>", "</s>"),
    "LFM2.5-8B-A1B.jinja": ("<|startoftext|>", "<|im_end|>"),
    "ibm-granite-granite-4.1.jinja": ("<|end_of_text|>", "<|end_of_text|>"),
    "meetkai-functionary-medium-v3.2.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "moonshotai-Kimi-K2.jinja": ("[BOS]", "[EOS]"),
    "GLM-4.6.jinja": ("", "<|endoftext|>"),
    "MiniMax-M2.jinja": ("]~!b[", "[e~["),
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_web",
            "description": "Search the web and return the top results.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1},
                },
                "required": ["query"],
            },
        },
    },
]


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_result(call_id: str, name: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


SYSTEM = {"role": "system", "content": "You are a terse assistant. Answer in one sentence."}
WEATHER_CALL = call("call12345", "get_weather", {"location": "Paris", "unit": "celsius"})
SEARCH_CALL = call("call67890", "search_web", {"query": "Paris museums open on Monday", "max_results": 3})
WEATHER_TURN = [
    {"role": "user", "content": "What's the weather in Paris, in celsius?"},
    {"role": "assistant", "content": "", "tool_calls": [WEATHER_CALL]},
    tool_result("call12345", "get_weather", '{"temperature": 18, "condition": "sunny"}'),
]
CHAT = [
    {"role": "user", "content": "Hi!"},
    {"role": "assistant", "content": "Hello! How can I help you today?"},
    {"role": "user", "content": "Tell me a joke about cats."},
    {"role": "assistant", "content": "Why did the cat sit on the computer? To keep an eye on the mouse."},
]


def conversation(name: str, messages: list, tools: list | None = None, add_generation_prompt: bool = True,
                 **kwargs) -> dict:
    return {"name": name, "messages": messages, "tools": tools, "add_generation_prompt": add_generation_prompt,
            "kwargs": kwargs}


CONVERSATIONS = [
    conversation("user_only", [{"role": "user", "content": "Hello, who are you?"}]),
    conversation("system_and_user", [SYSTEM, {"role": "user", "content": "What is the capital of France?"}]),
    conversation("several_turns", [SYSTEM, *CHAT, {"role": "user", "content": "Another one, please."}]),
    conversation("no_generation_prompt", CHAT, add_generation_prompt=False),
    conversation("tools_offered", [SYSTEM, {"role": "user", "content": "What's the weather in Paris?"}], TOOLS),
    conversation("tool_call_and_result", WEATHER_TURN, TOOLS),
    conversation("tool_call_answered", [
        SYSTEM, *WEATHER_TURN,
        {"role": "assistant", "content": "It is 18 °C and sunny in Paris."},
        {"role": "user", "content": "Thanks! And in Tokyo?"},
    ], TOOLS),
    conversation("parallel_tool_calls", [
        {"role": "user", "content": "Weather in Paris, and which museums open on Monday?"},
        {"role": "assistant", "content": "", "tool_calls": [WEATHER_CALL, SEARCH_CALL]},
        tool_result("call12345", "get_weather", '{"temperature": 18, "condition": "sunny"}'),
        tool_result("call67890", "search_web", '["Musée d\'Orsay", "Centre Pompidou"]'),
    ], TOOLS),
    conversation("tool_call_null_content", [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [WEATHER_CALL]},
        tool_result("call12345", "get_weather", '{"temperature": 18}'),
    ], TOOLS),
    conversation("thinking_on", [SYSTEM, {"role": "user", "content": "What is 17 * 23?"}], enable_thinking=True),
    conversation("thinking_off", [SYSTEM, {"role": "user", "content": "What is 17 * 23?"}], enable_thinking=False),
    conversation("reasoning_in_history", [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "reasoning_content": "The user greets me; greet back.", "content": "Hello!"},
        {"role": "user", "content": "What is 17 * 23?"},
    ], enable_thinking=True),
    conversation("tools_with_thinking_off", WEATHER_TURN, TOOLS, enable_thinking=False),
    conversation("unicode", [
        {"role": "user", "content": "Привет! ¿Qué tal? 你好 👋 \"quotes\" <tags> & {braces}"},
        {"role": "assistant", "content": "Très bien, merci ✓"},
        {"role": "user", "content": "Ünïcödé\ttabs\nand new lines"},
    ]),
    conversation("content_parts", [
        {"role": "user", "content": [{"type": "text", "text": "Describe a cat."},
                                     {"type": "text", "text": "Briefly."}]},
    ]),
]


class FixedDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


def oracle_render(source: str, bos: str, eos: str, case: dict) -> dict:
    """What transformers' apply_chat_template renders for case (its steps before tokenizing)."""
    messages = _normalize_chat_messages(case["messages"])
    try:
        (rendered,), _ = render_jinja_template(
            conversations=[messages], tools=case["tools"], documents=None, chat_template=source,
            add_generation_prompt=case["add_generation_prompt"], bos_token=bos, eos_token=eos, **case["kwargs"],
        )
    except Exception as error:
        return {"error_type": type(error).__name__, "error": str(error)}
    return {"expected": rendered}


def golden(origin: dict, source: str, bos: str, eos: str) -> dict:
    """origin says where the test finds the template: {"model": key} or {"template": path in llama.cpp}."""
    cases = [{**case, **oracle_render(source, bos, eos, case)} for case in CONVERSATIONS]
    return {**origin, "bos_token": bos, "eos_token": eos, "now": FIXED_NOW.isoformat(),
            "oracle": f"transformers {transformers.__version__} render_jinja_template", "cases": cases}


def gguf_template(path: Path) -> tuple[str, str, str] | None:
    """(template, bos text, eos text) of a GGUF file, or None when it has no template."""
    fields = GGUFReader(path).fields
    if "tokenizer.chat_template" not in fields:
        return None
    tokens = fields["tokenizer.ggml.tokens"]
    bos, eos = (tokens.contents(int(fields[f"tokenizer.ggml.{key}_token_id"].contents())) for key in ("bos", "eos"))
    return fields["tokenizer.chat_template"].contents(), bos, eos


def write(name: str, data: dict) -> None:
    path = GOLDEN / f"{name}.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    errors = sum("error" in case for case in data["cases"])
    print(f"{path.relative_to(REPO)}: {len(data['cases']) - errors} renderings, {errors} errors")


def main() -> int:
    chat_template_utils.datetime = FixedDatetime
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for key in real_models.MODELS:
        found = gguf_template(real_models.fetch(key))
        if found is None:
            print(f"model {key}: its GGUF file has no chat template")
            continue
        write(f"model-{key}", golden({"model": key}, *found))
    for filename, (bos, eos) in LLAMA_CPP_TEMPLATES.items():
        relative = f"models/templates/{filename}"
        source = (llama_cpp.source() / relative).read_text(encoding="utf-8")
        write(filename.removesuffix(".jinja"), golden({"template": relative}, source, bos, eos))
    return 0


if __name__ == "__main__":
    sys.exit(main())

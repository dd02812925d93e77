#!/usr/bin/env python3
"""Write the tokenizer golden files: llama.cpp's llama-tokenize ids for a varied corpus.

    python scripts/make_tokenizer_golden.py [qwen|gemma|pre ...]

qwen, gemma: the real test models. For every corpus entry, the ids with the model's BOS/EOS and
special-token parsing on ("special") and off ("plain"); tests/test_tokenizer_real.py checks them.
pre: the supported pre-tokenizers llama.cpp ships no vectors for, each run on the llama-bpe vocab
renamed to it; tests/test_tokenizer_vocab.py checks them. The tests need no llama.cpp; this
script builds llama-tokenize once (scripts/llama_cpp.py) if it is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kinetic.testing import llama_cpp, real_models

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden" / "tokenizer"

CODE = '''\
def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


if __name__ == "__main__":
\tprint({"n": 10, "fib": fib(10)})  # -> 55
'''

C_CODE = (
    "#include <stdio.h>\nint main(void) {\n\tfor (int i = 0; i < 10; ++i) printf(\"%d\\n\", i);\r\n\treturn 0;\n}\n"
)

CORPUS = [
    "",
    " ",
    "Hello world",
    " Hello world",
    "Hello, y'all! How're you? I'll be there; we've ALREADY LEFT. DON'T wait, it's 5 o'clock.",
    "The quick brown fox jumps over the lazy dog.\n\nSecond paragraph, with  two  spaces   and trailing spaces   ",
    CODE,
    C_CODE,
    '{"name": "kinetic", "tags": ["gguf", "llm"], "n": 3.14159, "ok": true, "none": null}',
    "<div class=\"note\"><p>Paragraph &amp; <b>bold</b></p></div>\n<br/>",
    "$ ls -la | grep '\\.py$' && echo \"done\" > /dev/null 2>&1",
    "Größenänderung: Äpfel, Öl und Übermut — ß. Ça va? ¿Qué tal? ¡Olé!",
    "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ἐν ἀρχῇ ἦν ὁ λόγος. ΟΔΟΣ οδός",
    "我想在apple工作1314151天～ 中文标点：“你好”，《书》。",
    "日本語のテキスト、カタカナとひらがな。東京タワー",
    "한국어 텍스트입니다. 안녕하세요!",
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥.",
    "שלום עולם",
    "नमस्ते दुनिया! हिन्दी में लिखा गया वाक्य।",
    "สวัสดีชาวโลก ภาษาไทย",
    "ការអ្នកអាចខលចេញ",
    "Tiếng Việt có dấu: Cửa Việt, người Việt.",
    "🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅ 🦙🦙 👨‍👩‍👧‍👦 🇺🇸🇯🇵 👍🏽 1️⃣",
    "e\u0301 a\u0308 combining marks; zero\u200bwidth; \ufeffBOM; soft\u00adhyphen; nbsp\u00a0here; ideo\u3000space",
    "controls \x00\x01\x07\x1b[31m red \x1f\x7f end",
    "private \ue000\uf8ff, math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, ext-B 𠀀𠀁, replacement \ufffd",
    "newer than Unicode 15.1: \U00010d40\U00010d41 \u0897\u1acf x",
    "numbers 0 1 12 123 1234 12345 123456 1234567 3.14 1,000,000 -42 1e-9 0x1F",
    "\t\ttabs\tand\tmore\t\t\t",
    "\n",
    "\n\n\n",
    "line\r\nwindows\r\nendings\r\n",
    "   leading spaces",
    "trailing newlines\n\n\n\n",
    " \n \n\n \t \t\t \t\n  \n   \n    \n     \n",
    "a" * 300,
    " " * 500,
    "=" * 100 + "\n" + "-" * 77,
    "\n" * 40,
    "▁literal▁lower▁one▁eighth▁block",
    "'''''' ```` \"\"\"\" ...... !!!!!! ?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWrite a haiku.<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|endoftext|>plain after<|endoftext|><|endoftext|>",
    "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n    return c<|fim_middle|>",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>",
    "<bos>text<eos> <pad> <unk> <mask> <unused0> <unused6241> <start_of_image> [multimodal] <end_of_image>",
    "<<|im_end|>> <|im_start <|im_start|<|im_start|>x</s><s>",
    "tool call: <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> <think>hmm</think>",
]


# supported pre-tokenizers without vectors in llama.cpp's models/ (those have gpt-2, llama-bpe, qwen2, qwen35, refact)
PRE_TOKENIZERS_WITHOUT_VECTORS = (
    "llama3", "llama-v3", "lfm2", "falcon-h1", "dbrx", "smollm", "exaone4", "hunyuan-dense", "gpt-4o", "default",
)
PRE_TOKENIZER_VOCAB = "ggml-vocab-llama-bpe.gguf"


def llama_tokenize(binary: Path, model: Path, text: str, parse_special: bool) -> list[int]:
    with tempfile.NamedTemporaryFile(suffix=".txt") as prompt:
        prompt.write(text.encode("utf-8"))
        prompt.flush()
        cmd = [str(binary), "-m", str(model), "-f", prompt.name, "--ids", "--log-disable", "--no-escape"]
        if not parse_special:
            cmd.append("--no-parse-special")
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def golden(key: str, binary: Path) -> dict:
    model = real_models.fetch(key)

    def entry(text: str) -> dict:
        return {
            "text": text,
            "special": llama_tokenize(binary, model, text, parse_special=True),
            "plain": llama_tokenize(binary, model, text, parse_special=False),
        }

    with ThreadPoolExecutor() as pool:
        entries = list(pool.map(entry, CORPUS))
    return {
        "model": model.name,
        "sha256": real_models.MODELS[key].sha256,
        "llama_cpp": llama_cpp.VERSION,
        "note": "llama-tokenize ids with the model's BOS/EOS; 'special' parses special tokens, 'plain' does not",
        "entries": entries,
    }


def with_pre_tokenizer(src: Path, dst: Path, pre: str) -> None:
    """A copy of a vocab-only GGUF file that names another pre-tokenizer."""
    import gguf  # a test dependency, only needed here

    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = pre if key == "tokenizer.ggml.pre" else field.contents()
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, field.types[0], sub_type=sub_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def pre_tokenizer_golden(binary: Path) -> dict:
    vocab = llama_cpp.source() / "models" / PRE_TOKENIZER_VOCAB
    ids = {}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor() as pool:
        for pre in PRE_TOKENIZERS_WITHOUT_VECTORS:
            model = Path(tmp) / f"{pre}.gguf"
            with_pre_tokenizer(vocab, model, pre)
            ids[pre] = list(pool.map(lambda text: llama_tokenize(binary, model, text, parse_special=False), CORPUS))
    return {
        "vocab": PRE_TOKENIZER_VOCAB,
        "llama_cpp": llama_cpp.VERSION,
        "note": "llama-tokenize ids (with BOS/EOS as the pre-tokenizer's defaults ask, no special parsing)"
                " of each text, the vocab's tokenizer.ggml.pre set to each name",
        "texts": CORPUS,
        "ids": ids,
    }


def to_json(value, indent: int = 0) -> str:
    """JSON with each list of ids on one line, so the files stay short and diff well."""
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = ",\n".join(f"{pad}{json.dumps(key)}: {to_json(item, indent + 1)}" for key, item in value.items())
        return "{\n" + items + "\n" + " " * indent + "}"
    if isinstance(value, list) and not all(isinstance(item, int) for item in value):
        return "[\n" + ",\n".join(pad + to_json(item, indent + 1) for item in value) + "\n" + " " * indent + "]"
    return json.dumps(value, ensure_ascii=False)


def main(argv: list[str]) -> int:
    keys = argv or [*real_models.MODELS, "pre"]
    binary = llama_cpp.build(("llama-tokenize",)) / "llama-tokenize"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for key in keys:
        data = pre_tokenizer_golden(binary) if key == "pre" else golden(key, binary)
        path = OUT_DIR / ("pre_tokenizers.json" if key == "pre" else f"{key}.json")
        path.write_text(to_json(data) + "\n", encoding="utf-8")
        print(f"{path}: {len(data.get('entries') or data['texts'])} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

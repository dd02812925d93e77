"""The server's OpenAI-shaped answers as llama-cpp-python's Llama returns them: the model named by its path or
the call's model, without the fields llama-cpp-python does not give (system_fingerprint, timings), and with
echo's prompt text before the answer's."""

from __future__ import annotations

from typing import Any, Iterator, Union

Answer = Union[dict[str, Any], Iterator[dict[str, Any]]]
SERVER_ONLY = ("system_fingerprint", "timings")


def llama_cpp_shaped(answer: Answer, model: str, echoed: str = "") -> Answer:
    """A whole answer, or a stream of chunks (closing it stops the generation)."""
    if isinstance(answer, dict):
        whole = _shaped(answer, model)
        if echoed:
            whole["choices"][0]["text"] = echoed + whole["choices"][0]["text"]
        return whole
    return _chunks(answer, model, echoed)


def _chunks(chunks: Iterator[dict[str, Any]], model: str, echoed: str) -> Iterator[dict[str, Any]]:
    try:
        for i, chunk in enumerate(chunks):
            shaped = _shaped(chunk, model)
            if echoed and i == 0 and shaped["choices"]:
                shaped["choices"][0]["text"] = echoed + shaped["choices"][0]["text"]
            yield shaped
    finally:
        chunks.close()


def _shaped(answer: dict[str, Any], model: str) -> dict[str, Any]:
    return {**{k: v for k, v in answer.items() if k not in SERVER_ONLY}, "model": model}


def embedding_list(vectors: list, model: str, count: int) -> dict[str, Any]:
    """create_embedding's answer: OpenAI's embeddings list."""
    return {"object": "list", "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vectors)],
            "model": model, "usage": {"prompt_tokens": count, "total_tokens": count}}

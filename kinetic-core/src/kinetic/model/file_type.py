"""general.file_type, the weight type a GGUF file names itself by, as text."""

from __future__ import annotations

from typing import Any, Mapping

# by value, under Ollama's names (fs/ggml/type.go FileType.String), which are llama.cpp's; 4 to 6 are retired
FILE_TYPES = ("F32", "F16", "Q4_0", "Q4_1", "", "", "", "Q8_0", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M",
              "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS",
              "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ3_M", "IQ2_S", "IQ2_M", "IQ4_XS", "IQ1_M", "BF16", "", "",
              "", "TQ1_0", "TQ2_0", "MXFP4_MOE", "NVFP4", "Q1_0")


def file_type(metadata: Mapping[str, Any]) -> str:
    """The name of the file's general.file_type, or "unknown" where it gives none we know."""
    value = metadata.get("general.file_type")
    named = FILE_TYPES[value] if isinstance(value, int) and 0 <= value < len(FILE_TYPES) else ""
    return named or "unknown"

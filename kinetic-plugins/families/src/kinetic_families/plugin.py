"""The kinetic-families plugin: registers every built-in family."""

from kinetic.hookspecs import hookimpl

from kinetic_families import (bert, ernie4_5, exaone4, falcon_h1, gemma3, gemma_embedding, gpt_oss, granite,
                              granite_hybrid, granite_moe, hunyuan_dense, lfm2, lfm2moe, llama, nomic_bert, olmo2,
                              qwen2, qwen3, qwen35, qwen35moe, qwen3moe)

FAMILIES = (llama.FAMILY, qwen2.FAMILY, qwen3.FAMILY, gemma3.FAMILY, granite.FAMILY, olmo2.FAMILY, exaone4.FAMILY,
            ernie4_5.FAMILY, hunyuan_dense.FAMILY, lfm2.FAMILY, granite_hybrid.FAMILY, falcon_h1.FAMILY,
            qwen35.FAMILY, qwen3moe.FAMILY, qwen35moe.FAMILY, granite_moe.FAMILY, lfm2moe.FAMILY, gpt_oss.FAMILY,
            bert.FAMILY, nomic_bert.FAMILY, gemma_embedding.FAMILY)


@hookimpl
def register_families(register):
    for family in FAMILIES:
        register(family)

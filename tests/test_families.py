"""Families map random-weight GGUF files onto blocks, refuse what they cannot run, and the reference runs them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kinetic import open_model
from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, Mamba2, Parallel, ShortConv,
                                      Yarn)
from kinetic.contracts.device import Row
from kinetic.errors import ModelFileError
from kinetic.model import load_stack
from kinetic.reference import ReferenceRunner, generate
from kinetic.testing.gguf_factory import ARCHITECTURES, MIXTURES, MOE, Dims, write_gguf, write_random_model

DIMS = Dims(n_layer=2, n_embd=64, n_head=4, n_head_kv=2, n_ff=128, n_vocab=300)
FAMILIES = ARCHITECTURES

# What distinguishes each family's blocks: rotation pairs, q/k/v biases, q/k norms (per head, across heads, or
# per head after the rotation), norms before and after each block, activation, and the stack's scales
# (embedding, residual, logits).
_PLAIN = dict(neox=False, biases=False, head_norms=None, pre_norms=True, post_norms=False, activation="silu",
              scales=(1.0, 1.0, 1.0), attention_scale=0.25, mixers=(Attention, Attention), n_rot=16, gated=False,
              ffns=(GatedFeedForward, GatedFeedForward), tied=False)
EXPECTED = {
    "llama": _PLAIN,
    "qwen2": {**_PLAIN, "neox": True, "biases": True},
    "qwen3": {**_PLAIN, "neox": True, "head_norms": "head"},
    "gemma3": {**_PLAIN, "neox": True, "head_norms": "head", "post_norms": True, "activation": "gelu_tanh",
               "scales": (8.0, 1.0, 1.0)},
    "granite": {**_PLAIN, "scales": (12.0, np.float32(0.22), 0.125), "attention_scale": 0.015625},
    "olmo2": {**_PLAIN, "neox": True, "head_norms": "across", "pre_norms": False, "post_norms": True},
    "exaone4": {**_PLAIN, "neox": True, "head_norms": "head", "pre_norms": False, "post_norms": True},
    "ernie4_5": _PLAIN,
    "hunyuan-dense": {**_PLAIN, "neox": True, "head_norms": "after rotation"},
    "lfm2": {**_PLAIN, "neox": True, "head_norms": "head", "mixers": (ShortConv, Attention)},
    "granitehybrid": {**_PLAIN, "scales": (12.0, np.float32(0.22), 1.0), "mixers": (Mamba2, Attention)},
    "falcon-h1": {**_PLAIN, "neox": True, "pre_norms": False, "mixers": (Parallel, Parallel)},
    "qwen35": {**_PLAIN, "neox": True, "head_norms": "head", "mixers": (GatedDeltaNet, Attention), "n_rot": 8,
               "gated": True},
}
EXPECTED |= {moe: {**EXPECTED[dense], "ffns": (GatedFeedForward if moe == "lfm2moe" else Experts, Experts),
                   "tied": moe == "lfm2moe"} for moe, dense in MOE.items()}  # LFM2 MoE: a dense first layer, no output
EXPECTED["gpt-oss"] = {**_PLAIN, "neox": True, "biases": True, "activation": "swiglu_oai", "ffns": (Experts, Experts)}
HEAD_NORMS = {"head": (16, 16, False), "across": (64, 32, False), "after rotation": (16, 16, True)}


def random_model(tmp_path, arch: str, **kwargs):
    return write_random_model(tmp_path / f"{arch}.gguf", arch, DIMS, **kwargs)


@pytest.fixture(scope="module", params=FAMILIES)
def family_model(request, tmp_path_factory):
    """(architecture, path of a random-weight model of it)."""
    return request.param, write_random_model(tmp_path_factory.mktemp(request.param) / "m.gguf", request.param, DIMS)


# -- the stack each family builds ------------------------------------------------------------------

def test_stack_has_the_family_blocks_and_hyperparameters(family_model):
    arch, path = family_model
    stack = load_stack(path)
    expect = EXPECTED[arch]
    assert (stack.n_vocab, stack.n_embd, stack.context_length) == (300, 64, 256)
    assert (stack.embedding_scale, stack.residual_scale, stack.logit_scale) == expect["scales"]
    assert [type(b) for b in stack.blocks] == [kind for pair in zip(expect["mixers"], expect["ffns"]) for kind in pair]
    for i, (attn, ffn) in enumerate(zip(stack.blocks[::2], stack.blocks[1::2])):
        if isinstance(attn, ShortConv):
            assert (attn.conv.shape, attn.in_proj.name) == ((64, 3), f"blk.{i}.shortconv.in_proj.weight")
            continue
        if isinstance(attn, Mamba2):
            assert (attn.n_head, attn.n_group, attn.d_state, attn.conv.shape) == (8, 1, 16, (160, 4))
            assert attn.conv_bias.name == f"blk.{i}.ssm_conv1d.bias" and attn.a.name == f"blk.{i}.ssm_a"
            continue
        if isinstance(attn, GatedDeltaNet):
            assert (attn.n_k_head, attn.n_v_head, attn.head_dim, attn.conv.shape) == (2, 4, 16, (128, 4))
            assert (attn.qkv_proj.name, attn.a.name) == (f"blk.{i}.attn_qkv.weight", f"blk.{i}.ssm_a")
            assert ffn.norm.weight.name == f"blk.{i}.post_attention_norm.weight"
            continue
        shared_norm = None
        if isinstance(attn, Parallel):  # attention beside Mamba-2, both after the layer's one norm
            assert [type(m) for m in attn.mixers] == [Attention, Mamba2] and attn.mixers[1].norm is None
            assert (attn.norm.weight.name, ffn.norm.weight.name) == (f"blk.{i}.attn_norm.weight", f"blk.{i}.ffn_norm")
            shared_norm, attn = attn.norm, attn.mixers[0]
        assert (attn.n_head, attn.n_head_kv, attn.head_dim) == (4, 2, 16)
        assert attn.q.name == f"blk.{i}.attn_q.weight" and ffn.down.name.startswith(f"blk.{i}.ffn_down")
        assert attn.scale == pytest.approx(expect["attention_scale"])
        assert attn.rope.neox == expect["neox"] and attn.rope.n_dims == expect["n_rot"] and attn.rope.scale == 1.0
        assert attn.output_gate == expect["gated"]
        assert (attn.q_bias is not None) == expect["biases"]
        if expect["head_norms"] is None:
            assert attn.q_norm is None and attn.k_norm is None
        else:
            widths = (attn.q_norm.weight.shape[0], attn.k_norm.weight.shape[0], attn.norms_after_rope)
            assert widths == HEAD_NORMS[expect["head_norms"]]
        assert (attn.norm is not None and ffn.norm is not None) == expect["pre_norms"]
        assert (attn.post_norm is not None and getattr(ffn, "post_norm", None) is not None) == expect["post_norms"]
        assert ffn.activation == expect["activation"]
        assert (attn.norm or attn.post_norm or shared_norm).eps == pytest.approx(1e-6)
    assert stack.output.name == ("token_embd.weight" if expect["tied"] else "output.weight")
    lfm2 = MOE.get(arch, arch) == "lfm2"
    assert stack.output_norm.weight.name == ("token_embd_norm.weight" if lfm2 else "output_norm.weight")


@pytest.mark.parametrize("arch, gating, width, shared, shared_gate, bias", [
    ("qwen3moe", "softmax", 64, False, False, False), ("qwen35moe", "softmax", 64, True, True, False),
    ("granitemoe", "softmax", 128, True, False, False), ("lfm2moe", "sigmoid", 64, False, False, True),
    ("gpt-oss", "softmax_weight", 64, False, False, False)])
def test_experts_map_the_router_the_stacked_experts_and_the_shared_expert(tmp_path, arch, gating, width, shared,
                                                                         shared_gate, bias):
    """Each MoE family's routing rule and tensors (llama.cpp's build_moe_ffn callers): Granite MoE's experts are
    feed_forward_length wide, the others expert_feed_forward_length."""
    block = load_stack(random_model(tmp_path, arch)).blocks[-1]
    assert isinstance(block, Experts) and (block.n_expert, block.n_used, block.gating, block.normalize) == (
        8, 2, gating, arch != "gpt-oss")
    assert (block.gate.shape, block.up.shape, block.down.shape) == ((8, width, 64), (8, width, 64), (8, 64, width))
    assert block.router.name == "blk.1.ffn_gate_inp.weight" and block.router.type.name == "F32"
    assert (block.shared is not None, block.shared_gate is not None, block.selection_bias is not None) == (
        shared, shared_gate, bias)
    if shared:
        assert block.shared.norm is None and block.shared.down.name == "blk.1.ffn_down_shexp.weight"


def test_granite_4_h_tiny_layers_take_experts_as_wide_as_the_feed_forward_with_a_shared_expert(tmp_path):
    experts = {"granitehybrid.expert_count": 8, "granitehybrid.expert_used_count": 2,
               "granitehybrid.expert_shared_feed_forward_length": 128}
    stack = load_stack(random_model(tmp_path, "granitehybrid", metadata=experts))
    assert [type(b) for b in stack.blocks] == [Mamba2, Experts, Attention, Experts]
    block = stack.blocks[1]
    assert block.gate.shape == (8, 128, 64) and block.shared.gate.shape == (128, 64) and block.shared_gate is None


def test_gpt_oss_maps_sinks_output_biases_its_window_and_its_experts_biases(tmp_path):
    stack = load_stack(random_model(tmp_path, "gpt-oss"))
    first, second, experts = stack.blocks[0], stack.blocks[2], stack.blocks[1]
    assert (first.sliding_window, second.sliding_window) == (4, None)  # a sliding-window layer, then a global one
    assert first.sinks.name == "blk.0.attn_sinks.weight" and first.o_bias.name == "blk.0.attn_output.bias"
    assert (experts.activation, experts.router_bias.name) == ("swiglu_oai", "blk.0.ffn_gate_inp.bias")
    assert [b.shape for b in (experts.gate_bias, experts.up_bias, experts.down_bias)] == [(8, 64), (8, 64), (8, 64)]


def test_merged_expert_gates_and_ups_are_refused_by_name(tmp_path):
    merged = np.zeros((8, 128, 64), np.float32)
    path = random_model(tmp_path, "qwen3moe", extra_tensors={"blk.0.ffn_gate_up_exps.weight": merged})
    with pytest.raises(ModelFileError, match="ffn_gate_up_exps"):
        load_stack(path)


def test_an_unknown_expert_gating_function_is_refused(tmp_path):
    with pytest.raises(ModelFileError, match="expert_gating_func 4 is not supported yet"):
        load_stack(random_model(tmp_path, "lfm2moe", metadata={"lfm2moe.expert_gating_func": 4}))


def test_output_is_tied_to_the_embedding_without_output_weight(tmp_path):
    stack = load_stack(random_model(tmp_path, "llama", without={"output.weight"}))
    assert stack.output is stack.embedding


def test_llama_rope_freqs_divide_the_frequencies_of_every_layer(tmp_path):
    factors = np.linspace(1, 8, DIMS.head_dim // 2, dtype=np.float32)
    stack = load_stack(random_model(tmp_path, "llama", extra_tensors={"rope_freqs.weight": factors}))
    assert {b.rope.freq_factors.name for b in stack.blocks[::2]} == {"rope_freqs.weight"}


def test_llama_linear_rope_scaling(tmp_path):
    path = random_model(tmp_path, "llama", metadata={"llama.rope.scaling.type": "linear",
                                                     "llama.rope.scaling.factor": 4.0})
    assert load_stack(path).blocks[0].rope.scale == 0.25


def test_gemma3_layers_alternate_sliding_and_global_attention(tmp_path):
    path = random_model(tmp_path, "gemma3", metadata={"gemma3.attention.sliding_window_pattern": 2,
                                                      "gemma3.rope.scaling.type": "linear",
                                                      "gemma3.rope.scaling.factor": 8.0})
    local, global_ = load_stack(path).blocks[::2]
    assert local.sliding_window == 4 and (local.rope.base, local.rope.scale) == (10000.0, 1.0)
    assert global_.sliding_window is None and (global_.rope.base, global_.rope.scale) == (1000000.0, 0.125)


def test_gemma3_default_pattern_slides_in_five_layers_of_six(tmp_path):
    stack = load_stack(write_random_model(tmp_path / "g.gguf", "gemma3", dataclasses.replace(DIMS, n_layer=12)))
    assert [b.sliding_window for b in stack.blocks[::2]] == [4, 4, 4, 4, 4, None] * 2


def test_gemma3_pattern_may_be_an_array_of_layer_flags(tmp_path):
    path = random_model(tmp_path, "gemma3", metadata={"gemma3.attention.sliding_window_pattern": [False, True]})
    assert [b.sliding_window for b in load_stack(path).blocks[::2]] == [None, 4]


def test_yarn_scaling_reads_the_original_context(tmp_path):
    path = random_model(tmp_path, "qwen3", metadata={"qwen3.rope.scaling.type": "yarn",
                                                     "qwen3.rope.scaling.factor": 4.0,
                                                     "qwen3.rope.scaling.original_context_length": 64})
    rope = load_stack(path).blocks[0].rope
    assert (rope.scale, rope.yarn) == (0.25, Yarn(original_context=64))


def test_granite_without_finetuned_rope_does_not_rotate(tmp_path):
    path = random_model(tmp_path, "granite", metadata={"granite.rope.scaling.finetuned": False})
    assert {b.rope.n_dims for b in load_stack(path).blocks[::2]} == {0}


def test_olmo2_with_a_window_slides_in_three_layers_of_four_unscaled(tmp_path):
    path = write_random_model(tmp_path / "o.gguf", "olmo2", dataclasses.replace(DIMS, n_layer=8),
                              metadata={"olmo2.attention.sliding_window": 4, "olmo2.rope.scaling.type": "yarn",
                                        "olmo2.rope.scaling.factor": 8.0})
    attention = load_stack(path).blocks[::2]
    assert [b.sliding_window for b in attention] == [4, 4, 4, None] * 2
    assert [(b.rope.scale, b.rope.yarn is not None) for b in attention[3:5]] == [(0.125, True), (1.0, False)]


def test_exaone4_32b_rotates_only_in_its_window_layers(tmp_path):
    path = write_random_model(tmp_path / "e.gguf", "exaone4", dataclasses.replace(DIMS, n_layer=64))
    attention = load_stack(path).blocks[::2]
    assert [(b.sliding_window, b.rope.n_dims) for b in attention[:4]] == [(4096, 16)] * 3 + [(None, 0)]


def test_exaone4_prediction_layers_are_left_unused(tmp_path):
    extra = {f"blk.2.{name}.weight": np.zeros(64, np.float32) for name in ("nextn.enorm", "nextn.hnorm")}
    path = write_random_model(tmp_path / "e.gguf", "exaone4", dataclasses.replace(DIMS, n_layer=3),
                              metadata={"exaone4.nextn_predict_layers": 1}, extra_tensors=extra)
    assert len(load_stack(path).blocks) == 4


def test_granitehybrid_takes_one_groups_norm_weights_flat_as_llama_quantize_writes_them(tmp_path):
    path = random_model(tmp_path, "granitehybrid", extra_tensors={"blk.0.ssm_norm.weight": np.ones(128, np.float32)})
    assert load_stack(path).blocks[0].out_norm.weight.shape == (128,)


def test_falcon_h1_runs_mamba2_without_its_optional_group_norm(tmp_path):
    path = random_model(tmp_path, "falcon-h1", without={f"blk.{i}.ssm_norm.weight" for i in range(DIMS.n_layer)})
    stack = load_stack(path)
    assert [b.mixers[1].out_norm for b in stack.blocks[::2]] == [None, None]
    assert np.isfinite(ReferenceRunner(stack).new_sequence().forward([5, 6, 7])).all()


def test_qwen35_reads_its_recurrent_layers_from_the_interval_or_the_array(tmp_path):
    four = dataclasses.replace(DIMS, n_layer=4)
    by_interval = write_random_model(tmp_path / "i.gguf", "qwen35", four, metadata={"qwen35.full_attention_interval": 4})
    assert [type(b) for b in load_stack(by_interval).blocks[::2]] == [GatedDeltaNet] * 3 + [Attention]
    flags = {"qwen35.attention.recurrent_layers": [False, True, False, True]}
    by_array = write_random_model(tmp_path / "a.gguf", "qwen35", four, metadata=flags)
    assert [type(b) for b in load_stack(by_array).blocks[::2]] == [Attention, GatedDeltaNet] * 2


def test_qwen35_prediction_layer_is_a_stack_of_its_own(tmp_path):
    path = write_random_model(tmp_path / "p.gguf", "qwen35", dataclasses.replace(DIMS, n_layer=3),
                              metadata={"qwen35.nextn_predict_layers": 1})
    stack = load_stack(path)
    prediction = stack.prediction
    assert len(stack.blocks) == 4 and [type(b) for b in prediction.blocks] == [Attention, GatedFeedForward]
    assert prediction.blocks[0].q.name == "blk.2.attn_q.weight" and prediction.blocks[0].output_gate
    assert prediction.blocks[1].norm.weight.name == "blk.2.post_attention_norm.weight"
    assert (prediction.input.eh_proj.name, prediction.input.hnorm.weight.name) == ("blk.2.nextn.eh_proj.weight",
                                                                                  "blk.2.nextn.hnorm.weight")
    assert prediction.output is stack.output and prediction.output_norm is stack.output_norm
    assert stack.input is None and prediction.prediction is None


def test_qwen35_refuses_sections_that_leave_a_pair_unrotated(tmp_path):
    path = random_model(tmp_path, "qwen35", metadata={"qwen35.rope.dimension_sections": [1, 1, 1, 1]})
    with pytest.raises(ModelFileError, match=r"leave rotated pair 3 unrotated for text"):
        load_stack(path)


def test_hunyuan_alpha_raises_the_rotary_base(tmp_path):
    path = random_model(tmp_path, "hunyuan-dense", metadata={"hunyuan-dense.rope.scaling.alpha": 1000.0})
    assert load_stack(path).blocks[0].rope.base == pytest.approx(10000.0 * 1000.0 ** (16 / 14), rel=1e-6)


# -- what the loader refuses -----------------------------------------------------------------------

def test_an_unmapped_tensor_is_refused_by_name(family_model, tmp_path):
    arch, _ = family_model
    path = random_model(tmp_path, arch, extra_tensors={"blk.1.ffn_down.bias": np.zeros(64, np.float32)})
    with pytest.raises(ModelFileError, match=r"^tensor blk\.1\.ffn_down\.bias is not supported yet$"):
        load_stack(path)


def test_fused_qkv_is_refused_by_name(tmp_path):
    path = random_model(tmp_path, "llama", extra_tensors={"blk.0.attn_qkv.weight": np.zeros((128, 64), np.float32)},
                        without={"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"})
    with pytest.raises(ModelFileError, match=r"^tensor blk\.0\.attn_qkv\.weight is not supported yet$"):
        load_stack(path)


def test_a_missing_tensor_is_named(family_model, tmp_path):
    arch, _ = family_model
    name = f"blk.1.{'ffn_up_exps' if arch in MIXTURES else 'ffn_up'}.weight"
    with pytest.raises(ModelFileError, match=f"^tensor {name} is missing$"):
        load_stack(random_model(tmp_path, arch, without={name}))


def test_a_missing_or_mistyped_key_is_named(family_model):
    arch, path = family_model
    model = open_model(path)
    key = f"{arch}.attention.layer_norm_rms_epsilon"
    missing = dataclasses.replace(model, metadata={k: v for k, v in model.metadata.items() if k != key})
    with pytest.raises(ModelFileError, match=f"^metadata key {key} is missing$"):
        load_stack(missing)
    mistyped = dataclasses.replace(model, metadata={**model.metadata, f"{arch}.block_count": "two"})
    with pytest.raises(ModelFileError, match=f"^metadata key {arch}.block_count should be an integer, not 'two'$"):
        load_stack(mistyped)


def test_a_tensor_of_the_wrong_shape_is_named(tmp_path):
    path = random_model(tmp_path, "qwen3", metadata={"qwen3.attention.head_count_kv": 1})
    expected = r"^tensor blk\.0\.attn_k\.weight has shape \[32, 64\], expected \[16, 64\]$"
    with pytest.raises(ModelFileError, match=expected):
        load_stack(path)


def test_unknown_architecture_is_refused(tmp_path):
    path = write_gguf(tmp_path / "x.gguf", "nosuch", {}, {"x.weight": np.zeros(4, np.float32)})
    with pytest.raises(ModelFileError, match="^architecture nosuch is not supported yet$"):
        load_stack(path)


def test_longrope_rotary_scaling_is_refused(family_model, tmp_path):
    arch, _ = family_model
    path = random_model(tmp_path, arch, metadata={f"{arch}.rope.scaling.type": "longrope",
                                                  f"{arch}.rope.scaling.factor": 4.0})
    with pytest.raises(ModelFileError, match="^longrope rotary scaling is not supported yet$"):
        load_stack(path)


def test_logit_softcapping_is_refused(tmp_path):
    path = random_model(tmp_path, "gemma3", metadata={"gemma3.final_logit_softcapping": 30.0})
    with pytest.raises(ModelFileError, match="^logit softcapping is not supported yet$"):
        load_stack(path)


# -- the reference executor ------------------------------------------------------------------------

TOKENS = [5, 17, 260, 3, 99, 42, 42, 7, 150, 11, 64, 200]


@pytest.fixture(scope="module")
def runner(family_model):
    return ReferenceRunner(load_stack(family_model[1]))


def test_a_batch_gives_what_its_tokens_give_one_at_a_time(runner):
    batch = runner.new_sequence().forward(TOKENS)
    seq = runner.new_sequence()
    single = np.concatenate([seq.forward([t]) for t in TOKENS])
    assert batch.shape == (len(TOKENS), 300)
    np.testing.assert_allclose(batch, single, rtol=1e-4, atol=1e-4 * np.abs(batch).max())


def test_truncate_forgets_the_tokens_after_n(runner):
    seq = runner.new_sequence()
    seq.forward(TOKENS)
    seq.truncate(5)
    assert seq.n_tokens == 5
    again = seq.forward([1, 2, 3])
    fresh = runner.new_sequence().forward(TOKENS[:5] + [1, 2, 3])[5:]
    np.testing.assert_allclose(again, fresh, rtol=1e-4, atol=1e-4 * np.abs(fresh).max())


def test_rows_of_several_sequences_share_a_pass_and_only_askers_get_logits(runner):
    a, b = runner.new_sequence(), runner.new_sequence()
    rows = [Row(a, 5, 0), Row(b, 9, 0, logits=True), Row(a, 17, 1, parent=0, logits=True), Row(b, 4, 1, parent=1)]
    logits = runner.forward(rows)
    assert logits.shape == (2, 300) and (a.n_tokens, b.n_tokens) == (2, 2)
    alone_b = runner.new_sequence().forward([9])[0]
    alone_a = runner.new_sequence().forward([5, 17])[1]
    np.testing.assert_allclose(logits, np.stack([alone_b, alone_a]), rtol=1e-4, atol=1e-5)


def test_the_device_contract_rows_run_in_linear_batches_only(runner):
    seq = runner.new_sequence()
    logits = runner.forward([Row(seq, 5, 0), Row(seq, 17, 1, parent=0, logits=True)])
    np.testing.assert_allclose(logits, runner.new_sequence().forward([5, 17])[1:], rtol=1e-4, atol=1e-5)
    tree = runner.new_sequence()
    with pytest.raises(ValueError, match="linear batches: row 2 follows row 0"):
        runner.forward([Row(tree, 5, 0), Row(tree, 17, 1, parent=0), Row(tree, 18, 1, parent=0)])


def test_generate_is_the_argmax_chain(runner):
    out = generate(runner, TOKENS[:4], 5)
    seq = runner.new_sequence()
    logits = seq.forward(TOKENS[:4])[-1]
    for token in out:
        assert token == int(np.argmax(logits))
        logits = seq.forward([token])[0]


def test_sliding_window_hides_what_is_out_of_reach(tmp_path):
    """Two sliding layers of window 4 see 6 positions back; a global layer sees everything."""
    def last_logits_change(path):
        runner = ReferenceRunner(load_stack(path))
        a = runner.new_sequence().forward(TOKENS[:8])[-1]
        b = runner.new_sequence().forward([77] + TOKENS[1:8])[-1]
        return not np.allclose(a, b, rtol=0, atol=0)

    assert not last_logits_change(random_model(tmp_path, "gemma3"))
    with_global = write_random_model(tmp_path / "g2.gguf", "gemma3", DIMS,
                                     metadata={"gemma3.attention.sliding_window_pattern": 2})
    assert last_logits_change(with_global)


def test_rope_freqs_of_one_change_nothing(tmp_path):
    ones = np.ones(DIMS.head_dim // 2, np.float32)
    plain = ReferenceRunner(load_stack(random_model(tmp_path, "llama"))).new_sequence().forward(TOKENS)
    path = write_random_model(tmp_path / "f.gguf", "llama", DIMS, extra_tensors={"rope_freqs.weight": ones})
    with_ones = ReferenceRunner(load_stack(path)).new_sequence().forward(TOKENS)
    np.testing.assert_array_equal(plain, with_ones)

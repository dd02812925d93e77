"""The CPU matrix products (kinetic_cpu.kernels): exact across batches and threads, close to the float
reference, and the int8 path exactly as specified.

Exactness: row t of a batch is, bit for bit, what token t gives alone, with 1 thread or 2.
Closeness to float64 x @ dequantize(W).T, as the relative error of each output vector: under 2% for the
kernels that quantize activations to int8 (their rounding; about 0.6% on these normal inputs), under 1e-5
for the float kernels and the row-dequantizing path (float32 sums).
The int8 path: activations as ggml's reference quantizers make them, and outputs as an independent numpy
implementation gives them: the integer sum per block, then the float combine in the kernels' order.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from kinetic.plugins import plugins
from kinetic.testing.random_weights import random_weights
from kinetic_cpu.kernels import Matrix, activations, amx, amx_k, compile_kernels, dots, driver, groups, matmul
from kinetic_cpu.kernels.activations import f16_round
from kinetic_formats.types._common import fields

matmul_module = importlib.import_module("kinetic_cpu.kernels.matmul")  # the package's `matmul` is the function
activations_module = importlib.import_module("kinetic_cpu.kernels.activations")  # likewise `activations`

INT8 = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "MXFP4", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"]
FLOATS = ["F32", "F16", "BF16"]
DEQUANTIZED = ["IQ2_XS"]  # no kernel of its own
PORTABLE = ["Q8_0", "Q5_0", "MXFP4", "Q4_K", "Q6_K", "IQ4_XS", "F16"]  # each integer and float primitive, lookups
ROWS = 96
BATCH = 64


def k_of(name: str) -> int:
    """9 super-blocks for the 256-weight types; else 77 blocks of 32: 9 full groups of 8, a group of 4 and a
    single block, and for the float types 38 steps of 64 and a tail of 32."""
    return 256 * 9 if plugins().tensor_types[name].block_size == 256 else 32 * 77


@pytest.fixture(scope="module")
def cases():
    """name -> (raw weight bytes [ROWS, row_bytes], activations [BATCH, k]), made once."""
    made = {}

    def case(name):
        if name not in made:
            rng = np.random.default_rng(sum(map(ord, name)))
            k = k_of(name)
            weight = random_weights(plugins().tensor_types[name], ROWS, k, rng)
            made[name] = weight, rng.standard_normal((BATCH, k), np.float32)
        return made[name]

    return case


@pytest.fixture
def threads():
    """Sets numba's thread count for the test, and restores it."""
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


def type_id(name: str) -> int:
    return plugins().tensor_types[name].id


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("name", INT8 + FLOATS + DEQUANTIZED)
def test_a_batch_row_is_its_token_alone(cases, name):
    weight, x = cases(name)
    whole = matmul(weight, type_id(name), x)
    for n in (1, 2, 7):
        assert same_bits(matmul(weight, type_id(name), x[:n]), whole[:n])
    for t in (0, 5, BATCH - 1):
        assert same_bits(matmul(weight, type_id(name), x[t : t + 1])[0], whole[t])


@pytest.mark.skipif(not amx.AVAILABLE, reason="no AMX-INT8 tiles here (or Linux did not lend them)")
@pytest.mark.parametrize("name", [*amx.SPECS, *amx_k.SPECS])
def test_amx_tiles_give_the_step_kernels_bits(cases, name):
    """A batch of at least MIN_TOKENS goes to the tiles; 40 rows end in a part tile, 67 tokens likewise."""
    weight, _ = cases(name)
    x = np.random.default_rng(5).standard_normal((amx.MIN_TOKENS + 3, k_of(name)), np.float32)
    whole = matmul(weight[:40], type_id(name), x)
    for t in (0, 15, 16, len(x) - 1):
        assert same_bits(matmul(weight[:40], type_id(name), x[t : t + 1])[0], whole[t])


@pytest.mark.parametrize("name", sorted(groups.LAYOUTS))
def test_matrices_in_groups_of_rows_give_the_step_kernels_bits(cases, threads, monkeypatch, name):
    """Without AMX tiles a K-quant or 32-weight block matrix is laid out 16 rows to a record (groups.py), its
    last group made whole with zero rows: every token of every batch size (whole calls of 4 tokens and single
    ones), on 1 thread or 2, gets the bits the step kernels give on the file's own layout (block32's: kept in
    runs)."""
    monkeypatch.setattr(amx, "AVAILABLE", False)
    monkeypatch.setattr(matmul_module, "SERIAL_BYTES", 0)
    weight, x = cases(name)
    for rows in (ROWS, ROWS - 8, 5):
        grouped = Matrix(weight[:rows], type_id(name))
        assert grouped.blocks.dtype.names == (name + groups.SUFFIX,)
        with monkeypatch.context() as file_layout:
            file_layout.setattr(groups, "takes", lambda name: False)
            plain = Matrix(weight[:rows], type_id(name))
        for n in (1, 5, 8, 13, 40):
            for n_threads in (1, 2):
                threads(n_threads)
                assert same_bits(grouped(x[:n]), plain(x[:n]))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
@pytest.mark.parametrize("name", INT8 + FLOATS)
def test_threads_change_no_bit(cases, name, threads, monkeypatch):
    monkeypatch.setattr(matmul_module, "SERIAL_BYTES", 0)  # the threaded driver even for this small matrix
    weight, x = cases(name)
    for batch in (x[:7], x):  # 64 tokens: AMX tiles for their types, where the CPU has them
        threads(1)
        alone = matmul(weight, type_id(name), batch)
        threads(2)
        assert same_bits(matmul(weight, type_id(name), batch), alone)


@pytest.mark.parametrize("name", INT8 + FLOATS + DEQUANTIZED)
def test_close_to_the_float_reference(cases, name):
    weight, x = cases(name)
    tensor_type = plugins().tensor_types[name]
    floats = tensor_type.dequantize(weight.reshape(-1, tensor_type.type_size)).reshape(ROWS, -1)
    expected = x.astype(np.float64) @ floats.astype(np.float64).T
    error = np.linalg.norm(matmul(weight, tensor_type.id, x) - expected, axis=1) / np.linalg.norm(expected, axis=1)
    assert error.max() < (0.02 if name in INT8 else 1e-5)


def test_mxfp4_takes_every_exponent(cases):
    """E8M0 scales from the subnormal 2^-128 up, float16's range and beyond, as the int8 path gives them: blocks of
    a group kept in runs, of a group of 4 and a row's last single block."""
    weight, x = cases("MXFP4")
    extreme = weight.reshape(ROWS, -1, 17).copy()
    extreme[:, :, 0] = np.array([0, 1, 2, 102, 127, 128, 143, 160], np.uint8)[np.arange(extreme.shape[1]) % 8]
    extreme[:, 72:, 0] = [0, 1, 160, 128, 2]  # the group of 4 and the single block
    assert same_bits(matmul(extreme.reshape(ROWS, -1), type_id("MXFP4"), x[:5]),
                     mxfp4_values(extreme, [a[:5] for a in q8_0_reference(x)]))


def test_the_matrix_takes_shared_activations(cases):
    weight, x = cases("Q4_K")
    matrix = Matrix(weight, type_id("Q4_K"))
    assert matrix.activations == "q8_k"
    assert same_bits(matrix(x[:3], activations("q8_k", x[:3])), matmul(weight, type_id("Q4_K"), x[:3]))


@pytest.mark.parametrize("name", ["Q5_0", "Q4_K", "F16", "IQ2_XS"])
def test_an_empty_batch(cases, name, threads, monkeypatch):
    """No tokens give a [0, rows] float32 product on every path: one thread, the threaded driver, and the
    row-dequantizing path."""
    monkeypatch.setattr(matmul_module, "SERIAL_BYTES", 0)
    weight, x = cases(name)
    for n_threads in (1, 2):
        threads(n_threads)
        product = matmul(weight, type_id(name), x[:0])
        assert product.shape == (0, ROWS) and product.dtype == np.float32


def test_kernels_compile_up_front(cases, threads, monkeypatch):
    """compile_kernels names each type once, and leaves nothing for a later product of the type to compile,
    on one thread or several."""
    named = []
    compile_kernels([type_id("Q8_0"), type_id("IQ2_XS"), type_id("Q8_0")], named.append)
    assert named == ["Q8_0", "IQ2_XS"]
    kernels = [driver.rows, driver.run, activations_module._quantize_jobs, activations_module._quantize_row]
    compiled = [list(kernel.signatures) for kernel in kernels]
    assert all(compiled)
    monkeypatch.setattr(matmul_module, "SERIAL_BYTES", 0)
    weight, x = cases("Q8_0")
    for n_threads in (1, 2):
        threads(n_threads)
        matmul(weight, type_id("Q8_0"), x[:5])
    assert [list(kernel.signatures) for kernel in kernels] == compiled


PATHS = {
    "generic": ({"NUMBA_CPU_NAME": "generic"}, "assert not dots.AVX2 and not halves.NATIVE_HALF"),
    "avx2 without vnni": ({}, "assert dots.AVX2; dots.VNNI = dots.WIDE = False"),
}  # NUMBA_CPU_NAME=generic: the plain-IR path (no AVX2 products, no F16C), as on other CPUs; AVX2 alone:
# 32-byte products, pmaddubsw where VNNI would take vpdpbusd


@pytest.mark.parametrize("path", PATHS)
def test_the_portable_kernels_give_the_same_bits(cases, tmp_path, path):
    if path == "avx2 without vnni" and not (dots.VNNI or dots.WIDE):
        pytest.skip("this CPU has neither VNNI nor AVX512BW: its kernels are the AVX2 ones")
    environment, setup = PATHS[path]
    for name in PORTABLE:
        weight, x = cases(name)
        np.savez(tmp_path / f"{name}.npz", weight=weight, x=x[:7])
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        import numba
        import numpy as np
        from kinetic.plugins import plugins
        from kinetic_cpu.kernels import dots, halves, matmul
        SETUP
        numba.set_num_threads(1)  # threads change no bit (tested above); one compiles less
        for path in Path(sys.argv[1]).glob("*.npz"):
            case = np.load(path)
            out = matmul(case["weight"], plugins().tensor_types[path.stem].id, case["x"])
            np.save(path.with_suffix(".out.npy"), out)
    """).replace("SETUP", setup)
    environment = {**os.environ, **environment, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}  # compiled afresh
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=environment, check=True)
    for name in PORTABLE:
        weight, x = cases(name)
        assert same_bits(np.load(tmp_path / f"{name}.out.npy"), matmul(weight, type_id(name), x[:7]))


def test_wrong_shapes_are_refused(cases):
    weight, x = cases("Q8_0")
    with pytest.raises(ValueError, match="does not take activations"):
        matmul(weight, type_id("Q8_0"), x[:, :-32])
    with pytest.raises(ValueError, match="whole blocks"):
        matmul(weight[:, :-1], type_id("Q8_0"), x)


# ---- the int8 path against an independent numpy implementation ----


def q8_0_reference(x):  # ggml's AVX2 quantize_row_q8_0: d = amax / 127 kept as f16, q = rint(x * (127 / amax))
    blocks = x.reshape(len(x), -1, 32)
    amax = np.abs(blocks).max(axis=-1)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        inverse = np.where(amax != 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    q = np.rint(blocks * inverse[..., None]).astype(np.int8)
    return q.reshape(x.shape), d.astype(np.float16).astype(np.float32), q.sum(axis=-1, dtype=np.int32)


def q8_k_reference(x):  # ggml's quantize_row_q8_K_ref: d = max / -127 (max: largest magnitude), nearest int
    blocks = x.reshape(len(x), -1, 256)
    peak = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=-1)[..., None], axis=-1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.float32(-127) / peak
        q = np.where(peak[..., None] != 0, np.minimum(127, np.rint(blocks * inverse[..., None])), 0).astype(np.int8)
        d = np.where(peak != 0, np.float32(1) / inverse, np.float32(0)).astype(np.float32)
    return q.reshape(x.shape), d, q.reshape(len(x), -1, 16).sum(axis=-1, dtype=np.int32)


def lanes_tree(lanes):  # [n, rows, 8] float32 -> [n, rows]: the driver's fixed tree
    l = [lanes[..., i] for i in range(8)]  # noqa: E741
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))


def f16(blocks, at):  # blocks: [rows, n_blocks, size] uint8 -> [rows, n_blocks] float32
    return np.ascontiguousarray(blocks[..., at : at + 2]).view(np.float16)[..., 0].astype(np.float32)


def unpack(packed, bits, run):  # [rows, n_blocks, m] uint8 -> [rows, n_blocks, m * 8 / bits] int64
    flat = packed.reshape(-1, packed.shape[-1])
    return fields(flat, bits, run).reshape(packed.shape[:2] + (-1,)).astype(np.int64)


def run_dots(q, xq, run):  # q: [rows, nb, B], xq: [n, nb * B] -> [n, rows, nb, B / run] int64 per-run dots
    n, (rows, nb, size) = len(xq), q.shape
    x = xq.reshape(n, 1, nb, size // run, run).astype(np.int64)
    return (q.reshape(1, rows, nb, size // run, run) * x).sum(axis=-1)


def fma32(a, b, c):  # float32 a * b + c rounded once, as IEEE fusedMultiplyAdd
    """a * b is exact in float64; the float64 sum rounded to odd, then to float32, is the single rounding
    (Boldo and Melquiond, 2008: 53 >= 24 + 2 bits)."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c)))
    product = a * b
    total = product + c
    back = total - product
    error = (product - (total - back)) + (c - back)  # total + error == product + c exactly (TwoSum)
    even = (total.view(np.int64) & 1) == 0
    toward = np.where(error > 0, np.inf, -np.inf)
    total = np.where((error != 0) & even, np.nextafter(total, toward), total)
    return total.astype(np.float32)


def legacy_values(blocks, quants, acts, has_min=False, d_w=None):
    """Block b: lane b % 8 = fma(d_w d_x, q . x_q, lane), then for the types with a minimum
    fma(m_w, d_x * sum x_q, lane). d_w: the f16 at byte 0 unless given."""
    xq, d, x_sums = acts
    sums = run_dots(quants, xq, 32)[..., 0].astype(np.float32)  # [n, rows, nb]
    scale = (f16(blocks, 0) if d_w is None else d_w)[None] * d[:, None]
    lanes = np.zeros(sums.shape[:2] + (8,), np.float32)
    for b in range(sums.shape[2]):
        lanes[..., b % 8] = fma32(scale[..., b], sums[..., b], lanes[..., b % 8])
        if has_min:
            minimum = d[:, None, b] * x_sums[:, None, b].astype(np.float32)
            lanes[..., b % 8] = fma32(f16(blocks, 2)[None, :, b], minimum, lanes[..., b % 8])
    return lanes_tree(lanes)


def in_kernel_order(q):  # [n, k] int8 Q8_0 quants in weight order -> as the activations store them
    """Groups of 8 blocks, then one of 4 where 4 or more remain, each stored run of 4 bytes by run: run i of
    every block of the group, then run i + 1; single blocks as they are."""
    n, n_blocks = len(q), q.shape[1] // 32
    widths = [8] * (n_blocks // 8) + ([4] if n_blocks % 8 >= 4 else [])
    parts, first = [], 0
    for width in widths:
        group = q[:, 32 * first : 32 * (first + width)].reshape(n, width, 8, 4)
        parts.append(group.transpose(0, 2, 1, 3).reshape(n, -1))
        first += width
    return np.concatenate(parts + [q[:, 32 * first :]], axis=1)


def q8_0_values(blocks, acts):
    return legacy_values(blocks, blocks[..., 2:].view(np.int8).astype(np.int64), acts)


def q4_0_values(blocks, acts):
    return legacy_values(blocks, unpack(blocks[..., 2:], 4, 16) - 8, acts)


def q4_1_values(blocks, acts):
    return legacy_values(blocks, unpack(blocks[..., 4:], 4, 16), acts, has_min=True)


def q5_0_values(blocks, acts):
    q = unpack(blocks[..., 6:], 4, 16) | (unpack(blocks[..., 2:6], 1, 1) << 4)
    return legacy_values(blocks, q - 16, acts)


def q5_1_values(blocks, acts):
    q = unpack(blocks[..., 8:], 4, 16) | (unpack(blocks[..., 4:8], 1, 1) << 4)
    return legacy_values(blocks, q, acts, has_min=True)


def k_values(d_w, scales, q, acts, offset=0, dmin_w=None, mins=None):  # -> [n, rows] through 8 lanes
    """Super-block b: I = sum of s_run * (q - offset) * x_q over its weights, M = sum of m_run * (run sums
    of x_q); lane b % 8 = fma(d_w d_x, I, lane), then fma(-(dmin_w d_x), M, lane)."""
    xq, d, sums = acts
    n, (rows, nb, _) = len(xq), q.shape
    runs = scales.shape[-1]
    per_weight = np.repeat(scales, 256 // runs, axis=-1)  # [rows, nb, 256]
    x = xq.reshape(n, 1, nb, 256).astype(np.int64)
    exact = ((per_weight * (q - offset))[None] * x).sum(axis=-1)  # [n, rows, nb]
    run_sums = sums.reshape(n, 1, nb, runs, 16 // runs).sum(axis=-1)  # sums come per 16
    lanes = np.zeros((n, rows, 8), np.float32)
    for b in range(nb):
        scale = d_w[None, :, b] * d[:, None, b]
        lanes[..., b % 8] = fma32(scale, exact[..., b].astype(np.float32), lanes[..., b % 8])
        if mins is not None:
            m = (mins[None, :, b] * run_sums[:, :, b]).sum(axis=-1).astype(np.float32)
            lanes[..., b % 8] = fma32(-(dmin_w[None, :, b] * d[:, None, b]), m, lanes[..., b % 8])
    return lanes_tree(lanes)


def q4_k_values(blocks, acts):
    low, mid, high = (blocks[..., at : at + 4].astype(np.int64) for at in (4, 8, 12))
    scales = np.concatenate([low & 63, (high & 15) | (low >> 6 << 4)], axis=-1)
    mins = np.concatenate([mid & 63, (high >> 4) | (mid >> 6 << 4)], axis=-1)
    q = unpack(blocks[..., 16:], 4, 32)
    return k_values(f16(blocks, 0), scales, q, acts, dmin_w=f16(blocks, 2), mins=mins)


def q6_k_values(blocks, acts):
    q = unpack(blocks[..., :128], 4, 64) | (unpack(blocks[..., 128:192], 2, 32) << 4)
    scales = blocks[..., 192:208].view(np.int8).astype(np.int64)
    return k_values(f16(blocks, 208), scales, q, acts, offset=32)


IQ4_NL_TABLE = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113])  # kvalues_iq4nl
MXFP4_TABLE = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12])  # kvalues_mxfp4: e2m1 doubled


def iq4_nl_values(blocks, acts):
    return legacy_values(blocks, IQ4_NL_TABLE[unpack(blocks[..., 2:], 4, 16)], acts)


def mxfp4_values(blocks, acts):  # d_w = 2^(e - 128), e the block's first byte
    d_w = np.ldexp(np.float32(1), blocks[..., 0].astype(np.int32) - 128).astype(np.float32)
    return legacy_values(blocks, MXFP4_TABLE[unpack(blocks[..., 1:], 4, 16)], acts, d_w=d_w)


def iq4_xs_values(blocks, acts):  # run r: 6-bit scale less 32, codes of 16 bytes from 8 + 16r as IQ4_NL's
    runs = np.arange(8)
    high = (blocks[..., 2].astype(np.int64) | blocks[..., 3].astype(np.int64) << 8)[..., None] >> 2 * runs & 3
    scales = (blocks[..., 4 + runs // 2].astype(np.int64) >> 4 * (runs % 2) & 15 | high << 4) - 32
    return k_values(f16(blocks, 0), scales, IQ4_NL_TABLE[unpack(blocks[..., 8:], 4, 16)], acts)


# name -> (outputs [n, rows] from blocks and activations, the activations' kind)
NUMPY_PATHS = {"Q8_0": (q8_0_values, "q8_0"), "Q4_0": (q4_0_values, "q8_0"), "Q4_1": (q4_1_values, "q8_0"),
               "Q5_0": (q5_0_values, "q8_0"), "Q5_1": (q5_1_values, "q8_0"), "IQ4_NL": (iq4_nl_values, "q8_0"),
               "MXFP4": (mxfp4_values, "q8_0"), "Q4_K": (q4_k_values, "q8_k"), "Q6_K": (q6_k_values, "q8_k"),
               "IQ4_XS": (iq4_xs_values, "q8_k")}  # fmt: skip


@pytest.mark.parametrize("kind, reference", [("q8_0", q8_0_reference), ("q8_k", q8_k_reference)])
def test_activations_quantize_as_ggml(kind, reference):
    x = np.random.default_rng(7).standard_normal((5, 2304 if kind == "q8_k" else 2464), np.float32) * np.float32(3)
    x[1, :256] = 0  # an all-zero block
    x[2, :5] = [127, 2.5, -3.5, 0.5, -0.5]  # a block scaled by exactly 1: halves go to even, not away
    expected = list(reference(x))
    if kind == "q8_0":
        expected[0] = in_kernel_order(expected[0])
    for ours, theirs in zip(activations(kind, x), expected):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_f16_round_is_numpys_float16():
    rng = np.random.default_rng(3)
    edges = [0.0, -0.0, 65504.0, 65519.0, 65520.0, 1e9, 2.0**-24, 2.0**-25, 3 * 2.0**-26]
    values = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000), edges]).astype(np.float32)
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16).astype(np.float32)
    rounded = np.array([f16_round(v) for v in values], np.float32)
    assert same_bits(rounded, expected)


@pytest.mark.parametrize("name", NUMPY_PATHS)
def test_the_int8_path_is_the_numpy_one(cases, name):
    weight, x = cases(name)
    values, kind = NUMPY_PATHS[name]
    tensor_type = plugins().tensor_types[name]
    blocks = weight.reshape(ROWS, -1, tensor_type.type_size)
    acts = [a[:7] for a in (q8_0_reference if kind == "q8_0" else q8_k_reference)(x)]
    assert same_bits(matmul(weight, tensor_type.id, x[:7]), values(blocks, acts))

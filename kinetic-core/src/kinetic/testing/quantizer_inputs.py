"""The seeded float32 inputs the weight types' quantizers are checked on against ggml's reference quantizers
(scripts/make_quantizer_goldens.py writes ggml's sha256 of each, tests/test_quantizers.py compares): trained-like
weights, outliers, huge and tiny values, zeros, constant and one-signed rows, rounding ties, and (for the
element-wise types) every kind of special value."""

from __future__ import annotations

import numpy as np

from kinetic.plugins import plugins

SEED = 20240607

TYPES = {name: plugins().tensor_types[name] for name in ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K",
                                                         "F16", "BF16", "F32")}

# name: (rows, values per row, what); build_case makes each from SEED and its index here
CASES: dict[str, tuple[int, int, str]] = {
    "normal": (256, 4096, "N(0, 0.02), like trained weights"),
    "unit": (48, 11008, "N(0, 1), rows of 43 super-blocks"),
    "rows-256": (512, 256, "N(0, 1) times a per-row scale from 1e-3 to 1e3"),
    "rows-96": (1024, 96, "N(0, 0.05), rows of three 32-blocks (no K-quant)"),
    "outliers": (128, 2048, "N(0, 0.02), 0.2% of values times 20 to 2000"),
    "one-huge": (16, 4096, "N(0, 0.02), one value per row from 1e2 to 3e38, either sign"),
    "zeros": (64, 512, "0, -0, and 0/-0 mixes, some with one tiny or one ordinary value"),
    "tiny": (64, 1024, "N(0, 1) times 1e-4 to 1e-44 (f16 and f32 subnormals)"),
    "constant": (64, 512, "each row one repeated value"),
    "one-signed": (64, 1024, "|N(0, 0.02)| rows and -|N(0, 0.02)| rows"),
    "grid": (128, 1024, "multiples of 1/4, 1/8 and 1 in small ranges (rounding ties)"),
    "f16-values": (64, 2048, "N(0, 0.02) rounded to f16"),
    "bf16-values": (64, 2048, "N(0, 0.02) rounded to bf16"),
    "sparse": (64, 2048, "N(0, 0.1) with 90% zeros"),
    "uniform": (64, 2048, "U(-1, 1)"),
    "heavy-tails": (64, 2048, "Student t, 2 degrees of freedom"),
    "specials": (2, 4096, "inf, NaNs, extremes, f16/bf16 rounding edges (F16, BF16, F32 only)"),
    "bits": (64, 4096, "random float32 bit patterns, NaNs included (F16, BF16, F32 only)"),
}
ELEMENTWISE_ONLY = ("specials", "bits")

def cases_for(type_name: str) -> list[str]:
    """The cases a type is checked on: rows of whole blocks, finite values unless it converts element-wise."""
    block_size = TYPES[type_name].block_size
    return [name for name, (_, n, _) in CASES.items()
            if n % block_size == 0 and (block_size == 1 or name not in ELEMENTWISE_ONLY)]  # fmt: skip


def build_case(name: str) -> np.ndarray:
    """The float32 [rows, values per row] input of case `name`."""
    rows, n, _ = CASES[name]
    rng = np.random.default_rng([SEED, list(CASES).index(name)])
    normal = rng.standard_normal((rows, n))
    if name == "normal":
        x = normal * 0.02
    elif name == "unit":
        x = normal
    elif name == "rows-256":
        x = normal * 10.0 ** rng.uniform(-3, 3, (rows, 1))
    elif name == "rows-96":
        x = normal * 0.05
    elif name == "outliers":
        x = normal * 0.02
        hit = rng.random((rows, n)) < 0.002
        x[hit] *= rng.uniform(20, 2000, hit.sum())
    elif name == "one-huge":
        x = normal * 0.02
        x[np.arange(rows), rng.integers(0, n, rows)] = np.geomspace(1e2, 3e38, rows) * rng.choice([-1, 1], rows)
    elif name in ("zeros", "constant", "grid", "specials"):
        x = _SPECIAL_BUILDERS[name](rng, rows, n)
    elif name == "tiny":
        x = normal * np.geomspace(1e-4, 1e-44, rows)[:, None]
    elif name == "one-signed":
        x = np.abs(normal) * 0.02 * np.where(np.arange(rows) % 2, -1.0, 1.0)[:, None]
    elif name == "f16-values":
        x = (normal * 0.02).astype(np.float16)
    elif name == "bf16-values":
        x = ((normal * 0.02).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    elif name == "sparse":
        x = normal * 0.1 * (rng.random((rows, n)) < 0.1)
    elif name == "uniform":
        x = rng.uniform(-1, 1, (rows, n))
    elif name == "heavy-tails":
        x = rng.standard_t(2, (rows, n))
    else:  # bits
        x = rng.integers(0, 1 << 32, (rows, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", under="ignore"):
        return np.ascontiguousarray(x, dtype=np.float32)


def _zeros(rng, rows: int, n: int) -> np.ndarray:
    x = np.zeros((rows, n), np.float32)
    x[1::4] = -0.0
    x[2::4] = np.where(rng.random((len(x[2::4]), n)) < 0.5, 0.0, -0.0)
    x[3::4] = np.where(rng.random((len(x[3::4]), n)) < 0.5, 0.0, -0.0)
    x[3::8, 5] = 1e-30
    x[7::8, 300] = -0.75
    return x


def _constant(rng, rows: int, n: int) -> np.ndarray:
    values = np.concatenate([[0.5, -0.25, 3.0, -3.0, 1e-3, 65504.0, 1e-20, 7.0], rng.standard_normal(rows - 8)])
    return np.repeat(values[:, None], n, axis=1)


def _grid(rng, rows: int, n: int) -> np.ndarray:
    step = np.array([0.25, 0.125, 1.0, 0.5])[np.arange(rows) % 4, None]
    return rng.integers(-16, 17, (rows, n)) * step


def _specials(rng, rows: int, n: int) -> np.ndarray:
    edges = np.array([np.inf, -np.inf, 65504.0, 65519.996, 65520.0, -65520.0, 3.4028235e38, -3.4028235e38,
                      6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 8.940697e-08, 1e-45, -1e-45,
                      1.1754942e-38, 1.0009765625, 1.00048828125, 1.00146484375, 0.0, -0.0], np.float32)  # fmt: skip
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x7FA00000, 0x7F80FFFF],
                    np.uint32).view(np.float32)
    halfway = (np.arange(-2048, 2048, dtype=np.float64) + 0.5) * 2.0 ** rng.integers(-30, 20, 4096)  # f16 ties
    bf16_ties = (rng.integers(0, 1 << 16, 4096, dtype=np.uint32) << 16 | np.uint32(0x8000)).view(np.float32)
    values = np.concatenate([edges, nans, halfway.astype(np.float32), bf16_ties])
    return values[: rows * n].reshape(rows, n)


_SPECIAL_BUILDERS = {"zeros": _zeros, "constant": _constant, "grid": _grid, "specials": _specials}

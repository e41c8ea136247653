"""Same bits for every thread count and input layout; hardening items of issue 13.

* encode (every mode, stochastic rounding with one seed) and decode give identical codes
  and values on 1 and 2 threads in this process and on 4 threads in a subprocess, and for
  big-endian, strided, negatively strided and 0-d inputs.
* The stochastic-rounding stream: element i's draw depends on (seed, i) only, so a
  chunk of an array rounds as the same elements of the whole array (same seed).
* Issue 13: one test per item in the codec's files; each failed before its fix.
"""

from __future__ import annotations

import decimal
import hashlib
import math
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import numerics
from numerics.codec import encode_exact
from numerics.formats import Format
from numerics.kernels.spread import FAST_LOOP_MIN
from numerics.threads import get_num_threads, set_num_threads

ROOT = Path(__file__).resolve().parents[1]
# several parallel chunks and a ragged end, for the fastest loops too
N = 3 * FAST_LOOP_MIN + 17


def sample(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = (rng.standard_normal(n) * 16).astype(np.float32)
    return np.where(rng.random(n) < 0.5, bits, normal)


CASES = [("e4m3fn", "rne", None), ("bfloat16", "rtz", None), ("e5m2", "sr", 8),
         ("e2m1fn", "sr", None), ("binary16", "ru", None), ("e8m0fnu", "sr", 3)]


def digest() -> str:
    """A hash of encode/decode results over CASES (run in-process or in a subprocess)."""
    x = sample(N)
    h = hashlib.sha256()
    with np.errstate(invalid="ignore"):
        for name, rounding, sr_bits in CASES:
            codes = numerics.encode(x, name, rounding=rounding, rng=11, sr_bits=sr_bits,
                                    nan="zero")
            h.update(codes.tobytes())
            h.update(numerics.decode(codes, name).tobytes())
            h.update(numerics.encode(x.astype(np.float64), name, rounding=rounding, rng=11,
                                     sr_bits=sr_bits, nan="zero").tobytes())
    return h.hexdigest()


def test_same_bits_for_every_thread_count() -> None:
    before = get_num_threads()
    try:
        set_num_threads(1)
        one = digest()
        top = 2
        try:
            set_num_threads(top)
        except ValueError:
            pytest.skip("a single-thread pool")
        two = digest()
    finally:
        set_num_threads(before)
    assert one == two
    env = {**os.environ, "NUMBA_NUM_THREADS": "4", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")])}
    code = ("import sys; sys.path.insert(0, %r); import test_encode_layouts as t; "
            "print(t.digest())" % str(Path(__file__).parent))
    four = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True, timeout=600).stdout.strip()
    assert four == one


@pytest.mark.parametrize(("name", "rounding", "sr_bits"), CASES)
def test_same_bits_for_every_layout(name: str, rounding: str, sr_bits: int | None) -> None:
    x = sample(4000, 3).reshape(40, 100)
    opts: dict[str, Any] = {"rounding": rounding, "rng": 5, "sr_bits": sr_bits, "nan": "zero"}
    want = numerics.encode(x, name, **opts)
    big = x.astype(">f4")
    assert np.array_equal(numerics.encode(big, name, **opts), want)
    fortran = np.asfortranarray(x)
    assert np.array_equal(numerics.encode(fortran, name, **opts), want)
    padded = np.zeros((40, 300), np.float32)
    padded[:, ::3] = x
    assert np.array_equal(numerics.encode(padded[:, ::3], name, **opts), want)
    flipped = x[::-1, ::-1].copy()[::-1, ::-1]
    assert flipped.strides[0] < 0
    assert np.array_equal(numerics.encode(flipped, name, **opts), want)
    # decode: the same values whatever the layout of the codes
    values = numerics.decode(want, name)
    assert np.array_equal(numerics.decode(np.asfortranarray(want), name), values,
                          equal_nan=True)
    assert np.array_equal(numerics.decode(want.astype(want.dtype.newbyteorder(">")), name),
                          values, equal_nan=True)
    # a 0-d array is element 0 of the stream
    zero_d = numerics.encode(np.float32(x[0, 0]), name, **opts)
    assert zero_d == want[0, 0] and np.ndim(zero_d) == 0


def test_sr_draw_depends_on_seed_and_flat_index_only() -> None:
    """Element i of an array rounds like encode_exact with u = draw(seed, i, k)."""
    from numerics.kernels.codec import draws

    x = np.linspace(0.1, 3.3, 300)
    for sr_bits in (None, 4):
        k = 64 if sr_bits is None else sr_bits
        got = numerics.encode(x, "e4m3fn", rounding="sr", rng=99, sr_bits=sr_bits)
        u = draws(np.uint64(99), x.size, k)
        want = [encode_exact(float(v), "e4m3fn", rounding="sr", sr_bits=sr_bits,
                             uniform=Fraction(int(ui), 2**k)) for v, ui in zip(x, u)]
        assert got.tolist() == want
        # the object (exact) path uses the same stream
        objs = numerics.encode(np.array([Fraction(v) for v in x], dtype=object), "e4m3fn",
                               rounding="sr", rng=99, sr_bits=sr_bits)
        assert objs.tolist() == want


def test_out_argument() -> None:
    x = np.linspace(-3, 3, 50)
    out = np.empty(50, np.uint8)
    assert numerics.encode(x, "e4m3fn", out=out) is out
    assert np.array_equal(out, numerics.encode(x, "e4m3fn"))
    vals = np.empty(50, np.float32)
    assert numerics.decode(out, "e4m3fn", out=vals) is vals
    assert np.array_equal(vals, numerics.decode(out, "e4m3fn").astype(np.float32))
    with pytest.raises(ValueError, match="out"):
        numerics.encode(x, "e4m3fn", out=np.empty(50, np.uint16))


@pytest.mark.parametrize("name", ["e4m3fn", "bfloat16", "binary16", "tf32", "binary32",
                                  "e8m0fnu", "e2m1fn", "binary8p3"])
def test_decode_float32_is_exact(name: str) -> None:
    fmt = numerics.get_format(name)
    codes = (np.arange(fmt.num_codes, dtype=np.uint64) if fmt.bits <= 16 else
             np.random.default_rng(0).integers(0, fmt.num_codes, 20000, dtype=np.uint64))
    codes = codes.astype(fmt.code_dtype)
    f64 = numerics.decode(codes, fmt)
    f32 = numerics.decode(codes, fmt, dtype=np.float32)
    assert f32.dtype == np.float32
    with np.errstate(invalid="ignore"):
        assert np.array_equal(f32.astype(np.float64), f64, equal_nan=True)


def test_decode_float32_refuses_wide_formats() -> None:
    with pytest.raises(ValueError, match="binary64"):
        numerics.decode([0], "binary64", dtype=np.float32)
    with pytest.raises(ValueError, match="float16"):
        numerics.decode([0], "e3m4", dtype=np.float16)


def test_round_to_dtype() -> None:
    x = np.linspace(0, 1, 7)
    got = numerics.round_to(x, "bf16", dtype=np.float32)
    assert got.dtype == np.float32
    assert np.array_equal(got, numerics.round_to(x, "bf16"))


@pytest.mark.parametrize("name", ["binary64", "binary32", "tf32", "bfloat16", "binary16",
                                  "e4m3fn", "e2m1fn", "e8m0fnu"])
@pytest.mark.parametrize("src", [np.float64, np.float32])
def test_0d_arrays_as_one_element(name: str, src: type) -> None:
    """A 0-d array through encode, decode and round_to (each dtype, rne and sr) gives the
    element a 1-element array gives, as a 0-d array (a 0-d float32 decode and a 0-d
    binary64 round_to with dtype or sr once reached 1-d kernels whole: numba TypingError)."""
    fmt = numerics.get_format(name)
    x1: np.ndarray = np.array([1.5], src)
    x0 = x1.reshape(())
    dtypes: list[Any] = [None, np.float64] + ([np.float32] if fmt.float32_exact else [])
    options: list[tuple[str, dict[str, Any]]] = [("rne", {}), ("rtz", {}), ("sr", {"rng": 5})]
    for rounding, opts in options:
        c1 = numerics.encode(x1, fmt, rounding=rounding, **opts)
        c0 = numerics.encode(x0, fmt, rounding=rounding, **opts)
        assert c0.shape == () and c0.dtype == c1.dtype and c0[()] == c1[0]
        for dt in dtypes:
            v1 = numerics.decode(c1, fmt, dtype=dt)
            v0 = numerics.decode(c0, fmt, dtype=dt)
            assert v0.shape == () and v0.dtype == v1.dtype and v0[()] == v1[0]
            r1 = numerics.round_to(x1, fmt, dtype=dt, rounding=rounding, **opts)
            r0 = numerics.round_to(x0, fmt, dtype=dt, rounding=rounding, **opts)
            assert r0.shape == () and r0.dtype == r1.dtype and r0[()] == r1[0]


# ---------------------------------------------------------------- issue 13
def test_issue13_longdouble_not_a_float64() -> None:
    """(2) longdouble operands are taken exactly, never rounded to float64 first."""
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("longdouble is binary64 here")
    x = np.longdouble(1) + np.longdouble(2) ** -60
    assert float(numerics.next_down(x, "binary64")) == 1.0
    assert float(numerics.next_up(x, "binary64")) == 1.0 + 2**-52
    assert float(numerics.ulp(np.longdouble(2) - np.longdouble(2) ** -60, "binary64")) == 2**-52
    with pytest.raises(ValueError, match="not a float64 value"):
        numerics.ulp_distance(x, 1.0, "binary64")
    assert int(numerics.encode(x, "binary32", rounding="ru")) == 0x3F800001
    assert int(numerics.encode(x, "binary64", rounding="ru")) == 0x3FF0000000000001


def test_issue13_decimal_negative_zero() -> None:
    """(3) Decimal("-0") keeps its sign."""
    assert int(numerics.encode(decimal.Decimal("-0"), "binary32")) == 0x80000000
    assert math.copysign(1, float(numerics.round_to(decimal.Decimal("-0"), "binary32"))) == -1


def test_issue13_big_endian_dtypes() -> None:
    """(7) big-endian dtypes have their format; SR of big-endian input = little-endian."""
    f4, f8 = (numerics.format_of_dtype(np.dtype(d)) for d in (">f4", ">f8"))
    assert f4 is not None and f4.name == "binary32"
    assert f8 is not None and f8.name == "binary64"
    x = np.linspace(0.1, 0.9, 1000, dtype=np.float32)
    a = numerics.encode(x, "e4m3fn", rounding="sr", rng=3)
    b = numerics.encode(x.astype(">f4"), "e4m3fn", rounding="sr", rng=3)
    assert np.array_equal(a, b)


def test_issue13_signalling_nans_decode_quiet() -> None:
    """(8) a signalling NaN code decodes to a quiet NaN in every format."""
    for code, name in ((0x7C7C, "binary16"), (0x7F800001, "binary32"), (0x7F81, "bfloat16"),
                       (0x7FF0000000000001, "binary64"), (0x7D, "e5m2")):
        v = numerics.decode(np.array([code], numerics.get_format(name).code_dtype), name)
        bits = int(v.view(np.uint64)[0])
        assert math.isnan(v[0]) and bits & (1 << 51), (name, hex(bits))
        v32 = numerics.decode(np.array([code], numerics.get_format(name).code_dtype), name,
                              dtype=np.float64)
        assert int(v32.view(np.uint64)[0]) == bits
    for code, name in ((0x7C7C, "binary16"), (0x7F81, "bfloat16"), (0xFF81, "bfloat16")):
        f32 = numerics.decode(np.array([code], np.uint16), name, dtype=np.float32)
        assert np.isnan(f32[0]) and int(f32.view(np.uint32)[0]) & (1 << 22), (name, hex(code))
    bf = numerics.decode(np.arange(2**16, dtype=np.uint16), "bfloat16", dtype=np.float32)
    want = (np.arange(2**16, dtype=np.uint32) << np.uint32(16))
    nan = (want & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    assert np.array_equal(bf.view(np.uint32), np.where(nan, want | np.uint32(1 << 22), want))


def test_issue13_huge_and_tiny_exact_values_do_not_hang() -> None:
    start = time.perf_counter()
    assert int(numerics.encode(decimal.Decimal("1e99999999"), "bf16")) == 0x7F80
    assert int(numerics.encode(decimal.Decimal("-1e99999999"), "bf16", rounding="rtz")) == 0xFF7F
    assert int(numerics.encode(decimal.Decimal("1e-99999999"), "bf16", rounding="ru")) == 1
    assert float(numerics.round_to(decimal.Decimal("-1e-99999999"), "bf16")) == 0.0
    assert int(numerics.encode(10**5000, "e4m3fn", overflow="saturate")) == 0x7E
    assert int(numerics.encode(Fraction(1, 10**5000), "e4m3fn", rounding="ru")) == 1
    assert int(numerics.encode(-Fraction(1, 10**5000), "e4m3fn")) == 0x80
    assert time.perf_counter() - start < 5


def test_issue13_no_overflow_errors() -> None:
    assert numerics.ulp(10**400, "e4m3fn") == math.inf
    fmt = Format(name="x", exponent_bits=11, trailing_bits=52, bias=1023)
    assert float(numerics.decode(0, fmt)) == 0.0
    assert float(numerics.decode(np.array([0x3FF0000000000000], np.uint64), fmt)[0]) == 1.0


def test_issue13_format_arguments() -> None:
    torch = pytest.importorskip("torch")

    want = int(numerics.encode(1.5, "bfloat16"))
    for fmt in ("bfloat16", numerics.get_format("bf16"), ml_dtypes.bfloat16,
                np.dtype(ml_dtypes.bfloat16), torch.bfloat16):
        assert int(numerics.encode(1.5, fmt)) == want
        assert float(numerics.decode(want, fmt)) == 1.5
    assert numerics.as_format(np.float32).name == "binary32"
    assert numerics.as_format(torch.float8_e4m3fn).name == "e4m3fn"
    with pytest.raises(TypeError, match="fmt=3"):
        numerics.encode(1.0, 3)
    with pytest.raises(ValueError, match="int8"):
        numerics.encode(1.0, torch.int8)


def test_issue13_ml_dtypes_arrays_in_ulp_functions() -> None:
    x = np.array([1, 2, -0.5], ml_dtypes.bfloat16)
    assert numerics.ulp(x, "bf16").tolist() == [2**-7, 2**-6, 2**-8]
    assert numerics.next_up(x, "bf16").tolist() == [1 + 2**-7, 2 + 2**-6, -0.5 + 2**-9]
    assert numerics.next_down(x, "bf16").tolist() == [1 - 2**-8, 2 - 2**-7, -0.5 - 2**-8]
    assert numerics.ulp_distance(x, np.array([1, 1, 1], ml_dtypes.bfloat16), "bf16").tolist() \
        == [0, 128, int(numerics.ulp_distance(-0.5, 1.0, "bf16"))]


def test_issue13_round_to_torch_returns_torch() -> None:
    torch = pytest.importorskip("torch")

    t = torch.tensor([0.1, 1.0, 1000.0], dtype=torch.float32)
    got = numerics.round_to(t, "e4m3fn")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float16
    assert got.tolist() == [0.1015625, 1.0, float("nan")] or got[:2].tolist() == [0.1015625, 1.0]
    assert numerics.round_to(t, "bf16").dtype == torch.bfloat16
    assert numerics.round_to(t, "binary32").dtype == torch.float32
    assert numerics.round_to(t.double(), "binary64").dtype == torch.float64


@pytest.mark.parametrize(("call", "match", "kind"), [
    (lambda: numerics.encode([[1.0, 2.0], [3.0]], "bf16"), "x .*rectangular", ValueError),
    (lambda: numerics.ulp([[1.0, 2.0], [3.0]], "bf16"), "x .*rectangular", ValueError),
    (lambda: numerics.next_down([[1.0, 2.0], [3.0]], "bf16"), "x .*rectangular", ValueError),
    (lambda: numerics.encode(1.0, "bf16", rounding=np.array(["rne"])),  # type: ignore[arg-type]
     "rounding=", ValueError),
    (lambda: numerics.encode([1.0], "bf16", rounding="sr", rng=-1), "rng=-1", ValueError),
    (lambda: encode_exact(0.1, "bf16", rounding="sr", uniform="0.5"),  # type: ignore[arg-type]
     "uniform='0.5'",
     TypeError),
    (lambda: numerics.encode(1 + 2j, "bf16"), "complex", TypeError),
    (lambda: numerics.encode(np.array([1 + 2j]), "bf16"), "complex", TypeError),
    (lambda: numerics.encode(np.zeros((1,) * 33), "bf16"), "33 dimensions", ValueError),
    (lambda: numerics.decode(np.zeros((1,) * 33, np.uint8), "e4m3fn"), "33 dimensions",
     ValueError),
])
def test_issue13_clear_errors(call: object, match: str, kind: type) -> None:
    with pytest.raises(kind, match=match):
        call()  # type: ignore[operator]

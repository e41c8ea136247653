"""The round-to-nearest-even lane kernels (numerics.kernels.narrow) against references.

Three independent checks:
- every code, every tie and the float32 neighbours of both, for every format the kernels
  take, against the exact reference ``encode_exact`` (Fractions; a sample) and the
  general kernel ``round_pair`` (all of them), from float32 and from float64;
- float64 inputs that are not float32s (where the round-to-odd step matters) against
  ``encode_exact``;
- ml_dtypes / numpy casts from float32 on the same grids (the peers).
The exhaustive tier runs all 2**32 float32 patterns through the public ``encode``
against ml_dtypes (tests/test_exhaustive.py).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_core import ALL_FORMATS, float64_near_grid, magnitude_values, nudge

import numerics
from numerics.codec import encode_exact
from numerics.formats import Format
from numerics.kernels import codec as kcodec
from numerics.kernels import narrow
from numerics.kernels.lanes import HAS_F16C
from numerics.kernels.rounding import (
    MODE_RD,
    MODE_RNA,
    MODE_RNE,
    MODE_RTO,
    MODE_RTZ,
    MODE_RU,
    format_params,
    mode_code,
)

NARROW32 = [f for f in ALL_FORMATS if narrow.fits(format_params(f), False)]
NARROW64 = [f for f in ALL_FORMATS if narrow.fits(format_params(f), True)]
SMALL32 = [f for f in NARROW32 if f.bits <= 16]
ML_DTYPES = {
    "e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "e2m1fn": ml_dtypes.float4_e2m1fn,
    "e3m2fn": ml_dtypes.float6_e3m2fn, "e2m3fn": ml_dtypes.float6_e2m3fn,
    "bfloat16": ml_dtypes.bfloat16, "binary16": np.float16,
}


def test_the_kernels_cover_the_standard_formats() -> None:
    names = {f.name for f in NARROW32}
    assert {"e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "e2m3fn", "bfloat16", "binary16",
            "e4m3fnuz", "e5m2fnuz"} <= names
    assert "e8m0fnu" not in names and "binary32" not in names


def _grid_inputs(fmt: Format) -> np.ndarray:
    """float32: every value, every midpoint (the tie), each moved one float32 ulp either
    way, the virtual value past max and beyond, both signs, and the specials."""
    vals = magnitude_values(fmt)
    points = [Fraction(0)] + list(vals) + [(a + b) / 2 for a, b in zip(vals, vals[1:])]
    with np.errstate(over="ignore"):  # bfloat16's virtual value past max is 2**128
        f = np.array([float(p) for p in points], np.float32)
    assert all(Fraction(float(v)) == p for v, p in zip(f[:50], points[:50]))  # exact
    with np.errstate(over="ignore"):
        near = [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(0)),
                np.array([np.inf, np.nan, 2 * float(vals[-1]), 3e38, 1e-45, 1e-40],
                         np.float32)]
    x = np.concatenate(near)
    return np.concatenate([x, -x])


def _general(x: np.ndarray, fmt: Format, saturate: bool) -> np.ndarray:
    out = np.empty(x.size, fmt.code_dtype)
    kcodec.encode_float_span(x, out, 0, x.size, format_params(fmt), MODE_RNE, int(saturate),
                             np.uint64(0), 1)
    return out


@pytest.mark.parametrize("fmt", SMALL32, ids=lambda f: f.name)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_grid_matches_the_general_kernel_and_the_exact_reference(fmt: Format,
                                                                 overflow: str) -> None:
    x = _grid_inputs(fmt)
    got = numerics.encode(x, fmt, overflow=overflow, nan="zero")
    want = _general(x, fmt, overflow == "saturate")
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    # the exact reference on a sample (every index for the small formats)
    idx = np.arange(x.size) if x.size < 3000 else np.random.default_rng(0).choice(
        x.size, 3000, replace=False)
    for i in idx:
        v = float(x[i])
        exact = encode_exact(v, fmt, rounding="rne", overflow=overflow, nan="zero")
        assert int(got[i]) == exact, (v, fmt.name, hex(int(got[i])), hex(exact))


@pytest.mark.parametrize("fmt", SMALL32, ids=lambda f: f.name)
def test_float64_grid_matches_float32(fmt: Format) -> None:
    x = _grid_inputs(fmt)
    with np.errstate(invalid="ignore"):
        got64 = numerics.encode(x.astype(np.float64), fmt, nan="zero")
    assert np.array_equal(got64, numerics.encode(x, fmt, nan="zero"))


@pytest.mark.parametrize("fmt", [f for f in SMALL32 if f.name in ML_DTYPES],
                         ids=lambda f: f.name)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_grid_matches_ml_dtypes(fmt: Format, overflow: str) -> None:
    x = _grid_inputs(fmt)
    x = x[~np.isnan(x)]
    if overflow == "saturate":  # ml_dtypes saturates only in its own clip; compare in range
        x = x[np.abs(x) <= float(magnitude_values(fmt)[-2])]
    with np.errstate(all="ignore"):
        peer = x.astype(ML_DTYPES[fmt.name]).view(fmt.code_dtype)
    got = numerics.encode(x, fmt, overflow=overflow)
    bad = np.flatnonzero(got != peer)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(peer[i])) for i in bad[:5]]


DIRECTED = {"rna": MODE_RNA, "rtz": MODE_RTZ, "ru": MODE_RU, "rd": MODE_RD, "rto": MODE_RTO}


@pytest.mark.parametrize("fmt", NARROW32, ids=lambda f: f.name)
def test_directed_modes_match_the_general_kernel(fmt: Format) -> None:
    """The lanes' other modes (``narrow.directed_span``) against the general kernel
    (pinned to ``round_pair``) with each mode: random float32 patterns, the grid of a
    format of at most 16 bits (values, ties, their neighbours, beyond max), values
    around and below the smallest normal, the specials; float64 input (through round to
    odd, in the formats ``fits_one`` takes) one low bit either side of those and beyond
    float32's range; both overflow rules, the NaN count and the threaded driver."""
    rng = np.random.default_rng(fmt.bits + fmt.trailing_bits)
    P = format_params(fmt)
    tiny = float(fmt.smallest_normal)
    x32 = np.concatenate([
        rng.integers(0, 2**32, 1 << 13, dtype=np.uint64).astype(np.uint32).view(np.float32),
        (rng.standard_normal(1 << 12) * tiny * 2.0 ** rng.integers(-12, 3, 1 << 12)
         ).astype(np.float32),
        _grid_inputs(fmt) if fmt.bits <= 16 else np.zeros(0, np.float32)])
    inputs = [x32]
    if narrow.fits_one(P):
        with np.errstate(invalid="ignore", over="ignore"):
            x = x32[np.isfinite(x32)].astype(np.float64)
            inputs.append(np.concatenate([x, x * (1 + 2.0**-40), x * (1 - 2.0**-45),
                                          x * 2.0**200, [np.inf, -np.inf, np.nan]]))
    for x in inputs:
        for name, mode in DIRECTED.items():
            for saturate in (False, True):
                got = np.empty(x.size, fmt.code_dtype)
                nans = narrow.directed_span(x, got, 0, x.size, P, mode, saturate, True)
                assert nans == int(np.isnan(x).sum())
                want = np.empty(x.size, fmt.code_dtype)
                kcodec.encode_float_span(x, want, 0, x.size, P, mode, int(saturate),
                                         np.uint64(0), 1)
                bad = np.flatnonzero(got != want)
                assert bad.size == 0, (name, saturate, [
                    (float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]])
    # the threaded driver (pieces on the threads) against one serial span
    big = np.resize(x32, 3 * narrow.CHUNK + 11)
    one, split = np.empty(big.size, fmt.code_dtype), np.empty(big.size, fmt.code_dtype)
    serial = narrow.directed_span(big, one, 0, big.size, P, MODE_RU, False, True)
    assert narrow.directed(big, split, P, MODE_RU, False, True) == serial
    assert np.array_equal(one, split)


@pytest.mark.parametrize("fmt", NARROW64, ids=lambda f: f.name)
def test_random_patterns_match_the_general_kernel(fmt: Format) -> None:
    rng = np.random.default_rng(fmt.bits)
    b32 = rng.integers(0, 2**32, 1 << 15, dtype=np.uint64).astype(np.uint32)
    b64 = rng.integers(0, 2**63, 1 << 15, dtype=np.uint64) * np.uint64(2)
    b64 |= rng.integers(0, 2, b64.size, dtype=np.uint64)
    inputs = [b64.view(np.float64)]
    if fmt in NARROW32:
        inputs.append(b32.view(np.float32))
    for x in inputs:
        for saturate in (False, True):
            out = np.empty(x.size, fmt.code_dtype)
            nans = narrow.rne_span(x, out, 0, x.size, format_params(fmt), saturate, True)
            assert nans == int(np.isnan(x).sum())
            again = np.empty_like(out)
            assert narrow.rne_span(x, again, 0, x.size, format_params(fmt), saturate,
                                   False) == 0
            assert np.array_equal(again, out)
            want = _general(x, fmt, saturate)
            bad = np.flatnonzero(out != want)
            assert bad.size == 0, [(x[i], hex(out[i]), hex(want[i])) for i in bad[:5]]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), fmt=st.sampled_from(NARROW64))
def test_float64_near_boundaries_matches_exact(data: st.DataObject, fmt: Format) -> None:
    """float64 inputs a few ulps from ties, codes, the subnormal boundary and the overflow
    threshold: the round-to-odd step through float32 must not move a result."""
    x = data.draw(st.lists(float64_near_grid(fmt), min_size=1, max_size=16))
    arr = np.array(x, np.float64)
    got = numerics.encode(arr, fmt, nan="zero")
    for v, g in zip(x, got.tolist()):
        assert g == encode_exact(v, fmt, rounding="rne", nan="zero"), (v, fmt.name, hex(g))


@pytest.mark.parametrize("name", ["e4m3fn", "bfloat16", "binary16", "e2m1fn"])
def test_float64_between_float32s(name: str) -> None:
    """Values just off a float32 tie: float32 would make them ties, float64 keeps them."""
    fmt = numerics.get_format(name)
    vals = magnitude_values(fmt)
    mids = [float((a + b) / 2) for a, b in zip(vals[:200], vals[1:201])]
    x = np.array([m * (1 + s * 2.0**-40) for m in mids for s in (1, -1)]
                 + [m + s * 2.0**-1070 for m in mids[:3] for s in (1, -1)], np.float64)
    got = numerics.encode(x, fmt)
    for v, g in zip(x.tolist(), got.tolist()):
        assert g == encode_exact(v, fmt, rounding="rne"), (v, name, hex(g))


def test_parallel_matches_serial_and_counts_nans() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    P = format_params("e2m1fn")
    a, b = np.empty(x.size, np.uint8), np.empty(x.size, np.uint8)
    assert narrow.rne_span(x, a, 0, x.size, P, False, True) == narrow.rne(x, b, P, False, True)
    assert np.array_equal(a, b)
    assert narrow.rne_span(x, a, 0, x.size, P, False, True) == int(np.isnan(x).sum())
    assert narrow.rne(x, b, P, False, False) == 0


@pytest.mark.parametrize("options", [{}, {"rounding": "rtz"}, {"rounding": "ru"},
                                     {"rounding": "sr", "rng": 1, "sr_bits": 8},
                                     {"rounding": "sr", "rng": 1, "sr_bits": 40}],
                         ids=["rne", "rtz", "ru", "sr8", "sr40"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3 * narrow.CHUNK + 11])
def test_nan_policy_still_raises_for_formats_without_nan(options: dict[str, Any], dtype: Any,
                                                         n: int) -> None:
    """Every kernel (the lanes, the branch-free bits kernel, both stochastic loops) finds
    the NaN that a format without NaN refuses, on one thread's block or several, though
    only the lanes' stochastic loop counts NaNs in the loop."""
    x = np.ones(n, dtype)
    x[n - 1] = math.nan
    with pytest.raises(ValueError, match=f"NaN at flat index {n - 1}"):
        numerics.encode(x, "e2m1fn", **options)
    codes = numerics.encode(x, "e2m1fn", nan="zero", **options)
    assert codes[:2].tolist() == [2, 2 if n > 2 else 0] and codes[-1] == 0


@pytest.mark.parametrize("fmt", [
    # tf32, the one format here with 32-bit codes, compiles the loops for them, which
    # no other test of the default tier reaches (about 7 CPU-s): the exhaustive tier
    pytest.param(f, marks=pytest.mark.exhaustive) if f.name == "tf32" else f
    for f in NARROW32 if f.name in (
        "e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "bfloat16", "binary16", "tf32", "e3m2fn")],
    ids=lambda f: f.name)
@pytest.mark.parametrize("sr_bits", [1, 3, 8, 13, 16, 23, 31])
def test_stochastic_rounding_matches_the_general_kernel(fmt: Format, sr_bits: int) -> None:
    """The lane kernel's stochastic rounding draws the same stream and rounds the same way
    as the general kernel (itself pinned to encode_exact with the same draws), in both
    compare rules, from random patterns, the grid and tiny values."""
    rng = np.random.default_rng(sr_bits)
    x = np.concatenate([
        rng.integers(0, 2**32, 1 << 14, dtype=np.uint64).astype(np.uint32).view(np.float32),
        (rng.standard_normal(1 << 14) * 8).astype(np.float32),
        (rng.standard_normal(1 << 12) * 1e-3).astype(np.float32),
        _grid_inputs(fmt)[:1 << 14] if fmt.bits <= 16 else np.zeros(0, np.float32)])
    P = format_params(fmt)
    for exact in (False, True):
        for saturate in (False, True):
            got = np.empty(x.size, fmt.code_dtype)
            want = np.empty(x.size, fmt.code_dtype)
            nans = narrow.sr_span(x, got, 0, x.size, P, saturate, np.uint64(99), sr_bits,
                                  exact)
            assert nans == int(np.isnan(x).sum())
            kcodec.encode_float_span(x, want, 0, x.size, P, 7 if exact else 6, int(saturate),
                                     np.uint64(99), sr_bits)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, [(x[i], hex(got[i]), hex(want[i])) for i in bad[:5]]


def test_stochastic_rounding_matches_exact_reference_with_its_draws() -> None:
    """Public encode (the lane kernel) against encode_exact fed the documented draws."""
    x = np.array([1.0625, -1.0625, 300.0, 0.013671875, -3e-3, 465.0, 1e-9, 2.0**-9 * 1.5],
                 np.float32)
    x = np.tile(x, 40)
    got = numerics.encode(x, "e4m3fn", rounding="sr", rng=7, sr_bits=8)
    draws = kcodec.draws(np.uint64(7), x.size, 8)
    for i, v in enumerate(x.tolist()):
        want = encode_exact(v, "e4m3fn", rounding="sr", uniform=Fraction(int(draws[i]), 256),
                            sr_bits=8)
        assert int(got[i]) == want, (i, v)


def test_stochastic_rounding_is_the_same_on_every_thread_count() -> None:
    x = (np.random.default_rng(3).standard_normal(300_000) * 8).astype(np.float32)
    P = format_params("e4m3fn")
    a, b = np.empty(x.size, np.uint8), np.empty(x.size, np.uint8)
    x[[7, 200_000]] = np.nan
    assert narrow.sr_span(x, a, 0, x.size, P, False, np.uint64(5), 8, False) == 2
    assert narrow.sr(x, b, P, False, np.uint64(5), 8, False) == 2
    assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary16_decode_by_the_processor_matches_the_references(dtype: type) -> None:
    """Every binary16 code: numpy's float16 widening (the peer) for numbers, the exact
    reference on a sample, and quiet NaNs that keep sign and payload."""
    from numerics.codec import decode_exact

    codes = np.arange(1 << 16, dtype=np.uint16)
    got = numerics.decode(codes, "binary16", dtype=dtype)
    assert got.dtype == dtype
    f16 = codes.view(np.float16)
    num = ~np.isnan(f16)
    assert np.array_equal(got[num], f16[num].astype(dtype))
    for c in range(0, 1 << 16, 97):
        if num[c]:
            assert Fraction(float(got[c])) == Fraction(decode_exact(c, "binary16"))
    bits = got[~num].astype(np.float32).view(np.uint32)
    nan_codes = codes[~num].astype(np.uint32)
    want = ((nan_codes & 0x8000) << 16) | 0x7FC00000 | ((nan_codes & 0x3FF) << 13)
    assert np.array_equal(bits, want)


@pytest.mark.skipif(not HAS_F16C, reason="the host converts binary16 in software")
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_binary16_encode_by_the_processor_matches_the_general_kernel(overflow: str) -> None:
    """binary16 encode from float32 takes the processor's conversion and its NaN and
    saturation step (``narrow._half_loop``): every float32 sign and exponent with the
    trailing bits on a stride of 1021, each binary16 value, tie and their float32
    neighbours, and NaNs with each payload bit, against the general kernel (pinned to
    the exact reference by the grid tests above), through ``encode`` on float32 and
    float64 input.  (The loop is not called directly: a call from Python with ordinary
    flags would compile a variant of it that ``encode`` never runs.)"""
    fmt = numerics.get_format("binary16")
    P = format_params(fmt)
    assert narrow._is_binary16(P)
    stride = np.arange(0, 1 << 32, 1021, dtype=np.uint64).astype(np.uint32)
    payload = np.uint32(1) << np.arange(23, dtype=np.uint32)
    nans = np.concatenate([0x7F800000 | payload, 0xFF800000 | payload])
    bits = np.concatenate([stride, _grid_inputs(fmt).view(np.uint32), nans])
    x = bits.view(np.float32)
    saturate = overflow == "saturate"
    want = _general(x, fmt, saturate)
    with np.errstate(invalid="ignore"):
        x64 = x.astype(np.float64)
    for got in (numerics.encode(x, fmt, overflow=overflow),
                numerics.encode(x64, fmt, overflow=overflow)):
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, [(hex(int(bits[i])), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "bfloat16", "binary16", "e2m1fn",
                                  "e3m2fn"])
def test_D6_round_to_odd(name: str) -> None:
    """D6 (proofs/double_rounding.md): float64 input goes through binary32 rounded to odd;
    values just off a binary32 tie of the format, binary32's odd maximum and float64s
    beyond binary32's range round as the exact reference says."""
    fmt = numerics.get_format(name)
    vals = magnitude_values(fmt)
    mids = [float((a + b) / 2) for a, b in zip(vals[:300], vals[1:301])]
    eps = [2.0**-30, 2.0**-45, 2.0**-52]
    x = [m * (1 + s * e) for m in mids for s in (1, -1) for e in eps]
    x += [3.4028234663852886e38, 3.5e38, 1e300, -1e300, 2.0**-149 * 1.5, 1e-300, -1e-300]
    arr = np.array(x, np.float64)
    got = _rne_codes(arr, format_params(fmt))
    for v, g in zip(x, got.tolist()):
        assert g == encode_exact(v, fmt, rounding="rne", nan="zero"), (v, name, hex(g))


@numba.njit(cache=False)
def _rne_codes(x: np.ndarray, P: np.ndarray) -> np.ndarray:
    """:func:`narrow.rne_code` of each float64 of ``x`` (the block quantizers' path)."""
    C = narrow.rne_constants(P, False)
    out = np.empty(x.size, np.int64)
    for i in range(x.size):
        out[i] = narrow.rne_code(x[i], C)
    return out


#: Formats at the ends of D15's conditions: the most trailing bits (``t = 18``); the
#: widest subnormal range (``emin - t = -1020``, where the quarter-quantum clamp
#: lies at float64's smallest normal); the least scaling (``k = 0`` with
#: ``emin - t = -124``) and the first scaled one (``k = 1``); a format that lies
#: far above 1 (``emin - t = 104``).
_D15_FORMATS = (
    Format(name="e8m18", exponent_bits=8, trailing_bits=18, bias=127),
    Format(name="e10m2", exponent_bits=10, trailing_bits=2, bias=1019),
    Format(name="e8m4", exponent_bits=8, trailing_bits=4, bias=121),
    Format(name="e8m4b", exponent_bits=8, trailing_bits=4, bias=122),
    Format(name="e5m6", exponent_bits=5, trailing_bits=6, bias=-109),
)


@pytest.mark.parametrize("fmt", [numerics.get_format(n) for n in (
    "e4m3fn", "e5m2", "bfloat16", "binary16", "e2m1fn", "e3m2fn", "e4m3fnuz", "binary8p3",
    "tf32")] + list(_D15_FORMATS), ids=str)
def test_D15_float64_high_word_lanes(fmt: Format) -> None:
    """D15 (proofs/double_rounding.md): float64 arrays to nearest-even in one pass of
    32-bit lanes on the high word with the low word's sticky bit.  Values of the
    format, midpoints, float64 steps off them in the high word and in the low word
    alone, the quarter-quantum clamp and its neighbours, float64 subnormals, overflow,
    infinities and NaNs, against the exact reference, with and without saturation."""
    P = format_params(fmt)
    assert narrow.fits(P, True) and narrow._high_fits(P), fmt
    q = Fraction(2) ** (fmt.emin - fmt.trailing_bits)
    vals = [Fraction(0), q, 2 * q, 3 * q, Fraction(2) ** fmt.emin - q, Fraction(2) ** fmt.emin]
    top = fmt.max_exact
    ulp_top = Fraction(2) ** (math.floor(math.log2(top)) - fmt.trailing_bits)
    vals += [top - ulp_top, top, top + ulp_top / 2, top + ulp_top]
    vals += [Fraction(2) ** e * (1 + Fraction(j, 1 << fmt.trailing_bits))
             for e in range(fmt.emin, min(fmt.emax, fmt.emin + 40) + 1) for j in (0, 1, 3)]
    base = vals + [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [q / 2, q / 4, q / 8]
    x: list[float] = []
    for b in base:
        try:
            v = float(b)
        except OverflowError:
            continue
        # whole-ulp steps (high word) and steps in the low word only (2**-40 relative)
        x += [v, nudge(v, 1), nudge(v, -1), v * (1 + 2.0**-40), v * (1 - 2.0**-40)]
    x += [5e-324, 2.0**-1022, 2.0**-1022 * (1 - 2.0**-52), 1e300, math.inf, math.nan,
          2.0**-126, 2.0**-127, 2.0**-149, 2.0**-150]
    arr = np.array([v for v in x if math.isfinite(v) and v >= 0]
                   + [math.inf, math.nan], np.float64)
    arr = np.concatenate([arr, -arr])
    for overflow in ("ieee", "saturate"):
        got = numerics.encode(arr, fmt, overflow=overflow, nan="zero")
        for v, g in zip(arr.tolist(), got.tolist()):
            if math.isnan(v):
                if fmt.has_nan:
                    assert numerics.decode(g, fmt) != numerics.decode(g, fmt), (v, hex(g))
                continue
            assert g == encode_exact(v, fmt, overflow=overflow, nan="zero"), \
                (v, str(fmt), overflow, hex(g))


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "bfloat16", "binary16", "e2m1fn",
                                  "e4m3fnuz", "binary8p3"])
@pytest.mark.parametrize("rounding", ["rtz", "ru", "rd", "rna", "rto"])
def test_D6_1_directed_modes(name: str, rounding: str) -> None:
    """D6.1 (proofs/double_rounding.md): float64 values rounded to odd at binary32
    (:func:`narrow.odd32_bits`), then in the other modes by the binary32 loop: the
    values of the format, its midpoints, both a low bit either side of each, float64s
    beyond binary32's range and below its smallest subnormal, with both signs and both
    overflow rules, round as the exact reference rounds the float64."""
    fmt = numerics.get_format(name)
    arr = _directed_cases(fmt)
    P = format_params(fmt)
    assert narrow.fits_one(P)
    bits = _odd32_codes(arr)
    for overflow in ("ieee", "saturate"):
        got = np.empty(arr.size, fmt.code_dtype)
        narrow._directed32_block(bits, got, P, overflow == "saturate", mode_code(rounding))
        for v, g in zip(arr.tolist(), got.tolist()):
            want = encode_exact(v, fmt, rounding=rounding, overflow=overflow, nan="zero")
            assert g == want, (v, name, rounding, overflow, hex(g), hex(want))


@pytest.mark.parametrize("fmt", [numerics.get_format(n) for n in (
    "e4m3fn", "e5m2", "bfloat16", "binary16", "e2m1fn", "e4m3fnuz", "binary8p3")]
    + list(_D15_FORMATS), ids=str)
@pytest.mark.parametrize("rounding", ["rtz", "ru", "rd", "rna", "rto"])
def test_D15_1_directed_modes(fmt: Format, rounding: str) -> None:
    """D15.1 (proofs/double_rounding.md): float64 arrays in the other modes, in one pass
    of 32-bit lanes on the high word with the low word's sticky bit: the cases of
    D6.1's test plus float64 steps in the low word alone, the quarter-quantum clamp
    and float64 subnormals, against the exact reference."""
    P = format_params(fmt)
    assert narrow.fits_high(P), fmt
    arr = _directed_cases(fmt)
    q = float(Fraction(2) ** (fmt.emin - fmt.trailing_bits))
    extra = [q / 4, q / 4 * (1 + 2.0**-40), q / 4 * (1 - 2.0**-40), q / 2, q / 8, 5e-324,
             2.0**-1022, 1.0 + 2.0**-40, 1.0 - 2.0**-45]
    arr = np.concatenate([arr, extra, [-v for v in extra], [math.inf, -math.inf, math.nan]])
    for overflow in ("ieee", "saturate"):
        got = numerics.encode(arr, fmt, rounding=rounding, overflow=overflow, nan="zero")
        for v, g in zip(arr.tolist(), got.tolist()):
            if math.isnan(v):
                if fmt.has_nan:
                    assert numerics.decode(g, fmt) != numerics.decode(g, fmt), (v, hex(g))
                continue
            want = encode_exact(v, fmt, rounding=rounding, overflow=overflow, nan="zero")
            assert g == want, (v, str(fmt), rounding, overflow, hex(g), hex(want))


def _directed_cases(fmt: Format) -> np.ndarray:
    """The values of ``fmt`` (its bottom and top), its midpoints, a low bit either side
    of each, float64s beyond binary32's range and below its smallest subnormal, both
    signs."""
    every = [float(v) for v in magnitude_values(fmt)] if fmt.bits <= 16 else \
        [float(Fraction(2) ** (fmt.emin - fmt.trailing_bits) * m) for m in range(90)] \
        + [fmt.max]
    vals = every[:90] + every[-10:]  # the subnormals and the bottom, and the top
    vals = [v for v in vals if math.isfinite(v)]
    mids = [(a + b) / 2 for a, b in zip(vals, vals[1:]) if b > a]
    x = [p * (1 + s * e) for p in vals + mids for s in (1, -1) for e in (0, 2.0**-35, 2.0**-52)]
    x += [3.4028234663852886e38, 3.5e38, 1e300, 2.0**-149 * 1.5, 1e-300, float(fmt.max) * 1.01]
    return np.array(x + [-v for v in x], np.float64)


@numba.njit(cache=False)
def _odd32_codes(x: np.ndarray) -> np.ndarray:
    """:func:`narrow.odd32_bits` of each float64 of ``x``."""
    out = np.empty(x.size, np.uint32)
    for i in range(x.size):
        out[i] = narrow.odd32_bits(x[i])
    return out


def _odd32_exact(v: float) -> int | None:
    """The float32 bits of ``v`` rounded to odd, from Fractions: the float32 toward zero
    (float32's largest finite value beyond it) with its last bit set when inexact.
    None for a NaN."""
    if math.isnan(v):
        return None
    sign = 0x80000000 if math.copysign(1.0, v) < 0 else 0
    if math.isinf(v):
        return sign | 0x7F800000
    a = abs(Fraction(v))
    if a >= 2**128:
        return sign | 0x7F7FFFFF
    e = max(a.numerator.bit_length() - a.denominator.bit_length() - 1, -126)
    while e < 127 and Fraction(2) ** (e + 1) <= a:
        e += 1
    while e > -126 and Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (e - 23)
    n = math.floor(a / quantum)
    bits = int(np.float32(float(n * quantum)).view(np.uint32))
    return sign | bits | (1 if n * quantum != a else 0)


def test_D6_odd32_matches_the_exact_rounding_to_odd() -> None:
    """The float64 -> binary32 rounding to odd that D6 relies on
    (:func:`narrow.odd32_bits`, the block quantizers' step), against Fractions: random
    float64 patterns of every class, values at and around float32's normal range (its
    ends), zeros, float64 subnormals, infinities and NaNs; in loops of sizes around the
    vector widths."""
    rng = np.random.default_rng(64)
    edges = [2.0**-126, 2.0**-127, 2.0**-149, 2.0**-150, 2.0**128, 3.4028234663852886e38,
             2.0**128 * (1 - 2.0**-25), 5e-324, 2.0**-1022, 1.0, 1.5]
    near = [v * (1 + s * 2.0**-52) for v in edges for s in (-1, 0, 1)]
    specials = near + [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 1e-300, 1e300]
    patterns = rng.integers(0, 2**64, 3000, dtype=np.uint64).view(np.float64)
    # exponents spread over float32's range and a little beyond, random significands
    ordinary = np.ldexp(rng.uniform(1, 2, 3000), rng.integers(-130, 130, 3000))
    ordinary *= rng.choice([-1.0, 1.0], 3000)
    # float32s plus a half, a quarter or a 2**-29th of their spacing (one dropped bit set)
    inside = ordinary[np.abs(ordinary) < 2.0**127]
    f32 = inside.astype(np.float32).astype(np.float64)
    spacing = np.spacing(np.abs(inside.astype(np.float32))).astype(np.float64)
    offsets = [f32 + spacing * 2.0**-k * np.sign(f32) for k in (1, 2, 29)]
    cases = [np.array(specials + [-v for v in specials]), patterns, ordinary,
             *offsets, ordinary[:37], ordinary[:8],
             np.concatenate([ordinary[:100], [5e-324]]), np.zeros(0)]
    for x in cases:
        bits = _odd32_codes(np.ascontiguousarray(x))
        for v, b in zip(x.tolist(), bits.tolist()):
            want = _odd32_exact(v)
            if want is None:
                assert np.isnan(np.uint32(b).view(np.float32)), (v, hex(b))
                assert (b >> 31) == (1 if math.copysign(1.0, v) < 0 else 0), (v, hex(b))
            else:
                assert b == want, (v, hex(b), hex(want))


def test_the_lanes_turn_away_a_format_whose_overflow_code_is_not_next_to_max() -> None:
    """The nearest-even loop clamps a magnitude at the code beyond max, so a format with
    -0 whose code beyond max is neither max nor max + 1 must take the general kernel.
    No format the constructor accepts is one; this one has an IEEE NaN and no
    infinity, so its overflow code is the quiet NaN, max + 2."""
    from numerics.kernels.rounding import INFMAG, MAXMAG

    P = format_params("e5m2").copy()
    assert narrow.fits(P, False) and narrow._tail_shape(P, False) >= 0
    P[INFMAG] = -1
    assert narrow._tail_shape(P, False) == -1
    assert not narrow.fits(P, False) and not narrow.fits(P, True)
    assert narrow._tail_shape(P, True) >= 0  # saturating, the code beyond max is max
    assert int(P[MAXMAG]) == 0x7B


@pytest.mark.parametrize("name", ["e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz", "binary8p3"])
@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.exhaustive  # (the keep shape called directly: 3 CPU-s of compiling)
def test_formats_without_negative_zero_take_a_clamp_and_agree_with_the_keep_shape(
        name: str, saturate: bool) -> None:
    """The formats without -0 take the clamp shapes of the nearest-even loop (the keep
    shape streamed memory four times slower), and both shapes give the same codes on
    the grid, so the keep shape, left for formats the clamps do not fit, stays right."""
    fmt = numerics.get_format(name)
    P = format_params(fmt)
    shape = narrow._tail_shape(P, saturate)
    assert shape in (narrow._TAIL_PLUS_ZERO, narrow._TAIL_PLUS_ZERO_NAN)
    x = _grid_inputs(fmt).view(np.uint32)
    clamp = np.empty(x.size, fmt.code_dtype)
    keep = np.empty(x.size, fmt.code_dtype)
    narrow._rne32_block(x, clamp, P, saturate, False)
    narrow._rne32_loop(x, keep, P, saturate, narrow._GENERAL, narrow._TAIL_KEEP, False)
    assert np.array_equal(clamp, keep)
    assert np.array_equal(clamp, _general(x.view(np.float32), fmt, saturate))

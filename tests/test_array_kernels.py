"""The one-pass kernels behind array calls of ulp / next_up / next_down
(numerics.kernels.ulp) and round_to (numerics.kernels.narrow.round_rne).

* ulp against the Fraction definition (tests/ulp_reference.py) and, bit for bit, the
  float64 formulas numerics.ulp used before (NaN signs included);
* next_up / next_down against the sorted line of every value of each format of at most
  16 bits (every code, float32 and float64 input, the sign of zero) and, bit for bit, the
  float64 formulas on boundary inputs of every format; which inputs are rejected (and
  the message) against the formulas' representability mask;
* round_to's fused kernel against the exact reference (numerics.codec.encode_exact, then
  the value of the code) on every code's neighbourhood of the 8-bit formats and
  boundary inputs of the 16-bit ones, and against decode(encode(...)) bit for bit;
  its float32 value loop (no code formed) on random float32 patterns of every class
  as well (all 2**32 in the exhaustive tier);
* the parallel drivers against the serial ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_core import ALL_FORMATS, float64_near_grid, nudge
from ulp_reference import (
    exact_ulp,
    formula_next,
    formula_representable,
    formula_ulp,
    line_next,
)

import numerics
from numerics.codec import decode_exact, encode_exact
from numerics.encoding import _fits_float32
from numerics.formats import Format
from numerics.kernels import narrow
from numerics.kernels import ulp as kernels
from numerics.kernels.rounding import format_params

SMALL = [f for f in ALL_FORMATS if f.bits <= 16]
BYTE = [f for f in ALL_FORMATS if f.bits <= 8]
FUSED = [f for f in SMALL if narrow.fits(format_params(f), True)]
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 5e-324, -5e-324,
            2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308]


def bits(a: Any) -> np.ndarray:
    return np.asarray(a, np.float64).view(np.uint64)


def assert_bits(got: Any, want: Any) -> None:
    g, w = bits(got), bits(want)
    bad = np.flatnonzero(g.ravel() != w.ravel())
    assert not bad.size, (bad[:5], np.asarray(got).ravel()[bad[:5]],
                          np.asarray(want).ravel()[bad[:5]])


def boundaries(fmt: Format) -> np.ndarray:
    """Zero, the subnormal steps, every binade edge and its neighbours, max and past it,
    the specials, and their float64 neighbours, with both signs."""
    q0 = fmt.smallest_subnormal
    base = [0.0, q0, 2 * q0, 3 * q0, fmt.smallest_normal, fmt.max, 2 * fmt.max]
    for e in range(max(fmt.emin - fmt.trailing_bits - 2, -1074), min(fmt.emax + 2, 1023) + 1):
        p = 2.0**e
        q = 2.0 ** (max(e, fmt.emin) - fmt.trailing_bits)
        base += [p, p + q, p - q / 2 if e > fmt.emin else p - q, 1.5 * p]
    out = []
    for v in base:
        if math.isfinite(v):
            out += [v, nudge(v, 1), nudge(v, -1)]
    vals = np.array(out + [-v for v in out] + SPECIALS)
    return vals


# ------------------------------------------------------------------ ulp
@pytest.mark.parametrize("fmt", ALL_FORMATS, ids=lambda f: f.name)
def test_ulp_boundaries(fmt: Format) -> None:
    x = boundaries(fmt)
    got = numerics.ulp(x, fmt)
    assert_bits(got, formula_ulp(x, fmt))
    assert_bits(got, [exact_ulp(v, fmt) for v in x.tolist()])
    x32 = x[np.abs(x) <= 3.4028234663852886e38].astype(np.float32)
    assert_bits(numerics.ulp(x32, fmt), formula_ulp(x32.astype(np.float64), fmt))
    assert_bits(numerics.ulp(x.reshape(-1, 1)[::2], fmt), formula_ulp(x[::2], fmt).reshape(-1, 1))


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(ALL_FORMATS),
       xs=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30))
def test_ulp_any_float(fmt: Format, xs: list[float]) -> None:
    x = np.array(xs)
    got = numerics.ulp(x, fmt)
    assert_bits(got, formula_ulp(x, fmt))
    for v, g in zip(xs, got.tolist()):
        want = exact_ulp(v, fmt)
        assert g == want or (math.isnan(g) and math.isnan(want))


# ------------------------------------------------------------------ next_up / next_down
def every_value(fmt: Format) -> np.ndarray:
    """Every code's value (NaN codes included), from decode."""
    return numerics.decode(np.arange(fmt.num_codes, dtype=fmt.code_dtype), fmt)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
@pytest.mark.parametrize("step", ["next_up", "next_down"])
def test_next_every_code_against_the_line(fmt: Format, step: str) -> None:
    direction = 1 if step == "next_up" else -1
    vals = every_value(fmt)
    got = getattr(numerics, step)(vals, fmt)
    for v, g in zip(vals.tolist(), got.tolist()):
        want = line_next(v, fmt, direction)
        assert (g == want and math.copysign(1, g) == math.copysign(1, want)) or (
            math.isnan(g) and math.isnan(want)), (fmt.name, step, v, g, want)
    assert_bits(got, formula_next(vals, fmt, direction))
    if _fits_float32(fmt):  # float32 input is read by the kernel directly
        assert_bits(getattr(numerics, step)(vals.astype(np.float32), fmt), got)
    assert_bits(getattr(numerics, step)(vals.reshape(-1, 2 if vals.size % 2 == 0 else 1), fmt),
                got.reshape(-1, 2 if vals.size % 2 == 0 else 1))


@pytest.mark.parametrize("fmt", ALL_FORMATS, ids=lambda f: f.name)
def test_next_boundaries_and_rejections(fmt: Format) -> None:
    x = boundaries(fmt)
    ok = formula_representable(x, fmt)
    for direction, step in ((1, numerics.next_up), (-1, numerics.next_down)):
        assert_bits(step(x[ok], fmt), formula_next(x[ok], fmt, direction))
        for i in np.flatnonzero(~ok)[:40]:
            arr = np.where(ok, x, x[ok][0])
            arr[i] = x[i]
            with pytest.raises(ValueError) as err:
                step(arr, fmt)
            assert str(err.value) == (f"Got x[{i}]={float(x[i])!r}, which is not a value "
                                      f"of {fmt.name}")
            with pytest.raises(ValueError, match=r"^Got x=.*, which is not a value of"):
                step(np.array(x[i]), fmt)


@pytest.mark.parametrize("fmt", ALL_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_next_of_the_specials(fmt: Format, dtype: Any) -> None:
    """Infinities and NaNs are values exactly where the format has them: their steps
    where it does, the error naming them where it does not (the kernels take the
    format's flags as bounds, so each flag is pinned here, both input types)."""
    top = fmt.max
    if top > float(np.finfo(dtype).max):
        pytest.skip(f"{np.dtype(dtype).name} does not hold {fmt.name}'s max")
    for step, direction in ((numerics.next_up, 1), (numerics.next_down, -1)):
        for special in (math.inf, -math.inf, math.nan):
            if special == -math.inf and not fmt.signed:
                continue
            x = np.array([top, special], dtype)
            valid = fmt.has_nan if math.isnan(special) else fmt.has_infinity
            if not valid:
                with pytest.raises(ValueError, match=r"^Got x\[1\]=(-?inf|nan), which is not"):
                    step(x, fmt)
                continue
            got = float(step(x, fmt)[1])
            if math.isnan(special):
                assert math.isnan(got)
            elif special * direction > 0:  # stepping away from the line: stays
                assert got == special
            else:  # stepping in: the end of the finite values
                assert got == (-top if special < 0 else top)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), fmt=st.sampled_from(ALL_FORMATS), up=st.booleans())
def test_next_near_the_grid(data: st.DataObject, fmt: Format, up: bool) -> None:
    xs = data.draw(st.lists(float64_near_grid(fmt), min_size=1, max_size=20))
    x = np.array(xs)
    ok = formula_representable(x, fmt)
    step, direction = (numerics.next_up, 1) if up else (numerics.next_down, -1)
    if ok.all():
        assert_bits(step(x, fmt), formula_next(x, fmt, direction))
    else:
        first = int(np.flatnonzero(~ok)[0])
        with pytest.raises(ValueError, match=rf"^Got x\[{first}\]="):
            step(x, fmt)
    good = x[ok]
    assert_bits(step(good, fmt), formula_next(good, fmt, direction))


def test_zero_dimensional_and_noncontiguous() -> None:
    r = numerics.next_up(np.array(1.0), "bf16")
    assert type(r) is np.float64 and r == 1.0078125
    r = numerics.ulp(np.array(1.0, np.float32), "bf16")
    assert type(r) is np.float64 and r == 2.0**-7
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert_bits(numerics.next_down(x.T, "e4m3fn"), formula_next(x.T.copy(), numerics.get_format(
        "e4m3fn"), -1))
    swapped = x.astype(">f8")
    assert_bits(numerics.next_up(swapped, "bf16"), numerics.next_up(x, "bf16"))


def test_parallel_drivers_match_serial() -> None:
    rng = np.random.default_rng(5)
    for name in ("bfloat16", "e4m3fn", "e8m0fnu", "binary64"):
        fmt = numerics.get_format(name)
        Q = kernels.format_ulp_params(fmt)
        n = 3 * kernels.CHUNK + 17
        x = rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)
        if fmt.bits <= 16:
            x = numerics.round_to(np.abs(x) if not fmt.signed else x, fmt, overflow="saturate")
        x[5] = 0.1  # one value that is not representable (everywhere but binary64)
        a, b = np.empty(n), np.empty(n)
        kernels.ulp_span(x, a, 0, n, Q)
        kernels.ulp(x, b, Q)
        assert_bits(a, b)
        for direction in (1, -1):
            bad_s = kernels.next_span(x, a, 0, n, Q, direction)
            bad_p = kernels.next_value(x, b, Q, direction)
            assert bad_s == bad_p == int((~formula_representable(x, fmt)).sum())
            assert_bits(a, b)


# ------------------------------------------------------------------ round_to
def reference_round(xs: list[float], fmt: Format, **options: Any) -> np.ndarray:
    """decode_exact(encode_exact(x)) as float64 (NaN as decode gives it)."""
    table = numerics.decode(np.arange(fmt.num_codes, dtype=fmt.code_dtype), fmt)
    return np.array([table[encode_exact(v, fmt, **options)] for v in xs])


def around_every_code(fmt: Format) -> np.ndarray:
    vals = every_value(fmt)
    vals = np.unique(vals[np.isfinite(vals)])
    mids = (vals[1:] + vals[:-1]) / 2
    pts = np.concatenate([vals, mids, [fmt.max * 2, fmt.max + fmt.max / 16]])
    with np.errstate(over="ignore"):
        near = np.concatenate([pts, np.nextafter(pts, np.inf), np.nextafter(pts, -np.inf)])
    near = np.concatenate([near, -near, [math.inf, -math.inf, 0.0, -0.0, 5e-324]])
    return near


@pytest.mark.parametrize("fmt", [f for f in FUSED if f.bits <= 8], ids=lambda f: f.name)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_round_to_around_every_code(fmt: Format, overflow: str) -> None:
    x = around_every_code(fmt)
    got = numerics.round_to(x, fmt, overflow=overflow)
    assert_bits(got, reference_round(x.tolist(), fmt, overflow=overflow))
    assert_bits(got, numerics.decode(numerics.encode(x, fmt, overflow=overflow), fmt))
    x32 = x[np.abs(x) < 3e38].astype(np.float32)
    assert_bits(numerics.round_to(x32, fmt, overflow=overflow),
                reference_round(x32.astype(np.float64).tolist(), fmt, overflow=overflow))
    if _fits_float32(fmt):
        got32 = numerics.round_to(x, fmt, overflow=overflow, dtype=np.float32)
        assert got32.dtype == np.float32
        assert_bits(got32.astype(np.float64), got)


@pytest.mark.parametrize("fmt", [f for f in FUSED if f.bits > 8], ids=lambda f: f.name)
def test_round_to_16bit_every_code(fmt: Format) -> None:
    x = around_every_code(fmt)
    got = numerics.round_to(x, fmt)
    assert_bits(got, numerics.decode(numerics.encode(x, fmt, rounding="rne"), fmt))
    sample = x[:: max(1, x.size // 3000)]
    assert_bits(numerics.round_to(sample, fmt), reference_round(sample.tolist(), fmt))
    x32 = x[np.abs(x) < 3e38].astype(np.float32)
    assert_bits(numerics.round_to(x32, fmt, dtype=np.float32),
                numerics.decode(numerics.encode(x32, fmt), fmt, dtype=np.float32))


FUSED32 = [f for f in SMALL if narrow.fits(format_params(f), False)]


def float32_patterns(fmt: Format, rng: np.random.Generator) -> np.ndarray:
    """Random float32 bit patterns (every class: NaNs with payloads, infinities,
    subnormals), the neighbourhood of every value of ``fmt`` and of its midpoints, and
    the float32 extremes, both signs."""
    vals = every_value(fmt)
    vals = np.unique(np.abs(vals[np.isfinite(vals)])).astype(np.float32)
    with np.errstate(over="ignore"):
        mids = ((vals[1:].astype(np.float64) + vals[:-1]) / 2).astype(np.float32)
        pts = np.concatenate([vals, mids, np.array([fmt.max * 2, 3.4e38, np.inf, np.nan,
                                                    1e-45, 1e-40, 1.1754942e-38],
                                                   np.float32)])
        near = np.concatenate([pts, np.nextafter(pts, np.float32(np.inf)),
                               np.nextafter(pts, np.float32(0))])
    rand = rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([near, -near, rand.view(np.float32)])
    return x


@pytest.mark.parametrize("fmt", FUSED32, ids=lambda f: f.name)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_round_to_float32_input_in_lanes(fmt: Format, overflow: str) -> None:
    """float32 input takes narrow._round32_loop: bit for bit decode(encode(x)), as
    float32 and float64, NaN bits and the sign of zero included, and the exact
    reference on a sample."""
    x = float32_patterns(fmt, np.random.default_rng(fmt.bits))
    with np.errstate(invalid="ignore"):
        codes = numerics.encode(x, fmt, overflow=overflow, nan="zero")
        got = numerics.round_to(x, fmt, overflow=overflow, nan="zero")
    assert got.dtype == np.float64
    assert_bits(got, numerics.decode(codes, fmt))
    if _fits_float32(fmt):
        got32 = numerics.round_to(x, fmt, overflow=overflow, nan="zero", dtype=np.float32)
        want32 = numerics.decode(codes, fmt, dtype=np.float32)
        assert got32.dtype == np.float32
        assert np.array_equal(got32.view(np.uint32), want32.view(np.uint32))
    with np.errstate(invalid="ignore"):  # signalling NaNs quieten
        sample = x[:: max(1, x.size // 1500)].astype(np.float64).tolist()
    assert_bits(got[:: max(1, x.size // 1500)],
                reference_round(sample, fmt, overflow=overflow, nan="zero"))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), fmt=st.sampled_from(FUSED), saturate=st.booleans())
def test_round_to_near_the_grid(data: st.DataObject, fmt: Format, saturate: bool) -> None:
    xs = data.draw(st.lists(float64_near_grid(fmt), min_size=1, max_size=20))
    overflow = "saturate" if saturate else "ieee"
    nan = "zero" if not fmt.has_nan else "raise"
    x = np.array(xs)
    got = numerics.round_to(x, fmt, overflow=overflow, nan=nan)
    assert_bits(got, reference_round(xs, fmt, overflow=overflow, nan=nan))
    assert_bits(numerics.round_to(x.reshape(1, -1), fmt, overflow=overflow, nan=nan),
                got.reshape(1, -1))


def test_round_to_nan_and_arguments() -> None:
    x = np.array([1.0, math.nan])
    with pytest.raises(ValueError, match="NaN at flat index 1") as fast:
        numerics.round_to(x, "e2m1fn")
    with pytest.raises(ValueError) as general:
        numerics.decode(numerics.encode(x, "e2m1fn"), "e2m1fn")
    assert str(fast.value) == str(general.value)
    assert numerics.round_to(x, "e2m1fn", nan="zero").tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="float32 for format binary64"):
        numerics.round_to(x, "binary64", dtype=np.float32)
    with pytest.raises(ValueError, match="nan="):
        numerics.round_to(x, "bf16", nan="keep")
    with pytest.raises(ValueError):
        numerics.round_to(x, "bf16", overflow="wrap")
    with pytest.raises(TypeError):
        numerics.round_to(x, "bf16", color="red")
    # other options and layouts take the general path: the same values
    assert_bits(numerics.round_to(x[::-1], "bf16"), numerics.round_to(x[::-1].copy(), "bf16"))
    assert numerics.round_to(np.array(0.1), "bf16").shape == ()
    r = numerics.round_to(np.array([0.1, -0.1], np.float32), "e5m2", dtype=np.float32)
    assert r.dtype == np.float32 and r.tolist() == [0.09375, -0.09375]


def test_fused_parallel_matches_serial() -> None:
    rng = np.random.default_rng(9)
    for name in ("bfloat16", "e4m3fn", "binary16"):
        fmt = numerics.get_format(name)
        P = format_params(fmt)
        table = numerics.decode(np.arange(fmt.num_codes, dtype=fmt.code_dtype), fmt)
        table.setflags(write=False)  # (as round_to passes it: one compiled signature)
        n = 2 * narrow.CHUNK + 5001
        x = rng.standard_normal(n) * 2.0 ** rng.integers(-30, 30, n)
        x[7] = math.nan
        for arr in (x, x.astype(np.float32)):
            a, b = np.empty(n), np.empty(n)
            assert narrow.round_rne_span(arr, a, 0, arr.size, P, False, table, True) == 1
            assert narrow.round_rne(arr, b, P, False, table, True) == 1
            assert_bits(a, b)
            assert_bits(a, numerics.decode(numerics.encode(arr, fmt, nan="zero"), fmt))


def test_decode_exact_agrees_with_the_table() -> None:
    fmt = numerics.get_format("e4m3fn")
    table = numerics.decode(np.arange(256, dtype=np.uint8), fmt)
    for c in range(256):
        v = decode_exact(c, fmt)
        assert (isinstance(v, float) and math.isnan(v) and math.isnan(table[c])) or \
            float(v) == table[c]


# ------------------------------------------------------------------ the value check
def _check_each(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Per element: 1 where the operand check finds ``x[i]`` outside ``fmt``, else 0
    (numerics.kernels.ulp's count on one-element slices, so float32 ``x`` takes the
    32-bit lanes where the format allows and float64 ``x`` the float64 test)."""
    Q = kernels.format_ulp_params(fmt)
    return np.array([kernels.first_unrepresentable(x[i:i + 1], Q) + 1 for i in range(x.size)])


def _float32_probes(fmt: Format, rng: np.random.Generator) -> np.ndarray:
    """float32 inputs for the value check: every finite value of ``fmt`` that binary32
    holds, the midpoints between neighbours (the bit just below the format's grid set),
    both binary32 neighbours of each value, halves and threes of the smallest
    subnormal, binary32's extremes and specials, and random bit patterns."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = (every_value(fmt) if fmt.bits <= 16 else
             rng.standard_normal(4000) * 2.0 ** rng.integers(-140, 120, 4000)).astype(np.float32)
    v = np.unique(v[np.isfinite(v)])
    mid = (v[:-1] + (v[1:] - v[:-1]) / 2).astype(np.float32)  # midpoints: one bit below
    sub = np.float32(fmt.smallest_subnormal if fmt.subnormals else fmt.smallest_normal)
    extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, sub / 2, sub * 1.5, sub * 3,
                      1.4e-45, -1.4e-45, 1.1754944e-38, 3.4028235e38], np.float32)
    randoms = rng.integers(0, 1 << 32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    inf = np.float32(np.inf)
    return np.concatenate([v, mid, -mid, np.nextafter(v, inf), np.nextafter(v, -inf), extra,
                           randoms])


@pytest.mark.parametrize("fmt", [f for f in SMALL if f.float32_exact] +
                         [numerics.get_format("binary32")], ids=lambda f: f.name)
def test_value_check_in_binary32_lanes(fmt: Format) -> None:
    """The operand check of ``numerics.ops`` (is every element a value of the format?)
    on float32 input runs in 32-bit lanes for a format whose values are binary32
    numbers (numerics.kernels.ulp._representable32): element for element it agrees
    with the float64 test on the same numbers, and with decode's values."""
    x = _float32_probes(fmt, np.random.default_rng(fmt.bits * 1000 + fmt.trailing_bits))
    got = _check_each(x, fmt)
    with np.errstate(invalid="ignore"):  # (signalling NaN patterns among the probes)
        x64 = x.astype(np.float64)
    assert np.array_equal(got, _check_each(x64, fmt)), fmt.name
    assert got.any() == (fmt.name != "binary32") and not got.all()  # (binary32: all pass)
    if fmt.bits <= 16:  # every value of the format passes
        with np.errstate(over="ignore", invalid="ignore"):
            values = every_value(fmt)
        assert not _check_each(values[np.isfinite(values)].astype(np.float32), fmt).any()

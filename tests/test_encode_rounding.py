"""The shared scalar rounding kernel (numerics.kernels.rounding) against the exact reference.

* Every code neighbourhood of every format up to 8 bits (and a sweep of codes of the
  16-bit ones): each value, the midpoints between neighbours, and both a hair above
  and below each (as float64 pairs ``hi + lo``), in every deterministic mode and both
  overflow rules, plus stochastic rounding with draws at and around the fraction.
* Hypothesis on pairs ``hi + lo`` aimed at ties, near-ties, binade edges, subnormals
  and overflow, for every format including binary64 itself (where ``lo`` decides ties).
* round_scaled on integer significands with a sticky bit; decode_one on every code.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_core import ALL_FORMATS, DETERMINISTIC, float64_near_grid

from numerics.codec import decode_exact, encode_exact, floor_log2
from numerics.formats import Format, get_format
from numerics.kernels import rounding as kr

MODES = (*DETERMINISTIC,)
SMALL = tuple(f for f in ALL_FORMATS if f.bits <= 8)
WIDE = tuple(f for f in ALL_FORMATS if f.bits > 8)


@numba.njit(cache=True)
def _round_pairs(hi: np.ndarray, lo: np.ndarray, P: np.ndarray, mode: int, overflow: int,
                 u: np.ndarray, ubits: int) -> np.ndarray:
    out = np.empty(hi.size, np.uint64)
    for i in range(hi.size):
        out[i] = kr.round_pair(hi[i], lo[i], P, mode, overflow, u[i], ubits)
    return out


def kernel(pairs: list[tuple[float, float]], fmt: Format, rounding: str, overflow: str,
           draws: list[int] | None = None, ubits: int = 1, exact_sr: bool = False) -> list[int]:
    hi = np.array([p[0] for p in pairs], np.float64)
    lo = np.array([p[1] for p in pairs], np.float64)
    u = np.array(draws if draws is not None else [0] * len(pairs), np.uint64)
    mode = kr.MODE_SR_EXACT if exact_sr else kr.mode_code(rounding)
    return [int(c) for c in _round_pairs(hi, lo, kr.format_params(fmt), mode,
                                         kr.overflow_code(overflow), u, ubits)]


def exact_value(hi: float, lo: float) -> float | Fraction:
    """The exact input hi + lo for the reference (floats kept where the sign of zero or
    a special matters)."""
    if not math.isfinite(hi) or (lo == 0 and hi == 0):
        return hi
    if hi == 0:
        return lo if lo == 0 else Fraction(lo)
    return Fraction(hi) + Fraction(lo)


def reference(pairs: list[tuple[float, float]], fmt: Format, rounding: str, overflow: str,
              draws: list[int] | None = None, ubits: int = 1,
              exact_sr: bool = False) -> list[int]:
    out = []
    for i, (hi, lo) in enumerate(pairs):
        kw: dict[str, object] = {}
        if rounding == "sr":
            kw = {"uniform": Fraction(draws[i], 2**ubits),  # type: ignore[index]
                  "sr_bits": None if exact_sr else ubits}
        out.append(encode_exact(exact_value(hi, lo), fmt, rounding=rounding,
                                overflow=overflow, nan="zero", **kw))  # type: ignore[arg-type]
    return out


def below_half_spacing(hi: float, frac: float, toward: float) -> float:
    """A residual of ``frac`` times the float64 spacing at ``hi`` on ``toward``'s side,
    which keeps ``hi`` a nearest float64 of ``hi + lo`` for ``frac <= 1/2``."""
    with np.errstate(over="ignore"):
        nxt = float(np.nextafter(hi, toward))
    if math.isinf(nxt):  # past binary64's max: the spacing continues
        nxt = hi + math.copysign(math.ulp(hi), toward)
        return math.copysign(math.ulp(hi) * frac, toward - hi)
    step = abs(nxt - hi)
    return math.copysign(step * frac, toward - hi) if step else 0.0


def neighbourhood(fmt: Format, mags: range) -> list[tuple[float, float]]:
    """Pairs at, between and a hair around the values of the given magnitude codes."""
    pairs: list[tuple[float, float]] = []
    for mag in mags:
        v = decode_exact(mag, fmt)
        w = decode_exact(mag + 1, fmt) if mag + 1 <= fmt.max_finite_code else None
        if isinstance(v, float):
            continue
        points = [float(v)]
        if w is not None and not isinstance(w, float):
            mid = (v + w) / 2
            if Fraction(float(mid)) == mid:
                points.append(float(mid))
            else:  # binary64-like: the midpoint is hi + half a spacing
                pairs.append((float(v), float(mid - v)))
        else:  # beyond max: the virtual next value
            q = Fraction(2) ** (math.floor(math.log2(v)) - fmt.trailing_bits)
            if fmt.trailing_bits < 52:
                points += [float(v + q / 2), float(v + q)]
            else:  # past binary64's max: the pair max + half a quantum
                pairs += [(float(v), float(q / 2)), (-float(v), -float(q / 2))]
        for p in points:
            for s in (1.0, -1.0):
                x = s * p
                pairs.append((x, 0.0))
                for toward, frac in ((math.inf, 0.5), (-math.inf, 0.5), (math.inf, 2.0**-30),
                                     (-math.inf, 2.0**-30)):
                    pairs.append((x, below_half_spacing(x, frac, toward)))
    return pairs


SPECIALS = [(math.nan, 0.0), (-math.nan, 0.0), (math.inf, 0.0), (-math.inf, 0.0), (0.0, 0.0),
            (-0.0, 0.0), (0.0, 5e-324), (-0.0, -5e-324), (5e-324, 0.0), (-5e-324, 0.0),
            (1.7976931348623157e308, 0.0), (-1.7976931348623157e308, 1e292), (1e-300, 0.0)]


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_every_code_neighbourhood_small(fmt: Format, overflow: str) -> None:
    pairs = neighbourhood(fmt, range(fmt.max_finite_code + 1)) + SPECIALS
    for rounding in MODES:
        want = reference(pairs, fmt, rounding, overflow)
        got = kernel(pairs, fmt, rounding, overflow)
        bad = [(pairs[i], hex(want[i]), hex(got[i])) for i in range(len(pairs))
               if want[i] != got[i]]
        assert not bad, (fmt.name, rounding, overflow, len(bad), bad[:5])


@pytest.mark.parametrize("fmt", WIDE, ids=lambda f: f.name)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_code_neighbourhoods_wide(fmt: Format, overflow: str) -> None:
    top = fmt.max_finite_code
    t = fmt.trailing_bits
    mags = [*range(0, 4), *range((1 << t) - 2, (1 << t) + 3), *range(top - 3, top + 1),
            *range(top // 2 - 2, top // 2 + 2)]
    pairs = [p for m in sorted(set(mags)) for p in neighbourhood(fmt, range(m, m + 1))] + SPECIALS
    for rounding in MODES:
        want = reference(pairs, fmt, rounding, overflow)
        got = kernel(pairs, fmt, rounding, overflow)
        bad = [(pairs[i], hex(want[i]), hex(got[i])) for i in range(len(pairs))
               if want[i] != got[i]]
        assert not bad, (fmt.name, rounding, overflow, len(bad), bad[:5])


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
@pytest.mark.parametrize("ubits", [1, 3, 8, 64])
def test_stochastic_every_code_small(fmt: Format, ubits: int) -> None:
    """Draws at, just under and just over the truncated fraction: both compare rules."""
    pairs = neighbourhood(fmt, range(0, fmt.max_finite_code + 1, 3)) + SPECIALS
    rng = np.random.default_rng(ubits)
    for exact_sr in (False, True):
        draws = [int(d) for d in rng.integers(0, 2**ubits, len(pairs), dtype=np.uint64)]
        # put some draws exactly at F = floor(frac * 2**ubits) and one below it
        for i, (hi, lo) in enumerate(pairs):
            if i % 3 == 0 and math.isfinite(hi) and hi != 0:
                below = encode_exact(exact_value(hi, lo), fmt, rounding="rtz", nan="zero")
                lower = decode_exact(below, fmt)
                upper_code = below + 1
                if isinstance(lower, Fraction) and upper_code <= fmt.max_finite_code:
                    upper = decode_exact(upper_code, fmt)
                    if isinstance(upper, Fraction):
                        frac = (abs(Fraction(exact_value(hi, lo))) - abs(lower)) / (
                            abs(upper) - abs(lower))
                        f = math.floor(frac * 2**ubits)
                        draws[i] = max(0, min(2**ubits - 1, f - (i % 2)))
        for overflow in ("ieee", "saturate"):
            want = reference(pairs, fmt, "sr", overflow, draws, ubits, exact_sr)
            got = kernel(pairs, fmt, "sr", overflow, draws, ubits, exact_sr)
            bad = [(pairs[i], draws[i], hex(want[i]), hex(got[i])) for i in range(len(pairs))
                   if want[i] != got[i]]
            assert not bad, (fmt.name, ubits, exact_sr, overflow, len(bad), bad[:5])


@st.composite
def pairs_near_grid(draw: st.DrawFn, fmt: Format) -> tuple[float, float]:
    hi = draw(float64_near_grid(fmt))
    if not math.isfinite(hi) or hi == 0:
        return hi, 0.0
    frac = draw(st.sampled_from([0.0, 0.5, 0.25, 2.0**-30, 0.4999, 2.0**-52]))
    toward = draw(st.sampled_from([math.inf, -math.inf]))
    return hi, below_half_spacing(hi, frac, toward)


@settings(max_examples=400)
@given(data=st.data(), fmt=st.sampled_from(ALL_FORMATS),
       rounding=st.sampled_from(DETERMINISTIC), overflow=st.sampled_from(["ieee", "saturate"]))
def test_pairs_match_reference(data: st.DataObject, fmt: Format, rounding: str,
                               overflow: str) -> None:
    pairs = data.draw(st.lists(pairs_near_grid(fmt), min_size=1, max_size=8))
    assert kernel(pairs, fmt, rounding, overflow) == reference(pairs, fmt, rounding, overflow)


@settings(max_examples=300)
@given(data=st.data(), fmt=st.sampled_from(ALL_FORMATS), ubits=st.sampled_from([1, 2, 8, 23, 64]),
       exact_sr=st.booleans(), overflow=st.sampled_from(["ieee", "saturate"]))
def test_stochastic_pairs_match_reference(data: st.DataObject, fmt: Format, ubits: int,
                                          exact_sr: bool, overflow: str) -> None:
    pairs = data.draw(st.lists(pairs_near_grid(fmt), min_size=1, max_size=8))
    draws = data.draw(st.lists(st.one_of(st.integers(0, 2**ubits - 1),
                                         st.sampled_from([0, 2**ubits - 1, 2**(ubits - 1)])),
                               min_size=len(pairs), max_size=len(pairs)))
    got = kernel(pairs, fmt, "sr", overflow, draws, ubits, exact_sr)
    assert got == reference(pairs, fmt, "sr", overflow, draws, ubits, exact_sr)


@numba.njit(cache=True)
def _round_scaled_many(neg: np.ndarray, sig: np.ndarray, exp: np.ndarray, sticky: np.ndarray,
                       P: np.ndarray, mode: int, overflow: int) -> np.ndarray:
    out = np.empty(sig.size, np.uint64)
    for i in range(sig.size):
        out[i] = kr.round_scaled(neg[i], sig[i], exp[i], sticky[i], P, mode, overflow,
                                 np.uint64(0), 1)
    return out


@settings(max_examples=300)
@given(data=st.data(), fmt=st.sampled_from(ALL_FORMATS),
       rounding=st.sampled_from(DETERMINISTIC), overflow=st.sampled_from(["ieee", "saturate"]))
def test_round_scaled_matches_reference(data: st.DataObject, fmt: Format, rounding: str,
                                        overflow: str) -> None:
    """(sig + eps) * 2**exp with sig carrying two bits below the quantum: the sticky
    bit stands for any eps in (0, 1), so the reference takes eps = 1/2."""
    n = data.draw(st.integers(1, 6))
    neg, sig, exp, sticky, want = [], [], [], [], []
    for _ in range(n):
        s = data.draw(st.one_of(st.integers(1, 2**64 - 1), st.integers(1, 2**12)))
        # the target quantum of s * 2**e: keep at least 2 bits below it
        e = data.draw(st.integers(fmt.emin - fmt.trailing_bits - 70, fmt.emax + 3))
        value = Fraction(s) * Fraction(2) ** e
        quantum_exp = max(floor_log2(value), fmt.emin) - fmt.trailing_bits
        sticky_bit = data.draw(st.booleans()) and quantum_exp - e >= 2
        negative = data.draw(st.booleans())
        exact = value + (Fraction(2) ** (e - 1) if sticky_bit else 0)
        neg.append(negative)
        sig.append(s)
        exp.append(e)
        sticky.append(sticky_bit)
        want.append(encode_exact(-exact if negative else exact, fmt, rounding=rounding,
                                 overflow=overflow))
    got = _round_scaled_many(np.array(neg), np.array(sig, np.uint64), np.array(exp, np.int64),
                             np.array(sticky), kr.format_params(fmt), kr.mode_code(rounding),
                             kr.overflow_code(overflow))
    assert [int(c) for c in got] == want, (fmt.name, sig, exp, sticky)


@numba.njit(cache=True)
def _decode_many(codes: np.ndarray, P: np.ndarray) -> np.ndarray:
    out = np.empty(codes.size, np.float64)
    for i in range(codes.size):
        out[i] = kr.decode_one(codes[i], P)
    return out


@pytest.mark.parametrize("fmt", ALL_FORMATS, ids=lambda f: f.name)
def test_decode_one_every_code(fmt: Format) -> None:
    if fmt.bits <= 16:
        codes = list(range(fmt.num_codes))
    else:
        rng = np.random.default_rng(0)
        codes = [int(c) for c in rng.integers(0, fmt.num_codes, 4000, dtype=np.uint64)]
        codes += [0, 1, fmt.max_finite_code, fmt.sign_mask | fmt.max_finite_code,
                  fmt.num_codes - 1, fmt.code_of_inf or 0, fmt.code_of_nan or 0]
    got = _decode_many(np.array(codes, np.uint64), kr.format_params(fmt))
    for code, g in zip(codes, got):
        want = decode_exact(code, fmt)
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(g), (fmt.name, hex(code))
            bits = int(np.float64(g).view(np.uint64))
            assert bits & (1 << 51), (fmt.name, hex(code), "NaN must be quiet")
        else:
            assert g == want and math.copysign(1, g) == math.copysign(1, float(want)), (
                fmt.name, hex(code), g, want)


def test_decode_one_nan_payload_and_sign() -> None:
    """IEEE NaNs keep sign and payload and come out quiet (IEEE 754 section 7.2)."""
    P = kr.format_params("binary16")
    got = _decode_many(np.array([0x7C01, 0xFE00, 0x7D55], np.uint64), P).view(np.uint64)
    assert [hex(int(g)) for g in got] == ["0x7ff8040000000000", "0xfff8000000000000",
                                          "0x7ffd540000000000"]
    P64 = kr.format_params("binary64")
    snan = np.array([0x7FF0000000000001], np.uint64)
    assert hex(int(_decode_many(snan, P64).view(np.uint64)[0])) == "0x7ff8000000000001"


def test_mode_and_overflow_codes_validate() -> None:
    assert [kr.mode_code(m) for m in ("rne", "rna", "rtz", "ru", "rd", "rto", "sr")] == list(
        range(7))
    with pytest.raises(ValueError, match="rounding='RNE'"):
        kr.mode_code("RNE")
    with pytest.raises(ValueError, match="overflow='clip'"):
        kr.overflow_code("clip")
    assert kr.format_params("e4m3fn") is kr.format_params(get_format("e4m3fn"))

"""Claims TOL1-TOL5 of proofs/tolerances.md, each tested by id.

Roundings come from numerics.encode (the reference being bounded), errors are
measured with exact Fractions (TOL1-TOL3) or a float64 reference with
math.fsum (TOL4, TOL5: relative error ~1e-15, inside the bounds' 2**-40 slack).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from numerics import FORMATS, decode, encode
from numerics.formats import Format, Infinity, NaNEncoding, get_format
from numerics.testing import strategies as ns
from numerics.testing.tolerances import (
    elementwise_bound,
    eta,
    gamma,
    rmsnorm_roundings,
    softmax_bound,
    unit_roundoff,
)

MODES = ["rne", "rna", "rtz", "ru", "rd"]


def _round(x: float, fmt: str, mode: str) -> float:
    return float(decode(encode(np.float64(x), fmt, rounding=mode, overflow="saturate"), fmt))


@pytest.mark.parametrize("fmt", ["e4m3fn", "e2m1fn", "bfloat16", "binary16", "e5m2"])
@pytest.mark.parametrize("mode", MODES)
def test_TOL1_one_rounding_every_code(fmt: str, mode: str) -> None:
    f = get_format(fmt)
    rnd = random.Random(f"{fmt}{mode}")
    u, e = Fraction(unit_roundoff(f, mode)), Fraction(eta(f, mode))
    codes = range(f.max_finite_code) if f.max_finite_code < 512 else \
        sorted(rnd.sample(range(f.max_finite_code), 400)) + [0, 1, (1 << f.trailing_bits) - 1]
    xs: list[Fraction] = []
    for mag in codes:
        lo, hi = f.magnitude_value(mag), f.magnitude_value(mag + 1)
        for t in (Fraction(1, 2), Fraction(rnd.randrange(1, 2**20), 2**20)):
            xs += [lo + (hi - lo) * t, -(lo + (hi - lo) * t)]
    xf = np.array([float(x) for x in xs])
    assert all(Fraction(v) == x for v, x in zip(xf.tolist(), xs))
    got = decode(encode(xf, fmt, rounding=mode, overflow="saturate"), fmt).tolist()
    worst = Fraction(0)
    for x, g in zip(xs, got):
        err = abs(Fraction(g) - x)
        bound = max(u * abs(x), e)
        assert err <= bound, (fmt, mode, float(x))
        worst = max(worst, err / bound)
    assert worst >= Fraction(1, 2)                     # attained within a factor 2


_NO_ZERO = (
    Format(name="e3m2_nozero_fn", exponent_bits=3, trailing_bits=2, bias=3, subnormals=False,
           infinity=Infinity.NONE, nan=NaNEncoding.TOP),
    Format(name="e4m3_nozero", exponent_bits=4, trailing_bits=3, bias=7, subnormals=False),
    Format(name="e4m0fnu", exponent_bits=4, trailing_bits=0, bias=7, signed=False,
           subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.TOP),
    Format(name="e3m1fnu", exponent_bits=3, trailing_bits=1, bias=3, signed=False,
           subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.TOP),
)


@pytest.mark.parametrize("fmt", [get_format(n) for n in FORMATS] + list(_NO_ZERO),
                         ids=lambda f: f.name)
def test_TOL1_below_the_smallest_value_every_format(fmt: Format) -> None:
    """TOL1 from 0 to 2**emin, where the underflow term decides: every registered format
    (e8m0fnu included) and user formats without zero, signed and unsigned (x > 0 there),
    rounded by numerics.encode in every mode and measured with exact Fractions; the bound
    is attained within a factor 2 (the old eta = 2**(emin - 1) of formats without zero
    failed: 1e-45 rounds to 2**-127 in e8m0fnu)."""
    rnd = random.Random(fmt.name)
    top = Fraction(2) ** fmt.emin
    n = 1 << fmt.trailing_bits                              # subnormal codes, with 0
    mags = sorted(set(range(min(n, 64))) | set(range(max(n - 64, 0), n)))
    sub = [fmt.magnitude_value(m) for m in mags] if fmt.has_zero else [Fraction(0)]
    sub += [top]                                            # the grid below 2**emin
    xs: list[Fraction] = [Fraction(0)] if fmt.signed else []
    for lo, hi in zip(sub, sub[1:]):
        for t in (Fraction(1, 2**20), Fraction(1, 2), 1 - Fraction(1, 2**20),
                  Fraction(rnd.randrange(1, 2**20), 2**20)):
            xs.append(lo + (hi - lo) * t)
    xs += [-x for x in xs if x] if fmt.signed else []
    xs = [x for x in xs if Fraction(float(x)) == x]         # float64 inputs, exactly
    xf = np.array([float(x) for x in xs])
    for mode in MODES + ["rto"]:
        got = decode(encode(xf, fmt, rounding=mode), fmt).astype(np.float64).tolist()
        bound = elementwise_bound(xf, fmt, rounding=mode).tolist()
        u, e = Fraction(unit_roundoff(fmt, mode)), Fraction(eta(fmt, mode))
        worst = Fraction(0)
        for x, g, b in zip(xs, got, bound):
            err = abs(Fraction(g) - x)
            assert err <= max(u * abs(x), e) <= Fraction(b), (fmt.name, mode, float(x), g)
            worst = max(worst, err / max(u * abs(x), e))
        if fmt.name != "binary64":        # there float64 inputs are values: no error
            assert worst >= Fraction(1, 2), (fmt.name, mode, float(worst))
    if not fmt.has_zero:                   # the smallest value, and zero, err by 2**emin
        assert Fraction(eta(fmt)) == top


def test_TOL1_underflow_term_of_binary64_is_not_zero() -> None:
    """binary64's 2**-1075 is below the float range: evaluated as 2**-1074, an upper
    bound, not as 0 (before: eta('binary64') was 0.0, no bound at all)."""
    assert Fraction(eta("binary64")) == Fraction(2) ** -1074
    assert Fraction(eta("binary64", "rtz")) == Fraction(2) ** -1074
    assert float(elementwise_bound([0.0], "binary64")[0]) > 0


@pytest.mark.parametrize("fmt", ["e4m3fn", "e2m1fn"])
def test_TOL2_scaled_cast(fmt: str) -> None:
    f = get_format(fmt)
    rnd = random.Random(fmt)
    for _ in range(600):
        k = rnd.randrange(-20, 21)
        s = math.ldexp(1.0, k)
        mag = rnd.randrange(f.max_finite_code)
        lo, hi = f.magnitude_value(mag), f.magnitude_value(mag + 1)
        x = (lo + (hi - lo) * Fraction(rnd.randrange(0, 2**16), 2**16)) * Fraction(s)
        xf = float(x)
        y = s * _round(xf / s, fmt, "rne")
        b = elementwise_bound(np.array([xf]), fmt, scale=s)[0]
        assert abs(Fraction(y) - x) <= Fraction(float(b)), (xf, s)
        assert abs(Fraction(y) - x) <= max(Fraction(unit_roundoff(f)) * abs(x),
                                           Fraction(eta(f)) * Fraction(s))


@given(st.lists(ns.values("binary32", min_value=0.5, max_value=2.0), min_size=1, max_size=64),
       st.sampled_from(["bfloat16", "e4m3fn", "binary16"]))
@settings(max_examples=200, deadline=None)
def test_TOL3_chain_of_products(factors: list[float], fmt: str) -> None:
    acc = np.float32(1.0)
    exact = Fraction(1)
    for v in factors:
        acc = np.float32(acc * np.float32(v))
        exact *= Fraction(v)
    got = Fraction(_round(float(acc), fmt, "rne"))
    b = elementwise_bound(np.array([float(exact)]), fmt, work_roundings=len(factors))[0]
    if exact > Fraction(get_format(fmt).max):  # the cast may overflow: nothing promised
        assert b == np.inf
        return
    assert abs(got - exact) <= Fraction(float(b))


@given(ns.values("binary32", min_value=1.0, max_value=2.0),
       ns.values("binary32", min_value=1.0, max_value=2.0))
@settings(max_examples=300, deadline=None)
def test_TOL3_reused_results_count_with_multiplicity(x1: float, x2: float) -> None:
    """TOL3's K counts along the expression tree: a = fl(x1 x2), then three squarings
    (four roundings in all) is K = 1 + 2 + 4 + 8 = 15, since a's rounding enters the
    result to the 8th power.  The bound with K = 15 holds; some inputs break K = 4."""
    a = np.float32(np.float32(x1) * np.float32(x2))
    exact = Fraction(x1) * Fraction(x2)
    for _ in range(3):
        a = np.float32(a * a)
        exact *= exact
    b = elementwise_bound(np.array([float(exact)]), "binary32", work_roundings=15)[0]
    assert abs(Fraction(float(a)) - exact) <= Fraction(float(b))


def test_TOL3_multiplicity_is_needed() -> None:
    """TOL3: counting the four roundings of the squaring chain once each (K = 4) is too
    few for some inputs: the error passes the K = 4 bound, and stays within K = 15's."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for x1, x2 in np.float32(rng.uniform(1, 2, (4000, 2))):
        a, exact = np.float32(x1 * x2), Fraction(float(x1)) * Fraction(float(x2))
        for _ in range(3):
            a, exact = np.float32(a * a), exact * exact
        b4 = elementwise_bound(np.array([float(exact)]), "binary32", work_roundings=4)[0]
        worst = max(worst, float(abs(Fraction(float(a)) - exact) / Fraction(float(b4))))
    assert worst > 1.0


def _rms_float32(x: np.ndarray, w: np.ndarray, order: int, eps: float) -> np.ndarray:
    ms = np.mean(x * x, dtype=np.float32) if order else np.float32(
        np.sum(x * x, dtype=np.float32) / np.float32(len(x)))
    v = np.float32(ms + np.float32(eps))
    if order:
        r = np.float32(np.float32(1) / np.sqrt(v))
        return (x * r) * w
    return (x / np.sqrt(v)) * w


@given(st.integers(1, 64).flatmap(lambda n: st.tuples(
    ns.arrays("binary32", n, elements=ns.values("binary32", min_value=-1e4, max_value=1e4)),
    ns.arrays("bfloat16", n, elements=ns.values("bfloat16", min_value=-8, max_value=8)))),
    st.sampled_from([0, 1]), st.sampled_from([0.0, float(np.float32(1e-6))]))
@settings(max_examples=200, deadline=None)
def test_TOL4_rmsnorm(xw: tuple[np.ndarray, np.ndarray], order: int, eps: float) -> None:
    x = xw[0].copy()
    w = xw[1].astype(np.float32)
    x[np.abs(x) < 2.0**-60] = 0             # the claim's condition: no underflow in W
    w[np.abs(w) < 2.0**-20] = 0             # (and sum x**2 / n >= 2**-126 when not 0)
    n = len(x)
    assume(eps > 0 or np.any(x != 0))
    rms = math.sqrt(math.fsum(float(v) ** 2 for v in x) / n + eps)
    ref = np.array([float(a) / rms * float(b) for a, b in zip(x, w)])
    got32 = _rms_float32(x, w, order, eps)
    got = got32.astype(ml_dtypes.bfloat16).astype(np.float64)
    bound = elementwise_bound(ref, "bfloat16", work_roundings=rmsnorm_roundings(n))
    assert np.all(np.abs(got - ref) <= bound)
    # kept in float32: the same claim with the cast to binary32 (one more rounding, exact)
    bound32 = elementwise_bound(ref, "binary32", work_roundings=rmsnorm_roundings(n))
    assert np.all(np.abs(got32.astype(np.float64) - ref) <= bound32)


@given(st.integers(1, 48).flatmap(lambda n: st.lists(
    ns.values("binary32", min_value=-100, max_value=100), min_size=n, max_size=n)))
@settings(max_examples=200, deadline=None)
def test_TOL5_softmax(logits: list[float]) -> None:
    x = np.array(logits, np.float32)
    m = np.max(x)
    e = np.exp(np.float32(x - m))                       # float32 subtraction and exp
    s = np.sum(e, dtype=np.float32)
    y32 = (e / s).astype(np.float32)
    x64 = x.astype(np.float64)
    t = [math.exp(v - float(m)) for v in x64]
    total = math.fsum(t)
    ref = np.array([v / total for v in t])
    for fmt, got in (("bfloat16", y32.astype(ml_dtypes.bfloat16).astype(np.float64)),
                     ("binary32", y32.astype(np.float64))):
        bound = softmax_bound(x[None, :], fmt)[0]
        assert np.all(np.abs(got - ref) <= bound), fmt


def test_bounds_are_not_vacuous_and_inputs_are_checked() -> None:
    assert gamma(3, 2.0**-24) == 3 * 2.0**-24 / (1 - 3 * 2.0**-24)
    assert gamma(300, 2.0**-8) == math.inf
    assert softmax_bound(np.zeros((1, 4), np.float32), "bfloat16")[0, 0] < 0.25 * 2**-8 * 1.1
    b = elementwise_bound([1.0], "bfloat16", work_roundings=rmsnorm_roundings(64))[0]
    assert b < 2**-8 * 1.01
    with pytest.raises(ValueError, match="scale="):
        elementwise_bound([1.0], "bfloat16", scale=3.0)
    with pytest.raises(ValueError, match="work_roundings=-1"):
        elementwise_bound([1.0], "bfloat16", work_roundings=-1)
    with pytest.raises(ValueError, match="rounding='RNE'"):
        unit_roundoff("bfloat16", "RNE")
    with pytest.raises(ValueError, match="NaN or infinite"):
        softmax_bound([np.inf], "bfloat16")


@pytest.mark.parametrize("fmt, alg, rounding", [("binary8p2", "kahan", "rtz"),
                                                ("binary8p1", "kahan", "rne"),
                                                ("binary8p1", "recursive", "rtz"),
                                                ("e8m0fnu", "recursive", "rd")])
def test_tolerance_for_coarse_formats(fmt: str, alg: str, rounding: str) -> None:
    """u >= 0.5 (one or two significant bits): a number or inf, not an internal error."""
    from numerics.testing import tolerance_for

    tol = tolerance_for("sum", 3, fmt, alg, rounding=rounding)
    assert tol >= 0


def test_TOL3_bound_is_infinite_where_the_cast_may_overflow() -> None:
    # before: a finite relative bound beyond max (512 in e4m3fn: 32, where the cast
    # saturates at 448 or gives NaN), and the docstring's scaled example overflowed
    f = get_format("e4m3fn")
    b = elementwise_bound(np.array([f.max, 512.0, 3.0]), f, scale=np.array([1.0, 1.0, 2.0**-8]))
    assert np.isfinite(b[0]) and b[1] == np.inf and b[2] == np.inf
    assert elementwise_bound([1e39], "bfloat16", work_roundings=2)[0] == np.inf  # work overflow

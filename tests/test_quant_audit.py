"""The independent audit of numerics.quant: one test (or a few) per finding, each against an
exact reference written here (Fraction arithmetic, Python-int SplitMix64); each failed before
its fix.  The TurboQuant findings (codebook, distortion, T3/T4) are in
tests/test_quant_turboquant.py."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sr_stream import GOLDEN, M64
from sr_stream import draw as _draw

from numerics import get_num_threads, set_num_threads
from numerics.formats import Format, Infinity, NaNEncoding, get_format
from numerics.quant import (
    TurboQuant,
    deepseek_fp8,
    element_bound,
    error_report,
    mx,
    nvfp4,
    pack,
    quantize,
    unpack,
)
from numerics.quant.quantized import Quantized


# ---------------------------------------------------------------------------------------------
# exact references
# ---------------------------------------------------------------------------------------------
def _round_up(v: Fraction) -> float:
    """The smallest float64 >= v (float(Fraction) rounds to nearest)."""
    f = float(v)
    return math.nextafter(f, math.inf) if Fraction(f) < v else f


def _exact_sqnr(x: np.ndarray, q: Quantized) -> float:
    """10 log10(sum x**2 / sum err**2) from exact rational sums."""
    d = q.dequantize()
    sig = sum(Fraction(float(v)) ** 2 for v in x)
    noise = sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(d, x))
    return 10 * (math.log10(sig.numerator * noise.denominator)
                 - math.log10(sig.denominator * noise.numerator))


# ---------------------------------------------------------------------------------------------
# 1. error_report: SQNR when the errors are far below the signal
# ---------------------------------------------------------------------------------------------
def test_error_report_sqnr_when_errors_are_1e170_below_the_signal() -> None:
    """ZeroDivisionError before: the sums were scaled by one power of two near the largest
    magnitude, so an error 1e-172 times smaller squared to 0."""
    x = np.array([448.0, 1e-170])
    q = quantize(x, "e4m3fn", scale_format="e8m0fnu")
    r = error_report(x, q)
    assert r.sqnr_db == pytest.approx(_exact_sqnr(x, q), abs=1e-9)
    assert 3453.0 < r.sqnr_db < 3453.1
    b = np.zeros(32)
    b[0], b[1] = 4.0, 1e-170
    qb = mx(b, "mxfp4_e2m1")
    rb = error_report(b, qb)
    assert rb.sqnr_db == pytest.approx(_exact_sqnr(b, qb), abs=1e-9)
    # inf only when the error is exactly zero; -inf when the signal is zero and the error not
    exact = np.array([1.0, 2.0**-1000])
    assert error_report(exact, quantize(exact, "e4m3fn", scale_format="e8m0fnu",
                                        scale_rounding="rd")).sqnr_db < math.inf
    assert error_report(np.array([1.0, 2.0]), quantize(np.array([1.0, 2.0]), "e4m3fn",
                                                       scale_format="e8m0fnu")).sqnr_db \
        == math.inf


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([4, 200, 1000]))
def test_error_report_sqnr_equals_the_exact_value(seed: int, spread: int) -> None:
    """Magnitudes spread over 2**spread (down to subnormals) below an element near 1: the
    SQNR is the exact one to 1e-9 dB."""
    rng = np.random.default_rng(seed)
    x = np.ldexp(rng.uniform(-2, 2, 16), rng.integers(-spread, 1, 16))
    x[0] = 1.5
    q = quantize(x, "e4m3fn", scale_format="e8m0fnu", scaling="block", block_size=16)
    r = error_report(x, q)
    if r.sqnr_db != math.inf:
        assert r.sqnr_db == pytest.approx(_exact_sqnr(x, q), abs=1e-9)


# ---------------------------------------------------------------------------------------------
# 3. stochastic rounding of the scales is seeded (claim Q4)
# ---------------------------------------------------------------------------------------------
def _ref_sr_e8m0(value: Fraction, word: int) -> Fraction:
    """SR of a positive value onto the powers of two: up iff word < frac * 2**64."""
    e = value.numerator.bit_length() - value.denominator.bit_length()
    low = Fraction(2) ** e
    if low > value:
        low /= 2
    frac = (value - low) / low
    if frac == 0:
        return low
    return 2 * low if word < frac * 2**64 else low


def test_Q4_scale_stochastic_rounding_uses_its_own_seeded_stream() -> None:
    """The scales ignored rng (fresh entropy each call).  Now scale j draws from (seed +
    0x9E3779B97F4A7C15 mod 2**64, j), checked against that stream in Python ints: the same
    scale for the same seed, on 1 and 2 threads, both neighbours over many seeds."""
    x = np.array([1.0, 0.3, -0.7, 0.11])
    amax_over_max = Fraction(1, 448)
    seen = set()
    for seed in range(64):
        q = quantize(x, "e4m3fn", scale_format="e8m0fnu", scale_rounding="sr", rng=seed)
        word = _draw((seed + GOLDEN) & M64, 0)
        assert Fraction(q.scales.item()) == _ref_sr_e8m0(amax_over_max, word), seed
        seen.add(q.scales.item())
    assert seen == {2.0**-9, 2.0**-8}
    assert len({quantize(x, "e4m3fn", scale_format="e8m0fnu", scale_rounding="sr",
                         rng=7).scales.item() for _ in range(6)}) == 1
    g1 = quantize(x, "e4m3fn", scale_format="e8m0fnu", scale_rounding="sr",
                  rng=np.random.default_rng(3))
    g2 = quantize(x, "e4m3fn", scale_format="e8m0fnu", scale_rounding="sr",
                  rng=np.random.default_rng(3))
    assert g1.scales.item() == g2.scales.item()


def test_Q4_scale_and_element_streams_and_thread_counts() -> None:
    """Per-block SR scales follow the scale stream by flat index, the elements keep their
    own stream (seed, i) unchanged, and 1 and 2 threads give the same bits."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 64))
    kw: dict[str, Any] = {"scaling": "block", "block_size": 16, "scale_format": "bfloat16",
                          "scale_rounding": "sr", "rounding": "sr", "rng": 11}
    before = get_num_threads()
    try:
        set_num_threads(1)
        one = quantize(x, "e4m3fn", **kw)
        set_num_threads(min(2, before))
        two = quantize(x, "e4m3fn", **kw)
    finally:
        set_num_threads(before)
    np.testing.assert_array_equal(one.scales, two.scales)
    np.testing.assert_array_equal(one.codes, two.codes)
    # the scales against the documented stream: bfloat16 SR of amax/448, exact
    amax = np.max(np.abs(x).reshape(8, 4, 16), axis=2)
    s_seed = (11 + GOLDEN) & M64
    for j, (a, s) in enumerate(zip(amax.ravel(), one.scales.ravel())):
        v = Fraction(float(a)) / 448
        e = v.numerator.bit_length() - v.denominator.bit_length()
        if Fraction(2) ** e > v:
            e -= 1
        ulp = Fraction(2) ** (e - 7)  # bfloat16: 8 significant bits
        low = (v // ulp) * ulp
        frac = (v - low) / ulp
        want = low + ulp if frac and _draw(s_seed, j) < frac * 2**64 else low
        assert Fraction(float(s)) == want, j
    # the elements keep the stream (seed, i): SR of x/S onto e4m3fn, saturating at 448
    s_full = one.scale_per_element()
    for i, (xi, si, d) in enumerate(zip(x.ravel(), s_full.ravel(), one.dequantize().ravel())):
        y = abs(Fraction(float(xi)) / Fraction(float(si)))
        e = max(y.numerator.bit_length() - y.denominator.bit_length(), -5)
        if Fraction(2) ** e > y and e > -6:
            e -= 1
        ulp = Fraction(2) ** (max(e, -6) - 3)
        low = (y // ulp) * ulp
        frac = (y - low) / ulp
        mag = min(low + ulp if frac and _draw(11, i) < frac * 2**64 else low, Fraction(448))
        assert Fraction(float(d)) == (mag if xi > 0 else -mag) * Fraction(float(si)), i


# ---------------------------------------------------------------------------------------------
# 4. element_bound is never below the exact bound (claim Q16)
# ---------------------------------------------------------------------------------------------
def _exact_claim_bound(x: float, s: float, fmt: str, rounding: str, overflow: str) -> float:
    """The bound of claims Q1-Q9 (proofs/quantization_bounds.md) in exact rationals,
    rounded up to a float64."""
    if not (math.isfinite(x) and math.isfinite(s)):
        return math.inf
    a, S = abs(Fraction(x)), Fraction(s)
    if S == 0:
        return float(a)
    nearest = rounding in ("rne", "rna")
    if fmt == "int8":
        limit, step, rel = Fraction(127), Fraction(1, 2) if nearest else Fraction(1), Fraction(0)
    elif fmt == "mxint8_element":
        limit = Fraction(128 if math.copysign(1.0, x) < 0 else 127, 64)
        step, rel = Fraction(1, 64) * (Fraction(1, 2) if nearest else 1), Fraction(0)
    else:
        f = get_format(fmt)
        limit = Fraction(f.max_exact)
        sub = Fraction(f.smallest_subnormal if f.subnormals else f.smallest_normal)
        step = sub / 2 if nearest and f.subnormals else sub
        rel = Fraction(1, 2**f.precision) * (1 if nearest else 2)
        if a > S * limit and overflow == "ieee":
            return math.inf
    if a > S * limit:
        return _round_up(a - S * limit)
    return _round_up(max(S * step, rel * a))


def test_Q16_element_bound_audit_reproducers() -> None:
    """Both were below the true error: cancellation in |x| - S*max with S = 0.1, and S*max
    rounding up onto |x| with a subnormal scale (y = 8 > 7.5 saturates by 2**-1075)."""
    b = float(element_bound([5734.4057344], [0.1], "e5m2")[0])
    true_err = Fraction(5734.4057344) - Fraction(0.1) * 57344  # y > max: saturation
    assert Fraction(b) >= true_err and b == _round_up(true_err)
    b2 = float(element_bound([4e-323], [5e-324], "e2m3fn")[0])
    true2 = Fraction(4e-323) - Fraction(5e-324) * Fraction(15, 2)
    assert true2 == Fraction(1, 2**1075)
    assert Fraction(b2) >= true2 and b2 == 5e-324


def test_Q16_element_bound_in_binary64() -> None:
    """Half of binary64's smallest subnormal, the step of its nearest rounding, is no
    float64 (an assertion failed on it before); the bound is the exact one rounded up."""
    for rounding in ("rne", "rna", "rtz"):
        got = element_bound([1.0, 0.0, 1e-300], [1.0, 1.0, 1.0], "binary64", rounding=rounding)
        want = [_exact_claim_bound(x, 1.0, "binary64", rounding, "saturate")
                for x in (1.0, 0.0, 1e-300)]
        assert got.tolist() == want
    assert float(element_bound([0.0], [1.0], "binary64")[0]) == 5e-324  # 2**-1075 rounded up


@pytest.mark.parametrize("fmt", ["e4m3fn", "e2m1fn", "bfloat16", "int8", "binary64"])
def test_Q16_element_bound_at_the_top_of_the_range(fmt: str) -> None:
    """|x| at fl(S*limit) and one float64 below it, for scales that make S*limit inexact:
    the branch that decides in exact rationals gives the exact bound rounded up."""
    rng = np.random.default_rng(7)
    limit = 127.0 if fmt == "int8" else float(get_format(fmt).max_exact)
    for _ in range(200):
        s = float(rng.random() * 10.0 ** int(rng.integers(-5, 5)))
        top = s * limit
        for a in (top, float(np.nextafter(top, 0.0))):
            for rounding in ("rne", "rtz"):
                got = float(element_bound([a], [s], fmt, rounding=rounding)[0])
                assert got == _exact_claim_bound(a, s, fmt, rounding, "saturate"), (a, s)


_ANY_FLOAT = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)


@settings(max_examples=300)
@given(x=_ANY_FLOAT, s=st.one_of(_ANY_FLOAT.map(abs), st.sampled_from([0.1, 5e-324, 1e-310,
                                                                      2.0**-140, 1.0 / 3])),
       fmt=st.sampled_from(["e4m3fn", "e5m2", "e2m3fn", "e2m1fn", "bfloat16", "binary32",
                            "binary64", "e3m2fn", "int8", "mxint8_element"]),
       rounding=st.sampled_from(["rne", "rtz", "sr"]),
       overflow=st.sampled_from(["saturate", "ieee"]))
def test_Q16_element_bound_is_the_exact_bound_rounded_up(x: float, s: float, fmt: str,
                                                          rounding: str,
                                                          overflow: str) -> None:
    """Q16: for any float64 x and scale S (subnormal and 53-bit scales included) the
    returned float64 is the exact bound of Q1-Q9 rounded up (hence never below it)."""
    got = float(element_bound([x], [s], fmt, rounding=rounding, overflow=overflow)[0])
    assert got == _exact_claim_bound(x, s, fmt, rounding, overflow), (x, s)


# ---------------------------------------------------------------------------------------------
# 5. fraction_saturated does not count flushed blocks
# ---------------------------------------------------------------------------------------------
def test_fraction_saturated_excludes_zero_scale_blocks() -> None:
    """0.5 before: the elements of the NVFP4 block whose scale underflows to 0 passed
    |x| > 0 * max.  Reference: |x| > S * 6 with S > 0, in exact rationals."""
    x = np.concatenate([np.linspace(-1, 1, 16), np.linspace(-1, 1, 16) * 1e-30])
    q = nvfp4(x)
    r = error_report(x, q)
    s = q.scale_per_element()
    ref = np.mean([Fraction(float(si)) > 0 and abs(Fraction(float(v))) > 6 * Fraction(float(si))
                   for v, si in zip(x, s)])
    assert r.fraction_saturated == ref == 0.0
    assert r.fraction_flushed == 0.5
    # the MXINT8 element reaches -2 on the negative side: -2 X is not saturated
    b = np.zeros(32)
    b[0], b[1] = 1.9, -2.0
    qb = mx(b, "mxint8", scale_mode="floor")
    sb = qb.scales.item()
    ref_b = np.mean([abs(Fraction(float(v))) > Fraction(128 if v < 0 else 127, 64) * Fraction(sb)
                     for v in b])
    assert error_report(b, qb).fraction_saturated == ref_b


# ---------------------------------------------------------------------------------------------
# 6. claims Q6 (scale range), Q10/Q11 (formats covered)
# ---------------------------------------------------------------------------------------------
def test_Q6_scale_beyond_the_scale_format_range_raises_or_saturates_on_request() -> None:
    """quantize([1e42, -3e41], "e4m3fn") silently clipped both to +-1.52e41."""
    x = np.array([1e42, -3e41])
    with pytest.raises(ValueError, match=r"1e\+42.*scale_overflow='saturate'"):
        quantize(x, "e4m3fn")
    with pytest.raises(ValueError, match="largest e4m3fn scale"):
        quantize(np.array([448.0 * 448 * 2]), "int8", scale_format="e4m3fn")
    with pytest.raises(ValueError, match="largest binary32 scale"):
        quantize(np.ones((2, 128)) * 1e42, "e4m3fn", scaling="block", block_size=128)
    with pytest.raises(ValueError, match="largest binary32 scale"):
        deepseek_fp8(np.ones((2, 128)) * 1e42)
    q = quantize(x, "e4m3fn", scale_overflow="saturate")
    smax = Fraction(get_format("binary32").max_exact)
    assert Fraction(q.scales.item()) == smax
    assert [Fraction(float(v)) for v in q.dequantize()] == [448 * smax, -448 * smax]
    assert error_report(x, q).fraction_saturated == 1.0
    assert np.all(np.abs(q.dequantize() - x) <= q.bound)
    # at the edge: amax / max equal to the largest scale is inside the range
    edge = np.array([float(448 * smax)])
    assert quantize(edge, "e4m3fn").scales.item() == float(smax)
    with pytest.raises(ValueError, match="scale_overflow='clip'"):
        quantize(x, "e4m3fn", scale_overflow="clip")
    with pytest.raises(ValueError, match="block format"):
        quantize(np.zeros(32), "mxfp8_e4m3", scale_overflow="saturate")


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1),
       sfmt=st.sampled_from(["binary32", "bfloat16", "e8m0fnu", "e4m3fn", "e5m2"]),
       elem=st.sampled_from(["e4m3fn", "e2m1fn", "int8", "bfloat16"]),
       spread=st.sampled_from([4, 40]))
def test_Q6_ru_scale_never_saturates_inside_the_scale_range(seed: int, sfmt: str, elem: str,
                                                            spread: int) -> None:
    """Q6: with the default scale_rounding="ru", S >= amax/max (exact check), so no finite
    element saturates, whenever amax/max is inside the scale format's range; outside it
    quantize raises."""
    rng = np.random.default_rng(seed)
    x = np.ldexp(rng.uniform(-2, 2, (4, 8)), rng.integers(-spread, spread + 1, (4, 8)))
    emax = Fraction(127) if elem == "int8" else get_format(elem).max_exact
    smax = get_format(sfmt).max_exact
    amax = max(abs(Fraction(float(v))) for v in x.ravel())
    if amax / emax > smax:
        with pytest.raises(ValueError, match="scale_overflow"):
            quantize(x, elem, scale_format=sfmt)
        return
    q = quantize(x, elem, scale_format=sfmt)
    s = Fraction(q.scales.item())
    assert s >= amax / emax
    assert error_report(x, q).fraction_saturated == 0.0


@pytest.mark.parametrize("kw", [{"scale_format": "binary64"}, {"element_format": "binary64"}])
def test_Q10_Q11_binary64_formats_are_rejected(kw: dict[str, Any]) -> None:
    """binary64 scales were accepted: a subnormal quotient lost its sticky sign (rtz rounded
    2.2e-308/6 to nearest), and dequantize was inexact.  Claims Q10, Q11 cover formats of at
    most 24 bits; binary64 now raises, naming the argument."""
    args: dict[str, Any] = {"element_format": "e2m1fn", **kw}
    elem = args.pop("element_format")
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"{name}='binary64'"):
        quantize(np.array([2.2250738585072014e-308]), elem, scale_rounding="rtz", **args)
    # every other registered format is covered and accepted as a scale
    for f in ("binary32", "bfloat16", "binary16", "tf32", "e8m0fnu", "e4m3fn", "binary8p1"):
        q = quantize(np.array([1.0, -3.0]), "e4m3fn", scale_format=f)
        assert Fraction(float(q.dequantize()[1])) == (Fraction(float(q.values[1]))
                                                      * Fraction(q.scales.item()))


# ---------------------------------------------------------------------------------------------
# 7. rough edges
# ---------------------------------------------------------------------------------------------
def test_turboquant_takes_bfloat16_and_torch_like_quantize() -> None:
    """ml_dtypes bfloat16 raised TypeError, torch bfloat16 a raw torch error."""
    v = np.linspace(-1, 1, 16).reshape(2, 8)
    tq = TurboQuant(8, 3, seed=2)
    ref = tq.quantize(v.astype(ml_dtypes.bfloat16).astype(np.float64))
    got = tq.quantize(v.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(got.indices, ref.indices)
    np.testing.assert_array_equal(got.norms, ref.norms)
    torch = pytest.importorskip("torch")
    t = torch.tensor(v, dtype=torch.bfloat16)
    np.testing.assert_array_equal(tq.quantize(t).indices, ref.indices)
    np.testing.assert_array_equal(tq.inner_product(got, t[0]), tq.inner_product(got, v.astype(
        ml_dtypes.bfloat16).astype(np.float64)[0]))


def test_turboquant_ragged_and_dim_limit() -> None:
    """numpy's own 'inhomogeneous shape' error leaked; dim=65536 passed validation and then
    tried to allocate a 32 GiB rotation."""
    tq = TurboQuant(4, 2)
    with pytest.raises(ValueError, match="ragged.*for x"):
        tq.quantize([[1.0, 2.0, 3.0, 4.0], [1.0]])
    with pytest.raises(ValueError, match="ragged.*for y"):
        tq.inner_product(tq.quantize(np.ones(4)), [[1.0, 2.0, 3.0, 4.0], [1.0]])
    with pytest.raises(ValueError, match=r"dim=65536.*8192"):
        TurboQuant(65536, 2)
    with pytest.raises(ValueError, match=r"dim=8193"):
        TurboQuant(8193, 2, variant="prod")


def test_pack_rejects_float_bits_and_reports_uint64_codes() -> None:
    """pack(c, 4.0) was accepted; a uint64 code 2**63 was reported as -2**63."""
    with pytest.raises(TypeError, match="bits=4.0"):
        pack(np.array([1, 2]), 4.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bits=True"):
        unpack(np.zeros(1, np.uint8), True, 1)
    with pytest.raises(ValueError, match=f"a code {2**63},"):
        pack(np.array([2**63], np.uint64), 8)
    with pytest.raises(ValueError, match=f"a code {2**64 - 1},"):
        pack(np.array([3, 2**64 - 1], np.uint64), 4)
    assert pack(np.array([2, 255], np.uint64), 8).tolist() == [2, 255]
    assert pack(np.array([1, 2]), np.int64(4)).tolist() == [0x21]


@pytest.mark.parametrize("rounding", ["sr", "rne"])
def test_quantize_rejects_negative_seeds_like_make_rng(rounding: str) -> None:
    """rng=-5 was taken as the seed 2**64 - 5; numerics.rounding.make_rng rejects it."""
    with pytest.raises(ValueError, match="rng=-5"):
        quantize(np.ones(4), "e4m3fn", rounding=rounding, rng=-5)
    with pytest.raises(TypeError, match="rng='seven'"):
        quantize(np.ones(4), "e4m3fn", rounding=rounding, rng="seven")
    assert quantize(np.ones(4), "e4m3fn", rounding="sr", rng=2**64 + 5).codes.tolist() == \
        quantize(np.ones(4), "e4m3fn", rounding="sr", rng=5).codes.tolist()


# ---------------------------------------------------------------------------------------------
# 6. block formats take their scale format in any spelling; quotients beyond float64
# ---------------------------------------------------------------------------------------------
def test_block_formats_take_their_scale_format_in_any_spelling() -> None:
    """An ml_dtypes dtype of the block format's own scale format was refused as not being
    that format; an unknown name was reported as fmt=."""
    x = np.ones((2, 32))
    want = quantize(x, "mxfp8_e4m3").dequantize()
    for spelling in ("e8m0fnu", ml_dtypes.float8_e8m0fnu, np.dtype(ml_dtypes.float8_e8m0fnu),
                     get_format("e8m0fnu")):
        assert np.array_equal(quantize(x, "mxfp8_e4m3", scale_format=spelling).dequantize(),
                              want)
    assert quantize(np.ones((2, 16)), "nvfp4",
                    scale_format=np.dtype(ml_dtypes.float8_e4m3fn)).codes.size == 32
    with pytest.raises(ValueError, match="scale_format='nonexist'"):
        quantize(x, "mxfp8_e4m3", scale_format="nonexist")
    with pytest.raises(ValueError, match="stores its scales in e8m0fnu"):
        quantize(x, "mxfp8_e4m3", scale_format="e4m3fn")


@pytest.mark.parametrize(("rounding", "want"), [("rtz", [168.0, -168.0]),
                                                ("rd", [168.0, math.nan]),
                                                ("ru", [math.nan, -168.0]),
                                                ("rne", [math.nan, math.nan])])
def test_a_quotient_beyond_float64_rounds_as_the_finite_value_it_is(
        rounding: str, want: list[float]) -> None:
    """x / S beyond float64's range (a scale format whose max is below 1) rounded as
    infinity: under overflow='ieee', toward zero gave NaN (e4m3fn has no infinity), not
    e4m3fn's max times the scale, 448 * 0.375 (the rounding module's rule for a finite
    value beyond max)."""
    tiny = Format(name="tinyscale", exponent_bits=2, trailing_bits=1, bias=5,
                  infinity=Infinity.NONE, nan=NaNEncoding.NONE)  # max 0.375
    got = quantize([1.7e308, -1.7e308], "e4m3fn", scale_format=tiny,
                   scale_overflow="saturate", overflow="ieee",
                   rounding=rounding).dequantize()
    assert np.array_equal(got, np.array(want), equal_nan=True)


def test_an_integer_format_without_positive_values_is_refused_by_name() -> None:
    """qmax=0 left no value to scale amax onto: the scale was amax / 0, reported as
    exceeding binary32's largest scale."""
    from numerics.quant import IntFormat

    with pytest.raises(ValueError, match="'neg4' with qmax=0"):
        quantize(np.array([-1.0, -3.0]), IntFormat(name="neg4", bits=4, qmin=-8, qmax=0))

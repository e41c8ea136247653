"""Property tests of proofs/quantization_bounds.md: every element within its bound (claims
Q1-Q10), and each bound tight (some element comes within a factor of 2, or equal)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.formats import Format, get_format
from numerics.quant import mx, nvfp4, quantize
from numerics.quant.mx import MX_FORMATS

FLOATS = ["e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn", "e4m3fnuz", "e3m4", "binary16",
          "bfloat16", "binary8p3", "e4m3"]
DIRECTED = ["rtz", "ru", "rd", "rto"]


def _tensor(seed: int, n: int, spread: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.ldexp(rng.uniform(-2, 2, n), rng.integers(-spread, spread + 1, n))


def _errors(x: np.ndarray, q: object) -> np.ndarray:
    return np.abs(q.dequantize() - x)  # type: ignore[attr-defined]


def _shape_and_block(draw_ndim: int, block: int, nblocks: int) -> tuple[tuple[int, ...], int]:
    shape = (3,) * (draw_ndim - 1) + (block * nblocks,)
    return shape, block


scaled_case = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "ndim": st.integers(1, 3),
    "block": st.sampled_from([1, 2, 8, 16, 32, 48]),
    "nblocks": st.integers(1, 4),
    "spread": st.sampled_from([2, 10, 30]),
    "scaling": st.sampled_from(["tensor", "channel", "block"]),
    "sfmt": st.sampled_from(["binary32", "e8m0fnu", "bfloat16", "e4m3fn"]),
    "srnd": st.sampled_from(["ru", "rne", "rd"]),
})


def _scaled(case: dict, elem: str, rounding: str) -> tuple[np.ndarray, object]:
    shape, block = _shape_and_block(case["ndim"], case["block"], case["nblocks"])
    rng = np.random.default_rng(case["seed"])
    x = np.ldexp(rng.uniform(-2, 2, shape),
                 rng.integers(-case["spread"], case["spread"] + 1, shape))
    kw: dict[str, Any] = {"block_size": block} if case["scaling"] == "block" else {}
    # a scale format narrower than amax / max saturates its scale (Q5 then bounds the
    # clipped elements): accepted explicitly
    q = quantize(x, elem, scaling=case["scaling"], scale_format=case["sfmt"],
                 scale_rounding=case["srnd"], rounding=rounding, rng=case["seed"],
                 scale_overflow="saturate", **kw)
    return x, q


@settings(max_examples=80, deadline=None)
@given(case=scaled_case, elem=st.sampled_from(FLOATS), rounding=st.sampled_from(["rne", "rna"]))
def test_Q1_Q2_Q5_Q6_round_to_nearest_within_bound(case: dict, elem: str, rounding: str) -> None:
    """Q1 (u|x| in the normal range), Q2 (half the smallest subnormal below it), Q5 (saturation
    |x| - S max), Q6 (scaled: the same in units of S) for RNE and RNA."""
    x, q = _scaled(case, elem, rounding)
    err = _errors(x, q)
    assert np.all(err <= q.bound)  # type: ignore[attr-defined]
    fmt = get_format(elem)
    s = q.scale_per_element()  # type: ignore[attr-defined]
    y = np.abs(x) / s
    normal = (y >= fmt.smallest_normal) & (y <= fmt.max)
    assert np.all(err[normal] <= fmt.unit_roundoff * np.abs(x[normal]) * (1 + 2**-40))
    sub = y < fmt.smallest_normal
    assert np.all(err[sub] <= s[sub] * fmt.smallest_subnormal / 2 * (1 + 2**-40))


@settings(max_examples=60, deadline=None)
@given(case=scaled_case, elem=st.sampled_from(FLOATS), rounding=st.sampled_from(DIRECTED))
def test_Q3_directed_within_2u_and_one_subnormal_step(case: dict, elem: str,
                                                      rounding: str) -> None:
    """Q3: directed modes and round-to-odd: error < 2u|x| (normal), < one subnormal step."""
    x, q = _scaled(case, elem, rounding)
    err = _errors(x, q)
    assert np.all(err <= q.bound)  # type: ignore[attr-defined]
    fmt = get_format(elem)
    s = q.scale_per_element()  # type: ignore[attr-defined]
    y = np.abs(x) / s
    sub = y < fmt.smallest_normal
    assert np.all(err[sub] <= s[sub] * fmt.smallest_subnormal)


#: A signed format without subnormals, hence without zero (Q2 and Q3's second case).
NO_ZERO = Format(name="e3m2_nosub", exponent_bits=3, trailing_bits=2, bias=3,
                 subnormals=False)


@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz", "ru", "rd", "rto"])
def test_Q2_Q3_format_without_zero(rounding: str) -> None:
    """Q2, Q3: in a format without zero every |y| < 2**emin becomes sign(y) * 2**emin
    (+2**emin for y = 0) in every mode: error 2**emin - |y| <= 2**emin, reached at 0."""
    small = np.array([0.0, -0.0, 2.0**-9, -(2.0**-9), 0.1, -0.1, 0.124, -0.124])
    x = np.concatenate([small, [NO_ZERO.max, -5.5]])  # amax = the format's max: scale 1
    q = quantize(x, NO_ZERO, scaling="tensor", scale_format="binary32", rounding=rounding)
    assert q.scale_per_element()[0] == 1.0
    d = q.dequantize()
    tiny = 2.0**NO_ZERO.emin
    want = np.where(np.signbit(small) & (small != 0), -tiny, tiny)
    assert np.array_equal(d[:small.size], want)
    err = _errors(x, q)
    assert np.all(err[:small.size] <= tiny) and err[0] == tiny
    assert np.all(err <= q.bound)


@settings(max_examples=30, deadline=None)
@given(case=scaled_case, elem=st.sampled_from(FLOATS + ["int8", "int4"]))
def test_Q4_stochastic_rounding_below_one_ulp(case: dict, elem: str) -> None:
    """Q4: every stochastically rounded element is within one ulp (2u|x| or a subnormal
    step), i.e. it is one of the two neighbours."""
    x, q = _scaled(case, elem, "sr")
    assert np.all(_errors(x, q) <= q.bound)  # type: ignore[attr-defined]


@pytest.mark.parametrize("elem", ["e2m1fn", "e4m3fn", "int4"])
def test_Q4_stochastic_rounding_unbiased(elem: str) -> None:
    """Q4: E[SR(y)] = y: the mean over 20000 draws is within 5 standard errors of x."""
    x = np.array([0.3, -1.37, 2.9, 0.01, 5.5, -0.77])
    reps = 20000
    xs = np.tile(x, (reps, 1))
    q = quantize(xs, elem, scaling="block", block_size=6, scale_format="e8m0fnu",
                 rounding="sr", rng=123)
    d = q.dequantize()
    s = q.scale_per_element()[0]
    # the scale is the same in every row; the per-element SR variance is at most ulp**2 / 4
    stderr = np.max(np.abs(d - xs), axis=0) / 2 / np.sqrt(reps) + 1e-300
    assert np.all(np.abs(d.mean(axis=0) - x) <= 5 * stderr + 1e-15), (d.mean(axis=0), x, s)


@settings(max_examples=40, deadline=None)
@given(case=scaled_case, elem=st.sampled_from(["int8", "int4"]),
       rounding=st.sampled_from(["rne", "rna", "rtz", "ru", "rd"]))
def test_Q9_integer_elements(case: dict, elem: str, rounding: str) -> None:
    """Q9: integers: S/2 (nearest), S (other modes), |x| - S*qmax beyond the range."""
    x, q = _scaled(case, elem, rounding)
    err = _errors(x, q)
    assert np.all(err <= q.bound)  # type: ignore[attr-defined]
    s = q.scale_per_element()  # type: ignore[attr-defined]
    qmax = 127 if elem == "int8" else 7
    inside = np.abs(x) <= qmax * s
    factor = 0.5 if rounding in ("rne", "rna") else 1.0
    assert np.all(err[inside] <= factor * s[inside])


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(list(MX_FORMATS)), seed=st.integers(0, 2**32 - 1),
       rows=st.integers(1, 4), blocks=st.integers(1, 3), spread=st.sampled_from([1, 8, 60]))
def test_Q7_mx_within_bound_and_floor_cost(name: str, seed: int, rows: int, blocks: int,
                                           spread: int) -> None:
    """Q7: MX elements within the per-element bound; the floor in the shared exponent costs
    at most (2**(emax+1) - max) * X per element (the saturated top binade)."""
    rng = np.random.default_rng(seed)
    x = np.ldexp(rng.uniform(-2, 2, (rows, 32 * blocks)),
                 rng.integers(-spread, spread + 1, (rows, 32 * blocks)))
    q = mx(x, name)
    err = _errors(x, q)
    assert np.all(err <= q.bound)
    emax = MX_FORMATS[name][1]
    fmt = q.element_format
    top = 2.0 ** (emax + 1) - fmt.max
    s = q.scale_per_element()
    sat = np.abs(x) > s * fmt.max
    assert np.all(err[sat] <= top * s[sat])
    # relative to the block maximum: X <= amax * 2**-emax
    amax = np.repeat(np.max(np.abs(x).reshape(rows, blocks, 32), axis=2), 32, axis=1)
    assert np.all(s <= amax * 2.0**-emax)


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_Q7_mx_floor_cost_is_attained(name: str) -> None:
    """Q7 tight: amax just below 2**(E+1) saturates by almost (2**(emax+1) - max) * X."""
    emax = MX_FORMATS[name][1]
    x = np.zeros(32)
    x[0] = np.nextafter(2.0**5, 0)
    q = mx(x, name)
    top = 2.0 ** (emax + 1) - q.element_format.max
    assert q.scales[0] == 2.0 ** (4 - emax)
    assert _errors(x, q)[0] >= 0.999 * top * q.scales[0]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 3), blocks=st.integers(1, 4),
       spread=st.sampled_from([1, 6, 20]))
def test_Q8_nvfp4_within_bound(seed: int, rows: int, blocks: int, spread: int) -> None:
    """Q8: NVFP4 elements within S*beta(|x|/S) with S = s_b * g."""
    x = np.ldexp(np.random.default_rng(seed).uniform(-2, 2, (rows, 16 * blocks)),
                 np.random.default_rng(seed + 1).integers(-spread, spread + 1,
                                                          (rows, 16 * blocks)))
    q = nvfp4(x)
    assert np.all(_errors(x, q) <= q.bound)


@settings(max_examples=60, deadline=None)
@given(amax=st.floats(2688 * 2.0**-126, 1e30), ratio=st.floats(2.0**-9, 1.0),
       rest=st.lists(st.floats(-1.0, 1.0), min_size=15, max_size=15))
def test_Q8_block_scales_do_not_saturate_while_g_is_normal(amax: float, ratio: float,
                                                            rest: list[float]) -> None:
    """Q8: with g a binary32 normal, amax_b/(6g) < 448 (1 + 2**-23): no block scale
    saturates, and the saturation term stays within amax_b/15."""
    block = np.array([amax * ratio] + [amax * ratio * r for r in rest])
    x = np.concatenate([np.array([amax] + [0.0] * 15), block])
    q = nvfp4(x)
    g = float(np.asarray(q.global_scale))
    assert g >= 2.0**-126
    amax_b = np.abs(block).max()
    assert amax_b / (6 * g) < 448 * (1 + 2.0**-23)
    S = float(q.scales[1])  # s_b * g
    assert S / g <= 448.0
    assert amax_b - 6 * S <= amax_b / 15


def test_Q8_a_subnormal_tensor_scale_can_saturate_block_scales() -> None:
    """Q8's boundary: below amax = 2688 * 2**-126, g is subnormal and v = amax_b/(6g) can
    exceed 448; the block scale saturates, the error exceeds amax_b/15, and the bound
    still covers it."""
    x = np.zeros(16)
    x[0] = float(np.float32(2688 * 1.49 * 2.0**-149))
    q = nvfp4(x)
    assert float(np.asarray(q.global_scale)) == 2.0**-149  # 1.49 * 2**-149 rounded down
    assert float(q.scales[0]) == 448 * 2.0**-149  # s_b: v = 667.5 saturated at 448
    err = abs(float(q.dequantize()[0]) - x[0])
    assert err > x[0] / 15
    assert err <= float(q.bound[0])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       scheme=st.sampled_from(["mxfp8_e4m3", "mxfp4_e2m1", "mxint8", "nvfp4", "e4m3fn",
                               "e2m1fn", "int8", "e5m2"]),
       rounding=st.sampled_from(["rne", "rtz"]))
def test_bounds_are_tight(seed: int, scheme: str, rounding: str) -> None:
    """Tightness of Q1/Q3/Q6/Q7/Q8/Q9: on 512 random elements some error exceeds half its
    bound (the bound is never loose by more than a factor 2 everywhere)."""
    x = _tensor(seed, 512, 6).reshape(4, 128)
    if scheme in MX_FORMATS or scheme == "nvfp4":
        if rounding != "rne":
            return
        q = quantize(x, scheme)
    else:
        q = quantize(x, scheme, scaling="block", block_size=32, rounding=rounding)
    ratio = _errors(x, q) / q.bound
    assert np.max(ratio[np.isfinite(ratio)]) >= 0.5


def test_Q5_saturation_error_is_exact() -> None:
    """Q5 tight: a saturated element's error equals |x| - S*max (and its bound)."""
    x = np.array([1.0, 500.0, -1000.0, 3.0])
    q = quantize(x, "e4m3fn", scale_format="e8m0fnu", scale_rounding="rd")
    s = q.scales.item()
    assert s == 2.0**1  # RD(1000/448) = 2
    err = _errors(x, q)
    np.testing.assert_array_equal(err[2], 1000.0 - 448 * s)
    assert err[2] <= q.bound[2] <= err[2] * (1 + 2**-39)


@settings(max_examples=30, deadline=None)
@given(case=scaled_case, elem=st.sampled_from(FLOATS + ["int8"]))
def test_Q10_dequantize_is_exact(case: dict, elem: str) -> None:
    """Q10: dequantize() is exactly S * element (Fraction check)."""
    x, q = _scaled(case, elem, "rne")
    d = q.dequantize()  # type: ignore[attr-defined]
    v = q.values  # type: ignore[attr-defined]
    s = q.scale_per_element()  # type: ignore[attr-defined]
    for i in list(np.ndindex(x.shape))[:50]:
        assert Fraction(float(d[i])) == Fraction(float(v[i])) * Fraction(float(s[i]))

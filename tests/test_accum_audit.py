"""The accum audit's findings (B2-B7; B1 is claim A7's, in test_accum_bounds.py): each
test failed before its fix and compares with exact rational arithmetic, never the
library with itself."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Callable

import accum_reference as ref
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from numerics import accum
from numerics.accum import bounds
from numerics.accum.tensorcore import cast
from numerics.formats import as_format

M64 = 1.7976931348623157e308  # (2 - 2**-52) * 2**1023
MODES = ["rne", "rna", "rtz", "ru", "rd", "rto"]
_HUGE = Fraction(2) ** 5000  # a "max" no value here reaches: the exponent unbounded


def rnd(x: Fraction | float, fmt: str, mode: str) -> Fraction | float:
    """``x`` rounded once into ``fmt`` with IEEE 754's overflow rule (7.4): beyond the
    largest finite value, +-inf unless the mode rounds toward zero for that sign, then
    +-max (round-to-odd too, as :func:`numerics.kernels.rounding.round_pair` does).  An
    infinite or NaN ``x`` (a float) is returned as it is."""
    if isinstance(x, float):
        return x
    p, emin, emax, top = ref.FORMATS[fmt]
    v = Fraction(ref.rnd(x, p, emin, emax, mode, _HUGE))  # finite: the exponent unbounded
    big = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax if top is None else top
    if abs(v) <= big:
        return v
    down = mode in ("rtz", "rto") or (mode == "rd" and v > 0) or (mode == "ru" and v < 0)
    return (1 if v > 0 else -1) * (big if down else math.inf)


def rounder(fmt: str, mode: str) -> Callable[[Any], Any]:
    return lambda x: rnd(x, fmt, mode)


def same(got: float, want: Fraction | float) -> bool:
    return bool(np.isnan(got)) if isinstance(want, float) and math.isnan(want) \
        else float(got) == float(want)


def reference(alg: str, terms: list[Any], fl: Callable[[Any], Any]) -> Any:
    """One sum of already rounded ``terms`` (Fractions, or float inf/NaN)."""
    if alg == "recursive":
        return ref.ref_recursive(terms, fl)
    if alg == "pairwise":
        return ref.ref_pairwise(terms, fl, 2)
    if alg == "kahan":
        return ref.ref_kahan(terms, fl)
    if alg == "neumaier":
        return ref.ref_neumaier(terms, fl)
    if alg == "exact":
        return fl(sum(terms, Fraction(0)))
    if alg == "blocked":
        return ref.ref_blocked(terms, fl, fl, 2)
    if alg == "tree":
        return ref.ref_tree(terms, fl, tuple(range(len(terms))))
    return ref.ref_ring_element(terms, fl, 0, list(range(len(terms))))


def _kw(alg: str, n: int) -> dict[str, Any]:
    kw: dict[str, Any] = {"algorithm": alg}
    if alg in ("pairwise", "blocked"):
        kw["block_size"] = 2
    if alg == "blocked":
        kw["promote_fmt"] = "binary64"
    if alg == "tree":
        kw["tree"] = tuple(range(n))
    return kw


# ------------------------------------------------------------------ B2: 0 * inf bounds
@pytest.mark.parametrize("x, fmt, kw", [
    (np.zeros(2), "e2m1fn", {"algorithm": "kahan", "rounding": "rtz"}),
    (np.zeros((2, 200000)), "bfloat16", {"rounding": "rtz"}),
    (np.zeros(3), "e2m1fn", {"algorithm": "neumaier", "rounding": "ru"}),
    (np.zeros(2000), "e2m1fn", {"algorithm": "blocked", "block_size": 2000,
                                "rounding": "rd"}),
])
def test_all_zero_rows_have_bound_zero_when_the_factor_overflows(
        x: np.ndarray, fmt: str, kw: dict[str, Any]) -> None:
    """A factor that overflows to inf times sum |x_i| = 0 gave NaN; the sum of zeros is
    exact (error 0), and so is its bound."""
    r = accum.sum(x, fmt, **kw)
    assert np.all(r.value == 0) and np.all(r.bound == 0)
    d = accum.dot(x, x, fmt, **kw)
    assert np.all(d.value == 0) and not np.isnan(d.bound).any()


# ------------------------------------------------------------------ B3, B4: binary64
@pytest.mark.parametrize("alg", accum.ALGORITHMS)
def test_binary64_dot_with_a_zero_times_a_huge_operand(alg: str) -> None:
    """0 * 1.5e308 + 1 * 2: Dekker's split of 1.5e308 overflowed and its NaN residual
    made the result NaN (exact, blocked, tree, ring), in every mode."""
    x, y = np.array([0.0, 1.0]), np.array([1.5e308, 2.0])
    for mode in MODES:
        r = accum.dot(x, y, "binary64", rounding=mode, **_kw(alg, 2))
        assert float(r.value) == 2.0, mode
        assert abs(Fraction(float(r.value)) - 2) <= Fraction(float(r.bound))


@pytest.mark.parametrize("mode", MODES)
def test_binary64_rounds_once_beyond_its_range(mode: str) -> None:
    """binary64 as the working format: a sum that overflows (max in the modes toward
    zero, not inf), an exact sum whose partial sums overflow (math.fsum raised), and
    products that underflow or whose operand is beyond Dekker's split."""
    fl = rounder("binary64", mode)
    for alg in accum.ALGORITHMS:
        for x in ([M64, M64], [-M64, -M64], [M64, M64, -M64], [M64, 2.0**970]):
            got = float(accum.sum(np.array(x), "binary64", rounding=mode, **_kw(alg, len(x)))
                        .value)
            want = reference(alg, [Fraction(v) for v in x], fl)
            assert same(got, want), (alg, x, got, want)
    for x, y in (([1e-300], [1e-300]), ([-1e-300], [1e-300]), ([3.0], [2.0**-1075]),
                 ([-5.349320056218163e-05], [-1.1717343302439112e308]),
                 ([1.5e308], [0.5]), ([1e300], [1e10]), ([1 + 2.0**-52], [2.0**-1030])):
        want = fl(Fraction(x[0]) * Fraction(y[0]))
        for alg in ("recursive", "kahan", "exact", "tree"):
            got = float(accum.dot(np.array(x), np.array(y), "binary64", rounding=mode,
                                  **_kw(alg, 1)).value)
            assert same(got, want), (alg, x, y, got, want)


@pytest.mark.parametrize("mode", MODES)
def test_binary64_exact_sum_with_a_residual_beyond_53_bits(mode: str) -> None:
    """algorithm="exact" passed the rounded residual: 2**-53 - 2**-160 rounds to 2**-53,
    a tie that sent 1 + 2**-52 (odd) up in round-to-nearest-even; rounded to odd, the
    residual keeps every comparison."""
    for x in ([1 + 2.0**-52, 2.0**-53, -(2.0**-160)], [1.0, 2.0**-53, 2.0**-160],
              [1 + 2.0**-52, -(2.0**-53), 2.0**-160], [2.0**-1022, 2.0**-1074, -(2.0**-1074)]):
        got = float(accum.sum(np.array(x), "binary64", algorithm="exact", rounding=mode).value)
        assert got == float(rnd(sum(map(Fraction, x), Fraction(0)), "binary64", mode)), x


@pytest.mark.parametrize("alg", ["exact", "tree", "blocked"])
def test_binary64_products_that_underflow_raise_no_warning(alg: str) -> None:
    """The bound's float64 products underflowed outside np.errstate: FloatingPointError
    under np.errstate(all="raise")."""
    with np.errstate(all="raise"):
        r = accum.dot(np.array([1e-300, 1.0]), np.array([1e-300, 1e-300]), "binary64",
                      rounding="ru", **_kw(alg, 2))
    want = rnd(rnd(Fraction(1e-300) ** 2, "binary64", "ru") + Fraction(1e-300), "binary64",
               "ru")
    assert float(r.value) == want


_SIG = st.floats(1.0, 2.0, exclude_max=True)
_EXP = st.sampled_from([1023, 1022, 1000, 995, 0, -900, -1000, -1022, -1040, -1074])
_EXTREME = st.one_of(
    st.builds(lambda m, e, s: s * math.ldexp(m, e), _SIG, _EXP, st.sampled_from([1.0, -1.0])),
    st.sampled_from([0.0, -0.0, M64, -M64, 5e-324]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_EXTREME, _EXTREME), min_size=1, max_size=5),
       st.sampled_from(accum.ALGORITHMS), st.sampled_from(MODES), st.booleans())
@example([(M64, 1.0), (M64, 1.0)], "recursive", "rtz", False)
@example([(1e-300, 1e-300)], "recursive", "ru", True)
def test_binary64_extremes_against_the_exact_reference(pairs: list[tuple[float, float]],
                                                       alg: str, mode: str,
                                                       dot: bool) -> None:
    """Sums and dot products of binary64 values near its max and its subnormals, every
    algorithm and deterministic mode, against one exact rounding per operation."""
    fl = rounder("binary64", mode)
    x = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    with np.errstate(all="raise"):  # and no floating-point warning on the way
        if dot:
            terms = [fl(Fraction(a) * Fraction(b)) for a, b in pairs]
            got = accum.dot(x, y, "binary64", rounding=mode, **_kw(alg, len(pairs)))
        else:
            terms = [Fraction(a) for a in x]
            got = accum.sum(x, "binary64", rounding=mode, **_kw(alg, len(pairs)))
    want = reference(alg, terms, fl)
    assert same(float(got.value), want), (float(got.value), want)


# ------------------------------------------------------------------ B5: fused GEMM, inf c
@pytest.mark.parametrize("F", [0, 1, 2])
@pytest.mark.parametrize("fout, c0, a0", [("binary16", -65504.0, -300.0),
                                          ("binary32", 3.0e38, 2.0**64)])
def test_fused_gemm_keeps_an_infinite_running_c(F: int, fout: str, c0: float,
                                                a0: float) -> None:
    """The first group overflows the output to inf; the second adds a finite product to
    it (IEEE: inf).  With F = 0 or 1 the kernel's 2**(F - 1024) left its range and gave
    +inf for -inf (F = 0) or NaN (F = 1)."""
    p = accum.TensorCorePreset(name="f", fractional_bits=F, group_16=1, group_8=1)
    b0 = 300.0 if fout == "binary16" else 2.0**64
    got = accum.gemm([[a0, 1.0]], [[b0], [1.0]], [[c0]], input_format="binary16"
                     if fout == "binary16" else "bfloat16", accumulator=p, output_format=fout)
    out = (11, -14, 15) if fout == "binary16" else (24, -126, 127)
    mode = "rne" if fout == "binary16" else "rtz"
    emin_in = -14 if fout == "binary16" else -126
    first = ref.ref_fused([Fraction(a0)], [Fraction(b0)], Fraction(c0), emin_in, out[1], F,
                          out, mode, False)
    assert first in (math.inf, -math.inf)
    assert float(got[0, 0]) == first + 1.0 * 1.0  # an infinite c plus a finite product


# ------------------------------------------------------------------ B6: no -0
@pytest.mark.parametrize("fmt", ["e4m3fnuz", "e5m2fnuz", "binary8p3", "e4m3b11fnuz"])
def test_formats_without_negative_zero_give_plus_zero(fmt: str) -> None:
    """A zero result in a format whose only zero is +0 (its code 0x80 is NaN) came back
    as -0.0 from the kernel algorithms (nearest even) and for zero products in dot."""
    tiny = -float(as_format(fmt).smallest_subnormal) / 4  # rounds to zero
    for alg in accum.ALGORITHMS:
        for x in ([-0.0], [tiny, -0.0], [-0.0, -0.0, -0.0]):
            for mode in ("rne", "rd"):
                v = accum.sum(np.array(x), fmt, rounding=mode, **_kw(alg, len(x))).value
                assert float(v) == 0 and not np.signbit(v), (alg, x, mode)
        for x, y in (([-1.0], [0.0]), ([-1.0, 0.0], [0.0, -2.0])):
            v = accum.dot(np.array(x), np.array(y), fmt, **_kw(alg, len(x))).value
            assert float(v) == 0 and not np.signbit(v), (alg, x, y)
    v = cast(np.array([-0.0, -1e-9]), as_format(fmt), lo=np.array([0.0, -1e-30]))
    assert not np.signbit(v).any()


# ------------------------------------------------------------------ B7: bad input
@pytest.mark.parametrize("block", [2**70, np.uint64(2**63), np.int64(2**62), 5])
def test_huge_block_sizes_are_one_block(block: Any) -> None:
    """A block of n or more terms is one block (summed recursively); 2**70 raised
    OverflowError and np.uint64(2**63) a uint64 OverflowError."""
    x = np.array([1.0, 2.0**-11, 2.0**-11, 3.0, 2.0**-10])
    xs = [Fraction(v) for v in x]
    fl = ref.rounder("binary16", "rne")
    for alg in ("pairwise", "blocked"):
        r = accum.sum(x, "binary16", algorithm=alg, block_size=block)
        want = ref.ref_recursive(xs, fl) if alg == "pairwise" else \
            ref.ref_blocked(xs, fl, ref.rounder("binary32", "rne"), 10**30)
        assert float(r.value) == want
        assert abs(Fraction(float(r.value)) - sum(xs)) <= Fraction(float(r.bound))


@pytest.mark.parametrize("order, error", [
    ([0.5, 1, 2, 3], TypeError), ("0123", TypeError), (3, TypeError),
    ([math.nan, 1, 2, 3], TypeError), ([1.0, 0.0, 2.0, 3.0], TypeError),
    ([True, False, 2, 3], TypeError), (np.ones((2, 2), int), TypeError),
    ([0, 1, 2], ValueError), ([0, 1, 2, 2], ValueError),
])
def test_bad_ring_orders_are_named(order: object, error: type) -> None:
    with pytest.raises(error, match="ring_order="):
        accum.sum(np.ones((3, 4)), "binary16", algorithm="ring",
                  ring_order=order)  # type: ignore[arg-type]


def test_ring_order_as_an_int_array() -> None:
    x = np.array([1.0, 2.0**-11, 2.0**-11, 3.0])
    order = np.array([2, 0, 3, 1])
    got = accum.sum(x, "binary16", algorithm="ring", ring_order=order)
    want = ref.ref_ring_element([Fraction(v) for v in x], ref.rounder("binary16", "rne"), 0,
                                [2, 0, 3, 1])
    assert float(got.value) == want


def test_a_left_deep_tree_of_400_leaves() -> None:
    """A valid tree nested 400 deep raised RecursionError (checking it, evaluating it and
    its chain for the bound)."""
    n = 400
    tree: Any = 0
    for i in range(1, n):
        tree = (tree, i)
    x = 1 + (np.arange(n) % 128) * 2.0**-7  # bfloat16 numbers
    r = accum.sum(x, "bfloat16", algorithm="tree", tree=tree)
    xs = [Fraction(v) for v in x]
    assert float(r.value) == ref.ref_recursive(xs, ref.rounder("bfloat16", "rne"))
    assert abs(Fraction(float(r.value)) - sum(xs)) <= Fraction(float(r.bound))
    assert bounds.tree_chain(tree) == n - 1
    with pytest.raises(ValueError, match="tree="):
        accum.sum(x, "bfloat16", algorithm="tree", tree=(tree, n))


def test_accumulator_formats_without_sign_or_subnormals_are_rejected() -> None:
    with pytest.raises(ValueError, match="accumulator='e8m0fnu'"):
        accum.gemm([[1.0]], [[1.0]], input_format="binary16", accumulator="e8m0fnu")


def test_even_odd_preset_with_groups_of_one() -> None:
    """Groups of one product: the odd half is empty (numpy raised on its maximum)."""
    p = accum.TensorCorePreset(name="eo1", structure="even-odd", fractional_bits=24,
                               group_16=None, group_8=1, outputs=("binary32",))
    A = [[1.0, 2.0, -0.375]]
    B = [[1.0], [1.0], [0.5]]
    got = accum.gemm(A, B, [[0.25]], input_format="e4m3fnuz", accumulator=p)
    want = ref.ref_amd_fused_chain([Fraction(v) for v in A[0]],
                                   [Fraction(r[0]) for r in B], Fraction(0.25), 1, -7, True)
    assert float(got[0, 0]) == want


@pytest.mark.parametrize("c", [0.0, 1.5, -2.0**-130])
def test_fused_dot_add_of_no_products_is_c(c: float) -> None:
    got = accum.fused_dot_add([], [], c, input_format="binary16", fractional_bits=23)
    assert float(got) == ref.rnd(Fraction(c), 24, -126, 127, "rne")


@pytest.mark.parametrize("field, value, error", [
    ("flush_inputs", "no", TypeError), ("flush_outputs", 1, TypeError),
    ("e8m13", None, TypeError), ("source", None, TypeError),
    ("outputs", ("foo",), ValueError), ("outputs", "binary32", TypeError),
    ("outputs", ("fp32",), ValueError), ("outputs", ("e4m3fn",), ValueError),
    ("inputs", ("binary64",), ValueError), ("inputs", ["binary16"], TypeError),
])
def test_preset_field_types_are_checked(field: str, value: object, error: type) -> None:
    with pytest.raises(error, match=f"{field}="):
        dataclasses.replace(accum.PRESETS["hopper"], **{field: value})  # type: ignore[arg-type]


def test_confidence_may_be_any_numpy_float() -> None:
    x = np.linspace(1, 2, 50)
    for conf in (np.float32(0.9), np.float16(0.5), np.longdouble(0.99)):
        r = accum.sum(x, "bfloat16", rounding="sr", rng=1, bound_kind="probabilistic",
                      confidence=conf)
        assert r.confidence == float(conf) and isinstance(r.confidence, float)
    with pytest.raises(ValueError, match="confidence="):
        accum.sum(x, "bfloat16", bound_kind="probabilistic", confidence=np.float32(1.0))


@pytest.mark.parametrize("acc", ["e3m2fn", "e2m3fn", "e2m1fn"])
def test_gemm_refuses_a_nan_product_its_accumulator_cannot_hold(acc: str) -> None:
    # review: a NaN product (a NaN operand, or 0 * inf) became 0 in an accumulator with
    # no NaN, wiping the running sum: 1 + NaN + 2 gave 2
    nan, inf = np.nan, np.inf
    with pytest.raises(ValueError, match=r"NaN product A\[0, 1\] \* B\[1, 0\] \(nan \* 1.0\)"):
        accum.gemm(np.array([[1.0, nan, 2.0]]), np.ones((3, 1)), input_format="binary16",
                   accumulator=acc)
    with pytest.raises(ValueError, match=rf"\(0.0 \* inf\), but accumulator='{acc}'"):
        accum.gemm(np.array([[0.0, 2.0]]), np.array([[inf], [1.0]]), input_format="binary16",
                   accumulator=acc, promote_every=1)
    # infinite products without NaN saturate, as documented
    got = accum.gemm(np.array([[inf]]), np.array([[1.0]]), input_format="binary16",
                     accumulator=acc)
    assert got[0, 0] == as_format(acc).max


def test_g_of_huge_and_bad_counts() -> None:
    # review: g(2**64, u) raised TypeError (numpy made it an object array); a negative
    # count gave a negative factor
    from numerics.accum import g

    assert g(2**64, 2.0**-53) == np.inf and g(10**400, 2.0**-24) == np.inf
    for bad in (-3, float("nan"), np.array([1, -1])):
        with pytest.raises(ValueError, match="count of roundings"):
            g(bad, 2.0**-24)


def test_bound_helpers_refuse_bad_options() -> None:
    # review: block_size=-5 gave a chain of -4, confidence=1 a ZeroDivisionError, a
    # blocked bound without its options an AssertionError, kind="bogus" the worst case
    f16 = as_format("binary16")
    for call, needle in (
            (lambda: bounds.chain_length("pairwise", 10, block_size=-5), "block_size=-5"),
            (lambda: bounds.chain_length("pairwise", 10, block_size=0), "block_size=0"),
            (lambda: bounds.probabilistic_factor([(3, 0.1)], 3, 1.0), "confidence=1.0"),
            (lambda: bounds.sum_bound(np.ones(1), 3, f16, "rne", "blocked"), "blocked"),
            (lambda: bounds.sum_bound(np.ones(1), 3, f16, "rne", "recursive", kind="bogus"),
             "kind='bogus'"),
            (lambda: bounds.dot_bound(np.ones(1), np.zeros(1), 3, f16, "rne", "recursive",
                                      kind="bogus"), "kind='bogus'")):
        with pytest.raises(ValueError, match=needle):
            call()

"""Meta-tests of numerics.testing.strategies against the exact reference codec."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument as HypothesisInvalidArgument

from numerics.codec import decode_exact, encode_exact
from numerics.formats import FORMATS, Format, get_format
from numerics.rounding import ROUNDINGS
from numerics.testing import strategies as ns
from numerics.testing.strategies import (
    InvalidArgument,
    arrays,
    codes,
    formats,
    near_ties,
    roundings,
    ties,
    values,
)

FIND = settings(max_examples=2000, database=None, deadline=None)
EIGHT_BIT = [n for n in FORMATS if get_format(n).bits <= 8]


def _exact(x: float) -> Fraction:
    return Fraction(x)


def _is_value_of(x: float, fmt: Format) -> bool:
    """Independent check with the reference codec: x survives encode/decode exactly."""
    if math.isnan(x):
        return fmt.has_nan
    if math.isinf(x):
        return fmt.has_infinity and (x > 0 or fmt.signed)
    if fmt.name == "e8m0fnu" and x <= 0:
        return False
    try:
        code = encode_exact(x, fmt, rounding="rtz", overflow="saturate")
    except ValueError:
        return False
    back = decode_exact(code, fmt)
    if isinstance(back, float) and math.isinf(back):
        return back == x
    return back == _exact(x) and (math.copysign(1, x) > 0 or x != 0
                                  or not fmt.has_negative_zero or code != 0)


def _all_values(fmt: Format) -> list[Fraction]:
    """Sorted distinct finite values of a small format, from the reference decoder."""
    out = set()
    for c in range(fmt.num_codes):
        v = decode_exact(c, fmt)
        if isinstance(v, Fraction) or math.isfinite(v):
            out.add(Fraction(v))
    return sorted(out)


CLASSES: dict[str, Callable[[float, Format], bool]] = {
    "+0": lambda x, fmt: x == 0 and math.copysign(1, x) > 0,
    "-0": lambda x, fmt: x == 0 and math.copysign(1, x) < 0,
    "subnormal": lambda x, fmt: 0 < abs(x) < fmt.smallest_normal,
    "normal": lambda x, fmt: fmt.smallest_normal <= abs(x) <= fmt.max,
    "negative": lambda x, fmt: x < 0,
    "max": lambda x, fmt: x == fmt.max,
    "smallest normal": lambda x, fmt: x == fmt.smallest_normal,
    "inf": lambda x, fmt: x == math.inf,
    "-inf": lambda x, fmt: x == -math.inf,
    "nan": lambda x, fmt: math.isnan(x),
}


def _bind(pred: Callable[[float, Format], bool], f: Format) -> Callable[[float], bool]:
    def bound(x: float) -> bool:
        return pred(x, f)
    return bound


def _present(cls: str, f: Format) -> bool:
    has_sub = f.subnormals and f.trailing_bits > 0
    return {
        "+0": f.has_zero, "-0": f.has_negative_zero, "subnormal": has_sub, "normal": True,
        "negative": f.signed, "max": True, "smallest normal": True,
        "inf": f.has_infinity, "-inf": f.has_infinity and f.signed, "nan": f.has_nan,
    }[cls]


@pytest.mark.parametrize("name", FORMATS)
def test_values_reaches_every_class_and_no_other(name: str) -> None:
    """For every format, values() can produce each class it has (hypothesis find)."""
    f = get_format(name)
    for cls, pred in CLASSES.items():
        if _present(cls, f):
            x = find(values(f), _bind(pred, f), settings=FIND)
            assert pred(x, f) and _is_value_of(x, f), (cls, x)
        else:
            with pytest.raises(Exception, match="No examples"):
                find(values(f), _bind(pred, f),
                     settings=settings(FIND, max_examples=60))


@given(data=st.data(), name=formats())
@settings(max_examples=150, deadline=None)
def test_values_are_exactly_representable(data: st.DataObject, name: str) -> None:
    f = get_format(name)
    x = data.draw(values(f))
    assert isinstance(x, float)
    assert _is_value_of(x, f)


@given(data=st.data(), name=formats(),
       lo=st.floats(-1e3, 1e3), width=st.floats(0, 1e3))
@settings(max_examples=150, deadline=None)
def test_values_respect_bounds_and_flags(data: st.DataObject, name: str, lo: float,
                                         width: float) -> None:
    f = get_format(name)
    hi = lo + width
    try:
        strat = values(f, min_value=lo, max_value=hi, allow_subnormal=False,
                       allow_negative_zero=False)
        strat.validate()
    except InvalidArgument:
        # Then no value of f lies in [lo, hi] (reference: the sorted value list).
        if f.bits <= 8:
            assert not any(lo <= v <= hi and not (0 < abs(v) < f.smallest_normal)
                           for v in _all_values(f))
        return
    x = data.draw(strat)
    assert lo <= x <= hi and not math.isnan(x)
    assert not 0 < abs(x) < f.smallest_normal
    assert not (x == 0 and math.copysign(1, x) < 0)
    assert _is_value_of(x, f)


def test_bounds_order_signed_zeros_like_hypothesis() -> None:
    assert find(values("binary16", min_value=0.0), lambda x: x == 0, settings=FIND) == 0.0
    with pytest.raises(Exception, match="No examples"):
        find(values("binary16", min_value=0.0),
             lambda x: math.copysign(1, x) < 0, settings=settings(FIND, max_examples=100))
    x = find(values("binary16", max_value=-0.0), lambda x: x == 0, settings=FIND)
    assert math.copysign(1, x) < 0


@pytest.mark.parametrize("name", ["binary16", "e4m3fn", "binary32", "bfloat16"])
def test_edges_and_infinities_shrink_into_the_binades(name: str) -> None:
    """An edge (max, max - 1 ulp) or an infinity that fails shrinks on to a simple value.
    Before, the edges sat at the end of the pieces, behind NaN and the subnormals, and
    the infinities behind the subnormals: a failing max - 1 ulp or infinity stayed
    there (``x < -100`` in binary16 gave -65472 in 2 of 5 runs).  Eight fixed seeds."""
    f = get_format(name)
    simple = {128.0, 112.0} if name == "e4m3fn" else {128.0}  # 112 = 64 * 1.75, binade 6
    for s in range(8):
        up = find(values(f), lambda x: x > 100, settings=FIND, random=random.Random(s))
        down = find(values(f), lambda x: x < -100, settings=FIND, random=random.Random(s))
        assert up in simple and -down in simple, (s, up, down)


@pytest.mark.parametrize(("name", "pred", "expected"), [
    ("e4m3fn", lambda x: x > 1, 1.5),              # 1.0 fails; one more bit: 1.5
    ("binary64", lambda x: x > 1, 1.5),
    ("bfloat16", lambda x: x > 100, 128.0),        # a power of two, not 100.5
    ("binary32", lambda x: x != 0 and abs(x) < 1, 0.5),   # not 1.4e-45
    ("binary32", lambda x: x > 1000, 1024.0),
    ("binary32", lambda x: x < -3, -4.0),
    ("e5m2", lambda x: x > 60000, math.inf),
    ("binary16", lambda x: x < -100, -128.0),      # not max - 1 ulp (-65472) from an edge
    ("bfloat16", lambda x: math.isfinite(x) and abs(x) > 100, 128.0),
])
def test_shrinking_goes_to_simple_values(name: str, pred: Callable[[float], bool],
                                         expected: float) -> None:
    """Failing examples shrink to powers of two and few significant bits (issue 16, item 7)."""
    for _ in range(2):   # whichever draw finds it first, the result is the same
        assert find(values(name), pred, settings=FIND) == expected


def test_values_draw_ties_of_narrower_formats() -> None:
    """values("binary32") draws bfloat16 and binary16 midpoints at a useful rate (item 8)."""
    counts = {"bf16": 0, "f16": 0, "all": 0}

    @given(values("binary32", allow_nan=False, allow_infinity=False))
    @settings(max_examples=1000, derandomize=True, database=None, deadline=None)
    def collect(x: float) -> None:
        counts["all"] += 1
        b = int(np.float32(x).view(np.uint32))
        counts["bf16"] += (b & 0xFFFF) == 0x8000
        counts["f16"] += (b & 0x1FFF) == 0x1000

    collect()
    assert counts["bf16"] >= 20 and counts["f16"] >= 20, counts


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "e8m0fnu",
                                  "e4m3fnuz", "binary8p4"])
def test_codes_cover_every_code_of_small_formats(name: str) -> None:
    f = get_format(name)
    seen: set[int] = set()

    @given(codes(f))
    @settings(max_examples=2500, derandomize=True, database=None, deadline=None)
    def collect(c: int) -> None:
        seen.add(c)

    collect()
    assert seen == set(range(f.num_codes))


@pytest.mark.parametrize("name", FORMATS)
def test_code_classes_partition_every_code(name: str) -> None:
    """White-box: the intervals codes() draws from tile the code space exactly."""
    f = get_format(name)
    pieces = ns._code_classes(f)
    total = sum(b - a + 1 for a, b, _ in pieces)
    assert total == f.num_codes
    for a, b, kind in pieces:
        for c in {a, b, (a + b) // 2}:
            assert (kind == "nan") == f.is_nan_code(c)
            assert (kind == "inf") == f.is_inf_code(c)


@pytest.mark.parametrize("name", ["e4m3fn", "binary16", "e5m2fnuz", "binary64"])
def test_codes_flags_exclude_classes(name: str) -> None:
    f = get_format(name)
    strat = codes(f, allow_nan=False, allow_infinity=False, allow_subnormal=False,
                  allow_negative_zero=False)

    @given(strat)
    @settings(max_examples=300, database=None, deadline=None)
    def check(c: int) -> None:
        assert 0 <= c < f.num_codes
        assert not f.is_nan_code(c) and not f.is_inf_code(c)
        v = decode_exact(c, f)
        assert not 0 < abs(Fraction(v)) < Fraction(f.smallest_normal)
        assert not (c == f.sign_mask and f.signed)   # -0

    check()


@pytest.mark.parametrize("include_overflow", [False, True])
@pytest.mark.parametrize("name", ["e4m3fn", "e2m1fn", "e5m2", "e8m0fnu", "binary8p3"])
def test_ties_are_exact_midpoints_and_all_reachable(name: str, include_overflow: bool) -> None:
    """ties() excludes max + half an ulp (464 for e4m3fn) unless asked (item 8)."""
    f = get_format(name)
    vals = _all_values(f)
    ulp_max = Fraction(2) ** (f.emax - f.trailing_bits)
    expected = {(a + b) / 2 for a, b in itertools.pairwise(vals) if a != -b}
    overflow = {f.max_exact + ulp_max / 2}
    if f.signed:
        overflow |= {-(f.max_exact + ulp_max / 2)}
    if include_overflow:
        expected |= overflow
    seen: set[Fraction] = set()

    @given(ties(f, exact=True, include_overflow=include_overflow))
    @settings(max_examples=3000, derandomize=True, database=None, deadline=None)
    def collect(t: Fraction) -> None:
        assert t in expected
        seen.add(t)

    collect()
    assert seen == expected


@given(data=st.data())
@settings(max_examples=200, deadline=None)
def test_ties_floats_match_fractions_for_binary16(data: st.DataObject) -> None:
    t = data.draw(ties("binary16"))
    if abs(t) > 65504:
        assert abs(t) == 65504 + 16        # max plus half an ulp (ulp 32 at the top)
        return
    lo = np.float16(t)                    # numpy rounds a tie to the even neighbour
    other = np.nextafter(lo, np.float16(np.inf if float(lo) < t else -np.inf))
    assert Fraction(t) == (Fraction(float(lo)) + Fraction(float(other))) / 2


E4M3FN_VALUES = _all_values(get_format("e4m3fn"))
E4M3FN_MIDPOINTS = {(a + b) / 2 for a, b in itertools.pairwise(E4M3FN_VALUES)} | {
    Fraction(448 + 16), Fraction(-448 - 16)}


@given(data=st.data())
@settings(max_examples=100, deadline=None)
def test_near_ties_are_one_wider_ulp_from_a_midpoint(data: st.DataObject) -> None:
    x = data.draw(near_ties("e4m3fn", "binary32"))
    x32 = np.float32(x)
    assert float(x32) == x
    up, down = np.nextafter(x32, np.float32(np.inf)), np.nextafter(x32, np.float32(-np.inf))
    assert Fraction(float(up)) in E4M3FN_MIDPOINTS or Fraction(float(down)) in E4M3FN_MIDPOINTS


@pytest.mark.parametrize("name", FORMATS)
def test_arrays_dtype_and_values(name: str) -> None:
    f = get_format(name)
    native = {"binary64": np.float64, "binary32": np.float32, "binary16": np.float16,
              "bfloat16": ml_dtypes.bfloat16, "e4m3fn": ml_dtypes.float8_e4m3fn,
              "e2m1fn": ml_dtypes.float4_e2m1fn, "e8m0fnu": ml_dtypes.float8_e8m0fnu}

    @given(arrays(f, (2, 3)))
    @settings(max_examples=20, database=None, deadline=None)
    def check(a: np.ndarray) -> None:
        assert a.shape == (2, 3)
        if name in native:
            assert a.dtype == np.dtype(native[name])
        if a.dtype.kind == "u":
            assert a.dtype == f.code_dtype and name in ("tf32",) + tuple(
                n for n in FORMATS if n.startswith("binary8p"))
            xs = [decode_exact(int(c), f) for c in a.ravel()]
            assert all(not isinstance(v, Fraction) or _is_value_of(float(v), f) for v in xs)
        else:
            with np.errstate(invalid="ignore"):
                xs64 = a.astype(np.float64).ravel()
            assert all(_is_value_of(float(v), f) for v in xs64 if not math.isnan(v))

    check()


def test_arrays_unique_and_custom_elements() -> None:
    @given(arrays("e4m3fn", 20, elements=values("e4m3fn", min_value=-8, max_value=8),
                  unique=True))
    @settings(max_examples=30, database=None, deadline=None)
    def check(a: np.ndarray) -> None:
        as64 = a.astype(np.float64)
        assert len(set(as64.tolist())) == 20 and np.all(np.abs(as64) <= 8)

    check()
    with pytest.raises(InvalidArgument, match="not representable"):
        find(arrays("e4m3fn", 2, elements=st.just(0.1)), lambda a: True, settings=FIND)


def test_formats_and_roundings() -> None:
    seen: set[str] = set()

    @given(formats(kinds=["fp8", "fnuz"]), roundings())
    @settings(max_examples=400, derandomize=True, database=None, deadline=None)
    def collect(name: str, r: str) -> None:
        assert r in ROUNDINGS and r != "sr"
        seen.add(name)

    collect()
    assert seen == {n for n in FORMATS if get_format(n).bits == 8}
    assert find(formats(kinds=["fp4"]), lambda n: True) == "e2m1fn"
    assert find(roundings(include_stochastic=True), lambda r: r == "sr") == "sr"


@pytest.mark.parametrize(("call", "match"), [
    (lambda: values("e4m3fn", allow_infinity=True), "allow_infinity=True"),
    (lambda: values("e2m1fn", allow_nan=True), "allow_nan=True"),
    (lambda: values("binary16", min_value=0, allow_nan=True), "allow_nan=True"),
    (lambda: values("binary16", min_value=2, max_value=1), "min_value > max_value"),
    (lambda: values("e2m1fn", min_value=6.5), "min_value"),
    (lambda: values("e4m3fn", min_value=math.nan), "min_value=nan"),
    (lambda: values("e4m3fn", allow_subnormal=1),  # type: ignore[arg-type]
     "allow_subnormal=1"),
    (lambda: values("e9m9"), "fmt='e9m9'"),
    (lambda: codes("e4m3fn", allow_nan=None),  # type: ignore[arg-type]
     "allow_nan=None"),
    (lambda: ties("binary64"), "exact=False"),
    (lambda: near_ties("binary16", "bfloat16"), "wider='bfloat16'"),
    (lambda: formats(kinds=["fp9"]), "kinds=\\['fp9'\\]"),
    (lambda: formats(kinds="fp8"), "kinds='fp8'"),
    (lambda: roundings(include_stochastic="yes"),  # type: ignore[arg-type]
     "include_stochastic='yes'"),
    (lambda: arrays("e4m3fn", 3, elements=[1.0]),  # type: ignore[arg-type]
     "elements=\\[1.0\\]"),
])
def test_bad_arguments_are_rejected_when_the_strategy_is_validated(
        call: Callable[[], Any], match: str) -> None:
    """As hypothesis checks its own strategies' arguments: at the first draw or
    ``validate()``, not when the strategy is built (a module that builds a bad strategy
    still collects; the test that draws from it fails)."""
    with pytest.raises(InvalidArgument, match=match) as info:
        call().validate()
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, HypothesisInvalidArgument)


def test_a_bad_strategy_is_built_without_error_and_fails_where_it_is_drawn() -> None:
    strategy = values("bfloat16", min_value=5, max_value=1)  # no error here
    assert "min_value=5" in repr(strategy)
    with pytest.raises(InvalidArgument, match="min_value > max_value"):
        find(strategy, lambda x: True)


def test_a_format_of_the_wrong_type_is_an_invalid_argument() -> None:
    """As hypothesis does for its own strategies: InvalidArgument, naming the argument."""
    with pytest.raises(InvalidArgument, match="fmt=3"):
        values(3).validate()  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="wider='nope'"):
        near_ties("e4m3fn", "nope").validate()


@pytest.mark.parametrize("bad", [200, -1, 1.5, True])
def test_code_arrays_refuses_elements_that_are_not_codes(bad: Any) -> None:
    """code_arrays(elements=...) checks each drawn element is a code (an e2m1fn byte 200
    once went through, and the assertions read it as -0)."""
    with pytest.raises(HypothesisInvalidArgument, match="codes of e2m1fn"):
        find(ns.code_arrays("e2m1fn", 2, elements=st.just(bad)), lambda a: True)
    got = find(ns.code_arrays("e2m1fn", 3, elements=st.integers(0, 15), view=False),
               lambda a: bool(a.max() == 15))
    assert got.dtype == np.uint8 and got.max() == 15


def test_an_infinite_bound_draws_that_infinity() -> None:
    """As hypothesis.strategies.floats(min_value=inf) draws inf: the bound leaves one
    value, which bfloat16 has (refused before as leaving no value)."""
    assert find(values("bfloat16", min_value=math.inf), lambda x: True) == math.inf
    assert find(values("bfloat16", max_value=-math.inf), lambda x: True) == -math.inf
    with pytest.raises(InvalidArgument, match="e4m3fn has no infinity"):
        values("e4m3fn", min_value=math.inf).validate()
    with pytest.raises(InvalidArgument, match="allow_infinity=False rules it out"):
        values("binary16", max_value=-math.inf, allow_infinity=False).validate()

"""Random user-defined formats (``Format(...)`` with any exponent width, precision,
bias, sign, subnormals, infinity and NaN placement the constructor accepts) through
decode, encode, next_up/next_down and ops, against the references written apart from
the library: the exact codec, the sorted line of every value and the exact ops
reference.  The built-in formats are swept elsewhere; this is for the combinations
no built-in format has (no zero in a signed format, t = 0 with subnormals, odd
biases, NaN at the top without infinities, ...)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ops_reference import NoNaN, reference
from strategies_core import nudge
from ulp_reference import line_next

import numerics
from numerics import Format, ops
from numerics.codec import decode_exact, encode_exact
from numerics.formats import Infinity, NaNEncoding


def _accepted(kw: dict) -> Format:
    """The format of ``kw``, or a rejected example where the constructor refuses it."""
    try:
        return Format(**kw)
    except ValueError:
        assume(False)
        raise  # pragma: no cover


@st.composite
def user_formats(draw: st.DrawFn, max_exponent_bits: int = 5,
                 max_trailing_bits: int = 4) -> Format:
    """A format that the constructor accepts, of at most 10 bits by default."""
    w = draw(st.integers(1, max_exponent_bits))
    kw = dict(name="user", exponent_bits=w,
              trailing_bits=draw(st.integers(0, max_trailing_bits)),
              bias=draw(st.integers(-2, (1 << w) + 1)), signed=draw(st.booleans()),
              subnormals=draw(st.booleans()), infinity=draw(st.sampled_from(list(Infinity))),
              nan=draw(st.sampled_from(list(NaNEncoding))))
    return _accepted(kw)


def same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(fmt=user_formats(), seed=st.integers(0, 2**32 - 1))
def test_user_format_against_the_references(fmt: Format, seed: int) -> None:
    rng = np.random.default_rng(seed)
    codes = np.arange(fmt.num_codes, dtype=fmt.code_dtype)
    vals = numerics.decode(codes, fmt)
    want_vals = [float(decode_exact(int(c), fmt)) for c in codes]
    assert all(same(float(g), w) for g, w in zip(vals, want_vals))

    fin = vals[np.isfinite(vals)]
    xs = np.concatenate([fin, [nudge(float(v), 1) for v in fin],
                         [nudge(float(v), -1) for v in fin],
                         [0.0, -0.0, math.inf, -math.inf, 1e300, -1e300]])
    for mode, overflow in (("rne", "ieee"), ("rd", "saturate"), ("ru", "ieee"),
                           ("rtz", "ieee"), ("rna", "saturate")):
        got = numerics.encode(xs, fmt, rounding=mode, overflow=overflow, nan="zero")
        want = [encode_exact(float(x), fmt, rounding=mode, overflow=overflow, nan="zero")
                for x in xs]
        assert got.tolist() == want, (mode, overflow)

    for direction, step in ((1, numerics.next_up), (-1, numerics.next_down)):
        got = step(fin, fmt)
        assert all(same(float(g), line_next(float(v), fmt, direction))
                   for v, g in zip(fin, got))

    for op in ("add", "mul", "div"):
        pairs = [(float(a), float(b)) for a, b in zip(rng.choice(fin, 24), rng.choice(fin, 24))]
        kept = []
        for a, b in pairs:
            try:
                kept.append((a, b, reference(op, (a, b), fmt, "rne")))
            except NoNaN:  # an invalid operation in a format without NaN: an error
                with pytest.raises(ValueError, match="has no NaN"):
                    getattr(ops, op)(np.array([a]), np.array([b]), fmt)
        if not kept:
            continue
        a_arr = np.array([k[0] for k in kept])
        b_arr = np.array([k[1] for k in kept])
        res, fl = getattr(ops, op)(a_arr, b_arr, fmt, flags=True)
        for (a, b, (value, wflags)), r, i in zip(kept, res, range(len(kept))):
            assert same(float(r), value), (op, a, b, r, value)
            assert bool(fl.inexact[i]) == wflags["inexact"], (op, a, b)
            assert bool(fl.invalid[i]) == wflags["invalid"], (op, a, b)


@pytest.mark.parametrize("kw, message", [
    (dict(signed=False, subnormals=True, nan=NaNEncoding.TOP, infinity=Infinity.NONE),
     "unsigned format is modelled as e8m0fnu"),
    (dict(signed=False, subnormals=False, nan=NaNEncoding.NONE, infinity=Infinity.NONE),
     "unsigned format is modelled as e8m0fnu"),
    (dict(subnormals=False, nan=NaNEncoding.NEGATIVE_ZERO, infinity=Infinity.NONE),
     "without zero, the code of -0 is -2\\*\\*emin"),
    (dict(trailing_bits=0), "IEEE NaNs need a non-zero trailing field"),
])
def test_formats_the_library_does_not_model_are_refused(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Format(**{"name": "x", "exponent_bits": 4, "trailing_bits": 3, "bias": 7, **kw})


@st.composite
def wide_user_formats(draw: st.DrawFn) -> Format:
    """A format of 8 to 24 bits whose range may pass float32's at either end (emax above
    127, emin below -126): the lane kernels must decline what they cannot represent."""
    w = draw(st.integers(6, 10))
    t = draw(st.integers(0, min(21, 23 - w)))
    kw = dict(name="wide", exponent_bits=w, trailing_bits=t,
              bias=draw(st.integers((1 << (w - 1)) - 40, (1 << (w - 1)) + 8)),
              signed=draw(st.booleans()), subnormals=draw(st.booleans()),
              infinity=draw(st.sampled_from(list(Infinity))),
              nan=draw(st.sampled_from(list(NaNEncoding))))
    return _accepted(kw)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(fmt=wide_user_formats(), seed=st.integers(0, 2**32 - 1))
def test_wide_user_format_against_the_references(fmt: Format, seed: int) -> None:
    """Encode (arrays of float32 and float64, every mode), round_to, next_up/next_down
    and ``x / inf`` in formats of up to 24 bits, on sampled codes, their neighbours and
    the values at and beyond float32's range."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, fmt.num_codes, 200).astype(fmt.code_dtype)
    vals = np.array([float(decode_exact(int(c), fmt)) for c in codes])
    assert all(same(float(g), w) for g, w in zip(numerics.decode(codes, fmt), vals))
    fin = vals[np.isfinite(vals)]
    edges = [0.0, -0.0, math.inf, -math.inf, 2.0**128, -(2.0**128), 2.0**130, 1e45,
             3.4028234663852886e38, 2.0**-149, 2.0**-140, 1e-50, fmt.max, -fmt.max]
    xs = np.concatenate([fin, [nudge(float(v), 1) for v in fin],
                         [nudge(float(v), -1) for v in fin], edges])
    with np.errstate(over="ignore"):
        x32 = xs.astype(np.float32)
    for mode, overflow in (("rne", "ieee"), ("rne", "saturate"), ("rd", "ieee"),
                           ("ru", "saturate"), ("rtz", "ieee")):
        for arr in (xs, x32):
            got = numerics.encode(arr, fmt, rounding=mode, overflow=overflow, nan="zero")
            want = [encode_exact(float(x), fmt, rounding=mode, overflow=overflow, nan="zero")
                    for x in arr]
            assert got.tolist() == want, (mode, overflow, arr.dtype)
    want_values = [float(decode_exact(encode_exact(float(x), fmt, nan="zero"), fmt))
                   for x in xs]
    got_values = numerics.round_to(xs, fmt, nan="zero")
    assert all(same(float(g), w) for g, w in zip(got_values, want_values))

    if fmt.bits <= 16:  # (the sorted line of every value)
        line = np.concatenate([fin, [math.inf] if fmt.has_infinity else []])
        for direction, step in ((1, numerics.next_up), (-1, numerics.next_down)):
            got = step(line, fmt)
            assert all(same(float(g), line_next(float(v), fmt, direction))
                       for v, g in zip(line, got)), direction

    if fmt.has_infinity:  # x / inf is exactly zero
        a = fin[:8]
        try:
            quotients = [reference("div", (float(v), math.inf), fmt, "rne") for v in a]
        except NoNaN:
            with pytest.raises(ValueError, match="has no NaN"):
                ops.div(a, np.full(a.size, math.inf), fmt)
            return
        res, fl = ops.div(a, np.full(a.size, math.inf), fmt, flags=True)
        for i, (value, wflags) in enumerate(quotients):
            assert same(float(res[i]), value), (a[i], res[i], value)
            assert bool(fl.invalid[i]) == wflags["invalid"]
            assert bool(fl.inexact[i]) == wflags["inexact"]


def test_division_by_infinity_without_zero() -> None:
    """``x / inf`` is exactly zero: invalid in a format without zero (NaN), an error where
    that format has no NaN either; never ``2**emin`` flagged exact."""
    f = Format(name="z", exponent_bits=5, trailing_bits=2, bias=15, subnormals=False)
    x = np.array([1.0, -1.0, 3.0])
    for y in (math.inf, -math.inf):
        res, fl = ops.div(x, np.full(3, y), f, flags=True)
        assert np.isnan(res).all() and fl.invalid.all() and not fl.inexact.any()
    g = Format(name="zn", exponent_bits=5, trailing_bits=2, bias=15, subnormals=False,
               infinity=Infinity.TOP, nan=NaNEncoding.NONE)
    with pytest.raises(ValueError, match="has no NaN"):
        ops.div(x, np.full(3, math.inf), g)


def test_next_of_infinity_in_an_unsigned_format() -> None:
    """IEEE nextUp(+inf) = +inf and nextDown(+inf) = max, also without a sign bit."""
    f = Format(name="u", exponent_bits=6, trailing_bits=9, bias=29, signed=False,
               subnormals=False)
    assert numerics.decode(f.code_of_inf, f) == math.inf
    assert numerics.next_up(math.inf, f) == math.inf
    assert numerics.next_down(math.inf, f) == f.max
    assert numerics.next_down(np.array([math.inf, 2.0]), f).tolist() == [
        f.max, line_next(2.0, f, -1)]


def test_eps_is_the_spacing_at_one_as_finfo_has_it() -> None:
    """Format.eps and finfo.eps agree where 1.0 lies below the smallest normal."""
    e = Format(name="emin3", exponent_bits=3, trailing_bits=4, bias=-2)  # emin = 3
    assert e.eps == numerics.finfo(e).eps == float(numerics.next_up(1.0, e)) - 1 == 0.5
    assert numerics.get_format("bfloat16").eps == 2.0**-7


def test_epsneg_of_a_signed_format_without_zero() -> None:
    """No zero and 1.0 the smallest normal: the value below 1.0 is -1.0, so epsneg = 2."""
    s = Format(name="pm1", exponent_bits=2, trailing_bits=1, bias=0, subnormals=False,
               infinity=Infinity.NONE, nan=NaNEncoding.NONE)
    assert numerics.finfo(s).epsneg == 1 - float(numerics.next_down(1.0, s)) == 2.0


@pytest.mark.parametrize("aliases", ["fp8", None, [1, 2], ("",)])
def test_aliases_must_be_names(aliases: object) -> None:
    with pytest.raises(TypeError, match="Got aliases="):
        Format(name="y", exponent_bits=4, trailing_bits=3, bias=7,
               aliases=aliases)  # type: ignore[arg-type]
    assert Format(name="y", exponent_bits=4, trailing_bits=3, bias=7,
                  aliases=["a"]).aliases == ("a",)  # type: ignore[arg-type]


def test_a_format_without_normal_values_is_refused() -> None:
    """One exponent bit with IEEE specials leaves only subnormals: emin > emax."""
    with pytest.raises(ValueError, match="Got exponent_bits=1.*no normal values"):
        Format(name="allsub", exponent_bits=1, trailing_bits=2, bias=1)


def test_format_of_dtype_none_is_none() -> None:
    assert numerics.format_of_dtype(None) is None


@pytest.mark.parametrize("t", [7, 15, 18, 23, 24, 31, 40, 52])
def test_wider_formats_with_binary32_exponents_decode_exactly(t: int) -> None:
    """8 exponent bits, bias 127, IEEE specials and t trailing bits: float32's top bits
    where t <= 23, and decoded in general beyond (a 33-bit and wider format once went
    through float32's shift, with a negative shift: every value 0)."""
    fmt = Format(name=f"e8m{t}", exponent_bits=8, trailing_bits=t, bias=127)
    rng = np.random.default_rng(t)
    codes = rng.integers(0, fmt.num_codes, 4000, dtype=np.uint64).astype(fmt.code_dtype)
    codes[:4] = [0, 1, fmt.num_codes >> 1, (fmt.num_codes >> 1) - 1]
    want = [decode_exact(int(c), fmt) for c in codes]
    got = numerics.decode(codes, fmt)
    for c, w, g in zip(codes.tolist(), want, got.tolist()):
        assert (math.isnan(g) and math.isnan(w)) or g == w, (hex(c), w, g)
    x = np.array([1.0, 1.5, -2.0, 3e-39, 1e38, np.inf])
    assert [float(decode_exact(encode_exact(v, fmt), fmt)) for v in x] == \
        numerics.round_to(x, fmt).tolist()

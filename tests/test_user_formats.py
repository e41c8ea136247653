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


@st.composite
def user_formats(draw: st.DrawFn) -> Format:
    """A format of at most 10 bits that the constructor accepts."""
    w = draw(st.integers(1, 5))
    kw = dict(name="user", exponent_bits=w, trailing_bits=draw(st.integers(0, 4)),
              bias=draw(st.integers(-2, (1 << w) + 1)), signed=draw(st.booleans()),
              subnormals=draw(st.booleans()), infinity=draw(st.sampled_from(list(Infinity))),
              nan=draw(st.sampled_from(list(NaNEncoding))))
    try:
        return Format(**kw)  # type: ignore[arg-type]
    except ValueError:
        assume(False)
        raise  # pragma: no cover


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

"""Signed formats without subnormals, and so without zero (a user-defined ``Format(...,
subnormals=False)``): exponent field 0 is an ordinary binade, magnitude code 0 is
``2**emin`` and the codes with the sign bit set are its negatives.

Every path is checked against the independent references: the exact codec
(``decode_exact``/``encode_exact``) by a round trip through every code, the sorted line
of every value (``line_next``) for next_up/next_down, and the exact ops reference.  The
bugs these pin: ``-2**emin`` encoded as ``+2**emin`` (the sign was dropped with
magnitude code 0, as for a zero), next_up/next_down taking 0 and values below
``2**emin`` as values of the format, and an exact zero result of an operation coming
back as ``2**emin`` flagged exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ops_reference import reference
from strategies_core import nudge
from ulp_reference import line_next

import numerics
from numerics import Format, ops
from numerics.codec import decode_exact, encode_exact
from numerics.formats import Infinity, NaNEncoding

FORMATS = (
    Format(name="e4m3_nozero", exponent_bits=4, trailing_bits=3, bias=7, subnormals=False),
    Format(name="e3m2_nozero_fn", exponent_bits=3, trailing_bits=2, bias=3, subnormals=False,
           infinity=Infinity.NONE, nan=NaNEncoding.NONE),
    Format(name="e5m10_nozero", exponent_bits=5, trailing_bits=10, bias=15, subnormals=False),
)
MODES = ("rne", "rna", "rtz", "ru", "rd", "rto")


def finite_values(fmt: Format) -> np.ndarray:
    codes = np.arange(fmt.num_codes, dtype=fmt.code_dtype)
    vals = numerics.decode(codes, fmt)
    return vals[np.isfinite(vals)]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_every_code_round_trips_through_the_exact_codec(fmt: Format) -> None:
    for code in range(fmt.num_codes):
        v = decode_exact(code, fmt)
        if isinstance(v, float) and math.isnan(v):
            continue
        assert v != 0
        for mode in MODES:
            assert encode_exact(v, fmt, rounding=mode) == code, (code, v, mode)
    vals = finite_values(fmt)
    assert vals.min() == -fmt.max and np.abs(vals).min() == fmt.smallest_normal
    assert not (vals == 0).any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_encode_against_the_exact_codec(fmt: Format) -> None:
    vals = finite_values(fmt)
    tiny = fmt.smallest_normal
    if fmt.bits > 8:  # every 61st value and the smallest magnitudes (the exact codec is slow)
        vals = np.concatenate([vals[::61], vals[np.argsort(np.abs(vals))[:16]]])
    xs = np.concatenate([vals, [nudge(float(v), 1) for v in vals],
                         [nudge(float(v), -1) for v in vals],
                         [0.0, -0.0, tiny / 2, -tiny / 3, tiny * 0.999, -tiny * 0.999]])
    for x32 in (False, True):
        arr = xs.astype(np.float32) if x32 else xs
        for mode in MODES:
            got = numerics.encode(arr, fmt, rounding=mode)
            want = [encode_exact(float(x), fmt, rounding=mode) for x in arr]
            assert got.tolist() == want, mode
    assert int(numerics.encode(-tiny, fmt)) == 1 << (fmt.bits - 1)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("direction", [1, -1])
def test_next_against_the_line(fmt: Format, direction: int) -> None:
    vals = finite_values(fmt)
    step = numerics.next_up if direction > 0 else numerics.next_down
    got = step(vals, fmt)
    want = [line_next(float(v), fmt, direction) for v in vals]
    for v, g, w in zip(vals.tolist(), got.tolist(), want):
        assert g == w or (math.isnan(g) and math.isnan(w)), (v, g, w)
    assert float(step(fmt.smallest_normal * -direction, fmt)) == fmt.smallest_normal * direction


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("bad", [0.0, -0.0, 0.5, -0.75, 1.0 / 3.0])
def test_values_below_the_smallest_normal_are_rejected(fmt: Format, bad: float) -> None:
    x = bad * fmt.smallest_normal if bad not in (0.0,) else bad
    arr = np.array([1.0, 1.0, x])
    for step in (numerics.next_up, numerics.next_down):
        with pytest.raises(ValueError, match=r"^Got x\[2\]=.*, which is not a value of"):
            step(arr, fmt)
    with pytest.raises(ValueError, match=r"^Got b\[2\]=.*, which is not representable"):
        ops.add(np.ones(3), arr, fmt)
    big = np.ones(1 << 18)
    big[200_003] = x
    with pytest.raises(ValueError, match=r"^Got a\[200003\]="):
        ops.mul(big, big, fmt)  # the threaded check finds the first misfit


@pytest.mark.parametrize("fmt", FORMATS[:1], ids=lambda f: f.name)
def test_an_exact_zero_result_is_invalid(fmt: Format) -> None:
    a = np.array([1.75, 1.0, fmt.smallest_normal])
    b = np.array([-1.75, -1.0, -fmt.smallest_normal])
    res, fl = ops.add(a, b, fmt, flags=True)
    assert np.isnan(res).all() and fl.invalid.all() and not fl.inexact.any()
    for x, y in zip(a, b):
        want, _ = reference("add", (float(x), float(y)), fmt, "rne")
        assert math.isnan(want)
    with pytest.raises(ValueError, match="has no NaN"):
        ops.add(np.array([1.0]), np.array([-1.0]), FORMATS[1])

"""User-defined formats in corners of the format space (third audit): neighbours of a
longdouble in formats without zero, and -inf in an unsigned format."""

from __future__ import annotations

import numpy as np
import pytest
from ops_reference import reference

import numerics
from numerics import Format, Infinity, NaNEncoding, ops

L = np.longdouble
NO_ZERO = Format(name="nozero", exponent_bits=3, trailing_bits=2, bias=3, subnormals=False,
                 infinity=Infinity.NONE, nan=NaNEncoding.TOP)
UNSIGNED_HIGH = Format(name="u_hi", exponent_bits=3, trailing_bits=1, bias=-2, signed=False,
                       subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.TOP)
UNSIGNED_INF = Format(name="u_inf", exponent_bits=4, trailing_bits=2, bias=3, signed=False,
                      subnormals=False)

needs_long = pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60,
                                reason="longdouble is float64 here")


@needs_long
@pytest.mark.parametrize("fmt, x, up, down", [
    (NO_ZERO, L(1) + L(2.0**-60), 1.25, 1.0),       # 0 (the old placeholder) is no value
    (UNSIGNED_HIGH, L(4) + L(2.0**-60), 6.0, 4.0),  # nor is 1
    (NO_ZERO, L(2.0**-5) + L(2.0**-60), 0.125, -0.125),  # between -2**emin and 2**emin
    (NO_ZERO, -(L(2.0**-5) + L(2.0**-60)), 0.125, -0.125),
    (NO_ZERO, L(0.125) + L(2.0**-62), 0.15625, 0.125),
])
def test_neighbours_of_a_longdouble(fmt: Format, x: np.longdouble, up: float,
                                    down: float) -> None:
    assert numerics.next_up(x, fmt) == up
    assert numerics.next_down(x, fmt) == down
    # an array with the mirror image (next_up(-x) == -next_down(x) in a signed format)
    xs, want = (np.array([x, -x]), [up, -down]) if fmt.signed else (np.array([x, x]), [up, up])
    assert list(numerics.next_up(xs, fmt)) == want


@pytest.mark.parametrize("rounding", ["rne", "rtz", "ru", "rd", "sr"])
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_minus_infinity_in_an_unsigned_format_is_invalid(rounding: str,
                                                         overflow: str) -> None:
    v, fl = ops.sub(8.0, np.inf, UNSIGNED_INF, rounding=rounding, overflow=overflow,
                    flags=True, rng=0)
    assert np.isnan(v) and fl.invalid and not (fl.inexact or fl.overflow)
    want, want_flags = reference("sub", (8.0, np.inf), UNSIGNED_INF, "rne", overflow,
                                 "after")
    assert np.isnan(want) and want_flags["invalid"]
    # +inf stays a value, with no flag
    v, fl = ops.sub(np.inf, 8.0, UNSIGNED_INF, flags=True)
    assert v == np.inf and not any(fl.any().values())


@pytest.mark.parametrize("name", ["e4m3fn", "e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz"])
@pytest.mark.parametrize("operands", ["float32", "float64", "codes"])
def test_overflow_to_nan_is_the_one_quiet_nan(name: str, operands: str) -> None:
    """A negative result beyond max in a format with NaN and no infinity is NaN under
    overflow="ieee": the one quiet NaN, as every NaN result is (the lane loops gave it
    the result's sign), in every lane loop, with and without flags."""
    from numerics.dtypes import dtype_of

    big = numerics.get_format(name).max
    a = np.array([-big, big, -big, -1.0, 1.0])
    b = np.array([-big, big, 2.0, 0.0, 0.0])
    kind = {"float32": np.float32, "float64": np.float64, "codes": dtype_of(name)}[operands]
    x, y = a.astype(kind), b.astype(kind)
    for op in ("add", "mul", "div", "fma"):
        args = (x, y, x) if op == "fma" else (x, y)
        if op == "div":
            args = (x, np.zeros_like(x))
        for flags in (False, True):
            for dtype in (np.float64, np.float32):
                got = getattr(ops, op)(*args, name, flags=flags, dtype=dtype)
                got = got[0] if flags else got
                nan = np.isnan(got)
                assert nan.any(), (op, flags, dtype)
                bits = got.view(np.uint64 if dtype == np.float64 else np.uint32)[nan]
                want = 0x7FF8000000000000 if dtype == np.float64 else 0x7FC00000
                assert (bits == want).all(), (op, flags, dtype, [hex(v) for v in bits])

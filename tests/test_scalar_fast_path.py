"""The scalar fast paths of encode / decode / round_to / ulp / next_up / next_down.

A Python or numpy scalar skips the array intake and goes to one scalar kernel call (or
plain Python arithmetic) with a per-argument cache of the format's parameters.  Each
fast path is checked against an independent route for the same input:

* encode / round_to / decode against the exact reference (numerics.codec), and the
  result's type against what the array path returns for the same scalar;
* ulp / next_up / next_down against the numpy array path (a one-element array);
* inputs the fast path must hand over (ints beyond 2**53, NaN into a format without
  NaN, bad options, bad formats) raise or answer exactly as the array path does.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies_core import ALL_FORMATS, DETERMINISTIC, float64_near_grid

import numerics
from numerics.codec import decode_exact, encode_exact
from numerics.formats import Format, get_format

FLOAT_TYPES = (float, np.float64, np.float32, np.float16)
INT_TYPES = (int, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16,
             np.uint8)


def as_type(value: float, kind: Any) -> Any | None:
    """``value`` as a scalar of ``kind`` when that is exact, else None."""
    with np.errstate(over="ignore", invalid="ignore"):
        converted = kind(value)
    same = float(converted) == value or (math.isnan(value) and math.isnan(float(converted)))
    return converted if same and math.copysign(1, float(converted)) == math.copysign(
        1, value) else None


def same_bits(a: Any, b: Any) -> bool:
    return bool(np.float64(a).view(np.uint64) == np.float64(b).view(np.uint64))


@st.composite
def format_and_float(draw: st.DrawFn) -> tuple[Format, Any]:
    fmt = draw(st.sampled_from(ALL_FORMATS))
    x = draw(float64_near_grid(fmt))
    kind = draw(st.sampled_from(FLOAT_TYPES))
    scalar = as_type(x, kind)
    return fmt, x if scalar is None else scalar


@given(format_and_float(), st.sampled_from(DETERMINISTIC),
       st.sampled_from(["ieee", "saturate"]), st.sampled_from(["raise", "zero"]))
def test_encode_float_scalars_match_reference(case: tuple[Format, Any], rounding: str,
                                              overflow: str, nan: str) -> None:
    fmt, x = case
    options: dict[str, Any] = {"rounding": rounding, "overflow": overflow, "nan": nan}
    if math.isnan(x) and not fmt.has_nan and nan == "raise":
        with pytest.raises(ValueError, match="has no NaN"):
            numerics.encode(x, fmt, **options)
        with pytest.raises(ValueError, match="has no NaN"):
            numerics.round_to(x, fmt)
        return
    got = numerics.encode(x, fmt, **options)
    want = encode_exact(float(x), fmt, **options)
    assert int(got) == want
    assert type(got) is fmt.code_dtype.type  # what the array path gives a scalar
    assert type(got) is type(numerics.encode(np.asarray(x), fmt, **options)[()])
    if rounding == "rne" and overflow == "ieee" and nan == "raise":
        value = numerics.round_to(x, fmt)
        assert type(value) is np.float64
        reference = decode_exact(encode_exact(float(x), fmt), fmt)
        assert value == reference or (math.isnan(value) and math.isnan(reference))
        assert same_bits(value, numerics.round_to(np.array([x]), fmt)[0])


@given(st.sampled_from(ALL_FORMATS), st.integers(-(2**64) + 1, 2**64 - 1)
       | st.integers(-(2**54), 2**54) | st.integers(-300, 300), st.sampled_from(INT_TYPES),
       st.sampled_from(DETERMINISTIC))
def test_encode_int_scalars_match_reference(fmt: Format, i: int, kind: Any,
                                            rounding: str) -> None:
    try:
        x = kind(i) if kind is int else np.array(i).astype(kind)[()]
    except OverflowError:
        x = i
    if int(x) != i:
        x = i
    got = numerics.encode(x, fmt, rounding=rounding)
    assert int(got) == encode_exact(i, fmt, rounding=rounding)
    assert type(got) is fmt.code_dtype.type
    if not (fmt.name == "e8m0fnu" and i <= 0) and not (not fmt.has_nan and abs(i) > 2**200):
        value = numerics.round_to(x, fmt)
        assert type(value) is np.float64
        reference = decode_exact(encode_exact(i, fmt), fmt)
        assert value == reference or (math.isnan(value) and math.isnan(reference))


@given(st.sampled_from(ALL_FORMATS), st.data(), st.sampled_from(INT_TYPES))
def test_decode_int_scalars_match_reference(fmt: Format, data: st.DataObject,
                                            kind: Any) -> None:
    code = data.draw(st.integers(0, fmt.num_codes - 1))
    if kind is not int:
        info = np.iinfo(kind)
        if code > info.max:
            kind = int
    x = code if kind is int else kind(code)
    got = numerics.decode(x, fmt)
    assert type(got) is np.float64
    want = decode_exact(code, fmt)
    assert got == want or (math.isnan(got) and math.isnan(want))
    # the reference has no NaN signs or payloads: the bits come from the array path
    assert same_bits(got, numerics.decode(np.array([code], np.uint64), fmt)[0])


@pytest.mark.parametrize("kind", [int, np.int8, np.int64, np.uint16])
def test_decode_scalar_out_of_range_raises_as_before(kind: Any) -> None:
    with pytest.raises(ValueError, match="outside"):
        numerics.decode(kind(1 << 8) if kind is not np.int8 else 0x100, "e4m3fn")
    if kind is not np.uint16:
        with pytest.raises(ValueError, match="negative code"):
            numerics.decode(kind(-1), "e4m3fn")


@given(format_and_float())
def test_ulp_scalars_match_array_path(case: tuple[Format, Any]) -> None:
    fmt, x = case
    got = numerics.ulp(x, fmt)
    want = numerics.ulp(np.array([x], np.float64), fmt)[0]
    assert type(got) is np.float64
    assert got == want or (math.isnan(got) and math.isnan(want))


@given(st.sampled_from(ALL_FORMATS), st.integers(-(2**60), 2**60) | st.integers(-5, 5),
       st.sampled_from(INT_TYPES))
def test_ulp_and_next_of_int_scalars_match_array_path(fmt: Format, i: int, kind: Any) -> None:
    try:
        x = kind(i) if kind is int else np.array(i).astype(kind)[()]
    except OverflowError:
        x = i
    if int(x) != i:
        x = i
    got = numerics.ulp(x, fmt)
    if abs(i) <= 2**53:
        assert got == numerics.ulp(np.array([i], np.float64), fmt)[0]
    else:  # a Python int is taken exactly (numpy ints beyond 2**53: as before, via float64)
        assert got == numerics.ulp(x if type(x) is int else float(x), fmt)
    for fn in (numerics.next_up, numerics.next_down):
        try:
            want = fn(np.array([float(i)]), fmt)[0] if abs(i) <= 2**53 else None
        except ValueError as err:
            with pytest.raises(ValueError, match="not a value of"):
                fn(x, fmt)
            assert "x[0]" in str(err)
            continue
        if want is not None:
            got = fn(x, fmt)
            assert type(got) is np.float64
            assert got == want or (math.isnan(got) and math.isnan(want))


@st.composite
def format_and_value(draw: st.DrawFn) -> tuple[Format, Any]:
    """A format and one of its values (as a float scalar type that holds it exactly)."""
    fmt = draw(st.sampled_from(ALL_FORMATS))
    code = draw(st.integers(0, fmt.num_codes - 1)
                | st.integers(0, 3) | st.integers(fmt.max_finite_code - 2, fmt.max_finite_code))
    x = float(decode_exact(code, fmt))
    kind = draw(st.sampled_from(FLOAT_TYPES))
    scalar = as_type(x, kind)
    return fmt, x if scalar is None else scalar


@given(format_and_value())
def test_next_up_down_scalars_match_array_path(case: tuple[Format, Any]) -> None:
    fmt, x = case
    for fn in (numerics.next_up, numerics.next_down):
        got = fn(x, fmt)
        want = fn(np.array([float(x)]), fmt)[0]
        assert type(got) is np.float64
        assert got == want or (math.isnan(got) and math.isnan(want)), (fn.__name__, x)
        assert math.isnan(got) or math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("kind", FLOAT_TYPES)
def test_next_of_unrepresentable_scalar_names_the_value(kind: Any) -> None:
    with pytest.raises(ValueError, match=r"Got x=0\.\d+, which is not a value of bfloat16"):
        numerics.next_up(kind(0.1), "bf16")


@pytest.mark.parametrize("x", [0.5, 3, np.float32(0.5), np.int16(3)])
def test_bad_options_raise_the_array_paths_errors(x: Any) -> None:
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"rounding": "bogus"}, ValueError, "rounding"),
        ({"rounding": ["rne"]}, ValueError, "rounding"),
        ({"overflow": "wrap"}, ValueError, "overflow"),
        ({"nan": "keep"}, ValueError, "nan="),
        ({"sr_bits": 8}, ValueError, "sr_bits"),
    ]
    for options, error, text in cases:
        for arg in (x, np.asarray(x)):
            with pytest.raises(error, match=text) as caught:
                numerics.encode(arg, "e4m3fn", **options)
            message = str(caught.value)
            del caught
        with pytest.raises(error) as again:
            numerics.encode(np.asarray(x), "e4m3fn", **options)
        assert str(again.value) == message
    with pytest.raises(ValueError, match="not a known format"):
        numerics.encode(x, "e4m3fnx")
    with pytest.raises(TypeError, match="expected a numerics.Format"):
        numerics.encode(x, 3.5)
    with pytest.raises(ValueError, match="not a known format"):
        numerics.decode(1, "e4m3fnx")
    with pytest.raises(ValueError, match="not a known format"):
        numerics.round_to(x, "e4m3fnx")


def test_format_arguments_of_every_kind_and_fresh_formats() -> None:
    bf16 = get_format("bf16")
    codes = {int(numerics.encode(1.5, f)) for f in ("bf16", "bfloat16", "BF16", bf16)}
    assert codes == {0x3FC0}
    assert int(numerics.encode(1.5, np.float16)) == 0x3E00
    # A fresh Format with the same fields (same id may come back after the old one dies)
    # and one with other fields: the per-argument cache keeps each apart.
    import dataclasses

    for _ in range(3):
        other = dataclasses.replace(bf16, name="mine", aliases=(), trailing_bits=3)
        assert int(numerics.encode(1.5, other)) == encode_exact(1.5, other)
        assert numerics.decode(0x3C, other) == decode_exact(0x3C, other)
        assert numerics.round_to(1.0625, other) == 1.0
        del other


@given(format_and_float(), st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 99),
                                     st.integers(2**64, 2**70)),
       st.sampled_from([None, 1, 3, 8, 16, 31, 53, 64]), st.sampled_from(["ieee", "saturate"]))
def test_stochastic_scalars_take_the_first_draw_of_the_stream(
        case: tuple[Format, Any], seed: int, sr_bits: int | None, overflow: str) -> None:
    """A scalar with an int seed rounds as element 0 of the documented stream (the draw
    encode_exact is fed from tests/sr_stream.py), and as a one-element array does; a
    NaN into a format without NaN still raises."""
    from sr_stream import draw

    fmt, x = case
    k = 64 if sr_bits is None else sr_bits
    options: dict[str, Any] = {"rounding": "sr", "rng": seed, "sr_bits": sr_bits,
                               "overflow": overflow}
    if math.isnan(float(x)) and not fmt.has_nan:
        with pytest.raises(ValueError, match="NaN"):
            numerics.encode(x, fmt, **options)
        return
    want = encode_exact(float(x), fmt, rounding="sr", overflow=overflow, sr_bits=sr_bits,
                        uniform=Fraction(draw(seed % 2**64, 0, k), 2**k))
    got = numerics.encode(x, fmt, **options)
    assert type(got) is fmt.code_dtype.type and int(got) == want
    assert numerics.encode(np.array([x]), fmt, **options).tolist() == [want]
    value = numerics.round_to(x, fmt, **options)
    assert type(value) is np.float64
    assert same_bits(value, decode_exact(want, fmt)) or (
        math.isnan(value) and math.isnan(decode_exact(want, fmt)))

"""The public API's edges found by the API audit: ``out=`` arrays that are ndarray
subclasses or overlap the input, lists whose elements numpy would convert inexactly
(numpy integers beyond 2**53, Fractions, None, booleans), torch results' shape and dtype,
and argument checks (formats, Format fields, thread counts, keywords, ``rng``).

Expectations are independent of numerics: numpy / ml_dtypes conversions of values each
format holds exactly, and Fraction arithmetic.
"""

from __future__ import annotations

import decimal
import math
import re
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import numerics
from numerics import ops

#: Format name, its numpy / ml_dtypes dtype and the dtype of its codes.
FORMATS: list[tuple[str, Any, Any]] = [
    ("binary64", np.float64, np.uint64),
    ("binary32", np.float32, np.uint32),
    ("bfloat16", ml_dtypes.bfloat16, np.uint16),
    ("binary16", np.float16, np.uint16),
    ("e4m3fn", ml_dtypes.float8_e4m3fn, np.uint8),
]
#: Values of every format above, so every rounding mode gives the same code.
VALUES = [1.0, 2.0, 3.0, 4.0, -0.5, 0.25, 1.5, -6.0]
MODES = ["rne", "rna", "rtz", "ru", "rd", "rto", "sr"]


def _codes(values: list[float], dtype: Any, code_dtype: Any) -> list[int]:
    """The codes numpy / ml_dtypes give ``values`` (each exact in ``dtype``)."""
    return np.array(values, np.float64).astype(dtype).view(code_dtype).tolist()


# ------------------------------------------------------------------ out= subclasses
def _matrix(shape: tuple[int, ...], dt: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # (np.matrix's own)
        return np.asmatrix(np.zeros(shape, dt))


@pytest.mark.parametrize("make", [_matrix, lambda shape, dt: np.ma.zeros(shape, dt)],
                         ids=["matrix", "masked"])
def test_out_subclasses_are_refused(make: Any) -> None:
    """np.matrix reshapes to 2-D (the kernels wrote every value into the first element, or
    past the array) and a masked array has a mask the results cannot honour: a TypeError
    naming ``out``, not wrong codes, a crash or numba's error."""
    x = np.array([[0.1, 0.2, 0.3]])
    with pytest.raises(TypeError, match="Got out of type numpy.*expected a numpy.ndarray"):
        numerics.encode(x, "bfloat16", out=make((1, 3), np.uint16))
    codes = np.arange(1000, dtype=np.uint64).reshape(1, 1000)
    with pytest.raises(TypeError, match="Got out of type numpy.*expected a numpy.ndarray"):
        numerics.decode(codes, "binary64", out=make((1, 1000), np.float64))


def test_out_memmap_is_written(tmp_path: Path) -> None:
    """A numpy.memmap (an ndarray subclass that is plain storage) is written and returned."""
    x = np.array([0.1, 0.2, 0.3])
    codes = np.memmap(tmp_path / "codes", dtype=np.uint16, mode="w+", shape=(3,))
    assert numerics.encode(x, "bfloat16", out=codes) is codes
    assert codes.tolist() == x.astype(ml_dtypes.bfloat16).view(np.uint16).tolist()
    values = np.memmap(tmp_path / "values", dtype=np.float64, mode="w+", shape=(3,))
    assert numerics.decode(np.asarray(codes), "bfloat16", out=values) is values
    assert values.tolist() == x.astype(ml_dtypes.bfloat16).astype(np.float64).tolist()


# ------------------------------------------------------------------ out= overlapping x
#: More elements than one block of the float64 input loops (numerics.kernels.narrow.CHUNK,
#: 2**16: a block is read before its codes are written) and fewer than the threads take.
OVERLAP_VALUES = np.array(VALUES * 8750)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, dtype, code_dtype", FORMATS)
def test_encode_out_overlapping_the_input(name: str, dtype: Any, code_dtype: Any,
                                          in_dtype: Any, mode: str) -> None:
    """``out`` sharing memory with ``x`` (at the same address, one element in, or ending
    where ``x`` ends) gives the codes of ``x`` as it was, as numpy's ufuncs do, not codes
    of values the loop had already overwritten."""
    if name == "binary64" and in_dtype is np.float32:
        pytest.skip("float32 input: the codes of binary64 are wider than the input")
    want = OVERLAP_VALUES.astype(dtype).view(code_dtype)
    n, size = OVERLAP_VALUES.size, np.dtype(in_dtype).itemsize
    width = np.dtype(code_dtype).itemsize
    rng = 7 if mode == "sr" else None
    for start in (0, size, n * (size - width)):
        buf = np.zeros(n * (size + width), np.uint8)
        x = buf[:n * size].view(in_dtype)
        x[:] = OVERLAP_VALUES
        out = buf[start:start + n * width].view(code_dtype)
        assert np.shares_memory(x, out)
        assert numerics.encode(x, name, rounding=mode, rng=rng, out=out) is out
        assert np.array_equal(out, want), start


@pytest.mark.parametrize("name, dtype, code_dtype", FORMATS)
@pytest.mark.parametrize("value_dtype", [np.float64, np.float32])
def test_decode_out_overlapping_the_codes(name: str, dtype: Any, code_dtype: Any,
                                          value_dtype: Any) -> None:
    """Codes stored in the memory of ``out`` (at its start, one value in, or one value
    before it) decode as they were before the first values overwrote them."""
    if value_dtype is np.float32 and name == "binary64":
        pytest.skip("binary64 values are not all float32 values")
    codes = OVERLAP_VALUES.astype(dtype).view(code_dtype)
    want = OVERLAP_VALUES.astype(value_dtype)
    n, size = OVERLAP_VALUES.size, np.dtype(value_dtype).itemsize
    width = np.dtype(code_dtype).itemsize
    for codes_at, out_at in ((0, 0), (size, 0), (0, size)):
        buf = np.zeros(n * (size + width) + size, np.uint8)
        out = buf[out_at:out_at + n * size].view(value_dtype)
        c = buf[codes_at:codes_at + n * width].view(code_dtype)
        c[:] = codes
        assert np.shares_memory(c, out)
        assert numerics.decode(c, name, out=out) is out
        assert np.array_equal(out, want), (codes_at, out_at)


# ------------------------------------------------------------------ lists of numpy integers
def test_lists_with_numpy_integers_beyond_2_53() -> None:
    """numpy rounds ``[np.int64(2**53 + 1), 0.5]`` to float64; the values are taken
    exactly, as the same scalars alone are."""
    up = np.array([2.0**53 + 2]).view(np.uint64)[0]  # 2**53 + 1 rounded up
    assert numerics.encode([np.int64(2**53 + 1), 0.5], "binary64", rounding="ru")[0] == up
    assert numerics.encode([np.array(2**53 + 1), 0.5], "binary64", rounding="ru")[0] == up
    assert numerics.encode([np.array([2**53 + 1]), np.array([0.5])], "binary64",
                           rounding="ru")[0, 0] == up
    down = np.array([2.0**64 - 2**11]).view(np.uint64)[0]  # the float64 below 2**64
    assert numerics.encode([np.uint64(2**64 - 1), -1], "binary64", rounding="rd")[0] == down
    with pytest.raises(ValueError, match=r"a\[0\]=9007199254740993, which is not "):
        ops.add([np.int64(2**53 + 1), 0.5], 0.0, "binary64")
    with pytest.raises(ValueError, match=r"a\[0\]=18446744073709551615, which is not "):
        ops.add([np.uint64(2**64 - 1), -1], 0.0, "binary64")
    # ulp of a numpy integer that is not a float64: refused, as the scalar is
    with pytest.raises(ValueError, match="not exactly a float64 value"):
        numerics.ulp(np.int64(2**54 - 1), "binary64")
    with pytest.raises(ValueError, match=r"x\[0\]=18014398509481983, which is not exactly"):
        numerics.ulp([np.int64(2**54 - 1), 0.5], "binary64")
    # a Python int is exact: 2**54 - 1 lies in [2**53, 2**54), quantum 2**(53 - 52)
    assert numerics.ulp([2**54 - 1, 0.5], "binary64").tolist() == [2.0, 2.0**-53]


# ------------------------------------------------------------------ lists of Fractions
def test_ulp_functions_take_list_elements_as_the_scalars() -> None:
    """Fractions (and ints) in a list are taken exactly, as they are alone: ulp of
    1 - 2**-60 is the quantum of [1/2, 1), 2**(-1 - 7) in bfloat16, not that of the
    float64 rounding 1.0; a Fraction that is not a float64 value is refused."""
    x = Fraction(2**60 - 1, 2**60)
    assert numerics.ulp([x], "bfloat16").tolist() == [2.0**-8] == [numerics.ulp(x, "bf16")]
    assert numerics.ulp((x, 2**1100), "bfloat16").tolist() == [2.0**-8, float("inf")]
    third = Fraction(1, 3)
    for fn in (numerics.next_up, numerics.next_down):
        with pytest.raises(ValueError, match="not exactly a float64 value"):
            fn(third, "binary64")
        with pytest.raises(ValueError, match=r"x\[1\]=Fraction\(1, 3\), which is not exact"):
            fn([0.5, third], "binary64")
    assert numerics.next_up([Fraction(1, 2), 1], "bfloat16").tolist() == [
        float(Fraction(1, 2) + Fraction(1, 2**8)), float(1 + Fraction(1, 2**7))]
    with pytest.raises(ValueError, match=r"a\[0\]=Fraction\(1, 3\), which is not exactly"):
        numerics.ulp_distance([third], 1.0, "binary64")
    assert numerics.ulp_distance([Fraction(1, 2)], 1.0, "bfloat16").tolist() == [128]
    # a Decimal is no number these functions take, alone or in a list
    for value in (decimal.Decimal("0.5"), [decimal.Decimal("0.5")]):
        with pytest.raises(TypeError, match="Decimal"):
            numerics.ulp(value, "bfloat16")


# ------------------------------------------------------------------ None and booleans
@pytest.mark.parametrize("bad", [None, True, np.bool_(False)])
def test_none_and_booleans_in_lists_are_type_errors(bad: object) -> None:
    """None became NaN and booleans 1.0 / 0.0 inside lists; alone they are refused."""
    calls = [
        lambda x: numerics.ulp(x, "bfloat16"),
        lambda x: numerics.next_up(x, "bfloat16"),
        lambda x: numerics.next_down(x, "bfloat16"),
        lambda x: numerics.ulp_distance(x, 1.0, "bfloat16"),
        lambda x: numerics.encode(x, "bfloat16"),
        lambda x: numerics.round_to(x, "bfloat16"),
        lambda x: ops.add(x, 1.0, "bfloat16"),
    ]
    for call in calls:
        with pytest.raises(TypeError):
            call(bad)
        with pytest.raises(TypeError, match=r"\[1\]"):
            call([1.0, bad])
    if bad is not None:
        with pytest.raises(TypeError, match="expected integer codes"):
            numerics.decode([1, bad], "bfloat16")


# ------------------------------------------------------------------ torch
def test_round_to_torch_keeps_the_shape_and_checks_dtype_by_format() -> None:
    """A 0-d tensor stays 0-d; ``dtype`` must hold every value of the format (the rule of
    numpy's float32), whatever the values: float16 holds no binary32 overflow threshold
    as inf, float32 not binary64's max, and torch.bool is no float dtype."""
    torch = pytest.importorskip("torch")
    got = numerics.round_to(torch.tensor(0.1), "bfloat16")
    assert got.shape == torch.Size([]) and got.dtype == torch.bfloat16
    assert float(got) == float(np.float32(0.1).astype(ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match="binary32, whose values are not all binary16"):
        numerics.round_to(torch.tensor([3.4028234663852886e38]), "binary32",
                          dtype=torch.float16)
    with pytest.raises(ValueError, match="binary32, whose values are not all binary16"):
        numerics.round_to(torch.tensor([1.0]), "binary32", dtype=torch.float16)
    with pytest.raises(ValueError, match="binary64, whose values are not all binary32"):
        numerics.round_to(torch.tensor([1.7976931348623157e308], dtype=torch.float64),
                          "binary64", dtype=torch.float32)
    for bad in (torch.bool, torch.int32, torch.complex64):
        with pytest.raises(ValueError, match="expected a torch float dtype"):
            numerics.round_to(torch.tensor([-0.0, 1.0]), "e2m1fn", dtype=bad)
    x = [0.1, -448.0, 3.3]
    want = np.array(x).astype(ml_dtypes.float8_e4m3fn).astype(np.float64).tolist()
    for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        got = numerics.round_to(torch.tensor(x, dtype=torch.float64), "e4m3fn", dtype=dt)
        assert got.dtype == dt and got.to(torch.float64).tolist() == want


# ------------------------------------------------------------------ argument checks
def test_convert_names_a_missing_format() -> None:
    """from_fmt=None was taken as to_fmt; it is a TypeError like every other format."""
    with pytest.raises(TypeError, match="from_fmt: Got fmt=None"):
        ops.convert(1.0, None, "bfloat16")
    with pytest.raises(TypeError, match="to_fmt: Got fmt=None"):
        ops.convert(1.0, "bfloat16", None)
    assert float(ops.convert(1.0, "binary32", "bfloat16")) == 1.0


def test_ulp_of_a_huge_int_in_a_list_is_the_scalars() -> None:
    """ulp of 2**1100 is inf (its quantum is beyond binary64), alone or in a list; no
    OverflowError from converting it to float."""
    assert float(numerics.ulp(2**1100, "bfloat16")) == float("inf")
    assert numerics.ulp([2**1100, -(2**1100)], "bfloat16").tolist() == [float("inf")] * 2


@pytest.mark.parametrize("field", ["signed", "subnormals"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_format_boolean_fields_are_checked(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"Got {field}={value!r}, but it must be True or False"):
        numerics.Format(name="x", exponent_bits=3, trailing_bits=2, bias=3,
                        **{field: value})  # type: ignore[arg-type]
    made = numerics.Format(name="x", exponent_bits=3, trailing_bits=2, bias=3,
                           **{field: np.bool_(True)})  # type: ignore[arg-type]
    assert getattr(made, field) is True


def test_longdouble_beyond_float64_raises_no_warning() -> None:
    """ulp / next_up of an 80-bit longdouble beyond float64's range, and encode naming a
    NaN beside one: no RuntimeWarning ("overflow encountered in cast")."""
    if np.finfo(np.longdouble).maxexp <= 1024:
        pytest.skip("longdouble is float64 here")
    big = np.longdouble(2) ** 1100
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(numerics.ulp(big, "bfloat16")) == float("inf")
        assert numerics.ulp(np.array([big, 1]), "bfloat16").tolist() == [float("inf"), 2.0**-7]
        assert float(numerics.next_up(big, "bfloat16")) == float("inf")
        assert numerics.next_down(np.array([big, 1]), "bfloat16").tolist() == [
            float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), 1 - 2.0**-8]
        with pytest.raises(ValueError, match="Got a NaN at flat index 1, but e2m1fn"):
            numerics.encode(np.array([big, np.nan], np.longdouble), "e2m1fn")


def test_set_num_threads_takes_numpy_integers() -> None:
    before = numerics.get_num_threads()
    try:
        numerics.set_num_threads(np.int64(1))
        assert numerics.get_num_threads() == 1
        for bad in (True, np.bool_(True), 1.0):
            with pytest.raises(ValueError, match="Got n="):
                numerics.set_num_threads(bad)  # type: ignore[arg-type]
    finally:
        numerics.set_num_threads(before)


def test_decode_of_no_codes() -> None:
    """``decode([])`` is an empty array, as ``encode([])`` is."""
    assert numerics.encode([], "bfloat16").shape == (0,)
    got = numerics.decode([], "bfloat16")
    assert got.shape == (0,) and got.dtype == np.float64
    assert numerics.decode([[], []], "e4m3fn").shape == (2, 0)


def test_round_to_names_itself_for_a_bad_keyword() -> None:
    with pytest.raises(TypeError, match="round_to.. got an unexpected keyword argument "
                                        "'roundin'"):
        numerics.round_to(np.ones(2), "bfloat16", roundin="rtz")
    with pytest.raises(TypeError, match="round_to.. got an unexpected keyword argument 'out'"):
        numerics.round_to(0.1, "bfloat16", out=np.empty((), np.uint16))


@pytest.mark.parametrize("rng, error", [("x", TypeError), (-1, ValueError), (1.5, TypeError)])
def test_rng_is_checked_in_every_rounding_mode(rng: object, error: type[Exception]) -> None:
    """An invalid ``rng`` is refused even where no random bits are drawn."""
    for x in (0.1, np.ones(3)):
        with pytest.raises(error, match="Got rng="):
            numerics.encode(x, "bfloat16", rng=rng)  # type: ignore[arg-type]
    with pytest.raises(error, match="Got rng="):
        ops.add(1.0, 1.0, "bfloat16", rng=rng)
    assert int(numerics.encode(1.0, "bfloat16", rng=5)) == 0x3F80


def test_lists_are_taken_as_their_elements_are() -> None:
    """A list gives what its elements give alone: ulp of a Python int beyond 2**53 and of
    a longdouble is exact (numpy made the list int64 / longdouble); a numpy int64 beyond
    2**53 is still refused, as it is alone."""
    assert numerics.ulp([2**53 + 1], "binary64").tolist() == [2.0]
    assert numerics.ulp([[2**53 + 1, 3]], "binary64").tolist() == [[2.0, 2.0**-51]]
    third = np.longdouble(1) / 3
    assert numerics.ulp([third], "bfloat16").tolist() == [float(numerics.ulp(third, "bfloat16"))]
    with pytest.raises(ValueError, match=r"Got x\[0\]=9007199254740993"):
        numerics.ulp([np.int64(2**53 + 1)], "binary64")


def test_next_up_takes_a_longdouble_alike_in_every_container() -> None:
    """A longdouble that is not a float64 lies between two values of every format (issue
    13): next_up / next_down give its neighbours alone, in an array and in a list (a list
    was a ValueError), and NaN past e4m3fn's max, where no value lies above it."""
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("longdouble is float64 here")
    third = np.longdouble(1) / 3
    for f, want in ((numerics.next_up, 0.333984375), (numerics.next_down, 0.33203125)):
        assert float(f(third, "bfloat16")) == want
        assert f(np.array([third]), "bfloat16").tolist() == [want]
        assert f([third], "bfloat16").tolist() == [want]
        assert f([[third, 1.0]], "bfloat16").shape == (1, 2)
    assert math.isnan(numerics.next_up(np.longdouble(1000) + np.longdouble(2) ** -50, "e4m3fn"))
    with pytest.raises(ValueError, match="not a value of bfloat16"):
        numerics.next_up([third, 1 / 3], "bfloat16")  # the float64 1/3 is no bfloat16 value


def test_decode_takes_a_list_mixing_numpy_and_python_integers() -> None:
    """numpy makes [np.uint64(1), 0] a float64 array; decode takes it as the integers."""
    assert numerics.decode([np.uint64(1), 0], "binary64").tolist() == [5e-324, 0.0]
    assert numerics.decode([[np.uint64(0x38), 1]], "e4m3fn").tolist() == [[1.0, 2.0**-9]]
    with pytest.raises(TypeError, match="Got codes containing 1.5"):
        numerics.decode([np.uint64(1), 1.5], "e4m3fn")


def test_encode_names_an_element_of_a_nested_list_by_its_index() -> None:
    with pytest.raises(TypeError, match=r"Got x\[0, 1\]=None"):
        numerics.encode([[1.0, None]], "e4m3fn")


def test_an_unknown_format_name_is_named_by_its_argument() -> None:
    """The error names the argument that held the bad name (it said ``format=``)."""
    import numerics
    from numerics import accum, quant

    x = np.ones((2, 2))
    cases = [
        (lambda: numerics.encode(1.0, "bf17"), "fmt='bf17'"),
        (lambda: accum.sum(x, "bf17"), "fmt='bf17'"),
        (lambda: accum.gemm(x, x, input_format="bf17", accumulator="hopper"),
         "input_format='bf17'"),
        (lambda: accum.gemm(x, x, input_format="bf16", output_format="fp33",
                            accumulator="hopper"), "output_format='fp33'"),
        (lambda: quant.quantize(x, "e4m3fn", scale_format="nope"), "scale_format='nope'"),
    ]
    for call, text in cases:
        with pytest.raises(ValueError, match=re.escape(f"Got {text}, which is not a known")):
            call()

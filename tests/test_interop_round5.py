"""Array-interop findings of the fifth audit round, each pinned by an exact oracle.

- Lists that mix integers beyond 2**53 with floats, or hold booleans, stay exact in
  ``accum`` and the testing assertions (numpy alone would round them to float64 or make
  the booleans 0 and 1).
- ``tensor_stats`` refuses a value float64 does not hold rather than count another.
- Object arrays of in-range ints hash as int64 arrays do.
- An empty operand broadcasts in ``ops`` beside float32 and ml_dtypes operands.
- Masked arrays and meta tensors are refused by name everywhere.
- A bfloat16 signalling NaN reads without a cast warning.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import numerics
from numerics import accum, hashing, ops, quant
from numerics.fingerprint import fingerprint
from numerics.testing import assert_ulp_close, assert_within_bound

BIG = 2**60 + 2**36 + 1  # binary32 rounds it up to 2**60 + 2**37; via float64 to 2**60


def _rne_binary32(v: int) -> float:
    """``v`` rounded to nearest-even binary32 by exact integer arithmetic."""
    drop = v.bit_length() - 24
    q, r = divmod(v, 1 << drop)
    half = 1 << (drop - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return float(q << drop)


@pytest.mark.parametrize("zero", [0.0, np.float32(0.0)])
def test_accum_sum_of_a_list_with_a_big_int_and_a_float_rounds_once(zero: object) -> None:
    assert _rne_binary32(BIG) == 2.0**60 + 2.0**37
    assert accum.sum([BIG, zero], "binary32").value == _rne_binary32(BIG)
    assert accum.dot([BIG, 0.0], [1.0, 1.0], "binary32").value == _rne_binary32(BIG)


def test_accum_refuses_a_bool_in_a_list() -> None:
    with pytest.raises(TypeError, match="x"):
        accum.sum([True, 2.0], "binary32")


def test_assertions_keep_a_big_int_beside_a_float_exact() -> None:
    actual = np.array([2.0**60, 0.0])
    with pytest.raises(AssertionError):
        assert_within_bound(actual, [2**60 + 1, 0.0], 0)
    with pytest.raises(AssertionError):
        assert_ulp_close(actual, [2**60 + 1, 0.0], max_ulp=0, fmt="binary64")
    assert_within_bound(actual, [2**60, 0.0], 0)  # the same values, exact: passes


def test_assertions_refuse_a_bool_in_a_list_and_a_masked_array() -> None:
    with pytest.raises(TypeError, match="exact"):
        assert_within_bound(np.array([1.0, 0.5]), [True, 0.5], 0)
    with pytest.raises(TypeError, match="actual as a masked array"):
        assert_within_bound(np.ma.masked_array([1.0, 5.0], [False, True]), [1.0, 6.0], 0)


def test_tensor_stats_refuses_values_float64_does_not_hold() -> None:
    # encode keeps 2**128 - 2**103 - 1 below binary32's overflow threshold, but float64
    # rounds it to the threshold itself; the stats must not count an overflow for it
    assert int(numerics.encode(2**128 - 2**103 - 1, "binary32")) == 0x7F7FFFFF
    tiny = Fraction(1, 2**10) + Fraction(1, 2**80)
    long = np.array([np.longdouble(1) + np.longdouble(2) ** -60, 2.0], np.longdouble)
    cases: list[Any] = [[2**128 - 2**103 - 1], [tiny], [2**60 + 1, 0.5], long]
    for values in cases:
        with pytest.raises(ValueError, match=r"values.flat\[0\] = .*float64 does not hold"):
            numerics.tensor_stats(values, formats=("binary32",))
    exact: Any = [2**60, 0.5, Fraction(3, 4)]
    fit = numerics.tensor_stats(exact, formats=("binary32",)).fits[0]
    assert fit.overflow == 0 and fit.flush_to_zero == 0


@pytest.mark.parametrize("call", ["spatial", "poly", "collisions"])
def test_object_arrays_of_ints_hash_as_int64(call: str) -> None:
    objs = np.array([[1, 2, 3]], dtype=object)
    ints = objs.astype(np.int64)
    got: Any
    want: Any
    if call == "spatial":
        got, want = hashing.spatial_hash(objs, 2**20), hashing.spatial_hash(ints, 2**20)
    elif call == "poly":
        got, want = hashing.poly_hash(objs, 31), hashing.poly_hash(ints, 31)
    else:
        got = hashing.collision_report(objs.ravel(), 4)
        want = hashing.collision_report(ints.ravel(), 4)
    assert repr(got) == repr(want)
    assert list(map(lambda c: hashing.spatial_hash(c, 2**20), [objs, objs]))  # not emptied
    with pytest.raises(ValueError, match="-1"):
        hashing.spatial_hash(np.array([[1, -1, 3]], dtype=object), 2**20)


@pytest.mark.parametrize("dtype,fmt", [(np.float32, "binary32"),
                                       (ml_dtypes.bfloat16, "bfloat16"),
                                       (ml_dtypes.float8_e4m3fn, "e4m3fn"),
                                       (np.float16, "binary16")])
def test_ops_broadcast_an_empty_operand(dtype: type, fmt: str) -> None:
    ones: Any = np.ones((2, 1), dtype)
    want = np.add(np.ones((2, 1), np.float32), np.zeros(0, np.float32)).shape
    assert ops.add(ones, np.zeros(0), fmt).shape == want == (2, 0)
    assert ops.add(np.zeros(0), ones, fmt).shape == (2, 0)
    assert ops.mul(ones, [], fmt).shape == (2, 0)


def test_masked_arrays_are_refused_by_fingerprint_and_pack() -> None:
    masked = np.ma.masked_array([1.0, 2.0], [False, True])
    with pytest.raises(TypeError, match="chunks as a masked array"):
        fingerprint(masked, fmt="bfloat16")
    with pytest.raises(TypeError, match="codes as a masked array"):
        quant.pack(np.ma.masked_array([1, 2], [False, True]), 4)
    with pytest.raises(TypeError, match="codes of dtype object"):
        quant.pack([True, 2], 4)
    assert quant.pack([1, 2, 3], 4).tolist() == [33, 3]


def test_meta_tensors_are_refused_by_name() -> None:
    torch = pytest.importorskip("torch")
    meta = torch.ones(4, device="meta")
    calls = {"x": lambda: numerics.ulp(meta, "bfloat16"),
             "a": lambda: ops.add(meta, 1.0, "binary32"),
             "values": lambda: numerics.tensor_stats(meta),
             "codes": lambda: quant.pack(torch.ones(4, dtype=torch.uint8, device="meta"), 4)}
    for name, call in calls.items():
        with pytest.raises(TypeError, match=f"Got {name} as a torch tensor on meta"):
            call()


def test_a_bfloat16_signalling_nan_reads_without_a_cast_warning() -> None:
    x = np.array([0x7F81, 0x3F80], np.uint16).view(ml_dtypes.bfloat16)
    block = np.resize(x, 32).astype(ml_dtypes.bfloat16)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        assert np.isnan(numerics.ulp(x, "bfloat16")[0])
        assert numerics.next_up(x, "bfloat16")[1] == 1.0078125
        assert numerics.next_down(x, "bfloat16")[1] == 0.99609375
        numerics.tensor_stats(x)
        assert np.isnan(accum.sum(x, "binary32").value)
        quant.quantize(block, "mxfp8_e4m3")

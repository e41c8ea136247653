"""The accum kernels give the same bits for every thread count and input layout."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from numerics import accum, get_format, threads


@contextmanager
def _threads(n: int) -> Iterator[None]:
    before = threads.get_num_threads()
    threads.set_num_threads(n)
    try:
        yield
    finally:
        threads.set_num_threads(before)


def _counts() -> list[int]:
    top = threads.get_num_threads()
    return sorted({1, min(2, top), min(4, top)})


@pytest.mark.parametrize("alg", ["recursive", "pairwise", "kahan", "neumaier"])
@pytest.mark.parametrize("rounding", ["rne", "rtz", "sr"])
def test_sum_same_bits_for_every_thread_count(alg: str, rounding: str) -> None:
    x = np.random.default_rng(1).standard_normal((37, 300)).astype(np.float32)
    runs = []
    for n in _counts():
        with _threads(n):
            runs.append(accum.sum(x, "bf16", algorithm=alg, rounding=rounding, rng=5).value)
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint64), runs[0].view(np.uint64))


@pytest.mark.parametrize("rounding", ["rne", "sr"])
def test_sum_same_bits_for_every_layout(rounding: str) -> None:
    x = np.random.default_rng(2).standard_normal((6, 50))
    want = accum.sum(x, "binary16", rounding=rounding, rng=3).value
    layouts = {
        "big-endian": x.astype(">f8"),
        "fortran": np.asfortranarray(x),
        "strided": np.repeat(x, 2, axis=1)[:, ::2],
        "negative strides": np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1],
        "transposed, axis 0": x.T,
    }
    assert all(st < 0 for st in layouts["negative strides"].strides)  # (not x itself)
    for name, v in layouts.items():
        axis = 0 if name.startswith("transposed") else -1
        got = accum.sum(v, "binary16", rounding=rounding, rng=3, axis=axis).value
        np.testing.assert_array_equal(got, want, err_msg=name)
    # the same through dot with ones
    got = accum.dot(x, np.ones(50), "binary16", rounding="rne").value
    np.testing.assert_array_equal(got, accum.sum(x, "binary16").value)


def test_sum_of_empty_and_0d_input_is_a_named_error() -> None:
    with pytest.raises(ValueError, match="empty reduction axis"):
        accum.sum(np.ones((3, 0)), "bf16")
    with pytest.raises(ValueError, match="at least one axis"):
        accum.sum(np.float32(1.0), "bf16")
    r = accum.sum(np.ones((0, 4)), "bf16")  # no sums at all: an empty result
    assert r.value.shape == (0,)


@pytest.mark.parametrize("alg, block", [("recursive", None), ("pairwise", None),
                                        ("pairwise", 5), ("kahan", None),
                                        ("neumaier", None)])
@pytest.mark.parametrize("fmt", ["bfloat16", "tf32", "binary16", "e5m2"])
def test_float32_lanes_equal_the_general_kernel(alg: str, block: int | None, fmt: str) -> None:
    """float32 rows in bf16/tf32/binary16/e5m2 take the binary32-lane kernel; float64 rows
    of the same values take the general one, pinned to the exact references: same bits, with ties,
    subnormals, overflow to inf, NaN and signed zeros in the data."""
    rng = np.random.default_rng(11)
    lo, hi = (-140, 126) if fmt in ("bfloat16", "tf32") else (-28, 17)
    x = (rng.standard_normal((40, 203)) * np.exp2(rng.integers(lo, hi, (40, 203))))
    x = x.astype(np.float32)
    x[0] = 1.0
    x[0, 0] = 256.0  # stall: ties to even
    big = np.float32(3e38 if fmt in ("bfloat16", "tf32") else 60000.0)
    x[1, ::3] = big  # overflow to inf, then inf - inf = NaN
    x[1, 1::3] = -big
    x[2, 5] = np.nan
    x[3] = -0.0
    x[4, :100] = np.float32(2.0**-140 if fmt in ("bfloat16", "tf32") else 3 * 2.0**-17)
    x[5, ::2] = np.float32(2.0**-25)  # binary16 ties below its smallest subnormal
    got = accum.sum(x, fmt, algorithm=alg, block_size=block).value
    want = accum.sum(x.astype(np.float64), fmt, algorithm=alg, block_size=block).value
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


def _reference(alg: str, xs: list[Fraction], fl: Any) -> Fraction:
    """The exact step-by-step reference of ``alg`` (pairwise: blocks of 5)."""
    import accum_reference as ref

    if alg == "kahan":
        return ref.ref_kahan(xs, fl)
    if alg == "neumaier":
        return ref.ref_neumaier(xs, fl)
    if alg == "pairwise":
        return ref.ref_pairwise(xs, fl, 5)
    return ref.ref_recursive(xs, fl)


@pytest.mark.parametrize("fmt", ["binary32", "binary64"])
@pytest.mark.parametrize("alg, block", [("recursive", None), ("pairwise", 5), ("kahan", None),
                                        ("neumaier", None)])
def test_hardware_sums_in_lanes(alg: str, block: int | None, fmt: str) -> None:
    """binary32 and binary64 rounded to nearest sum in lanes of their own type (the
    hardware's own additions: kernels.accum.sum_rows_f32 / sum_rows_f64), from float32
    rows and from float64 rows (rounded to binary32 on the way in): every row against
    the exact reference, with ties, subnormals and signed zeros; rows that overflow to
    inf and then give NaN against the general kernel."""
    import accum_reference as ref

    from numerics.kernels.accum import sum_rows
    from numerics.kernels.rounding import format_params, mode_code

    rng = np.random.default_rng(12)
    wide = fmt == "binary64"
    lo, hi, p, tiny = (-1074, 1000, 53, 2.0**-1074) if wide else (-150, 120, 24, 2.0**-149)
    x = rng.standard_normal((12, 61)) * np.exp2(rng.integers(lo, hi, (12, 61)))
    x[0] = 1.0
    x[0, 0] = 2.0**p  # stall: ties to even
    x[1, ::2] = tiny * 3  # subnormal sums
    x[2] = -0.0
    x[3] = x[3] * (1 + 2.0**-30)  # float64 values that round on the way in (binary32)
    x[4] = rng.standard_normal(61)  # sums that round
    fl = ref.rounder(fmt, "rne")
    # float32 rows: binary32's values (widened exactly for binary64)
    x32 = (rng.standard_normal((6, 61)) * np.exp2(rng.integers(-150, 120, (6, 61)))
           ).astype(np.float32) if wide else x.astype(np.float32)
    x32[0, ::2] = np.float32(2.0**-149)
    for rows in (x32, x):
        got = accum.sum(rows, fmt, algorithm=alg, block_size=block).value
        for r in range(rows.shape[0]):
            xs = [fl(Fraction(float(v))) for v in rows[r]]
            want = _reference(alg, xs, fl)
            assert Fraction(float(got[r])) == want, (alg, rows.dtype, r)
            if float(got[r]) == 0:  # (Neumaier's last step adds c = +0 to -0: +0)
                negative = r == 2 and alg != "neumaier"
                assert math.copysign(1, got[r]) == (-1 if negative else 1)
    special = np.ones((3, 20))
    big = 1.7e308 if wide else 3e38
    special[0, ::3], special[0, 1::3] = big, -big  # inf, then inf - inf
    special[1, 4] = np.nan
    special[2, :] = big * 2 / 3  # overflow to inf and stay
    got = accum.sum(special if wide else special.astype(np.float32), fmt, algorithm=alg,
                    block_size=block).value
    f = get_format(fmt)
    expect, abs_sum, ntiny = np.empty(3), np.empty(3), np.empty(3, np.int64)
    sum_rows(special, special, False,
             {"recursive": 0, "pairwise": 1, "kahan": 2, "neumaier": 3}[alg],
             block or 1, format_params(f), mode_code("rne"), f.max, np.uint64(0), expect,
             abs_sum, ntiny)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expect))
    np.testing.assert_array_equal(got[~np.isnan(got)], expect[~np.isnan(expect)])


@pytest.mark.parametrize("alg, block", [("recursive", None), ("pairwise", 5), ("kahan", None),
                                        ("neumaier", None)])
@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "binary32", "binary64"])
def test_single_rows_equal_the_lanes(alg: str, block: int | None, fmt: str) -> None:
    """A sum of one row (fewer than 4 rows: kernels.accum._row, its state in registers)
    gives the bits of the same row summed among many (the lanes), with ties, subnormals,
    overflow to inf, NaN and signed zeros; rows without overflow against the exact
    reference too."""
    import accum_reference as ref

    rng = np.random.default_rng(13)
    lo, hi = {"bfloat16": (-140, 126), "binary16": (-28, 14), "binary32": (-150, 126),
              "binary64": (-150, 126)}[fmt]
    x = (rng.standard_normal((9, 203)) * np.exp2(rng.integers(lo, hi, (9, 203))))
    x = x.astype(np.float32)
    x[0] = 1.0
    x[0, 0] = 2.0 ** get_format(fmt).precision  # stall: ties to even
    big = np.float32(3e38 if fmt in ("bfloat16", "binary32", "binary64") else 60000.0)
    x[1, ::3], x[1, 1::3] = big, -big  # (binary64: no overflow, cancellation)
    x[2, 5] = np.nan
    x[3] = -0.0
    x[4, :100] = np.float32(2.0**-140 if fmt != "binary16" else 3 * 2.0**-17)
    x[5, ::2] = np.float32(2.0**-25)
    many = accum.sum(x, fmt, algorithm=alg, block_size=block).value
    fl = ref.rounder(fmt, "rne")
    for r in range(x.shape[0]):
        one = accum.sum(x[r], fmt, algorithm=alg, block_size=block).value
        np.testing.assert_array_equal(np.asarray(one).view(np.uint64), many[r:r + 1].view(
            np.uint64)[0], err_msg=f"{fmt} {alg} row {r}")
        if r in (0, 3, 4, 5, 6):
            xs = [fl(Fraction(float(v))) for v in x[r]]
            want = _reference(alg, xs, fl)
            assert Fraction(float(one)) == want, (fmt, alg, r)


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e4m3fnuz", "binary32", "binary64"])
@pytest.mark.parametrize("rounding", ["rne", "rtz", "rd", "ru", "sr"])
def test_chain_add_equals_one_round_ops_call_per_step(fmt: str, rounding: str) -> None:
    """kernels.accum.chain_add (the compiled chains of blocked, ring and the leftover
    recursive sums) against the step-by-step round_ops calls it replaces, one per
    addition over all chains (stream elements base + l G M + c): the same bits in every
    mode, stochastic rounding included, with ties, the largest value and beyond
    (overflow), NaN, infinities, signed zeros and subnormals among the terms, on strided
    (G, L, M) views and on more chains than one tile."""
    from numerics.kernels.accum import OP_ADD, chain_add, round_ops
    from numerics.kernels.rounding import format_params, mode_code

    f = get_format(fmt)
    P, mode = format_params(f), mode_code(rounding)
    rng = np.random.default_rng(len(fmt) + len(rounding))
    G, L, M = 3, 9, 11
    scale = np.exp2(rng.integers(f.emin - f.trailing_bits, f.emax + 1, (G, L + 1, 2 * M)))
    Y = rng.standard_normal((G, L + 1, 2 * M)) * scale
    Y[0, :, 0] = f.max  # overflow, then back for the modes that stop at max
    Y[0, 1::2, 1] = -f.max
    Y[1, :, 2] = f.smallest_subnormal / 2  # ties below the subnormals
    Y[1, 3, 4] = np.nan
    Y[2, 2, 6] = np.inf
    Y[2, :, 8] = -0.0
    Y[2, 0, 10] = 2.0 ** f.precision  # 2**p + 1: a tie
    Y[2, 1:, 10] = 1.0
    Y = np.asarray(accum.sum(Y[..., None], fmt).value)  # values of the format
    init, A = Y[:, 0, ::2], Y[:, 1:, ::2]  # strided views
    seed, base = np.uint64(12345), np.uint64(77)
    got = np.empty((G, M))
    with np.errstate(all="ignore"):
        chain_add(init, A, P, mode, seed, base, got)
        want = np.ascontiguousarray(init).reshape(-1)
        for step in range(L):
            out = np.empty(G * M)
            round_ops(want, np.ascontiguousarray(A[:, step]).reshape(-1),
                      np.zeros(1, np.int64), OP_ADD, P, mode, seed,
                      base + np.uint64(step * G * M), out)
            want = out
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("rounding", ["rne", "rtz", "rd", "ru"])
def test_long_blocked_and_ring_sums_against_the_exact_reference(rounding: str) -> None:
    """A 1-D blocked sum of 2,000 bfloat16 terms (286 blocks of 7 and a short one, the
    cross-block chain in binary32) and a ring of 40 ranks over 45 positions, against
    the Fraction references; terms near 2**8 make the block sums stall at ties."""
    import accum_reference as ref

    rng = np.random.default_rng(31)
    fl = ref.rounder("bfloat16", rounding)
    x = np.asarray(accum.sum((rng.integers(1, 300, 2000) * 2.0 ** rng.integers(-9, 3, 2000)
                              )[:, None], "bfloat16").value)
    total = accum.sum(x, "bfloat16", algorithm="blocked", block_size=7, rounding=rounding)
    xs = [Fraction(float(v)) for v in x]
    want = ref.ref_blocked(xs, fl, ref.rounder("binary32", rounding), 7)
    assert Fraction(float(total.value)) == want
    order = list(rng.permutation(40))
    X = np.asarray(accum.sum(rng.standard_normal((40, 45, 1)) * 100, "bfloat16").value)
    got = accum.sum(X, "bfloat16", algorithm="ring", ring_order=order, axis=0,
                    rounding=rounding).value
    sizes = [45 // 40 + (1 if c < 45 % 40 else 0) for c in range(40)]
    for col in range(45):
        chunk = int(np.searchsorted(np.cumsum(sizes), col, side="right"))
        want = ref.ref_ring_element([Fraction(float(v)) for v in X[:, col]], fl, chunk,
                                    order)
        assert Fraction(float(got[col])) == want, col

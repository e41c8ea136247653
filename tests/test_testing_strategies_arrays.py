"""numerics.testing.strategies: arrays, code arrays, blocks, seeds (issue 16 items 1, 4, 7, 8)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from numerics.codec import decode_exact
from numerics.formats import get_format
from numerics.testing.strategies import (
    MAX_ARRAY_SIZE,
    InvalidArgument,
    arrays,
    blocks,
    code_arrays,
    exact_repr,
    rngs,
    seeds,
    values,
)

FIND = settings(max_examples=2000, database=None, deadline=None, derandomize=True)


def test_arrays_keep_fill_so_constant_arrays_are_found() -> None:
    """The mutant the study missed: an all -inf bf16 array (hnp finds it at once)."""
    a = find(arrays("bfloat16", 16, elements=values("bfloat16", allow_nan=False)),
             lambda a: bool((a == -math.inf).all()), settings=FIND)
    assert a.dtype == np.dtype(ml_dtypes.bfloat16) and a.shape == (16,)
    assert a.astype(np.float64).tolist() == [-math.inf] * 16


def test_arrays_fill_argument() -> None:
    @given(arrays("e4m3fn", 50, elements=st.just(1.0), fill=st.just(-0.0)))
    @settings(max_examples=30, database=None, deadline=None)
    def check(a: np.ndarray) -> None:
        assert set(a.view(np.uint8).tolist()) <= {0x38, 0x80}   # 1.0 and -0

    check()
    with pytest.raises(InvalidArgument, match="fill=1.0"):
        arrays("e4m3fn", 3, fill=1.0).validate()  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [10**12, (10**6, 10**6), (2**12, 2**12, 2)])
def test_huge_shapes_are_rejected_when_validated(shape: Any) -> None:
    with pytest.raises(ValueError, match="MAX_ARRAY_SIZE"):
        arrays("e4m3fn", shape).validate()
    with pytest.raises(ValueError, match="MAX_ARRAY_SIZE"):
        code_arrays("e4m3fn", shape).validate()
    assert MAX_ARRAY_SIZE == 1 << 24


@pytest.mark.parametrize("shape", [-1, (2, -3), 2.5, "3"])
def test_bad_shapes_name_the_argument(shape: Any) -> None:
    with pytest.raises(ValueError, match="shape="):
        arrays("binary16", shape).validate()


@pytest.mark.parametrize("name", ["binary32", "binary64", "bfloat16", "e4m3fn", "e2m1fn",
                                  "binary16"])
def test_exact_repr_round_trips_drawn_arrays(name: str) -> None:
    """What hypothesis prints for a drawn array rebuilds it bit for bit (item 7)."""
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

    @given(arrays(name, st.tuples(st.integers(0, 3), st.integers(0, 4))))
    @settings(max_examples=60, database=None, deadline=None)
    def check(a: np.ndarray) -> None:
        back = eval(exact_repr(a), {"np": np, "ml_dtypes": ml_dtypes})
        assert back.dtype == a.dtype and back.shape == a.shape
        w = width[a.dtype.itemsize]
        assert back.view(w).tolist() == a.view(w).tolist()

    check()


def test_falsifying_example_prints_exact_dtype_and_digits() -> None:
    """A float32 near-tie needs 9 digits: numpy's repr shows 8, the report shows all."""
    x = np.float32(1 + 2**-23)

    @given(arrays("binary32", 2, elements=st.sampled_from([1.0, float(x)])))
    @settings(max_examples=50, database=None, deadline=None, derandomize=True)
    def check(a: np.ndarray) -> None:
        assert not (a == x).any()

    with pytest.raises(AssertionError) as info:
        check()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "dtype=np.float32" in notes and "1.0000001192092896" in notes, notes


def test_code_arrays_reach_signalling_nans_and_keep_their_bits() -> None:
    a = find(code_arrays("binary32", 4),
             lambda a: bool(((a.view(np.uint32) & 0x7FC00000) == 0x7F800000).any()
                            and (a.view(np.uint32) & 0x3FFFFF).any()), settings=FIND)
    assert a.dtype == np.float32
    b = find(code_arrays("e4m3fn", 3, view=False), lambda a: bool((a == 0xFF).any()),
             settings=FIND)
    assert b.dtype == np.uint8
    c = find(code_arrays("binary8p3", 2), lambda a: True, settings=FIND)
    assert c.dtype == get_format("binary8p3").code_dtype   # no native dtype: codes


def _is_tie(x: float, f: Any) -> bool:
    """x is a midpoint of two consecutive finite values of f (reference decoder)."""
    vals = sorted({Fraction(decode_exact(c, f)) for c in range(f.num_codes)
                   if not isinstance(decode_exact(c, f), float)
                   or math.isfinite(decode_exact(c, f))})
    return any((a + b) / 2 == Fraction(x) for a, b in zip(vals, vals[1:]))


def test_blocks_ties_are_ties_in_the_scaled_domain() -> None:
    f = get_format("e2m1fn")

    @given(blocks("e2m1fn", 8, n_blocks=3, kinds=["ties"]))
    @settings(max_examples=40, database=None, deadline=None)
    def check(x: np.ndarray) -> None:
        assert x.dtype == np.float32 and x.shape == (24,)
        for block in x.reshape(3, 8).astype(np.float64):
            amax = float(np.abs(block).max())
            scale = amax / f.max            # per-tensor / MX scale: a power of two here
            assert math.frexp(scale)[0] == 0.5
            scaled = block / scale
            assert sum(abs(v) == f.max for v in scaled) >= 1
            assert all(_is_tie(abs(v), f) or abs(v) == f.max for v in scaled)

    check()


def test_blocks_draw_every_kind() -> None:
    seen: set[str] = set()

    @given(blocks("e4m3fn", 4, n_blocks=st.integers(1, 3)))
    @settings(max_examples=300, database=None, deadline=None, derandomize=True)
    def collect(x: np.ndarray) -> None:
        b = x.reshape(-1, 4).astype(np.float64)
        for row in b:
            if len(set(row.tolist())) == 1:
                seen.add("equal")
            a = np.abs(row)
            nz = a[a > 0]
            if len(nz) >= 2 and nz.max() > 448 * 2 * np.sort(nz)[-2]:
                seen.add("outlier")
            if len(nz) and np.log2(nz.max() / nz.min()) > 20:
                seen.add("spread")

    collect()
    assert seen == {"equal", "outlier", "spread"}


def test_blocks_reject_bad_arguments() -> None:
    for call, match in [
        (lambda: blocks("binary32", 4), "dtype="),
        (lambda: blocks("e4m3fn", 0), "block_size=0"),
        (lambda: blocks("e4m3fn", 4, kinds=["huge"]), "kinds="),
        (lambda: blocks("e4m3fn", 4, scale_exponents=(3, 1)), "scale_exponents="),
    ]:
        with pytest.raises(InvalidArgument, match=match):
            call().validate()


def test_seeds_shrink_and_replay_under_given() -> None:
    """A stochastic-rounding failure replays: the seed is a drawn, shrunk integer (item 4)."""
    from numerics import encode

    assert find(seeds(), lambda s: s > 1000, settings=FIND) == 1001
    calls: list[int] = []

    @given(seed=seeds(), x=values("binary32", min_value=1, max_value=2))
    @settings(max_examples=200, database=None, deadline=None, derandomize=True)
    def check(seed: int, x: float) -> None:
        calls.append(seed)
        a = encode(np.full(8, x, np.float32), "bfloat16", rounding="sr", rng=seed)
        b = encode(np.full(8, x, np.float32), "bfloat16", rounding="sr", rng=seed)
        assert (a == b).all()          # the same seed gives the same draws

    check()
    assert len(set(calls)) > 10


def test_rngs_print_as_default_rng_of_their_seed() -> None:
    @given(rngs())
    @settings(max_examples=50, database=None, deadline=None, derandomize=True)
    def check(g: np.random.Generator) -> None:
        assert g.integers(0, 2) == 0

    with pytest.raises(AssertionError) as info:
        check()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "default_rng(" in notes, notes


def test_a_list_shape_is_a_shape() -> None:
    """As hypothesis.extra.numpy.arrays takes one (refused before)."""
    assert find(arrays("bfloat16", [2, 3]), lambda a: True).shape == (2, 3)
    assert find(code_arrays("e4m3fn", [4]), lambda a: True).shape == (4,)


def test_integer_options_take_numpy_ints_and_refuse_bools() -> None:
    """scale_exponents=(True, 2) was taken and (np.int64(0), np.int64(2)) refused; so was
    seeds(max_value=np.int64(5))."""
    assert find(blocks("e4m3fn", 4, scale_exponents=(np.int64(0), np.int64(2))),
                lambda a: True).size >= 4
    assert find(seeds(max_value=np.int64(5)), lambda s: s >= 3) == 3
    with pytest.raises(InvalidArgument, match="scale_exponents=\\(True, 2\\)"):
        blocks("e4m3fn", 4, scale_exponents=(True, 2)).validate()
    with pytest.raises(InvalidArgument, match="max_value=True"):
        seeds(max_value=True).validate()

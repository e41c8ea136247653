"""numerics.kernels.layout.moved_last against numpy's moveaxis copy: every axis of
arrays up to 4-D, every dtype it copies itself, shapes that are not multiples of its
tiles, empty and non-contiguous inputs (numpy's own copy)."""

from __future__ import annotations

import numpy as np
import pytest
from thread_pool import available

from numerics.kernels.layout import moved_last

SHAPES = [(5,), (3, 7), (70, 130), (129, 64), (2, 65, 3), (3, 1, 200), (2, 3, 67, 5),
          (0, 4), (4, 0, 3), (1, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.bool_])
def test_moved_last_is_numpys_moveaxis_copy(shape: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(len(shape))
    x: np.ndarray = (rng.standard_normal(shape) * 100).astype(dtype)
    for axis in range(-len(shape), len(shape)):
        want = np.ascontiguousarray(np.moveaxis(x, axis, -1))
        got = moved_last(x, axis)
        assert got.flags.c_contiguous and got.dtype == x.dtype and got.shape == want.shape
        assert np.array_equal(got, want)


def test_non_contiguous_and_byte_swapped_inputs_take_numpys_copy() -> None:
    x = np.arange(600.0).reshape(20, 30)
    for view in (x[:, ::2], x.T, x.astype(">f8")):
        for axis in (0, 1):
            want = np.ascontiguousarray(np.moveaxis(view, axis, -1))
            assert np.array_equal(moved_last(view, axis), want)


def test_threads_give_the_same_copy() -> None:
    import numerics

    x = np.random.default_rng(0).standard_normal((300, 700)).astype(np.float32)
    previous = numerics.get_num_threads()
    try:
        copies = []
        for threads in available(1, 2):
            numerics.set_num_threads(threads)
            copies.append(moved_last(x, 0))
    finally:
        numerics.set_num_threads(previous)
    assert all(np.array_equal(copy, x.T) for copy in copies)


@pytest.mark.parametrize("alg", ["recursive", "pairwise", "kahan"])
def test_sums_over_any_axis_equal_the_sums_of_the_moved_copy(alg: str) -> None:
    """accum.sum over a leading or middle axis (which moved_last copies by tiles) gives
    the sums of the same numbers laid out with that axis last (no copy)."""
    from numerics import accum

    x = np.random.default_rng(3).standard_normal((70, 3, 65)).astype(np.float32)
    for axis in (0, 1):
        laid_out = np.ascontiguousarray(np.moveaxis(x, axis, -1))
        want = accum.sum(laid_out, "bfloat16", algorithm=alg, axis=-1)
        got = accum.sum(x, "bfloat16", algorithm=alg, axis=axis)
        assert np.array_equal(got.value, want.value) and np.array_equal(got.bound, want.bound)

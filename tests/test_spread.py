"""numerics.kernels.spread: the pieces cover the range once, in order; failures and
nested calls behave."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.kernels.spread import pieces, spread
from numerics.threads import get_num_threads, set_num_threads


@given(st.integers(0, 10**7), st.integers(1, 64), st.integers(1, 1 << 17))
def test_pieces_tile_the_range_on_aligned_boundaries(n: int, parts: int, align: int) -> None:
    got = pieces(n, parts, align)
    assert len(got) <= parts
    assert [lo for lo, _ in got[1:]] == [hi for _, hi in got[:-1]]
    if n == 0:
        assert got == []
        return
    assert got[0][0] == 0 and got[-1][1] == n
    assert all(lo < hi for lo, hi in got)
    assert all(lo % align == 0 for lo, _ in got)
    sizes = [hi - lo for lo, hi in got[:-1]]
    assert not sizes or max(sizes) - min(sizes) <= align  # nearly equal


def two_threads() -> int:
    before = get_num_threads()
    try:
        set_num_threads(2)
    except ValueError:
        pytest.skip("a single-thread pool")
    return before


def test_pieces_run_on_several_threads_and_come_back_in_order() -> None:
    before = two_threads()
    try:
        seen: set[int] = set()

        def span(lo: int, hi: int) -> tuple[int, int]:
            seen.add(threading.get_ident())
            return lo, hi

        got = spread(span, 1 << 20, align=1 << 16)
        assert got == pieces(1 << 20, 2, 1 << 16)
        assert len(seen) == 2
        # 64 rows of 4096 terms are worth splitting; 64 single elements are not
        assert len(spread(span, 64, unit=4096)) == 2
        assert spread(span, 64) == [(0, 64)]
        set_num_threads(1)
        assert spread(span, 1 << 20) == [(0, 1 << 20)]
    finally:
        set_num_threads(before)


def test_small_and_empty_ranges_stay_on_the_calling_thread() -> None:
    me = threading.get_ident()
    assert spread(lambda lo, hi: (lo, hi, threading.get_ident()), 1000) == [(0, 1000, me)]
    assert spread(lambda lo, hi: 1, 0) == []


def test_a_failing_piece_raises_after_every_piece_finished() -> None:
    before = two_threads()
    try:
        done: list[int] = []

        def span(lo: int, hi: int) -> int:
            if lo > 0:
                raise ValueError(f"piece at {lo}")
            done.append(lo)
            return hi

        with pytest.raises(ValueError, match="piece at"):
            spread(span, 1 << 20)
        assert done == [0]
    finally:
        set_num_threads(before)


def test_nested_calls_from_pool_threads_run_serially() -> None:
    before = two_threads()
    try:
        def inner(lo: int, hi: int) -> int:
            return len(spread(lambda a, b: b - a, hi - lo, minimum=1))

        # every outer piece (one on a pool thread) may not wait on the pool again
        assert spread(inner, 1 << 20)[1] == 1
    finally:
        set_num_threads(before)

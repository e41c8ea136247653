"""The testing assertions compare in pieces of numerics.testing.assertions._PIECE
elements: the messages (counts, worst element, first rows, histogram) and the distances
do not depend on where the pieces end, and the comparison's temporaries stay a few
bytes per element."""

from __future__ import annotations

import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import numerics.testing.assertions as assertions
from numerics.testing import assert_bitwise_equal, assert_ulp_close, ulp_distances


def _message(check: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    return str(info.value)


def _pair(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """bfloat16 results and references that differ in every way the messages name:
    distances of 1 to 300 ulp, NaN against numbers, NaN signs, infinities, signed
    zeros; failures spread over the whole array, the worst one repeated."""
    rng = np.random.default_rng(seed)
    want = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    got = want.copy()
    codes = got.view(np.uint16)
    at = rng.choice(n, size=60, replace=False)
    codes[at[:30]] += rng.integers(1, 300, 30).astype(np.uint16)
    got[at[30:35]] = np.nan
    want[at[35:38]] = np.nan
    got[at[38:40]] = -np.nan
    want[at[38:40]] = np.nan
    got[at[40:43]] = np.inf
    got[at[43:47]] = -0.0
    want[at[43:47]] = 0.0
    codes[at[47:49]] += np.uint16(300)  # two elements share the worst distance
    return got, want


@pytest.mark.parametrize("piece", [1, 7, 64, 1000])
def test_messages_do_not_depend_on_the_pieces(monkeypatch: pytest.MonkeyPatch,
                                              piece: int) -> None:
    got, want = _pair(piece, 3000)
    real = want.astype(np.float64) + 1e-4  # a reference between codes
    cases: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
        (assert_ulp_close, (got, want), {"max_ulp": 2}),
        (assert_ulp_close, (got, want), {"max_ulp": 0}),
        (assert_ulp_close, (got, real), {"max_ulp": 0.5, "fmt": "bfloat16", "inf": "ulp"}),
        (assert_bitwise_equal, (got, want), {}),
        (assert_bitwise_equal, (got, want), {"canonical_nan": False}),
    ]
    whole = [_message(check, *args, **kwargs) for check, args, kwargs in cases]
    distances = ulp_distances(got, want)
    monkeypatch.setattr(assertions, "_PIECE", piece)
    assert [_message(check, *args, **kwargs) for check, args, kwargs in cases] == whole
    assert np.array_equal(ulp_distances(got, want), distances)
    assert "worst: NaN vs number" in whole[0]  # the most severe label wins


@pytest.mark.parametrize("piece", [1, 5, 1000])
def test_of_two_equal_worst_distances_the_later_is_shown(monkeypatch: pytest.MonkeyPatch,
                                                          piece: int) -> None:
    want = np.linspace(1, 2, 2000).astype(ml_dtypes.bfloat16)
    got = want.copy()
    codes = got.view(np.uint16)
    codes[[3, 900, 1500]] += np.uint16(1)
    codes[[10, 1234]] += np.uint16(5)
    monkeypatch.setattr(assertions, "_PIECE", piece)
    text = _message(assert_ulp_close, got, want, max_ulp=0)
    assert "worst: 5 ulp at index 1234" in text and "5 of 2000 elements differ" in text


def test_broadcast_reference_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    got = np.full((40, 30), 1.0, np.float32)
    got[7, 3] = np.nextafter(np.float32(1), np.float32(2))
    got[39, 29] = 3.0
    whole = _message(assert_ulp_close, got, np.float32(1.0), max_ulp=0)
    monkeypatch.setattr(assertions, "_PIECE", 11)
    assert _message(assert_ulp_close, got, np.float32(1.0), max_ulp=0) == whole
    assert "2 of 1200 elements differ" in whole and "(39, 29)" in whole


def test_comparison_temporaries_stay_small() -> None:
    """A passing comparison of 2**20 float32 pairs: the codes of both sides (8 bytes each
    per element) and a piece's temporaries, where the whole-array comparison took about
    230 bytes per element."""
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    y = np.nextafter(x, np.float32(np.inf))
    assert_ulp_close(x, y, max_ulp=1)
    tracemalloc.start()
    try:
        assert_ulp_close(x, y, max_ulp=1)
        assert_bitwise_equal(x, x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / x.size < 40

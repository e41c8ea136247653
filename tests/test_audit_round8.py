"""Defects found by the eighth audit round, each pinned by the case that showed it."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from numerics import accum
from numerics.accum.tensorcore import fused_dot_add

_MAX = float(np.finfo(np.float64).max)
_ALGORITHMS: list[tuple[str, dict[str, Any]]] = [
    ("recursive", {}), ("pairwise", {}), ("kahan", {}), ("neumaier", {}), ("exact", {}),
    ("blocked", {"promote_fmt": "binary64", "block_size": 2})]


@pytest.mark.parametrize("algorithm, options", _ALGORITHMS, ids=[a for a, _ in _ALGORITHMS])
def test_binary64_bound_is_finite_where_only_sum_abs_overflows(
        algorithm: str, options: dict[str, Any]) -> None:
    """``sum |x_i|`` of ``[max, -max, 1]`` overflows float64, but the bound
    ``g(k) sum |x_i|`` (claim A2 and its kin) is near ``2**-52 * 2 max``: it came back
    inf.  It is now finite, holds, and is within a few units of the formula."""
    x = np.array([_MAX, -_MAX, 1.0])
    r = accum.sum(x, "binary64", algorithm=algorithm, **options)
    exact = sum(Fraction(v) for v in x.tolist())
    assert float(r.value) == 1.0 and abs(Fraction(float(r.value)) - exact) <= Fraction(
        float(r.bound))
    S = 2 * Fraction(_MAX) + 1
    assert 0 < r.bound < float(8 * S * Fraction(2) ** -53 * 4)
    d = accum.dot(x, np.ones(3), "binary64", algorithm=algorithm, **options)
    assert float(d.value) == 1.0 and 0 < d.bound < float(8 * S * Fraction(2) ** -53 * 4)


def test_rescaled_rows_keep_their_own_bound_in_a_batch() -> None:
    """Only the rows whose ``sum |x_i|`` overflowed are summed again scaled; a row with an
    infinite term keeps an infinite bound, and the others keep the bound they had
    alone."""
    rows = np.array([[_MAX, -_MAX, 1.0], [1.0, 2.0, 3.0], [1.0, np.inf, 1.0]])
    for algorithm, options in _ALGORITHMS:
        batch = accum.sum(rows, "binary64", algorithm=algorithm, axis=1, **options).bound
        alone = [float(accum.sum(r, "binary64", algorithm=algorithm, **options).bound)
                 for r in rows[:2]]
        assert batch[:2].tolist() == alone and np.isinf(batch[2]), algorithm
        dots = accum.dot(rows.T, np.ones(3), "binary64", algorithm=algorithm, axis=0,
                         **options).bound
        assert np.isfinite(dots[0]) and np.isinf(dots[2]), algorithm


def test_fused_dot_add_without_products_follows_its_docstring() -> None:
    """With k = 0 the docstring promised ``c``; the step truncates ``c`` to the
    fraction bits and turns -0 into +0, which the docstring now says."""
    empty = np.zeros((0,))
    c = 1.0 + 2.0**-20
    assert float(fused_dot_add(empty, empty, c, input_format="binary16",
                               fractional_bits=13)) == 1.0
    assert float(fused_dot_add(empty, empty, c, input_format="binary16",
                               fractional_bits=25)) == c
    z = fused_dot_add(empty, empty, -0.0, input_format="binary16", fractional_bits=25)
    assert float(z) == 0.0 and not np.signbit(z)

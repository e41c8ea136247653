"""numerics.kernels.exactsum against Fraction sums: each column's pair ``(h, l, s)`` has
``h`` the binary64 nearest ``sum / 2**s`` (ties to even), ``l`` the rest rounded to odd,
``s`` 0 unless ``h`` would overflow; an exact zero carries IEEE 754's sign, and an
infinity or NaN among the terms gives the exact sum's IEEE value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from numerics.kernels.exactsum import exact_pairs

M64 = float(np.finfo(np.float64).max)


def _ulp(x: float) -> Fraction:
    return Fraction(math.ulp(x))


def _odd(x: float) -> bool:
    return bool(int(np.float64(x).view(np.uint64)) & 1)


def _check_column(column: list[float], h: float, lo: float, s: int, round_down: bool) -> None:
    if any(math.isnan(v) for v in column) or (math.inf in column and -math.inf in column):
        assert math.isnan(h) and lo == 0.0
        return
    if math.inf in column or -math.inf in column:
        assert h == (math.inf if math.inf in column else -math.inf) and lo == 0.0
        return
    total = sum(map(Fraction, column), Fraction(0))
    if total == 0:
        signs = {math.copysign(1.0, v) for v in column}
        want = -0.0 if signs == {-1.0} or (len(signs) > 1 and round_down) else 0.0
        assert h == 0.0 and math.copysign(1.0, h) == math.copysign(1.0, want) and lo == 0.0
        return
    assert s == 0 or abs(h) >= 2.0**1019
    assert abs(h) < 2.0**1021 or s == 0
    scaled = total / Fraction(2) ** s
    off = abs(Fraction(h) - scaled)
    assert off <= _ulp(h) / 2  # nearest
    if off == _ulp(h) / 2:
        assert not _odd(h)  # ties to even
    rest = scaled - Fraction(h)
    if rest == 0:
        assert lo == 0.0
    elif Fraction(lo) != rest:  # rounded to odd: a neighbour with its last bit set
        assert _odd(lo) and (lo > 0) == (rest > 0)
        assert abs(rest - Fraction(lo)) < _ulp(lo) or (s > 0 and abs(lo) == 5e-324)


_SIG = st.floats(1.0, 2.0, exclude_max=True)
_EXP = st.integers(-1074, 1023) | st.sampled_from([-1074, -1060, -1022, -600, 0, 52, 53,
                                                    600, 1000, 1022, 1023])
_TERM = st.one_of(
    st.builds(lambda m, e, s: s * math.ldexp(m, e) if e < 1024 else s * M64, _SIG, _EXP,
              st.sampled_from([1.0, -1.0])),
    st.sampled_from([0.0, -0.0, M64, -M64, 5e-324, -5e-324, 2.0**-1022, 1.0, -1.0]),
    st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def _columns(draw: st.DrawFn) -> list[list[float]]:
    """Up to 5 columns of a common length, some with every term cancelled by its
    negation (exact zeros and tiny rests), some with an infinity or a NaN."""
    n = draw(st.integers(1, 12))
    cols = []
    for _ in range(draw(st.integers(1, 5))):
        col = draw(st.lists(_TERM, min_size=n, max_size=n))
        kind = draw(st.sampled_from(["plain", "plain", "cancel", "special"]))
        if kind == "cancel" and n >= 2:
            half = col[:n // 2]
            col = half + [-v for v in reversed(half)] + col[2 * (n // 2):]
        elif kind == "special":
            col[draw(st.integers(0, n - 1))] = draw(st.sampled_from([math.inf, -math.inf,
                                                                      math.nan]))
        cols.append(col)
    return cols


@settings(max_examples=300, deadline=None)
@given(_columns(), st.booleans())
@example([[1 + 2.0**-52, 2.0**-53, -(2.0**-160)]], False)
@example([[1.0, 2.0**-53, 2.0**-160]], False)
@example([[2.0**-1022, 2.0**-1074, -(2.0**-1074)]], False)
@example([[M64, M64, -1e300], [M64, 2.0**970, 0.0], [M64, 2.0**970, -(2.0**900)]], False)
@example([[1.0, -1.0], [-0.0, -0.0], [0.0, -0.0]], True)
def test_exact_pairs_against_fractions(cols: list[list[float]], round_down: bool) -> None:
    X = np.array(cols, dtype=np.float64).T  # (n, batch), a strided view
    h, lo, s = exact_pairs(X, round_down)
    for j, col in enumerate(cols):
        _check_column(col, float(h[j]), float(lo[j]), int(s[j]), round_down)
    # the same pairs from a C-contiguous copy, and one column at a time
    h2, lo2, s2 = exact_pairs(np.ascontiguousarray(X), round_down)
    assert np.array_equal(h, h2, equal_nan=True) and np.array_equal(lo, lo2)
    assert np.array_equal(s, s2)


def test_many_columns_on_every_thread_count() -> None:
    """Wide batches cross the kernel's tiles of columns; threads split them."""
    import numerics

    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 1000)) * np.exp2(rng.integers(-600, 600, (40, 1000)))
    previous = numerics.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 4):
            try:
                numerics.set_num_threads(threads)
            except ValueError:
                continue  # a pool of fewer threads
            results.append(exact_pairs(X, False))
    finally:
        numerics.set_num_threads(previous)
    for other in results[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(results[0], other))
    for j in range(0, 1000, 97):
        column = X[:, j].tolist()
        _check_column(column, float(results[0][0][j]), float(results[0][1][j]),
                      int(results[0][2][j]), False)


def test_finite_terms_beside_an_infinity_leave_it() -> None:
    """The exact sum of finite terms and one infinity is that infinity, even where the
    finite terms alone overflow in float64 order (a float64 loop gave inf - inf = NaN)."""
    from numerics import accum

    got = accum.sum(np.array([1e308, 1e308, -np.inf]), "binary64", algorithm="exact")
    assert float(got.value) == -np.inf
    got = accum.sum(np.array([[1e308, np.inf], [1e308, -np.inf]]), "binary32",
                    algorithm="exact", axis=0)
    assert float(got.value[0]) == np.inf and np.isnan(got.value[1])

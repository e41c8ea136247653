"""numerics.accum.sum / dot against the independent exact references."""

from __future__ import annotations

import zlib
from fractions import Fraction

import accum_reference as ref
import numpy as np
import pytest

import numerics
from numerics import accum

FMTS = ["bfloat16", "binary16", "e4m3fn", "e5m2", "binary8p1", "binary32", "binary64"]
MODES = ["rne", "rna", "rtz", "ru", "rd", "rto"]


def _data(fmt: str, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    scale = {"e4m3fn": 4.0, "e5m2": 4.0}.get(fmt, 100.0)
    x = rng.standard_normal(shape) * scale * np.exp2(rng.integers(-4, 4, shape))
    return np.asarray(accum.sum(x[..., None], fmt).value)  # representable inputs


def _reference(alg: str, xs: list[Fraction], fmt: str, mode: str, block: int,
               col: int, n_cols: int) -> Fraction:
    fl = ref.rounder(fmt, mode)
    if alg == "recursive":
        return ref.ref_recursive(xs, fl)
    if alg == "pairwise":
        return ref.ref_pairwise(xs, fl, block)
    if alg == "kahan":
        return ref.ref_kahan(xs, fl)
    if alg == "neumaier":
        return ref.ref_neumaier(xs, fl)
    if alg == "exact":
        return fl(sum(xs, Fraction(0)))
    if alg == "blocked":
        return ref.ref_blocked(xs, fl, ref.rounder("binary32", mode), block)
    if alg == "tree":
        return ref.ref_tree(xs, fl, _TREE)
    # ring: column col lies in chunk c of np.array_split(range(n_cols), n)
    n = len(xs)
    sizes = [n_cols // n + (1 if c < n_cols % n else 0) for c in range(n)]
    chunk = int(np.searchsorted(np.cumsum(sizes), col, side="right"))
    return ref.ref_ring_element(xs, fl, chunk, _RING)


_TREE = ((0, (1, 2)), (3, 4, 5), ((6,), 7, 8, 9), 10, 11)
_RING = [3, 0, 11, 5, 1, 2, 10, 4, 6, 7, 8, 9]


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("alg", accum.ALGORITHMS)
def test_bit_exact_against_reference(alg: str, mode: str, fmt: str) -> None:
    rng = np.random.default_rng(zlib.crc32(repr((alg, mode, fmt)).encode()))
    n, cols = 12, 7
    x = _data(fmt, rng, (cols, n))
    kw: dict[str, object] = {}
    if alg in ("pairwise", "blocked"):
        kw["block_size"] = 5
    if alg == "tree":
        kw["tree"] = _TREE
    if alg == "ring":
        kw["ring_order"] = _RING
        x = x.T  # reduce over the ranks axis 0; the 7 columns are buffer positions
    r = accum.sum(x, fmt, algorithm=alg, rounding=mode, axis=0 if alg == "ring" else -1,
                  **kw)  # type: ignore[arg-type]
    for j in range(cols):
        xs = [Fraction(float(v)) for v in (x[:, j] if alg == "ring" else x[j])]
        want = _reference(alg, xs, fmt, mode, 5, j, cols)
        assert Fraction(float(r.value[j])) == want, (alg, mode, fmt, j)


@pytest.mark.parametrize("fmt", ["bfloat16", "binary32", "binary64"])
@pytest.mark.parametrize("mode", ["rne", "rtz", "ru"])
def test_dot_bit_exact(mode: str, fmt: str) -> None:
    """Each product rounded once, then the recursive sum (binary32 and binary64 rounded
    to nearest: the hardware's own products and sums)."""
    rng = np.random.default_rng(7)
    x, y = _data(fmt, rng, (5, 9)), _data(fmt, rng, (5, 9))
    if fmt != "bfloat16":  # products that are not binary32/binary64 numbers
        x, y = x * (1 + 2.0**-20), y * (1 - 2.0**-21)
        x, y = (np.asarray(accum.sum(v[..., None], fmt).value) for v in (x, y))
    r = accum.dot(x, y, fmt, rounding=mode)
    fl = ref.rounder(fmt, mode)
    for j in range(5):
        prods = [fl(Fraction(float(a)) * Fraction(float(b))) for a, b in zip(x[j], y[j])]
        assert Fraction(float(r.value[j])) == ref.ref_recursive(prods, fl)


def test_fast_bf16_path_matches_reference_with_ties() -> None:
    """The float32 fast path (bf16, rne, float32 input) on tie-heavy data and axis 0."""
    rng = np.random.default_rng(3)
    x = (rng.integers(-300, 300, (40, 6)) * 0.5).astype(np.float32)
    r = accum.sum(x, "bfloat16", axis=0)
    fl = ref.rounder("bfloat16", "rne")
    for j in range(6):
        xs = [fl(Fraction(float(v))) for v in x[:, j]]
        assert Fraction(float(r.value[j])) == ref.ref_recursive(xs, fl)


def test_bf16_ones_stall_at_256_and_kahan_does_not() -> None:
    ones = np.ones(4096, np.float32)
    assert float(accum.sum(ones, "bfloat16").value) == 256.0  # ml_dtypes issue #63
    assert float(accum.sum(ones, "bfloat16", algorithm="kahan").value) == 4096.0
    # Neumaier's correction is itself a recursive bf16 sum of the lost ones: it stalls
    # at 256 too, giving 256 + 256.
    assert float(accum.sum(ones[:1024], "bfloat16", algorithm="neumaier").value) == 512.0
    assert float(accum.sum(ones, "bfloat16", algorithm="pairwise", block_size=128).value) \
        == 4096.0


def test_stochastic_rounding_stays_between_neighbours_and_does_not_stall() -> None:
    r = accum.sum(np.ones((64, 1024)), "bfloat16", rounding="sr", rng=1)
    assert np.all(np.isin(r.value % 4, [0, 2]) | (r.value <= 256))
    assert abs(float(r.value.mean()) - 1024) < 64  # unbiased: no stall at 256


def test_shapes_and_vectorization() -> None:
    x = np.arange(2 * 3 * 5, dtype=np.float64).reshape(2, 3, 5)
    r = accum.sum(x, "binary32", axis=1)
    assert r.value.shape == r.bound.shape == (2, 5)
    np.testing.assert_array_equal(r.value, x.sum(axis=1))


@pytest.mark.parametrize("kwargs, match", [
    ({"algorithm": "fancy"}, "algorithm='fancy'"),
    ({"rounding": "nearest"}, "rounding='nearest'"),
    ({"block_size": 0}, "block_size=0"),
    ({"algorithm": "tree", "tree": ((0, 1), 2)}, "leaves"),
    ({"algorithm": "tree"}, "tree=None"),
    ({"algorithm": "ring", "ring_order": [0, 0, 1, 2]}, "ring_order"),
    ({"axis": 3}, "axis=3"),
    ({"bound_kind": "typical"}, "bound_kind='typical'"),
    ({"algorithm": "kahan", "bound_kind": "probabilistic"}, "probabilistic"),
])
def test_bad_input(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        accum.sum(np.ones((3, 4)), "bfloat16", **kwargs)  # type: ignore[arg-type]


def test_bad_format_and_dot_shapes() -> None:
    with pytest.raises(ValueError, match="e8m0fnu"):
        accum.sum(np.ones(3), "e8m0fnu")
    with pytest.raises(ValueError, match="broadcast"):
        accum.dot(np.ones(3), np.ones(4), "bfloat16")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["rne", "rtz"])
def test_recursive_bf16_edge_rows_match_reference(dtype: type, mode: str) -> None:
    """float32/float64 rows through the kernel (fast nearest-even rounding and the general
    round_pair path): ties, signed zeros, subnormal-sized and large terms, cancellation,
    even and odd lengths, against the one-rounding-per-step reference."""
    rng = np.random.default_rng(2024)
    fl = ref.rounder("bfloat16", mode)
    cast = ref.rounder("bfloat16", "rne")
    for n in (64, 257):
        x = rng.standard_normal((6, n)) * np.exp2(rng.integers(-30, 30, (6, n)))
        x[0] = 1.0
        x[0, 0] = 256.0  # stall: 256 + 1 is a tie in bf16
        x[1, ::2] = -0.0
        x[2, : n // 2] = 2.0**-130  # below bf16's normal range
        x[3] = np.where(np.arange(n) % 2, 3.0e20, -3.0e20)  # cancellation
        x[4] = -0.0  # a sum of -0 terms is -0
        x = x.astype(dtype)
        got = accum.sum(x, "bfloat16", rounding=mode).value
        assert got[4] == 0 and np.signbit(got[4])  # IEEE: -0 + -0 = -0 (Fractions lack -0)
        for i in range(4):
            terms = [cast(Fraction(float(v))) for v in x[i]]  # inputs are rounded first
            want = float(ref.ref_recursive(terms, fl))
            assert got[i] == want and not (want == 0 and np.signbit(got[i])), (i, n)


@pytest.mark.parametrize("fmt", ["binary32", "bfloat16", "e4m3fn"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("alg", ["recursive", "pairwise", "exact", "blocked", "ring"])
def test_exact_zero_sum_sign(alg: str, mode: str, fmt: str) -> None:
    """An exact zero sum is signed as IEEE 754 (6.3) signs ``x + y``: -0 when both addends
    are -0; else +0, but -0 rounding down (the Fraction references carry no zero sign)."""
    # (a list: -0.0 == 0.0, so these tuples would collide as dict keys)
    cases = [((1.0, -1.0), mode == "rd"), ((-0.0, -0.0), True), ((0.0, 0.0), False),
             ((-0.0, 0.0), mode == "rd"), ((0.5, -0.5), mode == "rd")]
    for terms, negative in cases:
        x = np.array(terms)
        value = accum.sum(x, fmt, algorithm=alg, rounding=mode).value
        assert value == 0 and bool(np.signbit(value)) == negative, (terms, value)
        if alg in ("recursive", "pairwise"):
            d = accum.dot(np.ones(2), x, fmt, algorithm=alg, rounding=mode).value
            assert d == 0 and bool(np.signbit(d)) == negative, (terms, d)


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e5m2"])
@pytest.mark.parametrize("alg", ["recursive", "pairwise", "kahan"])
def test_float64_rows_are_rounded_into_the_format_before_the_lanes(alg: str,
                                                                   fmt: str) -> None:
    """float64 rows to a format the float32 lanes sum (nearest-even) are first rounded to
    the format's values as float32: values off the grid, ties between neighbours and
    subnormal-sized terms against the reference (inputs rounded once, then the
    algorithm; a float32 copy first would round twice); terms beyond the largest
    become infinities, NaN stays NaN."""
    rng = np.random.default_rng(zlib.crc32(repr((alg, fmt)).encode()))
    p, emin, emax, _ = ref.FORMATS[fmt]
    n = 37
    x = rng.standard_normal((6, n)) * np.exp2(rng.integers(-8, 8, (6, n)))
    grid = np.asarray(accum.sum(x[..., None], fmt).value)  # values of the format
    mids = (grid + numerics.next_up(grid, fmt)) / 2  # exact ties
    x[1] = mids[1]
    x[2, ::3] = 2.0 ** (emin - p + 1) * 1.5  # a tie in the subnormal range
    x[3] = mids[3] * (1 + 2.0**-30)  # just beyond a tie: float32 would round onto it
    fl = ref.rounder(fmt, "rne")
    kw: dict[str, object] = {"block_size": 5} if alg == "pairwise" else {}
    got = accum.sum(x, fmt, algorithm=alg, **kw)  # type: ignore[arg-type]
    for j in range(4):
        terms = [fl(Fraction(float(v))) for v in x[j]]
        want = _reference(alg, terms, fmt, "rne", 5, j, 6)
        assert Fraction(float(got.value[j])) == want, (alg, fmt, j)
    special = np.ones((3, 8))
    big = float((2 - 2.0 ** (1 - p)) * 2.0 ** emax)
    special[0, 2] = big * (1 + 2.0 ** -p)  # rounds beyond the largest: infinity
    special[1, 5] = np.nan
    special[2, 1], special[2, 6] = -special[0, 2], special[0, 2]
    r = accum.sum(special, fmt, algorithm=alg, **kw).value  # type: ignore[arg-type]
    # (Kahan's correction of an infinite term is inf - inf: NaN, as in IEEE arithmetic)
    assert (np.isnan(r[0]) if alg == "kahan" else r[0] == np.inf)
    assert np.isnan(r[1]) and np.isnan(r[2])

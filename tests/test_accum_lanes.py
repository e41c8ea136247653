"""The binary32-lane summation kernel (nearest even: bfloat16, binary16, e5m2, and the
formats whose overflow is a NaN or that lack -0, e4m3fn, fnuz, P3109) against the exact
references of ``accum_reference`` and against the general kernel, on data aimed at its
weak spots: ties of the input cast and of the sums, subnormals, overflow, NaN."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any, Callable

import accum_reference as ref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numerics
from numerics import accum

_FMTS = {"bfloat16": (8, -126, 127), "binary16": (11, -14, 15)}
_ALGS = ["recursive", "pairwise", "kahan", "neumaier"]


def _fl(fmt: str) -> Callable[[Any], Any]:
    """One rounding into ``fmt`` (the reference's ``rnd``), letting infinities and NaNs
    (Python floats once a sum has overflowed) pass through as IEEE arithmetic makes them."""
    p, emin, emax = _FMTS[fmt]

    def fl(v: Any) -> Any:
        if isinstance(v, float):  # inf or nan: Fraction + inf is a float
            return v
        return ref.rnd(Fraction(v), p, emin, emax, "rne")
    return fl


def _want(alg: str, row: np.ndarray, fmt: str, block: int) -> float:
    fl = _fl(fmt)
    xs: list[Any] = [fl(Fraction(float(v))) if np.isfinite(v) else float(v) for v in row]
    if alg == "recursive":
        return float(ref.ref_recursive(xs, fl))
    if alg == "pairwise":
        return float(ref.ref_pairwise(xs, fl, block))
    if alg == "neumaier":
        return float(ref.ref_neumaier(xs, fl))
    return float(ref.ref_kahan(xs, fl))


@functools.cache
def _term_parts(fmt: str) -> tuple[st.SearchStrategy[Any], ...]:
    """The strategies :func:`_terms` draws from, built once per format (building them
    at every draw took most of the test's time)."""
    p, emin, emax = _FMTS[fmt]
    big = min(2.0 ** (emax + 1), float(np.finfo(np.float32).max))
    return (st.sampled_from([emin - 1, emin, emin + 1, emax - 1, emax])
            | st.integers(emin - 2, emax),
            st.sampled_from([1.0, -1.0]),
            st.sampled_from(["value", "tie", "any"]),
            st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-big,
                      max_value=big),
            st.integers(0, 2**p - 1) | st.sampled_from([0, 1, 2**(p - 1), 2**p - 1]))


@st.composite
def _terms(draw: st.DrawFn, fmt: str) -> float:
    """A float32 term: a value of ``fmt``, a midpoint between two of its neighbours (a
    tie of the input cast), or any float32, with exponents crowding the subnormal range
    and the top of the range."""
    p, emin, _ = _FMTS[fmt]
    exponents, signs, kinds, any32, significands = _term_parts(fmt)
    e = draw(exponents)
    sign = draw(signs)
    kind = draw(kinds)
    q = 2.0 ** (max(e, emin) - p + 1)  # the quantum of the binade
    if kind == "any":
        return float(draw(any32))
    m = draw(significands)
    v = m * q + (q / 2 if kind == "tie" else 0.0)
    return sign * float(np.float32(v))


@st.composite
def _matrix(draw: st.DrawFn, fmt: str) -> np.ndarray:
    rows = draw(st.integers(1, 11))
    n = draw(st.integers(1, 20))
    vals = draw(st.lists(_terms(fmt), min_size=rows * n, max_size=rows * n))
    return np.array(vals, np.float32).reshape(rows, n)


@pytest.mark.parametrize("fmt", list(_FMTS))
@pytest.mark.parametrize("alg", _ALGS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_lanes_match_the_exact_reference(fmt: str, alg: str, data: st.DataObject) -> None:
    x = data.draw(_matrix(fmt))
    block = data.draw(st.sampled_from([1, 2, 3, 8])) if alg == "pairwise" else 1
    got = accum.sum(x, fmt, algorithm=alg,
                    block_size=block if alg == "pairwise" else None).value
    for r in range(x.shape[0]):
        want = _want(alg, x[r], fmt, block)
        if np.isnan(want):
            assert np.isnan(got[r]), (r, x[r])
        else:
            assert got[r] == want, (r, x[r], got[r], want)


@pytest.mark.parametrize("fmt", list(_FMTS))
def test_lanes_sum_ties_overflow_and_subnormals(fmt: str) -> None:
    """Fixed rows: a stall at a tie, overflow to inf and back to NaN, sums that land on
    the subnormal grid, the largest finite value plus half an ulp (a tie that rounds
    to infinity) and just below it."""
    p, emin, emax = _FMTS[fmt]
    top = (2 - 2.0 ** (1 - p)) * 2.0**emax
    half_ulp = 2.0 ** (emax - p)
    tiny = 2.0 ** (emin - p + 1)  # the smallest subnormal
    rows = [
        [2.0**p, 1.0, 1.0, 1.0, 1.0, 1.0],  # 2**p + 1 is a tie: stalls
        [top, half_ulp, 0.0, 0.0, 0.0, 0.0],  # a tie at the top: rounds to inf
        [top, half_ulp / 2, half_ulp / 4, 0.0, 0.0, 0.0],  # below the tie each time
        [top, top, -top, 0.0, 0.0, 0.0],  # inf, then inf - top stays inf
        [tiny, tiny / 2, tiny / 2, tiny * 3, -tiny, tiny / 2],  # input ties to even
        [2.0**emin, -tiny, tiny / 2, 2.0**emin * 1.5, -(2.0**emin), 3 * tiny],
    ]
    x = np.array(rows, np.float32)
    x = np.concatenate([x] * 3)  # 18 rows: two full transposed blocks and a tail
    for alg in _ALGS:
        got = accum.sum(x, fmt, algorithm=alg).value
        for r in range(x.shape[0]):
            want = _want(alg, x[r], fmt, 1)
            assert got[r] == want or (np.isnan(got[r]) and np.isnan(want)), (alg, r)


def _general(x: np.ndarray, fmt: str, alg: str, block: int | None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Row sums and ``sum |x_i|`` by the general kernel (numerics.kernels.accum.sum_rows,
    one rounding at a time through round_pair), never the lanes."""
    from numerics.kernels import accum as kernel
    from numerics.kernels.rounding import MODE_RNE, format_params

    f = numerics.get_format(fmt)
    rows = np.ascontiguousarray(x, np.float64).reshape(-1, x.shape[-1])
    value, abs_sum = np.empty(rows.shape[0]), np.empty(rows.shape[0])
    tiny = np.empty(rows.shape[0], np.int64)
    algs = {"recursive": 0, "pairwise": 1, "kahan": 2, "neumaier": 3}
    with np.errstate(invalid="ignore"):
        kernel.sum_rows(rows, rows, False, algs[alg], min(block or 1, rows.shape[1]),
                        format_params(f), MODE_RNE, f.max, np.uint64(0), value, abs_sum,
                        tiny)
    return value, abs_sum


def _lanes(x: np.ndarray, fmt: str, alg: str, block: int | None
           ) -> tuple[np.ndarray, np.ndarray]:
    """The same through numerics.accum's routing (the lanes for these formats)."""
    from numerics.accum.summation import _kernel_sum

    rows = x.reshape(-1, x.shape[-1])
    value, abs_sum, _ = _kernel_sum(rows, None, numerics.get_format(fmt), alg, "rne", block,
                                    None)
    return value, abs_sum


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e5m2", "e4m3fn", "e4m3fnuz",
                                 "e5m2fnuz", "e4m3b11fnuz", "binary8p3", "binary8p5"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lanes_many_tiles_and_chunks_equal_the_general_kernel(fmt: str, dtype: Any) -> None:
    """130 rows (three tiles of lanes, the last with 2 rows) of 300 terms (five chunks,
    the last partial; the first three ask for the rows' terms two chunks on) through
    the lanes and through the general kernel: the same value bits (NaN signs, the
    zero's sign in a format without -0) and ``sum |x_i|``, with
    terms beyond the format's range (its infinity or, where it has none, its NaN), NaNs,
    signed zeros and subnormals among them."""
    rng = np.random.default_rng(5)
    f = numerics.get_format(fmt)
    lo, hi = (-130, 120) if fmt == "bfloat16" else (f.emin - f.trailing_bits - 2, f.emax + 2)
    x = rng.standard_normal((130, 300)) * np.exp2(rng.integers(lo, hi, (130, 300)))
    x[5:9, ::7] = np.nan
    x[9:11, 3::11] = -np.nan  # (a row with NaNs of both signs: the sign of an IEEE
    # format's result is the compiler's choice, as LLVM may commute an addition)
    x[9:13, ::5] = -0.0
    x[13] = 0.0
    x[14] = -0.0
    x[15] = np.where(np.arange(300) % 2, 1.0, -1.0) * f.max  # cancelling extremes
    x[16, 4] = f.max * 4  # one term beyond the range
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    for alg, block in (("recursive", None), ("pairwise", None), ("pairwise", 7),
                       ("kahan", None), ("neumaier", None)):
        got, got_abs = _lanes(x, fmt, alg, block)
        want, want_abs = _general(x, fmt, alg, block)
        _same_bits(got, want)
        _same_bits(got_abs, want_abs)


@pytest.mark.exhaustive  # (read-only and unaligned arrays compile loops of their own)
@pytest.mark.parametrize("alg", ["recursive", "pairwise", "kahan", "neumaier"])
def test_read_only_and_unaligned_rows_sum_as_a_writable_copy(alg: str, tmp_path: Any) -> None:
    """float32 rows as a user may hold them: read-only (a memory map opened for reading,
    ``np.frombuffer`` of bytes), also at an address that is not a multiple of 4.  The
    lanes' transposition reads them as they are, with the same bits as a writable copy
    (these raised a numba TypingError inside the kernel before)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((70, 300)).astype(np.float32)
    path = tmp_path / "rows.f32"
    x.tofile(path)
    mapped = np.memmap(path, np.float32, mode="r", shape=x.shape)
    odd = np.frombuffer(b"\0" + x.tobytes(), np.float32, offset=1).reshape(x.shape)
    assert not mapped.flags.writeable and not odd.flags.writeable and not odd.flags.aligned
    for fmt in ("bfloat16", "binary16", "binary32"):
        want = accum.sum(x, fmt, algorithm=alg)
        for held in (mapped, odd):
            got = accum.sum(held, fmt, algorithm=alg)
            _same_bits(got.value, want.value)
            _same_bits(got.bound, want.bound)


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e5m2"])
def test_lanes_nan_payloads_become_the_quiet_nan(fmt: str) -> None:
    """NaN inputs with payloads (quiet and signalling, both signs) give the same bits as
    the general kernel: the canonical quiet NaN with the input's sign."""
    bits = np.array([0x7FFFFFFF, 0xFF800001, 0x7F800001, 0xFFC00001], np.uint32)
    x = np.ones((len(bits), 9), np.float32)
    x[np.arange(len(bits)), 3] = bits.view(np.float32)
    with np.errstate(invalid="ignore"):  # casting a signalling NaN
        x64 = x.astype(np.float64)
    for alg in _ALGS:
        got = accum.sum(x, fmt, algorithm=alg).value
        want, _ = _general(x64, fmt, alg, None)
        assert np.all(np.isnan(got))
        _same_bits(got, want)
        _same_bits(accum.sum(x64, fmt, algorithm=alg).value, want)


def _general_dot(x: np.ndarray, y: np.ndarray, fmt: str, alg: str, block: int | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dot products, ``sum |x_i y_i|`` and tiny-product counts by the general kernel."""
    from numerics.kernels import accum as kernel
    from numerics.kernels.rounding import MODE_RNE, format_params

    f = numerics.get_format(fmt)
    X = np.ascontiguousarray(x, np.float64)
    Y = np.ascontiguousarray(y, np.float64)
    value, abs_sum = np.empty(X.shape[0]), np.empty(X.shape[0])
    tiny = np.empty(X.shape[0], np.int64)
    algs = {"recursive": 0, "pairwise": 1, "kahan": 2, "neumaier": 3}
    with np.errstate(all="ignore"):
        kernel.sum_rows(X, Y, True, algs[alg], min(block or 1, X.shape[1]), format_params(f),
                        MODE_RNE, f.max, np.uint64(0), value, abs_sum, tiny)
    return value, abs_sum, tiny


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e5m2", "e4m3fn", "e4m3fnuz",
                                 "binary8p3"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lane_dot_products_equal_the_general_kernel(fmt: str, dtype: Any) -> None:
    """Dot products rounded to nearest take the terms pass (kernels.accum.dot_terms) and
    the lanes: the same value bits, ``sum |x_i y_i|`` and tiny counts as the general
    kernel, with products that overflow, underflow, vanish, and NaN and infinite inputs,
    over several tiles (and a batch of 2, summed row by row)."""
    from numerics.accum.summation import _kernel_sum

    rng = np.random.default_rng(len(fmt))
    f = numerics.get_format(fmt)
    lo, hi = f.emin - f.trailing_bits - 1, f.emax // 2 + 2
    shape = (70, 150)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(lo, hi, shape))
    y = rng.standard_normal(shape) * np.exp2(rng.integers(lo, hi, shape))
    x[3, ::9], y[4, 5], x[5, 7], y[6, ::4] = np.nan, np.inf, -np.inf, 0.0
    y[3, 9], x[4, 5], x[4, 6], y[4, 6] = 0.0, 0.0, np.inf, -0.0  # NaN 0, 0 inf, inf -0
    x[7] = f.max
    y[7] = np.where(np.arange(150) % 2, 2.0, -2.0)  # products beyond the range
    with np.errstate(over="ignore"):
        x, y = x.astype(dtype), y.astype(dtype)
    for alg, block in (("recursive", None), ("pairwise", 4), ("kahan", None),
                       ("neumaier", None)):
        for rows in (slice(None), slice(0, 2)):
            got = _kernel_sum(x[rows], y[rows], f, alg, "rne", block, None)
            want = _general_dot(x[rows], y[rows], fmt, alg, block)
            for g, w in zip(got, want):
                _same_bits(np.asarray(g, np.float64), np.asarray(w, np.float64))


def test_lane_dot_products_round_once_below_binary32_normals() -> None:
    """tf32 products of up to 22 bits that fall among binary32's subnormals lose bits
    there: rounded to odd first (claim D6), not to nearest, so that one that lands on a
    midpoint of tf32's subnormal grid is not rounded twice; against the general kernel
    on 262,144 such products, one per dot product (so a sum absorbs no difference)."""
    from numerics.accum.summation import _kernel_sum

    rng = np.random.default_rng(21)
    f = numerics.get_format("tf32")
    shape = (1 << 18, 1)
    x = np.asarray(numerics.round_to(rng.uniform(1, 2, shape) * 2.0**-66, f))
    y = np.asarray(numerics.round_to(rng.uniform(1, 2, shape) * 2.0**-66, f))
    got = _kernel_sum(x, y, f, "recursive", "rne", None, None)
    want = _general_dot(x, y, "tf32", "recursive", None)
    for g, w in zip(got, want):
        _same_bits(np.asarray(g, np.float64), np.asarray(w, np.float64))


def test_a_format_with_emin_of_binary32_and_a_smaller_range_overflows_at_its_max() -> None:
    """A custom IEEE format with bias 127 but fewer exponent bits (emin = -126, emax < 127)
    overflows at its own largest value: the lanes' emin = -126 step rounds by float32's
    carry into its infinity, so such a format takes the general kernel."""
    from numerics.formats import Format

    f = Format(name="w7", exponent_bits=7, trailing_bits=7, bias=127)
    assert f.emin == -126 and f.emax < 127
    x = np.array([[0.75, 0.75]])
    for dtype in (np.float32, np.float64):
        assert accum.sum(x.astype(dtype), f).value[0] == np.inf
        assert accum.dot(x.astype(dtype), np.array([[0.9375, 0.9375]], dtype), f).value[0] \
            == np.inf

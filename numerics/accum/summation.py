"""Summation and dot products in a low-precision format, vectorized over outputs.

Every arithmetic operation of every algorithm is ONE correctly rounded operation
in the working format ``fmt`` with the rounding mode ``rounding`` (the semantics of
:func:`numerics.fast.encode_pair`: the exact result ``hi + lo`` of the float64
TwoSum / TwoProduct rounded once).  The reduction axis is looped over; every other
axis is processed at once, so thousands of independent sums cost one numpy call per
step.

Algorithms (``x_0 .. x_{n-1}`` the terms of one sum, already rounded into ``fmt``):

``recursive``
    ``s = x_0``; ``s = fl(s + x_i)`` for ``i = 1 .. n-1``.
``pairwise``
    The terms are cut into consecutive blocks of ``block_size`` (the last one may be
    shorter); each block is summed recursively from its first element; the block
    sums ``b_0 .. b_{m-1}`` are then combined level by level: ``fl(b_0 + b_1)``,
    ``fl(b_2 + b_3)``, ...; an odd last element moves up a level unchanged; this
    repeats until one value is left.  ``block_size=None`` means 1 (textbook
    pairwise summation).  numpy's own float sum uses blocks of 128 with an 8-way
    unrolled inner loop, which is a different tree.
``kahan``
    ``s = x_0, c = 0``; for ``i >= 1``: ``y = fl(x_i - c)``, ``t = fl(s + y)``,
    ``c = fl(fl(t - s) - y)``, ``s = t``.  The result is ``s``.
``neumaier``
    ``s = x_0, c = 0``; for ``i >= 1``: ``t = fl(s + x_i)``; if ``|s| >= |x_i|``
    then ``c = fl(c + fl(fl(s - t) + x_i))`` else ``c = fl(c + fl(fl(x_i - t) + s))``;
    ``s = t``.  The result is ``fl(s + c)`` (the compensation is added once, at the
    end).
``exact``
    The exact sum rounded once (order independent and reproducible).
``blocked``
    DeepSeek-V3's promotion: each block of ``block_size`` consecutive terms is summed
    recursively in ``fmt`` starting from zero (``fl(0 + x) = x``, so the first add is
    exact); block sums are added in order into a running total that starts at zero
    and is held in ``promote_fmt`` (default binary32), ``T = fl_promote(T + b_k)``.
    The last block may be shorter.  The value is in ``promote_fmt``.
``tree``
    A given reduction tree: nested tuples of term indices, e.g. ``((0, 1), (2, 3))``
    is ``fl(fl(x_0 + x_1) + fl(x_2 + x_3))``.  A node with more than two children
    sums them left to right recursively.  Every index ``0 .. n-1`` appears once.
``ring``
    A ring all-reduce over ``n`` ranks: the reduction axis holds one term per rank,
    every other element is a position in the ranks' buffers.  The buffer (the other
    axes flattened in C order) is cut into ``n`` contiguous chunks like
    ``numpy.array_split`` (the first ``size % n`` chunks one longer).  Reduce-scatter
    over the ring ``order[0] -> order[1] -> ... -> order[n-1] -> order[0]``
    (``ring_order``, default ``0 .. n-1``): chunk ``c`` starts on rank ``order[c]``,
    which sends it to ``order[c+1]``, which adds its own term, and so on, so chunk
    ``c`` is summed recursively in the order ``x[order[c]], x[order[c+1]], ...,
    x[order[c+n-1]]`` (indices mod ``n``) and finishes on rank ``order[c-1]``.  The
    all-gather then copies the finished chunks without arithmetic.

Inputs are rounded into ``fmt`` first, to nearest even (a cast); the bounds refer
to those rounded terms.  Overflow to inf (or to the format's largest value) breaks
every bound; see ``proofs/accumulation_bounds.md``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import ml_dtypes
import numpy as np

from numerics import eft
from numerics.accum import bounds as _bounds
from numerics.encoding import decode_codes, encode_pair
from numerics.formats import Format, as_format
from numerics.rounding import check_rounding, make_rng

__all__ = ["ALGORITHMS", "AccumResult", "Tree", "dot", "sum"]

#: Every summation algorithm, by name.
ALGORITHMS: tuple[str, ...] = (
    "recursive", "pairwise", "kahan", "neumaier", "exact", "blocked", "tree", "ring",
)

Tree = Union[int, tuple["Tree", ...]]

_py_sum = sum  # the builtin, shadowed by :func:`sum` below


@dataclass(frozen=True)
class AccumResult:
    """Computed sums and their a-priori error bounds.

    Attributes
    ----------
    value : ndarray of float64
        The computed sums (exact values of the working format).
    bound : ndarray of float64
        ``|value - exact sum of the rounded terms| <= bound`` elementwise, under the
        no-overflow hypothesis (for ``bound_kind="probabilistic"``: with probability
        at least ``confidence``).
    algorithm : str
    fmt : Format
    n : int
        Number of terms per sum.
    confidence : float
        1.0 for the worst-case bound.
    """

    value: np.ndarray
    bound: np.ndarray
    algorithm: str
    fmt: Format
    n: int
    confidence: float = 1.0


class _Fl:
    """One-rounding arithmetic in a format (vectorized), using the core encoder."""

    def __init__(self, fmt: Format, rounding: str, rng: np.random.Generator | None) -> None:
        self.fmt = fmt
        self.rounding = rounding
        self.rng = rng

    def round_pair(self, hi: np.ndarray, lo: np.ndarray | None) -> np.ndarray:
        uniform = None
        if self.rounding == "sr":
            assert self.rng is not None
            uniform = self.rng.random(np.shape(hi))
        with np.errstate(invalid="ignore", over="ignore"):
            codes = encode_pair(hi, lo, self.fmt, rounding=self.rounding, uniform=uniform,
                                nan="zero")
        return decode_codes(codes, self.fmt).reshape(np.shape(hi))

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        hi, lo = two_sum(a, b)
        return self.round_pair(hi, lo)

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.add(a, -b)

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        hi, lo = two_prod(a, b)
        return self.round_pair(hi, lo)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numerics.eft.two_sum`, with a zero residual where the sum is not finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        s, lo = eft.two_sum(a, b)
        return s, np.where(np.isfinite(s), lo, 0.0)


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numerics.eft.two_prod`, with a zero residual where the product is not finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        p, lo = eft.two_prod(a, b)
        return p, np.where(np.isfinite(p), lo, 0.0)


def _check_fmt(fmt: Format | str, name: str = "fmt") -> Format:
    f = as_format(fmt)
    if not f.signed or not f.subnormals:
        raise ValueError(
            f"Got {name}={f.name!r}, but accumulation needs a signed format with subnormals"
        )
    return f


def _cast(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Round float64 values into ``fmt`` (nearest even), as float64."""
    with np.errstate(invalid="ignore", over="ignore"):
        return decode_codes(encode_pair(x, None, fmt, rounding="rne", nan="zero"),
                            fmt).reshape(x.shape)


def _as_float64(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "fiub" and arr.dtype.kind != "V":
        if arr.dtype.kind not in "fiubV":
            raise TypeError(f"Got {name} with dtype {arr.dtype}, expected a real numeric array")
    return arr.astype(np.float64)


# ----------------------------------------------------------------------------------
# The algorithms, on arrays shaped (n, batch)
# ----------------------------------------------------------------------------------

def _recursive(fl: _Fl, X: np.ndarray) -> np.ndarray:
    s = X[0].copy()
    for i in range(1, X.shape[0]):
        s = fl.add(s, X[i])
    return s


def _pairwise_levels(fl: _Fl, vals: np.ndarray) -> np.ndarray:
    while vals.shape[0] > 1:
        m = vals.shape[0] // 2
        combined = fl.add(vals[0:2 * m:2], vals[1:2 * m:2])
        if vals.shape[0] % 2:
            combined = np.concatenate([combined, vals[-1:]], axis=0)
        vals = combined
    return vals[0]


def _block_sums(fl: _Fl, X: np.ndarray, block: int) -> np.ndarray:
    """Recursive sums of consecutive blocks, vectorized across blocks: (m, batch)."""
    n, batch = X.shape
    full = n // block
    parts = []
    if full:
        Y = X[: full * block].reshape(full, block, batch)
        s = Y[:, 0].copy()
        for j in range(1, block):
            s = fl.add(s, Y[:, j])
        parts.append(s)
    if n % block:
        parts.append(_recursive(fl, X[full * block:])[None])
    return np.concatenate(parts, axis=0)


def _kahan(fl: _Fl, X: np.ndarray) -> np.ndarray:
    s = X[0].copy()
    c = np.zeros_like(s)
    for i in range(1, X.shape[0]):
        y = fl.sub(X[i], c)
        t = fl.add(s, y)
        c = fl.sub(fl.sub(t, s), y)
        s = t
    return s


def _neumaier(fl: _Fl, X: np.ndarray) -> np.ndarray:
    s = X[0].copy()
    c = np.zeros_like(s)
    for i in range(1, X.shape[0]):
        x = X[i]
        t = fl.add(s, x)
        big = np.abs(s) >= np.abs(x)
        r = np.where(big, fl.add(fl.sub(s, t), x), fl.add(fl.sub(x, t), s))
        c = fl.add(c, r)
        s = t
    return fl.add(s, c)


def _exact(fl: _Fl, X: np.ndarray) -> np.ndarray:
    hi = np.empty(X.shape[1])
    lo = np.empty(X.shape[1])
    cols = np.ascontiguousarray(X.T)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(cols.shape[0]):
            row = cols[j]
            if not np.all(np.isfinite(row)):
                hi[j], lo[j] = float(np.sum(row)), 0.0
                continue
            h = math.fsum(row.tolist())
            hi[j] = h
            lo[j] = math.fsum([*row.tolist(), -h]) if math.isfinite(h) else 0.0
    return fl.round_pair(hi, lo)


def _tree_eval(fl: _Fl, X: np.ndarray, node: Tree) -> np.ndarray:
    if isinstance(node, (int, np.integer)):
        return X[int(node)]
    vals = [_tree_eval(fl, X, child) for child in node]
    s = vals[0]
    for v in vals[1:]:
        s = fl.add(s, v)
    return s


def _ring(fl: _Fl, X: np.ndarray, order: Sequence[int]) -> np.ndarray:
    n, batch = X.shape
    chunk = np.empty(batch, np.intp)
    bounds = np.cumsum([0] + [batch // n + (1 if c < batch % n else 0) for c in range(n)])
    for c in range(n):
        chunk[bounds[c]:bounds[c + 1]] = c
    order_arr = np.asarray(order, np.intp)
    cols = np.arange(batch)
    s = X[order_arr[chunk], cols]
    for k in range(1, n):
        s = fl.add(s, X[order_arr[(chunk + k) % n], cols])
    return s


# ----------------------------------------------------------------------------------
# A fast path: recursive bfloat16 / tf32 sums with round-to-nearest-even
# ----------------------------------------------------------------------------------

def _round_bits_inplace(u: np.ndarray, tmp: np.ndarray, drop: np.uint32, half: np.uint32,
                        mask: np.uint32) -> None:
    """Round binary32 bit patterns ``u`` to nearest even, keeping ``23 - drop`` bits."""
    np.right_shift(u, drop, out=tmp)
    np.bitwise_and(tmp, _ONE32, out=tmp)
    np.add(tmp, half, out=tmp)
    np.add(u, tmp, out=u)
    np.bitwise_and(u, mask, out=u)


_ONE32 = np.uint32(1)
_SIXTEEN = np.uint32(16)
_HALF16 = np.uint32(0x7FFF)
_HIGH16 = np.uint32(0xFFFF0000)
_FAST_CHUNK = 256


def _recursive_f32_rne(rows: np.ndarray, keep_bits: int,
                       pre_rounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """Recursive RNE sums along axis 1 of float32 ``rows`` for bfloat16-like formats.

    ``s + x`` is computed in binary32 (one RNE rounding to 24 bits) and then rounded
    to the target precision p <= 11 with the integer add-and-mask trick.  The double
    rounding is innocuous since 24 >= 2p + 2 (Figueroa 1995), subnormals included:
    both formats share binary32's exponent range, so a sum that is subnormal in the
    target is exact in binary32.  ``rows`` is read in column chunks, transposed so
    that each step is one contiguous vector op across all sums.  Returns the sums and
    an upper bound on ``sum |x_i|`` of the rounded terms (a float32 sum inflated by
    ``exp(n 2**-23)``, which covers its own rounding errors).
    """
    batch, n = rows.shape
    drop = np.uint32(23 - keep_bits)
    half = np.uint32((1 << (23 - keep_bits - 1)) - 1)
    mask = np.uint32(~((1 << (23 - keep_bits)) - 1) & 0xFFFFFFFF)
    s = np.empty(batch, np.float32)
    su = s.view(np.uint32)
    tmp = np.empty(batch, np.uint32)
    abs_sum = np.zeros(batch, np.float64)
    for c0 in range(0, n, _FAST_CHUNK):
        T = np.ascontiguousarray(rows[:, c0:c0 + _FAST_CHUNK].T)
        if not pre_rounded:
            nan = np.isnan(T)
            _round_bits_inplace(T.view(np.uint32), np.empty(T.shape, np.uint32), drop, half,
                                mask)
            if nan.any():
                T[nan] = np.nan
        with np.errstate(over="ignore", invalid="ignore"):
            abs_sum += np.add.reduce(np.abs(T), axis=0)
        start = 0
        if c0 == 0:
            s[...] = T[0]
            start = 1
        for i in range(start, T.shape[0]):
            np.add(s, T[i], out=s)
            _round_bits_inplace(su, tmp, drop, half, mask)
    with np.errstate(over="ignore"):
        abs_sum *= math.exp(n * 2.0**-23)
    return s.astype(np.float64), abs_sum


_ROW_BLOCK = 16      # rows per strip: a strip's transposed rows are 64-byte lines
_STEP_BLOCK = 32     # pairs of steps widened to binary32 at once (64 steps, 1 MiB)
_VELTKAMP_LIMIT = 2.0**96


def _recursive_bf16_veltkamp(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The bfloat16 fast path, or None when its preconditions fail.

    Preconditions: little-endian, an even number ``n >= 2`` of terms, and every row's
    float32 sum of ``|x_i|`` below ``2**96`` (so every term is finite and
    ``|x_i| < 2**96``).

    Pass 1, over strips of :data:`_ROW_BLOCK` rows (cache resident): ``sum |x_i|``
    exactly as the general path computes it; the bfloat16 codes of the terms by the
    integer add-and-mask RNE (``u + 0x7FFF + lsb``, high half: equal to ml_dtypes'
    cast for finite input, subnormals included); the codes of a strip are transposed
    as 32-bit pairs ``code[2j] | code[2j+1] << 16`` into ``W[j, row]``.

    Pass 2: a pair of steps reads the contiguous ``W[j]``: ``W[j] << 16`` and
    ``W[j] & 0xFFFF0000`` are the binary32 bit patterns of the two terms of every
    row.  A step is ``s = RN32(s + x)`` followed by Veltkamp's split with
    ``C = 2**16 + 1``: ``g = RN32(C s); s = RN32(RN32(s - g) + g)``, which is the
    bfloat16 RNE of ``s``.  That equality was checked exhaustively for every binary32
    ``|s| < 2**111`` except the subnormals not already in bfloat16 and ``-0``; the
    sums never meet those: a sum of two bfloat16 values that is subnormal is exact in
    bfloat16, and ``|s| <= 2**105`` because a bfloat16 running sum of terms
    ``|x| <= 2**96`` stalls at ``2**(96 + 9)``.  ``-0`` becomes ``+0``: a recursive
    sum is ``-0`` only when every term is ``-0``, which is restored at the end.
    """
    batch, n = rows.shape
    if sys.byteorder != "little" or n < 2 or n % 2 or batch == 0:
        return None
    rb = min(_ROW_BLOCK, batch)
    abs_sum32 = np.empty(batch, np.float32)
    ftmp = np.empty((rb, n), np.float32)
    utmp = np.empty((rb, n), np.uint32)
    cbuf = np.empty((rb, n), np.uint16)
    W = np.empty((n // 2, batch), np.uint32)
    # np.abs(rows) keeps the memory order of ``rows``, and a float32 reduction's
    # rounding depends on it: strips reproduce it only for row-major ``rows``.
    row_major = rows.strides[-1] == rows.itemsize and rows.strides[0] >= n * rows.itemsize
    with np.errstate(over="ignore", invalid="ignore"):
        if not row_major:
            abs_sum32 = np.add.reduce(np.abs(rows), axis=-1, dtype=np.float32)
        for r0 in range(0, batch, rb):
            r1 = min(r0 + rb, batch)
            blk = rows[r0:r1]
            m = r1 - r0
            f, u, c = ftmp[:m], utmp[:m], cbuf[:m]
            if row_major:
                np.abs(blk, out=f)
                np.add.reduce(f, axis=-1, out=abs_sum32[r0:r1])
            bits = blk.view(np.uint32)
            np.right_shift(bits, _SIXTEEN, out=u)
            np.bitwise_and(u, _ONE32, out=u)
            np.add(u, _HALF16, out=u)
            np.add(u, bits, out=u)
            np.copyto(c, u.view(np.uint16)[:, 1::2])
            W[:, r0:r1] = c.view(np.uint32).T
        if not bool(np.all(abs_sum32 < _VELTKAMP_LIMIT)):
            return None
    s = np.empty(batch, np.float32)
    g = np.empty(batch, np.float32)
    X = np.empty((_STEP_BLOCK, 2, batch), np.uint32)
    Xf = X.view(np.float32)
    C = 65537.0  # a weak Python scalar: multiplies in binary32
    add, sub, mul = np.add, np.subtract, np.multiply  # positional out: less overhead
    rows_f = list(Xf.reshape(-1, batch))
    for j0 in range(0, n // 2, _STEP_BLOCK):
        j1 = min(j0 + _STEP_BLOCK, n // 2)
        Wj = W[j0:j1]
        np.left_shift(Wj, _SIXTEEN, out=X[:j1 - j0, 0])
        np.bitwise_and(Wj, _HIGH16, out=X[:j1 - j0, 1])
        steps = rows_f[:2 * (j1 - j0)]
        if j0 == 0:
            s[...] = steps[0]
            steps = steps[1:]
        for xi in steps:
            add(s, xi, s)
            mul(s, C, g)
            sub(s, g, s)
            add(s, g, s)
    value = s.astype(np.float64)
    zero = np.flatnonzero(value == 0)
    if zero.size:
        # -0 exactly when every rounded term is -0 (bfloat16 code 0x8000)
        neg = np.all(W[:, zero] == 0x80008000, axis=0)
        value[zero[neg]] = -0.0
    abs_sum = abs_sum32.astype(np.float64)
    abs_sum *= (1 + 2.0**-8) * math.exp(n * 2.0**-23)
    return value, abs_sum


def _recursive_bf16_from_f32(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_recursive_f32_rne` for bfloat16 from float32 ``rows`` (batch, n).

    ml_dtypes' float32 -> bfloat16 cast (RNE, correct from float32) rounds the
    inputs; the 16-bit codes are transposed in strips of 32 rows (cache friendly),
    and each step widens one row of codes to binary32 bits with a shift.  Rows of an
    even length with finite terms take :func:`_recursive_bf16_veltkamp` instead
    (the same results, faster).
    """
    fast = _recursive_bf16_veltkamp(rows)
    if fast is not None:
        return fast
    batch, n = rows.shape
    codes = rows.astype(ml_dtypes.bfloat16).view(np.uint16)
    Y = np.empty((n, batch), np.uint16)
    for r0 in range(0, batch, 32):
        Y[:, r0:r0 + 32] = codes[r0:r0 + 32].T
    drop, half, mask = np.uint32(16), np.uint32(0x7FFF), np.uint32(0xFFFF0000)
    xi = np.empty(batch, np.uint32)
    xf = xi.view(np.float32)
    s = np.empty(batch, np.float32)
    su = s.view(np.uint32)
    tmp = np.empty(batch, np.uint32)
    np.left_shift(Y[0], drop, out=su, dtype=np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(1, n):
            np.left_shift(Y[i], drop, out=xi, dtype=np.uint32)
            np.add(s, xf, out=s)
            _round_bits_inplace(su, tmp, drop, half, mask)
        # sum |x_i| of the rounded terms <= (1 + 2**-8) sum |x_i| of the raw ones
        abs_sum = np.add.reduce(np.abs(rows), axis=-1, dtype=np.float32).astype(np.float64)
        abs_sum *= (1 + 2.0**-8) * math.exp(n * 2.0**-23)
    return s.astype(np.float64), abs_sum


def _fast_recursive_applies(fmt: Format, rounding: str) -> bool:
    return (rounding == "rne" and fmt.exponent_bits == 8 and fmt.bias == 127
            and fmt.trailing_bits <= 10 and fmt.has_infinity and fmt.has_nan)


# ----------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------

def _check_common(algorithm: object, rounding: object, block_size: object, n: int,
                  bound_kind: object, confidence: object) -> None:
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"Got algorithm={algorithm!r}, but the only valid values are "
            + ", ".join(repr(a) for a in ALGORITHMS)
        )
    check_rounding(rounding)
    if block_size is not None:
        if not isinstance(block_size, (int, np.integer)) or isinstance(block_size, bool) \
                or block_size < 1:
            raise ValueError(f"Got {block_size=}, but it must be a positive integer or None")
    if n < 1:
        raise ValueError(f"Got an empty reduction axis (length {n}), but a sum needs a term")
    if bound_kind not in ("worst", "probabilistic"):
        raise ValueError(
            f"Got {bound_kind=}, but the only valid values are 'worst', 'probabilistic'"
        )
    if not isinstance(confidence, float) or not 0.0 < confidence < 1.0:
        raise ValueError(f"Got {confidence=}, but it must be a float in (0, 1)")


def _tree_leaves(node: Tree, out: list[int]) -> None:
    if isinstance(node, (int, np.integer)) and not isinstance(node, bool):
        out.append(int(node))
        return
    if not isinstance(node, tuple) or len(node) == 0:
        raise ValueError(
            f"Got tree node {node!r}, but a tree is an int index or a non-empty tuple of trees"
        )
    for child in node:
        _tree_leaves(child, out)


def _check_tree(tree: object, n: int) -> Tree:
    if tree is None:
        raise ValueError("Got tree=None, but algorithm='tree' needs a tree (nested tuples)")
    leaves: list[int] = []
    _tree_leaves(tree, leaves)  # type: ignore[arg-type]
    if sorted(leaves) != list(range(n)):
        raise ValueError(
            f"Got tree={tree!r}, but its leaves must be the indices 0..{n - 1}, each once"
        )
    return tree  # type: ignore[return-value]


def _check_ring(ring_order: object, n: int) -> list[int]:
    if ring_order is None:
        return list(range(n))
    order = [int(r) for r in ring_order]  # type: ignore[attr-defined]
    if sorted(order) != list(range(n)):
        raise ValueError(
            f"Got {ring_order=}, but it must be a permutation of the {n} ranks 0..{n - 1}"
        )
    return order


def _reduce(X: np.ndarray, fmt: Format, *, algorithm: str, rounding: str,
            block_size: int | None, promote: Format | None, tree: Tree | None,
            ring_order: list[int] | None, rng: np.random.Generator | None) -> np.ndarray:
    fl = _Fl(fmt, rounding, rng)
    if algorithm == "recursive":
        if _fast_recursive_applies(fmt, rounding):
            return _recursive_f32_rne(np.ascontiguousarray(X.T, np.float32),
                                      fmt.trailing_bits, True)[0]
        return _recursive(fl, X)
    if algorithm == "pairwise":
        return _pairwise_levels(fl, _block_sums(fl, X, block_size or 1))
    if algorithm == "kahan":
        return _kahan(fl, X)
    if algorithm == "neumaier":
        return _neumaier(fl, X)
    if algorithm == "exact":
        return _exact(fl, X)
    if algorithm == "tree":
        assert tree is not None
        return _tree_eval(fl, X, tree).copy()
    if algorithm == "ring":
        assert ring_order is not None
        return _ring(fl, X, ring_order)
    # blocked
    assert promote is not None and block_size is not None
    parts = _block_sums(fl, X, block_size)
    flp = _Fl(promote, rounding, rng)
    total = flp.round_pair(parts[0], None)
    for k in range(1, parts.shape[0]):
        total = flp.add(total, parts[k])
    return total


def _check_options(algorithm: str, rounding: str, block_size: int | None, n: int,
                   bound_kind: str, confidence: float, promote_fmt: Format | str | None,
                   tree: Tree | None, ring_order: Sequence[int] | None, rng: Any
                   ) -> tuple[Format, int | None, Any, Any, np.random.Generator | None]:
    """Validate the options shared by :func:`sum` and :func:`dot`; return the promoted
    format, the block size (128 for ``blocked`` by default), the checked tree and ring
    order, and the generator for stochastic rounding."""
    _check_common(algorithm, rounding, block_size, n, bound_kind, confidence)
    if bound_kind == "probabilistic" and algorithm in ("kahan", "neumaier"):
        raise ValueError(
            f"Got bound_kind='probabilistic' with {algorithm=}, but a probabilistic bound "
            "is proved only for recursive, pairwise, tree, ring, blocked and exact"
        )
    promote = _check_fmt(promote_fmt if promote_fmt is not None else "binary32", "promote_fmt")
    if algorithm == "blocked" and block_size is None:
        block_size = 128
    tree_ = _check_tree(tree, n) if algorithm == "tree" else None
    order = _check_ring(ring_order, n) if algorithm == "ring" else None
    generator = make_rng(rng) if rounding == "sr" else None
    return promote, block_size, tree_, order, generator


def sum(  # noqa: A001 - the natural name, exported as numerics.accum.sum
    x: Any,
    fmt: Format | str,
    *,
    axis: int = -1,
    algorithm: str = "recursive",
    rounding: str = "rne",
    block_size: int | None = None,
    promote_fmt: Format | str | None = None,
    tree: Tree | None = None,
    ring_order: Sequence[int] | None = None,
    rng: Any = None,
    bound_kind: str = "worst",
    confidence: float = 0.999,
) -> AccumResult:
    """Sum along ``axis`` in ``fmt`` with a given algorithm, with an error bound.

    Parameters
    ----------
    x : array_like
        Real values; they are first rounded into ``fmt`` (nearest even).
    fmt : Format or str
        Working format (signed, with subnormals).
    axis : int
        The reduction axis; all other axes are independent sums.
    algorithm : str
        One of :data:`ALGORITHMS` (see the module docstring for each exact order).
    rounding : str
        Rounding of every operation (:data:`numerics.ROUNDINGS`).
    block_size : int, optional
        Block length for ``pairwise`` (default 1) and ``blocked`` (default 128).
    promote_fmt : Format or str, optional
        Running-total format for ``blocked`` (default binary32).
    tree : nested tuples of int, optional
        The reduction tree for ``algorithm="tree"``.
    ring_order : sequence of int, optional
        The ring's rank order for ``algorithm="ring"`` (default ``0 .. n-1``).
    rng : None, int or numpy.random.Generator
        Source of the stochastic-rounding draws: one ``rng.random(batch_shape)`` per
        rounding, in the order the operations are listed in the module docstring.
    bound_kind : {"worst", "probabilistic"}
        ``"probabilistic"`` gives Higham and Mary's (2019) sqrt(n)-type bound, valid
        with probability at least ``confidence`` when the rounding errors are
        independent and mean zero (true for stochastic rounding; a model otherwise).
    confidence : float
        Probability for ``bound_kind="probabilistic"``.

    Returns
    -------
    AccumResult
        ``.value`` and ``.bound`` shaped like ``x`` without ``axis``.

    Examples
    --------
    >>> import numpy as np
    >>> sum(np.ones(1024), "bfloat16").value      # stalls: 256 + 1 rounds to 256
    array(256.)
    >>> sum(np.ones(1024), "bfloat16", algorithm="kahan").value
    array(1024.)
    """
    f = _check_fmt(fmt)
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise ValueError(f"Got x with shape {arr.shape}, but a sum needs at least one axis")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"Got {axis=}, but x has only {arr.ndim} axes")
    n = arr.shape[axis]
    promote, block_size, tree_, order, generator = _check_options(
        algorithm, rounding, block_size, n, bound_kind, confidence, promote_fmt, tree,
        ring_order, rng)

    moved = np.moveaxis(arr, axis, 0)
    out_shape = moved.shape[1:]
    if algorithm == "recursive" and _fast_recursive_applies(f, rounding) \
            and arr.dtype == np.float32:
        rows = np.moveaxis(arr, axis, -1).reshape(-1, n)
        if f.name == "bfloat16":
            value, abs_sum = _recursive_bf16_from_f32(rows)
        else:
            value, abs_sum = _recursive_f32_rne(rows, f.trailing_bits, False)
    else:
        X = _cast(_as_float64(moved, "x").reshape(n, -1), f)
        value = _reduce(X, f, algorithm=algorithm, rounding=rounding, block_size=block_size,
                        promote=promote, tree=tree_, ring_order=order, rng=generator)
        with np.errstate(over="ignore", invalid="ignore"):
            abs_sum = np.add.reduce(np.abs(X), axis=0, dtype=np.float64)
    bound, conf = _bounds.sum_bound(
        abs_sum, n, f, rounding, algorithm, block_size=block_size, promote_fmt=promote,
        tree=tree_, kind=bound_kind, confidence=confidence)
    return AccumResult(value=np.asarray(value, np.float64).reshape(out_shape),
                       bound=np.asarray(bound, np.float64).reshape(out_shape),
                       algorithm=algorithm, fmt=f, n=n, confidence=conf)


def dot(
    x: Any,
    y: Any,
    fmt: Format | str,
    *,
    axis: int = -1,
    algorithm: str = "recursive",
    rounding: str = "rne",
    block_size: int | None = None,
    promote_fmt: Format | str | None = None,
    tree: Tree | None = None,
    ring_order: Sequence[int] | None = None,
    rng: Any = None,
    bound_kind: str = "worst",
    confidence: float = 0.999,
) -> AccumResult:
    """Dot products along ``axis``: ``fl(x_i * y_i)`` in ``fmt``, then :func:`sum`.

    ``x`` and ``y`` (broadcast together) are rounded into ``fmt``; each product is
    rounded once in ``fmt``; the products are summed with ``algorithm`` exactly as in
    :func:`sum` (with no further input rounding).  The bound refers to the exact dot
    product of the rounded inputs and includes the product roundings (and, for
    products below the smallest normal, their absolute underflow error).

    Examples
    --------
    >>> import numpy as np
    >>> r = dot(np.ones(3), np.array([1.0, 2.0, 3.0]), "binary16")
    >>> float(r.value), bool(r.bound[()] >= 0)
    (6.0, True)
    """
    f = _check_fmt(fmt)
    try:
        xa, ya = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    except ValueError:
        raise ValueError(
            f"Got x with shape {np.shape(x)} and y with shape {np.shape(y)}, "
            "but they must broadcast together"
        ) from None
    if xa.ndim == 0:
        raise ValueError("Got scalar x and y, but a dot product needs at least one axis")
    if not -xa.ndim <= axis < xa.ndim:
        raise ValueError(f"Got {axis=}, but x has only {xa.ndim} axes")
    n = xa.shape[axis]
    promote, block_size, tree_, order, generator = _check_options(
        algorithm, rounding, block_size, n, bound_kind, confidence, promote_fmt, tree,
        ring_order, rng)

    X = _cast(_as_float64(np.moveaxis(xa, axis, 0), "x").reshape(n, -1), f)
    Y = _cast(_as_float64(np.moveaxis(ya, axis, 0), "y").reshape(n, -1), f)
    out_shape = np.moveaxis(xa, axis, 0).shape[1:]
    fl = _Fl(f, rounding, generator)
    exact_products = X * Y  # exact in float64 unless p > 26 (only for the bound)
    P = fl.mul(X, Y)
    value = _reduce(P, f, algorithm=algorithm, rounding=rounding, block_size=block_size,
                    promote=promote, tree=tree_, ring_order=order, rng=generator)
    with np.errstate(over="ignore", invalid="ignore"):
        abs_sum = np.add.reduce(np.abs(exact_products), axis=0, dtype=np.float64)
        tiny = np.count_nonzero(np.abs(exact_products) < f.smallest_normal, axis=0)
    bound, conf = _bounds.dot_bound(
        abs_sum, tiny, n, f, rounding, algorithm, block_size=block_size, promote_fmt=promote,
        tree=tree_, kind=bound_kind, confidence=confidence)
    return AccumResult(value=np.asarray(value, np.float64).reshape(out_shape),
                       bound=np.asarray(bound, np.float64).reshape(out_shape),
                       algorithm=algorithm, fmt=f, n=n, confidence=conf)

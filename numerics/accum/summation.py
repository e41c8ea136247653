"""Summation and dot products in a low-precision format, vectorized over outputs.

Every arithmetic operation of every algorithm is ONE correctly rounded operation
in the working format ``fmt`` with the rounding mode ``rounding`` (the semantics of
:func:`numerics.kernels.rounding.round_pair`: the exact result ``hi + lo`` of the float64
TwoSum / TwoProduct rounded once; where binary64 cannot hold it, with binary64 itself as
``fmt``, a sum that overflows or a product that underflows, an exact pair times a power
of two, :func:`numerics.kernels.accum.round_ops`).  ``recursive``, ``pairwise``, ``kahan`` and
``neumaier`` run in a compiled kernel (:mod:`numerics.kernels.accum`), one sum per row,
rows on all threads; ``blocked`` (its block sums and the chain of block sums) and
``ring`` run as compiled chains of additions (:func:`numerics.kernels.accum.chain_add`);
``exact`` adds each column into a fixed-point accumulator over binary64's range
(:mod:`numerics.kernels.exactsum`); ``tree`` loops over the reduction axis with every
other axis processed at once.

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
    recursively in ``fmt`` from its first term (``b = x_j``, ``b = fl(b + x_i)``: a
    sum from zero without its first, exact, addition, except that a block of -0 terms
    stays -0 in every mode); the first block sum is rounded into ``promote_fmt``
    (default binary32), ``T = fl_promote(b_0)``, and the others are added in order,
    ``T = fl_promote(T + b_k)``.  The last block may be shorter.  The value is in
    ``promote_fmt``.
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

import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from numerics.accum import bounds as _bounds
from numerics.accum.intake import MAX_DIMS, real_pair, reject_nan
from numerics.accum.tensorcore import cast
from numerics.formats import Format, as_format
from numerics.rounding import check_rng, make_rng

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
    """One-rounding arithmetic in a format (vectorized), by the rounding kernels.

    Every operation rounds the exact result once, for any float64 operands (also
    values of another format, as the blocked total's addends are) and in every mode,
    binary64's overflow and subnormals included
    (:func:`numerics.kernels.accum.round_ops`).  Stochastic rounding draws from the
    counter-based stream with the seed taken once from ``rng``: the k-th value rounded
    by this object draws element k of the stream.
    """

    def __init__(self, fmt: Format, rounding: str, rng: np.random.Generator | None) -> None:
        self.fmt = fmt
        self.rounding = rounding
        self.seed = 0 if rng is None else int(rng.integers(0, 2**63))
        self.count = 0

    def round_pair(self, hi: np.ndarray, lo: np.ndarray | None,
                   shift: np.ndarray | None = None) -> np.ndarray:
        """The exact values ``(hi + lo) * 2**shift`` rounded once (``hi + lo`` a pair as
        :func:`numerics.kernels.rounding.round_pair` takes it)."""
        if shift is None or not np.any(shift):
            base = self.count
            self.count += int(np.size(hi))
            return cast(hi, self.fmt, self.rounding, lo=lo, seed=self.seed, base=base)
        from numerics.kernels.accum import OP_PAIR
        low = np.zeros(np.shape(hi)) if lo is None else lo
        return self._kernel(OP_PAIR, hi, low, np.asarray(shift, np.int64))

    def _kernel(self, op: int, a: np.ndarray, b: np.ndarray,
                shift: np.ndarray | None = None) -> np.ndarray:
        """``op`` of :func:`numerics.kernels.accum.round_ops` on ``a`` and ``b``
        (broadcast), drawing the next elements of the stream."""
        from numerics.kernels.accum import round_ops
        from numerics.kernels.rounding import format_params, mode_code

        A, B = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
        base = self.count
        self.count += A.size
        sh = np.zeros(1, np.int64) if shift is None else \
            np.ascontiguousarray(np.broadcast_to(shift, A.shape), np.int64).reshape(-1)
        out = np.empty(A.size)
        round_ops(np.ascontiguousarray(A).reshape(-1), np.ascontiguousarray(B).reshape(-1),
                  sh, op, format_params(self.fmt), mode_code(self.rounding),
                  np.uint64(self.seed), np.uint64(base), out)
        return out.reshape(A.shape)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        from numerics.kernels.accum import OP_ADD
        return self._kernel(OP_ADD, a, b)

    def chain(self, init: np.ndarray, A: np.ndarray) -> np.ndarray:
        """Recursive sums of independent chains, compiled: ``init`` (G, M) plus
        ``A[:, 0]``, ``A[:, 1]``, ... (``A`` (G, L, M)) in that order, each addition by
        :meth:`add` (the same roundings and stream elements as ``L`` calls of it)."""
        from numerics.kernels.accum import chain_add
        from numerics.kernels.rounding import format_params, mode_code

        init = np.asarray(init, np.float64)
        A = np.asarray(A, np.float64)
        out = np.empty(init.shape)
        base = self.count
        self.count += A.size
        chain_add(init, A, format_params(self.fmt), mode_code(self.rounding),
                  np.uint64(self.seed), np.uint64(base), out)
        return out

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.add(a, -b)

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        from numerics.kernels.accum import OP_MUL
        return self._kernel(OP_MUL, a, b)


def _check_fmt(fmt: Format | str, name: str = "fmt") -> Format:
    f = as_format(fmt)
    if not f.signed or not f.subnormals:
        raise ValueError(
            f"Got {name}={f.name!r}, but accumulation needs a signed format with subnormals"
        )
    return f


def _cast(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Round float64 values into ``fmt`` (nearest even), as float64."""
    return cast(x, fmt)


def _terms(x: Any, name: str, fmt: Format) -> np.ndarray:
    """``x`` as a float32 or float64 array whose values round once into ``fmt`` to the
    rounding of the exact inputs: float32/float64 input as it is, anything else (ints,
    long doubles, ml_dtypes, torch tensors, Python numbers) rounded into ``fmt`` here
    from its exact value (:func:`numerics.accum.intake.real_pair`)."""
    if isinstance(x, np.ndarray) and not isinstance(x, np.ma.MaskedArray) \
            and x.dtype in (np.float32, np.float64):
        if x.ndim > MAX_DIMS:
            real_pair(x, name)  # raises, naming the argument
        reject_nan(x, fmt, name)
        return x
    hi, lo = real_pair(x, name)
    reject_nan(hi, fmt, name)
    if not lo.any():
        return hi
    return cast(hi, fmt, lo=lo)


def _rows(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` with ``axis`` moved last, as a C-contiguous native-order (batch, n) array
    (copied by tiles: :func:`numerics.kernels.layout.moved_last`)."""
    from numerics.kernels.layout import moved_last

    dtype = np.float32 if x.dtype == np.float32 else np.float64
    moved = moved_last(np.asarray(x, dtype), axis)
    return moved.reshape(-1, moved.shape[-1])


_KERNEL_ALGORITHMS = {"recursive": 0, "pairwise": 1, "kahan": 2, "neumaier": 3}

#: Where ``S = sum |x_i|`` overflows float64 though every term is finite (binary64 terms
#: near its max), ``S * 2**-ABS_SHIFT`` is summed instead: below ``2**1023`` for fewer
#: than ``2**63`` terms.
ABS_SHIFT = 64


def _rescale(abs_sum: np.ndarray, scaled: Any) -> np.ndarray:
    """The exponents ``e`` with ``S = abs_sum * 2**e``: 0, or :data:`ABS_SHIFT` where
    ``abs_sum`` overflowed to inf and ``scaled(rows)``, the sums of those rows' ``|x_i|
    * 2**-ABS_SHIFT`` (``|x_i y_i|`` for a dot), is finite (a row with an infinite term
    stays inf); ``abs_sum`` takes those sums in place.  The terms scaled below
    ``2**-1022`` lose at most ``2**-1074`` each, ``n 2**(ABS_SHIFT - 1074)`` in all: far
    inside the bound's inflation (``(n + 16) 2**-52 S`` with ``S > 2**1023``)."""
    e = np.zeros(abs_sum.shape, np.int64)
    over = np.flatnonzero(np.isinf(abs_sum))
    if over.size:
        with np.errstate(all="ignore"):
            again = np.asarray(scaled(over), np.float64)
        ok = np.isfinite(again)
        abs_sum[over[ok]] = again[ok]
        e[over[ok]] = ABS_SHIFT
    return e


def _kernel_sum(X: np.ndarray, Y: np.ndarray | None, fmt: Format, algorithm: str,
                rounding: str, block_size: int | None,
                generator: np.random.Generator | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run :func:`numerics.kernels.accum.sum_rows` on (batch, n) rows."""
    from numerics.kernels import accum as kernel
    from numerics.kernels.rounding import format_params, mode_code

    batch = X.shape[0]
    block = min(block_size or 1, max(X.shape[1], 1))  # a block of n or more: one block
    value = np.empty(batch)
    abs_sum = np.empty(batch)
    tiny = np.empty(batch, np.int64)
    ieee = fmt.has_infinity and fmt.nan.name == "IEEE"
    # the float32 lanes round each operation as if the exponent were unbounded, then
    # overflow beyond fmt.max to an infinity; with emin = -126 by float32's own carry
    # into its infinity, so such a format must overflow where float32 does (emax = 127).
    # A format whose overflow is its NaN (e4m3fn, fnuz) or that has no -0 (fnuz, P3109)
    # takes them too, its results fixed below
    lanes = (fmt.emin >= -126 and fmt.emax <= 127 and fmt.signed and fmt.subnormals
             and fmt.trailing_bits >= 1 and (fmt.emin > -126 or fmt.emax == 127)
             and (ieee or (fmt.has_nan and fmt.emin > -126)))
    binary32 = ieee and lanes and fmt.trailing_bits == 23 and fmt.emin == -126 \
        and fmt.emax == 127
    lane_sum = rounding == "rne" and lanes
    dot_terms = Y is not None and lane_sum and fmt.trailing_bits <= 10
    if dot_terms or (Y is None and lane_sum and (fmt.trailing_bits <= 10 or binary32)):
        if Y is not None:  # the rounded products, then their sums as for sum()
            terms = np.empty(X.shape, np.float32)
            with np.errstate(all="ignore"):
                # the input rounding, vectorized (as sum's): the terms pass takes values
                X, Y = cast(X, fmt, dtype=np.float32), cast(Y, fmt, dtype=np.float32)
                kernel.dot_terms(X, Y, format_params(fmt), fmt.max, terms, abs_sum, tiny)
            X = terms
        elif X.dtype != np.float32:
            # the input rounding, into float32 (4 B/element): binary32's is the cast; a
            # narrower format's gives its values, which the lanes' own rounding keeps
            # (float64 rows took the general kernel, five times slower)
            with np.errstate(all="ignore"):
                X = X.astype(np.float32) if binary32 else cast(X, fmt, dtype=np.float32)
        term_abs = np.empty(batch) if dot_terms else abs_sum  # (products: the exact ones)
        kernel.sum_rows_f32(X, _KERNEL_ALGORITHMS[algorithm], block,
                            23 - fmt.trailing_bits, fmt.emin, fmt.max, value, term_abs)
        if not ieee:
            # the format's NaN is unsigned (fnuz, P3109) or comes out positive (e4m3fn),
            # as round_pair gives it; without an infinity, an infinity in the lanes is
            # the NaN of an overflow, which every later operation keeps a NaN (an
            # infinite lane never becomes finite again), and an input that overflowed
            # adds an infinity to abs_sum where the format has a NaN term
            with np.errstate(invalid="ignore"):
                value[np.isnan(value) if fmt.has_infinity else ~np.isfinite(value)] = np.nan
                if not fmt.has_infinity and not dot_terms:
                    abs_sum[np.isinf(abs_sum)] = np.nan
        if not fmt.has_negative_zero:
            value += 0.0  # -0 + 0 = +0
        return value, abs_sum, tiny
    if (Y is None and rounding == "rne" and fmt.signed
            and fmt.trailing_bits == 52 and fmt.emin == -1022 and fmt.emax == 1023
            and fmt.has_infinity and fmt.nan.name == "IEEE" and fmt.subnormals):
        # binary64 itself: the hardware's additions, in lanes (float32 rows widened)
        kernel.sum_rows_f64(X.astype(np.float64, copy=False), _KERNEL_ALGORITHMS[algorithm],
                            block, value, abs_sum)
        return value, abs_sum, tiny
    seed = 0 if generator is None else int(generator.integers(0, 2**63))
    kernel.sum_rows(X, X if Y is None else Y, Y is not None, _KERNEL_ALGORITHMS[algorithm],
                    block, format_params(fmt), mode_code(rounding), fmt.max,
                    np.uint64(seed), value, abs_sum, tiny)
    return value, abs_sum, tiny


# ----------------------------------------------------------------------------------
# The algorithms, on arrays shaped (n, batch)
# ----------------------------------------------------------------------------------

def _recursive(fl: _Fl, X: np.ndarray) -> np.ndarray:
    return fl.chain(X[:1], X[1:][None])[0]


def _block_sums(fl: _Fl, X: np.ndarray, block: int) -> np.ndarray:
    """Recursive sums of consecutive blocks, all blocks at once: (m, batch)."""
    n, batch = X.shape
    full = n // block
    parts = []
    if full:
        Y = X[: full * block].reshape(full, block, batch)
        parts.append(fl.chain(Y[:, 0], Y[:, 1:]))
    if n % block:
        parts.append(_recursive(fl, X[full * block:])[None])
    return np.concatenate(parts, axis=0)


def _exact(fl: _Fl, X: np.ndarray) -> np.ndarray:
    """Each column's exact sum rounded once: the pair of
    :func:`numerics.kernels.exactsum.exact_pairs` (an exact zero signed as IEEE 754
    signs a sum; an infinity or NaN among the terms gives the exact sum's IEEE value)."""
    from numerics.kernels.exactsum import exact_pairs

    hi, lo, shift = exact_pairs(np.asarray(X, dtype=np.float64), fl.rounding == "rd")
    return fl.round_pair(hi, lo, shift)


def _is_index(node: object) -> bool:
    return isinstance(node, (int, np.integer)) and not isinstance(node, (bool, np.bool_))


def _tree_eval(fl: _Fl, X: np.ndarray, tree: Tree) -> np.ndarray:
    """The tree's value, without recursion (a left-deep tree of any depth): a node's
    children are evaluated left to right, then summed left to right."""
    if _is_index(tree):
        return X[int(tree)]  # type: ignore[arg-type]
    # frames of [node, next child, the children's values so far]
    frames: list[list[Any]] = [[tree, 0, []]]
    while True:
        frame = frames[-1]
        node, k, vals = frame
        if k < len(node):
            frame[1] = k + 1
            child = node[k]
            if _is_index(child):
                vals.append(X[int(child)])
            else:
                frames.append([child, 0, []])
            continue
        total = vals[0]
        for v in vals[1:]:
            total = fl.add(total, v)
        frames.pop()
        if not frames:
            return total
        frames[-1][2].append(total)


def _ring(fl: _Fl, X: np.ndarray, order: Sequence[int]) -> np.ndarray:
    n, batch = X.shape
    chunk = np.empty(batch, np.intp)
    bounds = np.cumsum([0] + [batch // n + (1 if c < batch % n else 0) for c in range(n)])
    for c in range(n):
        chunk[bounds[c]:bounds[c + 1]] = c
    order_arr = np.asarray(order, np.intp)
    # the terms of each element in the order they are added: A[k, j] = x[order[c + k]]
    ranks = order_arr[(chunk + np.arange(n)[:, None]) % n]
    A = np.take_along_axis(X, ranks, axis=0)
    del ranks
    return _recursive(fl, A)


# ----------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------

#: The default ``confidence`` of :func:`sum` and :func:`dot`.
_CONFIDENCE = 0.999


def _check_common(algorithm: object, rounding: object, block_size: object, n: int,
                  bound_kind: object, confidence: object) -> tuple[int | None, float]:
    """Check the options that need no format; return the block size as an int (or None)
    and the confidence as a float."""
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"Got algorithm={algorithm!r}, but the only valid values are "
            + ", ".join(repr(a) for a in ALGORITHMS)
        )
    _bounds.check_rounding_name(rounding)
    if block_size is not None:
        if not _is_index(block_size) or block_size < 1:  # type: ignore[operator]
            raise ValueError(f"Got {block_size=}, but it must be a positive integer or None")
        block_size = int(block_size)  # type: ignore[call-overload]
    if n < 1:
        raise ValueError(f"Got an empty reduction axis (length {n}), but a sum needs a term")
    if bound_kind not in ("worst", "probabilistic"):
        raise ValueError(
            f"Got {bound_kind=}, but the only valid values are 'worst', 'probabilistic'"
        )
    if not isinstance(confidence, (float, np.floating)) or not 0.0 < confidence < 1.0:
        raise ValueError(f"Got {confidence=}, but it must be a float in (0, 1)")
    return block_size, float(confidence)  # type: ignore[return-value]


def _check_axis(axis: object, ndim: int) -> None:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"Got {axis=}, but it must be an int (one reduction axis)")
    if not -ndim <= axis < ndim:
        raise ValueError(f"Got {axis=}, but x has only {ndim} axes")


def _check_tree(tree: object, n: int) -> Tree:
    """``tree`` if it is an index or nested non-empty tuples whose leaves are the
    indices ``0 .. n-1``, each once; ValueError naming it else.  Without recursion: a
    left-deep tree of any depth is valid."""
    if tree is None:
        raise ValueError("Got tree=None, but algorithm='tree' needs a tree (nested tuples)")
    leaves: list[int] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_index(node):
            leaves.append(int(node))  # type: ignore[call-overload]
        elif isinstance(node, tuple) and len(node) > 0:
            stack.extend(node)
        else:
            raise ValueError(f"Got tree node {reprlib.repr(node)}, but a tree is an int "
                             "index or a non-empty tuple of trees")
        if len(leaves) > n:  # (also ends shared subtrees that would never end)
            break
    if sorted(leaves) != list(range(n)):
        raise ValueError(f"Got tree={reprlib.repr(tree)}, but its leaves must be the "
                         f"indices 0..{n - 1}, each once")
    return tree  # type: ignore[return-value]


def _check_ring(ring_order: object, n: int) -> list[int]:
    """``ring_order`` as a list of ints: a permutation of ``0 .. n-1`` given as a
    sequence (or 1-D array) of integers; TypeError or ValueError naming it else."""
    if ring_order is None:
        return list(range(n))
    if isinstance(ring_order, np.ndarray):
        items: list[Any] = list(ring_order) if ring_order.ndim == 1 else [ring_order]
    elif isinstance(ring_order, Sequence) and not isinstance(ring_order, (str, bytes)):
        items = list(ring_order)
    else:
        raise TypeError(f"Got ring_order={reprlib.repr(ring_order)}, but it must be a "
                        "sequence of rank indices (ints)")
    if not all(_is_index(r) for r in items):
        raise TypeError(f"Got ring_order={reprlib.repr(ring_order)}, but its entries must "
                        "be ints (rank indices)")
    order = [int(r) for r in items]
    if sorted(order) != list(range(n)):
        raise ValueError(
            f"Got ring_order={reprlib.repr(ring_order)}, but it must be a permutation of "
            f"the {n} ranks 0..{n - 1}"
        )
    return order


def _reduce(X: np.ndarray, fmt: Format, *, algorithm: str, rounding: str,
            block_size: int | None, promote: Format | None, tree: Tree | None,
            ring_order: list[int] | None, rng: np.random.Generator | None) -> np.ndarray:
    """The algorithms without a kernel, vectorized over the columns of (n, batch) ``X``."""
    fl = _Fl(fmt, rounding, rng)
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
    return flp.chain(total[None], parts[1:][None])[0]


def _check_options(algorithm: str, rounding: str, block_size: int | None, n: int,
                   bound_kind: str, confidence: float, promote_fmt: Format | str | None,
                   tree: Tree | None, ring_order: Sequence[int] | np.ndarray | None, rng: Any
                   ) -> tuple[Format, int | None, Any, Any, np.random.Generator | None,
                              float]:
    """Validate the options shared by :func:`sum` and :func:`dot`; return the promoted
    format, the block size (an int; 128 for ``blocked`` by default), the checked tree
    and ring order, the generator for stochastic rounding and the confidence (a
    float)."""
    block_size, confidence = _check_common(algorithm, rounding, block_size, n, bound_kind,
                                           confidence)
    if bound_kind == "probabilistic" and algorithm in ("kahan", "neumaier"):
        raise ValueError(
            f"Got bound_kind='probabilistic' with {algorithm=}, but a probabilistic bound "
            "is proved only for recursive, pairwise, tree, ring, blocked and exact"
        )
    if block_size is not None and algorithm not in ("pairwise", "blocked"):
        raise ValueError(f"Got {block_size=} with {algorithm=}; only algorithm='pairwise' "
                         "and 'blocked' take a block size")
    if promote_fmt is not None and algorithm != "blocked":
        raise ValueError(f"Got promote_fmt={promote_fmt!r} with {algorithm=}; only "
                         "algorithm='blocked' takes one")
    if bound_kind == "worst" and confidence != _CONFIDENCE:
        raise ValueError(f"Got {confidence=} with bound_kind='worst', which holds always; "
                         "confidence applies to bound_kind='probabilistic'")
    promote = _check_fmt(promote_fmt if promote_fmt is not None else "binary32", "promote_fmt")
    if algorithm == "blocked" and block_size is None:
        block_size = 128
    if tree is not None and algorithm != "tree":
        raise ValueError(f"Got a tree with {algorithm=}; only algorithm='tree' takes one")
    if ring_order is not None and algorithm != "ring":
        raise ValueError(f"Got a ring_order with {algorithm=}; only algorithm='ring' "
                         "takes one")
    tree_ = _check_tree(tree, n) if algorithm == "tree" else None
    order = _check_ring(ring_order, n) if algorithm == "ring" else None
    check_rng(rng)  # in every mode, as encode and ops check it
    generator = make_rng(rng) if rounding == "sr" else None
    return promote, block_size, tree_, order, generator, confidence


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
    ring_order: Sequence[int] | np.ndarray | None = None,
    rng: Any = None,
    bound_kind: str = "worst",
    confidence: float = _CONFIDENCE,
) -> AccumResult:
    """Sum along ``axis`` in ``fmt`` with a given algorithm, with an error bound.

    Parameters
    ----------
    x : array_like
        Real values, each taken at its exact value (integers beyond 2**53, long doubles,
        Python ints of any size are not rounded to binary64 first) and rounded once into
        ``fmt`` (nearest even).  Complex, string and ragged input raise TypeError or
        ValueError, and so does a NaN where ``fmt`` has none (fp6, fp4), naming its index.
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
        The ring's rank order for ``algorithm="ring"`` (default ``0 .. n-1``): a
        permutation of the ranks, as a sequence or 1-D array of ints.
    rng : None, int or numpy.random.Generator
        Source of the stochastic-rounding seeds: one 63-bit integer is drawn from it
        for the roundings into ``fmt`` (and, with ``algorithm="blocked"``, one more for
        those into ``promote_fmt``), and every rounding then draws its bits from the
        counter-based stream (:mod:`numerics.kernels.random`) at an index fixed by the
        sum and the operation (:mod:`numerics.kernels.accum`), so the result does not
        depend on the thread count.
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
    arr = _terms(x, "x", f)
    if arr.ndim == 0:
        raise ValueError(f"Got x with shape {arr.shape}, but a sum needs at least one axis")
    _check_axis(axis, arr.ndim)
    n = arr.shape[axis]
    promote, block_size, tree_, order, generator, confidence = _check_options(
        algorithm, rounding, block_size, n, bound_kind, confidence, promote_fmt, tree,
        ring_order, rng)

    out_shape = np.moveaxis(arr, axis, 0).shape[1:]
    shift = np.ldexp(1.0, -ABS_SHIFT)
    if algorithm in _KERNEL_ALGORITHMS:
        rows = _rows(arr, axis)
        value, abs_sum, _ = _kernel_sum(rows, None, f, algorithm, rounding, block_size,
                                        generator)
        scale = _rescale(abs_sum, lambda r: np.add.reduce(
            np.abs(_cast(rows[r].astype(np.float64), f)) * shift, axis=1))
    else:
        X = _cast(np.moveaxis(arr, axis, 0).astype(np.float64).reshape(n, -1), f)
        value = _reduce(X, f, algorithm=algorithm, rounding=rounding, block_size=block_size,
                        promote=promote, tree=tree_, ring_order=order, rng=generator)
        with np.errstate(all="ignore"):
            abs_sum = np.add.reduce(np.abs(X), axis=0, dtype=np.float64)
        scale = _rescale(abs_sum, lambda r: np.add.reduce(np.abs(X[:, r]) * shift, axis=0))
    bound, conf = _bounds.sum_bound(
        abs_sum, n, f, rounding, algorithm, block_size=block_size, promote_fmt=promote,
        tree=tree_, kind=bound_kind, confidence=confidence, abs_exponent=scale)
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
    ring_order: Sequence[int] | np.ndarray | None = None,
    rng: Any = None,
    bound_kind: str = "worst",
    confidence: float = _CONFIDENCE,
) -> AccumResult:
    """Dot products along ``axis``: ``fl(x_i * y_i)`` in ``fmt``, then :func:`sum`.

    ``x`` and ``y`` (broadcast together) are rounded into ``fmt`` as in :func:`sum`
    (a NaN where ``fmt`` has none is a ValueError); each product is
    rounded once in ``fmt``; the products are summed with ``algorithm`` exactly as in
    :func:`sum` (with no further input rounding).  The bound refers to the exact dot
    product of the rounded inputs and includes the product roundings (and, for
    products below the smallest normal, their absolute underflow error).  The
    options are :func:`sum`'s; a Generator ``rng`` gives one more seed, for the
    product roundings.

    Parameters
    ----------
    x, y : array_like
        Real values, broadcast together (at least one axis), each taken exactly and
        rounded once into ``fmt`` as ``x`` is in :func:`sum`.
    fmt : Format or str
        Working format of the products and the sum.
    axis : int
        The reduction axis of the broadcast shape.
    algorithm, rounding, block_size, promote_fmt, tree, ring_order, rng
        As for :func:`sum`.
    bound_kind, confidence
        As for :func:`sum`.

    Returns
    -------
    AccumResult
        ``.value`` and ``.bound`` shaped like the broadcast of ``x`` and ``y`` without
        ``axis``.

    Raises
    ------
    ValueError, TypeError
        For inputs that do not broadcast, scalar inputs, a bad ``axis`` or option, and
        the inputs :func:`sum` refuses.

    Examples
    --------
    >>> import numpy as np
    >>> r = dot(np.ones(3), np.array([1.0, 2.0, 3.0]), "binary16")
    >>> float(r.value), bool(r.bound[()] >= 0)
    (6.0, True)
    """
    f = _check_fmt(fmt)
    xt, yt = _terms(x, "x", f), _terms(y, "y", f)
    if xt.dtype != yt.dtype:
        xt, yt = xt.astype(np.float64), yt.astype(np.float64)
    try:
        xa, ya = np.broadcast_arrays(xt, yt)
    except ValueError:
        raise ValueError(
            f"Got x with shape {np.shape(x)} and y with shape {np.shape(y)}, "
            "but they must broadcast together"
        ) from None
    if xa.ndim == 0:
        raise ValueError("Got scalar x and y, but a dot product needs at least one axis")
    _check_axis(axis, xa.ndim)
    n = xa.shape[axis]
    promote, block_size, tree_, order, generator, confidence = _check_options(
        algorithm, rounding, block_size, n, bound_kind, confidence, promote_fmt, tree,
        ring_order, rng)

    out_shape = np.moveaxis(xa, axis, 0).shape[1:]
    half = np.ldexp(1.0, -ABS_SHIFT // 2)
    if algorithm in _KERNEL_ALGORITHMS:
        rx, ry = _rows(xa, axis), _rows(ya, axis)
        value, abs_sum, tiny = _kernel_sum(rx, ry, f, algorithm, rounding, block_size,
                                           generator)
        scale = _rescale(abs_sum, lambda r: np.add.reduce(
            np.abs((_cast(rx[r].astype(np.float64), f) * half)
                   * (_cast(ry[r].astype(np.float64), f) * half)), axis=1))
    else:
        X = _cast(np.moveaxis(xa, axis, 0).astype(np.float64).reshape(n, -1), f)
        Y = _cast(np.moveaxis(ya, axis, 0).astype(np.float64).reshape(n, -1), f)
        fl = _Fl(f, rounding, generator)
        with np.errstate(all="ignore"):
            exact_products = X * Y  # exact in float64 unless p > 26 (only for the bound)
        P = fl.mul(X, Y)
        value = _reduce(P, f, algorithm=algorithm, rounding=rounding, block_size=block_size,
                        promote=promote, tree=tree_, ring_order=order, rng=generator)
        with np.errstate(all="ignore"):
            abs_sum = np.add.reduce(np.abs(exact_products), axis=0, dtype=np.float64)
            tiny = np.count_nonzero(np.abs(exact_products) < f.smallest_normal, axis=0)
        scale = _rescale(abs_sum, lambda r: np.add.reduce(
            np.abs((X[:, r] * half) * (Y[:, r] * half)), axis=0))
    bound, conf = _bounds.dot_bound(
        abs_sum, tiny, n, f, rounding, algorithm, block_size=block_size, promote_fmt=promote,
        tree=tree_, kind=bound_kind, confidence=confidence, abs_exponent=scale)
    return AccumResult(value=np.asarray(value, np.float64).reshape(out_shape),
                       bound=np.asarray(bound, np.float64).reshape(out_shape),
                       algorithm=algorithm, fmt=f, n=n, confidence=conf)

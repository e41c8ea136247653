"""``probe.summation_order`` and ``probe.probe_sum``: how a black-box ``sum`` adds.

The order comes from the pair tests of :mod:`numerics.probe.order`, one call of
``f`` per pair.  :func:`probe_sum` then finds the format of the additions by
elimination on random inputs (claim P9 of ``proofs/probe.md``); when the pair
tests fit no tree (compensated or exact summation recovers the small terms that
a tree loses) it tries the order-free algorithms of :func:`numerics.accum.sum`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.probe.matmul import MAX_K
from numerics.probe.model import Tree, fused_tree_sums, round_into
from numerics.probe.order import NotATree, build_tree, describe_tree, first_fit, fused_groups
from numerics.probe.result import Evidence, ProbeError, SumResult
from numerics.probe.vectors import (
    BlackBox,
    check_int,
    check_seed,
    input_dtype,
    random_sum_inputs,
    random_values,
    sum_span,
)

__all__ = ["MAX_N", "MAX_TRIALS", "probe_sum", "summation_order"]

#: The most terms probed (the matmul probe's ``MAX_K``, 65536): the pair tests call ``f``
#: about ``n`` to ``(n/2) log2 n`` times with ``n`` terms each.
MAX_N = MAX_K
#: The most random sums :func:`probe_sum` checks its hypotheses on: they are drawn at once,
#: ``trials * n`` float64 values (2 GiB at ``MAX_N`` terms).
MAX_TRIALS = 4096

_NUMPY_FORMATS = ("binary64", "binary32", "binary16", "bfloat16")
_ORDER_FREE = ("exact", "kahan", "neumaier")


def _check(fmt: Any, n: object) -> tuple[Format, int]:
    f = as_format(fmt)
    if f.name not in _NUMPY_FORMATS:
        raise ValueError(f"Got fmt={f.name!r}, but a sum is probed in a format with a numpy "
                         f"dtype: {', '.join(_NUMPY_FORMATS)}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 2 <= n <= MAX_N:
        raise ValueError(f"Got {n=}, but it must be an int in [2, {MAX_N}]")
    if n > 2**f.precision:
        raise ValueError(f"Got {n=}, but counts up to n must be exact in {f.name} "
                         f"(n <= 2**{f.precision})")
    return f, int(n)


class _Sum:
    def __init__(self, f: Callable[[np.ndarray], Any], fmt: Format) -> None:
        self.box = BlackBox(f, "f")
        self.fmt = fmt
        self.dtype = input_dtype(fmt)
        #: What the pair tests' control saw when ``f`` flushed a subnormal term, or None.
        self.flushed: str | None = None

    def __call__(self, x: np.ndarray) -> float:
        return float(self.box((), np.asarray(x, np.float64).astype(self.dtype)))

    def rows(self, X: np.ndarray) -> np.ndarray:
        return np.array([self(x) for x in X])


def _smalls(fmt: Format) -> list[float]:
    """The pair tests' small terms, best first: the smallest power of two down to
    ``2**-60`` (the largest ratio to the big term), then, when that is subnormal
    (binary16), the smallest normal for a box that flushes subnormals (claim P1)."""
    first = 2.0 ** max(fmt.emin - fmt.trailing_bits, -60)
    return [first] if first >= fmt.smallest_normal else [first, fmt.smallest_normal]


def _pair_vector(s: _Sum, n: int, i: int, j: int, small: float | None = None
                 ) -> np.ndarray:
    """The pair test's input: a big term at ``i``, its negative at ``j``, small terms
    elsewhere (the sum counts the small terms added after the big ones cancel)."""
    fmt = s.fmt
    x = np.full(n, _smalls(fmt)[0] if small is None else small)
    x[i], x[j] = 2.0 ** min(fmt.emax, 60), -(2.0 ** min(fmt.emax, 60))
    return x


def _repeatable(s: _Sum, n: int) -> None:
    """ProbeError unless ``f`` gives the same bits on repeated inputs whose sums depend on
    the order: three pair tests, each asked six times (18 calls).  A box that adds in a
    new order on each call gives different sums there (ones, what the check used before,
    sum alike in every order); at n = 3, where a pair test has two outcomes, all 18 calls
    agree with probability below 0.1**3."""
    for i, j in dict.fromkeys([(0, n - 1), (0, 1), (n - 2, n - 1)]):
        x = _pair_vector(s, n, i, j).astype(s.dtype)
        outs = [s.box.deterministic((), x) for _ in range(3)]
        again = next((o for o in outs[1:] if o.view(np.uint64) != outs[0].view(np.uint64)),
                     None)
        if again is not None:
            raise ProbeError(
                f"{s.box.name} is not deterministic: calls with the same inputs (a pair "
                f"test, terms {i} and {j} cancelling) gave {float(outs[0])!r} and "
                f"{float(again)!r}; no fixed model can describe it",
                {"finding": "not deterministic", "pair": [i, j],
                 "first": [float(outs[0]), float(again)]})


def _pair_tree(s: _Sum, n: int) -> Tree:
    return first_fit(_smalls(s.fmt), lambda small: _pair_tree_with(s, n, small))


def _pair_tree_with(s: _Sum, n: int, small: float) -> Tree:
    # the control (claim P1): one small term alone must come back; a box that flushes
    # subnormals returns 0, and every pair test would then read as one node of n leaves
    alone = np.zeros(n)
    alone[n - 1] = small
    v = s(alone)
    if v != small:
        s.flushed = f"one subnormal term {small!r} alone gave {v!r}"
        raise NotATree(f"one small term {small!r} alone gave {v!r} (subnormals flushed?)",
                       {"small": small, "observed": v})

    def ask(pairs: list[tuple[int, int]]) -> list[int]:
        sizes = []
        for i, j in pairs:
            v = s(_pair_vector(s, n, i, j, small))
            count = v / small
            if not np.isfinite(count) or count != round(count) or not 0 <= count <= n - 2:
                raise NotATree(
                    f"the pair test ({i}, {j}) gave {v!r}, which is not a count of the "
                    f"small terms (multiples of {small!r} up to {n - 2})",
                    {"pair": [i, j], "observed": v, "small": small})
            sizes.append(n - int(count))
        return sizes

    return build_tree(n, ask)


def summation_order(f: Callable[[np.ndarray], Any], n: int, *,
                    fmt: Format | str = "binary32") -> Tree:
    """The order in which ``f`` adds ``n`` terms, as nested tuples.

    ``f`` takes a 1-D array of ``n`` values (dtype of ``fmt``: float64, float32,
    float16 or ml_dtypes' bfloat16) and returns their sum.  The result is the tree
    that ``accum.sum(x, ..., algorithm="tree", tree=...)`` accepts; a node with more
    than two children is a fused multi-term addition (:func:`fused_groups` lists
    them; accum.sum would add them left to right instead).  About ``n - 1`` calls
    for a sequential sum from left to right, ``2n - 3`` from right to left,
    ``(n/2) log2 n`` for a pairwise one, 18 more for the check of determinism and
    one for the control of claim P1 (one more where a box flushes binary16's
    subnormal small terms).

    The pair tests see only the order: a compensated sum (Kahan) usually passes them
    as the sequential tree of its main additions, and exact summation fits no tree.
    :func:`probe_sum` tells these apart from plain trees by the values.

    Raises
    ------
    ProbeError
        ``f`` misbehaves, or the outputs fit no tree (exact summation, for one:
        :func:`probe_sum` says which).
    ValueError
        ``fmt`` has no numpy dtype, or ``n`` is not an int in ``[2, MAX_N]`` (65536)
        with ``n <= 2**p`` (``p`` the precision of ``fmt``).

    Examples
    --------
    >>> import numpy as np
    >>> summation_order(lambda x: (x[0] + x[1]) + (x[2] + x[3]) + x[4], 5)
    (((0, 1), (2, 3)), 4)
    """
    fmt_, n = _check(fmt, n)
    s = _Sum(f, fmt_)
    _repeatable(s, n)
    try:
        return _pair_tree(s, n)
    except NotATree as err:
        raise ProbeError(f"no summation tree fits {s.box.name}: {err}; probe_sum tries "
                         "compensated and exact summation", err.findings) from err


def probe_sum(f: Callable[[np.ndarray], Any], n: int, *, fmt: Format | str = "binary32",
              trials: int = 64, seed: int = 0) -> SumResult:
    """The summation model of ``f``: its tree (or order-free algorithm) and the format
    of its additions, checked on ``trials`` random inputs.

    Hypotheses: the recovered tree (when the pair tests fit one) with every
    addition rounded to nearest-even in ``fmt``, binary32 or binary64 (the result
    then rounded into ``fmt``); then ``accum.sum``'s ``exact``, ``kahan`` and
    ``neumaier`` in the same formats.  The first survivor in that order is
    returned; none raises.

    ``n`` is an int in ``[2, MAX_N]`` (65536; at most ``2**p`` for ``fmt`` of
    precision ``p``), ``trials`` an int in ``[1, MAX_TRIALS]`` (4096) and ``seed`` an
    int ``>= 0``; ValueError (TypeError for a seed that is not an int) otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> r = probe_sum(lambda x: np.float32(sum(x.astype(np.float64))), 6)
    >>> r.accumulator, r.shape
    ('binary64', 'sequential (left to right)')
    """
    fmt_, n = _check(fmt, n)
    trials = check_int(trials, "trials", 1, MAX_TRIALS)
    rng = np.random.default_rng(check_seed(seed))
    s = _Sum(f, fmt_)
    X = random_sum_inputs(rng, trials, n, fmt_)
    first = s.box.deterministic((), X[0].astype(s.dtype))
    _repeatable(s, n)
    back = round_into(np.array([first]), None, fmt_, "rne")[0]
    if np.isfinite(first) and back != first:
        raise ProbeError(f"{s.box.name} returned {first!r}, which is not a value of "
                         f"fmt={fmt_.name!r}", {"value": first})
    widths = [w for w in (fmt_.name, "binary32", "binary64")
              if as_format(w).precision >= fmt_.precision]
    widths = list(dict.fromkeys(widths))
    tree: Tree | None
    try:
        tree = _pair_tree(s, n)
        not_tree: NotATree | None = None
    except NotATree as err:
        tree, not_tree = None, err
    if tree is not None and fused_groups(tree):
        return _fused_result(s, tree, X, fmt_, n)
    hyps = []
    if tree is not None:
        hyps = [SumResult(algorithm="tree", tree=tree, fmt=fmt_.name, accumulator=w, n=n,
                          fused_groups=(), shape=describe_tree(tree), calls=0)
                for w in widths]
    # compensated sums may pass the pair tests as a sequential tree (the small
    # terms they lose to M are lost before any compensation): always candidates
    hyps += [SumResult(algorithm=alg, tree=None, fmt=fmt_.name, accumulator=w, n=n,
                       fused_groups=(), shape=f"order-free ({alg})", calls=0)
             for alg in _ORDER_FREE for w in widths]
    observed = s.rows(X)
    preds = [h.predict(X) for h in hyps]
    evidence = [Evidence(parameter="accumulator" if tree is not None else "algorithm",
                         vector=f"P9: random terms over many binades with cancellation #{i}",
                         predicted={_label(h): float(p[i]) for h, p in zip(hyps, preds)},
                         observed=float(observed[i])) for i in range(min(8, len(X)))]
    alive = [h for h, p in zip(hyps, preds)
             if np.array_equal(p.view(np.uint64), observed.view(np.uint64))]
    for attempt in range(5):  # inputs where the survivors disagree (claim P9)
        if len(alive) < 2:
            break
        # first the designed vectors that tell accumulator widths apart, then random ones
        # (the final rounding hides a narrower accumulator's errors from most random sums)
        pool = _width_vectors(rng, n, fmt_, widths) if attempt == 0 else \
            _discriminating_pool(rng, n, fmt_)
        if not len(pool):
            continue
        bits = np.stack([h.predict(pool) for h in alive]).view(np.uint64)
        split = np.flatnonzero((bits != bits[:1]).any(axis=0))[:32]
        if not split.size:
            break
        got = s.rows(pool[split])
        alive = [h for h, b in zip(alive, bits)
                 if np.array_equal(b[split], got.view(np.uint64))]
    if not alive:
        what = ("the order was found (" + describe_tree(tree) + ") but no accumulator "
                "format nor compensated summation reproduces the sums") if tree is not None else (
            f"{not_tree}; and neither exact, Kahan nor Neumaier summation reproduces them")
        if s.flushed:
            what += (f"; it flushes subnormals ({s.flushed}), which the summation models "
                     "do not")
        raise ProbeError(f"no summation model fits {s.box.name}: {what}",
                         {"evidence": [e.as_dict() for e in evidence]})
    best = alive[0]
    return SumResult(algorithm=best.algorithm, tree=best.tree, fmt=fmt_.name,
                     accumulator=best.accumulator, n=n, fused_groups=(), shape=best.shape,
                     calls=s.box.calls, evidence=tuple(evidence))


def _fused_result(s: _Sum, tree: Tree, X: np.ndarray, fmt: Format, n: int) -> SumResult:
    """The pair tests found nodes of more than two terms: a fused adder whose nodes round
    once (to nearest even, or toward zero), adding exactly or after cutting the terms to
    some number of fraction bits; checked on the random rows ``X``."""
    observed = s.rows(X)
    want = observed.view(np.uint64)
    head = X[:4]
    for F in (None, *range(0, 64)):
        for rounding in ("rne", "rtz"):
            if not np.array_equal(fused_tree_sums(tree, head, fmt, rounding, F)
                                  .view(np.uint64), want[:4]):
                continue
            if not np.array_equal(fused_tree_sums(tree, X, fmt, rounding, F)
                                  .view(np.uint64), want):
                continue
            how = "exact" if F is None else f"terms cut to {F} fraction bits"
            return SumResult(algorithm="tree", tree=tree, fmt=fmt.name,
                             accumulator=fmt.name, n=n, fused_groups=fused_groups(tree),
                             shape=f"{describe_tree(tree)}; each fused node {how}, rounded "
                                   f"once ({rounding})", calls=s.box.calls,
                             node_rounding=rounding, node_fraction_bits=F)
    # no node rule reproduces the sums (an adder that also narrows its inputs, say):
    # keep the order, flagged as such, only for a black box that does sum its inputs
    exact = np.array([math.fsum(row) for row in X.astype(np.float64)])
    scale = np.abs(X.astype(np.float64)).sum(axis=-1)
    far = np.flatnonzero(~(np.abs(observed - exact) <= scale / 16))
    if far.size:
        i = int(far[0])
        raise ProbeError(
            f"no summation model fits {s.box.name}: the pair tests suggest fused additions "
            f"({describe_tree(tree)}), but on random terms it returned "
            f"{float(observed[i])!r} where their sum is {float(exact[i])!r}: not a sum",
            {"order": tree, "observed": float(observed[i]), "sum": float(exact[i])})
    return SumResult(algorithm="tree", tree=tree, fmt=fmt.name, accumulator=fmt.name,
                     n=n, fused_groups=fused_groups(tree),
                     shape=f"{describe_tree(tree)}; node rounding not identified (no exact "
                           "or cut-to-F adder rounding once per node reproduces the sums)",
                     calls=s.box.calls)


def _width_vectors(rng: np.random.Generator, n: int, fmt: Format, widths: list[str]
                   ) -> np.ndarray:
    """Sums that one accumulator width rounds and every wider one (and exact summation)
    keeps: the terms ``2**E``, ``2**(E - p)`` (half an ulp of ``fmt`` at ``2**E``: a tie
    of the final rounding) and ``2**(E - q - 1)`` (below half an ulp of a ``q``-bit
    accumulator at ``2**E``), the rest zeros, at several places of the tree.  Whatever
    the order, a ``q``-bit accumulator loses the third term and the tie rounds to even,
    ``2**E``; a wider one keeps it, and the sum rounds up.  Also ``2**E``, ``-2**E`` and
    ``2**(E - q - 1)``: Kahan's compensation in ``q`` bits loses the small term in some
    orders, where exact summation and Neumaier's keep it; and ``2**E``, ``2**(E - p)``,
    ``2**(E - p - q - 1)``: a compensation term of ``q`` bits holding the second loses
    the third, where exact summation keeps it (the tie then rounds up)."""
    if n < 3:
        return np.empty((0, n))
    p = fmt.precision
    rows = []
    for w in widths:
        q = as_format(w).precision
        if q > 53:
            continue
        smallest = fmt.emin - (fmt.trailing_bits if fmt.subnormals else 0)
        e = max(0, smallest + q + 1)
        if e >= fmt.emax:
            continue
        terms = [(2.0**e, -(2.0**e), 2.0**(e - q - 1))]
        if q > p:  # (the final rounding's tie needs a wider accumulator than fmt)
            terms.append((2.0**e, 2.0**(e - p), 2.0**(e - q - 1)))
        e2 = max(0, smallest + p + q + 1)
        if e2 < fmt.emax:  # a compensation term of q bits loses the third term too
            terms.append((2.0**e2, 2.0**(e2 - p), 2.0**(e2 - p - q - 1)))
        for three in terms:
            for _ in range(8):
                i, j, k = rng.choice(n, size=3, replace=False)
                row = np.zeros(n)
                row[i], row[j], row[k] = three
                rows.append(row)
    return np.array(rows).reshape(-1, n)


def _discriminating_pool(rng: np.random.Generator, n: int, fmt: Format) -> np.ndarray:
    """Candidates over a much wider exponent range, many terms cancelling exactly."""
    lo, hi = sum_span(fmt, n)
    wide = (max(fmt.emin + 1, lo - 40), min(hi + 40, fmt.emax - 8))
    X = random_values(rng, (512, n), fmt, *wide)
    k = max(1, n // 3)
    for t in rng.choice(n, size=k, replace=False):
        X[:, t] = -X[:, int(rng.integers(0, n))]
    return X


def _label(h: SumResult) -> str:
    return f"{h.algorithm} in {h.accumulator}"

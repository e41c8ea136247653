"""``probe.matmul``: recover how a black-box matrix multiply accumulates.

Outline (each test and why it separates the hypotheses: ``proofs/probe.md``):

1. the black box is called twice on the same random inputs: differing outputs
   are reported (a finding, not a model); outputs must be values of
   ``output_format``;
2. outputs are grouped into classes by where a few pairs meet at every output
   position (a BLAS may treat edge tiles differently); for each class:
   the order over ``k`` from pair tests (:mod:`numerics.probe.order`), one pair
   per output of the class, on distinct rows and columns;
3. the hypotheses the order allows (:class:`~numerics.probe.model.MatmulModel`):
   standard two-operand additions in binary32, binary64, bfloat16 or binary16
   with fused or rounded products, and, when the tree is a chain of groups,
   fused multi-term adders with 0..40 fractional bits, truncating or rounding
   alignment, either output rounding, e8m13, and subnormal flushing;
4. designed test vectors (Fasi et al. 2021, section 3) eliminate hypotheses;
   then random inputs where the survivors disagree are sent until they agree;
5. exactly the survivors remain: none raises :class:`ProbeError` with the
   evidence; several that no test told apart are listed in ``ambiguous``.

Every call has the same shapes, ``A`` (batch, k) and ``B`` (k, batch), so a
library that picks its algorithm by shape is probed on one algorithm.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.probe.model import MAX_FRACTIONAL_BITS, MatmulModel, Tree, leaves, postorder
from numerics.probe.order import NotATree, build_tree, first_fit
from numerics.probe.result import Evidence, ProbeError, ProbeResult
from numerics.probe.vectors import BlackBox, check_int, check_seed, factor, random_factors

__all__ = ["MAX_BATCH", "MAX_K", "MAX_ROUNDS", "matmul"]

_STANDARD_ACCUMULATORS = ("binary32", "binary64", "bfloat16", "binary16")
#: The largest ``k`` probed.
MAX_K = 65536
#: The largest ``batch``: every call sends ``A`` (batch, k) and ``B`` (k, batch) and reads a
#: (batch, batch) product, and the probe keeps a signature per output; at 4096 the product
#: alone is 128 MiB of float64, and ``A`` at ``k = MAX_K`` 2 GiB.  One tile of any GPU or
#: BLAS kernel is far smaller, so a larger batch shows nothing a smaller one does not.
MAX_BATCH = 4096
#: The most rounds of random vectors (the probe stops after two rounds that split no
#: hypotheses, so a handful is all it uses).
MAX_ROUNDS = 1024


def _check(input_format: Any, output_format: Any, k: object, batch: object
           ) -> tuple[Format, Format, int, int]:
    fin = as_format(input_format, arg="input_format")
    fout = as_format(output_format, arg="output_format")
    if not fin.signed or fin.precision > 26:
        raise ValueError(f"Got input_format={fin.name!r}, but probing needs a signed format "
                         "of precision <= 26 (products exact in float64)")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 2 <= k <= MAX_K:
        raise ValueError(f"Got {k=}, but it must be an int in [2, {MAX_K}]")
    if (not isinstance(batch, (int, np.integer)) or isinstance(batch, bool)
            or not 4 <= batch <= MAX_BATCH):
        raise ValueError(f"Got {batch=}, but it must be an int in [4, {MAX_BATCH}]")
    return fin, fout, int(k), int(batch)


class _Placer:
    """Sends test vectors ``(a_t, b_t)`` as row ``r`` of ``A`` and column ``c`` of ``B``
    of ``(batch, k) @ (k, batch)`` products and reads output ``(r, c)``, for positions
    ``(r, c)`` of one class with distinct rows and distinct columns."""

    def __init__(self, box: BlackBox, k: int, batch: int, fin: Format,
                 positions: Sequence[tuple[int, int]]) -> None:
        self.box, self.k, self.batch = box, k, batch
        wide = fin.precision > 24 or fin.emax > 127
        self.dtype = np.float64 if wide else np.float32
        rows: set[int] = set()
        cols: set[int] = set()
        self.slots: list[tuple[int, int]] = []
        for r, c in positions:
            if r not in rows and c not in cols:
                rows.add(r)
                cols.add(c)
                self.slots.append((r, c))

    def call(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return self.box((A.shape[0], B.shape[1]), A.astype(self.dtype), B.astype(self.dtype))

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Row ``t`` of ``a`` times row ``t`` of ``b``, for every ``t``."""
        out = np.empty(a.shape[0])
        per = len(self.slots)
        for t0 in range(0, a.shape[0], per):
            t1 = min(t0 + per, a.shape[0])
            A = np.zeros((self.batch, self.k))
            B = np.zeros((self.k, self.batch))
            for t in range(t0, t1):
                r, c = self.slots[t - t0]
                A[r], B[:, c] = a[t], b[t]
            got = self.call(A, B)
            for t in range(t0, t1):
                out[t] = got[self.slots[t - t0]]
        return out


def _pair_scales(fin: Format, fout: Format, k: int) -> list[tuple[float, float, float, float]]:
    """Factors of the large product ``M = ab`` and of the small one ``s = cd`` for the
    pair tests, best first (claim P1 needs ``M / (k s)`` beyond every adder's reach).

    Normal factors first; when the input format's normal range is too narrow (8-bit
    formats, and binary16 for binary64 adders), subnormal small factors first and
    normal ones as the fallback (a box that flushes subnormal inputs or results fails
    the subnormal variant's control, :func:`_check_small`).
    """
    p_big = min(2 * fin.emax, 60, fout.emax - 1)  # M stays finite in the output format
    big = factor(p_big, 1.0, fin)
    assert big is not None
    if fin.precision <= 4 and fin.max * fin.max < 2.0**fout.emax:
        big = (fin.max, fin.max)  # 8-bit formats: every bit of range counts; M is exact
    s_exp = max(2 * fin.emin, fout.emin - fout.trailing_bits, -60)
    small = factor(s_exp, 1.0, fin)
    assert small is not None
    normal = (big[0], big[1], small[0], small[1])
    # the widest adder keeps 53 bits (binary64; a fused node at most F + 9 <= 49)
    need = 2.0 ** (max(53, MAX_FRACTIONAL_BITS + 9) + math.ceil(math.log2(k)) + 2)
    tiny = fin.smallest_subnormal
    if big[0] * big[1] / (small[0] * small[1]) >= need or not fin.subnormals \
            or tiny * tiny < max(fout.smallest_subnormal, 2.0**-149):
        return [normal]
    return [(big[0], big[1], tiny, tiny), normal]


#: The most small terms one pair test counts (claim P1): a count below ``2**8``, times
#: ``s``, is exact in the narrowest accumulator of the family (bfloat16) and output.
COUNTABLE = 1 << 8


def _runs(k: int, fout: Format) -> list[int]:
    """How many of a pair test's ``k - 2`` small terms each of its runs holds (claim P1):
    at most :data:`COUNTABLE`, fewer for an output of less precision."""
    chunk = min(COUNTABLE, 1 << fout.precision)
    return [min(chunk, k - 2 - start) for start in range(0, max(k - 2, 1), chunk)]


def _counts(counts: np.ndarray, s: float, most: int,
            pairs: list[tuple[int, int]]) -> np.ndarray:
    """``counts`` (outputs over ``s``, first axis over ``pairs``) as integers, or NotATree
    naming the first that is not a count of at most ``most`` small terms."""
    ok = (counts == np.round(counts)) & (counts >= 0) & (counts <= most)
    if not ok.all():
        bad = tuple(int(t) for t in np.argwhere(~ok)[0])
        (i, j), v = pairs[bad[0]], float(counts[bad] * s)
        at = f" at output {bad[1:]}" if len(bad) > 1 else ""
        raise NotATree(
            f"the pair test ({i}, {j}) gave {v!r}{at}, which is not a count of the small "
            f"terms (multiples of {s!r} up to {most})",
            {"pair": [i, j], "observed": v, "small": s})
    return counts.astype(np.int64)


def _order(diag: _Placer, k: int, fin: Format, fout: Format) -> Tree:
    runs = _runs(k, fout)
    return first_fit(_pair_scales(fin, fout, k), lambda s: _order_with(diag, k, s, runs))


def _check_small(got: np.ndarray, s: float) -> None:
    """NotATree unless ``got``, the output(s) of one small product alone (the other
    products zero), is ``s`` exactly (claim P1's control): a box that flushes
    subnormal inputs or results returns 0, and would make every pair test read 0 small
    terms, as if all ``k`` leaves met in one node."""
    bad = np.flatnonzero(np.asarray(got).reshape(-1) != s)
    if bad.size:
        v = float(np.asarray(got).reshape(-1)[bad[0]])
        raise NotATree(f"one small product {s!r} alone gave {v!r} (subnormals flushed?)",
                       {"small": s, "observed": v})


def _pair_row(k: int, i: int, j: int, start: int, size: int,
              scales: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The factors of pair test ``(i, j)``: ``M`` at ``i``, ``-M`` at ``j``, and the small
    product ``s`` at ``size`` of the other positions from the ``start``-th on (zeros
    elsewhere), so that no count exceeds ``size`` (claim P1)."""
    big_a, big_b, small_a, small_b = scales
    a, b = np.zeros(k), np.zeros(k)
    rest = np.delete(np.arange(k), [i, j])[start:start + size]
    a[rest], b[rest] = small_a, small_b
    a[i], a[j] = big_a, -big_a
    b[i] = b[j] = big_b
    return a, b


def _order_with(diag: _Placer, k: int, scales: tuple[float, float, float, float],
                runs: list[int]) -> Tree:
    """The tree from the pair tests with the factors ``scales``; a pair's small terms go
    in runs of the sizes ``runs`` (:func:`_runs`; the others zero), one test per run, and
    their counts add up (claim P1: a count beyond the accumulator's precision would
    stall or round)."""
    _, _, small_a, small_b = scales
    s = small_a * small_b
    one_a, one_b = np.zeros((1, k)), np.zeros((1, k))
    one_a[0, k - 1], one_b[0, k - 1] = small_a, small_b
    _check_small(diag(one_a, one_b), s)

    def ask(pairs: list[tuple[int, int]]) -> list[int]:
        total = np.zeros(len(pairs), np.int64)
        start = 0
        for size in runs:
            a, b = np.zeros((len(pairs), k)), np.zeros((len(pairs), k))
            for r, (i, j) in enumerate(pairs):
                a[r], b[r] = _pair_row(k, i, j, start, size, scales)
            total += _counts(diag(a, b) / s, s, size, pairs)
            start += size
        return [k - int(c) for c in total]

    return build_tree(k, ask)


def _fused_structure(tree: Tree) -> tuple[int, int | None] | None:
    """``(G, promote_every)`` when the tree is accum.gemm's chain of groups, else None."""
    intervals: list[Tree] = []
    node = tree
    while isinstance(node, tuple) and len(node) == 2 and all(isinstance(c, tuple)
                                                             for c in node):
        intervals.append(node[1])
        node = node[0]
    intervals.append(node)
    intervals.reverse()
    group_sizes: list[list[int]] = []
    for chain in intervals:
        sizes: list[int] = []
        while isinstance(chain, tuple):
            tuples = [c for c in chain if isinstance(c, tuple)]
            leaf_count = len(chain) - len(tuples)
            if tuples and (len(tuples) > 1 or not isinstance(chain[0], tuple)):
                return None
            sizes.append(leaf_count)
            chain = tuples[0] if tuples else 0
        sizes.reverse()
        group_sizes.append(sizes or [1])
    first = group_sizes[0]
    G = first[1] if len(first) > 1 else first[0]
    for sizes in group_sizes:
        head = sizes[0]
        if head not in (G, G + 1 if G == 1 else G) and len(sizes) > 1:
            return None
        if any(s != G for s in sizes[1:-1]) or (len(sizes) > 1 and sizes[-1] > G):
            return None
    if leaves(tree) != list(range(len(leaves(tree)))):
        return None  # accum.gemm's groups and intervals are contiguous, in order
    promote = None
    if len(intervals) > 1:
        sizes_leaves = [len(leaves(t)) for t in intervals]
        promote = sizes_leaves[0]
        if any(n != promote for n in sizes_leaves[:-1]) or sizes_leaves[-1] > promote:
            return None
        if promote % G:
            return None
    return G, promote


def _last_node_leaves(tree: Tree) -> list[int]:
    """Leaf children of the last node with leaves (below any promotion nodes)."""
    node = tree
    while isinstance(node, tuple) and all(isinstance(c, tuple) for c in node):
        node = node[-1]
    if not isinstance(node, tuple):
        return [int(node)]
    return [int(c) for c in node if not isinstance(c, tuple)]


def _first_node(tree: Tree) -> tuple[list[int], list[int]]:
    """Leaf children of the first node evaluated and of its parent."""
    if not isinstance(tree, tuple):
        return [int(tree)], []
    node, parent = tree, None
    while isinstance(node[0], tuple):
        parent, node = node, node[0]
    L0 = [int(c) for c in node if not isinstance(c, tuple)]
    L1 = [int(c) for c in parent if not isinstance(c, tuple)] if parent is not None else []
    return L0, L1


class _Designed:
    """A batch of designed test vectors: products placed at chosen leaves."""

    def __init__(self, k: int, fin: Format) -> None:
        self.k, self.fin = k, fin
        self.rows: list[tuple[str, str, np.ndarray, np.ndarray]] = []

    def add(self, parameter: str, label: str,
            terms: Sequence[tuple[int, int, float, float]]) -> None:
        """``terms``: (position, exponent, significand, sign); skipped if unreachable."""
        a, b = np.zeros(self.k), np.zeros(self.k)
        for pos, e, sig, sign in terms:
            ab = factor(e, sig, self.fin)
            if ab is None:
                return
            a[pos], b[pos] = sign * ab[0], ab[1]
        self.rows.append((parameter, label, a, b))

    def add_factors(self, parameter: str, label: str,
                    terms: Sequence[tuple[int, float, float]]) -> None:
        """``terms``: (position, a, b) given directly (values of the input format)."""
        a, b = np.zeros(self.k), np.zeros(self.k)
        for pos, x, y in terms:
            a[pos], b[pos] = x, y
        self.rows.append((parameter, label, a, b))


def _design(tree: Tree, k: int, fin: Format, fout: Format) -> _Designed:
    L0, L1 = _first_node(tree)
    others = [i for i in range(k) if i not in L0]
    d = _Designed(k, fin)
    triple: tuple[int, int, int] | None = None
    if len(L0) >= 3:
        triple = (L0[0], L0[1], L0[2])
    elif len(L1) >= 2:
        triple = (L0[0], L1[0], L1[1])
    if triple is not None:
        p, q, r = triple
        for j in range(1, MAX_FRACTIONAL_BITS + 5):
            d.add("fractional_bits", f"P3: 1 - 1 + 2^-{j} in one fused node",
                  [(p, 0, 1.0, 1), (q, 0, 1.0, -1), (r, -j, 1.0, 1)])
            d.add("alignment_rounding", f"P3: 1 - 1 + 1.5*2^-{j - 1}",
                  [(p, 0, 1.0, 1), (q, 0, 1.0, -1), (r, 1 - j, 1.5, 1)])
            d.add("alignment_rounding", f"P3: -1 + 1 - 1.5*2^-{j - 1}",
                  [(p, 0, 1.0, -1), (q, 0, 1.0, 1), (r, 1 - j, 1.5, -1)])
    if len(L0) >= 2:
        p, q = L0[0], L0[1]
        later = L1[0] if L1 else q
        for j in range(1, MAX_FRACTIONAL_BITS + 5):
            for sign, name in ((1, "-1, then "), (-1, "1, then -")):
                d.add("fractional_bits_c", f"P3d: {name}2^-{j} added to it",
                      [(p, 0, 1.0, -sign), (later, -j, 1.0, sign)])
                d.add("fractional_bits_c", f"P3d: {name}1.5*2^-{j} added to it",
                      [(p, 0, 1.0, -sign), (later, -j, 1.5, sign)])
        for u in range(1, fin.precision):
            x, y = 1.0 + 2.0**-u, 1.0 - 2.0**-u
            d.add_factors("fractional_bits", f"P3b: -1 + (1+2^-{u})(1-2^-{u})",
                          [(p, -1.0, 1.0), (q, x, y)])
            d.add_factors("products", f"P6: -1 + (1+2^-{u})^2", [(p, -1.0, 1.0), (q, x, x)])
        if others:
            o = L1[0] if L1 else others[0]
            for j in range(1, 62):
                d.add("accumulator", f"P5: (1 + 2^-{j}) - 1, the -1 added later",
                      [(p, 0, 1.0, 1), (q, -j, 1.0, 1), (o, 0, 1.0, -1)])
        pout = fout.precision
        for sign in (1, -1):
            d.add("output_rounding", f"P4: {'-' if sign < 0 else ''}(1 + 1.5 ulp) "
                  f"of {fout.name}", [(p, 0, 1.0, sign), (q, 1 - pout, 1.5, sign)])
            d.add("output_rounding", f"P4: {'-' if sign < 0 else ''}(1 + 0.75 ulp) "
                  f"of {fout.name}", [(p, 0, 1.0, sign), (q, -pout, 1.5, sign)])
            d.add("output_rounding", f"P4: {'-' if sign < 0 else ''}(1 + 0.5 ulp + "
                  f"2^-{pout + 3}) of {fout.name}",
                  [(p, 0, 1.0, sign), (q, -pout, 1.125, sign)])
    last = _last_node_leaves(tree)
    if len(last) >= 3:
        # P4b: carries: (n - 1) largest products and a small term in the last fused
        # node (an earlier node's rounding is hidden by the next node's alignment)
        m_sig = 2.0 - 2.0 ** (1 - fin.precision)
        for j in range(1, MAX_FRACTIONAL_BITS + 1):
            for sig in (1.0, 1.5):
                for sign in (1, -1):
                    a, b = np.zeros(k), np.zeros(k)
                    tiny = factor(-j, sig, fin)
                    if tiny is None:
                        continue
                    for pos in last[:-1]:
                        a[pos], b[pos] = sign * m_sig, m_sig
                    a[last[-1]], b[last[-1]] = sign * tiny[0], tiny[1]
                    d.rows.append(("output_rounding", f"P4b: {'-' if sign < 0 else ''}("
                                   f"{len(last) - 1} * (2 - 2^-{fin.precision - 1})^2 + "
                                   f"{sig}*2^-{j})", a, b))
    top = min(4, fin.emax - 1)
    if len(last) >= 3:  # e8m13 of an inner node is hidden by the next node's alignment
        p, q, r = last[:3]
        for j in range(8, 26):
            d.add("e8m13", f"P8: (1.5 + 1.5 + 2^-{j}) * 2^{top} in the last node",
                  [(p, top, 1.5, 1), (q, top, 1.5, 1), (r, top - j, 1.0, 1)])
    if triple is not None:
        p, q, r = triple
        for j in range(8, 26):
            d.add("e8m13", f"P8: (1.5 + 1.5 + 2^-{j}) * 2^{top}",
                  [(p, top, 1.5, 1), (q, top, 1.5, 1), (r, top - j, 1.0, 1)])
    return d


def _subnormal_design(tree: Tree, k: int, fin: Format, fout: Format) -> tuple[_Designed,
                                                                               bool, bool]:
    L0, _ = _first_node(tree)
    d = _Designed(k, fin)
    p = L0[0]
    has_in = fin.subnormals and fin.trailing_bits > 0
    if has_in:
        e_sub = fin.emin - fin.trailing_bits
        d.add_factors("subnormals", "P7: smallest subnormal input times 2^emax",
                      [(p, fin.smallest_subnormal, 2.0**fin.emax)])
        d.add_factors("subnormals", "P7: largest subnormal input times 2^emax",
                      [(p, fin.smallest_normal - fin.smallest_subnormal, 2.0**fin.emax)])
        has_in = e_sub + fin.emax >= max(fout.emin, -126)
    before = len(d.rows)
    d.add("subnormals", f"P7: product 2^{fout.emin - 2}, subnormal in {fout.name}",
          [(p, fout.emin - 2, 1.0, 1)])
    d.add("subnormals", f"P7: product -1.5*2^{fout.emin - 3}, subnormal in {fout.name}",
          [(p, fout.emin - 3, 1.5, -1)])
    has_out = len(d.rows) > before and fout.subnormals
    return d, has_in, has_out


def _hypotheses(tree: Tree, fin: Format, fout: Format) -> tuple[list[MatmulModel],
                                                                list[MatmulModel]]:
    """Standard hypotheses and stage-1 fused ones (F and alignment only)."""
    base: dict[str, Any] = {"input_format": fin.name, "output_format": fout.name,
                            "order": tree}
    standard: list[MatmulModel] = []
    if all(len(ch) == 2 for _, ch in postorder(tree)):
        for acc in _STANDARD_ACCUMULATORS:
            for products in ("fused",):
                standard.append(MatmulModel(adder="standard", accumulator=acc,
                                            products=products, output_rounding="rne",
                                            **base))
    fused: list[MatmulModel] = []
    structure = _fused_structure(tree)
    if structure is not None and fout.name in ("binary32", "binary16", "bfloat16"):
        G, promote = structure
        default = "rtz" if fout.name == "binary32" else "rne"
        for F in range(MAX_FRACTIONAL_BITS + 1):
            for align in ("rtz", "rd", "rne"):
                fused.append(MatmulModel(adder="fused", accumulator=fout.name, group_size=G,
                                         fractional_bits=F, alignment_rounding=align,
                                         output_rounding=default, promote_every=promote,
                                         **base))
    return standard, fused


class _Judge:
    """Keeps every observation; eliminates hypotheses; records the evidence."""

    def __init__(self, diag: _Placer) -> None:
        self.diag = diag
        self.a: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self.y: list[np.ndarray] = []
        self.evidence: list[Evidence] = []

    def observe(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        y = self.diag(a, b)
        self.a.append(a)
        self.b.append(b)
        self.y.append(y)
        return y

    def test(self, hyps: list[MatmulModel], design: _Designed,
             parameters: set[str] | None = None, record: bool = True) -> list[MatmulModel]:
        rows = [r for r in design.rows if parameters is None or r[0] in parameters]
        if not rows or not hyps:
            return hyps
        a = np.stack([r[2] for r in rows])
        b = np.stack([r[3] for r in rows])
        y = self.observe(a, b)
        preds = [h.evaluate(a, b) for h in hyps]
        if record:
            for i, (param, label, _, _) in enumerate(rows):
                self.evidence.append(Evidence(
                    parameter=param, vector=label,
                    predicted={h.name: float(p[i]) for h, p in zip(hyps, preds)},
                    observed=float(y[i])))
        return [h for h, p in zip(hyps, preds) if _same(p, y)]

    def test_grid(self, hyps: list[MatmulModel], design: _Designed,
                  parameters: set[str]) -> list[MatmulModel]:
        """:meth:`test` for fused hypotheses that differ only in fractional bits and
        alignment: one evaluation per alignment over all bit counts."""
        rows = [r for r in design.rows if r[0] in parameters]
        if not rows or not hyps:
            return hyps
        a = np.stack([r[2] for r in rows])
        b = np.stack([r[3] for r in rows])
        y = self.observe(a, b)
        preds: dict[str, np.ndarray] = {}
        groups: dict[tuple[Any, ...], list[MatmulModel]] = {}
        for h in hyps:
            key = tuple(getattr(h, f.name) for f in dataclasses.fields(h)
                        if f.compare and f.name != "fractional_bits")
            groups.setdefault(key, []).append(h)
        for members in groups.values():
            grid = members[0].evaluate_grid(a, b, np.array([h.fractional_bits
                                                             for h in members]))
            for h, p in zip(members, grid):
                preds[h.name] = p
        for i, (param, label, _, _) in enumerate(rows):
            self.evidence.append(Evidence(
                parameter=param, vector=label,
                predicted={h.name: float(preds[h.name][i]) for h in hyps},
                observed=float(y[i])))
        return [h for h in hyps if _same(preds[h.name], y)]

    def recheck(self, hyps: list[MatmulModel]) -> list[MatmulModel]:
        """Keep the hypotheses that agree with every observation so far."""
        if not self.a or not hyps:
            return hyps
        a, b, y = np.concatenate(self.a), np.concatenate(self.b), np.concatenate(self.y)
        return [h for h in hyps if _same(h.evaluate(a, b), y)]


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    return bool(np.array_equal(np.asarray(x, np.float64).view(np.uint64),
                               np.asarray(y, np.float64).view(np.uint64)))


def _preference(h: MatmulModel) -> tuple[Any, ...]:
    """Order among indistinguishable survivors: the simplest description first."""
    return (h.adder != "standard", _STANDARD_ACCUMULATORS.index(h.accumulator)
            if h.accumulator in _STANDARD_ACCUMULATORS else 9, h.products != "fused",
            ("fused", "fused-then-c", "even-odd").index(h.structure),
            ("rtz", "rd", "rne", None).index(h.alignment_rounding),
            h.output_rounding != ("rtz" if h.adder == "fused" else "rne"),
            h.e8m13, h.fractional_bits or 0, h.input_subnormals != "kept",
            h.output_subnormals != "kept")


def matmul(
    mm: Callable[[np.ndarray, np.ndarray], Any],
    *,
    input_format: Format | str,
    output_format: Format | str = "binary32",
    k: int,
    batch: int = 64,
    seed: int = 0,
    rounds: int = 8,
) -> ProbeResult:
    """Find how ``mm(A, B)`` accumulates, as a model that reproduces it bit for bit.

    Parameters
    ----------
    mm : callable
        ``mm(A, B)`` with ``A`` (batch, k) and ``B`` (k, batch), float32 arrays
        (float64 for formats wider than binary32) holding values of
        ``input_format``; returns the (batch, batch) product as anything numpy
        reads as numbers.
    input_format, output_format : Format or str
        The formats of the inputs and of the outputs.
    k : int
        The reduction length probed (the model holds for this ``k``), in
        ``[2, MAX_K]`` (65536).
    batch : int
        Rows and columns of every call (one test vector per diagonal element), in
        ``[4, MAX_BATCH]`` (4096: the (batch, batch) product is then 128 MiB of
        float64).
    seed : int
        Seed of the random test vectors: an int ``>= 0``.
    rounds : int
        Most rounds of random vectors on which the surviving hypotheses disagree, in
        ``[0, MAX_ROUNDS]`` (1024).

    Returns
    -------
    ProbeResult

    Raises
    ------
    ProbeError
        ``mm`` raised, returned the wrong shape, is not deterministic, returned
        values outside ``output_format``, or no model of the family fits (the
        message and ``findings`` say what was observed).
    ValueError
        ``input_format`` is unsigned or wider than precision 26, ``k`` is not an
        int in ``[2, MAX_K]``, ``batch`` not an int in ``[4, MAX_BATCH]``, ``seed``
        negative or ``rounds`` not an int in ``[0, MAX_ROUNDS]``.
    TypeError
        ``seed`` is not an int.

    Examples
    --------
    >>> import numpy as np
    >>> r = matmul(lambda A, B: A.astype(np.float64) @ B.astype(np.float64),
    ...            input_format="binary32", output_format="binary64", k=8, batch=8)
    >>> r.model.accumulator, r.group_size, r.fractional_bits
    ('binary64', 1, None)
    """
    fin, fout, k, batch = _check(input_format, output_format, k, batch)
    rng = np.random.default_rng(check_seed(seed))
    rounds = check_int(rounds, "rounds", 0, MAX_ROUNDS)
    box = BlackBox(mm, "mm")
    everywhere = _Placer(box, k, batch, fin, [])

    a0, b0 = random_factors(rng, batch, k, fin, fout)
    # C-contiguous, as every test vector is (_Placer): BLAS may order its sums by layout
    first = box.deterministic((batch, batch), a0.astype(everywhere.dtype),
                              np.ascontiguousarray(b0.T, dtype=everywhere.dtype))
    _check_output_values(first, fout, box.name)

    try:
        class_map = _position_classes(everywhere, k, fin, fout, rng)
    except NotATree as err:
        raise ProbeError(f"no model fits {box.name}: {err}", err.findings) from err
    models: list[MatmulModel] = []
    evidence: list[Evidence] = []
    ambiguous: list[str] = []
    for cls in range(int(class_map.max()) + 1):
        positions = [(int(r), int(c)) for r, c in np.argwhere(class_map == cls)]
        placer = _Placer(box, k, batch, fin, positions)
        alive, judge = _probe_class(placer, box.name, k, fin, fout, rng, rounds)
        models.append(alive[0])
        evidence.extend(judge.evidence)
        ambiguous.extend(h.name for h in alive[1:])
    result = ProbeResult(model=models[int(class_map[0, 0])], calls=box.calls,
                         evidence=tuple(evidence), ambiguous=tuple(ambiguous),
                         classes=tuple(models), class_map=class_map, batch=batch)
    # the test vectors read one output per row and column; the first call's full
    # output must agree too (a transposed or permuted output does not)
    want = result.predict(a0, b0.T)
    wrong = np.flatnonzero(want.view(np.uint64).ravel() != first.view(np.uint64).ravel())
    if wrong.size:
        i, j = divmod(int(wrong[0]), batch)
        raise ProbeError(
            f"no model fits {box.name}: the model found from the test vectors predicts "
            f"{float(want[i, j])!r} at output ({i}, {j}) of a random product, which gave "
            f"{float(first[i, j])!r} ({wrong.size} of {want.size} outputs differ)",
            {"row": i, "column": j, "model": float(want[i, j]),
             "observed": float(first[i, j])})
    return result


#: Pairs whose meeting node is read at every output position to find the classes.
def _fingerprint_pairs(k: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    fixed = {(0, 1), (0, 2), (0, k - 1), (k - 2, k - 1), (0, k // 2), (k // 2 - 1, k // 2),
             (1, 2), (1, 3)}
    for _ in range(8):
        i, j = (int(t) for t in rng.choice(k, size=2, replace=False))
        fixed.add((min(i, j), max(i, j)))
    return sorted((i, j) for i, j in fixed if 0 <= i < j < k)


def _position_classes(placer: _Placer, k: int, fin: Format, fout: Format,
                      rng: np.random.Generator) -> np.ndarray:
    """Outputs grouped by the meeting nodes of a few pairs (claim P10): class ids
    numbered in row-major order of first appearance, shape (batch, batch)."""
    pairs = _fingerprint_pairs(k, rng)
    runs = _runs(k, fout)
    return first_fit(_pair_scales(fin, fout, k),
                     lambda s: _classes_with(placer, k, pairs, s, runs))


def _classes_with(placer: _Placer, k: int, pairs: list[tuple[int, int]],
                  scales: tuple[float, float, float, float], runs: list[int]) -> np.ndarray:
    _, _, small_a, small_b = scales
    s = small_a * small_b
    batch = placer.batch
    one_a, one_b = np.zeros(k), np.zeros(k)
    one_a[k - 1], one_b[k - 1] = small_a, small_b
    _check_small(placer.call(np.broadcast_to(one_a, (batch, k)).copy(),
                             np.broadcast_to(one_b[:, None], (k, batch)).copy()), s)
    sig = []
    for i, j in pairs:
        total = np.zeros((batch, batch), np.int64)
        start = 0
        for size in runs:
            a, b = _pair_row(k, i, j, start, size, scales)
            A = np.broadcast_to(a, (batch, k))
            B = np.broadcast_to(b[:, None], (k, batch))
            got = placer.call(np.asarray(A), np.asarray(B)) / s
            total += _counts(got[None], s, size, [(i, j)])[0]
            start += size
        sig.append(total)
    stacked = np.stack(sig, axis=-1).reshape(batch * batch, -1)
    _, first_index, inverse = np.unique(stacked, axis=0, return_index=True,
                                        return_inverse=True)
    rank = np.argsort(np.argsort(first_index))
    return rank[inverse.reshape(-1)].reshape(batch, batch)


def _probe_class(placer: _Placer, name: str, k: int, fin: Format, fout: Format,
                 rng: np.random.Generator, rounds: int) -> tuple[list[MatmulModel], _Judge]:
    """The surviving hypotheses (best first) for the outputs of one class."""
    try:
        tree = _order(placer, k, fin, fout)
    except NotATree as err:
        raise ProbeError(f"no model fits {name}: {err}", err.findings) from err

    judge = _Judge(placer)
    standard, fused = _hypotheses(tree, fin, fout)
    design = _design(tree, k, fin, fout)
    # stage 1: the parameters each family's first tests decide on their own
    standard = judge.test(standard, design, {"accumulator"})
    # P3d (c from an earlier node) separates F only where c and the products are
    # aligned together, which AMD's two-stage adders (G >= 2) do not do
    single = bool(fused) and fused[0].group_size == 1
    fused = judge.test_grid(fused, design, {"fractional_bits", "alignment_rounding"}
                            | ({"fractional_bits_c"} if single else set()))
    # stage 2: the remaining parameters, against every observation
    expanded = [dataclasses.replace(h, products=p, output_rounding=r)
                for h in standard for p in ("fused", "rounded")
                for r in (("rne", "rtz") if h.accumulator != fout.name else ("rne",))]
    expanded += [dataclasses.replace(h, output_rounding=r, e8m13=e8)
                 for h in fused for r in ("rtz", "rne")
                 for e8 in ((False, True) if fout.name == "binary32" else (False,))]
    if fout.name == "binary32":  # AMD CDNA3's two-stage adders (the same P3 outcomes)
        expanded += [dataclasses.replace(h, structure=st, output_rounding=r)
                     for h in fused if h.group_size >= 2
                     for st in ("fused-then-c", "even-odd") for r in ("rtz", "rne")]
    alive = judge.recheck(expanded)
    alive = judge.test(alive, design, {"products", "output_rounding", "e8m13",
                                       "fractional_bits_c"})

    sub, has_in, has_out = _subnormal_design(tree, k, fin, fout)
    flush_in = ("kept", "flushed") if has_in else ("untested",)
    flush_out = ("kept", "flushed") if has_out else ("untested",)
    alive = [dataclasses.replace(h, input_subnormals=i, output_subnormals=o)
             for h in alive for i in flush_in for o in flush_out]
    alive = judge.test(alive, sub)
    alive = judge.recheck(alive)

    batch = len(placer.slots)
    quiet = 0
    for _ in range(rounds):
        if not alive or quiet >= 2:
            break
        a, b = random_factors(rng, 8 * batch, k, fin, fout)
        preds = np.stack([h.evaluate(a, b) for h in alive])
        bits = preds.view(np.uint64)
        split = np.flatnonzero((bits != bits[:1]).any(axis=0))
        pick = split[:batch] if split.size else np.arange(batch)
        y = judge.observe(a[pick], b[pick])
        alive = [h for h, p in zip(alive, preds) if _same(p[pick], y)]
        quiet = quiet + 1 if split.size == 0 else 0

    if not alive:
        raise ProbeError(
            f"no model of the family fits {name}: every hypothesis disagreed with "
            "some test vector (see findings['evidence'])",
            {"order": tree, "evidence": [e.as_dict() for e in judge.evidence[-40:]]},
        )
    alive.sort(key=_preference)
    return _merge_unobservable(alive, fout), judge


def _canonical(h: MatmulModel, fout: Format) -> MatmulModel:
    """One representative of the models equal to ``h`` on every input (see below)."""
    F = h.fractional_bits
    if h.adder != "fused" or F is None:
        return h
    nodes = [ch for _, ch in postorder(h.order)]
    with_c = any(any(isinstance(c, tuple) for c in ch)
                 and any(not isinstance(c, tuple) for c in ch) for ch in nodes)
    if h.structure == "fused-then-c" and not with_c:  # c = 0: the two stages agree
        h = dataclasses.replace(h, structure="fused")
    if h.structure != "fused":
        return h
    bits = F + math.ceil(math.log2(h.group_size + (1 if with_c else 0))) + 2
    if bits <= fout.precision:  # the rounding into the output is exact
        h = dataclasses.replace(h, output_rounding="rtz")
    if bits - 1 <= 13:  # e8m13 keeps every fraction bit the node can produce
        h = dataclasses.replace(h, e8m13=False)
    return h


def _merge_unobservable(alive: list[MatmulModel], fout: Format) -> list[MatmulModel]:
    """Drop survivors that differ from a preferred one only in a rounding that never
    happens (claims P4, P8): a fused node's aligned sum of ``n`` terms (``G``
    products, and ``c`` when a node has one) has at most ``F + ceil(log2 n) + 2``
    significant bits; when that fits the output
    precision, its output rounding is exact, and when its fraction bits fit 13,
    e8m13 clears nothing."""
    kept: list[MatmulModel] = []
    seen: set[MatmulModel] = set()
    for h in alive:
        canon = _canonical(h, fout)
        if canon not in seen:
            seen.add(canon)
            kept.append(h)
    return kept


def _check_output_values(out: np.ndarray, fout: Format, name: str) -> None:
    from numerics.probe.model import round_into

    finite = out[np.isfinite(out)]
    back = round_into(finite, None, fout, "rne")
    bad = np.flatnonzero(back != finite)
    if bad.size:
        v = float(finite[bad[0]])
        raise ProbeError(
            f"{name} returned {v!r}, which is not a value of output_format={fout.name!r}; "
            "give the format its outputs are in",
            {"value": v, "output_format": fout.name},
        )

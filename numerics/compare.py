"""Element-by-element comparison of two tensors of codes in one format.

:func:`compare_codes` walks both tensors in chunks (memory-mapped inputs are
never loaded whole) and reports:

* bitwise mismatches (codes that differ, ``-0`` vs ``+0`` and NaN payloads
  included);
* the exact ULP distance of every element (:func:`numerics.ulp.ulp_distance`:
  the number of representable values passed between the two, ``+0`` and
  ``-0`` the same point, infinities one step beyond ``max``) and its
  histogram in power-of-two buckets ``0, 1, 2, 3-4, 5-8, ...``;
* the largest absolute error ``|a - b|`` and relative error ``|a - b| / |a|``
  (``a``, the first tensor, is the reference) over elements finite on both
  sides;
* NaN mismatches (NaN on exactly one side; both NaN is agreement) and inf
  mismatches (an infinity on one side and not the same one on the other);
* the worst elements: NaN mismatches first, then by ULP distance.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from numerics.encoding import decode
from numerics.formats import Format, as_format
from numerics.ulp import ulp_distance

__all__ = ["CHUNK", "DiffReport", "WorstElement", "compare_codes", "ulp_bucket_label"]

#: Elements per chunk.
CHUNK = 1 << 20


@dataclass(frozen=True)
class WorstElement:
    """One element where the tensors differ.

    ``ulp_distance`` is None for a NaN mismatch (NaN has no place on the line).
    """

    index: tuple[int, ...]
    a_code: int
    b_code: int
    a_value: float
    b_value: float
    ulp_distance: int | None


@dataclass(frozen=True)
class DiffReport:
    """What :func:`compare_codes` found.

    Attributes
    ----------
    format : Format
    shape : tuple of int
    count : int
        Number of elements.
    bitwise_mismatches : int
        Elements whose codes differ.
    nan_mismatches : int
        Elements NaN on exactly one side.
    inf_mismatches : int
        Elements that are an infinity on one side and not the same infinity
        (nor NaN) on the other.
    ulp_histogram : tuple of (int, int, int)
        ``(low, high, count)``: elements at ``low <= distance <= high`` ULP,
        buckets ``[0, 0], [1, 1], [2, 2], [3, 4], [5, 8], ...`` (empty ones left out);
        NaN on both sides counts as distance 0, NaN mismatches are left out.
    max_ulp : int
        Largest ULP distance over elements not NaN on either side (0 if none).
    max_abs_error, max_rel_error : float
        Over elements finite on both sides; ``max_rel_error`` is ``inf``
        where ``a == 0 != b``.  0 when there is no such element.
    worst : tuple of WorstElement
        The worst elements, worst first.
    beyond : int or None
        With ``max_ulp=N``: elements more than ``N`` ULP apart plus NaN
        mismatches (the elements that fail the check).
    """

    format: Format
    shape: tuple[int, ...]
    count: int
    bitwise_mismatches: int
    nan_mismatches: int
    inf_mismatches: int
    ulp_histogram: tuple[tuple[int, int, int], ...]
    max_ulp: int
    max_abs_error: float
    max_rel_error: float
    worst: tuple[WorstElement, ...]
    beyond: int | None


def ulp_bucket_label(low: int, high: int) -> str:
    """``"0"``, ``"1"``, ``"3-4"``, ``"(2^16, 2^17]"``: the label of a histogram bucket.

    Examples
    --------
    >>> ulp_bucket_label(0, 0), ulp_bucket_label(5, 8), ulp_bucket_label(65537, 131072)
    ('0', '5-8', '(2^16, 2^17]')
    """
    if low == high:
        return str(low)
    if high > 1 << 16:
        k = high.bit_length() - 1
        return f"(2^{k - 1}, 2^{k}]"
    return f"{low}-{high}"


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Exact bit length of each uint64."""
    x = x.astype(np.uint64, copy=True)
    out = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << s)
        out[big] += s
        x[big] >>= np.uint64(s)
    return out + (x > 0)


def compare_codes(
    a: np.ndarray,
    b: np.ndarray,
    fmt: Format | str,
    *,
    worst: int = 10,
    max_ulp: int | None = None,
) -> DiffReport:
    """Compare two arrays of codes of ``fmt`` element by element.

    Parameters
    ----------
    a, b : ndarray of unsigned int
        Codes, the same shape; ``a`` is the reference for relative errors.
    fmt : Format or str
    worst : int
        How many of the worst elements to keep.
    max_ulp : int, optional
        Count the elements further apart than this (``DiffReport.beyond``).

    Raises
    ------
    ValueError
        If the shapes differ or an option is out of range.

    Examples
    --------
    >>> r = compare_codes(np.array([0x3F80, 0x3F80, 0x7FC0], np.uint16),
    ...                   np.array([0x3F80, 0x3F82, 0x3F80], np.uint16), "bfloat16")
    >>> r.bitwise_mismatches, r.nan_mismatches, r.max_ulp, r.max_rel_error
    (2, 1, 2, 0.015625)
    >>> [(w.index, w.ulp_distance) for w in r.worst]
    [((2,), None), ((1,), 2)]
    """
    fmt = as_format(fmt)
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"Got shapes {list(a.shape)} and {list(b.shape)}, but they must match")
    if isinstance(worst, bool) or not isinstance(worst, int) or worst < 0:
        raise ValueError(f"Got {worst=}, but it must be a non-negative int")
    if max_ulp is not None and (isinstance(max_ulp, bool) or not isinstance(max_ulp, int)
                                or max_ulp < 0):
        raise ValueError(f"Got {max_ulp=}, but it must be a non-negative int")
    shape = tuple(int(n) for n in a.shape)
    fa, fb = a.reshape(-1), b.reshape(-1)
    n = fa.size
    mismatches = nan_mm = inf_mm = beyond = 0
    buckets = np.zeros(66, np.int64)  # bit length of (d - 1), shifted: 0 -> d=0, 1 -> d=1, ...
    max_d = 0
    max_abs = max_rel = 0.0
    # A min-heap of the worst: (key, -flat index, flat index, ULP distance or None for NaN).
    heap: list[tuple[float, int, int, int | None]] = []
    for start in range(0, n, CHUNK):
        ca = np.asarray(fa[start:start + CHUNK])
        cb = np.asarray(fb[start:start + CHUNK])
        va = np.asarray(decode(ca, fmt), np.float64)
        vb = np.asarray(decode(cb, fmt), np.float64)
        differ = ca != cb
        mismatches += int(np.count_nonzero(differ))
        na, nb = np.isnan(va), np.isnan(vb)
        nan_one = na != nb
        nan_mm += int(np.count_nonzero(nan_one))
        ia, ib = np.isinf(va), np.isinf(vb)
        inf_mm += int(np.count_nonzero((ia | ib) & ~na & ~nb & (va != vb)))
        comparable = ~(na | nb)
        d = np.zeros(ca.shape, np.uint64)
        if comparable.any():
            d[comparable] = ulp_distance(va[comparable], vb[comparable], fmt)
        dc = d[~nan_one]  # NaN on both sides agrees: distance 0
        if dc.size:
            max_d = max(max_d, int(dc.max()))
            bucket = np.where(dc == 0, 0, _bit_length(dc - np.uint64(1)) + 1)
            buckets += np.bincount(bucket, minlength=buckets.size)[: buckets.size]
        if max_ulp is not None:
            beyond += int(np.count_nonzero(comparable & (d > np.uint64(max_ulp))))
            beyond += int(np.count_nonzero(nan_one))
        finite = np.isfinite(va) & np.isfinite(vb)
        if finite.any():
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                err = np.abs(va[finite] - vb[finite])
                rel = np.where(err == 0, 0.0, err / np.abs(va[finite]))
            max_abs = max(max_abs, float(err.max()))
            max_rel = max(max_rel, float(rel.max()))
        if worst:
            key = np.where(nan_one, np.inf, d.astype(np.float64))
            cand = np.flatnonzero(differ)
            if cand.size > worst:
                cand = cand[np.argpartition(-key[cand], worst - 1)[:worst]]
            for i in cand:
                item = (float(key[i]), -(start + int(i)), start + int(i),
                        None if nan_one[i] else int(d[i]))
                if len(heap) < worst:
                    heapq.heappush(heap, item)
                elif item > heap[0]:
                    heapq.heapreplace(heap, item)
    worst_items: list[WorstElement] = []
    for _, _, flat, dist in sorted(heap, key=lambda item: item[:3], reverse=True):
        ia_, ib_ = int(fa[flat]), int(fb[flat])
        va_, vb_ = (float(v) for v in np.asarray(
            decode(np.array([ia_, ib_], dtype=fmt.code_dtype), fmt)).tolist())
        index = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
        worst_items.append(WorstElement(index, ia_, ib_, va_, vb_, dist))
    hist = []
    for k, count in enumerate(buckets.tolist()):
        if count:
            if k <= 1:
                low = high = k
            else:
                low, high = (1 << (k - 2)) + 1, 1 << (k - 1)
            hist.append((low, high, int(count)))
    return DiffReport(
        format=fmt, shape=shape, count=n, bitwise_mismatches=mismatches, nan_mismatches=nan_mm,
        inf_mismatches=inf_mm, ulp_histogram=tuple(hist), max_ulp=max_d, max_abs_error=max_abs,
        max_rel_error=max_rel, worst=tuple(worst_items),
        beyond=beyond if max_ulp is not None else None,
    )

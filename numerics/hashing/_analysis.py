"""Collision statistics and the count of integers a format represents (claim C5 of
proofs/uint32_vs_fp32.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from numerics.formats import Format, as_format
from numerics.hashing._emulated import _check_positive, _integer_input


# ============================================================================ collision report
@dataclass(frozen=True)
class CollisionReport:
    """How ``n`` hash values spread over a table of ``table_size`` buckets.

    Attributes
    ----------
    n : int
        Number of keys.
    table_size : int
        Number of buckets ``m``.
    buckets_used : int
        Distinct buckets that received at least one key.
    max_load : int
        Keys in the fullest bucket (0 when ``n == 0``).
    collisions : int
        Keys that landed in an already occupied bucket: ``n - buckets_used``.
    expected_collisions : float
        The same count expected for a uniform random hash:
        ``n - m*(1 - (1 - 1/m)**n)``.
    chi_square : float
        Pearson's statistic over all ``m`` bucket loads against the uniform
        expectation ``n/m``: ``sum((load - n/m)**2 / (n/m))``; about ``m - 1``
        for a uniform hash (0 when ``n == 0``).
    """

    n: int
    table_size: int
    buckets_used: int
    max_load: int
    collisions: int
    expected_collisions: float
    chi_square: float


def collision_report(hashes: npt.ArrayLike, table_size: int) -> CollisionReport:
    """Summarize the bucket loads of ``hashes`` in a table of ``table_size`` buckets.

    Parameters
    ----------
    hashes : array_like of int, shape (n,)
        Bucket indices in ``[0, table_size)``.
    table_size : int
        Number of buckets ``m``, in ``[1, 2**32]``.

    Returns
    -------
    CollisionReport

    Raises
    ------
    TypeError
        If ``hashes`` is not integer or ``table_size`` not an int.
    ValueError
        If ``hashes`` is not 1-D or holds a value outside ``[0, table_size)``.

    Notes
    -----
    Only occupied buckets are counted (``numpy.unique``), so tables of ``2**32``
    buckets cost no memory.  With ``c_j`` the loads and ``e = n/m``,
    ``chi_square = sum_j c_j**2 / e - n`` (the empty buckets included).
    ``expected_collisions`` is evaluated as ``n + m*expm1(n*log1p(-1/m))``.

    Examples
    --------
    >>> r = collision_report(np.array([0, 1, 1, 3]), 4)
    >>> r.buckets_used, r.max_load, r.collisions, r.expected_collisions  # 4 - 4*(1 - (3/4)**4)
    (3, 2, 1, 1.265625)
    >>> r.chi_square
    2.0
    """
    m = _check_positive(table_size, "table_size", 1 << 32)
    arr = _integer_input(hashes, "hashes", m, f"lie in [0, table_size={m})")
    if arr.dtype.kind not in "iu":  # (not bool; not timedelta64, an np.integer to numpy)
        raise TypeError(f"Got hashes with dtype={arr.dtype}, but it must hold integers")
    if arr.ndim != 1:
        raise ValueError(f"Got hashes with shape {arr.shape}, but it must be 1-D")
    n = int(arr.size)
    if n == 0:
        return CollisionReport(0, m, 0, 0, 0, 0.0, 0.0)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= m:
        raise ValueError(
            f"Got hashes containing {lo if lo < 0 else hi}, but every entry must lie in "
            f"[0, table_size={m})"
        )
    _, counts = np.unique(arr, return_counts=True)
    used = int(counts.size)
    if m == 1:
        expected = float(n - 1)
    else:
        expected = float(n + m * np.expm1(n * np.log1p(-1.0 / m)))
    sum_sq = int(np.sum(counts.astype(np.int64) ** 2))
    chi = float(sum_sq * m / n - n)
    return CollisionReport(n, m, used, int(counts.max()), n - used, expected, chi)


# ======================================================================= representable integers
def count_representable_integers(fmt: Format | str, width: int) -> int:
    """Number of integers in ``[0, 2**width)`` that are finite values of ``fmt``.

    Exact (Python integers), for any format: zero counts when the format has
    one; binade ``[2**e, 2**(e+1))`` with ``e >= 0`` contributes ``2**min(e, t)``
    integers (``t = fmt.trailing_bits``), cut at ``fmt.max``; integers below
    ``2**emin`` are counted on the subnormal grid.  This is claim C5 of
    ``proofs/uint32_vs_fp32.md``; when the format has a zero, ``emin <= 0`` and
    ``2**width - 1 <= fmt.max``, it equals ``2**width`` if ``width <= p`` and
    ``2**p + (width - p) * 2**(p-1)`` otherwise (``p = fmt.precision``).

    Parameters
    ----------
    fmt : Format or str
        A format or a registered name.
    width : int
        Bit width ``W >= 0`` of the unsigned integers, any size (every finite value of
        a format lies below ``2**(emax + 1)``, so wider widths give the same count).

    Returns
    -------
    int

    Raises
    ------
    TypeError, ValueError
        For an unknown format or a ``width`` that is not a non-negative int.

    Examples
    --------
    >>> count_representable_integers("binary32", 32)     # 2**24 + 2**26
    83886080
    >>> count_representable_integers("bfloat16", 16)     # 2**8 + 8 * 2**7
    1280
    >>> count_representable_integers("e2m1fn", 8)        # 0, 1, 2, 3, 4, 6
    6
    """
    f = as_format(fmt)
    if not isinstance(width, (int, np.integer)) or isinstance(width, (bool, np.bool_)):
        raise TypeError(f"Got {width=}, but it must be a non-negative int")
    w = int(width)
    if w < 0:
        raise ValueError(f"Got {width=}, but it must be a non-negative int")
    t, emin, emax = f.trailing_bits, f.emin, f.emax
    count = 1 if f.has_zero and w >= 0 else 0
    # Integers below 2**emin (only when emin > 0): the subnormal grid k * 2**(emin - t).
    # (2**w itself is never formed: a width beyond emax + 1 counts as emax + 1 does.)
    if f.subnormals and emin > 0:
        step = 1 << max(0, emin - t)
        top = (1 << min(emin, w)) - 1  # largest integer considered
        count += top // step
    # Normal binades [2**e, 2**(e+1)) with e >= max(0, emin), e < width, e <= emax.
    for e in range(max(0, emin), min(w - 1, emax) + 1):
        quantum = 1 << max(0, e - t)  # integer spacing of the binade
        hi = (1 << (e + 1)) - 1
        if e == emax:
            hi = min(hi, int(f.max_exact))  # floor(max)
        count += (hi - (1 << e)) // quantum + 1
    return count


"""An operation on the codes of a format of at most 8 bits, by the table of its results.

A format of ``k <= 8`` bits has ``2**(2k)`` ordered pairs of codes (65536 for an fp8
format, 4096 for fp6, 256 for fp4), so the result of ``a + b``, ``a - b``, ``a * b``
or ``a / b`` under one rounding mode and overflow rule is a function of
``(code_a << k) | code_b``, and that of ``sqrt(a)`` or of a conversion of ``a`` a
function of its ``2**k`` codes: :mod:`numerics.ops` computes it once for every pair
(or code), with the loop it would run on the operands themselves, and this loop
reads each element's result (and flag bits) from that table.  Every result is the one the
loop would have given the element: a deterministic rounding's result depends on
the element's operands only (stochastic rounding, which also draws on the index,
never comes here).

Per element the loop loads two bytes and one table entry and stores the result.
:mod:`numerics.ops` reads a table where no lane loop serves the call: a rounding
other than to nearest-even, or a format without lanes (``e8m0fnu``).  Measured on a
2-core AMD Zen 4 VM, 2**20 elements, float64 results, 2 threads, against the loop
the call ran before: ``add`` in e4m3fn rounding toward zero 0.42 to 0.65 ms against
2.8 to 3.2; in e2m1fn 0.74 against 22; ``add`` in e8m0fnu to nearest 0.32 against 36.
Where a lane loop serves (e4m3fn to nearest), the table ran as fast as the lanes,
within this VM's noise, so the lanes keep those calls.  ``sqrt`` and ``convert``
(e4m3fn to e5m2) of 2**20 e4m3fn codes: 0.57 to 0.66 ms against 1.55 to 2.0.
"""

from __future__ import annotations

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
from numerics.kernels.spread import spread

__all__ = ["lookup", "lookup_span"]


def lookup(a: np.ndarray, b: np.ndarray, shift: int, values: np.ndarray,
           flag_bits: np.ndarray, out: np.ndarray, fl: np.ndarray) -> None:
    """``out[i] = values[(a[i] << shift) | b[i]]`` and, when ``fl`` is not empty, ``fl[i]``
    from ``flag_bits`` alike; ``a`` and ``b`` are uint8 codes, each of the result's
    length or of length 1 (broadcast), ``values`` a table of a power-of-two size.  A
    binary operation on ``k``-bit codes takes ``shift = k`` (``2**(2k)`` entries), a
    unary one ``shift = 0`` and ``b = [0]`` (``2**k`` entries).  Pieces run on the
    threads.

    Examples
    --------
    >>> import numpy as np
    >>> values = np.arange(16.0)  # a 2-bit "format": the result of (a, b) is 4a + b
    >>> out = np.empty(3)
    >>> lookup(np.array([1, 2, 3], np.uint8), np.array([3], np.uint8), 2, values,
    ...        np.zeros(0, np.uint8), out, np.zeros(0, np.uint8))
    >>> out
    array([ 7., 11., 15.])
    """
    n = out.size

    def piece(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
        return x[lo:hi] if x.size == n else x

    spread(lambda lo, hi: lookup_span(piece(a, lo, hi), piece(b, lo, hi), shift, values,
                                      flag_bits, out[lo:hi], fl[lo:hi] if fl.size else fl),
           n)


@numba.njit(cache=True, nogil=True)
def lookup_span(a: np.ndarray, b: np.ndarray, shift: int, values: np.ndarray,
                flag_bits: np.ndarray, out: np.ndarray, fl: np.ndarray) -> None:
    """:func:`lookup` on one piece (``a``, ``b`` the piece's codes or one code).  An
    index is masked to the table's size, so no code reads outside it (the caller
    checks that every code is one of the format's).

    The caller slices the piece: a loop from 0 lets LLVM drop numba's wraparound of a
    negative index, which a loop over ``range(start, stop)`` keeps on every access
    (1.7 times slower here)."""
    n = out.size
    mask = values.size - 1
    if a.size == n and b.size == n:
        for i in range(n):
            out[i] = values[((np.intp(a[i]) << shift) | np.intp(b[i])) & mask]
        if fl.size:
            for i in range(n):
                fl[i] = flag_bits[((np.intp(a[i]) << shift) | np.intp(b[i])) & mask]
        return
    sa = 1 if a.size == n else 0  # a broadcast operand reads its one code
    sb = 1 if b.size == n else 0
    for i in range(n):
        k = ((np.intp(a[i * sa]) << shift) | np.intp(b[i * sb])) & mask
        out[i] = values[k]
        if fl.size:
            fl[i] = flag_bits[k]

"""Error-free transformations in float64 (numpy, elementwise).

Each function returns float64 arrays whose *exact* sum equals the exact
result of the operation, as long as no intermediate overflows and (for the
products) no partial product underflows.  :mod:`numerics.ops` scales its
operands so that these conditions hold.

Operands are float64 values: numpy arrays, torch tensors (read exactly, detached),
Python and numpy scalars and nested lists, of floats of at most 64 bits (ml_dtypes
formats included) or of integers within ``+-2**53``, all converted to float64
exactly.  Anything float64 would not hold exactly (long doubles, larger integers,
Fractions) or that is not a real number (complex, bool, text, None) raises
TypeError or ValueError naming the operand.

References
----------
T. J. Dekker, "A floating-point technique for extending the available
precision", Numer. Math. 18 (1971).  D. E. Knuth, TAOCP vol. 2, 4.2.2
(TwoSum).  J.-M. Muller et al., Handbook of Floating-Point Arithmetic,
2nd ed. (2018), ch. 4.  S. Boldo, S. Graillat and J.-M. Muller, "On the
robustness of the 2Sum and Fast2Sum algorithms", ACM Trans. Math. Softw.
44(1) (2017): 2Sum's spurious overflow.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from numerics.dtypes import as_input

__all__ = ["fast_two_sum", "split", "three_sum_rne", "two_prod", "two_sum"]

#: Veltkamp splitting constant ``2**27 + 1`` for binary64.
_SPLITTER = 134217729.0
#: Integers up to this magnitude are float64 values.
_EXACT_INT = 2**53


def _operand(x: Any, name: str) -> np.ndarray:
    """``x`` as float64, exactly (see the module docstring); TypeError or ValueError naming
    ``name`` for what float64 does not hold."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x  # what numerics' own callers pass
    arr = as_input(x, name)
    kind = arr.dtype.kind
    ml_float = kind == "V" and arr.dtype.type.__module__.split(".")[0] == "ml_dtypes"
    if (kind == "f" and arr.dtype.itemsize <= 8) or ml_float:
        return arr.astype(np.float64)
    if kind in "iu":
        if arr.size and (int(arr.max()) > _EXACT_INT or int(arr.min()) < -_EXACT_INT):
            raise ValueError(f"Got {name} holding integers beyond 2**53, which float64 does "
                             "not hold exactly")
        return arr.astype(np.float64)
    raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must hold real numbers that "
                    "float64 holds exactly (floats of at most 64 bits, integers within "
                    "+-2**53)")


def two_sum(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``s = fl(a + b)`` and ``e`` with ``s + e == a + b`` exactly.

    Exact (also with subnormals) when ``|a| < 2**1023`` and ``|b| < 2**1023``.
    That no operation overflows then follows from the rounding error of
    ``s`` being at most ``ulp(s) / 2 <= 2**970``: ``|a + b| <= 2**1024 - 2**971``
    (binary64's max) and ``|s - a| <= |b| + 2**970 <= 2**1023``.

    A sum that does not overflow is *not* enough: 2Sum's intermediate
    ``s - a`` can overflow although ``s`` is finite (Boldo, Graillat & Muller
    2017), as with ``a = -(2**1022 + 3 * 2**970)`` and ``b`` binary64's max,
    where ``s`` is finite and ``e`` is NaN.

    Examples
    --------
    >>> s, e = two_sum(np.array([1.0]), np.array([2.0**-60]))
    >>> float(s[0]), float(e[0]) == 2.0**-60
    (1.0, True)
    """
    a, b = _operand(a, "a"), _operand(b, "b")
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def fast_two_sum(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's FastTwoSum, exact when ``|a| >= |b|`` (or ``a`` is 0)."""
    a, b = _operand(a, "a"), _operand(b, "b")
    s = a + b
    e = b - (s - a)
    return s, e


def split(a: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp split ``a = hi + lo`` with 26 and 27 significant bits.

    ``hi`` is ``a`` rounded to 26 bits (so ``|hi| <= |a| * (1 + 2**-26)``).
    Needs ``a * (2**27 + 1)`` not to overflow: ``|a| <= 0x1.ffffffbffffffp+996``
    (``|a| < 2**996`` suffices).
    """
    a = _operand(a, "a")
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProd: ``p = fl(a * b)`` and ``e`` with ``p + e == a * b`` exactly.

    Exact when ``|a|, |b| < 2**996`` (:func:`split`), ``|a * b| <= 2**1023``
    and the exponents of ``a`` and ``b`` add to at least ``-1022 + 53`` (so that
    the error term does not underflow).  Plain numpy products (no FMA).

    A finite ``a * b`` is not enough: the product ``ah * bh`` of the 26-bit
    heads must not overflow, and each head may exceed its operand by a factor
    up to ``1 + 2**-26``, so products within a factor ``(1 + 2**-26)**2`` of
    ``2**1024`` can fail (``a = 0x1.fffffffffffffp+530``,
    ``b = 0x1.fffffffffffffp+492``: ``p`` is finite, ``ah * bh = 2**1024`` and
    ``e`` is inf).  ``|a * b| <= 2**1023`` keeps ``ah * bh < 2**1024``, and
    ``ah * bh`` (52 bits) is then exact.

    Examples
    --------
    >>> p, e = two_prod(np.array([1.0 + 2.0**-30]), np.array([1.0 + 2.0**-30]))
    >>> float(e[0]) == 2.0**-60
    True
    """
    a, b = _operand(a, "a"), _operand(b, "b")
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def three_sum_rne(x1: npt.ArrayLike, x2: npt.ArrayLike, x3: npt.ArrayLike
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``h = RNE64(x1 + x2 + x3)`` and a residual ``r`` for the exact sum.

    ``r`` has the sign of ``x1 + x2 + x3 - h``, is zero exactly when that is
    zero, satisfies ``|r| <= half the spacing`` on its side of ``h``, and
    equals half the spacing only when the exact residual does.  ``r`` is the
    exact residual rounded to nearest (up to that last adjustment), which is
    all :mod:`numerics.ops` needs to round ``h + r`` like the exact sum in any
    mode.  Requires that no TwoSum below underflows to a loss (the caller
    scales the terms into ``[2**-300, 2**300]``) and that ``x2`` is the error
    term of ``x1`` (``|x2| <= ulp(x1) / 2``), as produced by :func:`two_prod`.
    """
    x1, x2, x3 = _operand(x1, "x1"), _operand(x2, "x2"), _operand(x3, "x3")
    s, t = two_sum(x1, x3)
    u, w = two_sum(t, x2)
    h, ll = two_sum(s, u)
    # Now x1 + x2 + x3 == h + ll + w exactly, |ll| <= ulp(h) / 2, w tiny.
    # If s + u cancels exactly, ll is 0 and the sum is w itself.
    h0 = h == 0
    h = np.where(h0, w, h)
    w = np.where(h0, 0.0, w)
    t2, e2 = two_sum(ll, w)
    ah = np.abs(h)
    sgn = np.sign(h)
    rel = t2 * sgn  # > 0: the residual points away from zero
    sp_up = np.spacing(ah)
    sp_dn = ah - np.nextafter(ah, 0.0)
    sp = np.where(rel > 0, sp_up, sp_dn)
    hs = sp * 0.5
    art = np.abs(t2)
    beyond = (art > hs) | ((art == hs) & (e2 * t2 > 0))
    tie = (art == hs) & (e2 == 0)
    odd = (h.view(np.uint64) & np.uint64(1)) == 1
    move = (beyond | (tie & odd)) & (h != 0)
    step = np.where(move, np.copysign(sp, t2), 0.0)
    h_new = h + step
    r_hi = t2 - step  # exact (Sterbenz)
    r, e3 = two_sum(r_hi, e2)
    # r must not be mistaken for a tie when the exact residual is not one.
    ah2 = np.abs(h_new)
    rel2 = r * np.sign(h_new)
    hs2 = np.where(rel2 > 0, np.spacing(ah2), ah2 - np.nextafter(ah2, 0.0)) * 0.5
    fake_tie = (np.abs(r) == hs2) & (e3 != 0)
    r = np.where(fake_tie, np.nextafter(r, 0.0), r)
    # h == 0 happens only for an exact zero sum of the scaled terms.
    return h_new, np.where(h_new == 0, 0.0, r)

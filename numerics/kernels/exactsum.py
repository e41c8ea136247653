"""Exact sums of float64 columns: a fixed-point accumulator over binary64's whole range.

Every finite binary64 number is an integer multiple of ``2**-1074`` below ``2**1024``,
so a sum of them is ``N * 2**-1074`` for an integer ``N`` of at most about 2100 bits
(more with billions of terms).  :func:`exact_pairs` adds each term's significand into
that integer, held as 32-bit digits in int64 words (a term touches three digits; a
word takes ``2**30`` terms before its carries need moving up), then reads the sum off
the digits as the pair the rounding kernels take:

* ``h``, the binary64 nearest the sum (ties to even), and
* ``l``, the rest ``sum - h`` rounded to odd in binary64 (truncated to 53 bits, its
  last bit set when a dropped bit is): ``h + l`` rounds like the exact sum in every
  format with at most 51 significand bits, and in binary64 itself, whose half ulp
  of ``h`` bounds ``|l|`` (Boldo and Melquiond, "Emulation of FMA and correctly
  rounded sums: proved algorithms using rounding to odd", IEEE Trans. Computers
  57(4), 2008);
* ``s``, 0, or where ``h`` would overflow binary64 the power of two ``2**s`` the pair
  is scaled by (``sum = (h + l) * 2**s``, ``|h| < 2**1021``).

A column with an infinity or a NaN gets the exact sum's IEEE value and ``l = 0``: NaN
with a NaN or both infinities among its terms, else the infinity there is;
an exact zero sum gets the sign IEEE 754 (section 6.3) gives it: the terms' sign when
they all have one, else +0 (-0 when rounding down).  The tests pin this module to
``fractions.Fraction`` sums.
"""

from __future__ import annotations

from typing import Any, Callable, cast

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels import rounding
from numerics.kernels.spread import spread

__all__ = ["exact_pairs"]

_DIGITS = 72  # 32-bit digits: 2098 bits of binary64's range, carries beyond it
_MASK = np.int64(0xFFFFFFFF)
_SPAN = 1 << 30  # terms a word takes before its carries move up
_U64 = np.uint64
bits_f64 = cast(Callable[[Any], float], rounding.bits_f64)
f64_bits = cast(Callable[[Any], Any], rounding.f64_bits)


@numba.njit(cache=True, nogil=True)
def _add(acc: np.ndarray, m: Any, e: Any, negative: bool) -> None:
    """``acc += (-1)**negative * m * 2**e`` for ``0 <= m < 2**54``, ``e >= 0``."""
    k = e >> 5
    r = e & 31
    low = (m & _MASK) << r  # < 2**63
    high = (m >> 32) << r  # < 2**54
    if negative:
        acc[k] -= low & _MASK
        acc[k + 1] -= (low >> 32) + (high & _MASK)
        acc[k + 2] -= high >> 32
    else:
        acc[k] += low & _MASK
        acc[k + 1] += (low >> 32) + (high & _MASK)
        acc[k + 2] += high >> 32


@numba.njit(cache=True, nogil=True)
def _carry(acc: np.ndarray) -> None:
    """Move every carry up: digits 0 .. top-1 in ``[0, 2**32)``, the sign in the top."""
    for k in range(acc.size - 1):
        c = acc[k] >> 32  # floor division by 2**32
        acc[k] -= c << 32
        acc[k + 1] += c


@numba.njit(cache=True, nogil=True)
def _magnitude(acc: np.ndarray) -> bool:
    """Carry ``acc`` and replace it by its absolute value; returns whether it was
    negative."""
    _carry(acc)
    negative = acc[acc.size - 1] < 0
    if negative:
        for k in range(acc.size):
            acc[k] = -acc[k]
        _carry(acc)
    return negative


@numba.njit(cache=True, nogil=True)
def _bit_length(acc: np.ndarray) -> int:
    """The bit length of the carried, non-negative ``acc`` (0 for zero)."""
    for k in range(acc.size - 1, -1, -1):
        d = acc[k]
        if d != 0:
            n = 0
            while d != 0:
                d >>= 1
                n += 1
            return 32 * k + n
    return 0


@numba.njit(cache=True, nogil=True)
def _bits(acc: np.ndarray, lo: int, count: int) -> Any:
    """Bits ``lo .. lo + count - 1`` (``count <= 62``; bits below 0 read as 0) of the
    carried, non-negative ``acc``."""
    out = np.int64(0)
    for j in range(count):
        b = lo + j
        if b >= 0 and (acc[b >> 5] >> (b & 31)) & 1:
            out |= np.int64(1) << j
    return out


@numba.njit(cache=True, nogil=True)
def _any_below(acc: np.ndarray, b: int) -> bool:
    """Whether any bit below bit ``b`` of the carried ``acc`` is set."""
    if b <= 0:
        return False
    k = b >> 5
    for j in range(k):
        if acc[j] != 0:
            return True
    return (acc[k] & ((np.int64(1) << (b & 31)) - 1)) != 0 if k < acc.size else False


@numba.njit(cache=True, nogil=True)
def _value(m: Any, e: int) -> float:
    """``m * 2**(e - 1074)`` for ``0 <= m < 2**53`` (exact: a binary64 number, or
    ``m = 0``)."""
    if m == 0:
        return 0.0
    # normalise m to 53 bits where the exponent allows: a binary64 number's fields
    n = 0
    t = m
    while t != 0:
        t >>= 1
        n += 1
    shift = min(53 - n, e)  # up to the subnormal range's fixed exponent
    if shift > 0:
        m <<= shift
        e -= shift
    if m < (np.int64(1) << 52):  # subnormal: e == 0
        return bits_f64(_U64(m))
    return bits_f64(_U64((e + 1) << 52) | _U64(m - (np.int64(1) << 52)))


#: Terms' signs and specials, one bit each in a column's flag word.
_NEGATIVE, _MIXED, _NAN, _PLUS, _MINUS = 1, 2, 4, 8, 16


@numba.njit(cache=True, nogil=True)
def _take(acc: np.ndarray, v: float, flags: Any, first: bool) -> Any:
    """Add the term ``v`` to the column's accumulator ``acc`` (a finite one) and its
    flag word (the first term's sign, mixed signs, NaN, +inf, -inf); returns the
    flags."""
    b = f64_bits(v)
    negative = b >> _U64(63) != _U64(0)
    if first:
        flags = _NEGATIVE if negative else 0
    elif negative != ((flags & _NEGATIVE) != 0):
        flags |= _MIXED
    field = np.int64((b >> _U64(52)) & _U64(0x7FF))
    m = np.int64(b & _U64(0xFFFFFFFFFFFFF))
    if field == 0x7FF:
        return flags | (_NAN if m != 0 else (_MINUS if negative else _PLUS))
    if field != 0:
        m |= np.int64(1) << 52
    if m != 0:
        _add(acc, m, max(field - 1, 0), negative)
    return flags


@numba.njit(cache=True, nogil=True)
def _pair(acc: np.ndarray, flags: Any, round_down: bool) -> tuple[float, float, int]:
    """``(h, l, s)`` of a column from its accumulator (carried) and flags (see the
    module docstring)."""
    if flags & _NAN or (flags & _PLUS and flags & _MINUS):
        return np.nan, 0.0, 0
    if flags & (_PLUS | _MINUS):  # finite terms beside an infinity do not change it
        return (np.inf if flags & _PLUS else -np.inf), 0.0, 0
    negative = _magnitude(acc)
    top = _bit_length(acc)  # |sum| = N * 2**-1074, N of top bits
    if top == 0:  # an exact zero: signed as IEEE 754 signs a sum
        mixed = (flags & _MIXED) != 0
        minus = (not mixed and (flags & _NEGATIVE) != 0) or (mixed and round_down)
        return -0.0 if minus else 0.0, 0.0, 0
    sign = -1.0 if negative else 1.0
    if top <= 53:
        return sign * _value(_bits(acc, 0, top), 0), 0.0, 0
    q = top - 53  # the last kept bit of the 53 that h keeps
    m = _bits(acc, q, 53)
    half = _bits(acc, q - 1, 1)
    up = half == 1 and (_any_below(acc, q - 1) or (m & 1) == 1)
    # the rest: N - (m + up) * 2**q, through the digits
    _add(acc, m + (1 if up else 0), q, True)
    m += 1 if up else 0
    if m == np.int64(1) << 53:
        m >>= 1
        q += 1
    # binary64's exponent of h: q - 1074 + 52; past 1023 the pair is scaled down
    s = 0 if q + 52 - 1074 <= 1023 else q - 1074 + 52 - 1020
    h = sign * _value(m, q - s)
    rest_negative = _magnitude(acc) != negative
    width = _bit_length(acc)
    if width == 0:
        return h, 0.0, s
    lo_bit = max(width - 53, 0)
    r = _bits(acc, lo_bit, min(width, 53))
    if lo_bit > 0 and _any_below(acc, lo_bit):
        r |= 1  # to odd
    # r * 2**(lo_bit - 1074 - s): exact in binary64 unless below its subnormals, where
    # the rest is far below half an ulp of h (s > 0 only for |h| >= 2**1020) and only
    # its sign and being nonzero matter: the smallest subnormal keeps both
    e = lo_bit - s
    rest = _value(r, e) if e >= 0 else 5e-324
    return h, -rest if rest_negative else rest, s


#: Columns summed side by side: their accumulators (576 bytes each) stay in the L1 and
#: L2 caches while each row of the tile is one contiguous read.
_TILE = 32


@numba.njit(cache=True, nogil=True)
def exact_span(X: np.ndarray, hi: np.ndarray, lo: np.ndarray, shift: np.ndarray,
               start: int, stop: int, round_down: bool) -> None:
    """The pairs of columns ``start:stop`` of the float64 ``(n, batch)`` array ``X`` (any
    strides) into ``hi``, ``lo`` and ``shift``, :data:`_TILE` columns at a time."""
    n = X.shape[0]
    accs = np.zeros((_TILE, _DIGITS), np.int64)
    flags = np.zeros(_TILE, np.int64)
    for j0 in range(start, stop, _TILE):
        width = min(stop, j0 + _TILE) - j0
        accs[:] = 0
        flags[:] = 0
        for i0 in range(0, n, _SPAN):
            for i in range(i0, min(n, i0 + _SPAN)):
                for t in range(width):
                    flags[t] = _take(accs[t], X[i, j0 + t], flags[t], i == 0)
            for t in range(width):
                _carry(accs[t])
        for t in range(width):
            hi[j0 + t], lo[j0 + t], shift[j0 + t] = _pair(accs[t], flags[t], round_down)


def exact_pairs(X: np.ndarray, round_down: bool) -> tuple[np.ndarray, np.ndarray,
                                                          np.ndarray]:
    """``(h, l, s)`` for each column of the float64 ``(n, batch)`` array ``X``:
    ``(h + l) * 2**s`` is the column's exact sum (see the module docstring);
    ``round_down`` signs an exact zero sum of mixed signs -0.

    Examples
    --------
    >>> hi, lo, shift = exact_pairs(np.array([[1.0, 1e308], [2.0**-60, 1e308],
    ...                                       [2.0**-70, 0.0]]), False)
    >>> hi.tolist(), lo.tolist() == [2.0**-60 + 2.0**-70, 0.0], shift.tolist()
    ([1.0, 1.25e+307], True, [0, 4])
    """
    batch = X.shape[1]
    hi, lo = np.empty(batch), np.empty(batch)
    shift = np.zeros(batch, np.int64)
    spread(lambda start, stop: exact_span(X, hi, lo, shift, start, stop, round_down),
           batch, unit=max(1, X.shape[0]))
    return hi, lo, shift

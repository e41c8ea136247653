"""Scalar rounding of an exact value into any format: the step every kernel shares.

This is :func:`numerics.codec.encode_exact` in integer arithmetic, for values
given either as a float64 pair ``hi + lo`` (:func:`round_pair`) or as an integer
significand with a sticky bit (:func:`round_scaled`), plus the inverse
:func:`decode_one`.  The tests pin every result to the exact reference.

A format is passed to the compiled functions as the int64 array
``P = format_params(fmt)`` (indices ``T``, ``W``, ... below), a rounding mode as
an int from :func:`mode_code` and an overflow rule from :func:`overflow_code`, so
one compiled copy serves every format and mode.

The steps (those of :mod:`numerics.codec`)
------------------------------------------
1. Split the magnitude ``a = M * 2**E`` (``M`` an integer) and find its exponent
   ``e``; the quantum of its binade is ``q = 2**k`` with ``k = max(e, emin) - t``.
2. Drop the ``shift = k - E`` low bits of ``M``: ``kept`` and the remainder ``rem``
   give the truncated magnitude code ``c0 = ((max(e, emin) - emin + s) << t) +
   kept - 2**t`` (``s = 1`` for formats with subnormals), a formula that carries
   into the next binade, so codes stay monotone in the magnitude.
3. The residual ``lo`` (relative to the magnitude: positive means ``|hi + lo| >
   |hi|``) only matters through its sign unless ``rem`` is zero: then the exact
   value lies a hair above ``c0`` or, for a negative residual, just above the code
   below, ``c0 - 1``, whose quantum is half as large at the bottom of a binade.
4. The mode picks the lower neighbour or the next code; overflow is judged on that
   result as if the exponent were unbounded, and the overflow rule decides.

Preconditions
-------------
``round_pair``: ``hi`` is a nearest float64 of ``hi + lo`` (``|lo|`` is at most half
the float64 spacing at ``hi`` on ``lo``'s side), as TwoSum, TwoProd, the exact split
of an int64 and the split of a longdouble give; ``lo`` is ignored when ``hi`` is NaN
or infinite; a zero ``hi`` with a non-zero ``lo`` stands for ``lo``.  The sign of an
exact zero is ``hi``'s.

Stochastic rounding
-------------------
``u`` is an ``ubits``-bit draw (``0 <= u < 2**ubits``, ``1 <= ubits <= 64``).  With
``MODE_SR`` the value rounds away from zero iff ``u < floor(frac * 2**ubits)``,
where ``frac`` in ``[0, 1)`` is the exact distance from the lower neighbour in
quanta: ``encode_exact(..., uniform=u / 2**ubits, sr_bits=ubits)``.  ``MODE_SR_EXACT``
compares with the untruncated fraction, ``u < frac * 2**ubits``:
``encode_exact(..., uniform=u / 2**ubits, sr_bits=None)``.

NaN
---
NaN input gives the format's canonical NaN with the input's sign where NaNs are
signed.  A format without NaN (fp6, fp4) gets code 0 (``+0``, the ``nan="zero"``
policy): a caller that must raise checks ``hi != hi`` itself.

Examples
--------
>>> P = format_params("e4m3fn")
>>> hex(round_pair(464.0, 0.0, P, MODE_RNE, OVERFLOW_IEEE, 0, 1))  # tie: even 448
'0x7e'
>>> hex(round_pair(464.0, 1e-30, P, MODE_RNE, OVERFLOW_IEEE, 0, 1))  # past the tie: NaN
'0x7f'
>>> decode_one(0x7E, P)   # 1.75 * 2**(15 - 7)
448.0
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.formats import Format, NaNEncoding, as_format
from numerics.rounding import check_overflow, check_rounding

__all__ = [
    "BITS",
    "BIAS",
    "EMAX",
    "EMIN",
    "INFMAG",
    "MAGMASK",
    "MAXMAG",
    "MODE_RD",
    "MODE_RNA",
    "MODE_RNE",
    "MODE_RTO",
    "MODE_RTZ",
    "MODE_RU",
    "MODE_SR",
    "MODE_SR_EXACT",
    "NANKIND",
    "NAN_IEEE",
    "NAN_NEGZERO",
    "NAN_NONE",
    "NAN_TOP",
    "NEGZERO",
    "OVERFLOW_IEEE",
    "OVERFLOW_SATURATE",
    "SIGNED",
    "SUBN",
    "T",
    "W",
    "bits_f64",
    "decode_one",
    "f64_bits",
    "float_bits",
    "format_params",
    "lowered_params",
    "nan_code",
    "mode_code",
    "overflow_code",
    "round_pair",
    "round_pair_rest",
    "round_scaled",
]

#: Rounding mode codes (the order of :data:`numerics.rounding.ROUNDINGS`).
MODE_RNE, MODE_RNA, MODE_RTZ, MODE_RU, MODE_RD, MODE_RTO, MODE_SR, MODE_SR_EXACT = range(8)
#: Overflow rule codes.
OVERFLOW_IEEE, OVERFLOW_SATURATE = 0, 1
#: NaN kinds (``P[NANKIND]``).
NAN_NONE, NAN_IEEE, NAN_TOP, NAN_NEGZERO = range(4)

#: Indices into ``format_params(fmt)``.
T = 0  #: trailing significand bits t
W = 1  #: exponent field bits w
BIAS = 2  #: exponent bias
EMIN = 3  #: exponent of the smallest normal value
EMAX = 4  #: exponent of the largest finite value
SUBN = 5  #: 1 if exponent field 0 holds zero and subnormals
SIGNED = 6  #: 1 if there is a sign bit
BITS = 7  #: width of a code
MAXMAG = 8  #: magnitude code of the largest finite value
INFMAG = 9  #: magnitude code of infinity, -1 without infinities
NANKIND = 10  #: NAN_NONE, NAN_IEEE, NAN_TOP or NAN_NEGZERO
NEGZERO = 11  #: 1 if -0 has its own code
MAGMASK = 12  #: all bits of a code but the sign
_NPARAMS = 13

_MODES = {"rne": MODE_RNE, "rna": MODE_RNA, "rtz": MODE_RTZ, "ru": MODE_RU, "rd": MODE_RD,
          "rto": MODE_RTO, "sr": MODE_SR}
_NAN_KINDS = {NaNEncoding.NONE: NAN_NONE, NaNEncoding.IEEE: NAN_IEEE,
              NaNEncoding.TOP: NAN_TOP, NaNEncoding.NEGATIVE_ZERO: NAN_NEGZERO}


@lru_cache(maxsize=256)
def _params(fmt: Format) -> np.ndarray:
    p = np.zeros(_NPARAMS, np.int64)
    p[T], p[W], p[BIAS] = fmt.trailing_bits, fmt.exponent_bits, fmt.bias
    p[EMIN], p[EMAX] = fmt.emin, fmt.emax
    p[SUBN], p[SIGNED], p[BITS] = int(fmt.subnormals), int(fmt.signed), fmt.bits
    p[MAXMAG] = fmt.max_finite_code
    p[INFMAG] = -1 if fmt.code_of_inf is None else fmt.code_of_inf
    p[NANKIND] = _NAN_KINDS[fmt.nan]
    p[NEGZERO] = int(fmt.has_negative_zero)
    p[MAGMASK] = fmt.magnitude_mask
    p.setflags(write=False)
    return p


def format_params(fmt: Format | str) -> np.ndarray:
    """The read-only int64 parameter array of ``fmt`` (cached per format).

    Examples
    --------
    >>> P = format_params("bfloat16")
    >>> int(P[T]), int(P[EMIN]), int(P[EMAX]), hex(int(P[MAXMAG]))
    (7, -126, 127, '0x7f7f')
    """
    hit = _BY_ID.get(id(fmt))
    if hit is not None and hit[0] is fmt:
        return hit[1]
    P = _params(as_format(fmt))
    if len(_BY_ID) > 1024:
        _BY_ID.clear()
    _BY_ID[id(fmt)] = (fmt, P)
    return P


#: format_params by the identity of its argument (a name or a Format): hashing a
#: Format costs microseconds, more than a scalar kernel call.
_BY_ID: dict[int, tuple[Any, np.ndarray]] = {}


def mode_code(rounding: str) -> int:
    """The int code of a rounding mode name ("sr" is ``MODE_SR``).

    Examples
    --------
    >>> mode_code("rne"), mode_code("sr")
    (0, 6)
    """
    try:
        return _MODES[rounding]
    except (KeyError, TypeError):
        check_rounding(rounding)
        raise  # pragma: no cover (check_rounding raised)


def overflow_code(overflow: str) -> int:
    """The int code of an overflow rule name.

    Examples
    --------
    >>> overflow_code("ieee"), overflow_code("saturate")
    (0, 1)
    """
    if overflow == "ieee":
        return OVERFLOW_IEEE
    if overflow == "saturate":
        return OVERFLOW_SATURATE
    check_overflow(overflow)
    raise AssertionError  # pragma: no cover


_U64 = np.uint64
#: A machine integer inside compiled code (Python int, numpy int64 or uint64).
Int = Any


@intrinsic
def f64_bits(typingctx: object, x: types.Type) -> tuple[Any, Any]:
    """The bits of a float64 as a uint64 (a register move, no allocation)."""
    sig = types.uint64(types.float64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(types.uint64))

    return sig, codegen


@intrinsic
def bits_f64(typingctx: object, x: types.Type) -> tuple[Any, Any]:
    """The float64 whose bits are the uint64 ``x``."""
    sig = types.float64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


@intrinsic
def float_bits(typingctx: object, x: types.Type) -> tuple[Any, Any] | None:
    """The bits of a float32 or float64 as a uint64 (zero-extended for float32)."""
    if x == types.float64:
        sig = types.uint64(types.float64)

        def codegen64(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.bitcast(args[0], context.get_value_type(types.uint64))

        return sig, codegen64
    if x == types.float32:
        sig = types.uint64(types.float32)

        def codegen32(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            word = builder.bitcast(args[0], context.get_value_type(types.uint32))
            return builder.zext(word, context.get_value_type(types.uint64))

        return sig, codegen32
    return None


_MASK52 = np.uint64((1 << 52) - 1)
_ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _shr(x: Int, d: Int) -> Int:
    """``x >> d`` for any ``d >= 0`` (0 from 64 on)."""
    if d >= 64:
        return _U64(0)
    return x >> _U64(d)


@numba.njit(cache=True, nogil=True)
def _low(x: Int, d: Int) -> Int:
    """The ``d`` low bits of ``x`` for any ``d >= 0``."""
    if d >= 64:
        return x
    return x & ((_U64(1) << _U64(d)) - _U64(1))


@numba.njit(cache=True, nogil=True)
def _bit_length(x: Int) -> Int:
    n = 0
    for step in (32, 16, 8, 4, 2, 1):
        if x >> _U64(step) != _U64(0):
            x = x >> _U64(step)
            n += step
    return n + (1 if x != _U64(0) else 0)


@numba.njit(cache=True, nogil=True)
def _sign_bit(P: Any, negative: bool) -> Int:
    if negative and P[SIGNED] != 0:
        return _U64(1) << _U64(P[BITS] - 1)
    return _U64(0)


@numba.njit(cache=True, nogil=True)
def nan_code(P: Any, negative: bool) -> Int:
    """Canonical NaN code with the sign kept where NaNs are signed; 0 without NaN."""
    kind = P[NANKIND]
    if kind == NAN_IEEE:
        t = P[T]
        quiet = (_U64(1) << _U64(t - 1)) if t > 0 else _U64(0)
        inf = _U64(((1 << P[W]) - 1)) << _U64(t)
        return _sign_bit(P, negative) | inf | quiet
    if kind == NAN_TOP:
        return _sign_bit(P, negative) | _U64(P[MAGMASK])
    if kind == NAN_NEGZERO:
        return _U64(1) << _U64(P[BITS] - 1)
    return _U64(0)


@numba.njit(cache=True, nogil=True)
def _beyond_max(P: Any, negative: bool, to_max: bool) -> Int:
    """A result beyond ``max``: ``+-max`` when ``to_max``, else inf, else NaN, else max."""
    if not to_max and P[INFMAG] >= 0:
        return _sign_bit(P, negative) | _U64(P[INFMAG])
    if not to_max and P[NANKIND] != NAN_NONE:
        return nan_code(P, negative)
    return _sign_bit(P, negative) | _U64(P[MAXMAG])


@numba.njit(cache=True, nogil=True)
def _zero(P: Any, negative: bool) -> Int:
    if P[NEGZERO] != 0:
        return _sign_bit(P, negative)
    return _U64(0)


@numba.njit(cache=True, nogil=True)
def _toward_zero(mode: Int, negative: bool) -> bool:
    return (mode == MODE_RTZ or mode == MODE_RTO or (mode == MODE_RD and not negative)
            or (mode == MODE_RU and negative))


@numba.njit(cache=True, nogil=True)
def _scaled_floor(l_abs: float, p: Int) -> tuple[np.uint64, bool]:
    """``(floor(l_abs * 2**p), whether that product is an integer)`` for a float64
    ``l_abs >= 0`` whose product is below ``2**64``."""
    if l_abs == 0.0:
        return _U64(0), True
    bits: Any = f64_bits(l_abs)  # type: ignore[call-arg]
    ef = np.int64(bits >> _U64(52))
    m = bits & _MASK52
    if ef > 0:
        m |= _U64(1) << _U64(52)
    e = max(ef, 1) - 1075 + p  # l_abs * 2**p = m * 2**e
    if e >= 0:
        return m << _U64(e), True
    return _shr(m, -e), _low(m, -e) == _U64(0)


@numba.njit(cache=True, nogil=True)
def _round_magnitude(negative: bool, M: Int, E: Int, ls: Int, l_abs: float,
                     l_known: bool, P: Any, mode: Int, overflow: Int,
                     u: Int, ubits: Int, rest: Int = 0) -> Int:
    """Code of ``(M * 2**E + l) * (-1 if negative else 1)`` for ``M >= 1``, where the
    residual ``l`` has sign ``ls`` and, when ``l_known``, size ``l_abs``; else it is an
    infinitesimal (a sticky bit).  ``rest`` (with ``l_known`` and ``l_abs > 0``) is the
    sign, toward the magnitude, of an infinitesimal beyond ``l``: the exact magnitude
    is ``M * 2**E + ls * l_abs + rest * eps``."""
    # |l| + lr * eps is the residual's exact size (lr: rest seen from |l|)
    lr = rest if ls > 0 else -rest
    t = P[T]
    emin = P[EMIN]
    ea = E + _bit_length(M) - 1  # exponent of M * 2**E
    saturate = overflow == OVERFLOW_SATURATE
    if ea > P[EMAX] + 1:  # rounds to at least 2**ea > max as if the exponent were unbounded
        return _beyond_max(P, negative, saturate or _toward_zero(mode, negative))
    b = max(ea, emin)
    k = b - t  # quantum exponent
    shift = k - E
    if shift <= 0:
        kept = M << _U64(-shift)
        rem = _U64(0)
    else:
        kept = _shr(M, shift)
        rem = _low(M, shift)
    subn = P[SUBN]
    c0 = ((b - emin + subn) << t) + np.int64(kept) - (1 << t)
    if subn == 0 and (c0 < 0 or (c0 == 0 and rem == _U64(0) and ls < 0)):
        return _sign_bit(P, negative)  # below the smallest value of a format without zero

    if rem == _U64(0) and ls == 0:
        mag = c0
    else:
        below = rem == _U64(0) and ls < 0  # the value lies just under code c0
        lower = c0 - 1 if below else c0
        # k2: quantum exponent of the interval [lower, lower + 1] holding the value
        k2 = k - 1 if (below and kept == (_U64(1) << _U64(t)) and b > emin) else k
        if mode == MODE_RTZ:
            up = False
        elif mode == MODE_RU or mode == MODE_RD:
            up = (mode == MODE_RU) != negative
        elif mode == MODE_RTO:
            up = (lower & 1) == 0
        elif mode == MODE_RNE or mode == MODE_RNA:
            # cmp: sign of (distance from lower) - (half the interval)
            if rem != _U64(0):
                if shift > 64:
                    cmp = -1
                else:
                    half = _U64(1) << _U64(shift - 1)
                    cmp = 1 if rem > half else (-1 if rem < half else ls)
            else:
                # the distance from c0 is |l|: compare it with half the interval
                if not l_known:
                    dist_cmp = -1
                elif k2 - 1 < -1074:
                    dist_cmp = 1
                else:
                    h = math.ldexp(1.0, k2 - 1)
                    dist_cmp = 1 if l_abs > h else (-1 if l_abs < h else lr)
                cmp = -dist_cmp if below else dist_cmp
            if cmp != 0:
                up = cmp > 0
            else:
                up = mode == MODE_RNA or (lower & 1) == 1
        else:  # stochastic: F = floor(frac * 2**ubits), sticky = frac * 2**ubits inexact
            if below:
                if l_known:
                    f, whole = _scaled_floor(l_abs, ubits - k2)
                else:
                    f, whole = _U64(0), False
                # ceil(|l| * 2**(ubits - k2)), |l| exact: one more past a whole f
                ceil = f + (_U64(0) if whole and lr <= 0 else _U64(1))
                F = (_ALL64 >> _U64(64 - ubits)) - ceil + _U64(1)
                sticky = not whole or lr != 0
            else:
                s = ubits - shift
                if s >= 0:
                    base = rem << _U64(s)
                    if l_known:
                        f, whole = _scaled_floor(l_abs, s - E)
                    else:
                        f, whole = _U64(0), ls == 0
                    if ls > 0:  # floor(|l| * 2**(s - E)), |l| exact: one less short of f
                        F = base + f - (_U64(1) if whole and lr < 0 else _U64(0))
                    elif ls < 0:  # base minus the ceiling of it: one more past f
                        F = base - f - (_U64(0) if whole and lr <= 0 else _U64(1))
                    else:
                        F = base
                    sticky = not whole or lr != 0
                else:
                    d = -s
                    F = _shr(rem, d)
                    r = _low(rem, d)
                    if r == _U64(0) and ls < 0:
                        F -= _U64(1)
                    sticky = r != _U64(0) or ls != 0
            up = u < F or (mode == MODE_SR_EXACT and u == F and sticky)
        mag = lower + (1 if up else 0)

    if mag > P[MAXMAG]:
        return _beyond_max(P, negative, saturate or _toward_zero(mode, negative))
    if mag == 0 and subn != 0:  # without subnormals, magnitude code 0 is 2**emin
        return _zero(P, negative)
    return _sign_bit(P, negative) | _U64(mag)


@numba.njit(cache=True, nogil=True)
def _unpack(P: Any) -> tuple[int, ...]:
    """The parameters as a tuple: passed by value, so calls in a loop cost no reference
    counting (an array argument costs two atomic operations per call)."""
    return (P[0], P[1], P[2], P[3], P[4], P[5], P[6], P[7], P[8], P[9], P[10], P[11], P[12])


@numba.njit(cache=True, nogil=True)
def round_pair(hi: float, lo: float, P: Any, mode: Int, overflow: Int,
               u: Int, ubits: Int) -> Int:
    """Code of the exact value ``hi + lo`` rounded once into the format ``P``.

    See the module docstring for the preconditions on the pair, stochastic
    rounding (``u``, ``ubits``; ignored by the other modes) and NaN.
    """
    return round_pair_rest(hi, lo, 0, P, mode, overflow, u, ubits)


@numba.njit(cache=True, nogil=True)
def round_pair_rest(hi: float, lo: float, rest: Int, P: Any, mode: Int, overflow: Int,
                    u: Int, ubits: Int) -> Int:
    """Code of the exact value ``hi + lo + rest * eps`` (``rest`` -1, 0 or 1, ``eps``
    an infinitesimal) rounded once into the format ``P``: :func:`round_pair` of a
    value that a float64 pair approximates, whose residual ``lo`` is itself rounded
    (``lo`` the nearest float64 to the exact residual, ``rest`` the sign of what is
    left).  Stochastic rounding's fraction is then exact: every point where
    ``floor(frac * 2**ubits)`` steps is a float64 number (a multiple of ``2**-ubits``
    quanta, at most 53 significant bits, in range: the caller's to ensure), so it lies
    strictly between the exact residual and its nearest float64 ``lo`` only if it is
    ``lo`` itself, where ``rest`` decides.  (A residual given only by its sign is
    ``lo = 0`` with ``rest``, or a :func:`round_pair` nudge.)

    Examples
    --------
    >>> import numpy as np
    >>> P = format_params("binary16")  # 1 + 2**-11 + r eps: half a quantum of 2**-10
    >>> u = np.uint64(2**63 - 1)  # up iff u < floor(frac * 2**64), just below half
    >>> [hex(round_pair_rest(1.0, 2.0**-11, r, P, MODE_SR, OVERFLOW_IEEE, u, 64))
    ...  for r in (-1, 0, 1)]
    ['0x3c00', '0x3c01', '0x3c01']
    >>> u = np.uint64(2**63)  # up iff u < frac * 2**64: only past half a quantum
    >>> [hex(round_pair_rest(1.0, 2.0**-11, r, P, MODE_SR_EXACT, OVERFLOW_IEEE, u, 64))
    ...  for r in (-1, 0, 1)]
    ['0x3c00', '0x3c00', '0x3c01']
    """
    Q = _unpack(P)
    bits: Any = f64_bits(hi)  # type: ignore[call-arg]
    if (bits & _U64(0x7FFFFFFFFFFFFFFF)) == _U64(0) and lo != 0.0:
        # (rest stays an infinitesimal: beside lo as hi it is a sticky residual)
        hi, lo = lo, 0.0
        bits = f64_bits(hi)
    negative = (bits >> _U64(63)) != _U64(0)
    ef = np.int64((bits >> _U64(52)) & _U64(0x7FF))
    m = bits & _MASK52
    if ef == 0x7FF and m != _U64(0):
        return nan_code(Q, negative)
    if Q[SIGNED] == 0 and (negative or (ef == 0 and m == _U64(0))):
        return nan_code(Q, False)  # e8m0fnu: no zero, no negative numbers
    if ef == 0x7FF:  # an infinity is exact, not a rounding overflow
        return _beyond_max(Q, negative, overflow == OVERFLOW_SATURATE)
    if ef == 0 and m == _U64(0):
        return _zero(Q, negative)
    if ef > 0:
        m |= _U64(1) << _U64(52)
    E = max(ef, 1) - 1075
    rest_m = -rest if negative else rest  # toward the magnitude
    if lo == 0.0:  # a residual known by its sign alone, if any
        return _round_magnitude(negative, m, E, rest_m, 0.0, rest == 0, Q, mode, overflow,
                                u, ubits)
    ls = 1 if (lo > 0.0) != negative else -1
    return _round_magnitude(negative, m, E, ls, abs(lo), True, Q, mode, overflow, u, ubits,
                            rest_m)


@numba.njit(cache=True, nogil=True)
def lowered_params(P: Any, k: Int) -> tuple[int, ...]:
    """``P`` with its exponent range moved down by ``k``: ``round_pair(hi, lo,
    lowered_params(P, k), ...)`` is the code of ``(hi + lo) * 2**k`` in ``P``, for a
    pair whose scaled value binary64 cannot hold.

    The rounding decides on codes, which do not move; only the exponents the value
    is compared with (``EMIN``, ``EMAX``, and ``BIAS`` for consistency) do.
    """
    return (P[T], P[W], P[BIAS] + k, P[EMIN] - k, P[EMAX] - k, P[SUBN], P[SIGNED], P[BITS],
            P[MAXMAG], P[INFMAG], P[NANKIND], P[NEGZERO], P[MAGMASK])


@numba.njit(cache=True, nogil=True)
def round_scaled(negative: bool, sig: Int, exp: Int, sticky: bool, P: Any,
                 mode: Int, overflow: Int, u: Int,
                 ubits: Int) -> Int:
    """Code of ``(-1)**negative * (sig + eps) * 2**exp`` rounded once into ``P``.

    ``eps`` is 0 when ``sticky`` is False and lies strictly in ``(0, 1)`` when it is
    True (``sig >= 1`` then).  The result is exact when ``sig`` carries at least one
    bit below the target quantum (round to nearest) and at least ``ubits`` bits below
    it (stochastic rounding; fewer bits read ``eps`` as an infinitesimal); the
    directed modes need no extra bits.  ``sig == 0`` without ``sticky`` is a zero
    with the given sign.
    """
    Q = _unpack(P)
    if Q[SIGNED] == 0 and (negative or (sig == _U64(0) and not sticky)):
        return nan_code(Q, False)
    if sig == _U64(0):
        return _zero(Q, negative)
    return _round_magnitude(negative, np.uint64(sig), np.int64(exp), 1 if sticky else 0, 0.0,
                            False, Q, mode, overflow, u, ubits)


@numba.njit(cache=True, nogil=True)
def decode_one(code: Int, P: Any) -> float:
    """The float64 value of one code of the format ``P``.

    A NaN code gives a quiet NaN: in formats with IEEE NaNs it keeps the code's sign
    and trailing field (at the top of binary64's, quiet bit set, as hardware widening
    does); other formats' NaN codes give the default NaN ``0x7FF8000000000000``.
    """
    Q = _unpack(P)
    code = np.uint64(code)
    t = Q[T]
    bits = Q[BITS]
    negative = Q[SIGNED] != 0 and ((code >> _U64(bits - 1)) & _U64(1)) != _U64(0)
    mag = code & _U64(Q[MAGMASK])
    field_e = np.int64(mag >> _U64(t))
    trailing = mag & ((_U64(1) << _U64(t)) - _U64(1))
    kind = Q[NANKIND]
    sign = -1.0 if negative else 1.0
    if kind == NAN_NEGZERO and negative and mag == _U64(0):
        return bits_f64(_U64(0x7FF8000000000000))  # type: ignore[call-arg]
    if kind == NAN_TOP and mag == _U64(Q[MAGMASK]):
        return bits_f64(_U64(0x7FF8000000000000))  # type: ignore[call-arg]
    if Q[INFMAG] >= 0 and kind != NAN_IEEE and mag == _U64(Q[INFMAG]):
        return sign * np.inf
    if kind == NAN_IEEE and field_e == (1 << Q[W]) - 1:
        if trailing == _U64(0):
            return sign * np.inf
        payload = (trailing << _U64(52 - t)) | (_U64(1) << _U64(51))
        top = (_U64(1) << _U64(63)) if negative else _U64(0)
        return bits_f64(top | _U64(0x7FF0000000000000) | payload)  # type: ignore[call-arg]
    if Q[SUBN] != 0 and field_e == 0:
        return sign * math.ldexp(float(trailing), Q[EMIN] - t)
    return sign * math.ldexp(float(trailing | (_U64(1) << _U64(t))), field_e - Q[BIAS] - t)

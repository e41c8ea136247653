"""``ulp``, ``next_up``, ``next_down`` and ``ulp_distance`` of float arrays in one pass.

The definitions are those of :mod:`numerics.ulp` (its module docstring); these loops
compute them element by element in float64 arithmetic that is exact, with the same
bits as the float64 formulas there (NaN signs included), so the tests pin them to
those formulas, to the sorted line of every value of each format up to 16 bits and
to numpy's ``nextafter`` / ``spacing``.

A format is passed as the float64 array ``Q`` of :func:`ulp_params` (indices below;
:func:`format_ulp_params` builds it from a Format).

Each loop is a compiled ``*_span`` function, serial over the index range
``[start, stop)``; :func:`ulp` and :func:`next_value` run it over the whole array with
:func:`numerics.kernels.spread.spread` (one contiguous piece per thread, boundaries
on multiples of :data:`CHUNK`).  Every element's result depends only on that
element, so every thread count gives the same bits.

The quantum of the binade of a finite ``a >= 0`` is ``2**k`` with
``k = max(e, emin) - t``, where ``e = floor(log2 a)`` (:func:`_exponent_frac`: the
unbiased exponent field of ``a``'s float64 bits, or, for a float64 subnormal, that of
``a * 2**52`` less 52, since a format's ``emin`` may lie below -1022; ``-1075`` for
zero, below every format's ``emin``, so it gets the subnormal quantum).  ``k`` lies in
``[-1074, 1023]`` for every format (all lie inside binary64), so ``2**k`` is built
from its bits: a normal float64 for ``k >= -1022``, a subnormal one below.

Examples
--------
>>> import numpy as np
>>> Q = ulp_params(1, 7, -126, 3.3895313892515355e+38, True, True, True, True)
>>> out = np.empty(3)
>>> ulp(np.array([1.0, 0.0, np.inf]), out, Q)
>>> out.tolist() == [2.0**-7, 2.0**-133, np.inf]
True
>>> next_value(np.array([1.0, -0.0]), out[:2], Q, 1), out[:2].tolist()
(0, [1.0078125, 9.183549615799121e-41])
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
from numba import types
from numba.extending import overload

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.lanes import bits_of_f32, f32_of_bits
from numerics.kernels.rounding import bits_f64, f64_bits
from numerics.kernels.specialise import specialised
from numerics.kernels.spread import serial, spread

if TYPE_CHECKING:
    from numerics.formats import Format

__all__ = [
    "CHUNK",
    "distance",
    "distance_span",
    "first_unrepresentable",
    "first_unrepresentable_span",
    "format_ulp_params",
    "next_scalar",
    "next_span",
    "next_value",
    "ulp",
    "ulp_params",
    "ulp_span",
]

#: The pieces of a threaded call start on multiples of this many elements.
CHUNK = 1 << 16

# Indices into the parameter array.
EMIN, T, MAX, SUBNORMAL, NORMAL, SIGNED, HAS_NAN, HAS_INF, NEGZERO, BEYOND, ZERO = range(11)

_U64 = np.uint64
_U32 = np.uint32
_JIT: Any = {"cache": True, "nogil": True}
_ABS = _U64(0x7FFFFFFFFFFFFFFF)
_SIGN = _U64(0x8000000000000000)
_INF_BITS = _U64(0x7FF0000000000000)
_FRAC = _U64(0x000FFFFFFFFFFFFF)
#: numpy's ``np.nan`` (positive, quiet, no payload): the NaN these functions return.
_NAN_BITS = _U64(0x7FF8000000000000)


def ulp_params(signed: int, t: int, emin: int, max_value: float, has_nan: bool,
               has_inf: bool, negzero: bool, subnormals: bool) -> np.ndarray:
    """The parameter array of a format with these properties (see :mod:`numerics.ulp`):
    sign bit, trailing bits, smallest normal exponent, largest finite value, whether
    it has NaN, infinities, -0 and subnormals (without them there is no zero either:
    exponent field 0 is an ordinary binade, and no magnitude lies below ``2**emin``).

    Examples
    --------
    >>> ulp_params(1, 3, -6, 448.0, True, False, True, True)[:3].tolist()
    [-6.0, 3.0, 448.0]
    """
    Q = np.zeros(11, np.float64)
    Q[EMIN], Q[T], Q[MAX] = emin, t, max_value
    Q[SUBNORMAL] = 2.0 ** (emin - t) if subnormals and t > 0 else 2.0**emin
    Q[NORMAL] = 2.0**emin
    Q[SIGNED], Q[HAS_NAN], Q[HAS_INF], Q[NEGZERO] = signed, has_nan, has_inf, negzero
    Q[BEYOND] = math.inf if has_inf else math.nan
    Q[ZERO] = subnormals
    return Q


@lru_cache(maxsize=256)
def format_ulp_params(fmt: Format) -> np.ndarray:
    """:func:`ulp_params` of a :class:`numerics.formats.Format`, cached (callers must
    not write to it; it stays writeable so the kernels compile for one array type).

    Examples
    --------
    >>> from numerics.formats import get_format
    >>> format_ulp_params(get_format("e4m3fn"))[:3].tolist()
    [-6.0, 3.0, 448.0]
    """
    Q = ulp_params(1 if fmt.signed else 0, fmt.trailing_bits, fmt.emin, fmt.max,
                   fmt.has_nan, fmt.has_infinity, fmt.has_negative_zero, fmt.subnormals)
    return Q


#: 2**52, which makes a float64 subnormal normal (exactly).
_TWO52 = 2.0**52


@numba.njit(cache=True, nogil=True)
def _exponent_frac(b: Any) -> tuple[Any, Any]:
    """``(e, f)`` of the finite float64 ``a >= 0`` with bits ``b``: ``e = floor(log2 a)``
    and ``f`` the 52 bits below its leading one, so ``a = (2**52 + f) 2**(e - 52)``.  A
    float64 subnormal is read from ``a * 2**52`` (exact, and normal); zero gives
    ``(-1075, 0)``."""
    field = np.int64(b >> _U64(52))
    scaled: Any = f64_bits(bits_f64(b) * _TWO52)  # type: ignore[call-arg]
    e = field - 1023 if field != 0 else np.int64(scaled >> _U64(52)) - 1075
    f = (b if field != 0 else scaled) & _FRAC
    return e, f


@numba.njit(cache=True, nogil=True)
def _power(k: int, narrow: bool) -> float:
    """``2**k`` for ``-1074 <= k <= 1023``, built from its bits (``narrow``, a literal:
    ``k >= -1022``, a normal float64)."""
    normal = _U64(k + 1023) << _U64(52)
    if narrow:
        return bits_f64(normal)  # type: ignore[call-arg]
    sub = _U64(1) << _U64(min(k + 1074, 63))
    return bits_f64(normal if k >= -1022 else sub)  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True)
def _quantum(b: Any, emin: int, t: int) -> float:
    """``2**(max(e, emin) - t)`` for the bits ``b`` of a finite float64 ``>= 0``."""
    e, _ = _exponent_frac(b)
    return _power(max(e, emin) - t, False)


@numba.njit(cache=True, nogil=True)
def _on_grid(b: Any, emin: int, t: int) -> bool:
    """Whether the finite float64 ``>= 0`` with bits ``b`` is a multiple of its binade's
    quantum ``2**k``.  With the normalized significand ``sig = 2**52 + f`` (an integer;
    0 for zero) and ``a = sig * 2**(e - 52)`` (:func:`_exponent_frac`), that is: the low
    ``k - (e - 52)`` bits of ``sig`` are zero (``k >= e - 52`` always; from 63 on only
    zero qualifies, and a mask of 63 bits says so, as ``sig < 2**53``)."""
    e, f = _exponent_frac(b)
    sig = (f | (_U64(1) << _U64(52))) if b != _U64(0) else _U64(0)
    k = max(e, emin) - t
    d = k - (e - 52)
    return (sig & ((_U64(1) << _U64(min(d, 63))) - _U64(1))) == _U64(0)


@numba.njit(cache=True, nogil=True)
def ulp_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, Q: np.ndarray) -> None:
    """``out[i] = ulp(x[i])`` for ``start <= i < stop`` (float32/float64 ``x``, float64
    ``out``, both flat): the quantum of ``|x[i]|``'s binade; ``inf`` for infinities,
    ``|x[i]|`` (a NaN) for NaN."""
    emin, t = np.int64(Q[EMIN]), np.int64(Q[T])
    xs, os_ = x[start:stop], out[start:stop]
    for i in range(xs.size):
        a = abs(np.float64(xs[i]))
        b: Any = f64_bits(a)  # type: ignore[call-arg]
        finite = b < _INF_BITS
        q = _quantum(b if finite else _U64(0), emin, t)
        os_[i] = q if finite else a


def ulp(x: np.ndarray, out: np.ndarray, Q: np.ndarray) -> None:
    """:func:`ulp_span` of all of ``x`` on the threads."""
    if serial(x.size):
        ulp_span(x, out, 0, x.size, Q)
        return
    spread(lambda lo, hi: ulp_span(x, out, lo, hi, Q), x.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def _representable(v: float, emin: int, t: int, top: float, normal: float, signed: bool,
                   has_nan: bool, has_inf: bool, has_zero: bool) -> bool:
    """Whether the float64 ``v`` is a value of the format (NaN counts where it has NaN;
    -0 counts as zero in a signed format without -0; a format without zero has no
    magnitude below ``normal``)."""
    b: Any = f64_bits(v) & _ABS  # type: ignore[call-arg]
    a = bits_f64(b)
    ok = (b < _INF_BITS) & _on_grid(b, emin, t) & (a <= top) & (has_zero | (a >= normal))
    if not signed:
        ok = ok & (v > 0)
    ok = ok | ((b > _INF_BITS) & has_nan)
    return ok | ((b == _INF_BITS) & has_inf & ((v > 0) | signed))


@numba.njit(cache=True, nogil=True)
def _step_down(af: float, emin: int, t: int) -> float:
    """The next smaller magnitude below the finite ``af > 0`` on the format's grid."""
    b: Any = f64_bits(af)  # type: ignore[call-arg]
    q = _quantum(b, emin, t)
    e, f = _exponent_frac(b)
    power_of_two = (f == _U64(0)) & (e > emin)
    return af - (q * 0.5 if power_of_two else q)


@specialised
def _next_loop(x: np.ndarray, out: np.ndarray, Q: np.ndarray, up: bool, signed: bool,
               narrow: bool) -> int:
    """``next_up`` (``up``) or ``next_down`` of ``x`` into ``out``; returns how many
    elements are not values of the format (their results are meaningless).  ``up``,
    ``signed`` and ``narrow`` (every nonzero value of the format is a normal float64:
    ``-1022 <= emin - t <= 971``) are literals, so each variant compiles to a straight
    loop.

    A narrow format takes each element's binade in float64 operations, shared between
    the test of representability and the step: the quantum is
    ``max(2**e, 2**emin) * 2**-t``, with ``2**e`` the pattern's exponent field alone
    (0 for zero and the float64 subnormals, none of them a nonzero value of such a
    format); from ``2**emin`` on a value of the format has no trailing bit below
    ``52 - t``, and below it a magnitude is a multiple of ``2**(emin - t)`` exactly when
    adding and subtracting ``2**(emin - t + 52)`` (whose quantum that is) gives it
    back.  The format's flags enter as bounds rather than booleans, which LLVM would
    pack and unpack between the 64-bit lanes.  Over 16,000 float32 in cache (AMD EPYC
    Zen 2, one thread) the loop takes 2.1 ns an element, from 2.7 ns with the binade
    read in integers (float64: 1.6 from 2.2)."""
    emin, t = np.int64(Q[EMIN]), np.int64(Q[T])
    top, beyond, normal = Q[MAX], Q[BEYOND], Q[NORMAL]
    has_nan, has_inf, has_zero = Q[HAS_NAN] != 0, Q[HAS_INF] != 0, Q[ZERO] != 0
    nan: Any = bits_f64(_NAN_BITS)  # type: ignore[call-arg]
    bad = 0
    if signed:
        # next_down(x) == -next_up(-x): work on y = direction * x
        tiny_bits, normal_bits = f64_bits(Q[SUBNORMAL]), f64_bits(normal)
        top_neg = f64_bits(top) | _SIGN
        negzero = Q[NEGZERO] != 0
        zero_bits = _SIGN if negzero else _U64(0)
        flip = _U64(0) if up else _SIGN
        # (narrow) 2**emin, 2**-t, the trailing bits below the quantum of a binade from
        # emin on, and the constant whose sum with a smaller magnitude rounds it to a
        # multiple of 2**(emin - t)
        least, shrink = _power(emin, True), _power(-t, True)
        below = (_U64(1) << _U64(52 - t)) - _U64(1)
        c = _power(min(emin - t + 52, 1023), True)
        # the format's flags as bounds, so that no boolean vector mixes with the lanes'
        # masks: the least magnitude of a value (0 with zero), the least NaN pattern
        # and the infinity's (patterns no magnitude reaches without them), the greatest
        # magnitude whose step up from below lands on +normal (none with zero)
        floor = 0.0 if has_zero else normal
        nan_from = _INF_BITS if has_nan else _ABS
        inf_at = _INF_BITS if has_inf else _SIGN
        to_normal = -1.0 if has_zero else normal
        for i in range(x.size):
            v = np.float64(x[i])
            # the magnitude and the sign of y; zero, infinities and NaN are decided
            # below, whatever the arithmetic gives for them
            yb = f64_bits(v) ^ flip
            ab = yb & _ABS
            a = bits_f64(ab)
            if narrow:  # (binade and grid by float64 operations)
                q = max(bits_f64(ab & _INF_BITS), least) * shrink
                off = (ab & below) if a >= least else f64_bits((a + c) - c) ^ ab
                ok = (ab < _INF_BITS) & (off == _U64(0)) & (a <= top) & (a >= floor)
                ok = ok | (ab > nan_from) | (ab == inf_at)
                power_of_two = ((ab & _FRAC) == _U64(0)) & (a > least)
            else:
                ok = _representable(v, emin, t, top, normal, True, has_nan, has_inf, has_zero)
                e, f = _exponent_frac(ab)
                q = _power(max(e, emin) - t, False)
                power_of_two = (f == _U64(0)) & (e > emin)
            bad += 0 if ok else 1
            down = a - (q * 0.5 if power_of_two else q)
            stepped = beyond if a >= top else a + q
            if yb >> _U64(63) == _U64(0):
                rb = _INF_BITS if ab == _INF_BITS else f64_bits(stepped)
            else:
                rb = zero_bits if down == 0 else f64_bits(down) | _SIGN
                # without zero, the step up from -normal is +normal
                rb = normal_bits if a <= to_normal else rb
                rb = top_neg if ab == _INF_BITS else rb
            rb = tiny_bits if ab == _U64(0) else rb
            rb = _NAN_BITS if ab > _INF_BITS else rb
            if not up:
                rb = rb ^ _SIGN
                if not negzero:
                    rb = _U64(0) if rb == _SIGN else rb
            out[i] = bits_f64(rb)
    else:  # unsigned (e8m0fnu): positive values, NaN, perhaps +inf
        inf_step = bits_f64(_INF_BITS) if up else top  # nextUp(+inf), nextDown(+inf)
        for i in range(x.size):
            v = np.float64(x[i])
            bad += 0 if _representable(v, emin, t, top, normal, signed, has_nan, has_inf,
                                       has_zero) else 1
            af = v if f64_bits(abs(v)) < _INF_BITS else 1.0
            if up:
                r = beyond if af >= top else af + _quantum(f64_bits(af), emin, t)
            else:
                r = nan if af <= normal else _step_down(af, emin, t)
            r = inf_step if f64_bits(v) == _INF_BITS else r
            out[i] = nan if v != v else r
    return bad


@numba.njit(cache=True, nogil=True)
def next_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, Q: np.ndarray,
              direction: int) -> int:
    """``next_up`` (``direction > 0``) or ``next_down`` of the flat float32/float64
    ``x[start:stop]`` into the flat float64 ``out[start:stop]``; returns the number of
    those elements that are not values of the format (:func:`first_unrepresentable`
    finds the first)."""
    xs, os_ = x[start:stop], out[start:stop]
    if Q[SIGNED] != 0 and -1022 <= Q[EMIN] - Q[T] <= 971:
        if direction > 0:
            return _next_loop(xs, os_, Q, True, True, True)
        return _next_loop(xs, os_, Q, False, True, True)
    if Q[SIGNED] != 0:
        if direction > 0:
            return _next_loop(xs, os_, Q, True, True, False)
        return _next_loop(xs, os_, Q, False, True, False)
    if direction > 0:
        return _next_loop(xs, os_, Q, True, False, False)
    return _next_loop(xs, os_, Q, False, False, False)


@numba.njit(cache=True, nogil=True)
def next_scalar(v: float, Q: np.ndarray, direction: int) -> tuple[float, bool]:
    """:func:`next_span` of the one float64 ``v``: the result and whether ``v`` is a
    value of the format (one compiled call for a scalar argument)."""
    x = np.empty(1, np.float64)
    out = np.empty(1, np.float64)
    x[0] = v
    bad = next_span(x, out, 0, 1, Q, direction)
    return out[0], bad == 0


def next_value(x: np.ndarray, out: np.ndarray, Q: np.ndarray, direction: int) -> int:
    """:func:`next_span` of all of ``x`` on the threads; returns the number of elements
    that are not values of the format."""
    if serial(x.size):
        return int(next_span(x, out, 0, x.size, Q, direction))
    return sum(spread(lambda lo, hi: next_span(x, out, lo, hi, Q, direction), x.size,
                      align=CHUNK))


@numba.njit(cache=True, nogil=True)
def _count_unrepresentable(xs: np.ndarray, Q: np.ndarray) -> int:
    """How many elements of ``xs`` are not values of the format (a loop without an
    early exit, so it vectorizes); float32 ``xs`` of a format whose values are all
    binary32 numbers in 32-bit lanes (:func:`_representable32`)."""
    emin, t = np.int64(Q[EMIN]), np.int64(Q[T])
    top, normal, signed = Q[MAX], Q[NORMAL], Q[SIGNED] != 0
    has_nan, has_inf, has_zero = Q[HAS_NAN] != 0, Q[HAS_INF] != 0, Q[ZERO] != 0
    bad = 0
    if _binary32(xs) and 0 <= t <= 23 and -126 <= emin <= 127 and emin - t >= -149 \
            and top < 2.0**128:
        # (the test is the same for every element: LLVM keeps two straight loops)
        low = _U32((1 << (23 - t)) - 1)
        normal_bits = bits_of_f32(np.float32(normal))
        c = np.float32(math.ldexp(1.0, emin - t + 23))
        top32, normal32 = np.float32(top), np.float32(normal)
        for i in range(xs.size):
            # (np.float32: types the branch for float64 xs too, where it never runs)
            bad += np.int64(not _representable32(np.float32(xs[i]), low, normal_bits, c,
                                                 top32, normal32, signed, has_nan, has_inf,
                                                 has_zero))
        return bad
    for i in range(xs.size):
        bad += 0 if _representable(np.float64(xs[i]), emin, t, top, normal, signed,
                                   has_nan, has_inf, has_zero) else 1
    return bad


def _binary32(xs):  # type: ignore[no-untyped-def,unused-ignore]
    """Whether ``xs`` holds float32 (a compile-time constant)."""


@overload(_binary32, jit_options=_JIT, inline="always")
def _binary32_impl(xs):  # type: ignore[no-untyped-def,unused-ignore]
    answer = xs.dtype == types.float32
    return lambda xs: answer


@numba.njit(cache=True, nogil=True)
def _representable32(v: Any, low: Any, normal_bits: Any, c: Any, top: Any, normal: Any,
                     signed: bool, has_nan: bool, has_inf: bool, has_zero: bool) -> bool:
    """:func:`_representable` for a binary32 ``v`` and a format whose values are binary32
    numbers, in 32-bit lanes: from ``2**emin`` (bits ``normal_bits``) up, the ``23 - t``
    low bits (``low``) are zero; below, ``|v|`` is a multiple of ``2**(emin - t)``,
    which ``(|v| + c) - c`` with ``c = 2**(emin - t + 23)`` keeps exactly when it is
    (the addition rounds to that quantum, binary32 subnormals included)."""
    b = _U32(bits_of_f32(v) & _U32(0x7FFFFFFF))
    a = f32_of_bits(b)
    above = b >= normal_bits  # (bitwise selects: a branch would keep the loop scalar)
    on_grid = (above & ((b & low) == _U32(0))) | (~above & (((a + c) - c) == a))
    ok = (b < _U32(0x7F800000)) & on_grid & (a <= top) & (has_zero | (a >= normal))
    if not signed:
        ok = ok & (v > 0)
    ok = ok | ((b > _U32(0x7F800000)) & has_nan)
    return ok | ((b == _U32(0x7F800000)) & has_inf & ((v > 0) | signed))


#: first_unrepresentable counts the misfits of blocks of this many elements and looks
#: for the first one only in the first block that has any.
_SCAN = 1 << 12


@numba.njit(cache=True, nogil=True)
def first_unrepresentable_span(x: np.ndarray, Q: np.ndarray, start: int, stop: int) -> int:
    """The flat index of the first element of ``x[start:stop]`` that is not a value of
    the format, or -1."""
    for lo in range(start, stop, _SCAN):
        hi = min(stop, lo + _SCAN)
        if _count_unrepresentable(x[lo:hi], Q) == 0:
            continue
        for i in range(lo, hi):
            if _count_unrepresentable(x[i:i + 1], Q) != 0:
                return i
    return -1


def first_unrepresentable(x: np.ndarray, Q: np.ndarray) -> int:
    """The flat index of the first element of the flat float32/float64 ``x`` that is not
    a value of the format, or -1: :func:`first_unrepresentable_span` on the threads,
    the first hit of the pieces in index order."""
    if serial(x.size):
        return int(first_unrepresentable_span(x, Q, 0, x.size))
    hits = spread(lambda lo, hi: first_unrepresentable_span(x, Q, lo, hi), x.size,
                  align=CHUNK)
    return next((int(h) for h in hits if h >= 0), -1)


# ----------------------------------------------------------------------------- distances
@numba.njit(cache=True, nogil=True)
def _magnitude(v: float, t: int, emin: int, bias: int, inf_mag: Any) -> Any:
    """The magnitude code (uint64) of ``|v|``, a value of the format that is not NaN:
    ``(e + bias) << t`` plus the trailing bits in the normal range, ``|v| / 2**(emin - t)``
    below it, ``inf_mag`` for an infinity; computed from ``|v| = (2**52 + f) 2**(e - 52)``
    (:func:`_exponent_frac`, float64 subnormals included)."""
    b: Any = f64_bits(v) & _ABS  # type: ignore[call-arg]
    e, f = _exponent_frac(b if b < _INF_BITS else _U64(0))
    normal = (_U64(e + bias) << _U64(t)) | (f >> _U64(52 - t))
    sub = (f | _U64(1 << 52)) >> _U64(min(np.int64(63), 52 + emin - t - e))
    mag = normal if e >= emin else sub
    mag = _U64(0) if b == _U64(0) else mag
    return inf_mag if b == _INF_BITS else mag


@numba.njit(cache=True, nogil=True)
def distance_span(xa: np.ndarray, xb: np.ndarray, out: np.ndarray, t: int, emin: int,
                  bias: int, inf_mag: int, signed: bool, has_zero: bool, start: int,
                  stop: int) -> None:
    """``out[i]`` = the number of steps between ``xa[i]`` and ``xb[i]`` (flat float64
    values of the format, no NaN; uint64 ``out``) for ``start <= i < stop``: the
    difference of their magnitude codes on one side of zero, their sum across it (plus
    one in a format without zero, whose ``-2**emin`` and ``+2**emin`` are neighbours).
    Magnitude codes are below ``2**63``, so neither wraps."""
    top = _U64(inf_mag)
    gap = _U64(0) if has_zero else _U64(1)
    for i in range(start, stop):  # (no branch: the loop vectorizes)
        a = xa[i]
        b = xb[i]
        ma = _magnitude(a, t, emin, bias, top)
        mb = _magnitude(b, t, emin, bias, top)
        same = ((a < 0) & signed) == ((b < 0) & signed)
        across = ma + mb + gap
        out[i] = (ma - mb if ma >= mb else mb - ma) if same else across


def distance(xa: np.ndarray, xb: np.ndarray, out: np.ndarray, t: int, emin: int, bias: int,
             inf_mag: int, signed: bool, has_zero: bool) -> None:
    """:func:`distance_span` of all of the flat ``xa``, ``xb`` on the threads."""
    spread(lambda lo, hi: distance_span(xa, xb, out, t, emin, bias, inf_mag, signed,
                                        has_zero, lo, hi), out.size, align=CHUNK)

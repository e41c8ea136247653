"""Encode of float32 / float64 arrays in lane arithmetic: round to nearest-even, the
directed modes, ties away, to odd and stochastic rounding.

The general kernels (:mod:`numerics.kernels.codec`) take any format and mode at
run time and spend a few nanoseconds per element.  Rounding from float32 or
float64 into a format with subnormals and a sign bit — every standard 4- to
16-bit float — needs only a handful of 32-bit lane operations, so this module
does that job in loops LLVM turns into AVX2 code.  The tests pin it to
:func:`numerics.kernels.rounding.round_pair` (hence to
:func:`numerics.codec.encode_exact`) on every class of float32 pattern, and, on all
2**32 float32 patterns (``exhaustive`` tier), to ml_dtypes (nearest-even) and to
the branch-free general kernel (the other modes).

The steps, for the magnitude bits ``a`` of a float32 (23 trailing bits) rounded
to a format with ``t`` trailing bits and smallest normal exponent ``emin``
(``s = 23 - t``):

1. Normal range, ``a >= (emin + 127) << 23``: the format's code is the input's
   bits with ``s`` bits dropped and the exponent rebiased.  Adding
   ``2**(s-1) - 1`` plus the lowest kept bit before the shift rounds to nearest
   with ties to even, and a carry out of the trailing field moves to the next
   binade (or to the infinity code) by itself:
   ``mag = ((a + 2**(s-1) - 1 + ((a >> s) & 1)) >> s) - ((emin + 126) << t)``.
   A format with float32's exponent field (bfloat16, tf32) needs no rebias and
   no step 2: the same shift rounds its subnormals.
2. Subnormal range, ``a < (emin + 127) << 23``: the format's quantum is
   ``2**(emin - t)`` throughout, the spacing of float32 in the binade of
   ``C = 2**(emin - t + 23)``.  As ``|x| < 2**emin <= C / 2``, the float32 sum
   ``|x| + C`` lies in ``[C, 2C]`` and is ``C`` plus ``|x|`` rounded to
   nearest-even to that quantum, so ``bits(|x| + C) - bits(C)`` counts the quanta:
   the subnormal code, reaching ``2**t`` (the smallest normal) when ``|x|``
   rounds up to ``2**emin``.
3. Overflow (a magnitude above the largest finite code), NaN, the sign and
   signed zero follow :func:`numerics.kernels.rounding.round_pair`'s rules.

binary16 takes the processor's conversion (F16C ``vcvtps2ph``, which gives the
codes of steps 1 and 2) where the host has one, with step 3 done on its result
(:func:`_half_loop`); elsewhere it takes the same steps as the other formats.

float64 input takes the same steps on each value's high word with its last bit
set when the low word is not zero: the value rounded to odd at 21 significant
bits, which rounding in a format with at least two fewer significand bits turns
into the correct rounding of the float64 (Boldo and Melquiond, "Emulation of FMA
and correctly rounded sums: proved algorithms using rounding to odd", IEEE Trans.
Computers 57(4), 2008; claims D15 and D15.1 of proofs/double_rounding.md,
:func:`_high_loop` and :func:`_directed_high_loop`).  Other formats take
:func:`_rne64_block`, the same steps in 64-bit lanes, to nearest-even, or the
general kernels.

:func:`fits` says whether a format qualifies; the encoding layer uses the
general kernels otherwise.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.lanes import (
    HAS_F16C,
    bits_of_f32,
    f16_bits_of_f32,
    f32_of_bits,
    f32_of_f16_bits,
    prefetch,
    sar32,
    shl32,
    shr32,
)
from numerics.kernels.random import fill, mix64, slots_log2, words
from numerics.kernels.rounding import (
    BITS,
    EMAX,
    EMIN,
    INFMAG,
    MAGMASK,
    MAXMAG,
    MODE_RD,
    MODE_RNA,
    MODE_RTO,
    MODE_RTZ,
    MODE_RU,
    NAN_IEEE,
    NAN_NEGZERO,
    NAN_NONE,
    NAN_TOP,
    NANKIND,
    NEGZERO,
    SIGNED,
    SUBN,
    T,
    W,
    bits_f64,
    f64_bits,
)
from numerics.kernels.specialise import specialised
from numerics.kernels.spread import serial, spread
from numerics.kernels.stream import map_into, wanted

__all__ = ["CHUNK", "count_nans", "directed", "directed_span", "fits", "fits_high", "fits_one",
           "ieee", "ieee_format", "ieee_span", "odd32_bits", "rne",
           "rne16", "rne16_span", "rne_code", "rne_code_pair", "rne_constants", "rne_span",
           "rne_stream_span",
           "round_rne", "round_rne_span", "sr", "sr_span"]

#: Elements per block (and per parallel work item).
CHUNK = 1 << 16

_U16 = np.uint16
_U32 = np.uint32
_U64 = np.uint64
#: The shapes of the magnitude step (see :func:`_rne32_loop`).
_GENERAL, _SAME_EXPONENT, _BRAIN = 0, 1, 2
_LITTLE = sys.byteorder == "little"
#: The shapes of the nearest-even loop's step 3 (see :func:`_rne32_loop`).
_TAIL_KEEP, _TAIL_CLAMP, _TAIL_CLAMP_NAN, _TAIL_PLUS_ZERO, _TAIL_PLUS_ZERO_NAN = 0, 1, 2, 3, 4


def fits(P: np.ndarray, wide: bool) -> bool:
    """Whether these kernels encode float32 (``wide=False``) or float64 input into the
    format ``P``: signed, with subnormals, ``1 <= t < m`` (``m`` = 23 or 52), a smallest
    normal exponent within the input's normal range, a largest one at most the input's
    (the lanes read the bits of an infinite input as ``2**(emax_input + 1)``, which must
    overflow), codes of at most 32 bits, and, where -0 exists, a code beyond max
    (infinity, NaN or max itself) that is max or max + 1 (:func:`_tail_shape`).

    Examples
    --------
    >>> from numerics.kernels.rounding import format_params
    >>> fits(format_params("e4m3fn"), False), fits(format_params("e8m0fnu"), False)
    (True, False)
    """
    m, bias = (52, 1023) if wide else (23, 127)
    t, emin = int(P[T]), int(P[EMIN])
    return bool(P[SIGNED] == 1 and P[SUBN] == 1 and 1 <= t < m and emin >= 1 - bias
                and int(P[EMAX]) <= bias and emin - t + m + bias >= 1 and int(P[BITS]) <= 32
                and _tail_shape(P, False) >= 0)


def ieee_format(P: np.ndarray) -> int:
    """32 or 64 where the format ``P`` has binary32's or binary64's parameters (whatever
    its name; :func:`ieee_span` encodes into it), else 0.

    Examples
    --------
    >>> from numerics.kernels.rounding import format_params
    >>> ieee_format(format_params("binary32")), ieee_format(format_params("bfloat16"))
    (32, 0)
    """
    for width, w, t in ((32, 8, 23), (64, 11, 52)):
        if (int(P[BITS]), int(P[W]), int(P[T])) == (width, w, t) and int(P[SIGNED]) == 1 \
                and int(P[SUBN]) == 1 and int(P[NEGZERO]) != 0 and int(P[NANKIND]) == NAN_IEEE \
                and int(P[EMIN]) == 2 - (1 << (w - 1)) and int(P[EMAX]) == (1 << (w - 1)) - 1 \
                and int(P[INFMAG]) == ((1 << w) - 1) << t \
                and int(P[MAXMAG]) == (((1 << w) - 1) << t) - 1:
            return width
    return 0


@numba.njit(cache=True, nogil=True)
def _constants(P: Any, saturate: bool) -> tuple[int, int, int, int, bool, bool, int, int]:
    """Loop invariants: the largest finite magnitude code, the code beyond it, the NaN
    code, the trailing bits, whether the code beyond max and the NaN code keep the
    input's sign, whether -0 exists, and ``emin``."""
    t = P[T]
    kind = P[NANKIND]
    sign_bit = 1 << (P[BITS] - 1)
    nan_mag = 0
    if kind == NAN_IEEE:
        nan_mag = (((1 << P[W]) - 1) << t) | (1 << (t - 1))
    elif kind == NAN_TOP:
        nan_mag = P[MAGMASK]
    nan_code = nan_mag | (sign_bit if kind == NAN_NEGZERO else 0)
    nan_signed = kind == NAN_IEEE or kind == NAN_TOP
    if saturate:
        big, big_signed = P[MAXMAG], True
    elif P[INFMAG] >= 0:
        big, big_signed = P[INFMAG], True
    elif kind != NAN_NONE:
        big, big_signed = nan_code, nan_signed
    else:
        big, big_signed = P[MAXMAG], True
    return (P[MAXMAG], big, nan_code, t, big_signed, nan_signed,
            1 if P[NEGZERO] != 0 else 0, P[EMIN])


@numba.njit(cache=True, nogil=True, inline="always")
def _odd32(v: float) -> np.uint32:
    """The float32 bits of the float64 ``v`` rounded to odd: ``v`` itself when it is a
    float32, else the float32 next toward zero with its last bit set (beyond float32's
    range: its largest finite value, which is odd).  NaN stays NaN."""
    f = np.float32(v)
    back = np.float64(f)
    b = bits_of_f32(f)
    # a NaN compares unequal and not greater: its last bit is set, and it stays a NaN
    b = _U32(b - (_U32(1) if abs(back) > abs(v) else _U32(0)))
    return _U32(b | (_U32(1) if back != v else _U32(0)))


@numba.njit(cache=True, nogil=True, inline="always")
def odd32_bits(v: float) -> Any:
    """The float32 bits of the float64 ``v`` rounded to odd (:func:`_odd32`: ``v`` itself
    when it is a float32), for kernels that round a float64 once more into a format
    claim D6 covers."""
    return _odd32(v)


@numba.njit(cache=True, nogil=True, inline="always")
def _tail_constants(P: Any, saturate: bool) -> tuple[Any, ...]:
    """The loop invariants of :func:`_finish` as 32-bit lane values."""
    maxmag, big, nan_code, t, big_signed, nan_signed, negzero, emin = _constants(
        P, saturate)
    return (np.int32(maxmag), _U32(big), _U32(nan_code), _U32(P[BITS] - 1),
            _U32(32 - P[BITS]), _U32(1 if big_signed else 0), _U32(1 if nan_signed else 0),
            _U32(negzero), _U32(0xFFFFFFFF if nan_signed else 0))


@numba.njit(cache=True, nogil=True, inline="always")
def _signed(b: Any, is_nan: bool, code: Any, K: tuple[Any, ...]) -> Any:
    """The magnitude ``code`` with the sign bit of the float32 pattern ``b`` copied in,
    or the NaN code (signed only where the format's NaN is) when ``is_nan``: step 3 for
    a format with -0."""
    sign = shr32(_U32(b & _U32(0x80000000)), K[4])
    if is_nan:
        code, sign = K[2], _U32(sign & K[8])
    return _U32(code | sign)


@numba.njit(cache=True, nogil=True, inline="always")
def _signed_nonzero(b: Any, is_nan: bool, code: Any, K: tuple[Any, ...]) -> Any:
    """As :func:`_signed` for a format without -0: a zero ``code`` stays +0."""
    sign = shr32(_U32(b & _U32(0x80000000)), K[4])
    if is_nan:
        code, sign = K[2], _U32(sign & K[8])
    return _U32(code | (sign if code != _U32(0) else _U32(0)))


@numba.njit(cache=True, nogil=True, inline="always")
def _finish(b: Any, is_nan: bool, mag: Any, K: tuple[Any, ...], to_max: Any,
            simple: bool) -> Any:
    """Step 3: the code of the float32 pattern ``b`` whose magnitude rounded to magnitude
    code ``mag`` (as if the exponent were unbounded): overflow, NaN, sign and signed zero.
    A magnitude beyond the largest finite one becomes the code beyond max
    (:func:`_constants`: the largest one when saturating), or the largest one when
    ``to_max`` is 1 (a directed mode that rounds it toward zero; 0 for the nearest
    modes).  ``simple`` (a literal) says that -0 exists (see :func:`_rne32_loop`)."""
    maxmag32, big32, nan32, top, sign_shift, keep_big, keep_nan, keep_zero, keep_sign = K
    over = np.int32(mag) > maxmag32
    code = (_U32(maxmag32) if to_max != _U32(0) else big32) if over else mag
    if simple:
        return _signed(b, is_nan, code, K)
    keep = _U32(to_max | keep_big) if over else (_U32(1) if mag != _U32(0) else keep_zero)
    if is_nan:
        code, keep = nan32, keep_nan
    return _U32(code | shl32(_U32(shr32(b, _U32(31)) & keep), top))


@numba.njit(cache=True, nogil=True, inline="always")
def _step1_constants(t: int, emin: int, m: int, bias: int) -> tuple[Any, Any, Any]:
    """Step 1's constants for the magnitude bits of a pattern with ``m`` trailing bits
    and exponent bias ``bias`` (a float32's, or a float64's high word): the shift
    ``m - t``, the nearest-even bias ``2**(m - t - 1) - 1`` less the rebias
    ``(emin + bias - 1) << m`` (modulo 2**32), and the bits of ``2**emin``."""
    eminb = emin + bias
    round_bias = _U32((1 << (m - 1 - t)) - 1)
    return (_U32(m - t), _U32(round_bias - _U32((eminb - 1) << m)),
            np.int32(eminb << m))


@numba.njit(cache=True, nogil=True, inline="always")
def _step3(b: Any, is_nan: bool, mag: Any, K: tuple[Any, ...], tail: int) -> Any:
    """Step 3 of the nearest-even loops on the magnitude code ``mag`` of the pattern
    ``b`` (its sign bit at bit 31), in the shape ``tail`` (a literal; see
    :func:`_rne32_loop`)."""
    if tail == _TAIL_KEEP:
        return _finish(b, is_nan, mag, K, _U32(0), False)
    if tail == _TAIL_PLUS_ZERO or tail == _TAIL_PLUS_ZERO_NAN:
        return _signed_nonzero(b, tail == _TAIL_PLUS_ZERO and is_nan, min(mag, K[1]), K)
    # (a NaN rides the clamp in _TAIL_CLAMP_NAN)
    return _signed(b, tail == _TAIL_CLAMP and is_nan, min(mag, K[1]), K)


@numba.njit(cache=True, nogil=True)
def rne_constants(P: Any, saturate: bool) -> tuple[Any, ...]:
    """The loop invariants of :func:`rne_code` for the format ``P`` (a
    ``format_params`` array or tuple that :func:`fits` accepts for float64 input with
    ``t <= 21`` and ``emin - t >= -147``, the conditions of D6)."""
    t, emin = P[T], P[EMIN]
    eminb = emin + 127
    c_bits = _U32((emin - t + 23 + 127) << 23)
    return (_U32(23 - t), _U32((1 << (22 - t)) - 1), _U32((eminb - 1) << t),
            np.int32(eminb << 23), c_bits, f32_of_bits(c_bits), _tail_constants(P, saturate))


@numba.njit(cache=True, nogil=True)
def rne_code(v: float, C: tuple[Any, ...]) -> Any:
    """The code of the float64 ``v`` rounded to nearest-even (``C`` from
    :func:`rne_constants`): one element of the loops above, for kernels that round one
    value at a time (block quantization).  Branch-free, so a caller's loop can still
    vectorize."""
    return _rne_code_of_odd(_odd32(v), C)


@numba.njit(cache=True, nogil=True, inline="always")
def _odd32_pair(q: float, lo: float) -> Any:
    """:func:`_odd32` of the exact value ``q + lo``, where ``lo`` is 0 or a residual far
    below half an ulp of ``q`` (nonzero beside a zero ``q``) giving only a direction:
    where ``q`` is itself a float32, the pair rounds to odd on the side of ``lo``."""
    f = np.float32(q)
    back = np.float64(f)
    b = bits_of_f32(f)
    inward = (math.copysign(1.0, lo) < 0.0) != (math.copysign(1.0, q) < 0.0)
    toward_zero = abs(back) > abs(q) or (back == q and lo != 0.0 and inward)
    b = _U32(b - (_U32(1) if toward_zero else _U32(0)))
    return _U32(b | (_U32(1) if back != q or lo != 0.0 else _U32(0)))


@numba.njit(cache=True, nogil=True)
def rne_code_pair(q: float, lo: float, C: tuple[Any, ...]) -> Any:
    """:func:`rne_code` of the exact value ``q + lo`` (``lo`` as :func:`_odd32_pair`
    takes it: the residual of a quotient, :func:`numerics.kernels.quant.divide_with_sticky`),
    rounded once."""
    return _rne_code_of_odd(_odd32_pair(q, lo), C)


@numba.njit(cache=True, nogil=True, inline="always")
def _rne_code_of_odd(b: Any, C: tuple[Any, ...]) -> Any:
    """The code of the float32 pattern ``b`` (a float64 rounded to odd) rounded to
    nearest-even: steps 1-3 of the module docstring."""
    s, round_bias, rebias, threshold, c_bits, c, K = C
    a = _U32(b & _U32(0x7FFFFFFF))
    normal = _U32(shr32(_U32(a + round_bias + _U32(shr32(a, s) & _U32(1))), s) - rebias)
    sub = _U32(bits_of_f32(f32_of_bits(a) + c) - c_bits)
    mag = normal if np.int32(a) >= threshold else sub
    return _finish(b, np.int32(a) > np.int32(0x7F800000), mag, K, _U32(0), False)


def fits_high(P: np.ndarray) -> bool:
    """Whether the float64 loops of the high word take the format ``P``: nearest-even
    (:func:`rne_span`) and the other modes (:func:`directed_span`); claims D15 and D15.1
    of proofs/double_rounding.md.

    Examples
    --------
    >>> from numerics.kernels.rounding import format_params
    >>> fits_high(format_params("bfloat16")), fits_high(format_params("binary32"))
    (True, False)
    """
    return fits(P, True) and bool(_high_fits(P))


def fits_one(P: np.ndarray) -> bool:
    """Whether :func:`rne_code` takes the format ``P`` (float64 values).

    Examples
    --------
    >>> from numerics.kernels.rounding import format_params
    >>> fits_one(format_params("e2m1fn")), fits_one(format_params("binary32"))
    (True, False)
    """
    return fits(P, True) and int(P[T]) <= 21 and int(P[EMIN]) - int(P[T]) >= -147 \
        and int(P[EMIN]) >= -126 and int(P[EMAX]) <= 127


@numba.njit(cache=True, nogil=True)
def _rne32_loop(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                shape: int, tail: int, stream: bool) -> None:
    """The encode loop, specialised by literal flags so each variant compiles to
    straight vector code.

    ``x`` holds float32 bit patterns (uint32).  ``shape`` is :data:`_GENERAL` (steps 1
    and 2 of the module docstring), :data:`_SAME_EXPONENT` (step 1 alone: the format has
    float32's exponent field) or :data:`_BRAIN` (bfloat16 with an infinity and
    without saturation: step 1 on the whole pattern, sign bit included, by a constant
    shift of 16.  The shift leaves the sign bit where bfloat16 keeps it, a finite
    magnitude rounds at most to the infinity's code, so nothing overflows, and only a
    NaN needs step 3; x86 takes the constant shift as an immediate rather than a
    vector of counts.  On 2**24 float32 with streaming stores, AMD EPYC Zen 2, one
    thread: 4.5 to 4.6 ms, against 6.0 to 6.2 with step 3 in full).  ``stream`` (a
    literal) asks for streaming stores (:mod:`numerics.kernels.stream`).

    Step 1 subtracts the rebias before the shift, folded into the rounding constant:
    exact in the normal range, where the sum stays above ``2**23``; below it the
    subnormal step's count is taken instead.

    ``tail`` (:func:`_tail_shape`) is step 3's shape:

    - :data:`_TAIL_KEEP`: :func:`_finish` for a format without -0 (the sign bit is kept
      only on a nonzero code);
    - :data:`_TAIL_CLAMP`: -0 exists, so the sign bit is copied through except for a
      NaN of a format whose NaN is unsigned; the code beyond max is max itself
      (saturation) or max + 1 (the infinity, or the NaN of a format without one), so
      overflow is ``min(mag, big)``, and a NaN is selected;
    - :data:`_TAIL_CLAMP_NAN`: as :data:`_TAIL_CLAMP`, and that code is also the
      signed NaN (e4m3fn without saturation).  A NaN's magnitude bits lie above every
      finite float32's, so they round beyond max and the clamp gives the NaN.
    - :data:`_TAIL_PLUS_ZERO`, :data:`_TAIL_PLUS_ZERO_NAN`: the two clamps for a
      format without -0 (fnuz, P3109), where the sign bit is copied onto a nonzero
      code only.  The second serves a format whose NaN is the code of -0 and the code
      beyond max (e4m3fnuz and e5m2fnuz without saturation): the clamp gives the sign
      bit alone, which a copied sign bit leaves as it is.  Before these two shapes,
      such formats took :data:`_TAIL_KEEP`, whose selects made LLVM's loop stream
      memory four times slower: e4m3fnuz took 23-25 ms on 2**24 float32, and takes
      5.2 ms now, as e4m3fn does (Intel development machine, one thread).

    With the folded rebias, the clamps took the loop's body from 20 instructions per
    8 elements (a compare and a select for each of overflow and NaN) to 18 for e5m2
    and 16 for e4m3fn: on 2**24 float32, e4m3fn went from 7.5 to 5.9 ms and e5m2 from
    8.7 to 7.2 ms (Intel development machine, one thread)."""
    t, emin = P[T], P[EMIN]
    s, folded, threshold = _step1_constants(t, emin, 23, 127)
    c_bits = _U32((emin - t + 23 + 127) << 23)
    C = (s, folded, threshold, c_bits, f32_of_bits(c_bits), _tail_constants(P, saturate),
         shape, tail)
    map_into(_rne32_one, x, out, C, stream)


@numba.njit(cache=True, nogil=True, inline="always")
def _rne32_one(b: Any, C: tuple[Any, ...]) -> Any:
    """One element of :func:`_rne32_loop`: the code of the float32 pattern ``b``."""
    s, folded, threshold, c_bits, c, K, shape, tail = C
    a = _U32(b & _U32(0x7FFFFFFF))
    if shape == _BRAIN:  # (the sign bit rides the shift by 16 into bit 15)
        high = _U32(b >> _U32(16))
        code = _U32(_U32(b + folded + _U32(high & _U32(1))) >> _U32(16))
        nan_code = _U32(K[2] | _U32(high & _U32(K[8] & _U32(0x8000))))
        return nan_code if np.int32(a) > np.int32(0x7F800000) else code
    if shape == _SAME_EXPONENT:  # (nothing to rebias: folded is the rounding bias)
        mag = shr32(_U32(a + folded + _U32(shr32(a, s) & _U32(1))), s)
    else:
        normal = shr32(_U32(a + folded + _U32(shr32(a, s) & _U32(1))), s)
        sub = _U32(bits_of_f32(f32_of_bits(a) + c) - c_bits)
        mag = normal if np.int32(a) >= threshold else sub
    is_nan = np.int32(a) > np.int32(0x7F800000)
    return _step3(b, is_nan, _U32(mag), K, tail)


@numba.njit(cache=True, nogil=True)
def _half_loop(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
               stream: bool) -> None:
    """binary16 codes of the float32 patterns ``x`` (uint32) by the processor's
    conversion (:func:`numerics.kernels.lanes.f16_bits_of_f32`, which rounds to
    nearest-even with binary16's subnormals and overflow to infinity), then step 3 on
    its result in 16-bit lanes: a NaN becomes the format's NaN code with the input's
    sign, and when saturating the infinity becomes max (``min`` with the code beyond
    max, as in :func:`_rne32_loop`).  Only where
    :data:`numerics.kernels.lanes.HAS_F16C`, for :func:`_is_binary16` formats.

    Taking the NaN from the result rather than the input keeps the loop one vector
    wide: with the NaN test on the float32 input, LLVM unrolled the loop four ways and
    it ran 35% slower than steps 1 and 2.  This way, on 2**24 float32 (Intel
    development machine, one thread), it takes 5.2 to 5.6 ms against 6.4 to 6.6 ms
    for steps 1 and 2 (1.2 against 3.1 ms in cache)."""
    K = _tail_constants(P, saturate)
    C = (_U16(K[1]), _U16(K[2]), _U16(P[INFMAG]))
    map_into(_half_one, x, out, C, stream)


@numba.njit(cache=True, nogil=True, inline="always")
def _half_one(b: Any, C: tuple[Any, Any, Any]) -> Any:
    """One element of :func:`_half_loop`: the code of the float32 pattern ``b``."""
    big, nan_code, inf_code = C
    h = f16_bits_of_f32(f32_of_bits(b))
    mag = _U16(h & _U16(0x7FFF))
    sign = _U16(h & _U16(0x8000))
    return _U16(sign | nan_code) if mag > inf_code else _U16(sign | min(mag, big))


@numba.njit(cache=True, nogil=True)
def _is_binary16(P: Any) -> bool:
    """Whether ``P`` has binary16's parameters (whatever its name): the formats
    :func:`_half_loop` encodes."""
    return (P[W] == 5 and P[T] == 10 and P[EMIN] == -14 and P[EMAX] == 15
            and P[BITS] == 16 and P[SIGNED] == 1 and P[SUBN] == 1 and P[NEGZERO] != 0
            and P[NANKIND] == NAN_IEEE and P[INFMAG] == 0x7C00 and P[MAXMAG] == 0x7BFF)


@numba.njit(cache=True, nogil=True)
def count_nans(x: np.ndarray) -> int:
    """The number of NaNs in the float32 or float64 array ``x``.

    The encode loops do not count NaN inputs themselves: a count carried through a loop
    changes how LLVM vectorizes it (four-way unrolled rather than one vector per step),
    which on an Intel core made the bfloat16 loop a third slower.  The few callers that
    need the count (a format without NaN, ``nan="raise"``) run this pass over the block
    the loop has just read.

    Examples
    --------
    >>> import numpy as np
    >>> count_nans(np.array([1.0, np.nan, -np.nan, np.inf], np.float32))
    2
    """
    nans = 0
    for lo in range(0, x.size, 1 << 20):
        nans += _count_nans32(x[lo:lo + (1 << 20)])
    return nans


@numba.njit(cache=True, nogil=True)
def _count_nans32(x: np.ndarray) -> Any:
    """:func:`count_nans` of fewer than 2**32 elements, counted in 32-bit lanes (an
    int64 count ran the loop in 64-bit lanes, 2.3 times slower)."""
    nans = _U32(0)
    for i in range(x.size):
        nans = _U32(nans + (_U32(1) if x[i] != x[i] else _U32(0)))
    return nans


@numba.njit(cache=True, nogil=True)
def _tail_shape(P: Any, saturate: bool) -> int:
    """The shape of :func:`_rne32_loop`'s step 3 for the format ``P``, or -1 where none
    fits: a format with -0 whose code beyond max is neither max nor max + 1 (none that
    :class:`numerics.Format` accepts; :func:`fits` turns it away)."""
    maxmag, big, nan_code, _, big_signed, nan_signed, _, _ = _constants(P, saturate)
    clamps = big == maxmag or big == maxmag + 1
    if P[NEGZERO] == 0:
        sign_bit = 1 << (P[BITS] - 1)
        if not clamps or not (big_signed or big == sign_bit):
            return _TAIL_KEEP
        if nan_code == big:
            return _TAIL_PLUS_ZERO_NAN
        return _TAIL_PLUS_ZERO
    if not clamps:
        return -1
    if nan_code == big and nan_signed:
        return _TAIL_CLAMP_NAN
    return _TAIL_CLAMP


@numba.njit(cache=True, nogil=True, inline="always")
def _rne32_dispatch(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                    stream: bool) -> None:
    """:func:`_half_loop` for binary16 where the host converts it in hardware, else
    :func:`_rne32_loop` with the flags of the format ``P``."""
    if HAS_F16C and _is_binary16(P):
        return _half_loop(x, out, P, saturate, stream)
    tail = _tail_shape(P, saturate)
    if P[EMIN] == -126 and P[W] == 8 and P[T] == 7 and tail == _TAIL_CLAMP \
            and not saturate and P[INFMAG] >= 0:
        return _rne32_loop(x, out, P, saturate, _BRAIN, _TAIL_CLAMP, stream)
    if P[EMIN] == -126 and P[W] == 8 and (tail == _TAIL_CLAMP or tail == _TAIL_CLAMP_NAN):
        # float32's exponent field: step 1 alone.  (_TAIL_CLAMP is right wherever
        # _TAIL_CLAMP_NAN is; the general shape serves any format, including one
        # without -0, which no format the constructor accepts has here.)
        return _rne32_loop(x, out, P, saturate, _SAME_EXPONENT, _TAIL_CLAMP, stream)
    if tail == _TAIL_CLAMP:
        return _rne32_loop(x, out, P, saturate, _GENERAL, _TAIL_CLAMP, stream)
    if tail == _TAIL_CLAMP_NAN:
        return _rne32_loop(x, out, P, saturate, _GENERAL, _TAIL_CLAMP_NAN, stream)
    if tail == _TAIL_PLUS_ZERO:
        return _rne32_loop(x, out, P, saturate, _GENERAL, _TAIL_PLUS_ZERO, stream)
    if tail == _TAIL_PLUS_ZERO_NAN:
        return _rne32_loop(x, out, P, saturate, _GENERAL, _TAIL_PLUS_ZERO_NAN, stream)
    return _rne32_loop(x, out, P, saturate, _GENERAL, _TAIL_KEEP, stream)


@numba.njit(cache=True, nogil=True)
def _rne32_block(bits: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                 stream: bool) -> None:
    """Codes of the float32 patterns ``bits`` (uint32), with streaming stores when
    ``stream`` (:mod:`numerics.kernels.stream`).  A call from Python compiles for the
    literal value of ``stream`` (as the spans' calls do), so it builds one loop, not
    both."""
    numba.literally(stream)
    _rne32_dispatch(bits, out, P, saturate, stream)


#: The index of a float64's low 32-bit word in the pair of words it views as.
_LO = 0 if sys.byteorder == "little" else 1
#: The pieces of :func:`rne_span` when it counts NaNs and of :func:`round_rne_span`'s
#: float64 codes (the second pass reads them from the L1 cache).
_PIECE = 4096
#: The loops that do more arithmetic per element (stochastic rounding, the directed
#: modes) take their input in steps of this many elements, each after asking for the
#: cache lines of the step after next.  On the Intel development machine the hardware's
#: own prefetching fell behind them: the directed loop streamed memory four times
#: slower than it ran in cache (38 ms for 2**24 float32 against 14 ms with the
#: requests), stochastic rounding 13% slower; the lighter nearest-even loops run
#: faster without (8.7 against 7.3 ms).
_STEP = 4096


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_ahead(x: np.ndarray, lo: int, hi: int, stop: int) -> None:
    """Ask for the cache lines of ``x[lo + _STEP : hi + _STEP]`` (within ``stop``)."""
    line = 64 // x.itemsize
    for j in range(lo + _STEP, min(stop, hi + _STEP), line):
        prefetch(x, j)


# ----------------------------------------------------------------- the other modes
@numba.njit(cache=True, nogil=True, inline="always")
def _mode_word(mode: int, negative: bool) -> Any:
    """The directed ``mode`` for inputs of one sign as bits: 1, rounds away from zero
    (up for a positive input, down for a negative one); 2, a finite magnitude beyond the
    largest becomes the largest; 4, ties away; 8, to odd."""
    away = mode == (MODE_RD if negative else MODE_RU)
    to_max = mode == MODE_RTZ or mode == MODE_RTO or mode == (MODE_RU if negative else MODE_RD)
    return _U32((1 if away else 0) | (2 if to_max else 0) | (4 if mode == MODE_RNA else 0)
                | (8 if mode == MODE_RTO else 0))


@specialised
def _directed32_loop(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                     mode: int, shape: int, simple: bool) -> None:
    """Codes of the float32 patterns ``x`` rounded toward zero, up, down, to nearest with
    ties away, or to odd (``mode``): :func:`_rne32_loop` with another increment.  The
    mode enters as data, a word of flags picked by each element's sign, so one loop
    serves all five modes (a loop per mode would compile five times as much).

    Normal range: ``a`` plus ``2**(s-1)`` (ties away), ``2**s - 1`` (away from zero:
    up for a positive input, down for a negative one) or nothing, shifted right by
    ``s`` and rebiased; to odd, the truncated code with its last bit set when any
    dropped bit is.  Subnormal range: the nearest-even count ``r`` of step 2 and its
    value ``v = (|x| + C) - C`` (exact) give the truncated count ``r - (v > |x|)``, the
    inexactness ``v != |x|``, and a tie that nearest-even rounded down,
    ``|x| - v = q/2`` (exact).  An infinite input follows the overflow rule alone; a
    finite magnitude beyond the largest becomes the largest when the mode rounds it
    toward zero (toward zero, to odd, and down or up on the side of zero), as in
    :func:`numerics.kernels.rounding.round_pair`."""
    t, emin = P[T], P[EMIN]
    s = _U32(23 - t)
    low = _U32((1 << (23 - t)) - 1)
    half = _U32(1 << (22 - t))
    eminb = emin + 127
    rebias = _U32((eminb - 1) << t)
    threshold = np.int32(eminb << 23)
    c_bits = _U32((emin - t + 23 + 127) << 23)
    c = f32_of_bits(c_bits)
    half_q = f32_of_bits(_U32((emin - t - 1 + 127) << 23)) if emin - t - 1 >= -126 else \
        f32_of_bits(_U32(1 << (emin - t - 1 + 149)))  # a float32 subnormal
    K = _tail_constants(P, saturate)
    # the mode, for each sign, as the bits of one word (one register where a value per
    # flag made the loop spill): away from zero, to max on overflow, ties away, to odd
    w_pos = _mode_word(mode, False)
    w_neg = _mode_word(mode, True)
    for i in range(x.size):
        b = _U32(x[i])
        a = _U32(b & _U32(0x7FFFFFFF))
        neg = np.int32(b) < np.int32(0)
        w = w_neg if neg else w_pos
        # each flag as a mask of 32 ones or zeros (shifts of 32-bit lanes only)
        away = sar32(shl32(w, _U32(31)), _U32(31))
        rna = sar32(shl32(w, _U32(29)), _U32(31))
        rto = shr32(w, _U32(3))
        inc = _U32(_U32(low & away) | _U32(half & rna))
        mag = _U32(shr32(_U32(a + inc), s) - rebias)
        mag = _U32(mag | (rto if _U32(a & low) != _U32(0) else _U32(0)))
        if shape == _GENERAL:
            ax = f32_of_bits(a)
            y = ax + c
            v = y - c
            above = _U32(1) if v > ax else _U32(0)
            inexact = _U32(1) if v != ax else _U32(0)
            tie = _U32(1) if ax - v == half_q else _U32(0)
            trunc = _U32(_U32(bits_of_f32(y) - c_bits) - above)
            step = _U32((rna & (above | tie)) | (away & inexact))
            sub = _U32(_U32(trunc + step) | (rto & inexact))
            mag = mag if np.int32(a) >= threshold else sub
        is_nan = np.int32(a) > np.int32(0x7F800000)
        to_max = _U32(shr32(w, _U32(1)) & _U32(1)) if a != _U32(0x7F800000) else _U32(0)
        out[i] = _finish(b, is_nan, mag, K, to_max, simple)


@specialised
def _directed_high_loop(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                        mode: int, simple: bool) -> None:
    """Codes of the float64 values ``x`` in ``mode`` (as :func:`_directed32_loop`; formats
    :func:`_high_fits` takes): claim D15.1 of proofs/double_rounding.md.

    :func:`_directed32_loop`'s steps on :func:`_high_loop`'s word, the value rounded
    to odd at 21 bits: in the normal range with 20 trailing bits and float64's
    exponent; below it in float32 on the word scaled by ``2**k``.  Below a quarter of
    the quantum the scaled word is binary32's smallest subnormal (0 for a zero), far
    enough below the quantum to give the same codes: 0 to nearest, the smallest
    subnormal away from zero and to odd, 0 toward zero.

    The steps are written out here as there: one inline helper for both loops gave
    LLVM one to three more instructions per vector, and 3% to 6% more time on 2**24
    values (AMD EPYC Zen 2, one thread)."""
    t, emin = P[T], P[EMIN]
    s = _U32(20 - t)
    low = _U32((1 << (20 - t)) - 1)
    half = _U32(1 << (19 - t))
    eminb = emin + 1023
    rebias = _U32((eminb - 1) << t)
    threshold = np.int32(eminb << 20)
    k = max(0, t - emin - 124)
    tiny = np.int32((897 - k) << 20)
    scale = _U32((896 - k) << 23)
    c_bits = _U32((emin - t + k + 150) << 23)
    c = f32_of_bits(c_bits)
    half_q = f32_of_bits(_U32((emin - t + k + 126) << 23))  # half the scaled quantum
    K = _tail_constants(P, saturate)
    w_pos = _mode_word(mode, False)
    w_neg = _mode_word(mode, True)
    w = x.view(np.uint32)
    for i in range(x.size):
        b = w[2 * i + 1 - _LO]
        a = _U32(b & _U32(0x7FFFFFFF))
        odd = _U32(a | min(w[2 * i + _LO], _U32(1)))
        mw = w_neg if np.int32(b) < np.int32(0) else w_pos
        away = sar32(shl32(mw, _U32(31)), _U32(31))
        rna = sar32(shl32(mw, _U32(29)), _U32(31))
        rto = shr32(mw, _U32(3))
        inc = _U32(_U32(low & away) | _U32(half & rna))
        mag = _U32(shr32(_U32(odd + inc), s) - rebias)
        mag = _U32(mag | (rto if _U32(odd & low) != _U32(0) else _U32(0)))
        scaled = _U32(shl32(odd, _U32(3)) - scale) if np.int32(a) >= tiny else min(odd, _U32(1))
        ax = f32_of_bits(scaled)
        y = ax + c
        v = y - c
        above = _U32(1) if v > ax else _U32(0)
        inexact = _U32(1) if v != ax else _U32(0)
        tie = _U32(1) if ax - v == half_q else _U32(0)
        trunc = _U32(_U32(bits_of_f32(y) - c_bits) - above)
        step = _U32((rna & (above | tie)) | (away & inexact))
        sub = _U32(_U32(trunc + step) | (rto & inexact))
        mag = mag if np.int32(a) >= threshold else sub
        is_nan = np.int32(odd) > np.int32(0x7FF00000)
        to_max = _U32(shr32(mw, _U32(1)) & _U32(1)) if odd != _U32(0x7FF00000) else _U32(0)
        out[i] = _finish(b, is_nan, mag, K, to_max, simple)


@numba.njit(cache=True, nogil=True)
def _directed_high_block(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                         mode: int) -> None:
    """:func:`_directed_high_loop` with the flag of the format ``P``."""
    if P[NEGZERO] != 0:
        _directed_high_loop(x, out, P, saturate, mode, True)
    else:
        _directed_high_loop(x, out, P, saturate, mode, False)


@numba.njit(cache=True, nogil=True)
def _directed32_block(bits: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                      mode: int) -> None:
    """:func:`_directed32_loop` with the flags of the format ``P``."""
    simple = P[NEGZERO] != 0
    same = P[EMIN] == -126 and P[W] == 8
    if same and simple:
        _directed32_loop(bits, out, P, saturate, mode, _SAME_EXPONENT, True)
    elif same:
        _directed32_loop(bits, out, P, saturate, mode, _SAME_EXPONENT, False)
    elif simple:
        _directed32_loop(bits, out, P, saturate, mode, _GENERAL, True)
    else:
        _directed32_loop(bits, out, P, saturate, mode, _GENERAL, False)


def _directed_block(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                    mode: int) -> None:
    """:func:`_directed_high_block` for float64 ``x``, :func:`_directed32_block` for
    float32 (compiled code only)."""
    raise NotImplementedError("_directed_block runs in compiled code only")


@overload(_directed_block, inline="always")
def _directed_block_impl(x: Any, out: Any, P: Any, saturate: Any, mode: Any) -> Any:
    """:func:`_directed_block` for the dtype of ``x``: picked here, when the caller
    compiles, so a float32 span never compiles the float64 loops (a branch on
    ``x.itemsize`` compiles both sides for either dtype)."""
    if x.dtype == types.float64:
        def wide(x: Any, out: Any, P: Any, saturate: Any, mode: Any) -> None:
            _directed_high_block(x, out, P, saturate, mode)

        return wide

    def single(x: Any, out: Any, P: Any, saturate: Any, mode: Any) -> None:
        _directed32_block(x.view(np.uint32), out, P, saturate, mode)

    return single


@numba.njit(cache=True, nogil=True)
def directed_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
                  mode: int, saturate: bool, count: bool) -> int:
    """:func:`rne_span` for the directed modes and ties away (``mode`` one of
    ``MODE_RTZ``, ``MODE_RU``, ``MODE_RD``, ``MODE_RNA``, ``MODE_RTO``): float32 input
    by :func:`_directed32_loop`, float64 by :func:`_directed_high_loop` (formats
    :func:`fits_high` takes: rounded to odd at 21 bits, a value keeps its place between
    the format's neighbours, its exactness and its ties, so any rounding at two bits
    fewer is the direct one).  Returns the number of NaN inputs when ``count``."""
    nans = 0
    for lo in range(start, stop, _STEP):
        hi = min(stop, lo + _STEP)
        _prefetch_ahead(x, lo, hi, stop)
        _directed_block(x[lo:hi], out[lo:hi], P, saturate, mode)
        if count:
            nans += count_nans(x[lo:hi])
    return nans


def directed(x: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int, saturate: bool,
             count: bool) -> int:
    """:func:`directed_span` of all of ``x`` on the threads."""
    if serial(x.size):
        return int(directed_span(x, out, 0, x.size, P, mode, saturate, count))
    return sum(spread(lambda lo, hi: directed_span(x, out, lo, hi, P, mode, saturate, count),
                      x.size, align=CHUNK))


@specialised
def _sr32_loop(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
               draws: np.ndarray, ubits: int, exact: bool, simple: bool) -> int:
    """Stochastic rounding of the float32 patterns ``x`` with ``ubits <= 31`` random bits,
    ``draws[i]`` the draw of element ``i`` (any unsigned integer type): steps 1-2 of
    :func:`numerics.kernels.rounding.round_pair` in 32-bit lanes.  The dropped bits
    ``rem`` of the significand, scaled to ``ubits`` bits, give
    ``F = floor(frac * 2**ubits)``; the magnitude rounds away from zero when the
    element's draw ``u < F`` (or, when ``exact``, ``u == F`` with dropped bits below
    ``F``'s last).  Returns the number of NaN inputs: unlike the memory-bound loops (see
    :func:`count_nans`), this compute-bound loop runs faster with the count, which makes
    LLVM interleave two vectors per step (29 against 44 ms
    for 2**24 elements on an Intel core)."""
    t, emin = P[T], P[EMIN]
    s = np.int32(23 - t)
    eminb = np.int32(emin + 127)
    one_t = _U32(1 << t)
    ub = np.int32(ubits)
    K = _tail_constants(P, saturate)
    nans = _U32(0)
    for i in range(x.size):
        b = _U32(x[i])
        a = _U32(b & _U32(0x7FFFFFFF))
        field = np.int32(shr32(a, _U32(23)))
        sig = _U32(_U32(a & _U32(0x7FFFFF)) | (_U32(0x800000) if field != 0 else _U32(0)))
        f1 = max(field, np.int32(1))
        bb = max(f1, eminb)
        shift = np.int32(s + bb - f1)  # dropped bits: s in the normal range, more below
        sc = _U32(min(shift, np.int32(31)))
        kept = shr32(sig, sc)
        rem = _U32(sig & _U32(shl32(_U32(1), sc) - _U32(1)))
        c0 = _U32(_U32(shl32(_U32(bb - eminb + 1), _U32(t)) + kept) - one_t)
        d = np.int32(shift - ub)
        if d >= 0:
            dd = _U32(min(d, np.int32(31)))
            F = shr32(rem, dd)
            sticky = _U32(rem & _U32(shl32(_U32(1), dd) - _U32(1))) != _U32(0)
        else:
            F = shl32(rem, _U32(-d))
            sticky = False
        u = _U32(draws[i])
        up = u < F
        if exact:
            up = up | ((u == F) & sticky)
        mag = _U32(c0 + (_U32(1) if up else _U32(0)))
        is_nan = np.int32(a) > np.int32(0x7F800000)
        out[i] = _finish(b, is_nan, mag, K, _U32(0), simple)
        nans = _U32(nans + (_U32(1) if is_nan else _U32(0)))
    return int(nans)


@numba.njit(cache=True, nogil=True)
def _sr32_block(bits: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
                draws: np.ndarray, ubits: int, exact: bool) -> int:
    """:func:`_sr32_loop` with the flags of the format ``P``; returns the NaN count."""
    if P[NEGZERO] != 0:
        if exact:
            return _sr32_loop(bits, out, P, saturate, draws, ubits, True, True)
        return _sr32_loop(bits, out, P, saturate, draws, ubits, False, True)
    if exact:
        return _sr32_loop(bits, out, P, saturate, draws, ubits, True, False)
    return _sr32_loop(bits, out, P, saturate, draws, ubits, False, False)


@numba.njit(cache=True, nogil=True)
def sr_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
            saturate: bool, seed: Any, ubits: int, exact: bool) -> int:
    """Stochastically rounded codes of ``x[start:stop]`` (float32, contiguous, native
    byte order; a format :func:`fits` accepts; ``1 <= ubits <= 31``) into
    ``out[start:stop]``, with the stream of :mod:`numerics.kernels.random`: ``MODE_SR``
    or, when ``exact``, ``MODE_SR_EXACT``.  Returns the number of NaN inputs."""
    nans = 0
    mixed = mix64(_U64(seed))
    lk = slots_log2(ubits)
    # 8 or 16 bits: the words, viewed as bytes or halfwords, are the draws
    whole = (ubits == 8 or ubits == 16) and _LITTLE and start % (1 << lk) == 0
    buffer = np.empty(min(_STEP, stop - start) + 8, np.uint64)
    narrow8, narrow16 = buffer.view(np.uint8), buffer.view(np.uint16)
    draws = buffer.view(np.uint32)
    for lo in range(start, stop, _STEP):
        hi = min(stop, lo + _STEP)
        _prefetch_ahead(x, lo, hi, stop)
        xs, os_ = x[lo:hi].view(np.uint32), out[lo:hi]
        n = hi - lo
        if whole:
            words(buffer[:((n - 1) >> lk) + 1], mixed, lo >> lk)
            if ubits == 8:
                nans += _sr32_block(xs, os_, P, saturate, narrow8[:n], ubits, exact)
            else:
                nans += _sr32_block(xs, os_, P, saturate, narrow16[:n], ubits, exact)
        else:
            fill(draws[:n], mixed, lo, ubits)
            nans += _sr32_block(xs, os_, P, saturate, draws[:n], ubits, exact)
    return nans


def sr(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool, seed: Any,
       ubits: int, exact: bool) -> int:
    """:func:`sr_span` of all of ``x`` on the threads (the same bits for every thread
    count: each draw depends on the index)."""
    return sum(spread(lambda lo, hi: sr_span(x, out, lo, hi, P, saturate, seed, ubits,
                                             exact), x.size, align=CHUNK))


@numba.njit(cache=True, nogil=True)
def _high_fits(P: Any) -> bool:
    """Whether :func:`_high_loop` takes the format ``P`` (one :func:`fits` accepts for
    float64 input): two spare bits below the format's last in the high word's 20
    trailing bits (``t <= 18``), a quarter quantum ``2**(emin - t - 2)`` that is a
    normal float64, and a subnormal range that binary32 holds once scaled (claim D15
    of proofs/double_rounding.md)."""
    return P[T] <= 18 and -1020 <= P[EMIN] - P[T] <= 104 and P[EMIN] <= 128


@specialised
def _high_loop(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
               tail: int) -> None:
    """Codes of the float64 values ``x`` rounded to nearest-even (formats
    :func:`_high_fits` takes), in one pass of 32-bit lanes: claim D15 of
    proofs/double_rounding.md.

    Each value's high word, with its last bit set when the low word is not zero, is
    the value rounded to odd at 21 significant bits; :func:`_rne32_loop`'s steps
    follow on it, with float64's exponent field: step 1 in integers, step 2 in
    float32 on the word shifted into binary32's layout and scaled by ``2**k`` (below
    a quarter of the quantum the code is 0).  ``tail`` is step 3's shape, as there.

    This replaced rounding to odd at 24 bits in one pass, a scan for the values that
    pass left to the processor's conversion, and :func:`_rne32_loop` in a third: on
    2**24 float64 (AMD EPYC Zen 2, one thread), 14.1 against 20 ms into e4m3fn, 11.2
    against 14.4 ms in cache."""
    t, emin = P[T], P[EMIN]
    s, folded, threshold = _step1_constants(t, emin, 20, 1023)
    k = max(0, t - emin - 124)
    tiny = np.int32((897 - k) << 20)
    rebias = _U32((896 - k) << 23)
    c_bits = _U32((emin - t + k + 150) << 23)
    c = f32_of_bits(c_bits)
    K = _tail_constants(P, saturate)
    w = x.view(np.uint32)
    for i in range(x.size):
        b = w[2 * i + 1 - _LO]
        a = _U32(b & _U32(0x7FFFFFFF))
        odd = _U32(a | min(w[2 * i + _LO], _U32(1)))
        normal = shr32(_U32(odd + folded + _U32(shr32(odd, s) & _U32(1))), s)
        scaled = f32_of_bits(_U32(shl32(odd, _U32(3)) - rebias))
        sub = _U32(bits_of_f32(scaled + c) - c_bits) if np.int32(a) >= tiny else _U32(0)
        mag = normal if np.int32(a) >= threshold else sub
        is_nan = np.int32(odd) > np.int32(0x7FF00000)
        out[i] = _step3(b, is_nan, _U32(mag), K, tail)


@numba.njit(cache=True, nogil=True)
def _high_block(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool) -> None:
    """:func:`_high_loop` with step 3's shape for the format ``P``."""
    tail = _tail_shape(P, saturate)
    if tail == _TAIL_CLAMP:
        _high_loop(x, out, P, saturate, _TAIL_CLAMP)
    elif tail == _TAIL_CLAMP_NAN:
        _high_loop(x, out, P, saturate, _TAIL_CLAMP_NAN)
    elif tail == _TAIL_PLUS_ZERO:
        _high_loop(x, out, P, saturate, _TAIL_PLUS_ZERO)
    elif tail == _TAIL_PLUS_ZERO_NAN:
        _high_loop(x, out, P, saturate, _TAIL_PLUS_ZERO_NAN)
    else:
        _high_loop(x, out, P, saturate, _TAIL_KEEP)


@numba.njit(cache=True, nogil=True)
def _rne64_block(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool) -> None:
    """Codes of the float64 values ``x`` by steps 1 to 3 in 64-bit lanes (formats
    :func:`_high_fits` rejects)."""
    maxmag, big, nan_code, t, big_signed, nan_signed, negzero, emin = _constants(
        P, saturate)
    s = _U64(52 - t)
    round_bias = _U64((1 << (51 - t)) - 1)
    eminb = emin + 1023
    rebias = _U64((eminb - 1) << t)
    threshold = _U64(eminb) << _U64(52)
    c_bits = _U64(emin - t + 52 + 1023) << _U64(52)
    c: Any = bits_f64(c_bits)  # type: ignore[call-arg]
    maxmag64, big64, nan64 = _U64(maxmag), _U64(big), _U64(nan_code)
    top = _U64(P[BITS] - 1)
    keep_big = _U64(1 if big_signed else 0)
    keep_nan = _U64(1 if nan_signed else 0)
    keep_zero = _U64(negzero)
    for i in range(x.size):
        b = f64_bits(x[i])
        a = b & _U64(0x7FFFFFFFFFFFFFFF)
        neg = b >> _U64(63)
        normal = ((a + round_bias + ((a >> s) & _U64(1))) >> s) - rebias
        sub = f64_bits(bits_f64(a) + c) - c_bits
        mag = normal if a >= threshold else sub
        over = mag > maxmag64
        is_nan = a > _U64(0x7FF0000000000000)
        code = big64 if over else mag
        keep = keep_big if over else (_U64(1) if mag != _U64(0) else keep_zero)
        if is_nan:
            code, keep = nan64, keep_nan
        out[i] = code | ((neg & keep) << top)


def _rne_block(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool,
               stream: bool) -> None:
    """Codes of the float32 or float64 block ``x`` rounded to nearest-even: float64 by
    :func:`_high_block` (formats :func:`_high_fits` takes) or :func:`_rne64_block`,
    float32 by :func:`_rne32_block` (compiled code only)."""
    raise NotImplementedError("_rne_block runs in compiled code only")


@overload(_rne_block, inline="always")
def _rne_block_impl(x: Any, out: Any, P: Any, saturate: Any, stream: Any) -> Any:
    """:func:`_rne_block` for the dtype of ``x``, picked when the caller compiles (as
    :func:`_directed_block`)."""
    if x.dtype == types.float64:
        def wide(x: Any, out: Any, P: Any, saturate: Any, stream: Any) -> None:
            if _high_fits(P):
                _high_block(x, out, P, saturate)
            else:
                _rne64_block(x, out, P, saturate)

        return wide

    def single(x: Any, out: Any, P: Any, saturate: Any, stream: Any) -> None:
        _rne32_block(x.view(np.uint32), out, P, saturate, stream)

    return single


@numba.njit(cache=True, nogil=True)
def _rne_pieces(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
                saturate: bool, count: bool, stream: bool) -> int:
    """Codes of ``x[start:stop]`` (float32 or float64, contiguous, native byte order; a
    format :func:`fits` accepts) into ``out[start:stop]``, as one block (the block
    loops index their slices from 0, so they need no negative-index wraparound and
    vectorize; blocks of :data:`CHUNK` cost a call and a scratch array each, about
    0.2 ms over 2**24 float32).  Returns the number of NaN inputs when ``count`` (see
    :func:`count_nans`; the blocks are then of :data:`_PIECE` elements, so the count
    reads each from the L1 cache: about 1 against 2 ms over 2**24 float32), else 0.
    ``stream`` (a literal) asks for streaming stores (float32 input)."""
    nans = 0
    step = _PIECE if count else max(1, stop - start)
    for lo in range(start, stop, step):
        hi = min(stop, lo + step)
        _rne_block(x[lo:hi], out[lo:hi], P, saturate, stream)
        if count:
            nans += count_nans(x[lo:hi])
    return nans


@numba.njit(cache=True, nogil=True)
def rne_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
             saturate: bool, count: bool) -> int:
    """:func:`_rne_pieces` with ordinary stores."""
    return _rne_pieces(x, out, start, stop, P, saturate, count, False)


@numba.njit(cache=True, nogil=True)
def rne_stream_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
                    saturate: bool, count: bool) -> int:
    """:func:`_rne_pieces` with streaming stores (:mod:`numerics.kernels.stream`), for a
    span :func:`numerics.kernels.stream.wanted` picks."""
    return _rne_pieces(x, out, start, stop, P, saturate, count, True)


def rne(x: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool, count: bool) -> int:
    """:func:`rne_span` (:func:`rne_stream_span` for a large span) of all of ``x`` on the
    threads; returns the number of NaN inputs when ``count``, else 0."""
    if serial(x.size, fast=True):
        return int(rne_span(x, out, 0, x.size, P, saturate, count))

    def span(lo: int, hi: int) -> int:
        kernel = rne_stream_span if wanted(out, lo, hi) else rne_span
        return int(kernel(x, out, lo, hi, P, saturate, count))

    return sum(spread(span, x.size, align=CHUNK))


@specialised
def _round32_loop(x: np.ndarray, values: np.ndarray, P: np.ndarray, saturate: bool,
                  table: np.ndarray, shape: int) -> None:
    """``values[i]`` = the value of the format ``P`` that the float32 pattern ``x[i]``
    (uint32) rounds to, nearest-even: the table entry of :func:`_rne32_loop`'s code,
    computed without the code.

    In float32's bit space, the value of a code is the input's bits rounded to ``t``
    trailing bits in place: step 1 of the module docstring with a mask for the shift,
    ``(a + 2**(s-1) - 1 + lsb) & -2**s``, which needs no rebias; in the subnormal range
    (``shape`` :data:`_GENERAL`), step 2 in float32 arithmetic, ``(|x| + C) - C`` (exact:
    both terms are multiples of the format's quantum below ``2C``).  Every value of a
    format :func:`fits` takes is a float32, so a magnitude above the largest one's bits
    has overflowed, and takes the value of the code beyond max; a NaN takes the value
    of the NaN code; both read from ``table`` (float32 or float64, so a NaN's bits are
    the table's), by the input's sign where the code has one.  The sign bit is copied
    onto the rest, except onto a zero of a format without -0."""
    maxmag, big, nan_code, t, big_signed, nan_signed, negzero, emin = _constants(
        P, saturate)
    sign_code = 1 << (P[BITS] - 1)
    s = _U32(23 - t)
    round_bias = _U32((1 << (22 - t)) - 1)
    keep = _U32(~_U32((1 << (23 - t)) - 1))
    threshold = np.int32((emin + 127) << 23)
    c = f32_of_bits(_U32((emin - t + 23 + 127) << 23))
    max_bits = bits_of_f32(np.float32(table[maxmag]))
    over_pos, nan_pos = table[big], table[nan_code]
    over_neg = table[big | sign_code] if big_signed else over_pos
    nan_neg = table[nan_code | sign_code] if nan_signed else nan_pos
    plus_zero = _U32(0) if negzero != 0 else _U32(0xFFFFFFFF)
    for i in range(x.size):
        b = _U32(x[i])
        a = _U32(b & _U32(0x7FFFFFFF))
        v = _U32(_U32(a + round_bias + _U32(shr32(a, s) & _U32(1))) & keep)
        if shape == _GENERAL:
            sub = bits_of_f32((f32_of_bits(a) + c) - c)
            v = v if np.int32(a) >= threshold else sub
        sign = _U32(b & _U32(0x80000000))
        if v == _U32(0):
            sign = _U32(sign & ~plus_zero)
        regular = f32_of_bits(_U32(v | sign))
        negative = np.int32(b) < np.int32(0)
        is_nan = np.int32(a) > np.int32(0x7F800000)
        # one store of selected values (a store per case became three masked stores,
        # which an AMD Zen 2 core runs at about 2 ns per element)
        special = (nan_neg if negative else nan_pos) if is_nan else \
            (over_neg if negative else over_pos)
        values[i] = special if is_nan or v > max_bits else regular


@numba.njit(cache=True, nogil=True)
def _round32_block(x: np.ndarray, values: np.ndarray, P: np.ndarray, saturate: bool,
                   table: np.ndarray) -> None:
    """:func:`_round32_loop` with the shape of the format ``P``: step 1 alone for a
    format with float32's exponent field, whose subnormals are float32's."""
    if P[EMIN] == -126 and P[W] == 8:
        return _round32_loop(x, values, P, saturate, table, _SAME_EXPONENT)
    return _round32_loop(x, values, P, saturate, table, _GENERAL)


@specialised
def _widen16(h: np.ndarray, bits: np.ndarray, brain: bool) -> None:
    """``bits[i]`` = the float32 pattern of the 16-bit pattern ``h[i]`` (uint16), exact:
    a bfloat16 (``brain``, a literal), whose bits are the top half of its float32's, or
    a binary16 (:func:`numerics.kernels.lanes.f32_of_f16_bits`; a NaN stays a NaN)."""
    for i in range(bits.size):
        if brain:
            bits[i] = shl32(_U32(h[i]), _U32(16))
        else:
            bits[i] = bits_of_f32(f32_of_f16_bits(h[i]))


@numba.njit(cache=True, nogil=True)
def rne16_span(h: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
               saturate: bool, brain: bool, count: bool) -> int:
    """Codes of the bfloat16 (``brain``) or binary16 patterns ``h[start:stop]`` (uint16,
    contiguous; a format :func:`fits` accepts for float32 input) rounded to
    nearest-even: each piece of :data:`_PIECE` widened to float32 exactly
    (:func:`_widen16`), then :func:`_rne32_block` on it from the L1 cache, so the
    input needs no float32 copy (``astype(np.float32)`` took 4 of the 5 passes over
    memory, and most of the time: 28 ms for 2**24 bfloat16 values to e4m3fn, 37 ms
    for binary16, against 6 ms from float32 on the Intel development machine).
    Returns the number of NaN inputs when ``count``, else 0."""
    nans = 0
    bits = np.empty(min(max(stop - start, 0), _PIECE), np.uint32)
    for lo in range(start, stop, _PIECE):
        hi = min(stop, lo + _PIECE)
        piece = bits[:hi - lo]
        if brain:
            _widen16(h[lo:hi], piece, True)
        else:
            _widen16(h[lo:hi], piece, False)
        _rne32_block(piece, out[lo:hi], P, saturate, False)
        if count:
            nans += count_nans(piece.view(np.float32))
    return nans


def rne16(h: np.ndarray, out: np.ndarray, P: np.ndarray, saturate: bool, brain: bool,
          count: bool) -> int:
    """:func:`rne16_span` of all of ``h`` on the threads; returns the number of NaN
    inputs when ``count``, else 0."""
    if serial(h.size, fast=True):
        return int(rne16_span(h, out, 0, h.size, P, saturate, brain, count))
    return sum(spread(lambda lo, hi: rne16_span(h, out, lo, hi, P, saturate, brain, count),
                      h.size, align=CHUNK))


@numba.njit(cache=True, nogil=True)
def round_rne_span(x: np.ndarray, values: np.ndarray, start: int, stop: int,
                   P: np.ndarray, saturate: bool, table: np.ndarray, count: bool) -> int:
    """The values ``x[start:stop]`` (float32/float64, contiguous, native byte order; a
    format :func:`fits` accepts, of at most 16 bits) round to, nearest-even:
    ``values[i] = table[c]`` where ``c`` is the code :func:`rne_span` gives and
    ``table`` the value of every code (float32 or float64).  float32 input takes
    :func:`_round32_loop` in blocks of :data:`CHUNK`; float64 input goes through a
    scratch piece of :data:`_PIECE` codes (read back from the L1 cache).  Returns the
    number of NaN inputs when ``count``, else 0.

    The float32 loop replaced the table route for float32 input, whose lookups were
    gathers: on 2**24 float32 (Intel development machine, one thread, float32 values)
    this function took 15.5 to 17 ms for bfloat16 and e4m3fn and 28 ms for e4m3fnuz,
    and takes 8.6 to 10 ms for all three, as long as ``np.copyto`` takes to move the
    same bytes."""
    nans = 0
    if x.itemsize == 4:
        bits = x.view(np.uint32)
        for lo in range(start, stop, CHUNK):
            hi = min(stop, lo + CHUNK)
            _round32_block(bits[lo:hi], values[lo:hi], P, saturate, table)
            if count:
                nans += count_nans(x[lo:hi])
        return nans
    codes = np.empty(min(max(stop - start, 0), _PIECE), np.uint32)
    for lo in range(start, stop, _PIECE):
        hi = min(stop, lo + _PIECE)
        piece = codes[:hi - lo]
        # a start of 0 as a variable: a constant would compile rne_span for Literal[0]
        nans += rne_span(x[lo:hi], piece, hi - hi, hi - lo, P, saturate, count)
        v = values[lo:hi]
        for i in range(hi - lo):
            v[i] = table[piece[i]]
    return nans


def round_rne(x: np.ndarray, values: np.ndarray, P: np.ndarray, saturate: bool,
              table: np.ndarray, count: bool) -> int:
    """:func:`round_rne_span` of all of ``x`` on the threads."""
    if serial(x.size):
        return int(round_rne_span(x, values, 0, x.size, P, saturate, table, count))
    return sum(spread(lambda lo, hi: round_rne_span(x, values, lo, hi, P, saturate, table,
                                                    count), x.size, align=CHUNK))


# ----------------------------------------------------------------- binary32 / binary64
@specialised
def _ieee32_loop(x: np.ndarray, out: np.ndarray, saturate: bool) -> None:
    """``out[i]`` = the binary32 value of ``x[i]`` (float32, or float64 rounded to
    nearest-even by the processor's conversion, with binary32's subnormals and overflow
    to infinity), as float32 or float64 (exact): a NaN becomes binary32's canonical
    quiet NaN with its sign; when ``saturate`` (a literal), an infinite result becomes
    the largest finite value of its sign."""
    for i in range(x.size):
        b = bits_of_f32(np.float32(x[i]))
        a = _U32(b & _U32(0x7FFFFFFF))
        sign = _U32(b & _U32(0x80000000))
        if np.int32(a) > np.int32(0x7F800000):
            b = _U32(sign | _U32(0x7FC00000))
        elif saturate and a == _U32(0x7F800000):
            b = _U32(sign | _U32(0x7F7FFFFF))
        out[i] = f32_of_bits(b)


@specialised
def _ieee64_loop(x: np.ndarray, out: np.ndarray, saturate: bool) -> None:
    """:func:`_ieee32_loop` for binary64: ``x`` (float32 or float64) is exact."""
    for i in range(x.size):
        b: Any = f64_bits(np.float64(x[i]))  # type: ignore[call-arg]
        a = b & _U64(0x7FFFFFFFFFFFFFFF)
        sign = b & _U64(0x8000000000000000)
        if a > _U64(0x7FF0000000000000):
            b = sign | _U64(0x7FF8000000000000)
        elif saturate and a == _U64(0x7FF0000000000000):
            b = sign | _U64(0x7FEFFFFFFFFFFFFF)
        out[i] = bits_f64(b)


@numba.njit(cache=True, nogil=True)
def ieee_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, single: bool,
              saturate: bool) -> None:
    """The values of ``x[start:stop]`` (float32 or float64) in binary32 (``single``) or
    binary64 into ``out[start:stop]`` (float32 or float64; a float array viewed from
    the codes gives the codes), for the formats with binary32's or binary64's
    parameters: the input rounded to nearest-even by the processor (binary32 from
    float64; exact otherwise, so the same in every rounding mode), a NaN as the
    canonical quiet NaN with its sign, an infinity as the largest finite value when
    ``saturate`` (:func:`numerics.codec.encode_exact`'s rules for these formats)."""
    xs, os_ = x[start:stop], out[start:stop]
    if single and saturate:
        _ieee32_loop(xs, os_, True)
    elif single:
        _ieee32_loop(xs, os_, False)
    elif saturate:
        _ieee64_loop(xs, os_, True)
    else:
        _ieee64_loop(xs, os_, False)


def ieee(x: np.ndarray, out: np.ndarray, single: bool, saturate: bool) -> None:
    """:func:`ieee_span` of all of ``x`` on the threads."""
    if serial(x.size, fast=True):
        ieee_span(x, out, 0, x.size, single, saturate)
        return
    spread(lambda lo, hi: ieee_span(x, out, lo, hi, single, saturate), x.size, align=CHUNK)

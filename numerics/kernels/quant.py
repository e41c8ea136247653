"""Compiled loops of block quantization: MX and NVFP4 quantize, block dequantize.

Each loop follows the reference of :mod:`numerics.quant` step by step, one block at a time:

* MX (:func:`mx_quantize`): the block's ``amax``; the exact shared exponent ``E`` of the
  chosen scale mode from the float64 exponent and significand of ``amax``
  (:func:`shared_exponent`, the rules of :mod:`numerics.quant.mx`); then every element
  ``x * 2**-E`` (exact) rounded once, to nearest even and saturating, by
  :func:`numerics.kernels.rounding.round_pair` (integer MXINT8 elements: ``k/64``, ties to
  even, clamped to ``[-128, 127]``).
* NVFP4 (:func:`block_amax`, then :func:`nvfp4_quantize`): the block scale
  ``RNE_e4m3(amax_b / (6 g))`` and every element ``RNE_e2m1(x / (s_b g))``, each rounded once
  from the float64 quotient and the exact sign of its remainder (:func:`divide_with_sticky`,
  claim Q11 of ``proofs/quantization_bounds.md``), passed to ``round_pair`` as a vanishing
  residual.
* Dequantize (:func:`block_dequantize`): ``table[code] * scale`` in float64 (exact, claim
  Q10), stored in the output's dtype.
* Scaled schemes (:func:`divide_round`, :func:`round_nudged`, :func:`decode_codes`): each
  ``x / S`` given as its float64 quotient and the sign of the remainder, rounded once by
  ``round_pair`` in any mode, stochastic rounding drawing from ``(seed, index)``; integer
  elements (int8, int4) by :func:`round_int` (:func:`divide_round_int`).

Arrays are viewed as ``(A, L, B)``: ``L`` is the blocked axis, ``A`` and ``B`` the products of
the axes before and after it, so every axis is blocked without a transpose.  Every loop is
a serial kernel over a range ``[start, stop)`` of blocks (or elements), ``xxx_span``; the
public function of the same name runs it on the threads with
:func:`numerics.kernels.spread.spread`.  A block's result depends on that block alone (an
element's on that element and its index), so the bits are the same for every thread count.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.formats import Format
from numerics.kernels.narrow import rne_code, rne_code_pair, rne_constants
from numerics.kernels.random import draw
from numerics.kernels.rounding import (
    MAGMASK,
    MODE_RNE,
    OVERFLOW_SATURATE,
    decode_one,
    format_params,
    round_pair,
    round_pair_rest,
)
from numerics.kernels.spread import spread

__all__ = [
    "NAN_EXPONENT",
    "SCALE_FLOOR",
    "SCALE_RCEIL",
    "SCALE_CEIL",
    "SCALE_EVEN",
    "block_amax",
    "block_amax_span",
    "block_dequantize",
    "block_dequantize_span",
    "decode_codes",
    "decode_codes_span",
    "dequantize_runs_span",
    "divide_rne_span",
    "divide_round",
    "divide_round_int",
    "divide_round_int_span",
    "divide_round_span",
    "divide_with_sticky",
    "mx_quantize",
    "mx_quantize_span",
    "mx_runs_span",
    "nvfp4_quantize",
    "nvfp4_quantize_span",
    "params_tuple",
    "quotient_rest",
    "round_nudged",
    "round_nudged_span",
    "row_products",
    "row_products_span",
    "shared_exponent",
]

#: A format's parameters: ``format_params(fmt)`` or its :func:`params_tuple`.
Params = Any

#: Scale-mode codes of :func:`shared_exponent` (the order of ``numerics.quant.SCALE_MODES``).
SCALE_FLOOR, SCALE_RCEIL, SCALE_CEIL, SCALE_EVEN = range(4)
#: What :func:`shared_exponent` returns for a NaN scale (E8M0 0xFF).
NAN_EXPONENT = 128

_SPLITTER = 134217729.0  # 2**27 + 1
# round_pair's arguments: nearest even, saturating, no random draw
_RNE = np.int64(MODE_RNE)
_SAT = np.int64(OVERFLOW_SATURATE)
_NO_DRAW = np.uint64(0)
_ONE_BIT = np.int64(1)
_TINY = 2.0**-1074
#: A vanishing residual's size relative to its quotient (:func:`_nudge`).
_RESIDUAL = 2.0**-80
#: Piece boundaries of the element loops (whole cache lines of every output dtype).
_ALIGN = 1024


@lru_cache(maxsize=64)
def params_tuple(fmt: Format) -> tuple[np.int64, ...]:
    """``format_params(fmt)`` as a tuple of int64: ``round_pair`` and ``decode_one`` read
    ``P[i]`` at constant indices, so a tuple serves as well as the array and spares the
    array's reference counting inside every call (about 1.3x per element)."""
    return tuple(np.int64(v) for v in format_params(fmt))


def _c_contiguous(*arrays: np.ndarray) -> bool:
    """Whether every array is C-contiguous, so that ``reshape(-1)`` is a view."""
    return all(a.flags.c_contiguous for a in arrays)


@numba.njit(cache=True, nogil=True)
def shared_exponent(amax: float, mode: int, emax_elem: int, t: int,
                    max_elem: float) -> int:
    """The clamped shared exponent ``E`` of a block with largest magnitude ``amax``, or
    :data:`NAN_EXPONENT` for a non-finite ``amax`` or ``E > 127``.

    ``amax = m * 2**ex`` with ``m`` in ``[0.5, 1)`` (frexp, exact): ``floor`` is
    ``ex - 1 - emax_elem``; ``ceil`` subtracts one less unless ``m == 0.5``; ``even`` adds
    the carry of rounding ``2m`` to ``t`` trailing bits with ties away
    (``m >= 1 - 2**-(t+2)``); ``rceil`` is ``ex - ex_max + (m > m_max)`` with
    ``max_elem = m_max * 2**ex_max``.
    """
    if not (amax <= 1.7976931348623157e308):  # NaN or inf
        return NAN_EXPONENT
    if amax == 0.0:
        return -127
    m, ex = math.frexp(amax)
    if mode == SCALE_FLOOR:
        e = ex - 1 - emax_elem
    elif mode == SCALE_CEIL:
        e = ex - emax_elem - (1 if m == 0.5 else 0)
    elif mode == SCALE_EVEN:
        e = ex - 1 - emax_elem + (1 if m >= 1.0 - math.ldexp(1.0, -(t + 2)) else 0)
    else:
        mm, em = math.frexp(max_elem)
        e = ex - em + (1 if m > mm else 0)
    if e < -127:
        e = -127
    if e > 127:
        return NAN_EXPONENT
    return e


@numba.njit(cache=True, nogil=True)
def _round_int_element(y: float, qmin: int, qmax: int, inv_quantum: float) -> int:
    """Two's-complement code of ``y`` rounded to the nearest multiple of the quantum, ties to
    even, clamped to ``[qmin, qmax]`` (the MXINT8 element; ``y * inv_quantum`` is exact)."""
    z = y * inv_quantum
    f = math.floor(z)
    d = z - f
    k = np.int64(f)
    if d > 0.5 or (d == 0.5 and (k & 1) == 1):
        k += 1
    k = max(qmin, min(qmax, k))
    return np.uint64(k & 0xFF)


@numba.njit(cache=True, nogil=True)
def mx_runs_span(x: np.ndarray, P: Params, emax_elem: int, t: int, max_elem: float,
                 mode: int, codes: np.ndarray, ecodes: np.ndarray, start: int,
                 stop: int) -> None:
    """Blocks ``start <= k < stop`` of :func:`mx_quantize` for contiguous blocks (the
    blocked axis last) and an element format :func:`numerics.kernels.narrow.fits_one`
    takes: block ``k`` is ``x[32k : 32k + 32]``, its scale code ``ecodes[k]``; the same
    steps in loops over runs, which vectorize."""
    C = rne_constants(P, True)
    for blk in range(start, stop):
        base = blk * 32
        run = x[base:base + 32]
        out = codes[base:base + 32]
        amax = 0.0
        nan_seen = False
        for i in range(32):
            v = abs(np.float64(run[i]))
            nan_seen |= v != v
            amax = max(amax, v)  # a NaN in the block is caught by nan_seen
        e = NAN_EXPONENT if nan_seen else shared_exponent(amax, mode, emax_elem, t, max_elem)
        if e == NAN_EXPONENT:
            ecodes[blk] = 0xFF
            out[:] = 0
            continue
        ecodes[blk] = e + 127
        inv = math.ldexp(1.0, -e)
        for i in range(32):  # exact product: a power of two
            out[i] = rne_code(np.float64(run[i]) * inv, C)


@numba.njit(cache=True, nogil=True)
def mx_quantize_span(x3: np.ndarray, P: Params, int_element: bool, qmin: int,
                     qmax: int, inv_quantum: float, emax_elem: int, t: int,
                     max_elem: float, mode: int, lean: bool, codes3: np.ndarray,
                     ecodes3: np.ndarray, start: int, stop: int) -> None:
    """Blocks ``start <= k < stop`` of :func:`mx_quantize`, any layout; block ``k`` is
    ``(a, lb, b)`` in C order over ``(A, L // 32, B)``."""
    A, L, B = x3.shape
    nlb = L // 32
    per_a = nlb * B
    for blk in range(start, stop):
        a = blk // per_a
        r = blk - a * per_a
        lb = r // B
        b = r - lb * B
        base = lb * 32
        amax = 0.0
        nan_seen = False
        for i in range(32):
            v = abs(np.float64(x3[a, base + i, b]))
            if v != v:
                nan_seen = True
            elif v > amax:
                amax = v
        e = NAN_EXPONENT if nan_seen else shared_exponent(amax, mode, emax_elem, t, max_elem)
        if e == NAN_EXPONENT:
            ecodes3[a, lb, b] = 0xFF
            for i in range(32):
                codes3[a, base + i, b] = 0
            continue
        ecodes3[a, lb, b] = e + 127
        inv = math.ldexp(1.0, -e)
        if lean:  # (the constants only exist for a format fits_one takes)
            C = rne_constants(P, True)
            for i in range(32):  # exact product: a power of two
                codes3[a, base + i, b] = rne_code(np.float64(x3[a, base + i, b]) * inv, C)
            continue
        for i in range(32):
            y = np.float64(x3[a, base + i, b]) * inv  # exact: a power of two
            if int_element:
                codes3[a, base + i, b] = _round_int_element(y, qmin, qmax, inv_quantum)
            else:
                codes3[a, base + i, b] = round_pair(y, 0.0, P, _RNE, _SAT, _NO_DRAW,
                                                    _ONE_BIT)


def mx_quantize(x3: np.ndarray, P: Params, int_element: bool, qmin: int,
                qmax: int, inv_quantum: float, emax_elem: int, t: int,
                max_elem: float, mode: int, lean: bool, codes3: np.ndarray,
                ecodes3: np.ndarray) -> None:
    """MX-quantize ``x3`` (shape ``(A, L, B)``, blocks of 32 along ``L``) into element codes
    ``codes3`` (same shape) and E8M0 scale codes ``ecodes3`` (``(A, L // 32, B)``), the
    blocks on the threads.

    ``P`` is the element format's ``format_params`` (unused for integer elements, which use
    ``qmin``, ``qmax`` and ``inv_quantum``); ``lean`` (a float element format that
    :func:`numerics.kernels.narrow.fits_one` takes) rounds with
    :func:`numerics.kernels.narrow.rne_code` instead of the general ``round_pair``."""
    A, L, B = x3.shape
    blocks = A * (L // 32) * B
    if lean and B == 1 and _c_contiguous(x3, codes3, ecodes3):  # runs of 32: flat loops
        x, codes, ecodes = x3.reshape(-1), codes3.reshape(-1), ecodes3.reshape(-1)
        spread(lambda lo, hi: mx_runs_span(x, P, emax_elem, t, max_elem, mode, codes,
                                           ecodes, lo, hi), blocks, unit=32)
        return
    spread(lambda lo, hi: mx_quantize_span(x3, P, int_element, qmin, qmax, inv_quantum,
                                           emax_elem, t, max_elem, mode, lean, codes3,
                                           ecodes3, lo, hi), blocks, unit=32)


@numba.njit(cache=True, nogil=True)
def block_amax_span(x3: np.ndarray, bs: int, amax3: np.ndarray, start: int,
                    stop: int) -> bool:
    """Blocks ``start <= k < stop`` of :func:`block_amax`; returns whether they hold a
    NaN."""
    A, L, B = x3.shape
    nlb = L // bs
    per_a = nlb * B
    nan_seen = False
    for blk in range(start, stop):
        a = blk // per_a
        r = blk - a * per_a
        lb = r // B
        b = r - lb * B
        amax = 0.0
        for i in range(bs):
            v = abs(np.float64(x3[a, lb * bs + i, b]))
            if v != v:
                nan_seen = True
            elif v > amax and v <= 1.7976931348623157e308:
                amax = v
        amax3[a, lb, b] = amax
    return nan_seen


def block_amax(x3: np.ndarray, bs: int, amax3: np.ndarray) -> bool:
    """Largest finite ``|x|`` of every block of ``bs`` along ``L`` into ``amax3``
    (``(A, L // bs, B)``), the blocks on the threads; returns whether ``x3`` holds a NaN."""
    A, L, B = x3.shape
    return any(spread(lambda lo, hi: block_amax_span(x3, bs, amax3, lo, hi),
                      A * (L // bs) * B, unit=bs))


@numba.njit(cache=True, nogil=True)
def _split(a: float) -> tuple[float, float]:
    """Veltkamp's split ``a = hi + lo`` into 26 and 27 significant bits (``|a| < 2**996``)."""
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


@numba.njit(cache=True, nogil=True)
def _two_prod(a: float, b: float, bh: float, bl: float) -> tuple[float, float]:
    """Dekker's TwoProduct with ``b = bh + bl`` split: ``p + e == a * b`` exactly (no
    overflow, no underflow)."""
    p = a * b
    ah, al = _split(a)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


@numba.njit(cache=True, nogil=True)
def _nudge(q: float, rem: float) -> float:
    """A residual with the sign of ``rem`` (0 for 0): ``2**-80 |q|``, far below half an ulp
    of ``q`` and a vanishing but nonzero part of a quantum of every format of at most 51
    significant bits.  Needs ``|q| >= 2**-994`` (no subnormal arithmetic, which is slow)."""
    if rem == 0.0:
        return 0.0
    return math.copysign(abs(q) * _RESIDUAL, rem)


@numba.njit(cache=True, nogil=True)
def divide_with_sticky(x: float, s: float) -> tuple[float, float]:
    """``(q, lo)``: ``q = fl64(x / s)`` and a vanishing residual ``lo`` with the sign of
    ``x/s - q`` (0 where the quotient is exact or a float64 subnormal; the smallest
    subnormal with the sign of ``x`` where it underflows to zero; the largest float64 and
    a residual away from zero where it overflows), for finite ``x`` and finite ``s > 0``
    (an infinite ``x`` gives ``(x, 0)``): ``round_pair(q, lo, ...)`` is the correct
    rounding of ``x / s`` into any format of at most 51 significant bits (claim Q11).

    The sign is exact: ``x`` and ``s`` are scaled by powers of two to significands in
    ``[0.5, 1)``, where TwoProduct gives ``q' s'`` exactly and the remainder ``x' - q' s'``
    of the correctly rounded quotient is itself a float64."""
    q = x / s
    if q == 0.0:  # x = 0 (exact) or an underflow, which rounds like a vanishing x/s
        return q, (0.0 if x == 0.0 else math.copysign(_TINY, x))
    if not abs(q) <= 1.7976931348623157e308:
        if abs(x) <= 1.7976931348623157e308:
            # a finite quotient beyond float64's range, and so beyond every element
            # format's: the largest float64 with a residual away from zero rounds as it
            # does (a directed mode toward zero gives the format's max, not infinity)
            big = math.copysign(1.7976931348623157e308, x)
            return big, big * _RESIDUAL
        return q, 0.0  # an infinite x: rounded as it is
    mx, ex = math.frexp(x)
    ms, es = math.frexp(s)
    qm = mx / ms
    if math.ldexp(qm, ex - es) != q:
        return q, 0.0  # the quotient is a float64 subnormal: far below every element grid
    sh, sl = _split(ms)
    p, err = _two_prod(qm, ms, sh, sl)
    rem = (mx - p) - err
    if rem == 0.0:
        return q, 0.0
    return q, math.copysign(max(abs(q) * _RESIDUAL, _TINY), rem)


@numba.njit(cache=True, nogil=True)
def _divide_by_split(x: float, s: float, sh: float, sl: float) -> tuple[float, float]:
    """:func:`divide_with_sticky` with ``s = sh + sl`` split once per block: in the range
    where neither TwoProduct nor the remainder can over- or underflow (``2**-900 <= |x|,
    |q|, s <= 2**900``) the remainder ``(x - q s)`` is computed directly (``x - p`` is exact
    by Sterbenz, and the remainder of a correctly rounded quotient is a float64)."""
    q, r, ok = _remainder(x, s, sh, sl)
    return (q, _nudge(q, r)) if ok else divide_with_sticky(x, s)


@numba.njit(cache=True, nogil=True)
def _remainder(x: float, s: float, sh: float, sl: float) -> tuple[float, float, bool]:
    """``(q, r, True)``: ``q = fl64(x / s)`` and its exact remainder ``r = x - q s`` (``x - p``
    is exact by Sterbenz, and the remainder of a correctly rounded quotient is a float64),
    where neither TwoProduct nor the remainder can over- or underflow (``2**-900 <= |x|,
    |q|, s <= 2**900``); ``(q, 0, False)`` elsewhere."""
    q = x / s
    if 1.2e-271 <= abs(x) <= 8.4e270 and 1.2e-271 <= abs(q) <= 8.4e270 \
            and 1.2e-271 <= s <= 8.4e270:  # (beyond, the caller's split of s overflows)
        p, err = _two_prod(q, s, sh, sl)
        return q, (x - p) - err, True
    return q, 0.0, False


@numba.njit(cache=True, nogil=True)
def nvfp4_quantize_span(x3: np.ndarray, amax3: np.ndarray, g3: np.ndarray, Pscale: Params,
                        Pelem: Params, elem_max: float, codes3: np.ndarray,
                        scode3: np.ndarray, scales3: np.ndarray, start: int,
                        stop: int) -> None:
    """Blocks ``start <= k < stop`` of :func:`nvfp4_quantize`; block ``k`` is
    ``(a, lb, b)`` in C order over ``(A, L // 16, B)``."""
    A, L, B = x3.shape
    nlb = L // 16
    per_a = nlb * B
    C = rne_constants(Pelem, True)
    for blk in range(start, stop):
        a = blk // per_a
        r = blk - a * per_a
        lb = r // B
        b = r - lb * B
        g = g3[a, lb, b]
        q, lo = divide_with_sticky(amax3[a, lb, b], elem_max * g)
        sc = round_pair(q, lo, Pscale, _RNE, _SAT, _NO_DRAW, _ONE_BIT)
        base = lb * 16
        if decode_one(sc, Pscale) == 0.0:
            for i in range(16):
                if np.isinf(x3[a, base + i, b]):  # infinities saturate: the largest scale
                    sc = round_pair(np.inf, 0.0, Pscale, _RNE, _SAT, _NO_DRAW, _ONE_BIT)
                    break
        scode3[a, lb, b] = sc
        s = decode_one(sc, Pscale) * g
        scales3[a, lb, b] = s
        if s == 0.0:
            for i in range(16):
                codes3[a, base + i, b] = 0
            continue
        sh, sl = _split(s)
        for i in range(16):
            v = np.float64(x3[a, base + i, b])
            if v == 0.0:
                y, ylo = v / s, 0.0
            elif abs(v) <= 1.7976931348623157e308:
                y, ylo = _divide_by_split(v, s, sh, sl)
            else:
                y, ylo = v, 0.0  # an infinity saturates
            codes3[a, base + i, b] = rne_code_pair(y, ylo, C)


def nvfp4_quantize(x3: np.ndarray, amax3: np.ndarray, g3: np.ndarray, Pscale: Params,
                   Pelem: Params, elem_max: float, codes3: np.ndarray,
                   scode3: np.ndarray, scales3: np.ndarray) -> None:
    """NVFP4-quantize ``x3`` (``(A, L, B)``, blocks of 16 along ``L``, no NaN) given each
    block's finite ``amax`` and tensor scale ``g`` (``(A, L // 16, B)``), the blocks on the
    threads.

    Block scale code ``scode = RNE_sat(amax / (elem_max * g))`` in ``Pscale`` (E4M3), its
    effective scale ``S = decode(scode) * g`` (exact) into ``scales3``, and element codes
    ``RNE_sat(x / S)`` in ``Pelem`` (E2M1, or a format
    :func:`numerics.kernels.narrow.fits_one` takes; code 0 where ``S`` is 0), from the
    quotient and its residual by :func:`numerics.kernels.narrow.rne_code_pair` (claim
    Q11; by ``round_pair`` it took 37 against 15 ms for 2**20 elements on one thread)."""
    A, L, B = x3.shape
    spread(lambda lo, hi: nvfp4_quantize_span(x3, amax3, g3, Pscale, Pelem, elem_max, codes3,
                                              scode3, scales3, lo, hi),
           A * (L // 16) * B, unit=16)


@numba.njit(cache=True, nogil=True)
def dequantize_runs_span(codes: np.ndarray, scales: np.ndarray, table: np.ndarray, bs: int,
                         out: np.ndarray, start: int, stop: int) -> None:
    """Blocks ``start <= k < stop`` of :func:`block_dequantize` for contiguous blocks (the
    blocked axis last): block ``k`` is ``codes[bs k : bs k + bs]``, its scale
    ``scales[k]``."""
    for blk in range(start, stop):
        s = scales[blk]
        base = blk * bs
        for i in range(bs):
            out[base + i] = table[codes[base + i]] * s


@numba.njit(cache=True, nogil=True)
def block_dequantize_span(codes3: np.ndarray, scales3: np.ndarray, table: np.ndarray,
                          bs: int, out3: np.ndarray, start: int, stop: int) -> None:
    """Blocks ``start <= k < stop`` of :func:`block_dequantize`, any layout; block ``k``
    is ``(a, lb, b)`` in C order over ``(A, L // bs, B)``."""
    A, L, B = codes3.shape
    nlb = L // bs
    per_a = nlb * B
    for blk in range(start, stop):
        a = blk // per_a
        r = blk - a * per_a
        lb = r // B
        b = r - lb * B
        s = scales3[a, lb, b]
        for i in range(bs):
            out3[a, lb * bs + i, b] = table[codes3[a, lb * bs + i, b]] * s


def block_dequantize(codes3: np.ndarray, scales3: np.ndarray, table: np.ndarray,
                     bs: int, out3: np.ndarray) -> None:
    """``out3 = table[codes3] * scale`` per block of ``bs`` along ``L`` (float64 product,
    exact for every block format here; stored in ``out3``'s dtype), the blocks on the
    threads.  With ``B == 1`` (the blocked axis last) and C-contiguous arrays, blocks are
    runs of ``bs``."""
    A, L, B = codes3.shape
    blocks = A * (L // bs) * B
    if B == 1 and _c_contiguous(codes3, scales3, out3):
        codes, scales, out = codes3.reshape(-1), scales3.reshape(-1), out3.reshape(-1)
        spread(lambda lo, hi: dequantize_runs_span(codes, scales, table, bs, out, lo, hi),
               blocks, unit=bs)
        return
    spread(lambda lo, hi: block_dequantize_span(codes3, scales3, table, bs, out3, lo, hi),
           blocks, unit=bs)


@numba.njit(cache=True, nogil=True)
def _quotient(x: np.ndarray, s: np.ndarray, i: int) -> tuple[float, float]:
    """:func:`divide_with_sticky` of ``x[i]`` by ``s[i]`` (by ``s[0]`` when ``s`` has
    one element)."""
    d = s[0] if s.size == 1 else s[i]
    sh, sl = _split(d)
    return _divide_by_split(x[i], d, sh, sl)


@numba.njit(cache=True, nogil=True)
def quotient_rest(x: float, d: float) -> tuple[float, float, int]:
    """``(q, lo, rest)`` with ``x / d = q + lo + rest * eps`` (``d > 0``): ``q = fl64(x /
    d)``, ``lo`` the nearest float64 to the exact residual ``r / d`` (``r = x - q d``, a
    float64) and ``rest`` the sign of ``r / d - lo``, for :func:`round_pair_rest`, whose
    stochastic rounding then uses the exact fraction (a sticky residual, as
    :func:`divide_with_sticky` gives, only decides ``floor(frac * 2**k)`` for ``k <=
    53 - p``).  Where a product could underflow (``|r| < 2**-960``, or ``x``, ``q``, ``d``
    outside ``[2**-900, 2**900]``) the residual is :func:`divide_with_sticky`'s and
    ``rest`` 0.

    Examples
    --------
    >>> q, lo, rest = quotient_rest(1.0, 3.0)  # 1/3 = q + lo + (a bit more)
    >>> from fractions import Fraction
    >>> Fraction(1, 3) - Fraction(q) - Fraction(lo) > 0, rest
    (True, 1)
    """
    dh, dl = _split(d)
    q, r, ok = _remainder(x, d, dh, dl)
    if not ok:
        q, lo = divide_with_sticky(x, d)
        return q, lo, 0
    if r == 0.0:
        return q, 0.0, 0
    lo = r / d
    if abs(r) >= 1.1e-289 and abs(lo) >= 2.3e-308:  # (2**-960; lo a normal number)
        p2, e2 = _two_prod(lo, d, dh, dl)
        t = (r - p2) - e2  # r - lo d: r - p2 exact (Sterbenz), the sign kept
        return q, lo, 1 if t > 0.0 else (-1 if t < 0.0 else 0)
    return q, _nudge(q, r), 0


@numba.njit(cache=True, nogil=True)
def divide_round_span(x: np.ndarray, s: np.ndarray, P: Params, mode: np.int64,
                      overflow: np.int64, seed: np.uint64, ubits: np.int64,
                      stochastic: bool, codes: np.ndarray, start: int, stop: int) -> None:
    """Elements ``start <= i < stop`` of :func:`divide_round`; stochastic rounding from
    the exact fraction (:func:`quotient_rest`)."""
    for i in range(start, stop):
        codes[i] = _quotient_code(x, s, i, P, mode, overflow, seed, ubits, stochastic)


@numba.njit(cache=True, nogil=True)
def _quotient_code(x: np.ndarray, s: np.ndarray, i: int, P: Params, mode: np.int64,
                   overflow: np.int64, seed: np.uint64, ubits: np.int64,
                   stochastic: bool) -> np.uint64:
    """The code of ``x[i] / s[i]`` (``s[0]`` when ``s`` has one element) in ``P``."""
    if stochastic:
        q, lo, rest = quotient_rest(x[i], s[0] if s.size == 1 else s[i])
        u = draw(seed, np.uint64(i), ubits)
        return round_pair_rest(q, lo, rest, P, mode, overflow, u, ubits)
    q, lo = _quotient(x, s, i)
    return round_pair(q, lo, P, mode, overflow, np.uint64(0), ubits)


@numba.njit(cache=True, nogil=True)
def divide_rne_span(x: np.ndarray, s: np.ndarray, P: Params, saturate: bool,
                    codes: np.ndarray, start: int, stop: int) -> None:
    """Elements ``start <= i < stop`` of :func:`divide_round` to nearest-even in a format
    :func:`numerics.kernels.narrow.fits_one` takes: the quotient and its residual rounded
    to odd in binary32, then in 32-bit lanes
    (:func:`numerics.kernels.narrow.rne_code_pair`) rather than by ``round_pair``."""
    C = rne_constants(P, saturate)
    for i in range(start, stop):
        q, lo = _quotient(x, s, i)
        codes[i] = rne_code_pair(q, lo, C)


def divide_round(x: np.ndarray, s: np.ndarray, P: Params, mode: np.int64,
                 overflow: np.int64, seed: np.uint64, ubits: np.int64, stochastic: bool,
                 codes: np.ndarray, lanes: bool = False) -> None:
    """``codes[i]``: ``x[i] / s[i]`` (float64, ``s[i]`` finite and positive; one ``s`` for
    every element when it has one element) rounded once
    into ``P`` by ``round_pair`` from its float64 quotient and the exact sign of the
    remainder (:func:`divide_with_sticky`; an infinite or NaN ``x[i]`` is rounded as it
    is), the elements on the threads; stochastic rounding draws element ``i``'s ``ubits``
    bits from ``(seed, i)``.  The scaled schemes' elements in one pass: the quotient and
    its sign in numpy arrays, then :func:`round_nudged`, took about 100 ns and 80 bytes
    of temporaries per element.  ``lanes`` (nearest-even into a format
    :func:`numerics.kernels.narrow.fits_one` takes, saturating or not) takes
    :func:`divide_rne_span`: 15 against 33 ms (:func:`divide_round_span`) for
    2**20 elements to e4m3fn (one thread, Intel development machine)."""
    if lanes:
        saturate = overflow == OVERFLOW_SATURATE
        spread(lambda lo, hi: divide_rne_span(x, s, P, saturate, codes, lo, hi), x.size,
               align=_ALIGN)
        return
    spread(lambda lo, hi: divide_round_span(x, s, P, mode, overflow, seed, ubits, stochastic,
                                            codes, lo, hi),
           x.size, align=_ALIGN)


@numba.njit(cache=True, nogil=True)
def divide_round_int_span(x: np.ndarray, s: np.ndarray, P: Params, qmin: np.int64,
                          qmax: np.int64, mask: np.int64, mode: np.int64, seed: np.uint64,
                          ubits: np.int64, stochastic: bool, codes: np.ndarray, start: int,
                          stop: int, lanes: bool = False) -> None:
    """Elements ``start <= i < stop`` of :func:`divide_round_int`; ``lanes`` as for
    :func:`divide_round` (nearest-even, the grid's format taken by ``fits_one``)."""
    magnitude = np.uint64(P[MAGMASK])
    C = rne_constants(P, True)
    for i in range(start, stop):
        if lanes:
            q, lo = _quotient(x, s, i)
            c = np.uint64(rne_code_pair(q, lo, C))
        else:
            c = _quotient_code(x, s, i, P, mode, _SAT, seed, ubits, stochastic)
        n = np.int64(c & magnitude)
        k = -min(n, -qmin) if c > magnitude else min(n, qmax)
        codes[i] = np.uint8(k & mask)


def divide_round_int(x: np.ndarray, s: np.ndarray, P: Params, qmin: np.int64, qmax: np.int64,
                     bits: np.int64, mode: np.int64, seed: np.uint64, ubits: np.int64,
                     stochastic: bool, codes: np.ndarray, lanes: bool = False) -> None:
    """``codes[i]`` (uint8): the ``bits``-bit two's-complement code of ``x[i] / s[i]``
    (float64, ``s[i]`` finite and positive; one ``s`` for every element when it has one
    element) rounded once onto the integer grid ``k * quantum`` and clamped to ``[qmin,
    qmax]``, the elements on the threads.  ``P`` is the grid as a float format
    (``numerics.quant._core``: the grid points up to 255 quanta are its subnormals, so
    the magnitude code of a rounded value is its ``|k|``), rounded into by
    :func:`divide_round_span`'s steps: every mode, stochastic rounding from the exact
    fraction with element ``i``'s ``ubits``-bit draw from ``(seed, i)``; an infinity
    saturates, NaN gives 0 (the caller refuses it)."""
    mask = np.int64((1 << int(bits)) - 1)
    spread(lambda lo, hi: divide_round_int_span(x, s, P, qmin, qmax, mask, mode, seed,
                                                ubits, stochastic, codes, lo, hi, lanes),
           x.size, align=_ALIGN)


@numba.njit(cache=True, nogil=True)
def round_nudged_span(y: np.ndarray, st: np.ndarray, P: Params, mode: np.int64,
                      overflow: np.int64, seed: np.uint64, ubits: np.int64,
                      stochastic: bool, codes: np.ndarray, start: int, stop: int) -> None:
    """Elements ``start <= i < stop`` of :func:`round_nudged`."""
    for i in range(start, stop):
        hi = y[i]
        s = st[i]
        lo = 0.0
        if s != 0.0 and abs(hi) <= 1.7976931348623157e308:
            if hi == 0.0:
                hi = 0.0 if s > 0.0 else -0.0
                lo = _TINY if s > 0.0 else -_TINY
            else:
                lo = math.copysign(max(abs(hi) * _RESIDUAL, _TINY), s)
        u = draw(seed, np.uint64(i), ubits) if stochastic else np.uint64(0)
        codes[i] = round_pair(hi, lo, P, mode, overflow, u, ubits)


def round_nudged(y: np.ndarray, st: np.ndarray, P: Params, mode: np.int64,
                 overflow: np.int64, seed: np.uint64, ubits: np.int64, stochastic: bool,
                 codes: np.ndarray) -> None:
    """``codes[i]``: the exact value ``y[i] + st[i] * eps`` (``eps`` a vanishing positive
    amount, ``st`` in ``{-1, 0, 1}``) rounded once into ``P`` by ``round_pair``, the
    elements on the threads.

    The nudge goes to ``round_pair`` as the residual ``lo = st * max(2**-80 |y|, 2**-1074)``
    (at ``y = 0``: the sign of ``st`` on a zero and ``lo = st * 2**-1074``); stochastic
    rounding draws element ``i``'s ``ubits`` bits from ``(seed, i)``
    (:func:`numerics.kernels.random.draw`)."""
    spread(lambda lo, hi: round_nudged_span(y, st, P, mode, overflow, seed, ubits,
                                            stochastic, codes, lo, hi),
           y.size, align=_ALIGN)


@numba.njit(cache=True, nogil=True)
def decode_codes_span(codes: np.ndarray, P: Params, out: np.ndarray, start: int,
                      stop: int) -> None:
    """``out[i] = decode_one(codes[i], P)`` (float64) for ``start <= i < stop``."""
    for i in range(start, stop):
        out[i] = decode_one(np.uint64(codes[i]), P)


def decode_codes(codes: np.ndarray, P: Params, out: np.ndarray) -> None:
    """``out[i] = decode_one(codes[i], P)`` (float64), the elements on the threads."""
    spread(lambda lo, hi: decode_codes_span(codes, P, out, lo, hi), codes.size, align=_ALIGN)


@numba.njit(cache=True, nogil=True)
def row_products_span(a: np.ndarray, m: np.ndarray, out: np.ndarray, start: int,
                      stop: int) -> None:
    """Rows ``start <= i < stop`` of :func:`row_products`."""
    d, e = m.shape
    for i in range(start, stop):
        for k in range(e):
            out[i, k] = 0.0
        for j in range(d):
            aij = a[i, j]
            for k in range(e):  # (the lanes are the columns: each sum runs j = 0, 1, ...)
                out[i, k] += aij * m[j, k]


def row_products(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``a @ m`` (float64, C order) with every element summed over ``j`` in increasing
    order, one rounding per product and per addition: each row's result depends on that
    row alone, never on how many rows come with it (a BLAS product picks its kernel, and
    so its order of additions, by the shape), nor on the threads.

    Examples
    --------
    >>> row_products(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    a = np.ascontiguousarray(a, np.float64)
    m = np.ascontiguousarray(m, np.float64)
    out = np.empty((a.shape[0], m.shape[1]))
    spread(lambda lo, hi: row_products_span(a, m, out, lo, hi), a.shape[0],
           unit=m.shape[0] * m.shape[1])
    return out

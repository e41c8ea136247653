"""Encode and decode loops: every element through :mod:`numerics.kernels.rounding`.

Each kernel works on contiguous 1-D arrays (the public layer flattens and
reshapes).  The loop is the compiled ``*_span`` function, serial over the index
range ``[start, stop)``; the plain Python function of the same name without
``_span`` runs it over the whole array with :func:`numerics.kernels.spread.spread`
(one contiguous piece per thread, boundaries on multiples of :data:`CHUNK`; the
calling thread alone below ``PARALLEL_MIN`` elements) and combines the pieces'
results.  An element's code depends only on its value and, for stochastic
rounding, on ``draw(seed, index, ubits)`` with its flat index (see
:mod:`numerics.kernels.random`), so every thread count gives the same bits.
A span loops over the slices ``x[start:stop]`` from index 0 (the flat index is
``start + i``): an index starting at a run-time ``start`` could be negative, and
numba's wraparound check on it keeps the loop from vectorizing (decode about 4x
slower).

Inputs
------
``encode_float``   float32 or float64 values (each exact as a float64)
``encode_pairs``   exact values ``hi + lo`` (float64 pairs; see ``round_pair``)
``encode_ints``    int64 or uint64 values, exact at any size (``round_scaled``)
``encode_bits``    float32 or float64 values, branch-free (vectorized) for formats
                   :func:`fits_bits_kernel` accepts
``encode_stacked`` a (2, n) array of pairs (longdouble split into ``hi + lo``)
``encode_x87``     x86 80-bit extended values given as their 16-byte storage
                   (two uint64 words: the 64-bit significand, then sign and exponent)

Every encode kernel except ``encode_bits`` returns the flat index of the first NaN
input when the format has no NaN (the code written there is 0), else -1, so the
caller can apply its NaN policy; ``encode_bits`` returns the number of NaN inputs (when
asked: counting is a pass of its own).
``decode`` writes float32 or float64 values of the codes.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.lanes import f32_of_bits, f32_of_f16_bits, shl32
from numerics.kernels.narrow import count_nans
from numerics.kernels.random import GOLDEN, draw, fill, mix64, slots_log2
from numerics.kernels.rounding import (
    BITS,
    EMIN,
    INFMAG,
    MAGMASK,
    MAXMAG,
    MODE_RD,
    MODE_RNA,
    MODE_RNE,
    MODE_RTO,
    MODE_RTZ,
    MODE_RU,
    MODE_SR,
    MODE_SR_EXACT,
    NAN_IEEE,
    NAN_NEGZERO,
    NAN_NONE,
    NAN_TOP,
    NANKIND,
    NEGZERO,
    OVERFLOW_SATURATE,
    SIGNED,
    SUBN,
    T,
    W,
    decode_one,
    float_bits,
    round_pair,
    round_scaled,
)
from numerics.kernels.spread import serial, spread
from numerics.kernels.stream import map_into, wanted
from numerics.kernels.unpack import constants, decode32, quiet32

__all__ = [
    "CHUNK",
    "decode",
    "decode_scalar",
    "decode_span",
    "decode_table",
    "draws",
    "encode_bits",
    "encode_bits_span",
    "encode_float",
    "encode_float_span",
    "encode_ints",
    "encode_ints_span",
    "encode_pairs",
    "encode_pairs_span",
    "encode_scalar",
    "encode_scalar_sr",
    "encode_stacked",
    "encode_x87",
    "encode_x87_span",
    "fits_bits_kernel",
    "half",
    "half_span",
    "half_stream_span",
    "lookup",
    "lookup_span",
    "planned",
    "planned_span",
    "planned_stream_span",
    "quiet64",
    "quiet64_span",
    "widen",
    "widen64_span",
    "widen_span",
    "widen_stream_span",
]

#: The pieces of a threaded call start on multiples of this many elements.
CHUNK = 1 << 16
#: Stochastic rounding's draws are made this many at a time (32 KiB of uint64).
_PIECE = 4096

_U32 = np.uint32
_U64 = np.uint64
Int = Any  # a machine integer inside compiled code


@numba.njit(cache=True, nogil=True)
def encode_float_span(x: np.ndarray, out: np.ndarray, start: Int, stop: Int, P: np.ndarray,
                      mode: int, overflow: int, seed: Int, ubits: int) -> int:
    """Codes of float32/float64 ``x[start:stop]`` (each exact as a float64) into
    ``out[start:stop]``, any format, in rounding mode ``mode`` (element ``i`` draws
    ``draw(seed, i, ubits)`` for stochastic rounding).  Returns the index of the first
    NaN input in ``[start, stop)`` when the format has no NaN, else -1."""
    first_nan = -1
    no_nan = P[NANKIND] == NAN_NONE
    xs, os_ = x[start:stop], out[start:stop]
    if mode >= MODE_SR:
        for i in range(xs.size):
            v = np.float64(xs[i])
            u = draw(seed, _U64(start + i), ubits)  # type: ignore[arg-type]
            os_[i] = round_pair(v, 0.0, P, mode, overflow, u, ubits)
            if no_nan and v != v and first_nan < 0:
                first_nan = start + i
    else:
        for i in range(xs.size):
            v = np.float64(xs[i])
            os_[i] = round_pair(v, 0.0, P, mode, overflow, _U64(0), 1)
            if no_nan and v != v and first_nan < 0:
                first_nan = start + i
    return first_nan


@numba.njit(cache=True, nogil=True)
def encode_pairs_span(hi: np.ndarray, lo: np.ndarray, out: np.ndarray, start: int, stop: int,
                      P: np.ndarray, mode: int, overflow: int, seed: Int, ubits: int,
                      draws: np.ndarray) -> int:
    """Codes of the exact values ``hi[i] + lo[i]`` (float64 pairs; see ``round_pair``)
    for ``start <= i < stop`` into ``out[start:stop]``.  ``draws`` (when not empty)
    replaces the stream: element ``i``'s draw is ``draws[i]``.  Returns the index of the
    first NaN ``hi`` in ``[start, stop)`` when the format has no NaN, else -1."""
    first_nan = -1
    no_nan = P[NANKIND] == NAN_NONE
    given = draws.size > 0
    his, los, os_ = hi[start:stop], lo[start:stop], out[start:stop]
    for i in range(his.size):
        h = his[i]
        u = _U64(0)
        if mode >= MODE_SR:
            j = start + i
            u = draws[j] if given else draw(seed, _U64(j), ubits)  # type: ignore[arg-type]
        os_[i] = round_pair(h, los[i], P, mode, overflow, u, ubits)
        if no_nan and h != h and first_nan < 0:
            first_nan = start + i
    return first_nan


@numba.njit(cache=True, nogil=True)
def encode_ints_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
                     mode: int, overflow: int, seed: Int, ubits: int) -> int:
    """Codes of int64/uint64 ``x[start:stop]`` (exact at any size) into
    ``out[start:stop]``.  Returns -1 (an integer is never NaN)."""
    xs, os_ = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        negative = v < 0
        if negative:
            mag = _U64(0) - _U64(v)  # |v| modulo 2**64: exact also for -2**63
        else:
            mag = _U64(v)
        u = (draw(seed, _U64(start + i), ubits)  # type: ignore[arg-type]
             if mode >= MODE_SR else _U64(0))
        os_[i] = round_scaled(negative, mag, 0, False, P, mode, overflow, u, ubits)
    return -1


@numba.njit(cache=True, nogil=True)
def encode_x87_span(words: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
                    mode: int, overflow: int, seed: Int, ubits: int) -> int:
    """Codes of x86 extended-precision values ``start <= i < stop`` (exact) into
    ``out[start:stop]``: word ``2i`` is the significand (explicit leading bit), the low
    16 bits of word ``2i+1`` are the sign and the biased exponent.  Returns the index of
    the first NaN input in ``[start, stop)`` when the format has no NaN, else -1."""
    first_nan = -1
    no_nan = P[NANKIND] == NAN_NONE
    ws, os_ = words[2 * start:2 * stop], out[start:stop]
    for i in range(os_.size):
        sig = ws[2 * i]
        top = ws[2 * i + 1] & _U64(0xFFFF)
        negative = (top >> _U64(15)) != _U64(0)
        field = np.int64(top & _U64(0x7FFF))
        u = (draw(seed, _U64(start + i), ubits)  # type: ignore[arg-type]
             if mode >= MODE_SR else _U64(0))
        if field == 0x7FFF:  # infinity (fraction 0) or NaN
            is_nan = (sig << _U64(1)) != _U64(0)
            special = np.nan if is_nan else np.inf
            os_[i] = round_pair(-special if negative else special, 0.0, P, mode, overflow,
                                u, ubits)
            if no_nan and is_nan and first_nan < 0:
                first_nan = start + i
            continue
        exp = max(field, 1) - 16383 - 63
        os_[i] = round_scaled(negative, sig, exp, False, P, mode, overflow, u, ubits)
    return first_nan


def _first(firsts: list[int]) -> int:
    """The first non-negative of the pieces' results (the flat index of the first NaN:
    the pieces come in index order), else -1."""
    for f in firsts:
        if f >= 0:
            return int(f)
    return -1


@numba.njit(cache=True, nogil=True)
def _split_bits(bits: Int, wide: bool, t: int, emin: int, subn: int,
                one_t: int) -> tuple[bool, int, np.uint64, int, np.uint64, np.uint64, np.uint64,
                                     int]:
    """Steps 1-2 of the reference for the bits of a float32/float64: sign, exponent field,
    trailing field, the shift to the format's quantum, the kept bits, the remainder, half
    a quantum and the truncated magnitude code."""
    mbits = 52 if wide else 23
    ibias = 1023 if wide else 127
    negative = (bits >> _U64(63 if wide else 31)) != _U64(0)
    field = np.int64((bits >> _U64(mbits)) & _U64(2047 if wide else 255))
    frac = bits & ((_U64(1) << _U64(mbits)) - _U64(1))
    sig = frac | ((_U64(1) << _U64(mbits)) if field > 0 else _U64(0))
    e = max(field, 1) - ibias  # the input's binade (normal inputs; subnormals lie below)
    b = max(e, emin)
    shift = b - t - e + mbits
    sc = min(shift, mbits + 2)
    kept = sig >> _U64(sc)
    rem = sig & ((_U64(1) << _U64(sc)) - _U64(1))
    half = (_U64(1) << _U64(sc)) >> _U64(1)
    c0 = ((b - emin + subn) << t) + np.int64(kept) - one_t
    return negative, field, frac, shift, kept, rem, half, c0


@numba.njit(cache=True, nogil=True)
def _assemble(mag: int, negative: bool, field: int, frac: Int, wide: bool, subn: int,
              maxmag: int, to_max_pos: bool, to_max_neg: bool, saturate: bool, big: Int,
              big_signed: bool, nan_code_pos: Int, nan_signed: bool, signed: bool,
              negzero: bool, unsigned_nan: Int, mask_signed: Int) -> Int:
    """Steps 4-5: overflow, specials, zero and the sign, from the rounded magnitude."""
    if subn == 0:
        mag = max(mag, 0)
    is_special = field == (2047 if wide else 255)
    is_nan = is_special & (frac != _U64(0))
    # an infinite input is exact, not a rounding overflow: only saturation gives max
    to_max = saturate if is_special else (to_max_neg if negative else to_max_pos)
    over = (mag > maxmag) | is_special
    code = _U64(mag)
    # without subnormals magnitude code 0 is -2**emin or 2**emin; a zero input gives +
    keep_sign = mag != 0 or negzero or (subn == 0 and (field != 0 or frac != _U64(0)))
    if over:
        code = _U64(maxmag) if to_max else big
        keep_sign = to_max or big_signed
    if is_nan:
        code = nan_code_pos
        keep_sign = nan_signed
    if not signed and (negative or (field == 0 and frac == _U64(0))) and not is_nan:
        code = unsigned_nan
    return code | (mask_signed if (negative and keep_sign) else _U64(0))


@numba.njit(cache=True, nogil=True)
def _sr_code(x: Any, u: Any, K: tuple[Any, ...]) -> Int:
    """The code of one float32/float64 ``x`` stochastically rounded with the draw ``u``
    (``K``: :func:`encode_bits_span`'s loop invariants)."""
    (wide, t, emin, subn, one_t, ubits, m_exact_sr, maxmag, to_max_pos, to_max_neg,
     saturate, big, big_signed, nan_code_pos, nan_signed, signed, negzero, unsigned_nan,
     mask_signed) = K
    bits: Any = float_bits(x)  # type: ignore[call-arg]
    negative, field, frac, shift, kept, rem, half, c0 = _split_bits(
        bits, wide, t, emin, subn, one_t)
    s = ubits - shift
    F = _U64(0)
    sticky = False
    if s >= 0:
        F = (rem << _U64(s)) if s < 64 else _U64(0)
    else:
        F = (rem >> _U64(-s)) if -s < 64 else _U64(0)
        sticky = (rem & ((_U64(1) << _U64(min(-s, 63))) - _U64(1))) != _U64(0) or (
            -s >= 64 and rem != _U64(0))
    up = (u < F) | (m_exact_sr & (u == F) & sticky)
    return _assemble(c0 + (1 if up else 0), negative, field, frac, wide, subn, maxmag,
                     to_max_pos, to_max_neg, saturate, big, big_signed, nan_code_pos,
                     nan_signed, signed, negzero, unsigned_nan, mask_signed)


@numba.njit(cache=True, nogil=True)
def encode_bits_span(x: np.ndarray, out: np.ndarray, start: int, stop: int, P: np.ndarray,
                     mode: int, overflow: int, seed: Int, ubits: int, count: bool) -> int:
    """Codes of float32/float64 ``x[start:stop]`` into ``out[start:stop]`` by the steps
    of ``round_pair``, written without branches on the element so the loop vectorizes:
    the mode enters as loop-invariant masks.  Needs ``t <= mbits`` and
    ``emin >= 1 - input bias`` (every binade of a normal input is a binade of the format
    or above ``emin``); see :func:`fits_bits_kernel`.  Returns the number of NaN inputs
    in ``[start, stop)`` when ``count``, else 0: a separate pass
    (:func:`numerics.kernels.narrow.count_nans`): carried through these loops, the count
    made them take 1.4 to 1.6 times as long on an Intel core."""
    wide = x.itemsize == 8
    t = P[T]
    emin = P[EMIN]
    subn = P[SUBN]
    maxmag = P[MAXMAG]
    infmag = P[INFMAG]
    kind = P[NANKIND]
    signed = P[SIGNED] != 0
    negzero = P[NEGZERO] != 0
    sign_bit = _U64(1) << _U64(P[BITS] - 1)
    nan_mag = np.int64(0)
    if kind == NAN_IEEE:
        nan_mag = (((1 << P[W]) - 1) << t) | ((1 << (t - 1)) if t > 0 else 0)
    elif kind == NAN_TOP:
        nan_mag = P[MAGMASK]
    # NaN code and its sign rule: IEEE/TOP keep the input's sign, NEGZERO is 0x80, none 0
    nan_code_pos = _U64(nan_mag) | (sign_bit if kind == NAN_NEGZERO else _U64(0))
    nan_signed = kind == NAN_IEEE or kind == NAN_TOP
    saturate = overflow == OVERFLOW_SATURATE
    # beyond max: +-max when rounding toward zero or saturating, else inf, else NaN, else max
    big_is_nan = infmag < 0 and kind != NAN_NONE
    big = _U64(infmag) if infmag >= 0 else (nan_code_pos if big_is_nan else _U64(maxmag))
    big_signed = not big_is_nan or nan_signed
    to_max_pos = saturate or mode == MODE_RTZ or mode == MODE_RTO or mode == MODE_RD
    to_max_neg = saturate or mode == MODE_RTZ or mode == MODE_RTO or mode == MODE_RU
    # rounding masks (loop-invariant)
    m_nearest = mode == MODE_RNE or mode == MODE_RNA
    m_rna = mode == MODE_RNA
    m_pos = mode == MODE_RU
    m_neg = mode == MODE_RD
    m_rto = mode == MODE_RTO
    m_sr = mode >= MODE_SR
    m_exact_sr = mode == MODE_SR_EXACT
    one_t = np.int64(1) << t
    mask_signed = sign_bit if signed else _U64(0)
    unsigned_nan = _U64(nan_mag)  # e8m0fnu: zero and negative inputs
    xs, os_ = x[start:stop], out[start:stop]
    if m_sr:
        mixed = mix64(_U64(seed))
        K = (wide, t, emin, subn, one_t, ubits, m_exact_sr, maxmag, to_max_pos, to_max_neg,
             saturate, big, big_signed, nan_code_pos, nan_signed, signed, negzero,
             unsigned_nan, mask_signed)
        if slots_log2(ubits) == 0:
            # one draw per word, hashed in the loop: (start + i) * GOLDEN carried from
            # element to element, an addition where a product would cost the vectorized
            # loop a 64-bit multiply
            drop = _U64(64 - ubits)
            spread_index = _U64(start) * GOLDEN
            for i in range(xs.size):
                os_[i] = _sr_code(xs[i], mix64(mixed ^ spread_index) >> drop, K)
                spread_index += GOLDEN
            return count_nans(xs) if count else 0
        # several draws per word: a piece's draws at a time (random.fill hashes each
        # word once)
        buffer = np.empty(min(xs.size, _PIECE), np.uint64)
        for lo in range(0, xs.size, _PIECE):
            xp, op = xs[lo:lo + _PIECE], os_[lo:lo + _PIECE]
            draws = buffer[:xp.size]
            fill(draws, mixed, start + lo, ubits)
            for i in range(xp.size):
                op[i] = _sr_code(xp[i], draws[i], K)
        return count_nans(xs) if count else 0
    for i in range(xs.size):
        bits: Any = float_bits(xs[i])  # type: ignore[call-arg]
        negative, field, frac, shift, kept, rem, half, c0 = _split_bits(
            bits, wide, t, emin, subn, one_t)
        odd = (c0 & 1) != 0
        inexact = rem != _U64(0)
        nearest_up = (rem > half) | ((rem == half) & (m_rna | odd))
        up = inexact & ((m_nearest & nearest_up) | (m_pos & (not negative))
                        | (m_neg & negative) | (m_rto & (not odd)))
        os_[i] = _assemble(c0 + (1 if up else 0), negative, field, frac, wide, subn, maxmag,
                           to_max_pos, to_max_neg, saturate, big, big_signed, nan_code_pos,
                           nan_signed, signed, negzero, unsigned_nan, mask_signed)
    return count_nans(xs) if count else 0


def encode_bits(x: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int, overflow: int,
                seed: Int, ubits: int, count: bool) -> int:
    """:func:`encode_bits_span` of all of ``x`` on the threads; returns the number of NaN
    inputs when ``count``, else 0."""
    return sum(spread(lambda lo, hi: encode_bits_span(x, out, lo, hi, P, mode, overflow, seed,
                                                      ubits, count), x.size, align=CHUNK))


def fits_bits_kernel(P: np.ndarray, wide: bool) -> bool:
    """Whether the branch-free float kernel applies to the format ``P`` for float32
    (``wide=False``) or float64 input: every input binade maps to one of the format's
    binades or lies below ``emin``, and the codes fit in int64."""
    mbits, ibias = (52, 1023) if wide else (23, 127)
    t, emin = int(P[T]), int(P[EMIN])
    return t <= mbits and emin >= 1 - ibias and ((ibias + 2 - emin) << t) <= (1 << 63)


# ---------------------------------------------------------------- drivers
def encode_float(x: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int, overflow: int,
                 seed: Int, ubits: int) -> int:
    """:func:`encode_float_span` of all of ``x`` on the threads: the flat index of the
    first NaN input when the format has no NaN, else -1."""
    return _first(spread(lambda lo, hi: encode_float_span(x, out, lo, hi, P, mode, overflow,
                                                          seed, ubits), x.size, align=CHUNK))


def encode_pairs(hi: np.ndarray, lo: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int,
                 overflow: int, seed: Int, ubits: int, draws: np.ndarray) -> int:
    """:func:`encode_pairs_span` of all of ``hi + lo`` on the threads: the flat index of
    the first NaN input when the format has no NaN, else -1."""
    return _first(spread(lambda start, stop: encode_pairs_span(
        hi, lo, out, start, stop, P, mode, overflow, seed, ubits, draws), hi.size,
        align=CHUNK))


def encode_stacked(pair: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int,
                   overflow: int, seed: Int, ubits: int) -> int:
    """:func:`encode_pairs` for a C-contiguous (2, n) array of ``hi`` and ``lo`` (its rows
    are contiguous, so this shares :func:`encode_pairs_span`'s compiled code)."""
    return encode_pairs(pair[0], pair[1], out, P, mode, overflow, seed, ubits,
                        np.zeros(0, np.uint64))


@numba.njit(cache=True, nogil=True)
def encode_scalar(x: float, P: np.ndarray, mode: int, overflow: int) -> Int:
    """The code of one float64 in a deterministic mode."""
    return round_pair(x, 0.0, P, mode, overflow, _U64(0), 1)


@numba.njit(cache=True, nogil=True)
def encode_scalar_sr(x: float, P: np.ndarray, mode: int, overflow: int, seed: Int,
                     ubits: int) -> Int:
    """The code of one float64 stochastically rounded (``mode`` ``MODE_SR`` or
    ``MODE_SR_EXACT``) with the draw of element 0 of the stream of ``seed`` (an int64
    holding the 64-bit seed's bits)."""
    u = draw(_U64(seed), _U64(0), ubits)  # type: ignore[arg-type]
    return round_pair(x, 0.0, P, mode, overflow, u, ubits)


@numba.njit(cache=True, nogil=True)
def decode_scalar(code: int, P: np.ndarray) -> float:
    """The float64 value of one code."""
    return decode_one(_U64(code), P)


@numba.njit(cache=True, nogil=True)
def draws(seed: Int, n: int, bits: int) -> np.ndarray:
    """The draws of elements ``0 .. n-1`` (for the exact reference path)."""
    out = np.empty(n, np.uint64)
    for i in range(n):
        out[i] = draw(seed, _U64(i), bits)  # type: ignore[arg-type]
    return out


def encode_ints(x: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int, overflow: int,
                seed: Int, ubits: int) -> int:
    """:func:`encode_ints_span` of all of ``x`` on the threads; returns -1."""
    return _first(spread(lambda lo, hi: encode_ints_span(x, out, lo, hi, P, mode, overflow,
                                                         seed, ubits), x.size, align=CHUNK))


def encode_x87(words: np.ndarray, out: np.ndarray, P: np.ndarray, mode: int, overflow: int,
               seed: Int, ubits: int) -> int:
    """:func:`encode_x87_span` of all ``out.size`` values of ``words`` on the threads: the
    flat index of the first NaN input when the format has no NaN, else -1."""
    return _first(spread(lambda lo, hi: encode_x87_span(words, out, lo, hi, P, mode, overflow,
                                                        seed, ubits), out.size, align=CHUNK))


# ---------------------------------------------------------------- decoding
@numba.njit(cache=True, nogil=True)
def decode_span(codes: np.ndarray, out: np.ndarray, start: int, stop: int,
                P: np.ndarray) -> None:
    """Values of ``codes[start:stop]`` (validated) into float32/float64
    ``out[start:stop]``."""
    cs, os_ = codes[start:stop], out[start:stop]
    for i in range(cs.size):
        os_[i] = decode_one(_U64(cs[i]), P)


def decode(codes: np.ndarray, out: np.ndarray, P: np.ndarray) -> None:
    """:func:`decode_span` of all of ``codes`` on the threads."""
    if serial(codes.size):
        decode_span(codes, out, 0, codes.size, P)
        return
    spread(lambda lo, hi: decode_span(codes, out, lo, hi, P), codes.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def decode_table(P: np.ndarray, out: np.ndarray) -> None:
    """``out[c]`` = the value of code ``c`` for every code (formats up to 16 bits)."""
    for c in range(out.size):
        out[c] = decode_one(_U64(c), P)


@numba.njit(cache=True, nogil=True)
def _widen_block(codes: np.ndarray, out: np.ndarray, pad: Any, stream: bool) -> None:
    """:func:`widen_span` of one block, in 32-bit lanes (numba would type the shift of
    two uint32 values as uint64 and run the loop in 64-bit lanes)."""
    map_into(_widen_one, codes, out, pad, stream)


@numba.njit(cache=True, nogil=True)
def _widen_one(code: Any, pad: Any) -> Any:
    """One element of :func:`_widen_block`."""
    bits = shl32(_U32(code), pad)
    nan = np.int32(bits & _U32(0x7FFFFFFF)) > np.int32(0x7F800000)
    return _U32(bits | (_U32(0x400000) if nan else _U32(0)))


@numba.njit(cache=True, nogil=True)
def widen_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int, pad: Int) -> None:
    """float32 bits (``out``: uint32) of ``codes[start:stop]`` into ``out[start:stop]``,
    for a format with binary32's sign and exponent fields and ``23 - pad`` trailing bits
    (bfloat16: ``pad = 16``, ``0 <= pad < 32``): a shift, and NaNs made quiet; as one
    block that indexes from 0 so the loop vectorizes."""
    _widen_block(codes[start:stop], out[start:stop], _U32(pad), False)


@numba.njit(cache=True, nogil=True)
def widen_stream_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int,
                      pad: Int) -> None:
    """:func:`widen_span` with streaming stores (:mod:`numerics.kernels.stream`)."""
    _widen_block(codes[start:stop], out[start:stop], _U32(pad), True)


def widen(codes: np.ndarray, out: np.ndarray, pad: Int) -> None:
    """:func:`widen_span` (``out`` uint32: float32 bits; :func:`widen_stream_span` for a
    large span) or :func:`widen64_span` (``out`` float64: values) of all of ``codes``
    on the threads."""
    wide = out.dtype == np.float64
    if serial(codes.size, fast=True):
        (widen64_span if wide else widen_span)(codes, out, 0, codes.size, pad)
        return

    def span(lo: int, hi: int) -> None:
        kernel = widen64_span if wide else \
            widen_stream_span if wanted(out, lo, hi) else widen_span
        kernel(codes, out, lo, hi, pad)

    spread(span, codes.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def _widen64_block(codes: np.ndarray, out: np.ndarray, pad: Any) -> None:
    """:func:`widen64_span` of one block."""
    for i in range(codes.size):
        out[i] = np.float64(f32_of_bits(shl32(_U32(codes[i]), pad)))


@numba.njit(cache=True, nogil=True)
def widen64_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int,
                 pad: Int) -> None:
    """float64 values of ``codes[start:stop]`` into ``out[start:stop]`` for the formats
    :func:`widen_span` takes: the float32 of the shifted bits, widened by the processor
    (exact; a NaN keeps its sign and payload with the quiet bit set, as
    :func:`decode_one` gives)."""
    for lo in range(start, stop, CHUNK):
        hi = min(stop, lo + CHUNK)
        _widen64_block(codes[lo:hi], out[lo:hi], _U32(pad))


@numba.njit(cache=True, nogil=True)
def quiet64_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int) -> None:
    """The float64 bits (``out``: uint64) of binary64 ``codes[start:stop]``: the codes,
    a NaN's quiet bit set (:func:`decode_one`)."""
    cs, os_ = codes[start:stop], out[start:stop]
    for i in range(cs.size):
        b = _U64(cs[i])
        nan = (b & _U64(0x7FFFFFFFFFFFFFFF)) > _U64(0x7FF0000000000000)
        os_[i] = b | (_U64(1 << 51) if nan else _U64(0))


def quiet64(codes: np.ndarray, out: np.ndarray) -> None:
    """:func:`quiet64_span` of all of ``codes`` on the threads."""
    if serial(codes.size, fast=True):
        quiet64_span(codes, out, 0, codes.size)
        return
    spread(lambda lo, hi: quiet64_span(codes, out, lo, hi), codes.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def _half_block(codes: np.ndarray, out: np.ndarray, stream: bool) -> None:
    """:func:`half_span` of one block."""
    map_into(_half_one, codes, out, 0, stream)


@numba.njit(cache=True, nogil=True)
def _half_one(code: Any, unused: int) -> Any:
    """One element of :func:`_half_block`."""
    return f32_of_f16_bits(code)


@numba.njit(cache=True, nogil=True)
def half_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int) -> None:
    """Values of binary16 ``codes[start:stop]`` (uint16) into float32/float64
    ``out[start:stop]`` by the processor's conversion (F16C ``vcvtph2ps``: exact; a NaN
    keeps its sign and payload with the quiet bit set, as :func:`decode_one` gives), in
    one block that indexes from 0 so the loop vectorizes."""
    _half_block(codes[start:stop], out[start:stop], False)


@numba.njit(cache=True, nogil=True)
def half_stream_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int) -> None:
    """:func:`half_span` with streaming stores (:mod:`numerics.kernels.stream`)."""
    _half_block(codes[start:stop], out[start:stop], True)


def half(codes: np.ndarray, out: np.ndarray) -> None:
    """:func:`half_span` (:func:`half_stream_span` for a large span) of all of ``codes``
    on the threads."""
    if serial(codes.size, fast=True):
        half_span(codes, out, 0, codes.size)
        return
    spread(lambda lo, hi: (half_stream_span if wanted(out, lo, hi) else half_span)(
        codes, out, lo, hi), codes.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def _planned_block(codes: np.ndarray, out: np.ndarray, d: np.ndarray, quiet: bool,
                   stream: bool) -> None:
    """:func:`planned_span` of one block."""
    map_into(_planned_one, codes, out, (constants(d), quiet), stream)


@numba.njit(cache=True, nogil=True)
def _planned_one(code: Any, C: Any) -> Any:
    """One element of :func:`_planned_block` (``C``: the constants and ``quiet``; the
    test on ``quiet`` is the same for every code, so the loop is split on it)."""
    D, quiet = C
    v = decode32(code, D)
    return quiet32(v) if quiet else v


@numba.njit(cache=True, nogil=True)
def planned_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int,
                 d: np.ndarray, quiet: bool) -> None:
    """Values of ``codes[start:stop]`` (uint8 or uint16) into float32/float64
    ``out[start:stop]`` by arithmetic: :func:`numerics.kernels.unpack.decode32` with the
    constants of the plan ``d`` (:func:`numerics.kernels.unpack.plan` with
    ``quiet=True``, which checked every code against the decode table), then, when
    ``quiet``, a NaN's quiet bit set; one block that indexes from 0 so the loop
    vectorizes.  A few lane operations a code, where a table lookup is a scalar
    load."""
    _planned_block(codes[start:stop], out[start:stop], d, quiet, False)


@numba.njit(cache=True, nogil=True)
def planned_stream_span(codes: np.ndarray, out: np.ndarray, start: Int, stop: Int,
                        d: np.ndarray, quiet: bool) -> None:
    """:func:`planned_span` with streaming stores (:mod:`numerics.kernels.stream`)."""
    _planned_block(codes[start:stop], out[start:stop], d, quiet, True)


def planned(codes: np.ndarray, out: np.ndarray, d: np.ndarray, quiet: bool) -> None:
    """:func:`planned_span` (:func:`planned_stream_span` for a large span) of all of
    ``codes`` on the threads."""
    if serial(codes.size, fast=True):
        planned_span(codes, out, 0, codes.size, d, quiet)
        return
    spread(lambda lo, hi: (planned_stream_span if wanted(out, lo, hi) else planned_span)(
        codes, out, lo, hi, d, quiet), codes.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def lookup_span(codes: np.ndarray, table: np.ndarray, out: np.ndarray, start: int,
                stop: int) -> None:
    """``out[i] = table[codes[i]]`` for ``start <= i < stop`` (codes validated to index
    the table)."""
    cs, os_ = codes[start:stop], out[start:stop]
    for i in range(cs.size):
        os_[i] = table[cs[i]]


def lookup(codes: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """:func:`lookup_span` of all of ``codes`` on the threads: ``out = table[codes]``."""
    if serial(codes.size, fast=True):
        lookup_span(codes, table, out, 0, codes.size)
        return
    spread(lambda lo, hi: lookup_span(codes, table, out, lo, hi), codes.size, align=CHUNK)


@numba.njit(cache=True, nogil=True)
def _codes_in_range(codes: np.ndarray, top: Any) -> bool:
    """Whether every code lies in ``[0, top]``: a min/max pass that vectorizes."""
    lo, hi = codes[0], codes[0]
    for i in range(codes.size):
        lo = min(lo, codes[i])
        hi = max(hi, codes[i])
    return lo >= 0 and hi <= top


@numba.njit(cache=True, nogil=True)
def first_bad_code_span(codes: np.ndarray, top: Any, start: int, stop: int) -> int:
    """The flat index of the first code of ``codes[start:stop]`` (an integer array) outside
    ``[0, top]`` (``top`` of the codes' type), or -1.  Blocks of :data:`CHUNK` are checked
    by :func:`_codes_in_range` and only a failing block is searched element by element."""
    for lo in range(start, stop, CHUNK):
        hi = min(stop, lo + CHUNK)
        block = codes[lo:hi]
        if _codes_in_range(block, top):
            continue
        for i in range(block.size):
            if block[i] < 0 or block[i] > top:
                return lo + i
    return -1


def first_bad_code(codes: np.ndarray, limit: int) -> int:
    """The flat index of the first of ``codes`` (an integer array) outside ``[0, limit)``,
    or -1 (:func:`first_bad_code_span` on the threads).

    Examples
    --------
    >>> import numpy as np
    >>> first_bad_code(np.array([3, 15, 16, 2], np.uint8), 16)
    2
    >>> first_bad_code(np.array([3, -1], np.int8), 256), first_bad_code(np.ones(5, np.uint8), 2)
    (1, -1)
    """
    # the largest valid code in the codes' own type, so every comparison stays in it
    top = codes.dtype.type(min(limit - 1, int(np.iinfo(codes.dtype).max)))
    if serial(codes.size, fast=True):
        return int(first_bad_code_span(codes, top, 0, codes.size))
    return _first(spread(lambda lo, hi: first_bad_code_span(codes, top, lo, hi), codes.size,
                         align=CHUNK))

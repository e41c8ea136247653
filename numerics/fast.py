"""Vectorized encode and decode kernels (the fast path).

Everything here works on float64 arrays (or float32 bit patterns) in
cache-sized chunks and is pinned by the tests to the exact scalar reference
in :mod:`numerics.codec` and to the peers (numpy, ml_dtypes, gfloat).

How a value is rounded
----------------------
A finite float64 ``x`` is ``M * 2**ue`` with an integer significand
``M < 2**53``.  For a target format with ``t`` trailing bits, the quantum of
the binade of ``x`` is ``2**q`` with ``q = max(e, emin) - t`` (``e`` the
exponent of ``x``).  Dropping the ``shift = q - ue`` low bits of ``M`` gives
the truncated significand ``kept`` and the remainder ``rem``; the truncated
magnitude code is then ``((max(e, emin) - emin + s) << t) + kept - 2**t``
(``s`` = 1 for formats with subnormals), a formula that carries naturally
into the next binade.  Every rounding mode is a choice of an increment of
``-1``, ``0`` or ``+1`` applied to that code: codes are monotone in the
magnitude, so the increment is right even where the quantum changes at a
power of two.

Exact values that are not a single float64 are passed as a pair
``hi + lo`` with ``hi = RNE64(hi + lo)``.  Every rounding boundary of a format
narrower than binary64 (a representable value or a midpoint) is a float64, so
it cannot lie strictly between ``hi`` and the exact value: ``lo`` only matters
through its sign when ``hi`` sits exactly on a boundary (and, for stochastic
rounding, through its size).

Fast paths (each pinned to :func:`encode_pair` and the reference by the tests)
-------------------------------------------------------------------------------
* Table look-ups: for ``t <= 7`` the rounding of a float32 (float64) is decided by
  its top ``t + 10`` (``t + 13``) bits plus one sticky bit for everything below;
  the sticky bit is folded into the index with integer adds, and a table built
  once per (format, rounding, overflow) by :func:`encode_pair` gives the code.
* bfloat16 round-to-nearest-even from float32: add ``0x7FFF`` plus the kept lsb.
* Stochastic rounding of float32: add random bits under the quantum, truncate
  (see :func:`_stochastic_f32`).
* Decoding byte formats: one look-up in a 65536-entry table of value pairs
  decodes two codes.
"""

from __future__ import annotations

import sys
from functools import lru_cache

import numpy as np

from numerics.formats import Format, Infinity, NaNEncoding

__all__ = [
    "CHUNK",
    "decode_codes",
    "encode_f32_bits",
    "encode_f64",
    "encode_pair",
]

#: Elements per chunk: intermediates of this size stay in the L2 cache.
CHUNK = 1 << 15

_MASK52 = np.uint64((1 << 52) - 1)
_IMPLICIT = np.uint64(1 << 52)
_ROUND_DOWN, _ROUND_UP, _NEAREST_EVEN, _NEAREST_AWAY, _ODD, _STOCHASTIC = range(6)


class NaNInputError(ValueError):
    """Raised for a NaN input into a format that has no NaN."""


def _mode_direction(rounding: str, neg: np.ndarray) -> np.ndarray | int:
    """Per element: the magnitude-level mode for the directed roundings."""
    if rounding in ("rtz", "sr_trunc"):
        return _ROUND_DOWN
    if rounding == "ru":
        return np.where(neg, _ROUND_DOWN, _ROUND_UP)
    if rounding == "rd":
        return np.where(neg, _ROUND_UP, _ROUND_DOWN)
    return {"rne": _NEAREST_EVEN, "rna": _NEAREST_AWAY, "rto": _ODD, "sr": _STOCHASTIC}[rounding]


def _encode_chunk(
    hi: np.ndarray,
    lo: np.ndarray | None,
    fmt: Format,
    rounding: str,
    overflow: str,
    uniform: np.ndarray | None,
    sr_bits: int | None,
    nan_policy: str,
) -> np.ndarray:
    """Encode one chunk of exact values ``hi + lo``; returns uint64 codes."""
    t = fmt.trailing_bits
    emin = fmt.emin
    u = hi.view(np.uint64)
    neg = (u >> np.uint64(63)).astype(bool)
    exp_field = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    special = exp_field == 0x7FF
    is_nan = special & ((u & _MASK52) != 0)
    is_inf = special & ~is_nan
    sig = (u & _MASK52) | np.where(exp_field > 0, _IMPLICIT, np.uint64(0))
    sig[special] = 0
    unit_exp = np.maximum(exp_field, 1) - 1075  # hi = sig * 2**unit_exp
    binade = np.maximum(exp_field - 1023, emin)  # exponent of the quantum's binade
    shift = binade - t - unit_exp  # >= 0 for every supported format
    shift_c = np.minimum(shift, 55).astype(np.uint64)
    kept = (sig >> shift_c).astype(np.int64)
    rem = sig & ((np.uint64(1) << shift_c) - np.uint64(1))
    half = np.where(shift_c > 0, np.uint64(1) << (shift_c - np.uint64(1)), np.uint64(1))
    code = ((binade - emin + int(fmt.subnormals)) << t) + kept - (1 << t)

    nonzero_rem = rem != 0
    if lo is None:
        sticky = np.zeros(hi.shape, np.int64)
    else:
        # Sign of the residual relative to the magnitude: +1 means |exact| > |hi|.
        sticky = np.sign(lo).astype(np.int64)
        sticky[neg] = -sticky[neg]
    just_below = ~nonzero_rem & (sticky < 0)  # exact magnitude a hair under the code's
    inexact = nonzero_rem | (sticky != 0)

    mode = _mode_direction(rounding, neg)
    if isinstance(mode, np.ndarray):  # ru / rd: down for one sign, up for the other
        up = mode == _ROUND_UP
        inc = np.where(up, nonzero_rem | (sticky > 0), -just_below.astype(np.int64))
    elif mode == _ROUND_DOWN:
        inc = -just_below.astype(np.int64)
    elif mode in (_NEAREST_EVEN, _NEAREST_AWAY):
        at_half = (rem == half) & nonzero_rem
        above = (rem > half) | (at_half & (sticky > 0))
        tie = at_half & (sticky == 0)
        if mode == _NEAREST_EVEN:
            tie &= (code & 1) == 1
        elif lo is not None:
            # binary64 target (shift 0): hi is already RNE, a positive half-quantum residual
            # is a tie that ties-away must break upward.
            quantum_half = np.ldexp(1.0, (binade - t - 1).astype(np.int32))
            above |= (shift == 0) & (sticky > 0) & (np.abs(lo) == quantum_half)
        inc = above.astype(np.int64) + tie
    elif mode == _ODD:
        odd = (code & 1) == 1
        inc = (inexact & ~just_below & ~odd).astype(np.int64) - (just_below & ~odd)
    else:  # stochastic
        assert uniform is not None
        inc = _stochastic_increment(rem, shift, kept, binade, fmt, lo, sticky, uniform, sr_bits)
    code = code + inc

    if not fmt.subnormals:
        code = np.maximum(code, 0)  # nothing lies below the smallest value: clamp to it

    # Overflow: the code rounded with unbounded exponent lies beyond the largest finite one.
    maxc = np.int64(fmt.max_finite_code)
    over = (code > maxc) & ~special
    code = np.where(over | is_inf, maxc, code)

    # From here ``code`` is a magnitude and ``sign`` its sign bit (so 64-bit formats fit).
    result_zero = (code == 0) & fmt.has_zero & ~special
    if fmt.signed:
        sign = neg.copy() if fmt.has_negative_zero else neg & ~result_zero
    else:
        sign = np.zeros(hi.shape, bool)
        bad = neg & ~result_zero & ~is_nan
        if not fmt.has_zero:
            bad |= (sig == 0) & ~special
        if np.any(bad):
            if not fmt.has_nan:
                raise ValueError(f"negative input into the unsigned format {fmt.name}")
            code = np.where(bad, np.int64(fmt.code_of_nan), code)  # type: ignore[arg-type]

    if overflow == "ieee" and (fmt.has_infinity or fmt.has_nan):
        if isinstance(mode, np.ndarray):
            away = mode == _ROUND_UP
        else:
            away = rounding == "sr_trunc" or mode not in (_ROUND_DOWN, _ODD)
        to_big = (over & away) | is_inf
        if np.any(to_big):
            if fmt.has_infinity:
                code = np.where(to_big, np.int64(fmt.code_of_inf), code)  # type: ignore[arg-type]
            else:
                code, sign = _put_nan(code, sign, to_big, fmt)
    if np.any(is_nan):
        if not fmt.has_nan:
            if nan_policy != "zero":
                raise NaNInputError(int(np.flatnonzero(is_nan)[0]))
            code = np.where(is_nan, 0, code)
            sign = sign & ~is_nan
        else:
            code, sign = _put_nan(code, sign, is_nan, fmt)
    out = code.astype(np.uint64)
    if fmt.signed:
        out |= sign.astype(np.uint64) << np.uint64(fmt.bits - 1)
    return out


def _put_nan(code: np.ndarray, sign: np.ndarray, where: np.ndarray,
             fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Write the canonical NaN (magnitude and sign) where ``where`` holds."""
    if fmt.nan is NaNEncoding.NEGATIVE_ZERO:
        return np.where(where, 0, code), sign | where
    return np.where(where, np.int64(fmt.code_of_nan), code), sign  # type: ignore[arg-type]


def _stochastic_increment(rem: np.ndarray, shift: np.ndarray, kept: np.ndarray,
                          binade: np.ndarray, fmt: Format, lo: np.ndarray | None,
                          sticky: np.ndarray, uniform: np.ndarray,
                          sr_bits: int | None) -> np.ndarray:
    """Increment (-1, 0 or +1) of the truncated code under stochastic rounding.

    ``frac`` is the exact distance from the lower neighbour in quanta of the interval
    that holds the value; the result rounds up iff ``u < frac``, or with ``k = sr_bits``
    iff ``u * 2**k < floor(frac * 2**k)``.  Normally the lower neighbour is the truncated
    code; when ``hi`` sits on a representable value and ``lo`` points toward zero, it is
    the code below, whose quantum is half as large at the bottom of a binade.
    """
    neg_shift = (-np.minimum(shift, 2000)).astype(np.int32)
    frac = np.ldexp(rem.astype(np.float64), neg_shift)  # exact
    below = np.zeros(rem.shape, bool)
    if lo is not None:
        t = fmt.trailing_bits
        q = binade - t  # exponent of the quantum at hi
        tiny = np.ldexp(np.abs(lo), (-np.clip(q, -2000, 2000)).astype(np.int32))  # |lo| in quanta
        # keep the residual's sign even where its size underflows
        tiny = np.where(sticky != 0, np.maximum(tiny, 5e-324), 0.0)
        below = (rem == 0) & (sticky < 0)
        halved = below & (kept == (1 << t)) & (binade > fmt.emin)  # binade bottom: finer below
        tiny = np.where(halved, 2 * tiny, tiny)
        frac = np.where(below, 1.0 - tiny, frac + np.where(sticky > 0, tiny, -tiny))
    else:
        tiny = None
    if sr_bits is None:
        up = uniform < frac
    else:
        scaled = np.ldexp(frac, sr_bits)
        if tiny is not None:
            # floor((A - e) * 2**k) for tiny e > 0 with A * 2**k an integer is
            # A*2**k - ceil(e*2**k),
            # which float64 would round away when e is below its resolution.
            whole = np.ldexp(np.where(below, 1.0, np.ldexp(rem.astype(np.float64), neg_shift)),
                             sr_bits)
            exact_whole = (whole == np.floor(whole)) & (sticky < 0)
            scaled = np.where(exact_whole, whole - np.ceil(np.ldexp(tiny, sr_bits)), scaled)
        up = np.ldexp(uniform, sr_bits) < np.floor(scaled)
    return np.where(below, up.astype(np.int64) - 1, up.astype(np.int64))


def encode_pair(
    hi: np.ndarray,
    lo: np.ndarray | float | None,
    fmt: Format,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    rng: np.random.Generator | None = None,
    sr_bits: int | None = None,
    uniform: np.ndarray | None = None,
    nan: str = "raise",
) -> np.ndarray:
    """Encode the exact values ``hi + lo`` into ``fmt`` with one rounding.

    Parameters
    ----------
    hi : ndarray of float64
        ``RNE64(hi + lo)``: the exact value rounded to nearest-even binary64.
    lo : ndarray of float64, float or None
        The exact residual (``None`` or 0 when ``hi`` is exact).
    fmt : Format
        Target format.
    rounding, overflow : str
        See :mod:`numerics.rounding`.
    rng : numpy.random.Generator, optional
        Source of the stochastic-rounding draws.
    sr_bits : int, optional
        Random bits per stochastic rounding (``None``: 53-bit uniforms).
    uniform : ndarray of float64, optional
        The uniforms in [0, 1) deciding stochastic rounding, instead of ``rng``
        (a multiple of ``2**-sr_bits`` when ``sr_bits`` is given).
    nan : {"raise", "zero"}
        What a NaN becomes in a format without NaN.

    Returns
    -------
    ndarray
        Codes in ``fmt.code_dtype``, shaped like the broadcast of ``hi``, ``lo``.
    """
    hi = np.asarray(hi, np.float64)
    if lo is not None:
        lo_arr = np.asarray(lo, np.float64)
        if not lo_arr.any():
            lo_arr = None  # type: ignore[assignment]
        else:
            hi, lo_arr = np.broadcast_arrays(hi, lo_arr)
    else:
        lo_arr = None
    shape = hi.shape
    flat_hi = np.ascontiguousarray(hi.reshape(-1))
    flat_lo = None if lo_arr is None else np.ascontiguousarray(lo_arr.reshape(-1))
    flat_u = None if uniform is None else np.broadcast_to(
        np.asarray(uniform, np.float64), shape).reshape(-1)
    out = np.empty(flat_hi.size, fmt.code_dtype)
    for start in range(0, flat_hi.size, CHUNK):
        stop = min(start + CHUNK, flat_hi.size)
        draws = None
        if rounding == "sr":
            if flat_u is not None:
                draws = flat_u[start:stop]
            else:
                gen = rng if rng is not None else np.random.default_rng()
                if sr_bits is None:
                    draws = gen.random(stop - start)
                else:
                    draws = np.ldexp(gen.integers(0, 1 << sr_bits, stop - start,
                                                  dtype=np.uint64).astype(np.float64), -sr_bits)
        try:
            codes = _encode_chunk(flat_hi[start:stop],
                                  None if flat_lo is None else flat_lo[start:stop],
                                  fmt, rounding, overflow, draws, sr_bits, nan)
        except NaNInputError as err:
            index = start + int(err.args[0])
            raise ValueError(
                f"Got a NaN at flat index {index}, but {fmt.name} has no NaN "
                "(pass nan='zero' to map NaN to +0)"
            ) from None
        out[start:stop] = codes.astype(fmt.code_dtype)
    return out.reshape(shape)


def encode_f64(x: np.ndarray, fmt: Format, **options: object) -> np.ndarray:
    """Encode a float64 array (each value exact); see :func:`encode_pair`."""
    x = np.asarray(x, np.float64)
    rounding = str(options.get("rounding", "rne"))
    overflow = str(options.get("overflow", "ieee"))
    nan = str(options.get("nan", "raise"))
    if rounding != "sr" and x.size >= 4096:
        if rounding == "rne" and overflow == "ieee" and fmt.name in ("binary32", "binary16"):
            native = np.float32 if fmt.name == "binary32" else np.float16
            with np.errstate(over="ignore"):
                return _canonical_nans(x.astype(native).view(fmt.code_dtype), fmt)
        if _float32_table_applies(fmt):  # t <= 7: at most 2**21 entries, few of them touched
            table = _f64_table(fmt, rounding, overflow, nan)
            return _lookup(x.view(np.uint64), table, fmt, 51 - fmt.trailing_bits, nan, x)
    return encode_pair(x, None, fmt, **options)  # type: ignore[arg-type]


def _canonical_nans(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """Replace IEEE NaN codes by the canonical quiet NaN of the same sign."""
    mag = codes & fmt.code_dtype.type(fmt.magnitude_mask)
    nan = mag > fmt.code_dtype.type(fmt.code_of_inf)
    if nan.any():
        sign = codes[nan] & fmt.code_dtype.type(fmt.sign_mask)
        codes[nan] = sign | fmt.code_dtype.type(fmt.code_of_nan)
    return codes


# ---------------------------------------------------------------- table lookups
def _float32_table_applies(fmt: Format) -> bool:
    """Formats whose rounding is decided by the top bits of a float32 and a sticky bit."""
    return fmt.trailing_bits <= 7 and fmt.emin >= -127 and fmt.emax <= 127


def _f32_top_bits(fmt: Format) -> int:
    """Sign, 8 exponent bits, ``t`` kept bits and the round bit; one more when the format
    reaches below 2**-126, where float32 subnormals carry their leading one in the field."""
    return fmt.trailing_bits + 10 + max(0, -126 - fmt.emin)


@lru_cache(maxsize=128)
def _f32_table(fmt: Format, rounding: str, overflow: str, nan: str) -> np.ndarray:
    top = _f32_top_bits(fmt)
    low = 32 - top
    idx = np.arange(1 << (top + 1), dtype=np.uint32)
    pattern = ((idx >> np.uint32(1)) << np.uint32(low)) | (idx & np.uint32(1))
    with np.errstate(invalid="ignore"):
        values = pattern.view(np.float32).astype(np.float64)
    return encode_pair(values, None, fmt, rounding=rounding, overflow=overflow, nan="zero")


@lru_cache(maxsize=64)
def _f64_table(fmt: Format, rounding: str, overflow: str, nan: str) -> np.ndarray:
    # float64: sign, 11 exponent bits, t kept bits and the round bit.
    top = fmt.trailing_bits + 13
    low = 64 - top
    idx = np.arange(1 << (top + 1), dtype=np.uint64)
    pattern = ((idx >> np.uint64(1)) << np.uint64(low)) | (idx & np.uint64(1))
    values = pattern.view(np.float64)
    return encode_pair(values, None, fmt, rounding=rounding, overflow=overflow, nan="zero")


def _check_nan(values: np.ndarray, fmt: Format, nan: object) -> None:
    if nan == "raise" and not fmt.has_nan:
        flat_nan = np.flatnonzero(np.isnan(values.reshape(-1)))
        if flat_nan.size:
            raise ValueError(
                f"Got a NaN at flat index {int(flat_nan[0])}, but {fmt.name} has no NaN "
                "(pass nan='zero' to map NaN to +0)"
            )


def _lookup(bits: np.ndarray, table: np.ndarray, fmt: Format, low: int, nan: object,
            values: np.ndarray) -> np.ndarray:
    """Look codes up by the top bits of ``bits`` plus a sticky bit of the ``low`` rest."""
    _check_nan(values, fmt, nan)
    dt = bits.dtype.type
    flat = np.ascontiguousarray(bits.reshape(-1))
    out = np.empty(flat.size, table.dtype)
    below = dt((1 << (low - 1)) - 1)  # bits under the one we fold the sticky into
    fold = dt(1 << (low - 1))
    sh = dt(low - 1)
    buf = np.empty(min(CHUNK, flat.size), flat.dtype)
    for start in range(0, flat.size, CHUNK):
        stop = min(start + CHUNK, flat.size)
        chunk = flat[start:stop]
        b = buf[: stop - start]
        # b = (chunk | (((chunk & below) + below) & fold)) >> (low - 1): bit 0 becomes the
        # round-off sticky of the low bits.
        np.bitwise_and(chunk, below, out=b)
        np.add(b, below, out=b)
        np.bitwise_and(b, fold, out=b)
        np.bitwise_or(b, chunk, out=b)
        np.right_shift(b, sh, out=b)
        np.take(table, b, out=out[start:stop], mode="clip")
    return out.reshape(bits.shape)


def encode_f32(x: np.ndarray, fmt: Format, *, rounding: str, overflow: str, nan: str,
               rng: np.random.Generator | None = None,
               sr_bits: int | None = None) -> np.ndarray | None:
    """Encode a float32 array by the fastest exact route; ``None`` where none applies."""
    if rounding == "sr":
        if _float32_table_applies(fmt):
            return _stochastic_f32(x, fmt, overflow, nan, rng, sr_bits)
        return None
    if rounding == "rne" and overflow == "ieee":
        if fmt.name == "binary16":
            with np.errstate(over="ignore"):
                return _canonical_nans(x.astype(np.float16).view(np.uint16), fmt)
        if fmt.name == "bfloat16":
            return _bfloat16_rne(x, fmt)
    return encode_f32_bits(x, fmt, rounding=rounding, overflow=overflow, nan=nan)


def encode_f32_bits(x: np.ndarray, fmt: Format, *, rounding: str, overflow: str,
                    nan: str) -> np.ndarray | None:
    """Encode a float32 array by table lookup; ``None`` where no table applies."""
    if rounding == "sr" or not _float32_table_applies(fmt):
        return None
    table = _f32_table(fmt, rounding, overflow, nan)
    return _lookup(x.view(np.uint32), table, fmt, 32 - _f32_top_bits(fmt), nan, x)


def _bfloat16_rne(x: np.ndarray, fmt: Format) -> np.ndarray:
    """float32 -> bfloat16 with ties to even: add 0x7FFF plus the kept lsb, keep the top half.

    Infinities come out right; NaN inputs may carry into the exponent or the sign, so a
    chunk whose codes reach the all-ones exponent is redone for its NaNs.
    """
    flat = np.ascontiguousarray(x.reshape(-1)).view(np.uint32)
    out = np.empty(flat.size, np.uint16)
    step = 1 << 16
    buf = np.empty(min(step, flat.size), np.uint32)
    top = np.empty(min(step, flat.size), np.uint16)
    for start in range(0, flat.size, step):
        chunk = flat[start:start + step]
        b = buf[: chunk.size]
        o = out[start:start + step]
        np.right_shift(chunk, 16, out=b)
        np.bitwise_and(b, 1, out=b)
        np.add(b, 0x7FFF, out=b)
        np.add(b, chunk, out=b)
        np.right_shift(b, 16, out=o, casting="unsafe")
        exp = top[: chunk.size]
        np.bitwise_and(o, 0x7F80, out=exp)
        if exp.max() == 0x7F80:
            nan = (chunk & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
            sign = (chunk[nan] >> np.uint32(16)).astype(np.uint16) & np.uint16(0x8000)
            o[nan] = sign | np.uint16(0x7FC0)  # the canonical quiet NaN
    return out.reshape(x.shape)


@lru_cache(maxsize=64)
def _sr_table(fmt: Format, overflow: str) -> np.ndarray:
    """Truncation table for stochastic rounding: like ``rtz`` but overflowing like ``rne``,
    and with float32 NaN patterns standing for the infinity they were carried into."""
    top = _f32_top_bits(fmt)
    low = 32 - top
    idx = np.arange(1 << (top + 1), dtype=np.uint32)
    pattern = ((idx >> np.uint32(1)) << np.uint32(low)) | (idx & np.uint32(1))
    mag = pattern & np.uint32(0x7FFFFFFF)
    pattern = np.where(mag > 0x7F800000, (pattern & np.uint32(0x80000000)) | np.uint32(0x7F800000),
                       pattern)
    values = pattern.view(np.float32).astype(np.float64)
    return encode_pair(values, None, fmt, rounding="sr_trunc", overflow=overflow, nan="zero")


def _random_words(gen: np.random.Generator, size: int, width: int) -> np.ndarray:
    """``size`` uniform ``width``-bit words (8, 16 or 32) straight from the bit generator."""
    per = 64 // width
    raw = np.asarray(gen.bit_generator.random_raw((size + per - 1) // per), np.uint64)
    return raw.view({8: np.uint8, 16: np.uint16, 32: np.uint32}[width])[:size]


def _stochastic_f32(x: np.ndarray, fmt: Format, overflow: str, nan: str,
                    rng: np.random.Generator | None, sr_bits: int | None) -> np.ndarray:
    """Stochastic rounding of float32 values: add random bits under the quantum, truncate.

    Each element draws a word of ``w`` bits (8, 16 or 32: the smallest that holds ``k``,
    where ``k = sr_bits``, or 32); its top ``k`` bits ``r`` are the random bits.  In the
    normal range ``d = 23 - t`` bits are dropped; the bit pattern gets
    ``R = (2**k - 1 - r)`` aligned with the top of the dropped bits and is then truncated,
    which rounds away from zero iff ``r < floor(frac * 2**k)``: the rule of
    :func:`encode_pair` with ``uniform = r / 2**k``.  Adding to the pattern adds to the value
    because a carry into the next binade meets a quantum twice as large.  Values below
    ``2**emin``, float32 subnormals, infinities and NaNs go through :func:`encode_pair` with
    the same uniforms.
    """
    _check_nan(x, fmt, nan)
    k = 32 if sr_bits is None else sr_bits
    if k > 32:
        return encode_pair(x.astype(np.float64), None, fmt, rounding="sr", overflow=overflow,
                           rng=rng, sr_bits=sr_bits, nan=nan)
    gen = rng if rng is not None else np.random.default_rng()
    table = _sr_table(fmt, overflow)
    drop = 23 - fmt.trailing_bits
    width = 8 if k <= 8 else 16 if k <= 16 else 32
    ones = np.uint32((1 << width) - 1)
    rshift = np.uint32(width - min(k, drop))
    lshift = np.uint32(max(drop - k, 0))
    flat = np.ascontiguousarray(x.reshape(-1)).view(np.uint32)
    out = np.empty(flat.size, table.dtype)
    low = 32 - _f32_top_bits(fmt)
    below, fold, sh = np.uint32((1 << (low - 1)) - 1), np.uint32(1 << (low - 1)), np.uint32(low - 1)
    # Elements outside [2**emin, inf) by magnitude bits: |bits - lo| > span as unsigned.
    lo_bits = np.uint32(max(fmt.emin + 127, 1) << 23)
    span = np.uint32(0x7F800000 - 1 - int(lo_bits))
    slow_index: list[np.ndarray] = []
    slow_r: list[np.ndarray] = []
    rr_buf = np.empty(min(CHUNK, flat.size), np.uint32)
    for start in range(0, flat.size, CHUNK):
        chunk = flat[start:start + CHUNK]
        r = _random_words(gen, chunk.size, width)
        rr = rr_buf[: chunk.size]
        rr[...] = r
        rr ^= ones
        rr >>= rshift
        if lshift:
            rr <<= lshift
        rr += chunk
        t1 = rr & below
        t1 += below
        t1 &= fold
        t1 |= rr
        t1 >>= sh
        np.take(table, t1, out=out[start:start + CHUNK], mode="clip")
        mag = chunk & np.uint32(0x7FFFFFFF)
        mag -= lo_bits
        slow = np.flatnonzero(mag > span)
        if slow.size:
            slow_index.append(slow + start)
            slow_r.append(r[slow])
    if slow_index:
        index = np.concatenate(slow_index)
        words = np.concatenate(slow_r).astype(np.uint32)
        uniform = np.ldexp((words >> np.uint32(width - k)).astype(np.float64), -k)
        values = flat[index].view(np.float32).astype(np.float64)
        out[index] = encode_pair(values, None, fmt, rounding="sr", overflow=overflow,
                                 uniform=uniform, sr_bits=k, nan="zero")
    return out.reshape(x.shape)


# ---------------------------------------------------------------- decoding
@lru_cache(maxsize=64)
def decode_table(fmt: Format) -> np.ndarray:
    """float64 value of every code of a format of at most 16 bits."""
    codes = np.arange(fmt.num_codes, dtype=np.int64)
    return _decode_formula(codes, fmt)


def _decode_formula(codes: np.ndarray, fmt: Format) -> np.ndarray:
    t = fmt.trailing_bits
    mag = codes & fmt.magnitude_mask
    field_e = mag >> t
    frac = mag & ((1 << t) - 1)
    if fmt.subnormals:
        normal = field_e > 0
        sig = np.where(normal, frac + (1 << t), frac)
        exp = np.where(normal, field_e - fmt.bias, fmt.emin) - t
    else:
        sig = frac + (1 << t)
        exp = field_e - fmt.bias - t
    with np.errstate(over="ignore"):
        val = np.ldexp(sig.astype(np.float64), exp.astype(np.int32))
    if fmt.signed:
        val = np.where((codes & fmt.sign_mask) != 0, -val, val)
    if fmt.has_infinity:
        inf_mag = fmt.code_of_inf
        val = np.where(mag == inf_mag, np.copysign(np.inf, val), val)
    if fmt.nan is NaNEncoding.IEEE:
        val = np.where(mag > fmt.code_of_inf, np.nan, val)  # type: ignore[operator]
    elif fmt.nan is NaNEncoding.TOP:
        val = np.where(mag == fmt.magnitude_mask, np.nan, val)
    elif fmt.nan is NaNEncoding.NEGATIVE_ZERO:
        val = np.where(codes == fmt.sign_mask, np.nan, val)
    return val


def decode_codes(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """float64 values of validated integer ``codes``."""
    if codes.ndim == 0:
        return _decode_flat(codes.reshape(1), fmt).reshape(())
    return _decode_flat(codes, fmt)


def _decode_flat(codes: np.ndarray, fmt: Format) -> np.ndarray:
    if fmt.name == "binary64":
        return np.ascontiguousarray(codes, np.uint64).view(np.float64).copy()
    if fmt.name == "binary32":
        with np.errstate(invalid="ignore"):
            return np.ascontiguousarray(codes, np.uint32).view(np.float32).astype(np.float64)
    if fmt.name == "binary16":
        with np.errstate(invalid="ignore"):
            return np.ascontiguousarray(codes, np.uint16).view(np.float16).astype(np.float64)
    if fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.infinity is Infinity.IEEE \
            and fmt.bits <= 32:
        return _tf32_like(codes, fmt)
    if fmt.bits <= 8 and codes.dtype == np.uint8 and codes.size >= 4096 \
            and sys.byteorder == "little":
        return _take_pairs(fmt, codes)
    if fmt.bits <= 16:
        return _take(decode_table(fmt), codes)
    out = np.empty(codes.shape, np.float64)
    flat = codes.reshape(-1).astype(np.int64)
    o = out.reshape(-1)
    for start in range(0, flat.size, CHUNK):
        o[start:start + CHUNK] = _decode_formula(flat[start:start + CHUNK], fmt)
    return out


@lru_cache(maxsize=32)
def _pair_table(fmt: Format) -> np.ndarray:
    """Values of every pair of byte codes, as complex128 carriers of two float64s."""
    table = decode_table(fmt)
    index = np.arange(1 << 16)
    pairs = np.empty(1 << 16, np.complex128)
    view = pairs.view(np.float64).reshape(-1, 2)
    view[:, 0] = table[index & (fmt.num_codes - 1)]  # little-endian: low byte comes first
    view[:, 1] = table[(index >> 8) & (fmt.num_codes - 1)]
    return pairs


def _take_pairs(fmt: Format, codes: np.ndarray) -> np.ndarray:
    """Decode byte codes two at a time: one table look-up yields two float64 values."""
    flat = np.ascontiguousarray(codes.reshape(-1))
    out = np.empty(flat.size, np.float64)
    even = flat.size - flat.size % 2
    pairs = _pair_table(fmt)
    index = flat[:even].view(np.uint16)
    carrier = out[:even].view(np.complex128)
    step = CHUNK // 4
    for start in range(0, index.size, step):
        np.take(pairs, index[start:start + step], out=carrier[start:start + step],
                mode="clip")  # indices are in range: skip the bounds check
    if even < flat.size:
        out[even:] = decode_table(fmt)[flat[even:]]
    return out.reshape(codes.shape)


def _take(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` in cache-sized chunks."""
    flat = codes.reshape(-1)
    if flat.dtype.itemsize > 2:
        flat = flat.astype(np.intp)
    out = np.empty(flat.size, table.dtype)
    step = CHUNK // 2
    for start in range(0, flat.size, step):
        np.take(table, flat[start:start + step], out=out[start:start + step], mode="clip")
    return out.reshape(codes.shape)


def _tf32_like(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """Formats with binary32's exponent field (bfloat16, tf32): shift codes into float32 bits."""
    pad = np.uint32(23 - fmt.trailing_bits)
    flat = codes.reshape(-1)
    out = np.empty(flat.size, np.float64)
    buf = np.empty(min(CHUNK, flat.size), np.uint32)
    mag = np.uint32(fmt.magnitude_mask)
    for start in range(0, flat.size, CHUNK):
        chunk = flat[start:start + CHUNK]
        b = buf[: chunk.size]
        if fmt.bits == 16:
            b[...] = chunk
            b <<= np.uint32(16)
        else:
            sign = (chunk.astype(np.uint32) >> np.uint32(fmt.bits - 1)) << np.uint32(31)
            np.bitwise_and(chunk, mag, out=b, casting="unsafe")
            b <<= pad
            b |= sign
        with np.errstate(invalid="ignore"):  # signalling NaNs quieten silently
            out[start:start + CHUNK] = b.view(np.float32)
    return out.reshape(codes.shape)

"""Hash loops: byte hashes over the rows of a key matrix, the spatial and
polynomial hashes in uint32 or emulated float arithmetic, and XXH64 over the
fixed-size blocks of a byte buffer (the block digests of
:mod:`numerics.fingerprint`).

Each kernel hashes the keys (rows) ``start .. stop - 1`` in a serial loop
(``*_span``); its driver spreads the rows over the threads
(:mod:`numerics.kernels.spread`).  A key's hash depends only on its own bytes, so
the bits are the same for every thread count.
The rules are stated in :mod:`numerics.hashing`; the loops follow them step by
step:

* byte hashes read little-endian 32-bit words byte by byte (no unaligned loads,
  no dependence on the machine's byte order) and wrap every product and sum
  modulo ``2**32`` in uint32;
* emulated float steps compute in binary32 (``np.float32`` operands give IEEE
  single operations in numba) and round the binary32 result to the target
  format with ties to even (:func:`round_to_precision`), which is one correct
  rounding by the double-rounding argument of the package docstring (rule 2);
* an emulated value enters a XOR or the final reduction as its exact integer
  value modulo ``2**32`` (:func:`int_mod_2_32`).

Arithmetic codes: 0 uint32, 1 float32, 2 bfloat16, 3 float16.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Union

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.spread import spread

#: Scalars the kernels take: Python numbers or numpy scalars (numba types them alike).
Int = Union[int, np.integer]
Float = Union[float, np.floating]

__all__ = [
    "PARALLEL_MIN_WORK",
    "fnv1a32_rows",
    "fnv1a32_rows_span",
    "int_mod",
    "int_mod_2_32",
    "int_mod_2_32_array",
    "murmur3_rows",
    "murmur3_rows_span",
    "poly_float_rows",
    "poly_float_rows_span",
    "poly_uint_rows",
    "poly_uint_rows_span",
    "round_to_precision",
    "spatial_rows",
    "spatial_rows_span",
    "xxh32_rows",
    "xxh32_rows_span",
    "xxh64_blocks",
]

_M32 = np.uint64(0xFFFFFFFF)

#: Below this many element steps a call runs on one thread: waking the pool costs
#: more than the loop (and on a busy machine, far more).
PARALLEL_MIN_WORK = 1 << 20


def _byte_rows(span: Callable[..., None], keys: np.ndarray, *args: object) -> np.ndarray:
    """The uint32 hash of each row of ``keys`` by the row span ``span(keys, *args, out,
    start, stop)``, the rows on the threads."""
    out = np.empty(keys.shape[0], np.uint32)
    _rows(lambda lo, hi: span(keys, *args, out, lo, hi), keys)
    return out


def _rows(span: Callable[[int, int], None], arr: np.ndarray) -> None:
    """``span`` over the rows of ``arr`` on the threads, when there are at least
    :data:`PARALLEL_MIN_WORK` element steps (waking the pool costs more than a short
    loop, and on a busy machine far more)."""
    spread(span, arr.shape[0], unit=arr.shape[1], minimum=PARALLEL_MIN_WORK)


@numba.njit(cache=True, nogil=True)
def _rotl(x: Int, r: Int) -> np.uint32:
    return np.uint32((x << np.uint32(r)) | (x >> np.uint32(32 - r)))


@numba.njit(cache=True, nogil=True)
def _word(keys: np.ndarray, i: Int, j: Int) -> np.uint32:
    """The little-endian 32-bit word at bytes j .. j+3 of row i."""
    return (np.uint32(keys[i, j]) | (np.uint32(keys[i, j + 1]) << np.uint32(8))
            | (np.uint32(keys[i, j + 2]) << np.uint32(16))
            | (np.uint32(keys[i, j + 3]) << np.uint32(24)))


@numba.njit(cache=True, nogil=True)
def _mul(a: Int, b: Int) -> np.uint32:
    """``a * b mod 2**32`` (uint32 products wrap)."""
    return np.uint32((np.uint64(a) * np.uint64(b)) & _M32)


@numba.njit(cache=True, nogil=True)
def _add(a: Int, b: Int) -> np.uint32:
    return np.uint32((np.uint64(a) + np.uint64(b)) & _M32)


@numba.njit(cache=True, nogil=True)
def _fmix(h: Int, m1: Int, s1: Int, m2: Int, s2: Int,
          s3: Int) -> np.uint32:
    h ^= h >> np.uint32(s1)
    h = _mul(h, m1)
    h ^= h >> np.uint32(s2)
    h = _mul(h, m2)
    h ^= h >> np.uint32(s3)
    return np.uint32(h)


# ============================================================================ byte hashes
def fnv1a32_rows(keys: np.ndarray) -> np.ndarray:
    """FNV-1a (32-bit) of each row of a uint8 matrix."""
    return _byte_rows(fnv1a32_rows_span, keys)


@numba.njit(cache=True, nogil=True)
def fnv1a32_rows_span(keys: np.ndarray, out: np.ndarray,
                      start: int, stop: int) -> None:
    """:func:`fnv1a32_rows` of rows ``start .. stop - 1`` into ``out``."""
    rows = keys[start:stop]  # indexed from 0: no negative-index checks in the loop
    res = out[start:stop]
    length = rows.shape[1]
    for i in range(rows.shape[0]):
        h = np.uint32(0x811C9DC5)
        for j in range(length):
            h = _mul(h ^ np.uint32(rows[i, j]), np.uint32(0x01000193))
        res[i] = h


def murmur3_rows(keys: np.ndarray, seed: Int) -> np.ndarray:
    """MurmurHash3 x86_32 of each row of a uint8 matrix."""
    return _byte_rows(murmur3_rows_span, keys, seed)


@numba.njit(cache=True, nogil=True)
def murmur3_rows_span(keys: np.ndarray, seed: Int, out: np.ndarray,
                      start: int, stop: int) -> None:
    """:func:`murmur3_rows` of rows ``start .. stop - 1`` into ``out``."""
    rows = keys[start:stop]  # indexed from 0: no negative-index checks in the loop
    res = out[start:stop]
    length = rows.shape[1]
    c1, c2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
    nblocks = length // 4
    for i in range(rows.shape[0]):
        h = np.uint32(seed)
        for b in range(nblocks):
            k = _mul(_rotl(_mul(_word(rows, i, 4 * b), c1), 15), c2)
            h ^= k
            h = _add(_mul(_rotl(h, 13), np.uint32(5)), np.uint32(0xE6546B64))
        rest = length - 4 * nblocks
        if rest:
            k = np.uint32(0)
            for t in range(rest):
                k |= np.uint32(rows[i, 4 * nblocks + t]) << np.uint32(8 * t)
            h ^= _mul(_rotl(_mul(k, c1), 15), c2)
        h ^= np.uint32(length & 0xFFFFFFFF)
        res[i] = _fmix(h, np.uint32(0x85EBCA6B), 16, np.uint32(0xC2B2AE35), 13, 16)


def xxh32_rows(keys: np.ndarray, seed: Int) -> np.ndarray:
    """xxHash32 of each row of a uint8 matrix."""
    return _byte_rows(xxh32_rows_span, keys, seed)


@numba.njit(cache=True, nogil=True)
def xxh32_rows_span(keys: np.ndarray, seed: Int, out: np.ndarray,
                    start: int, stop: int) -> None:
    """:func:`xxh32_rows` of rows ``start .. stop - 1`` into ``out``."""
    rows = keys[start:stop]  # indexed from 0: no negative-index checks in the loop
    res = out[start:stop]
    length = rows.shape[1]
    p1, p2 = np.uint32(0x9E3779B1), np.uint32(0x85EBCA77)
    p3, p4, p5 = np.uint32(0xC2B2AE3D), np.uint32(0x27D4EB2F), np.uint32(0x165667B1)
    for i in range(rows.shape[0]):
        s = np.uint32(seed)
        j = 0
        if length >= 16:
            v1 = _add(_add(s, p1), p2)
            v2 = _add(s, p2)
            v3 = s
            v4 = np.uint32((np.uint64(s) + np.uint64(0x100000000) - np.uint64(p1)) & _M32)
            while j + 16 <= length:
                v1 = _mul(_rotl(_add(v1, _mul(_word(rows, i, j), p2)), 13), p1)
                v2 = _mul(_rotl(_add(v2, _mul(_word(rows, i, j + 4), p2)), 13), p1)
                v3 = _mul(_rotl(_add(v3, _mul(_word(rows, i, j + 8), p2)), 13), p1)
                v4 = _mul(_rotl(_add(v4, _mul(_word(rows, i, j + 12), p2)), 13), p1)
                j += 16
            h = _add(_add(_rotl(v1, 1), _rotl(v2, 7)), _add(_rotl(v3, 12), _rotl(v4, 18)))
        else:
            h = _add(s, p5)
        h = _add(h, np.uint32(length & 0xFFFFFFFF))
        while j + 4 <= length:
            h = _mul(_rotl(_add(h, _mul(_word(rows, i, j), p3)), 17), p4)
            j += 4
        while j < length:
            h = _mul(_rotl(_add(h, _mul(np.uint32(rows[i, j]), p5)), 11), p1)
            j += 1
        res[i] = _fmix(h, p2, 15, p3, 13, 16)


# ============================================================================ emulated floats
@numba.njit(cache=True, nogil=True)
def round_to_precision(x: Float, arith: Int) -> np.float32:
    """``x`` (a non-negative binary32) rounded to the arithmetic's format, ties to even.

    bfloat16 (p = 8) and binary16 (p = 11): keep the top ``p`` significant bits of
    the binary32 pattern, adding ``half - 1`` plus the lowest kept bit before
    truncating (a carry out of the significand bumps the exponent; past the
    largest finite binary32 it reaches the inf pattern).  binary16 then overflows
    to inf above 65504 (the values here are integers, never binary16 subnormals).
    """
    if arith <= 1:
        return np.float32(x)
    drop = np.uint32(16) if arith == 2 else np.uint32(13)
    bits = np.float32(x).view(np.uint32)
    if (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000):
        return np.float32(x)  # inf or NaN stays
    half = np.uint32(1) << (drop - np.uint32(1))
    bits = bits + (half - np.uint32(1)) + ((bits >> drop) & np.uint32(1))
    bits &= ~((np.uint32(1) << drop) - np.uint32(1))
    r = np.uint32(bits).view(np.float32)
    if arith == 3 and r > np.float32(65504.0):
        return np.float32(np.inf)
    return r


@numba.njit(cache=True, nogil=True)
def int_mod_2_32(v: Float) -> np.uint32:
    """Exact integer value mod ``2**32`` of a non-negative, finite, integer-valued float32.

    ``M * 2**(E - 150)`` with biased exponent ``E`` and 24-bit significand ``M``:
    for ``150 <= E < 182`` the residue is ``M << (E - 150)`` in uint32 (bits shifted
    out are multiples of ``2**32``); for ``E >= 182`` it is 0; for ``E < 150`` the
    value is an integer, so ``M >> (150 - E)`` drops only zeros (and the value 0,
    whose shift is at least 24, gives 0).
    """
    bits = np.float32(v).view(np.uint32)
    e = np.int64(bits >> np.uint32(23))
    m = (bits & np.uint32(0x7FFFFF)) | np.uint32(0x800000)
    if e >= 182:
        return np.uint32(0)
    if e >= 150:
        return np.uint32(m << np.uint32(e - 150))
    d = 150 - e
    if d >= 32:
        return np.uint32(0)
    return np.uint32(m >> np.uint32(d))


@numba.njit(cache=True, nogil=True)
def int_mod(v: Float, m: Int) -> np.uint64:
    """``v mod m`` for a non-negative, finite, integer-valued float32 ``v`` and an int
    ``1 <= m <= 2**32``, in integers: ``v = M * 2**s``; for ``s <= 39`` the value fits
    in uint64; above, ``(M mod m) * (2**s mod m)`` (square and multiply; every
    product of two residues is below ``2**64``)."""
    bits = np.float32(v).view(np.uint32)
    e = np.int64(bits >> np.uint32(23))
    if e == 0:
        return np.uint64(0)  # +0 (an integer-valued float32 is never subnormal)
    mant = np.uint64((bits & np.uint32(0x7FFFFF)) | np.uint32(0x800000))
    mod = np.uint64(m)
    s = e - 150
    if s <= 0:
        return (mant >> np.uint64(-s)) % mod if s > -64 else np.uint64(0)
    if s <= 39:
        return (mant << np.uint64(s)) % mod
    p = np.uint64(1) % mod
    base = np.uint64(2) % mod
    while s > 0:
        if s & 1:
            p = (p * base) % mod
        base = (base * base) % mod
        s >>= 1
    return ((mant % mod) * p) % mod


@numba.njit(cache=True, nogil=True)
def int_mod_2_32_array(v: np.ndarray) -> np.ndarray:
    """:func:`int_mod_2_32` of every element of a 1-D float32 array."""
    out = np.empty(v.shape[0], np.uint32)
    for i in range(v.shape[0]):
        out[i] = int_mod_2_32(v[i])
    return out


def spatial_rows(coords: np.ndarray, primes_u: np.ndarray, primes_f: np.ndarray,
                 table: Int, arith: Int) -> tuple[np.ndarray, np.ndarray]:
    """``XOR_i c[i] * primes[i] mod table`` per row of an int64 (n, d) matrix.

    ``primes_f`` holds the primes already rounded to the format (finite).  Returns
    the hashes and, per row, the first column whose emulated product overflows
    (-1 if none); such a row's hash is meaningless.
    """
    out = np.empty(coords.shape[0], np.uint32)
    bad = np.full(coords.shape[0], -1, np.int64)
    _rows(lambda lo, hi: spatial_rows_span(coords, primes_u, primes_f, table, arith, out,
                                           bad, lo, hi), coords)
    return out, bad


@numba.njit(cache=True, nogil=True)
def spatial_rows_span(coords: np.ndarray, primes_u: np.ndarray, primes_f: np.ndarray,
                      table: Int, arith: Int, out: np.ndarray, bad: np.ndarray,
                      start: int, stop: int) -> None:
    """:func:`spatial_rows` of rows ``start .. stop - 1`` into ``out`` and ``bad``."""
    rows = coords[start:stop]  # indexed from 0: no negative-index checks in the loop
    res = out[start:stop]
    first = bad[start:stop]
    d = rows.shape[1]
    for r in range(rows.shape[0]):
        h = np.uint32(0)
        for i in range(d):
            if arith == 0:
                h ^= _mul(np.uint32(rows[r, i]), primes_u[i])
            else:
                c = round_to_precision(np.float32(rows[r, i]), arith)
                prod = round_to_precision(c * primes_f[i], arith)
                if not math.isfinite(prod):
                    first[r] = i
                    break
                h ^= int_mod_2_32(prod)
        res[r] = np.uint32(np.uint64(h) % table)


def poly_uint_rows(tokens: np.ndarray, base: Int, modulus: Int) -> np.ndarray:
    """``h = (h * base + t) mod modulus`` per row, exact (``modulus <= 2**32``)."""
    out = np.empty(tokens.shape[0], np.uint32)
    _rows(lambda lo, hi: poly_uint_rows_span(tokens, base, modulus, out, lo, hi), tokens)
    return out


@numba.njit(cache=True, nogil=True)
def poly_uint_rows_span(tokens: np.ndarray, base: Int, modulus: Int, out: np.ndarray,
                        start: int, stop: int) -> None:
    """:func:`poly_uint_rows` of rows ``start .. stop - 1`` into ``out``."""
    rows = tokens[start:stop]  # indexed from 0: no negative-index checks in the loop
    res = out[start:stop]
    length = rows.shape[1]
    b = base % modulus
    wrap = modulus == np.uint64(1 << 32)  # uint32 wrap-around: a mask, not a division
    for r in range(rows.shape[0]):
        h = np.uint64(0)
        for j in range(length):
            # h, b < modulus <= 2**32 and t < 2**24: h*b + t <= (2**32 - 1)**2 + 2**24 < 2**64
            h = h * b + np.uint64(rows[r, j])
            h = (h & _M32) if wrap else h % modulus
        res[r] = np.uint32(h)


def poly_float_rows(tokens: np.ndarray, base_f: Float, mod_f: Float,
                    modulus: Int, arith: Int) -> tuple[np.ndarray, np.ndarray]:
    """``h = fmod(h * B + t, M)`` per row in emulated float arithmetic, then the exact
    integer value of ``h`` mod ``modulus``.

    Returns the hashes and per row ``2 * j + stage`` of the first overflow (stage 0:
    ``h*base``, 1: ``h*base + token``; -1 if none).  ``fmod`` of two representable
    numbers is exact and representable; for non-negative integers it is the integer
    remainder (:func:`int_mod`).
    """
    out = np.empty(tokens.shape[0], np.uint32)
    bad = np.full(tokens.shape[0], -1, np.int64)
    _rows(lambda lo, hi: poly_float_rows_span(tokens, base_f, mod_f, modulus, arith, out,
                                              bad, lo, hi), tokens)
    return out, bad


@numba.njit(cache=True, nogil=True)
def poly_float_rows_span(tokens: np.ndarray, base_f: Float, mod_f: Float,
                    modulus: Int, arith: Int, out: np.ndarray, bad: np.ndarray,
                         start: int, stop: int) -> None:
    """:func:`poly_float_rows` of rows ``start .. stop - 1`` into ``out`` and ``bad``."""
    rows = tokens[start:stop]  # indexed from 0: no negative-index checks in the loop
    res = out[start:stop]
    first = bad[start:stop]
    length = rows.shape[1]
    m_int = np.uint64(mod_f)  # an integer-valued float32 in [1, 2**32]
    for r in range(rows.shape[0]):
        h = np.float32(0.0)
        for j in range(length):
            h = round_to_precision(h * base_f, arith)
            if not math.isfinite(h):
                first[r] = 2 * j
                break
            t = round_to_precision(np.float32(rows[r, j]), arith)
            h = round_to_precision(h + t, arith)
            if not math.isfinite(h):
                first[r] = 2 * j + 1
                break
            h = np.float32(int_mod(h, m_int))  # fmod: exact, and representable
        res[r] = np.uint32(np.uint64(int_mod_2_32(h)) % modulus)


# ============================================================================ XXH64 blocks
_P64_1 = np.uint64(0x9E3779B185EBCA87)
_P64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P64_3 = np.uint64(0x165667B19E3779F9)
_P64_4 = np.uint64(0x85EBCA77C2B2AE63)
_P64_5 = np.uint64(0x27D4EB2F165667C5)


@numba.njit(cache=True, nogil=True)
def _rotl64(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@numba.njit(cache=True, nogil=True)
def _round64(acc: np.uint64, lane: np.uint64) -> np.uint64:
    acc = acc + lane * _P64_2
    return _rotl64(acc, 31) * _P64_1


@numba.njit(cache=True, nogil=True)
def _merge64(h: np.uint64, acc: np.uint64) -> np.uint64:
    h ^= _round64(np.uint64(0), acc)
    return h * _P64_1 + _P64_4


@numba.njit(cache=True, nogil=True)
def _xxh64(words: np.ndarray, data: np.ndarray, start: int, length: int) -> np.uint64:
    """XXH64 with seed 0 of ``data[start:start + length]`` (``start`` a multiple of 8;
    ``words`` is ``data`` read as little-endian uint64)."""
    w = start // 8
    p = start
    end = start + length
    if length >= 32:
        v1 = _P64_1 + _P64_2
        v2 = _P64_2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - _P64_1
        stripes = length // 32
        for s in range(stripes):
            k = w + 4 * s
            v1 = _round64(v1, words[k])
            v2 = _round64(v2, words[k + 1])
            v3 = _round64(v3, words[k + 2])
            v4 = _round64(v4, words[k + 3])
        w += 4 * stripes
        p += 32 * stripes
        h = _rotl64(v1, 1) + _rotl64(v2, 7) + _rotl64(v3, 12) + _rotl64(v4, 18)
        h = _merge64(h, v1)
        h = _merge64(h, v2)
        h = _merge64(h, v3)
        h = _merge64(h, v4)
    else:
        h = _P64_5
    h += np.uint64(length)
    while p + 8 <= end:
        h ^= _round64(np.uint64(0), words[w])
        h = _rotl64(h, 27) * _P64_1 + _P64_4
        w += 1
        p += 8
    if p + 4 <= end:
        k32 = (np.uint64(data[p]) | (np.uint64(data[p + 1]) << np.uint64(8))
               | (np.uint64(data[p + 2]) << np.uint64(16))
               | (np.uint64(data[p + 3]) << np.uint64(24)))
        h ^= k32 * _P64_1
        h = _rotl64(h, 23) * _P64_2 + _P64_3
        p += 4
    while p < end:
        h ^= np.uint64(data[p]) * _P64_5
        h = _rotl64(h, 11) * _P64_1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P64_2
    h ^= h >> np.uint64(29)
    h *= _P64_3
    h ^= h >> np.uint64(32)
    return h


@numba.njit(cache=True, nogil=True)
def xxh64_blocks(words: np.ndarray, data: np.ndarray, block: int, out: np.ndarray) -> None:
    """``out[b]`` = XXH64 (seed 0) of bytes ``[b * block, (b + 1) * block)`` of ``data``.

    ``block`` is a multiple of 32; the last block may be shorter; ``words``
    is ``data`` read as little-endian uint64 (``len(data) // 8`` words).  The
    loop follows the XXH64 specification (four lanes over 32-byte stripes,
    the lanes merged, the remaining 8-, 4- and 1-byte pieces, the avalanche).
    """
    n = data.shape[0]
    for b in range(out.shape[0]):
        start = b * block
        out[b] = _xxh64(words, data, start, min(block, n - start))

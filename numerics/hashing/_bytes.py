"""Byte hashes (FNV-1a, MurmurHash3 x86_32, xxHash32), vectorized over the rows of a
uint8 key matrix; see :mod:`numerics.hashing`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, overload

import numpy as np
import numpy.typing as npt

_U32 = 0xFFFFFFFF
_CHUNK = 1 << 15  # rows per chunk: keeps the working set in cache

ByteKey: TypeAlias = "bytes | bytearray | memoryview"
KeyData: TypeAlias = "bytes | bytearray | memoryview | npt.NDArray[np.uint8]"
HashResult: TypeAlias = "np.uint32 | npt.NDArray[np.uint32]"


# ============================================================================ validation
def _check_uint32(value: object, name: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Got {name}={value!r}, but it must be an int in [0, 2**32)")
    if not 0 <= int(value) <= _U32:
        raise ValueError(f"Got {name}={value!r}, but it must be an int in [0, 2**32)")
    return int(value)


def _as_key_matrix(data: object) -> tuple[npt.NDArray[np.uint8], bool]:
    """Return (2-D contiguous uint8 array of keys, whether the input was one bytes key)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        flat = np.frombuffer(bytes(data), dtype=np.uint8)
        return flat.reshape(1, flat.size), True
    if not isinstance(data, np.ndarray):
        raise TypeError(
            f"Got data of type {type(data).__name__}, but it must be bytes or a 2-D numpy "
            "uint8 array whose rows are the keys"
        )
    if data.dtype != np.uint8:
        raise TypeError(
            f"Got data with dtype={data.dtype}, but it must be uint8 (view other dtypes "
            "as bytes with arr.view(np.uint8))"
        )
    if data.ndim != 2:
        raise ValueError(
            f"Got data with shape {data.shape}, but it must be 2-D (one key per row); "
            "pass a single key as bytes(arr) or arr[None, :]"
        )
    return np.ascontiguousarray(data), False


def _finish(h: npt.NDArray[np.uint32], scalar: bool) -> HashResult:
    return h[0] if scalar else h


def _words(block: npt.NDArray[np.uint8], nwords: int) -> npt.NDArray[np.uint32]:
    """Little-endian 32-bit words of each row, transposed to shape (nwords, rows)."""
    if nwords == 0:
        return np.empty((0, block.shape[0]), dtype=np.uint32)
    raw = np.ascontiguousarray(block[:, : 4 * nwords]).view(np.dtype("<u4"))
    return np.array(raw.T, dtype=np.uint32, order="C", copy=True)  # a fresh array: mutated


def _rotl(x: npt.NDArray[np.uint32], r: int, tmp: npt.NDArray[np.uint32]) -> None:
    """In place: x = rotate-left(x, r) for 0 < r < 32."""
    np.left_shift(x, r, out=tmp)
    np.right_shift(x, 32 - r, out=x)
    np.bitwise_or(x, tmp, out=x)


def _tail_word(block: npt.NDArray[np.uint8], start: int) -> npt.NDArray[np.uint32]:
    """Little-endian value of the 0-3 trailing bytes of each row, from column ``start``."""
    tail = np.zeros(block.shape[0], dtype=np.uint32)
    for i in range(block.shape[1] - start):
        tail |= block[:, start + i].astype(np.uint32) << np.uint32(8 * i)
    return tail


def _chunked(
    data: object, kernel: Callable[[npt.NDArray[np.uint8]], npt.NDArray[np.uint32]]
) -> HashResult:
    keys, scalar = _as_key_matrix(data)
    out = np.empty(keys.shape[0], dtype=np.uint32)
    for lo in range(0, keys.shape[0], _CHUNK):
        out[lo : lo + _CHUNK] = kernel(keys[lo : lo + _CHUNK])
    return _finish(out, scalar)


# ============================================================================ FNV-1a
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def _fnv1a32_block(keys: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    h = np.full(keys.shape[0], _FNV_OFFSET, dtype=np.uint32)
    cols = np.ascontiguousarray(keys.T)
    for j in range(cols.shape[0]):
        h ^= cols[j]
        h *= np.uint32(_FNV_PRIME)
    return h


@overload
def fnv1a32(data: ByteKey) -> np.uint32: ...


@overload
def fnv1a32(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]: ...


def fnv1a32(data: KeyData) -> HashResult:
    """32-bit FNV-1a of each key.

    ``h = 0x811c9dc5``; for each byte ``b``: ``h = (h XOR b) * 0x01000193 mod 2**32``.

    Parameters
    ----------
    data : bytes or ndarray of uint8, shape (n, L)
        One key as ``bytes``, or ``n`` keys of ``L`` bytes each as the rows of
        a 2-D uint8 array.

    Returns
    -------
    numpy.uint32 or ndarray of uint32, shape (n,)
        A scalar for a ``bytes`` key, else one hash per row.

    Raises
    ------
    TypeError
        If ``data`` is neither bytes nor a uint8 array.
    ValueError
        If the array is not 2-D.

    References
    ----------
    Fowler, Noll, Vo; Eastlake, Hansen, Fowler, Vo, "The FNV Non-Cryptographic
    Hash Algorithm", IETF draft-eastlake-fnv.

    Examples
    --------
    >>> hex(fnv1a32(b""))       # the offset basis
    '0x811c9dc5'
    >>> hex(fnv1a32(b"foobar"))
    '0xbf9cf968'
    >>> fnv1a32(np.frombuffer(b"aab", dtype=np.uint8).reshape(3, 1))
    array([3826002220, 3826002220, 3876335077], dtype=uint32)
    """
    return _chunked(data, _fnv1a32_block)


# ============================================================================ MurmurHash3 x86_32
_M3_C1 = np.uint32(0xCC9E2D51)
_M3_C2 = np.uint32(0x1B873593)


def _fmix32(h: npt.NDArray[np.uint32], m1: int, s1: int, m2: int, s2: int, s3: int,
            tmp: npt.NDArray[np.uint32]) -> None:
    """In place: h ^= h >> s1; h *= m1; h ^= h >> s2; h *= m2; h ^= h >> s3 (mod 2**32)."""
    np.right_shift(h, np.uint32(s1), out=tmp)
    h ^= tmp
    h *= np.uint32(m1)
    np.right_shift(h, np.uint32(s2), out=tmp)
    h ^= tmp
    h *= np.uint32(m2)
    np.right_shift(h, np.uint32(s3), out=tmp)
    h ^= tmp


def _murmur3_block(keys: npt.NDArray[np.uint8], seed: int) -> npt.NDArray[np.uint32]:
    n, length = keys.shape
    nblocks = length // 4
    # The per-block key mixing (k*c1, rotl 15, *c2) does not depend on h: do it
    # for all blocks at once, on the (nblocks, n) word array.
    k = _words(keys, nblocks)
    if nblocks:
        k *= _M3_C1
        _rotl(k, 15, np.empty_like(k))
        k *= _M3_C2
    h = np.full(n, seed, dtype=np.uint32)
    tmp = np.empty(n, dtype=np.uint32)
    for j in range(nblocks):
        h ^= k[j]
        _rotl(h, 13, tmp)
        h *= np.uint32(5)
        h += np.uint32(0xE6546B64)
    if length % 4:
        kt = _tail_word(keys, 4 * nblocks)
        kt *= _M3_C1
        _rotl(kt, 15, tmp)
        kt *= _M3_C2
        h ^= kt
    h ^= np.uint32(length & _U32)
    _fmix32(h, 0x85EBCA6B, 16, 0xC2B2AE35, 13, 16, tmp)
    return h


@overload
def murmur3_32(data: ByteKey, seed: int = 0) -> np.uint32: ...


@overload
def murmur3_32(data: npt.NDArray[np.uint8], seed: int = 0) -> npt.NDArray[np.uint32]: ...


def murmur3_32(data: KeyData, seed: int = 0) -> HashResult:
    """MurmurHash3 x86_32 of each key (Austin Appleby's ``MurmurHash3_x86_32``).

    Equal bit for bit to ``mmh3.hash(key, seed, signed=False)``.

    Parameters
    ----------
    data : bytes or ndarray of uint8, shape (n, L)
        One key as ``bytes``, or ``n`` keys of ``L`` bytes as the rows of a
        2-D uint8 array.
    seed : int, default 0
        The 32-bit seed, in ``[0, 2**32)``.

    Returns
    -------
    numpy.uint32 or ndarray of uint32, shape (n,)

    Raises
    ------
    TypeError
        If ``data`` is neither bytes nor a uint8 array, or ``seed`` is not an int.
    ValueError
        If the array is not 2-D or ``seed`` is out of range.

    Examples
    --------
    >>> hex(murmur3_32(b"foo"))
    '0xf6a5c420'
    >>> murmur3_32(b"", seed=1)
    np.uint32(1364076727)
    """
    s = _check_uint32(seed, "seed")
    return _chunked(data, lambda keys: _murmur3_block(keys, s))


# ============================================================================ xxHash32
_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1


_XXH_ROT = np.array([1, 7, 12, 18], dtype=np.uint32)[:, None]


def _xxh32_block(keys: npt.NDArray[np.uint8], seed: int) -> npt.NDArray[np.uint32]:
    n, length = keys.shape
    nwords = length // 4
    words = _words(keys, nwords)
    tmp = np.empty(n, dtype=np.uint32)
    w = 0
    if length >= 16:
        # The four accumulators are independent: keep them as one (4, n) array.
        init = ((seed + _P1 + _P2) & _U32, (seed + _P2) & _U32, seed, (seed - _P1) & _U32)
        lanes = np.repeat(np.array(init, dtype=np.uint32)[:, None], n, axis=1)
        tmp4 = np.empty_like(lanes)
        stripes = length // 16
        for s in range(stripes):
            np.multiply(words[4 * s : 4 * s + 4], np.uint32(_P2), out=tmp4)
            lanes += tmp4
            _rotl(lanes, 13, tmp4)
            lanes *= np.uint32(_P1)
        w = 4 * stripes
        rotated = (lanes << _XXH_ROT) | (lanes >> (np.uint32(32) - _XXH_ROT))
        h = np.add.reduce(rotated, axis=0, dtype=np.uint32)
    else:
        h = np.full(n, (seed + _P5) & _U32, dtype=np.uint32)
    h += np.uint32(length & _U32)
    for j in range(w, nwords):
        np.multiply(words[j], np.uint32(_P3), out=tmp)
        h += tmp
        _rotl(h, 17, tmp)
        h *= np.uint32(_P4)
    for i in range(4 * nwords, length):
        np.multiply(keys[:, i].astype(np.uint32), np.uint32(_P5), out=tmp)
        h += tmp
        _rotl(h, 11, tmp)
        h *= np.uint32(_P1)
    _fmix32(h, _P2, 15, _P3, 13, 16, tmp)
    return h


@overload
def xxh32(data: ByteKey, seed: int = 0) -> np.uint32: ...


@overload
def xxh32(data: npt.NDArray[np.uint8], seed: int = 0) -> npt.NDArray[np.uint32]: ...


def xxh32(data: KeyData, seed: int = 0) -> HashResult:
    """xxHash32 of each key (Yann Collet's XXH32).

    Equal bit for bit to ``xxhash.xxh32_intdigest(key, seed)``.

    Parameters
    ----------
    data : bytes or ndarray of uint8, shape (n, L)
        One key as ``bytes``, or ``n`` keys of ``L`` bytes as the rows of a
        2-D uint8 array.
    seed : int, default 0
        The 32-bit seed, in ``[0, 2**32)``.

    Returns
    -------
    numpy.uint32 or ndarray of uint32, shape (n,)

    Raises
    ------
    TypeError
        If ``data`` is neither bytes nor a uint8 array, or ``seed`` is not an int.
    ValueError
        If the array is not 2-D or ``seed`` is out of range.

    Examples
    --------
    >>> hex(xxh32(b""))
    '0x2cc5d05'
    >>> hex(xxh32(b"abc"))
    '0x32d153ff'
    """
    s = _check_uint32(seed, "seed")
    return _chunked(data, lambda keys: _xxh32_block(keys, s))



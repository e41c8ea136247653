"""Byte hashes (FNV-1a, MurmurHash3 x86_32, xxHash32) of the rows of a uint8 key
matrix, one compiled loop per key (:mod:`numerics.kernels.hash`); see
:mod:`numerics.hashing`."""

from __future__ import annotations

from typing import TypeAlias, overload

import numpy as np
import numpy.typing as npt

from numerics.dtypes import refuse_masked

_U32 = 0xFFFFFFFF

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
    refuse_masked(data, "data")  # (its hidden bytes would be hashed)
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


# ============================================================================ FNV-1a
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
    from numerics.kernels.hash import fnv1a32_rows

    keys, scalar = _as_key_matrix(data)
    return _finish(fnv1a32_rows(keys), scalar)


# ============================================================================ MurmurHash3 x86_32
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
    from numerics.kernels.hash import murmur3_rows

    s = _check_uint32(seed, "seed")
    keys, scalar = _as_key_matrix(data)
    return _finish(murmur3_rows(keys, np.uint32(s)), scalar)


# ============================================================================ xxHash32
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
    from numerics.kernels.hash import xxh32_rows

    s = _check_uint32(seed, "seed")
    keys, scalar = _as_key_matrix(data)
    return _finish(xxh32_rows(keys, np.uint32(s)), scalar)



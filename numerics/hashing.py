"""Hash kernels in uint32 arithmetic and in emulated floating-point arithmetic.

Two families live here.

Byte hashes
    :func:`fnv1a32`, :func:`murmur3_32` (MurmurHash3 x86_32) and :func:`xxh32`
    hash keys given as ``bytes`` or as the rows of a 2-D ``uint8`` array.  They
    are vectorized over keys (one numpy operation per 4-byte block handles every
    key at once) and agree bit for bit with the reference implementations
    (the ``mmh3`` and ``xxhash`` packages, the published FNV test values).

Integer hashes with a choice of arithmetic
    :func:`spatial_hash` (the instant-NGP grid hash) and :func:`poly_hash` (the
    polynomial rolling hash) run either in exact ``uint32`` arithmetic or *as if*
    written with ``float32``, ``bfloat16`` or ``float16`` arithmetic, the way a
    kernel language that defaults to floats silently computes them.  The float
    variants are exact emulations, not approximations; the rules follow.

Emulated float arithmetic (``arithmetic="float32" | "bfloat16" | "float16"``)
-------------------------------------------------------------------------------
1. Every integer input (a coordinate, a token) and every constant (a prime, the
   base, the modulus) is first rounded to the format, round-to-nearest-even.
   Inputs are below ``2**24``, so they are exact in float32; constants such as
   2654435761 are not (it becomes 2654435840).
2. Each multiply and each add is ONE correctly rounded operation of the format
   (round-to-nearest-even), exactly as IEEE 754 defines it:

   * float32: numpy's float32 ufuncs, which are IEEE single operations.
   * bfloat16 (p = 8): the operation is done in float32 and the result rounded
     to bfloat16 with ties-to-even.  A product of two 8-bit significands has at
     most 16 bits, so it is exact in float32 and rounded once.  A sum may be
     rounded twice, but 24 >= 2*8 + 2, so by Figueroa's theorem (double
     rounding through a format with q >= 2p + 2 bits is innocuous for +, -,
     *, /, sqrt of p-bit operands) the result is the correctly rounded sum.
   * float16 (p = 11): the same construction; 24 >= 2*11 + 2 = 24, so
     Figueroa's theorem applies again (products of two 11-bit significands are
     even exact in float32).
3. Every intermediate is an integer-valued float (a rounded integer is still an
   integer), so where a bitwise operation (XOR) needs an integer, the value
   enters as its exact integer value reduced mod ``2**32``.  That is what a
   cast through int64 to uint32 gives for values below ``2**63``; it is
   computed here from the float's significand and exponent instead, so it is
   exact at every float32 magnitude, also beyond ``2**63`` where an int64 cast
   overflows.
4. The final ``mod table_size`` (or ``mod modulus``) is integer arithmetic.
5. If a rounded constant or an intermediate is not finite (float16 overflows
   above 65504; 2654435761 is already ``inf`` there), the kernel has no
   integer result and a ValueError says which value overflowed.

Rounding error and collisions are analysed in ``proofs/uint32_vs_fp32.md``
(claims C1 to C5); :func:`count_representable_integers` is its claim C5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, overload

import numpy as np
import numpy.typing as npt

from numerics.formats import Format, as_format

__all__ = [
    "ARITHMETICS",
    "INPUT_LIMIT",
    "INSTANT_NGP_PRIMES",
    "Arithmetic",
    "CollisionReport",
    "collision_report",
    "count_representable_integers",
    "fnv1a32",
    "murmur3_32",
    "poly_hash",
    "spatial_hash",
    "xxh32",
]

Arithmetic = Literal["uint32", "float32", "bfloat16", "float16"]

#: Every accepted value of the ``arithmetic`` option.
ARITHMETICS: tuple[str, ...] = ("uint32", "float32", "bfloat16", "float16")

#: instant-NGP's spatial-hash primes (Mueller et al. 2022).
INSTANT_NGP_PRIMES: tuple[int, ...] = (1, 2654435761, 805459861)

#: Coordinates and tokens must lie in ``[0, INPUT_LIMIT)``: exact in float32.
INPUT_LIMIT = 1 << 24

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


# ============================================================================ emulated float arithmetic
_FORMAT_OF = {"float32": "binary32", "bfloat16": "bfloat16", "float16": "binary16"}


def _check_arithmetic(arithmetic: object) -> str:
    if arithmetic not in ARITHMETICS:
        raise ValueError(
            f"Got arithmetic={arithmetic!r}, but the only valid values are "
            + ", ".join(repr(a) for a in ARITHMETICS)
        )
    return str(arithmetic)


def _round_int_rne(n: int, fmt: Format) -> float:
    """Round the non-negative Python int ``n`` to ``fmt`` (RNE, IEEE overflow to inf).

    Exact integer arithmetic: keep ``p`` significant bits, ties to even.  A
    result above ``fmt.max`` (after rounding with unbounded exponent) is inf.
    """
    p = fmt.precision
    shift = n.bit_length() - p
    if shift > 0:
        q, r = divmod(n, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        n = q << shift
    if n > fmt.max_exact:
        return float("inf")
    return float(n)  # exact: n has at most p <= 24 significant bits


def _to_format(x: npt.NDArray[np.float32], arithmetic: str) -> npt.NDArray[np.float32]:
    """Round float32 values to the arithmetic's format (RNE); result stored in float32."""
    if arithmetic == "float32":
        return x
    if arithmetic == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float32)  # numpy's cast is RNE
    # bfloat16: keep the top 16 bits of the float32 pattern, ties to even.  Adding
    # 0x7FFF + (bit 16) and truncating is RNE; a carry out of the significand bumps
    # the exponent, and past the largest finite value it reaches the inf pattern.
    bits = x.view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(
        0xFFFF0000
    )
    return bits.view(np.float32)


def _op(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32] | np.float32, op: str,
        arithmetic: str) -> npt.NDArray[np.float32]:
    """One correctly rounded multiply/add in the arithmetic's format (see module Notes)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.multiply(a, b) if op == "mul" else np.add(a, b)
    return _to_format(r, arithmetic)


def _check_finite(v: npt.NDArray[np.float32], arithmetic: str, what: str) -> None:
    if not np.all(np.isfinite(v)):
        bad = np.flatnonzero(~np.isfinite(v))[0]
        raise ValueError(
            f"Got arithmetic={arithmetic!r}, but {what} overflows it (key {bad}: {v[bad]}); "
            f"its largest finite value is {as_format(_FORMAT_OF[arithmetic]).max}"
        )


def _const(value: int, arithmetic: str, name: str) -> np.float32:
    r = _round_int_rne(value, as_format(_FORMAT_OF[arithmetic]))
    if not np.isfinite(r):
        raise ValueError(
            f"Got {name}={value} with arithmetic={arithmetic!r}, but it rounds to inf there "
            f"(largest finite value {as_format(_FORMAT_OF[arithmetic]).max})"
        )
    return np.float32(r)


def _int_mod_2_32(v: npt.NDArray[np.float32]) -> npt.NDArray[np.uint32]:
    """Exact integer value mod 2**32 of non-negative, finite, integer-valued float32 values.

    A normal float32 with biased exponent E and 24-bit significand M (implicit
    bit included) is ``M * 2**(E - 150)``.  For ``150 <= E < 182`` the residue is
    ``(M << (E - 150)) mod 2**32``, which a uint32 left shift computes (the bits
    shifted out are multiples of 2**32); for ``E >= 182`` the value is a multiple
    of 2**32 and the residue is 0; for ``E < 150`` the value is an integer, so
    ``M >> (150 - E)`` drops only zero bits (and gives 0 for the value 0, whose
    shift is at least 24).  No int64 cast is involved, so values beyond 2**63
    are reduced exactly too.
    """
    bits = v.view(np.uint32)
    e = (bits >> np.uint32(23)).astype(np.int32)
    m = (bits & np.uint32(0x7FFFFF)) | np.uint32(0x800000)
    up = np.clip(e - 150, 0, 31).astype(np.uint32)
    down = np.clip(150 - e, 0, 31).astype(np.uint32)
    r = (m << up) >> down
    r[e >= 182] = 0
    return r


def _check_int_array(x: object, name: str, limit: int) -> npt.NDArray[np.int64]:
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"Got {name} with dtype={arr.dtype}, but it must hold integers "
            f"in [0, 2**{limit.bit_length() - 1})"
        )
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= limit:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"Got {name} containing {bad}, but every entry must be an integer in "
                f"[0, 2**{limit.bit_length() - 1}) (exact in float32)"
            )
    return arr.astype(np.int64)


def _check_positive(value: object, name: str, upper: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Got {name}={value!r}, but it must be an int in [1, 2**32]")
    if not 1 <= int(value) <= upper:
        raise ValueError(f"Got {name}={value!r}, but it must be an int in [1, 2**32]")
    return int(value)


# ============================================================================ spatial hash
def spatial_hash(
    coords: npt.ArrayLike,
    table_size: int,
    *,
    primes: tuple[int, ...] = INSTANT_NGP_PRIMES,
    arithmetic: Arithmetic = "uint32",
) -> HashResult:
    """The instant-NGP spatial hash of integer grid coordinates.

    ``h(c) = (c[0]*primes[0] XOR c[1]*primes[1] XOR ...) mod table_size``.

    Parameters
    ----------
    coords : array_like of int, shape (n, d) or (d,)
        Grid coordinates, integers in ``[0, 2**24)`` (exact in float32).  A
        1-D input is one point and gives a scalar.
    table_size : int
        Number of buckets, in ``[1, 2**32]``.
    primes : tuple of int, default (1, 2654435761, 805459861)
        One multiplier per dimension (the first ``d`` are used), each in
        ``[0, 2**32)``.
    arithmetic : {"uint32", "float32", "bfloat16", "float16"}, keyword-only
        ``"uint32"``: each product ``c[i]*primes[i]`` is taken mod ``2**32``.
        A float format: the kernel as written with that float type (module
        docstring, rules 1-5): ``c[i]`` and ``primes[i]`` are rounded to the
        format, the product is one correctly rounded (RNE) multiply, and it
        enters the XOR as its exact integer value mod ``2**32``.

    Returns
    -------
    numpy.uint32 or ndarray of uint32, shape (n,)
        Bucket indices in ``[0, table_size)``.

    Raises
    ------
    TypeError
        Non-integer coordinates, or a non-int table size or prime.
    ValueError
        Coordinates outside ``[0, 2**24)``, ``d > len(primes)``, a table size
        outside ``[1, 2**32]``, an unknown ``arithmetic``, or (float16) a
        constant or product that overflows the format.

    Notes
    -----
    In float32 the prime 2654435761 becomes 2654435840 = 2**31 * 1.236...,
    and every product with it is a multiple of ``2**8``; the low bits of the
    index then come only from the other terms (proofs/uint32_vs_fp32.md, C4).

    Examples
    --------
    >>> pts = np.array([[1, 2, 3], [4, 5, 6]])
    >>> spatial_hash(pts, 2**20)
    array([652764, 748815], dtype=uint32)
    >>> spatial_hash(pts, 2**20, arithmetic="float32")   # 2654435761 -> 2654435840
    array([651777, 748548], dtype=uint32)

    A 32**3 block of a fine grid level (coordinates 1024..1055) in a table of
    2**19 buckets: the float32 products of y and z are multiples of 2**16, so
    only 32 x-values * 2**(19-16) buckets are reachable (claim C4).

    >>> r = np.arange(1024, 1056)
    >>> grid = np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)
    >>> collision_report(spatial_hash(grid, 2**19), 2**19).buckets_used
    31744
    >>> collision_report(spatial_hash(grid, 2**19, arithmetic="float32"), 2**19).buckets_used
    256
    """
    arith = _check_arithmetic(arithmetic)
    m = _check_positive(table_size, "table_size", 1 << 32)
    if not isinstance(primes, (tuple, list)) or not primes:
        raise TypeError(f"Got primes={primes!r}, but it must be a non-empty tuple of ints")
    ps = [_check_uint32(p, f"primes[{i}]") for i, p in enumerate(primes)]
    arr = _check_int_array(coords, "coords", INPUT_LIMIT)
    scalar = arr.ndim == 1
    if scalar:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"Got coords with shape {arr.shape}, but it must be (n, d) or (d,)")
    d = arr.shape[1]
    if d > len(ps) or d == 0:
        raise ValueError(
            f"Got coords with d={d} columns, but it must be between 1 and len(primes)={len(ps)}"
        )
    h = np.zeros(arr.shape[0], dtype=np.uint32)
    for i in range(d):
        col = arr[:, i]
        if arith == "uint32":
            h ^= col.astype(np.uint32) * np.uint32(ps[i])
        else:
            c = _to_format(col.astype(np.float32), arith)  # exact in float32 (< 2**24)
            prod = _op(c, _const(ps[i], arith, f"primes[{i}]"), "mul", arith)
            _check_finite(prod, arith, f"coords[:, {i}] * primes[{i}]")
            h ^= _int_mod_2_32(prod)
    out = (h.astype(np.uint64) % np.uint64(m)).astype(np.uint32)
    return out[0] if scalar else out


# ============================================================================ polynomial hash
def poly_hash(
    tokens: npt.ArrayLike,
    base: int,
    *,
    modulus: int = 1 << 32,
    arithmetic: Arithmetic = "uint32",
) -> HashResult:
    """Polynomial rolling hash of token sequences.

    ``h = 0``; for each token ``t``: ``h = (h*base + t) mod modulus``; so
    ``h = (t[0]*base**(L-1) + ... + t[L-1]) mod modulus``.

    Parameters
    ----------
    tokens : array_like of int, shape (n, L) or (L,)
        ``n`` sequences of ``L`` token ids, integers in ``[0, 2**24)``.  A 1-D
        input is one sequence and gives a scalar.
    base : int
        The multiplier, in ``[0, 2**32)``.
    modulus : int, default 2**32, keyword-only
        In ``[1, 2**32]``.
    arithmetic : {"uint32", "float32", "bfloat16", "float16"}, keyword-only
        ``"uint32"``: exact integer arithmetic (uint32 wrap-around when
        ``modulus == 2**32``).  A float format: the kernel written as
        ``h = fmod(h*B + t, M)`` with that float type (module docstring,
        rules 1-5): ``B``, ``M`` and each ``t`` are rounded to the format; the
        multiply and the add are each one correctly rounded (RNE) operation;
        ``fmod`` is exact (IEEE remainder-type operations never round).  The
        final float is converted to its exact integer value and reduced mod
        ``modulus`` in integers (this matters when ``M`` rounded up).

    Returns
    -------
    numpy.uint32 or ndarray of uint32, shape (n,)
        Values in ``[0, modulus)``.

    Raises
    ------
    TypeError
        Non-integer tokens, or a non-int base or modulus.
    ValueError
        Tokens outside ``[0, 2**24)``, base or modulus out of range, an unknown
        ``arithmetic``, or a rounded constant or intermediate that overflows
        the format (float16: any modulus above 65504).

    Examples
    --------
    >>> toks = np.array([[1, 2, 3], [3, 2, 1]])
    >>> poly_hash(toks, 31)                       # 1*31**2 + 2*31 + 3 = 1026
    array([1026, 2946], dtype=uint32)
    >>> poly_hash(np.array([7, 0, 0, 1]), 1_000_003)  # (7*1000003**3 + 1) mod 2**32
    np.uint32(4087273982)
    >>> poly_hash(np.array([7, 0, 0, 1]), 1_000_003, arithmetic="float32")
    np.uint32(1342177280)
    """
    arith = _check_arithmetic(arithmetic)
    b = _check_uint32(base, "base")
    mod = _check_positive(modulus, "modulus", 1 << 32)
    arr = _check_int_array(tokens, "tokens", INPUT_LIMIT)
    scalar = arr.ndim == 1
    if scalar:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"Got tokens with shape {arr.shape}, but it must be (n, L) or (L,)")
    n, length = arr.shape
    cols = np.ascontiguousarray(arr.T)
    if arith == "uint32":
        if mod == 1 << 32:
            h32 = np.zeros(n, dtype=np.uint32)
            for j in range(length):
                h32 *= np.uint32(b)
                h32 += cols[j].astype(np.uint32)
            out = h32
        else:
            m64, b64 = np.uint64(mod), np.uint64(b % mod)
            h64 = np.zeros(n, dtype=np.uint64)
            for j in range(length):  # h < mod <= 2**32, so h * b64 < 2**64: no wrap
                h64 = (h64 * b64) % m64
                h64 = (h64 + cols[j].astype(np.uint64)) % m64
            out = h64.astype(np.uint32)
    else:
        bf = _const(b, arith, "base")
        mf = np.float64(_const(mod, arith, "modulus"))
        h = np.zeros(n, dtype=np.float32)
        for j in range(length):
            h = _op(h, bf, "mul", arith)
            _check_finite(h, arith, "h*base")
            h = _op(h, _to_format(cols[j].astype(np.float32), arith), "add", arith)
            _check_finite(h, arith, "h*base + token")
            # fmod of two representable numbers is exact and representable (see proof
            # notes); float64 holds both operands exactly.
            h = np.fmod(h.astype(np.float64), mf).astype(np.float32)
        out = (_int_mod_2_32(h).astype(np.uint64) % np.uint64(mod)).astype(np.uint32)
    return out[0] if scalar else out


# ============================================================================ collision report
@dataclass(frozen=True)
class CollisionReport:
    """How ``n`` hash values spread over a table of ``table_size`` buckets.

    Attributes
    ----------
    n : int
        Number of keys.
    table_size : int
        Number of buckets ``m``.
    buckets_used : int
        Distinct buckets that received at least one key.
    max_load : int
        Keys in the fullest bucket (0 when ``n == 0``).
    collisions : int
        Keys that landed in an already occupied bucket: ``n - buckets_used``.
    expected_collisions : float
        The same count expected for a uniform random hash:
        ``n - m*(1 - (1 - 1/m)**n)``.
    chi_square : float
        Pearson's statistic over all ``m`` bucket loads against the uniform
        expectation ``n/m``: ``sum((load - n/m)**2 / (n/m))``; about ``m - 1``
        for a uniform hash (0 when ``n == 0``).
    """

    n: int
    table_size: int
    buckets_used: int
    max_load: int
    collisions: int
    expected_collisions: float
    chi_square: float


def collision_report(hashes: npt.ArrayLike, table_size: int) -> CollisionReport:
    """Summarize the bucket loads of ``hashes`` in a table of ``table_size`` buckets.

    Parameters
    ----------
    hashes : array_like of int, shape (n,)
        Bucket indices in ``[0, table_size)``.
    table_size : int
        Number of buckets ``m``, in ``[1, 2**32]``.

    Returns
    -------
    CollisionReport

    Raises
    ------
    TypeError
        If ``hashes`` is not integer or ``table_size`` not an int.
    ValueError
        If ``hashes`` is not 1-D or holds a value outside ``[0, table_size)``.

    Notes
    -----
    Only occupied buckets are counted (``numpy.unique``), so tables of ``2**32``
    buckets cost no memory.  With ``c_j`` the loads and ``e = n/m``,
    ``chi_square = sum_j c_j**2 / e - n`` (the empty buckets included).
    ``expected_collisions`` is evaluated as ``n + m*expm1(n*log1p(-1/m))``.

    Examples
    --------
    >>> r = collision_report(np.array([0, 1, 1, 3]), 4)
    >>> r.buckets_used, r.max_load, r.collisions, r.expected_collisions  # 4 - 4*(1 - (3/4)**4)
    (3, 2, 1, 1.265625)
    >>> r.chi_square
    2.0
    """
    m = _check_positive(table_size, "table_size", 1 << 32)
    arr = np.asarray(hashes)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"Got hashes with dtype={arr.dtype}, but it must hold integers")
    if arr.ndim != 1:
        raise ValueError(f"Got hashes with shape {arr.shape}, but it must be 1-D")
    n = int(arr.size)
    if n == 0:
        return CollisionReport(0, m, 0, 0, 0, 0.0, 0.0)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= m:
        raise ValueError(
            f"Got hashes containing {lo if lo < 0 else hi}, but every entry must lie in "
            f"[0, table_size={m})"
        )
    _, counts = np.unique(arr, return_counts=True)
    used = int(counts.size)
    if m == 1:
        expected = float(n - 1)
    else:
        expected = float(n + m * np.expm1(n * np.log1p(-1.0 / m)))
    sum_sq = int(np.sum(counts.astype(np.int64) ** 2))
    chi = float(sum_sq * m / n - n)
    return CollisionReport(n, m, used, int(counts.max()), n - used, expected, chi)


# ============================================================================ representable integers
def count_representable_integers(fmt: Format | str, width: int) -> int:
    """Number of integers in ``[0, 2**width)`` that are finite values of ``fmt``.

    Exact (Python integers), for any format: zero counts when the format has
    one; binade ``[2**e, 2**(e+1))`` with ``e >= 0`` contributes ``2**min(e, t)``
    integers (``t = fmt.trailing_bits``), cut at ``fmt.max``; integers below
    ``2**emin`` are counted on the subnormal grid.  This is claim C5 of
    ``proofs/uint32_vs_fp32.md``; when ``emin <= 0`` and
    ``2**width - 1 <= fmt.max`` it equals ``2**width`` if ``width <= p`` and
    ``2**p + (width - p) * 2**(p-1)`` otherwise (``p = fmt.precision``).

    Parameters
    ----------
    fmt : Format or str
        A format or a registered name.
    width : int
        Bit width ``W >= 0`` of the unsigned integers.

    Returns
    -------
    int

    Raises
    ------
    TypeError, ValueError
        For an unknown format or a ``width`` that is not a non-negative int.

    Examples
    --------
    >>> count_representable_integers("binary32", 32)     # 2**24 + 2**26
    83886080
    >>> count_representable_integers("bfloat16", 16)     # 2**8 + 8 * 2**7
    1280
    >>> count_representable_integers("e2m1fn", 8)        # 0, 1, 2, 3, 4, 6
    6
    """
    f = as_format(fmt)
    if not isinstance(width, (int, np.integer)) or isinstance(width, (bool, np.bool_)):
        raise TypeError(f"Got {width=}, but it must be a non-negative int")
    w = int(width)
    if w < 0:
        raise ValueError(f"Got {width=}, but it must be a non-negative int")
    t, emin, emax = f.trailing_bits, f.emin, f.emax
    limit = 1 << w  # integers n < limit
    count = 1 if f.has_zero and w >= 0 else 0
    # Integers below 2**emin (only when emin > 0): the subnormal grid k * 2**(emin - t).
    if f.subnormals and emin > 0:
        step = 1 << max(0, emin - t)
        top = min(1 << emin, limit) - 1  # largest integer considered
        count += top // step
    # Normal binades [2**e, 2**(e+1)) with e >= max(0, emin), e < width, e <= emax.
    for e in range(max(0, emin), min(w - 1, emax) + 1):
        quantum = 1 << max(0, e - t)  # integer spacing of the binade
        hi = (1 << (e + 1)) - 1
        if e == emax:
            hi = min(hi, int(f.max_exact))  # floor(max)
        count += (hi - (1 << e)) // quantum + 1
    return count

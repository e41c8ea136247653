"""spatial_hash and poly_hash in uint32 or in exactly emulated float arithmetic; the
rules are in :mod:`numerics.hashing`'s docstring."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from numerics.formats import Format, as_format
from numerics.hashing._bytes import HashResult, _check_uint32

Arithmetic = Literal["uint32", "float32", "bfloat16", "float16"]

#: Every accepted value of the ``arithmetic`` option.
ARITHMETICS: tuple[str, ...] = ("uint32", "float32", "bfloat16", "float16")

#: instant-NGP's spatial-hash primes (Mueller et al. 2022).
INSTANT_NGP_PRIMES: tuple[int, ...] = (1, 2654435761, 805459861)

#: Coordinates and tokens must lie in ``[0, INPUT_LIMIT)``: exact in float32.
INPUT_LIMIT = 1 << 24


# =================================================================== emulated float arithmetic
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

    >>> from numerics.hashing import collision_report
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



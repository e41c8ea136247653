"""spatial_hash and poly_hash in uint32 or in exactly emulated float arithmetic; the
rules are in :mod:`numerics.hashing`'s docstring."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from numerics.dtypes import as_input
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
    if not isinstance(arithmetic, str) or arithmetic not in ARITHMETICS:
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


_ARITH_CODE = {"uint32": 0, "float32": 1, "bfloat16": 2, "float16": 3}


def _overflow_error(arithmetic: str, what: str, key: int) -> ValueError:
    return ValueError(
        f"Got arithmetic={arithmetic!r}, but {what} overflows it (key {key}: inf); "
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


def _integer_input(x: object, name: str, limit: int, allowed: str) -> np.ndarray:
    """``x`` read by :func:`numerics.dtypes.as_input`, an empty list as int64 (numpy makes
    it float64); an object array of ints (Python ints beyond int64, or a user's
    ``dtype=object`` array) raises ValueError naming the first outside ``[0, limit)``
    (``allowed`` says the range in the message), and is int64 otherwise."""
    arr = as_input(x, name)  # (ValueError naming ``name`` for a ragged nesting)
    if arr.size == 0 and arr.dtype == np.float64 and not isinstance(x, np.ndarray):
        arr = arr.astype(np.int64)
    if arr.dtype == object and all(
            isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_, np.timedelta64)) for v in arr.flat):
        bad = next((int(v) for v in arr.flat if not 0 <= int(v) < limit), None)
        if bad is not None:
            raise ValueError(f"Got {name} containing {bad}, but every entry must {allowed}")
        return arr.astype(np.int64)  # (every entry below limit <= 2**32)
    return arr


def _check_int_array(x: object, name: str, limit: int) -> npt.NDArray[np.int64]:
    arr = _integer_input(x, name, limit, f"be an integer in [0, 2**{limit.bit_length() - 1})"
                                         " (exact in float32)")
    if arr.dtype.kind not in "iu":  # (not bool; not timedelta64, an np.integer to numpy)
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
    from numerics.kernels.hash import spatial_rows

    code = _ARITH_CODE[arith]
    pf: list[float] = []
    const_error: ValueError | None = None
    for i in range(d if code else 0):  # the columns are hashed in order: a prime that
        try:                           # rounds to inf is reported after the columns before it
            pf.append(float(_const(ps[i], arith, f"primes[{i}]")))
        except ValueError as err:
            const_error = err
            break
    cols = len(pf) if code else d
    out, bad = spatial_rows(np.ascontiguousarray(arr[:, :cols]),
                    np.array(ps[:cols], dtype=np.uint32), np.array(pf, np.float32),
                    np.uint64(m), np.int64(code))
    if (bad >= 0).any():
        # the first column with an overflow, then the first key (the order of the steps)
        col = int(bad[bad >= 0].min())
        key = int(np.flatnonzero(bad == col)[0])
        raise _overflow_error(arith, f"coords[:, {col}] * primes[{col}]", key)
    if const_error is not None:
        raise const_error
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
        the format (float16: any modulus of 65520 or more; 65505 to 65519 round
        to 65504).

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
    from numerics.kernels.hash import poly_float_rows, poly_uint_rows

    arr = np.ascontiguousarray(arr)
    if arith == "uint32":
        out = poly_uint_rows(arr, np.uint64(b), np.uint64(mod))
    else:
        bf = _const(b, arith, "base")
        mf = _const(mod, arith, "modulus")
        out, bad = poly_float_rows(arr, bf, mf, np.uint64(mod),
                        np.int64(_ARITH_CODE[arith]))
        if (bad >= 0).any():
            step = int(bad[bad >= 0].min())  # the first step and stage, then the first key
            key = int(np.flatnonzero(bad == step)[0])
            raise _overflow_error(arith, "h*base + token" if step % 2 else "h*base", key)
    return out[0] if scalar else out

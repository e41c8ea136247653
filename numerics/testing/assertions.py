"""Assertions for kernel tests: ULP closeness, bitwise equality, error bounds.

Inputs are numpy arrays (any shape), scalars or nested lists.  An array in a
float dtype that holds one format (numpy float16/32/64, ml_dtypes bfloat16,
float8_*, float6_*, float4_*) is read bit for bit; an array of an unsigned
integer dtype equal to ``fmt.code_dtype`` is read as codes of ``fmt`` (what
:func:`numerics.testing.strategies.arrays` gives for formats without a
dtype); anything else is converted to float64 and must hold values of the
format exactly.

Failure messages are plain text: the number of failing elements, the worst
ULP distance, the first failing indices with both values and their bits side
by side, and a histogram of the distances.

The distance between two codes is the number of steps between them in the
ordered list of the format's values (``-max ... -0 = +0 ... +max``, with the
infinities one step beyond ``max``), computed exactly with 64-bit unsigned
integers: ``-max`` and ``+max`` of binary64 are ``2 * (2**63 - 2**52) - 2``
apart, with no wrap-around.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from numerics.formats import Format, as_format
from numerics.testing._codes import (
    code_to_float,
    dtype_format_name,
    is_nan_codes,
    native_dtype,
    ordinal_distance,
    ordinals,
    values_to_codes,
)

__all__ = [
    "ALGORITHMS",
    "assert_bitwise_equal",
    "assert_ulp_close",
    "assert_within_bound",
    "tolerance_for",
    "ulp_distances",
]

#: The summation algorithms :func:`tolerance_for` knows.
ALGORITHMS: tuple[str, ...] = ("recursive", "pairwise", "kahan", "neumaier", "blocked", "exact")
_OPERATIONS = ("sum", "dot")
_NEAREST = ("rne", "rna")
_ROUNDINGS = ("rne", "rna", "rtz", "ru", "rd", "rto", "sr")
_SHOW = 5  # failing elements listed in a message


# --------------------------------------------------------------------------- input
def _infer_format(actual: Any, desired: Any, fmt: Format | str | None) -> Format:
    if fmt is not None:
        return as_format(fmt)
    names = []
    for arg in (actual, desired):
        dtype = getattr(arg, "dtype", None)
        if dtype is not None and np.dtype(dtype).kind not in "iub":
            name = dtype_format_name(np.dtype(dtype))
            if name is None:
                raise TypeError(f"Got an array of dtype {dtype}, which holds no known format; "
                                "pass fmt=")
            if name != "binary64":
                names.append(name)
    if len(set(names)) > 1:
        raise TypeError(f"Got actual of dtype {actual.dtype} and desired of dtype "
                        f"{desired.dtype}; pass fmt= to say which format to compare in")
    return as_format(names[0] if names else "binary64")


def _codes_of(x: Any, fmt: Format, name: str) -> tuple[np.ndarray, np.ndarray]:
    """uint64 codes of ``x`` in ``fmt`` and the float64 values (for messages)."""
    arr = np.asarray(x)
    if arr.dtype == np.dtype(object):
        arr = np.asarray(arr.tolist(), dtype=np.float64)
    native = native_dtype(fmt)
    if native is not None and arr.dtype == native:
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[native.itemsize]
        codes = arr.view(width).astype(np.uint64) & np.uint64((1 << fmt.bits) - 1)
    elif arr.dtype.kind == "u" and arr.dtype == fmt.code_dtype:
        codes = arr.astype(np.uint64)
        if codes.size and int(codes.max()) >= fmt.num_codes:
            bad = int(np.argmax(codes >= fmt.num_codes))
            raise ValueError(f"Got {name} with code {int(codes.flat[bad])} at flat index "
                             f"{bad}, but {fmt.name} has only {fmt.num_codes} codes")
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            as64 = arr.astype(np.float64)
        codes, ok = values_to_codes(as64, fmt)
        if not ok.all():
            bad = int(np.argmin(ok.ravel()))
            raise ValueError(
                f"Got {name}.flat[{bad}]={float(as64.ravel()[bad])!r}, which is not a value of "
                f"{fmt.name}; round it first (numerics.round_to) or pass fmt="
            )
    values = np.array([code_to_float(fmt, int(c)) for c in codes.ravel()],
                      dtype=np.float64).reshape(codes.shape) if codes.size <= 64 else None
    return codes, values  # type: ignore[return-value]


def _pair(actual: Any, desired: Any, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    a, _ = _codes_of(actual, fmt, "actual")
    d, _ = _codes_of(desired, fmt, "desired")
    try:
        a, d = np.broadcast_arrays(a, d)
    except ValueError:
        raise ValueError(f"Got actual of shape {a.shape} and desired of shape {d.shape}, "
                         "which do not broadcast") from None
    return a, d


# --------------------------------------------------------------------------- distances
def ulp_distances(actual: Any, desired: Any, *, fmt: Format | str | None = None,
                  signed_zeros: bool = False) -> np.ndarray:
    """Exact ULP distances in ``fmt`` as uint64 (NaN against anything: ``2**64 - 1``).

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> a = np.array([1.0, -0.0, 3.0], dtype=ml_dtypes.bfloat16)
    >>> ulp_distances(a, np.array([1.0078125, 0.0, 3.0], dtype=ml_dtypes.bfloat16))
    array([1, 0, 0], dtype=uint64)
    """
    f = _infer_format(actual, desired, fmt)
    a, d = _pair(actual, desired, f)
    return _distances(a, d, f, signed_zeros)[0]


def _distances(a: np.ndarray, d: np.ndarray, f: Format, signed_zeros: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nan_a, nan_d = is_nan_codes(a, f), is_nan_codes(d, f)
    either = nan_a | nan_d
    safe_a = np.where(either, np.uint64(0), a)
    safe_d = np.where(either, np.uint64(0), d)
    dist = ordinal_distance(ordinals(safe_a, f, signed_zeros=signed_zeros),
                            ordinals(safe_d, f, signed_zeros=signed_zeros))
    dist = np.where(nan_a & nan_d, np.uint64(0), dist)
    dist = np.where(nan_a ^ nan_d, np.uint64(2**64 - 1), dist)
    return dist, nan_a, nan_d


# --------------------------------------------------------------------------- messages
def _bits(code: int, f: Format) -> str:
    width = (f.bits + 3) // 4
    text = f"0x{code:0{width}X}"
    if f.bits <= 16:
        b = format(code, f"0{f.bits}b")
        s = int(f.signed)
        fields = [b[:s], b[s:s + f.exponent_bits], b[s + f.exponent_bits:]]
        text += " " + ".".join(x for x in fields if x)
    return text


def _index(flat: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return "()"
    idx = np.unravel_index(flat, shape)
    return str(int(idx[0])) if len(shape) == 1 else "(" + ", ".join(str(int(i))
                                                                      for i in idx) + ")"


def _value(code: int, f: Format) -> str:
    return repr(code_to_float(f, code))


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _dist_text(d: int) -> str:
    return "nan" if d == 2**64 - 1 else str(d)


def _histogram(dist: np.ndarray) -> list[str]:
    nan_mismatch = int((dist == np.uint64(2**64 - 1)).sum())
    finite = dist[dist != np.uint64(2**64 - 1)]
    edges = np.array([0] + [1 << k for k in range(64)], dtype=np.uint64)
    bins = np.searchsorted(edges, finite, side="left")
    rows: list[list[str]] = []
    for i, count in zip(*np.unique(bins, return_counts=True)):
        i = int(i)
        label = "0" if i == 0 else "1" if i == 1 else (
            "2" if i == 2 else f"{(1 << (i - 2)) + 1}-{1 << (i - 1)}")
        rows.append([label, str(int(count))])
    if nan_mismatch:
        rows.append(["NaN vs number", str(nan_mismatch)])
    return _table([["ulp", "count"]] + rows)


def _report(title: str, f: Format, a: np.ndarray, d: np.ndarray, dist: np.ndarray,
            failing: np.ndarray, shape: tuple[int, ...]) -> str:
    flat_fail = np.flatnonzero(failing)
    n_fail, n = len(flat_fail), failing.size
    fdist = dist.ravel()[flat_fail]
    worst_at = int(flat_fail[int(np.argmax(fdist))])
    worst = int(dist.ravel()[worst_at])
    lines = [
        f"{title}: {n_fail} of {n} elements differ",
        f"worst: {_dist_text(worst)} ulp at index {_index(worst_at, shape)}",
        f"first {min(_SHOW, n_fail)} failing (format {f.name}):",
    ]
    rows = [["index", "actual", "bits", "desired", "bits", "ulp"]]
    for k in flat_fail[:_SHOW]:
        ca, cd = int(a.ravel()[k]), int(d.ravel()[k])
        rows.append([_index(int(k), shape), _value(ca, f), _bits(ca, f), _value(cd, f),
                     _bits(cd, f), _dist_text(int(dist.ravel()[k]))])
    lines += _table(rows)
    lines.append(f"ulp distances over all {n} elements:")
    lines += _histogram(dist.ravel())
    return "\n".join(lines)


# --------------------------------------------------------------------------- assertions
def assert_ulp_close(
    actual: npt.ArrayLike,
    desired: npt.ArrayLike,
    *,
    max_ulp: int = 1,
    fmt: Format | str | None = None,
    nan: Literal["any", "code"] = "any",
    signed_zeros: bool = False,
) -> None:
    """Assert that every element of ``actual`` is within ``max_ulp`` ulps of ``desired``.

    The condition is ``ulp_distance(actual, desired) <= max_ulp`` elementwise,
    where the distance is the exact number of steps between the two codes in
    the ordered list of ``fmt``'s values (see the module docstring).

    Parameters
    ----------
    actual, desired : array_like
        Broadcastable arrays of values (or codes) of ``fmt``.
    max_ulp : int
        The largest distance allowed, ``>= 0``.
    fmt : Format, str or None
        The format; None infers it from the dtypes (float64 when neither
        array has a narrower float dtype).
    nan : {"any", "code"}
        ``"any"``: NaN equals NaN whatever its sign or payload; ``"code"``:
        two NaNs must have the same code.  NaN never equals a number.
    signed_zeros : bool
        Count ``-0`` and ``+0`` one ulp apart (formats that have ``-0``).

    Raises
    ------
    AssertionError
        With the count of failing elements, the worst distance, the first
        failing indices with values and bits, and a histogram of distances.

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> x = np.array([1.0, 2.0], dtype=ml_dtypes.float8_e4m3fn)
    >>> assert_ulp_close(x, np.array([1.125, 2.0], dtype=ml_dtypes.float8_e4m3fn))
    >>> assert_ulp_close(x, np.array([1.25, 2.0], dtype=ml_dtypes.float8_e4m3fn))
    Traceback (most recent call last):
    AssertionError: Not within 1 ulp: 1 of 2 elements differ
    worst: 2 ulp at index 0
    first 1 failing (format e4m3fn):
      index  actual  bits             desired  bits             ulp
      0      1.0     0x38 0.0111.000  1.25     0x3A 0.0111.010  2
    ulp distances over all 2 elements:
      ulp  count
      0    1
      2    1
    """
    if isinstance(max_ulp, bool) or not isinstance(max_ulp, (int, np.integer)) or max_ulp < 0:
        raise ValueError(f"Got {max_ulp=}, but it must be a non-negative int")
    if nan not in ("any", "code"):
        raise ValueError(f"Got {nan=}, but the only valid values are 'any' and 'code'")
    if not isinstance(signed_zeros, bool):
        raise TypeError(f"Got {signed_zeros=}, but it must be True or False")
    f = _infer_format(actual, desired, fmt)
    a, d = _pair(actual, desired, f)
    dist, nan_a, nan_d = _distances(a, d, f, signed_zeros)
    if nan == "code":
        dist = np.where(nan_a & nan_d & (a != d), np.uint64(2**64 - 1), dist)
    failing = dist > np.uint64(max_ulp)
    if failing.any():
        raise AssertionError(_report(f"Not within {max_ulp} ulp", f, a, d, dist, failing,
                                     a.shape))


def assert_bitwise_equal(
    actual: npt.ArrayLike,
    desired: npt.ArrayLike,
    *,
    canonical_nan: bool = True,
    fmt: Format | str | None = None,
) -> None:
    """Assert that ``actual`` and ``desired`` have the same codes.

    ``-0`` and ``+0`` differ.  With ``canonical_nan=True`` all NaNs of one
    sign compare equal (payloads ignored); with False only identical codes do.

    Examples
    --------
    >>> import numpy as np
    >>> assert_bitwise_equal(np.float32([1.0, np.nan]), np.float32([1.0, np.nan]))
    >>> assert_bitwise_equal(np.float32([0.0]), np.float32([-0.0]))
    Traceback (most recent call last):
    AssertionError: Not bitwise equal: 1 of 1 elements differ
    worst: 0 ulp at index 0
    first 1 failing (format binary32):
      index  actual  bits        desired  bits        ulp
      0      0.0     0x00000000  -0.0     0x80000000  0
    ulp distances over all 1 elements:
      ulp  count
      0    1
    """
    if not isinstance(canonical_nan, bool):
        raise TypeError(f"Got {canonical_nan=}, but it must be True or False")
    f = _infer_format(actual, desired, fmt)
    a, d = _pair(actual, desired, f)
    dist, nan_a, nan_d = _distances(a, d, f, False)
    sign = np.uint64(f.sign_mask)
    same = a == d
    if canonical_nan:
        same |= nan_a & nan_d & ((a & sign) == (d & sign))
    failing = ~same
    if failing.any():
        raise AssertionError(_report("Not bitwise equal", f, a, d, dist, failing, a.shape))


def _fractions(x: Any, name: str) -> tuple[list[Fraction], tuple[int, ...]]:
    arr = np.asarray(x)
    if arr.dtype != np.dtype(object):
        with np.errstate(invalid="ignore", over="ignore"):
            arr = arr.astype(np.float64)
    out = []
    for i, v in enumerate(arr.ravel().tolist()):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"Got {name}.flat[{i}]={v!r}, but bounds need finite values")
        out.append(Fraction(v))
    return out, arr.shape


def assert_within_bound(actual: Any, exact: Any, bound: Any) -> None:
    """Assert ``|actual - exact| <= bound`` elementwise, computed exactly.

    Parameters
    ----------
    actual : array_like
        Computed results (any float dtype, ml_dtypes included).
    exact : array_like
        The exact results: floats, ints, or an object array of
        :class:`fractions.Fraction`.
    bound : array_like
        Absolute error bounds, ``>= 0``, broadcastable; e.g.
        ``tolerance_for("dot", k, "binary32", "recursive") * (abs(A) @ abs(B))``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> assert_within_bound([0.5], [Fraction(1, 3)], [Fraction(1, 6)])
    >>> assert_within_bound([0.5], [Fraction(1, 3)], [0.125])
    Traceback (most recent call last):
    AssertionError: Not within bound: 1 of 1 elements exceed it
    worst: |error| is 1.333 times the bound at index 0
      index  actual  exact               |error|              bound
      0      0.5     0.3333333333333333  0.16666666666666666  0.125
    """
    acts, shape_a = _fractions(actual, "actual")
    exs, shape_e = _fractions(exact, "exact")
    bnds, shape_b = _fractions(bound, "bound")
    if any(b < 0 for b in bnds):
        raise ValueError(f"Got bound with a negative element {min(bnds)}, "
                         "but bounds must be >= 0")
    try:
        shape = np.broadcast_shapes(shape_a, shape_e, shape_b)
    except ValueError:
        raise ValueError(f"Got actual of shape {shape_a}, exact of shape {shape_e} and "
                         f"bound of shape {shape_b}, which do not broadcast") from None

    def spread(xs: list[Fraction], s: tuple[int, ...]) -> list[Fraction]:
        idx = np.broadcast_to(np.arange(len(xs)).reshape(s), shape).ravel()
        return [xs[i] for i in idx]

    A, E, B = spread(acts, shape_a), spread(exs, shape_e), spread(bnds, shape_b)
    errors = [abs(a - e) for a, e in zip(A, E)]
    failing = [i for i, (err, b) in enumerate(zip(errors, B)) if err > b]
    if not failing:
        return
    ratio = [errors[i] / B[i] if B[i] else math.inf for i in failing]
    worst = failing[int(np.argmax([float(r) for r in ratio]))]
    worst_ratio = max(ratio)
    times = "infinitely many" if worst_ratio == math.inf else f"{float(worst_ratio):.4g}"
    lines = [f"Not within bound: {len(failing)} of {len(errors)} elements exceed it",
             f"worst: |error| is {times} times the bound at index {_index(worst, shape)}"]
    rows = [["index", "actual", "exact", "|error|", "bound"]]
    for i in failing[:_SHOW]:
        rows.append([_index(i, shape), repr(float(A[i])), repr(float(E[i])),
                     repr(float(errors[i])), repr(float(B[i]))])
    lines += _table(rows)
    raise AssertionError("\n".join(lines))


# --------------------------------------------------------------------------- bounds
def tolerance_for(
    operation: str,
    n: int,
    fmt: Format | str,
    algorithm: str = "recursive",
    *,
    rounding: str = "rne",
    block_size: int | None = None,
    promote_fmt: Format | str | None = None,
) -> float:
    """Relative error bound factor of an ``n``-term sum or dot product in ``fmt``.

    The result ``s_hat`` that :func:`numerics.accum.sum` (or ``dot``) computes
    with these arguments satisfies ``|s_hat - s| <= factor * S`` where
    ``S = sum |x_i|`` (``sum |x_i * y_i|`` for dot products), provided no
    operation overflows and, for dot products, no product falls below the
    smallest normal value of ``fmt``.  The factor is exactly the one
    :mod:`numerics.accum.bounds` proves (``proofs/accumulation_bounds.md``),
    evaluated at ``S = 1``.  With ``p`` the precision of ``fmt``, ``u = 2**-p``
    for ``rne``/``rna`` and ``2**(1-p)`` for the other modes, and
    ``g(k) = (1 + u)**k - 1`` (defined for every ``k``, unlike ``gamma_k``):

    ==========  =====================================  ==========================
    algorithm   sum                                    dot
    ==========  =====================================  ==========================
    recursive   ``g(n - 1)``                           ``g(n)``
    pairwise    ``g(b - 1 + ceil(log2(ceil(n/b))))``   one rounding more
    blocked     ``(1+u)**(b-1) (1+u_p)**ceil(n/b) - 1``  one ``(1+u)`` more
    kahan       ``kahan_factor(n, u)`` (~ ``4u + 6nu**2``)  ``K (1+u) + u``
    neumaier    ``neumaier_factor(n, u)``              ``K (1+u) + u``
    exact       ``g(1) = u``                           ``g(2)``
    ==========  =====================================  ==========================

    ``b`` is ``block_size`` (pairwise: default 1, the textbook tree; blocked:
    default 128) and ``u_p`` the unit roundoff of ``promote_fmt`` (default
    binary32), as in :func:`numerics.accum.sum`.  The evaluated factor is
    inflated by ``1 + (n + 16) * 2**-52`` to cover its own rounding.

    Parameters
    ----------
    operation : {"sum", "dot"}
    n : int
        Number of terms, ``>= 1``.
    fmt : Format or str
        Format every addition (and product) rounds to.
    algorithm : str
        One of :data:`ALGORITHMS`.
    rounding : str
        Rounding mode of every operation.
    block_size : int or None
        Block size of ``pairwise`` and ``blocked``.
    promote_fmt : Format, str or None
        Format of the running total of ``blocked``.

    Returns
    -------
    float

    References
    ----------
    N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
    SIAM 2002, sections 3.1 and 4.2-4.3.

    Examples
    --------
    >>> tolerance_for("sum", 2, "bfloat16") / 2.0**-8    # g(1) = u, inflated
    1.0000000000000042
    >>> tolerance_for("dot", 4096, "bfloat16") > 1       # gamma_4096 would be undefined
    True
    """
    from numerics.accum import bounds

    if operation not in _OPERATIONS:
        raise ValueError(f"Got {operation=}, but the only valid values are 'sum' and 'dot'")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"Got {n=}, but it must be an int >= 1")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"Got {algorithm=}, but the only valid values are "
                         + ", ".join(repr(a) for a in ALGORITHMS))
    if rounding not in _ROUNDINGS:
        raise ValueError(f"Got {rounding=}, but the only valid values are "
                         + ", ".join(repr(r) for r in _ROUNDINGS))
    if block_size is not None and (isinstance(block_size, bool)
                                   or not isinstance(block_size, (int, np.integer))
                                   or block_size < 1):
        raise ValueError(f"Got {block_size=}, but it must be an int >= 1 or None")
    f = as_format(fmt)
    promote = as_format(promote_fmt if promote_fmt is not None else "binary32")
    if algorithm == "blocked" and block_size is None:
        block_size = 128
    one = np.float64(1.0)
    if operation == "sum":
        b, _ = bounds.sum_bound(one, int(n), f, rounding, algorithm, block_size=block_size,
                                promote_fmt=promote)
    else:
        b, _ = bounds.dot_bound(one, np.float64(0.0), int(n), f, rounding, algorithm,
                                block_size=block_size, promote_fmt=promote)
    return float(b)

"""Input intake for :mod:`numerics.accum`: every input at its exact value.

:func:`real_pair` turns any real array-like (floats, integers of any size, long
doubles, ml_dtypes arrays, torch tensors, Python ints and floats) into two float64
arrays ``hi`` and ``lo`` whose exact sum is the input's exact value, so that rounding
the pair once into a format (``numerics.kernels.rounding.round_pair``) rounds the input once, never
twice.  Complex, string, object and ragged inputs are rejected with a message naming
the argument.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numerics.dtypes import MAX_DIMS, as_exact_array, is_torch_tensor, refuse_masked, torch_values
from numerics.formats import Format

__all__ = ["MAX_DIMS", "real_pair", "reject_nan"]


def real_pair(x: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo)``: float64 arrays with ``hi + lo`` the exact value of ``x``.

    ``hi`` is ``x`` rounded to nearest-even binary64 (inf beyond its range, where ``lo``
    is 0); ``lo`` is the exact remainder (zeros when every value is a binary64 number).

    Parameters
    ----------
    x : array_like
        Real values: floats of any width, integers of any size, ml_dtypes arrays, torch
        tensors, Python ints and floats, nested sequences of them.
    name : str
        The argument's name, quoted in the error messages.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``hi`` and ``lo``, float64 arrays shaped like ``x``.

    Raises
    ------
    TypeError
        For complex, boolean or other non-real input.
    ValueError
        For ragged or malformed input, or more than :data:`MAX_DIMS` dimensions.

    Examples
    --------
    >>> hi, lo = real_pair(np.array([2**53 + 1]), "x")
    >>> float(hi[0]), float(lo[0])
    (9007199254740992.0, 1.0)
    """
    if is_torch_tensor(x):
        x = torch_values(x, name)
    refuse_masked(x, name)
    try:
        # (a list mixing big ints and floats, or holding bools, as an object array)
        arr = as_exact_array(x)
    except (ValueError, TypeError):
        raise ValueError(
            f"Got a ragged or malformed {name} (nested sequences of unequal lengths?), "
            "but it must be a rectangular array of real numbers"
        ) from None
    if arr.ndim > MAX_DIMS:
        raise ValueError(f"Got {name} with {arr.ndim} dimensions, but at most {MAX_DIMS} "
                         "are supported")
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"Got {name} with complex dtype {arr.dtype}, but it must be real")
    if kind == "b":
        raise TypeError(f"Got {name} of booleans, but it must hold real numbers (as encode's "
                        "inputs: a bool is not a value)")
    if kind == "f" and arr.dtype.itemsize <= 8:
        return arr.astype(np.float64), np.zeros(arr.shape)
    if kind in "iu":
        hi = arr.astype(np.float64)
        if arr.size == 0 or float(np.abs(hi).max()) < 2.0**53:
            return hi, np.zeros(arr.shape)
        return _object_pair(arr.astype(object), name)
    if kind == "f":  # long double
        with np.errstate(over="ignore", invalid="ignore"):
            hi = arr.astype(np.float64)
            lo = np.where(np.isfinite(hi), (arr - hi.astype(arr.dtype)).astype(np.float64), 0.0)
        return hi, lo
    if kind == "V" or arr.dtype.name.startswith(("bfloat16", "float8", "float6", "float4")):
        with np.errstate(invalid="ignore"):  # (a signalling NaN: a NaN)
            return arr.astype(np.float64), np.zeros(arr.shape)  # ml_dtypes: exact in binary64
    if kind == "O":
        return _object_pair(arr, name)
    raise TypeError(f"Got {name} with dtype {arr.dtype}, but it must be a real numeric array")


def reject_nan(x: np.ndarray, fmt: Format, name: str) -> None:
    """ValueError naming ``name`` and the index of its first NaN when ``fmt`` has no NaN
    to round it to (fp6, fp4): the rule ``encode`` and ``quantize`` follow.

    Parameters
    ----------
    x : numpy.ndarray
        The values (only float arrays are looked at).
    fmt : Format
        The format they are to be rounded into.
    name : str
        The argument's name, quoted in the error message.

    Raises
    ------
    ValueError
        If ``fmt`` has no NaN and ``x`` holds one (naming its index).

    Examples
    --------
    >>> from numerics.formats import as_format
    >>> reject_nan(np.array([1.0, np.nan]), as_format("e2m1fn"), "x")
    Traceback (most recent call last):
    ...
    ValueError: Got x with a NaN at index (1,), but e2m1fn has no NaN to round it to
    """
    if fmt.has_nan or x.dtype.kind != "f":
        return
    nan = np.isnan(x)
    if nan.any():
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(nan)), x.shape))
        raise ValueError(f"Got {name} with a NaN at index {index}, but {fmt.name} has no "
                         "NaN to round it to")


def _object_pair(arr: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    flat = arr.reshape(-1)
    hi = np.empty(flat.size)
    lo = np.zeros(flat.size)
    for i, v in enumerate(flat.tolist()):
        if isinstance(v, np.integer) or isinstance(v, np.floating) and v.dtype.itemsize <= 8:
            v = v.item()  # a numpy scalar in a list (exact as a Python int or float)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(
                f"Got {name} holding {v!r} ({type(v).__name__}), but it must hold real numbers"
            )
        if isinstance(v, float):
            hi[i] = v
            continue
        try:
            h = float(v)
        except OverflowError:
            hi[i] = math.inf if v > 0 else -math.inf
            continue
        hi[i] = h
        lo[i] = _odd_float(v - int(h))
    return hi.reshape(arr.shape), lo.reshape(arr.shape)


def _odd_float(r: int) -> float:
    """``r`` rounded to odd in binary64: exact when it fits, else truncated to 53 bits
    with the last bit set, which keeps every later rounding to 53 bits or fewer of
    ``hi + lo`` equal to that of the exact value (Boldo and Melquiond, IEEE TC 2008)."""
    a = abs(r)
    drop = a.bit_length() - 53
    if drop <= 0 or a & ((1 << drop) - 1) == 0:
        return float(r)
    m = (a >> drop) | 1
    return math.copysign(math.ldexp(float(m), drop), r)

"""Operand intake of :mod:`numerics.ops`: exactly representable values, broadcasting.

The public boundary of the operations: every operand is converted to float64
(exactly: each value of a registered format is a binary64 value) after checking
that it *is* a value of the format (:func:`_representable` inspects the binary64
bit pattern: the significand bits below the format's quantum in that binade must
be zero, the magnitude at most ``max``, NaN/inf/negative values only where the
format has them).  The first offending element is named in the ValueError,
with its index (:func:`_index_text`).  :func:`_prepare` broadcasts and flattens
the operands and turns ``sub`` into ``add`` of ``-b`` (negating a float64 is
exact), which is what all the computing paths consume.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics.dtypes import dtype_of, format_of_dtype
from numerics.formats import Format

__all__ = ["_broadcast", "_index_text", "_is_scalar", "_operand", "_prepare",
           "_representable"]


def _is_scalar(operands: list[Any]) -> bool:
    """Whether every operand is a scalar (the result is then a numpy scalar)."""
    return all(np.ndim(x) == 0 and not isinstance(x, np.ndarray) for x in operands)


def _index_text(name: str, shape: tuple[int, ...], flat: int) -> str:
    if not shape:
        return name
    idx = np.unravel_index(flat, shape)
    return f"{name}[{', '.join(str(int(i)) for i in idx)}]"


def _representable(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Whether each float64 is a value of ``fmt`` (NaN/inf only where it has them)."""
    u = x.view(np.uint64)
    exp_field = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    sig = (u & np.uint64((1 << 52) - 1)) | np.where(exp_field > 0, np.uint64(1 << 52),
                                                     np.uint64(0))
    unit_exp = np.maximum(exp_field, 1) - 1075
    binade = np.maximum(exp_field - 1023, fmt.emin)
    shift = np.clip(binade - fmt.trailing_bits - unit_exp, 0, 63).astype(np.uint64)
    ok = (sig & ((np.uint64(1) << shift) - np.uint64(1))) == 0
    if not fmt.subnormals:
        ok &= exp_field - 1023 >= fmt.emin
    with np.errstate(invalid="ignore"):
        ok &= np.abs(x) <= fmt.max
    if not fmt.signed:
        ok &= ~np.signbit(x) | (x == 0)
    ok |= (x == 0) & fmt.has_zero
    if fmt.has_infinity:
        ok |= np.isinf(x) & (fmt.signed | (x > 0))
    if fmt.has_nan:
        ok |= np.isnan(x)
    return ok


def _operand(x: Any, name: str, fmt: Format) -> np.ndarray:
    """``x`` as a float64 array after checking every value is exact in ``fmt``."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"Got {name}={x!r}; expected numbers, not booleans")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Got {name} of type {type(x).__name__}: {err}") from None
    kind = arr.dtype.kind
    if format_of_dtype(arr.dtype) is not None:
        kind = "f"  # ml_dtypes floats (kind "V") convert exactly to float64
    if kind == "b" or kind in "USVMmc":
        raise TypeError(f"Got {name} with dtype {arr.dtype}; expected real numbers")
    if kind == "O":
        try:
            x64 = np.array([float(v) for v in arr.reshape(-1)], np.float64).reshape(arr.shape)
        except (TypeError, ValueError, OverflowError) as err:
            raise TypeError(f"Got {name} with non-numeric entries: {err}") from None
        exact = [v == float(v) or np.isnan(float(v)) for v in arr.reshape(-1)]
        if not all(exact):
            i = exact.index(False)
            raise ValueError(f"Got {_index_text(name, arr.shape, i)}={arr.reshape(-1)[i]!r}, "
                             f"which is not representable in {fmt.name}")
        arr = x64
    if kind in "iu":
        x64 = arr.astype(np.float64)
        back = np.where(np.abs(x64) < 2.0**63, x64, 0).astype(arr.dtype)
        bad = (back != arr) | (np.abs(x64) >= 2.0**63)
        if np.any(bad):
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(f"Got {_index_text(name, arr.shape, i)}={arr.reshape(-1)[i]}, "
                             f"which is not representable in {fmt.name}")
        arr = x64
    native = dtype_of(fmt)
    x64 = np.asarray(arr, dtype=np.float64)
    if native is not None and arr.dtype == native:
        return x64
    if fmt.name == "binary64" and fmt.exponent_bits == 11 and fmt.trailing_bits == 52:
        return x64
    ok = _representable(np.ascontiguousarray(x64), fmt)
    if not np.all(ok):
        i = int(np.flatnonzero(~ok.reshape(-1))[0])
        raise ValueError(f"Got {_index_text(name, x64.shape, i)}={float(x64.reshape(-1)[i])!r}, "
                         f"which is not representable in {fmt.name}")
    return x64


def _broadcast(arrays: list[np.ndarray], names: list[str]) -> list[np.ndarray]:
    try:
        out = np.broadcast_arrays(*arrays)
    except ValueError:
        shapes = ", ".join(f"{n}.shape={a.shape}" for n, a in zip(names, arrays))
        raise ValueError(f"Got {shapes}, which do not broadcast together") from None
    return [np.ascontiguousarray(a).reshape(-1) for a in out]


def _prepare(op: str, operands: list[Any], names: list[str], fmt: Format
             ) -> tuple[str, list[np.ndarray], tuple[int, ...], bool]:
    """Validated operands, broadcast and flattened, for ``op`` in ``fmt``.

    Returns ``(op, xs, shape, scalar)``: ``sub`` becomes ``add`` with ``-b``; ``xs``
    are contiguous flat float64 arrays of the broadcast ``shape``; ``scalar`` tells
    whether every operand was a scalar.
    """
    scalar = _is_scalar(operands)
    arrays = [_operand(x, n, fmt) for x, n in zip(operands, names)]
    xs = _broadcast(arrays, names) if len(arrays) > 1 else [arrays[0].reshape(-1).copy()]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    if op == "sub":
        op, xs = "add", [xs[0], -xs[1]]
    return op, xs, shape, scalar

"""Operand intake of :mod:`numerics.ops`: exact values of the format, flat, one dtype.

Every operand must be a value of the format, judged at its exact value: floats,
ints (any width, ``uint64`` included), ``longdouble`` (a value that is not a
float64 cannot be a value of any format here, so it is rejected, never rounded),
Python numbers and objects with an exact ``float()``, and numpy / ml_dtypes
arrays of a format's own dtype (taken as codes, with no check).  Booleans,
complex numbers and strings are TypeErrors; ragged nestings and values outside
the format are ValueErrors naming the argument (and the element's index).

The kernel takes operands flat and of one dtype: float64, float32, or the
codes of the format's own dtype as uint8 or uint16.  An operand
of the result's shape is raveled (copied only when not contiguous: strided,
negative strides, big-endian); an operand with one element stays one element
(the kernel broadcasts it); any other broadcast is materialized.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from numerics.dtypes import as_input, dtype_of, format_of_dtype
from numerics.formats import Format, NaNEncoding

__all__ = ["broadcast_shape", "decode_table", "index_text", "is_scalar", "operands"]


def is_scalar(xs: list[Any]) -> bool:
    """Whether every operand is a scalar (the result is then a numpy scalar)."""
    return all(np.ndim(x) == 0 and not isinstance(x, np.ndarray) for x in xs)


def index_text(name: str, shape: tuple[int, ...], flat: int) -> str:
    """``name[i, j]`` for the element at C-order position ``flat`` of ``shape``."""
    if not shape:
        return name
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return f"{name}[{', '.join(str(i) for i in reversed(idx))}]"


def broadcast_shape(shapes: list[tuple[int, ...]], names: list[str]) -> tuple[int, ...]:
    """numpy's broadcast shape (for any number of dimensions), or a ValueError."""
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    out: list[int] = []
    for k in range(1, max(len(s) for s in shapes) + 1):
        dims = {s[-k] for s in shapes if len(s) >= k} - {1}
        if len(dims) > 1:
            text = ", ".join(f"{n}.shape={s}" for n, s in zip(names, shapes))
            raise ValueError(f"Got {text}, which do not broadcast together")
        out.append(dims.pop() if dims else 1)
    return tuple(reversed(out))


def _bad_value(name: str, arr: np.ndarray, i: int, fmt: Format) -> ValueError:
    value = arr.reshape(-1)[i]
    text = repr(float(value)) if isinstance(value, (float, np.float64, np.float32)) \
        else repr(value.item() if isinstance(value, np.generic) else value)
    return ValueError(f"Got {index_text(name, arr.shape, i)}={text}, which is not "
                      f"representable in {fmt.name}")


def _as_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a numeric ndarray in native byte order (no booleans, complex, text)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"Got {name}={x!r}; expected numbers, not booleans")
    arr = as_input(x, name)
    if arr.dtype.kind not in "fiuO" and format_of_dtype(arr.dtype) is None:
        raise TypeError(f"Got {name} with dtype {arr.dtype}; expected real numbers "
                        "(not booleans, complex numbers or text)")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _exact_float64(arr: np.ndarray, name: str, fmt: Format) -> np.ndarray:
    """ints, longdouble and objects as float64, raising where that is not exact."""
    kind = arr.dtype.kind
    if kind == "O":
        out = np.empty(arr.shape, np.float64)
        flat = out.reshape(-1)
        for i, v in enumerate(arr.reshape(-1)):
            if isinstance(v, (bool, np.bool_, complex, np.complexfloating, str, bytes)):
                raise TypeError(f"Got {index_text(name, arr.shape, i)}={v!r}; expected a "
                                "real number")
            if isinstance(v, np.integer):
                v = int(v)  # (numpy compares int64 2**53 + 1 equal to float 2**53)
            try:
                f = float(v)
            except OverflowError:  # an int or a Fraction beyond binary64's range
                raise _bad_value(name, arr, i, fmt) from None
            except (TypeError, ValueError) as err:
                raise TypeError(f"Got {index_text(name, arr.shape, i)}={v!r}, which is not "
                                f"a real number: {err}") from None
            if not (math.isnan(f) or v == f):
                raise _bad_value(name, arr, i, fmt)
            flat[i] = f
        return out
    if format_of_dtype(arr.dtype) is not None:  # an ml_dtypes format: exact in float64
        return _widened(arr)
    with np.errstate(over="ignore", invalid="ignore"):
        x64 = arr.astype(np.float64)
    if kind == "f":  # longdouble (float16/32/64 convert exactly)
        bad = (x64.astype(arr.dtype) != arr) & ~np.isnan(arr)
    elif kind in "iu":
        top = 2.0**63 if kind == "i" else 2.0**64
        fits = (x64 < top) & (x64 >= -top)  # int64's -2**63 is a float64
        back = np.where(fits, x64, 0).astype(arr.dtype)
        bad = ~fits | (back != arr)
    if np.any(bad):
        raise _bad_value(name, arr, int(np.flatnonzero(bad.reshape(-1))[0]), fmt)
    return x64


def _widened(arr: np.ndarray) -> np.ndarray:
    """A float32, float16 or ml_dtypes array as float64, exactly, its signalling NaNs
    still signalling: a cast quiets them, and the operation must see them to raise
    ``invalid`` (the payload does not matter: no NaN result has one)."""
    with np.errstate(invalid="ignore"):
        x64 = arr.astype(np.float64)
    src = format_of_dtype(arr.dtype)
    if src is None or src.nan is not NaNEncoding.IEEE or src.bits >= 64:
        return x64
    nan = np.isnan(x64)
    if nan.any():
        codes = arr.view(f"u{arr.dtype.itemsize}")
        snan = nan & ((codes & (1 << (src.trailing_bits - 1))) == 0)
        bits = x64.view(np.uint64)
        bits[snan] = (bits[snan] & ~np.uint64(1 << 51)) | np.uint64(1 << 50)
    return x64


@lru_cache(maxsize=256)
def _holds_all(fmt: Format, dtype: np.dtype) -> bool:
    """Whether every value of the float ``dtype`` (float32, float64) is a value of ``fmt``
    (cached: a call costs about as much as the rest of a small operation's intake)."""
    fi = np.finfo(dtype)
    return (fmt.trailing_bits >= fi.nmant and fmt.emax >= fi.maxexp - 1
            and fmt.emin - fmt.trailing_bits <= fi.minexp - fi.nmant and fmt.subnormals
            and fmt.signed and fmt.has_nan and fmt.has_infinity)


def _check_narrow_codes(codes: np.ndarray, name: str, fmt: Format) -> None:
    """ValueError naming the first byte of ``codes`` above ``fmt``'s largest code (an
    ml_dtypes fp4/fp6 array viewed over arbitrary bytes can hold one)."""
    top = (1 << fmt.bits) - 1
    if codes.size and int(codes.max()) > top:
        i = int(np.argmax(codes.reshape(-1) > top))
        raise ValueError(f"Got {index_text(name, codes.shape, i)} with byte "
                         f"{int(codes.reshape(-1)[i]):#04x}, which is not a {fmt.name} code "
                         f"(0 to {top:#04x}; the byte's top {8 - fmt.bits} bits must be 0)")


def operands(xs: list[Any], names: list[str], fmt: Format, check: Any
             ) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """Flat operands of one kernel dtype and the broadcast shape.

    ``check(flat_values) -> int`` is the index of the first value not in ``fmt``
    (or -1); it runs on every float operand whose dtype holds values outside ``fmt``.
    """
    native = dtype_of(fmt)
    arrays: list[np.ndarray] = []
    for x, name in zip(xs, names):
        arr = _as_array(x, name)
        src = format_of_dtype(arr.dtype)
        if src is not None and src.bits < 8 * arr.dtype.itemsize:
            # fp4/fp6 in a byte: the top bits must be 0 (whichever format the operation's)
            _check_narrow_codes(arr.view(np.uint8), name, src)
        if native is not None and arr.dtype == native and native.itemsize <= 2:
            # codes as unsigned integers of their width (a view: no pass over memory)
            arrays.append(arr.view(np.uint8 if native.itemsize == 1 else np.uint16))
            continue
        if arr.dtype not in (np.float64, np.float32):
            arr = _exact_float64(arr, name, fmt)
        if not _holds_all(fmt, arr.dtype):
            i = check(np.ravel(arr))
            if i >= 0:
                raise _bad_value(name, arr, i, fmt)
        arrays.append(arr)
    shape = broadcast_shape([a.shape for a in arrays], names)
    size = math.prod(shape)
    kinds = {a.dtype for a in arrays if a.size > 1} or {a.dtype for a in arrays}
    kind = kinds.pop() if len(kinds) == 1 else np.dtype(np.float64)
    converted = [a if a.dtype == kind else _to_kind(a, kind, fmt) for a in arrays]
    if any(a is None for a in converted):
        kind = np.dtype(np.float64)
        converted = [a if a.dtype == kind else _to_kind(a, kind, fmt) for a in arrays]
    flat = []
    for a in converted:
        assert a is not None
        if a.size == 1 and size != 1:
            flat.append(np.ascontiguousarray(a).reshape(1))
        elif a.shape == shape:
            flat.append(np.ravel(a))
        else:
            flat.append(np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1))
    return flat, shape


@lru_cache(maxsize=64)
def decode_table(fmt: Format) -> np.ndarray:
    """float64 value of every code of a format of at most 16 bits; signalling NaN codes
    give signalling float64 NaNs (so that the kernel can tell them)."""
    from numerics.kernels.ops import decode_all
    from numerics.kernels.rounding import format_params

    out = decode_all(format_params(fmt))
    out.setflags(write=False)
    return out


def _to_kind(a: np.ndarray, kind: np.dtype, fmt: Format) -> np.ndarray | None:
    """Values of ``fmt`` in the kernel dtype ``kind`` exactly (float64 always works; a
    single value may become float32 or a code), or None."""
    if a.dtype.kind == "u":  # codes -> values (signalling NaNs stay signalling)
        a = decode_table(fmt)[a]
    if kind == np.float64:
        return _widened(a)
    if a.size != 1:  # (an empty operand too: it broadcasts to an empty result)
        return None
    v = float(a.reshape(-1)[0])
    if math.isnan(v):  # (a NaN keeps its bits only as float64)
        return None
    if kind == np.float32:
        return a.astype(np.float32) if float(np.float32(v)) == v else None
    table = decode_table(fmt)
    hits = np.flatnonzero((table == v) & (np.signbit(table) == (math.copysign(1, v) < 0)))
    return np.full(a.shape, hits[0], kind) if hits.size else None

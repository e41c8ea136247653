"""Inputs as arrays: numpy, ml_dtypes, torch and Python values read exactly.

:func:`dtype_of` and :func:`format_of_dtype`, the numpy / ml_dtypes dtype of each
registered format and back, live with the format descriptor
(:mod:`numerics.formats`, which ``as_format`` needs them in) and are re-exported here.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from numerics.formats import dtype_of, format_of_dtype

__all__ = ["MAX_DIMS", "as_exact_array", "as_input", "dtype_of", "format_of_dtype",
           "is_torch_tensor", "refuse_masked", "torch_values"]

#: The most dimensions an input may have (numpy 1's limit, kept on numpy 2).
MAX_DIMS = 32

#: Scalar types numpy converts to a float array exactly (no scan needed).
_PLAIN_FLOATS = frozenset({float, np.float64, np.float32, np.float16})
#: Scalar types of plain numbers (each an exact float64 up to 2**53).
_NUMBERS = _PLAIN_FLOATS | frozenset({int, np.int64, np.int32, np.int16, np.int8, np.uint64,
                                      np.uint32, np.uint16, np.uint8})
#: The largest integer magnitude up to which every integer is a float64.
_EXACT_INT = 2**53
#: ml_dtypes' narrow integer types (dtype kind "V"), read as numpy's 8-bit integers.
_ML_INTS: dict[str, type[np.generic]] = {"int2": np.int8, "int4": np.int8, "uint2": np.uint8,
                                         "uint4": np.uint8}


def _needs_objects(seq: list[Any] | tuple[Any, ...], wide_ints: bool) -> bool:
    """Whether nested lists/tuples hold a boolean (which numpy would silently turn into
    0 or 1), or, with ``wide_ints``, an integer beyond float64's exact integers (a
    Python int, a numpy integer scalar or an int64/uint64 array, which numpy would round
    to float64 beside a float)."""
    stack: list[Any] = [seq]
    while stack:
        items = stack.pop()
        types = set(map(type, items))
        if types <= _PLAIN_FLOATS:
            continue
        if bool in types or np.bool_ in types:
            return True
        if types <= _NUMBERS:
            if wide_ints and any(type(v) not in _PLAIN_FLOATS
                                 and not -_EXACT_INT <= int(v) <= _EXACT_INT for v in items):
                return True
            continue
        for v in items:
            if type(v) in _PLAIN_FLOATS:
                continue
            if isinstance(v, (list, tuple)):
                stack.append(v)
            elif isinstance(v, np.ndarray):
                kind = v.dtype.kind
                if kind == "b":
                    return True
                if wide_ints and kind in "iu" and v.dtype.itemsize == 8 and v.size and (
                        int(v.max()) > _EXACT_INT or int(v.min()) < -_EXACT_INT):
                    return True
            elif wide_ints and isinstance(v, (int, np.integer)) and not (
                    -_EXACT_INT <= int(v) <= _EXACT_INT):
                return True
    return False


#: torch dtypes numpy holds as they are, by their names in torch.
_TORCH_NUMPY = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64", "uint16",
                          "uint32", "uint64", "float16", "float32", "float64"})
#: torch dtypes numpy holds as ml_dtypes types of the same name.
_TORCH_ML = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                       "float8_e5m2fnuz", "float8_e8m0fnu"})


def is_torch_tensor(x: object) -> bool:
    """Whether ``x`` is a torch tensor, a subclass's included (``nn.Parameter``, a user's
    ``torch.Tensor`` subclass), without importing torch: no tensor exists before it is.

    Examples
    --------
    >>> is_torch_tensor(np.zeros(2)), is_torch_tensor([1.0])
    (False, False)
    """
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def torch_values(t: Any, name: str) -> np.ndarray:
    """The values of the torch tensor ``t`` (argument ``name``) as a numpy array, exactly:
    a view of a CPU tensor where it can be (bfloat16 and float8 as the ml_dtypes type of
    the same name), moved to the CPU otherwise.

    Tensors on the meta device, sparse and other non-strided layouts, nested, quantized
    and complex tensors, and dtypes with no numpy or ml_dtypes counterpart
    (``float4_e2m1fn_x2``, ...) raise TypeError naming ``name`` and the dtype.
    """
    import torch  # only reachable when the caller already has torch

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"Got {name} of type {type(t).__name__}, but it must be a torch "
                        "tensor here")
    if t.device.type == "meta":
        raise TypeError(f"Got {name} as a torch tensor on meta, which holds no values (only "
                        "a shape and dtype)")
    if t.layout != torch.strided:
        raise TypeError(f"Got {name} with torch layout {t.layout}; convert it with "
                        ".to_dense() first")
    if t.is_nested:  # (a strided nested tensor has rows of several lengths: no one array)
        raise TypeError(f"Got {name} as a nested torch tensor; pass its rows one by one "
                        "(.unbind()) or padded (torch.nested.to_padded_tensor)")
    dname = str(t.dtype).removeprefix("torch.")
    if t.is_quantized:
        raise TypeError(f"Got {name} with quantized torch dtype {dname}; call .dequantize() "
                        "first")
    if t.is_complex():
        raise TypeError(f"Got {name} with complex torch dtype {dname}, but it must be real")
    # a lazy negated or conjugated view (x.conj().imag) has no plain storage to read
    t = t.detach().cpu().resolve_neg().resolve_conj()
    if dname in _TORCH_ML:
        import ml_dtypes

        width = {1: torch.uint8, 2: torch.int16}[t.element_size()]
        return t.contiguous().view(width).numpy().view(getattr(ml_dtypes, dname))
    if dname not in _TORCH_NUMPY:
        raise TypeError(f"Got {name} with torch dtype {dname}, which has no numpy or "
                        "ml_dtypes counterpart")
    return np.asarray(t.numpy())


def refuse_masked(x: Any, name: str) -> None:
    """TypeError naming ``name`` for a numpy masked array: every reader here would
    drop its mask (``np.asarray`` does) and compute on the hidden values too.

    Examples
    --------
    >>> refuse_masked(np.ma.masked_array([1.0, 2.0], [0, 1]), "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: Got x as a masked array, whose mask would be ignored; pass x.filled(v) or ...
    """
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"Got {name} as a masked array, whose mask would be ignored; pass "
                        f"{name}.filled(v) or {name}.compressed()")


def as_exact_array(x: Any) -> np.ndarray:
    """``np.asarray(x)``, except that a list (or tuple) that numpy would convert inexactly
    becomes an object array of its values, for the caller to take one by one: a list
    mixing integers beyond ``2**53`` (Python ints, numpy integer scalars or 0-d arrays,
    int64/uint64 arrays) with floats, which numpy would round to float64, and a list
    holding booleans beside numbers, which numpy would make 0 and 1.

    Examples
    --------
    >>> as_exact_array([2**53 + 1, 0.5]).dtype, as_exact_array([1, 0.5]).dtype
    (dtype('O'), dtype('float64'))
    >>> as_exact_array([np.int64(2**53 + 1), 0.5]).dtype, as_exact_array([True, 1]).dtype
    (dtype('O'), dtype('O'))

    ml_dtypes' ``int2``, ``int4``, ``uint2`` and ``uint4`` arrays become int8 / uint8
    arrays of the same values.
    """
    if is_torch_tensor(x):
        x = torch_values(x, "x")
    refuse_masked(x, "x")
    arr = np.asarray(x)
    if arr.dtype.kind == "V" and arr.dtype.name in _ML_INTS and arr.dtype.names is None:
        return arr.astype(_ML_INTS[arr.dtype.name])  # ml_dtypes int4 & co.: exact
    if isinstance(x, (list, tuple)) and arr.dtype.kind in "fiu":
        # an integer beyond 2**53 becomes a float of at least 2**53: in a long list, only
        # then look for one (a short one is looked through at once)
        wide = arr.dtype.kind == "f" and (arr.size < 256 or not bool(
            (np.abs(arr) < _EXACT_INT).all()))
        if _needs_objects(x, wide):
            arr = np.asarray(x, dtype=object)
    return _unwrapped(arr) if arr.dtype.kind == "O" else arr


def as_input(x: Any, name: str) -> np.ndarray:
    """:func:`as_exact_array` of the argument ``name``, with errors that name it: text, a
    ragged nesting, something not array-like, more than :data:`MAX_DIMS` dimensions.

    Examples
    --------
    >>> as_input([[1.0, 2.0], [3.0]], "x")
    Traceback (most recent call last):
    ...
    ValueError: Got x that is not a rectangular array (ragged nested sequences?): ...
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"Got {name}={x!r} of type {type(x).__name__} (dtype "
                        f"{np.asarray(x).dtype.str}); expected numbers")
    if is_torch_tensor(x):
        x = torch_values(x, name)
    refuse_masked(x, name)
    try:
        arr = as_exact_array(x)
    except ValueError as err:
        raise ValueError(f"Got {name} that is not a rectangular array (ragged nested "
                         f"sequences?): {err}") from None
    except TypeError as err:
        raise TypeError(f"Got {name} of type {type(x).__name__} that is not array-like: "
                        f"{err}") from None
    if arr.ndim > MAX_DIMS:
        raise ValueError(f"Got {name} with {arr.ndim} dimensions; at most {MAX_DIMS} are "
                         "supported")
    return arr


def _unwrapped(arr: np.ndarray) -> np.ndarray:
    """An object array with each 0-d array element replaced by its value (a copy where
    there is one, so a caller's array is left as it is)."""
    flat = arr.reshape(-1)
    where = [i for i, v in enumerate(flat) if isinstance(v, np.ndarray) and v.ndim == 0]
    if not where:
        return arr
    arr = arr.copy()
    flat = arr.reshape(-1)
    for i in where:
        flat[i] = flat[i][()]
    return arr

"""The numpy / ml_dtypes dtype of each registered format, where one exists.

ml_dtypes is imported on first need, not with this module: importing it costs
most of a second, and a numpy dtype never needs it.  An ml_dtypes dtype can only
exist once ml_dtypes is imported, so :func:`format_of_dtype` of any other dtype
is answered from the numpy table alone (and of a dtype name such as
``"bfloat16"``, which numpy learns from ml_dtypes, after importing it).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from numerics.formats import Format, as_format

__all__ = ["as_exact_array", "dtype_of", "format_of_dtype"]

#: Formats stored natively by numpy.
_NUMPY_NAMES: dict[str, type[np.generic]] = {
    "binary64": np.float64,
    "binary32": np.float32,
    "binary16": np.float16,
}
#: Formats stored natively by ml_dtypes: format name -> ml_dtypes type name.
_ML_DTYPES_NAMES: dict[str, str] = {
    "bfloat16": "bfloat16",
    "e5m2": "float8_e5m2",
    "e4m3": "float8_e4m3",
    "e3m4": "float8_e3m4",
    "e4m3fn": "float8_e4m3fn",
    "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
    "e4m3b11fnuz": "float8_e4m3b11fnuz",
    "e8m0fnu": "float8_e8m0fnu",
    "e2m3fn": "float6_e2m3fn",
    "e3m2fn": "float6_e3m2fn",
    "e2m1fn": "float4_e2m1fn",
}

_BY_DTYPE: dict[np.dtype, str] = {np.dtype(scalar): name for name, scalar in _NUMPY_NAMES.items()}
_ml_dtypes_added = False


def _add_ml_dtypes() -> None:
    """Import ml_dtypes and add its dtypes to ``_BY_DTYPE`` (once)."""
    global _ml_dtypes_added
    if not _ml_dtypes_added:
        import ml_dtypes

        for name, type_name in _ML_DTYPES_NAMES.items():
            _BY_DTYPE[np.dtype(getattr(ml_dtypes, type_name))] = name
        _ml_dtypes_added = True


def dtype_of(fmt: Format | str) -> np.dtype | None:
    """The numpy dtype storing ``fmt`` natively (``None`` for tf32, P3109, custom formats).

    Examples
    --------
    >>> dtype_of("bf16")
    dtype(bfloat16)
    >>> dtype_of("tf32") is None
    True
    """
    return _native_dtype(as_format(fmt))


@lru_cache(maxsize=64)
def _native_dtype(fmt: Format) -> np.dtype | None:
    """:func:`dtype_of` for a :class:`Format` (cached: every kernel call asks)."""
    from numerics.formats import get_format

    try:
        registered = get_format(fmt.name)
    except ValueError:
        return None
    if registered != fmt:
        return None
    if fmt.name in _NUMPY_NAMES:
        return np.dtype(_NUMPY_NAMES[fmt.name])
    type_name = _ML_DTYPES_NAMES.get(fmt.name)
    if type_name is None:
        return None
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, type_name))


def format_of_dtype(dtype: object) -> Format | None:
    """The registered format of a numpy / ml_dtypes floating dtype, else ``None``.

    Examples
    --------
    >>> format_of_dtype(np.float16).name, format_of_dtype(np.dtype(">f4")).name
    ('binary16', 'binary32')
    """
    if isinstance(dtype, np.dtype) and _ml_dtypes_added:
        return _format_of_native(dtype)
    from numerics.formats import get_format

    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        if not isinstance(dtype, str) or _ml_dtypes_added:
            return None
        _add_ml_dtypes()  # numpy knows names such as "bfloat16" once ml_dtypes is imported
        try:
            dt = np.dtype(dtype)
        except TypeError:
            return None
    if not _ml_dtypes_added and dt.type.__module__.partition(".")[0] == "ml_dtypes":
        _add_ml_dtypes()  # a dtype of ml_dtypes' (so ml_dtypes is imported already)
    if dt.byteorder == ">" or (dt.byteorder == "<" and not np.little_endian):
        dt = dt.newbyteorder("=")  # the same format in the other byte order
    name = _BY_DTYPE.get(dt)
    return None if name is None else get_format(name)


@lru_cache(maxsize=64)
def _format_of_native(dt: np.dtype) -> Format | None:
    """:func:`format_of_dtype` for a numpy dtype once ml_dtypes' are known (cached)."""
    from numerics.formats import get_format

    if dt.byteorder == ">" or (dt.byteorder == "<" and not np.little_endian):
        dt = dt.newbyteorder("=")
    name = _BY_DTYPE.get(dt)
    return None if name is None else get_format(name)


def _holds_wide_int(seq: list[Any] | tuple[Any, ...]) -> bool:
    """Whether nested lists/tuples hold a Python int beyond float64's exact integers."""
    stack: list[Any] = [seq]
    while stack:
        for v in stack.pop():
            if isinstance(v, (list, tuple)):
                stack.append(v)
            elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
                return True
    return False


def as_exact_array(x: Any) -> np.ndarray:
    """``np.asarray(x)``, except that a list mixing Python ints beyond ``2**53`` with
    floats (which numpy would round to float64) becomes an object array of the values.

    Examples
    --------
    >>> as_exact_array([2**53 + 1, 0.5]).dtype, as_exact_array([1, 0.5]).dtype
    (dtype('O'), dtype('float64'))
    """
    arr = np.asarray(x)
    if isinstance(x, (list, tuple)) and arr.dtype.kind == "f" and _holds_wide_int(x):
        return np.asarray(x, dtype=object)
    return arr

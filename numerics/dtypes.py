"""The numpy / ml_dtypes dtype of each registered format, where one exists."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from numerics.formats import Format, as_format

__all__ = ["dtype_of", "format_of_dtype"]

_NAMES: dict[str, object] = {
    "binary64": np.float64,
    "binary32": np.float32,
    "binary16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "e5m2": ml_dtypes.float8_e5m2,
    "e4m3": ml_dtypes.float8_e4m3,
    "e3m4": ml_dtypes.float8_e3m4,
    "e4m3fn": ml_dtypes.float8_e4m3fn,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "e2m3fn": ml_dtypes.float6_e2m3fn,
    "e3m2fn": ml_dtypes.float6_e3m2fn,
    "e2m1fn": ml_dtypes.float4_e2m1fn,
}


_BY_DTYPE: dict[np.dtype, str] = {np.dtype(scalar): name  # type: ignore[call-overload]
                                  for name, scalar in _NAMES.items()}


def dtype_of(fmt: Format | str) -> np.dtype | None:
    """The numpy dtype storing ``fmt`` natively (``None`` for tf32, P3109, custom formats).

    Examples
    --------
    >>> dtype_of("bf16")
    dtype(bfloat16)
    >>> dtype_of("tf32") is None
    True
    """
    fmt = as_format(fmt)
    from numerics.formats import get_format

    try:
        registered = get_format(fmt.name)
    except ValueError:
        return None
    if registered != fmt:
        return None
    scalar = _NAMES.get(fmt.name)
    return None if scalar is None else np.dtype(scalar)  # type: ignore[call-overload]


def format_of_dtype(dtype: object) -> Format | None:
    """The registered format of a numpy / ml_dtypes floating dtype, else ``None``.

    Examples
    --------
    >>> format_of_dtype(np.float16).name, format_of_dtype(np.dtype(">f4")).name
    ('binary16', 'binary32')
    """
    from numerics.formats import get_format

    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        return None
    if dt.byteorder == ">" or (dt.byteorder == "<" and not np.little_endian):
        dt = dt.newbyteorder("=")  # the same format in the other byte order
    name = _BY_DTYPE.get(dt)
    return None if name is None else get_format(name)

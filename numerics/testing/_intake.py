"""Private: turn what a test has in hand into a numpy array, or say why not.

Accepted: numpy arrays (float, int, bool; ml_dtypes dtypes), torch tensors
(any device: moved to the CPU; bfloat16 and the float8 dtypes viewed as the
ml_dtypes dtype with the same bits), Python and numpy real scalars
(``int``, ``float``, :class:`fractions.Fraction`, :class:`decimal.Decimal`)
and nested lists of them.  Rejected with TypeError: ``None``, strings,
bytes, complex numbers, and anything else; with ValueError: ragged lists.
"""

from __future__ import annotations

import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

__all__: list[str] = []

_TORCH_TO_ML: dict[str, Any] = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
}
_ACCEPTED = ("a numpy array, a torch tensor, a real number or a (nested) list of them")


def is_torch(x: object) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _from_torch(t: Any, name: str) -> np.ndarray:
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    dname = str(t.dtype).removeprefix("torch.")
    if t.is_complex():
        raise TypeError(f"Got {name} of dtype {t.dtype}, but complex numbers cannot be "
                        "compared in a floating-point format")
    if dname in _TORCH_TO_ML:
        import torch

        width = {1: torch.uint8, 2: torch.int16}[t.element_size()]
        return t.contiguous().view(width).numpy().view(_TORCH_TO_ML[dname])
    try:
        return np.asarray(t.numpy())
    except TypeError:
        raise TypeError(f"Got {name} of dtype {t.dtype}, which has no numpy counterpart; "
                        "the testing assertions take real float, int and bool tensors") from None


def _check_scalar(v: object, name: str) -> None:
    if isinstance(v, (bool, np.bool_)) or v is None or isinstance(v, (str, bytes)):
        raise TypeError(f"Got {name} containing {v!r}, but elements must be real numbers")
    if isinstance(v, (complex, np.complexfloating)):
        raise TypeError(f"Got {name} containing {v!r}, but complex numbers cannot be "
                        "compared in a floating-point format")
    if not isinstance(v, (numbers.Real, Decimal, np.floating, np.integer)):
        raise TypeError(f"Got {name} containing {v!r} of type {type(v).__name__}, but "
                        "elements must be real numbers")


def as_array(x: object, name: str, *, exact: bool = False) -> np.ndarray:
    """A numpy array of ``x`` (object dtype for Fractions, Decimals and big ints when ``exact``).

    Raises TypeError for what cannot be compared, ValueError for ragged lists.
    """
    if is_torch(x):
        return _from_torch(x, name)
    if x is None or isinstance(x, (str, bytes, complex, np.complexfloating, dict, set)):
        raise TypeError(f"Got {name}={x!r}, but it must be {_ACCEPTED}")
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except ValueError:
            raise ValueError(f"Got {name}, a ragged nested sequence (its rows differ in "
                             "length); it must be rectangular") from None
        except OverflowError:
            arr = np.asarray(x, dtype=object)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but complex numbers cannot be "
                        "compared in a floating-point format")
    if kind == "V" and arr.dtype.type.__module__.split(".")[0] != "ml_dtypes" \
            or kind in "USaMmb":
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be {_ACCEPTED}")
    if exact and kind == "f" and arr.dtype.itemsize > 8:  # long double: its exact values
        arr = np.array([Fraction(*v.as_integer_ratio()) if np.isfinite(v) else float(v)
                        for v in arr.ravel()], dtype=object).reshape(arr.shape)
        kind = "O"
    if kind == "O":
        for v in arr.ravel().tolist():
            _check_scalar(v, name)
        if not exact:
            try:
                arr = np.array([float(v) for v in arr.ravel().tolist()],
                               dtype=np.float64).reshape(arr.shape)
            except OverflowError:
                raise ValueError(f"Got {name} with an element beyond the float64 range; "
                                 "use assert_within_bound for exact values") from None
    return arr

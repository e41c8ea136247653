"""Public encode / decode / round_to: argument checking and input dispatch.

Every input is taken at its exact value and rounded once:

* float64, float32, float16 and ml_dtypes arrays are exact as float64;
* integer arrays are split into an exact pair ``hi + lo`` (int64 beyond
  ``2**53`` is not a float64);
* Python ints of any size, :class:`fractions.Fraction` and
  :class:`decimal.Decimal` scalars (and object arrays of them) go through the
  exact reference in :mod:`numerics.codec`;
* ``numpy.longdouble`` arrays are split into ``hi + lo`` float64 pairs;
* torch CPU tensors are converted through numpy when torch is installed.
"""

from __future__ import annotations

import decimal
import numbers
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from numerics import fast
from numerics.formats import Format, as_format
from numerics.rounding import check_overflow, check_rounding, make_rng

__all__ = ["decode", "encode", "round_to"]

_ML_DTYPES = {
    np.dtype(getattr(ml_dtypes, name))
    for name in ("bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz",
                 "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                 "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
}
_ML_INT = {np.dtype(getattr(ml_dtypes, n))
           for n in ("int1", "int2", "int4", "uint1", "uint2", "uint4")}


def _check_options(rounding: object, overflow: object, sr_bits: object, nan: object) -> None:
    check_rounding(rounding)
    check_overflow(overflow)
    if sr_bits is not None:
        if isinstance(sr_bits, bool) or not isinstance(sr_bits, (int, np.integer)) \
                or not 1 <= sr_bits <= 53:
            raise ValueError(f"Got sr_bits={sr_bits!r}, but it must be None or an int in [1, 53]")
        if rounding != "sr":
            raise ValueError(f"Got sr_bits={sr_bits!r} with rounding={rounding!r}; "
                             "sr_bits only applies to rounding='sr'")
    if nan not in ("raise", "zero"):
        raise ValueError(f"Got nan={nan!r}, but the only valid values are 'raise' and 'zero'")


def _from_torch(x: Any) -> np.ndarray | None:
    """A numpy view of a torch CPU tensor (None when ``x`` is not a tensor)."""
    if type(x).__module__.split(".")[0] != "torch":
        return None
    import torch  # only reachable when the caller already has torch

    t = x.detach()
    if t.device.type != "cpu":
        raise TypeError(f"Got a torch tensor on {t.device}; move it to the CPU first")
    special = {torch.bfloat16: ml_dtypes.bfloat16}
    for tname, mname in (("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e5m2"),
                         ("float8_e4m3fnuz", "float8_e4m3fnuz"),
                         ("float8_e5m2fnuz", "float8_e5m2fnuz")):
        if hasattr(torch, tname):
            special[getattr(torch, tname)] = getattr(ml_dtypes, mname)
    if t.dtype in special:
        width = {1: torch.uint8, 2: torch.int16}[t.element_size()]
        return t.contiguous().view(width).numpy().view(special[t.dtype])
    return t.numpy()


def _int_pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Exact ``hi + lo`` for a 64-bit integer array (smaller ones are exact as float64)."""
    if a.dtype.itemsize < 8:
        return a.astype(np.float64), None
    high = (a >> 32).astype(np.float64) * 4294967296.0  # exact: 32 significant bits
    low = (a & 0xFFFFFFFF).astype(np.float64)  # exact
    hi = high + low  # TwoSum
    bv = hi - high
    lo = (high - (hi - bv)) + (low - bv)
    return hi, lo


def _encode_exact_objects(x: np.ndarray, fmt: Format, rounding: str, overflow: str,
                          rng: Any, sr_bits: int | None, nan: str) -> np.ndarray:
    from numerics import codec

    gen = make_rng(rng) if rounding == "sr" else None
    out = np.empty(x.shape, fmt.code_dtype)
    for index, value in np.ndenumerate(x):
        if isinstance(value, bool) or not isinstance(value, (numbers.Rational, float,
                                                             decimal.Decimal, np.floating)):
            raise TypeError(f"Got x[{index}]={value!r} of type {type(value).__name__}; "
                            "expected a real number")
        if isinstance(value, decimal.Decimal):
            if not value.is_finite():
                value = float(value)
            else:
                value = Fraction(value)
        elif isinstance(value, np.floating):
            value = float(value)
        uniform = None
        if gen is not None:
            uniform = (float(gen.integers(0, 1 << sr_bits)) * 2.0**-sr_bits if sr_bits
                       else float(gen.random()))
        try:
            out[index] = codec.encode_exact(value, fmt, rounding=rounding, overflow=overflow,
                                            uniform=uniform, sr_bits=sr_bits, nan=nan)
        except ValueError as err:
            raise ValueError(f"x[{index}]: {err}") from None
    return out


def encode(
    x: Any,
    fmt: Format | str,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    rng: int | np.random.Generator | None = None,
    sr_bits: int | None = None,
    nan: str = "raise",
) -> Any:
    """Round ``x`` once into ``fmt`` and return the codes.

    Parameters
    ----------
    x : array_like, float, int, Fraction or Decimal
        Values, taken exactly (a Python int of any size, a Fraction, a float64,
        an integer array beyond ``2**53``: never through another rounding).
    fmt : Format or str
        Target format or its name.
    rounding : {"rne", "rna", "rtz", "ru", "rd", "rto", "sr"}
        Rounding mode; see :mod:`numerics.rounding`.
    overflow : {"ieee", "saturate"}
        Overflow rule; see :mod:`numerics.rounding`.
    rng : int, numpy.random.Generator or None
        Seed or generator for ``rounding="sr"``.
    sr_bits : int, optional
        Model hardware that draws only ``sr_bits`` random bits for stochastic
        rounding: the rounding probability is the distance to the truncated
        value truncated to ``sr_bits`` bits.
    nan : {"raise", "zero"}
        NaN input into a format without NaN: a ValueError naming the first
        offending index, or +0.

    Returns
    -------
    numpy.ndarray or numpy scalar
        Unsigned integer codes (``fmt.code_dtype``), shaped like ``x``.

    Notes
    -----
    NaN becomes the format's canonical quiet NaN with the sign kept where the
    format has signed NaNs; payloads survive only when ``x`` already is an
    array of the target format.  A format without negative zero encodes
    ``-0`` and negative underflow as ``+0``.  e8m0fnu has no zero and no sign:
    zero and negative inputs give NaN and positive values below ``2**-127``
    give ``2**-127`` in every rounding mode.

    Examples
    --------
    >>> int(encode(448.0, "e4m3fn"))   # 1.75 * 2**(15 - 7)
    126
    >>> int(encode(500.0, "e4m3fn")), int(encode(500.0, "e4m3fn", overflow="saturate"))
    (127, 126)
    >>> hex(int(encode(1 + 2**-8 + 2**-40, "bfloat16")))  # one rounding: 1.0078125
    '0x3f81'
    >>> int(encode(2**64 + 1, "binary64", rounding="ru")) == int(encode(2.0**64, "binary64")) + 1
    True
    """
    fmt = as_format(fmt)
    _check_options(rounding, overflow, sr_bits, nan)
    options = {"rounding": rounding, "overflow": overflow, "sr_bits": sr_bits, "nan": nan}

    tensor = _from_torch(x)
    if tensor is not None:
        x = tensor
    scalar = not isinstance(x, np.ndarray) and np.ndim(x) == 0
    if isinstance(x, (str, bytes)) or (isinstance(x, bool)):
        raise TypeError(f"Got x={x!r} of type {type(x).__name__}; expected numbers")
    if isinstance(x, (int, Fraction, decimal.Decimal)) and not isinstance(x, bool):
        if isinstance(x, int) and abs(x) <= 2**53:
            x = float(x)
        else:
            codes = _encode_exact_objects(np.array([x], dtype=object), fmt, rounding,
                                          overflow, rng, sr_bits, nan)
            return codes[0]
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Got x of type {type(x).__name__} that is not array-like: {err}") from None
    kind = arr.dtype.kind
    if kind == "b" or arr.dtype in _ML_INT:
        raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers, not booleans "
                        "or packed integers")
    if kind in "USVMmc" and arr.dtype not in _ML_DTYPES:
        raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers")
    if kind == "O":
        return _finish(_encode_exact_objects(arr, fmt, rounding, overflow, rng, sr_bits, nan),
                       scalar)

    gen = make_rng(rng) if rounding == "sr" else None
    same = _native_dtype(fmt)
    if same is not None and arr.dtype == same and rounding != "sr" and overflow == "ieee":
        return _finish(arr.view(fmt.code_dtype).copy(), scalar)
    if arr.dtype == np.float32:
        f32_codes = fast.encode_f32(arr, fmt, rounding=rounding, overflow=overflow, nan=nan,
                                    rng=gen, sr_bits=sr_bits)
        if f32_codes is not None:
            return _finish(f32_codes, scalar)
    if kind in "iu":
        hi, lo = _int_pair(arr)
        return _finish(fast.encode_pair(hi, lo, fmt, rng=gen, **options), scalar)  # type: ignore[arg-type]
    if arr.dtype == np.longdouble and np.finfo(np.longdouble).nmant > 52:
        hi = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):
            lo = np.where(np.isfinite(hi), (arr - hi).astype(np.float64), 0.0)
        return _finish(fast.encode_pair(hi, lo, fmt, rng=gen, **options), scalar)  # type: ignore[arg-type]
    if kind == "f" or arr.dtype in _ML_DTYPES:
        x64 = np.asarray(arr, dtype=np.float64)
        if gen is not None:
            return _finish(fast.encode_pair(x64, None, fmt, rng=gen, **options), scalar)  # type: ignore[arg-type]
        return _finish(fast.encode_f64(x64, fmt, **options), scalar)
    raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers")


def _native_dtype(fmt: Format) -> np.dtype | None:
    """numpy/ml_dtypes dtype whose bits are exactly this format's codes."""
    from numerics.dtypes import dtype_of

    return dtype_of(fmt)


def _finish(codes: np.ndarray, scalar: bool) -> Any:
    return codes[()] if scalar else codes


def decode(codes: Any, fmt: Format | str) -> Any:
    """Exact float64 values of ``codes`` in ``fmt``.

    Parameters
    ----------
    codes : array_like of int
        Codes in ``[0, 2**fmt.bits)``, any integer dtype, or Python ints.
    fmt : Format or str
        The format of the codes.

    Returns
    -------
    numpy.ndarray of float64 (a numpy float64 scalar for a scalar input)
        NaN, +-inf and -0 preserved; for binary64 the values themselves.

    Examples
    --------
    >>> float(decode(0x7B, "e5m2"))   # 1.75 * 2**(30 - 15)
    57344.0
    >>> float(decode(0x01, "e4m3fn"))  # 2**-6 * 1/8: smallest subnormal
    0.001953125
    >>> decode([0x7F, 0x80], "e4m3fnuz").tolist()  # 0x80 is the only NaN
    [240.0, nan]
    """
    fmt = as_format(fmt)
    scalar = not isinstance(codes, np.ndarray) and np.ndim(codes) == 0
    if isinstance(codes, (bool, np.bool_)):
        raise TypeError(f"Got codes={codes!r}; expected integer codes")
    try:
        arr = np.asarray(codes)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Got codes of type {type(codes).__name__}: {err}") from None
    if arr.dtype.kind == "O":
        try:
            ints = [int(c) if isinstance(c, (int, np.integer)) and not isinstance(c, bool)
                    else None for c in arr.reshape(-1)]
        except (TypeError, ValueError):
            ints = [None]
        if any(c is None for c in ints) and arr.size:
            raise TypeError("Got codes containing non-integers; expected integer codes")
        bad = [i for i, c in enumerate(ints) if c is not None and not 0 <= c < fmt.num_codes]
        if bad:
            raise ValueError(f"Got codes[{bad[0]}]={ints[bad[0]]}, outside [0, {fmt.num_codes}) "
                             f"for the {fmt.bits}-bit format {fmt.name}")
        arr = np.array(ints, dtype=np.uint64).reshape(arr.shape)
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"Got codes with dtype {arr.dtype}; expected integer codes "
                        "(use numpy .view() to reinterpret float bits)")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        first = int(np.flatnonzero(arr.reshape(-1) < 0)[0])
        raise ValueError(f"Got a negative code {arr.reshape(-1)[first]} at flat index {first}")
    if fmt.bits < arr.dtype.itemsize * 8 and arr.size:
        over = arr.reshape(-1) >= fmt.num_codes
        if over.any():
            first = int(np.flatnonzero(over)[0])
            raise ValueError(f"Got code {int(arr.reshape(-1)[first]):#x} at flat index {first}, "
                             f"outside [0, {fmt.num_codes:#x}) for the {fmt.bits}-bit format "
                             f"{fmt.name}")
    values = fast.decode_codes(arr, fmt)
    return values[()] if scalar else values


def round_to(x: Any, fmt: Format | str, **options: Any) -> Any:
    """``decode(encode(x, fmt, **options), fmt)``: the value ``x`` is stored as.

    Examples
    --------
    >>> float(round_to(0.1, "bfloat16"))
    0.10009765625
    >>> float(round_to(0.1, "bfloat16", rounding="rtz"))
    0.099609375
    """
    fmt = as_format(fmt)
    return decode(encode(x, fmt, **options), fmt)

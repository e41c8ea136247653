"""Public encode / decode / round_to: argument checking, input intake, dispatch to kernels.

Every input is taken at its exact value and rounded once:

* float16, float32, float64 and ml_dtypes arrays are exact as float32/float64;
* int64/uint64 arrays are exact at any size (smaller integers are float64s);
* x86 ``numpy.longdouble`` arrays are read from their 80-bit layout, exactly
  (elsewhere a longdouble that is not a float64 pair ``hi + lo`` loses its lowest bits);
* Python ints of any size, :class:`fractions.Fraction` and :class:`decimal.Decimal`
  scalars (and object arrays of them) go through the exact reference in
  :mod:`numerics.codec`; values far beyond binary64's range are decided from their
  exponent without building huge integers;
* torch CPU tensors are read through numpy when torch is installed.

The loops live in :mod:`numerics.kernels.codec` (compiled on first use); large inputs
run on all threads (:func:`numerics.set_num_threads`) with the same bits for every
thread count.

Stochastic rounding
-------------------
Element ``i`` (its flat index in C order) draws ``u = draw(seed, i, k)`` from the
counter-based stream of :mod:`numerics.kernels.random`, with ``k = sr_bits`` or 64
when ``sr_bits`` is None.  It rounds away from zero iff ``u < floor(frac * 2**k)``
(``sr_bits`` given) or ``u < frac * 2**k`` (``sr_bits=None``), where ``frac`` is the
exact distance from the value truncated toward zero, in quanta: the same code as
``encode_exact(x, fmt, rounding="sr", uniform=Fraction(u, 2**k), sr_bits=sr_bits)``.
An int ``rng`` is the seed; a numpy Generator contributes one 64-bit seed
(``rng.integers(0, 2**64, dtype=np.uint64)``); ``None`` draws a fresh seed.  The same
seed gives the same codes for every thread count, byte order and memory layout.
"""

from __future__ import annotations

import decimal
import math
import numbers
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from numerics.dtypes import MAX_DIMS, as_input, is_torch_tensor, torch_values
from numerics.formats import Format, as_format
from numerics.rounding import (
    OVERFLOWS,
    ROUNDINGS,
    check_overflow,
    check_rng,
    check_rounding,
    check_sr_options,
    sr_seed,
)

__all__ = [
    "decode",
    "decode_codes",
    "decode_table",
    "encode",
    "encode_f64",
    "encode_pair",
    "round_to",
]

_MODES = {name: i for i, name in enumerate(ROUNDINGS)}  # "sr" -> 6 == MODE_SR
_SR_EXACT = 7  # numerics.kernels.rounding.MODE_SR_EXACT
_NAN_POLICIES = ("raise", "zero")
#: Integer scalar types: encoded by one kernel call up to 2**53, decoded by one.
_INT_SCALARS = frozenset({int, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32,
                          np.uint16, np.uint8})
#: Scalar types encoded by one kernel call (each exact as a float64; ints up to 2**53).
_FAST_SCALARS = frozenset({float, np.float64, np.float32, np.float16}) | _INT_SCALARS
# Beyond these binary exponents every format overflows / underflows alike: a value is
# replaced by a small stand-in with the same sign that rounds the same way.
_HUGE_EXP, _TINY_EXP = 1100, -1200


_KERNELS: list[Any] = []


def _kernels() -> Any:
    """numerics.kernels.codec, imported (and numba with it) on first use."""
    if not _KERNELS:
        from numerics.kernels import codec

        _KERNELS.append(codec)
    return _KERNELS[0]


def _rounding_kernels() -> Any:
    from numerics.kernels import rounding

    return rounding


def __getattr__(name: str) -> Any:
    # PARALLEL_MIN: from this many elements on, the kernels run on all threads
    # (numerics.kernels.spread.PARALLEL_MIN, read on first access: it imports numba).
    if name == "PARALLEL_MIN":
        from numerics.kernels.spread import PARALLEL_MIN

        return PARALLEL_MIN
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_PLANS: dict[int, tuple[Format, np.ndarray, bool, bool, bool, bool, bool]] = {}


_NARROW: list[Any] = []


def _narrow_kernels() -> Any:
    """numerics.kernels.narrow, imported (and numba with it) on first use (with
    numerics.kernels.spread.PARALLEL_MIN as ``_NARROW[1]``)."""
    if not _NARROW:
        from numerics.kernels import narrow
        from numerics.kernels.spread import PARALLEL_MIN

        _NARROW.extend((narrow, PARALLEL_MIN))
    return _NARROW[0]


def _plan(fmt: Format) -> tuple[Format, np.ndarray, bool, bool, bool, bool, bool]:
    """(fmt, its parameter array, whether the float32 / float64 branch-free kernel fits,
    whether the float32 / float64 round-to-nearest-even lane kernel fits, whether the
    lanes' other modes take float64 input), cached by identity (hashing a Format costs
    more than the kernel call on small input)."""
    plan = _PLANS.get(id(fmt))
    if plan is None or plan[0] is not fmt:
        P = _rounding_kernels().format_params(fmt)
        k = _kernels()
        narrow = _narrow_kernels()
        plan = (fmt, P, k.fits_bits_kernel(P, False), k.fits_bits_kernel(P, True),
                narrow.fits(P, False), narrow.fits(P, True), narrow.fits_high(P))
        if len(_PLANS) > 1024:
            _PLANS.clear()
        _PLANS[id(fmt)] = plan
    return plan


def _params(fmt: Format) -> np.ndarray:
    return _plan(fmt)[1]


#: What the scalar fast paths need of a format argument, by the argument (a name) or
#: its identity (a Format, dtype, ...; the entry holds it, so the id is not reused).
_SCALAR_PLANS: dict[object, tuple[Any, Format, np.ndarray, Any, int]] = {}


def _scalar_plan(fmt: Any) -> tuple[Any, Format, np.ndarray, Any, int]:
    """(argument, its Format, parameter array, code scalar type, number of codes);
    raises as :func:`numerics.as_format` does for a bad argument."""
    plan = _SCALAR_PLANS.get(fmt if type(fmt) is str else id(fmt))
    if plan is not None and (plan[0] is fmt or type(fmt) is str):
        return plan
    found = as_format(fmt)
    plan = (fmt, found, _params(found), found.code_dtype.type, found.num_codes)
    if len(_SCALAR_PLANS) > 1024:
        _SCALAR_PLANS.clear()
    _SCALAR_PLANS[fmt if type(fmt) is str else id(fmt)] = plan
    return plan


def _check_options(rounding: object, overflow: object, sr_bits: object,
                   nan: object) -> int | None:
    """Check the rounding options; returns ``sr_bits`` as a Python int (or None), since
    a numpy integer would wrap in ``2**sr_bits``."""
    if not isinstance(rounding, str) or rounding not in _MODES:
        check_rounding(rounding)
    if not isinstance(overflow, str) or overflow not in OVERFLOWS:
        check_overflow(overflow)
    sr_bits = check_sr_options(rounding, sr_bits)
    if not isinstance(nan, str) or nan not in _NAN_POLICIES:
        raise ValueError(f"Got nan={nan!r}, but the only valid values are 'raise' and 'zero'")
    return None if sr_bits is None else int(sr_bits)


def _mode_bits(rounding: str, sr_bits: int | None) -> tuple[int, int]:
    """The kernel mode code and the number of random bits per draw."""
    if rounding != "sr":
        return _MODES[rounding], 1
    if sr_bits is None:
        return _SR_EXACT, 64
    return _MODES["sr"], int(sr_bits)


# ---------------------------------------------------------------- input intake
def _from_torch(x: Any, name: str = "x") -> np.ndarray | None:
    """A numpy view of a torch CPU tensor (None when ``x`` is not a tensor)."""
    if not is_torch_tensor(x):
        return None
    if x.device.type not in ("cpu", "meta"):  # (torch_values names a meta tensor's case)
        raise TypeError(f"Got {name} as a torch tensor on {x.device}; move it to the CPU "
                        "first")
    return torch_values(x, name)


def _exact_scalar(value: Any, index: Any) -> Any:
    """A value ``encode_exact`` takes quickly: NaN/inf floats, Fractions of moderate size
    (huge and tiny ones replaced by same-signed stand-ins that round alike)."""
    where = "x" if index is None else f"x[{index}]"
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Got {where}={value!r}; expected a real number, not a bool")
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return -math.nan if value.is_signed() else math.nan
        if value.is_infinite():
            return -math.inf if value.is_signed() else math.inf
        if value.is_zero():
            return -0.0 if value.is_signed() else 0.0
        adjusted = value.adjusted()  # floor(log10 |value|)
        if adjusted > 340:
            return _stand_in(value.is_signed(), _HUGE_EXP)
        if adjusted < -360:
            return _stand_in(value.is_signed(), _TINY_EXP)
        return Fraction(value)
    if isinstance(value, np.generic) and value.dtype.num >= _USER_DTYPES:
        # an ml_dtypes scalar (not an np.floating or np.integer): exact as a float or int
        return float(value) if value.dtype.kind == "f" or _is_ml_float(value.dtype) \
            else int(value)
    if isinstance(value, (float, np.floating)):
        if isinstance(value, np.floating) and value.dtype.itemsize > 8 \
                and np.finfo(value.dtype).nmant > 52:
            return Fraction(*value.as_integer_ratio()) if np.isfinite(value) else float(value)
        return float(value)
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"Got {where}={value!r}; expected a real number, not a complex one")
    if isinstance(value, (int, np.integer)):
        value = int(value)
        if value.bit_length() > _HUGE_EXP:
            return _stand_in(value < 0, _HUGE_EXP)
        return value
    if isinstance(value, numbers.Rational):
        num, den = int(value.numerator), int(value.denominator)
        e = num.bit_length() - den.bit_length()
        if e > _HUGE_EXP:
            return _stand_in(num < 0, _HUGE_EXP)
        if e < _TINY_EXP:
            return _stand_in(num < 0, _TINY_EXP)
        return Fraction(num, den)
    raise TypeError(f"Got {where}={value!r} of type {type(value).__name__}; expected a real "
                    "number")


def _stand_in(negative: bool, exp: int) -> Fraction:
    v = Fraction(2) ** exp
    return -v if negative else v


def _draws(seed: int, n: int, bits: int) -> np.ndarray:
    return _kernels().draws(np.uint64(seed), n, bits)


def _encode_objects(x: np.ndarray, fmt: Format, rounding: str, overflow: str, rng: Any,
                    sr_bits: int | None, nan: str) -> np.ndarray:
    """The exact reference, element by element (Python ints, Fractions, Decimals)."""
    from numerics import codec

    flat = x.reshape(-1)
    out = np.empty(flat.size, fmt.code_dtype)
    uniforms = None
    if rounding == "sr":
        bits = 64 if sr_bits is None else sr_bits
        uniforms = _draws(sr_seed(rng), flat.size, bits)
    for i, value in enumerate(flat):
        index = None if x.ndim == 0 else ", ".join(
            str(int(k)) for k in np.unravel_index(i, x.shape))  # "0, 1" for x[0, 1]
        exact = _exact_scalar(value, index)
        uniform = None if uniforms is None else Fraction(int(uniforms[i]), 2**bits)
        try:
            out[i] = codec.encode_exact(exact, fmt, rounding=rounding, overflow=overflow,
                                        uniform=uniform,
                                        sr_bits=sr_bits, nan=nan)
        except ValueError as err:
            where = "x" if index is None else f"x[{index}]"
            raise ValueError(f"{where}: {err}") from None
    return out.reshape(x.shape)


def _nan_error(flat: np.ndarray, fmt: Format) -> ValueError:
    with np.errstate(invalid="ignore"):
        index = int(np.flatnonzero(np.isnan(flat))[0])
    zero = "+0" if fmt.has_zero else "code 0, its least value"
    return ValueError(f"Got a NaN at flat index {index}, but {fmt.name} has no NaN "
                      f"(pass nan='zero' to map NaN to {zero})")


def _run_encode(kind: str, args: tuple[Any, ...]) -> int:
    return int(getattr(_kernels(), f"encode_{kind}")(*args))


#: dtype.num from which dtypes are user-defined (numpy's NPY_USERDEF): ml_dtypes' types.
_USER_DTYPES = 256


def _half_kind(dt: np.dtype) -> bool | None:
    """True for ml_dtypes' bfloat16, False for binary16, both in native byte order; else
    None."""
    if not dt.isnative:
        return None
    if dt.type is np.float16:
        return False
    if dt.num >= _USER_DTYPES and dt.itemsize == 2 and dt.name == "bfloat16":
        return True
    return None


@lru_cache(maxsize=64)
def _byte_codes(dt: np.dtype, fmt: Format, rounding: str, overflow: str
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """The code of each of the 256 bytes of a 1-byte ml_dtypes dtype (:func:`_byte_values`)
    encoded into ``fmt`` (a NaN into a format without NaN as +0), by the loops an array
    of those values takes; and, where some byte is such a NaN, which bytes are.
    Read-only."""
    values = _byte_values(dt)
    codes = _encode_array(values, fmt, rounding, overflow, None, None, "zero", None)
    codes.setflags(write=False)
    nans = np.isnan(values).view(np.uint8)
    nans.setflags(write=False)
    return codes, (nans if nans.any() and not fmt.has_nan else None)


#: Elements from which :func:`_encode_array` encodes a 1-byte ml_dtypes array by
#: :func:`_byte_codes` (as many as the table has bytes).
_BYTE_CODES_MIN = 256


def _encode_bytes(arr: np.ndarray, fmt: Format, rounding: str, overflow: str, nan: str,
                  out: np.ndarray | None) -> np.ndarray:
    """Codes of an array of a 1-byte ml_dtypes dtype in a deterministic rounding: each
    byte's code read from :func:`_byte_codes`, the same code the loops give its value.
    One pass of a byte and a code an element: e4m3fn bytes into e5m2, 2**24 of them,
    took 8.8 ms through float32 values and the encode loop, and take 2.8 (toward zero
    12 and 2.7; AMD Zen 4 VM, 2 threads)."""
    codes, nan_bytes = _byte_codes(arr.dtype, fmt, rounding, overflow)
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    if nan_bytes is not None and nan == "raise":
        hits = np.empty(flat.size, np.uint8)  # (numpy's nan_bytes[flat] took 5 times longer)
        _kernels().lookup(flat, nan_bytes, hits)
        if hits.any():
            raise _nan_error(_ml_float32(arr), fmt)
    target = _output(out, arr.shape, fmt)
    direct = target.flags.c_contiguous and (out is None or not np.may_share_memory(target, flat))
    flat_out = target.reshape(-1) if direct else np.empty(flat.size, fmt.code_dtype)
    _kernels().lookup(flat, codes, flat_out)
    if not direct:
        target[...] = flat_out.reshape(arr.shape)
    return target if out is None else out


def _encode_array(arr: np.ndarray, fmt: Format, rounding: str, overflow: str, rng: Any,
                  sr_bits: int | None, nan: str, out: np.ndarray | None) -> np.ndarray:
    """Codes of a numeric ndarray (any layout and byte order), shaped like it."""
    dt = arr.dtype
    if (dt.num >= _USER_DTYPES and dt.itemsize == 1 and rounding != "sr"
            and arr.size >= _BYTE_CODES_MIN):
        return _encode_bytes(arr, fmt, rounding, overflow, nan, out)
    _, P, fits32, fits64, rne32, rne64, directed64 = _plan(fmt)
    brain = _half_kind(dt) if rounding == "rne" and rne32 else None
    if brain is not None:  # binary16 / bfloat16, widened to float32 in the kernel
        work: np.ndarray = np.ascontiguousarray(arr).reshape(-1).view(np.uint16)
        kind = "half"
    elif dt.num >= _USER_DTYPES:  # an ml_dtypes float type (the caller checked): float32
        work = _ml_float32(arr)
        kind = "float"
    elif dt.kind in "iu" and dt.itemsize == 8:
        work = np.ascontiguousarray(arr, dt.newbyteorder("=")).reshape(-1)
        kind = "ints"
    elif dt.kind == "f" and dt.itemsize > 8:
        work, kind = _longdouble_input(arr)
    elif dt.kind in "iu" or (dt.kind == "f" and dt.itemsize < 4):
        work = np.ascontiguousarray(arr, np.float32 if dt.itemsize <= 2 else np.float64)
        work = work.reshape(-1)
        kind = "float"
    else:  # float32, float64 (the caller admits no other kind)
        work = np.ascontiguousarray(arr, dt.newbyteorder("=")).reshape(-1)
        kind = "float"
    n = {"x87": work.size // 2, "stacked": work.size // 2}.get(kind, work.size)
    target = _output(out, arr.shape, fmt)
    # the kernels write ``out`` in place only where it is C-contiguous and shares no memory
    # with the input they read (elsewhere a temporary, copied in after, as numpy's ufuncs)
    direct = target.flags.c_contiguous and (out is None or not np.may_share_memory(target, work))
    flat_out = target.reshape(-1) if direct else np.empty(n, fmt.code_dtype)
    mode, bits = _mode_bits(rounding, sr_bits)
    seed = np.uint64(sr_seed(rng)) if rounding == "sr" else np.uint64(0)
    ov = 1 if overflow == "saturate" else 0
    if kind == "half":
        nans = _narrow_kernels().rne16(work, flat_out, P, ov == 1, bool(brain),
                                       nan == "raise" and not fmt.has_nan)
    elif kind == "float" and mode == 0 and (rne64 if work.dtype.itemsize == 8 else rne32):
        narrow = _narrow_kernels()
        nans = narrow.rne(work, flat_out, P, ov == 1, nan == "raise" and not fmt.has_nan)
    elif kind == "float" and mode < _MODES["sr"] and (
            directed64 if work.dtype.itemsize == 8 else rne32):
        narrow = _narrow_kernels()
        nans = narrow.directed(work, flat_out, P, mode, ov == 1,
                               nan == "raise" and not fmt.has_nan)
    elif kind == "float" and mode >= _MODES["sr"] and bits <= 31 and rne32 and (
            work.dtype.itemsize == 4):
        narrow = _narrow_kernels()
        nans = narrow.sr(work, flat_out, P, ov == 1, seed, bits, mode == _SR_EXACT)
    elif kind == "float":
        if not (fits64 if work.dtype.itemsize == 8 else fits32):
            if work.dtype.itemsize == 4 and fits64:
                with np.errstate(invalid="ignore"):  # signalling NaNs quieten
                    work = work.astype(np.float64)
            else:
                kind = "generic"
        args = (work, flat_out, P, mode, ov, seed, bits)
        nans = _run_encode("bits", args + (nan == "raise" and not fmt.has_nan,)) \
            if kind == "float" else _run_encode("float", args)
        if kind == "generic":
            nans = 1 if nans >= 0 else 0
    else:
        first = _run_encode(kind, (work, flat_out, P, mode, ov, seed, bits))
        nans = 1 if first >= 0 else 0
    if nans and nan == "raise" and not fmt.has_nan:
        if kind == "x87":  # (the float64s, only to find the NaN: a huge value may overflow)
            with np.errstate(over="ignore"):
                work = np.asarray(arr, np.float64).reshape(-1)
        elif kind == "half":  # (the halves read: an out may have overwritten the input)
            work = work.view(dt).astype(np.float32)
        raise _nan_error(work, fmt)
    if not direct:
        target[...] = flat_out.reshape(arr.shape)
    return target if out is None else out


#: Per 1-byte ml_dtypes dtype: the float32 value ml_dtypes gives each of its 256 bytes.
_BYTE_TABLES: dict[np.dtype, np.ndarray] = {}


def _byte_values(dt: np.dtype) -> np.ndarray:
    """The float32 value of each of the 256 bytes of a 1-byte ml_dtypes dtype, as
    ml_dtypes' ``astype`` gives it (cast once; read-only)."""
    table = _BYTE_TABLES.get(dt)
    if table is None:
        with np.errstate(invalid="ignore"):
            table = np.arange(256, dtype=np.uint8).view(dt).astype(np.float32)
        table.setflags(write=False)
        _BYTE_TABLES[dt] = table
    return table


def _ml_float32(arr: np.ndarray) -> np.ndarray:
    """The float32 values of an ml_dtypes float array, flat, as ml_dtypes' ``astype`` gives
    them (NaN signs included): a 1-byte type through a table of its 256 bytes cast once
    by ml_dtypes (``astype`` itself took 100 to 110 ms for 2**24 values of its 8- and
    4-bit types, the lookup 15 ms), bfloat16 by widening (its float32's top half)."""
    dt = arr.dtype
    flat = np.ascontiguousarray(arr).reshape(-1)
    if not dt.isnative:  # (a byte-swapped bfloat16)
        dt = dt.newbyteorder("=")
        flat = flat.astype(dt)
    if dt.itemsize == 1:
        values = np.empty(flat.size, np.float32)
        _kernels().lookup(flat.view(np.uint8), _byte_values(dt), values)
        return values
    if dt.name == "bfloat16":
        return decode_codes(flat.view(np.uint16), as_format("bfloat16"), np.float32)
    return flat.astype(np.float32)


def _longdouble_input(arr: np.ndarray) -> tuple[np.ndarray, str]:
    info = np.finfo(arr.dtype)
    native = np.ascontiguousarray(arr, arr.dtype.newbyteorder("=")).reshape(-1)
    if info.nmant == 63 and arr.dtype.itemsize in (12, 16) and np.little_endian:
        if arr.dtype.itemsize == 16:
            return native.view(np.uint64), "x87"
    hi = native.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        lo = np.where(np.isfinite(hi), (native - hi).astype(np.float64), 0.0)
    return np.stack([hi, lo]), "stacked"


def _plain_out(out: Any) -> np.ndarray:
    """``out`` as the plain ndarray the kernels write into: itself, or a base-class view
    of a :class:`numpy.memmap`; a TypeError naming ``out`` for anything else (other
    ndarray subclasses: ``np.matrix`` reshapes to 2-D, a masked array has a mask the
    results would not honour)."""
    if type(out) is np.ndarray:
        return out
    if isinstance(out, np.memmap):
        return out.view(np.ndarray)
    kind = type(out)
    raise TypeError(f"Got out of type {kind.__module__}.{kind.__qualname__}; expected a "
                    "numpy.ndarray (or numpy.memmap)")


def _output(out: Any, shape: tuple[int, ...], fmt: Format) -> np.ndarray:
    """The plain array to write the codes into (a new one when ``out`` is None)."""
    if out is None:
        return np.empty(shape, fmt.code_dtype)
    out = _plain_out(out)
    if out.dtype != fmt.code_dtype or out.shape != shape:
        raise ValueError(f"Got out with dtype {out.dtype} and shape {out.shape}; expected "
                         f"dtype {fmt.code_dtype} and shape {shape}")
    if not out.flags.writeable:
        raise ValueError("Got a read-only out array")
    return out


# ---------------------------------------------------------------- encode
def encode(
    x: Any,
    fmt: Any,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    rng: int | np.random.Generator | None = None,
    sr_bits: int | None = None,
    nan: str = "raise",
    out: np.ndarray | None = None,
) -> Any:
    """Round ``x`` once into ``fmt`` and return the codes.

    Parameters
    ----------
    x : array_like, float, int, Fraction or Decimal
        Values, taken exactly (a Python int of any size, a Fraction, a float64,
        an integer array beyond ``2**53``: never through another rounding).
    fmt : Format, str, numpy/ml_dtypes dtype or torch dtype
        Target format (see :func:`numerics.as_format`).
    rounding : {"rne", "rna", "rtz", "ru", "rd", "rto", "sr"}
        Rounding mode; see :mod:`numerics.rounding`.
    overflow : {"ieee", "saturate"}
        Overflow rule; see :mod:`numerics.rounding`.
    rng : int, numpy.random.Generator or None
        Seed (a non-negative int) or generator for ``rounding="sr"``; see the module
        docstring for the random stream.  Checked in every mode (TypeError or
        ValueError), used only by ``"sr"``.
    sr_bits : int, optional
        Model hardware that draws only ``sr_bits`` (1 to 64) random bits per
        stochastic rounding: the rounding probability is the distance to the truncated
        value truncated to ``sr_bits`` bits.  None: 64-bit draws compared with the
        exact distance.
    nan : {"raise", "zero"}
        NaN input into a format without NaN: a ValueError naming the first
        offending index, or code 0 (+0; the least value of a format without zero).
    out : numpy.ndarray, optional
        Writeable array of ``fmt.code_dtype`` shaped like ``x`` to write the codes
        into: a ``numpy.ndarray`` or ``numpy.memmap`` (other subclasses, such as
        ``np.matrix`` and masked arrays, are a TypeError).  It may share memory with
        ``x``: the codes are those of ``x`` as it was before the call (as with
        numpy's ufuncs, a temporary takes them where the two may overlap).

    Returns
    -------
    numpy.ndarray or numpy scalar
        Unsigned integer codes (``fmt.code_dtype``), shaped like ``x`` (``out``
        itself when given).

    Notes
    -----
    NaN becomes the format's canonical quiet NaN with the sign kept where the
    format has signed NaNs (no payload survives).  A format without negative
    zero encodes ``-0`` and negative underflow as ``+0``.  e8m0fnu has no zero and
    no sign: zero and negative inputs give NaN and positive values below
    ``2**-127`` give ``2**-127`` in every rounding mode.

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
    >>> encode([0.1, 0.1], "e4m3fn", rounding="sr", rng=7, sr_bits=8).tolist()
    [29, 28]
    """
    if rng is not None:  # (checked in every mode; only rounding="sr" draws from it)
        check_rng(rng)
    if type(x) in _FAST_SCALARS and out is None:
        plan = _scalar_plan(fmt)
        if rounding == "sr":
            code = _scalar_sr_code(x, plan, overflow, nan, rng, sr_bits)
        else:
            code = _scalar_code(x, plan, rounding, overflow, nan) if sr_bits is None else None
        if code is not None:
            return plan[3](code)
    if type(x) is np.ndarray:
        codes = _encode_fast(x, fmt, rounding, overflow, nan, out, rng, sr_bits)
        if codes is not None:
            return codes
    fmt = as_format(fmt)
    sr_bits = _check_options(rounding, overflow, sr_bits, nan)

    tensor = _from_torch(x)
    if tensor is not None:
        x = tensor
    if isinstance(x, (str, bytes, bool, np.bool_)):
        raise TypeError(f"Got x={x!r} of type {type(x).__name__}; expected numbers")
    if isinstance(x, (int, Fraction, decimal.Decimal, numbers.Rational)) \
            and not isinstance(x, (np.integer, float)):
        if isinstance(x, int) and abs(x) <= 2**53:
            x = float(x)
        else:
            codes = _encode_objects(np.array(x, dtype=object), fmt, rounding, overflow, rng,
                                    sr_bits, nan)
            if out is not None:
                _output(out, (), fmt)[...] = codes
                return out
            return codes[()]
    arr = as_input(x, "x")
    scalar = not isinstance(x, np.ndarray) and arr.ndim == 0 and out is None
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers, not complex")
    if kind == "b" or (kind == "V" and not _is_ml_float(arr.dtype)):
        raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers, not booleans "
                        "or packed integers")
    if kind in "USMm":
        raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers")
    if kind == "O":
        codes = _encode_objects(arr, fmt, rounding, overflow, rng, sr_bits, nan)
        if out is not None:
            _output(out, arr.shape, fmt)[...] = codes
            return out
        return codes[()] if scalar else codes
    if kind not in "iuf" and not _is_ml_float(arr.dtype):
        raise TypeError(f"Got x with dtype {arr.dtype}; expected real numbers")
    codes = _encode_array(arr, fmt, rounding, overflow, rng, sr_bits, nan, out)
    return codes[()] if scalar else codes


#: dtype.num of native float32 and float64.
_FLOAT_NUMS = (np.dtype(np.float32).num, np.dtype(np.float64).num)


#: Per (format argument, input dtype, rounding, overflow, nan, sr_bits): how
#: :func:`_encode_fast` encodes (see :func:`_route`).
_ROUTES: dict[tuple[Any, ...], tuple[Any, Format, np.ndarray, str, int, int, bool, bool,
                                     np.dtype]] = {}


def _route(fmt: Any, dt: np.dtype, rounding: str, overflow: str, nan: str,
           sr_bits: Any) -> tuple[Any, Format, np.ndarray, str, int, int, bool, bool,
                                  np.dtype] | None:
    """(format argument, its Format, parameters, kernel, mode, random bits, saturate,
    count NaNs, code dtype) of :func:`_encode_fast` for a native float32/float64 array, the
    kernel choice :func:`_encode_array` makes (plus :func:`numerics.kernels.narrow.ieee`
    for binary32/binary64), or None where the options need checking or the general path;
    cached by the format argument (a name) or its identity."""
    key = (fmt if type(fmt) is str else id(fmt), dt.num, rounding, overflow, nan, sr_bits)
    route = _ROUTES.get(key)
    if route is not None and (route[0] is fmt or type(fmt) is str):
        return route
    mode = _MODES.get(rounding)
    if mode is None or overflow not in OVERFLOWS or nan not in _NAN_POLICIES:
        return None
    if sr_bits is not None and (rounding != "sr" or type(sr_bits) is not int
                                or not 1 <= sr_bits <= 64):
        return None
    _, found, P, _, _ = _scalar_plan(fmt)
    _, _, fits32, fits64, rne32, rne64, directed64 = _plan(found)
    mode, bits = _mode_bits(rounding, sr_bits)
    wide = dt.itemsize == 8
    ieee = _narrow_kernels().ieee_format(P)
    if ieee == 64 or (ieee == 32 and (not wide or mode == 0)):
        kind = "ieee"  # exact (the same code in every mode), or binary32 of a float64
    elif mode == 0 and (rne64 if wide else rne32):
        kind = "rne"
    elif mode < _MODES["sr"] and (directed64 if wide else rne32):
        kind = "directed"
    elif mode >= _MODES["sr"] and bits <= 31 and rne32 and not wide:
        kind = "sr"
    elif fits64 if wide else fits32:
        kind = "bits"
    elif not wide and fits64:
        kind = "bits64"  # float32 widened first
    else:
        return None
    route = (fmt, found, P, kind, mode, bits, overflow == "saturate",
             nan == "raise" and not found.has_nan, found.code_dtype)
    if len(_ROUTES) > 1024:
        _ROUTES.clear()
    _ROUTES[key] = route
    return route


_SEED0 = np.uint64(0)


def _encode_fast(x: np.ndarray, fmt: Any, rounding: Any, overflow: Any, nan: Any,
                 out: Any, rng: Any, sr_bits: Any) -> np.ndarray | None:
    """Codes of a C-contiguous native float32/float64 array by one kernel call (a 0-d
    array, in a deterministic mode, by the scalar kernel), or None when any condition
    of that path fails (the caller then takes the general path, which checks every
    argument): the common call costs one dispatch."""
    dt = x.dtype
    if dt.num not in _FLOAT_NUMS or not dt.isnative or not x.flags.c_contiguous \
            or x.ndim > MAX_DIMS or type(rounding) is not str or type(overflow) is not str \
            or type(nan) is not str:
        return None
    route = _route(fmt, dt, rounding, overflow, nan, sr_bits)
    if route is None:
        return None
    _, found, P, kind, mode, bits, saturate, count, cdt = route
    if x.ndim == 0 and out is None and mode < _MODES["sr"]:
        code = _scalar_code(x[()], _scalar_plan(fmt), rounding, overflow, nan)
        return None if code is None else np.array(code, cdt)
    if out is None:
        codes = np.empty(x.size if x.ndim == 1 else x.shape, cdt)
    elif type(out) is np.ndarray and out.dtype == cdt and out.shape == x.shape \
            and out.flags.c_contiguous and out.flags.writeable \
            and not np.may_share_memory(x, out):
        codes = out
    else:
        return None
    narrow = _narrow_kernels()
    flat, flat_codes = (x, codes) if x.ndim == 1 else (x.reshape(-1), codes.reshape(-1))
    if kind == "rne":  # (the common call first: every step here costs on 1k elements)
        n = flat.size
        # below the threads' size the span itself (the driver's call costs about 0.7 us)
        nans = narrow.rne_span(flat, flat_codes, 0, n, P, saturate, count) \
            if n < _NARROW[1] else narrow.rne(flat, flat_codes, P, saturate, count)
        if nans and count:
            raise _nan_error(flat, found)
        return codes
    seed = np.uint64(sr_seed(rng)) if mode >= _MODES["sr"] else _SEED0
    if kind == "ieee":
        narrow.ieee(flat, flat_codes.view(np.float32 if cdt.itemsize == 4 else np.float64),
                    cdt.itemsize == 4, saturate)
        nans = 0
    elif kind == "directed":
        nans = narrow.directed(flat, flat_codes, P, mode, saturate, count)
    elif kind == "sr":
        nans = narrow.sr(flat, flat_codes, P, saturate, seed, bits, mode == _SR_EXACT)
    else:
        work = flat
        if kind == "bits64":
            with np.errstate(invalid="ignore"):  # signalling NaNs quieten
                work = flat.astype(np.float64)
        nans = _kernels().encode_bits(work, flat_codes, P, mode, 1 if saturate else 0, seed,
                                      bits, count)
    if nans and count:
        raise _nan_error(flat, found)
    return codes


def _is_ml_float(dt: np.dtype) -> bool:
    """Whether ``dt`` is an ml_dtypes floating type (bfloat16, float8_*, ...)."""
    if dt.kind != "V" or dt.names is not None or dt.itemsize > 2:
        return False
    name = dt.name
    return name.startswith(("bfloat16", "float8", "float6", "float4"))


_SCALAR_FNS: list[Any] = []


def _scalar_fns() -> Any:
    """(encode_scalar, decode_scalar, encode_scalar_sr) of the codec kernels, looked up
    once."""
    if not _SCALAR_FNS:
        k = _kernels()
        _SCALAR_FNS.extend((k.encode_scalar, k.decode_scalar, k.encode_scalar_sr))
    return _SCALAR_FNS


def _signed(code: int) -> int:
    """A 64-bit code as the int64 with the same bits: decode_scalar takes it so (numba
    picks the int64 overload for a Python int of 2**63 or more once it has one, and
    fails to convert it), and reads it back as uint64."""
    return code - (1 << 64) if code >> 63 else code


def _scalar_code(x: Any, plan: tuple[Any, Format, np.ndarray, Any, int], rounding: Any,
                 overflow: Any, nan: Any) -> int | None:
    """The code (an int) of one scalar of a ``_FAST_SCALARS`` type in the format of ``plan``
    (deterministic modes, ints up to ``2**53``), or None to take the long way (which
    checks the options and raises where they are wrong)."""
    if type(rounding) is not str or type(overflow) is not str or type(nan) is not str:
        return None
    mode = _MODES.get(rounding)
    if mode is None or mode >= 6 or overflow not in OVERFLOWS or nan not in _NAN_POLICIES:
        return None
    f = _scalar_float(x, plan, nan)
    if f is None:
        return None
    return int(_scalar_fns()[0](f, plan[2], mode, 1 if overflow == "saturate" else 0))


def _scalar_float(x: Any, plan: tuple[Any, Format, np.ndarray, Any, int], nan: str
                  ) -> float | None:
    """One scalar of a ``_FAST_SCALARS`` type as the float64 it equals (ints up to
    ``2**53``), or None to take the long way (a bigger int, a NaN to raise on)."""
    if type(x) in _INT_SCALARS:
        i = int(x)
        return float(i) if -(2**53) <= i <= 2**53 else None
    f = float(x)
    if f != f and nan == "raise" and not plan[1].has_nan:
        return None
    return f


def _scalar_sr_code(x: Any, plan: tuple[Any, Format, np.ndarray, Any, int], overflow: Any,
                    nan: Any, rng: Any, sr_bits: Any) -> int | None:
    """:func:`_scalar_code` for ``rounding="sr"`` with an int seed (already checked): the
    draw of element 0 of its stream, as a 0-d array would take it; None to take the long
    way."""
    if type(rng) is not int or type(overflow) is not str or overflow not in OVERFLOWS \
            or type(nan) is not str or nan not in _NAN_POLICIES:
        return None
    if sr_bits is None:
        mode, bits = _SR_EXACT, 64
    elif type(sr_bits) is int and 1 <= sr_bits <= 64:
        mode, bits = _MODES["sr"], sr_bits
    else:
        return None
    f = _scalar_float(x, plan, nan)
    if f is None:
        return None
    return int(_scalar_fns()[2](f, plan[2], mode, 1 if overflow == "saturate" else 0,
                                _signed(rng % (1 << 64)), bits))


# ---------------------------------------------------------------- exact pairs (internal API)
def encode_pair(
    hi: Any,
    lo: Any,
    fmt: Format,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    rng: int | np.random.Generator | None = None,
    sr_bits: int | None = None,
    uniform: np.ndarray | None = None,
    nan: str = "raise",
) -> np.ndarray:
    """Encode the exact values ``hi + lo`` (float64 pairs) into ``fmt`` with one rounding.

    The building block of :mod:`numerics.ops`, :mod:`numerics.accum` and
    :mod:`numerics.quant` (arguments are trusted: no validation).

    Parameters
    ----------
    hi : array_like of float64
        A nearest float64 of ``hi + lo`` (TwoSum, TwoProd and exact splits give one).
    lo : array_like of float64, float or None
        The exact residual (``None`` or 0 when ``hi`` is exact).
    fmt : Format
        Target format.
    rounding, overflow : str
        See :mod:`numerics.rounding`.
    rng : int, numpy.random.Generator or None
        Seed of the stochastic-rounding stream (see the module docstring).
    sr_bits : int, optional
        Random bits per stochastic rounding (None: 64, compared exactly).
    uniform : ndarray of float64, optional
        Instead of ``rng``: the draws in ``[0, 1)`` (multiples of ``2**-sr_bits`` when
        ``sr_bits`` is given), compared as in :func:`numerics.codec.encode_exact`.
    nan : {"raise", "zero"}
        What a NaN becomes in a format without NaN.

    Returns
    -------
    ndarray
        Codes in ``fmt.code_dtype``, shaped like the broadcast of ``hi`` and ``lo``.

    Examples
    --------
    >>> hex(int(encode_pair(1.0, 2.0**-60, as_format("binary32"), rounding="ru")))
    '0x3f800001'
    """
    hi = np.asarray(hi, np.float64)
    lo_arr = np.zeros(hi.shape) if lo is None else np.asarray(lo, np.float64)
    if lo_arr.shape != hi.shape:
        shape = np.broadcast_shapes(hi.shape, lo_arr.shape)
        hi, lo_arr = np.broadcast_to(hi, shape), np.broadcast_to(lo_arr, shape)
    shape = hi.shape
    # contiguous, writeable copies where needed (one compiled kernel for every caller)
    flat_hi = np.require(hi, np.float64, ["C", "W"]).reshape(-1)
    flat_lo = np.require(lo_arr, np.float64, ["C", "W"]).reshape(-1)
    n = flat_hi.size
    out = np.empty(n, fmt.code_dtype)
    P = _params(fmt)
    mode, bits = _mode_bits(rounding, sr_bits)
    ov = 1 if overflow == "saturate" else 0
    draws = np.zeros(0, np.uint64)
    seed = np.uint64(0)
    slow = None
    if rounding == "sr":
        if uniform is not None:
            draws, slow = _uniform_draws(np.broadcast_to(np.asarray(uniform, np.float64),
                                                         shape).reshape(-1), bits)
        else:
            seed = np.uint64(sr_seed(rng))
    first = _kernels().encode_pairs(flat_hi, flat_lo, out, P, mode, ov, seed, bits, draws)
    if first >= 0 and nan == "raise":
        raise _nan_error(flat_hi, fmt)
    if slow is not None and slow.size:
        from numerics import codec

        uni = np.broadcast_to(np.asarray(uniform, np.float64), shape).reshape(-1)
        for i in slow:
            hi_i = float(flat_hi[i])
            value: float | Fraction = (Fraction(hi_i) + Fraction(float(flat_lo[i]))
                                       if math.isfinite(hi_i) else hi_i)  # lo ignored
            out[i] = codec.encode_exact(value, fmt, rounding="sr", overflow=overflow,
                                        uniform=float(uni[i]), sr_bits=sr_bits, nan="zero")
    return out.reshape(shape)


def _uniform_draws(uniform: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer draws ``u * 2**bits`` and the indices where that is not an integer
    (those go through the exact reference)."""
    scaled = np.ldexp(uniform, bits)
    whole = (scaled == np.floor(scaled)) & (scaled < 2.0**bits) & (scaled >= 0)
    draws = np.where(whole, scaled, 0.0)
    if bits == 64:
        big = draws >= 2.0**63
        ints = np.where(big, draws - 2.0**63, draws).astype(np.uint64)
        ints[big] += np.uint64(1 << 63)
    else:
        ints = draws.astype(np.uint64)
    return ints, np.flatnonzero(~whole)


def encode_f64(x: Any, fmt: Format, **options: Any) -> np.ndarray:
    """Encode float64 values (each exact); the options of :func:`encode_pair`.

    Parameters
    ----------
    x : array_like of float64
        Values, each taken exactly (converted to float64 first; not validated).
    fmt : Format
        Target format.
    **options
        :func:`encode_pair`'s ``rounding``, ``overflow``, ``rng``, ``sr_bits``,
        ``uniform`` and ``nan``.

    Returns
    -------
    numpy.ndarray
        Codes in ``fmt.code_dtype``, shaped like ``x``.

    Examples
    --------
    >>> encode_f64([1.0, 0.1], as_format("e4m3fn")).tolist()
    [56, 29]
    """
    return encode_pair(x, None, fmt, **options)


# ---------------------------------------------------------------- decode
def _value_dtype(dtype: Any, out: Any, fmt: Format) -> np.dtype:
    if dtype is None and isinstance(out, np.ndarray):
        if out.dtype not in (np.float32, np.float64) or not out.dtype.isnative:
            raise ValueError(f"Got out with dtype {out.dtype}; expected a native float32 "
                             "or float64 array")
        dtype = out.dtype
    if dtype is None:
        dtype = np.float64
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"Got dtype={dtype!r}; expected numpy.float32 or numpy.float64") \
            from None
    if dt == np.float64:
        return dt
    if dt != np.float32:
        raise ValueError(f"Got dtype={dtype!r}, but the only valid values are float32 and "
                         "float64")
    if not _fits_float32(fmt):
        raise ValueError(f"Got dtype=float32 for format {fmt.name}, whose values are not all "
                         "float32 values (it needs float64)")
    return dt


def _fits_float32(fmt: Format) -> bool:
    """Whether every value of ``fmt`` is a float32 value."""
    return fmt.float32_exact


#: Per format (by identity): (the Format, its decode kind, {dtype char: value table,
#: "plan": :func:`_arithmetic_plan`'s result}, the largest code in the code dtype where
#: the codes do not fill it (else None), and the shift of a code into float32's bits for
#: "bfloat16" and "top32").
_DECODE_PLANS: dict[int, tuple[Format, str, dict[str, Any], Any, int]] = {}


def _decode_plan(fmt: Format) -> tuple[Format, str, dict[str, Any], Any, int]:
    plan = _DECODE_PLANS.get(id(fmt))
    if plan is None or plan[0] is not fmt:
        kind = "table" if fmt.bits <= 16 else "general"
        ieee = fmt.signed and fmt.subnormals and fmt.nan.value == "ieee" \
            and fmt.infinity.value == "ieee"
        if ieee and fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.bits == 16:
            kind = "bfloat16"
        elif ieee and fmt.bits == 16 and fmt.exponent_bits == 5 and fmt.bias == 15 \
                and _host_converts_binary16():
            kind = "binary16"
        elif ieee and fmt.exponent_bits == 8 and fmt.bias == 127 and 16 < fmt.bits <= 32:
            kind = "top32"  # tf32, binary32: codes are the top bits of float32's
        elif ieee and fmt.exponent_bits == 11 and fmt.bias == 1023 and fmt.bits == 64:
            kind = "binary64"
        cdt = fmt.code_dtype
        top = None if cdt.itemsize * 8 == fmt.bits else cdt.type(fmt.num_codes - 1)
        plan = (fmt, kind, {}, top, 32 - fmt.bits)
        if len(_DECODE_PLANS) > 1024:
            _DECODE_PLANS.clear()
        _DECODE_PLANS[id(fmt)] = plan
    return plan


def _host_converts_binary16() -> bool:
    """Whether the kernels convert binary16 with the processor's instruction (elsewhere
    binary16 decodes by its table, faster than the conversion in integer steps)."""
    from numerics.kernels.lanes import HAS_F16C

    return HAS_F16C


def _table(fmt: Format, dt: np.dtype) -> np.ndarray:
    """The value of every code of ``fmt`` (at most 16 bits) as ``dt`` (read-only, cached)."""
    tables = _decode_plan(fmt)[2]
    table = tables.get(dt.char)
    if table is None:
        table = np.empty(fmt.num_codes, dt)
        _kernels().decode_table(_params(fmt), table)
        table.setflags(write=False)
        tables[dt.char] = table
    return table


def _arithmetic_plan(fmt: Format) -> tuple[np.ndarray, bool] | None:
    """How the codes of ``fmt`` (at most 16 bits) decode by arithmetic
    (:func:`numerics.kernels.codec.planned`): the constants
    (:func:`numerics.kernels.unpack.plan`) and whether NaNs need their quiet bit set;
    None where the arithmetic does not give the float32 and float64 decode tables bit
    for bit (the table lookup then).  The compiled loop itself decodes every code once
    to choose: a format whose recipe gives no signalling NaN skips the quieting.
    Cached."""
    tables = _decode_plan(fmt)[2]
    if "plan" not in tables:
        from numerics.kernels.unpack import plan

        t32, t64 = _table(fmt, np.dtype(np.float32)), _table(fmt, np.dtype(np.float64))
        d = plan(_params(fmt), t32, quiet=True)
        found = None
        # float64 values are the float32 ones widened (a NaN keeps its sign and payload)
        if d is not None and np.array_equal(t32.astype(np.float64).view(np.uint64),
                                            t64.view(np.uint64)):
            d.setflags(write=False)
            codes = np.arange(fmt.num_codes, dtype=np.uint64).astype(fmt.code_dtype)
            got = np.empty(fmt.num_codes, np.float32)
            for quiet in (False, True):
                _kernels().planned_span(codes, got, 0, codes.size, d, quiet)
                if np.array_equal(got.view(np.uint32), t32.view(np.uint32)):
                    found = (d, quiet)
                    break
        tables["plan"] = found
    return tables["plan"]


def decode_table(fmt: Format) -> np.ndarray:
    """The float64 value of every code of a format of at most 16 bits (read-only, cached).

    Parameters
    ----------
    fmt : Format
        A format of at most 16 bits (not checked).

    Returns
    -------
    numpy.ndarray
        Read-only float64 array of ``fmt.num_codes`` values, indexed by code (shared
        between calls: do not rely on it being a fresh array).

    Examples
    --------
    >>> decode_table(as_format("e2m1fn"))[:8].tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    return _table(fmt, np.dtype(np.float64))


def decode_codes(codes: np.ndarray, fmt: Format, dtype: Any = np.float64,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Values of validated integer ``codes`` (no checks): float64 unless ``dtype``.

    Parameters
    ----------
    codes : numpy.ndarray of int
        Codes of ``fmt``, already range-checked, any integer dtype, layout and byte
        order (converted to ``fmt.code_dtype``).
    fmt : Format
        The format of the codes.
    dtype : numpy.float64 or numpy.float32
        The value type (float32 only where every value of ``fmt`` is a float32 value;
        not checked).
    out : numpy.ndarray, optional
        Array of ``dtype`` shaped like ``codes`` to write the values into; it may share
        memory with ``codes``.

    Returns
    -------
    numpy.ndarray
        The values, shaped like ``codes`` (``out`` itself when given).

    Examples
    --------
    >>> decode_codes(np.array([0x7E, 0xFE], np.uint8), as_format("e4m3fn")).tolist()
    [448.0, -448.0]
    """
    dt = np.dtype(dtype)
    arr = np.asarray(codes)
    if arr.dtype.byteorder not in "=|" or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, arr.dtype.newbyteorder("="))
    flat = arr.reshape(-1)
    target = np.empty(arr.shape, dt) if out is None else out
    # written in place only where C-contiguous and apart from the codes (else a temporary)
    direct = target.flags.c_contiguous and (out is None or not np.may_share_memory(target, arr))
    flat_out = target.reshape(-1) if direct else np.empty(flat.size, dt)
    if flat.dtype != fmt.code_dtype:
        flat = flat.astype(fmt.code_dtype)
    _decode_into(flat, flat_out, fmt, dt)
    if not direct:
        target[...] = flat_out.reshape(target.shape)
    return target


_F64 = np.dtype(np.float64)


def _decode_into(flat: np.ndarray, flat_out: np.ndarray, fmt: Format, dt: np.dtype) -> None:
    """Values of the flat, C-contiguous, validated codes ``flat`` (``fmt.code_dtype``)
    into ``flat_out`` (float32 or float64 ``dt``) by the format's decode kernel."""
    k = _kernels()
    _, kind, _, _, pad = _decode_plan(fmt)
    if (kind == "bfloat16" or kind == "top32") and dt == np.float32:
        k.widen(flat, flat_out.view(np.uint32), pad)  # float32's top bits
    elif kind == "bfloat16" or kind == "top32":
        # float64 values (bfloat16: 9.8 ms for 2**24 codes on an AMD EPYC Zen 2 core,
        # against 12.7 ms through the table, with the same bits for every code)
        k.widen(flat, flat_out, pad)
    elif kind == "binary64":
        k.quiet64(flat, flat_out.view(np.uint64))
    elif kind == "binary16":  # the processor's conversion
        k.half(flat, flat_out)
    elif fmt.bits <= 16 and (plan := _arithmetic_plan(fmt)) is not None:
        k.planned(flat, flat_out, *plan)  # (float32 values, widened exactly for float64)
    elif fmt.bits <= 16:
        k.lookup(flat, _table(fmt, dt), flat_out)
    else:
        if flat.dtype != np.uint64:
            flat = flat.astype(np.uint64)
        k.decode(flat, flat_out, _params(fmt))


def _decode_fast(codes: np.ndarray, fmt: Format, dt: np.dtype) -> np.ndarray:
    """Values of validated, native, C-contiguous codes in ``fmt.code_dtype`` (a 0-d array
    by the scalar kernel)."""
    if codes.ndim == 0 and dt is _F64:
        return np.array(_scalar_fns()[1](_signed(int(codes)), _params(fmt)))
    if codes.ndim == 1:  # (a size: the quickest np.empty)
        values = np.empty(codes.size, dt)
        _decode_into(codes, values, fmt, dt)
        return values
    values = np.empty(codes.shape, dt)  # (0-d too: the kernels take 1-d views)
    _decode_into(codes.reshape(-1), values.reshape(-1), fmt, dt)
    return values


def _check_codes(codes: Any, fmt: Format) -> tuple[np.ndarray, bool]:
    if isinstance(codes, (bool, np.bool_)):
        raise TypeError(f"Got codes={codes!r}; expected integer codes")
    tensor = _from_torch(codes, "codes")
    arr = as_input(codes if tensor is None else tensor, "codes")
    scalar = not isinstance(codes, np.ndarray) and tensor is None and arr.ndim == 0
    if arr.dtype.kind == "O":
        flat = arr.reshape(-1)
        ints = []
        for c in flat:
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
                raise TypeError(f"Got codes containing {c!r}; expected integer codes")
            ints.append(int(c))
        bad = [i for i, c in enumerate(ints) if not 0 <= c < fmt.num_codes]
        if bad:
            raise ValueError(f"Got codes[{bad[0]}]={ints[bad[0]]}, outside [0, {fmt.num_codes}) "
                             f"for the {fmt.bits}-bit format {fmt.name}")
        return np.array(ints, dtype=np.uint64).reshape(arr.shape), scalar
    if arr.size == 0 and arr.dtype.kind == "f" and isinstance(codes, (list, tuple)):
        return arr.astype(fmt.code_dtype), scalar  # [] (numpy makes it float64): no codes
    if arr.dtype.kind == "f" and isinstance(codes, (list, tuple)):
        # numpy makes [np.uint64(1), 0] float64: take the elements one by one
        return _check_codes(np.asarray(codes, dtype=object), fmt)[0], scalar
    if arr.dtype.kind not in "iu":
        raise TypeError(f"Got codes with dtype {arr.dtype}; expected integer codes "
                        "(use numpy .view() to reinterpret float bits)")
    if (arr.dtype.kind == "i" or fmt.bits < arr.dtype.itemsize * 8) and arr.size:
        flat = arr.reshape(-1)
        if flat.size >= _KERNEL_CHECK_MIN and flat.dtype.isnative:
            first = _kernels().first_bad_code(np.ascontiguousarray(flat), fmt.num_codes)
        else:
            outside = (flat < 0) | (flat >= fmt.num_codes) if arr.dtype.kind == "i" else (
                flat >= fmt.num_codes)
            first = int(np.argmax(outside)) if outside.any() else -1
        if first >= 0 and flat[first] < 0:
            raise ValueError(f"Got a negative code {flat[first]} at flat index {first}")
        if first >= 0:
            raise ValueError(f"Got code {int(flat[first]):#x} at flat index {first}, "
                             f"outside [0, {fmt.num_codes:#x}) for the {fmt.bits}-bit format "
                             f"{fmt.name}")
    return arr, scalar


#: Code arrays from this size on are range-checked by a compiled pass (one read, no
#: temporaries; 0.6 ms for 2**24 uint8 codes against 2 to 3 ms for numpy's).
_KERNEL_CHECK_MIN = 1 << 16


def decode(codes: Any, fmt: Any, *, dtype: Any = None, out: np.ndarray | None = None) -> Any:
    """Exact values of ``codes`` in ``fmt``.

    Parameters
    ----------
    codes : array_like of int
        Codes in ``[0, 2**fmt.bits)``, any integer dtype, or Python ints (an empty
        list is no codes; booleans are a TypeError).
    fmt : Format, str, numpy/ml_dtypes dtype or torch dtype
        The format of the codes.
    dtype : {None, numpy.float64, numpy.float32}
        The value type; float32 only for formats whose values all are float32 values
        (every format of at most 24 significant bits whose exponent range lies inside
        binary32's): a ValueError naming the format otherwise.  None: float64, or
        ``out``'s dtype.
    out : numpy.ndarray, optional
        A writeable float32/float64 ``numpy.ndarray`` or ``numpy.memmap`` shaped like
        ``codes`` to write the values into (other subclasses are a TypeError).  It may
        share memory with ``codes``: the values are those of the codes as they were
        before the call.

    Returns
    -------
    numpy.ndarray (a numpy scalar for a scalar input)
        NaN, +-inf and -0 preserved.  A NaN code gives a quiet NaN (IEEE 754
        section 7.2: a signalling NaN is delivered quiet): formats with IEEE NaNs
        keep its sign and payload (the trailing field, at the top of the float's,
        with the quiet bit set, as hardware widening does); the NaNs of other
        formats give the default NaN.

    Examples
    --------
    >>> float(decode(0x7B, "e5m2"))   # 1.75 * 2**(30 - 15)
    57344.0
    >>> float(decode(0x01, "e4m3fn"))  # 2**-6 * 1/8: smallest subnormal
    0.001953125
    >>> decode([0x7F, 0x80], "e4m3fnuz").tolist()  # 0x80 is the only NaN
    [240.0, nan]
    >>> decode([0x3F80], "bf16", dtype=np.float32).dtype
    dtype('float32')
    """
    if type(codes) in _INT_SCALARS and dtype is None and out is None:
        _, _, P, _, num_codes = _scalar_plan(fmt)
        code = int(codes)
        if 0 <= code < num_codes:
            return np.float64(_scalar_fns()[1](_signed(code), P))
    if type(codes) is np.ndarray and dtype is None and out is None:
        found = _scalar_plan(fmt)[1]
        cdt = codes.dtype
        # codes in the format's own code dtype, native and C-contiguous, range-checked by
        # one kernel pass where they do not fill every bit
        if cdt == found.code_dtype and cdt.isnative and codes.ndim <= MAX_DIMS \
                and codes.flags.c_contiguous:
            top = _decode_plan(found)[3]
            if top is None or _kernels().first_bad_code_span(
                    codes.reshape(-1), top, 0, codes.size) < 0:
                return _decode_fast(codes, found, _F64)
    fmt = as_format(fmt)
    target = None if out is None else _plain_out(out)
    dt = _value_dtype(dtype, target, fmt)
    arr, scalar = _check_codes(codes, fmt)
    if target is not None:
        if target.shape != arr.shape or target.dtype != dt or not target.flags.writeable:
            raise ValueError(f"Got out with dtype {target.dtype} and shape {target.shape}; "
                             f"expected a writeable {dt} array of shape {arr.shape}")
        decode_codes(arr, fmt, dt, target)
        return out
    values = decode_codes(arr, fmt, dt)
    return values[()] if scalar else values


# ---------------------------------------------------------------- round_to
def round_to(x: Any, fmt: Any, *, dtype: Any = None, **options: Any) -> Any:
    """``decode(encode(x, fmt, **options), fmt, dtype=dtype)``: the value ``x`` is stored as.

    ``options`` are :func:`encode`'s ``rounding``, ``overflow``, ``rng``, ``sr_bits`` and
    ``nan``.  A torch tensor comes back as a torch tensor of its shape in the smallest
    float dtype that holds every value of ``fmt`` exactly (float16, then bfloat16,
    float32, float64) unless ``dtype`` names one; as for numpy's float32, a torch
    ``dtype`` must hold every value of ``fmt`` (whatever values ``x`` holds): a
    ValueError naming the format otherwise, and for a dtype that is not a float.

    Parameters
    ----------
    x : array_like, float, int, Fraction, Decimal or torch tensor
        Values, taken exactly as by :func:`encode` (a torch tensor on the CPU).
    fmt : Format, str, numpy/ml_dtypes dtype or torch dtype
        Target format (see :func:`numerics.as_format`).
    dtype : {None, numpy.float64, numpy.float32} or torch dtype
        The value type, as for :func:`decode` (None: float64); for a torch tensor a
        torch float dtype holding every value of ``fmt`` (None: the smallest one).
    **options
        :func:`encode`'s ``rounding``, ``overflow``, ``rng``, ``sr_bits`` and ``nan``;
        any other keyword is a TypeError.

    Returns
    -------
    numpy.ndarray, numpy.float64 or torch.Tensor
        The values of the codes ``x`` rounds to, shaped like ``x`` (a numpy scalar for a
        scalar ``x``; a torch tensor for a torch tensor).

    Examples
    --------
    >>> float(round_to(0.1, "bfloat16"))
    0.10009765625
    >>> float(round_to(0.1, "bfloat16", rounding="rtz"))
    0.099609375
    """
    if type(x) is np.ndarray and not options and x.ndim \
            and (dtype is None or dtype is np.float64 or dtype is np.float32):
        # (the common array call first: every step here costs on 1k elements)
        values = _round_rne_fast(x, fmt, dtype, "ieee", "raise")
        if values is not None:
            return values
    elif type(x) in _FAST_SCALARS and dtype is None and not options:
        plan = _scalar_plan(fmt)
        code = _scalar_code(x, plan, "rne", "ieee", "raise")
        if code is not None:
            return np.float64(_scalar_fns()[1](_signed(code), plan[2]))
    elif type(x) in _FAST_SCALARS and dtype is None and options.keys() <= _ENCODE_OPTIONS:
        plan = _scalar_plan(fmt)
        rounding, overflow = options.get("rounding", "rne"), options.get("overflow", "ieee")
        nan, rng, sr_bits = options.get("nan", "raise"), options.get("rng"), \
            options.get("sr_bits")
        if rng is not None:
            check_rng(rng)
        if rounding == "sr":
            code = _scalar_sr_code(x, plan, overflow, nan, rng, sr_bits)
        else:
            code = _scalar_code(x, plan, rounding, overflow, nan) if sr_bits is None else None
        if code is not None:
            return np.float64(_scalar_fns()[1](_signed(code), plan[2]))
    if type(x) is np.ndarray and (dtype is None or dtype is np.float64 or dtype is np.float32) \
            and options.keys() <= _ENCODE_OPTIONS:
        values = None
        if x.ndim and options.get("rounding", "rne") == "rne" and "rng" not in options \
                and "sr_bits" not in options:
            values = _round_rne_fast(x, fmt, dtype, options.get("overflow", "ieee"),
                                     options.get("nan", "raise"))
        if values is None:
            values = _round_fast(x, fmt, dtype, options)
        if values is not None:
            return values
    if not options.keys() <= _ENCODE_OPTIONS:
        bad = sorted(options.keys() - _ENCODE_OPTIONS)[0]
        raise TypeError(f"round_to() got an unexpected keyword argument {bad!r} (it takes "
                        "dtype and encode's " + ", ".join(sorted(_ENCODE_OPTIONS)) + ")")
    fmt = as_format(fmt)
    if is_torch_tensor(x):
        return _round_torch(x, fmt, dtype, options)
    return decode(encode(x, fmt, **options), fmt, dtype=dtype)


#: The options :func:`round_to` passes on to :func:`encode`.
_ENCODE_OPTIONS = frozenset({"rounding", "overflow", "rng", "sr_bits", "nan"})


#: Per (format argument, input item size, dtype argument): the argument, its Format, the
#: parameter array, the value table of the fused kernel (None where it does not apply),
#: whether ``nan="raise"`` needs the NaN count (the format has no NaN), the kernel
#: module and the size from which it runs on the threads.
_ROUND_PLANS: dict[tuple[object, int, Any], tuple[Any, Format, np.ndarray,
                                                  np.ndarray | None, bool, Any, int]] = {}


def _round_plan(fmt: Any, itemsize: int, dtype: Any
                ) -> tuple[Any, Format, np.ndarray, np.ndarray | None, bool, Any, int]:
    """What :func:`_round_rne_fast` needs, cached by the format argument (a name) or its
    identity; raises as :func:`numerics.as_format` does for a bad argument."""
    key = (fmt if type(fmt) is str else id(fmt), itemsize, dtype)
    plan = _ROUND_PLANS.get(key)
    if plan is None or (plan[0] is not fmt and type(fmt) is not str):
        _, found, P, _, _ = _scalar_plan(fmt)
        value_dt = np.dtype(np.float64 if dtype is None else dtype)
        table = None
        if found.bits <= 16 and _plan(found)[5 if itemsize == 8 else 4] and (
                value_dt == np.float64 or _fits_float32(found)):
            table = _table(found, value_dt)
        from numerics.kernels.spread import PARALLEL_MIN

        plan = (fmt, found, P, table, not found.has_nan, _narrow_kernels(), PARALLEL_MIN)
        if len(_ROUND_PLANS) > 1024:
            _ROUND_PLANS.clear()
        _ROUND_PLANS[key] = plan
    return plan


def _round_rne_fast(x: np.ndarray, fmt: Any, dtype: Any, overflow: Any,
                    nan: Any) -> np.ndarray | None:
    """The values a C-contiguous native float32/float64 array rounds to (nearest-even) in a
    format of at most 16 bits the lane kernels take, by one fused kernel call (the code of
    each element, then its value from the format's table), or None when any condition
    fails (the caller then takes the general path, which checks every argument).  Below
    the threads' size the span runs directly (the driver's call costs about 0.7 us)."""
    dt = x.dtype
    if dt.num not in _FLOAT_NUMS or not dt.isnative or not x.flags.c_contiguous \
            or x.ndim > MAX_DIMS or type(overflow) is not str or type(nan) is not str \
            or (overflow != "ieee" and overflow != "saturate") \
            or (nan != "raise" and nan != "zero"):
        return None
    _, found, P, table, no_nan, narrow, parallel_min = _round_plan(fmt, dt.itemsize, dtype)
    if table is None:
        return None
    n = x.size
    if x.ndim == 1:  # (a size: the quickest np.empty)
        flat = x
        values = flat_values = np.empty(n, table.dtype)
    else:
        values = np.empty(x.shape, table.dtype)
        flat, flat_values = x.reshape(-1), values.reshape(-1)
    saturate, count = overflow == "saturate", nan == "raise" and no_nan
    if n < parallel_min:
        nans = narrow.round_rne_span(flat, flat_values, 0, n, P, saturate, table, count)
    else:
        nans = narrow.round_rne(flat, flat_values, P, saturate, table, count)
    if nans:
        raise _nan_error(flat, found)
    return values


def _round_fast(x: np.ndarray, fmt: Any, dtype: Any, options: dict[str, Any]
                ) -> np.ndarray | None:
    """:func:`round_to` of a C-contiguous native float32/float64 array by the fast
    paths (after :func:`_round_rne_fast`): a 0-d array by the scalar kernels,
    binary32/binary64 by
    :func:`numerics.kernels.narrow.ieee`, else :func:`_encode_fast`, then
    :func:`_decode_fast`; None where any of them declines (the caller then takes the
    general path, which checks every argument)."""
    rounding = options.get("rounding", "rne")
    overflow = options.get("overflow", "ieee")
    nan = options.get("nan", "raise")
    rng = options.get("rng")
    dt = x.dtype
    if dt.num not in _FLOAT_NUMS or not dt.isnative or not x.flags.c_contiguous \
            or x.ndim > MAX_DIMS or type(rounding) is not str or type(overflow) is not str \
            or type(nan) is not str:
        return None
    if rng is not None:
        check_rng(rng)
    route = _route(fmt, dt, rounding, overflow, nan, options.get("sr_bits"))
    if route is None:
        return None
    _, found, P, kind, mode, _, saturate, _, cdt = route
    if dtype is np.float32 and not _fits_float32(found):
        return None
    if x.ndim == 0 and dtype is None and mode < _MODES["sr"]:
        code = _scalar_code(x[()], _scalar_plan(fmt), rounding, overflow, nan)
        return None if code is None else np.array(_scalar_fns()[1](_signed(code), P))
    if kind == "ieee":
        if mode >= _MODES["sr"]:
            sr_seed(rng)  # (a Generator gives its draw, as the general path takes it)
        values = np.empty(x.shape, np.float32 if dtype is np.float32 else np.float64)
        flat, flat_values = (x, values) if x.ndim == 1 else (x.reshape(-1),
                                                             values.reshape(-1))
        _narrow_kernels().ieee(flat, flat_values, cdt.itemsize == 4, saturate)
        return values
    codes = _encode_fast(x, fmt, rounding, overflow, nan, None, rng, options.get("sr_bits"))
    if codes is None:
        return None
    return _decode_fast(codes, found, np.dtype(np.float32 if dtype is np.float32
                                               else np.float64))


def _round_torch(x: Any, fmt: Format, dtype: Any, options: dict[str, Any]) -> Any:
    import torch

    if dtype is None:
        dtype = _torch_dtype_for(fmt)
    elif not isinstance(dtype, torch.dtype):
        raise TypeError(f"Got dtype={dtype!r}; a torch tensor takes a torch float dtype")
    else:
        _check_torch_dtype(dtype, fmt)
    codes = np.asarray(encode(x, fmt, **options))
    # the codes of the same values in the dtype's own format, whose bits the tensor then
    # holds (torch's own float32 -> bfloat16 conversion makes every NaN 0xFFFF, losing
    # the code's sign; re-encoding gives that format's quiet NaN with the sign kept where
    # it has signed NaNs, as encode does)
    big = as_format(dtype)
    if big != fmt:
        values = decode(codes, fmt, dtype=np.float32 if _fits_float32(fmt) else np.float64)
        codes = np.asarray(encode(values, big))
    signed = np.ascontiguousarray(codes).view(f"i{codes.dtype.itemsize}")
    # (np.ascontiguousarray makes a 0-d array 1-d: the shape is put back)
    return torch.from_numpy(signed.reshape(codes.shape)).view(dtype)


def _check_torch_dtype(dtype: Any, fmt: Format) -> None:
    """ValueError unless the torch ``dtype`` is a float dtype holding every value of
    ``fmt`` (the rule of numpy's float32 in :func:`decode`, by format, not by values)."""
    try:
        big = as_format(dtype) if dtype.is_floating_point else None
    except ValueError:
        big = None
    if big is None:
        raise ValueError(f"Got dtype={dtype!r}; expected a torch float dtype (one of a "
                         "registered format)")
    if big != fmt and not _holds(big, fmt):
        raise ValueError(f"Got dtype={dtype!r} for format {fmt.name}, whose values are not "
                         f"all {big.name} values")


def _torch_dtype_for(fmt: Format) -> Any:
    import torch

    for candidate, name in ((torch.float16, "binary16"), (torch.bfloat16, "bfloat16"),
                            (torch.float32, "binary32")):
        if _holds(as_format(name), fmt):
            return candidate
    return torch.float64


def _holds(big: Format, small: Format) -> bool:
    """Whether every value of ``small`` is a value of ``big`` (``big`` with subnormals),
    -0 included."""
    if not big.subnormals or (small.signed and not big.signed):
        return big == small
    return small.trailing_bits <= big.trailing_bits and small.emax <= big.emax and (
        small.emin - small.trailing_bits >= big.emin - big.trailing_bits) and (
        small.emin >= big.emin or small.trailing_bits + (big.emin - small.emin)
        <= big.trailing_bits) and (big.has_infinity or not small.has_infinity) and (
        big.has_nan or not small.has_nan) and (
        big.has_negative_zero or not small.has_negative_zero)

"""Element formats of quantization, and exact rounding of scaled elements onto them.

This is the engine under :mod:`numerics.quant`.  Float element and scale formats are rounded
by the shared kernel primitive :func:`numerics.kernels.rounding.round_pair` (one rounding of
an exact value ``hi + lo``, every rounding mode of :mod:`numerics.rounding`), through the loop
:func:`numerics.kernels.quant.round_nudged`, and decoded by
:func:`numerics.kernels.rounding.decode_one`; the integer element formats (int8, int4, the
MXINT8 element), which the codec does not have, by :func:`numerics.kernels.quant.round_int`
(through :func:`numerics.kernels.quant.divide_round_int`).  Stochastic rounding draws
element ``i``'s bits from ``(seed, i)`` (:mod:`numerics.kernels.random`), so results do not
depend on the thread count.

Exactness with a non-power-of-two scale
---------------------------------------
A scaled element is ``y = x / s``.  When ``s`` is a power of two the float64 quotient is
exact.  Otherwise the engine takes ``yh = fl64(x / s)`` and the *sign* of the exact remainder
``x - yh*s`` (computed exactly with Dekker's TwoProduct on frexp-normalized significands).
For a target precision ``p <= 51`` every breakpoint of the rounding (representable values and
midpoints) is a float64 number, so ``y`` lies on the same side of every breakpoint as
``yh`` nudged towards the sign of the remainder: deterministic modes give the exact rounding
of ``y`` (see proofs/quantization_bounds.md, claim Q11).  The nudge goes to the encoder as
``lo = sign * max(2**-80 |yh|, 2**-1074)`` and decides the deterministic modes through its
sign.  Stochastic rounding needs more than the sign: the points where ``floor(frac *
2**k)`` steps (``k`` random bits, up to 64) lie up to ``2**(k - 53 + p)`` of them apart
within one float64 spacing of ``yh``.  It takes the remainder's quotient ``lo =
fl64(r / s)`` and the sign of ``r / s - lo``
(:func:`numerics.kernels.quant.quotient_rest`): each such point is a float64 number, so it
separates ``y`` from ``yh + lo`` only when it is ``yh + lo`` itself, where that sign
decides (claim Q4).  Integer elements round the same way, on their grid written as a float
format (:func:`grid_format`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from numerics import eft
from numerics.dtypes import format_of_dtype, is_torch_tensor, refuse_masked, torch_values
from numerics.formats import Format, as_format
from numerics.rounding import check_overflow, check_rounding, check_sr_bits, sr_seed

__all__ = [
    "INT_FORMATS",
    "SR_BITS_MAX",
    "ElementFormat",
    "IntFormat",
    "as_element_format",
    "as_float_array",
    "as_real_array",
    "detached",
    "check_quantize_format",
    "check_signed_elements",
    "decode_codes",
    "divide_codes",
    "divide_with_sticky",
    "grid_format",
    "encode_values",
    "round_codes",
    "round_elements",
    "scale_stream",
    "signed_limit",
]


@dataclass(frozen=True, kw_only=True)
class IntFormat:
    """A two's-complement integer element format with a fixed quantum.

    Values are ``k * quantum`` for integers ``qmin <= k <= qmax``; codes are the
    two's-complement bit patterns of ``k`` in ``bits`` bits (stored in uint8).

    The fields are checked when the format is made: ``name`` a non-empty str,
    ``bits`` an int in ``[2, 8]``, ``qmin <= 0 <= qmax`` ints that ``bits`` bits hold
    (``-2**(bits-1) <= qmin`` and ``qmax <= 2**(bits-1) - 1``), ``quantum`` a power of
    two in ``[2**-149, 2**120]`` (every value then a binary32 number); TypeError or
    ValueError naming the field otherwise.

    Parameters
    ----------
    name : str
        Canonical name, e.g. ``"int8"``.
    bits : int
        Width of a code, 2 to 8.
    qmin, qmax : int
        Smallest and largest integer ``k`` (``-(2**(bits-1) - 1)`` and
        ``2**(bits-1) - 1`` for the symmetric formats).
    quantum : float, default 1.0
        Weight of the last bit, a power of two (``2**-6`` for MXINT8 elements).

    Raises
    ------
    TypeError, ValueError
        For a field of the wrong type or out of range (the message names it).

    Examples
    --------
    >>> IntFormat(name="int3", bits=3, qmin=-3, qmax=3).max
    3.0
    >>> IntFormat(name="x", bits=3, qmin=-1000, qmax=1000)
    Traceback (most recent call last):
    ...
    ValueError: Got qmin=-1000, but 3-bit two's-complement codes hold the integers [-4, 3]
    """

    #: Canonical name, e.g. ``"int8"``.
    name: str
    #: Width of a code.
    bits: int
    #: Smallest integer (``-(2**(bits-1) - 1)`` for the symmetric formats).
    qmin: int
    #: Largest integer.
    qmax: int
    #: Weight of the last bit (1, or ``2**-6`` for MXINT8 elements).
    quantum: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Got name={self.name!r}, but a format needs a non-empty name")
        for attr in ("bits", "qmin", "qmax"):
            value = getattr(self, attr)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"Got {attr}={value!r}, but it must be an int")
            object.__setattr__(self, attr, int(value))  # (a numpy integer as an int)
        if not 2 <= self.bits <= 8:
            raise ValueError(f"Got bits={self.bits!r}, but it must be an int in [2, 8] (codes "
                             "are stored in uint8)")
        lo, hi = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        for attr in ("qmin", "qmax"):
            if not lo <= getattr(self, attr) <= hi:
                raise ValueError(f"Got {attr}={getattr(self, attr)!r}, but {self.bits}-bit "
                                 f"two's-complement codes hold the integers [{lo}, {hi}]")
        if self.qmin > self.qmax:
            raise ValueError(f"Got qmin={self.qmin} > qmax={self.qmax}, but qmin must be at "
                             "most qmax")
        if not self.qmin <= 0 <= self.qmax:
            raise ValueError(f"Got qmin={self.qmin}, qmax={self.qmax}, but the range must "
                             "hold zero: qmin <= 0 <= qmax")
        q = self.quantum
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, (int, float, np.integer,
                                                                np.floating)):
            raise TypeError(f"Got quantum={q!r}, but it must be a float (a power of two)")
        if not (math.isfinite(q) and q > 0 and math.frexp(q)[0] == 0.5
                and 2.0**-149 <= q <= 2.0**120):
            raise ValueError(f"Got quantum={q!r}, but it must be a power of two in "
                             "[2**-149, 2**120]")
        object.__setattr__(self, "quantum", float(q))

    @property
    def max(self) -> float:
        """Largest representable value."""
        return self.qmax * self.quantum

    @property
    def code_dtype(self) -> np.dtype:
        """Codes are stored in uint8."""
        return np.dtype(np.uint8)

    def __str__(self) -> str:
        return self.name


#: Integer element formats by name: symmetric int8/int4 (``-127..127`` and ``-7..7``, the
#: usual choice for scaled quantization, so that ``-x`` quantizes to ``-q(x)``) and the MXINT8
#: element (``-128..127`` times ``2**-6``, the OCP MX v1.0 range ``[-2, 1 63/64]``).
INT_FORMATS: dict[str, IntFormat] = {
    "int8": IntFormat(name="int8", bits=8, qmin=-127, qmax=127),
    "int4": IntFormat(name="int4", bits=4, qmin=-7, qmax=7),
    "mxint8_element": IntFormat(name="mxint8_element", bits=8, qmin=-128, qmax=127,
                                quantum=2.0**-6),
}

ElementFormat = Format | IntFormat


def signed_limit(fmt: ElementFormat, x: np.ndarray) -> np.ndarray | float:
    """The largest magnitude ``fmt`` holds on the side of ``x``'s sign (``np.signbit``):
    ``-qmin`` or ``qmax`` quanta per element for an integer format, the scalar ``fmt.max``
    for a float format."""
    if isinstance(fmt, IntFormat):
        return np.where(np.signbit(x), -fmt.qmin, fmt.qmax) * fmt.quantum
    return fmt.max


def as_element_format(fmt: object, *, name: str = "element_format") -> ElementFormat:
    """A registry :class:`Format` or an :class:`IntFormat` from a name, an instance, or the
    numpy, ml_dtypes or torch dtype of a registered format."""
    if isinstance(fmt, (Format, IntFormat)):
        return fmt
    if isinstance(fmt, str) and fmt.lower() in INT_FORMATS:
        return INT_FORMATS[fmt.lower()]
    if not isinstance(fmt, str):  # a dtype, or a TypeError naming the argument
        return as_format(fmt, arg=name)
    try:
        return as_format(fmt, arg=name)
    except ValueError as exc:
        raise ValueError(
            f"Got {name}={fmt!r}, which is neither a registered float format, 'int8'/'int4', "
            f"nor a block format ('mxfp8_e4m3', ..., 'nvfp4'): {exc}"
        ) from None


# ---------------------------------------------------------------------------------------------
# exact quotient: fl64(x / s) and the sign of the remainder
# ---------------------------------------------------------------------------------------------


def divide_with_sticky(x: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fl64(x/s), sign(x/s - fl64(x/s)))`` for finite ``x`` and finite positive ``s``.

    The remainder sign is exact: ``x`` and ``s`` are first scaled by powers of two to
    significands in ``[0.5, 1)`` (exact), where TwoProduct gives ``q*s`` exactly and the
    remainder ``x - q*s`` is itself a float64 (the remainder of a correctly rounded division
    is representable).  Where the float64 quotient of a finite ``x`` overflows, the
    quotient is the largest float64 and the sign is ``x``'s (the exact quotient lies
    beyond it); where it underflows to a float64 subnormal (far below every element and
    scale grid: its own sign decides its rounding) the sign is 0; where it underflows to
    zero from a non-zero ``x`` the sign is that of ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        q = x / s
        mx, ex = np.frexp(x)
        ms, es = np.frexp(s)
        qm = mx / ms
        p, err = eft.two_prod(qm, ms)
        rem = (mx - p) - err  # exact; its sign is that of x/s - q' in significand space
        sticky = np.sign(rem)
        # sign(y - q) where y = x/s: rem has the sign of (mx/ms - qm) * ms, ms > 0, and the
        # scaled quotient qm*2**(ex-es) is q itself when q is a normal float64.
        normal = np.abs(q) >= 2.2250738585072014e-308
        sticky = np.where(normal & np.isfinite(q), sticky, 0.0)
        sticky = np.where((q == 0) & (x != 0), np.sign(x), sticky)
        # a finite quotient beyond float64's range: the largest float64, the rest of the
        # quotient beyond it (as the compiled divide_with_sticky gives it)
        beyond = np.isinf(q) & np.isfinite(x)
        q = np.where(beyond, np.copysign(np.finfo(np.float64).max, x), q)
        sticky = np.where(beyond, np.sign(x), sticky)
    return q, sticky


# ---------------------------------------------------------------------------------------------
# rounding onto a grid
# ---------------------------------------------------------------------------------------------
#: The most random bits a quantization's stochastic rounding takes (``sr_bits``).
SR_BITS_MAX = 52


def _check_sr(rounding: str, rng: object, sr_bits: object) -> tuple[int | None, int | None]:
    """The 64-bit seed of stochastic rounding (None for the other modes) and ``sr_bits``
    as a Python int (a numpy integer would wrap in ``2.0**-sr_bits``), or None."""
    check_rounding(rounding)
    bits = check_sr_bits(sr_bits, top=SR_BITS_MAX)
    return (sr_seed(rng) if rounding == "sr" else None), bits


def scale_stream(seed: int) -> int:
    """The seed of the scales' stochastic-rounding stream for element seed ``seed``.

    Scale ``j`` (flat C-order index of the scale array) draws from
    ``(seed + 0x9E3779B97F4A7C15 mod 2**64, j)`` by the rule of
    :mod:`numerics.kernels.random`, element ``i`` from ``(seed, i)``: the two streams start
    from consecutive SplitMix64 states, so the scales' draws are not the elements' draws.
    The offset is :data:`numerics.kernels.random.GOLDEN`, SplitMix64's increment.

    Examples
    --------
    >>> scale_stream(7) == 7 + 0x9E3779B97F4A7C15
    True
    >>> scale_stream(2**64 - 1) == 0x9E3779B97F4A7C15 - 1
    True
    """
    from numerics.kernels.random import GOLDEN  # imports numba: only when a scale uses "sr"

    return (int(seed) + int(GOLDEN)) % 2**64


#: Widest formats :func:`numerics.quant.quantize` takes for elements and scales: claims Q10
#: and Q11 (proofs/quantization_bounds.md) need at most 24 significant bits (so that a
#: scale times an element is exact in float64 and every rounding breakpoint is a float64)
#: and binary32's exponent range (so that the product neither overflows nor underflows).
MAX_PRECISION = 24
MAX_EMAX = 127
MIN_SUBNORMAL_EXPONENT = -149


def check_quantize_format(fmt: ElementFormat, name: str) -> None:
    """ValueError naming ``name`` unless ``fmt`` is covered by claims Q10 and Q11.

    Every registered format but binary64 is: at most 24 significant bits, largest binade
    ``2**127`` at most, smallest positive value ``2**-149`` at least.
    """
    if isinstance(fmt, IntFormat):
        if fmt.qmax == 0:  # (a scale maps amax onto max: 0 leaves none)
            raise ValueError(f"Got {name}={fmt.name!r} with qmax=0, but quantize scales the "
                             "largest magnitude onto the format's largest value, which "
                             "must be positive")
        return
    smallest = fmt.emin - fmt.trailing_bits if fmt.subnormals else fmt.emin
    if fmt.precision > MAX_PRECISION or fmt.emax > MAX_EMAX or \
            smallest < MIN_SUBNORMAL_EXPONENT:
        raise ValueError(
            f"Got {name}={fmt.name!r}, but quantize takes formats of at most "
            f"{MAX_PRECISION} significant bits within binary32's exponent range (binary32 "
            "and narrower): only there is dequantize exact and every rounding one rounding "
            "of the exact quotient (claims Q10, Q11 of proofs/quantization_bounds.md)")


def check_signed_elements(fmt: ElementFormat, name: str) -> None:
    """ValueError naming ``name`` when ``fmt`` is unsigned (e8m0fnu): elements take either
    sign, and the claims bound an element's error only where its code has both.

    Examples
    --------
    >>> check_signed_elements(as_format("e8m0fnu"), "element_format")
    Traceback (most recent call last):
    ...
    ValueError: Got element_format='e8m0fnu', but elements need a signed format (e8m0fnu \
has no negative values; it serves as a scale_format)
    """
    if isinstance(fmt, Format) and not fmt.signed:
        raise ValueError(f"Got {name}={fmt.name!r}, but elements need a signed format "
                         f"({fmt.name} has no negative values; it serves as a scale_format)")


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)


def _kernel_mode(rounding: str, sr_bits: int | None) -> tuple[int, int, bool]:
    """The kernels' mode code, random bits per draw and whether the mode is stochastic
    (64-bit draws compared exactly without ``sr_bits``)."""
    from numerics.kernels.rounding import MODE_SR, MODE_SR_EXACT, mode_code

    if rounding != "sr":
        return mode_code(rounding), 1, False
    return (MODE_SR_EXACT, 64, True) if sr_bits is None else (MODE_SR, int(sr_bits), True)


def round_codes(y: np.ndarray, fmt: Format, *, sticky: np.ndarray | None = None,
                rounding: str = "rne", overflow: str = "saturate", seed: int | None = None,
                sr_bits: int | None = None) -> np.ndarray:
    """Codes (``fmt.code_dtype``) of float64 ``y`` nudged by ``sticky``, rounded once.

    NaN gives the format's NaN with its sign (code 0 in formats without NaN)."""
    from numerics.kernels import quant as kq
    from numerics.kernels.rounding import overflow_code

    y = np.asarray(y, dtype=np.float64)
    st = np.zeros(y.shape) if sticky is None else np.broadcast_to(
        np.asarray(sticky, dtype=np.float64), y.shape)
    out = np.empty(y.size, dtype=np.uint64)
    mode, ubits, stochastic = _kernel_mode(rounding, sr_bits)
    if y.size:
        kq.round_nudged(_flat(y), _flat(st), kq.params_tuple(fmt), np.int64(mode),
                        np.int64(overflow_code(overflow)), np.uint64(seed or 0),
                        np.int64(ubits), stochastic, out)
    return out.astype(fmt.code_dtype).reshape(y.shape)


@cache
def grid_format(quantum: float) -> Format:
    """The grid ``k * quantum`` as a float format whose subnormals are its points up to
    ``255 * quantum`` (8 trailing bits, ``emin - 8 = log2(quantum)``): the magnitude code of
    a value rounded into it is ``|k|``, so integer elements round by the float formats'
    steps (:func:`numerics.kernels.rounding.round_pair`), every mode included.

    Parameters
    ----------
    quantum : float
        The grid's spacing, a power of two (an :class:`IntFormat`'s ``quantum``).

    Returns
    -------
    Format
        The format (a 2-bit exponent, 8 trailing bits, no infinity, no NaN).

    Examples
    --------
    >>> g = grid_format(0.5)
    >>> g.smallest_subnormal, g.smallest_normal
    (0.5, 128.0)
    """
    from numerics.formats import Infinity, NaNEncoding

    e = math.frexp(quantum)[1] - 1  # quantum = 2**e, checked by IntFormat
    return Format(name=f"grid 2**{e}", exponent_bits=2, trailing_bits=8, bias=-7 - e,
                  infinity=Infinity.NONE, nan=NaNEncoding.NONE)


def divide_codes(x: np.ndarray, s: np.ndarray, fmt: ElementFormat, *, rounding: str = "rne",
                 overflow: str = "saturate", rng: object = None,
                 sr_bits: int | None = None) -> np.ndarray:
    """Codes of ``x / s`` (float64; ``s`` finite and positive, of ``x``'s shape or one
    value, which is not copied per element) rounded once into ``fmt``, in one kernel pass.

    A float format: the codes :func:`encode_values` gives the values
    ``round_elements(*divide_with_sticky(x, s), ...)`` (NaN keeping its sign), by
    :func:`numerics.kernels.quant.divide_round`.  An integer format: the exact quotient
    rounded onto ``k * quantum`` and saturated to ``[qmin, qmax]`` whatever ``overflow``
    says, by :func:`numerics.kernels.quant.divide_round_int` (stochastic rounding
    compares a 53-bit draw ``u`` with ``frac * 2**53``, or an ``sr_bits``-bit one with
    ``floor(frac * 2**sr_bits)``).  Stochastic rounding uses the exact fraction ``frac``
    of ``x / s`` (:func:`numerics.kernels.quant.quotient_rest`).  The caller checks NaN
    against a format without NaN (an integer NaN element gives code 0)."""
    from numerics.kernels import quant as kq
    from numerics.kernels.narrow import fits_one
    from numerics.kernels.rounding import MODE_RNE, format_params, overflow_code

    check_overflow(overflow)
    seed, sr_bits = _check_sr(rounding, rng, sr_bits)
    mode, ubits, stochastic = _kernel_mode(rounding, sr_bits)
    out = np.empty(x.shape, dtype=fmt.code_dtype)
    if not x.size:
        return out
    s = np.asarray(s, dtype=np.float64)
    divisors = s.reshape(1) if s.size == 1 else _flat(np.broadcast_to(s, x.shape))
    if isinstance(fmt, IntFormat):  # (sr_bits=None: 53-bit draws, u < frac * 2**53)
        grid = grid_format(fmt.quantum)
        kq.divide_round_int(_flat(x), divisors, kq.params_tuple(grid), np.int64(fmt.qmin),
                            np.int64(fmt.qmax), np.int64(fmt.bits), np.int64(mode),
                            np.uint64(seed or 0), np.int64(53 if sr_bits is None else sr_bits),
                            stochastic, out.reshape(-1),
                            mode == MODE_RNE and fits_one(format_params(grid)))
        return out
    lanes = mode == MODE_RNE and fits_one(format_params(fmt))
    kq.divide_round(_flat(x), divisors, kq.params_tuple(fmt), np.int64(mode),
                    np.int64(overflow_code(overflow)), np.uint64(seed or 0),
                    np.int64(ubits), stochastic, out.reshape(-1), lanes)
    return out


def round_elements(y: np.ndarray, fmt: Format, *, sticky: np.ndarray | None = None,
                   rounding: str = "rne", overflow: str = "saturate", rng: object = None,
                   sr_bits: int | None = None, nan: str = "raise") -> np.ndarray:
    """Round float64 ``y`` (exact value ``y`` nudged by ``sticky``) onto the float format
    ``fmt`` (integer elements: :func:`divide_codes`).

    Returns the exactly representable float64 results (NaN, +-inf and -0 where the format
    has them).  ``sticky`` (-1, 0, +1, broadcastable) is the sign of ``exact - y``.
    ``nan="raise"`` raises ValueError for NaN into a format without NaN; ``"zero"`` gives 0.
    """
    check_overflow(overflow)
    seed, sr_bits = _check_sr(rounding, rng, sr_bits)
    y = np.asarray(y, dtype=np.float64)
    if nan == "raise" and not fmt.has_nan and np.isnan(y).any():
        raise ValueError(f"Got NaN in the input, but element format {fmt.name} has no NaN")
    codes = round_codes(y, fmt, sticky=sticky, rounding=rounding, overflow=overflow,
                        seed=seed, sr_bits=sr_bits)
    out = decode_codes(codes, fmt)
    if fmt.has_nan:  # a NaN keeps its sign (the decoder returns the positive NaN)
        out = np.where(np.isnan(out), np.copysign(np.nan, y), out)
    return out


# ---------------------------------------------------------------------------------------------
# codes of exactly representable values
# ---------------------------------------------------------------------------------------------
@cache
def _magnitudes(fmt: Format) -> np.ndarray:
    """float64 values of magnitude codes ``0 .. max_finite_code`` (increasing)."""
    codes = np.arange(fmt.max_finite_code + 1, dtype=np.uint64).astype(fmt.code_dtype)
    return decode_codes(codes, fmt)


def encode_values(v: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """Codes of exactly representable float64 values ``v`` (NaN, +-inf, -0 allowed; a NaN
    keeps its sign: ``-nan`` into e4m3fn is 0xFF)."""
    v = np.asarray(v, dtype=np.float64)
    if isinstance(fmt, IntFormat):
        k = np.rint(v / fmt.quantum).astype(np.int64)
        return (k & ((1 << fmt.bits) - 1)).astype(np.uint8)
    return round_codes(v, fmt, rounding="rne", overflow="ieee")


def decode_codes(codes: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """float64 values of codes (the inverse of :func:`encode_values`)."""
    codes = np.asarray(codes)
    if isinstance(fmt, IntFormat):
        k = codes.astype(np.int64) & ((1 << fmt.bits) - 1)
        k = np.where(k >= (1 << (fmt.bits - 1)), k - (1 << fmt.bits), k)
        return k * fmt.quantum
    from numerics.kernels import quant as kq

    flat = np.ascontiguousarray(codes, dtype=np.uint64).reshape(-1)
    out = np.empty(flat.size)
    if flat.size:
        kq.decode_codes(flat, kq.params_tuple(fmt), out)
    return out.reshape(codes.shape)


def detached(arr: np.ndarray, x: object) -> np.ndarray:
    """``arr`` (the array :func:`as_real_array` made of ``x``), copied where its memory is
    the caller's: ``x`` itself, or a view of it or of a tensor's storage.  A
    :class:`~numerics.quant.Quantized` keeps its input to compute ``bound`` on demand;
    a caller who then reuses the buffer must not change that bound.

    Parameters
    ----------
    arr : numpy.ndarray
        The input as an array.
    x : object
        The argument it was made of.

    Returns
    -------
    numpy.ndarray
        ``arr``, or a copy of it that no one else holds.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(4.0)
    >>> detached(x, x) is x, detached(np.asarray([1.0]), [1.0]).base is None
    (False, True)
    """
    return arr.copy() if arr is x or arr.base is not None else arr


def as_real_array(x: object, *, name: str = "x") -> np.ndarray:
    """``x`` as a real numpy array, keeping float32/float16/ml_dtypes dtypes.

    torch tensors (any float dtype, bfloat16 and fp8 included; moved to the CPU) become
    numpy arrays of the same values (:func:`numerics.dtypes.torch_values`).  Ragged nested
    lists, complex, bool, string and object input raise ValueError/TypeError naming
    ``name``.

    Parameters
    ----------
    x : array_like or torch tensor
        The values.
    name : str, default "x"
        The argument's name, quoted in the error messages.

    Returns
    -------
    numpy.ndarray
        The values in their own real dtype (``x`` itself where it is one already).

    Raises
    ------
    TypeError, ValueError
        For input that is not a rectangular array of real numbers.
    """
    if is_torch_tensor(x):
        x = torch_values(x, name)
    refuse_masked(x, name)
    try:
        arr = np.asarray(x)
    except ValueError:
        raise ValueError(f"Got a ragged nested sequence for {name} ({_short(x)}), but it must "
                         "be a rectangular array") from None
    void = arr.dtype.kind == "V" and format_of_dtype(arr.dtype) is None  # not ml_dtypes'
    if arr.dtype == object or arr.dtype.kind in "cUSMmbO" or void:
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be a real float or "
                        "int array")
    return arr


def as_float_array(x: object, *, name: str = "x") -> np.ndarray:
    """float64 copy of a real numeric array; TypeError/ValueError naming ``name`` otherwise.

    Parameters
    ----------
    x : array_like or torch tensor
        The values (as :func:`as_real_array` takes them).
    name : str, default "x"
        The argument's name, quoted in the error messages.

    Returns
    -------
    numpy.ndarray of float64
        The values (exact for floats of at most 64 bits, ml_dtypes values and integers
        up to ``2**53``).

    Raises
    ------
    TypeError, ValueError
        For input that is not a rectangular array of real numbers.
    """
    arr = as_real_array(x, name=name)
    try:  # kind "V" covers the ml_dtypes floats (bfloat16, float8_*), which convert exactly
        with np.errstate(invalid="ignore"):  # (a signalling NaN: a NaN)
            return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be a real float or int "
                        "array") from None


def _short(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."

"""Element formats of quantization, and exact rounding of scaled elements onto them.

This is the engine under :mod:`numerics.quant`.  Float element and scale formats are rounded
by the core encoder, :func:`numerics.fast.encode_pair` (one rounding of an exact value
``hi + lo``, every rounding mode of :mod:`numerics.rounding`), and decoded by
:func:`numerics.fast.decode_codes`; the symmetric integer element formats (int8, int4, the
MXINT8 element), which the core does not have, are rounded here.

Exactness with a non-power-of-two scale
---------------------------------------
A scaled element is ``y = x / s``.  When ``s`` is a power of two the float64 quotient is
exact.  Otherwise the engine takes ``yh = fl64(x / s)`` and the *sign* of the exact remainder
``x - yh*s`` (computed exactly with Dekker's TwoProduct on frexp-normalized significands).
For a target precision ``p <= 51`` every breakpoint of the rounding (representable values and
midpoints) is a float64 number, so ``y`` lies on the same side of every breakpoint as
``yh`` nudged towards the sign of the remainder: deterministic modes give the exact rounding
of ``y`` (see proofs/quantization_bounds.md, claim Q11).  The nudge goes to the encoder as
``lo = sign * max(2**-80 |yh|, 2**-1074)``: it decides the deterministic modes through its
sign, and stochastic rounding through the fraction of ``yh`` plus or minus a vanishing part of
a quantum, so a draw truncated to ``sr_bits`` bits steps down where that fraction sits exactly
on a multiple of ``2**-sr_bits`` and the nudge points inwards.  Binary64 targets, whose
quantum is too fine for such a nudge, step by hand with nudged fractions ``2**-60`` (outwards)
and ``1 - 2**-53`` (inwards).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from numerics import eft
from numerics.encoding import decode_codes as _decode_float
from numerics.encoding import encode_f64, encode_pair
from numerics.formats import Format, as_format
from numerics.rounding import check_overflow, check_rounding, make_rng

__all__ = [
    "INT_FORMATS",
    "ElementFormat",
    "IntFormat",
    "as_element_format",
    "decode_codes",
    "divide_with_sticky",
    "encode_values",
    "round_elements",
]


@dataclass(frozen=True, kw_only=True)
class IntFormat:
    """A two's-complement integer element format with a fixed quantum.

    Values are ``k * quantum`` for integers ``qmin <= k <= qmax``; codes are the
    two's-complement bit patterns of ``k`` in ``bits`` bits (stored in uint8).
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


def as_element_format(fmt: object, *, name: str = "element_format") -> ElementFormat:
    """A registry :class:`Format` or an :class:`IntFormat` from a name or an instance."""
    if isinstance(fmt, (Format, IntFormat)):
        return fmt
    if isinstance(fmt, str) and fmt.lower() in INT_FORMATS:
        return INT_FORMATS[fmt.lower()]
    if not isinstance(fmt, str):
        raise TypeError(f"Got {name}={fmt!r}, expected a format name or a numerics.Format")
    try:
        return as_format(fmt)
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
    is representable).  Where the float64 quotient over- or underflows the sign is 0.
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
        # The scaled quotient qm*2**(ex-es) equals q unless q over/underflowed; in that case
        # report "exact" (those elements saturate or flush regardless of one ulp of float64).
        back = np.ldexp(qm, (ex - es).astype(np.int64))
        sticky = np.where((back == q) & np.isfinite(q), sticky, 0.0)
        # sign(y - q) where y = x/s: rem has the sign of (mx/ms - qm) * ms, ms > 0.
    return q, sticky


# ---------------------------------------------------------------------------------------------
# rounding onto a grid
# ---------------------------------------------------------------------------------------------
_TINY = 2.0**-1074  # smallest |lo| of a nudge


def _check_sr(rounding: str, rng: object, sr_bits: object) -> np.random.Generator | None:
    check_rounding(rounding)
    if sr_bits is not None and (isinstance(sr_bits, bool) or not isinstance(sr_bits, int)
                                or not 1 <= sr_bits <= 52):
        raise ValueError(f"Got {sr_bits=}, but it must be None or an int in [1, 52]")
    return make_rng(rng) if rounding == "sr" else None


def _uniforms(gen: np.random.Generator, shape: tuple[int, ...],
              sr_bits: int | None) -> np.ndarray:
    """The draws of stochastic rounding: 53-bit uniforms, or multiples of ``2**-sr_bits``."""
    if sr_bits is None:
        return gen.random(shape)
    return gen.integers(0, 2**sr_bits, size=shape) / float(2**sr_bits)


def round_elements(y: np.ndarray, fmt: ElementFormat, *, sticky: np.ndarray | None = None,
                   rounding: str = "rne", overflow: str = "saturate", rng: object = None,
                   sr_bits: int | None = None, nan: str = "raise") -> np.ndarray:
    """Round float64 ``y`` (exact value ``y`` nudged by ``sticky``) onto ``fmt``'s grid.

    Returns the exactly representable float64 results (NaN, +-inf and -0 where the format
    has them).  ``sticky`` (-1, 0, +1, broadcastable) is the sign of ``exact - y``.
    ``nan="raise"`` raises ValueError for NaN into a format without NaN; ``"zero"`` gives 0.
    """
    check_overflow(overflow)
    gen = _check_sr(rounding, rng, sr_bits)
    y = np.asarray(y, dtype=np.float64)
    st = None if sticky is None else np.broadcast_to(np.asarray(sticky, dtype=np.float64),
                                                     y.shape)
    u = None if gen is None else _uniforms(gen, y.shape, sr_bits)
    has_nan = fmt.has_nan if isinstance(fmt, Format) else False
    if nan == "raise" and not has_nan and np.isnan(y).any():
        raise ValueError(f"Got NaN in the input, but element format {fmt.name} has no NaN")
    if isinstance(fmt, IntFormat):
        return _round_int(y, np.zeros(y.shape) if st is None else st, fmt, rounding, u, sr_bits)
    if st is None or not st.any():
        if u is None:
            codes = encode_f64(y, fmt, rounding=rounding, overflow=overflow, nan="zero")
        else:
            codes = encode_pair(y, None, fmt, rounding="sr", overflow=overflow, uniform=u,
                                sr_bits=sr_bits, nan="zero")
        return _decode_float(codes, fmt)
    return _decode_float(_encode_nudged(y, st, fmt, rounding, overflow, u, sr_bits), fmt)


def _encode_nudged(y: np.ndarray, st: np.ndarray, fmt: Format, rounding: str, overflow: str,
                   u: np.ndarray | None, sr_bits: int | None) -> np.ndarray:
    """Codes of ``y`` nudged by ``st`` (not all zero): ``encode_pair(y, st * tiny)``."""
    negative = np.signbit(y) | ((y == 0) & (st < 0))
    zero = (y == 0) & (st != 0)
    # At zero the nudge points away from zero, with the sign of ``negative``.
    hi = np.where(zero, np.where(negative, -0.0, 0.0), y)
    # |lo| = max(2**-80 |hi|, 2**-1074): far below half an ulp of hi in binary64 and a
    # vanishing but nonzero part of a quantum of every narrower format (the stochastic mode
    # reads lo in quanta, and 2**-1074 would underflow there).
    nudge = np.maximum(np.ldexp(np.abs(hi), -80), _TINY)
    lo = np.where(zero, np.where(negative, -nudge, nudge),
                  np.where(st > 0, nudge, np.where(st < 0, -nudge, 0.0)))
    if fmt.name == "binary64" and rounding == "rna":
        rounding = "rne"  # y is on the grid and never a midpoint: the nudge decides nothing
    if u is None:
        return encode_pair(hi, lo, fmt, rounding=rounding, overflow=overflow, nan="zero")
    if fmt.name == "binary64":
        # A binary64 quantum is too fine for |lo| = 2**-1074 to be a vanishing part of it:
        # step by hand.  The nudged fraction is 1 - 2**-53 (inwards: one ulp down iff u is
        # the largest draw) or 2**-60 (outwards: one ulp up iff a 53-bit draw is 0).
        umax = 1.0 - 2.0**-(53 if sr_bits is None else sr_bits)
        sm = np.where(negative, -st, st)  # sign of |exact| - |y|
        inward = (sm < 0) & (y != 0) & (u == umax) & np.isfinite(y)
        outward = (sm > 0) & (u == 0) & (sr_bits is None)
        hi = np.where(inward, np.nextafter(hi, 0.0),
                      np.where(outward, np.nextafter(hi, np.copysign(np.inf, hi)), hi))
        return encode_pair(hi, None, fmt, rounding="sr", overflow=overflow, uniform=u,
                           sr_bits=sr_bits, nan="zero")
    return encode_pair(hi, lo, fmt, rounding="sr", overflow=overflow, uniform=u,
                       sr_bits=sr_bits, nan="zero")


def _round_int(y: np.ndarray, st: np.ndarray, fmt: IntFormat, rounding: str,
               u: np.ndarray | None, sr_bits: int | None) -> np.ndarray:
    """Round onto the integer grid ``k * fmt.quantum``, saturating to ``[qmin, qmax]``."""
    negative = np.signbit(y) | ((y == 0) & (st < 0))
    sm = np.where(negative, -st, st)  # sign of |exact| - |y|
    isnan = np.isnan(y)
    isinf = np.isinf(y)
    a = np.where(isnan | isinf, 0.0, np.abs(y))
    m = a / fmt.quantum  # exact: the quantum is a power of two
    n = np.floor(m)
    f = m - n
    # exact value a + sm*tiny relative to the grid
    below_at_point = (f == 0) & (sm < 0) & (a > 0)
    n = np.where(below_at_point, n - 1, n)
    inexact = (f != 0) | (sm != 0)
    tie = (f == 0.5) & (sm == 0)
    above = (f > 0.5) | ((f == 0.5) & (sm > 0)) | below_at_point
    odd = np.fmod(n, 2) == 1
    if rounding == "rne":
        up = above | (tie & odd)
    elif rounding == "rna":
        up = above | tie
    elif rounding == "rtz":
        up = np.zeros_like(inexact)
    elif rounding == "ru":
        up = inexact & ~negative
    elif rounding == "rd":
        up = inexact & negative
    elif rounding == "rto":
        up = inexact & ~odd
    else:  # stochastic: away from zero iff u < frac
        assert u is not None
        frac = np.where(below_at_point, 1.0 - 2.0**-53,
                        np.where((f == 0) & (sm > 0), 2.0**-60, f))
        if sr_bits is not None:
            frac = np.floor(frac * 2.0**sr_bits) / 2.0**sr_bits
        up = u < frac
    mag = (n + up) * fmt.quantum
    top = fmt.qmax * fmt.quantum
    bottom = -fmt.qmin * fmt.quantum
    mag = np.minimum(mag, np.where(negative, bottom, top))  # integers always saturate
    res = np.where(negative, -mag, mag)
    res = np.where(res == 0, 0.0, res)  # no negative zero in two's complement
    res = np.where(isnan, 0.0, res)
    return np.where(isinf, np.where(negative, -bottom, top), res)


# ---------------------------------------------------------------------------------------------
# codes of exactly representable values
# ---------------------------------------------------------------------------------------------
@cache
def _magnitudes(fmt: Format) -> np.ndarray:
    """float64 values of magnitude codes ``0 .. max_finite_code`` (increasing)."""
    codes = np.arange(fmt.max_finite_code + 1, dtype=np.uint64).astype(fmt.code_dtype)
    return _decode_float(codes, fmt)


def encode_values(v: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """Codes of exactly representable float64 values ``v`` (NaN, +-inf, -0 allowed)."""
    v = np.asarray(v, dtype=np.float64)
    if isinstance(fmt, IntFormat):
        k = np.rint(v / fmt.quantum).astype(np.int64)
        return (k & ((1 << fmt.bits) - 1)).astype(np.uint8)
    isnan = np.isnan(v)
    if isnan.any():
        v = np.where(isnan, np.nan, v)  # every NaN gets the canonical (positive) NaN code
    return encode_f64(v, fmt, rounding="rne", overflow="ieee", nan="zero")


def decode_codes(codes: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """float64 values of codes (the inverse of :func:`encode_values`)."""
    codes = np.asarray(codes)
    if isinstance(fmt, IntFormat):
        k = codes.astype(np.int64) & ((1 << fmt.bits) - 1)
        k = np.where(k >= (1 << (fmt.bits - 1)), k - (1 << fmt.bits), k)
        return k * fmt.quantum
    return _decode_float(codes, fmt)

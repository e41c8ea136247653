"""Vectorized exact rounding onto an element grid, and the element formats of quantization.

This is the engine under :mod:`numerics.quant`: it rounds float64 arrays onto the value grid
of a :class:`~numerics.formats.Format` (or of a symmetric integer format) with every rounding
mode of :mod:`numerics.rounding`, exactly, and maps the exactly representable results to
codes and back.

Exactness with a non-power-of-two scale
---------------------------------------
A scaled element is ``y = x / s``.  When ``s`` is a power of two the float64 quotient is
exact.  Otherwise the engine takes ``yh = fl64(x / s)`` and the *sign* of the exact remainder
``x - yh*s`` (computed exactly with Dekker's TwoProduct on frexp-normalized significands).
For a target precision ``p <= 51`` every breakpoint of the rounding (representable values and
midpoints) is a float64 number, so ``y`` lies on the same side of every breakpoint as
``yh`` nudged towards the sign of the remainder: deterministic modes give the exact rounding
of ``y`` (see proofs/quantization_bounds.md, claim Q11).  For stochastic rounding the draw is
compared with the fraction of ``yh``, which differs from the exact one by less than
``2**-50`` of a quantum.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from numerics.formats import Format, Infinity, NaNEncoding, as_format
from numerics.rounding import check_overflow, check_rounding, make_rng

__all__ = [
    "ElementFormat",
    "IntFormat",
    "INT_FORMATS",
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
_SPLIT = 134217729.0  # 2**27 + 1, Dekker's splitter for binary64


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLIT * b
    bh = cb - (cb - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, err


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
        p, err = _two_product(qm, ms)
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
def _round_magnitude(n: np.ndarray, frac: np.ndarray, above: np.ndarray, tie: np.ndarray,
                     inexact: np.ndarray, odd: np.ndarray, negative: np.ndarray,
                     rounding: str, rng: np.random.Generator | None,
                     sr_bits: int | None) -> np.ndarray:
    """Whether to step the truncated magnitude ``n`` up by one quantum."""
    if rounding == "rne":
        return above | (tie & odd)
    if rounding == "rna":
        return above | tie
    if rounding == "rtz":
        return np.zeros_like(inexact)
    if rounding == "ru":
        return inexact & ~negative
    if rounding == "rd":
        return inexact & negative
    if rounding == "rto":
        return inexact & ~odd
    # stochastic: away from zero iff u < frac
    assert rng is not None
    if sr_bits is None:
        u = rng.random(frac.shape)
        return u < frac
    scale = float(2**sr_bits)
    u = rng.integers(0, 2**sr_bits, size=frac.shape) / scale
    return u < np.floor(frac * scale) / scale


def _check_sr(rounding: str, rng: object, sr_bits: object) -> np.random.Generator | None:
    check_rounding(rounding)
    if sr_bits is not None and (isinstance(sr_bits, bool) or not isinstance(sr_bits, int)
                                or not 1 <= sr_bits <= 52):
        raise ValueError(f"Got {sr_bits=}, but it must be None or an int in [1, 52]")
    return make_rng(rng) if rounding == "sr" else None


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
    st = np.zeros(y.shape) if sticky is None else np.broadcast_to(
        np.asarray(sticky, dtype=np.float64), y.shape)
    negative = np.signbit(y) | ((y == 0) & (st < 0))
    a = np.abs(y)
    sm = np.where(negative, -st, st)  # sign of |exact| - a
    isnan = np.isnan(y)
    isinf = np.isinf(y)
    finite = ~(isnan | isinf)
    a_f = np.where(finite, a, 0.0)

    if isinstance(fmt, IntFormat):
        qexp = np.full(y.shape, np.log2(fmt.quantum))
        t_parity_from_exponent = False
        emin = 0
        bias = 0
    else:
        t = fmt.trailing_bits
        emin = fmt.emin
        bias = fmt.bias
        _, ex = np.frexp(a_f)
        e = ex.astype(np.int64) - 1
        # exact value just below a power of two lies in the binade below
        pow2 = (a_f > 0) & (np.ldexp(1.0, e) == a_f) & (sm < 0)
        e = np.where(pow2, e - 1, e)
        e = np.where(a_f > 0, np.maximum(e, emin), emin)
        qexp = (e - t).astype(np.float64)
        t_parity_from_exponent = t == 0
    qe = qexp.astype(np.int64)
    m = np.ldexp(a_f, -qe)  # exact scaling: a / quantum
    n = np.floor(m)
    f = m - n
    # exact value a + sm*tiny relative to the grid
    below_at_point = (f == 0) & (sm < 0) & (a_f > 0)
    n = np.where(below_at_point, n - 1, n)
    inexact = (f != 0) | (sm != 0)
    tie = (f == 0.5) & (sm == 0)
    above = (f > 0.5) | ((f == 0.5) & (sm > 0)) | below_at_point
    frac = np.where(below_at_point, 1.0 - 2.0**-53, np.where((f == 0) & (sm > 0), 2.0**-60, f))
    if t_parity_from_exponent:
        # t = 0: the code of n*q has parity of its exponent field (n is 1 or 0)
        field = np.where(n > 0, qe + bias, 0)
        odd = (field & 1) == 1
    else:
        odd = np.fmod(n, 2) == 1
    up = _round_magnitude(n, frac, above, tie, inexact, odd, negative, rounding, gen, sr_bits)
    mag = np.ldexp(n + up, qe)

    out = np.empty(y.shape)
    if isinstance(fmt, IntFormat):
        top = fmt.qmax * fmt.quantum
        bottom = -fmt.qmin * fmt.quantum
        limit = np.where(negative, bottom, top)
        over = mag > limit
        mag = np.where(over, limit, mag)  # integers always saturate
        res = np.where(negative, -mag, mag)
        res = np.where(res == 0, 0.0, res)  # no negative zero in two's complement
        if np.any(isnan):
            if nan == "raise":
                raise ValueError(f"Got NaN in the input, but element format {fmt.name} has no NaN")
            res = np.where(isnan, 0.0, res)
        res = np.where(isinf, np.where(negative, -bottom, top), res)
        return res

    fmax = fmt.max
    if not fmt.subnormals:
        # no zero: positive values below the smallest normal go to it in every mode
        mag = np.where(finite & (mag < fmt.smallest_normal), fmt.smallest_normal, mag)
    over = mag > fmax
    if overflow == "saturate":
        mag = np.where(over, fmax, mag)
        res = np.where(negative, -mag, mag)
        res = np.where(isinf, np.where(negative, -fmax, fmax), res)
    else:
        toward = {"rtz": np.ones_like(over), "rd": ~negative, "ru": negative,
                  "rto": np.ones_like(over)}.get(rounding, np.zeros_like(over))
        away = np.inf if fmt.has_infinity else (np.nan if fmt.has_nan else fmax)
        big = np.where(toward, fmax, away)
        with np.errstate(invalid="ignore"):
            mag = np.where(over, big, mag)
            res = np.where(negative, -mag, mag)
        inf_val = np.inf if fmt.has_infinity else (np.nan if fmt.has_nan else fmax)
        res = np.where(isinf, np.where(negative, -inf_val, inf_val), res)
    if not fmt.has_negative_zero:
        res = np.where(res == 0, 0.0, res)
    if not fmt.signed:
        with np.errstate(invalid="ignore"):
            res = np.where(negative | (y == 0), np.nan, res)
    if np.any(isnan):
        if fmt.has_nan:
            res = np.where(isnan, np.nan, res)
        elif nan == "raise":
            raise ValueError(f"Got NaN in the input, but element format {fmt.name} has no NaN")
        else:
            res = np.where(isnan, 0.0, res)
    out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# codes of exactly representable values
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _magnitudes(fmt: Format) -> np.ndarray:
    """float64 values of magnitude codes ``0 .. max_finite_code`` (increasing)."""
    t = fmt.trailing_bits
    mags = np.arange(fmt.max_finite_code + 1, dtype=np.int64)
    field_e = mags >> t
    frac = (mags & ((1 << t) - 1)).astype(np.float64)
    if fmt.subnormals:
        sub = field_e == 0
        sig = np.where(sub, frac, frac + 2.0**t)
        exp = np.where(sub, fmt.emin, field_e - fmt.bias) - t
    else:
        sig = frac + 2.0**t
        exp = field_e - fmt.bias - t
    return np.ldexp(sig, exp.astype(np.int64))


_WIDE = {"binary32": (np.float32, np.uint32), "binary64": (np.float64, np.uint64)}


def encode_values(v: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """Codes of exactly representable float64 values ``v`` (NaN, +-inf, -0 allowed)."""
    v = np.asarray(v, dtype=np.float64)
    if isinstance(fmt, IntFormat):
        k = np.rint(v / fmt.quantum).astype(np.int64)
        return (k & ((1 << fmt.bits) - 1)).astype(np.uint8)
    if fmt.name in _WIDE:
        ft, ut = _WIDE[fmt.name]
        with np.errstate(over="ignore"):
            return v.astype(ft).view(ut)
    mags = _magnitudes(fmt)
    a = np.abs(v)
    with np.errstate(invalid="ignore"):
        mcode = np.searchsorted(mags, np.where(np.isfinite(a), a, 0.0)).astype(np.uint64)
    neg = np.signbit(v) & fmt.signed
    if not fmt.has_negative_zero:
        neg = neg & (a != 0)
    code = mcode | np.where(neg, np.uint64(fmt.sign_mask), np.uint64(0))
    if fmt.code_of_inf is not None:
        code = np.where(np.isinf(v), np.uint64(fmt.code_of_inf) |
                        np.where(neg, np.uint64(fmt.sign_mask), np.uint64(0)), code)
    if fmt.code_of_nan is not None:
        code = np.where(np.isnan(v), np.uint64(fmt.code_of_nan), code)
    return code.astype(fmt.code_dtype)


def decode_codes(codes: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """float64 values of codes (the inverse of :func:`encode_values`)."""
    codes = np.asarray(codes)
    if isinstance(fmt, IntFormat):
        k = codes.astype(np.int64) & ((1 << fmt.bits) - 1)
        k = np.where(k >= (1 << (fmt.bits - 1)), k - (1 << fmt.bits), k)
        return k * fmt.quantum
    if fmt.name in _WIDE:
        ft, ut = _WIDE[fmt.name]
        return codes.astype(ut).view(ft).astype(np.float64)
    return _decode_table(fmt)[codes]


@lru_cache(maxsize=None)
def _decode_table(fmt: Format) -> np.ndarray:
    codes = np.arange(fmt.num_codes, dtype=np.int64)
    mag = codes & fmt.magnitude_mask
    mags = _magnitudes(fmt)
    vals = mags[np.minimum(mag, fmt.max_finite_code)]
    vals = np.where(mag > fmt.max_finite_code, np.nan, vals)
    if fmt.infinity is not Infinity.NONE:
        vals = np.where(mag == fmt.code_of_inf, np.inf, vals)
    neg = (codes & fmt.sign_mask) != 0 if fmt.signed else np.zeros(codes.shape, bool)
    vals = np.where(neg, -vals, vals)
    if fmt.nan is NaNEncoding.NEGATIVE_ZERO:
        vals = np.where(codes == fmt.sign_mask, np.nan, vals)
    elif fmt.nan is NaNEncoding.TOP:
        vals = np.where(mag == fmt.magnitude_mask, np.nan, vals)
    return vals

"""numpy-``finfo``-style machine parameters for every format.

Every field is computed from the format's base fields with exact integer
arithmetic, using numpy's definitions (``numpy.finfo``):

``eps``          ``2**machep``: distance from 1 to the next larger value, ``2**-t`` (where
                 1 lies below the smallest normal, ``emin > 0`` in a custom format, the
                 spacing there, ``2**(emin - t)``, as :func:`numerics.ulp` of 1.0 gives)
``epsneg``       ``2**negep``: distance from 1 to the next smaller value (``2**-(t+1)``
                 when 1 is not the smallest normal; ``2**(emin - t)`` spacing when it is,
                 e.g. 0.125 for e2m3fn, or lies below it; 1 where that value is 0)
``max``, ``min`` largest finite value and its negative (for the unsigned e8m0fnu,
                 ``min`` is the smallest value, ``2**-127``, as in ml_dtypes)
``tiny``         ``smallest_normal``, ``2**emin``
``precision``    ``int(-log10(eps))`` decimal digits, and ``resolution = 10**-precision``
                 as a Python float (numpy rounds it to the dtype: float16's is
                 0.0010004, here 0.001)
``nexp``/``iexp`` exponent field width; ``nmant`` trailing significand width
``maxexp``       ``emax + 1``, the least power of two that overflows
``minexp``       ``emin``
``machep``, ``negep``  exponents of ``eps`` and ``epsneg``

ml_dtypes types several of these by hand and disagrees with the formula in
places (its ``precision`` is 1 for most 8-bit formats where ``int(-log10(eps))``
is 0, and its ``resolution`` is ``10**-precision`` rounded to the format);
those two fields follow numpy's formula here, unrounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numerics.dtypes import dtype_of
from numerics.formats import Format, as_format

__all__ = ["FInfo", "finfo"]


@dataclass(frozen=True)
class FInfo:
    """Machine parameters of a format (see the module docstring for definitions).

    Attributes
    ----------
    name : str
        Canonical name of the format.
    bits : int
        Width of a code in bits.
    eps, epsneg : float
        Distance from 1.0 to the next larger / smaller value (``2**machep``,
        ``2**negep``).
    max, min : float
        Largest finite value and ``-max`` (for an unsigned format ``min`` is the
        smallest positive value).
    tiny, smallest_normal : float
        Smallest positive normal value, ``2**emin``.
    smallest_subnormal : float
        Smallest positive value (``tiny`` when there are no subnormals).
    precision : int
        ``int(-log10(eps))`` decimal digits (0 where ``eps >= 1``).
    resolution : float
        ``10.0**-precision``, a Python float (not rounded to the format).
    nexp, iexp : int
        Exponent field width (``iexp`` is numpy's name).
    nmant : int
        Trailing significand field width.
    maxexp, minexp : int
        ``emax + 1`` (the least power of two that overflows) and ``emin``.
    machep, negep : int
        ``log2(eps)`` and ``log2(epsneg)``.
    dtype : numpy.dtype or None
        The numpy / ml_dtypes dtype of the format, None when neither has one.

    Examples
    --------
    >>> fi = finfo("e4m3fn")
    >>> fi.max, fi.min, fi.eps, fi.epsneg, fi.tiny, fi.smallest_subnormal
    (448.0, -448.0, 0.125, 0.0625, 0.015625, 0.001953125)
    >>> fi.maxexp, fi.minexp, fi.machep, fi.negep, fi.dtype
    (9, -6, -3, -4, dtype(float8_e4m3fn))
    """

    #: Canonical name of the format.
    name: str
    #: Width of a code in bits.
    bits: int
    #: Distance from 1.0 to the next larger value.
    eps: float
    #: Distance from 1.0 to the next smaller value.
    epsneg: float
    #: Largest finite value.
    max: float
    #: ``-max`` (the smallest positive value for unsigned formats).
    min: float
    #: Smallest positive normal value.
    tiny: float
    #: Same as ``tiny``.
    smallest_normal: float
    #: Smallest positive value (``tiny`` when there are no subnormals).
    smallest_subnormal: float
    #: Approximate number of exact decimal digits, ``int(-log10(eps))``.
    precision: int
    #: ``10**-precision``.
    resolution: float
    #: Exponent field width.
    nexp: int
    #: Trailing significand field width.
    nmant: int
    #: ``emax + 1``.
    maxexp: int
    #: ``emin``.
    minexp: int
    #: ``log2(eps)``.
    machep: int
    #: ``log2(epsneg)``.
    negep: int
    #: Exponent field width (numpy's name).
    iexp: int
    #: The numpy / ml_dtypes dtype of the format, None when neither has one.
    dtype: np.dtype | None


def finfo(fmt: Format | str) -> FInfo:
    """Machine parameters of ``fmt`` in the style of :class:`numpy.finfo`.

    Parameters
    ----------
    fmt : Format or str
        The format, or a name or alias of a registered one (anything
        :func:`numerics.as_format` takes).

    Returns
    -------
    FInfo
        The parameters, computed exactly from the format's base fields.

    Raises
    ------
    ValueError, TypeError
        As :func:`numerics.as_format` raises for an unknown or unsupported ``fmt``.

    Examples
    --------
    >>> finfo("binary16").precision, finfo("bf16").epsneg, finfo("tf32").dtype is None
    (3, 0.00390625, True)
    >>> finfo("e8m0fnu").min, finfo("e8m0fnu").eps
    (5.877471754111438e-39, 1.0)
    """
    fmt = as_format(fmt)
    t = fmt.trailing_bits
    # the spacing at 1.0: 2**-t where 1.0 is normal (every registered format); a custom
    # format with emin > 0 has 1.0 below its smallest normal, where the spacing is
    # 2**(emin - t).  The step below 1.0 is 2**-(t+1) inside the binade below, or the
    # subnormal quantum when 1 is the smallest normal or below it.
    machep = max(fmt.emin, 0) - t
    below = -1 if fmt.emin <= -1 else None
    if below is not None:
        negep = below - t
    elif fmt.subnormals and t > 0:  # the subnormal quantum, or 1 when it exceeds 1 (the
        negep = min(fmt.emin - t, 0)  # value below 1.0 is then 0)
    elif fmt.signed and not fmt.subnormals and fmt.emin == 0:
        negep = 1  # no zero: the value below 1.0 (the smallest normal) is -1.0
    else:  # 1.0 is the smallest value (or the next value below is 0)
        negep = 0
    eps = math.ldexp(1.0, machep)
    precision = int(-math.log10(eps)) if eps < 1 else 0
    return FInfo(
        name=fmt.name,
        bits=fmt.bits,
        eps=eps,
        epsneg=math.ldexp(1.0, negep),
        max=fmt.max,
        min=-fmt.max if fmt.signed else fmt.smallest_subnormal,
        tiny=fmt.smallest_normal,
        smallest_normal=fmt.smallest_normal,
        smallest_subnormal=fmt.smallest_subnormal,
        precision=precision,
        resolution=10.0**-precision,
        nexp=fmt.exponent_bits,
        nmant=t,
        maxexp=fmt.emax + 1,
        minexp=fmt.emin,
        machep=machep,
        negep=negep,
        iexp=fmt.exponent_bits,
        dtype=dtype_of(fmt),
    )

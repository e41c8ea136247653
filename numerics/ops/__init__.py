"""Correctly rounded arithmetic in any registered format, with IEEE exception flags.

Every operation computes the exact result as an unevaluated float64 pair
``hi + lo`` (``hi`` the binary64 round-to-nearest-even of the exact value, ``lo``
the residual, or a value with the same sign that rounds identically) using
error-free transformations (:mod:`numerics.eft`), and then rounds it *once*
into the target format:

* ``add``/``sub``: TwoSum.  ``mul``: the product of two numbers of at most 26
  significant bits is exact in float64; wider formats use Dekker's TwoProd on
  the significands (scaled by ``frexp``, so nothing overflows or underflows).
* ``div``: ``q = fl(a / b)`` and the exact remainder ``r = a - q*b`` (TwoProd);
  ``lo = r / b`` carries the sign of the residual.  ``sqrt``: ``s = fl(sqrt(a))``
  and ``r = a - s*s``, ``lo = r / (2s)``.
* ``fma``: exact product, then an exact sum of three terms renormalised so
  that ``hi = RNE64(a*b + c)`` (:func:`numerics.eft.three_sum_rne`); terms more
  than 2**150 apart only contribute their sign (a "sticky" term), which changes
  no rounding.

Formats of at most 26 significant bits whose range is far inside binary64's
(every registered format but binary64) need no scaling.  binary64 itself works
on ``frexp`` significands and carries the exponent separately, so subnormal and
overflowing results are right in every mode.  The one rounding is
:mod:`numerics.kernels.rounding`'s (the step every kernel shares); results that
land in the format's normal range take the same decision on the bits of ``hi``
in a vectorized loop (stochastic rounding too; binary64 under round to nearest
even and the directed modes computes the pair unscaled there), and for
round-to-nearest-even ``+ - / sqrt`` with
``p <= 25`` without flags the residual is not even needed (Figueroa's theorem,
``53 >= 2p + 2``, ``proofs/double_rounding.md`` D1).  The loop runs on
:func:`numerics.threads.get_num_threads` threads; results never depend on the
count.

Operands are taken at their exact value and must be values of ``fmt``: floats,
integers of any width (``uint64`` included), ``longdouble`` (one that is not a
float64 value is a value of no format here, and is rejected, never rounded),
exact Python numbers, and arrays in the format's own numpy / ml_dtypes dtype
(taken as codes).  Any layout (strided, negative strides, big-endian, 0-d) and
up to 32 dimensions (as everywhere in :mod:`numerics`).

Flags follow IEEE 754-2019 section 7: ``inexact`` (the delivered result
differs from the exact one, overflow included), ``overflow`` (the result
rounded as if the exponent range were unbounded exceeds the largest finite
value in magnitude; raised also when ``overflow="saturate"`` clamps),
``underflow`` (tiny *and* inexact, the default exception handling), with
tininess detected ``"before"`` rounding (``0 < |exact| < 2**emin``) or
``"after"`` (``0 < |round(exact) with unbounded exponent| < 2**emin``),
``invalid`` (``inf - inf``, ``0 * inf``, ``0/0``, ``inf/inf``, ``sqrt(x < 0)``,
``fma(0, inf, c)`` even when ``c`` is NaN as in SoftFloat, and results a format
cannot hold at all: NaN from e8m0fnu for zero or negative values, and from a
signed format without subnormals, which has no zero, for an exact zero result, where
``encode`` of 0 gives ``2**emin``) and
``divide_by_zero`` (finite non-zero ``x / 0``).  Quiet NaN operands give NaN
without flags; a signalling NaN operand (a float whose quiet bit is clear, or a
code of a format with IEEE-style NaNs whose top trailing bit is clear, as
binary16 0x7C01 arriving through ``convert``) raises ``invalid`` and gives a
quiet NaN (IEEE 754-2019 7.2).  Every NaN result is the one quiet NaN
``0x7FF8000000000000``: the payloads, signs and byte order of NaN operands do
not reach results.

Conventions beyond IEEE: operations whose exact result is NaN in a format
without NaN (OCP fp6/fp4) raise ValueError naming the element; infinite
results follow ``encode``'s overflow rule (``"saturate"`` clamps infinite
results to +-max, formats without infinity give NaN under ``"ieee"``).  The flags
then name the event, not the delivery: ``x / 0`` raises ``divide_by_zero`` alone,
whether it delivers an infinity, NaN or +-max; converting an infinite operand into
a format without infinity raises ``invalid`` where it delivers NaN and nothing
where the rule clamps it to +-max (``"saturate"``, or a format without NaN such as
e2m1fn): nothing was rounded.  Under
``rounding="sr"`` tininess is always detected before rounding and overflow is
flagged when the exact value exceeds ``max`` and the stochastic choice (or the
magnitude) takes the result beyond it.  Stochastic rounding draws element ``i``'s
bits from ``(seed, i)`` (:func:`numerics.kernels.random.draw`, ``i`` the flat
C-order index of the result, the seed from :func:`numerics.rounding.sr_seed`: a
non-negative int modulo 2**64, one draw of a Generator, fresh entropy for None),
53 bits unless ``sr_bits`` says
fewer, so results are the same for every thread count and operand layout.

Examples
--------
>>> from numerics import ops
>>> float(ops.add(1.0, 2.0**-8, "bfloat16"))  # a tie: 1 + 2**-8 -> even, 1.0
1.0
>>> float(ops.add(1.0, 2.0**-8, "bfloat16", rounding="ru"))
1.0078125
>>> r, fl = ops.mul(240.0, 2.0, "e4m3fn", flags=True)  # 480 > 448: no inf, NaN
>>> float(r), bool(fl.overflow), bool(fl.inexact)
(nan, True, True)
>>> float(ops.fma(2.0**-30, 2.0**-30, 1.0, "binary64", rounding="ru"))  # 1 + 2**-60 up
1.0000000000000002
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Layout: this module holds the public API, Flags and the option checks;
# _operands.py takes operands in (exact values of the format, flat, one dtype);
# _driver.py calls the compiled loop numerics.kernels.ops.apply (special values,
# the exact pair, the one rounding and the flags, element by element).
from numerics.formats import Format, as_format
from numerics.ops._driver import FLAG_NAMES, check_values, run
from numerics.ops._operands import is_scalar, operands
from numerics.rounding import check_overflow, check_rng, check_rounding, check_sr_options

__all__ = ["TININESS", "Flags", "add", "convert", "div", "fma", "mul", "sqrt", "sub"]

#: Tininess detection choices (IEEE 754-2019 7.5).
TININESS: tuple[str, ...] = ("before", "after")


@dataclass(frozen=True)
class Flags:
    """IEEE 754-2019 exception flags, one boolean per result element."""

    #: The delivered result differs from the exact result.
    inexact: np.ndarray
    #: The result is tiny (per the tininess setting) and inexact.
    underflow: np.ndarray
    #: The result rounded with unbounded exponent exceeds the largest finite value.
    overflow: np.ndarray
    #: The operation has no meaningful result (NaN produced from non-NaN operands,
    #: an infinite operand converted to NaN in a format without infinity, or a
    #: signalling NaN operand); ``x / 0`` delivered as NaN raises ``divide_by_zero``.
    invalid: np.ndarray
    #: An exact infinite result from finite operands (``x / 0``).
    divide_by_zero: np.ndarray

    def any(self) -> dict[str, bool]:
        """Whether each flag is raised for some element."""
        return {name: bool(np.any(getattr(self, name))) for name in FLAG_NAMES}


def _check_options(rounding: str, overflow: object, tininess: object, sr_bits: object,
                   flags: object, rng: object) -> int | None:
    """Check the options; returns ``sr_bits`` as a Python int (or None)."""
    check_rounding(rounding)
    check_overflow(overflow)
    if not isinstance(tininess, str) or tininess not in TININESS:
        raise ValueError(f"Got tininess={tininess!r}, but the only valid values are "
                         "'before' and 'after'")
    bits = check_sr_options(rounding, sr_bits, top=53)
    if not isinstance(flags, (bool, np.bool_)):
        raise TypeError(f"Got flags={flags!r}, expected True or False")
    check_rng(rng)  # checked in every mode (used only by rounding="sr")
    return bits


def _result_dtype(dtype: Any, fmt: Format) -> np.dtype:
    """float64 by default; float32 when asked for a format whose values it holds."""
    if dtype is None:
        return np.dtype(np.float64)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"Got dtype={dtype!r}; expected numpy.float32 or numpy.float64") \
            from None
    if dt != np.float32 and dt != np.float64:
        raise ValueError(f"Got dtype={dtype!r}, but the only valid values are float32 and "
                         "float64")
    if dt == np.float32 and not fmt.float32_exact:
        raise ValueError(f"Got dtype=float32 for format {fmt.name}, whose values are not all "
                         "float32 values (it needs float64)")
    return dt


def _named_format(value: Any, name: str) -> Format:
    """``as_format(value)``, its errors prefixed with the argument's name."""
    try:
        return as_format(value)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{name}: {err}") from None


#: The ``src`` of :func:`_run` when the operands are values of the result's format.
_SAME = object()


def _run(op: str, xs: list[Any], names: list[str], fmt_in: Any, rounding: str,
         overflow: str, tininess: str, flags: bool, rng: Any, sr_bits: int | None,
         src: Any = _SAME, dtype: Any = None) -> Any:
    """Check the options and the operands (values of ``src``, default ``fmt``), run
    the kernel, and wrap the flags."""
    if src is _SAME:
        fmt = src_fmt = as_format(fmt_in)
    else:  # convert: name the argument at fault
        fmt, src_fmt = _named_format(fmt_in, "to_fmt"), _named_format(src, "from_fmt")
    sr_bits = _check_options(rounding, overflow, tininess, sr_bits, flags, rng)
    result_dtype = _result_dtype(dtype, fmt)
    flat, shape = operands(xs, names, src_fmt, check_values(src_fmt))
    res, fl = run(op, flat, names, shape, is_scalar(xs), fmt, src_fmt, rounding, overflow,
                  tininess, bool(flags), rng, sr_bits, result_dtype)
    return res if fl is None else (res, Flags(**fl))


# ----------------------------------------------------------------------------- public API
_DOC_OPTIONS = """
    fmt : Format or str
        The format of the operands and of the result: a name, a Format or a
        numpy / ml_dtypes dtype (:func:`numerics.formats.as_format`).
    rounding : {"rne", "rna", "rtz", "ru", "rd", "rto", "sr"}
        Rounding mode, as for :func:`numerics.encode`.
    overflow : {"ieee", "saturate"}
        Overflow rule, as for :func:`numerics.encode`.
    tininess : {"after", "before"}
        When underflow is detected (IEEE 754-2019 7.5).
    flags : bool
        Also return a :class:`Flags` of boolean arrays.
    rng : int, numpy.random.Generator or None
        Seed (a non-negative int, taken modulo 2**64) or generator for
        ``rounding="sr"``.
    sr_bits : int, optional
        Random bits per stochastic rounding (the rounding probability is
        truncated to ``sr_bits`` bits), an int in ``[1, 53]``; only with
        ``rounding="sr"`` (a ValueError with any other mode, as for ``encode``).
    dtype : numpy.float64 or numpy.float32, optional
        The result's dtype (default float64); float32 for a format whose values
        are all float32 values (``fmt.float32_exact``), which halves the memory
        written.

    Returns
    -------
    numpy.ndarray of float64 (or ``dtype``; a scalar of it), or (result, Flags)
        Exactly representable values of ``fmt``.

    Raises
    ------
    ValueError
        An operand that is not exactly representable in ``fmt`` (the message
        names the first one), a ragged nesting, shapes that do not broadcast,
        unknown options, or an invalid operation in a format without NaN.
    TypeError
        Booleans, complex numbers or text as operands; a format that is
        neither a name nor a Format; a bad ``rng`` or ``flags``.
"""


def add(a: Any, b: Any, fmt: Any, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None, dtype: Any = None) -> Any:
    """``a + b`` rounded once into ``fmt``.

    Parameters
    ----------
    a, b : array_like
        Operands, exactly representable in ``fmt``; broadcast like numpy.
    {options}
    Examples
    --------
    >>> float(add(448.0, 16.0, "e4m3fn", rounding="rtz"))
    448.0
    >>> float(add(1.0, -1.0, "binary32", rounding="rd"))  # exact zero sum: -0 under rd
    -0.0
    """
    return _run("add", [a, b], ["a", "b"], fmt, rounding, overflow, tininess, flags, rng,
                sr_bits, dtype=dtype)


def sub(a: Any, b: Any, fmt: Any, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None, dtype: Any = None) -> Any:
    """``a - b`` rounded once into ``fmt``.

    Parameters
    ----------
    a, b : array_like
        Operands, exactly representable in ``fmt``; broadcast like numpy.
    {options}
    Examples
    --------
    >>> float(sub(1.0, 2.0**-24, "binary32", rounding="rtz"))
    0.9999999403953552
    """
    return _run("sub", [a, b], ["a", "b"], fmt, rounding, overflow, tininess, flags, rng,
                sr_bits, dtype=dtype)


def mul(a: Any, b: Any, fmt: Any, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None, dtype: Any = None) -> Any:
    """``a * b`` rounded once into ``fmt``.

    Parameters
    ----------
    a, b : array_like
        Operands, exactly representable in ``fmt``; broadcast like numpy.
    {options}
    Examples
    --------
    >>> float(mul(1.5, 1.5, "e2m1fn"))  # 2.25 -> 2 (nearest)
    2.0
    """
    return _run("mul", [a, b], ["a", "b"], fmt, rounding, overflow, tininess, flags, rng,
                sr_bits, dtype=dtype)


def div(a: Any, b: Any, fmt: Any, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None, dtype: Any = None) -> Any:
    """``a / b`` rounded once into ``fmt``; ``x / 0`` is +-inf with ``divide_by_zero``.

    Parameters
    ----------
    a, b : array_like
        Operands, exactly representable in ``fmt``; broadcast like numpy.
    {options}
    Examples
    --------
    >>> float(div(1.0, 3.0, "bfloat16", rounding="ru"))
    0.333984375
    """
    return _run("div", [a, b], ["a", "b"], fmt, rounding, overflow, tininess, flags, rng,
                sr_bits, dtype=dtype)


def fma(a: Any, b: Any, c: Any, fmt: Any, *, rounding: str = "rne",
        overflow: str = "ieee", tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None, dtype: Any = None) -> Any:
    """``a * b + c`` with a single rounding into ``fmt``.

    Parameters
    ----------
    a, b, c : array_like
        Operands, exactly representable in ``fmt``; broadcast like numpy.
    {options}
    Examples
    --------
    >>> float(fma(1.0 + 2.0**-23, 1.0 - 2.0**-23, -1.0, "binary32"))  # -2**-46 exactly
    -1.4210854715202004e-14
    """
    return _run("fma", [a, b, c], ["a", "b", "c"], fmt, rounding, overflow, tininess, flags,
                rng, sr_bits, dtype=dtype)


def sqrt(a: Any, fmt: Any, *, rounding: str = "rne", overflow: str = "ieee",
         tininess: str = "after", flags: bool = False, rng: Any = None,
         sr_bits: int | None = None, dtype: Any = None) -> Any:
    """Square root rounded once into ``fmt``; ``sqrt(-0) = -0``, negative -> NaN, invalid.

    Parameters
    ----------
    a : array_like
        Operand, exactly representable in ``fmt``.
    {options}
    Examples
    --------
    >>> float(sqrt(2.0, "bfloat16"))
    1.4140625
    """
    return _run("sqrt", [a], ["a"], fmt, rounding, overflow, tininess, flags, rng, sr_bits,
                dtype=dtype)


def convert(x: Any, from_fmt: Any, to_fmt: Any, *, rounding: str = "rne",
            overflow: str = "ieee", tininess: str = "after", flags: bool = False,
            rng: Any = None, sr_bits: int | None = None, dtype: Any = None) -> Any:
    """Round values of ``from_fmt`` once into ``to_fmt`` (IEEE convertFormat).

    Parameters
    ----------
    x : array_like
        Values exactly representable in ``from_fmt``.
    from_fmt, to_fmt : Format or str
        Source and destination formats.
    {options}
    Examples
    --------
    >>> float(convert(65520.0, "binary32", "binary16"))  # beyond max + ulp/2: inf
    inf
    >>> float(convert(65519.0, "binary32", "binary16", rounding="rtz"))
    65504.0
    """
    return _run("convert", [x], ["x"], to_fmt, rounding, overflow, tininess, flags, rng,
                sr_bits, src=from_fmt, dtype=dtype)


for _f in (add, sub, mul, div, fma, sqrt, convert):
    _f.__doc__ = (_f.__doc__ or "").replace("    {options}\n", _DOC_OPTIONS.lstrip("\n")
                                            .replace("\n    Examples", "\n    Examples"))
del _f

"""Names and validation of the rounding and overflow rules shared by every module.

Rounding modes
--------------
``"rne"``  round to nearest, ties to even (IEEE roundTiesToEven)
``"rna"``  round to nearest, ties away from zero (IEEE roundTiesToAway)
``"rtz"``  round toward zero (IEEE roundTowardZero, "truncation")
``"ru"``   round toward +inf (IEEE roundTowardPositive)
``"rd"``   round toward -inf (IEEE roundTowardNegative)
``"rto"``  round to odd: truncate, then set the last bit if anything was lost
``"sr"``   stochastic: round away from zero with probability equal to the distance
           from the truncated value, in units of the quantum

Overflow rules
--------------
``"ieee"``      the IEEE 754 result for the rounding mode (inf, or the largest finite
                value for modes that round toward it); a format without inf gives NaN
                where IEEE gives inf, a format with neither saturates
``"saturate"``  clamp to +-max ("satfinite"); infinite inputs become +-max too
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = [
    "OVERFLOWS",
    "ROUNDINGS",
    "Overflow",
    "Rounding",
    "check_overflow",
    "check_rng",
    "check_rounding",
    "check_sr_bits",
    "check_sr_options",
    "make_rng",
    "sr_seed",
]

Rounding = Literal["rne", "rna", "rtz", "ru", "rd", "rto", "sr"]
Overflow = Literal["ieee", "saturate"]

#: Every rounding mode, deterministic ones first.
ROUNDINGS: tuple[str, ...] = ("rne", "rna", "rtz", "ru", "rd", "rto", "sr")
#: Every overflow rule.
OVERFLOWS: tuple[str, ...] = ("ieee", "saturate")


def check_rounding(rounding: object, *, name: str = "rounding") -> str:
    """Return ``rounding`` if it names a mode, else raise ValueError naming it."""
    if not isinstance(rounding, str) or rounding not in ROUNDINGS:
        raise ValueError(
            f"Got {name}={rounding!r}, but the only valid values are "
            + ", ".join(repr(r) for r in ROUNDINGS)
        )
    return str(rounding)


def check_overflow(overflow: object, *, name: str = "overflow") -> str:
    """Return ``overflow`` if it names a rule, else raise ValueError naming it."""
    if not isinstance(overflow, str) or overflow not in OVERFLOWS:
        raise ValueError(
            f"Got {name}={overflow!r}, but the only valid values are "
            + ", ".join(repr(r) for r in OVERFLOWS)
        )
    return str(overflow)


def check_sr_bits(sr_bits: object, *, top: int = 64) -> int | None:
    """``sr_bits`` as a Python int (a numpy integer would wrap in ``2**sr_bits``), or
    None; ValueError unless it is None or an int in ``[1, top]``.

    Examples
    --------
    >>> check_sr_bits(np.int64(8)), check_sr_bits(None)
    (8, None)
    >>> check_sr_bits(65)
    Traceback (most recent call last):
    ...
    ValueError: Got sr_bits=65, but it must be None or an int in [1, 64]
    """
    if sr_bits is None:
        return None
    if isinstance(sr_bits, (bool, np.bool_)) or not isinstance(sr_bits, (int, np.integer)) \
            or not 1 <= sr_bits <= top:
        raise ValueError(f"Got sr_bits={sr_bits!r}, but it must be None or an int in [1, {top}]")
    return int(sr_bits)


def check_sr_options(rounding: object, sr_bits: object, *, top: int = 64) -> int | None:
    """:func:`check_sr_bits`, and ValueError when ``sr_bits`` is given with a rounding
    other than ``"sr"`` (it would be ignored).

    Examples
    --------
    >>> check_sr_options("sr", 8), check_sr_options("rne", None)
    (8, None)
    >>> check_sr_options("rne", 8)
    Traceback (most recent call last):
    ...
    ValueError: Got sr_bits=8 with rounding='rne'; sr_bits only applies to rounding='sr'
    """
    bits = check_sr_bits(sr_bits, top=top)
    if bits is not None and rounding != "sr":
        raise ValueError(f"Got sr_bits={sr_bits!r} with rounding={rounding!r}; "
                         "sr_bits only applies to rounding='sr'")
    return bits


def _check_seed(rng: object) -> None:
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)) and rng < 0:
        raise ValueError(f"Got rng={rng!r}, but a seed must be a non-negative int")


def check_rng(rng: object) -> None:
    """Raise unless ``rng`` is None, a non-negative int seed or a numpy Generator (without
    drawing from it): the options check, in every rounding mode.

    Examples
    --------
    >>> check_rng(7), check_rng(None)
    (None, None)
    >>> check_rng("x")
    Traceback (most recent call last):
    ...
    TypeError: Got rng='x', expected None, a non-negative int seed or a numpy.random.Generator
    """
    if rng is None or isinstance(rng, np.random.Generator):
        return
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        _check_seed(rng)
        return
    raise TypeError(f"Got rng={rng!r}, expected None, a non-negative int seed or a "
                    "numpy.random.Generator")


def make_rng(rng: object) -> np.random.Generator:
    """A numpy Generator from ``None``, a non-negative int seed or a Generator."""
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        _check_seed(rng)
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(f"Got rng={rng!r}, expected None, an int seed or a numpy.random.Generator")


def sr_seed(rng: object) -> int:
    """The 64-bit seed of the stochastic-rounding stream (:mod:`numerics.kernels.random`).

    An int is used as it is (modulo ``2**64``); a Generator contributes one draw
    ``rng.integers(0, 2**64, dtype=np.uint64)``; ``None`` takes fresh entropy.

    Examples
    --------
    >>> sr_seed(7), sr_seed(2**64 + 7)
    (7, 7)
    >>> sr_seed(np.random.default_rng(0)) == sr_seed(np.random.default_rng(0))
    True
    """
    check_rng(rng)
    if rng is None:
        rng = np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 1 << 64, dtype=np.uint64))
    return int(rng) % (1 << 64)  # type: ignore[call-overload]

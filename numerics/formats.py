"""The format descriptor and the registry of named formats.

A :class:`Format` is described by a handful of base fields; every other
number (largest finite value, smallest subnormal, ``emin``, the code of NaN,
...) is derived from them and never typed in by hand.

Glossary (names follow IEEE 754-2019 where it has one):

``exponent_bits`` (w)
    Width of the biased exponent field.
``trailing_bits`` (t)
    Width of the trailing significand ("mantissa") field.
``precision`` (p)
    ``t + 1``: significant bits of a normal number, the implicit bit included.
``bias``
    A normal code with exponent field ``E`` has exponent ``E - bias``.
``emax``, ``emin``
    Exponents of the largest finite and of the smallest normal value.
``quantum``
    The weight ``2**(e - t)`` of the last significand bit of a number with
    exponent ``e``; ``ulp`` is the quantum of the number's binade.
"""

from __future__ import annotations

import difflib
import enum
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

__all__ = [
    "FORMATS",
    "Format",
    "Infinity",
    "NaNEncoding",
    "as_format",
    "dtype_of",
    "format_of_dtype",
    "get_format",
    "p3109",
]


class Infinity(enum.Enum):
    """Where a format keeps its infinities."""

    #: No infinities: overflow saturates or gives NaN.
    NONE = "none"
    #: IEEE 754: exponent field all ones, trailing field zero.
    IEEE = "ieee"
    #: The largest magnitude code (IEEE P3109 binary8 formats).
    TOP = "top"


class NaNEncoding(enum.Enum):
    """Which codes are NaN."""

    #: No NaN at all (OCP fp6/fp4): invalid results are an error.
    NONE = "none"
    #: IEEE 754: exponent field all ones, trailing field non-zero.
    IEEE = "ieee"
    #: Only the all-ones magnitude, either sign (OCP e4m3fn, e8m0fnu).
    TOP = "top"
    #: Only the code of "negative zero", ``0x80`` for 8 bits (FNUZ, P3109).
    NEGATIVE_ZERO = "negzero"


@dataclass(frozen=True, kw_only=True)
class Format:
    """A binary floating-point format, described by its base fields only.

    Parameters
    ----------
    name : str
        Canonical name, e.g. ``"e4m3fn"``.
    exponent_bits : int
        Width ``w`` of the exponent field, 1 to 11.
    trailing_bits : int
        Width ``t`` of the trailing significand field, 0 to 52.
    bias : int
        Exponent bias.
    signed : bool
        Whether the format has a sign bit.  An unsigned format is modelled as
        e8m0fnu is: it needs ``subnormals=False`` (no zero) and a NaN, which zero
        and negative inputs encode to.
    infinity : Infinity
        Where the infinities are, if any.
    nan : NaNEncoding
        Which codes are NaN, if any.
    subnormals : bool
        Whether exponent field 0 encodes zero and subnormals (IEEE style).
        When False (e8m0fnu), field 0 is an ordinary exponent and the format
        has no zero: magnitude code 0 is ``2**emin``, with either sign in a signed
        format; zero and values below ``2**emin`` round to it.
    aliases : tuple of str
        Other names under which :func:`get_format` finds the format.

    Examples
    --------
    >>> e5m2 = get_format("e5m2")
    >>> e5m2.max, e5m2.smallest_normal, e5m2.smallest_subnormal
    (57344.0, 6.103515625e-05, 1.52587890625e-05)
    >>> Format(name="e3m3", exponent_bits=3, trailing_bits=3, bias=3).max
    15.0
    """

    #: Canonical name.
    name: str
    #: Width of the biased exponent field.
    exponent_bits: int
    #: Width of the trailing significand field.
    trailing_bits: int
    #: Exponent bias: a normal code's exponent is its field minus ``bias``.
    bias: int
    #: Whether the format has a sign bit (e8m0fnu has none).
    signed: bool = True
    #: Where the infinities are, if anywhere.
    infinity: Infinity = Infinity.IEEE
    #: Which codes are NaN, if any.
    nan: NaNEncoding = NaNEncoding.IEEE
    #: Exponent field 0 holds zero and subnormals; False means no zero at all.
    subnormals: bool = True
    #: Alternative names accepted by :func:`get_format`.
    aliases: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Got name={self.name!r}, but a format needs a non-empty name")
        for attr, lo, hi in (("exponent_bits", 1, 11), ("trailing_bits", 0, 52)):
            value = getattr(self, attr)
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise ValueError(f"Got {attr}={value!r}, but it must be an int in [{lo}, {hi}]")
        if not isinstance(self.bias, int) or isinstance(self.bias, bool):
            raise TypeError(f"Got bias={self.bias!r}, but it must be an int")
        for attr in ("signed", "subnormals"):
            value = getattr(self, attr)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"Got {attr}={value!r}, but it must be True or False")
            object.__setattr__(self, attr, bool(value))  # (a numpy bool as a bool)
        if not isinstance(self.infinity, Infinity):
            raise TypeError(f"Got infinity={self.infinity!r}, expected an Infinity member")
        if not isinstance(self.nan, NaNEncoding):
            raise TypeError(f"Got nan={self.nan!r}, expected a NaNEncoding member")
        if self.nan is NaNEncoding.NEGATIVE_ZERO and not self.signed:
            raise ValueError("Got nan=NEGATIVE_ZERO on an unsigned format, which has no sign bit")
        if self.nan is NaNEncoding.NEGATIVE_ZERO and not self.subnormals:
            raise ValueError("Got nan=NEGATIVE_ZERO with subnormals=False: without zero, the "
                             "code of -0 is -2**emin, a number")
        if not self.signed and (self.subnormals or self.nan is NaNEncoding.NONE):
            # encode sends zero and negative inputs to NaN; an unsigned format with a zero
            # (or without NaN) would need other rules, which nothing here models
            raise ValueError(
                f"Got signed=False with subnormals={self.subnormals!r} and nan={self.nan!r}: "
                "an unsigned format is modelled as e8m0fnu is (subnormals=False, so no "
                "zero, and a NaN that zero and negative inputs encode to)")
        if self.infinity is Infinity.IEEE and self.nan not in (NaNEncoding.IEEE,):
            raise ValueError("IEEE-placed infinities need IEEE-placed NaNs (nan=NaNEncoding.IEEE)")
        if self.nan is NaNEncoding.IEEE and self.trailing_bits == 0:
            raise ValueError("Got nan=NaNEncoding.IEEE with trailing_bits=0: IEEE NaNs need a "
                             "non-zero trailing field beside the infinities")
        if self.nan is NaNEncoding.IEEE and self.infinity is not Infinity.IEEE:
            raise ValueError(
                "IEEE-placed NaNs need IEEE-placed infinities (infinity=Infinity.IEEE)")
        if self.infinity is Infinity.TOP and self.nan is NaNEncoding.TOP:
            raise ValueError("infinity=TOP and nan=TOP would claim the same code")
        if not isinstance(self.aliases, (tuple, list)) or not all(
                isinstance(a, str) and a for a in self.aliases):
            raise TypeError(f"Got aliases={self.aliases!r}, but it must be a tuple of "
                            "non-empty names (a str alone is one name: write (name,))")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        if self.max_finite_code < 1 and self.subnormals:  # (without, code 0 is 2**emin)
            raise ValueError(f"format {self.name!r} has no finite non-zero value")
        if self.emin > self.emax:
            raise ValueError(
                f"Got exponent_bits={self.exponent_bits}: format {self.name!r} would have no "
                "normal values (every exponent field above the subnormals holds infinities "
                "or NaNs)")
        # The emin bound keeps every finite value a normal or subnormal float64.
        if self.emax > 1023 or self.emin - self.trailing_bits < -1074:
            raise ValueError(
                f"Got bias={self.bias!r}: format {self.name!r} would have the exponent range "
                f"[{self.emin}, {self.emax}] and quantum 2**{self.emin - self.trailing_bits}, "
                "outside binary64's (exponents [-1022, 1023], quantum down to 2**-1074)"
            )

    def __hash__(self) -> int:
        # computed once: every kernel call looks its format up in caches keyed by it
        h: int | None = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.name, self.exponent_bits, self.trailing_bits, self.bias,
                      self.signed, self.infinity, self.nan, self.subnormals))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict[str, Any]:
        # (a str hash differs between processes: a pickled format must not carry it)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    # ------------------------------------------------------------------ widths
    @property
    def bits(self) -> int:
        """Total width of a code in bits."""
        return int(self.signed) + self.exponent_bits + self.trailing_bits

    @property
    def precision(self) -> int:
        """Significant bits ``p = t + 1`` of a normal number."""
        return self.trailing_bits + 1

    @property
    def num_codes(self) -> int:
        """Number of distinct codes, ``2**bits``."""
        return 1 << self.bits

    @cached_property
    def float32_exact(self) -> bool:
        """Whether every value of the format is a float32 value (so float32 can hold
        decoded values and results exactly).

        Examples
        --------
        >>> get_format("bfloat16").float32_exact, get_format("binary64").float32_exact
        (True, False)
        """
        return self.precision <= 24 and self.emax <= 127 \
            and self.emin - self.trailing_bits >= -149 \
            and self.emin >= -126 - (23 - self.trailing_bits)

    @cached_property
    def code_dtype(self) -> np.dtype:
        """Smallest unsigned numpy dtype that holds a code."""
        for width, dtype in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
            if self.bits <= width:
                return np.dtype(dtype)
        return np.dtype(np.uint64)

    @property
    def sign_mask(self) -> int:
        """The sign bit of a code (0 for unsigned formats)."""
        return (1 << (self.bits - 1)) if self.signed else 0

    @property
    def magnitude_mask(self) -> int:
        """All bits of a code but the sign."""
        return (1 << (self.exponent_bits + self.trailing_bits)) - 1

    # ------------------------------------------------------------------ special codes
    @property
    def has_infinity(self) -> bool:
        """Whether the format has infinities."""
        return self.infinity is not Infinity.NONE

    @property
    def has_nan(self) -> bool:
        """Whether the format has a NaN."""
        return self.nan is not NaNEncoding.NONE

    @property
    def has_zero(self) -> bool:
        """Whether zero is representable (False only without subnormals)."""
        return self.subnormals

    @property
    def has_negative_zero(self) -> bool:
        """Whether ``-0`` has its own code."""
        return self.signed and self.subnormals and self.nan is not NaNEncoding.NEGATIVE_ZERO

    @property
    def max_finite_code(self) -> int:
        """Magnitude code of the largest finite value."""
        top = self.magnitude_mask
        if self.infinity is Infinity.IEEE:
            return top - (1 << self.trailing_bits)  # exponent field all ones is special
        if self.infinity is Infinity.TOP or self.nan is NaNEncoding.TOP:
            return top - 1
        return top

    @property
    def code_of_inf(self) -> int | None:
        """Code of ``+inf`` (``None`` without infinities)."""
        if self.infinity is Infinity.IEEE:
            return self.magnitude_mask - ((1 << self.trailing_bits) - 1)
        if self.infinity is Infinity.TOP:
            return self.magnitude_mask
        return None

    @property
    def code_of_nan(self) -> int | None:
        """Canonical code of a (positive, quiet) NaN; ``None`` without NaN."""
        if self.nan is NaNEncoding.IEEE:
            quiet = 1 << (self.trailing_bits - 1) if self.trailing_bits else 0
            return self.magnitude_mask - ((1 << self.trailing_bits) - 1) + quiet
        if self.nan is NaNEncoding.TOP:
            return self.magnitude_mask
        if self.nan is NaNEncoding.NEGATIVE_ZERO:
            return self.sign_mask
        return None

    def is_nan_code(self, code: int) -> bool:
        """Whether ``code`` (an int) encodes NaN."""
        mag = code & self.magnitude_mask
        if self.nan is NaNEncoding.IEEE:
            return mag > self.code_of_inf  # type: ignore[operator]
        if self.nan is NaNEncoding.TOP:
            return mag == self.magnitude_mask
        if self.nan is NaNEncoding.NEGATIVE_ZERO:
            return code == self.sign_mask
        return False

    def is_inf_code(self, code: int) -> bool:
        """Whether ``code`` (an int) encodes an infinity."""
        return self.has_infinity and (code & self.magnitude_mask) == self.code_of_inf

    # ------------------------------------------------------------------ exponents and values
    @property
    def emin(self) -> int:
        """Exponent of the smallest normal value."""
        return (1 if self.subnormals else 0) - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite value."""
        return (self.max_finite_code >> self.trailing_bits) - self.bias

    def magnitude_value(self, mag: int) -> Fraction:
        """Exact value of a finite magnitude code (no sign), as a Fraction."""
        t = self.trailing_bits
        field_e, frac = mag >> t, mag & ((1 << t) - 1)
        if self.subnormals and field_e == 0:
            sig, exp = frac, self.emin - t
        else:
            sig, exp = (1 << t) | frac, field_e - self.bias - t
        return Fraction(sig) * Fraction(2) ** exp

    @cached_property
    def max_exact(self) -> Fraction:
        """Largest finite value, exactly."""
        return self.magnitude_value(self.max_finite_code)

    @property
    def max(self) -> float:
        """Largest finite value."""
        return float(self.max_exact)

    @property
    def smallest_normal(self) -> float:
        """Smallest positive normal value, ``2**emin``."""
        return 2.0**self.emin

    @property
    def smallest_subnormal(self) -> float:
        """Smallest positive value (the smallest normal when there are no subnormals)."""
        if not self.subnormals or self.trailing_bits == 0:
            return 2.0**self.emin
        return 2.0 ** (self.emin - self.trailing_bits)

    @property
    def eps(self) -> float:
        """Distance from 1 to the next larger value: ``2**-t``, or ``2**(emin - t)`` where
        1.0 lies below the smallest normal (``emin > 0``), as :func:`numerics.finfo` has
        it."""
        return 2.0 ** (max(self.emin, 0) - self.trailing_bits)

    @property
    def unit_roundoff(self) -> float:
        """``u = 2**-p``: the relative error bound of round-to-nearest."""
        return 2.0**-self.precision

    def __str__(self) -> str:
        return self.name


def _fmt(name: str, w: int, t: int, bias: int | None = None, *, aliases: tuple[str, ...] = (),
         inf: Infinity = Infinity.IEEE, nan: NaNEncoding = NaNEncoding.IEEE,
         signed: bool = True, subnormals: bool = True) -> Format:
    return Format(name=name, exponent_bits=w, trailing_bits=t,
                  bias=(1 << (w - 1)) - 1 if bias is None else bias,
                  signed=signed, infinity=inf, nan=nan, subnormals=subnormals, aliases=aliases)


_FN: dict[str, Any] = {"inf": Infinity.NONE, "nan": NaNEncoding.TOP}
_FNUZ: dict[str, Any] = {"inf": Infinity.NONE, "nan": NaNEncoding.NEGATIVE_ZERO}
_FINITE: dict[str, Any] = {"inf": Infinity.NONE, "nan": NaNEncoding.NONE}

_REGISTRY: tuple[Format, ...] = (
    _fmt("binary64", 11, 52, aliases=("float64", "fp64", "double", "f64")),
    _fmt("binary32", 8, 23, aliases=("float32", "fp32", "single", "f32")),
    _fmt("binary16", 5, 10, aliases=("float16", "fp16", "half", "f16")),
    _fmt("bfloat16", 8, 7, aliases=("bf16",)),
    _fmt("tf32", 8, 10, aliases=("tensorfloat32",)),
    _fmt("e5m2", 5, 2, aliases=("float8_e5m2", "fp8_e5m2")),
    _fmt("e4m3", 4, 3, aliases=("float8_e4m3",)),
    _fmt("e3m4", 3, 4, aliases=("float8_e3m4",)),
    _fmt("e4m3fn", 4, 3, aliases=("float8_e4m3fn", "fp8_e4m3", "fp8_e4m3fn"), **_FN),
    _fmt("e4m3fnuz", 4, 3, 8, aliases=("float8_e4m3fnuz",), **_FNUZ),
    _fmt("e5m2fnuz", 5, 2, 16, aliases=("float8_e5m2fnuz",), **_FNUZ),
    _fmt("e4m3b11fnuz", 4, 3, 11, aliases=("float8_e4m3b11fnuz",), **_FNUZ),
    _fmt("e8m0fnu", 8, 0, 127, aliases=("float8_e8m0fnu", "e8m0"), inf=Infinity.NONE,
         nan=NaNEncoding.TOP, signed=False, subnormals=False),
    _fmt("e2m3fn", 2, 3, aliases=("float6_e2m3fn", "fp6_e2m3"), **_FINITE),
    _fmt("e3m2fn", 3, 2, aliases=("float6_e3m2fn", "fp6_e3m2"), **_FINITE),
    _fmt("e2m1fn", 2, 1, aliases=("float4_e2m1fn", "fp4_e2m1", "fp4"), **_FINITE),
    # IEEE P3109 binary8pK, signed and extended: bias 2**(w-1), 0x80 NaN, 0x7F/0xFF +-inf,
    # no negative zero (P3109 interim report; gfloat.format_info_p3109(8, K)).
    *(_fmt(f"binary8p{p}", 8 - p, p - 1, 1 << (7 - p), aliases=(f"p3109_k8p{p}se",),
           inf=Infinity.TOP, nan=NaNEncoding.NEGATIVE_ZERO) for p in range(1, 8)),
)

#: Canonical names of every registered format.
FORMATS: tuple[str, ...] = tuple(f.name for f in _REGISTRY)

_BY_NAME: dict[str, Format] = {}
for _f in _REGISTRY:
    for _n in (_f.name, *_f.aliases):
        _BY_NAME[_n.lower()] = _f


#: A P3109 family name: ``binary{K}p{P}`` with ``se``/``sf`` (P3109's value tables) or
#: none (extended), or ``p3109_k{K}p{P}`` with signedness and domain (gfloat's names).
_P3109_NAME = re.compile(r"(?:binary(\d+)p(\d+)([su][ef])?|p3109_k(\d+)p(\d+)([su][ef]))")


def p3109(k: int, p: int, *, domain: str = "extended") -> Format:
    """The signed IEEE P3109 format of ``k`` bits and precision ``p``.

    P3109's signed formats (interim report v3; gfloat's ``format_info_p3109``) have
    ``k - p`` exponent bits, bias ``2**(k - p - 1)``, subnormals, one zero, and one NaN
    at the code of -0 (``0x80`` for ``k = 8``); the extended domain puts +-inf at the
    largest magnitude code, the finite domain a number there.  ``binary8p1`` to
    ``binary8p7`` are the registered extended formats of 8 bits; :func:`get_format` builds
    the others from their names (``binary8p4sf``, ``binary10p3``, ``p3109_k6p3sf``).
    P3109's unsigned formats, which have a zero and no sign bit, are not modelled.

    Parameters
    ----------
    k : int
        Width in bits, at least 2.
    p : int
        Precision in bits (the trailing field has ``p - 1``), 1 to ``k - 1``.
    domain : {"extended", "finite"}
        With infinities, or with a finite number at the top code.

    Returns
    -------
    Format
        The format, named ``binary{k}p{p}`` (extended) or ``binary{k}p{p}sf`` (finite);
        the same object on every call.

    Raises
    ------
    ValueError
        For widths and precisions outside those ranges, or ones whose exponents
        binary64 cannot hold.

    Examples
    --------
    >>> f = p3109(8, 3, domain="finite")
    >>> f.name, f.max, f.bias, p3109(8, 3) is get_format("p3109_k8p3se")
    ('binary8p3sf', 57344.0, 16, True)
    """
    for arg, value in (("k", k), ("p", p)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
            raise TypeError(f"Got {arg}={value!r}, but it must be an int")
    k, p = int(k), int(p)
    if domain not in ("extended", "finite"):
        raise ValueError(f"Got domain={domain!r}, but it must be 'extended' or 'finite'")
    if k < 2 or not 1 <= p <= k - 1:
        raise ValueError(f"Got k={k}, p={p}: a signed P3109 format has k >= 2 bits and a "
                         "precision p from 1 to k - 1 (one bit is the sign)")
    return _p3109(k, p, domain == "extended")


@lru_cache(maxsize=None)
def _p3109(k: int, p: int, extended: bool) -> Format:
    if k == 8 and extended:
        return _BY_NAME[f"binary8p{p}"]
    name = f"binary{k}p{p}" + ("" if extended else "sf")
    gf = "p3109_k{}p{}s{}".format(k, p, "e" if extended else "f")
    aliases = (gf, f"binary{k}p{p}s{'e' if extended else 'f'}") if extended else (gf,)
    try:
        return Format(name=name, exponent_bits=k - p, trailing_bits=p - 1,
                      bias=1 << (k - p - 1), signed=True,
                      infinity=Infinity.TOP if extended else Infinity.NONE,
                      nan=NaNEncoding.NEGATIVE_ZERO, aliases=aliases)
    except ValueError as err:
        raise ValueError(f"Got k={k}, p={p}: P3109 format {name} cannot be modelled here "
                         f"({err})") from None


def _p3109_by_name(name: str) -> Format | None:
    """The P3109 format a family name names (:data:`_P3109_NAME`), or None."""
    m = _P3109_NAME.fullmatch(name)
    if m is None:
        return None
    k, p, kind = (m[1], m[2], m[3] or "se") if m[1] else (m[4], m[5], m[6])
    if kind[0] == "u":
        raise ValueError("Got an unsigned P3109 format, which is not modelled: formats "
                         "with a zero and no sign bit are not (the signed P3109 formats are, "
                         "and Format(signed=False) as e8m0fnu is)")
    return p3109(int(k), int(p), domain="extended" if kind[1] == "e" else "finite")


def get_format(name: str, *, arg: str = "format") -> Format:
    """Return the registered format called ``name`` (canonical or alias).

    ``arg`` is the name of the caller's argument that the errors name.

    Parameters
    ----------
    name : str
        A canonical name or alias, matched case-insensitively.
    arg : str, default "format"
        The caller's argument name, quoted in the error messages.

    Returns
    -------
    Format
        The registered format (the same object on every call).

    Raises
    ------
    TypeError
        If ``name`` is not a str.
    ValueError
        If no format has that name; the message lists the close matches.

    Examples
    --------
    >>> get_format("float8_e4m3fn").name
    'e4m3fn'
    >>> get_format("bf16").precision
    8
    """
    if not isinstance(name, str):
        raise TypeError(f"Got {arg}={name!r}, expected a format name (a str)")
    try:
        return _BY_NAME[name.lower()]
    except KeyError:
        try:
            found = _p3109_by_name(name.lower())
        except ValueError as err:
            raise ValueError(f"Got {arg}={name!r}: {str(err).removeprefix('Got ')}") from None
        if found is not None:
            return found
        close = difflib.get_close_matches(name.lower(), _BY_NAME, n=4, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(
            f"Got {arg}={name!r}, which is not a known format{hint} "
            f"(numerics.FORMATS lists all {len(FORMATS)})"
        ) from None


def as_format(fmt: Any, *, arg: str = "fmt") -> Format:
    """The :class:`Format` a format argument names.

    Accepts a :class:`Format`, a name or alias, a numpy / ml_dtypes dtype (or scalar
    type) of a registered format, including big-endian ones, and a torch dtype.  ``arg``
    is the name of the caller's argument that the errors name.

    Parameters
    ----------
    fmt : Format, str, numpy/ml_dtypes dtype or scalar type, or torch dtype
        The format argument; a :class:`Format` is returned as it is.
    arg : str, default "fmt"
        The caller's argument name, quoted in the error messages.

    Returns
    -------
    Format
        The format ``fmt`` names.

    Raises
    ------
    TypeError
        For anything else (the message names the value).
    ValueError
        For an unknown name, or a numpy or torch dtype with no registered format.

    Examples
    --------
    >>> as_format("bf16").name, as_format(np.float16).name, as_format(np.dtype(">f4")).name
    ('bfloat16', 'binary16', 'binary32')
    """
    if isinstance(fmt, Format):
        return fmt
    if isinstance(fmt, str):
        return get_format(fmt, arg=arg)
    found = _format_of_dtype_like(fmt, arg)
    if found is not None:
        return found
    raise TypeError(f"Got {arg}={fmt!r}, expected a numerics.Format, a format name, or the "
                    "numpy, ml_dtypes or torch dtype of a registered format")


def _format_of_dtype_like(fmt: Any, arg: str) -> Format | None:
    if type(fmt).__module__.split(".")[0] == "torch":
        name = str(fmt)
        if name.startswith("torch."):
            try:
                return get_format(name[len("torch."):])
            except ValueError:
                raise ValueError(f"Got {arg}={fmt!r}, a torch dtype with no registered "
                                 "format") from None
        return None
    if isinstance(fmt, np.dtype) or (isinstance(fmt, type) and issubclass(fmt, np.generic)):
        found = format_of_dtype(fmt)
        if found is None:
            raise ValueError(f"Got {arg}={fmt!r}, a dtype with no registered format")
        return found
    return None


# ---------------------------------------------------------------- numpy dtypes
# ml_dtypes is imported on first need, not with this module: importing it costs most of
# a second, and a numpy dtype never needs it.  An ml_dtypes dtype can only exist once
# ml_dtypes is imported, so format_of_dtype of any other dtype is answered from the
# numpy table alone (and of a dtype name such as "bfloat16", which numpy learns from
# ml_dtypes, after importing it).

#: Formats stored natively by numpy.
_NUMPY_NAMES: dict[str, type[np.generic]] = {
    "binary64": np.float64,
    "binary32": np.float32,
    "binary16": np.float16,
}
#: Formats stored natively by ml_dtypes: format name -> ml_dtypes type name.
_ML_DTYPES_NAMES: dict[str, str] = {
    "bfloat16": "bfloat16",
    "e5m2": "float8_e5m2",
    "e4m3": "float8_e4m3",
    "e3m4": "float8_e3m4",
    "e4m3fn": "float8_e4m3fn",
    "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
    "e4m3b11fnuz": "float8_e4m3b11fnuz",
    "e8m0fnu": "float8_e8m0fnu",
    "e2m3fn": "float6_e2m3fn",
    "e3m2fn": "float6_e3m2fn",
    "e2m1fn": "float4_e2m1fn",
}

_BY_DTYPE: dict[np.dtype, str] = {np.dtype(scalar): name for name, scalar in _NUMPY_NAMES.items()}
_ml_dtypes_added = False


def _add_ml_dtypes() -> None:
    """Import ml_dtypes and add its dtypes to ``_BY_DTYPE`` (once)."""
    global _ml_dtypes_added
    if not _ml_dtypes_added:
        import ml_dtypes

        for name, type_name in _ML_DTYPES_NAMES.items():
            _BY_DTYPE[np.dtype(getattr(ml_dtypes, type_name))] = name
        _ml_dtypes_added = True


def dtype_of(fmt: Format | str) -> np.dtype | None:
    """The numpy dtype storing ``fmt`` natively (``None`` for tf32, P3109, custom formats).

    Parameters
    ----------
    fmt : Format or str
        The format (anything :func:`as_format` takes).  A :class:`Format` that is not
        equal to the registered format of its name has no dtype.

    Returns
    -------
    numpy.dtype or None
        The native-byte-order numpy or ml_dtypes dtype (ml_dtypes imported on first
        need), or None when neither stores the format.

    Examples
    --------
    >>> dtype_of("bf16")
    dtype(bfloat16)
    >>> dtype_of("tf32") is None
    True
    """
    return _native_dtype(as_format(fmt))


@lru_cache(maxsize=64)
def _native_dtype(fmt: Format) -> np.dtype | None:
    """:func:`dtype_of` for a :class:`Format` (cached: every kernel call asks)."""
    try:
        registered = get_format(fmt.name)
    except ValueError:
        return None
    if registered != fmt:
        return None
    if fmt.name in _NUMPY_NAMES:
        return np.dtype(_NUMPY_NAMES[fmt.name])
    type_name = _ML_DTYPES_NAMES.get(fmt.name)
    if type_name is None:
        return None
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, type_name))


def format_of_dtype(dtype: object) -> Format | None:
    """The registered format of a numpy / ml_dtypes floating dtype, else ``None``.

    Parameters
    ----------
    dtype : object
        A numpy or ml_dtypes dtype, scalar type or dtype name (anything ``numpy.dtype``
        takes, e.g. ``"bfloat16"``), in either byte order.

    Returns
    -------
    Format or None
        The registered format stored by that dtype; None for ``None``, for anything
        ``numpy.dtype`` rejects and for dtypes of no registered format (integers,
        longdouble, ...).

    Examples
    --------
    >>> format_of_dtype(np.float16).name, format_of_dtype(np.dtype(">f4")).name
    ('binary16', 'binary32')
    """
    if isinstance(dtype, np.dtype) and _ml_dtypes_added:
        return _format_of_native(dtype)
    if dtype is None:  # (np.dtype(None) is float64)
        return None
    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        if not isinstance(dtype, str) or _ml_dtypes_added:
            return None
        _add_ml_dtypes()  # numpy knows names such as "bfloat16" once ml_dtypes is imported
        try:
            dt = np.dtype(dtype)
        except TypeError:
            return None
    if not _ml_dtypes_added and dt.type.__module__.partition(".")[0] == "ml_dtypes":
        _add_ml_dtypes()  # a dtype of ml_dtypes' (so ml_dtypes is imported already)
    if dt.byteorder == ">" or (dt.byteorder == "<" and not np.little_endian):
        dt = dt.newbyteorder("=")  # the same format in the other byte order
    name = _BY_DTYPE.get(dt)
    return None if name is None else get_format(name)


@lru_cache(maxsize=64)
def _format_of_native(dt: np.dtype) -> Format | None:
    """:func:`format_of_dtype` for a numpy dtype once ml_dtypes' are known (cached)."""
    if dt.byteorder == ">" or (dt.byteorder == "<" and not np.little_endian):
        dt = dt.newbyteorder("=")
    name = _BY_DTYPE.get(dt)
    return None if name is None else get_format(name)

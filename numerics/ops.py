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
(every registered format but binary64) need no scaling: the pair is rounded by
:func:`numerics.fast.encode_pair`.  binary64 itself is rounded here from the
scaled pair ``(hi + lo) * 2**K`` so that subnormal and overflowing results are
right in every mode (directed rounding included).

Round-to-nearest-even fast path: for ``+ - * / sqrt`` with precision
``p <= 25`` Figueroa's theorem (``53 >= 2p + 2``, see
``proofs/double_rounding.md``) makes ``RNE_p(RNE_53(x))`` equal to
``RNE_p(x)``, so binary32 results come from numpy's float32 cast of the
float64 result.

Flags follow IEEE 754-2019 section 7: ``inexact`` (the delivered result
differs from the exact one, overflow included), ``overflow`` (the result
rounded as if the exponent range were unbounded exceeds the largest finite
value in magnitude; raised also when ``overflow="saturate"`` clamps),
``underflow`` (tiny *and* inexact, the default exception handling), with
tininess detected ``"before"`` rounding (``0 < |exact| < 2**emin``) or
``"after"`` (``0 < |round(exact) with unbounded exponent| < 2**emin``),
``invalid`` (``inf - inf``, ``0 * inf``, ``0/0``, ``inf/inf``, ``sqrt(x < 0)``,
``fma(0, inf, c)`` even when ``c`` is NaN as in SoftFloat, and results a format
cannot hold at all: NaN from e8m0fnu for zero or negative values) and
``divide_by_zero`` (finite non-zero ``x / 0``).  Quiet NaN operands propagate
without flags.

Conventions beyond IEEE: operations whose exact result is NaN in a format
without NaN (OCP fp6/fp4) raise ValueError naming the element; infinite
results follow ``encode``'s overflow rule (``"saturate"`` clamps infinite
results to +-max, formats without infinity give NaN under ``"ieee"``).  Under
``rounding="sr"`` tininess is always detected before rounding and overflow is
flagged when the exact value exceeds ``max`` and the stochastic choice (or the
magnitude) takes the result beyond it.

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

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from numerics import eft
from numerics.dtypes import dtype_of, format_of_dtype
from numerics.fast import decode_codes, decode_table, encode_f64, encode_pair
from numerics.formats import Format, Infinity, as_format
from numerics.rounding import check_overflow, check_rounding, make_rng

__all__ = ["TININESS", "Flags", "add", "convert", "div", "fma", "mul", "sqrt", "sub"]

#: Tininess detection choices (IEEE 754-2019 7.5).
TININESS: tuple[str, ...] = ("before", "after")

_BINARY32 = as_format("binary32")


@dataclass(frozen=True)
class Flags:
    """IEEE 754-2019 exception flags, one boolean per result element."""

    #: The delivered result differs from the exact result.
    inexact: np.ndarray
    #: The result is tiny (per the tininess setting) and inexact.
    underflow: np.ndarray
    #: The result rounded with unbounded exponent exceeds the largest finite value.
    overflow: np.ndarray
    #: The operation has no meaningful result (NaN produced from non-NaN operands).
    invalid: np.ndarray
    #: An exact infinite result from finite operands (``x / 0``).
    divide_by_zero: np.ndarray

    def any(self) -> dict[str, bool]:
        """Whether each flag is raised for some element."""
        return {name: bool(np.any(getattr(self, name))) for name in
                ("inexact", "underflow", "overflow", "invalid", "divide_by_zero")}


# ----------------------------------------------------------------------------- validation
def _check_options(rounding: object, overflow: object, tininess: object, sr_bits: object,
                   flags: object) -> None:
    check_rounding(rounding)
    check_overflow(overflow)
    if tininess not in TININESS:
        raise ValueError(f"Got tininess={tininess!r}, but the only valid values are "
                         "'before' and 'after'")
    if sr_bits is not None and (not isinstance(sr_bits, (int, np.integer))
                                or isinstance(sr_bits, bool) or not 1 <= sr_bits <= 53):
        raise ValueError(f"Got sr_bits={sr_bits!r}, but it must be None or an int in [1, 53]")
    if not isinstance(flags, (bool, np.bool_)):
        raise TypeError(f"Got flags={flags!r}, expected True or False")


def _index_text(name: str, shape: tuple[int, ...], flat: int) -> str:
    if not shape:
        return name
    idx = np.unravel_index(flat, shape)
    return f"{name}[{', '.join(str(int(i)) for i in idx)}]"


def _representable(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Whether each float64 is a value of ``fmt`` (NaN/inf only where it has them)."""
    u = x.view(np.uint64)
    exp_field = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    sig = (u & np.uint64((1 << 52) - 1)) | np.where(exp_field > 0, np.uint64(1 << 52),
                                                     np.uint64(0))
    unit_exp = np.maximum(exp_field, 1) - 1075
    binade = np.maximum(exp_field - 1023, fmt.emin)
    shift = np.clip(binade - fmt.trailing_bits - unit_exp, 0, 63).astype(np.uint64)
    ok = (sig & ((np.uint64(1) << shift) - np.uint64(1))) == 0
    if not fmt.subnormals:
        ok &= exp_field - 1023 >= fmt.emin
    with np.errstate(invalid="ignore"):
        ok &= np.abs(x) <= fmt.max
    if not fmt.signed:
        ok &= ~np.signbit(x) | (x == 0)
    ok |= (x == 0) & fmt.has_zero
    if fmt.has_infinity:
        ok |= np.isinf(x) & (fmt.signed | (x > 0))
    if fmt.has_nan:
        ok |= np.isnan(x)
    return ok


def _operand(x: Any, name: str, fmt: Format) -> np.ndarray:
    """``x`` as a float64 array after checking every value is exact in ``fmt``."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"Got {name}={x!r}; expected numbers, not booleans")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Got {name} of type {type(x).__name__}: {err}") from None
    kind = arr.dtype.kind
    if format_of_dtype(arr.dtype) is not None:
        kind = "f"  # ml_dtypes floats (kind "V") convert exactly to float64
    if kind == "b" or kind in "USVMmc":
        raise TypeError(f"Got {name} with dtype {arr.dtype}; expected real numbers")
    if kind == "O":
        try:
            x64 = np.array([float(v) for v in arr.reshape(-1)], np.float64).reshape(arr.shape)
        except (TypeError, ValueError, OverflowError) as err:
            raise TypeError(f"Got {name} with non-numeric entries: {err}") from None
        exact = [v == float(v) or np.isnan(float(v)) for v in arr.reshape(-1)]
        if not all(exact):
            i = exact.index(False)
            raise ValueError(f"Got {_index_text(name, arr.shape, i)}={arr.reshape(-1)[i]!r}, "
                             f"which is not representable in {fmt.name}")
        arr = x64
    if kind in "iu":
        x64 = arr.astype(np.float64)
        back = np.where(np.abs(x64) < 2.0**63, x64, 0).astype(arr.dtype)
        bad = (back != arr) | (np.abs(x64) >= 2.0**63)
        if np.any(bad):
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(f"Got {_index_text(name, arr.shape, i)}={arr.reshape(-1)[i]}, "
                             f"which is not representable in {fmt.name}")
        arr = x64
    native = dtype_of(fmt)
    x64 = np.asarray(arr, dtype=np.float64)
    if native is not None and arr.dtype == native:
        return x64
    if fmt.name == "binary64" and fmt.exponent_bits == 11 and fmt.trailing_bits == 52:
        return x64
    ok = _representable(np.ascontiguousarray(x64), fmt)
    if not np.all(ok):
        i = int(np.flatnonzero(~ok.reshape(-1))[0])
        raise ValueError(f"Got {_index_text(name, x64.shape, i)}={float(x64.reshape(-1)[i])!r}, "
                         f"which is not representable in {fmt.name}")
    return x64


def _broadcast(arrays: list[np.ndarray], names: list[str]) -> list[np.ndarray]:
    try:
        out = np.broadcast_arrays(*arrays)
    except ValueError:
        shapes = ", ".join(f"{n}.shape={a.shape}" for n, a in zip(names, arrays))
        raise ValueError(f"Got {shapes}, which do not broadcast together") from None
    return [np.ascontiguousarray(a).reshape(-1) for a in out]


# ----------------------------------------------------------------------------- formats
def _is_binary64(fmt: Format) -> bool:
    return (fmt.exponent_bits == 11 and fmt.trailing_bits == 52 and fmt.bias == 1023
            and fmt.infinity is Infinity.IEEE and fmt.signed and fmt.subnormals)


def _is_narrow(fmt: Format) -> bool:
    """Exact pairs need no scaling: products of two values are exact in float64."""
    return (fmt.precision <= 26 and fmt.emax <= 250
            and fmt.emin - fmt.trailing_bits >= -250)


@lru_cache(maxsize=64)
def _ext_format(fmt: Format) -> Format:
    """Same precision, exponent range wide enough to round as if unbounded near fmt's."""
    w = min(fmt.exponent_bits + 2, 11)
    bias = fmt.bias + (1 << fmt.exponent_bits)
    ext = Format(name=f"{fmt.name}_unbounded", exponent_bits=w,
                 trailing_bits=fmt.trailing_bits, bias=bias)
    if ext.emin > fmt.emin - 2 or ext.emax < fmt.emax + 2:
        raise NotImplementedError(f"no unbounded-exponent companion for {fmt.name}")
    return ext


def _round_to_fmt(h: np.ndarray, lo: np.ndarray | None, fmt: Format, rounding: str,
                  overflow: str) -> np.ndarray:
    """Deterministic rounding of the exact ``h + lo`` into ``fmt`` (narrow formats)."""
    if h.size == 0:
        return h.copy()
    return decode_codes(encode_pair(h, lo, fmt, rounding=rounding, overflow=overflow), fmt)


def _sr_away(x: np.ndarray, q: np.ndarray, u: np.ndarray, sr_bits: int | None,
             frac: np.ndarray | None = None) -> np.ndarray:
    """Stochastic decision: away iff ``u < frac`` (``frac = x / q``, truncated to sr_bits)."""
    if frac is None:
        with np.errstate(all="ignore"):
            frac = np.where(q > 0, x / q, 0.0)
    if sr_bits is None:
        return u < frac
    return np.ldexp(u, sr_bits) < np.floor(np.ldexp(frac, sr_bits))


def _draws(rng: Any, n: int, sr_bits: int | None) -> np.ndarray:
    gen = make_rng(rng)
    if sr_bits is None:
        return gen.random(n)
    return np.ldexp(gen.integers(0, 1 << sr_bits, n, dtype=np.uint64).astype(np.float64),
                    -sr_bits)


# ----------------------------------------------------------------------------- narrow rounding
def _finish_narrow(h: np.ndarray, lo: np.ndarray, fmt: Format, rounding: str, overflow: str,
                   tininess: str, want_flags: bool, rng: Any, sr_bits: int | None,
                   figueroa: bool = False
                   ) -> tuple[np.ndarray, dict[str, np.ndarray] | None]:
    """Round exact pairs (finite, |values| well inside binary64) into a narrow format."""
    ah = np.abs(h)
    rel = lo * np.sign(h)  # > 0: |exact| > |h|
    if rounding == "sr":
        trunc = _round_to_fmt(h, lo, fmt, "rtz", "ieee")
        up = _round_to_fmt(h, lo, fmt, "ru", overflow)
        down = _round_to_fmt(h, lo, fmt, "rd", overflow)
        away = np.where(h > 0, up, down)
        q = np.abs(np.where(np.isfinite(away), away, 0.0) - trunc)
        q_max = 2.0 ** (fmt.emax - fmt.trailing_bits)
        with np.errstate(invalid="ignore"):
            q = np.where((q == 0) | ~np.isfinite(away) | (np.abs(away) > fmt.max) |
                         (np.abs(away) == np.abs(trunc)) & (ah > fmt.max), q_max, q)
            # An overflowing "away" (saturated to max) still counts one quantum of max.
            x = (ah - np.abs(trunc)) + rel
        go = _sr_away(x, q, _draws(rng, h.size, sr_bits), sr_bits)
        with np.errstate(invalid="ignore"):
            res = np.where(go, away, trunc)
        if overflow == "saturate":
            res = np.where(np.isnan(res) & ~np.isnan(trunc), trunc, res)
    elif figueroa and rounding == "rne" and fmt == _BINARY32 and not want_flags:
        # Figueroa (proofs/double_rounding.md, D1): RNE24(RNE53(x)) == RNE24(x) for
        # + - * / sqrt of binary32 operands, so numpy's float32 cast rounds correctly.
        with np.errstate(over="ignore"):
            res = h.astype(np.float32).astype(np.float64)
        if overflow == "saturate":
            res = np.clip(res, -fmt.max, fmt.max)
    else:
        res = _round_to_fmt(h, lo, fmt, rounding, overflow)
    if not want_flags:
        return res, None
    with np.errstate(invalid="ignore"):
        inexact = (res != h) | (lo != 0)
    nonzero = h != 0
    tiny_before = nonzero & ((ah < fmt.smallest_normal) | ((ah == fmt.smallest_normal)
                                                           & (rel < 0)))
    with np.errstate(invalid="ignore"):
        above_max = (ah > fmt.max) | ((ah == fmt.max) & (rel > 0))
    if rounding == "sr":
        nxt = fmt.max + 2.0 ** (fmt.emax - fmt.trailing_bits)
        with np.errstate(invalid="ignore"):
            ovf = above_max & ((np.abs(res) > fmt.max) | np.isnan(res) | (ah > nxt)
                               | ((ah == nxt) & (rel >= 0))
                               | (go & (overflow == "saturate")))
        tiny = tiny_before
    else:
        ext = _round_to_fmt(h, lo, _ext_format(fmt), rounding, "ieee")
        ovf = np.abs(ext) > fmt.max
        tiny = tiny_before if tininess == "before" else nonzero & (np.abs(ext)
                                                                 < fmt.smallest_normal)
    invalid = np.isnan(res) & ~ovf  # e8m0fnu: zero or negative results
    inexact &= ~invalid
    return res, {"inexact": inexact | ovf, "underflow": tiny & inexact, "overflow": ovf,
                 "invalid": invalid}


# ----------------------------------------------------------------------------- binary64 rounding
_TWO = np.float64(2.0)


def _b64_magnitude(ah: np.ndarray, rel: np.ndarray, odd: np.ndarray, mode: np.ndarray
                   ) -> np.ndarray:
    """53-bit rounding of ``ah + rel`` (ah = RNE); mode per element: 0 rtz, 1 raz, 2 rne,
    3 rna, 4 rto."""
    sp_up = np.spacing(ah)
    sp_dn = ah - np.nextafter(ah, 0.0)
    down = ah - sp_dn
    up = ah + sp_up
    m = ah.copy()
    m = np.where((mode == 0) & (rel < 0), down, m)
    m = np.where((mode == 1) & (rel > 0), up, m)
    m = np.where((mode == 3) & (rel != 0) & (rel == 0.5 * sp_up), up, m)
    rto_move = (mode == 4) & (rel != 0) & ~odd
    m = np.where(rto_move & (rel > 0), up, m)
    m = np.where(rto_move & (rel < 0), down, m)
    return m


def _mode_codes(rounding: str, neg: np.ndarray) -> np.ndarray:
    base = {"rtz": 0, "raz": 1, "rne": 2, "rna": 3, "rto": 4}
    if rounding == "ru":
        return np.where(neg, 0, 1)
    if rounding == "rd":
        return np.where(neg, 1, 0)
    return np.full(neg.shape, base[rounding])


def _b64_round(h: np.ndarray, lo: np.ndarray, k: np.ndarray, rounding: str, overflow: str,
               rng: Any, sr_bits: int | None
               ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Round ``(h + lo) * 2**k`` into binary64 (h = RNE53 of the scaled exact value,
    ``2**-300 <= |h| <= 2**300`` or h = +-0)."""
    neg = np.signbit(h)
    s = np.where(neg, -1.0, 1.0)
    ah = np.abs(h)
    nz = ah != 0
    rel = lo * s
    odd = (h.view(np.uint64) & np.uint64(1)) == 1
    _, eh = np.frexp(ah)
    # tiny before rounding: |exact| < 2**-1022
    pow2 = ah == np.ldexp(0.5, eh)
    e_abs = eh + k - 1  # exponent of |h| * 2**k
    tiny_b = nz & ((e_abs < -1022) | ((e_abs == -1022) & pow2 & (rel < 0)))

    def one_mode(mode_name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        modes = _mode_codes(mode_name, neg)
        m = _b64_magnitude(ah, rel, odd, modes)
        _, em = np.frexp(m)
        with np.errstate(over="ignore"):
            big = np.ldexp(m, np.clip(k, -2300, 2300).astype(np.int32))
        ovf_ = nz & (em + k - 1 > 1023)
        tiny_a_ = nz & (em + k - 1 < -1022)
        away_inf = (modes == 1) | (modes == 2) | (modes == 3)
        if overflow == "saturate":
            big = np.where(ovf_, np.finfo(np.float64).max, big)
        else:
            big = np.where(ovf_, np.where(away_inf, np.inf, np.finfo(np.float64).max), big)
        sub, _, frac_sub = _b64_subnormal(ah, rel, eh, k, modes, tiny_b)
        mag = np.where(tiny_b, sub, big)
        return s * mag, ovf_, tiny_a_, frac_sub

    if rounding != "sr":
        res, ovf, tiny_a, _ = one_mode(rounding)
    else:
        trunc, ovf_t, tiny_a, frac_sub = one_mode("rtz")
        away, ovf_a, _, _ = one_mode("raz")
        q = np.abs(away - trunc)
        q = np.where(~np.isfinite(q) | (np.abs(away) == np.abs(trunc)) & ovf_t,
                     2.0**971, q)
        # Distance from trunc in scaled units: |h| - |trunc| * 2**-k + rel.
        with np.errstate(all="ignore"):
            kk = np.clip(-k, -2300, 2300).astype(np.int32)
            t_s = np.ldexp(np.abs(trunc), kk)  # exact for normal results
            q_s = np.ldexp(q, kk)
            x = (ah - t_s) + rel
            frac = np.where(tiny_b, frac_sub, np.where(q_s > 0, x / q_s, 0.0))
        go = _sr_away(x, q_s, _draws(rng, h.size, sr_bits), sr_bits, frac)
        exact_here = away == trunc
        go &= ~exact_here
        res = np.where(go, away, trunc)
        ovf = ovf_t | (go & ovf_a)
    inexact = _b64_inexact(res, h, lo, k, tiny_b) | ovf
    return res, {"inexact": inexact, "overflow": ovf, "tiny_before": tiny_b,
                 "tiny_after": tiny_a}


def _b64_inexact(res: np.ndarray, h: np.ndarray, lo: np.ndarray, k: np.ndarray,
                 tiny_b: np.ndarray) -> np.ndarray:
    """Whether ``res`` differs from ``(h + lo) * 2**k``."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        back = np.ldexp(res, np.clip(-k, -2300, 2300).astype(np.int32))
    # res * 2**-k is exact unless res is tiny and -k very negative; compare carefully.
    ok_scale = np.isfinite(back) & ((back != 0) | (res == 0))
    exact = ok_scale & (back == h) & (lo == 0)
    return ~exact


def _b64_subnormal(ah: np.ndarray, rel: np.ndarray, eh: np.ndarray, k: np.ndarray,
                   modes: np.ndarray, tiny: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Magnitude of the rounding of ``(ah + rel) * 2**k`` on the grid of 2**-1074."""
    sh = k + 1074
    deep = eh + sh < -60
    shc = np.clip(sh, -1100, 1100).astype(np.int32)
    with np.errstate(under="ignore", over="ignore"):
        hp = np.where(deep | ~tiny, 2.0**-61, np.ldexp(ah, shc))
        relc = np.where(rel == 0, 0.0, np.copysign(np.maximum(np.abs(rel), ah * 2.0**-120), rel))
        lp = np.where(deep | ~tiny, 0.0, np.ldexp(relc, shc))
    n = np.rint(hp)
    d = hp - n
    g = d + lp
    exact = (g == 0) & ~deep
    trunc = n - (g < 0)
    above = np.where(g >= 0, (d == 0.5) & (lp > 0), (d > -0.5) | ((d == -0.5) & (lp > 0)))
    tie = (np.abs(d) == 0.5) & (lp == 0)
    t_odd = np.fmod(trunc, 2.0) == 1
    away = np.zeros(ah.shape, bool)
    away = np.where(modes == 1, ~exact, away)
    away = np.where(modes == 2, above | (tie & t_odd), away)
    away = np.where(modes == 3, above | tie, away)
    away = np.where(modes == 4, ~exact & ~t_odd, away)
    mag = trunc + away
    return np.ldexp(mag, -1074), exact, (hp - trunc) + lp


# ----------------------------------------------------------------------------- exact kernels
def _zero_sign(h: np.ndarray, x: np.ndarray, y: np.ndarray, rounding: str) -> np.ndarray:
    """IEEE sign of an exact zero sum ``x + y``: same-signed zeros keep it, else +0 (rd: -0)."""
    z = h == 0
    if not np.any(z):
        return h
    both_neg = (x == 0) & (y == 0) & np.signbit(x) & np.signbit(y)
    both_pos = (x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y)
    neg = both_neg | ((rounding == "rd") & ~both_pos)
    return np.where(z, np.where(neg, -0.0, 0.0), h)


def _frexp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, e = np.frexp(x)
    return m, e.astype(np.int64)


def _sticky(m: np.ndarray) -> np.ndarray:
    return np.where(m == 0, 0.0, np.copysign(2.0**-300, m))


Kernel = Callable[..., tuple[np.ndarray, np.ndarray, "np.ndarray | None"]]


def _k_add(a: np.ndarray, b: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        h, lo = eft.two_sum(a, b)
        return _zero_sign(h, a, b, rounding), lo, None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    k = np.where(a == 0, eb, np.where(b == 0, ea, np.maximum(ea, eb)))
    da, db = ea - k, eb - k
    a2 = np.where(da < -150, _sticky(ma), np.ldexp(ma, np.maximum(da, -150).astype(np.int32)))
    b2 = np.where(db < -150, _sticky(mb), np.ldexp(mb, np.maximum(db, -150).astype(np.int32)))
    h, lo = eft.two_sum(a2, b2)
    return _zero_sign(h, a, b, rounding), lo, k


def _k_mul(a: np.ndarray, b: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        return a * b, np.zeros_like(a), None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    h, lo = eft.two_prod(ma, mb)
    return h, lo, ea + eb


def _nudge_residual(h: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Keep an approximate residual strictly inside half the spacing on its side."""
    ah = np.abs(h)
    rel = lo * np.sign(h)
    hs = np.where(rel > 0, np.spacing(ah), ah - np.nextafter(ah, 0.0)) * 0.5
    return np.where((np.abs(lo) >= hs) & (lo != 0), np.copysign(np.nextafter(hs, 0.0), lo), lo)


def _k_div(a: np.ndarray, b: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        q = a / b
        p, e = eft.two_prod(q, b)
        r = (a - p) - e
        return q, r / b, None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    q = ma / mb
    p, e = eft.two_prod(q, mb)
    r = (ma - p) - e
    return q, _nudge_residual(q, r / mb), ea - eb


def _k_sqrt(a: np.ndarray, wide: bool, rounding: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        s = np.sqrt(a)
        p, e = eft.two_prod(s, s)
        r = (a - p) - e
        with np.errstate(invalid="ignore", divide="ignore"):
            lo = np.where(s != 0, r / (2.0 * s), 0.0)
        return s, lo, None
    ma, ea = _frexp(a)
    odd = (ea & 1) == 1
    ma = np.where(odd, ma * 2.0, ma)
    ea = ea - odd
    s = np.sqrt(ma)
    p, e = eft.two_prod(s, s)
    r = (ma - p) - e
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(s != 0, r / (2.0 * s), 0.0)
    return s, _nudge_residual(s, lo), ea // 2


def _k_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        p = a * b
        h, lo = eft.two_sum(p, c)
        return _zero_sign(h, p, c, rounding), lo, None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    mc, ec = _frexp(c)
    x1, x2 = eft.two_prod(ma, mb)
    kp = ea + eb
    pz = x1 == 0
    cz = c == 0
    diff = ec - kp
    big_c = ~pz & ~cz & (diff > 150)
    small_c = ~pz & ~cz & (diff < -150)
    c2 = np.where(small_c, _sticky(mc),
                  np.ldexp(mc, np.clip(diff, -151, 151).astype(np.int32)))
    c2 = np.where(cz, 0.0, c2)
    h3, l3 = eft.three_sum_rne(x1, x2, c2)
    hb, lb = eft.two_sum(mc, _sticky(x1))
    h = np.where(big_c, hb, h3)
    lo = np.where(big_c, lb, l3)
    k = np.where(big_c, ec, kp)
    # Exact product zero: the result is c itself.
    h = np.where(pz, mc, h)
    lo = np.where(pz, 0.0, lo)
    k = np.where(pz, ec, k)
    psign = np.where(np.signbit(a) ^ np.signbit(b), -0.0, 0.0)
    h = _zero_sign(h, np.where(pz, psign, x1), c, rounding)
    return h, lo, k


def _unscale(h: np.ndarray, lo: np.ndarray, k: np.ndarray, fmt: Format
             ) -> tuple[np.ndarray, np.ndarray]:
    """Scaled pair back to float64 for a wide format that is not binary64."""
    if fmt.smallest_subnormal < 2.0**-900 or fmt.max > 2.0**900:
        raise NotImplementedError(f"{fmt.name}: only binary64 may reach float64's limits")
    _, eh = np.frexp(h)
    e = eh + k
    low = e < np.log2(fmt.smallest_subnormal) - 60
    high = e > fmt.emax + 60
    kc = np.clip(k, -1100, 1100).astype(np.int32)
    with np.errstate(under="ignore", over="ignore"):
        h2 = np.ldexp(h, kc)
        lo_c = np.where(lo == 0, 0.0, np.copysign(np.maximum(np.abs(lo), np.abs(h) * 2.0**-60),
                                                  lo))
        lo2 = np.ldexp(lo_c, kc)
    h2 = np.where(low, np.copysign(fmt.smallest_subnormal * 2.0**-60, h), h2)
    h2 = np.where(high, np.copysign(fmt.max * 2.0**60, h), h2)
    lo2 = np.where(low | high, 0.0, lo2)
    return h2, lo2


# ----------------------------------------------------------------------------- driver
def _special_results(op: str, xs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """IEEE results for elements with a non-finite operand (or x/0, sqrt(x<0))."""
    with np.errstate(all="ignore"):
        if op == "add":
            r = xs[0] + xs[1]
        elif op == "mul":
            r = xs[0] * xs[1]
        elif op == "div":
            r = xs[0] / xs[1]
        elif op == "sqrt":
            r = np.sqrt(xs[0])
        else:
            a, b, c = xs
            fin = np.isfinite(a) & np.isfinite(b)
            p = np.where(fin, np.copysign(1.0, a) * np.copysign(1.0, b), a * b)
            r = p + c
    nan_in = np.zeros(r.shape, bool)
    for x in xs:
        nan_in |= np.isnan(x)
    invalid = np.isnan(r) & ~nan_in
    if op == "fma":
        a, b = xs[0], xs[1]
        invalid |= ((a == 0) & np.isinf(b)) | (np.isinf(a) & (b == 0))
    dz = np.zeros(r.shape, bool)
    if op == "div":
        dz = (xs[1] == 0) & np.isfinite(xs[0]) & (xs[0] != 0)
    return r, invalid, dz


def _special_mask(op: str, xs: list[np.ndarray]) -> np.ndarray:
    m = np.zeros(xs[0].shape, bool)
    for x in xs:
        m |= ~np.isfinite(x)
    if op == "div":
        m |= xs[1] == 0
    if op == "sqrt":
        m |= xs[0] < 0
    return m


def _run(op: str, operands: list[Any], names: list[str], fmt_in: Format | str,
         rounding: str, overflow: str, tininess: str, flags: bool, rng: Any,
         sr_bits: int | None, allow_fast: bool = True) -> Any:
    fmt = as_format(fmt_in)
    _check_options(rounding, overflow, tininess, sr_bits, flags)
    if allow_fast and not flags:
        fast = _native_run(op, operands, fmt, rounding, overflow)
        if fast is not None:
            if all(np.ndim(x) == 0 and not isinstance(x, np.ndarray) for x in operands):
                return fast[()]
            return fast
    scalar = all(np.ndim(x) == 0 and not isinstance(x, np.ndarray) for x in operands)
    arrays = [_operand(x, n, fmt) for x, n in zip(operands, names)]
    xs = _broadcast(arrays, names) if len(arrays) > 1 else [arrays[0].reshape(-1).copy()]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    op0 = op
    if op == "sub":
        op, xs = "add", [xs[0], -xs[1]]
    if allow_fast and _fast_applies(fmt, rounding, flags):
        try:
            res = _fast_run(op, xs, fmt, rounding, overflow, names)
        except ValueError:  # an invalid operation without NaN: report it by its index
            return _run(op0, operands, names, fmt, rounding, overflow, tininess, flags, rng,
                        sr_bits, allow_fast=False)
        if not fmt.has_negative_zero:
            res = res + 0.0
        res = res.reshape(shape)
        return res[()] if scalar else res
    n = xs[0].size
    special = _special_mask(op, xs)
    any_special = bool(np.any(special))
    if any_special:
        fin = [np.where(special, 1.0, x) for x in xs]
    else:
        fin = xs
    wide = not _is_narrow(fmt)
    b64 = _is_binary64(fmt)
    kernels: dict[str, Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray | None]]] = {
        "add": _k_add, "mul": _k_mul, "div": _k_div, "sqrt": _k_sqrt, "fma": _k_fma}
    kernel = kernels[op]
    with np.errstate(under="ignore"):
        h, lo, k = kernel(*fin, wide, rounding)
    if b64:
        assert k is not None
        res, info = _b64_round(h, lo, k, rounding, overflow, rng, sr_bits)
        tiny = info["tiny_before"] if (tininess == "before" or rounding == "sr") \
            else info["tiny_after"]
        fl = {"inexact": info["inexact"], "overflow": info["overflow"],
              "underflow": tiny & info["inexact"], "invalid": np.zeros(n, bool)}
    else:
        if k is not None:
            h, lo = _unscale(h, lo, k, fmt)
        res, fl_opt = _finish_narrow(h, lo, fmt, rounding, overflow, tininess, flags,
                                     rng, sr_bits, figueroa=op != "fma")
        fl = fl_opt if fl_opt is not None else {}
    dz = np.zeros(n, bool)
    if any_special:
        r_sp, inv_sp, dz = _special_results(op, xs)
        if np.any(np.isnan(r_sp) & special) and not fmt.has_nan:
            i = int(np.flatnonzero(np.isnan(r_sp) & special)[0])
            args = ", ".join(f"{nm}={float(x[i])!r}" for nm, x in zip(names, xs))
            raise ValueError(f"Got an invalid operation at {_index_text('index', shape, i)}: "
                             f"{op}({args}) has no value in {fmt.name}, which has no NaN")
        sp = special
        vals = r_sp[sp]
        if b64:
            enc = np.clip(vals, -fmt.max, fmt.max) if overflow == "saturate" else vals
        else:
            enc = decode_codes(encode_pair(vals, None, fmt, rounding="rne", overflow=overflow),
                               fmt)
        res = res.copy()
        res[sp] = enc
        if flags:
            for key in ("inexact", "overflow", "underflow"):
                fl[key] = fl[key] & ~sp
            fl["invalid"] = (fl["invalid"] & ~sp) | (inv_sp & sp)
    if not fmt.has_negative_zero:
        res = res + 0.0
    res = res.reshape(shape)
    if scalar:
        res = res[()]
    if not flags:
        return res
    out = Flags(inexact=fl["inexact"], underflow=fl["underflow"], overflow=fl["overflow"],
                invalid=fl["invalid"], divide_by_zero=dz & special if any_special else dz)
    shaped = Flags(**{f: (getattr(out, f).reshape(shape)[()] if scalar
                          else getattr(out, f).reshape(shape))
                      for f in ("inexact", "underflow", "overflow", "invalid",
                                "divide_by_zero")})
    return res, shaped



# ----------------------------------------------------------------------------- fast path
#: Elements per chunk of the fast path: a dozen float64 temporaries stay in L2.
_CHUNK = 1 << 14
_FAST_MODES = ("rne", "rna", "rtz", "ru", "rd")


def _fast_applies(fmt: Format, rounding: str, flags: bool) -> bool:
    return (not flags and rounding in _FAST_MODES and _is_narrow(fmt) and fmt.signed
            and fmt.subnormals and fmt.trailing_bits >= 1)


def _fast_round(h: np.ndarray, lo: np.ndarray | None, fmt: Format, rounding: str
                ) -> np.ndarray:
    """Round finite ``h + lo`` to fmt's grid (unbounded above: the caller redoes
    |result| > max).  The quantum of |h|'s binade is ``Q``; ``(h + 1.5*2**52*Q) - ...``
    rounds to nearest-even multiples of ``Q``; directed modes step by one quantum
    according to the sign of the residual (half a quantum below a power of two)."""
    t = fmt.trailing_bits
    ebits = h.view(np.uint64) & np.uint64(0x7FF0000000000000)
    binade = ebits.view(np.float64)  # 2**e of |h| (0 for h = 0)
    q = np.maximum(binade, fmt.smallest_normal)
    q *= 2.0**-t
    magic = q * 1.5 * 2.0**52
    r = h + magic
    r -= magic
    if lo is None and rounding == "rne":
        return np.copysign(r, h, out=r)
    d0 = h - r  # exact
    diff = d0 + lo if lo is not None else d0  # sign of exact - r
    if rounding in ("rne", "rna"):
        half = q * 0.5
        tie_h = np.abs(d0) == half
        if lo is not None:
            # the residual breaks ties that h sits on
            flip = tie_h & (lo * d0 > 0)
            r = np.where(flip, r + 2.0 * d0, r)
        if rounding == "rna":
            exact_tie = tie_h if lo is None else tie_h & (lo == 0)
            # ties away from zero: take the candidate of larger magnitude
            r = np.where(exact_tie & (np.abs(r) < np.abs(h)), r + 2.0 * d0, r)
        return np.copysign(r, h, out=r)
    sgn = np.sign(h)
    dm = diff * sgn  # > 0: |exact| > |r|
    m = np.abs(r)
    if rounding == "rtz":
        away = np.zeros(h.shape, bool)
    elif rounding == "ru":
        away = sgn > 0
    else:
        away = sgn < 0
    down_step = np.where((m == binade) & (binade > fmt.smallest_normal), q * 0.5, q)
    m = np.where(away & (dm > 0), m + q, m)
    m = np.where(~away & (dm < 0), m - down_step, m)
    return np.copysign(m, h, out=m)


def _fast_run(op: str, xs: list[np.ndarray], fmt: Format, rounding: str, overflow: str,
              names: list[str]) -> np.ndarray:
    n = xs[0].size
    out = np.empty(n, np.float64)
    figueroa = op != "fma" and fmt.precision <= 25
    use_lo = not (figueroa and rounding == "rne")
    f32 = fmt == _BINARY32 and rounding == "rne" and figueroa
    with np.errstate(all="ignore"):
        for start in range(0, n, _CHUNK):
            sl = slice(start, min(start + _CHUNK, n))
            c = [x[sl] for x in xs]
            lo: np.ndarray | None = None
            if op == "add":
                h = c[0] + c[1]
                if use_lo:
                    bb = h - c[0]
                    lo = (c[0] - (h - bb)) + (c[1] - bb)
                z = h == 0
                if z.any():
                    h = _zero_sign(h, c[0], c[1], rounding)
            elif op == "mul":
                h = c[0] * c[1]
            elif op == "fma":
                p = c[0] * c[1]
                h = p + c[2]
                bb = h - p
                lo = (p - (h - bb)) + (c[2] - bb)
                if (h == 0).any():
                    h = _zero_sign(h, p, c[2], rounding)
            elif op == "div":
                h, lo = _k_div(c[0], c[1], False, rounding)[:2]
                if not use_lo:
                    lo = None
            else:
                h, lo = _k_sqrt(c[0], False, rounding)[:2]
                if not use_lo:
                    lo = None
            if f32:
                r = h.astype(np.float32).astype(np.float64)
            else:
                r = _fast_round(h, lo, fmt, rounding)
            bad = ~(np.abs(r) <= fmt.max)
            if bad.any():
                idx = np.flatnonzero(bad)
                r[idx] = _run(op, [x[idx] for x in c], names, fmt, rounding, overflow,
                              "after", False, None, None, allow_fast=False)
            out[sl] = r
    return out


# ----------------------------------------------------------------------------- public API
_DOC_OPTIONS = """
    fmt : Format or str
        The format of the operands and of the result.
    rounding : {"rne", "rna", "rtz", "ru", "rd", "rto", "sr"}
        Rounding mode, as for :func:`numerics.encode`.
    overflow : {"ieee", "saturate"}
        Overflow rule, as for :func:`numerics.encode`.
    tininess : {"after", "before"}
        When underflow is detected (IEEE 754-2019 7.5).
    flags : bool
        Also return a :class:`Flags` of boolean arrays.
    rng : int, numpy.random.Generator or None
        Seed or generator for ``rounding="sr"``.
    sr_bits : int, optional
        Random bits per stochastic rounding (the rounding probability is
        truncated to ``sr_bits`` bits).

    Returns
    -------
    numpy.ndarray of float64 (or a float64 scalar), or (result, Flags)
        Exactly representable values of ``fmt``.

    Raises
    ------
    ValueError
        An operand that is not exactly representable in ``fmt`` (the message
        names the first one), shapes that do not broadcast, unknown options,
        or an invalid operation in a format without NaN.
"""


def add(a: Any, b: Any, fmt: Format | str, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None) -> Any:
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
                sr_bits)


def sub(a: Any, b: Any, fmt: Format | str, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None) -> Any:
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
                sr_bits)


def mul(a: Any, b: Any, fmt: Format | str, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None) -> Any:
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
                sr_bits)


def div(a: Any, b: Any, fmt: Format | str, *, rounding: str = "rne", overflow: str = "ieee",
        tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None) -> Any:
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
                sr_bits)


def fma(a: Any, b: Any, c: Any, fmt: Format | str, *, rounding: str = "rne",
        overflow: str = "ieee", tininess: str = "after", flags: bool = False, rng: Any = None,
        sr_bits: int | None = None) -> Any:
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
                rng, sr_bits)


def sqrt(a: Any, fmt: Format | str, *, rounding: str = "rne", overflow: str = "ieee",
         tininess: str = "after", flags: bool = False, rng: Any = None,
         sr_bits: int | None = None) -> Any:
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
    return _run("sqrt", [a], ["a"], fmt, rounding, overflow, tininess, flags, rng, sr_bits)


def convert(x: Any, from_fmt: Format | str, to_fmt: Format | str, *, rounding: str = "rne",
            overflow: str = "ieee", tininess: str = "after", flags: bool = False,
            rng: Any = None, sr_bits: int | None = None) -> Any:
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
    src = as_format(from_fmt)
    dst = as_format(to_fmt)
    _check_options(rounding, overflow, tininess, sr_bits, flags)
    scalar = np.ndim(x) == 0 and not isinstance(x, np.ndarray)
    arr = _operand(x, "x", src)
    shape = arr.shape
    flat = arr.reshape(-1)
    nan = np.isnan(flat)
    if np.any(nan) and not dst.has_nan:
        i = int(np.flatnonzero(nan)[0])
        raise ValueError(f"Got {_index_text('x', shape, i)}=nan, but {dst.name} has no NaN")
    special = ~np.isfinite(flat)
    fin = np.where(special, 1.0, flat)
    zero = np.zeros_like(fin)
    if _is_binary64(dst):
        res = fin.copy()
        fl: dict[str, np.ndarray] = {k: np.zeros(flat.size, bool)
                                     for k in ("inexact", "overflow", "underflow", "invalid")}
    else:
        res, fl_opt = _finish_narrow(fin, zero, dst, rounding, overflow, tininess, flags,
                                     rng, sr_bits)
        fl = fl_opt if fl_opt is not None else {}
    if np.any(special):
        vals = flat[special]
        if _is_binary64(dst):
            enc = np.clip(vals, -dst.max, dst.max) if overflow == "saturate" else vals
        else:
            enc = decode_codes(encode_pair(vals, None, dst, rounding="rne", overflow=overflow),
                               dst)
        res = res.copy()
        res[special] = enc
        if flags:
            for key in fl:
                fl[key] = fl[key] & ~special
            fl["invalid"] |= special & np.isnan(res) & ~nan
    if not dst.has_negative_zero:
        res = res + 0.0
    res = res.reshape(shape)
    if scalar:
        res = res[()]
    if not flags:
        return res
    get = (lambda v: v.reshape(shape)[()]) if scalar else (lambda v: v.reshape(shape))
    return res, Flags(inexact=get(fl["inexact"]), underflow=get(fl["underflow"]),
                      overflow=get(fl["overflow"]), invalid=get(fl["invalid"]),
                      divide_by_zero=get(np.zeros(flat.size, bool)))


for _f in (add, sub, mul, div, fma, sqrt, convert):
    _f.__doc__ = (_f.__doc__ or "").replace("    {options}\n", _DOC_OPTIONS.lstrip("\n")
                                            .replace("\n    Examples", "\n    Examples"))
del _f


# ----------------------------------------------------------------------------- native fast path
#: Elements per chunk of the native fast path (float64 temporaries of 256 KiB).
_NCHUNK = 1 << 16
_F32_CLASS = ("binary32", "bfloat16", "binary16")
_DIRECTED = ("rtz", "ru", "rd")
_F32_MAX = float(np.finfo(np.float32).max)


def _registered(fmt: Format) -> str | None:
    """``"f32"`` (float32 arithmetic), ``"u8"`` (tables of 8-bit codes) or ``None``."""
    native = dtype_of(fmt)
    if native is None:
        return None
    if fmt.name in _F32_CLASS:
        return "f32"
    if fmt.bits == 8 and fmt.has_nan and fmt.signed and native.itemsize == 1:
        return "u8"
    return None


def _native_f32(x: Any, fmt: Format) -> np.ndarray | None:
    """Operand as float32 values of ``fmt``, or uint16 bit patterns for bfloat16 arrays
    (None: let the checked path decide)."""
    if not isinstance(x, (np.ndarray, float, np.floating)) or isinstance(x, (bool, np.bool_)):
        return None
    arr = np.asarray(x)
    native = dtype_of(fmt)
    if arr.dtype == native:
        if fmt.name == "bfloat16":  # bit patterns: widened chunk by chunk (_widen_bf16)
            return arr.view(np.uint16)
        return arr if arr.dtype == np.float32 else arr.astype(np.float32)
    if arr.dtype == np.float64:
        with np.errstate(over="ignore", invalid="ignore"):
            x32 = arr.astype(np.float32)
            eq = x32 == arr
        if not eq.all() and not (eq | np.isnan(arr)).all():
            return None
    elif arr.dtype == np.float32:
        x32 = arr
    else:
        return None
    if fmt.name == "bfloat16":
        low = x32.view(np.uint32) & np.uint32(0xFFFF)
        if low.any() and not ((low == 0) | np.isnan(x32)).all():
            return None
    elif fmt.name == "binary16":
        with np.errstate(over="ignore", invalid="ignore"):
            eq = x32.astype(np.float16).astype(np.float32) == x32
        if not eq.all() and not (eq | np.isnan(x32)).all():
            return None
    return x32


def _native_u8(x: Any, fmt: Format) -> np.ndarray | None:
    """Operand as uint8 codes of ``fmt`` (None: let the checked path decide)."""
    if not isinstance(x, (np.ndarray, float, np.floating)) or isinstance(x, (bool, np.bool_)):
        return None
    arr = np.asarray(x)
    if arr.dtype == dtype_of(fmt):
        return arr.view(np.uint8)
    if arr.dtype not in (np.float64, np.float32):
        return None
    x64 = np.asarray(arr, np.float64)
    codes = np.asarray(encode_f64(x64.reshape(-1), fmt, rounding="rtz", overflow="ieee",
                                  nan="zero"), np.uint8)
    back = np.take(decode_table(fmt), codes.astype(np.intp))
    eq = back == x64.reshape(-1)
    if not eq.all() and not (eq | (np.isnan(back) & np.isnan(x64.reshape(-1)))).all():
        return None
    return codes.reshape(x64.shape)


@lru_cache(maxsize=128)
def _u8_table(op: str, fmt: Format, rounding: str, overflow: str) -> np.ndarray:
    """float64 result of ``op`` for every pair (or single) of 8-bit codes, from the exact path."""
    vals = decode_table(fmt)
    if op == "mul_exact":  # exact float64 products (8-bit significands)
        with np.errstate(all="ignore"):
            return np.multiply.outer(vals, vals).reshape(-1)
    if op == "sqrt":
        args = [vals]
    else:
        args = [np.repeat(vals, 256), np.tile(vals, 256)]
    names = ["a", "b"][: len(args)]
    with np.errstate(all="ignore"):
        res = _run(op, args, names, fmt, rounding, overflow, "after", False, None, None,
                   allow_fast=False)
    return np.ascontiguousarray(res, np.float64)


@lru_cache(maxsize=64)
def _f64_value_table(fmt: Format, rounding: str, overflow: str) -> tuple[np.ndarray, int]:
    """Rounded float64 value for the top ``t + 13`` bits of a float64 plus a sticky bit."""
    top = fmt.trailing_bits + 13
    low = 64 - top
    idx = np.arange(1 << (top + 1), dtype=np.uint64)
    pattern = ((idx >> np.uint64(1)) << np.uint64(low)) | (idx & np.uint64(1))
    codes = encode_pair(pattern.view(np.float64), None, fmt, rounding=rounding,
                        overflow=overflow, nan="zero")
    return decode_codes(codes, fmt), low


def _round_f64_table(h: np.ndarray, fmt: Format, rounding: str, overflow: str) -> np.ndarray:
    """Round float64 values (each exact) to fmt by one table lookup (t <= 7)."""
    table, low = _f64_value_table(fmt, rounding, overflow)
    u = h.view(np.uint64)
    below = np.uint64((1 << (low - 1)) - 1)
    b = u & below
    b += below
    b &= np.uint64(1 << (low - 1))
    b |= u
    b >>= np.uint64(low - 1)
    return np.take(table, b.view(np.int64))


def _rto64(h: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Round-to-odd at 53 bits of the exact ``h + lo`` (h = RNE53, finite, non-zero when
    lo is)."""
    u = h.view(np.uint64)
    move = (lo != 0) & ((u & np.uint64(1)) == 0)
    if move.any():
        toward = (lo > 0) == (h > 0)  # |exact| > |h|
        u = u + move.astype(np.uint64)
        u -= (move & ~toward).astype(np.uint64) * np.uint64(2)
        return u.view(np.float64)
    return h


def _rto32(h: np.ndarray) -> np.ndarray:
    """float64 -> float32 with round-to-odd (Boldo-Melquiond)."""
    f = h.astype(np.float32)
    back = f.astype(np.float64)
    b = f.view(np.uint32)
    b -= np.abs(back) > np.abs(h)
    b |= back != h
    return f


def _directed32(h: np.ndarray, lo: np.ndarray | None, rounding: str) -> np.ndarray:
    """Directed rounding of the exact ``h + lo`` to binary32 (float32 result)."""
    f = h.astype(np.float32)
    d = h - f.astype(np.float64)
    if lo is not None:
        d += lo
    b = f.view(np.uint32)
    if rounding == "rtz":  # |exact| < |f|: one step toward zero (h and f share the sign)
        d *= h
        b -= d < 0
        return f
    neg = np.signbit(f)
    if rounding == "ru":
        step = d > 0
        b += step & ~neg
        b -= step & neg
    else:
        step = d < 0
        b += step & neg
        b -= step & ~neg
    return f


def _bf16_from32(f: np.ndarray, rounding: str) -> np.ndarray:
    """float32 values (round-to-odd when directed) to bfloat16 values, kept as float32."""
    b = f.view(np.uint32).copy()
    if rounding == "rne":
        b += ((b >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
    elif rounding != "rtz":
        neg = (b >> np.uint32(31)).astype(bool)
        up = neg if rounding == "rd" else ~neg
        b += up * np.uint32(0xFFFF)
    b &= np.uint32(0xFFFF0000)
    out = b.view(np.float32)
    nan = np.isnan(f)
    if rounding != "rne" and nan.any():
        out[nan] = f[nan]
    return out


def _f32_chunk(op: str, c: list[np.ndarray], fmt: Format, rounding: str) -> np.ndarray:
    """One chunk of float32-class operands: results as float32 values of fmt."""
    if rounding == "rne" and (op in ("add", "sub", "mul") or fmt.name != "bfloat16"
                              and op != "fma"):
        if op == "add":
            f = c[0] + c[1]
        elif op == "sub":
            f = c[0] - c[1]
        elif op == "mul":
            f = c[0] * c[1]
        elif op == "div":
            f = c[0] / c[1]
        else:
            f = np.sqrt(c[0])
        # Figueroa (proofs/double_rounding.md, D1): 24 >= 2p + 2 for bfloat16 and binary16.
        if fmt.name == "bfloat16":
            return _bf16_from32(f, "rne")
        if fmt.name == "binary16":
            return f.astype(np.float16).astype(np.float32)
        return f
    x = [v.astype(np.float64) for v in c]
    lo: np.ndarray | None = None
    if op in ("add", "sub"):
        a, b = x[0], (x[1] if op == "add" else -x[1])
        h, lo = eft.two_sum(a, b)
        if not (h != 0).all():
            h = _zero_sign(h, a, b, rounding)
    elif op == "mul":
        h = x[0] * x[1]
    elif op == "fma":
        p = x[0] * x[1]  # exact: 48 bits at most
        h, lo = eft.two_sum(p, x[2])
        if not (h != 0).all():
            h = _zero_sign(h, p, x[2], rounding)
    elif op == "div":
        h, lo = _k_div(x[0], x[1], False, rounding)[:2]
    else:
        h, lo = _k_sqrt(x[0], False, rounding)[:2]
    if lo is not None:
        if not lo.any():
            lo = None
        elif fmt.name != "binary32" or rounding == "rne":
            lo[~np.isfinite(lo)] = 0.0  # special operands: h is the exact (IEEE) result
    if fmt.name == "binary32":
        if rounding == "rne":  # fma: round to odd at 53 bits, then nearest (p + 2 <= 53)
            return (h if lo is None else _rto64(h, lo)).astype(np.float32)
        return _directed32(h, lo, rounding)
    f = _rto32(h if lo is None else _rto64(h, lo))
    if fmt.name == "bfloat16":
        return _bf16_from32(f, rounding)
    return f.astype(np.float16).astype(np.float32)  # binary16: rne only


def _u8_chunk(op: str, c: list[np.ndarray], fmt: Format, rounding: str, overflow: str
              ) -> np.ndarray:
    if op == "sqrt":
        return np.take(_u8_table(op, fmt, rounding, overflow), c[0].astype(np.intp))
    if op != "fma":
        idx = c[0].astype(np.intp)
        idx <<= 8
        idx |= c[1]
        return np.take(_u8_table(op, fmt, rounding, overflow), idx)
    idx = c[0].astype(np.intp)
    idx <<= 8
    idx |= c[1]
    vals = decode_table(fmt)
    p = np.take(_u8_table("mul_exact", fmt, "rne", "ieee"), idx)
    cc = np.take(vals, c[2].astype(np.intp))
    h, lo = eft.two_sum(p, cc)
    if not (h != 0).all():
        h = _zero_sign(h, p, cc, rounding)
    r = _round_f64_table(h, fmt, rounding, overflow)
    lo[~np.isfinite(lo)] = 0.0
    if lo.any():
        i = np.flatnonzero(lo)
        r[i] = decode_codes(encode_pair(h[i], lo[i], fmt, rounding=rounding,
                                        overflow=overflow), fmt)
    return r


class _Work:
    """Preallocated chunk buffers of the native fast path (reused across chunks)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._bufs: dict[tuple[str, Any], np.ndarray] = {}

    def get(self, key: str, dtype: Any, m: int) -> np.ndarray:
        buf = self._bufs.get((key, dtype))
        if buf is None:
            buf = self._bufs[(key, dtype)] = np.empty(self.size, dtype)
        return buf[:m]


def _widen_bf16(v: np.ndarray, work: _Work, key: str) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> float32 values: the bits become the high half."""
    if v.dtype != np.uint16:
        return v
    u = work.get(key, np.uint32, v.size)
    np.copyto(u, v)
    u <<= np.uint32(16)
    return u.view(np.float32)


def _f32_fast_chunk(op: str, c: list[np.ndarray], fmt: Format, rounding: str, work: _Work
                    ) -> np.ndarray | None:
    """Float32-arithmetic shortcuts for one chunk (float32 result, a work buffer view);
    ``None`` where they do not apply and :func:`_f32_chunk` must run.

    * rne ``+ - * / sqrt`` (binary32) and ``+ - *`` (bfloat16): one float32 operation,
      then (bfloat16) the nearest-even bit trick on the float32 pattern; Figueroa (D1)
      makes the double rounding harmless.
    * rtz ``+ -`` (binary32, bfloat16): ``s = fl32(a +- b)`` and TwoSum's float32 residual
      ``err`` (exact when ``s`` is finite: Boldo, Graillat and Muller, 2017).  When ``err``
      and ``s`` have opposite signs ``|exact| < |s|`` and ``s`` steps one float32 ulp
      toward zero: that is the float32 truncation of the exact sum, and truncating it to
      bfloat16 (clearing the low 16 bits) truncates the exact sum, as the bfloat16 grid
      is part of the float32 grid.  A non-finite residual (overflow, inf or NaN operands)
      sends the chunk to the general path.
    * rtz ``*`` (bfloat16): the exact product ``M * 2**E`` (``M < 2**16``) is a float32
      unless it overflows or ``E < -149``, which means ``|exact| < 2**-134``: then
      ``|fl32(product)| <= 2**-134`` and truncation gives the right 0 (bfloat16's
      smallest subnormal is ``2**-133``).  So clearing the low 16 bits of the float32
      product truncates the exact one.  Chunks with a non-finite product take the
      general path.
    """
    m = c[0].size
    bf16 = fmt.name == "bfloat16"
    if rounding == "rne":
        if fmt.name not in ("binary32", "bfloat16") or op == "fma" or bf16 and op in ("div",
                                                                                     "sqrt"):
            return None
        f = work.get("s", np.float32, m)
        if op == "add":
            np.add(c[0], c[1], out=f)
        elif op == "sub":
            np.subtract(c[0], c[1], out=f)
        elif op == "mul":
            np.multiply(c[0], c[1], out=f)
        elif op == "div":
            np.divide(c[0], c[1], out=f)
        else:
            np.sqrt(c[0], out=f)
        if bf16:
            b = f.view(np.uint32)
            t = work.get("t", np.uint32, m)
            np.right_shift(b, np.uint32(16), out=t)
            t &= np.uint32(1)
            b += t
            b += np.uint32(0x7FFF)
            b &= np.uint32(0xFFFF0000)
        return f
    if rounding != "rtz":
        return None
    if op in ("add", "sub"):
        a, bb = c[0], c[1]
        s = work.get("s", np.float32, m)
        v = work.get("v", np.float32, m)
        w = work.get("w", np.float32, m)
        if op == "add":  # TwoSum(a, b)
            np.add(a, bb, out=s)
            np.subtract(s, a, out=v)  # b virtual
            np.subtract(s, v, out=w)  # a virtual
            np.subtract(a, w, out=w)  # a residual
            np.subtract(bb, v, out=v)  # b residual
            np.add(w, v, out=v)  # err
        else:  # TwoSum(a, -b)
            np.subtract(a, bb, out=s)
            np.subtract(s, a, out=v)  # (-b) virtual
            np.subtract(s, v, out=w)
            np.subtract(a, w, out=w)
            np.add(bb, v, out=v)  # -((-b) residual)
            np.subtract(w, v, out=v)
        if not np.isfinite(v).all():  # (a sum could overflow: test each)
            return None
        sb = s.view(np.uint32)
        t = work.get("t", np.uint32, m)
        np.bitwise_and(sb, np.uint32(0x80000000), out=t)
        t ^= v.view(np.uint32)  # err * sign(s), bit for bit
        step = work.get("step", np.bool_, m)
        np.less(t.view(np.float32), np.float32(0), out=step)
        np.subtract(sb, step, out=sb)
        if bf16:
            sb &= np.uint32(0xFFFF0000)
        return s
    if op == "mul" and bf16:
        p = work.get("s", np.float32, m)
        np.multiply(c[0], c[1], out=p)
        if not np.isfinite(p).all():
            return None
        p.view(np.uint32)[...] &= np.uint32(0xFFFF0000)
        return p
    return None


def _native_run(op: str, operands: list[Any], fmt: Format, rounding: str, overflow: str
                ) -> np.ndarray | None:
    """Fast path on the operands' own dtype; ``None`` where it does not apply."""
    cls = _registered(fmt)
    if cls is None or rounding not in ("rne",) + _DIRECTED:
        return None
    if cls == "f32" and fmt.name == "binary16" and rounding != "rne":
        return None
    intake = _native_f32 if cls == "f32" else _native_u8
    arrs = []
    for x in operands:
        v = intake(x, fmt)
        if v is None:
            return None
        arrs.append(v)
    if len(arrs) > 1:
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrs))
        except ValueError:
            return None
        flat = [np.broadcast_to(a, shape).reshape(-1) if a.shape == shape
                else np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1) for a in arrs]
    else:
        shape = arrs[0].shape
        flat = [arrs[0].reshape(-1)]
    n = flat[0].size
    out = np.empty(n, np.float64)
    if cls == "u8" and op == "fma":
        _u8_table("mul_exact", fmt, "rne", "ieee")
    work = _Work(min(_NCHUNK, max(n, 1)))
    with np.errstate(all="ignore"):
        if cls == "u8" and op in ("add", "sub", "mul", "div"):
            # Pair table: index code_a << 8 | code_b built in uint16, widened once for take.
            table = _u8_table(op, fmt, rounding, overflow)
            for start in range(0, n, _NCHUNK):
                stop = min(start + _NCHUNK, n)
                m = stop - start
                i16 = work.get("i16", np.uint16, m)
                np.left_shift(flat[0][start:stop], 8, out=i16, dtype=np.uint16)
                np.bitwise_or(i16, flat[1][start:stop], out=i16)
                idx = work.get("idx", np.intp, m)
                np.copyto(idx, i16)
                np.take(table, idx, out=out[start:stop], mode="clip")
            return out.reshape(shape)
        for start in range(0, n, _NCHUNK):
            stop = min(start + _NCHUNK, n)
            c = [v[start:stop] for v in flat]
            if cls == "f32":
                c = [_widen_bf16(v, work, f"x{i}") for i, v in enumerate(c)]
                r = _f32_fast_chunk(op, c, fmt, rounding, work)
                out[start:stop] = r if r is not None else _f32_chunk(op, c, fmt, rounding)
            else:
                out[start:stop] = _u8_chunk(op, c, fmt, rounding, overflow)
    if cls == "f32" and overflow == "saturate":
        np.clip(out, -fmt.max, fmt.max, out=out)
    return out.reshape(shape)

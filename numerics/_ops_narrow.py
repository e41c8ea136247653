"""Rounding exact pairs once into a narrow format, with IEEE flags.

A narrow format (at most 26 significant bits, range far inside binary64's: every
registered format but binary64) receives the exact result as a float64 pair
``h + lo`` with nothing scaled (``h`` the binary64 nearest of the exact value).
:func:`numerics.fast.encode_pair` rounds the exact sum ``h + lo`` with a single
rounding, so the result is the correctly rounded one in every deterministic
mode.

Stochastic rounding takes the truncation and the away-from-zero neighbour from
``rtz``/``ru``/``rd`` and decides with :mod:`numerics._ops_stochastic` on the
distance ``(|h| - |trunc|) + rel`` from the truncation, in quanta.

Flags: overflow and tininess "after rounding" are read off the rounding into
the same precision with an exponent range at least two binades wider on each
side (:func:`_ext_format`), which is rounding "as if the exponent range were
unbounded" near ``fmt``'s limits (IEEE 754-2019 7.4, 7.5).

Round-to-nearest-even binary32 without flags uses numpy's float32 cast of ``h``
(Figueroa, ``proofs/double_rounding.md`` D1: for ``+ - * / sqrt``
``RNE24(RNE53(x)) == RNE24(x)``); the caller passes ``figueroa=False`` for fma,
where the theorem fails (D2).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from numerics._ops_stochastic import _draws, _sr_away
from numerics.encoding import decode_codes, encode_pair
from numerics.formats import Format, as_format

__all__ = ["_BINARY32", "_ext_format", "_finish_narrow", "_round_to_fmt"]

_BINARY32 = as_format("binary32")


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

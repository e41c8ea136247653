"""Assertions for rounding kernels: the neighbour bracket, and stochastic rounding's law.

:func:`assert_rounded_from` checks that each result is one of the two values
of the format next to the exact value (the property every rounding mode
has, and the only per-call property of stochastic rounding).
:func:`assert_stochastic_rounding` runs a stochastic-rounding kernel many
times and tests, with a stated false-alarm rate, that it rounds away from
zero with the exact probability ``(|x| - |down|) / (|up| - |down|)``.

The exact values are read from float64 (or narrower) arrays, torch tensors,
or object arrays of :class:`fractions.Fraction`; the neighbours are computed
here from the format's fields, independently of :mod:`numerics.encoding`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.testing._codes import (
    code_to_float,
    floor_codes,
    is_nan_codes,
    mag_floor,
    native_dtype,
    values_to_codes,
)
from numerics.testing._intake import as_array

__all__ = ["assert_rounded_from", "assert_stochastic_rounding"]

_SHOW = 5


def _codes(x: Any, f: Format, name: str) -> np.ndarray:
    arr = as_array(x, name)
    native = native_dtype(f)
    if native is not None and arr.dtype == native:
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[native.itemsize]
        return arr.view(width).astype(np.uint64) & np.uint64((1 << f.bits) - 1)
    if arr.dtype.kind == "u" and arr.dtype == f.code_dtype:
        return arr.astype(np.uint64)
    with np.errstate(invalid="ignore", over="ignore"):
        as64 = np.asarray(arr, dtype=np.float64)
    codes, ok = values_to_codes(as64, f)
    if not ok.all():
        bad = int(np.argmin(ok.ravel()))
        raise ValueError(f"Got {name}.flat[{bad}]={float(as64.ravel()[bad])!r}, which is not "
                         f"a value of {f.name}")
    return codes


class _Bracket:
    """For each exact value: the code toward zero, the code away from zero, and the
    probability ``frac`` of rounding away (0 where the value is exact)."""

    def __init__(self, exact: Any, f: Format) -> None:
        arr = as_array(exact, "exact", exact=True)
        if arr.dtype.kind == "O":
            self._from_fractions(arr, f)
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                x = np.asarray(arr, dtype=np.float64)
            self._from_floats(x, f)
        self.shape = self.down.shape

    def _from_floats(self, x: np.ndarray, f: Format) -> None:
        finite = np.isfinite(x)
        down, frac = floor_codes(np.where(finite, x, 0.0), f)
        codes, ok = values_to_codes(x, f)
        exact = ok & finite
        self.down = np.where(exact, codes, down)
        self.frac = np.where(finite & ~exact, frac, 0.0)
        self.real = x
        self.special = ~finite          # NaN and infinities
        self.special_codes, self.special_ok = codes, ok
        self._finish(f)

    def _from_fractions(self, arr: np.ndarray, f: Format) -> None:
        items = arr.ravel().tolist()
        down = np.zeros(len(items), dtype=np.uint64)
        frac = np.zeros(len(items))
        real = np.zeros(len(items))
        for i, v in enumerate(items):
            q = Fraction(v)
            mag_q = abs(q)
            top = mag_q > f.max_exact
            m = f.max_finite_code if top else mag_floor(f, mag_q)
            lo = f.magnitude_value(max(m, 0))
            if top:
                step = Fraction(2) ** (f.emax - f.trailing_bits)
            else:
                step = f.magnitude_value(m + 1) - lo
            frac[i] = float((mag_q - lo) / step) if m >= 0 else 0.0
            code = max(m, 0)
            if q < 0 and f.signed and (code != 0 or f.has_negative_zero):
                code |= f.sign_mask
            down[i] = code
            real[i] = float(q) if abs(q) < 2**1000 else math.copysign(math.inf, q)
        shape = arr.shape
        self.down, self.frac, self.real = down.reshape(shape), frac.reshape(shape), \
            real.reshape(shape)
        self.special = np.zeros(shape, dtype=bool)
        self.special_codes = self.down
        self.special_ok = np.zeros(shape, dtype=bool)
        self._finish(f)

    def _finish(self, f: Format) -> None:
        mag = self.down & np.uint64(f.magnitude_mask)
        # the sign of the value itself: down may be +0 for a small negative value in a
        # format without -0, while up (the smallest magnitude) keeps the minus sign
        sign = np.where(np.signbit(self.real), np.uint64(f.sign_mask), np.uint64(0))
        beyond = (mag == np.uint64(f.max_finite_code)) & (self.frac > 0) & ~self.special
        up_mag = np.where(beyond, mag, mag + np.uint64(1))
        if not f.signed:
            sign = np.zeros_like(sign)
        up = up_mag | sign
        # a negative value toward zero from -smallest is -0 where the format has it
        self.up = np.where(self.frac > 0, up, self.down)
        self.beyond = beyond


def _allowed(b: _Bracket, result: np.ndarray, f: Format) -> np.ndarray:
    """Whether each result code is a neighbour of its exact value."""
    ok = (result == b.down) | (result == b.up)
    nan_r = is_nan_codes(result, f)
    # beyond max: max, or the overflow code (inf, or NaN in formats without inf)
    if f.has_infinity:
        over = (result & np.uint64(f.magnitude_mask)) == np.uint64(f.code_of_inf)  # type: ignore[arg-type]
        over &= (result & np.uint64(f.sign_mask)) == (b.down & np.uint64(f.sign_mask))
    else:
        over = nan_r
    ok |= b.beyond & over
    if b.special.any():
        nan_x = np.isnan(b.real)
        same = b.special_ok & (result == b.special_codes)
        inf_no_code = np.isinf(b.real) & ~b.special_ok & (nan_r | (
            (result & np.uint64(f.magnitude_mask)) == np.uint64(f.max_finite_code)))
        ok = np.where(b.special, np.where(nan_x, nan_r, same | inf_no_code), ok)
    return ok


def _bits(code: int, f: Format) -> str:
    return f"0x{code:0{(f.bits + 3) // 4}X}"


def _index(flat: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return "()"
    idx = np.unravel_index(flat, shape)
    return str(int(idx[0])) if len(shape) == 1 else "(" + ", ".join(str(int(i))
                                                                      for i in idx) + ")"


def _bracket_report(title: str, b: _Bracket, result: np.ndarray, bad: np.ndarray,
                    f: Format) -> str:
    flat = np.flatnonzero(bad)
    lines = [f"{title}: {len(flat)} of {bad.size} results are not its neighbours "
             f"in {f.name}"]
    rows = [["index", "result", "bits", "exact", "down", "up"]]
    for k in flat[:_SHOW]:
        r, d, u = (int(v.ravel()[k]) for v in (result, b.down, b.up))
        rows.append([_index(int(k), b.shape), repr(code_to_float(f, r)), _bits(r, f),
                     repr(float(b.real.ravel()[k])),
                     f"{code_to_float(f, d)!r} {_bits(d, f)}",
                     f"{code_to_float(f, u)!r} {_bits(u, f)}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def assert_rounded_from(result: Any, exact: Any, fmt: Format | str) -> None:
    """Assert that each result is one of the two values of ``fmt`` next to the exact value.

    For an exact value ``x`` between consecutive values ``down < x < up`` of
    ``fmt`` (``down`` toward zero, signs kept: a negative ``x`` above
    ``-smallest`` has ``down = -0`` where the format has ``-0``), the result
    must be ``down`` or ``up``; an ``x`` that is a value of ``fmt`` must come
    back exactly.  Beyond ``max`` the neighbours are ``max`` and the overflow
    code (the infinity, or NaN in formats without one); NaN must give NaN.
    This is the bracket every rounding mode satisfies, and the only
    per-call property of stochastic rounding.

    Parameters
    ----------
    result : array_like or torch.Tensor
        Values (or codes) of ``fmt``.
    exact : array_like
        The exact values: float64 or narrower arrays, torch tensors, or object
        arrays of :class:`fractions.Fraction`; same shape as ``result``.
    fmt : Format or str
        The format of ``result``.

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> x = np.array([1.0 + 2**-9, 2.0])                 # between 1 and 1 + 2**-7 in bf16
    >>> assert_rounded_from(np.array([1.0078125, 2.0], ml_dtypes.bfloat16), x, "bf16")
    >>> assert_rounded_from(np.array([1.015625, 2.0], ml_dtypes.bfloat16), x, "bf16")
    Traceback (most recent call last):
    AssertionError: Not rounded from x: 1 of 2 results are not its neighbours in bfloat16
      index  result    bits    exact        down        up
      0      1.015625  0x3F82  1.001953125  1.0 0x3F80  1.0078125 0x3F81
    """
    f = as_format(fmt)
    b = _Bracket(exact, f)
    r = _codes(result, f, "result")
    if r.shape != b.shape:
        raise ValueError(f"Got result of shape {r.shape} and exact of shape {b.shape}; "
                         "they must be equal")
    bad = ~_allowed(b, r, f)
    if bad.any():
        raise AssertionError(_bracket_report("Not rounded from x", b, r, bad, f))


def _log_binom_coefficients(n: int) -> np.ndarray:
    j = np.arange(1, n + 1, dtype=np.float64)
    return np.concatenate([[0.0], np.cumsum(np.log(n - j + 1) - np.log(j))])


def _two_sided_p(k: np.ndarray, p: np.ndarray, n: int) -> np.ndarray:
    """Exact two-sided binomial p-values ``min(1, 2 min(P(K <= k), P(K >= k)))``."""
    out = np.ones(k.shape)
    log_c = _log_binom_coefficients(n)
    j = np.arange(n + 1, dtype=np.float64)
    chunk = max(1, 4_000_000 // (n + 1))
    for s in range(0, k.size, chunk):
        pp = p[s:s + chunk, None]
        with np.errstate(divide="ignore"):
            logpmf = log_c + j * np.log(pp) + (n - j) * np.log1p(-pp)
        pmf = np.exp(logpmf)
        kk = k[s:s + chunk]
        cols = j[None, :]
        lower = np.where(cols <= kk[:, None], pmf, 0.0).sum(axis=1)
        upper = np.where(cols >= kk[:, None], pmf, 0.0).sum(axis=1)
        out[s:s + chunk] = np.minimum(1.0, 2 * np.minimum(lower, upper))
    return out


def assert_stochastic_rounding(
    kernel: Callable[[Any, int], Any],
    x: Any,
    fmt: Format | str,
    trials: int,
    *,
    alpha: float = 1e-6,
) -> None:
    """Assert that ``kernel`` rounds stochastically with the exact probabilities.

    ``kernel(x, seed)`` is called for ``seed = 0, 1, ..., trials - 1`` and must
    return the rounded values (or codes) of ``fmt``, shape of ``x``.  Every
    call must satisfy :func:`assert_rounded_from`; then, with ``down < x < up``
    the neighbours of each element, the count ``K`` of calls that rounded
    away from zero must be consistent with ``Binomial(trials, p)``,
    ``p = (|x| - |down|) / (|up| - |down|)``, the exact probability.

    Two tests, each at level ``alpha / 2``: an exact two-sided binomial test
    per inexact element (Bonferroni over the elements), and a test of the
    pooled count ``S = sum K`` with Bernstein's inequality,
    ``P(|S - E S| >= t) <= 2 exp(-t**2 / (2 (V + t / 3)))``, ``V = trials *
    sum p (1 - p)``, which catches a small bias shared by every element (such
    as ``u <= frac`` for ``u < frac``).  A correct kernel therefore fails with
    probability at most ``alpha`` (default ``1e-6``).  Elements beyond
    ``max`` are only bracket-checked.

    Parameters
    ----------
    kernel : callable ``(x, seed) -> result``
        The stochastic-rounding kernel.
    x : array_like
        The inputs (their exact values are the float64 values of ``x``).
    fmt : Format or str
        The format rounded to.
    trials : int
        Number of calls, ``>= 1``.
    alpha : float
        The false-alarm rate, in ``(0, 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> from numerics import encode, decode
    >>> x = np.float32([1 + 2**-9, 1 + 3 * 2**-9, -3.0])
    >>> def sr(x, seed):
    ...     return decode(encode(x, "bf16", rounding="sr", rng=seed), "bf16")
    >>> assert_stochastic_rounding(sr, x, "bf16", trials=400)
    >>> def biased(x, seed):                          # rounds away half the time, always
    ...     return decode(encode(x, "bf16", rounding="ru" if seed % 2 else "rtz"), "bf16")
    >>> assert_stochastic_rounding(biased, x, "bf16", trials=400)
    Traceback (most recent call last):
    AssertionError: Not stochastic rounding (alpha = 1e-06, 400 trials, bfloat16)
    2 of 2 inexact elements fail the binomial test; pooled: 400 away from zero, 400 expected
      index  x            p     away  expected  p-value
      0      1.001953125  0.25  200   100       1.2e-26
      1      1.005859375  0.75  200   300       1.2e-26
    """
    f = as_format(fmt)
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"Got {trials=!r}, but it must be an int >= 1")
    if isinstance(alpha, bool) or not isinstance(alpha, (float, int)) or not 0 < alpha < 1:
        raise ValueError(f"Got {alpha=!r}, but it must be a number in (0, 1)")
    if not callable(kernel):
        raise TypeError(f"Got {kernel=!r}, but it must be callable as kernel(x, seed)")
    b = _Bracket(x, f)
    away = np.zeros(b.shape, dtype=np.int64)
    for seed in range(int(trials)):
        r = _codes(kernel(x, seed), f, f"kernel(x, {seed})")
        if r.shape != b.shape:
            raise ValueError(f"Got kernel(x, {seed}) of shape {r.shape}, but x has shape "
                             f"{b.shape}")
        bad = ~_allowed(b, r, f)
        if bad.any():
            raise AssertionError(_bracket_report(f"kernel(x, seed={seed})", b, r, bad, f))
        away += (r == b.up) & (b.up != b.down)
    live = (b.frac > 0) & ~b.beyond
    k, p = away[live], b.frac[live]
    n = int(trials)
    m = int(live.sum())
    if m == 0:
        return
    pvals = _two_sided_p(k.astype(np.float64), p, n)
    failing = pvals < alpha / 2 / m
    total, expected = int(k.sum()), float(n * p.sum())
    variance = float(n * (p * (1 - p)).sum())
    t = abs(total - expected)
    pooled_p = 2 * math.exp(-t * t / (2 * (variance + t / 3))) if t > 0 else 1.0
    pooled_fail = pooled_p < alpha / 2
    if not failing.any() and not pooled_fail:
        return
    lines = [f"Not stochastic rounding (alpha = {alpha:g}, {n} trials, {f.name})",
             f"{int(failing.sum())} of {m} inexact elements fail the binomial test; pooled: "
             f"{total} away from zero, {expected:.6g} expected"
             + (f" (Bernstein p <= {pooled_p:.2g})" if pooled_fail else "")]
    idx = np.flatnonzero(live.ravel())
    rows = [["index", "x", "p", "away", "expected", "p-value"]]
    for i in np.flatnonzero(failing)[:_SHOW]:
        rows.append([_index(int(idx[i]), b.shape), repr(float(b.real.ravel()[idx[i]])),
                     f"{p[i]:.6g}", str(int(k[i])), f"{n * p[i]:.6g}", f"{pvals[i]:.2g}"])
    if len(rows) > 1:
        widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                  for r in rows]
    raise AssertionError("\n".join(lines))

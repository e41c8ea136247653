"""Assertions for rounding kernels: the neighbour bracket, and stochastic rounding's law.

:func:`assert_rounded_from` checks that each result is one of the two values
of the format next to the exact value (the property every rounding mode
has, and the only per-call property of stochastic rounding).
:func:`assert_stochastic_rounding` runs a stochastic-rounding kernel many
times and tests, with a stated false-alarm rate, that it rounds away from
zero with the exact probability ``(|x| - |down|) / (|up| - |down|)``.

The exact values are read from float arrays, torch tensors, integer arrays
and object arrays of ints, :class:`fractions.Fraction` or
:class:`decimal.Decimal`, each at its exact value (of any size: ``10**400``
is beyond ``max`` of every format); the neighbours are computed here from
the format's fields, independently of :mod:`numerics.encoding`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.testing._codes import (
    code_to_float,
    floor_codes,
    fraction_floor,
    is_nan_codes,
    result_codes,
    values_to_codes,
)
from numerics.testing._intake import as_array, show_exact, split_exact

__all__ = ["assert_rounded_from", "assert_stochastic_rounding"]

_SHOW = 5


class _Bracket:
    """For each exact value: the code toward zero (``down``), the code away from zero
    (``up``), and the probability ``frac`` of rounding away (0 where the value is exact).

    ``special`` marks NaN and the infinities, ``nan_only`` the values an unsigned
    format holds no neighbour of (zero and below: they encode to NaN).
    """

    def __init__(self, exact: Any, f: Format) -> None:
        arr = as_array(exact, "exact", exact=True)
        x, self.rest = split_exact(arr)          # float64, and what it rounded: exactly
        finite = np.isfinite(x)
        down, frac = floor_codes(np.where(finite, x, 0.0), f)
        codes, ok = values_to_codes(x, f)
        held = ok & finite
        self.down = np.where(held, codes, down)
        self.frac = np.where(finite & ~held, frac, 0.0)
        self.special = np.array(~finite)         # NaN and infinities
        self.negative = np.array(np.signbit(x))
        positive = np.array(x > 0)
        for i, q in self.rest.items():           # beyond float64, or not a float64
            self.down.flat[i], self.frac.flat[i], _ = fraction_floor(f, q)
            self.special.flat[i] = False
            self.negative.flat[i], positive.flat[i] = q < 0, q > 0
        self.real = x
        self.special_codes, self.special_ok = codes, ok
        self.shape = self.down.shape
        self.nan_only = np.zeros(self.shape, dtype=bool)
        if not f.signed:
            self.nan_only = ~positive & ~np.isnan(x)
            self.down = np.where(self.nan_only, np.uint64(f.code_of_nan), self.down)  # type: ignore[arg-type]
            self.frac = np.where(self.nan_only, 0.0, self.frac)
            self.negative = np.zeros(self.shape, dtype=bool)
        mag = self.down & np.uint64(f.magnitude_mask)
        # the sign of the value itself: down may be +0 for a small negative value in a
        # format without -0, while up (the smallest magnitude) keeps the minus sign
        sign = np.where(self.negative, np.uint64(f.sign_mask), np.uint64(0))
        beyond = (mag == np.uint64(f.max_finite_code)) & (self.frac > 0) & ~self.special
        up = np.where(beyond, mag, mag + np.uint64(1)) | sign
        # a negative value toward zero from -smallest is -0 where the format has it
        self.up = np.where(self.frac > 0, up, self.down)
        self.beyond = beyond
        if self.special.any():   # shown in messages: what each special may become
            self._special_neighbours(f)

    def _special_neighbours(self, f: Format) -> None:
        """``down``/``up`` of NaN and the infinities (for the messages; :func:`_allowed`
        decides them): the code itself, or ``+-max`` and NaN for an infinity without one."""
        sign = np.where(self.negative & np.bool_(f.signed), np.uint64(f.sign_mask),
                        np.uint64(0))
        nan = np.uint64(f.code_of_nan if f.code_of_nan is not None else 0)
        top = np.uint64(f.max_finite_code) | sign
        held = self.special_ok & self.special
        unheld_inf = self.special & np.isinf(self.real) & ~self.special_ok & ~self.nan_only
        self.down = np.where(held, self.special_codes,
                             np.where(unheld_inf, top, np.where(self.special, nan, self.down)))
        self.up = np.where(unheld_inf & np.bool_(f.has_nan), nan,
                           np.where(self.special, self.down, self.up))

    def text(self, k: int) -> str:
        """The exact value at flat index ``k``, as the message shows it."""
        q = self.rest.get(k)
        return repr(float(self.real.ravel()[k])) if q is None else show_exact(q)


def _allowed(b: _Bracket, result: np.ndarray, f: Format) -> np.ndarray:
    """Whether each result code is a neighbour of its exact value."""
    ok = (result == b.down) | (result == b.up)
    nan_r = is_nan_codes(result, f)
    sign = np.where(b.negative & np.bool_(f.signed), np.uint64(f.sign_mask), np.uint64(0))
    # beyond max: max, or the overflow code (inf, or NaN in formats without inf)
    if f.has_infinity:
        over = result == (np.uint64(f.code_of_inf) | sign)  # type: ignore[arg-type]
    else:
        over = nan_r
    ok |= b.beyond & over
    if b.special.any():
        nan_x = np.isnan(b.real)
        same = b.special_ok & (result == b.special_codes)
        # an infinity the format cannot hold: NaN, or max of the same sign (saturation)
        inf_no_code = np.isinf(b.real) & ~b.special_ok & (
            nan_r | (result == (np.uint64(f.max_finite_code) | sign)))
        ok = np.where(b.special, np.where(nan_x, nan_r, same | inf_no_code), ok)
    return np.where(b.nan_only, nan_r, ok)


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
                     b.text(int(k)),
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
    code (the infinity, or NaN in formats without one), with the sign of
    ``x``; an infinite ``x`` must give the same infinity, or in a format
    without infinities NaN or ``max`` of its sign (saturation); NaN must give
    NaN.  Below ``2**emin`` a format without zero has only ``sign(x) 2**emin``
    (``+2**emin`` for zero), and an unsigned format (e8m0fnu) holds no
    neighbour of zero or of a negative ``x``: the result must be NaN.
    This is the bracket every rounding mode satisfies, and the only
    per-call property of stochastic rounding.

    Parameters
    ----------
    result : array_like or torch.Tensor
        Values (or codes) of ``fmt``.
    exact : array_like
        The exact values: float arrays, torch tensors, integer arrays, or
        object arrays of ints, :class:`fractions.Fraction` or
        :class:`decimal.Decimal` (each taken exactly); same shape as ``result``.
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
    r = result_codes(result, f, "result")
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


def _pooled_cause(per_call: np.ndarray, p: np.ndarray) -> str:
    """What a failing pooled test most likely saw: roundings that depend on each other
    within a call, or a bias every element shares.

    Independent roundings give per-call counts of variance ``sum p (1 - p)``; a
    random number shared by the elements of a call moves them together and
    multiplies that variance (about ``m`` times for ``m`` equal ``p``), while a
    shared bias moves the mean and leaves the variance.  The ratio decides the
    wording only: the tests themselves are the binomial and Bernstein tests.
    """
    v = float((p * (1 - p)).sum())
    n = per_call.size
    if n < 2 or v == 0:
        return "the pooled count is off: a bias shared by the elements"
    ratio = float(per_call.var(ddof=1)) / v
    spread = (f"per call, the count of elements rounded away varies {ratio:.3g} times as "
              f"much as independent roundings would")
    if p.size > 1 and ratio > 1.5 and ratio > 1 + 8 * math.sqrt(2 / (n - 1)):
        return (spread + ": the elements are not rounded independently (one random "
                "number shared by the elements of a call?); each element needs its own draw")
    return spread + ("; every element leans the same way: a bias shared by the elements "
                     "(such as u <= frac for u < frac)")


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

    The elements of one call must be rounded independently, each with its
    own random draw: the variance ``V`` assumes it, so with enough elements
    the pooled test also fails a kernel that shares one random number among
    the elements of a call, although each element alone follows its law.
    The message tells the two causes apart by the spread of the per-call
    counts of elements rounded away (``V / trials`` for independent
    roundings; a shared draw multiplies it).

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
    live = (b.frac > 0) & ~b.beyond
    per_call = np.zeros(int(trials), dtype=np.int64)   # inexact elements rounded away
    for seed in range(int(trials)):
        r = result_codes(kernel(x, seed), f, f"kernel(x, {seed})")
        if r.shape != b.shape:
            raise ValueError(f"Got kernel(x, {seed}) of shape {r.shape}, but x has shape "
                             f"{b.shape}")
        bad = ~_allowed(b, r, f)
        if bad.any():
            raise AssertionError(_bracket_report(f"kernel(x, seed={seed})", b, r, bad, f))
        went = (r == b.up) & (b.up != b.down)
        away += went
        per_call[seed] = int((went & live).sum())
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
             + ((f" (Bernstein p <= {pooled_p:.2g})" if pooled_p > 0
                 else " (Bernstein p < 1e-300)") if pooled_fail else "")]
    if pooled_fail:
        lines.append(_pooled_cause(per_call, p))
    idx = np.flatnonzero(live.ravel())
    rows = [["index", "x", "p", "away", "expected", "p-value"]]
    for i in np.flatnonzero(failing)[:_SHOW]:
        rows.append([_index(int(idx[i]), b.shape), b.text(int(idx[i])),
                     f"{p[i]:.6g}", str(int(k[i])), f"{n * p[i]:.6g}", f"{pvals[i]:.2g}"])
    if len(rows) > 1:
        widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                  for r in rows]
    raise AssertionError("\n".join(lines))

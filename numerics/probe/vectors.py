"""Inputs for probing: the black-box wrapper, random values over many binades with
cancellation, and products written as two factors of the input format."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from numerics.formats import Format
from numerics.probe.model import round_into
from numerics.probe.result import ProbeError

__all__ = ["BlackBox", "check_int", "check_seed", "factor", "input_dtype", "random_factors",
           "random_values"]


def check_int(value: object, name: str, lo: int, hi: int) -> int:
    """``value`` as an int, checked to be an int (or numpy integer; not a bool) in
    ``[lo, hi]``; ValueError naming ``name`` otherwise.

    Examples
    --------
    >>> check_int(10**30, "trials", 1, 10**6)
    Traceback (most recent call last):
    ...
    ValueError: Got trials=1000000000000000000000000000000, but it must be an int in [1, 1000000]
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not lo <= value <= hi:
        raise ValueError(f"Got {name}={value!r}, but it must be an int in [{lo}, {hi}]")
    return int(value)


def check_seed(seed: object) -> int:
    """``seed`` as an int, checked to be an int ``>= 0`` (the seed of
    ``numpy.random.default_rng``); TypeError or ValueError naming it otherwise."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"Got {seed=!r}, but it must be an int >= 0")
    if seed < 0:
        raise ValueError(f"Got {seed=!r}, but it must be an int >= 0")
    return int(seed)


def input_dtype(fmt: Format) -> Any:
    """The array dtype that carries values of ``fmt`` to a black box.

    binary64, binary32, binary16 and bfloat16 travel in their own dtype; any other
    format of at most binary32's precision and range in float32, else float64.
    """
    own = {"binary64": np.float64, "binary32": np.float32, "binary16": np.float16}
    if fmt.name in own:
        return own[fmt.name]
    if fmt.name == "bfloat16":
        import ml_dtypes  # imported here: it takes most of a second

        return ml_dtypes.bfloat16
    if fmt.precision <= 24 and fmt.emax <= 127 and fmt.emin - fmt.trailing_bits >= -149:
        return np.float32
    return np.float64


class BlackBox:
    """A callable under probe: counts calls, checks shapes, turns failures into
    :class:`ProbeError` (what was called, what happened)."""

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        if not callable(fn):
            raise TypeError(f"Got {name}={fn!r}, but it must be callable")
        self.fn = fn
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self.calls = 0

    def __call__(self, shape: tuple[int, ...], *args: np.ndarray) -> np.ndarray:
        """Call with ``args``; the output as float64 of the expected ``shape``."""
        self.calls += 1
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = self.fn(*args)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # asyncio.CancelledError, GeneratorExit too
            text = " ".join(str(err).split())
            text = text if len(text) <= 300 else text[:297] + "..."
            what = type(err).__name__ + (f": {text}" if text else "")
            raise ProbeError(
                f"{self.name} raised {what} (call {self.calls}, "
                f"inputs of shapes {[a.shape for a in args]})",
                {"call": self.calls, "exception": what},
            ) from err
        try:
            arr = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ProbeError(
                f"{self.name} returned a {type(out).__name__} that numpy cannot read as "
                f"numbers ({err}); return a numpy array (e.g. tensor.float().cpu().numpy())",
                {"call": self.calls, "returned": type(out).__name__},
            ) from err
        if arr.shape != shape:
            raise ProbeError(
                f"{self.name} returned shape {arr.shape} for inputs of shapes "
                f"{[a.shape for a in args]}, expected {shape}",
                {"call": self.calls, "shape": list(arr.shape), "expected": list(shape)},
            )
        return arr

    def deterministic(self, shape: tuple[int, ...], *args: np.ndarray) -> np.ndarray:
        """Call twice with the same inputs; ProbeError if the outputs' bits differ."""
        first = self(shape, *args)
        second = self(shape, *args)
        if not np.array_equal(first.view(np.uint64), second.view(np.uint64)):
            diff = np.flatnonzero(first.view(np.uint64) != second.view(np.uint64))
            i = int(diff[0])
            raise ProbeError(
                f"{self.name} is not deterministic: two calls with the same inputs differ "
                f"in {diff.size} of {first.size} outputs (first at flat index {i}: "
                f"{first.flat[i]!r} then {second.flat[i]!r}); no fixed model can "
                "describe it",
                {"finding": "not deterministic", "differing": int(diff.size),
                 "outputs": int(first.size), "first": [i, float(first.flat[i]),
                                                       float(second.flat[i])]},
            )
        return first


def factor(p_exp: int, sig: float, fmt: Format) -> tuple[float, float] | None:
    """Factors ``(a, b)``, normal numbers of ``fmt``, with ``a b = sig 2**p_exp``.

    ``sig`` must be a value of ``fmt`` in ``[1, 2)``.  None when the product is out
    of reach of two normal factors.

    Examples
    --------
    >>> from numerics import get_format
    >>> factor(-30, 1.5, get_format("bf16"))
    (4.57763671875e-05, 3.0517578125e-05)
    """
    ea = -((-p_exp) // 2)  # ceil(p_exp / 2)
    eb = p_exp - ea
    for ea_try, eb_try in ((ea, eb), (eb, ea)):
        lo_a = max(ea_try, fmt.emin)
        lo_a = min(lo_a, fmt.emax)
        eb_need = p_exp - lo_a
        if fmt.emin <= eb_need <= fmt.emax and sig * 2.0**lo_a <= fmt.max:
            return sig * 2.0**lo_a, 2.0**eb_need
    return None


def _round(x: np.ndarray, fmt: Format) -> np.ndarray:
    return round_into(x, None, fmt, "rne")


def random_values(rng: np.random.Generator, shape: tuple[int, ...], fmt: Format,
                  lo: int, hi: int) -> np.ndarray:
    """Random values of ``fmt`` with exponents uniform in ``[lo, hi]``, random signs."""
    e = rng.integers(lo, hi + 1, size=shape)
    sig = 1.0 + rng.random(shape)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return _round(sign * np.minimum(np.ldexp(sig, e), fmt.max), fmt)


def _cancel(rng: np.random.Generator, x: np.ndarray, fmt: Format) -> np.ndarray:
    """Make about a quarter of the positions (last axis) cancel an earlier one."""
    k = x.shape[-1]
    if k < 2:
        return x
    x = x.copy()
    targets = rng.choice(k, size=max(1, k // 4), replace=False)
    for t in targets:
        src = int(rng.integers(0, k))
        if src == t:
            continue
        near = np.where(rng.random(x.shape[:-1]) < 0.5, 1.0,
                        1.0 + 2.0 ** -rng.integers(1, fmt.precision + 1, x.shape[:-1]))
        x[..., t] = _round(np.clip(-x[..., src] * near, -fmt.max, fmt.max), fmt)
    return x


def sum_span(fmt: Format, n: int) -> tuple[int, int]:
    """Exponent range of random terms: wide, but no sum of ``n`` can overflow."""
    hi = min(20, fmt.emax - math.ceil(math.log2(max(n, 2))) - 2)
    lo = max(hi - 40, fmt.emin + 1)
    return lo, hi


def random_sum_inputs(rng: np.random.Generator, rows: int, n: int, fmt: Format) -> np.ndarray:
    """``rows`` vectors of ``n`` values of ``fmt`` over many binades, with cancellation."""
    lo, hi = sum_span(fmt, n)
    return _cancel(rng, random_values(rng, (rows, n), fmt, lo, hi), fmt)


def factor_span(fin: Format, out: Format, k: int) -> tuple[int, int]:
    """Exponent range of random factors: products and sums stay in range."""
    room = min(out.emax, 127) - math.ceil(math.log2(max(k, 2))) - 2
    hi = min(fin.emax, room // 2, 12)
    lo = max(fin.emin + 1, hi - 12, (max(out.emin, -126) + 2) // 2)
    return lo, max(lo, hi)


def random_factors(rng: np.random.Generator, rows: int, k: int, fin: Format,
                   out: Format) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` pairs of factor vectors ``(a, b)`` of length ``k`` with cancellation:
    some products are the exact or near negation of another one."""
    lo, hi = factor_span(fin, out, k)
    a = random_values(rng, (rows, k), fin, lo, hi)
    b = random_values(rng, (rows, k), fin, lo, hi)
    targets: Any = rng.choice(k, size=max(1, k // 4), replace=False) if k >= 2 else []
    for t in targets:
        src = int(rng.integers(0, k))
        if src == t:
            continue
        b[:, t] = b[:, src]
        near = np.where(rng.random(rows) < 0.5, 1.0,
                        1.0 + 2.0 ** -rng.integers(1, fin.precision + 1, rows))
        a[:, t] = _round(np.clip(-a[:, src] * near, -fin.max, fin.max), fin)
    return a, b


def random_matrices(rng: np.random.Generator, m: int, k: int, n: int, fin: Format,
                    out: Format) -> tuple[np.ndarray, np.ndarray]:
    """Random ``A`` (m, k) and ``B`` (k, n) with cancelling columns/rows."""
    lo, hi = factor_span(fin, out, k)
    A = random_values(rng, (m, k), fin, lo, hi)
    B = random_values(rng, (k, n), fin, lo, hi)
    targets: Any = rng.choice(k, size=max(1, k // 4), replace=False) if k >= 2 else []
    for t in targets:
        src = int(rng.integers(0, k))
        if src == t:
            continue
        B[t] = B[src]
        near = np.where(rng.random(m) < 0.5, 1.0,
                        1.0 + 2.0 ** -rng.integers(1, fin.precision + 1, m))
        A[:, t] = _round(np.clip(-A[:, src] * near, -fin.max, fin.max), fin)
    return A, B

"""The exact path of :mod:`numerics.ops`: any format, any mode, with flags.

For every element: operands with a non-finite value (and ``x / 0``,
``sqrt(x < 0)``) take their IEEE 754-2019 result and flags from binary64
arithmetic, which is exact for them (:func:`_special_results`); the others run
an exact kernel (:mod:`numerics._ops_kernels`) and are rounded once, into
binary64 by :mod:`numerics._ops_binary64` or into any other format by
:mod:`numerics._ops_narrow`.  Special results go through ``encode``'s overflow
rule for formats without inf; a NaN result in a format without NaN is a
ValueError naming the element.

The fast paths (:mod:`numerics._ops_fast`, :mod:`numerics._ops_native`) fall
back to :func:`_run_exact` for what they do not cover, so it sits below them;
:func:`numerics.ops._run` dispatches between the three.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics._ops_binary64 import _b64_round, _is_binary64
from numerics._ops_kernels import (
    Kernel,
    _is_narrow,
    _k_add,
    _k_div,
    _k_fma,
    _k_mul,
    _k_sqrt,
    _unscale,
)
from numerics._ops_narrow import _finish_narrow
from numerics._ops_operands import _index_text, _prepare
from numerics.encoding import decode_codes, encode_pair
from numerics.formats import Format

__all__ = ["FLAG_NAMES", "_deliver", "_deliver_special", "_run_exact", "_special_mask",
           "_special_results"]

#: The IEEE 754-2019 exception flags, in the order of :class:`numerics.ops.Flags`.
FLAG_NAMES = ("inexact", "underflow", "overflow", "invalid", "divide_by_zero")


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


def _deliver_special(vals: np.ndarray, fmt: Format, overflow: str) -> np.ndarray:
    """IEEE results of special elements (inf, NaN, exact zeros: values of binary64)
    delivered in ``fmt`` under ``encode``'s overflow rule."""
    if _is_binary64(fmt):
        return np.clip(vals, -fmt.max, fmt.max) if overflow == "saturate" else vals
    return decode_codes(encode_pair(vals, None, fmt, rounding="rne", overflow=overflow), fmt)


def _deliver(res: np.ndarray, fmt: Format, shape: tuple[int, ...], scalar: bool) -> Any:
    """Flat results in the operands' shape (a numpy scalar for scalar operands); -0
    becomes +0 in formats without negative zero."""
    if not fmt.has_negative_zero:
        res = res + 0.0
    res = res.reshape(shape)
    return res[()] if scalar else res


def _run_exact(op: str, operands: list[Any], names: list[str], fmt: Format, rounding: str,
               overflow: str, tininess: str, flags: bool, rng: Any, sr_bits: int | None
               ) -> Any:
    """``op`` on ``operands`` rounded once into ``fmt`` by the exact path (options
    already checked).

    Returns the float64 result (the broadcast shape, a numpy scalar for scalar
    operands) or, with ``flags``, ``(result, flags)`` where ``flags`` maps each name of
    :data:`FLAG_NAMES` to a boolean array (or scalar) of the same shape.
    """
    op, xs, shape, scalar = _prepare(op, operands, names, fmt)
    n = xs[0].size
    special = _special_mask(op, xs)
    any_special = bool(np.any(special))
    if any_special:
        fin = [np.where(special, 1.0, x) for x in xs]
    else:
        fin = xs
    wide = not _is_narrow(fmt)
    b64 = _is_binary64(fmt)
    kernels: dict[str, Kernel] = {
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
        res = res.copy()
        res[sp] = _deliver_special(r_sp[sp], fmt, overflow)
        if flags:
            for key in ("inexact", "overflow", "underflow"):
                fl[key] = fl[key] & ~sp
            fl["invalid"] = (fl["invalid"] & ~sp) | (inv_sp & sp)
    res = _deliver(res, fmt, shape, scalar)
    if not flags:
        return res
    fl["divide_by_zero"] = dz & special if any_special else dz
    return res, {f: (fl[f].reshape(shape)[()] if scalar else fl[f].reshape(shape))
                 for f in FLAG_NAMES}

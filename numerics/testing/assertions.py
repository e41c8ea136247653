"""Assertions for kernel tests: ULP closeness, bitwise equality, error bounds, rounding.

Inputs are numpy arrays (any shape; ml_dtypes dtypes included), torch
tensors (any device, moved to the CPU; ``bfloat16`` and ``float8_*`` read bit
for bit through the ml_dtypes dtype of the same format), real scalars and
nested lists of them.  An array in a float dtype that holds one format is
read bit for bit; an array of an unsigned integer dtype equal to
``fmt.code_dtype`` is read as codes of ``fmt`` (what
:func:`numerics.testing.strategies.arrays` gives for formats without a
dtype); anything else is read at its exact value: floats, integers (beyond
``2**53`` too), Fractions, Decimals and long doubles alike, never rounded to
float64 first.  A value that is not one of the format raises ValueError
naming it (only the reference ``desired`` of :func:`assert_ulp_close` may lie
between two values; :func:`assert_within_bound` takes exact values of any
size).  ``None``, strings, complex numbers and the like raise TypeError;
ragged lists raise ValueError.

Failure messages are plain text: the number of failing elements, the worst
case (its index and both values), the first failing indices with both values
and their bits side by side, and a histogram of the distances.  Mismatches that are not a distance
are named as such in the ``ulp`` column and the histogram: ``NaN vs number``,
``inf vs finite``, ``NaN sign``, ``NaN payload``, ``-0 vs +0``.

The distance between two codes is the number of steps between them in the
ordered list of the format's values (``-max ... -0 = +0 ... +max``, with the
infinities one step beyond ``max``), computed exactly with 64-bit unsigned
integers: ``-max`` and ``+max`` of binary64 are ``2 * (2**63 - 2**52) - 2``
apart, with no wrap-around.  A reference that is not a value of the format
(a float64 reference for a bfloat16 result) lies between two codes: its
distance is fractional, and a correctly rounded result is within 0.5 ulp.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Iterator, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from numerics.formats import Format, as_format
from numerics.testing._codes import (
    code_to_float,
    dtype_format_name,
    is_nan_codes,
    ordinal_distance,
    ordinals,
    read_codes,
)
from numerics.testing._intake import as_array, exact_value

__all__ = [
    "ALGORITHMS",
    "assert_bitwise_equal",
    "assert_ulp_close",
    "assert_within_bound",
    "tolerance_for",
    "ulp_distances",
]

#: The summation algorithms :func:`tolerance_for` knows.
ALGORITHMS: tuple[str, ...] = ("recursive", "pairwise", "kahan", "neumaier", "blocked", "exact")
_OPERATIONS = ("sum", "dot")
_CHAINS = ("chain", "rmsnorm")
_ROUNDINGS = ("rne", "rna", "rtz", "ru", "rd", "rto", "sr")
_SHOW = 5  # failing elements listed in a message
_NAN_MISMATCH = np.uint64(2**64 - 1)
#: The names of mismatches that are not a distance, in the order the histogram lists
#: them; a comparison's ``label`` holds 1 + the index here (0: a distance).
_LABELS = ("NaN vs number", "inf vs finite", "inf sign", "NaN sign", "NaN payload",
           "-0 vs +0")
_NONE, _NAN_NUMBER, _INF_FINITE, _INF_SIGN, _NAN_SIGN, _NAN_PAYLOAD, _ZERO_SIGN = (
    np.uint8(i) for i in range(7))


# --------------------------------------------------------------------------- input
def _format_of(arr: np.ndarray) -> str | None:
    """The format name of a float array's dtype; None for int/object/float64-less."""
    if arr.dtype.kind in "iuO":
        return None
    name = dtype_format_name(arr.dtype)
    if name is None:
        raise TypeError(f"Got an array of dtype {arr.dtype}, which holds no known format; "
                        "pass fmt=")
    return name


def _infer_format(a: np.ndarray, d: np.ndarray, fmt: Format | str | None) -> Format:
    if fmt is not None:
        return as_format(fmt)
    names = [n for n in (_format_of(a), _format_of(d)) if n is not None and n != "binary64"]
    if len(set(names)) > 1:
        raise TypeError(f"Got actual of dtype {a.dtype} and desired of dtype {d.dtype}; "
                        "pass fmt= to say which format to compare in")
    return as_format(names[0] if names else "binary64")


class _Side:
    """One argument read in a format: its codes, and for a reference that is not a
    value of the format, the float64 values and the fractional part beyond the code."""

    def __init__(self, arr: np.ndarray, fmt: Format, name: str, *, real_ok: bool) -> None:
        hint = "; round it first (numerics.round_to)" + (
            "" if real_ok else " or compare it as the reference, desired=")
        read = read_codes(arr, fmt, name, real_ok=real_ok, hint=hint)
        self.codes, self.frac, self.real = read.codes, read.frac, read.real
        # the exact frac where float64 rounds it (a Fraction reference), by flat index
        # of this argument; ``index`` maps the broadcast shape back to those indices
        self.exact_frac = read.exact_frac
        self.exact_values = read.exact_values
        self.index: np.ndarray | None = None

    def piece(self, lo: int, hi: int) -> _Side:
        """This side's flat elements ``lo:hi`` (copies of that piece, 1-D; the exact
        parts stay keyed by the flat index of the argument as given)."""
        p = copy.copy(self)
        p.codes = self.codes.flat[lo:hi]
        if self.frac is not None and self.real is not None:
            p.frac, p.real = self.frac.flat[lo:hi], self.real.flat[lo:hi]
        if self.index is not None:
            p.index = self.index.flat[lo:hi]
        return p


def _read_pair(actual: Any, desired: Any, fmt: Format | str | None, *, real_ok: bool
               ) -> tuple[Format, np.ndarray, _Side]:
    a_arr = as_array(actual, "actual", exact=True)
    d_arr = as_array(desired, "desired", exact=True)
    f = _infer_format(a_arr, d_arr, fmt)
    a = _Side(a_arr, f, "actual", real_ok=False)
    d = _Side(d_arr, f, "desired", real_ok=real_ok)
    try:
        shape = np.broadcast_shapes(a.codes.shape, d.codes.shape)
    except ValueError:
        raise ValueError(f"Got actual of shape {a.codes.shape} and desired of shape "
                         f"{d.codes.shape}, which do not broadcast") from None
    stretched = shape != a.codes.shape
    emptied = 0 in shape and d.codes.size > 0 and d.codes.ndim != 0
    if stretched or emptied:  # a result of the wrong shape would pass
        raise ValueError(f"Got actual of shape {a.codes.shape} and desired of shape "
                         f"{d.codes.shape}, but desired must broadcast to actual's shape")
    if d.exact_frac or d.exact_values:
        d.index = np.broadcast_to(np.arange(d.codes.size).reshape(d.codes.shape), shape)
    d.codes = np.broadcast_to(d.codes, shape)
    if d.frac is not None and d.real is not None:
        d.frac = np.broadcast_to(d.frac, shape)
        d.real = np.broadcast_to(d.real, shape)
    return f, np.broadcast_to(a.codes, shape), d


# --------------------------------------------------------------------------- distances
def ulp_distances(actual: Any, desired: Any, *, fmt: Format | str | None = None,
                  signed_zeros: bool = False) -> np.ndarray:
    """Exact ULP distances in ``fmt`` as uint64 (NaN against a number: ``2**64 - 1``; NaN
    against NaN: 0).

    Both arguments must hold values of ``fmt``; an infinity counts as one step
    beyond ``max``.

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> a = np.array([1.0, -0.0, 3.0], dtype=ml_dtypes.bfloat16)
    >>> ulp_distances(a, np.array([1.0078125, 0.0, 3.0], dtype=ml_dtypes.bfloat16))
    array([1, 0, 0], dtype=uint64)
    """
    if not isinstance(signed_zeros, bool):
        raise TypeError(f"Got {signed_zeros=}, but it must be True or False")
    f, a, d = _read_pair(actual, desired, fmt, real_ok=False)
    out = np.empty(a.shape, np.uint64)
    flat = out.reshape(-1)
    for lo, a_piece, d_piece in _pieces(a, d):
        flat[lo:lo + a_piece.size] = _distances(a_piece, d_piece.codes, f, signed_zeros)[0]
    return out


def _distances(a: np.ndarray, d: np.ndarray, f: Format, signed_zeros: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distances, the two NaN masks and the two ordinals (a NaN's taken as 0's)."""
    nan_a, nan_d = is_nan_codes(a, f), is_nan_codes(d, f)
    either = nan_a | nan_d
    a_ord = ordinals(np.where(either, np.uint64(0), a), f, signed_zeros=signed_zeros)
    d_ord = ordinals(np.where(either, np.uint64(0), d), f, signed_zeros=signed_zeros)
    dist = ordinal_distance(a_ord, d_ord)
    dist = np.where(nan_a & nan_d, np.uint64(0), dist)
    dist = np.where(nan_a ^ nan_d, _NAN_MISMATCH, dist)
    return dist, nan_a, nan_d, a_ord, d_ord


#: Elements compared at a time: the comparison's temporaries (about 230 bytes per
#: element) stay near 15 MB whatever the size of the arrays.
_PIECE = 1 << 16


def _pieces(a: np.ndarray, d: _Side) -> Iterator[tuple[int, np.ndarray, _Side]]:
    """``(start, actual codes, desired side)`` for consecutive flat pieces of the pair."""
    n = a.size
    if n <= _PIECE:
        yield 0, a.reshape(-1), d.piece(0, n)
        return
    for lo in range(0, n, _PIECE):
        hi = min(n, lo + _PIECE)
        yield lo, a.flat[lo:hi], d.piece(lo, hi)


def _is_inf_codes(codes: np.ndarray, f: Format) -> np.ndarray:
    if f.code_of_inf is None:
        return np.zeros(codes.shape, dtype=bool)
    return (codes & np.uint64(f.magnitude_mask)) == np.uint64(f.code_of_inf)


class _Comparison:
    """Elementwise comparison of actual codes with a reference: distances and labels.

    ``dist`` is the distance in ulps as float64 (exact up to ``2**53``),
    ``label`` marks mismatches that are not a distance: 0 elsewhere, else one plus the
    index of the name in :data:`_LABELS` (uint8, one byte per element).
    """

    def __init__(self, f: Format, a: np.ndarray, d: _Side, *, signed_zeros: bool,
                 nan: str, inf: str, zero_label: bool = False) -> None:
        self.f, self.a, self.d = f, a, d
        dc = d.codes
        # exact integer distance, then the fractional part of a real reference
        idist, nan_a, nan_d, a_ord, d_ord = _distances(a, dc, f, signed_zeros)
        frac = d.frac if d.frac is not None else np.zeros(a.shape)
        sign_bit = np.uint64(f.sign_mask)
        d_neg = (dc & sign_bit) != 0 if f.signed else np.zeros(a.shape, dtype=bool)
        if d.real is not None:
            d_neg = np.signbit(d.real)
        # the real reference is d_ord + s * frac, s = -1 below zero
        towards = np.where(d_neg, a_ord < d_ord, a_ord > d_ord)   # a beyond d's code
        with np.errstate(over="ignore", invalid="ignore"):
            fdist = idist.astype(np.float64)
            # (beyond max, frac counts whole steps of the top binade and may exceed 1,
            # so a code past the reference can lie short of it: the absolute value)
            fdist = np.where(frac == 0, fdist,
                             np.where(towards, np.abs(fdist - frac), fdist + frac))
        # inf="ulp": an infinity stands for every value from one step beyond max on (where
        # a rounding to nearest of a reference beyond max may land), so against such a
        # reference it is 1 - frac steps short of it, or 0 from a whole step on
        self.overflow = np.zeros(a.shape, dtype=bool)
        if inf == "ulp" and d.real is not None:
            with np.errstate(invalid="ignore"):
                self.overflow = _is_inf_codes(a, f) & (np.abs(d.real) > f.max) & (
                    np.signbit(d.real) == ((a & sign_bit) != 0))
            fdist = np.where(self.overflow, np.maximum(0.0, 1.0 - frac), fdist)
        self.idist = idist
        self.frac = frac
        self.towards = towards
        self.dist = fdist
        label = np.where(nan_a ^ nan_d, _NAN_NUMBER, _NONE)
        both_nan = nan_a & nan_d
        if nan in ("sign", "code"):
            differ = both_nan & (a != dc)
            if f.signed and f.nan.name != "NEGATIVE_ZERO":
                label = np.where(differ & ((a & sign_bit) != (dc & sign_bit)), _NAN_SIGN,
                                 label)
            if nan == "code":
                label = np.where(differ & (label == _NONE), _NAN_PAYLOAD, label)
        if inf == "strict":
            inf_a, inf_d = _is_inf_codes(a, f), _is_inf_codes(dc, f)
            if d.real is not None:
                inf_d = inf_d & np.isinf(d.real)
            crossing = (inf_a | inf_d) & ~(nan_a | nan_d) & ((inf_a != inf_d) | (a != dc))
            label = np.where(crossing & (label == _NONE),
                             np.where(inf_a & inf_d, _INF_SIGN, _INF_FINITE), label)
        zero_a = (a & np.uint64(f.magnitude_mask)) == 0
        zero_d = (dc & np.uint64(f.magnitude_mask)) == 0
        if d.frac is not None:
            zero_d &= d.frac == 0
        if f.has_negative_zero and zero_label:
            label = np.where(zero_a & zero_d & (a != dc) & (label == _NONE), _ZERO_SIGN,
                             label)
        self.label = label
        self.zero_pair = f.has_negative_zero & zero_a & zero_d & (a != dc)

    def beyond(self, max_ulp: int | float) -> np.ndarray:
        """Elements whose numeric distance exceeds ``max_ulp`` (labels excluded)."""
        numeric = self.label == _NONE
        if isinstance(max_ulp, (float, np.floating)) and float(max_ulp).is_integer():
            # a whole number of ulps, compared exactly: float64 distances are exact only
            # up to 2**53 (a fractional bound lies below 2**52, where they are)
            max_ulp = int(max_ulp)
        if isinstance(max_ulp, (int, np.integer)) and self.d.frac is None:
            if max_ulp >= 2**64 - 1:
                return np.zeros(self.a.shape, dtype=bool)
            return numeric & (self.idist > np.uint64(max_ulp))
        if isinstance(max_ulp, (int, np.integer)):
            # exact: integer part against max_ulp, the fraction decides at the boundary;
            # a fraction of a step or more (a reference beyond max) takes the float
            # distance, exact there up to 2**53
            m = min(int(max_ulp), 2**64 - 2)
            over = np.where(self.frac == 0, self.idist > np.uint64(m),
                            np.where(self.towards, self.idist >= np.uint64(m + 1),
                                     self.idist >= np.uint64(m)))
            over = np.where((self.frac >= 1) | self.overflow, self.dist > float(m), over)
        else:
            over = self.dist > float(max_ulp)
        return numeric & self._exactly(over, max_ulp)

    def _exactly(self, over: np.ndarray, max_ulp: int | float) -> np.ndarray:
        """``over`` decided again in Fractions where the reference's frac is rounded
        (a Fraction reference within 2**-53 of a step of the bound, e.g. a near tie)."""
        flagged = self.rounded()
        if not flagged.size:
            return over
        over = over.copy()
        bound = Fraction(max_ulp)
        for k in flagged.tolist():
            over.flat[k] = self.exact_dist(int(k)) > bound  # type: ignore[operator]
        return over

    def rounded(self) -> np.ndarray:
        """Flat positions whose float64 distance is rounded (a Fraction reference)."""
        if self.d.index is None or not self.d.exact_frac:
            return np.zeros(0, np.intp)
        return np.flatnonzero(np.isin(self.d.index, list(self.d.exact_frac)))

    def exact_value(self, k: int) -> Fraction | None:
        """The exact reference of flat element ``k`` where its float64 is rounded, else
        None."""
        if self.d.index is None:
            return None
        return self.d.exact_values.get(int(self.d.index.flat[k]))

    def exact_dist(self, k: int) -> Fraction | None:
        """The exact distance of flat element ``k`` where the float64 one is rounded (a
        Fraction reference), else None."""
        if self.d.index is None or int(self.d.index.flat[k]) not in self.d.exact_frac:
            return None
        q = self.d.exact_frac[int(self.d.index.flat[k])]
        i = int(self.idist.flat[k])
        if self.overflow.flat[k]:
            return max(Fraction(0), 1 - q)
        return abs(i - q) if self.towards.flat[k] else i + q


# --------------------------------------------------------------------------- messages
def _bits(code: int, f: Format) -> str:
    width = (f.bits + 3) // 4
    text = f"0x{code:0{width}X}"
    if f.bits <= 16:
        b = format(code, f"0{f.bits}b")
        s = int(f.signed)
        fields = [b[:s], b[s:s + f.exponent_bits], b[s + f.exponent_bits:]]
        text += " " + ".".join(x for x in fields if x)
    return text


def _index(flat: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return "()"
    idx = np.unravel_index(flat, shape)
    return str(int(idx[0])) if len(shape) == 1 else "(" + ", ".join(str(int(i))
                                                                      for i in idx) + ")"


def _value(code: int, f: Format) -> str:
    v = code_to_float(f, code)
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return repr(v)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _dist_text(c: _Comparison, k: int) -> str:
    label = int(c.label.ravel()[k])
    if label:
        return _LABELS[label - 1]
    if c.zero_pair.ravel()[k] and c.idist.ravel()[k] <= 1:
        return f"{int(c.idist.ravel()[k])} (-0 vs +0)"
    if c.d.frac is not None and c.frac.ravel()[k] != 0:
        return _exact_text(float(c.dist.ravel()[k]), c.exact_dist(k))
    return str(int(c.idist.ravel()[k]))


def _exact_text(rounded: float, exact: Fraction | None) -> str:
    """A distance or value with every digit its float64 has, and where that float64 is
    rounded, the rest: ``0.5 + 8.67e-19`` (a report must show why 0.5 ulp fails)."""
    if exact is None or Fraction(float(exact)) == exact:
        x = float(exact) if exact is not None else rounded
        return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)
    near = float(exact)
    rest = exact - Fraction(near)
    return f"{near!r} {'+' if rest > 0 else '-'} {float(abs(rest)):.3g}"


#: The histogram's bin edges: 0, 0.5, then the powers of two.
_EDGES = np.array([0.0, 0.5] + [float(1 << k) for k in range(64)])
#: The severity of a failure, by its label (a distance: 3), to pick the worst.
_SEVERITY = np.array([3, 5, 4, 4, 2, 1, 1])


class _Report:
    """A failure message gathered piece by piece (:func:`_pieces`): the failing count,
    the worst element, the first failing rows and the histogram of every element."""

    def __init__(self, f: Format, shape: tuple[int, ...], real: bool) -> None:
        self.f, self.shape, self.real = f, shape, real
        self.n = self.n_fail = 0
        self.rows: list[list[str]] = []
        # (severity, distance) of the worst element so far, and its text
        self.worst_key: tuple[int, float] | None = None
        self.worst_text = ""
        self.bins = np.zeros(_EDGES.size + 1, np.int64)
        self.zero_pairs = [0, 0]  # -0 vs +0 pairs 0 and 1 ulp apart
        self.labels = dict.fromkeys(_LABELS, 0)

    def add(self, lo: int, c: _Comparison, failing: np.ndarray) -> None:
        """Take in the piece of flat elements from ``lo`` on."""
        f = self.f
        self.n += failing.size
        label = c.label.ravel()
        flat_fail = np.flatnonzero(failing)
        self.n_fail += len(flat_fail)
        if len(flat_fail):
            labels = label[flat_fail]
            sev = _SEVERITY[labels]
            dist = np.where(labels == _NONE, c.dist.ravel()[flat_fail], -1.0)
            last = int(np.lexsort((dist, sev))[-1])  # the worst; of equals, the last
            key = (int(sev[last]), float(dist[last]))
            if self.worst_key is None or key >= self.worst_key:
                k = int(flat_fail[last])
                self.worst_key = key
                self.worst_text = (f"worst: {_dist_text(c, k)}"
                                   + (" ulp" if not label[k] else "")
                                   + f" at index {_index(lo + k, self.shape)} (actual "
                                   + f"{_value(int(c.a.ravel()[k]), f)}, desired "
                                   + f"{self._desired(c, k)[0]})")
        for k in flat_fail[:max(0, _SHOW - len(self.rows))].tolist():
            ca = int(c.a.ravel()[k])
            dv, db = self._desired(c, k)
            self.rows.append([_index(lo + k, self.shape), _value(ca, f), _bits(ca, f), dv,
                              db, _dist_text(c, k)])
        # the histogram of every element
        zero_pair = c.zero_pair.ravel() & (label == _NONE)
        numeric = (label == _NONE) & ~zero_pair
        bins = np.searchsorted(_EDGES, c.dist.ravel(), side="left")
        for k in c.rounded().tolist():  # a hair past an edge its float64 distance is on
            e = c.exact_dist(k)
            if e is not None and bins[k] < _EDGES.size and e > Fraction(_EDGES[bins[k]]):
                bins[k] += 1
        self.bins += np.bincount(bins[numeric], minlength=_EDGES.size + 1)
        for steps in (0, 1):
            self.zero_pairs[steps] += int((zero_pair & (c.idist.ravel() == steps)).sum())
        counts = np.bincount(label, minlength=len(_LABELS) + 1)
        for i, name in enumerate(_LABELS):
            self.labels[name] += int(counts[i + 1])

    def _desired(self, c: _Comparison, k: int) -> tuple[str, str]:
        """The desired value of element ``k`` of the piece and its bits (or "(between
        codes)" for a reference that is no value of the format)."""
        if c.d.real is not None and c.frac.ravel()[k] != 0:
            return (_exact_text(float(c.d.real.ravel()[k]), c.exact_value(k)),
                    "(between codes)")
        cd = int(c.d.codes.ravel()[k])
        return _value(cd, self.f), _bits(cd, self.f)

    def text(self, title: str, note: str = "") -> str:
        lines = [f"{title}: {self.n_fail} of {self.n} elements differ", self.worst_text]
        if note:
            lines.append(note)
        lines.append(f"first {min(_SHOW, self.n_fail)} failing (format {self.f.name}):")
        lines += _table([["index", "actual", "bits", "desired", "bits", "ulp"]] + self.rows)
        lines.append(f"ulp distances over all {self.n} elements:")
        lines += self._histogram()
        return "\n".join(lines)

    def _histogram(self) -> list[str]:
        rows: list[list[str]] = []
        for i in np.flatnonzero(self.bins).tolist():
            if i == 0:
                text = "0"
            elif i == 1:
                text = "(0, 0.5]"
            elif i == _EDGES.size:  # beyond 2**63 (binary64 distances reach 2**64)
                text = (f"> {_EDGES[-1]:g}" if self.real
                        else f"{int(_EDGES[-1]) + 1} or more")
            else:
                lo, hi = _EDGES[i - 1], _EDGES[i]
                text = (f"({lo:g}, {hi:g}]" if self.real
                        else str(int(hi)) if hi <= 2 else f"{int(lo) + 1}-{int(hi)}")
            rows.append([text, str(int(self.bins[i]))])
        for steps in (0, 1):
            if self.zero_pairs[steps]:
                rows.append([f"-0 vs +0 ({steps} ulp)", str(self.zero_pairs[steps])])
        for name in _LABELS:
            if self.labels[name]:
                rows.append([name, str(self.labels[name])])
        return _table([["ulp", "count"]] + rows)


def _report(title: str, f: Format, a: np.ndarray, d: _Side,
            compare: Any) -> str:
    """The failure message over every piece of the pair: ``compare(a_piece, d_piece)``
    gives each piece's comparison and failing mask."""
    report = _Report(f, a.shape, d.frac is not None)
    for lo, a_piece, d_piece in _pieces(a, d):
        report.add(lo, *compare(a_piece, d_piece))
    return report.text(title)


# --------------------------------------------------------------------------- assertions
def _check_max_ulp(max_ulp: object) -> int | float:
    if isinstance(max_ulp, bool) or not isinstance(max_ulp, (int, np.integer, float,
                                                             np.floating)):
        raise TypeError(f"Got {max_ulp=!r}, but it must be a non-negative int or float")
    if isinstance(max_ulp, (float, np.floating)):
        if not math.isfinite(max_ulp) or max_ulp < 0:
            raise ValueError(f"Got {max_ulp=!r}, but it must be finite and >= 0")
        return float(max_ulp)
    if max_ulp < 0:
        raise ValueError(f"Got {max_ulp=}, but it must be >= 0")
    return int(max_ulp)


def assert_ulp_close(
    actual: npt.ArrayLike,
    desired: npt.ArrayLike | Sequence[Any] | numbers.Real | Decimal,
    *,
    max_ulp: int | float = 1,
    fmt: Format | str | None = None,
    nan: Literal["any", "code"] = "any",
    inf: Literal["strict", "ulp"] = "strict",
    signed_zeros: bool | None = None,
) -> None:
    """Assert that every element of ``actual`` is within ``max_ulp`` ulps of ``desired``.

    The condition is ``ulp_distance(actual, desired) <= max_ulp`` elementwise,
    where the distance is the exact number of steps between the two codes in
    the ordered list of ``fmt``'s values (see the module docstring).
    ``desired`` may be a more precise reference (float64 against a bfloat16
    result, or integers, Fractions and Decimals, taken at their exact values):
    its distance is then fractional, and ``max_ulp=0.5`` asserts rounding to
    a nearest value.

    What ``max_ulp=0.5`` certifies, exactly: each result is a value of
    ``fmt`` nearest to ``desired`` (at most half a step from it).  It does
    not fix the tie rule: at a tie both neighbours are 0.5 ulp away, so a
    round-half-away (``rna``) kernel passes where ``rne`` was meant; to pin
    the tie rule, compare bit for bit (:func:`assert_bitwise_equal`) with a
    reference rounded in that mode (``numerics.round_to(x, fmt,
    rounding="rne")``) on inputs that include ties
    (:func:`numerics.testing.strategies.ties`).
    (:func:`~numerics.testing.assert_rounded_from` accepts either neighbour
    of every value, ties included: it checks the bracket, not the mode.)
    Nor does it see the sign of a zero unless ``signed_zeros=True``: with
    the default (False for every ``max_ulp`` but 0), a ``+0`` where ``-0``
    was desired passes.

    Parameters
    ----------
    actual : array_like or torch.Tensor
        Values (or codes) of ``fmt``.
    desired : array_like or torch.Tensor
        Values of ``fmt``, or any finite reference within the float64 range
        (floats, integers, Fractions, Decimals: their exact values);
        broadcastable to ``actual``'s shape (so a 0-d ``actual`` needs a
        0-d ``desired``).  A reference below the least value of a format
        without zero counts as that value; in an unsigned format (e8m0fnu)
        a zero or negative reference counts as NaN, as ``encode`` gives.
    max_ulp : int or float
        The largest distance allowed, ``>= 0`` (any size: ``2**70`` allows every
        finite pair).
    fmt : Format, str or None
        The format; None infers it from the dtypes (float64 when neither
        array has a narrower float dtype).
    nan : {"any", "code"}
        ``"any"``: NaN equals NaN whatever its sign or payload; ``"code"``:
        two NaNs must have the same code.  NaN never equals a number.
    inf : {"strict", "ulp"}
        ``"strict"``: an infinity matches only the same infinity, whatever
        ``max_ulp`` (an overflow to inf where ``max`` was desired fails);
        ``"ulp"``: an infinity counts as one step beyond ``max``, and against a
        reference beyond ``max`` it stands for every value from that step on
        (so a rounding to nearest that overflows, ``inf`` for ``1e6`` in
        binary16, is within 0.5 ulp; a reference between ``max`` and the next
        step is ``1 - frac`` steps from it).
    signed_zeros : bool or None
        Count ``-0`` and ``+0`` one ulp apart (formats that have ``-0``).
        None (default): True when ``max_ulp == 0`` (so a lost ``-0`` fails a
        bit-exact check), False otherwise (so ``max_ulp=0.5`` passes a lost
        ``-0``: pass True to catch it).  Either way the report marks such
        pairs ``(-0 vs +0)``.

    Raises
    ------
    AssertionError
        With the count of failing elements, the worst case, the first
        failing indices with values and bits, and a histogram of distances.
    TypeError
        For arguments that hold no real numbers (None, strings, complex).

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> x = np.array([1.0, 2.0], dtype=ml_dtypes.float8_e4m3fn)
    >>> assert_ulp_close(x, np.array([1.125, 2.0], dtype=ml_dtypes.float8_e4m3fn))
    >>> assert_ulp_close(x, np.array([1.25, 2.0], dtype=ml_dtypes.float8_e4m3fn))
    Traceback (most recent call last):
    AssertionError: Not within 1 ulp: 1 of 2 elements differ
    worst: 2 ulp at index 0 (actual 1.0, desired 1.25)
    first 1 failing (format e4m3fn):
      index  actual  bits             desired  bits             ulp
      0      1.0     0x38 0.0111.000  1.25     0x3A 0.0111.010  2
    ulp distances over all 2 elements:
      ulp  count
      0    1
      2    1

    A float64 reference, compared in bfloat16 (correct rounding: 0.5 ulp):

    >>> y = np.array([1.0, 3.0], dtype=ml_dtypes.bfloat16)
    >>> assert_ulp_close(y, np.array([1.001, 3.005]), fmt="bf16", max_ulp=0.5)
    """
    max_ulp = _check_max_ulp(max_ulp)
    if not isinstance(nan, str) or nan not in ("any", "code"):
        raise ValueError(f"Got {nan=}, but the only valid values are 'any' and 'code'")
    if not isinstance(inf, str) or inf not in ("strict", "ulp"):
        raise ValueError(f"Got {inf=}, but the only valid values are 'strict' and 'ulp'")
    if signed_zeros is not None and not isinstance(signed_zeros, bool):
        raise TypeError(f"Got {signed_zeros=}, but it must be True, False or None")
    if signed_zeros is None:
        signed_zeros = max_ulp == 0
    f, a, d = _read_pair(actual, desired, fmt, real_ok=True)

    def compare(a_piece: np.ndarray, d_piece: _Side) -> tuple[_Comparison, np.ndarray]:
        c = _Comparison(f, a_piece, d_piece, signed_zeros=signed_zeros, nan=nan, inf=inf)
        return c, (c.label != _NONE) | c.beyond(max_ulp)

    if any(compare(a_piece, d_piece)[1].any() for _, a_piece, d_piece in _pieces(a, d)):
        raise AssertionError(_report(f"Not within {max_ulp} ulp", f, a, d, compare))


def assert_bitwise_equal(
    actual: npt.ArrayLike,
    desired: npt.ArrayLike,
    *,
    canonical_nan: bool = True,
    fmt: Format | str | None = None,
) -> None:
    """Assert that ``actual`` and ``desired`` have the same codes.

    ``-0`` and ``+0`` differ.  With ``canonical_nan=True`` all NaNs of one
    sign compare equal (payloads ignored); with False only identical codes do.
    Differences that are not a distance are labelled (``-0 vs +0``,
    ``NaN sign``, ``NaN payload``, ``NaN vs number``).

    Examples
    --------
    >>> import numpy as np
    >>> assert_bitwise_equal(np.float32([1.0, np.nan]), np.float32([1.0, np.nan]))
    >>> assert_bitwise_equal(np.float32([0.0, np.nan]), np.float32([-0.0, -np.nan]))
    Traceback (most recent call last):
    AssertionError: Not bitwise equal: 2 of 2 elements differ
    worst: NaN sign at index 1 (actual nan, desired -nan)
    first 2 failing (format binary32):
      index  actual  bits        desired  bits        ulp
      0      0.0     0x00000000  -0.0     0x80000000  -0 vs +0
      1      nan     0x7FC00000  -nan     0xFFC00000  NaN sign
    ulp distances over all 2 elements:
      ulp       count
      NaN sign  1
      -0 vs +0  1
    """
    if not isinstance(canonical_nan, bool):
        raise TypeError(f"Got {canonical_nan=}, but it must be True or False")
    f, a, d = _read_pair(actual, desired, fmt, real_ok=False)

    def compare(a_piece: np.ndarray, d_piece: _Side) -> tuple[_Comparison, np.ndarray]:
        c = _Comparison(f, a_piece, d_piece, signed_zeros=True,
                        nan="sign" if canonical_nan else "code", inf="strict",
                        zero_label=True)
        nan_both = is_nan_codes(a_piece, f) & is_nan_codes(d_piece.codes, f)
        return c, (a_piece != d_piece.codes) & ~(nan_both & (c.label == _NONE))

    if any(compare(a_piece, d_piece)[1].any() for _, a_piece, d_piece in _pieces(a, d)):
        raise AssertionError(_report("Not bitwise equal", f, a, d, compare))


def _exact_list(x: Any, name: str) -> tuple[list[tuple[Fraction | float, str | None]],
                                           tuple[int, ...]]:
    arr = as_array(x, name, exact=True)
    if arr.dtype.kind == "O":
        items = arr.ravel().tolist()
    elif arr.dtype.kind in "iu":
        items = arr.ravel().tolist()          # Python ints: exact
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            items = arr.astype(np.float64).ravel().tolist()
    return [exact_value(v) for v in items], arr.shape


def _show(v: Fraction | float, shown: str | None) -> str:
    if shown is not None:
        return shown
    if isinstance(v, float):
        return repr(v)
    try:
        return repr(float(v))
    except OverflowError:
        return f"~{'-' if v < 0 else ''}1e+{len(str(abs(v.numerator) // v.denominator)) - 1}"


def assert_within_bound(actual: Any, exact: Any, bound: Any) -> None:
    """Assert ``|actual - exact| <= bound`` elementwise, computed exactly.

    A NaN or infinite ``actual`` fails at its element unless ``exact`` is the
    same infinity (or NaN against NaN); an infinite ``bound`` admits every
    finite pair.  :class:`decimal.Decimal` values beyond ``10**+-4000`` are
    replaced by ``+-10**+-4001`` (exact comparisons with anything of float
    size keep their outcome; the message shows the original) so that
    ``Decimal("1e99999999")`` is decided at once.

    Parameters
    ----------
    actual : array_like or torch.Tensor
        Computed results (any float dtype, ml_dtypes and torch included).
    exact : array_like
        The exact results: floats, ints, or an object array of
        :class:`fractions.Fraction` or :class:`decimal.Decimal`.
    bound : array_like
        Absolute error bounds, ``>= 0`` (NaN is rejected), broadcastable; e.g.
        ``tolerance_for("dot", k, "binary32", "recursive") * (abs(A) @ abs(B))``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> assert_within_bound([0.5], [Fraction(1, 3)], [Fraction(1, 6)])
    >>> assert_within_bound([0.5, float("nan")], [Fraction(1, 3), 0], [0.125, 1.0])
    Traceback (most recent call last):
    AssertionError: Not within bound: 2 of 2 elements exceed it
    worst: |error| is nan at index 1
      index  actual  exact               |error|              bound
      0      0.5     0.3333333333333333  0.16666666666666666  0.125
      1      nan     0.0                 nan                  1.0
    """
    acts, shape_a = _exact_list(actual, "actual")
    exs, shape_e = _exact_list(exact, "exact")
    bnds, shape_b = _exact_list(bound, "bound")
    for i, (b, _) in enumerate(bnds):
        if isinstance(b, float) and math.isnan(b):
            raise ValueError(f"Got bound.flat[{i}]=nan, but bounds must be numbers >= 0")
        if b < 0:
            raise ValueError(f"Got bound.flat[{i}]={float(b)!r}, but bounds must be >= 0")
    try:
        shape = np.broadcast_shapes(shape_a, shape_e, shape_b)
    except ValueError:
        raise ValueError(f"Got actual of shape {shape_a}, exact of shape {shape_e} and "
                         f"bound of shape {shape_b}, which do not broadcast") from None
    if shape != tuple(shape_a) or (
            0 in shape and math.prod(shape_e) > 0 and len(shape_e) != 0):
        raise ValueError(f"Got actual of shape {shape_a} and exact of shape {shape_e}, but "
                         "exact and bound must broadcast to actual's shape")

    def spread(xs: list[Any], s: tuple[int, ...]) -> list[Any]:
        idx = np.broadcast_to(np.arange(len(xs)).reshape(s), shape).ravel()
        return [xs[i] for i in idx]

    A, E, B = spread(acts, shape_a), spread(exs, shape_e), spread(bnds, shape_b)
    errors: list[Fraction | float] = []
    failing: list[int] = []
    for i, ((a, _), (e, _), (b, _)) in enumerate(zip(A, E, B)):
        if isinstance(a, float) or isinstance(e, float):   # a NaN or an infinity
            same = (isinstance(a, float) and isinstance(e, float)
                    and (a == e or (math.isnan(a) and math.isnan(e))))
            err: Fraction | float = 0.0 if same else (
                math.nan if (isinstance(a, float) and math.isnan(a))
                or (isinstance(e, float) and math.isnan(e)) else math.inf)
            errors.append(err)
            if not same:
                failing.append(i)
            continue
        err = abs(a - e)
        errors.append(err)
        if not (isinstance(b, float) and b == math.inf) and err > b:
            failing.append(i)
    if not failing:
        return

    def ratio(i: int) -> float:
        err, b = errors[i], B[i][0]
        if isinstance(err, float):
            return math.inf if not math.isnan(err) else math.nan
        if isinstance(b, float) or b == 0:
            return math.inf
        q = err / b
        return math.inf if q > Fraction(10) ** 300 else float(q)

    ratios = [ratio(i) for i in failing]
    nan_at = [i for i, r in zip(failing, ratios) if math.isnan(r)]
    worst = nan_at[0] if nan_at else failing[int(np.argmax(ratios))]
    r = ratio(worst)
    times = ("nan" if math.isnan(r) else "infinitely many times the bound" if r == math.inf
             else f"{r:.4g} times the bound")
    if math.isnan(r):
        times = "nan"
    lines = [f"Not within bound: {len(failing)} of {len(errors)} elements exceed it",
             f"worst: |error| is {times} at index {_index(worst, shape)}"]
    rows = [["index", "actual", "exact", "|error|", "bound"]]
    for i in failing[:_SHOW]:
        rows.append([_index(i, shape), _show(*A[i]), _show(*E[i]), _show(errors[i], None),
                     _show(*B[i])])
    lines += _table(rows)
    raise AssertionError("\n".join(lines))


# --------------------------------------------------------------------------- bounds
def tolerance_for(
    operation: str,
    n: int,
    fmt: Format | str,
    algorithm: str = "recursive",
    *,
    rounding: str = "rne",
    block_size: int | None = None,
    promote_fmt: Format | str | None = None,
) -> float:
    """Relative error bound factor of an ``n``-term sum or dot product in ``fmt``.

    The result ``s_hat`` that :func:`numerics.accum.sum` (or ``dot``) computes
    with these arguments satisfies ``|s_hat - s| <= factor * S`` where
    ``S = sum |x_i|`` (``sum |x_i * y_i|`` for dot products), provided no
    operation overflows and, for dot products, no product falls below the
    smallest normal value of ``fmt``.  The factor is exactly the one
    :mod:`numerics.accum.bounds` proves (``proofs/accumulation_bounds.md``),
    evaluated at ``S = 1``.  With ``p`` the precision of ``fmt``, ``u = 2**-p``
    for ``rne``/``rna`` and ``2**(1-p)`` for the other modes, and
    ``g(k) = (1 + u)**k - 1`` (defined for every ``k``, unlike ``gamma_k``):

    ==========  =====================================  ==========================
    algorithm   sum                                    dot
    ==========  =====================================  ==========================
    recursive   ``g(n - 1)``                           ``g(n)``
    pairwise    ``g(b - 1 + ceil(log2(ceil(n/b))))``   one rounding more
    blocked     ``(1+u)**(b-1) (1+u_p)**ceil(n/b) - 1``  one ``(1+u)`` more
    kahan       ``kahan_factor(n, u)`` (~ ``4u + 6nu**2``)  ``K (1+u) + u``
    neumaier    ``neumaier_factor(n, u)``              ``K (1+u) + u``
    exact       ``g(1) = u``                           ``g(2)``
    ==========  =====================================  ==========================

    ``b`` is ``block_size`` (pairwise: default 1, the textbook tree; blocked:
    default 128) and ``u_p`` the unit roundoff of ``promote_fmt`` (default
    binary32), as in :func:`numerics.accum.sum`.  The evaluated factor is
    inflated by ``1 + (n + 16) * 2**-52`` to cover its own rounding.

    For elementwise chains (``proofs/tolerances.md``), ``operation="chain"``
    gives ``gamma_n(u)``, the relative bound of ``n`` multiplicative roundings
    (products, quotients, square roots, same-signed sums: claim TOL3), and
    ``"rmsnorm"`` the one of an RMSNorm over rows of ``n`` (``gamma_{n+6}``,
    TOL4); :func:`numerics.testing.tolerances.elementwise_bound` adds the final
    cast and the underflow term.

    Parameters
    ----------
    operation : {"sum", "dot", "chain", "rmsnorm"}
    n : int
        Number of terms (roundings for ``"chain"``, row length for
        ``"rmsnorm"``), ``>= 1``.
    fmt : Format or str
        Format every addition (and product) rounds to.
    algorithm : str
        One of :data:`ALGORITHMS`.
    rounding : str
        Rounding mode of every operation.
    block_size : int or None
        Block size of ``pairwise`` and ``blocked``.
    promote_fmt : Format, str or None
        Format of the running total of ``blocked``.

    Returns
    -------
    float
        ``inf`` when the factor exceeds the float64 range (``(1 + u)**n``
        overflows: e.g. ``n = 10**9`` terms in bfloat16): no finite relative
        bound holds.

    References
    ----------
    N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
    SIAM 2002, sections 3.1 and 4.2-4.3.

    Examples
    --------
    >>> tolerance_for("sum", 2, "bfloat16") / 2.0**-8    # g(1) = u, inflated
    1.0000000000000042
    >>> tolerance_for("dot", 4096, "bfloat16") > 1       # gamma_4096 would be undefined
    True
    >>> tolerance_for("dot", 10**9, "bfloat16")
    inf
    >>> tolerance_for("chain", 3, "binary32") / 2.0**-24      # gamma_3 = 3u / (1 - 3u)
    3.0000005364446274
    """
    from numerics.accum import bounds

    if not isinstance(operation, str) or operation not in _OPERATIONS + _CHAINS:
        raise ValueError(f"Got {operation=}, but the only valid values are "
                         + ", ".join(repr(o) for o in _OPERATIONS + _CHAINS))
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"Got {n=}, but it must be an int >= 1")
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"Got {algorithm=}, but the only valid values are "
                         + ", ".join(repr(a) for a in ALGORITHMS))
    if not isinstance(rounding, str) or rounding not in _ROUNDINGS:
        raise ValueError(f"Got {rounding=}, but the only valid values are "
                         + ", ".join(repr(r) for r in _ROUNDINGS))
    if block_size is not None and (isinstance(block_size, bool)
                                   or not isinstance(block_size, (int, np.integer))
                                   or block_size < 1):
        raise ValueError(f"Got {block_size=}, but it must be an int >= 1 or None")
    f = as_format(fmt)
    if operation in _CHAINS:
        from numerics.testing.tolerances import gamma, rmsnorm_roundings, unit_roundoff

        k = int(n) if operation == "chain" else rmsnorm_roundings(int(n))
        return gamma(k, unit_roundoff(f, rounding)) * (1 + 2**-40)
    promote = as_format(promote_fmt if promote_fmt is not None else "binary32",
                        arg="promote_fmt")
    if algorithm == "blocked" and block_size is None:
        block_size = 128
    one = np.float64(1.0)
    try:
        with np.errstate(over="ignore"):
            if operation == "sum":
                b, _ = bounds.sum_bound(one, int(n), f, rounding, algorithm,
                                        block_size=block_size, promote_fmt=promote)
            else:
                b, _ = bounds.dot_bound(one, np.float64(0.0), int(n), f, rounding, algorithm,
                                        block_size=block_size, promote_fmt=promote)
    except OverflowError:
        return math.inf   # (1 + u)**n beyond float64: no finite relative bound
    factor = float(b)
    return factor if math.isfinite(factor) else math.inf

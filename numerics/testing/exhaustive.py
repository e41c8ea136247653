"""Every input of a format through a user's conversion kernel, against ``numerics.encode``.

:func:`exhaustive` enumerates all codes of a format of up to 32 bits (all
``2**32`` float32 patterns in chunks), runs the kernel on each chunk, encodes
the same inputs with :func:`numerics.encode` (the reference), and sorts every
mismatch into a class: the input's class (NaN, inf, zero, subnormal,
normal) and what differs (``NaN vs number``, ``NaN sign``, ``-0 vs +0``,
``inf vs finite``, one ulp toward or away from zero, more than one ulp).
Chunks run on threads, or on a Dask cluster when a ``distributed.Client``
is given.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numerics.formats import Format, NaNEncoding, as_format
from numerics.testing._codes import (
    code_to_float,
    is_nan_codes,
    native_dtype,
    ordinals,
    result_codes,
)

__all__ = ["ExhaustiveReport", "MismatchClass", "exhaustive"]

_EXAMPLES = 3


@dataclass
class MismatchClass:
    """One class of mismatches: how many, and the first few ``(input, got, want)`` codes.

    Attributes
    ----------
    count : int
        Number of mismatching inputs in the class.
    examples : list of (int, int, int)
        The first few (at most 3) ``(input code, kernel's code, encode's code)``.
    """

    count: int = 0
    examples: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class ExhaustiveReport:
    """What :func:`exhaustive` found.

    Attributes
    ----------
    from_fmt, to_fmt : str
        The input and output formats' names.
    checked : int
        Inputs compared with :func:`numerics.encode`.
    skipped : int
        NaN inputs left out (``to_fmt`` has no NaN).
    classes : dict of (str, str) to MismatchClass
        The mismatches by ``(input class, what differs)``.
    """

    from_fmt: str
    to_fmt: str
    checked: int = 0
    skipped: int = 0
    classes: dict[tuple[str, str], MismatchClass] = field(default_factory=dict)

    @property
    def mismatches(self) -> int:
        """Total number of mismatching inputs."""
        return sum(c.count for c in self.classes.values())

    def merge(self, other: ExhaustiveReport) -> None:
        """Add the findings of ``other`` (another chunk of inputs) to this report, in place.

        Parameters
        ----------
        other : ExhaustiveReport
            A report of the same formats; its counts are added and its examples appended
            to each class's (keeping the first few).
        """
        self.checked += other.checked
        self.skipped += other.skipped
        for key, c in other.classes.items():
            mine = self.classes.setdefault(key, MismatchClass())
            mine.count += c.count
            mine.examples = (mine.examples + c.examples)[:_EXAMPLES]

    def text(self) -> str:
        """A plain-text summary, one line per mismatch class."""
        f, t = as_format(self.from_fmt), as_format(self.to_fmt)
        width_f, width_t = (f.bits + 3) // 4, (t.bits + 3) // 4
        lines = [f"{self.from_fmt} -> {self.to_fmt}: {self.mismatches} of {self.checked} "
                 f"inputs differ from numerics.encode"
                 + (f" ({self.skipped} NaN inputs skipped: {self.to_fmt} has no NaN)"
                    if self.skipped else "")]
        for (cls, kind), c in sorted(self.classes.items(), key=lambda kv: -kv[1].count):
            ex = ", ".join(
                f"0x{i:0{width_f}X} ({code_to_float(f, i)!r}): got 0x{g:0{width_t}X} "
                f"({code_to_float(t, g)!r}), want 0x{w:0{width_t}X} ({code_to_float(t, w)!r})"
                for i, g, w in c.examples)
            lines.append(f"  {cls} input, {kind}: {c.count}   e.g. {ex}")
        return "\n".join(lines)


def _input_class(codes: np.ndarray, f: Format) -> np.ndarray:
    t = f.trailing_bits
    mag = codes & np.uint64(f.magnitude_mask)
    out = np.where((mag >> np.uint64(t)) == 0, "subnormal" if f.subnormals else "normal",
                   "normal").astype("<U9")
    out = np.where(mag == 0, "zero" if f.has_zero else out, out)
    if f.code_of_inf is not None:
        out = np.where(mag == np.uint64(f.code_of_inf), "inf", out)
    out = np.where(is_nan_codes(codes, f), "nan", out)
    return out


def _kind(got: np.ndarray, want: np.ndarray, t: Format) -> np.ndarray:
    nan_g, nan_w = is_nan_codes(got, t), is_nan_codes(want, t)
    sign = np.uint64(t.sign_mask)
    mag_mask = np.uint64(t.magnitude_mask)
    out = np.full(got.shape, "", dtype="<U24")
    numbers = ~nan_g & ~nan_w
    og = ordinals(np.where(numbers, got, np.uint64(0)), t)
    ow = ordinals(np.where(numbers, want, np.uint64(0)), t)
    dist = np.abs(og - ow)
    away = np.abs(og) > np.abs(ow)
    out = np.where(numbers & (dist == 1), np.where(away, "1 ulp away from zero",
                                                    "1 ulp toward zero"), out)
    out = np.where(numbers & (dist > 1), "more than 1 ulp", out)
    if t.code_of_inf is not None:
        inf_g = (got & mag_mask) == np.uint64(t.code_of_inf)
        inf_w = (want & mag_mask) == np.uint64(t.code_of_inf)
        out = np.where(numbers & (inf_g != inf_w), "inf vs finite", out)
    zero = numbers & ((got & mag_mask) == 0) & ((want & mag_mask) == 0) & (got != want)
    out = np.where(zero, "-0 vs +0", out)
    out = np.where(nan_g != nan_w, "NaN vs number", out)
    if t.signed and t.nan is not NaNEncoding.NEGATIVE_ZERO:
        out = np.where(nan_g & nan_w & ((got & sign) != (want & sign)), "NaN sign", out)
    return out


def _run_chunk(kernel: Callable[[Any], Any], f: Format, t: Format, start: int,
               stop: int, options: dict[str, Any]) -> ExhaustiveReport:
    """Check codes ``start .. stop - 1`` of ``f`` (a pure function: Dask runs it).  The
    formats travel as themselves: a user's format has no registered name to look up, and
    one named like a registered format is not that format."""
    from numerics import decode, encode

    report = ExhaustiveReport(f.name, t.name)
    codes = np.arange(start, stop, dtype=np.uint64)
    dtype = native_dtype(f)
    if dtype is not None:
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[dtype.itemsize]
        inputs = codes.astype(width).view(dtype)
    else:
        inputs = codes.astype(f.code_dtype)
    values = inputs if dtype is not None else decode(inputs, f)
    keep = np.ones(codes.shape, dtype=bool)
    if not t.has_nan and options.get("nan", "raise") == "raise":
        keep = ~is_nan_codes(codes, f)
        report.skipped = int((~keep).sum())
    with np.errstate(all="ignore"):   # every NaN and inf goes in: numpy's cast warnings
        got = result_codes(kernel(inputs), t, "kernel(x)")
    if got.shape != codes.shape:
        raise ValueError(f"Got kernel(x) of shape {got.shape} for x of shape {codes.shape}")
    want = np.zeros(codes.shape, dtype=np.uint64)
    with np.errstate(invalid="ignore", over="ignore"):
        want[keep] = np.asarray(encode(values[keep], t, **options), dtype=np.uint64)
    report.checked = int(keep.sum())
    differ = keep & (got != want)
    if not differ.any():
        return report
    idx = np.flatnonzero(differ)
    g, w, c = got[idx], want[idx], codes[idx]
    kind = _kind(g, w, t)
    same_nan = is_nan_codes(g, t) & is_nan_codes(w, t) & (kind == "")
    idx, g, w, c, kind = (a[~same_nan] for a in (idx, g, w, c, kind))
    kind = np.where(kind == "", "other code", kind)
    classes = _input_class(c, f)
    for key in sorted(set(zip(classes.tolist(), kind.tolist()))):
        sel = np.flatnonzero((classes == key[0]) & (kind == key[1]))
        report.classes[key] = MismatchClass(
            int(sel.size), [(int(c[i]), int(g[i]), int(w[i])) for i in sel[:_EXAMPLES]])
    return report


def exhaustive(
    kernel: Callable[[Any], Any],
    from_fmt: Format | str,
    to_fmt: Format | str,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    nan: str = "raise",
    chunk_size: int = 1 << 22,
    threads: int | None = None,
    progress: bool | Callable[[int, int], None] = False,
    client: Any = None,
    check: bool = True,
) -> ExhaustiveReport:
    """Run ``kernel`` on every code of ``from_fmt`` and compare with ``numerics.encode``.

    ``kernel(x)`` receives a 1-D chunk of inputs (``from_fmt``'s native dtype,
    e.g. float32 or ml_dtypes bfloat16, or codes where it has none) and
    returns the converted values (or codes) of ``to_fmt`` in any form the
    assertions accept (numpy, ml_dtypes, torch).  The reference is
    ``encode(x, to_fmt, rounding=..., overflow=..., nan=...)``.  NaNs of the
    same sign compare equal (payloads are free); NaN inputs are skipped when
    ``to_fmt`` has no NaN and ``nan="raise"``.  The kernel runs under
    ``numpy.errstate(all="ignore")``: every NaN and infinity goes in, and
    numpy's "invalid value in cast" warnings would only repeat that.

    Parameters
    ----------
    kernel : callable
        The conversion under test; must be picklable to run on Dask.
    from_fmt, to_fmt : Format or str
        Source format (at most 32 bits) and target format.
    rounding, overflow, nan : str
        Options of the reference :func:`numerics.encode`.
    chunk_size : int
        Inputs per kernel call.
    threads : int or None
        Worker threads (None: ``os.cpu_count()``); ignored with ``client``.
    progress : bool or callable
        True prints ``done/total`` to stderr; a callable gets ``(done, total)``;
        False (the default) reports nothing.
    client : distributed.Client or None
        Run the chunks on this Dask cluster.
    check : bool
        True raises AssertionError listing every mismatch class (default); False
        returns the report only.

    Returns
    -------
    ExhaustiveReport

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> to_e4m3 = lambda x: x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    >>> r = exhaustive(to_e4m3, "bfloat16", "e4m3fn", threads=1)  # overflow -> NaN
    >>> r.mismatches, r.checked
    (0, 65536)
    >>> r = exhaustive(to_e4m3, "bfloat16", "e4m3fn", overflow="saturate", threads=1,
    ...                check=False)
    >>> sorted((cls, kind, c.count) for (cls, kind), c in r.classes.items())
    [('inf', 'NaN vs number', 2), ('normal', 'NaN vs number', 30510)]
    """
    f, t = as_format(from_fmt, arg="from_fmt"), as_format(to_fmt, arg="to_fmt")
    if f.bits > 32:
        raise ValueError(f"Got from_fmt={f.name!r} of {f.bits} bits; exhaustive runs formats "
                         "of at most 32 bits")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"Got {chunk_size=!r}, but it must be an int >= 1")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ValueError(f"Got {threads=!r}, but it must be None or an int >= 1")
    if not callable(kernel):
        raise TypeError(f"Got {kernel=!r}, but it must be callable as kernel(x)")
    if not isinstance(check, (bool, np.bool_)):
        raise TypeError(f"Got {check=!r}, expected True or False")
    if isinstance(progress, np.bool_):
        progress = bool(progress)
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"Got {progress=!r}, expected True, False or a callable "
                        "progress(done, total)")
    from numerics.rounding import check_overflow, check_rounding

    check_rounding(rounding)
    check_overflow(overflow)
    if rounding == "sr":
        raise ValueError("Got rounding='sr'; exhaustive compares deterministic roundings "
                         "(use assert_stochastic_rounding)")
    options = {"rounding": rounding, "overflow": overflow, "nan": nan}
    total = f.num_codes
    starts = list(range(0, total, chunk_size))
    report = ExhaustiveReport(f.name, t.name)
    say: Callable[[int, int], None] | None
    if progress is True:
        def say(done: int, of: int) -> None:
            print(f"\rexhaustive {f.name} -> {t.name}: {done}/{of}", end="", file=sys.stderr)
    else:
        say = progress or None

    def results() -> Iterable[ExhaustiveReport]:
        args = [(kernel, f, t, s, min(s + chunk_size, total), options)
                for s in starts]
        if client is not None:
            futures = client.map(lambda a: _run_chunk(*a), args, pure=False)
            for future in futures:
                yield future.result()
        else:
            import os

            workers = threads or os.cpu_count() or 1
            with ThreadPoolExecutor(max_workers=workers) as pool:
                yield from pool.map(lambda a: _run_chunk(*a), args)

    for part in results():
        report.merge(part)
        if say is not None:
            say(report.checked + report.skipped, total)
    if progress is True:
        print(file=sys.stderr)
    if check and report.mismatches:
        raise AssertionError(report.text())
    return report

"""Rich renderables built from library results (the only module that imports rich).

Each ``*_view`` function takes results computed by :mod:`numerics` and returns
a renderable; :mod:`fpinspect.main` prints it.  Nothing here computes a
number: it only formats them.
"""

from __future__ import annotations

import errno
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from numerics.checkpoint import (
    CheckpointDiff,
    CheckpointHash,
    CheckpointStats,
    Source,
    TensorDiff,
)
from numerics.compare import DiffReport, ulp_bucket_label
from numerics.digits import int_to_text
from numerics.fingerprint import Fingerprint
from numerics.formats import Format
from numerics.inspection import (
    CodeReport,
    Encoded,
    IntegerReport,
    code_fields,
    code_hex,
    decimal_text,
    nan_kind,
    scientific_text,
)
from numerics.parse import ParsedValue
from numerics.parts import hexfloat
from numerics.stats import TensorStats

__all__ = [
    "BAR",
    "Grid",
    "Listing",
    "STYLES",
    "bits_text",
    "bits_view",
    "checkpoint_diff_view",
    "checkpoint_hash_view",
    "checkpoint_stats_view",
    "demo_view",
    "diff_view",
    "formats_view",
    "hash_view",
    "int_diff_view",
    "int_view",
    "ls_view",
    "make_console",
    "plain",
    "progress_bar",
    "probe_view",
    "stats_view",
    "table_view",
    "unbroken_width",
    "value_view",
    "visible",
]

#: Colours of the bit fields and of verdicts.
STYLES = {
    "sign": "bold red",
    "exponent": "green",
    "trailing": "blue",
    "good": "green",
    "bad": "bold red",
    "warn": "yellow",
    "dim": "dim",
}
_PIPED_WIDTH = 1000
#: The histogram bars' character (``#`` where the output's encoding lacks it).
BAR = "█"
_BAR_WIDTH = 40


class _Console(Console):
    """rich's Console, except that a broken pipe raises :class:`BrokenPipeError`.

    rich's default exits with status 1, which fpinspect reserves for a failed check;
    the caller decides the status (141, as coreutils).
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def make_console(*, width: int | None = None, color: bool | None = None,
                 file: object = None) -> Console:
    """A console: rich's detection of terminal and colour (``NO_COLOR`` respected).

    ``color=False`` turns colour off and ``color=True`` forces it (as if on a
    terminal); ``None`` leaves it to rich.  ``width`` fixes the width (for tests).
    """
    kwargs: dict[str, object] = {}
    if color is True:
        kwargs["force_terminal"] = True
        kwargs["color_system"] = "standard"
    if width is not None:
        kwargs["width"] = width
    elif file is None and not os.environ.get("COLUMNS") and not sys.stdout.isatty() \
            and color is not True:
        kwargs["width"] = _PIPED_WIDTH  # piped: never wrap tables or bit strings
    if color is False:
        kwargs["color_system"] = None
        kwargs["no_color"] = True
    if file is not None:
        kwargs["file"] = file
    return _Console(highlight=False, soft_wrap=False, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- user data
def visible(text: str) -> str:
    """``text`` with every character that is not printable written as Python writes it in a
    string literal (``\\x1b``, ``\\n``, ``\\u200b``), so a tensor name or path never
    moves the cursor, colours the terminal or hides part of itself."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def plain(text: str, style: str = "") -> Text:
    """User data (a name, a path) as a table cell: never read as rich markup (``[b]``,
    ``[/]``), with the characters that are not printable made visible."""
    return Text(visible(text), style)


# ---------------------------------------------------------------- number formatting
def _g(x: float | Fraction | None, digits: int = 4) -> str:
    """Short decimal, rounded from the exact value (never flushed to 0 or inf)."""
    if x is None:
        return "-"
    return scientific_text(x, digits)


def _signed(x: Fraction | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    return scientific_text(x, digits, plus=True)


def _exact(x: Fraction | float | int, limit: int = 200) -> str:
    """The exact decimal of ``x``, or 17 significant digits and the length when it is longer
    than ``limit`` characters (the terminal view; ``--json`` keeps every digit)."""
    text = int_to_text(x) if isinstance(x, int) else decimal_text(x)
    if len(text) <= limit:
        return text
    digits = sum(c.isdigit() for c in text)
    return f"{scientific_text(x, 17)} ({digits} digits; --json has them all)"


def _pow2(x: Fraction | float | None) -> str:
    """``2^k`` for a power of two, else a short decimal."""
    if x is None:
        return "-"
    f = Fraction(x)
    if f > 0 and f.numerator & (f.numerator - 1) == 0 and f.denominator & (f.denominator - 1) == 0:
        k = f.numerator.bit_length() - f.denominator.bit_length()
        return f"2^{k}"
    return _g(f)


def _scale(x: float | None, exact: Fraction | None) -> str:
    """A per-tensor scale in 3 digits, from the exact value where float64 cannot hold it."""
    if x is None:
        return "-"
    if exact is not None and math.isinf(x):
        return _compact(scientific_text(exact, 3))
    return _short(x)


def _short(x: float) -> str:
    """3 significant digits, compact exponent: ``1.8e308``, ``448``, ``5.73e4``."""
    return _compact(f"{x:.3g}")


def _compact(text: str) -> str:
    """``1.8e+308`` -> ``1.8e308``, ``5e-05`` -> ``5e-5``."""
    return text.replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")


_NAN_LABELS = {"none": "-", "ieee": "ieee", "top": "top", "negzero": "-0 code"}


def _frac(x: float | None) -> str:
    """3 significant digits, but never ``1`` for a fraction below 1 (0.99993 is ``0.99993``)."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    for digits in range(3, 18):
        text = f"{x:.{digits}g}"
        if float(text) != 1.0 or x == 1.0:
            return text
    return repr(x)


def bits_text(sign: str, exponent: str, trailing: str) -> Text:
    """The bit fields, coloured, separated by spaces."""
    text = Text()
    if sign:
        text.append(sign, STYLES["sign"])
        text.append(" ")
    text.append(exponent, STYLES["exponent"])
    if trailing:
        text.append(" ")
        text.append(trailing, STYLES["trailing"])
    return text


def _code_bits(code: int, fmt: Format) -> Text:
    return bits_text(*code_fields(code, fmt))


def _note(r: Encoded) -> Text:
    if r.overflow:
        return Text(f"overflow -> {'NaN' if r.kind == 'nan' else decimal_text(r.value)}",
                    STYLES["bad"])
    if r.saturated:
        return Text("saturated", STYLES["warn"])
    if r.flushed:
        return Text("flushed to 0", STYLES["warn"])
    if r.exact:
        return Text("exact", STYLES["good"])
    if r.abs_error is None:
        return Text(f"{_exact(r.input)} -> {decimal_text(r.value)}",
                    STYLES["warn"])
    return Text("rounded")


def _table(title: str | None = None, **kwargs: object) -> Table:
    kwargs.setdefault("box", box.SIMPLE_HEAD)
    return Table(title=title, pad_edge=False, title_justify="left", title_style="bold",
                 **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- value
def value_view(value: ParsedValue, results: Sequence[Encoded], *, rounding: str,
               overflow: str, no_nan: Sequence[str] = (),
               seed: int | None = None) -> RenderableType:
    """``fpinspect VALUE``: how one exact value is stored in each format; ``no_nan``
    names the chosen formats that cannot store the NaN given (a line after the table);
    ``seed``, the seed of a stochastic rounding's draw, is shown beside the rounding."""
    exact = decimal_text(value.exact)
    head = Text()
    typed = value.text.strip()
    head.append(typed if len(typed) <= 200 else f"{typed[:40]}... ({len(typed)} characters)",
                "bold")
    if exact != typed:
        head.append(f"  (exactly {_exact(value.exact)})")
    drawn = f" (seed {seed})" if seed is not None else ""
    head.append(f"  rounding {rounding}{drawn}, overflow {overflow}; error = stored - input",
                STYLES["dim"])
    grid = Table.grid(padding=(0, 2))
    grid.add_column("format", style="bold", no_wrap=True)
    grid.add_column("encoding", overflow="fold")
    for r in results:
        body = Text()
        body.append_text(bits_text(*r.bit_string))
        body.append("\n")
        body.append(r.hex, STYLES["dim"])
        body.append(" = ")
        body.append(_exact(r.value))
        body.append("\n")
        body.append(r.kind)
        body.append(", ")
        body.append_text(_note(r))
        if r.abs_error:
            body.append(f": error {_signed(r.abs_error)}")
            if r.rel_error is not None:
                body.append(f" (relative {_signed(r.rel_error, 3)})")
        if r.ulp is not None:
            body.append(f", ulp {_pow2(r.ulp)}")
        grid.add_row(r.format.name, body)
    if no_nan:
        note = Text(f"no NaN in {', '.join(no_nan)}: not shown", STYLES["dim"])
        return Group(head, Text(""), grid, Text(""), note)
    return Group(head, Text(""), grid)


def demo_view(value: ParsedValue, results: Sequence[Encoded]) -> RenderableType:
    """``fpinspect`` with no arguments: 0.1 everywhere, then what else there is."""
    hint = Table.grid(padding=(0, 2))
    hint.add_column(no_wrap=True)
    hint.add_column()
    for cmd, what in (
        ("fpinspect 1e-40 -f bf16,e4m3fn", "any value, exactly as written (1/3, 0x1.8p3, -0...)"),
        ("fpinspect bits 0x3f800000 -f fp32", "decode a code"),
        ("fpinspect formats", "every format: range, precision, specials"),
        ("fpinspect table e4m3fn", "every code of an 8-bit format"),
        ("fpinspect int 16777217", "why large integers collide in fp32"),
        ("fpinspect diff a.npy b.npy", "compare two tensors bit by bit, in ULPs"),
        ("fpinspect stats w.safetensors", "range, and the fit to fp8/fp6/fp4"),
        ("fpinspect hash w.safetensors", "fingerprint of a tensor's bits"),
    ):
        hint.add_row(cmd, Text(what, STYLES["dim"]))
    more = Text("\nMore (add --json to any command; fpinspect COMMAND --help for details):",
                "bold")
    return Group(value_view(value, results, rounding="rne", overflow="ieee"), more, hint)


# ---------------------------------------------------------------- bits
def bits_view(report: CodeReport) -> RenderableType:
    """``fpinspect bits CODE -f FORMAT``."""
    r = report.encoded
    fmt = r.format
    t = _table(box=None, show_header=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    t.add_row("format", f"{fmt.name} ({fmt.bits} bits: {int(fmt.signed)} sign, "
                        f"{fmt.exponent_bits} exponent, {fmt.trailing_bits} mantissa)")
    t.add_row("code", f"{r.hex}  {r.code}")
    t.add_row("bits", bits_text(*r.bit_string))
    fields = f"sign {r.sign if r.sign is not None else '-'}, exponent field {r.exponent_field}"
    if r.kind in ("normal", "subnormal"):
        e = r.exponent_field - fmt.bias if r.kind == "normal" else fmt.emin
        fields += f" (2^{e}), mantissa field {r.trailing_field}"
    else:
        fields += f", mantissa field {r.trailing_field}"
    t.add_row("fields", fields)
    t.add_row("class", r.kind)
    kind = nan_kind(r.code, fmt)
    t.add_row("value", _exact(r.value) if isinstance(r.value, Fraction) else
              decimal_text(r.value) + (f" ({kind})" if kind else ""))
    if isinstance(r.value, Fraction) or r.kind == "zero":
        t.add_row("hex float", hexfloat(r.value))
    t.add_row("ulp", _pow2(r.ulp))
    for label, n in (("previous", report.below), ("next", report.above)):
        if n is None:
            t.add_row(label, "-")
        else:
            text = _exact(n.value) if isinstance(n.value, Fraction) else decimal_text(n.value)
            t.add_row(label, Text.assemble(f"{text}  ", (n.hex, STYLES["dim"])))
    return t


# ---------------------------------------------------------------- formats
def formats_view(formats: Sequence[Format]) -> RenderableType:
    """``fpinspect formats``: one row per format."""
    t = _table(box=box.SIMPLE_HEAD, padding=0, show_edge=False)
    for name, justify in (("format", "left"), ("bits", "right"), ("e/m", "right"),
                          ("bias", "right"), ("max", "right"), ("min\nnormal", "right"),
                          ("min\nsubnormal", "right"), ("eps", "right"), ("inf", "center"),
                          ("NaN", "center"), ("-0", "center")):
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for f in formats:
        sub = _pow2(f.smallest_subnormal) if f.subnormals and f.trailing_bits else "-"
        t.add_row(f.name, str(f.bits), f"{f.exponent_bits}/{f.trailing_bits}", str(f.bias),
                  _short(f.max), _pow2(f.smallest_normal), sub, _pow2(f.eps),
                  "yes" if f.has_infinity else "-", _NAN_LABELS[f.nan.value],
                  "yes" if f.has_negative_zero else "-")
    foot = Text("NaN: ieee = exponent all ones, mantissa non-zero; top = all-ones magnitude; "
                "-0 code = the code of -0 (0x80) is the only NaN", STYLES["dim"])
    return Group(t, foot)


# ---------------------------------------------------------------- table
def _cell(v: Fraction | float) -> str:
    if isinstance(v, float):
        return decimal_text(v)
    return _short(float(v))


def table_view(fmt: Format, rows: Sequence[tuple[int, Fraction | float]], *,
               as_list: bool = False) -> RenderableType:
    """``fpinspect table FORMAT``: a 16-column grid of values, or a list with exact values."""
    if as_list:
        t = _table(f"{fmt.name}: every code")
        t.add_column("code")
        t.add_column("bits")
        t.add_column("value (exact)", justify="right")
        for code, v in rows:
            t.add_row(code_hex(code, fmt), _code_bits(code, fmt), decimal_text(v))
        return t
    return Grid(fmt, [_cell(v) for _, v in rows])


class Grid:
    """Values of codes in a 16-column grid (row = high nibble, column = low nibble).

    Where the console is too narrow for 16 columns, the grid is shown as two
    stacked 8-column halves (columns 0-7, then 8-f) instead of truncating cells.
    """

    def __init__(self, fmt: Format, cells: Sequence[str]) -> None:
        self.fmt = fmt
        self.cells = list(cells)

    def _grid(self, columns: range) -> Table:
        t = _table(box=box.SIMPLE_HEAD, padding=0, show_edge=False)
        t.add_column("", style="bold", no_wrap=True)
        for c in columns:
            t.add_column(f"{c:x}", justify="right", no_wrap=True)
        for start in range(0, len(self.cells), 16):
            row = self.cells[start:start + 16]
            t.add_row(f"{start >> 4:x}", *(row[c] for c in columns if c < len(row)))
        return t

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """From the width of the two stacked 8-column halves (the narrowest form that cuts
        no cell) to that of all 16 columns."""
        ncols = min(16, len(self.cells))
        wide = options.update_width(1 << 16)
        half = max(console.measure(self._grid(columns), options=wide).maximum
                   for columns in (range(min(8, ncols)), range(8, ncols)))
        full = console.measure(self._grid(range(ncols)), options=wide).maximum
        return Measurement(half, full)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        ncols = min(16, len(self.cells))
        yield Text(f"{self.fmt.name}: the value of code 0xRC is in row R, column C "
                   "(3 significant digits; --list for exact values)", "bold")
        if ncols <= 8 or self.__rich_measure__(console, options).maximum <= options.max_width:
            yield self._grid(range(ncols))
        else:
            yield self._grid(range(8))
            yield self._grid(range(8, 16))


# ---------------------------------------------------------------- int
def int_view(report: IntegerReport) -> RenderableType:
    """``fpinspect int N``."""
    t = _table()
    t.add_column("type")
    t.add_column("exact")
    t.add_column("stored", justify="right", overflow="fold")
    t.add_column("error", justify="right")
    t.add_column("spacing there", justify="right")
    t.add_column("exact up to", justify="right")
    for row in report.rows:
        verdict = Text("yes", STYLES["good"]) if row.exact else Text("no", STYLES["bad"])
        stored = _exact(row.stored) if row.stored is not None else row.note
        diff = 0 if row.stored is None else row.stored - report.value
        err = "-" if row.stored is None else (
            "0" if diff == 0 else ("+" if diff > 0 else "") + _exact(diff))
        spacing = "-" if row.spacing is None else (
            str(row.spacing) if isinstance(row.spacing, int) and row.spacing < 2**20
            else _pow2(row.spacing))
        limit = str(row.contiguous_limit)
        if row.type not in ("uint32", "int32"):
            limit = _pow2(row.contiguous_limit)
        t.add_row(row.type, verdict, stored, err, spacing, limit)
    head = Text.assemble((_exact(report.value), "bold"),
                         "  as an integer type and as floats")
    foot = Text("A float with p significant bits holds every integer of magnitude up to 2^p; "
                "above that, only multiples of the spacing.", STYLES["dim"])
    return Group(head, t, foot)


# ---------------------------------------------------------------- diff
def _percent(count: int, total: int) -> str:
    """``count / total`` as a percentage that never reads 0% or 100% unless it is."""
    if not total:
        return "-"
    if count in (0, total):
        return f"{100 * count // total}%"
    text = f"{100 * count / total:.1f}%"
    return {"0.0%": "<0.1%", "100.0%": ">99.9%"}.get(text, text)


def _bars(rows: Sequence[tuple[str, int]], total: int) -> Table:
    t = _table(box=None, show_header=False)
    t.add_column("", justify="right")
    t.add_column("", justify="right")
    t.add_column("")
    top = max((c for _, c in rows), default=0)
    for label, count in rows:
        width = 0 if top == 0 else max(1, round(_BAR_WIDTH * count / top)) if count else 0
        share = _percent(count, total)
        t.add_row(label, f"{count}", Text(BAR * width + f" {share}", STYLES["trailing"]))
    return t


def diff_view(a: str, b: str, report: DiffReport, *, max_ulp: int | None,
              atol: float | None = None, rtol: float | None = None,
              notes: Sequence[str] = ()) -> RenderableType:
    """``fpinspect diff A B`` on two tensors (``a``, ``b``: their labels).

    ``max_ulp``, ``atol``, ``rtol``: the check that ``report.beyond`` counted
    against (none given but ``beyond`` set: bit-equality).
    """
    fmt = report.format
    shape = "x".join(str(n) for n in report.shape) or "scalar"
    head = Text.assemble(("diff ", "bold"), f"{visible(a)}  vs  {visible(b)}  ",
                         (f"{fmt.name}, {shape}, {report.count} elements", STYLES["dim"]))
    for note in notes:
        head.append(f"\n{note}", STYLES["dim"])
    s = _table(box=None, show_header=False)
    s.add_column(style="bold")
    s.add_column(justify="right")
    s.add_row("bitwise mismatches", f"{report.bitwise_mismatches}")
    s.add_row("NaN mismatches", f"{report.nan_mismatches}")
    s.add_row("inf mismatches", f"{report.inf_mismatches}")
    s.add_row("max ULP distance", f"{report.max_ulp}")
    finite = " (finite pairs)" if report.inf_mismatches or report.nan_mismatches else ""
    s.add_row(f"max abs error{finite}", _g(report.max_abs_error, 6))
    s.add_row(f"max rel error{finite}", _g(report.max_rel_error, 6))
    parts: list[RenderableType] = [head, s]
    if report.ulp_histogram:
        parts.append(Text("ULP distance histogram", "bold"))
        parts.append(_bars([(ulp_bucket_label(lo, hi), c) for lo, hi, c in report.ulp_histogram],
                           report.count))
    if report.worst:
        w = _table("worst elements", box=box.SIMPLE_HEAD, padding=0, show_edge=False)
        w.add_column("index", no_wrap=True)
        w.add_column("ulp", justify="right", no_wrap=True)
        w.add_column("")
        w.add_column("bits", overflow="fold")
        w.add_column("hex", no_wrap=True)
        w.add_column("value", justify="right", no_wrap=True)
        for e in report.worst:
            dist = "NaN" if e.ulp_distance is None else str(e.ulp_distance)
            w.add_row(str(list(e.index)), dist, "A", _code_bits(e.a_code, fmt),
                      code_hex(e.a_code, fmt), _g(e.a_value, 9))
            w.add_row("", "", "B", _code_bits(e.b_code, fmt), code_hex(e.b_code, fmt),
                      _g(e.b_value, 9), end_section=True)
        parts.append(w)
    if report.beyond is not None:
        if report.beyond:
            parts.append(Text(f"FAIL: {report.beyond} element(s) "
                              f"{fail_text(max_ulp, atol, rtol)} (NaN mismatches included)",
                              STYLES["bad"]))
        elif max_ulp is None and atol is None and rtol is None:
            parts.append(Text("OK: every element bit-equal", STYLES["good"]))
        else:
            parts.append(Text(f"OK: every element within {check_text(max_ulp, atol, rtol)}",
                              STYLES["good"]))
    return Group(*parts)


def int_diff_view(a: str, b: str, d: TensorDiff, *, check: str | None,
                  failed: bool | None, fail: str = "") -> RenderableType:
    """``fpinspect diff A B`` on two integer tensors, compared exactly as integers.

    ``check``: the check in words (None: none, only a report); ``failed``:
    whether it failed; ``fail``: what a failing element is, in words.
    """
    dtypes = d.dtype_a if d.dtype_a == d.dtype_b else f"{d.dtype_a} vs {d.dtype_b}"
    head = Text.assemble(("diff ", "bold"), f"{visible(a)}  vs  {visible(b)}  ",
                         (f"{dtypes}, {_shape(d.shape)}, {d.count} elements, compared "
                          "exactly as integers", STYLES["dim"]))
    s = _table(box=None, show_header=False)
    s.add_column(style="bold")
    s.add_column(justify="right")
    s.add_row("equal elements", f"{d.count - d.mismatches}")
    s.add_row("mismatches", f"{d.mismatches}")
    s.add_row("max |a - b|", f"{d.max_ulp}")
    parts: list[RenderableType] = [head, s]
    if failed is not None:
        if failed:
            parts.append(Text(f"FAIL: {d.failures} element(s) {fail}", STYLES["bad"]))
        else:
            parts.append(Text(f"OK: every element within {check}"
                              if check != "bit-equality" else "OK: every element equal",
                              STYLES["good"]))
    return Group(*parts)


# ---------------------------------------------------------------- stats
def stats_view(label: str, dtype: str, shape: tuple[int, ...] | None,
               stats: TensorStats) -> RenderableType:
    """``fpinspect stats FILE`` on one tensor (``label`` names it; no shape: many tensors)."""
    dims = "" if shape is None else ("x".join(str(n) for n in shape) or "scalar") + ", "
    head = Text.assemble(("stats ", "bold"), f"{visible(label)}  ",
                         (f"{dtype}, {dims}{stats.count} elements", STYLES["dim"]))
    s = _table(box=None, show_header=False)
    s.add_column(style="bold")
    s.add_column(justify="right")
    s.add_row("NaN / inf / zero", f"{stats.nan} / {stats.inf} / {stats.zero}")
    s.add_row("max |x|", _g(stats.amax, 6))
    s.add_row("min |x| > 0", _g(stats.amin, 6))
    s.add_row("dynamic range", "-" if stats.dynamic_range is None
              else f"{stats.dynamic_range:.2f} binades")
    parts: list[RenderableType] = [head, s]
    if stats.exponent_histogram:
        parts.append(Text("exponent histogram (|x| in [2^e, 2^(e+1)))", "bold"))
        parts.append(_bars([(f"2^{e}", c) for e, c in stats.exponent_histogram], stats.count))
    parts.append(Text("fit per format: fractions of all elements (RNE); scale = max / max|x|, "
                      "pow2 = the power of two below it; @pow2 = after multiplying by it",
                      "bold"))
    # the unrepresentable column only where a candidate is unsigned (always 0 elsewhere)
    unsigned = any(not fit.format.signed for fit in stats.fits)
    f = _table(box=box.SIMPLE_HEAD, padding=0, show_edge=False)
    for name in ("format", "overflow", "saturate", "flush\nto 0", "subnormal",
                 *(("unrepr.",) if unsigned else ()), "scale", "pow2", "flush\n@pow2",
                 "subnormal\n@pow2"):
        f.add_column(name, justify="left" if name == "format" else "right", no_wrap=True)
    for fit in stats.fits:
        f.add_row(fit.format.name, _frac(fit.overflow), _frac(fit.saturate),
                  _frac(fit.flush_to_zero), _frac(fit.subnormal),
                  *((_frac(fit.unrepresentable),) if unsigned else ()),
                  _scale(fit.scale, fit.scale_exact),
                  "-" if fit.scale_log2 is None else f"2^{fit.scale_log2}",
                  _frac(fit.flush_to_zero_scaled),
                  _frac(fit.subnormal_scaled))
    parts.append(f)
    if unsigned:
        parts.append(Text("unrepr.: zero and negative elements, NaN in an unsigned format at "
                          "any scale (not counted in overflow or saturate)", STYLES["dim"]))
    return Group(*parts)


# ---------------------------------------------------------------- hash
def hash_view(label: str, fp: Fingerprint) -> RenderableType:
    """``fpinspect hash FILE``: the digest first, so ``cut -d' ' -f1`` gets it."""
    shape = ",".join(str(n) for n in fp.shape)
    return Text.assemble((f"{fp.algorithm}:{fp.digest}", "bold"),
                         f"  tensor {fp.dtype}[{shape}]",
                         ("  canonical" if fp.canonical else "", STYLES["dim"]),
                         (f"  {visible(label)}", STYLES["dim"]))


# ---------------------------------------------------------------- checkpoints
def _bytes(n: int) -> str:
    """``512 B``, ``1.5 KiB``, ``3.2 GiB``."""
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n_f = n / 1024
        if n_f < 1024 or unit == "PiB":
            return f"{n_f:.1f} {unit}"
        n = int(n_f)
    return f"{n} B"  # pragma: no cover


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) for n in shape) or "scalar"


def _shard(src: Source, file: str) -> str:
    base = src.path if os.path.isdir(src.path) else os.path.dirname(src.path)
    try:
        return os.path.relpath(file, base) if base else file
    except ValueError:  # pragma: no cover - another drive
        return file


class Listing:
    """A table of one-line plain cells, laid out as the rich table
    ``_table(box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False)`` with ``no_wrap``
    columns lays it out (bold headers, a rule under them, columns one space apart
    and padded by one space on their inner sides), the same characters and styles, but
    built line by line: rich measures, wraps and renders every cell of a table, about
    0.5 ms a row, which made ``fpinspect ls`` of a checkpoint of 20000 tensors take
    11.7 s.  ``columns`` are (header, justify) pairs, justify ``"left"`` or
    ``"right"``; each row holds one string per column, shown as it is (no markup, so
    user data goes through :func:`visible` first).

    Examples
    --------
    >>> console = make_console(width=40, color=False)
    >>> with console.capture() as cap:
    ...     console.print(Listing([("name", "left"), ("bytes", "right")],
    ...                           [("a", "48 B"), ("bias", "2.0 KiB")]))
    >>> print(cap.get(), end="")
    name     bytes
    ──────────────
    a         48 B
    bias   2.0 KiB
    """

    def __init__(self, columns: Sequence[tuple[str, str]],
                 rows: Sequence[Sequence[str]]) -> None:
        self.columns = list(columns)
        self.rows = rows
        self.widths = [cell_len(header) for header, _ in self.columns]
        for row in rows:
            for i, cell in enumerate(row):
                n = cell_len(cell)
                if n > self.widths[i]:
                    self.widths[i] = n

    def _width(self) -> int:
        # each column's cell, one pad on each inner side, one divider between columns
        return sum(self.widths) + 3 * (len(self.widths) - 1)

    def _cells(self, cells: Sequence[str]) -> list[str]:
        """Each cell justified to its column's width."""
        out = []
        for (_, justify), width, cell in zip(self.columns, self.widths, cells):
            if justify == "right":  # (as rich justifies: trailing white space dropped)
                cell = cell.rstrip()
                out.append(" " * (width - cell_len(cell)) + cell)
            else:
                out.append(cell + " " * (width - cell_len(cell)))
        return out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self._width(), self._width())

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        bold = console.get_style("table.header")
        last = len(self.columns) - 1
        for i, cell in enumerate(self._cells([header for header, _ in self.columns])):
            if i:
                yield Segment(" ")
                yield Segment(" ", bold)
            yield Segment(cell, bold)
            if i < last:
                yield Segment(" ", bold)
        yield Segment.line()
        yield Segment("─" * self._width())
        yield Segment.line()
        for row in self.rows:
            yield Segment("   ".join(self._cells(row)))
            yield Segment.line()


def ls_view(src: Source) -> RenderableType:
    """``fpinspect ls PATH``: every tensor, then the totals."""
    show_shard = len(src.files) > 1
    columns = [("tensor", "left"), ("dtype", "left"), ("shape", "right"),
               ("bytes", "right")] + ([("shard", "left")] if show_shard else [])
    rows = []
    for r in src.tensors:
        row = [visible(r.name), visible(r.dtype_name), _shape(r.shape), _bytes(r.nbytes)]
        if show_shard:
            row.append(visible(_shard(src, r.file)))
        rows.append(row)
    t = Listing(columns, rows)
    elements = sum(r.size for r in src.tensors)
    foot = Text(f"{len(src.tensors)} tensors, {elements} elements, {_bytes(src.nbytes)} "
                f"({src.nbytes} bytes) in {len(src.files)} file(s)", "bold")
    parts: list[RenderableType] = [Text.assemble(("ls ", "bold"), visible(src.path)), t, foot]
    if src.skipped:
        parts.append(Text("not real-number tensors of a readable dtype (left out): "
                          f"{', '.join(map(visible, src.skipped))}", STYLES["dim"]))
    if src.unread:
        parts.append(Text(f"not read, files of another kind than those listed: "
                          f"{', '.join(map(visible, src.unread))}", STYLES["dim"]))
    if src.unindexed:
        parts.append(Text("in the shards but not in the index (left out): "
                          f"{', '.join(map(visible, src.unindexed))}", STYLES["dim"]))
    return Group(*parts)


_STATUS_STYLE = {"equal": "good", "pass": "good", "fail": "bad"}


def check_text(max_ulp: int | None, atol: float | None, rtol: float | None) -> str:
    """How a diff decides pass/fail, in words."""
    parts = []
    if max_ulp is not None:
        parts.append(f"{max_ulp} ULP")
    if atol is not None or rtol is not None:
        parts.append(f"|a - b| <= {_g(atol or 0.0)} + {_g(rtol or 0.0)} * |a|")
    return " or ".join(parts) if parts else "bit-equality"


def fail_text(max_ulp: int | None, atol: float | None, rtol: float | None) -> str:
    """What a failing element is, in words (the negation of :func:`check_text`)."""
    parts = []
    if max_ulp is not None:
        parts.append(f"more than {max_ulp} ULP apart")
    if atol is not None or rtol is not None:
        parts.append(f"with |a - b| > {_g(atol or 0.0)} + {_g(rtol or 0.0)} * |a|")
    return " and ".join(parts) if parts else "not bit-equal"


def checkpoint_diff_view(r: CheckpointDiff) -> RenderableType:
    """``fpinspect diff A B`` on whole sources: one row per tensor, then what did not pair up."""
    counts = {s: sum(1 for t in r.tensors if t.status == s) for s in ("equal", "pass", "fail")}
    head = Text.assemble(("diff ", "bold"), f"{visible(r.a)}  vs  {visible(r.b)}  ",
                         (f"{len(r.tensors)} tensors compared: {counts['equal']} equal, "
                          f"{counts['pass']} pass, {counts['fail']} fail; check: "
                          f"{check_text(r.max_ulp, r.atol, r.rtol)}", STYLES["dim"]))
    for note in r.notes:
        head.append(f"\n{note}", STYLES["dim"])
    t = _table(box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False)
    for name, justify in (("tensor", "left"), ("dtype A/B", "left"), ("shape", "right"),
                          ("differ", "right"), ("max ULP", "right"), ("max abs", "right"),
                          ("max rel", "right"), ("NaN mm", "right"), ("inf mm", "right"),
                          ("status", "left")):
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for d in r.tensors:
        dtypes = d.dtype_a if d.dtype_a == d.dtype_b else f"{d.dtype_a}/{d.dtype_b}"
        t.add_row(plain(d.name), dtypes, _shape(d.shape), str(d.mismatches), str(d.max_ulp),
                  _g(d.max_abs_error), _g(d.max_rel_error), str(d.nan_mismatches),
                  str(d.inf_mismatches), Text(d.status, STYLES[_STATUS_STYLE[d.status]]))
    parts: list[RenderableType] = [head, t]
    foot = Text("max abs/rel: over pairs finite on both sides (relative to A); NaN mm: NaN on "
                "one side only; inf mm: an infinity on one side, not the same on the other",
                STYLES["dim"])
    parts.append(foot)
    for label, names in (("only in A", r.only_a), ("only in B", r.only_b)):
        if names:
            parts.append(Text.assemble((f"{label} ({len(names)}): ", "bold"),
                                       ", ".join(map(visible, names))))
    if r.shape_mismatches:
        parts.append(Text.assemble((f"shape mismatches ({len(r.shape_mismatches)}): ", "bold"),
                                   ", ".join(f"{visible(n)} {_shape(a)} vs {_shape(b)}"
                                             for n, a, b in r.shape_mismatches)))
    if r.ok:
        parts.append(Text("OK: every tensor passes", STYLES["good"]))
    else:
        why = []
        if counts["fail"]:
            why.append(f"{counts['fail']} tensor(s) fail")
        if r.only_a or r.only_b:
            why.append("the sources hold different tensors")
        if r.shape_mismatches:
            why.append("shapes differ")
        parts.append(Text(f"FAIL: {'; '.join(why)}", STYLES["bad"]))
    return Group(*parts)


def checkpoint_stats_view(s: CheckpointStats) -> RenderableType:
    """``fpinspect stats PATH`` on whole sources: a row per tensor, then all elements together."""
    t = _table(box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False)
    for name, justify in (("tensor", "left"), ("dtype", "left"), ("shape", "right"),
                          ("NaN", "right"), ("inf", "right"), ("zero", "right"),
                          ("max |x|", "right"), ("min |x|>0", "right"), ("binades", "right")):
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for ref, st in s.tensors:
        t.add_row(plain(ref.name), ref.dtype_name, _shape(ref.shape), str(st.nan), str(st.inf),
                  str(st.zero), _g(st.amax), _g(st.amin),
                  "-" if st.dynamic_range is None else f"{st.dynamic_range:.1f}")
    head = Text.assemble(("stats ", "bold"), f"{visible(s.path)}  ",
                         (f"{len(s.tensors)} tensors", STYLES["dim"]))
    dtypes = sorted({ref.dtype_name for ref, _ in s.tensors})
    summary = stats_view(f"all {len(s.tensors)} tensors together", "/".join(dtypes), None,
                         s.total)
    return Group(head, t, Text(""), summary)


def checkpoint_hash_view(h: CheckpointHash) -> RenderableType:
    """``fpinspect hash PATH`` on whole sources: the checkpoint digest first, then each tensor.

    Plain lines (never truncated or wrapped: digests are copied), ``cut -d' ' -f1`` gets them.
    """
    text = Text.assemble((f"{h.algorithm}:{h.digest}", "bold"),
                         f"  checkpoint of {len(h.tensors)} "
                         f"{'tensor' if len(h.tensors) == 1 else 'tensors'}",
                         ("  canonical" if h.canonical else "", STYLES["dim"]),
                         (f"  {visible(h.path)}", STYLES["dim"]))
    width = max((len(f"{fp.dtype}[{','.join(map(str, fp.shape))}]") for _, fp in h.tensors),
                default=0)
    for ref, fp in h.tensors:
        dims = f"{fp.dtype}[{','.join(map(str, fp.shape))}]"
        text.append(f"\n{fp.algorithm}:{fp.digest}  {dims:<{width}}  {visible(ref.name)}")
    return text


@contextmanager
def progress_bar(total: int, *, enabled: bool, delay: float = 1.0) \
        -> Iterator[Callable[[int], None] | None]:
    """A callback drawing a progress bar on stderr (bytes, rate, time left), or None.

    The bar appears only once the work has run ``delay`` seconds, and only
    when ``enabled`` (the caller checks that stderr is a terminal and that
    neither --json nor --no-progress was given); it is removed when done.
    """
    if not enabled or total <= 0:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                   DownloadColumn(binary_units=True), TransferSpeedColumn(),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("reading", total=total)
    start = time.monotonic()
    shown = False

    def advance(n: int) -> None:
        nonlocal shown
        bar.advance(task, n)
        if not shown and time.monotonic() - start > delay:
            bar.start()
            shown = True

    try:
        yield advance
    finally:
        if shown:
            bar.stop()


def probe_view(result: object, check: object = None) -> RenderableType:
    """``fpinspect probe``: the recovered model, one parameter per row."""
    from numerics.probe import ProbeResult, SumResult, VerifyResult, describe_tree

    t = _table("accumulation model")
    t.add_column("parameter", style="bold")
    t.add_column("value")
    if isinstance(result, SumResult):
        t.add_row("kind", f"sum of {result.n} terms of {result.fmt}")
        t.add_row("algorithm", result.algorithm)
        t.add_row("order", result.shape)
        t.add_row("additions in", result.accumulator)
        if result.fused_groups:
            sizes = sorted({len(g) for g in result.fused_groups})
            t.add_row("fused groups", f"{len(result.fused_groups)} nodes of "
                      + "/".join(map(str, sizes)) + " terms, first "
                      + str(result.fused_groups[0]))
        t.add_row("calls", str(result.calls))
    elif isinstance(result, ProbeResult):
        m = result.model
        t.add_row("kind", f"matmul, K = {m.k}, {m.input_format} inputs, "
                          f"{m.output_format} outputs")
        models = result.classes if len(result.classes) > 1 else (m,)
        for i, mi in enumerate(models):
            tag = f" (class {i})" if len(models) > 1 else ""
            t.add_row("order" + tag, describe_tree(mi.order))
            if mi.adder == "standard":
                t.add_row("adder" + tag, f"two-operand adds in {mi.accumulator}, "
                          f"{mi.products} products")
            else:
                t.add_row("adder" + tag, f"fused {mi.group_size}-term groups, "
                          f"{mi.fractional_bits} fractional bits")
        t.add_row("group size", str(m.group_size))
        t.add_row("fractional bits", "-" if m.fractional_bits is None
                  else str(m.fractional_bits))
        t.add_row("alignment rounding", m.alignment_rounding or "-")
        t.add_row("output rounding", m.output_rounding)
        if m.adder == "fused":
            t.add_row("e8m13", "yes" if m.e8m13 else "no")
        t.add_row("promote every", "-" if m.promote_every is None else str(m.promote_every))
        t.add_row("subnormals", f"inputs {m.input_subnormals}, outputs "
                                f"{m.output_subnormals}")
        if len(result.classes) > 1 and result.class_map is not None:
            counts = result.class_sizes
            t.add_row("position classes", f"{len(counts)} (outputs per class: "
                      + ", ".join(map(str, counts)) + f" of a {result.batch}x{result.batch} "
                      "product)")
        try:
            acc = result.as_accumulator()
            gemm = ", ".join(f"{k}={v!r}" for k, v in acc.items())
        except ValueError:
            gemm = "not expressible; use ProbeResult.predict"
        t.add_row("accum.gemm", gemm)
        if result.ambiguous:
            t.add_row(Text("not told apart", style=STYLES["warn"]),
                      "; ".join(result.ambiguous))
        t.add_row("calls", str(result.calls))
    if isinstance(check, VerifyResult):
        style = STYLES["good"] if check.matches == check.outputs else STYLES["bad"]
        t.add_row("verify", Text(f"{check.matches} of {check.outputs} random outputs bit for "
                                 f"bit ({check.fraction:.2%})", style=style))
    return t


def unbroken_width(console: Console, obj: object) -> int:
    """The width at which no table of ``obj`` (a renderable, or a Group of them) cuts a
    cell: a table's natural width; prose may wrap."""
    if isinstance(obj, Group):
        return max((unbroken_width(console, r) for r in obj.renderables), default=0)
    wide = console.options.update_width(1 << 16)
    if isinstance(obj, (Table, Listing)):
        return int(console.measure(obj, options=wide).maximum)
    if isinstance(obj, Grid):  # its narrowest form: two stacked halves
        return int(console.measure(obj, options=wide).minimum)
    return 0

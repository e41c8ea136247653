"""fpinspect views rendered to text at width 100 with colour off, compared with expected text.

The expected texts were checked by hand against the formats' definitions; the
arithmetic behind the key numbers is spelled out next to them and asserted
with exact Fractions, independently of the library.
"""

from __future__ import annotations

import doctest
import io
from fractions import Fraction

import fpinspect.views as views
from hypothesis import given
from hypothesis import strategies as st
from rich import box

from numerics.inspection import DEFAULT_VALUE_FORMATS, inspect_code, inspect_integer, inspect_value
from numerics.parse import parse_value


def render(renderable: object, width: int = 100) -> str:
    buf = io.StringIO()
    console = views.make_console(width=width, color=False, file=buf)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n") + "\n"


def value_text(text: str, formats: tuple[str, ...], overflow: str = "ieee") -> str:
    pv = parse_value(text)
    results = [inspect_value(pv, f, overflow=overflow) for f in formats]
    return render(views.value_view(pv, results, rounding="rne", overflow=overflow))


def test_independent_arithmetic_behind_the_expected_texts() -> None:
    # 0.1 in bfloat16: 0.1 = 1.6 * 2**-4; 8 significant bits: round(1.6 * 128) = 205 = 0xCD.
    assert round(Fraction(1, 10) * 2**4 * 128) == 205
    assert Fraction(205, 128) * Fraction(1, 16) == Fraction("0.10009765625")
    # 1e-40 in bfloat16: below 2**-126, quantum 2**-133; 1e-40 / 2**-133 = 1.0889 -> 1.
    assert round(Fraction(1, 10**40) / Fraction(1, 2**133)) == 1
    # 448 = 1.75 * 2**8 is e4m3fn's max (code 0x7E); 500 is beyond 448 + 32/2 = 464.
    assert Fraction(7, 4) * 2**8 == 448 and 500 > 448 + 16
    # 16777217 = 2**24 + 1 is odd: binary32 (24 bits) spaces integers 2 apart there.
    assert 16777217 == 2**24 + 1


EXPECTED_01 = """\
0.1  rounding rne, overflow ieee; error = stored - input

binary64  0 01111111011 1001100110011001100110011001100110011001100110011010
          0x3fb999999999999a = 0.1000000000000000055511151231257827021181583404541015625
          normal, rounded: error +5.551e-18 (relative +5.55e-17), ulp 2^-56
binary32  0 01111011 10011001100110011001101
          0x3dcccccd = 0.100000001490116119384765625
          normal, rounded: error +1.49e-09 (relative +1.49e-08), ulp 2^-27
tf32      0 01111011 1001100110
          0x1ee66 = 0.0999755859375
          normal, rounded: error -2.441e-05 (relative -0.000244), ulp 2^-14
bfloat16  0 01111011 1001101
          0x3dcd = 0.10009765625
          normal, rounded: error +9.766e-05 (relative +0.000977), ulp 2^-11
binary16  0 01011 1001100110
          0x2e66 = 0.0999755859375
          normal, rounded: error -2.441e-05 (relative -0.000244), ulp 2^-14
e5m2      0 01011 10
          0x2e = 0.09375
          normal, rounded: error -0.00625 (relative -0.0625), ulp 2^-6
e4m3fn    0 0011 101
          0x1d = 0.1015625
          normal, rounded: error +0.001562 (relative +0.0156), ulp 2^-7
"""


def test_value_0_1_in_the_default_formats() -> None:
    assert value_text("0.1", DEFAULT_VALUE_FORMATS) == EXPECTED_01


EXPECTED_1E40_BF16 = """\
1e-40  (exactly 0.0000000000000000000000000000000000000001)  rounding rne, overflow ieee; error =
stored - input

bfloat16  0 00000000 0000001
          0x0001 =
          0.0000000000000000000000000000000000000000918354961579912115600575419704879435795832466228
          193376178712270530013483949005603790283203125
          subnormal, rounded: error -8.165e-42 (relative -0.0816), ulp 2^-133
"""


def test_value_1e_40_in_bfloat16_is_the_smallest_subnormal() -> None:
    assert value_text("1e-40", ("bf16",)) == EXPECTED_1E40_BF16


def test_value_448_in_e4m3fn_is_exact_under_both_overflow_rules() -> None:
    for overflow in ("ieee", "saturate"):
        assert value_text("448", ("e4m3fn",), overflow) == f"""\
448  rounding rne, overflow {overflow}; error = stored - input

e4m3fn  0 1111 110
        0x7e = 448
        normal, exact, ulp 2^5
"""


def test_value_500_in_e4m3fn_overflows_to_nan_or_saturates() -> None:
    assert value_text("500", ("e4m3fn",), "ieee") == """\
500  rounding rne, overflow ieee; error = stored - input

e4m3fn  0 1111 111
        0x7f = nan
        nan, overflow -> NaN
"""
    assert value_text("500", ("e4m3fn",), "saturate") == """\
500  rounding rne, overflow saturate; error = stored - input

e4m3fn  0 1111 110
        0x7e = 448
        normal, saturated: error -52 (relative -0.104), ulp 2^5
"""


def test_int_16777217() -> None:
    assert render(views.int_view(inspect_integer(16777217))) == """\
16777217  as an integer type and as floats

 type       exact     stored   error   spacing there   exact up to
 ─────────────────────────────────────────────────────────────────
 uint32     yes     16777217       0               1    4294967295
 int32      yes     16777217       0               1    2147483647
 binary32   no      16777216      -1               2          2^24
 bfloat16   no      16777216      -1          131072           2^8
 binary16   no      overflow       -               -          2^11
 binary64   yes     16777217       0           2^-28          2^53

A float with p significant bits holds every integer of magnitude up to 2^p; above that, only
multiples of the spacing.
"""


def test_bits_of_e4m3fn_max() -> None:
    assert render(views.bits_view(inspect_code(0x7E, "e4m3fn"))) == """\
format     e4m3fn (8 bits: 1 sign, 4 exponent, 3 mantissa)
code       0x7e  126
bits       0 1111 110
fields     sign 0, exponent field 15 (2^8), mantissa field 6
class      normal
value      448
hex float  0x1.cp+8
ulp        2^5
previous   416  0x7d
next       -
"""


def test_table_grid_of_e2m1fn_and_narrow_split() -> None:
    from numerics.formats import get_format
    from numerics.inspection import code_table

    fmt = get_format("e2m1fn")
    wide = render(views.table_view(fmt, code_table(fmt)), width=100)
    assert wide.splitlines()[-1].split() == ["0", "0", "0.5", "1", "1.5", "2", "3", "4", "6",
                                             "-0", "-0.5", "-1", "-1.5", "-2", "-3", "-4", "-6"]
    narrow = render(views.table_view(fmt, code_table(fmt)), width=60)
    assert max(len(line) for line in narrow.splitlines()) <= 60
    assert "…" not in narrow and "-1.5" in narrow  # split into halves, never truncated


def test_formats_table_fits_80_columns_without_truncation() -> None:
    from numerics.formats import FORMATS, get_format

    text = render(views.formats_view([get_format(n) for n in FORMATS]), width=80)
    assert "…" not in text
    line = next(ln for ln in text.splitlines() if ln.startswith("e4m3fn "))
    assert line.split() == ["e4m3fn", "8", "4/3", "7", "448", "2^-6", "2^-9", "2^-3", "-",
                            "top", "yes"]


def test_colour_is_present_on_a_colour_terminal() -> None:
    buf = io.StringIO()
    console = views.make_console(width=100, color=True, file=buf)
    pv = parse_value("1")
    console.print(views.value_view(pv, [inspect_value(pv, "e4m3fn")], rounding="rne",
                                   overflow="ieee"))
    assert "\x1b[" in buf.getvalue()


# ---------------------------------------------------------------- ls: Listing against rich
_CELL_CHARS = st.sampled_from(list("ab.Z_-/[]09 \t") + ["漢", "é", "\u200b", "\x1b", "\u3000"])


@st.composite
def _listings(draw: st.DrawFn) -> tuple[list[tuple[str, str]], list[list[str]]]:
    columns = draw(st.lists(st.tuples(st.sampled_from(["tensor", "dtype", "shape", "bytes",
                                                       "shard", "长名"]),
                                      st.sampled_from(["left", "right"])),
                            min_size=1, max_size=5))
    cell = st.text(_CELL_CHARS, max_size=10).map(views.visible)
    rows = draw(st.lists(st.lists(cell, min_size=len(columns), max_size=len(columns)),
                         max_size=6))
    return columns, rows


@given(_listings(), st.booleans())
def test_listing_renders_as_the_rich_table_it_stands_for(
        listing: tuple[list[tuple[str, str]], list[list[str]]], color: bool) -> None:
    """views.Listing (fpinspect ls) gives the characters and escape codes of the rich table
    it replaces, on a colour terminal and off: wide and invisible characters, trailing
    white space in right-justified cells, no rows at all."""
    columns, rows = listing
    table = views._table(box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False)
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(views.plain(cell) for cell in row))

    def text(renderable: object) -> str:
        buf = io.StringIO()
        views.make_console(width=300, color=color, file=buf).print(renderable)
        return buf.getvalue()

    assert text(views.Listing(columns, rows)) == text(table)


def test_listing_docstring_example_runs() -> None:
    # (the doctests collected by pytest are numerics' own; fpinspect's run here)
    runner = doctest.DocTestRunner()
    for example in doctest.DocTestFinder().find(views.Listing, "Listing", globs=vars(views)):
        runner.run(example)
    assert runner.tries > 0 and runner.failures == 0

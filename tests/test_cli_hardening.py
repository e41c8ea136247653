"""Issue 13, the value/int/bits side of fpinspect and the text helpers under it: valid input
of any size works, exact figures are never flushed by a float64 on the way to the screen,
and mistakes get a one-line message that points at the fix."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from fpinspect.main import main

from numerics.digits import int_to_text, text_to_int
from numerics.inspection import scientific_text
from numerics.parse import parse_code, parse_value
from numerics.parts import exact_decimal, hexfloat


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and err.startswith("fpinspect: error: "), err
    return err


# ---------------------------------------------------------------- values beyond 4300 digits
def test_digit_strings_of_any_length_round_trip() -> None:
    for n in (0, 7, 10**4299, 10**4300 + 12345, 3**20000):
        assert text_to_int(int_to_text(n)) == n
        assert int_to_text(-n) == ("-" + int_to_text(n) if n else "0")


@pytest.mark.parametrize("args", [("1e4300", "-f", "fp32"), ("1e9999",), ("int", "1e5000"),
                                  ("-1e-5000", "-f", "bf16"), ("1" + "0" * 5000, "-f", "fp64")])
def test_huge_and_tiny_values_work(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
                                   ) -> None:
    code, out, err = run(capsys, *args)
    assert code == 0 and err == "", err
    assert max(len(line) for line in out.splitlines()) < 200  # abbreviated on the terminal
    code, out, err = run(capsys, *args, "--json")
    assert code == 0
    doc = json.loads(out)
    text = doc.get("input_exact", doc.get("value"))
    assert len(text) > 4000  # every digit kept in JSON


def test_an_underflowing_error_is_shown_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "1e-400", "-f", "fp32")
    assert code == 0 and "error -1e-400" in out and "error -0" not in out
    code, out, _ = run(capsys, "1e-400", "-f", "fp32", "--json")
    (entry,) = json.loads(out)["formats"]
    assert entry["abs_error"] == "-1e-400"  # a JSON number -0.0 would say no error
    assert Fraction(entry["abs_error_exact"]) == Fraction(-1, 10**400)


def test_scientific_text_matches_percent_g_and_goes_beyond_float64() -> None:
    for x in (0.1, -2.5e-300, 123456.0, 9999.5, 1e-5, 6.02e23, 5e-324, 1.7976931348623157e308):
        for digits in (3, 4, 17):
            assert scientific_text(x, digits) == f"{x:.{digits}g}"
    assert scientific_text(Fraction(-1, 10**400)) == "-1e-400"
    assert scientific_text(Fraction(10**4000 * 3), 2, plus=True) == "+3e+4000"


# ---------------------------------------------------------------- helpers take what they name
def test_text_helpers_on_non_finite_and_wrong_types() -> None:
    assert exact_decimal(float("inf")) == "inf" and exact_decimal(float("nan")) == "nan"
    assert hexfloat(float("-inf")) == (float("-inf")).hex() == "-inf"
    for bad in (None, "1.5", 1 + 2j):
        with pytest.raises(TypeError, match="value="):
            hexfloat(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="value="):
            exact_decimal(bad)  # type: ignore[arg-type]


def test_parse_code_takes_a_format_name() -> None:
    assert parse_code("0x3f80", "bfloat16") == 0x3F80
    with pytest.raises(ValueError, match="16 bits"):
        parse_code("9" * 5000, "bfloat16")
    with pytest.raises(TypeError, match="code="):
        parse_code(0x3F80, "bfloat16")  # type: ignore[arg-type]
    assert parse_value("1" + "0" * 5000).fraction == 10**5000


# ---------------------------------------------------------------- mistakes point at the fix
@pytest.mark.parametrize(("typed", "meant"), [("stat", "stats"), ("format", "formats"),
                                              ("tabel", "table"), ("dif", "diff")])
def test_a_mistyped_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str], typed: str,
                                              meant: str) -> None:
    err = usage_error(capsys, typed, "x.npy")
    assert f"did you mean {meant!r}" in err


def test_values_that_look_like_words_are_still_values(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert run(capsys, "inf", "-f", "bf16")[0] == 0
    assert run(capsys, "nan", "-f", "bf16")[0] == 0


def test_a_nan_names_the_chosen_formats_without_nan(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    """NaN into ``-f e2m1fn,bf16``: bfloat16's NaN is shown and e2m1fn is named as having
    none, not dropped in silence."""
    code, out, _ = run(capsys, "nan", "-f", "e2m1fn,bf16")
    assert code == 0 and "bfloat16" in out and "no NaN in e2m1fn" in out


def test_an_unknown_format_points_to_the_formats_command(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    for args in (("0.1", "-f", "bf17"), ("bits", "0x1", "-f", "e4m3fm"), ("table", "fp5")):
        err = usage_error(capsys, *args)
        assert "fpinspect formats" in err and "numerics.FORMATS" not in err


@pytest.mark.parametrize(("args", "needle"), [
    (("0.1", "-f", ""), "names no format"),
    (("formats", "-f", ""), "names no format"),
    (("0.1", "--all", "-f", "bf16"), "--all"),
    (("0.1", "--seed", "3"), "--rounding sr"),
    (("0.1", "--rounding", "sr", "--seed", "-1"), "non-negative"),
])
def test_empty_or_meaningless_options_are_rejected(capsys: pytest.CaptureFixture[str],
                                                   args: tuple[str, ...], needle: str) -> None:
    assert needle in usage_error(capsys, *args)


def test_seed_still_works_with_stochastic_rounding(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "0.1", "-f", "bf16", "--rounding", "sr", "--seed", "7", "--json")
    second = run(capsys, "0.1", "-f", "bf16", "--rounding", "sr", "--seed", "7", "--json")
    assert first[0] == 0 and first == second


def test_the_seed_of_a_stochastic_rounding_is_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    """A stochastic run says which seed drew it (the default 0 too), so it can be repeated;
    a deterministic run has no seed to report."""
    import json

    for given, shown in ((("--seed", "7"), 7), ((), 0)):
        code, out, _ = run(capsys, "0.1", "-f", "bf16", "--rounding", "sr", *given, "--json")
        assert code == 0 and json.loads(out)["seed"] == shown
        code, out, _ = run(capsys, "0.1", "-f", "bf16", "--rounding", "sr", *given)
        assert code == 0 and f"rounding sr (seed {shown})" in out
    code, out, _ = run(capsys, "0.1", "-f", "bf16", "--json")
    assert code == 0 and "seed" not in json.loads(out)
    assert "seed" not in run(capsys, "0.1", "-f", "bf16")[1]


@pytest.mark.parametrize(("args", "needle"), [
    # review: the command after a leading option was read as VALUE ("not a number",
    # "unrecognized arguments: 5"), pointing at a valid argument
    (("--json", "int", "5"), "Got '--json' before the command 'int'"),
    (("--json", "formats"), "Got '--json' before the command 'formats'"),
    (("-f", "e4m3fn", "bits", "0x7e"), "fpinspect bits ... -f e4m3fn"),
    (("--json", "value", "0.1"), "before the command 'value'"),
    # review: a number beyond the exponent limit was "not an integer"
    (("int", "1e10001"), "Got N='1e10001', but its exponent is beyond"),
])
def test_misplaced_options_and_huge_exponents_are_named(
        capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str) -> None:
    assert needle in usage_error(capsys, *args)


@pytest.mark.parametrize("args", [("bits", "9" * 100_000, "-f", "fp32"),
                                  ("bits", "0x" + "f" * 100_000, "-f", "fp32"),
                                  ("int", "x" * 100_000), ("value", "x" * 100_000)])
def test_a_huge_argument_is_not_echoed_whole(capsys: pytest.CaptureFixture[str],
                                             args: tuple[str, ...]) -> None:
    # review: the error line quoted all 100,000 characters
    err = usage_error(capsys, *args)
    assert len(err) < 300
    assert "(100002 characters)" in err or "(100000 characters)" in err


def test_bits_tells_quiet_from_signalling_nans_and_writes_zeros_in_hex(
        capsys: pytest.CaptureFixture[str]) -> None:
    # review: a NaN's kind was not shown (a kernel's signalling NaN looked like any NaN)
    # and +-0 had no hex float row, though hexfloat gives 0x0p+0 / -0x0p+0
    import json

    for code, fmt, kind in (("0x7f800001", "fp32", "signalling"), ("0xffc00000", "fp32", "quiet"),
                            ("0x7e", "e5m2", "quiet"), ("0x7d", "e5m2", "signalling"),
                            ("0x7f", "e4m3fn", None), ("0x80", "e4m3fnuz", None)):
        status, out, _ = run(capsys, "bits", code, "-f", fmt)
        assert status == 0 and "class     nan" in out
        assert (f"nan ({kind})" in out) == (kind is not None)
        status, out, _ = run(capsys, "bits", code, "-f", fmt, "--json")
        assert json.loads(out)["nan_kind"] == kind
    assert "hex float  -0x0p+0" in run(capsys, "bits", "0x80000000", "-f", "fp32")[1]
    assert "hex float  0x0p+0" in run(capsys, "bits", "0", "-f", "bf16")[1]

"""The README's examples run, and its format table matches the registry."""

from __future__ import annotations

import doctest
import re
from fractions import Fraction
from pathlib import Path

import numerics
from numerics.formats import get_format

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_doctests_pass() -> None:
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_readme_format_table_matches_registry() -> None:
    text = README.read_text()
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (\d+) \| (\d+)/(\d+) \| (\d+) \| ([^|]+) \|"
                      r" ([^|]+) \| ([^|]+) \|", text, flags=re.M)
    assert [r[0] for r in rows] == list(numerics.FORMATS)

    def close(text: str, value: float) -> bool:
        return abs(Fraction(text.strip()) - Fraction(value)) <= Fraction(value) / 1000

    for name, bits, w, t, bias, max_text, normal_text, sub_text in rows:
        fmt = get_format(name)
        assert (fmt.bits, fmt.exponent_bits, fmt.trailing_bits, fmt.bias) == \
            (int(bits), int(w), int(t), int(bias))
        assert abs(Fraction(max_text.strip()) - fmt.max_exact) <= fmt.max_exact / 1000
        assert close(normal_text, fmt.smallest_normal), name
        # no subnormals (0 trailing bits): "-", as fpinspect formats shows it
        if fmt.subnormals and fmt.trailing_bits:
            assert close(sub_text, fmt.smallest_subnormal), name
        else:
            assert sub_text.strip() == "-", name


def test_readme_quickstart_has_exactly_two_commands() -> None:
    text = README.read_text()
    section = text.split("## Quickstart", 1)[1].split("##", 1)[0]
    block = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert len(block) == 1
    commands = [line for line in block[0].splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (README.parent / ".ci" / "run").read_text()
    for command in commands:
        assert command.replace(" -e ", " -q -e ") in ci or command in ci
    # The first command leaves `fpinspect` on the PATH for the tour (issue 13).
    assert ". .venv/bin/activate" in commands[0] and commands[0].endswith("&& fpinspect")

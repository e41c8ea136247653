"""The README's examples run, and its format table matches the registry."""

from __future__ import annotations

import doctest
import re
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
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (\d+) \| (\d+)/(\d+) \| (\d+) \| ([^|]+) \|", text,
                      flags=re.M)
    assert [r[0] for r in rows] == list(numerics.FORMATS)
    for name, bits, w, t, bias, max_text in rows:
        fmt = get_format(name)
        assert (fmt.bits, fmt.exponent_bits, fmt.trailing_bits, fmt.bias) == \
            (int(bits), int(w), int(t), int(bias))
        from fractions import Fraction

        shown = Fraction(max_text.strip())
        assert abs(shown - fmt.max_exact) <= Fraction(1, 1000) * fmt.max_exact


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

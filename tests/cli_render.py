"""Run ``fpinspect`` in-process and capture what it renders (width 100, no colour)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from fpinspect import jsonout, views
from fpinspect.main import main, run
from fpinspect.views import Text


def render(*argv: str) -> tuple[int, str]:
    """The exit status and the rendered output of ``fpinspect *argv``."""
    buf = io.StringIO()
    console = views.make_console(width=100, color=False, file=buf)

    def out(obj: Any) -> None:
        if isinstance(obj, dict):
            buf.write(jsonout.dumps(obj) + "\n")
        else:
            console.print(obj, soft_wrap=isinstance(obj, Text))

    code = run(list(argv), out)
    return code, buf.getvalue()


def call(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The exit status, stdout and stderr of ``fpinspect *argv`` run in-process."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """stderr of ``fpinspect *argv``, checked to be a user's mistake: exit 2, nothing on
    stdout, one plain line on stderr (no traceback, no terminal escapes)."""
    code, out, err = call(capsys, *argv)
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and err.startswith("fpinspect: error: "), err
    assert "Traceback" not in err and "\x1b" not in err
    return err

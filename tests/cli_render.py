"""Run ``fpinspect`` in-process and capture what it renders (width 100, no colour)."""

from __future__ import annotations

import io
from typing import Any

from fpinspect import jsonout, views
from fpinspect.main import run
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

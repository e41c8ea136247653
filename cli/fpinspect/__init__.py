"""fpinspect: the command-line inspector for floating-point values, codes and tensors.

A thin layer over :mod:`numerics`: :mod:`fpinspect.main` parses arguments and
calls the library (its ``main`` is the console entry point), :mod:`fpinspect.views`
renders the results with rich and :mod:`fpinspect.jsonout` writes them as strict
JSON.  Nothing else is imported here, so ``fpinspect.main`` stays the module.

When this package is imported by the ``fpinspect`` program itself (the console
script or ``python -m fpinspect``), Ctrl-C during the imports that follow (numpy,
numba, rich: a few tenths of a second) prints ``fpinspect: interrupted`` and exits
with 130 instead of a traceback; :func:`fpinspect.main.main` then hands SIGINT back
to Python, and its own handling takes over.  Imported anywhere else (tests, a
notebook), nothing changes.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

__all__: list[str] = []


def _early_sigint(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C before ``main`` runs: one line, exit status 130, no traceback."""
    os.write(2, b"fpinspect: interrupted\n")
    os._exit(130)


def _is_the_program(argv0: str, orig_argv: list[str]) -> bool:
    """True when the interpreter runs the ``fpinspect`` script or ``python -m fpinspect``."""
    name = os.path.basename(argv0).lower().removesuffix(".exe")
    if name == "fpinspect":
        return True
    return any(a == "-m" and b in ("fpinspect", "fpinspect.main")
               for a, b in zip(orig_argv, orig_argv[1:]))


if (_is_the_program(sys.argv[0] if sys.argv else "", list(getattr(sys, "orig_argv", [])))
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
    signal.signal(signal.SIGINT, _early_sigint)

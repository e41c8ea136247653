"""fpinspect: the command-line inspector for floating-point values, codes and tensors.

A thin layer over :mod:`numerics`: :mod:`fpinspect.main` parses arguments and
calls the library (its ``main`` is the console entry point), :mod:`fpinspect.views`
renders the results with rich and :mod:`fpinspect.jsonout` writes them as strict
JSON.  Nothing is imported here, so ``fpinspect.main`` stays the module.
"""

from __future__ import annotations

__all__: list[str] = []

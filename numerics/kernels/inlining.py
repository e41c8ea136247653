"""LLVM's inlining threshold while this package's kernels compile.

The loops call small compiled helpers per element (a two-sum, the rounding of a
pair, a draw of the random stream). They are ordinary ``numba.njit`` functions:
numba lowers each once and LLVM inlines them into the loop when it optimizes the
kernel, before it vectorizes. numba's own ``inline="always"`` inlines at the level
of its IR instead and types the grown caller again at every call site; for the
arithmetic kernels that took nearly three times longer to compile (the float64
operands of ``numerics.ops`` in binary32: 76 s against 28 s) for the same loops.

LLVM's default threshold at numba's optimization level (250) leaves the larger
helpers as calls, and a call in a loop stops the vectorizer: the same kernels then
ran 1.5 to 2.5 times slower.  So while a kernel of this package compiles, the
threshold is :data:`THRESHOLD`; after it, LLVM's default for numba's level again,
so that other numba code in the process compiles as it would without this package.
numba compiles one function at a time (under its global compiler lock), so the
setting never leaks into a compile running on another thread.

The float-to-code loops of :mod:`numerics.kernels.narrow` are the exception
(:data:`AT_DEFAULT`): tuned with their helpers inlined by numba, they compile at
LLVM's default, where the raised threshold made LLVM inline the code loop into the
piece loop of ``round_rne_span`` (float64 values into bfloat16, 2**22 elements:
6.1 against 5.2 ms).

Importing this module (every kernel module does, before its first kernel) installs
the switch once.

Examples
--------
>>> THRESHOLD > _default_threshold()  # LLVM's: 250 at numba's default level
True
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm
from numba.core import config, event

__all__ = ["AT_DEFAULT", "THRESHOLD"]

THRESHOLD = 2000
"""LLVM's inline threshold for this package's kernels (its cost units)."""

AT_DEFAULT = frozenset({"numerics.kernels.narrow"})
"""Kernel modules whose compiles keep LLVM's default threshold."""


def _default_threshold() -> int:
    """LLVM's own threshold at numba's optimization level (``NUMBA_OPT``): 250 at 3,
    225 below (LLVM's ``getInlineParamsFromOptLevel``)."""
    return 250 if int(getattr(config, "OPT", 3)) >= 3 else 225


def _set(threshold: int) -> None:
    llvm.set_option("numerics", f"-inline-threshold={threshold}")


class _Switch(event.Listener):
    """Raises the threshold when the compile of one of this package's functions starts
    (at any depth: a user's function may call a kernel) and restores it when that
    compile ends."""

    def __init__(self) -> None:
        self._depth = 0
        self._raised_at = -1

    def on_start(self, ev: Any) -> None:
        self._depth += 1
        if self._raised_at < 0 and _ours(ev):
            _set(THRESHOLD)
            self._raised_at = self._depth

    def on_end(self, ev: Any) -> None:
        if self._depth == self._raised_at:
            _set(_default_threshold())
            self._raised_at = -1
        self._depth -= 1


def _ours(ev: Any) -> bool:
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith("numerics.") and module not in AT_DEFAULT


_SWITCH = _Switch()
event.register("numba:compile", _SWITCH)

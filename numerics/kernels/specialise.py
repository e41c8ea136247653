"""Kernels compiled once per literal flag, with the flag as a constant.

A loop that serves several cases by flags (the operation, whether flags are
wanted, the shape of a rounding step) is called with literal flags, so numba
compiles one variant per combination and LLVM sees each as a straight loop.
numba, though, types and lowers *every* branch of each variant: its branch
pruning folds constants, globals and closure variables, but not a literal
argument (it compares only the argument's type).  Typing and lowering the
branches a variant never takes was about half of its compile time (one variant
of the arithmetic loop of :mod:`numerics.kernels.ops`: 2.3 against 1.1 s).

:class:`Specialising` is numba's nopython pipeline with one pass added where
numba has bound the arguments (:class:`LiteralFlagsAsConstants`, after
``FixupArgs``): where the function is compiled for a literal ``int`` or ``bool``
argument, the argument's value becomes a constant, so the branch pruning that
follows removes the branches it rules out, also in
the helpers numba inlines into the function.  Nothing else changes: a call with
ordinary (non-literal) arguments compiles as before, the results are the same
bits, and the on-disk cache works as for any kernel.  On eight first calls of
``numerics.ops`` and ``numerics.encode`` (binary32, bfloat16, e4m3fn, binary16;
nearest, directed and stochastic modes; a fresh cache), compiling took 73 to 82 s
against 90 s without the pass (AMD EPYC Zen 2 VM).

Examples
--------
A variant compiled for a literal flag holds only its own branch (a function
defined at a prompt has no source file to cache by, so this one uses the pipeline
without :func:`specialised`'s ``cache=True``):

>>> import numba
>>> @numba.njit(pipeline_class=Specialising)
... def twice_or_root(double, x):
...     return x * 2.0 if double else x ** 0.5
>>> @numba.njit
... def call(x):
...     return twice_or_root(True, x)
>>> call(1.5)
3.0
>>> [str(a) for a in twice_or_root.signatures[0]]
['Literal[bool](True)', 'float64']
"""

from __future__ import annotations

from typing import Any, Callable

import numba
from numba import types
from numba.core import ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.untyped_passes import FixupArgs

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers

__all__ = ["LiteralFlagsAsConstants", "Specialising", "specialised"]


@register_pass(mutates_CFG=True, analysis_only=False)
class LiteralFlagsAsConstants(FunctionPass):
    """Replace each argument compiled as a literal ``int`` or ``bool`` by its value, as a
    constant of the function's IR (before numba's branch pruning runs)."""

    _name = "numerics_literal_flags_as_constants"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: Any) -> bool:
        """Make the literal ``int``/``bool`` arguments constants of ``state.func_ir``.

        Parameters
        ----------
        state : numba.core.compiler.StateDict
            The compiler state: its ``func_ir`` is rewritten in place, ``args`` gives
            the argument types.

        Returns
        -------
        bool
            Whether any argument was replaced (the IR changed).
        """
        changed = False
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg):
                    ty = state.args[stmt.value.index]
                    if isinstance(ty, types.Literal) and type(ty.literal_value) in (int, bool):
                        stmt.value = ir.Const(ty.literal_value, stmt.value.loc)
                        changed = True
        return changed


class Specialising(CompilerBase):
    """numba's nopython pipeline with :class:`LiteralFlagsAsConstants` right after
    ``FixupArgs``, before any branch pruning."""

    def define_pipelines(self) -> list[Any]:
        """The pipelines numba runs: the nopython one, with the pass added.

        Returns
        -------
        list of numba.core.compiler_machinery.PassManager
            One finalized pass manager.
        """
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(LiteralFlagsAsConstants, FixupArgs)
        pm.finalize()
        return [pm]


def specialised(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, pipeline_class=Specialising, **options)``: a
    kernel that compiles only the branches its literal flags leave (module docstring).
    Used bare (``@specialised``) or with options (``@specialised(error_model="numpy")``)."""
    jit = numba.njit(cache=True, nogil=True, pipeline_class=Specialising, **options)
    return jit if fn is None else jit(fn)

"""Black-box probes: how does a given ``sum`` or matrix multiply really accumulate?

:func:`matmul` and :func:`summation_order` send inputs built so that the outputs
reveal the order of the additions (FPRev: Xie et al. 2024/2025), the bits the
adder keeps, its rounding and its subnormal handling (Fasi, Higham, Mikaitis and
Pranesh 2021, section 3), and return a model that :func:`verify` checks bit for
bit on random inputs.  The tests and why they decide each parameter:
``proofs/probe.md``.

Examples
--------
>>> import numpy as np
>>> from numerics import probe
>>> probe.summation_order(lambda x: x[0] + x[1] + (x[2] + x[3]), 4)
((0, 1), (2, 3))
"""

from __future__ import annotations

from numerics.probe.matmul import matmul
from numerics.probe.model import MatmulModel, Tree, parse_tree, tree_text
from numerics.probe.order import describe_tree, fused_groups
from numerics.probe.result import Evidence, ProbeError, ProbeResult, SumResult
from numerics.probe.summation import probe_sum, summation_order
from numerics.probe.verify import VerifyResult, verify

__all__ = [
    "Evidence",
    "MatmulModel",
    "ProbeError",
    "ProbeResult",
    "SumResult",
    "Tree",
    "VerifyResult",
    "describe_tree",
    "fused_groups",
    "matmul",
    "parse_tree",
    "probe_sum",
    "summation_order",
    "tree_text",
    "verify",
]

"""What a probe returns: the recovered model, the evidence behind it, and the errors.

A probe never returns a model it has not checked: every field of a
:class:`ProbeResult` is the one value left standing after the test vectors of
``proofs/probe.md`` eliminated the other hypotheses, and :attr:`ProbeResult.evidence`
keeps each vector with every hypothesis' prediction and the observed output.
When no hypothesis survives, or the black box misbehaves, :class:`ProbeError` is
raised with what was observed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numerics.formats import as_format
from numerics.probe.model import MatmulModel, Tree, fused_tree_sums, round_into, tree_text

__all__ = ["Evidence", "ProbeError", "ProbeResult", "SumResult"]


class ProbeError(ValueError):
    """The black box could not be probed, or no model of the family fits it.

    ``findings`` holds what was observed (the failing call, the differing outputs,
    the hypotheses and their predictions), for reports and the CLI's ``--json``.
    """

    def __init__(self, message: str, findings: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.findings: dict[str, Any] = dict(findings or {})


@dataclass(frozen=True)
class Evidence:
    """One designed test: the inputs, each hypothesis' prediction, the observation."""

    #: The parameter this test decides (``"order"``, ``"fractional_bits"``, ...).
    parameter: str
    #: A short description of the inputs, in words (``proofs/probe.md`` claim id).
    vector: str
    #: Prediction of every hypothesis still alive when the test ran, by name.
    predicted: dict[str, float]
    #: The black box's output.
    observed: float

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {"parameter": self.parameter, "vector": self.vector,
                "predicted": dict(self.predicted), "observed": self.observed}


@dataclass(frozen=True)
class ProbeResult:
    """The accumulation model recovered for a black-box matrix multiply.

    The fields describe one output ``D[i, j] = sum_k A[i, k] B[k, j]`` for the
    probed ``k``; :meth:`predict` runs the model, :meth:`as_accumulator` gives the
    same model as :func:`numerics.accum.gemm` options where gemm can express it.
    """

    #: The model itself (evaluated by :meth:`predict`).
    model: MatmulModel
    #: Calls of the black box the probe made.
    calls: int
    #: Every designed test with the predictions and the observation.
    evidence: tuple[Evidence, ...] = field(default=())
    #: Hypotheses the tests could not tell apart (their names), empty if unique.
    ambiguous: tuple[str, ...] = field(default=())
    #: One model per class of output positions (a single class when the order is
    #: the same for every output, the usual case).
    classes: tuple[MatmulModel, ...] = field(default=())
    #: Class of every output of the probed ``(batch, k) @ (k, batch)`` shape.
    class_map: np.ndarray | None = field(default=None, compare=False)
    #: Rows and columns of the probed shape.
    batch: int = 0

    @property
    def order(self) -> Tree:
        """The reduction tree over ``k`` (nested tuples; a node with more than two
        children is one fused multi-term addition)."""
        return self.model.order

    @property
    def class_sizes(self) -> tuple[int, ...]:
        """How many outputs of the probed ``batch x batch`` product each position class
        holds, in the order of ``classes`` (one class: all of them)."""
        if len(self.classes) <= 1 or self.class_map is None:
            return (self.batch * self.batch,)
        return tuple(int(n) for n in np.bincount(self.class_map.reshape(-1),
                                                  minlength=len(self.classes)))

    @property
    def group_size(self) -> int:
        """Products per fused addition (1 for a chain of two-operand additions)."""
        return self.model.group_size

    @property
    def fractional_bits(self) -> int | None:
        """Bits kept after alignment to the largest exponent; None for standard adds."""
        return self.model.fractional_bits

    @property
    def alignment_rounding(self) -> str | None:
        """``"rtz"`` or ``"rne"`` for the aligned terms; None for standard adds."""
        return self.model.alignment_rounding

    @property
    def output_rounding(self) -> str:
        """Rounding of each fused result (or of the final cast) into its format."""
        return self.model.output_rounding

    @property
    def promote_every(self) -> int | None:
        """K steps between promotions into a binary32 running total, or None."""
        return self.model.promote_every

    @property
    def subnormals(self) -> dict[str, str]:
        """``{"inputs": ..., "outputs": ...}``, each ``"kept"``, ``"flushed"`` or
        ``"untested"`` (the formats cannot produce one)."""
        return {"inputs": self.model.input_subnormals, "outputs": self.model.output_subnormals}

    def predict(self, A: Any, B: Any) -> np.ndarray:
        """The model's output for ``A @ B`` (float64 values of the output format).

        With several position classes the model holds for the probed shape only
        (``A`` (batch, k), ``B`` (k, batch)); other shapes raise ValueError.
        """
        if len(self.classes) <= 1 or self.class_map is None:
            return self.model.matmul(A, B)
        A = np.asarray(A, np.float64)
        B = np.asarray(B, np.float64)
        if A.shape[0] != self.batch or B.shape[1] != self.batch:
            raise ValueError(
                f"Got A with shape {A.shape} and B with shape {B.shape}, but this black box "
                f"orders its sums by output position; the model holds for "
                f"({self.batch}, k) @ (k, {self.batch}) only"
            )
        out = np.empty((self.batch, self.batch))
        for cls, model in enumerate(self.classes):
            rows, cols = np.nonzero(self.class_map == cls)
            out[rows, cols] = model.evaluate(A[rows], B.T[cols])
        return out

    def as_accumulator(self) -> dict[str, Any]:
        """Keyword arguments of :func:`numerics.accum.gemm` giving the same model.

        ``accum.gemm(A, B, input_format=r.model.input_format, **r.as_accumulator())``.
        ValueError when gemm cannot express the model (a tree other than a chain,
        fused parameters no preset has).
        """
        if len(self.classes) > 1:
            raise ValueError(f"Got a black box with {len(self.classes)} position classes "
                             "(different orders for different outputs), which accum.gemm "
                             "does not model")
        return self.model.as_accumulator()

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form of every field."""
        d = self.model.as_dict()
        d["calls"] = self.calls
        d["batch"] = self.batch
        d["classes"] = [m.as_dict() for m in self.classes] if len(self.classes) > 1 else []
        d["class_map"] = self.class_map.tolist() if len(self.classes) > 1 \
            and self.class_map is not None else None
        d["ambiguous"] = list(self.ambiguous)
        d["evidence"] = [e.as_dict() for e in self.evidence]
        return d


@dataclass(frozen=True)
class SumResult:
    """The summation model recovered for a black-box ``sum``.

    ``algorithm`` is ``"tree"`` (then ``tree`` is the order) or one of the
    order-free algorithms of :func:`numerics.accum.sum` that matched every test
    (``"kahan"``, ``"neumaier"``, ``"exact"``).
    """

    algorithm: str
    #: The reduction tree (``algorithm == "tree"``), else None (results compare by
    #: ``tree_text``).
    tree: Tree | None = field(compare=False, repr=False)
    #: Format of the terms and of the result.
    fmt: str
    #: Format of every addition (the result is then rounded to nearest into ``fmt``).
    accumulator: str
    #: Number of terms.
    n: int
    #: Leaf sets of the nodes with more than two children (fused multi-term adds).
    fused_groups: tuple[tuple[int, ...], ...]
    #: A description of the tree in words ("sequential", "pairwise", ...).
    shape: str
    calls: int
    evidence: tuple[Evidence, ...] = field(default=())
    #: The rounding of each fused node's sum into ``fmt`` (``"rne"`` or ``"rtz"``), when
    #: ``fused_groups`` are there and the probe identified it; else None.
    node_rounding: str | None = None
    #: Fraction bits each fused node keeps of its terms, below their largest exponent
    #: (cut toward zero); None for nodes that add their terms exactly.
    node_fraction_bits: int | None = None
    #: ``tree`` in tuple notation (:func:`~numerics.probe.tree_text`), set from it;
    #: None without a tree.
    tree_text: str | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tree_text",
                           None if self.tree is None else tree_text(self.tree))

    def predict(self, x: Any) -> np.ndarray:
        """The model's sums of the rows of ``x`` (shape (..., n)), as float64 values.

        ``accum.sum(x, accumulator, **as_sum_kwargs())``, rounded to nearest-even into
        ``fmt`` when the accumulator is wider; for fused nodes, each node's sum (its
        terms cut to ``node_fraction_bits``) rounded once with ``node_rounding``
        (:func:`~numerics.probe.model.fused_tree_sums`; exact arithmetic, slow for
        many long rows).  ValueError for fused nodes whose rounding was not identified.
        """
        from numerics import accum

        if self.fused_groups:
            if self.node_rounding is None or self.tree is None:
                raise ValueError(f"Got fused nodes ({self.shape}) whose rounding the "
                                 "probe did not identify; there is no model to run")
            rows = np.asarray(x, np.float64)
            sums = fused_tree_sums(self.tree, rows.reshape(-1, self.n), as_format(self.fmt),
                                   self.node_rounding, self.node_fraction_bits)
            return sums.reshape(rows.shape[:-1])

        value = accum.sum(np.asarray(x, np.float64), self.accumulator, axis=-1,
                          **self.as_sum_kwargs()).value
        if self.accumulator == self.fmt:
            return value
        return round_into(value, None, as_format(self.fmt), "rne")

    def as_sum_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`numerics.accum.sum` (after ``x`` and
        ``accumulator``) for this model."""
        if self.fused_groups:
            raise ValueError(
                "Got a tree with fused multi-term additions " + str(self.fused_groups[:3])
                + ", which accum.sum's tree (left to right, one rounding per add) "
                "does not model"
            )
        if self.algorithm == "tree":
            return {"algorithm": "tree", "tree": self.tree}
        return {"algorithm": self.algorithm}

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form; ``tree`` is ``tree_text``, flat at any depth."""
        return {"algorithm": self.algorithm, "tree": self.tree_text, "fmt": self.fmt,
                "accumulator": self.accumulator, "n": self.n,
                "fused_groups": [list(g) for g in self.fused_groups], "shape": self.shape,
                "node_rounding": self.node_rounding,
                "node_fraction_bits": self.node_fraction_bits,
                "calls": self.calls, "evidence": [e.as_dict() for e in self.evidence]}

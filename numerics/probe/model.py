"""The family of accumulation models a probe chooses from, and how each is run.

A model describes one output ``d = sum_k a_k b_k`` of a matrix multiply (the same
for every output).  ``order`` is a reduction tree over ``k`` (nested tuples of
indices, children listed by their smallest leaf).  Two kinds of adder:

``adder="standard"``
    Every node adds its children left to right, each addition one rounding to
    nearest-even in the format ``accumulator``.  A leaf is the exact product
    ``a_k b_k`` (``products="fused"``: a fused multiply-add; the first leaf of a
    node is rounded on its own, ``fma(a, b, 0)``) or the product rounded into
    ``accumulator`` first (``products="rounded"``).  The root is rounded once more
    into ``output_format`` with ``output_rounding``.
``adder="fused"``
    A node with a leaf child is one fused multi-term addition (the tensor-core
    adder of :func:`numerics.accum.fused_dot_add`): its terms (a subtree's value
    ``c``, if any, and its products) are aligned to the largest exponent ``E``
    (operand exponents clamped at their format's ``emin``, a zero's is -126),
    each rounded with ``alignment_rounding`` (``"rtz"``: truncation toward zero,
    ``"rne"``: nearest-even) to a multiple of ``2**(E - fractional_bits)``, summed
    exactly, and the sum rounded into ``output_format`` with ``output_rounding``
    (an exact zero is +0; ``e8m13`` then clears the low 10 bits of a binary32
    result).  A node of subtrees only is a promotion: the subtrees' values are
    added left to right in binary32 with one nearest-even rounding each
    (``promote_every`` leaves per subtree), the total rounded to nearest-even
    into ``output_format``.

Subnormal handling: ``input_subnormals="flushed"`` replaces subnormal inputs by
zero; ``output_subnormals="flushed"`` replaces every rounded result below its
format's smallest normal by a zero of the same sign.

Every step is exact in float64: products of inputs of precision <= 26 are
exact; the aligned terms of a fused node are integers below ``2**(F + 3)``
(``F <= 40``) and at most 64 of them are summed (below ``2**50``); a standard
addition is the TwoSum pair rounded once by :func:`numerics.encoding.encode_pair`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, Union

import numpy as np

from numerics.accum.tensorcore import TensorCorePreset, decompose, group_step
from numerics.codec import decode_exact, encode_exact
from numerics.eft import two_sum
from numerics.encoding import decode_codes, encode_pair
from numerics.formats import Format, as_format
from numerics.parse import shown

__all__ = ["MatmulModel", "Tree", "fused_tree_sums", "leaves", "parse_tree", "postorder",
           "round_into", "tree_text"]

Tree = Union[int, tuple["Tree", ...]]

#: Fractional bits a fused model may have (the float64 evaluation is exact up to 40).
MAX_FRACTIONAL_BITS = 40


def leaves(tree: Tree) -> list[int]:
    """The leaf indices of ``tree`` in left-to-right order (iterative, any depth)."""
    out: list[int] = []
    stack: list[Tree] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(reversed(node))
        else:
            out.append(int(node))
    return out


def tree_text(tree: Tree) -> str:
    """``tree`` in Python's tuple notation, as ``repr`` writes it, built in a loop.

    The flat form of a tree of any depth: ``repr``, ``==``, ``hash`` and JSON
    encoders recurse once per level of the nested tuples, and a sequential tree
    of ``k`` leaves has ``k - 1`` levels (beyond Python's recursion limit from
    about 1000).  :func:`parse_tree` reads it back.

    Examples
    --------
    >>> tree_text(((0, 1), 2, 3))
    '((0, 1), 2, 3)'
    >>> parse_tree(tree_text(((0, 1), 2, 3)))
    ((0, 1), 2, 3)
    """
    out: list[str] = []
    stack: list[Tree | str] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, tuple):
            stack.append(",)" if len(node) == 1 else ")")
            for i in range(len(node) - 1, -1, -1):
                stack.append(node[i])
                if i:
                    stack.append(", ")
            out.append("(")
        elif isinstance(node, (int, np.integer)) and not isinstance(node, bool):
            out.append(str(int(node)))
        else:
            raise TypeError(f"Got a tree node {node!r}, but a tree holds tuples and int "
                            "leaf indices")
    return "".join(out)


_TOKENS = re.compile(r"\s*(\(|\)|,|\d+)")


def parse_tree(text: str) -> Tree:
    """The tree written by :func:`tree_text` (Python's tuple notation), any depth.

    Raises
    ------
    TypeError
        If ``text`` is not a str.
    ValueError
        If ``text`` is not a tuple of int leaves in that notation; the message
        quotes it (or its start).
    """
    if not isinstance(text, str):
        raise TypeError(f"Got text={text!r}, but it must be a str such as '((0, 1), 2)'")
    bad = ValueError(f"Got text={shown(text)}, which is not a tree in tuple notation "
                     "such as '((0, 1), 2)'")
    open_nodes: list[list[Tree]] = []
    result: Tree | None = None
    pos, expect_item = 0, True
    end = len(text.rstrip())
    while pos < end:
        m = _TOKENS.match(text, pos)
        if m is None or result is not None:
            raise bad
        token, pos = m.group(1), m.end()
        if token == "(" or token.isdigit():
            if not expect_item:
                raise bad
            if token == "(":
                open_nodes.append([])
                continue
            item: Tree = int(token)
        elif token == ",":
            if expect_item or not open_nodes:
                raise bad
            expect_item = True
            continue
        else:  # ")": after an item, or after a trailing comma of a one-element tuple
            if not open_nodes or not open_nodes[-1] \
                    or (expect_item and len(open_nodes[-1]) != 1):
                raise bad
            item = tuple(open_nodes.pop())
        expect_item = False
        if open_nodes:
            open_nodes[-1].append(item)
        else:
            result = item
    if result is None or open_nodes:
        raise bad
    return result


_TEXTS: dict[int, tuple[Tree, str]] = {}


def _text_of(tree: Tree) -> str:
    """:func:`tree_text`, remembered for the last trees seen: the hypotheses of one probe
    share their tree, and each model built from it needs the text once."""
    hit = _TEXTS.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit[1]
    text = tree_text(tree)
    if len(_TEXTS) >= 64:
        _TEXTS.clear()
    _TEXTS[id(tree)] = (tree, text)
    return text


def postorder(tree: Tree) -> list[tuple[Tree, list[Tree]]]:
    """``(node, children)`` for every internal node, children before parents.

    Iterative, so a sequential tree of thousands of leaves is fine.

    Examples
    --------
    >>> [n for n, _ in postorder(((0, 1), 2))]
    [(0, 1), ((0, 1), 2)]
    """
    out: list[tuple[Tree, list[Tree]]] = []
    stack: list[tuple[Tree, bool]] = [(tree, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, tuple):
            continue
        if done:
            out.append((node, list(node)))
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node))
    return out


def fused_tree_sums(tree: Tree, X: np.ndarray, fmt: Format, rounding: str,
                    fraction_bits: int | None) -> np.ndarray:
    """The sums of the rows of ``X`` by ``tree`` when every node adds its children and
    rounds once into ``fmt`` with ``rounding``: exactly (``fraction_bits`` None) or, as
    a matrix unit's fused adder does, after cutting every child toward zero to a
    multiple of ``2**(E - fraction_bits)``, ``E`` the largest exponent among them.

    Exact (Fraction) arithmetic, node by node in a loop (any depth); float64 results.
    """
    nodes = postorder(tree)
    X = np.asarray(X, np.float64).reshape(-1, X.shape[-1])
    out = np.empty(X.shape[0])
    for r, row in enumerate(X):
        value: dict[int, Fraction] = {}
        total = Fraction(float(row[int(tree)])) if not isinstance(tree, tuple) else None
        for node, children in nodes:
            kids = [value.pop(id(c)) if isinstance(c, tuple) else Fraction(float(row[int(c)]))
                    for c in children]
            if fraction_bits is not None:
                nonzero = [abs(k) for k in kids if k]
                if nonzero:
                    E = max(_floor_log2(k) for k in nonzero)
                    q = Fraction(2) ** (E - fraction_bits)
                    kids = [int(k / q) * q for k in kids]  # int() truncates toward zero
            total = Fraction(decode_exact(encode_exact(sum(kids, Fraction(0)), fmt,
                                                       rounding=rounding,
                                                       overflow="saturate"), fmt))
            value[id(node)] = total
        assert total is not None
        out[r] = float(total)
    return out


def _floor_log2(q: Fraction) -> int:
    """``floor(log2(q))`` of a positive Fraction, exactly."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > q else e


def round_into(hi: np.ndarray, lo: np.ndarray | None, fmt: Format, rounding: str,
               flush: bool = False) -> np.ndarray:
    """The exact values ``hi + lo`` rounded once into ``fmt`` (as float64).

    ``rounding="rtz"`` keeps the tensor-core rule that a value beyond the format's
    range still gives inf.  ``flush`` replaces results below the smallest normal
    by a zero of the same sign.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        if fmt.name in ("binary32", "binary64") and rounding in ("rne", "rtz"):
            d = _round_ieee(np.asarray(hi, np.float64), lo, fmt.name == "binary32", rounding)
        else:
            codes = encode_pair(hi, lo, fmt, rounding=rounding, nan="zero")
            d = decode_codes(codes, fmt).reshape(np.shape(hi))
        if rounding == "rtz" and fmt.has_infinity and fmt.emax < 1023:
            d = np.where(np.abs(hi) >= 2.0 ** (fmt.emax + 1), np.copysign(np.inf, hi), d)
    if flush:
        d = np.where(np.abs(d) < fmt.smallest_normal, np.copysign(0.0, d), d)
    return d


def _round_ieee(hi: np.ndarray, lo: np.ndarray | None, single: bool,
                rounding: str) -> np.ndarray:
    """:func:`round_into` for binary64 and binary32 with numpy's own casts.

    ``t``, the exact ``hi + lo`` truncated toward zero to binary64, is ``hi`` or
    its neighbour toward zero.  For nearest-even into binary32 the low bit of
    ``t`` is then set when ``lo != 0`` (round to odd, exact information about the
    discarded part): with 53 >= 24 + 2 bits, rounding that to nearest-even in
    binary32 is the correct rounding of ``hi + lo`` (Boldo and Melquiond 2008).
    Toward zero: binary32's truncation of ``t`` equals that of ``hi + lo``.
    """
    if lo is None:
        lo = np.zeros_like(hi)
    lo = np.broadcast_to(np.asarray(lo, np.float64), hi.shape)
    if not single and rounding == "rne":
        return hi.copy()
    below = (lo != 0) & ((lo < 0) != (hi < 0)) & (hi != 0)  # |hi + lo| < |hi|
    t = np.where(below, np.nextafter(hi, 0.0), hi)
    if not single:
        return t
    if rounding == "rne":
        bits = t.view(np.uint64) | (lo != 0).astype(np.uint64)
        return bits.view(np.float64).astype(np.float32).astype(np.float64)
    r = t.astype(np.float32).astype(np.float64)
    return np.where(np.abs(r) > np.abs(t), np.nextafter(r.astype(np.float32),
                                                          np.float32(0)).astype(np.float64), r)


@dataclass(frozen=True, kw_only=True)
class MatmulModel:
    """One member of the model family (module docstring); :meth:`evaluate` runs it."""

    #: Format of the inputs (their values are exact in it).
    input_format: str
    #: Format of the outputs.
    output_format: str
    #: The reduction tree over ``k`` (models compare and hash by ``order_text``).
    order: Tree = field(compare=False, repr=False)
    #: ``"standard"`` (two-operand adds, one rounding each) or ``"fused"``.
    adder: str
    #: Format of the standard additions (for ``"fused"``: the output format).
    accumulator: str
    #: ``"fused"`` (products enter additions exactly) or ``"rounded"``.
    products: str = "fused"
    #: Products per fused addition (1 for standard adds).
    group_size: int = 1
    #: Bits kept after alignment (fused only).
    fractional_bits: int | None = None
    #: ``"rtz"`` or ``"rne"`` for the aligned terms (fused only).
    alignment_rounding: str | None = None
    #: Rounding of each fused result (standard: of the final cast) into its format.
    output_rounding: str = "rne"
    #: Clear the low 10 bits of every binary32 fused result (Ada/Hopper FP8).
    e8m13: bool = False
    #: The fused node's rule: ``"fused"`` (NVIDIA: ``c`` aligned with the products),
    #: ``"fused-then-c"`` or ``"even-odd"`` (AMD CDNA3: products first, then ``c``;
    #: :mod:`numerics.accum.tensorcore`, run by its ``group_step``).
    structure: str = "fused"
    #: Leaves per promotion interval (fused only), or None.
    promote_every: int | None = None
    #: ``"kept"``, ``"flushed"`` or ``"untested"``.
    input_subnormals: str = "kept"
    #: ``"kept"``, ``"flushed"`` or ``"untested"``.
    output_subnormals: str = "kept"
    #: ``order`` in tuple notation (:func:`tree_text`), set from it: flat at any depth,
    #: where the nested tuples of a long sequential tree exceed the recursion limit of
    #: ``==``, ``repr`` and JSON encoders.
    order_text: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "order_text", _text_of(self.order))

    @property
    def k(self) -> int:
        """The length of the reduction."""
        return len(leaves(self.order))

    @property
    def name(self) -> str:
        """A short label of the parameters that tell hypotheses apart."""
        if self.adder == "standard":
            label = f"{self.accumulator} adds, {self.products} products"
            if self.accumulator != self.output_format:
                label += f", output {self.output_rounding}"
        else:
            kind = "fused" if self.structure == "fused" else self.structure
            label = (f"{kind} G={self.group_size} F={self.fractional_bits} "
                     f"align {self.alignment_rounding}, output {self.output_rounding}")
            if self.e8m13:
                label += ", e8m13"
        flush = [w for w, s in (("inputs", self.input_subnormals),
                                ("outputs", self.output_subnormals)) if s == "flushed"]
        if flush:
            label += ", flushes subnormal " + " and ".join(flush)
        return label

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form; ``order`` is ``order_text``, flat at any depth."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "order_text"}
        d["order"] = self.order_text
        d["subnormals"] = {"inputs": d.pop("input_subnormals"),
                           "outputs": d.pop("output_subnormals")}
        return d

    # ------------------------------------------------------------------ running it

    def evaluate(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The model on factor arrays ``a``, ``b`` of shape (..., k): shape (...)."""
        fin = as_format(self.input_format)
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64)
        if self.input_subnormals == "flushed":
            a = np.where(np.abs(a) < fin.smallest_normal, 0.0, a)
            b = np.where(np.abs(b) < fin.smallest_normal, 0.0, b)
        a, b = np.broadcast_arrays(a, b)
        if self.adder == "standard":
            return self._standard(a, b)
        return self._fused(a, b, fin)

    def evaluate_grid(self, a: np.ndarray, b: np.ndarray,
                      fractional_bits: np.ndarray) -> np.ndarray:
        """A fused model for several fractional-bit counts at once: shape (H, ...).

        Row ``h`` equals ``replace(self, fractional_bits=F[h]).evaluate(a, b)``; the
        count only scales, so it broadcasts along a new leading axis.
        """
        fin = as_format(self.input_format)
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64)
        if self.input_subnormals == "flushed":
            a = np.where(np.abs(a) < fin.smallest_normal, 0.0, a)
            b = np.where(np.abs(b) < fin.smallest_normal, 0.0, b)
        a, b = np.broadcast_arrays(a, b)
        F = np.asarray(fractional_bits, np.int64).reshape((-1,) + (1,) * (a.ndim - 1))
        return self._fused(a[None], b[None], fin, F)

    def matmul(self, A: Any, B: Any) -> np.ndarray:
        """The model's ``A @ B`` for ``A`` (m, k) and ``B`` (k, n)."""
        A = np.asarray(A, np.float64)
        B = np.asarray(B, np.float64)
        return self.evaluate(A[:, None, :], B.T[None, :, :])

    def _standard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        acc = as_format(self.accumulator)
        out = as_format(self.output_format)
        flush = self.output_subnormals == "flushed"
        with np.errstate(invalid="ignore", over="ignore"):
            prods = a * b

        def term(node: Tree, first: bool, values: dict[int, np.ndarray]) -> np.ndarray:
            if isinstance(node, tuple):
                return values[id(node)]
            p = prods[..., int(node)]
            if first or self.products == "rounded":
                return round_into(p, None, acc, "rne", flush)
            return p

        values: dict[int, np.ndarray] = {}
        for node, children in postorder(self.order):
            s = term(children[0], True, values)
            for child in children[1:]:
                hi, lo = two_sum(s, term(child, False, values))
                with np.errstate(invalid="ignore"):
                    lo = np.where(np.isfinite(hi), lo, 0.0)
                s = round_into(hi, lo, acc, "rne", flush)
            values[id(node)] = s
        root = values[id(self.order)] if isinstance(self.order, tuple) else term(
            self.order, True, values)
        if acc.name == out.name:
            return root
        return round_into(root, None, out, self.output_rounding, flush)

    def _fused(self, a: np.ndarray, b: np.ndarray, fin: Format,
               F: Any = None) -> np.ndarray:
        out = as_format(self.output_format)
        f32 = as_format("binary32")
        flush = self.output_subnormals == "flushed"
        if F is None:
            F = int(self.fractional_bits or 0)
        with np.errstate(invalid="ignore", over="ignore"):
            prods = a * b
        pexp = decompose(a, fin) + decompose(b, fin)
        promoted: set[int] = set()
        values: dict[int, np.ndarray] = {}
        for node, children in postorder(self.order):
            kids = [c for c in children if isinstance(c, tuple)]
            idx = [int(c) for c in children if not isinstance(c, tuple)]
            if not idx:  # a promotion node: binary32 adds, then the output cast
                s = values[id(kids[0])]
                for child in kids[1:]:
                    hi, lo = two_sum(s, values[id(child)])
                    s = round_into(hi, lo, f32, "rne", flush)
                promoted.add(id(node))
                values[id(node)] = s
                continue
            if not kids and len(idx) == self.group_size + 1:
                # group size 1: the first product is a group of its own (c = 0)
                kids_c = self._fused_single(prods[..., idx[0]], pexp[..., idx[0]], out, F,
                                            flush)
                idx = idx[1:]
            else:
                kids_c = values[id(kids[0])] if kids else np.zeros(
                    np.broadcast_shapes(prods.shape[:-1], np.shape(F)))
            c = kids_c
            if self.structure != "fused":
                values[id(node)] = self._amd_step(a[..., idx], b[..., idx], c, fin, out)
                continue
            terms = prods[..., idx]
            E = pexp[..., idx].max(axis=-1)
            E = np.maximum(E, decompose(c, out))
            scale = np.ldexp(1.0, F - E)
            align = _ALIGN[self.alignment_rounding or "rtz"]
            total = align(terms * scale[..., None]).sum(axis=-1) + align(c * scale)
            d = round_into(np.ldexp(total, E - F), None, out, self.output_rounding, flush)
            d = np.where(total == 0, 0.0, d)
            if self.e8m13:
                d = (d.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFFC00)).view(
                    np.float32).astype(np.float64)
            values[id(node)] = d
        if not isinstance(self.order, tuple):  # k == 1: one group of one product
            return self._fused_single(prods[..., 0], pexp[..., 0], out, F, flush)
        root = values[id(self.order)]
        if id(self.order) in promoted and out.name != "binary32":
            root = round_into(root, None, out, "rne", flush)
        return root

    def _fused_single(self, p: np.ndarray, e: np.ndarray, out: Format, F: Any,
                      flush: bool) -> np.ndarray:
        E = np.maximum(e, -126)
        align = _ALIGN[self.alignment_rounding or "rtz"]
        total = align(p * np.ldexp(1.0, F - E))
        d = round_into(np.ldexp(total, E - F), None, out, self.output_rounding, flush)
        d = np.where(total == 0, 0.0, d)
        if self.e8m13:
            d = (d.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFFC00)).view(
                np.float32).astype(np.float64)
        return d

    def _amd_step(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, fin: Format,
                  out: Format) -> np.ndarray:
        a, b, c = np.broadcast_arrays(a, b, c[..., None])
        d = group_step(self.preset(fin), a, b, c[..., 0], fin, out)
        if self.output_subnormals == "flushed":
            d = np.where(np.abs(d) < out.smallest_normal, np.copysign(0.0, d), d)
        return d

    def preset(self, fin: Format | None = None) -> TensorCorePreset:
        """This fused model as an accum :class:`~numerics.accum.TensorCorePreset`."""
        fin = fin or as_format(self.input_format)
        G = self.group_size
        narrow = fin.bits <= 8
        return TensorCorePreset(
            name="probed", fractional_bits=self.fractional_bits,
            group_16=None if narrow else G, group_8=G if narrow else None,
            e8m13=self.e8m13, source="numerics.probe", structure=self.structure,
            alignment_rounding=self.alignment_rounding or "rtz",
            output_rounding=self.output_rounding, narrow_output_rounding=self.output_rounding,
            flush_inputs=self.input_subnormals == "flushed",
            promote_every=self.promote_every)

    # ------------------------------------------------------------------ gemm form

    def as_accumulator(self) -> dict[str, Any]:
        """Keyword arguments of :func:`numerics.accum.gemm` for this model.

        A standard model whose tree is the sequential chain ``((0, 1), 2), ...`` with
        fused products and nearest-even output is ``accumulator=<format>``; one whose
        tree is a chain of balanced pairwise groups with binary32 additions is a
        ``"pairwise"`` :class:`~numerics.accum.TensorCorePreset` (AMD CDNA1/2); a fused
        model whose tree is gemm's chain of consecutive groups (and promotion
        intervals) is a ``TensorCorePreset`` with its parameters.  Anything else
        raises ValueError.
        """
        base = {"output_format": self.output_format}
        fin = as_format(self.input_format)
        if self.adder == "standard":
            flush = "flushed" in (self.input_subnormals, self.output_subnormals)
            if self.order_text == tree_text(_chain(self.k, 1, None)) \
                    and self.products == "fused" \
                    and self.output_rounding == "rne" and not flush:
                return {"accumulator": self.accumulator, "promote_every": None, **base}
            for G in (2, 4, 8, 16):
                if self.order_text == tree_text(_pairwise_chain(self.k, G)) \
                        and self.accumulator == "binary32" \
                        and self.output_format == "binary32" \
                        and (self.products == "rounded" or 2 * fin.precision <= 24):
                    narrow = fin.bits <= 8
                    preset = TensorCorePreset(
                        name="probed", fractional_bits=None, structure="pairwise",
                        group_16=None if narrow else G, group_8=G if narrow else None,
                        output_rounding="rne", source="numerics.probe",
                        flush_inputs=self.input_subnormals == "flushed",
                        flush_outputs=self.output_subnormals == "flushed")
                    return {"accumulator": preset, "promote_every": None, **base}
            raise ValueError(
                f"Got a standard model ({self.name}) whose order accum.gemm does not "
                "model; run it with ProbeResult.predict"
            )
        if self.output_subnormals == "flushed":
            raise ValueError("Got a fused model that flushes subnormal results, which "
                             "accum.gemm's fused presets do not model")
        if self.order_text != tree_text(_chain(self.k, self.group_size, self.promote_every)):
            raise ValueError(
                f"Got a fused model ({self.name}) whose groups are not accum.gemm's "
                "consecutive groups; run it with ProbeResult.predict"
            )
        return {"accumulator": self.preset(fin), "promote_every": self.promote_every,
                **base}


def _pairwise_chain(k: int, G: int) -> Tree:
    """Groups of G products summed as balanced halves, the groups added in order."""
    def half(lo: int, hi: int) -> Tree:
        if hi - lo == 1:
            return lo
        mid = lo + (hi - lo) // 2
        return (half(lo, mid), half(mid, hi))

    node: Tree | None = None
    for g0 in range(0, k, G):
        part = half(g0, min(g0 + G, k))
        node = part if node is None else (node, part)
    assert node is not None
    return node


_ALIGN = {"rtz": np.trunc, "rne": np.rint, "rd": np.floor}


def _chain(k: int, G: int, promote_every: int | None) -> Tree:
    """The tree of accum.gemm: groups of G in order, promotions every N leaves."""
    def groups(lo: int, hi: int) -> Tree:
        node: Tree | None = None
        for g0 in range(lo, hi, G):
            idx = tuple(range(g0, min(g0 + G, hi)))
            if node is None:
                node = idx if len(idx) > 1 else idx[0]
            else:
                node = (node, *idx)
        assert node is not None
        return node

    if promote_every is None or promote_every >= k:
        return groups(0, k)
    parts = [groups(lo, min(lo + promote_every, k)) for lo in range(0, k, promote_every)]
    node = parts[0]
    for p in parts[1:]:
        node = (node, p)
    return node

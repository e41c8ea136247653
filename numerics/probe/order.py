"""Recover a reduction tree from "where did this pair meet" questions (FPRev).

The probe puts a large value ``M`` at leaf ``i``, ``-M`` at leaf ``j`` and a small
value ``s`` at every other leaf, with ``M`` so large that ``M + t s`` rounds to
``M`` for every count ``t`` that can occur.  Every partial sum that holds ``M``
but not ``-M`` is then exactly ``M`` (its small terms are lost); the node that
joins the two subtrees gives exactly 0; every small term added after that
survives.  So the output is ``(n - size) s``, where ``size`` is the number of
leaves under the lowest common ancestor of ``i`` and ``j`` (claim P1 of
``proofs/probe.md``).  A fused multi-term adder that aligns its terms to ``M``
loses the small terms of its own group too, so the same holds for its node.

:func:`build_tree` turns the sizes into the tree with few questions: for a node
with leaf set ``S`` and pivot ``a = min(S)``, the sizes ``size(a, j)`` group the
other leaves by the ancestor of ``a`` where they join it (claim P2); a group that
holds several children of one node (a fused node) is split by pivots of its
own, from its smallest leaf or, after a pivot that met all the others only at the
top, its largest.  A sequential sum takes ``n - 1`` questions from left to right
and ``2n - 3`` from right to left, a pairwise one about ``(n/2) log2 n``.
Questions that do not fit any tree raise :class:`NotATree`.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from numerics.probe.model import Tree, leaves, postorder

V = TypeVar("V")
R = TypeVar("R")

__all__ = ["NotATree", "build_tree", "check_tree", "describe_tree", "first_fit", "fused_groups",
           "numpy_pairwise_tree", "pairwise_tree", "sequential_tree"]

Pair = tuple[int, int]
_Request = tuple[str, Any]
_Task = Generator[_Request, Any, Any]


class NotATree(ValueError):
    """The pair sizes observed fit no reduction tree (``findings`` says which)."""

    def __init__(self, message: str, findings: dict[str, Any] | None = None) -> None:
        super().__init__(message)  # (pickle rebuilds it from the message, then its findings)
        self.findings: dict[str, Any] = dict(findings or {})


def first_fit(variants: Iterable[V], attempt: Callable[[V], R]) -> R:
    """``attempt(v)`` of the first variant it does not raise NotATree for (the pair tests
    with their best small terms first, claim P1); the first variant's NotATree if every
    one raises."""
    first: NotATree | None = None
    for v in variants:
        try:
            return attempt(v)
        except NotATree as err:
            first = first or err
    assert first is not None
    raise first


def _inconsistent(what: str, **findings: Any) -> NotATree:
    return NotATree(f"the pair tests fit no reduction tree: {what}", findings)


def _subtree(S: list[int]) -> _Task:
    """The tree of a node whose leaf set is exactly ``S`` (sorted)."""
    if len(S) == 1:
        return S[0]
    if len(S) == 2:
        return (S[0], S[1])
    a, rest = S[0], S[1:]
    sizes = yield ("ask", [(a, j) for j in rest])
    return (yield from _assemble(a, rest, sizes, len(S), False))


def _assemble(a: int, rest: list[int], sizes: list[int], top: int,
              from_end: bool) -> _Task:
    """The chain of ancestors of pivot ``a`` from the sizes ``size(a, j)``; ``a`` was
    the largest leaf of its group when ``from_end``, else the smallest.

    A pivot that meets every other leaf only at the top node is a child of it beside
    one subtree of all the others, as the last term of a chain is: that chain adds
    its terms from the pivot's end toward the other, so the group's pivot comes from
    the other end next (a right-to-left sum costs ``2n - 3`` questions, not
    ``n (n - 1) / 2``)."""
    groups: dict[int, list[int]] = {}
    for j, s in zip(rest, sizes):
        if not 2 <= s <= top:
            raise _inconsistent(f"leaves {a} and {j} met in a node of {s} leaves, "
                                f"outside 2..{top}", pivot=a, leaf=j, size=s)
        groups.setdefault(s, []).append(j)
    levels = sorted(groups)
    count = 1
    for s in levels:
        count += len(groups[s])
        if count != s:
            raise _inconsistent(
                f"pivot {a} joins {count} leaves by the node of size {s}", pivot=a,
                size=s, sizes=dict(zip(rest, sizes)))
    if levels[-1] != top:
        raise _inconsistent(f"the largest node over pivot {a} has {levels[-1]} leaves, "
                            f"expected {top}", pivot=a)
    next_from_end = from_end if len(levels) > 1 else not from_end
    forests = yield ("all", [_forest(groups[s], s, next_from_end) for s in levels])
    node: Tree = a
    low = a  # the smallest leaf under node: children are ordered by theirs
    for children in forests:
        ordered = sorted([(low, node)] + [(min(leaves(c)), c) for c in children],
                         key=lambda item: item[0])
        node, low = tuple(c for _, c in ordered), ordered[0][0]
    return node


def _forest(R: list[int], s: int, from_end: bool) -> _Task:
    """Split ``R``, some children of one node of ``s`` leaves, into those children,
    each found by a pivot: the largest leaf left when ``from_end``, else the
    smallest."""
    children: list[Tree] = []
    while R:
        if len(R) == 1:
            children.append(R[0])
            break
        b = R[-1] if from_end else R[0]
        rest = R[:-1] if from_end else R[1:]
        sizes = yield ("ask", [(b, j) for j in rest])
        mine = [(j, v) for j, v in zip(rest, sizes) if v < s]
        if any(v > s for v in sizes):
            raise _inconsistent(f"leaf {b} meets a leaf of its sibling group in a node "
                                f"larger than its parent ({s} leaves)", pivot=b)
        if mine:
            child = yield from _assemble(b, [j for j, _ in mine], [v for _, v in mine],
                                         max(v for _, v in mine), from_end)
            if len(leaves(child)) != 1 + len(mine):
                raise _inconsistent(f"pivot {b}'s subtree is incomplete", pivot=b)
        else:
            child = b
        children.append(child)
        inside = {b, *(j for j, _ in mine)}
        R = [j for j in R if j not in inside]
    return sorted(children, key=lambda c: min(leaves(c)))


def build_tree(n: int, ask: Callable[[list[Pair]], Sequence[int]]) -> Tree:
    """The reduction tree over ``0 .. n-1`` from ``ask(pairs) -> sizes``.

    ``ask`` receives a batch of pairs ``(i, j)`` and returns, for each, the number
    of leaves under their lowest common ancestor.  Independent questions are
    batched, so a black box that answers many pairs per call (a matrix multiply,
    one pair per row) is called about once per level of the tree.

    Examples
    --------
    >>> t = ((0, 1), (2, 3))
    >>> def ask(pairs):
    ...     return [2 if {i, j} in ({0, 1}, {2, 3}) else 4 for i, j in pairs]
    >>> build_tree(4, ask)
    ((0, 1), (2, 3))
    """
    cache: dict[Pair, int] = {}

    def answer(pairs: list[Pair]) -> list[int]:
        todo = sorted({(min(p), max(p)) for p in pairs} - cache.keys())
        if todo:
            for p, v in zip(todo, ask(todo)):
                cache[p] = int(v)
        return [cache[(min(p), max(p))] for p in pairs]

    # a tiny scheduler: tasks ask for sizes or spawn sub-tasks; the questions of all
    # waiting tasks go out in one batch
    root: dict[str, Any] = {}
    ready: list[tuple[_Task, Any, Any]] = [(_subtree(list(range(n))), None, None)]
    parents: dict[int, list[Any]] = {}
    while ready:
        asks: list[tuple[_Task, Any, list[Pair]]] = []
        while ready:
            task, value, parent = ready.pop()
            try:
                kind, payload = task.send(value)
            except StopIteration as stop:
                if parent is None:
                    root["tree"] = stop.value
                else:
                    ptask, done, slot, pparent = parent
                    done[slot] = stop.value
                    state = parents[id(ptask)]
                    state[0] -= 1
                    if state[0] == 0:
                        ready.append((ptask, done, pparent))
                continue
            if kind == "ask":
                asks.append((task, parent, payload))
            else:
                if not payload:
                    ready.append((task, [], parent))
                    continue
                slots: list[Any] = [None] * len(payload)
                parents[id(task)] = [len(payload)]
                for slot, sub in enumerate(payload):
                    ready.append((sub, None, (task, slots, slot, parent)))
        if asks:
            flat = [p for _, _, pairs in asks for p in pairs]
            values = answer(flat)
            pos = 0
            for task, parent, pairs in asks:
                ready.append((task, values[pos:pos + len(pairs)], parent))
                pos += len(pairs)
    return root["tree"]


# ------------------------------------------------------------------ named trees

def sequential_tree(n: int, start: int = 0) -> Tree:
    """``(((start, start+1), start+2), ...)`` over ``n`` leaves."""
    node: Tree = start
    for i in range(start + 1, start + n):
        node = (node, i)
    return node


def _is_sequential(tree: Tree, n: int) -> bool:
    """``tree == sequential_tree(n)``, walked in a loop: the tuple comparison recurses once
    per level, past Python's recursion limit from about 1000 leaves."""
    node = tree
    for i in range(n - 1, 0, -1):
        if not (isinstance(node, tuple) and len(node) == 2 and node[1] == i):
            return False
        node = node[0]
    return node == 0


def pairwise_tree(n: int, block: int = 1) -> Tree:
    """The tree of ``accum.sum(algorithm="pairwise", block_size=block)``."""
    nodes: list[Tree] = [sequential_tree(min(block, n - b0), b0) for b0 in range(0, n, block)]
    while len(nodes) > 1:
        nxt: list[Tree] = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
        if len(nodes) % 2:
            nxt.append(nodes[-1])
        nodes = nxt
    return nodes[0]


def numpy_pairwise_tree(n: int, start: int = 0, *, first_apart: bool = True) -> Tree:
    """numpy's float reduction tree (``pairwise_sum`` in ``loops_utils.h.src``).

    Blocks of at most 128 terms use 8 partial sums ``r[j] += x[i + j]`` combined as
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, the leftover terms added
    one by one; longer runs split at ``n/2`` rounded down to a multiple of 8.  A
    reduction starts from its first element and adds the pairwise sum of the rest
    (``first_apart``).
    """
    if first_apart and n > 1:
        return (start, numpy_pairwise_tree(n - 1, start + 1, first_apart=False))
    if n < 8:
        return sequential_tree(n, start)
    if n <= 128:
        lanes: list[Tree] = [start + j for j in range(8)]
        i = 8
        while i < n - n % 8:
            lanes = [(lanes[j], start + i + j) for j in range(8)]
            i += 8
        node: Tree = (((lanes[0], lanes[1]), (lanes[2], lanes[3])),
                      ((lanes[4], lanes[5]), (lanes[6], lanes[7])))
        for t in range(i, n):
            node = (node, start + t)
        return node
    n2 = n // 2
    n2 -= n2 % 8
    return (numpy_pairwise_tree(n2, start, first_apart=False),
            numpy_pairwise_tree(n - n2, start + n2, first_apart=False))


def check_tree(tree: object, name: str = "tree") -> int:
    """The number of leaves of ``tree``, checked to be a reduction tree: an int leaf or a
    non-empty tuple of trees, whose leaves are ``0 .. n-1``, each once.  Iterative, so a
    tree of any depth is fine.

    Raises
    ------
    TypeError
        A node that is neither an int (a numpy integer will do; not a bool) nor a
        non-empty tuple.
    ValueError
        Leaves that are not ``0 .. n-1`` each once.

    Examples
    --------
    >>> check_tree(((0, 1), 2))
    3
    >>> check_tree(float("inf"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: Got tree=inf with the node inf, but a tree is an int leaf or a non-empty ...
    """
    seen: set[int] = set()
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple) and node:
            stack.extend(node)
        elif isinstance(node, (int, np.integer)) and not isinstance(node, (bool, np.bool_)):
            if int(node) in seen:  # (also ends a subtree shared many times over)
                raise ValueError(f"Got {name}={reprlib.repr(tree)} with the leaf {int(node)} "
                                 "twice, but each leaf must appear once")
            seen.add(int(node))
        else:
            raise TypeError(f"Got {name}={reprlib.repr(tree)} with the node "
                            f"{reprlib.repr(node)}, but a tree is an int leaf or a non-empty "
                            "tuple of trees")
    n = len(seen)
    if min(seen) != 0 or max(seen) != n - 1:
        raise ValueError(f"Got {name}={reprlib.repr(tree)}, but its leaves must be "
                         f"0 .. {n - 1}, each once")
    return n


def fused_groups(tree: Tree) -> tuple[tuple[int, ...], ...]:
    """Leaf children of every node with more than two children (a fused addition).

    ``tree`` must be a reduction tree (:func:`check_tree`).

    Examples
    --------
    >>> fused_groups(((0, 1, 2, 3), 4, 5, 6, 7))
    ((0, 1, 2, 3), (4, 5, 6, 7))
    """
    check_tree(tree)
    out = []
    for _, children in postorder(tree):
        if len(children) > 2:
            out.append(tuple(int(c) for c in children if not isinstance(c, tuple)))
    return tuple(out)


def describe_tree(tree: Tree) -> str:
    """The tree in words: sequential, pairwise, numpy's blocked 8-way, fused groups.

    ``tree`` must be a reduction tree (:func:`check_tree`): TypeError or ValueError
    naming it otherwise.

    Examples
    --------
    >>> describe_tree(sequential_tree(5))
    'sequential (left to right)'
    >>> describe_tree(numpy_pairwise_tree(300))
    "numpy's pairwise: first term, then blocks of <= 128 with 8 partial sums"
    >>> describe_tree((0, (1, (2, 3))))
    'sequential (right to left)'
    >>> describe_tree((((0, 1), 3), 2))
    'sequential in the order 0, 1, 3, 2'
    """
    n = check_tree(tree)
    if n == 1 or _is_sequential(tree, n):
        return "sequential (left to right)"
    if _is_right_to_left(tree, n):  # (at n = 3 also numpy's first term apart)
        return "sequential (right to left)"
    if tree == numpy_pairwise_tree(n):
        return "numpy's pairwise: first term, then blocks of <= 128 with 8 partial sums"
    if tree == numpy_pairwise_tree(n, first_apart=False):
        return "numpy's pairwise: blocks of <= 128 with 8 partial sums"
    for block in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        if block < n and tree == pairwise_tree(n, block):
            return "pairwise" if block == 1 else f"pairwise over sequential blocks of {block}"
    groups = fused_groups(tree)
    if groups:
        sizes = sorted({len(g) for g in groups})
        return (f"fused multi-term additions of {'/'.join(map(str, sizes))} terms "
                f"({len(groups)} nodes)")
    chain = _chain_order(tree)
    if chain is not None:  # one running sum, in another order than 0, 1, 2, ...
        shown = ", ".join(map(str, chain[:8])) + (", ..." if len(chain) > 8 else "")
        return f"sequential in the order {shown}"
    depth = _depth(tree)
    return f"a binary tree of depth {depth}"


def _chain_order(tree: Tree) -> list[int] | None:
    """The order of the terms of a tree that keeps one running sum (every node adds a
    term to the node below it, ``(((a, b), c), d)`` in any arrangement of each pair), or
    None for another tree; walked in a loop."""
    added: list[int] = []
    node = tree
    while isinstance(node, tuple):
        left, right = node
        if isinstance(right, int):
            added.append(right)
            node = left
        elif isinstance(left, int):
            added.append(left)
            node = right
        else:
            return None
    added.append(node)
    return added[::-1]


def _is_right_to_left(tree: Tree, n: int) -> bool:
    """``tree == (0, (1, (2, ... (n - 2, n - 1))))``, walked in a loop."""
    node = tree
    for i in range(n - 2):
        if not (isinstance(node, tuple) and len(node) == 2 and node[0] == i):
            return False
        node = node[1]
    return node == (n - 2, n - 1)


def _depth(tree: Tree) -> int:
    best = 0
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        if isinstance(node, tuple):
            stack.extend((c, d + 1) for c in node)
    return best

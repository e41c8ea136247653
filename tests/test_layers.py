"""The layering of the design: every import, deferred ones included, goes down.

Layers, bottom up: the format descriptor with the names and checks of the rounding
modes (``numerics.formats``, ``numerics.rounding``, ``numerics.digits``), the exact
reference (``numerics.codec``), the compiled kernels (``numerics.kernels``), the public
API (every other ``numerics`` module), then ``numerics.testing`` and the CLI
(``fpinspect``).  A module imports from its own layer or below; no module imports
another package's underscore names (a private module counts as one); and there is no
import cycle, not even through an import made inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOTTOM = {"numerics.formats", "numerics.rounding", "numerics.digits"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "cli":
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name: str) -> bool:
    parts = name.split(".")
    where = (ROOT / "cli" if parts[0] == "fpinspect" else ROOT).joinpath(*parts)
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def _layer(module: str) -> int:
    if module in BOTTOM:
        return 0
    if module == "numerics.codec":
        return 1
    if module.startswith("numerics.kernels"):
        return 2
    if module.startswith(("numerics.testing", "fpinspect")):
        return 4
    return 3


def _package(module: str) -> str:
    """``numerics`` for the top-level modules, ``numerics.X`` for a subpackage's."""
    parts = module.split(".")
    if parts[0] == "fpinspect":
        return "fpinspect"
    if len(parts) >= 2 and (ROOT / "numerics" / parts[1] / "__init__.py").exists():
        return ".".join(parts[:2])
    return "numerics"


def _imports() -> list[tuple[str, int, str, tuple[str, ...]]]:
    """``(importer, line, imported module, names)`` of every absolute import of ours."""
    out: list[tuple[str, int, str, tuple[str, ...]]] = []
    files = sorted((ROOT / "numerics").rglob("*.py")) + sorted(
        (ROOT / "cli" / "fpinspect").rglob("*.py"))
    for path in files:
        me = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] not in ("numerics", "fpinspect"):
                    continue
                names = tuple(a.name for a in node.names)
                subs = [f"{node.module}.{n}" for n in names if _is_module(f"{node.module}.{n}")]
                for sub in subs:
                    out.append((me, node.lineno, sub, ()))
                rest = tuple(n for n in names if not _is_module(f"{node.module}.{n}"))
                if rest:
                    out.append((me, node.lineno, node.module, rest))
            elif isinstance(node, ast.Import):
                out += [(me, node.lineno, a.name, ()) for a in node.names
                        if a.name.split(".")[0] in ("numerics", "fpinspect")]
    return out


IMPORTS = _imports()


def test_the_scan_sees_the_code() -> None:
    """The rules below are checked on real imports (a wrong root would pass them all)."""
    importers = {me for me, *_ in IMPORTS}
    assert {"numerics.codec", "numerics.kernels.codec", "numerics.encoding",
            "fpinspect.main"} <= importers
    assert len(IMPORTS) > 300


def test_every_import_goes_down_the_layers() -> None:
    up = [f"{me}:{line} imports {target}" for me, line, target, _ in IMPORTS
          if _is_module(target) and _layer(target) > _layer(me)]
    assert not up, "\n".join(up)


def test_no_module_imports_another_packages_private_names() -> None:
    bad = []
    for me, line, target, names in IMPORTS:
        if _package(target) == _package(me):
            continue
        private = [n for n in names if n.startswith("_")]
        if any(part.startswith("_") for part in target.split(".")):
            private.append(target)
        if private:
            bad.append(f"{me}:{line} imports {', '.join(private)} from {target}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles_even_through_deferred_imports() -> None:
    graph: dict[str, set[str]] = {}
    for me, _, target, _ in IMPORTS:
        if _is_module(target) and target != me:
            graph.setdefault(me, set()).add(target)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert not cycles, cycles


@pytest.mark.parametrize(("me", "target", "want"), [
    ("numerics.formats", "numerics.dtypes", False),
    ("numerics.kernels.codec", "numerics.encoding", False),
    ("numerics.encoding", "numerics.kernels.codec", True),
    ("fpinspect.main", "numerics.probe", True),
])
def test_the_layer_rule_itself(me: str, target: str, want: bool) -> None:
    """The rule tells up from down (what the scan above relies on)."""
    assert (_layer(target) <= _layer(me)) is want

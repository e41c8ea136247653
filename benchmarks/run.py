"""Run every benchmark side by side with its peers and print ratios.

Usage::

    python benchmarks/run.py            # full sizes, a rich table
    python benchmarks/run.py --quick    # small sizes, seconds
    python benchmarks/run.py --json     # machine-readable results
    python benchmarks/run.py --only codec,ops

Each ``benchmarks/bench_<area>.py`` exposes ``run(quick) -> list[dict]`` with keys
``group, case, ours_s, peer, peer_s, target, ok``; the ratio printed is
``peer_s / ours_s`` (above 1: we are faster).  A row whose ``ours_s`` is not a time
names its unit (``"unit": "B/element"``) and has no peer.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

AREAS = ("codec", "scalar", "ops", "accum", "hashing", "quant", "checkpoint")


def collect(areas: list[str], quick: bool) -> list[dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    rows: list[dict[str, Any]] = []
    for area in areas:
        try:
            module = importlib.import_module(f"bench_{area}")
        except ModuleNotFoundError as exc:  # an extra this area needs (safetensors, ...)
            print(f"run.py: skipped {area}: {exc.name} is not installed "
                  "(pip install -e '.[test,bench]')", file=sys.stderr)
            continue
        rows.extend(module.run(quick=quick))
    for row in rows:
        peer_s, ours_s = row.get("peer_s"), row["ours_s"]
        row["ratio"] = (peer_s / ours_s) if peer_s and ours_s else None
    return rows


def _seconds(s: float) -> str:
    """A time in ms, or in us below 0.1 ms (per-call rows)."""
    return f"{s * 1e3:.1f} ms" if s >= 1e-4 else f"{s * 1e6:.2f} us"


def _ours(r: dict[str, Any]) -> str:
    """Our column: a time, or a value in the unit the row names."""
    unit = r.get("unit")
    return _seconds(r["ours_s"]) if unit is None else f"{r['ours_s']:.1f} {unit}"


def render(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"numerics benchmarks ({platform.machine()}, Python "
                        f"{platform.python_version()}); ratio = peer time / our time")
    for col in ("group", "case", "ours", "peer", "peer time", "ratio", "target", "ok"):
        table.add_column(col, justify="right" if col in ("ours", "peer time", "ratio") else "left")
    for r in rows:
        ok = r.get("ok")
        table.add_row(r["group"], r["case"], _ours(r), r.get("peer") or "",
                      "" if r.get("peer_s") is None else _seconds(r["peer_s"]),
                      "" if r["ratio"] is None else f"{r['ratio']:.2f}x",
                      r.get("target") or "",
                      {True: "[green]yes[/]", False: "[red]no[/]", None: ""}[ok])
    Console().print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--only", default=",".join(AREAS),
                        help=f"comma-separated areas among {', '.join(AREAS)}")
    args = parser.parse_args(argv)
    areas = [a.strip() for a in args.only.split(",") if a.strip()]
    unknown = [a for a in areas if a not in AREAS]
    if unknown:
        print(f"run.py: unknown area(s) {', '.join(unknown)}; known: {', '.join(AREAS)}",
              file=sys.stderr)
        return 2
    rows = collect(areas, args.quick)
    if args.json:
        print(json.dumps({"machine": platform.machine(), "python": platform.python_version(),
                          "results": rows}, indent=2))
    else:
        render(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

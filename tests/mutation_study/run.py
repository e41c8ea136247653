"""Run both suites over every kernel variant; print kills, false alarms and times.

From the repository root::

    PYTHONPATH=$PWD:$PWD/tests python -m mutation_study.run [MAX_EXAMPLES]
"""

from __future__ import annotations

import sys
import time
import warnings

from mutation_study.kernels import KERNELS
from mutation_study.suites import SUITES, budget

__all__ = ["run_suite"]


def run_suite(name: str, max_examples: int) -> dict[tuple[str, str], tuple[bool, float]]:
    """``(kernel, variant) -> (killed, seconds)`` for one suite."""
    out: dict[tuple[str, str], tuple[bool, float]] = {}
    s = budget(max_examples)
    for kernel, variants in KERNELS.items():
        for variant, fn in variants.items():
            test = SUITES[name][kernel](fn, s)
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    test()
                killed = False
            except AssertionError:
                killed = True
            out[(kernel, variant)] = (killed, time.perf_counter() - start)
    return out


def main(argv: list[str]) -> None:
    max_examples = int(argv[0]) if argv else 50
    results = {name: run_suite(name, max_examples) for name in SUITES}
    names = list(SUITES)
    print(f"max_examples={max_examples}, derandomized")
    print(f"{'kernel':10} {'variant':26} " + " ".join(f"{n:>24}" for n in names))
    for key in results[names[0]]:
        cells = []
        for n in names:
            killed, secs = results[n][key]
            word = ("FALSE ALARM" if killed else "pass") if key[1] == "correct" else (
                "killed" if killed else "SURVIVED")
            cells.append(f"{word:>14} {secs:8.2f} s")
        print(f"{key[0]:10} {key[1]:26} " + " ".join(cells))
    for n in names:
        mutants = [k for k in results[n] if k[1] != "correct"]
        kills = sum(results[n][k][0] for k in mutants)
        alarms = sum(results[n][k][0] for k in results[n] if k[1] == "correct")
        total = sum(t for _, t in results[n].values())
        print(f"{n}: killed {kills} of {len(mutants)}, false alarms {alarms}, "
              f"total {total:.1f} s")
    t0 = sum(t for _, t in results[names[0]].values())
    t1 = sum(t for _, t in results[names[1]].values())
    print(f"time ratio {names[0]} / {names[1]}: {t0 / t1:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The mutation study in tests/mutation_study: numerics.testing kills every mutant, and
passes every correct kernel, at a derandomized budget of 150 examples (50 killed every
mutant alone, but one fp8 double-rounding mutant survived 50 in one full-suite run).

Kills are counted at the first failing example (no shrinking); ``python -m
mutation_study.run`` (from tests/) runs the full comparison with shrinking
against the hypothesis.extra.numpy + torch.testing suite.
"""

from __future__ import annotations

import warnings

import pytest
from mutation_study.kernels import KERNELS
from mutation_study.suites import SUITES, budget

CASES = [(k, v) for k, variants in KERNELS.items() for v in variants]
SUITE = SUITES["numerics.testing"]


@pytest.mark.parametrize(("kernel", "variant"), CASES, ids=[f"{k}-{v}" for k, v in CASES])
def test_numerics_testing_suite(kernel: str, variant: str) -> None:
    test = SUITE[kernel](KERNELS[kernel][variant], budget(150, shrink=False))
    if variant == "correct":
        test()                                  # no false alarm
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(AssertionError):     # the mutant is killed
            test()

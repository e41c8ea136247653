"""A small mutation study: realistic low-precision kernels, mutants with real bugs, two suites.

``kernels`` holds four kernels (a per-tensor-scaled fp8 cast, a bfloat16
RMSNorm, a stochastic-rounding bfloat16 cast, an MX fp4 block quantizer),
each correct and with mutants carrying bugs that occur in practice.
``suites`` holds the same properties written twice: with
:mod:`numerics.testing` and with ``hypothesis.extra.numpy`` +
``torch.testing.assert_close``.  ``python -m mutation_study.run`` (from
``tests/``) prints the kill counts and times of both;
``tests/test_mutation_study.py`` asserts that the numerics.testing suite
kills every mutant with no false alarm.
"""

"""The signed IEEE P3109 family beyond the registered ``binary8p1`` .. ``binary8p7``:
every width ``k`` and precision ``p``, extended (+-inf at the top code) and finite (a
number there), built by :func:`numerics.formats.p3109` and found by name.

Checked against a decoder written here from P3109's definition (one zero, one NaN at
the code of -0, bias ``2**(k - p - 1)``), against gfloat's ``format_info_p3109`` (a
peer written apart from ours: its decode of every code, and ``round_ndarray`` against
the array path of ``numerics.encode`` in the five deterministic modes, with and without
saturation), and against the exact scalar reference ``numerics.codec``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import gfloat
import gfloat.formats
import numpy as np
import pytest
from gfloat_peer import assert_encode_matches_round_ndarray

import numerics
from numerics.codec import decode_exact, encode_exact
from numerics.formats import get_format, p3109

FAMILY = [(k, p, d) for k in (3, 4, 6, 8, 10) for p in range(1, k)
          for d in ("extended", "finite") if k <= 8 or p in (1, 3, 5, 9)]


def _ident(case: tuple[int, int, str]) -> str:
    return f"k{case[0]}p{case[1]}{case[2][0]}"


def p3109_value(code: int, k: int, p: int, extended: bool) -> Fraction | float:
    """P3109's value of ``code`` in the signed format of ``k`` bits and precision ``p``."""
    half = 1 << (k - 1)
    if code == half:
        return math.nan
    sign, mag = (-1 if code & half else 1), code & (half - 1)
    if extended and mag == half - 1:
        return sign * math.inf
    bias, t = 1 << (k - p - 1), p - 1
    e, m = mag >> t, mag & ((1 << t) - 1)
    if e == 0:
        return sign * Fraction(m) * Fraction(2) ** (1 - bias - t)
    return sign * Fraction((1 << t) + m) * Fraction(2) ** (e - bias - t)


@pytest.mark.parametrize("case", FAMILY, ids=_ident)
def test_every_code_decodes_to_p3109s_value(case: tuple[int, int, str]) -> None:
    k, p, domain = case
    fmt = p3109(k, p, domain=domain)
    fi = gfloat.formats.format_info_p3109(
        k, p, domain=gfloat.Domain.Extended if domain == "extended" else gfloat.Domain.Finite)
    codes = np.arange(1 << k, dtype=np.uint64).astype(fmt.code_dtype)
    got = numerics.decode(codes, fmt)
    for code in range(1 << k):
        want = p3109_value(code, k, p, domain == "extended")
        theirs = gfloat.decode_float(fi, code).fval
        exact = decode_exact(code, fmt)
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(got[code]) and math.isnan(theirs), (case, code)
            continue
        assert got[code] == float(want) == theirs and exact == want, (case, code)
    assert fmt.max == float(max(v for c in range(1 << k)
                                if not isinstance(v := p3109_value(c, k, p, False), float)))\
        or domain == "extended"


@pytest.mark.parametrize("case", FAMILY, ids=_ident)
def test_array_encode_matches_gfloat(case: tuple[int, int, str]) -> None:
    """Values of the format, their midpoints, both nudged, values past the range and
    below the least subnormal, and random float64 patterns, from float64 and float32."""
    k, p, domain = case
    fmt = p3109(k, p, domain=domain)
    fi = gfloat.formats.format_info_p3109(
        k, p, domain=gfloat.Domain.Extended if domain == "extended" else gfloat.Domain.Finite)
    rng = np.random.default_rng(k * 100 + p * 2 + (domain == "finite"))
    vals = numerics.decode(np.arange(1 << k, dtype=np.uint64).astype(fmt.code_dtype), fmt)
    vals = np.unique(vals[np.isfinite(vals)])
    base = np.concatenate([vals, (vals[1:] + vals[:-1]) / 2])
    pick = rng.choice(base, 800)
    nudge = rng.choice([0.0, 2.0**-52, -(2.0**-52), 2.0**-24, -(2.0**-24)], 800)
    x = np.concatenate([pick * (1 + nudge),
                        [fmt.max * s for s in (1.01, 1.5, 2.0, 1e10)],
                        [fmt.smallest_subnormal * s for s in (0.25, 0.5, 0.75)],
                        rng.integers(0, 2**64, 200, dtype=np.uint64).view(np.float64)])
    x = np.concatenate([x, -x])
    x = x[np.isfinite(x)]
    assert_encode_matches_round_ndarray(fmt, fi, x, case)
    exact = [encode_exact(v, fmt, overflow=o) for o in ("ieee", "saturate")
             for v in x[:200].tolist()]
    assert [*numerics.encode(x[:200], fmt).tolist(),
            *numerics.encode(x[:200], fmt, overflow="saturate").tolist()] == exact


def test_names_resolve_to_one_format_each() -> None:
    assert get_format("p3109_k8p4se") is get_format("binary8p4") is p3109(8, 4)
    assert get_format("binary8p4sf") is get_format("P3109_K8P4SF") is p3109(8, 4,
                                                                          domain="finite")
    assert get_format("binary10p3se") is get_format("binary10p3") is p3109(10, 3)
    f = get_format("p3109_k6p3sf")
    assert (f.name, f.bits, f.bias, f.max, f.has_infinity, f.has_negative_zero) == (
        "binary6p3sf", 6, 4, 14.0, False, False)
    # 12 + 1 ties to even (12, not 14); 14 + 1 ties to 16, past the max: NaN (no inf)
    got = numerics.ops.add(np.array([12.0, 14.0, 14.0]), np.array([1.0, 0.5, 1.0]), f)
    assert got[:2].tolist() == [12.0, 14.0] and math.isnan(got[2])


@pytest.mark.parametrize("name, match", [
    ("p3109_k8p3ue", "unsigned P3109 format, which is not modelled"),
    ("binary8p3uf", "unsigned P3109 format, which is not modelled"),
    ("binary8p8", r"k=8, p=8: a signed P3109 format has k >= 2 bits and a precision p "
                  "from 1 to k - 1"),
    ("binary40p2", r"P3109 format binary40p2 cannot be modelled here"),
])
def test_names_outside_the_family_are_refused(name: str, match: str) -> None:
    with pytest.raises(ValueError, match=f"Got format='{name}'.*{match}"):
        get_format(name)


def test_p3109_validates_its_arguments() -> None:
    with pytest.raises(TypeError, match=r"Got k='8', but it must be an int"):
        p3109("8", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Got domain='saturating'"):
        p3109(8, 3, domain="saturating")
    with pytest.raises(ValueError, match=r"Got k=2, p=1: P3109 format binary2p1 cannot"):
        p3109(2, 1)  # (0, +inf, NaN, -inf: no finite number besides zero)

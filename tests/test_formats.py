"""Every code of every format up to 16 bits, decoded, against independent peers.

Peers: numpy (float16/float32/float64 bit views), ml_dtypes (view the codes as
its dtype, ``astype(float64)``) and gfloat (``decode_float`` with its OCP and
IEEE P3109 format descriptors).  Both the exact reference
(:func:`numerics.codec.decode_exact`) and the fast :func:`numerics.decode` are
checked.  Also: the registry, derived constants, and :func:`numerics.finfo.finfo`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import gfloat
import gfloat.formats
import ml_dtypes
import numpy as np
import pytest
from peers import ML_DTYPES

import numerics
from numerics.codec import decode_exact
from numerics.finfo import finfo
from numerics.formats import FORMATS, Format, get_format

NUMPY_DTYPES: dict[str, Any] = {"binary16": np.float16, "binary32": np.float32,
                                "binary64": np.float64}
GFLOAT: dict[str, Any] = {
    "binary16": gfloat.formats.format_info_binary16,
    "bfloat16": gfloat.formats.format_info_bfloat16,
    "e5m2": gfloat.formats.format_info_ocp_e5m2,
    "e4m3fn": gfloat.formats.format_info_ocp_e4m3,
    "e2m3fn": gfloat.formats.format_info_ocp_e2m3,
    "e3m2fn": gfloat.formats.format_info_ocp_e3m2,
    "e2m1fn": gfloat.formats.format_info_ocp_e2m1,
    "e8m0fnu": gfloat.formats.format_info_ocp_e8m0,
    **{f"binary8p{p}": gfloat.formats.format_info_p3109(8, p) for p in range(1, 8)},
}
CODE_DTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _view_dtype(bits: int) -> Any:
    return CODE_DTYPE[8] if bits <= 8 else CODE_DTYPE[bits]


def peer_values(fmt: Format, codes: np.ndarray) -> dict[str, np.ndarray]:
    """float64 values of ``codes`` according to every peer that knows ``fmt``."""
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid" when widened
        _peer_values(fmt, codes, out)
    return out


def _peer_values(fmt: Format, codes: np.ndarray, out: dict[str, np.ndarray]) -> None:
    if fmt.name in NUMPY_DTYPES:
        dt = NUMPY_DTYPES[fmt.name]
        out["numpy"] = codes.astype(_view_dtype(fmt.bits)).view(dt).astype(np.float64)
    if fmt.name == "tf32":  # tf32 is the top 19 bits of a binary32 code
        bits32 = codes.astype(np.uint32) << np.uint32(13)
        out["numpy-f32"] = bits32.view(np.float32).astype(np.float64)
    if fmt.name in ML_DTYPES:
        dt = ML_DTYPES[fmt.name]
        out["ml_dtypes"] = codes.astype(_view_dtype(fmt.bits)).view(dt).astype(np.float64)
    if fmt.name in GFLOAT:
        fi = GFLOAT[fmt.name]
        out["gfloat"] = np.array([gfloat.decode_float(fi, int(c)).fval for c in codes],
                                 dtype=np.float64)


def all_or_sample(fmt: Format) -> np.ndarray:
    """Every code (<= 16 bits, and tf32), else 50k random codes plus the boundaries."""
    if fmt.bits <= 19:
        return np.arange(fmt.num_codes, dtype=np.uint64)
    rng = np.random.default_rng(1234)
    t, w, s = fmt.trailing_bits, fmt.exponent_bits, fmt.bits - 1
    edges = [0, 1, 2, (1 << t) - 1, 1 << t, (1 << t) + 1, ((1 << w) - 2) << t,
             (((1 << w) - 1) << t) - 1, ((1 << w) - 1) << t, (((1 << w) - 1) << t) + 1,
             (1 << (w + t)) - 1]
    edges += [e | (1 << s) for e in edges]
    sample = rng.integers(0, 1 << min(fmt.bits, 63), size=50_000, dtype=np.uint64)
    sample = sample | (rng.integers(0, 2, size=sample.size, dtype=np.uint64) << np.uint64(s))
    return np.concatenate([np.array(edges, dtype=np.uint64), sample])


def assert_same_values(got: np.ndarray, want: np.ndarray, codes: np.ndarray, label: str) -> None:
    """Equal values, NaN where NaN, and the same sign bit (so -0 is checked)."""
    got_nan, want_nan = np.isnan(got), np.isnan(want)
    differ = (got != want) | (np.signbit(got) != np.signbit(want))
    bad = (got_nan != want_nan) | (~got_nan & differ)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        raise AssertionError(
            f"{label}: {int(bad.sum())} codes differ, e.g. "
            + ", ".join(f"{int(codes[j]):#x}: got {got[j]!r} want {want[j]!r}" for j in i)
        )


def exact_as_float64(value: Fraction | float) -> float:
    f = float(value)
    assert isinstance(value, float) or Fraction(f) == value, "value is not a float64"
    return f


PEER_FORMATS = [n for n in FORMATS
                if n in ML_DTYPES or n in NUMPY_DTYPES or n in GFLOAT or n == "tf32"]


def test_every_registered_format_has_a_peer() -> None:
    assert sorted(PEER_FORMATS) == sorted(FORMATS)


@pytest.mark.parametrize("name", PEER_FORMATS)
def test_decode_exact_every_code_matches_peers(name: str) -> None:
    fmt = get_format(name)
    codes = all_or_sample(fmt)
    if name == "tf32":
        codes = codes[::5]  # 100k codes: the scalar reference is slow; numerics.decode sees all
    ours = np.array([exact_as_float64(decode_exact(int(c), fmt)) for c in codes])
    peers = peer_values(fmt, codes)
    assert peers
    for peer, want in peers.items():
        assert_same_values(ours, want, codes, f"decode_exact {name} vs {peer}")


@pytest.mark.parametrize("name", PEER_FORMATS)
def test_decode_every_code_matches_peers(name: str) -> None:
    fmt = get_format(name)
    codes = all_or_sample(fmt)
    ours = numerics.decode(codes.astype(fmt.code_dtype), fmt)
    assert ours.dtype == np.float64 and ours.shape == codes.shape
    for peer, want in peer_values(fmt, codes).items():
        assert_same_values(ours, want, codes, f"decode {name} vs {peer}")


def test_decode_binary64_returns_the_float64_values_themselves() -> None:
    x = np.array([0.1, -0.0, math.inf, 5e-324, -1.7976931348623157e308])
    np.testing.assert_array_equal(numerics.decode(x.view(np.uint64), "binary64"), x)


# Spot checks from the specifications, in hex, with the arithmetic.
SPOT = [
    ("e5m2", 0x7B, 57344.0),          # 1.75 * 2**(30 - 15)
    ("e5m2", 0x7C, math.inf),         # exponent all ones, trailing 0
    ("e5m2", 0x01, 2.0**-16),         # 0.25 * 2**(1 - 15)
    ("e4m3fn", 0x7E, 448.0),          # 1.75 * 2**(15 - 7)
    ("e4m3fn", 0x7F, math.nan),       # S.1111.111 is the only NaN
    ("e4m3fn", 0x78, 256.0),          # 1.0 * 2**(15 - 7): not inf in fn
    ("e4m3fn", 0x01, 2.0**-9),        # 0.125 * 2**(1 - 7)
    ("e4m3", 0x77, 240.0),            # 1.875 * 2**(14 - 7)
    ("e4m3", 0x78, math.inf),         # IEEE-like: exponent all ones
    ("e3m4", 0x6F, 15.5),             # 1.9375 * 2**(6 - 3)
    ("e3m4", 0x01, 2.0**-6),          # 0.0625 * 2**(1 - 3)
    ("e4m3fnuz", 0x7F, 240.0),        # 1.875 * 2**(15 - 8)
    ("e4m3fnuz", 0x80, math.nan),     # the only NaN
    ("e4m3fnuz", 0x01, 2.0**-10),     # 0.125 * 2**(1 - 8)
    ("e5m2fnuz", 0x7F, 57344.0),      # 1.75 * 2**(31 - 16)
    ("e5m2fnuz", 0x01, 2.0**-17),     # 0.25 * 2**(1 - 16)
    ("e4m3b11fnuz", 0x7F, 30.0),      # 1.875 * 2**(15 - 11)
    ("e8m0fnu", 0x7F, 1.0),           # 2**(127 - 127)
    ("e8m0fnu", 0x00, 2.0**-127),     # 2**(0 - 127): no zero
    ("e8m0fnu", 0xFE, 2.0**127),      # 2**(254 - 127)
    ("e8m0fnu", 0xFF, math.nan),
    ("e2m3fn", 0x1F, 7.5),            # 1.875 * 2**(3 - 1)
    ("e2m3fn", 0x01, 0.125),          # 0.125 * 2**(1 - 1)
    ("e3m2fn", 0x1F, 28.0),           # 1.75 * 2**(7 - 3)
    ("e3m2fn", 0x01, 0.0625),         # 0.25 * 2**(1 - 3)
    ("e2m1fn", 0x7, 6.0),             # 1.5 * 2**(3 - 1)
    ("e2m1fn", 0x1, 0.5),             # 0.5 * 2**(1 - 1)
    ("e2m1fn", 0xF, -6.0),
    ("binary16", 0x7BFF, 65504.0),    # (2 - 2**-10) * 2**15
    ("binary16", 0x0001, 2.0**-24),   # 2**(1 - 15 - 10)
    ("bfloat16", 0x3F80, 1.0),
    ("bfloat16", 0x7F7F, (2 - 2.0**-7) * 2.0**127),
    ("tf32", 0x3FBFF, (2 - 2.0**-10) * 2.0**127),  # exponent 254 << 10, trailing all ones
    ("binary32", 0x3DCCCCCD, 0.100000001490116119384765625),
    ("binary8p3", 0x7E, 49152.0),     # 0x7E = e 31, m 2 -> 1.5 * 2**(31 - 16)
    ("binary8p3", 0x7F, math.inf),
    ("binary8p3", 0xFF, -math.inf),
    ("binary8p3", 0x80, math.nan),
    ("binary8p1", 0x01, 2.0**-63),    # 2**(1 - 64)
    ("binary8p7", 0x01, 2.0**-6),     # 2**-6 * 2**(1 - 1): w = 1, t = 6, bias 1
]


@pytest.mark.parametrize(("name", "code", "value"), SPOT)
def test_spot_checks_from_the_specs(name: str, code: int, value: float) -> None:
    got = decode_exact(code, name)
    fast = float(numerics.decode(np.array([code], dtype=get_format(name).code_dtype), name)[0])
    for v in (float(got), fast):
        if math.isnan(value):
            assert math.isnan(v)
        else:
            assert v == value


def test_negative_zero_codes() -> None:
    assert str(decode_exact(0x80, "e4m3fn")) == "-0.0"
    assert str(decode_exact(0x8000, "binary16")) == "-0.0"
    assert str(decode_exact(0x00, "e4m3fn")) == "0.0"
    assert math.isnan(decode_exact(0x80, "binary8p4"))


@pytest.mark.parametrize("name", FORMATS)
def test_derived_constants_agree_with_the_codes(name: str) -> None:
    """max / smallest normal / smallest subnormal as the values of their codes."""
    fmt = get_format(name)
    if fmt.bits <= 16:
        positives = [decode_exact(c, fmt) for c in range(1 << (fmt.bits - int(fmt.signed)))]
        finite_pos = [v for v in positives if isinstance(v, Fraction) and v > 0]
        assert max(finite_pos) == fmt.max_exact
        assert min(finite_pos) == Fraction(fmt.smallest_subnormal)
        assert decode_exact(fmt.max_finite_code, fmt) == fmt.max_exact
    assert fmt.smallest_normal == 2.0**fmt.emin


# ------------------------------------------------------------------ registry
def test_names_and_aliases() -> None:
    assert get_format("float8_e4m3fn").name == "e4m3fn"
    assert get_format("fp32").name == "binary32"
    assert get_format("BF16").name == "bfloat16"
    for dt_name in ("bfloat16", "float16", "float32", "float64", "float8_e5m2", "float8_e8m0fnu",
                    "float6_e2m3fn", "float4_e2m1fn", "float8_e4m3b11fnuz"):
        assert get_format(dt_name).bits == np.dtype(getattr(ml_dtypes, dt_name, None)
                                                    or getattr(np, dt_name)).itemsize * 8 or \
            dt_name.startswith(("float6", "float4"))


def test_unknown_format_name_suggests_close_matches() -> None:
    with pytest.raises(ValueError, match=r"e4m3fn"):
        get_format("e4m3fm")
    with pytest.raises(ValueError, match=r"not a known format"):
        get_format("nonsense-format")
    with pytest.raises(TypeError):
        get_format(8)  # type: ignore[arg-type]


# ------------------------------------------------------------------ finfo
FINFO_FIELDS = ("bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal",
                "smallest_subnormal", "nexp", "nmant", "maxexp", "minexp", "machep", "negep",
                "iexp")


@pytest.mark.parametrize("name", [n for n in FORMATS if n in ML_DTYPES or n in NUMPY_DTYPES])
def test_finfo_matches_numpy_and_ml_dtypes(name: str) -> None:
    """Every numeric field; ``precision``/``resolution`` only where the peer uses numpy's
    formula (ml_dtypes types them by hand for its 8-bit-and-smaller formats)."""
    dt = NUMPY_DTYPES.get(name) or ML_DTYPES[name]
    peer: Any = np.finfo(dt) if name in NUMPY_DTYPES else ml_dtypes.finfo(dt)
    ours = finfo(name)
    for field in FINFO_FIELDS:
        assert float(getattr(ours, field)) == float(getattr(peer, field)), field
    if get_format(name).bits >= 16:
        assert ours.precision == peer.precision
        assert np.dtype(dt).type(ours.resolution) == peer.resolution
    assert ours.dtype == np.dtype(dt)


def test_finfo_formats_without_dtype() -> None:
    fi = finfo("tf32")
    assert fi.dtype is None and fi.max == float(np.finfo(np.float32).max) * (1 - 2.0**-11) / (
        1 - 2.0**-24)
    assert fi.eps == 2.0**-10 and fi.precision == 3
    p3 = finfo("binary8p3")
    assert (p3.max, p3.min, p3.eps, p3.minexp) == (49152.0, -49152.0, 0.25, -15)
    assert finfo("e4m3fn").precision == 0 and finfo("e4m3fn").resolution == 1.0


def test_finfo_eps_is_the_spacing_at_one_in_custom_formats() -> None:
    """eps (and machep) against the values themselves: the next value above 1.0 where 1.0
    is a value, else numerics.ulp(1.0); before, eps was 2**-t also where 1.0 lies below
    the smallest normal (emin > 0)."""
    from numerics.formats import Infinity, NaNEncoding

    checked = 0
    for w in (1, 2, 3):
        for t in (0, 1, 2, 3):
            for bias in range(-2, 2**(w - 1) + 2):
                for sub in (True, False):
                    try:
                        g = Format(name="custom", exponent_bits=w, trailing_bits=t, bias=bias,
                                   subnormals=sub, infinity=Infinity.NONE,
                                   nan=NaNEncoding.TOP)
                    except ValueError:  # no finite non-zero value
                        continue
                    values = sorted({decode_exact(c, g) for c in range(g.num_codes)
                                     if decode_exact(c, g) == decode_exact(c, g)})
                    fi = finfo(g)
                    assert fi.eps == 2.0**fi.machep
                    above = [v for v in values if v > 1]
                    if 1 in values and above:
                        assert fi.eps == float(above[0] - 1), (w, t, bias, sub)
                        checked += 1
                    assert fi.eps == float(numerics.ulp(1.0, g)), (w, t, bias, sub)
    assert checked > 20


def test_finfo_dtype_needs_the_same_layout() -> None:
    # before: a custom format named like an ml_dtypes type got that dtype
    from numerics.formats import Infinity, NaNEncoding

    f = Format(name="float8_e4m3fn", exponent_bits=4, trailing_bits=3, bias=9,
               infinity=Infinity.NONE, nan=NaNEncoding.TOP)
    assert finfo(f).dtype is None and finfo(f).max == 112.0


def test_finfo_against_gfloat() -> None:
    """gfloat computes eps/epsneg/max/smallest values from its own descriptors."""
    for name, fi in GFLOAT.items():
        ours = finfo(name)
        assert ours.max == fi.max, name
        assert ours.eps == fi.eps, name
        assert ours.smallest_subnormal == fi.smallest, name
        assert ours.smallest_normal == fi.smallest_normal, name
        if fi.is_signed:
            assert ours.min == fi.min, name

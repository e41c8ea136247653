"""encode of arrays of a 1-byte ml_dtypes dtype (fp8, fp6, fp4): each byte's code read from
a table of the 256 bytes' codes, against the exact reference ``codec.encode_exact``.

The table path runs for a deterministic rounding on at least 256 elements; smaller
arrays and stochastic rounding go through float32 values and the encode loops.
"""

from __future__ import annotations

import numpy as np
import pytest

import numerics
from numerics import get_format
from numerics.codec import encode_exact

ml_dtypes = pytest.importorskip("ml_dtypes")

#: Every 1-byte float dtype of ml_dtypes that this ml_dtypes has.
BYTE_DTYPES = [getattr(ml_dtypes, n) for n in (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
    "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn") if hasattr(ml_dtypes, n)]


def _every_byte(dt: type) -> tuple[np.ndarray, np.ndarray]:
    """Every byte a value of ``dt`` may hold (fp6, fp4: those below 2**bits), repeated to
    at least 256 elements and shuffled; and the values ml_dtypes gives them."""
    bits = 8 * np.dtype(dt).itemsize if "float8" in np.dtype(dt).name else \
        int(np.dtype(dt).name[5])
    codes = np.arange(1 << bits, dtype=np.uint8)
    codes = np.random.default_rng(bits).permutation(np.tile(codes, 256 >> bits))
    x: np.ndarray = codes.view(dt)
    with np.errstate(invalid="ignore"):
        return x, x.astype(np.float64)


@pytest.mark.parametrize("dt", BYTE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_byte_matches_the_exact_reference(dt: type) -> None:
    x, values = _every_byte(dt)
    assert x.size >= 256
    for target in ("e5m2", "e4m3fnuz", "e2m1fn", "binary16", "bfloat16", "e8m0fnu"):
        fmt = get_format(target)
        for rounding, overflow in (("rne", "ieee"), ("rtz", "saturate"), ("ru", "ieee"),
                                   ("rna", "saturate")):
            got = numerics.encode(x, fmt, rounding=rounding, overflow=overflow, nan="zero")
            for i, v in enumerate(values.tolist()):
                want = encode_exact(v, fmt, rounding=rounding, overflow=overflow,
                                    nan="zero")
                assert int(got[i]) == want, (np.dtype(dt).name, target, rounding, v)


def test_a_nan_byte_into_a_format_without_nan_is_named() -> None:
    x = np.full(1000, 1.5, np.float32).astype(ml_dtypes.float8_e4m3fn)
    x[617] = np.nan
    with pytest.raises(ValueError, match="flat index 617.*e2m1fn has no NaN"):
        numerics.encode(x, "e2m1fn", rounding="rtz")
    codes = numerics.encode(x, "e2m1fn", rounding="rtz", nan="zero")
    assert codes[617] == 0 and codes[0] == encode_exact(1.5, "e2m1fn")


def test_out_layouts_and_small_arrays_agree() -> None:
    """A strided input, an ``out`` that is a strided view, and the same bytes below the
    table's threshold (through float32 values and the loops) give the same codes."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (64, 40), dtype=np.uint8).view(ml_dtypes.float8_e5m2)
    want = np.array([encode_exact(v, "e4m3fn", rounding="rd", overflow="saturate",
                                  nan="zero") for v in x.astype(np.float64).ravel().tolist()],
                    np.uint8).reshape(x.shape)
    got = numerics.encode(x, "e4m3fn", rounding="rd", overflow="saturate", nan="zero")
    assert np.array_equal(got, want)
    strided = numerics.encode(x[:, ::2], "e4m3fn", rounding="rd", overflow="saturate",
                              nan="zero")
    assert np.array_equal(strided, want[:, ::2])
    buf = np.zeros((64, 80), np.uint8)
    numerics.encode(x, "e4m3fn", rounding="rd", overflow="saturate", nan="zero",
                    out=buf[:, ::2])
    assert np.array_equal(buf[:, ::2], want) and not buf[:, 1::2].any()
    small = numerics.encode(x[:3, :5], "e4m3fn", rounding="rd", overflow="saturate",
                            nan="zero")
    assert np.array_equal(small, want[:3, :5])

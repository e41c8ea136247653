"""gfloat as a peer of the array path of ``numerics.encode``: one comparison, shared."""

from __future__ import annotations

from typing import Any

import gfloat
import numpy as np

import numerics
from numerics.formats import Format

#: Our deterministic rounding modes and gfloat's names for them.
GFLOAT_MODES = {"rne": gfloat.RoundMode.TiesToEven, "rna": gfloat.RoundMode.TiesToAway,
                "rtz": gfloat.RoundMode.TowardZero, "ru": gfloat.RoundMode.TowardPositive,
                "rd": gfloat.RoundMode.TowardNegative}


def assert_encode_matches_round_ndarray(fmt: Format, fi: Any, x: np.ndarray,
                                        label: object) -> None:
    """``decode(encode(x))`` equals gfloat's ``round_ndarray`` for the finite ``x`` as
    float64 and as float32, in the five deterministic modes, with and without saturation
    (without only where the format has an infinity or a NaN to overflow to: gfloat refuses
    the others); the signs of zeros too where the format has -0."""
    with np.errstate(over="ignore"):
        inputs = [x, x.astype(np.float32)]
    for arr in inputs:
        arr = arr[np.isfinite(arr)]
        for rounding, mode in GFLOAT_MODES.items():
            for sat in (False, True):
                if not sat and not fmt.has_nan and not fmt.has_infinity:
                    continue
                with np.errstate(over="ignore"):  # (gfloat's ldexp past the range)
                    want = gfloat.round_ndarray(fi, arr.astype(np.float64), mode, sat)
                got = numerics.decode(numerics.encode(
                    arr, fmt, rounding=rounding, overflow="saturate" if sat else "ieee"), fmt)
                same = (got == want) | (np.isnan(got) & np.isnan(want))
                if fmt.has_negative_zero:  # (a NaN's sign is not compared)
                    same &= (np.signbit(got) == np.signbit(want)) | np.isnan(got)
                bad = np.flatnonzero(~same)
                assert bad.size == 0, (label, rounding, sat, arr.dtype, arr[bad[:3]],
                                       got[bad[:3]], want[bad[:3]])

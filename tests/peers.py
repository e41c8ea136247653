"""The peers' dtypes, typed here once for the tests (independently of numerics.dtypes)."""

from __future__ import annotations

from typing import Any

import ml_dtypes

#: ml_dtypes scalar type of each registered format it implements.
ML_DTYPES: dict[str, Any] = {
    "bfloat16": ml_dtypes.bfloat16,
    "e5m2": ml_dtypes.float8_e5m2,
    "e4m3": ml_dtypes.float8_e4m3,
    "e3m4": ml_dtypes.float8_e3m4,
    "e4m3fn": ml_dtypes.float8_e4m3fn,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "e2m3fn": ml_dtypes.float6_e2m3fn,
    "e3m2fn": ml_dtypes.float6_e3m2fn,
    "e2m1fn": ml_dtypes.float4_e2m1fn,
}

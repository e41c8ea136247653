"""What importing numerics costs, checked structurally (no timing).

ml_dtypes takes most of a second to import and numba (with llvmlite) a fifth of
one, so ``import numerics`` and the CLI's imports load neither: each is imported
by the first function that needs it.  Each check runs in a fresh interpreter,
since this process has loaded everything already.  The second half checks that
the lazy paths give what the eager imports gave, again in fresh interpreters
where ml_dtypes is not yet loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")]),
}
HEAVY = ("numba", "llvmlite", "ml_dtypes", "rich", "torch", "scipy", "hypothesis")


def run(code: str) -> str:
    """stdout of ``code`` in a fresh interpreter (its stderr in the failure message)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def loaded_after(statement: str) -> set[str]:
    """Which of HEAVY are in sys.modules after ``statement`` runs."""
    out = run(f"import sys\n{statement}\n"
              f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    return set(out.split())


@pytest.mark.parametrize("statement", [
    "import numerics",
    "import numerics.tensors, numerics.finfo, numerics.dtypes, numerics.checkpoint",
    "import numerics.probe",
])
def test_import_loads_no_heavy_dependency(statement: str) -> None:
    assert loaded_after(statement) == set()


def test_cli_import_loads_no_compiler_or_ml_dtypes() -> None:
    # The CLI renders with rich; it must not pull in numba or ml_dtypes to start.
    assert loaded_after("import fpinspect.main") <= {"rich"}


def test_scalar_encode_of_numpy_format_loads_no_ml_dtypes() -> None:
    loaded = loaded_after("import numerics\nnumerics.encode(0.1, 'binary16')\n"
                          "numerics.finfo('binary32')\nnumerics.format_of_dtype('float32')\n"
                          "numerics.as_format(__import__('numpy').float16)")
    assert "ml_dtypes" not in loaded


def test_lazy_dtype_lookups_match_eager_ones() -> None:
    # Fresh interpreter, ml_dtypes not yet imported: a dtype name numpy learns only
    # from ml_dtypes still resolves, and the ml_dtypes dtypes come back.
    out = run(
        "import numpy as np, numerics\n"
        "from numerics import dtype_of, format_of_dtype, finfo\n"
        "print(format_of_dtype('bfloat16').name, format_of_dtype('float8_e4m3fn').name,"
        " format_of_dtype('no_such_dtype'), format_of_dtype(np.dtype('V2')),"
        " format_of_dtype(np.int32))\n"
        "print(dtype_of('bf16'), dtype_of('e2m1fn'), dtype_of('tf32'), dtype_of('binary32'))\n"
        "print(finfo('e4m3fn').dtype, finfo('tf32').dtype)\n"
    )
    assert out.splitlines() == [
        "bfloat16 e4m3fn None None None",
        "bfloat16 float4_e2m1fn None float32",
        "float8_e4m3fn None",
    ]


def test_ml_dtypes_array_resolves_after_lazy_table() -> None:
    # The dtype of an array made with ml_dtypes (imported by the caller, not by
    # numerics) is found, byte order and all.
    out = run(
        "import numpy as np, numerics, ml_dtypes\n"
        "from numerics import format_of_dtype\n"
        "print(format_of_dtype(ml_dtypes.float8_e5m2).name,"
        " format_of_dtype(np.dtype(ml_dtypes.bfloat16).newbyteorder('>')).name,"
        " numerics.as_format(ml_dtypes.float6_e3m2fn).name)\n"
    )
    assert out == "e5m2 bfloat16 e3m2fn"


def test_safetensors_table_is_built_on_access() -> None:
    out = run(
        "import sys, numerics.tensors as t\n"
        "before = 'ml_dtypes' in sys.modules\n"
        "table = t.SAFETENSORS_DTYPES\n"
        "print(before, list(table)[:4], table['BF16'], table['F8_E8M0'], table['U8'],"
        " t.SAFETENSORS_DTYPES is table)\n"
    )
    assert out == ("False ['F64', 'F32', 'F16', 'BF16'] bfloat16 float8_e8m0fnu uint8 True")

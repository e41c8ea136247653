"""Strict JSON documents for ``--json``: the same facts as the terminal views.

Numbers are JSON numbers where they are finite floats or ints; NaN and the
infinities are the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (never
bare ``NaN``); exact values are also given as exact decimal strings
(``"exact"`` keys), because a float cannot carry them all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from numerics.checkpoint import (
    CheckpointDiff,
    CheckpointHash,
    CheckpointStats,
    Source,
    TensorDiff,
    TensorRef,
)
from numerics.compare import DiffReport
from numerics.digits import int_to_text
from numerics.fingerprint import Fingerprint
from numerics.formats import Format
from numerics.inspection import (
    CodeReport,
    Encoded,
    IntegerReport,
    decimal_text,
    nan_kind,
    scientific_text,
)
from numerics.parse import ParsedValue
from numerics.stats import TensorStats

__all__ = [
    "bits_json",
    "checkpoint_diff_json",
    "checkpoint_hash_json",
    "checkpoint_stats_json",
    "diff_json",
    "dumps",
    "formats_json",
    "hash_json",
    "int_json",
    "ls_json",
    "num",
    "probe_json",
    "stats_json",
    "table_json",
    "value_json",
]


def num(x: float | Fraction | None) -> float | int | str | None:
    """A JSON-safe number: ints stay ints, NaN/inf become strings, and so does an exact value
    that float64 cannot hold (``"-1e-400"``: never a ``-0.0`` or an infinity in its place)."""
    if x is None or isinstance(x, (bool, int)):
        return x
    if isinstance(x, Fraction) and x != 0:
        try:
            f = float(x)
        except OverflowError:
            f = math.inf
        if f == 0 or math.isinf(f):
            return scientific_text(x, 17)
        return f
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def dumps(doc: Any) -> str:
    """Serialize strictly (``allow_nan=False``: a stray float NaN is a bug, not output)."""
    return json.dumps(doc, allow_nan=False, indent=2)


def _encoded(r: Encoded) -> dict[str, Any]:
    sign, exp, trail = r.bit_string
    return {
        "format": r.format.name,
        "code": r.code,
        "hex": r.hex,
        "bits": {"sign": sign or None, "exponent": exp, "mantissa": trail},
        "class": r.kind,
        "value": num(r.value),
        "exact": decimal_text(r.value),
        "abs_error": num(r.abs_error),
        "abs_error_exact": None if r.abs_error is None else decimal_text(r.abs_error),
        "rel_error": num(r.rel_error),
        "ulp": num(r.ulp),
        "is_exact": r.exact,
        "overflow": r.overflow,
        "saturated": r.saturated,
        "flushed_to_zero": r.flushed,
    }


def value_json(value: ParsedValue, results: Sequence[Encoded], *, rounding: str,
               overflow: str, no_nan: Sequence[str] = (),
               seed: int | None = None) -> dict[str, Any]:
    """``fpinspect VALUE --json``; ``no_nan`` names the chosen formats left out because
    the value is a NaN and they have none (the key is there only when some are);
    ``seed`` is the seed of a stochastic rounding's draw (the key is there only then)."""
    out: dict[str, Any] = {
        "input": value.text.strip(),
        "input_exact": decimal_text(value.exact),
        "rounding": rounding,
        "overflow": overflow,
        "formats": [_encoded(r) for r in results],
    }
    if seed is not None:
        out["seed"] = seed
    if no_nan:
        out["formats_without_nan"] = list(no_nan)
    return out


def bits_json(report: CodeReport) -> dict[str, Any]:
    """``fpinspect bits --json``."""
    return {
        **_encoded(report.encoded),
        "nan_kind": nan_kind(report.encoded.code, report.encoded.format),
        "previous": None if report.below is None else {
            "code": report.below.code, "hex": report.below.hex,
            "value": num(report.below.value), "exact": decimal_text(report.below.value)},
        "next": None if report.above is None else {
            "code": report.above.code, "hex": report.above.hex,
            "value": num(report.above.value), "exact": decimal_text(report.above.value)},
    }


def formats_json(formats: Sequence[Format]) -> dict[str, Any]:
    """``fpinspect formats --json``."""
    return {"formats": [{
        "name": f.name, "aliases": list(f.aliases), "bits": f.bits,
        "exponent_bits": f.exponent_bits, "mantissa_bits": f.trailing_bits, "bias": f.bias,
        "signed": f.signed, "max": num(f.max), "smallest_normal": num(f.smallest_normal),
        "smallest_subnormal": num(f.smallest_subnormal) if f.subnormals and f.trailing_bits
        else None,
        "eps": num(f.eps), "infinity": f.infinity.value, "nan": f.nan.value,
        "negative_zero": f.has_negative_zero,
    } for f in formats]}


def table_json(fmt: Format, rows: Sequence[tuple[int, Fraction | float]]) -> dict[str, Any]:
    """``fpinspect table --json``."""
    return {"format": fmt.name, "codes": [
        {"code": c, "value": num(v), "exact": decimal_text(v)} for c, v in rows]}


def int_json(report: IntegerReport) -> dict[str, Any]:
    """``fpinspect int --json`` (integers as exact decimal strings too: JSON readers lose them)."""
    return {"value": int_to_text(report.value), "types": [{
        "type": r.type, "exact": r.exact,
        "stored": None if r.stored is None else int_to_text(r.stored),
        "error": None if r.stored is None else int_to_text(r.stored - report.value),
        "spacing": None if r.spacing is None else decimal_text(r.spacing),
        "contiguous_limit": int_to_text(r.contiguous_limit), "note": r.note,
    } for r in report.rows]}


def _tensor(label: str, t: TensorRef) -> dict[str, Any]:
    return {"path": label, "key": t.name, "file": t.file, "dtype": t.dtype_name,
            "stored_dtype": t.stored_dtype, "shape": list(t.shape)}


def _ref(t: TensorRef) -> dict[str, Any]:
    return {"name": t.name, "dtype": t.dtype_name, "stored_dtype": t.stored_dtype,
            "shape": list(t.shape), "elements": t.size, "bytes": t.nbytes, "file": t.file}


def ls_json(src: Source) -> dict[str, Any]:
    """``fpinspect ls --json``."""
    return {"path": src.path, "kind": src.kind, "tensors": [_ref(t) for t in src.tensors],
            "total": {"tensors": len(src.tensors), "elements": sum(t.size for t in src.tensors),
                      "bytes": src.nbytes, "files": list(src.files)},
            "skipped": list(src.skipped), "unread_files": list(src.unread),
            "unindexed": list(src.unindexed)}


def diff_json(a_label: str, b_label: str, a: TensorRef, b: TensorRef, r: DiffReport, *,
              max_ulp: int | None, notes: Sequence[str] = (), check: str | None = None
              ) -> dict[str, Any]:
    """``fpinspect diff --json`` on two tensors (``check``: the check in words, if any)."""
    return {
        "a": _tensor(a_label, a), "b": _tensor(b_label, b), "format": r.format.name,
        "shape": list(r.shape), "notes": list(notes),
        "count": r.count, "bitwise_mismatches": r.bitwise_mismatches,
        "nan_mismatches": r.nan_mismatches, "inf_mismatches": r.inf_mismatches,
        "max_ulp_distance": r.max_ulp, "max_abs_error": num(r.max_abs_error),
        "max_rel_error": num(r.max_rel_error),
        "ulp_histogram": [{"low": lo, "high": hi, "count": c} for lo, hi, c in r.ulp_histogram],
        "worst": [{"index": list(w.index), "ulp_distance": w.ulp_distance,
                   "a_code": w.a_code, "b_code": w.b_code,
                   "a_value": num(w.a_value), "b_value": num(w.b_value)} for w in r.worst],
        "max_ulp": max_ulp, "check": check, "beyond_max_ulp": r.beyond,
        "ok": None if r.beyond is None else r.beyond == 0,
    }


def int_diff_json(a_label: str, b_label: str, a: TensorRef, b: TensorRef, d: TensorDiff, *,
                  check: str | None, failed: bool | None) -> dict[str, Any]:
    """``fpinspect diff --json`` on two integer tensors (compared exactly, as integers).

    ``max_abs_difference`` is the exact integer ``max |a - b|``; ``failed`` None: no check.
    """
    return {
        "a": _tensor(a_label, a), "b": _tensor(b_label, b), "format": None,
        "shape": list(d.shape), "count": d.count, "equal": d.count - d.mismatches,
        "mismatches": d.mismatches, "max_abs_difference": d.max_ulp, "check": check,
        "failures": None if failed is None else d.failures,
        "ok": None if failed is None else not failed,
    }


def checkpoint_diff_json(r: CheckpointDiff) -> dict[str, Any]:
    """``fpinspect diff --json`` on whole sources: the same facts per tensor."""
    return {
        "a": r.a, "b": r.b, "max_ulp": r.max_ulp, "atol": r.atol, "rtol": r.rtol,
        "notes": list(r.notes), "ok": r.ok,
        "tensors": [{
            "name": t.name, "status": t.status, "dtype_a": t.dtype_a, "dtype_b": t.dtype_b,
            "shape": list(t.shape), "format": t.format, "rounded": t.rounded, "count": t.count,
            "mismatches": t.mismatches, "failures": t.failures, "max_ulp": t.max_ulp,
            "max_abs_error": num(t.max_abs_error), "max_rel_error": num(t.max_rel_error),
            "nan_mismatches": t.nan_mismatches, "inf_mismatches": t.inf_mismatches,
        } for t in r.tensors],
        "only_a": list(r.only_a), "only_b": list(r.only_b),
        "shape_mismatches": [{"name": n, "shape_a": list(a), "shape_b": list(b)}
                             for n, a, b in r.shape_mismatches],
    }


def _stats(s: TensorStats) -> dict[str, Any]:
    return {
        "count": s.count, "nan": s.nan, "inf": s.inf, "zero": s.zero,
        "amax": num(s.amax), "amin": num(s.amin), "dynamic_range_binades": num(s.dynamic_range),
        "exponent_histogram": [{"exponent": e, "count": c} for e, c in s.exponent_histogram],
        "formats": [{
            "format": f.format.name, "overflow": f.overflow, "saturate": f.saturate,
            "flush_to_zero": f.flush_to_zero, "subnormal": f.subnormal,
            "unrepresentable": f.unrepresentable,
            "scale": num(f.scale_exact), "scale_pow2": num(
                None if f.scale_log2 is None else Fraction(2) ** f.scale_log2),
            "scale_log2": f.scale_log2,
            "flush_to_zero_scaled": num(f.flush_to_zero_scaled),
            "subnormal_scaled": num(f.subnormal_scaled),
        } for f in s.fits],
    }


def stats_json(label: str, t: TensorRef, s: TensorStats) -> dict[str, Any]:
    """``fpinspect stats --json`` on one tensor."""
    return {"tensor": _tensor(label, t), **_stats(s)}


def checkpoint_stats_json(s: CheckpointStats) -> dict[str, Any]:
    """``fpinspect stats --json`` on whole sources."""
    return {"path": s.path, "tensors": [{"tensor": _ref(t), **_stats(st)}
                                        for t, st in s.tensors],
            "total": _stats(s.total)}


def hash_json(label: str, t: TensorRef, fp: Fingerprint) -> dict[str, Any]:
    """``fpinspect hash --json`` on one tensor."""
    return {"kind": "tensor", "algorithm": fp.algorithm, "digest": fp.digest,
            "dtype": fp.dtype, "shape": list(fp.shape), "canonical": fp.canonical,
            "path": label, "key": t.name}


def checkpoint_hash_json(h: CheckpointHash) -> dict[str, Any]:
    """``fpinspect hash --json`` on whole sources."""
    return {"kind": "checkpoint", "algorithm": h.algorithm, "digest": h.digest,
            "canonical": h.canonical, "path": h.path, "tensors": [{
                "name": t.name, "digest": fp.digest, "dtype": fp.dtype,
                "shape": list(fp.shape), "file": t.file} for t, fp in h.tensors],
            "skipped": list(h.skipped)}


def probe_json(result: Any, check: Any) -> dict[str, Any]:
    """``fpinspect probe --json``: the model, its evidence and the verification."""
    def clean(x: Any) -> Any:
        if isinstance(x, float):
            return num(x)
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    doc = result.as_dict()
    doc["kind"] = "sum" if "algorithm" in doc else "matmul"
    doc["verify"] = None if check is None else {
        "outputs": check.outputs, "matches": check.matches, "fraction": check.fraction,
        "first_counterexample": check.first_counterexample}
    out: dict[str, Any] = clean(doc)
    return out

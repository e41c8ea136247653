"""GEMM emulation: sequential accumulation in a format, or a matrix-unit preset.

``gemm(A, B, C, input_format=..., accumulator=...)`` computes ``D = C + A @ B`` for
``A`` (M, K) and ``B`` (K, N), all M*N outputs at once (vectorized), looping over K.

``accumulator`` a format (a :class:`numerics.Format` or a name such as ``"binary32"``)
    Sequential accumulation: ``d = C``; ``d = fl_acc(d + a_ik * b_kj)`` for
    ``k = 0 .. K-1``: one rounding per step of the exact ``d + a*b`` (a fused
    multiply-add in the accumulator format).
``accumulator`` a :class:`numerics.accum.TensorCorePreset`, a preset name
(:data:`numerics.accum.PRESETS`) or an architecture (:data:`numerics.accum.FAMILIES`,
which picks the preset for ``input_format``)
    K is cut into consecutive groups of the preset's group size G, in order; if K is
    not a multiple of G, the last group is shorter.  (The fused structures pad it with
    zero products, which never change their result; the ``"pairwise"`` trees of AMD
    CDNA1/CDNA2 sum the last group at its own length, as MMA-Sim's ``MFMASim`` does
    with its shorter last slice: padding would change the tree and the sign of a
    zero.)  ``d = C`` (rounded to nearest into ``output_format``) is
    the first group's ``c``; each group's rounded result is the next group's ``c``
    (the group step of :mod:`numerics.accum.tensorcore`).

``promote_every=N`` (the DeepSeek-V3 scheme, arXiv 2412.19437 section 3.3.2)
    K is cut into consecutive intervals of N (a multiple of the preset's group size;
    the last interval may be shorter).  Each interval is accumulated as above
    starting from zero; its result ``P_j`` is then added to a running total in
    binary32 with one round-to-nearest-even of the exact sum, ``T = RNE32(T + P_j)``,
    starting from ``T = RNE32(C)``.  The output is ``RNE_out(T)``.

Inputs ``A`` and ``B`` are first rounded into ``input_format`` (to nearest even, or
with the preset's ``input_rounding``), each from its exact value (integers and long
doubles are not rounded to binary64 first).  The result is a float64 array of values
of ``output_format`` (final RNE cast).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics.accum.intake import real_pair, reject_nan
from numerics.accum.summation import _check_fmt, _Fl
from numerics.accum.tensorcore import (
    TensorCorePreset,
    canonical_nan,
    cast,
    check_formats,
    exponents,
    flush_subnormals,
    group_step,
    resolve_accumulator,
)
from numerics.formats import Format, as_format

__all__ = ["gemm"]

_ROW_CHUNK_ELEMS = 1 << 17

#: An operand's exact value as ``hi + lo`` (:func:`numerics.accum.intake.real_pair`);
#: ``lo`` None when it is zero.
_Pair = tuple[np.ndarray, np.ndarray | None]


def _pair(x: Any, name: str) -> _Pair:
    """A float32 or float64 array as it is (its values are exact, and :func:`cast` takes
    either: no float64 copy, no array of zero remainders); anything else by
    :func:`numerics.accum.intake.real_pair`."""
    if type(x) is np.ndarray and x.dtype.kind == "f" and x.dtype.itemsize in (4, 8) \
            and x.ndim <= 2:
        return x, None
    return real_pair(x, name)


def _check_matrices(A: Any, B: Any, C: Any) -> tuple[_Pair, _Pair, _Pair]:
    a = _pair(A, "A")
    b = _pair(B, "B")
    if a[0].ndim != 2 or b[0].ndim != 2:
        raise ValueError(
            f"Got A with shape {a[0].shape} and B with shape {b[0].shape}, but both must "
            "be 2-D"
        )
    if a[0].shape[1] != b[0].shape[0]:
        raise ValueError(
            f"Got A with shape {a[0].shape} and B with shape {b[0].shape}, but A's columns "
            f"({a[0].shape[1]}) must match B's rows ({b[0].shape[0]})"
        )
    out_shape = (a[0].shape[0], b[0].shape[1])
    if C is None:
        return a, b, (np.zeros(out_shape), None)
    c = real_pair(C, "C")
    try:
        return a, b, (np.broadcast_to(c[0], out_shape).copy(),
                      np.broadcast_to(c[1], out_shape).copy())
    except ValueError:
        raise ValueError(
            f"Got C with shape {np.shape(C)}, but it must broadcast to {out_shape}"
        ) from None


def _preset_chain(p: TensorCorePreset, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                  fin: Format, out: Format, G: int) -> np.ndarray:
    """The chain of group steps over all of K, rows in chunks (a last group shorter than
    G where K is not a multiple of it)."""
    M, K = a.shape
    N = b.shape[1]
    bt = np.ascontiguousarray(b.T)
    rows = max(1, _ROW_CHUNK_ELEMS // max(1, N * G))
    d = c.copy()
    for r0 in range(0, M, rows):
        dr = d[r0:r0 + rows]
        for k0 in range(0, K, G):
            dr = group_step(p, a[r0:r0 + rows, None, k0:k0 + G], bt[None, :, k0:k0 + G], dr,
                            fin, out)
        d[r0:r0 + rows] = dr
    return d


def _fused_operands(p: TensorCorePreset, a: np.ndarray, b: np.ndarray,
                    fin: Format) -> tuple[np.ndarray, ...] | None:
    """``a``, ``b`` and their exponents (step 1) for the ``"fused"`` kernel,
    or None when it does not apply (an operand not finite: numpy applies the IEEE rule)."""
    if int(p.fractional_bits) > 44 or not (  # type: ignore[arg-type]
            np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    # values exact in binary32 travel as binary32 (half the memory)
    dt = np.float32 if _float32_values(fin) else np.float64
    return (np.ascontiguousarray(a, dt), exponents(a, fin), np.ascontiguousarray(b, dt),
            exponents(b, fin))


def _float32_values(fmt: Format) -> bool:
    """Whether every value of ``fmt`` is a binary32 number (normal or subnormal)."""
    return fmt.precision <= 24 and fmt.emax <= 127 and fmt.emin >= -126


def _fused_kernel_chain(p: TensorCorePreset, ops: tuple[np.ndarray, ...], c: np.ndarray,
                        fin: Format, out: Format, G: int, lo: int, hi: int) -> np.ndarray:
    """The ``"fused"`` chain over ``K[lo:hi]`` by :func:`numerics.kernels.accum.fused_gemm`."""
    from numerics.kernels import accum as kernel
    from numerics.kernels.rounding import format_params, mode_code

    d = np.array(c, np.float64)
    align = {"rtz": kernel.ALIGN_RTZ, "rd": kernel.ALIGN_RD, "rne": kernel.ALIGN_RNE}
    a, ea, b, eb = ops
    F = int(p.fractional_bits)  # type: ignore[arg-type]
    how = align[p.alignment_rounding]
    lanes32 = a.dtype == np.float32 and kernel.lanes32_fit(
        fin.precision, fin.emin, fin.trailing_bits, fin.emax, out.emax, F, G, how)
    kernel.fused_gemm(a, ea, b, eb, d, lo, hi, G, F, how, format_params(out),
                      mode_code(p.rounding_into(out)), p.e8m13, lanes32)
    return d


def gemm(
    A: Any,
    B: Any,
    C: Any = None,
    *,
    input_format: Any = None,
    accumulator: Any,
    output_format: Any = "binary32",
    promote_every: int | None = None,
) -> np.ndarray:
    """Emulate ``C + A @ B`` with a given accumulation (see the module docstring).

    Parameters
    ----------
    A, B : array_like, shapes (M, K) and (K, N), or quantized operands
        Real values (floats, integers, long doubles, ml_dtypes or torch tensors), taken
        at their exact values; complex input, and a NaN where ``input_format`` has none
        (fp6, fp4), are rejected.  Results of ``quant.mx`` or
        ``quant.nvfp4`` quantized along K (A along axis 1, B along axis 0) go through
        a block-scaled preset (:data:`numerics.accum.BLOCKSCALED_PRESETS`, see
        :func:`numerics.accum.blockscaled_gemm`); they carry their own formats.
    C : array_like, broadcastable to (M, N), optional (zeros)
    input_format : Format, str or dtype (required for array operands)
    accumulator : TensorCorePreset, preset or architecture name, Format, format name or dtype
    output_format : Format, str or dtype
        Formats are also given as the numpy, ml_dtypes or torch dtype of a registered
        format (``np.float32``, ``torch.bfloat16``).
    promote_every : int, optional
        Promotion interval N (a multiple of the preset's group size); default: the
        preset's own ``promote_every`` (None for every built-in preset).

    Returns
    -------
    ndarray of float64, shape (M, N)

    Raises
    ------
    TypeError
        For operands that are not real arrays, or a missing ``input_format``.
    ValueError
        For shapes that do not multiply, an unknown format or preset, a bad
        ``promote_every``, a NaN that ``input_format`` (for A, B) or the accumulator
        (for C) cannot hold, a NaN product (a NaN operand, or 0 times an infinity)
        in an accumulator format without NaN (fp6, fp4), and an ``input_format`` of
        more than 26 significant bits with an accumulator format (its products
        must be exact in binary64).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.ones((1, 4096)); B = np.ones((4096, 1))
    >>> gemm(A, B, input_format="bf16", accumulator="bf16", output_format="binary32")
    array([[256.]])
    >>> gemm(A, B, input_format="e4m3fn", accumulator="hopper-fp8")
    array([[4096.]])
    >>> gemm([[1.0, 2.0**-30]], [[1.0], [1.0]], input_format="fp16", accumulator="cdna3")
    array([[1.]])
    """
    from numerics.quant.quantized import Quantized

    if isinstance(A, Quantized) or isinstance(B, Quantized):
        return _quantized_gemm(A, B, C, input_format, accumulator, output_format,
                               promote_every)
    if input_format is None:
        raise TypeError("Got input_format=None, but array operands need an input_format "
                        "(only quantized operands carry their own)")
    fin = as_format(input_format, arg="input_format")
    fout = as_format(output_format, arg="output_format")
    model = resolve_accumulator(accumulator, fin)
    if promote_every is not None and (not isinstance(promote_every, (int, np.integer))
                                      or isinstance(promote_every, bool) or promote_every < 1):
        raise ValueError(f"Got {promote_every=}, but it must be a positive int or None")
    pa, pb, pc = _check_matrices(A, B, C)
    reject_nan(pa[0], fin, "A")
    reject_nan(pb[0], fin, "B")
    reject_nan(pc[0], model if isinstance(model, Format) else fout, "C")
    if isinstance(model, Format):
        _check_fmt(model, "accumulator")  # signed, with subnormals, as sum's fmt
        if fin.precision > 26:
            raise ValueError(f"Got input_format={fin.name!r}, but it needs precision <= 26")
        a, b = cast(pa[0], fin, lo=pa[1]), cast(pb[0], fin, lo=pb[1])
        fl = _Fl(model, "rne", None)

        def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
            d = c0
            with np.errstate(invalid="ignore", over="ignore"):
                for k in range(lo, hi):
                    prod = a[:, k, None] * b[None, k, :]  # exact: precision <= 26
                    if not model.has_nan:
                        _refuse_nan_product(prod, a, b, k, model)
                    d = fl.add(d, prod)
            return d
        K = a.shape[1]
        c_start = cast(pc[0], model, lo=pc[1])
    else:
        chain, K, c_start, promote_every = _preset_setup(model, A, B, pa, pb, pc, fin, fout,
                                                         promote_every)
    if promote_every is None:
        d = cast(chain(0, K, c_start), fout)
    else:
        f32 = as_format("binary32")
        total = cast(pc[0], f32, lo=pc[1])
        f32ops = _Fl(f32, "rne", None)
        zeros = np.zeros_like(total)
        for lo in range(0, K, promote_every):
            part = chain(lo, min(lo + promote_every, K), zeros)
            total = f32ops.add(total, part)
        d = cast(total, fout)
    return d if isinstance(model, Format) else canonical_nan(d, model)


def _refuse_nan_product(prod: np.ndarray, a: np.ndarray, b: np.ndarray, k: int,
                       model: Format) -> None:
    """ValueError naming the first NaN product of step ``k`` (a NaN operand, or 0 times
    an infinity) for an accumulator with no NaN to round it to (fp6, fp4), the rule of
    ``sum``, ``dot`` and ``encode``; it would otherwise become 0."""
    nan = np.isnan(prod)
    if nan.any():
        i, j = (int(t) for t in np.unravel_index(int(np.argmax(nan)), nan.shape))
        raise ValueError(
            f"Got a NaN product A[{i}, {k}] * B[{k}, {j}] ({float(a[i, k])!r} * "
            f"{float(b[k, j])!r}), but accumulator={model.name!r} has no NaN to round it to")


def _preset_setup(p: TensorCorePreset, A: Any, B: Any, pa: _Pair, pb: _Pair, pc: _Pair,
                  fin: Format, fout: Format, promote_every: int | None) -> tuple[Any, ...]:
    """The chain function, padded K, starting C and promotion interval of a preset."""
    check_formats(fin, fout, p)
    G = p.group_size(fin)
    if promote_every is None:
        promote_every = p.promote_every
    if promote_every is not None and promote_every % G:
        raise ValueError(
            f"Got {promote_every=}, but it must be a multiple of preset "
            f"{p.name!r}'s group size {G} for {fin.name} inputs"
        )
    # the fused kernel takes values exact in binary32 as binary32: cast them so
    vt = np.float32 if p.structure == "fused" and _float32_values(fin) else np.float64
    a = cast(pa[0], fin, p.input_rounding_into(fin), lo=pa[1], dtype=vt)
    b = cast(pb[0], fin, p.input_rounding_into(fin), lo=pb[1], dtype=vt)
    c = cast(pc[0], fout, lo=pc[1])
    if p.flush_inputs:
        a = flush_subnormals(a, fin, keep_sign=False)
        b = flush_subnormals(b, fin, keep_sign=False)
        c = flush_subnormals(c, fout, keep_sign=False)
    M, K = a.shape
    pad = (-K) % G if p.structure != "pairwise" else 0
    if pad:
        a = np.concatenate([a, np.zeros((M, pad), a.dtype)], axis=1)
        b = np.concatenate([b, np.zeros((pad, b.shape[1]), b.dtype)], axis=0)
    ops = _fused_operands(p, a, b, fin) if p.structure == "fused" else None

    def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
        if ops is not None and np.isfinite(c0).all():
            return _fused_kernel_chain(p, ops, c0, fin, fout, G, lo, hi)
        # (binary64 operands: the group steps form exact products)
        return _preset_chain(p, np.asarray(a[:, lo:hi], np.float64),
                             np.asarray(b[lo:hi], np.float64), c0, fin, fout, G)
    return chain, a.shape[1], c, promote_every


def _quantized_gemm(A: Any, B: Any, C: Any, input_format: object, accumulator: object,
                    output_format: object, promote_every: object) -> np.ndarray:
    """Quantized operands (``quant.mx`` / ``quant.nvfp4`` along K) through a block-scaled
    preset (:mod:`numerics.accum.blockscaled`); binary32 results."""
    from numerics.accum.blockscaled import BLOCKSCALED_PRESETS, blockscaled_gemm

    if not isinstance(accumulator, str) or accumulator not in BLOCKSCALED_PRESETS:
        raise ValueError(f"Got accumulator={accumulator!r} with quantized operands, but they "
                         "need a block-scaled preset: " + ", ".join(BLOCKSCALED_PRESETS))
    for name, value, default in (("input_format", input_format, None),
                                 ("output_format", output_format, "binary32"),
                                 ("promote_every", promote_every, None)):
        if value != default:
            raise ValueError(f"Got {name}={value!r} with quantized operands, but block-scaled "
                             f"presets take only {name}={default!r} (the elements carry their "
                             "formats; the hardware writes binary32)")
    return np.asarray(blockscaled_gemm(A, B, C, preset=accumulator), dtype=np.float64)

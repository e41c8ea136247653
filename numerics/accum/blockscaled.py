"""Block-scaled GEMM (MX, NVFP4) as Blackwell's ``tcgen05.mma`` with block scales does it.

:func:`blockscaled_gemm` multiplies operands quantized along K by
:func:`numerics.quant.mx` or :func:`numerics.quant.nvfp4` the way MMA-Sim (Xie, Wang,
Yang, Yang 2025, arXiv 2511.10909; github.com/microsoft/MMA-Sim,
``mmasim/simulator/functions.py``, ``nv_fused_dot_add`` and
``nv_fused_dot_add_with_block_scale``, with the instruction shapes of
``mmasim/isa/nv_tcgen05mma.py``) models each ``kind``.  :func:`dequantized_gemm` is
the naive recipe (dequantize, multiply in float64) for comparison.

The model (claims B1-B8 of ``proofs/blockscaled_gemm.md``)
----------------------------------------------------------
Write every finite number as ``s * 2**e`` with ``e`` its exponent clamped below at its
format's ``emin`` (so a subnormal has ``|s| < 1``); a zero takes no part in the
largest exponent (MMA-Sim gives it exponent -999).

``kind::mxf8f6f4`` (preset ``"blackwell-mxf8f6f4"``)
    An instruction covers K = 32, one E8M0 block per row of A and column of B.  Its
    terms are ``C`` and the 32 products ``s_a s_b * 2**(e_a + e_b + E_A + E_B)``
    (``E_A``, ``E_B`` the scale exponents; the product significand lies in
    ``[0, 4)`` and is not renormalized).  With ``E`` the largest term exponent,
    every term is truncated toward zero to a multiple of ``2**(E - 25)``, the
    truncated terms are summed exactly and the sum is rounded toward zero to
    binary32.  NaN or infinite elements, a NaN scale (0xFF) or a NaN/inf ``C`` give
    the IEEE result of the exact sum instead (NaN, or +-inf).
``kind::mxf4`` (``"blackwell-mxf4"``) and ``kind::mxf4nvf4`` (``"blackwell-nvf4"``)
    An instruction covers K = 64 of E2M1 elements with one scale per block (32
    elements, E8M0, for MX; 16 elements, UE4M3, for NVFP4).  Each run of 16 products
    is summed exactly (``S``) and multiplied by the significands of its two scales;
    the term's exponent is the sum of the scale exponents, whatever ``S`` (a run
    summing to zero still sets the alignment; a zero UE4M3 scale does not).  The four
    terms and ``C`` are aligned to the largest exponent, truncated to 35 fractional
    bits, summed exactly and rounded toward zero to binary32.  A NaN scale (E8M0
    0xFF; UE4M3 0x7F or 0xFF, the sign bit being ignored) or a NaN ``C`` gives NaN.
Both
    The rounding toward zero keeps binary32 subnormals and gives +0 for a zero
    result (also for a negative sum that truncates to zero); a truncated value of
    ``2**128`` or more becomes +-inf (MMA-Sim casts it to float32 with PyTorch,
    which overflows to inf; a strict round-toward-zero would give +-FLT_MAX).  The
    instructions are chained along K: the first takes ``C`` (default +0), each
    later one the previous binary32 result.  NaN results are written 0x7FFFFFFF.
NVFP4 per-tensor scales (``"blackwell-nvf4"`` with ``global_scale`` set)
    cuBLAS applies them as the epilogue's ``alpha``: the MMA chain starts from +0,
    ``alpha = RNE32(g_A g_B)`` and ``D = RNE32(alpha * acc + C)``, one rounding (a
    fused multiply-add).  Without tensor scales, ``C`` enters the chain as for MX.

What the published model leaves open, and what is done here
------------------------------------------------------------
* fp6 and fp4 elements in ``kind::mxf8f6f4`` (e3m2, e2m3, e2m1): the simulator's
  ISA check allows only e4m3 and e5m2 there (``TODO: support e3m2, e2m3, and
  e2m1``).  They are accepted here by the same rule, each format's exponent clamped
  at its own ``emin``; this extension is untested against hardware.
* An infinite ``C`` in ``kind::mxf4``: the simulator stops with an error
  (``math.trunc(inf)``); here it passes through, as IEEE addition of finite terms
  would.  E2M1 elements have no NaN or infinity.
* Zeros: MMA-Sim's revisions disagree.  The first (``simulator/functions.py``,
  ``extract_significand_exponent``), followed here, gives a zero the exponent -999, so
  zeros never set ``E``; the later ``st_fdpa`` / ``gst_fdpa`` give a zero term -126
  (plus its scale exponents), and a still later one only to a run whose products are
  all zero; models derived from it probe hardware constants near -133 for MXFP8 and
  -139 for NVFP4.  They differ only when every non-zero term lies below that
  exponent: for ``kind::mxf8f6f4``, ``a = [32, -2**-5, 0, ...]``, ``b = [32, 2**-5, 0,
  ...]`` with both scales ``2**-75`` gives ``0x000001ff`` here and ``0x00000200`` in
  ``st_fdpa``; for ``kind::mxf4``, a zero block with scales ``2**20`` beside a block
  holding 1.0 with scales ``2**0`` gives 0 here (the zero run sets ``E`` at 40, see
  below) and 1.0 in ``gst_fdpa``.
* K not a multiple of 64 for the FP4 kinds is padded with zero blocks whose
  scales are the smallest E8M0 (0x00) or a zero UE4M3, what quantizing zero
  padding gives; claim B5 shows they never change a result.
* The NVFP4 epilogue and how ``C`` meets the tensor scales are cuBLAS conventions,
  not part of the simulator.

Examples
--------
>>> import numpy as np
>>> from numerics import quant
>>> x = np.zeros((1, 64)); x[0, 0] = 1.0; x[0, 32] = 2.0**-30  # two blocks
>>> A = quant.mx(x, "mxfp8_e4m3", axis=1)
>>> B = quant.mx(np.ones((64, 1)), "mxfp8_e4m3", axis=0)
>>> float(blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4")[0, 0])  # 2**-30 truncated
1.0
>>> float(dequantized_gemm(A, B)[0, 0]) == 1 + 2.0**-30
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from numerics.accum.intake import real_pair
from numerics.formats import Format, as_format
from numerics.quant import MX_FORMATS, Quantized

__all__ = ["BLOCKSCALED_PRESETS", "BlockScaledPreset", "blockscaled_gemm", "dequantized_gemm"]

_MMASIM = ("MMA-Sim (Xie et al. 2025, arXiv 2511.10909), mmasim/simulator/functions.py "
           "and mmasim/isa/nv_tcgen05mma.py")


@dataclass(frozen=True, kw_only=True)
class BlockScaledPreset:
    """One block-scaled MMA kind: its instruction shape, alignment and operands.

    Attributes
    ----------
    name : str
        Preset name, e.g. ``"blackwell-mxf4"``.
    kind : str
        The PTX ``tcgen05.mma`` kind it models.
    instruction_k : int
        K covered by one instruction; instructions are chained along K.
    group : int or None
        Products summed exactly before the scales apply (None: each product is a term).
    fractional_bits : int
        Fraction bits kept after alignment to the largest exponent.
    schemes : tuple of str
        Accepted quantization schemes (``Quantized.scheme``).
    block : int
        Elements per block scale along K.
    source : str
        Where the rule comes from, and what is ours.
    """

    #: Preset name, e.g. ``"blackwell-mxf4"``.
    name: str
    #: The PTX ``tcgen05.mma`` kind it models.
    kind: str
    #: K covered by one instruction; instructions are chained along K.
    instruction_k: int
    #: Products summed exactly before the scales apply (None: each product is a term).
    group: int | None
    #: Fraction bits kept after alignment to the largest exponent.
    fractional_bits: int
    #: Accepted quantization schemes (``Quantized.scheme``).
    schemes: tuple[str, ...]
    #: Elements per block scale along K.
    block: int
    #: Where the rule comes from, and what is ours.
    source: str


BLOCKSCALED_PRESETS: Mapping[str, BlockScaledPreset] = MappingProxyType({
    p.name: p for p in (
        BlockScaledPreset(
            name="blackwell-mxf8f6f4", kind="mxf8f6f4", instruction_k=32, group=None,
            fractional_bits=25, block=32,
            schemes=("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1"),
            source=f"{_MMASIM}: nv_fused_dot_add with scale_A[i, 0], scale_B[0, j], 25 "
                   "fractional bits, RZ to fp32; e4m3/e5m2 elements as simulated, fp6/fp4 "
                   "elements extended by the same rule (not in the simulator)"),
        BlockScaledPreset(
            name="blackwell-mxf4", kind="mxf4", instruction_k=64, group=16,
            fractional_bits=35, block=32, schemes=("mxfp4_e2m1",),
            source=f"{_MMASIM}: nv_fused_dot_add_with_block_scale, runs of 16, 35 "
                   "fractional bits, RZ to fp32; E8M0 scales per 32"),
        BlockScaledPreset(
            name="blackwell-nvf4", kind="mxf4nvf4", instruction_k=64, group=16,
            fractional_bits=35, block=16, schemes=("nvfp4",),
            source=f"{_MMASIM}: nv_fused_dot_add_with_block_scale with UE4M3 scales per 16 "
                   "(sign bit ignored); the per-tensor scales as cuBLAS's alpha epilogue"),
    )
})


def get_blockscaled_preset(name: object) -> BlockScaledPreset:
    """The preset called ``name``; ValueError listing the known ones otherwise."""
    if not isinstance(name, str) or name not in BLOCKSCALED_PRESETS:
        raise ValueError(f"Got preset={name!r}, but the block-scaled presets are "
                         + ", ".join(repr(p) for p in BLOCKSCALED_PRESETS))
    return BLOCKSCALED_PRESETS[name]


# ---------------------------------------------------------------------------- tables
@functools.cache
def _element_table(fmt: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per code: signed integer significand, exponent (clamped at ``emin``), kind
    (0 finite, 1 +inf, 2 -inf, 3 NaN); value = sig * 2**(exp - trailing_bits).  int8:
    for formats of at most 8 bits with at most 4 trailing bits."""
    n = 1 << fmt.bits
    sig = np.zeros(n, np.int8)  # |sig| < 2**(t + 1) <= 16 for the element formats
    exp = np.zeros(n, np.int8)
    kind = np.zeros(n, np.uint8)
    t = fmt.trailing_bits
    for code in range(n):
        negative = fmt.signed and bool(code & fmt.sign_mask)
        if fmt.is_nan_code(code):
            kind[code] = 3
            continue
        if fmt.is_inf_code(code):
            kind[code] = 2 if negative else 1
            continue
        mag = code & fmt.magnitude_mask
        field_e, frac = mag >> t, mag & ((1 << t) - 1)
        m, e = (frac, fmt.emin) if field_e == 0 else (frac | (1 << t), field_e - fmt.bias)
        sig[code] = -m if negative else m
        exp[code] = e
    return sig, exp, kind


def _scale_table(scale_format: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scale code: significand with 3 fraction bits, exponent, NaN flag."""
    codes = np.arange(256)
    if scale_format.name == "e8m0fnu":
        return (np.full(256, 8, np.int32), (codes - 127).astype(np.int32), codes == 0xFF)
    mag = codes & 0x7F  # UE4M3: MMA-Sim takes abs() of the e4m3 scale
    field_e, frac = mag >> 3, mag & 7
    sig = np.where(field_e == 0, frac, frac | 8).astype(np.int32)
    exp = np.where(field_e == 0, -6, field_e - 7).astype(np.int32)
    return sig, exp, mag == 0x7F


# ---------------------------------------------------------------------------- intake
def _check_operand(q: object, arg: str, preset: BlockScaledPreset, axis: int) -> Quantized:
    if not isinstance(q, Quantized):
        raise TypeError(f"Got {arg} of type {type(q).__name__}, but it must be the result of "
                        "numerics.quant.mx(...) or numerics.quant.nvfp4(...)")
    if q.scheme not in preset.schemes:
        raise ValueError(f"Got {arg} quantized as {q.scheme!r}, but preset {preset.name!r} "
                         "takes " + ", ".join(repr(s) for s in preset.schemes))
    want = (1, preset.block) if axis == 1 else (preset.block, 1)
    if len(q.shape) != 2 or tuple(q.block) != want:
        raise ValueError(
            f"Got {arg} of shape {q.shape} with blocks {q.block}, but {arg} must be 2-D and "
            f"quantized along K (axis={axis}), blocks {want}")
    # the formats the scheme names (a hand-built Quantized may say otherwise; the codes
    # would be read in the wrong format)
    if q.scheme in MX_FORMATS:
        elem, scale = MX_FORMATS[q.scheme][0], "e8m0fnu"
    else:  # "nvfp4", the one other scheme a preset takes
        elem, scale = "e2m1fn", "e4m3fn"
    for what, fmt, name in (("element_format", q.element_format, elem),
                            ("scale_format", q.scale_format, scale)):
        if getattr(fmt, "name", None) != name:
            raise ValueError(f"Got {arg}.{what}={getattr(fmt, 'name', fmt)!r}, but scheme "
                             f"{q.scheme!r} stores {name}")
    codes_shape, scales_shape = np.shape(q.codes), np.shape(q.scale_codes)
    want_scales = tuple(n // b for n, b in zip(q.shape, q.block))
    if codes_shape != tuple(q.shape) or scales_shape != want_scales:
        raise ValueError(f"Got {arg}.codes of shape {codes_shape} and {arg}.scale_codes of "
                         f"shape {scales_shape}, but {arg} of shape {tuple(q.shape)} in "
                         f"blocks {tuple(q.block)} needs {tuple(q.shape)} and {want_scales}")
    return q


def _operand_codes(q: Quantized, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Element codes as (rows, K) and scale codes as (rows, K // block), K last."""
    codes = np.asarray(q.codes)
    scodes = np.asarray(q.scale_codes)
    arg = "A_q" if axis == 1 else "B_q"
    for what, c, bits in (("codes", codes, q.element_format.bits), ("scale_codes", scodes, 8)):
        if not np.issubdtype(c.dtype, np.integer):
            raise TypeError(f"Got {arg}.{what} of dtype {c.dtype}, but codes are integers")
        if c.size and (int(c.min()) < 0 or int(c.max()) >= 1 << bits):
            raise ValueError(f"Got {arg}.{what} with values in [{int(c.min())}, {int(c.max())}], "
                             f"but they must be {bits}-bit codes")
    if axis == 0:
        codes, scodes = codes.T, scodes.T
    return (np.ascontiguousarray(codes, dtype=np.int64),
            np.ascontiguousarray(scodes, dtype=np.int64))


def _c_bits(C: Any, shape: tuple[int, int]) -> np.ndarray:
    """The binary32 bits of ``C`` rounded to nearest-even from its exact value (read as
    :mod:`numerics.accum`'s other GEMMs read it: torch tensors, ml_dtypes arrays, big
    ints and long doubles exactly; a masked array refused), broadcast to ``shape``."""
    if C is None:
        return np.zeros(shape, np.uint32)
    hi, lo = real_pair(C, "C")
    try:
        hi, lo = np.broadcast_to(hi, shape), np.broadcast_to(lo, shape)
    except ValueError:
        raise ValueError(f"Got C with shape {hi.shape}, but it must broadcast to {shape}") \
            from None
    with np.errstate(over="ignore", invalid="ignore"):
        # (hi alone is binary64's rounding: the exact value is rounded once instead)
        c = _odd64(hi, lo) if lo.any() else hi
        return np.ascontiguousarray(c.astype(np.float32)).view(np.uint32)


def _odd64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``hi + lo`` (``hi`` its binary64 rounding, ``lo`` the exact remainder, 0 where
    ``hi`` is not finite) rounded to odd at 53 bits: ``hi``, or where ``lo != 0`` and
    ``hi``'s last bit is even, its binary64 neighbour on ``lo``'s side.  A rounding to
    binary32 that follows gives the exact value's (Boldo and Melquiond, IEEE TC 57(4),
    2008: ``53 >= 24 + 2``)."""
    even = (np.ascontiguousarray(hi).view(np.int64) & 1) == 0
    return np.where(even & (lo != 0), np.nextafter(hi, np.where(lo > 0, np.inf, -np.inf)),
                    hi)


def _pad_k(codes: np.ndarray, scodes: np.ndarray, block: int, inst_k: int,
           zero_scale: int) -> tuple[np.ndarray, np.ndarray]:
    pad = (-codes.shape[1]) % inst_k
    if not pad:
        return codes, scodes
    rows = codes.shape[0]
    codes = np.concatenate([codes, np.zeros((rows, pad), np.int64)], axis=1)
    scodes = np.concatenate([scodes, np.full((rows, pad // block), zero_scale, np.int64)],
                            axis=1)
    return codes, scodes


#: Run sums computed per matmul batch (float32 elements): about 16 MB.
_RUN_SUM_ELEMENTS = 1 << 22


# ---------------------------------------------------------------------------- public
def blockscaled_gemm(A_q: Quantized, B_q: Quantized, C: Any = None, *,
                     preset: str) -> np.ndarray:
    """``D = A @ B + C`` through Blackwell's block-scaled MMA as MMA-Sim models it.

    Parameters
    ----------
    A_q : Quantized
        ``(M, K)``, quantized along axis 1 (K) by :func:`numerics.quant.mx` or
        :func:`numerics.quant.nvfp4`.
    B_q : Quantized
        ``(K, N)``, quantized along axis 0 (K) with the same kind of scheme.
    C : array_like, optional
        Broadcastable to ``(M, N)``; rounded to nearest binary32 first.  Default +0.
    preset : str
        ``"blackwell-mxf8f6f4"`` (MXFP8, MXFP6 or MXFP4 elements; A and B may differ),
        ``"blackwell-mxf4"`` (MXFP4) or ``"blackwell-nvf4"`` (NVFP4); see
        :data:`BLOCKSCALED_PRESETS` and the module docstring for each rule.

    Returns
    -------
    ndarray of float32, shape (M, N)
        The binary32 results the hardware writes (NaN as 0x7FFFFFFF).

    Raises
    ------
    TypeError
        If an operand is not a :class:`numerics.quant.Quantized` or ``C`` is not real.
    ValueError
        For an unknown preset, a scheme the preset does not take, operands not
        quantized along K, or shapes that do not match.

    Examples
    --------
    >>> import numpy as np
    >>> from numerics import quant
    >>> A = quant.mx(np.full((1, 64), 1.5), "mxfp4_e2m1", axis=1)
    >>> B = quant.mx(np.full((64, 1), 2.0), "mxfp4_e2m1", axis=0)
    >>> blockscaled_gemm(A, B, 1.0, preset="blackwell-mxf4")
    array([[193.]], dtype=float32)
    """
    from numerics.kernels import blockscaled as kernels

    p = get_blockscaled_preset(preset)
    a = _check_operand(A_q, "A_q", p, axis=1)
    b = _check_operand(B_q, "B_q", p, axis=0)
    M, K = a.shape
    if b.shape[0] != K:
        raise ValueError(f"Got A_q with shape {a.shape} and B_q with shape {b.shape}, but A's "
                         f"columns ({K}) must match B's rows ({b.shape[0]})")
    N = b.shape[1]
    tensor_scales = p.kind == "mxf4nvf4" and (a.global_scale is not None
                                              or b.global_scale is not None)
    c_bits = _c_bits(C, (M, N))
    chain_c = np.zeros((M, N), np.uint32) if tensor_scales else c_bits
    ac, asc = _operand_codes(a, 1)
    bc, bsc = _operand_codes(b, 0)
    F = p.fractional_bits
    if p.group is None:
        fa, fb = as_format(a.element_format.name), as_format(b.element_format.name)
        a_sig, a_exp, a_kind = (t[ac] for t in _element_table(fa))
        b_sig, b_exp, b_kind = (t[bc] for t in _element_table(fb))
        _, a_sexp, a_snan = (t[asc] for t in _scale_table(as_format(a.scale_format.name)))
        _, b_sexp, b_snan = (t[bsc] for t in _scale_table(as_format(b.scale_format.name)))
        inst = p.instruction_k
        a_any = a_snan | (a_kind != 0).reshape(M, K // inst, inst).any(axis=2)
        b_any = b_snan | (b_kind != 0).reshape(N, K // inst, inst).any(axis=2)
        bits = kernels.mxf8f6f4_gemm(
            a_sig, a_exp, a_kind, b_sig, b_exp, b_kind, a_sexp, a_snan, a_any,
            b_sexp, b_snan, b_any, chain_c, np.int64(fa.trailing_bits + fb.trailing_bits),
            np.int64(F), np.int64(inst))
    else:
        zero_scale = 0  # E8M0 0x00 = 2**-127; UE4M3 0x00 = 0
        ac, asc = _pad_k(ac, asc, p.block, p.instruction_k, zero_scale)
        bc, bsc = _pad_k(bc, bsc, p.block, p.instruction_k, zero_scale)
        e2m1 = as_format("e2m1fn")
        sig, exp, _ = _element_table(e2m1)
        doubled = (sig.astype(np.int64) << exp).astype(np.float32)  # 2 * value, exact
        a_ssig, a_sexp, a_snan = (t[asc] for t in _scale_table(as_format(a.scale_format.name)))
        b_ssig, b_sexp, b_snan = (t[bsc] for t in _scale_table(as_format(b.scale_format.name)))
        bits = chain_c.copy()
        G, runs = p.group, ac.shape[1] // p.group
        a_runs = doubled[ac].reshape(M, runs, G).transpose(1, 0, 2)  # (runs, M, G)
        b_runs = doubled[bc].reshape(N, runs, G).transpose(1, 2, 0)  # (runs, G, N)
        per_inst = p.instruction_k // G
        step = per_inst * max(1, _RUN_SUM_ELEMENTS // max(1, M * N * per_inst))
        for r0 in range(0, runs, step):
            # each run sum is an integer below 16 * 144 < 2**24: exact in float32 whatever
            # the order of the matmul's additions (claim B2)
            sums = np.matmul(a_runs[r0:r0 + step], b_runs[r0:r0 + step])
            kernels.mxf4_chain(sums, r0, a_ssig, a_sexp, a_snan, b_ssig, b_sexp, b_snan,
                               bits, p.block // G, per_inst, F)
    d = bits.view(np.float32)
    if tensor_scales:
        ga, gb = (_tensor_scale(q.global_scale, name) for q, name in ((a, "A"), (b, "B")))
        d = _alpha_epilogue(d, ga, gb, c_bits.view(np.float32))
    return d


def _alpha_epilogue(acc: np.ndarray, ga: float | None, gb: float | None,
                    c: np.ndarray) -> np.ndarray:
    """``RNE32(alpha * acc + c)`` with ``alpha = RNE32(ga * gb)``, each rounded once.

    ``alpha * acc`` is exact in float64 (24 + 24 bits, exponents far inside its
    range); the sum with ``c`` is made exact by TwoSum and rounded to odd in float64
    (53 >= 24 + 2 bits, so the final cast to binary32 rounds once: Boldo and
    Melquiond, IEEE TC 57(4), 2008).
    """
    from numerics import eft

    with np.errstate(over="ignore", invalid="ignore"):
        alpha = np.float64(np.float32((1.0 if ga is None else ga) * (1.0 if gb is None else gb)))
        prod = alpha * acc.astype(np.float64)
        s, err = eft.two_sum(prod, c.astype(np.float64))
        d = _odd64(s, np.where(np.isfinite(s), err, 0.0)).astype(np.float32)
    d.view(np.uint32)[np.isnan(d)] = 0x7FFFFFFF
    return d


def dequantized_gemm(A_q: Quantized, B_q: Quantized, C: Any = None) -> np.ndarray:
    """The naive recipe: ``A_q.dequantize() @ B_q.dequantize() + C`` in float64.

    This is what torchao's ``MXTensor`` matmul does on CPU (dequantize both operands,
    then an ordinary matmul), here in float64 with numpy's BLAS (its summation order
    is BLAS's).  Every dequantized element is exact; the products and sums are
    rounded in float64, never truncated, and no block is aligned to its neighbours,
    so it differs from :func:`blockscaled_gemm` wherever the hardware's truncation
    to 25 or 35 fractional bits, or its final round toward zero, drops bits.

    Parameters
    ----------
    A_q : Quantized
        ``(M, K)`` once dequantized (any scheme and axis).
    B_q : Quantized
        ``(K, N)`` once dequantized.
    C : array_like, optional
        Broadcastable to ``(M, N)``; its nearest float64 is added (after the product,
        rounded in float64).  Default: nothing added.

    Returns
    -------
    ndarray of float64, shape (M, N)
        ``A @ B + C`` as numpy's float64 matmul computes it.

    Raises
    ------
    TypeError
        If an operand is not a :class:`numerics.quant.Quantized` or ``C`` is not real.
    ValueError
        If the operands are not 2-D with matching K, or ``C`` does not broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> from numerics import quant
    >>> A = quant.mx(np.full((1, 32), 1.5), "mxfp8_e4m3", axis=1)
    >>> B = quant.mx(np.full((32, 1), 2.0), "mxfp8_e4m3", axis=0)
    >>> dequantized_gemm(A, B)
    array([[96.]])
    """
    for q, arg in ((A_q, "A_q"), (B_q, "B_q")):
        if not isinstance(q, Quantized):
            raise TypeError(f"Got {arg} of type {type(q).__name__}, but it must be a "
                            "numerics.quant.Quantized")
    a, b = A_q.dequantize(), B_q.dequantize()
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"Got A_q with shape {a.shape} and B_q with shape {b.shape}, but "
                         "they must be 2-D with A's columns matching B's rows")
    with np.errstate(invalid="ignore", over="ignore"):
        d = a @ b
    if C is None:
        return d
    c, _ = real_pair(C, "C")  # (the float64 nearest C: this reference adds in float64)
    try:
        c = np.broadcast_to(c, d.shape)
    except ValueError:
        raise ValueError(f"Got C with shape {c.shape}, but it must broadcast to {d.shape}"
                         ) from None
    with np.errstate(invalid="ignore", over="ignore"):
        return d + c


def _tensor_scale(g: Any, name: str) -> float | None:
    """One NVFP4 tensor scale as a float; per-expert scales go one expert at a time."""
    if g is None:
        return None
    if np.ndim(g) != 0:
        raise ValueError(f"Got {name} with per-expert tensor scales of shape {np.shape(g)}; "
                         "multiply one expert's (rows, K) slice at a time")
    return float(g)

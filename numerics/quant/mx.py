"""OCP Microscaling (MX v1.0) block formats, with the shared-exponent rules in use.

Conversion (OCP MX v1.0 section 6.3; Rouhani et al., arXiv 2310.10537, Algorithm 1)
--------------------------------------------------------------------------------
For each block of 32 consecutive elements along ``axis``:

1. ``amax = max |V_i|`` and the shared exponent ``E`` by ``scale_mode`` (table below), each
   computed *exactly* from the float64 exponent and significand of ``amax`` (``np.frexp``),
   never from a rounded ``log2``: ``amax = 16*(1 - 2**-24)`` has ``floor(log2) = 3``, where a
   float32 ``log2`` rounds to 4 (gfloat's ``compute_scale_amax`` fed float32 gets the scale
   one binade too high, and torchao's CPU RCEIL path, which takes ``log2`` of a float32
   quotient, is one off near powers of two).
2. The shared scale is ``X = 2**E`` stored in E8M0.  As in Microsoft's microxcaling reference
   (``mx/mx_ops.py``, ``_shared_exponents``): ``E < -127`` is clamped to ``-127``; ``E > 127``
   makes the scale NaN (E8M0 ``0xFF``).
3. ``P_i = quantize(V_i / X)``: round to nearest even, normals beyond the element maximum
   clamped to it with the sign kept (spec 6.3).  ``V_i / X`` is exact (``X`` is a power of two).

Scale modes (``emax_elem`` = exponent of the element format's largest power of two: E5M2 15,
E4M3 8, E3M2 4, E2M3 2, E2M1 2, INT8 0; ``max_elem`` its largest value; ``t`` its trailing
significand bits, 6 for the MXINT8 element)

==========  ===============================================  ===============================
mode        ``E``                                            ``amax / X`` lies in (claim)
==========  ===============================================  ===============================
``floor``   ``floor(log2 amax) - emax_elem`` (OCP v1.0)       ``[2**emax, 2**(emax+1))`` (Q12)
``rceil``   ``ceil(log2(amax / max_elem))``                   ``(max_elem/2, max_elem]`` (Q13)
``ceil``    ``ceil(log2 amax) - emax_elem`` (torchao CEIL)    ``(2**(emax-1), 2**emax]`` (Q14)
``even``    ``floor(log2 RNA_t(amax)) - emax_elem``           ``[2**emax (1 - 2**-(t+2)),``
            (torchao EVEN: ``amax`` first rounded to ``t``    ``2**(emax+1) (1 - 2**-(t+2)))``
            trailing bits, ties away from zero)               (Q15)
==========  ===============================================  ===============================

``rceil`` is the scale cuBLAS, TransformerEngine and torchao's RCEIL aim at (PTX
``cvt.rp.satfinite.ue8m0x2.f32`` of ``amax / max_elem``): the smallest power of two with
``amax / X <= max_elem``, so no element saturates.  ``floor`` can saturate the top binade
(claim Q7), ``even`` saturates less, ``ceil`` never.  The bounds are proved in
``proofs/quantization_bounds.md`` (Q12-Q15).

Special blocks (each choice and its source)
-------------------------------------------
* All-zero block: ``amax = 0`` has no logarithm; the scale is the smallest, ``2**-127`` (code
  0x00), and the elements are zeros with their signs (microxcaling adds a tiny number to
  ``amax`` and clamps to -127; gfloat's ``compute_scale_amax`` returns ``2**-127``).
* A NaN or an infinity anywhere in the block: the scale is NaN (``0xFF``) and the whole block
  dequantizes to NaN, the element codes are 0 (microxcaling: ``log2`` of a NaN/inf amax is
  NaN/inf, above 127, hence NaN; OCP MX v1.0: a NaN scale makes every element of the block
  NaN whatever its code).  The spec leaves inf elements unclamped in formats that have inf;
  since their block's ``amax`` is inf the spec's own scale is not representable, and we
  follow the reference implementation.  The same rule holds in every scale mode.  torchao
  0.18 differs: its FLOOR, CEIL and EVEN read an infinite ``amax``'s exponent field (255)
  as its exponent, so the scale code is ``255 - emax`` (0xF7 for E4M3, 0xF0 for E5M2
  elements), the infinity saturates and the rest of the block rounds to zero; its RCEIL
  writes 0xFE.
* MXINT8 elements are two's-complement int8 scaled by ``2**-6`` with the spec's range
  ``[-2, 127/64]`` (gfloat ``format_info_ocp_int8``; microxcaling clamps symmetrically to
  ``+-127/64``, which differs only for elements that round to ``-2``).
"""

from __future__ import annotations

import numpy as np

from numerics.formats import Format, as_format
from numerics.quant._core import INT_FORMATS, ElementFormat, detached
from numerics.quant.quantized import (
    Quantized,
    as_real_array,
    blocks3,
    check_block,
    kernel_input,
    normalize_axis,
)

__all__ = ["MX_FORMATS", "SCALE_MODES", "mx", "mx_element_format", "shared_exponent"]

#: MX names -> (element format name, emax_elem).
MX_FORMATS: dict[str, tuple[str, int]] = {
    "mxfp8_e4m3": ("e4m3fn", 8),
    "mxfp8_e5m2": ("e5m2", 15),
    "mxfp6_e3m2": ("e3m2fn", 4),
    "mxfp6_e2m3": ("e2m3fn", 2),
    "mxfp4_e2m1": ("e2m1fn", 2),
    "mxint8": ("mxint8_element", 0),
}

#: The shared-exponent rules of :func:`mx` (see the module docstring).
SCALE_MODES: tuple[str, ...] = ("floor", "rceil", "ceil", "even")

MX_BLOCK = 32


def mx_element_format(name: str) -> ElementFormat:
    """The element format of an MX name."""
    elem, _ = _lookup(name)
    return INT_FORMATS[elem] if elem in INT_FORMATS else as_format(elem)


def _lookup(name: object) -> tuple[str, int]:
    if not isinstance(name, str):
        raise TypeError(f"Got name={name!r}, expected an MX format name")
    try:
        return MX_FORMATS[name.lower()]
    except KeyError:
        raise ValueError(f"Got name={name!r}, but the MX formats are "
                         + ", ".join(repr(n) for n in MX_FORMATS)) from None


def check_scale_mode(scale_mode: object) -> str:
    """Return ``scale_mode`` if it names an MX rule, else raise ValueError naming it."""
    if not isinstance(scale_mode, str) or scale_mode not in SCALE_MODES:
        raise ValueError(f"Got {scale_mode=}, but the only valid values are "
                         + ", ".join(repr(m) for m in SCALE_MODES))
    return scale_mode


def trailing_bits(fmt: ElementFormat) -> int:
    """Trailing significand bits of an element format (6 for the MXINT8 element: ``k/64``
    with ``|k| < 128`` has 7 significant bits below ``2``)."""
    return fmt.trailing_bits if isinstance(fmt, Format) else fmt.bits - 2


def shared_exponent(amax: np.ndarray, fmt: ElementFormat, emax_elem: int,
                    scale_mode: str = "floor") -> tuple[np.ndarray, np.ndarray]:
    """``(E, nan_block)``: the exact clamped shared exponent and where the scale is NaN.

    ``E`` is int64 (0 where the scale is NaN); see the module docstring for the rules.

    Examples
    --------
    >>> fmt = mx_element_format("mxfp4_e2m1")
    >>> amax = np.array([6.0, 6.5, 8.0])
    >>> [shared_exponent(amax, fmt, 2, m)[0].tolist() for m in SCALE_MODES]
    [[0, 0, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1]]
    """
    amax = np.asarray(amax, dtype=np.float64)
    bad = ~np.isfinite(amax)
    m, ex = np.frexp(np.where(bad, 1.0, amax))  # amax = m * 2**ex, m in [0.5, 1)
    ex = ex.astype(np.int64)
    if scale_mode == "floor":
        e = ex - 1 - emax_elem
    elif scale_mode == "ceil":
        e = ex - (m == 0.5) - emax_elem
    elif scale_mode == "even":
        carry = m >= 1.0 - 2.0 ** -(trailing_bits(fmt) + 2)
        e = ex - 1 + carry - emax_elem
    else:
        mm, em = np.frexp(fmt.max)
        e = ex - int(em) + (m > mm)
    e = np.where(amax == 0, -127, e)
    e = np.maximum(e, -127)
    bad = bad | (e > 127)
    return np.where(bad, 0, e), bad


def mx(x: object, name: str, axis: int = -1, *, scale_mode: str = "floor") -> Quantized:
    """Quantize ``x`` to the MX v1.0 format ``name`` in blocks of 32 along ``axis``.

    Parameters
    ----------
    x : array_like
        Real input (numpy, ml_dtypes or torch, bfloat16 included), taken as float64
        (integers beyond 2**53 and long doubles are rounded to float64 first);
        ``x.shape[axis]`` must be a multiple of 32 (pad with zeros otherwise).
    name : str
        ``"mxfp8_e4m3"``, ``"mxfp8_e5m2"``, ``"mxfp6_e3m2"``, ``"mxfp6_e2m3"``,
        ``"mxfp4_e2m1"`` or ``"mxint8"``.
    axis : int
        The blocked axis.
    scale_mode : {"floor", "rceil", "ceil", "even"}
        The shared-exponent rule (module docstring): ``"floor"`` is OCP MX v1.0,
        ``"rceil"`` the cuBLAS/TransformerEngine round-up of ``amax / max_elem``.

    Returns
    -------
    Quantized
        ``scales`` are ``2**E`` (NaN for NaN blocks), ``scale_codes`` the E8M0 codes,
        ``axis`` the blocked axis, ``block_size`` 32.

    Examples
    --------
    >>> x = np.full(32, 16 * (1 - 2.0**-24))
    >>> q = mx(x, "mxfp8_e4m3")
    >>> float(q.scales[0]), hex(int(q.scale_codes[0])), hex(int(q.codes[0]))
    (0.03125, '0x7a', '0x7e')
    >>> float(q.dequantize()[0])  # 448 * 2**-5: the top binade saturates (claim Q7)
    14.0
    >>> b = np.zeros(32); b[0] = 7.0
    >>> [float(mx(b, "mxfp4_e2m1", scale_mode=m).dequantize()[0]) for m in SCALE_MODES]
    [6.0, 8.0, 8.0, 8.0]
    """
    from numerics.kernels import quant as kq

    elem, emax_elem = _lookup(name)
    check_scale_mode(scale_mode)
    fmt: ElementFormat = INT_FORMATS[elem] if elem in INT_FORMATS else as_format(elem)
    arr = as_real_array(x)
    if arr.ndim == 0:
        raise ValueError("Got a 0-d x, but MX blocks need an axis of length a multiple of 32")
    ax = normalize_axis(axis, arr.ndim)
    block = tuple(MX_BLOCK if i == ax else 1 for i in range(arr.ndim))
    check_block(arr.shape, block)
    xk = kernel_input(arr)
    codes = np.empty(arr.shape, dtype=np.uint8)
    scale_codes = np.empty(tuple(n // b for n, b in zip(arr.shape, block)), dtype=np.uint8)
    if codes.size:
        from numerics.kernels.narrow import fits_one
        from numerics.kernels.rounding import format_params

        if isinstance(fmt, Format):
            params, int_element = kq.params_tuple(fmt), False
            qmin, qmax, inv_quantum = 0, 0, 1.0
            lean = fits_one(format_params(fmt))
        else:  # the MXINT8 element: the float params are unused
            params, int_element = kq.params_tuple(as_format("e4m3fn")), True
            qmin, qmax, inv_quantum = fmt.qmin, fmt.qmax, 1.0 / fmt.quantum
            lean = False
        kq.mx_quantize(blocks3(xk, ax), params, int_element, qmin, qmax, inv_quantum,
                       emax_elem, trailing_bits(fmt), float(fmt.max),
                       SCALE_MODES.index(scale_mode), lean, blocks3(codes, ax),
                       blocks3(scale_codes, ax))
    bad = scale_codes == 0xFF
    scales = np.where(bad, np.nan, np.ldexp(1.0, scale_codes.astype(np.int64) - 127))
    return Quantized(codes=codes, scales=scales, scale_codes=scale_codes, element_format=fmt,
                     scale_format=as_format("e8m0fnu"), scheme=name.lower(), block=block,
                     source=detached(arr, x), extra={"emax_elem": emax_elem}, axis=ax,
                     scale_mode=scale_mode)



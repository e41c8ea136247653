"""GEMM emulation: sequential accumulation in a format, or a tensor-core preset.

``gemm(A, B, C, input_format=..., accumulator=...)`` computes ``D = C + A @ B`` for
``A`` (M, K) and ``B`` (K, N), all M*N outputs at once (vectorized), looping over K.

``accumulator`` a format name (e.g. ``"binary32"``, ``"bfloat16"``)
    Sequential accumulation: ``d = C``; ``d = fl_acc(d + a_ik * b_kj)`` for
    ``k = 0 .. K-1``: one rounding per step of the exact ``d + a*b`` (a fused
    multiply-add in the accumulator format).
``accumulator`` a preset name (:data:`numerics.accum.PRESETS`)
    K is cut into consecutive groups of the preset's group size G, in order; if K is
    not a multiple of G it is padded with zero columns/rows, as the hardware does
    (a zero product has exponent -252, below every ``c``, so padding never changes
    the result).  ``d = C`` (rounded to nearest into ``output_format``) is the first
    group's ``c``; each group's rounded result is the next group's ``c``
    (:func:`numerics.accum.fused_dot_add`).

``promote_every=N`` (the DeepSeek-V3 scheme, arXiv 2412.19437 section 3.3.2)
    K is cut into consecutive intervals of N (a multiple of the preset's group size;
    the last interval may be shorter).  Each interval is accumulated as above
    starting from zero; its result ``P_j`` is then added to a running total in
    binary32 with one round-to-nearest-even of the exact sum, ``T = RNE32(T + P_j)``,
    starting from ``T = RNE32(C)``.  The output is ``RNE_out(T)``.

Inputs ``A`` and ``B`` are first rounded to nearest-even into ``input_format``.
The result is a float64 array of values of ``output_format`` (final RNE cast).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics.accum.summation import _Fl, two_sum
from numerics.accum.tensorcore import (
    PRESETS,
    _cast,
    _check_formats,
    _fused,
    decompose,
    get_preset,
)
from numerics.formats import FORMATS, Format, as_format

__all__ = ["gemm"]

_ROW_CHUNK_ELEMS = 1 << 17


def _check_matrices(A: Any, B: Any, C: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.asarray(A, np.float64)
    b = np.asarray(B, np.float64)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(
            f"Got A with shape {a.shape} and B with shape {b.shape}, but both must be 2-D"
        )
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"Got A with shape {a.shape} and B with shape {b.shape}, but A's columns "
            f"({a.shape[1]}) must match B's rows ({b.shape[0]})"
        )
    out_shape = (a.shape[0], b.shape[1])
    if C is None:
        c = np.zeros(out_shape)
    else:
        try:
            c = np.broadcast_to(np.asarray(C, np.float64), out_shape).copy()
        except ValueError:
            raise ValueError(
                f"Got C with shape {np.shape(C)}, but it must broadcast to {out_shape}"
            ) from None
    return a, b, c


def _preset_chain(a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray,
                  c: np.ndarray, out: Format, G: int, F: int, e8m13: bool) -> np.ndarray:
    """The chain of fused groups over all of K (K a multiple of G), rows in chunks."""
    M, K = a.shape
    N = b.shape[1]
    bt, ebt = np.ascontiguousarray(b.T), np.ascontiguousarray(eb.T)
    rows = max(1, _ROW_CHUNK_ELEMS // max(1, N * G))
    d = c.copy()
    rounding = "rtz" if out.name == "binary32" else "rne"
    for r0 in range(0, M, rows):
        dr = d[r0:r0 + rows]
        for k0 in range(0, K, G):
            ab = a[r0:r0 + rows, None, k0:k0 + G]
            eab = ea[r0:r0 + rows, None, k0:k0 + G]
            dr = _fused(ab, eab, bt[None, :, k0:k0 + G], ebt[None, :, k0:k0 + G], dr,
                        decompose(dr, out), F, out, rounding, e8m13)
        d[r0:r0 + rows] = dr
    return d


def gemm(
    A: Any,
    B: Any,
    C: Any = None,
    *,
    input_format: Format | str,
    accumulator: Format | str,
    output_format: Format | str = "binary32",
    promote_every: int | None = None,
) -> np.ndarray:
    """Emulate ``C + A @ B`` with a given accumulation (see the module docstring).

    Parameters
    ----------
    A, B : array_like, shapes (M, K) and (K, N)
    C : array_like, broadcastable to (M, N), optional (zeros)
    input_format : Format or str
    accumulator : Format, format name or preset name
    output_format : Format or str
    promote_every : int, optional
        Promotion interval N (a multiple of the preset's group size).

    Returns
    -------
    ndarray of float64, shape (M, N)

    Examples
    --------
    >>> import numpy as np
    >>> A = np.ones((1, 4096)); B = np.ones((4096, 1))
    >>> gemm(A, B, input_format="bf16", accumulator="bf16", output_format="binary32")
    array([[256.]])
    >>> gemm(A, B, input_format="e4m3fn", accumulator="hopper-fp8")
    array([[4096.]])
    """
    fin = as_format(input_format)
    fout = as_format(output_format)
    a, b, c = _check_matrices(A, B, C)
    M, K = a.shape
    if promote_every is not None and (not isinstance(promote_every, (int, np.integer))
                                      or isinstance(promote_every, bool) or promote_every < 1):
        raise ValueError(f"Got {promote_every=}, but it must be a positive int or None")
    a, b = _cast(a, fin), _cast(b, fin)
    f32 = as_format("binary32")
    if isinstance(accumulator, str) and accumulator in PRESETS:
        preset = get_preset(accumulator)
        _check_formats(fin, fout)
        G = preset.group_size(fin)
        if promote_every is not None and promote_every % G:
            raise ValueError(
                f"Got {promote_every=}, but it must be a multiple of preset "
                f"{preset.name!r}'s group size {G} for {fin.name} inputs"
            )
        pad = (-K) % G
        if pad:
            a = np.concatenate([a, np.zeros((M, pad))], axis=1)
            b = np.concatenate([b, np.zeros((pad, b.shape[1]))], axis=0)
        ea, eb = decompose(a, fin), decompose(b, fin)
        F, e8 = preset.fractional_bits, preset.e8m13

        def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
            return _preset_chain(a[:, lo:hi], ea[:, lo:hi], b[lo:hi], eb[lo:hi], c0, fout,
                                 G, F, e8)
        Kp = a.shape[1]
    else:
        if isinstance(accumulator, str) and accumulator.lower() not in _format_names():
            raise ValueError(
                f"Got accumulator={accumulator!r}, which is neither a known preset ("
                + ", ".join(PRESETS) + ") nor a format name (numerics.FORMATS)"
            )
        acc = as_format(accumulator)
        if fin.precision > 26:
            raise ValueError(f"Got input_format={fin.name!r}, but it needs precision <= 26")
        fl = _Fl(acc, "rne", None)

        def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
            d = _cast(c0, acc)
            for k in range(lo, hi):
                prod = a[:, k, None] * b[None, k, :]  # exact: precision <= 26
                d = fl.round_pair(*two_sum(d, prod))
            return d
        Kp = K
    if promote_every is None:
        c_start = _cast(c, fout) if accumulator in PRESETS else c
        return _cast(chain(0, Kp, c_start), fout)
    total = _cast(c, f32)
    f32ops = _Fl(f32, "rne", None)
    zeros = np.zeros_like(c)
    for lo in range(0, Kp, promote_every):
        part = chain(lo, min(lo + promote_every, Kp), zeros)
        total = f32ops.add(total, part)
    return _cast(total, fout)


def _format_names() -> set[str]:
    from numerics.formats import _BY_NAME  # the registry's names and aliases

    return set(_BY_NAME) | {f.lower() for f in FORMATS}

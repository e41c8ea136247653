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

import functools
from typing import Any

import ml_dtypes
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
from numerics.encoding import decode_codes
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


_ML_FP8 = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


@functools.cache
def _fp8_tables(fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Every code's value and its exponent (:func:`decompose`) for an 8-bit format."""
    values = decode_codes(np.arange(256, dtype=np.uint8), fmt).reshape(256)
    return values, decompose(values, fmt)


def _fp8_cast(x: Any, fmt: Format) -> tuple[np.ndarray, np.ndarray] | None:
    """``(_cast(x, fmt), decompose(...))`` for a binary32 array ``x`` and FP8 ``fmt``.

    ml_dtypes' binary32 -> FP8 cast is one round-to-nearest-even; below the format's
    largest value (no NaN, no overflow) it equals the core encoder's, which was
    checked for every binary32 value.  (From binary64 it is not: ml_dtypes rounds
    through binary32 first.)  None when it does not apply.
    """
    mt = _ML_FP8.get(fmt.name)
    if mt is None or not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 2:
        return None
    with np.errstate(invalid="ignore"):
        if x.size == 0 or not float(np.abs(x).max()) < fmt.max:
            return None
    codes = x.astype(mt).view(np.uint8)
    values, exps = _fp8_tables(fmt)
    return values[codes], exps[codes]


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


_FAST_ROWS = 16  # rows per block of the product pass: (G, 16, N) binary32 stays in L2


def _preset_chain_fast(a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray,
                       c: np.ndarray, fin: Format, out: Format, G: int, F: int,
                       e8m13: bool) -> np.ndarray | None:
    """:func:`_preset_chain` for narrow inputs, or None when a precondition fails.

    Preconditions: binary32 output; inputs of precision <= 12 whose products are
    normal binary32 numbers (so ``a*b`` is exact in binary32); ``(4G + 2) 2**F <=
    2**24``; everything finite and ``max|C| + K max|a| max|b| < 2**125`` (no group
    result can overflow).  FP8 inputs with the ``*-fp8`` presets qualify.

    Per group, the same arithmetic as :func:`numerics.accum.tensorcore._fused`, in
    another order:

    * ``E = max(e_c, max_k(e_a + e_b))``.  For the products with no zero factor the
      maximum is read off one float64 matrix product: with weights
      ``2**(L (e - lo))`` (0 for a zero operand) and ``L > log2 G``, the sum over
      ``k`` lies in ``[2**(L t), G 2**(L t)]`` where ``t`` is the largest weighted
      exponent (terms are non-negative powers of two, so the rounded sum keeps
      those bounds), hence ``t = floor(log2 S) // L``.  Where every product has a
      zero factor (``S = 0``) the maximum is taken directly.  ``e_c`` is read from
      the binary32 exponent field (clamped at -126, which is also a zero's).
    * ``x = RN32(RN32(a b) 2**(F - max(E, 2 emin)))`` is exact unless it is below
      the normal range, where ``|x| < 1`` truncates to 0 either way; when
      ``E < 2 emin`` every product is zero.  Every ``trunc(x)`` is an integer below
      ``2**(F + 2)`` and a group's total with ``c``'s term stays below ``2**24``, so
      the binary32 sums are exact in any order.
    * ``total 2**(E - F)`` then has at most 24 significant bits and a binary32
      exponent (``E - F >= -149``, no overflow), so rounding it toward zero to
      binary32 is exact; an exact zero is +0; e8m13 clears the low 10 bits.
    """
    if out.name != "binary32" or fin.precision > 12 or (4 * G + 2) * 2**F > 2**24:
        return None
    if fin.emax > 62 or 2 * (fin.emin - fin.precision + 1) < -126:
        return None
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0 or K == 0:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        if not (np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(c).all()):
            return None
        amax = float(np.abs(a).max())
        bmax = float(np.abs(b).max())
        if float(np.abs(c).max()) + K * amax * bmax >= 2.0**125:
            return None
    anz, bnz = a != 0, b != 0
    if not (anz.any() and bnz.any()):
        return None
    lo_a, hi_a = int(ea[anz].min()), int(ea[anz].max())
    lo_b, hi_b = int(eb[bnz].min()), int(eb[bnz].max())
    L = G.bit_length() + 1
    ra, rb_ = hi_a - lo_a, hi_b - lo_b
    ca, cb = L * ra // 2, L * rb_ // 2  # centre the weights' exponents on 0
    top = L * (ra + rb_) - ca - cb + L
    wdt: Any
    if ca + cb <= 120 and top <= 120:
        wdt = np.float32
    elif top <= 1000:
        wdt = np.float64
    else:
        return None
    Aw = np.where(anz, np.ldexp(1.0, L * (ea - lo_a) - ca), 0.0).astype(wdt)
    Bw = np.where(bnz, np.ldexp(1.0, L * (eb - lo_b) - cb), 0.0).astype(wdt)
    aT32 = np.ascontiguousarray(a.T, np.float32)
    b32 = b.astype(np.float32)
    e_floor = 2 * fin.emin
    d = c.astype(np.float32)
    du = d.view(np.uint32)
    rb = min(_FAST_ROWS, M)
    X = np.empty((G, rb, N), np.float32)
    Bx = np.empty((G, rb, N), np.float32)
    T = np.empty((M, N), np.float32)
    for k0 in range(0, K, G):
        ks = slice(k0, k0 + G)
        S = Aw[:, ks] @ Bw[ks]
        _, E = np.frexp(S)
        E += ca + cb - 1  # floor(log2 S) + ca + cb = L t + (0 .. log2 G)
        E //= L
        E += lo_a + lo_b
        zero = np.flatnonzero(S == 0)  # every product has a zero factor
        if zero.size:
            ii, jj = np.divmod(zero, N)
            E.flat[zero] = (ea[ii, ks] + eb[ks, jj].T).max(axis=1)
        ec = (du >> 23).astype(np.int32)
        ec &= 0xFF
        ec -= 127
        np.maximum(ec, -126, out=ec)
        np.maximum(E, ec, out=E)
        # powers of two built from their exponent fields (np.ldexp is slow)
        s32 = ((F + 127) - np.maximum(E, e_floor)).astype(np.uint32)
        s32 <<= 23
        s32 = s32.view(np.float32)
        up = ((F + 1023) - E).astype(np.uint64)
        up <<= 52
        down = ((1023 - F) + E).astype(np.uint64)
        down <<= 52
        np.copyto(Bx, b32[ks, None, :])
        aT = aT32[ks]
        for r0 in range(0, M, rb):
            r1 = min(r0 + rb, M)
            m = r1 - r0
            x = X[:, :m]
            np.copyto(x, aT[:, r0:r1, None])
            np.multiply(x, Bx[:, :m], out=x)
            np.multiply(x, s32[r0:r1], out=x)
            np.trunc(x, out=x)
            np.add.reduce(x, axis=0, out=T[r0:r1])
        total = d.astype(np.float64)
        total *= up.view(np.float64)  # exact: 2**(F - E) and the product are normal
        np.trunc(total, out=total)
        total += T
        total += 0.0  # an exact zero is +0
        total *= down.view(np.float64)  # exact: 2**(E - F) >= 2**-139
        d = total.astype(np.float32)
        du = d.view(np.uint32)
        if e8m13:
            du &= np.uint32(0xFFFFFC00)
    return d.astype(np.float64)


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
    fast_a, fast_b = _fp8_cast(A, fin), _fp8_cast(B, fin)
    exps: list[np.ndarray | None] = [None, None]
    if fast_a is not None:
        a, exps[0] = fast_a
    else:
        a = _cast(a, fin)
    if fast_b is not None:
        b, exps[1] = fast_b
    else:
        b = _cast(b, fin)
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
        ea = decompose(a, fin) if pad or exps[0] is None else exps[0]
        eb = decompose(b, fin) if pad or exps[1] is None else exps[1]
        F, e8 = preset.fractional_bits, preset.e8m13

        def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
            args = (a[:, lo:hi], ea[:, lo:hi], b[lo:hi], eb[lo:hi], c0)
            fast = _preset_chain_fast(*args, fin, fout, G, F, e8)
            return fast if fast is not None else _preset_chain(*args, fout, G, F, e8)
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

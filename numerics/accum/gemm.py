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
    not a multiple of G it is padded with zero columns/rows (a zero product never
    changes a group's result).  ``d = C`` (rounded to nearest into ``output_format``) is
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

import functools
from typing import Any

import ml_dtypes
import numpy as np

from numerics.accum.intake import real_pair
from numerics.accum.summation import _Fl, two_sum
from numerics.accum.tensorcore import (
    TensorCorePreset,
    cast,
    check_formats,
    decompose,
    flush_subnormals,
    group_step,
    resolve_accumulator,
)
from numerics.fast import decode_codes
from numerics.formats import Format, as_format

__all__ = ["gemm"]

_ROW_CHUNK_ELEMS = 1 << 17

_Pair = tuple[np.ndarray, np.ndarray]


def _check_matrices(A: Any, B: Any, C: Any) -> tuple[_Pair, _Pair, _Pair]:
    a = real_pair(A, "A")
    b = real_pair(B, "B")
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
        return a, b, (np.zeros(out_shape), np.zeros(out_shape))
    c = real_pair(C, "C")
    try:
        return a, b, (np.broadcast_to(c[0], out_shape).copy(),
                      np.broadcast_to(c[1], out_shape).copy())
    except ValueError:
        raise ValueError(
            f"Got C with shape {np.shape(C)}, but it must broadcast to {out_shape}"
        ) from None


_ML_FP8 = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


@functools.cache
def _fp8_tables(fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Every code's value and its exponent (:func:`decompose`) for an 8-bit format."""
    values = decode_codes(np.arange(256, dtype=np.uint8), fmt).reshape(256)
    return values, decompose(values, fmt)


def _fp8_cast(x: Any, fmt: Format) -> tuple[np.ndarray, np.ndarray] | None:
    """``(cast(x, fmt), decompose(...))`` for a binary32 array ``x`` and FP8 ``fmt``.

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


def _preset_chain(p: TensorCorePreset, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                  fin: Format, out: Format, G: int) -> np.ndarray:
    """The chain of group steps over all of K (K a multiple of G), rows in chunks."""
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
    accumulator: TensorCorePreset | Format | str,
    output_format: Format | str = "binary32",
    promote_every: int | None = None,
) -> np.ndarray:
    """Emulate ``C + A @ B`` with a given accumulation (see the module docstring).

    Parameters
    ----------
    A, B : array_like, shapes (M, K) and (K, N)
        Real values (floats, integers, long doubles, ml_dtypes or torch tensors), taken
        at their exact values; complex input is rejected.
    C : array_like, broadcastable to (M, N), optional (zeros)
    input_format : Format or str
    accumulator : TensorCorePreset, preset or architecture name, Format or format name
    output_format : Format or str
    promote_every : int, optional
        Promotion interval N (a multiple of the preset's group size); default: the
        preset's own ``promote_every`` (None for every built-in preset).

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
    >>> gemm([[1.0, 2.0**-30]], [[1.0], [1.0]], input_format="fp16", accumulator="cdna3")
    array([[1.]])
    """
    # (block-scaled operands are dispatched here, before the plain formats are read)
    fin = as_format(input_format)
    fout = as_format(output_format)
    model = resolve_accumulator(accumulator, fin)
    if promote_every is not None and (not isinstance(promote_every, (int, np.integer))
                                      or isinstance(promote_every, bool) or promote_every < 1):
        raise ValueError(f"Got {promote_every=}, but it must be a positive int or None")
    pa, pb, pc = _check_matrices(A, B, C)
    if isinstance(model, Format):
        if fin.precision > 26:
            raise ValueError(f"Got input_format={fin.name!r}, but it needs precision <= 26")
        a, b = cast(pa[0], fin, lo=pa[1]), cast(pb[0], fin, lo=pb[1])
        fl = _Fl(model, "rne", None)

        def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
            d = c0
            with np.errstate(invalid="ignore", over="ignore"):
                for k in range(lo, hi):
                    prod = a[:, k, None] * b[None, k, :]  # exact: precision <= 26
                    d = fl.round_pair(*two_sum(d, prod))
            return d
        K = a.shape[1]
        c_start = cast(pc[0], model, lo=pc[1])
    else:
        chain, K, c_start, promote_every = _preset_setup(model, A, B, pa, pb, pc, fin, fout,
                                                         promote_every)
    if promote_every is None:
        return cast(chain(0, K, c_start), fout)
    f32 = as_format("binary32")
    total = cast(pc[0], f32, lo=pc[1])
    f32ops = _Fl(f32, "rne", None)
    zeros = np.zeros_like(total)
    for lo in range(0, K, promote_every):
        part = chain(lo, min(lo + promote_every, K), zeros)
        total = f32ops.add(total, part)
    return cast(total, fout)


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
    fast = [_fp8_cast(A, fin) if p.input_rounding == "rne" else None,
            _fp8_cast(B, fin) if p.input_rounding == "rne" else None]
    a = fast[0][0] if fast[0] is not None else cast(pa[0], fin, p.input_rounding, lo=pa[1])
    b = fast[1][0] if fast[1] is not None else cast(pb[0], fin, p.input_rounding, lo=pb[1])
    c = cast(pc[0], fout, lo=pc[1])
    if p.flush_inputs:
        a = flush_subnormals(a, fin, keep_sign=False)
        b = flush_subnormals(b, fin, keep_sign=False)
        c = flush_subnormals(c, fout, keep_sign=False)
    M, K = a.shape
    pad = (-K) % G
    if pad:
        a = np.concatenate([a, np.zeros((M, pad))], axis=1)
        b = np.concatenate([b, np.zeros((pad, b.shape[1]))], axis=0)
    use_fast = (p.structure == "fused" and p.alignment_rounding == "rtz"
                and p.output_rounding == "rtz")
    if use_fast:
        ea = decompose(a, fin) if pad or fast[0] is None else fast[0][1]
        eb = decompose(b, fin) if pad or fast[1] is None else fast[1][1]

    def chain(lo: int, hi: int, c0: np.ndarray) -> np.ndarray:
        if use_fast:
            d = _preset_chain_fast(a[:, lo:hi], ea[:, lo:hi], b[lo:hi], eb[lo:hi], c0, fin,
                                   fout, G, int(p.fractional_bits),  # type: ignore[arg-type]
                                   p.e8m13)
            if d is not None:
                return d
        return _preset_chain(p, a[:, lo:hi], b[lo:hi], c0, fin, fout, G)
    return chain, a.shape[1], c, promote_every

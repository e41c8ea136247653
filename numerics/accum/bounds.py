"""A-priori error bounds for the summation algorithms (proved in
``proofs/accumulation_bounds.md``; the claim ids A1.. are cited below).

Notation: ``p`` the precision of the working format, ``u`` the unit roundoff of the
rounding mode (``2**-p`` for ``rne``/``rna``, ``2**(1-p)`` for ``rtz``, ``ru``,
``rd``, ``rto`` and ``sr``), ``S = sum |x_i|`` over the (rounded) terms and

    g(k) = (1 + u)**k - 1,

which is always defined (unlike ``gamma_k = k*u/(1 - k*u)``, undefined once
``k*u >= 1``).  Every bound holds under the no-overflow hypothesis: no operation's
exact result exceeds the largest finite value of its format.  Underflow needs no
hypothesis for a sum of two values of the format it is rounded into (one that lands
in the subnormal range is exact); the blocked total, which adds values of ``fmt``
into ``promote_fmt``, and products carry absolute terms (claims A7, A8).

Every bound is evaluated in binary64 and then inflated by the factor
``1 + (n + 16) * 2**-52`` to cover the rounding errors of its own evaluation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.rounding import ROUNDINGS, check_rounding

__all__ = [
    "chain_length",
    "check_rounding_name",
    "dot_bound",
    "g",
    "kahan_factor",
    "neumaier_factor",
    "probabilistic_factor",
    "promote_underflow",
    "sum_bound",
    "tree_chain",
    "unit_roundoff",
]

_NEAREST = ("rne", "rna")



def _exp(x: float) -> float:
    """``exp(x)``, infinite instead of OverflowError (a bound that float64 cannot hold)."""
    return math.inf if x > 709.0 else math.exp(x)


def _expm1(x: float) -> float:
    """``expm1(x)``, infinite instead of OverflowError."""
    return math.inf if x > 709.0 else math.expm1(x)


def unit_roundoff(fmt: Format | str, rounding: str) -> float:
    """``u`` for ``fmt`` and ``rounding``: ``2**-p`` (nearest) or ``2**(1-p)``.

    Raises ValueError naming ``rounding`` when it is not one of :data:`numerics.ROUNDINGS`.

    Parameters
    ----------
    fmt : Format or str
        The working format (its precision ``p``).
    rounding : str
        A rounding mode of :data:`numerics.ROUNDINGS`.

    Returns
    -------
    float
        ``2**-p`` for ``"rne"``/``"rna"``, ``2**(1-p)`` for the other modes.

    Raises
    ------
    ValueError
        For an unknown ``rounding`` (or ``fmt``, as :func:`numerics.as_format` raises).

    Examples
    --------
    >>> unit_roundoff("bfloat16", "rne"), unit_roundoff("bfloat16", "rtz")
    (0.00390625, 0.0078125)
    """
    p = as_format(fmt).precision
    check_rounding_name(rounding)
    return 2.0 ** -p if rounding in _NEAREST else 2.0 ** (1 - p)


def check_rounding_name(rounding: object, *, name: str = "rounding") -> str:
    """``rounding`` if it is one of :data:`numerics.ROUNDINGS`; ValueError naming it else
    (also for non-strings such as None, {} or an array).

    Parameters
    ----------
    rounding : object
        The argument to check.
    name : str, default "rounding"
        The argument's name, quoted in the error message.

    Returns
    -------
    str
        ``rounding`` itself.

    Raises
    ------
    ValueError
        If ``rounding`` is not one of :data:`numerics.ROUNDINGS`.

    Examples
    --------
    >>> check_rounding_name("rtz")
    'rtz'
    """
    if not isinstance(rounding, str):
        raise ValueError(
            f"Got {name}={rounding!r}, but the only valid values are "
            + ", ".join(repr(r) for r in ROUNDINGS)
        )
    return check_rounding(rounding, name=name)


def g(k: int | float | np.ndarray, u: float) -> float | np.ndarray:
    """``(1 + u)**k - 1`` (claim A1), computed as ``expm1(k * log1p(u))``.

    Parameters
    ----------
    k : int, float or numpy.ndarray
        The number of roundings (an array of counts is taken elementwise).
    u : float
        The unit roundoff, in ``[0, 1]``.

    Returns
    -------
    float or numpy.ndarray
        ``(1 + u)**k - 1`` in float64 (a numpy scalar for a scalar ``k``; ``inf``
        beyond float64's range).

    Raises
    ------
    TypeError
        If ``k`` is not a real count (a bool is not one) or ``u`` not a real number.
    ValueError
        If ``u`` is outside ``[0, 1]``, or a count is negative or NaN.

    Examples
    --------
    >>> bool(g(1, 2.0**-8) == 2.0**-8)
    True
    >>> round(float(g(4095, 2.0**-8)), -5)   # bf16 at n = 4096: vacuous
    8600000.0
    """
    if isinstance(k, int) and not isinstance(k, bool) and abs(k) >= 2**63:
        kk = np.asarray(math.inf if abs(k) >= 2**1024 else float(k)) * (1 if k > 0 else -1)
    else:
        kk = np.asarray(k)
    if kk.dtype.kind not in "iuf" or isinstance(k, (bool, np.bool_)):
        raise TypeError(f"Got k={k!r}, expected a real count or an array of counts")
    if kk.dtype.kind == "f" and np.isnan(kk).any() or (kk < 0).any():
        raise ValueError(f"Got k={k!r}, but a count of roundings is >= 0")
    if isinstance(u, (bool, complex)) or not isinstance(u, (int, float, np.integer,
                                                             np.floating)):
        raise TypeError(f"Got u={u!r}, expected a real unit roundoff")
    if not 0 <= u <= 1:  # (u = 1: one significant bit rounded in a directed mode)
        raise ValueError(f"Got u={u!r}, but a unit roundoff lies in [0, 1]")
    with np.errstate(all="ignore"):
        return np.expm1(kk.astype(np.float64) * math.log1p(u))[()]


def tree_chain(tree: object) -> int:
    """Longest chain of roundings from a leaf to the root of a nested-tuple tree.

    A node with children ``c_0 .. c_{m-1}`` summed left to right puts child ``j``
    through ``m - max(j, 1)`` additions.

    Parameters
    ----------
    tree : object
        A nested tuple whose leaves are anything but tuples (a leaf alone is a tree of
        one term); any depth (no recursion).

    Returns
    -------
    int
        The longest chain (0 for a leaf).

    Examples
    --------
    >>> tree_chain(((0, 1), (2, 3))), tree_chain((0, 1, 2, 3)), tree_chain(0)
    (2, 3, 0)
    """
    if not isinstance(tree, tuple):
        return 0
    # without recursion (a left-deep tree of any depth): frames of [node, next child,
    # the longest chain so far through the children seen]
    frames: list[list[Any]] = [[tree, 0, 0]]
    chain = 0  # the chain of the child just finished
    done = False
    while frames:
        frame = frames[-1]
        node, j, best = frame
        m = len(node)
        if done:  # child j - 1 finished with chain ``chain``
            frame[2] = best = max(best, chain + (m - max(j - 1, 1)) if m > 1 else chain)
            done = False
        if j < m:
            frame[1] = j + 1
            child = node[j]
            if isinstance(child, tuple):
                frames.append([child, 0, 0])
            else:
                chain, done = 0, True
            continue
        frames.pop()
        chain, done = best, True
    return chain


def chain_length(algorithm: str, n: int, *, block_size: int | None = None,
                 tree: object = None) -> int:
    """The longest chain of roundings any term goes through (claims A2-A4, A7).

    ``recursive`` and ``ring``: ``n - 1``; ``pairwise``: ``b - 1 + ceil(log2(m))``
    with ``b = min(block_size, n)`` and ``m = ceil(n / block_size)`` blocks;
    ``tree``: :func:`tree_chain`; ``exact``: 1 (``0`` terms for ``n = 1``).

    Parameters
    ----------
    algorithm : {"recursive", "ring", "pairwise", "tree", "exact"}
        The summation algorithm.
    n : int
        Number of terms.
    block_size : int, optional
        The pairwise block size (None is taken as 1).
    tree : nested tuple, optional
        The tree, for ``"tree"``.

    Returns
    -------
    int
        The chain length (0 for ``n <= 1``).

    Raises
    ------
    ValueError
        For another ``algorithm`` (Kahan, Neumaier and blocked have no chain form).

    Examples
    --------
    >>> chain_length("pairwise", 4096, block_size=128)
    132
    """
    if block_size is not None and (isinstance(block_size, bool)
                                   or not isinstance(block_size, (int, np.integer))
                                   or block_size < 1):
        raise ValueError(f"Got {block_size=!r}, but it must be None or an int >= 1")
    if n <= 1:
        return 0
    if algorithm in ("recursive", "ring"):
        return n - 1
    if algorithm == "pairwise":
        b = min(block_size or 1, n)
        m = -(-n // (block_size or 1))
        return b - 1 + (m - 1).bit_length()
    if algorithm == "tree":
        return tree_chain(tree)
    if algorithm == "exact":
        return 1
    raise ValueError(f"Got {algorithm=}, which has no chain-form bound")


def kahan_factor(n: int, u: float) -> float:
    """``K`` with ``|error| <= K * S`` for Kahan summation of ``n`` terms (claim A5).

    With ``a = u(2 + 2u + u**2) + u**3 (2 + u)``, ``k2 = u**2 (2 + u)``,
    ``beta = u(1+u)**3 / (1 - u(1+u)**3)``, ``b = 2 a beta + k2``,
    ``r = a beta + k2`` and ``M = (a + (n-1) b) (1 + r)**(n-2)``:
    ``K = (1 + beta) M + 2 beta``.  To first order ``K = 4u + 6 n u**2``.

    Parameters
    ----------
    n : int
        Number of terms.
    u : float
        Unit roundoff of the working format.

    Returns
    -------
    float
        ``K`` (0.0 for ``n <= 1``; ``inf`` where the analysis gives no finite bound).

    Examples
    --------
    >>> round(kahan_factor(4096, 2.0**-8), 3)   # bf16: the n u**2 term dominates
    0.509
    """
    if n <= 1:
        return 0.0
    k2 = u * u * (2 + u)
    a = u * (2 + 2 * u + u * u) + u * k2
    q = u * (1 + u) ** 3
    if q >= 1:  # (u >= about 0.32: the analysis gives no finite bound)
        return math.inf
    beta = q / (1 - q)
    b = 2 * a * beta + k2
    r = a * beta + k2
    growth = (n - 2) * math.log1p(r)
    if growth > 700.0:  # (1 + r)**(n-2) beyond float64: no finite bound
        return math.inf
    m = (a + (n - 1) * b) * _exp(growth)
    return (1 + beta) * m + 2 * beta


def neumaier_factor(n: int, u: float) -> float:
    """``K`` with ``|error| <= K * S`` for Neumaier summation (claim A6).

    ``K = u + (1 + u) [(1 + g(n-2)) (u(1+u) + u(2+u) g(n-1)) + g(n-2) g(n-1)]``;
    to first order ``2u + n**2 u**2``.

    Parameters
    ----------
    n : int
        Number of terms.
    u : float
        Unit roundoff of the working format, in ``[0, 1]``.

    Returns
    -------
    float
        ``K`` (0.0 for ``n <= 1``).

    Examples
    --------
    >>> neumaier_factor(1, 0.5), round(neumaier_factor(2, 2.0**-24) * 2**23, 6)
    (0.0, 1.0)
    """
    if n <= 1:
        return 0.0
    g1 = float(g(n - 1, u))
    g2 = float(g(n - 2, u))
    return u + (1 + u) * ((1 + g2) * (u * (1 + u) + u * (2 + u) * g1) + g2 * g1)


def probabilistic_factor(us: list[tuple[int, float]], n_terms: int,
                         confidence: float) -> float:
    """Higham and Mary's (2019) probabilistic chain factor (claim A9).

    For a chain of roundings with ``k_j`` errors bounded by ``u_j`` (``us`` lists the
    pairs ``(k_j, u_j)``), independent (mean-independent suffices) and of mean zero:
    ``exp(lam * sqrt(sum k_j u_j**2) + sum k_j u_j**2 / (1 - max u_j)) - 1`` bounds
    ``|prod(1 + delta) - 1|`` for each of the ``n_terms`` terms simultaneously with
    probability at least ``1 - 2 n_terms exp(-lam**2 (1 - max u)**2 / 2)``; ``lam`` is
    chosen so that this equals ``confidence``.

    Parameters
    ----------
    us : list of (int, float)
        The pairs ``(k_j, u_j)``; pairs with ``k_j <= 0`` are left out.
    n_terms : int
        Number of terms the bound holds for simultaneously.
    confidence : float
        The probability the bound holds with, in ``(0, 1)``: ValueError otherwise.

    Returns
    -------
    float
        The factor (0.0 without roundings; ``inf`` when some ``u_j >= 1``).

    Examples
    --------
    >>> f = probabilistic_factor([(4095, 2.0**-8)], 4096, 0.999)
    >>> 3 < f < 4     # against g(4095) ~ 8.6e6
    True
    """
    if not 0 < confidence < 1:  # (also refuses NaN)
        raise ValueError(f"Got {confidence=!r}, but it must lie in (0, 1)")
    us = [(k, u) for k, u in us if k > 0]
    if not us:
        return 0.0
    umax = max(u for _, u in us)
    if umax >= 1:  # one significant bit rounded in a directed mode: no such bound
        return math.inf
    lam = math.sqrt(2 * math.log(2 * n_terms / (1 - confidence))) / (1 - umax)
    s2 = math.fsum(k * u * u for k, u in us)
    return _expm1(lam * math.sqrt(s2) + s2 / (1 - umax))


def _inflate(b: np.ndarray, n: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.nextafter(b * (1 + (n + 16) * 2.0**-52), np.inf)


def _times(x: np.ndarray, factor: float) -> np.ndarray:
    """``x * factor``, 0 where ``x`` is 0 even for an infinite factor: a bound's term
    ``factor * sum |x_i|`` is 0 when every ``x_i`` is (not NaN)."""
    with np.errstate(all="ignore"):
        return np.where(x == 0, 0.0, x * factor)


def promote_underflow(n: int, block_size: int, fmt: Format, promote_fmt: Format,
                      rounding: str) -> float:
    """The absolute term of the blocked total's roundings into ``promote_fmt`` (claim
    A7): ``m * eta_p * (1 + u_p)**(m - 1)`` for ``m = ceil(n / block_size)`` roundings,
    ``eta_p`` half ``promote_fmt``'s smallest subnormal (nearest) or all of it; 0 when
    ``fmt``'s smallest subnormal is a multiple of ``promote_fmt``'s (then a total in the
    subnormal range is exact).

    Parameters
    ----------
    n : int
        Number of terms.
    block_size : int
        Terms per block (``>= 1``).
    fmt : Format
        The format the blocks are summed in.
    promote_fmt : Format
        The format the block sums are added in.
    rounding : str
        The rounding mode.

    Returns
    -------
    float
        The absolute term, ``>= 0``.

    Examples
    --------
    >>> from numerics import as_format
    >>> promote_underflow(4, 1, as_format("binary64"), as_format("binary32"), "rne") > 0
    True
    >>> promote_underflow(4, 1, as_format("bfloat16"), as_format("binary32"), "rne")
    0.0
    """
    if fmt.smallest_subnormal >= promote_fmt.smallest_subnormal:
        return 0.0
    m = -(-n // block_size)
    up = unit_roundoff(promote_fmt, rounding)
    eta = promote_fmt.smallest_subnormal * (0.5 if rounding in _NEAREST else 1.0)
    return m * eta * _exp((m - 1) * math.log1p(up))


def _check_bound_options(algorithm: str, kind: str, block_size: int | None,
                         promote_fmt: Format | None) -> None:
    """ValueError for a ``kind`` other than the two, or a blocked bound without its block
    size and promotion format (what ``sum`` and ``dot`` always pass)."""
    if kind not in ("worst", "probabilistic"):
        raise ValueError(f"Got {kind=!r}, but it must be 'worst' or 'probabilistic'")
    if algorithm == "blocked" and (promote_fmt is None or block_size is None):
        raise ValueError("Got algorithm='blocked' without block_size and promote_fmt, "
                         "which its bound needs")


def _chain_factor(kind: str, k: int, u: float, n: int, confidence: float) -> float:
    if kind == "probabilistic":
        return probabilistic_factor([(k, u)], n, confidence)
    return float(g(k, u))


def sum_bound(abs_sum: np.ndarray, n: int, fmt: Format, rounding: str, algorithm: str, *,
              block_size: int | None = None, promote_fmt: Format | None = None,
              tree: object = None, kind: str = "worst", confidence: float = 0.999,
              abs_exponent: Any = 0) -> tuple[np.ndarray, float]:
    """The bound on ``|computed - exact|`` for :func:`numerics.accum.sum`.

    Returns the bound (shaped like ``abs_sum = sum |x_i|``) and its confidence.  It is
    0 where ``abs_sum`` is 0 (every term zero: every operation exact), also when the
    factor overflows to inf.  ``blocked`` adds A7's absolute term
    (:func:`promote_underflow`).

    Parameters
    ----------
    abs_sum : numpy.ndarray
        ``S = sum |x_i|`` of the rounded terms, any shape (float64).
    n : int
        Number of terms.
    fmt : Format
        The working format.
    rounding : str
        The rounding mode.
    algorithm : str
        One of :data:`numerics.accum.ALGORITHMS`.
    block_size : int, optional
        Block size for ``"pairwise"`` and ``"blocked"`` (required by the latter).
    promote_fmt : Format, optional
        The format block sums are added in, for ``"blocked"`` (required there).
    tree : nested tuple, optional
        The tree, for ``"tree"``.
    kind : {"worst", "probabilistic"}
        A worst-case bound, or Higham and Mary's probabilistic one.
    confidence : float, default 0.999
        The probability of a probabilistic bound.
    abs_exponent : int or numpy.ndarray of int, default 0
        ``S`` is ``abs_sum * 2**abs_exponent`` (a sum that would overflow float64, given
        scaled down): the bound is computed on the scaled sum and scaled back, so it is
        finite wherever its value is.

    Returns
    -------
    tuple of (numpy.ndarray, float)
        The bound, float64 shaped like ``abs_sum``, and its confidence (1.0 for a
        worst-case bound).

    Examples
    --------
    >>> from numerics import as_format
    >>> b, conf = sum_bound(np.array([4.0]), 4, as_format("bfloat16"), "rne", "recursive")
    >>> bool(b[0] > 3 * 2.0**-8 * 4.0), conf
    (True, 1.0)
    """
    u = unit_roundoff(fmt, rounding)
    _check_bound_options(algorithm, kind, block_size, promote_fmt)
    conf = confidence if kind == "probabilistic" else 1.0
    absolute = 0.0
    if algorithm == "kahan":
        factor = kahan_factor(n, u)
    elif algorithm == "neumaier":
        factor = neumaier_factor(n, u)
    elif algorithm == "blocked":
        assert promote_fmt is not None and block_size is not None
        up = unit_roundoff(promote_fmt, rounding)
        kb, nb = min(block_size, n) - 1, -(-n // block_size)
        if kind == "probabilistic":
            factor = probabilistic_factor([(kb, u), (nb, up)], n, confidence)
        else:
            factor = _expm1(kb * math.log1p(u) + nb * math.log1p(up))
        absolute = promote_underflow(n, block_size, fmt, promote_fmt, rounding)
    else:
        k = chain_length(algorithm, n, block_size=block_size, tree=tree)
        factor = _chain_factor(kind, k, u, n, confidence)
    S = np.asarray(abs_sum, np.float64)
    e = np.asarray(abs_exponent, np.int64)
    with np.errstate(all="ignore"):
        # all terms zero (S = 0): every operation is exact, the bound is 0
        b = _inflate(S * factor + np.ldexp(absolute, -e), n)
        return np.where(S == 0, 0.0, np.ldexp(b, e)), conf


def dot_bound(abs_sum: np.ndarray, tiny: np.ndarray, n: int, fmt: Format, rounding: str,
              algorithm: str, *, block_size: int | None = None,
              promote_fmt: Format | None = None, tree: object = None, kind: str = "worst",
              confidence: float = 0.999, abs_exponent: Any = 0) -> tuple[np.ndarray, float]:
    """The bound for :func:`numerics.accum.dot` (claim A8).

    ``abs_sum = sum |x_i y_i|`` (exact products); ``tiny`` counts the products below
    the smallest normal, whose rounding has absolute error at most ``eta`` (half the
    smallest subnormal for nearest, the smallest subnormal otherwise).  Chain-form
    algorithms with chain ``L``: ``g(L + 1) S + tiny * eta * (1 + u)**L``.  Kahan and
    Neumaier with factor ``K``: ``K ((1 + u) S + tiny eta) + u S + tiny eta``.  Blocked:
    ``f S + tiny eta grow`` (A7 with one more factor ``1 + u`` in ``f``) plus A7's
    absolute term for ``promote_fmt`` (:func:`promote_underflow`).  A factor that
    overflows to inf times a zero ``S`` or ``tiny`` adds 0, not NaN.

    Parameters
    ----------
    abs_sum : numpy.ndarray
        ``S = sum |x_i y_i|`` of the exact products, any shape (float64).
    tiny : numpy.ndarray
        The number of products below the smallest normal of ``fmt``, shaped like
        ``abs_sum``.
    n, fmt, rounding, algorithm, block_size, promote_fmt, tree, kind, confidence
        As for :func:`sum_bound`.
    abs_exponent : int or numpy.ndarray of int, default 0
        ``S`` is ``abs_sum * 2**abs_exponent``, as for :func:`sum_bound`.

    Returns
    -------
    tuple of (numpy.ndarray, float)
        The bound, float64 shaped like the broadcast of ``abs_sum`` and ``tiny``, and
        its confidence (1.0 for a worst-case bound).
    """
    u = unit_roundoff(fmt, rounding)
    eta = fmt.smallest_subnormal * (0.5 if rounding in _NEAREST else 1.0)
    # binary64 (A8.1): half its quantum is no float64, and ``abs_sum``, read from binary64
    # products, misses up to half a quantum of each tiny one: two quanta cover both
    eta = max(eta, 2.0**-1073)
    _check_bound_options(algorithm, kind, block_size, promote_fmt)
    conf = confidence if kind == "probabilistic" else 1.0
    S = np.asarray(abs_sum, np.float64)
    e = np.asarray(abs_exponent, np.int64)
    T = np.ldexp(np.asarray(tiny, np.float64) * eta, -e)
    with np.errstate(all="ignore"):
        if algorithm in ("kahan", "neumaier"):
            K = kahan_factor(n, u) if algorithm == "kahan" else neumaier_factor(n, u)
            b = _times((1 + u) * S + T, K) + u * S + T
        elif algorithm == "blocked":
            assert promote_fmt is not None and block_size is not None
            up = unit_roundoff(promote_fmt, rounding)
            kb, nb = min(block_size, n) - 1, -(-n // block_size)
            if kind == "probabilistic":
                f1 = probabilistic_factor([(kb + 1, u), (nb, up)], n, confidence)
            else:
                f1 = _expm1((kb + 1) * math.log1p(u) + nb * math.log1p(up))
            grow = _exp(kb * math.log1p(u) + nb * math.log1p(up))
            b = _times(S, f1) + _times(T, grow) \
                + np.ldexp(promote_underflow(n, block_size, fmt, promote_fmt, rounding), -e)
        else:
            L = chain_length(algorithm, n, block_size=block_size, tree=tree)
            if algorithm == "exact":
                L = 1
            b = _times(S, _chain_factor(kind, L + 1, u, n, confidence)) \
                + _times(T, _exp(L * math.log1p(u)))
        return np.ldexp(_inflate(b, n), e), conf

"""Exact reference for numerics.ops: Fraction arithmetic and a rounding routine of its own.

Nothing here calls numerics' encode/codec/ops: the only things taken from
``numerics.formats`` are the format's defining numbers (t, emin, emax, max,
which codes exist).  Square roots are rounded exactly by integer square roots.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from numerics.formats import Format

Oracle = Callable[[Fraction], tuple[int, bool, int]]


def _frac_oracle(x: Fraction) -> tuple[int, Oracle]:
    """floor(log2 x) and, per quantum Q, (n = floor(x/Q), exact, sign(x/Q - n - 1/2))."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1

    def oracle(q: Fraction) -> tuple[int, bool, int]:
        y = x / q
        n = math.floor(y)
        rem = y - n
        return n, rem == 0, (rem > Fraction(1, 2)) - (rem < Fraction(1, 2))

    return e, oracle


def _sqrt_oracle(w: Fraction) -> tuple[int, Oracle]:
    """The same for x = sqrt(w), using integer square roots only."""
    ew, _ = _frac_oracle(w)
    e = ew // 2

    def oracle(q: Fraction) -> tuple[int, bool, int]:
        y2 = w / (q * q)  # (x / Q)**2
        n = math.isqrt(math.floor(y2))
        exact = Fraction(n * n) == y2
        mid = Fraction(2 * n + 1, 2) ** 2
        return n, exact, (y2 > mid) - (y2 < mid)

    return e, oracle


def _round_mag(e: int, oracle: Oracle, t: int, emin: int | None, mode: str,
               bias: int = 0) -> Fraction:
    """Round a positive magnitude; mode in rtz, raz, rne, rna, rto.

    "Even" and "odd" refer to the last significand bit; with no trailing bits
    (t = 0: e8m0fnu, binary8p1) they refer to the last bit of the code, the
    exponent field, as in gfloat and the IEEE P3109 report.
    """
    binade = e if emin is None else max(e, emin)
    q = Fraction(2) ** (binade - t)
    n, exact, half = oracle(q)
    if t == 0 and n > 0:
        # n == 1 here; the parity that matters is the exponent field's.
        n_parity = (binade + bias) % 2
    else:
        n_parity = n % 2
    if mode == "rtz" or exact:
        m = n
    elif mode == "raz":
        m = n + 1
    elif mode == "rne":
        m = n + (half > 0 or (half == 0 and n_parity == 1))
    elif mode == "rna":
        m = n + (half >= 0)
    elif mode == "rto":
        m = n if n_parity == 1 else n + 1
    else:
        raise AssertionError(mode)
    return m * q


def _mag_mode(mode: str, negative: bool) -> str:
    if mode == "ru":
        return "rtz" if negative else "raz"
    if mode == "rd":
        return "raz" if negative else "rtz"
    return mode


def round_real(negative: bool, e: int, oracle: Oracle, exact_mag: Fraction | None,
               fmt: Format, mode: str, overflow: str) -> tuple[float, dict[str, bool]]:
    """Round a non-zero real (sign, exponent, oracle) into fmt; returns value and flags.

    ``exact_mag`` is the magnitude when rational (None for irrational square roots).
    flags: inexact, overflow, tiny_before, tiny_after.
    """
    t, emin = fmt.trailing_bits, fmt.emin
    mm = _mag_mode(mode, negative)
    unb = _round_mag(e, oracle, t, None, mm, fmt.bias)
    if not fmt.subnormals and e < emin:
        mag = Fraction(2) ** emin
    else:
        mag = _round_mag(e, oracle, t, emin, mm, fmt.bias)
    maxv = fmt.max_exact
    ovf = unb > maxv
    tiny_b = e < emin
    tiny_a = unb < Fraction(2) ** emin
    inexact = exact_mag is None or mag != exact_mag
    sign = -1.0 if negative else 1.0
    if mag > maxv:
        inexact = True
        to_inf = mm in ("raz", "rne", "rna")
        if overflow == "saturate" or not to_inf:
            val = sign * float(maxv)
        elif fmt.has_infinity:
            val = sign * math.inf
        elif fmt.has_nan:
            val = math.nan
        else:
            val = sign * float(maxv)
    else:
        val = sign * float(mag)
        if val == 0 and not fmt.has_negative_zero:
            val = 0.0
    if not fmt.signed and negative:
        val, inexact, ovf, tiny_b, tiny_a = math.nan, False, False, False, False
    return val, {"inexact": inexact, "overflow": ovf, "tiny_before": tiny_b,
                 "tiny_after": tiny_a}


def round_fraction(v: Fraction, fmt: Format, mode: str, overflow: str = "ieee"
                   ) -> tuple[float, dict[str, bool]]:
    """Round an exact non-zero rational."""
    e, oracle = _frac_oracle(abs(v))
    return round_real(v < 0, e, oracle, abs(v), fmt, mode, overflow)


def _special_value(x: float, fmt: Format, overflow: str) -> float:
    """What an exact special result (inf, NaN, a signed zero) becomes in fmt (encode's policy)."""
    if math.isnan(x):
        return math.nan
    if x == 0:  # an exact zero (e.g. 0 / inf, sqrt(-0)) is no overflow
        return x if fmt.has_negative_zero else 0.0
    if not fmt.signed and x < 0:
        return math.nan
    if overflow == "saturate":
        return math.copysign(fmt.max, x)
    if fmt.has_infinity:
        return x
    if fmt.has_nan:
        return math.nan
    return math.copysign(fmt.max, x)


class NoNaN(Exception):
    """An invalid operation in a format without NaN."""


def reference(op: str, args: tuple[float, ...], fmt: Format, mode: str,
              overflow: str = "ieee", tininess: str = "after"
              ) -> tuple[float, dict[str, bool]]:
    """Correctly rounded ``op(*args)`` in fmt with IEEE flags (deterministic modes)."""
    flags = {"inexact": False, "underflow": False, "overflow": False, "invalid": False,
             "divide_by_zero": False}
    if op == "sub":
        op, args = "add", (args[0], -args[1])
    isn = [math.isnan(x) for x in args]
    isi = [math.isinf(x) for x in args]
    special: float | None = None
    if op == "add":
        a, b = args
        if any(isn):
            special = math.nan
        elif isi[0] and isi[1] and a != b:
            special, flags["invalid"] = math.nan, True
        elif isi[0] or isi[1]:
            special = a if isi[0] else b
    elif op == "mul":
        a, b = args
        if any(isn):
            special = math.nan
        elif (isi[0] and b == 0) or (isi[1] and a == 0):
            special, flags["invalid"] = math.nan, True
        elif isi[0] or isi[1]:
            special = math.copysign(math.inf, a) * math.copysign(1.0, b)
    elif op == "div":
        a, b = args
        if any(isn):
            special = math.nan
        elif (isi[0] and isi[1]) or (a == 0 and b == 0):
            special, flags["invalid"] = math.nan, True
        elif isi[0]:
            special = math.copysign(math.inf, a) * math.copysign(1.0, b)
        elif isi[1]:
            special = math.copysign(0.0, a) * math.copysign(1.0, b)
        elif b == 0:
            special = math.copysign(math.inf, a) * math.copysign(1.0, b)
            flags["divide_by_zero"] = True
    elif op == "sqrt":
        (a,) = args
        if isn[0]:
            special = math.nan
        elif a < 0:
            special, flags["invalid"] = math.nan, True
        elif isi[0]:
            special = a
    elif op == "fma":
        a, b, c = args
        zero_inf = (isi[0] and b == 0) or (isi[1] and a == 0)
        if zero_inf:
            special, flags["invalid"] = math.nan, True
        elif any(isn):
            special = math.nan
        elif isi[0] or isi[1]:
            p = math.copysign(math.inf, a) * math.copysign(1.0, b)
            if isi[2] and c != p:
                special, flags["invalid"] = math.nan, True
            else:
                special = p
        elif isi[2]:
            special = c
    if special is not None:
        if special == 0 and not fmt.has_zero:  # an exact zero (x / inf) with no value
            special, flags["invalid"] = math.nan, True
        if special < 0 and not fmt.signed:  # -inf (x - inf): an unsigned format has none
            special, flags["invalid"] = math.nan, True
        if math.isnan(special) and not fmt.has_nan:
            raise NoNaN(op)
        return _special_value(special, fmt, overflow), flags

    fr = [Fraction(x) for x in args]
    sign_zero: float
    if op == "sqrt":
        w = fr[0]
        if w == 0:
            return args[0], flags  # sqrt(+-0) = +-0
        e, oracle = _sqrt_oracle(w)
        q0 = Fraction(2) ** (e - 200)  # a rational root of a float has far fewer bits
        n0, exact_root, _ = oracle(q0)
        val, f = round_real(False, e, oracle, n0 * q0 if exact_root else None, fmt, mode,
                            overflow)
    else:
        if op == "add":
            v = fr[0] + fr[1]
            zs = (args[0], args[1])
        elif op == "mul":
            v = fr[0] * fr[1]
        elif op == "div":
            v = fr[0] / fr[1]
        else:
            v = fr[0] * fr[1] + fr[2]
            pz = math.copysign(0.0, args[0]) * math.copysign(1.0, args[1]) \
                if fr[0] * fr[1] == 0 else 1.0
            zs = (pz, args[2])
        if v == 0:
            if op in ("mul", "div"):
                sign_zero = math.copysign(0.0, args[0]) * math.copysign(1.0, args[1])
            else:
                x, y = zs
                if x == 0 and y == 0 and math.copysign(1, x) == math.copysign(1, y):
                    sign_zero = x
                else:
                    sign_zero = -0.0 if mode == "rd" else 0.0
            if not fmt.has_negative_zero:
                sign_zero = 0.0
            if not fmt.has_zero:  # no value at all: NaN, or an error without NaN
                if not fmt.has_nan:
                    raise NoNaN(op)
                sign_zero = math.nan
                flags["invalid"] = True
            return sign_zero, flags
        val, f = round_fraction(v, fmt, mode, overflow)
    tiny = f["tiny_before"] if tininess == "before" else f["tiny_after"]
    flags["inexact"] = f["inexact"]
    flags["overflow"] = f["overflow"]
    flags["underflow"] = tiny and f["inexact"]
    if math.isnan(val) and not f["overflow"]:
        flags["invalid"] = True
    return val, flags


def sr_candidates(op: str, args: tuple[float, ...], fmt: Format, overflow: str = "ieee"
                  ) -> tuple[float, float, Fraction | None]:
    """(toward-zero result, away-from-zero result, exact distance fraction or None)."""
    down, _ = reference(op, args, fmt, "rtz", overflow)
    up_mode = "ru"
    fr = [Fraction(x) for x in args] if all(math.isfinite(x) for x in args) else None
    v: Fraction | None = None
    if fr is not None and op != "sqrt":
        if op == "add":
            v = fr[0] + fr[1]
        elif op == "sub":
            v = fr[0] - fr[1]
        elif op == "mul":
            v = fr[0] * fr[1]
        elif op == "div" and fr[1] != 0:
            v = fr[0] / fr[1]
        elif op == "fma":
            v = fr[0] * fr[1] + fr[2]
    neg = v is not None and v < 0
    away, _ = reference(op, args, fmt, "rd" if neg else up_mode, overflow)
    if op == "sqrt" and fr is not None and fr[0] < 0:
        away = down
    frac = None
    if v is not None and math.isfinite(down) and math.isfinite(away) and away != down:
        frac = (abs(v) - abs(Fraction(down))) / abs(Fraction(away) - Fraction(down))
    return down, away, frac


def sr_expected(op: str, args: tuple[float, ...], fmt: Format, u: int, bits: int) -> float:
    """The stochastic rounding of finite ``op(*args)`` for the ``bits``-bit draw ``u``:
    away from zero iff ``u < floor(frac * 2**bits)``, ``frac`` the exact distance from the
    toward-zero neighbour in units of the gap to the other (both neighbours finite).
    The floor is exact for square roots too: ``floor(sqrt(q)) = isqrt(floor(q))``."""
    down, away, frac = sr_candidates(op, args, fmt)
    if down == away:
        return down
    if op == "sqrt":
        gap = abs(Fraction(away) - Fraction(down))
        scaled = Fraction(args[0]) * 4**bits / (gap * gap)
        floor = math.isqrt(scaled.numerator // scaled.denominator) \
            - int(abs(Fraction(down)) * 2**bits / gap)
    else:
        assert frac is not None, (op, args)
        floor = math.floor(frac * 2**bits)
    return away if u < floor else down

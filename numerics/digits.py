"""Decimal digit strings of integers of any size.

Python refuses ``str(n)`` and ``int(text)`` beyond 4300 digits (a guard
against quadratic-time conversions of untrusted input, PEP 651's successor,
``sys.set_int_max_str_digits``).  The values this library shows exactly reach
far beyond that (``1e-5000`` has 5,000 decimal digits), so these two functions
convert in pieces of at most 4,000 digits, without touching the interpreter's
global limit.
"""

from __future__ import annotations

import operator

__all__ = ["int_to_text", "text_to_int"]

_PIECE = 4000
_BASE = 10**_PIECE


def int_to_text(n: int) -> str:
    """Decimal text of the int ``n``, any size.

    Examples
    --------
    >>> int_to_text(-120)
    '-120'
    >>> len(int_to_text(10**5000))
    5001

    A float, bool or anything else that is not an int (a numpy integer is one) raises
    TypeError.
    """
    if type(n) is not int:  # an int subclass (an IntEnum) may write itself otherwise
        n = _as_int(n)
    if n < 0:
        return "-" + int_to_text(-n)
    if n < _BASE:
        return str(n)
    pieces: list[str] = []
    while n >= _BASE:
        n, low = divmod(n, _BASE)
        pieces.append(str(low).rjust(_PIECE, "0"))
    pieces.append(str(n))
    return "".join(reversed(pieces))


def _as_int(n: object) -> int:
    """A numpy integer as an int; TypeError naming ``n`` for anything else (bool, float)."""
    if not isinstance(n, bool):
        try:
            return operator.index(n)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise TypeError(f"Got n={n!r} of type {type(n).__name__}, but it must be an int")


def text_to_int(digits: str) -> int:
    """The int written by the decimal ``digits`` (no sign, no separators), any length.

    Examples
    --------
    >>> text_to_int("00120")
    120
    >>> text_to_int("1" + "0" * 5000) == 10**5000
    True

    ``digits`` must be a str of ASCII digits ``0-9`` (the empty str is 0); anything else
    raises TypeError (not a str) or ValueError.
    """
    if not isinstance(digits, str):
        raise TypeError(f"Got digits={digits!r} of type {type(digits).__name__}, but it must "
                        "be a str of decimal digits")
    if digits and not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"Got digits={digits[:40]!r}, but it must hold only the decimal "
                         "digits 0-9")
    if not digits:
        return 0
    n = 0
    head = len(digits) % _PIECE or _PIECE
    n = int(digits[:head])
    for i in range(head, len(digits), _PIECE):
        n = n * _BASE + int(digits[i:i + _PIECE])
    return n

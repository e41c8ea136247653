"""Sub-byte packing of element codes.

Bit order
---------
Codes form one little-endian, least-significant-bit-first bit stream: code ``i`` occupies
bits ``[bits*i, bits*(i+1))`` of the stream, and stream bit ``k`` is bit ``k % 8`` (LSB = 0) of
byte ``k // 8``.  Hence

* 4-bit codes: byte ``j`` holds code ``2j`` in its low nibble and code ``2j+1`` in its high
  nibble (the NVFP4/ModelOpt checkpoint layout: even column low, odd column high);
* 6-bit codes: every 3 bytes hold 4 codes, ``w = c0 | c1 << 6 | c2 << 12 | c3 << 18`` stored as
  ``w & 0xFF, (w >> 8) & 0xFF, w >> 16``;
* 8-bit codes are copied.

The input is flattened in C order; the tail is padded with zero bits to a whole group
(1 byte for 4 bits, 3 bytes for 6 bits), and :func:`unpack` takes the code ``count`` to drop
the padding.
"""

from __future__ import annotations

import numpy as np

from numerics.dtypes import as_input

__all__ = ["pack", "unpack"]

_GROUP = {4: (2, 1), 6: (4, 3), 8: (1, 1)}  # bits -> (codes per group, bytes per group)


def _check_bits(bits: object) -> int:
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"Got {bits=}, but it must be an int (4, 6 or 8)")
    if int(bits) not in _GROUP:
        raise ValueError(f"Got {bits=}, but the only valid values are 4, 6 and 8")
    return int(bits)


def _array(value: object, name: str) -> np.ndarray:
    """``value`` read by :func:`numerics.dtypes.as_input` (a torch tensor, a masked array
    refused, a list holding a bool kept as objects rather than made 0 or 1)."""
    try:
        return as_input(value, name)
    except ValueError as err:
        if "rectangular" not in str(err):
            raise
        raise ValueError(f"Got a ragged nested sequence for {name}, but it must be a "
                         "rectangular array") from None


def pack(codes: object, bits: int) -> np.ndarray:
    """Pack ``bits``-wide codes into uint8 bytes (see the module docstring for the order).

    Parameters
    ----------
    codes : array_like of int
        Codes in ``[0, 2**bits)`` (any integer dtype); flattened in C order.
    bits : int
        4, 6 or 8 (TypeError for a non-int such as ``4.0``, ValueError for other ints).

    Returns
    -------
    numpy.ndarray of uint8
        1-D, ``ceil(n / per) * nbytes`` bytes for ``n`` codes (groups of 2 codes in 1 byte
        for 4 bits, 4 codes in 3 bytes for 6 bits), the last group zero padded.

    Raises
    ------
    TypeError
        If ``codes`` are not integers, or ``bits`` is not an int.
    ValueError
        If a code is outside ``[0, 2**bits)`` or ``bits`` is not 4, 6 or 8.

    Examples
    --------
    >>> pack(np.array([0x1, 0x2, 0x3], np.uint8), 4).tolist()
    [33, 3]
    >>> pack(np.array([1, 2, 3, 4], np.uint8), 6).tolist()  # 1 | 2<<6 | 3<<12 | 4<<18
    [129, 48, 16]
    """
    b = _check_bits(bits)
    c = _array(codes, "codes")
    if c.dtype.kind not in "ui":
        held = " (a list holding a bool or an integer beyond 64 bits)" if c.dtype.kind == "O" \
            else ""
        raise TypeError(f"Got codes of dtype {c.dtype}{held}, but they must be integers")
    c = c.ravel()
    # the range test in the codes' own dtype (a cast to int64 first wrapped uint64 codes
    # >= 2**63 to negatives, and the message reported the wrapped value)
    bad_mask = (c >= (1 << b)) if c.dtype.kind == "u" else (c < 0) | (c >= (1 << b))
    if c.size and bad_mask.any():
        bad = c[bad_mask][0]
        raise ValueError(f"Got a code {int(bad)}, but {b}-bit codes lie in [0, {(1 << b) - 1}]")
    c = c.astype(np.int64)
    per, nbytes = _GROUP[b]
    groups = -(-c.size // per)
    padded = np.zeros(groups * per, dtype=np.uint32)
    padded[: c.size] = c
    g = padded.reshape(groups, per)
    word = np.zeros(groups, dtype=np.uint32)
    for k in range(per):
        word |= g[:, k] << np.uint32(b * k)
    out = np.empty((groups, nbytes), dtype=np.uint8)
    for k in range(nbytes):
        out[:, k] = (word >> np.uint32(8 * k)) & np.uint32(0xFF)
    return out.ravel()


def unpack(data: object, bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack`: the first ``count`` codes, as uint8.

    Parameters
    ----------
    data : array_like of uint8
        Packed bytes (flattened in C order; any bytes beyond those needed are ignored).
    bits : int
        4, 6 or 8, as for :func:`pack`.
    count : int
        Number of codes to read, a non-negative int.

    Returns
    -------
    numpy.ndarray of uint8
        1-D, ``count`` codes.

    Raises
    ------
    TypeError
        If ``data`` is not uint8, or ``bits`` is not an int.
    ValueError
        If ``bits`` is not 4, 6 or 8, ``count`` is negative or not an int, or ``data``
        holds too few bytes.

    Examples
    --------
    >>> unpack(np.array([33, 3], np.uint8), 4, 3).tolist()
    [1, 2, 3]
    """
    b = _check_bits(bits)
    d = _array(data, "data")
    if d.dtype != np.uint8:
        raise TypeError(f"Got data of dtype {d.dtype}, but it must be uint8")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ValueError(f"Got {count=}, but it must be a non-negative int")
    per, nbytes = _GROUP[b]
    groups = -(-int(count) // per)
    if d.size < groups * nbytes:
        raise ValueError(f"Got {d.size} bytes, but {count} codes of {b} bits need "
                         f"{groups * nbytes}")
    g = d.ravel()[: groups * nbytes].reshape(groups, nbytes).astype(np.uint32)
    word = np.zeros(groups, dtype=np.uint32)
    for k in range(nbytes):
        word |= g[:, k] << np.uint32(8 * k)
    out = np.empty((groups, per), dtype=np.uint8)
    for k in range(per):
        out[:, k] = (word >> np.uint32(b * k)) & np.uint32((1 << b) - 1)
    return out.ravel()[: int(count)]

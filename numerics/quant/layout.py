"""Block-scale layouts: the swizzled 128x4 tile layout of cuBLAS and torchao.

Blackwell's block-scaled MMA reads the scale factors of an ``(M, K)`` operand (one scale
per block of 16 or 32 elements along ``K``, so an ``(M, K // block)`` scale matrix) in a
swizzled layout (cuBLAS documentation, "1D Block Scaling Factors Layout"; torchao
``prototype/mx_formats/utils.py::to_blocked``).  :func:`to_blocked` writes it and
:func:`from_blocked` reads it back.

The tile order, in words
------------------------
Pad the scale matrix with zeros to a multiple of 128 rows and 4 columns, and cut it into
tiles of 128 rows by 4 columns.  The tiles follow each other in row-major order of tiles:
the first 128 rows' tiles left to right (columns 0-3, 4-7, ...), then the next 128 rows'.
Each tile occupies 512 consecutive entries, as 32 lines of 16.  Line ``j`` (0..31) of a tile
holds the tile rows ``j``, ``j + 32``, ``j + 64``, ``j + 96``, in that order, each with its 4
columns::

    line j:  [r=j  c0 c1 c2 c3 | r=j+32  c0..c3 | r=j+64  c0..c3 | r=j+96  c0..c3]

so tile entry ``(r, c)`` lands at offset ``(r % 32) * 16 + (r // 32) * 4 + c``, and scale
``(row, col)`` of the matrix at::

    ((row // 128) * ceil(W / 4) + col // 4) * 512 + (row % 32) * 16 + ((row % 128) // 32) * 4
    + col % 4

(one 16-byte line gives the four 32-row warps' quarters of a 128-row MMA tile the scales
they need at once).
"""

from __future__ import annotations

import numpy as np

from numerics.quant.quantized import as_real_array

__all__ = ["blocked_shape", "from_blocked", "to_blocked"]

_TILE_ROWS = 128
_TILE_COLS = 4


def blocked_shape(rows: int, cols: int) -> tuple[int, int]:
    """``(32 * ceil(rows / 128), 16 * ceil(cols / 4))``: the 2-D shape of the swizzled layout
    (torchao's view of it; :func:`to_blocked` returns it flattened).

    Parameters
    ----------
    rows, cols : int
        The scale matrix's shape ``(H, W)``, non-negative ints.

    Returns
    -------
    tuple of (int, int)
        The padded, swizzled 2-D shape.

    Raises
    ------
    ValueError
        If ``rows`` or ``cols`` is not a non-negative int.

    Examples
    --------
    >>> blocked_shape(4096, 4096 // 32)
    (1024, 512)
    """
    _check_dim("rows", rows)
    _check_dim("cols", cols)
    return 32 * -(-rows // _TILE_ROWS), 16 * -(-cols // _TILE_COLS)


def to_blocked(scales: object) -> np.ndarray:
    """The swizzled 128x4 tile layout of a 2-D scale matrix, flattened (module docstring).

    Parameters
    ----------
    scales : array_like, 2-D
        ``(H, W)`` block scales or their codes (any dtype; E8M0/E4M3 codes are uint8).

    Returns
    -------
    ndarray
        1-D, ``512 * ceil(H / 128) * ceil(W / 4)`` entries of the input's dtype, zero padded.

    Examples
    --------
    >>> s = np.arange(128 * 4, dtype=np.int64).reshape(128, 4)  # s[r, c] = 4 r + c
    >>> to_blocked(s)[:20].tolist()  # rows 0, 32, 64, 96, then row 1
    [0, 1, 2, 3, 128, 129, 130, 131, 256, 257, 258, 259, 384, 385, 386, 387, 4, 5, 6, 7]
    """
    arr = as_real_array(scales, name="scales") if not isinstance(scales, np.ndarray) \
        else scales
    if arr.ndim != 2:
        raise ValueError(f"Got scales of shape {arr.shape}, but to_blocked takes a 2-D "
                         "(rows, blocks) matrix (reshape leading axes into rows)")
    rows, cols = arr.shape
    nrb, ncb = -(-rows // _TILE_ROWS), -(-cols // _TILE_COLS)
    padded = np.zeros((nrb * _TILE_ROWS, ncb * _TILE_COLS), dtype=arr.dtype)
    padded[:rows, :cols] = arr
    # (rb, i, j, cb, c) with row = 128 rb + 32 i + j  ->  (rb, cb, j, i, c)
    tiles = padded.reshape(nrb, 4, 32, ncb, _TILE_COLS).transpose(0, 3, 2, 1, 4)
    return np.ascontiguousarray(tiles).reshape(-1)


def from_blocked(blocked: object, rows: int, cols: int) -> np.ndarray:
    """Inverse of :func:`to_blocked`: the ``(rows, cols)`` scale matrix (padding dropped).

    Parameters
    ----------
    blocked : array_like
        The blocked layout, ``512 * ceil(rows / 128) * ceil(cols / 4)`` entries (any
        shape: it is read in C order).
    rows, cols : int
        The scale matrix's shape, non-negative ints.

    Returns
    -------
    numpy.ndarray
        ``(rows, cols)``, C-contiguous, of the input's dtype.

    Raises
    ------
    ValueError
        If ``rows`` or ``cols`` is not a non-negative int, or ``blocked`` has another
        number of entries.

    Examples
    --------
    >>> s = np.arange(130 * 5, dtype=np.uint16).reshape(130, 5)
    >>> bool(np.array_equal(from_blocked(to_blocked(s), 130, 5), s))
    True
    """
    _check_dim("rows", rows)
    _check_dim("cols", cols)
    arr = np.asarray(blocked) if isinstance(blocked, np.ndarray) else \
        as_real_array(blocked, name="blocked")
    nrb, ncb = -(-rows // _TILE_ROWS), -(-cols // _TILE_COLS)
    if arr.size != nrb * ncb * 512:
        raise ValueError(f"Got blocked with {arr.size} entries, but a ({rows}, {cols}) scale "
                         f"matrix has {nrb * ncb * 512} in the blocked layout")
    tiles = arr.reshape(nrb, ncb, 32, 4, _TILE_COLS).transpose(0, 3, 2, 1, 4)
    return np.ascontiguousarray(tiles.reshape(nrb * _TILE_ROWS, ncb * _TILE_COLS)[:rows, :cols])


def _check_dim(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"Got {name}={value!r}, but it must be a non-negative int")

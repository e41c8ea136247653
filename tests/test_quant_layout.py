"""The swizzled 128x4 block-scale layout: torchao's to_blocked bit for bit, round trips, and
the documented offset formula."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.quant import blocked_shape, from_blocked, mx, nvfp4, to_blocked


def _offset(row: int, col: int, cols: int) -> int:
    """The module docstring's formula, written out independently."""
    col_tiles = -(-cols // 4)
    tile = (row // 128) * col_tiles + col // 4
    return tile * 512 + (row % 32) * 16 + ((row % 128) // 32) * 4 + col % 4


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 300), cols=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_to_blocked_follows_the_documented_offsets_and_round_trips(rows: int, cols: int,
                                                                    seed: int) -> None:
    s = np.random.default_rng(seed).integers(1, 256, (rows, cols)).astype(np.uint8)
    b = to_blocked(s)
    nrb, ncb = -(-rows // 128), -(-cols // 4)
    assert b.shape == (nrb * ncb * 512,) and b.dtype == np.uint8
    assert b.size == int(np.prod(blocked_shape(rows, cols)))
    for r in range(rows):
        for c in range(cols):
            assert b[_offset(r, c, cols)] == s[r, c]
    assert int(np.count_nonzero(b)) == rows * cols  # the padding is zero
    np.testing.assert_array_equal(from_blocked(b, rows, cols), s)


def _torchao_utils() -> Any:
    pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip("torchao.prototype.mx_formats.utils")


@pytest.mark.parametrize("shape", [(128, 4), (130, 5), (1, 1), (256, 8), (300, 17),
                                   (4096, 128), (33, 3)])
def test_to_blocked_equals_torchao(shape: tuple[int, int]) -> None:
    """Bit-identical to torchao's to_blocked on random scale matrices; from_blocked is the
    inverse of both."""
    utils = _torchao_utils()
    import torch
    s = np.random.default_rng(shape[0] * 31 + shape[1]).integers(0, 256, shape).astype(np.uint8)
    theirs = utils.to_blocked(torch.from_numpy(s)).numpy()
    np.testing.assert_array_equal(to_blocked(s), theirs)
    np.testing.assert_array_equal(from_blocked(theirs, *shape), s)
    back = utils.from_blocked(torch.from_numpy(to_blocked(s)), *shape).numpy()
    np.testing.assert_array_equal(back, s)


def test_blocked_scales_of_mx_and_nvfp4() -> None:
    """The scale codes of an MX or NVFP4 operand quantized along K go straight in."""
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    q = mx(x, "mxfp8_e4m3")
    b = to_blocked(q.scale_codes)
    assert b.size == int(np.prod(blocked_shape(256, 8)))
    np.testing.assert_array_equal(from_blocked(b, 256, 8), q.scale_codes)
    n = nvfp4(x)
    np.testing.assert_array_equal(from_blocked(to_blocked(n.scale_codes), 256, 16),
                                  n.scale_codes)


def test_layout_bad_input() -> None:
    with pytest.raises(ValueError, match="2-D"):
        to_blocked(np.zeros((2, 3, 4), np.uint8))
    with pytest.raises(ValueError, match="entries"):
        from_blocked(np.zeros(100, np.uint8), 128, 4)
    with pytest.raises(ValueError, match="rows=-1"):
        from_blocked(np.zeros(512, np.uint8), -1, 4)
    with pytest.raises(ValueError, match="ragged"):
        to_blocked([[1, 2], [3]])

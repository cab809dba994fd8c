"""Packed rows (ppdm_dask.data.packed): the varint byte stream gives back every block
exactly (compiled and numpy coders agree byte for byte), decodes straight into the same bitsets
as the CSR route, and the planned size bounds the real one on sparse baskets."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import Key
from ppdm_dask.data import packed as P
from ppdm_dask.data.quest import quest
from ppdm_dask.mining import _kernels as K


def _block(seed, n_rows, n_cols, per_row):
    rng = np.random.default_rng(seed)
    lengths = rng.poisson(per_row, n_rows).clip(0, n_cols)
    rows = [np.sort(rng.choice(n_cols, size=k, replace=False)) for k in lengths]
    indptr = np.r_[0, np.cumsum(lengths)]
    indices = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, np.int32)
    return sp.csr_array((np.ones(indices.size, np.int32), indices, indptr.astype(np.int32)), shape=(n_rows, n_cols))


CASES = [
    (0, 0, 5, 1),
    (1, 1, 1, 1),
    (2, 40, 3, 2),
    (3, 300, 1000, 10),
    (4, 50, 70_000, 6),
    (5, 20, 3_000_000, 4),
    (6, 10, 400, 300),
]  # empty, one cell, dense, baskets, wide, huge ids, long rows


@pytest.mark.parametrize("seed,n_rows,n_cols,per_row", CASES)
def test_round_trip_and_coders_agree(seed, n_rows, n_cols, per_row):
    x = _block(seed, n_rows, n_cols, per_row)
    fast, slow = P.pack_rows(x), P.pack_rows(x, engine="numpy")
    np.testing.assert_array_equal(fast.data, slow.data)
    assert (fast.n_rows, fast.n_cols) == x.shape
    for engine in ("auto", "numpy"):  # the size a plan uses, before packing
        assert P.packed_nbytes(x, engine=engine) == fast.data.nbytes
    for engine in ("auto", "numpy"):
        y = P.unpack_rows(fast, engine=engine)
        assert y.shape == x.shape
        np.testing.assert_array_equal(y.indptr, x.indptr)
        np.testing.assert_array_equal(y.indices, x.indices)
        np.testing.assert_array_equal(y.data, 1)


@pytest.mark.parametrize("seed,n_rows,n_cols,per_row", CASES)
def test_selected_rows_equal_the_rows_of_the_whole_block(seed, n_rows, n_cols, per_row):
    x = _block(seed, n_rows, n_cols, per_row)
    packed = P.pack_rows(x)
    rng = np.random.default_rng(seed)
    for rows in (
        np.arange(n_rows),
        np.sort(rng.choice(n_rows, size=n_rows // 3, replace=False)),
        np.array([], dtype=np.int64),
        np.array([n_rows - 1]) if n_rows else np.array([], dtype=np.int64),
    ):
        want = sp.csr_array(x[rows]) if rows.size else sp.csr_array((0, n_cols), dtype=np.int32)
        for engine in ("auto", "numpy"):
            got = P.unpack_rows(packed, rows, engine=engine)
            assert got.shape == (rows.size, n_cols)
            np.testing.assert_array_equal(got.indptr, want.indptr)
            np.testing.assert_array_equal(got.indices, want.indices)
    if n_rows > 1:
        with pytest.raises(ValueError, match="ascending"):
            P.unpack_rows(packed, np.array([1, 0]))


def test_hand_coded_bytes():
    # rows {0, 2, 130} and {}: length 3, gaps 0, 1, 127 (one byte each); then length 0
    x = sp.csr_array((np.ones(3, np.int32), np.array([0, 2, 130], np.int32), np.array([0, 3, 3], np.int32)), shape=(2, 200))
    assert P.pack_rows(x).data.tolist() == [3, 0, 1, 127, 0]
    # a gap of 200 = 0b1_1001000 takes two bytes, low seven bits first
    x = sp.csr_array((np.ones(1, np.int32), np.array([200], np.int32), np.array([0, 1], np.int32)), shape=(1, 300))
    assert P.pack_rows(x).data.tolist() == [1, 0x80 | (200 & 0x7F), 200 >> 7]


@pytest.mark.parametrize("seed,n_rows,n_cols,per_row", CASES[1:])
def test_bitsets_straight_from_packed_rows(seed, n_rows, n_cols, per_row):
    x = _block(seed, n_rows, n_cols, per_row)
    items = np.unique(x.indices)[::2].astype(np.int32)
    np.testing.assert_array_equal(P.packed_bitsets(P.pack_rows(x), items), K.build_bitsets(x, items, engine="numpy"))


def test_planned_size_bounds_quest_baskets():
    tx = quest("T10.I4.D20K.N1K", key=Key(2))
    x = tx.compute(progress=False)
    packed = P.pack_rows(x)
    planned = P.packed_bytes_estimate(x.nnz, x.shape[0], x.shape[1])
    assert packed.data.nbytes <= planned
    assert packed.data.nbytes < 2 * x.nnz  # about 1.3 bytes per entry, against 8 in CSR

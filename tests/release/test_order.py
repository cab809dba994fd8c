"""The keyed row order: independent of the partitioning, unlinkable without the key,
reproducible with it."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from scipy.stats import spearmanr

from ppdm_dask.random import BLOCK_ROWS, Key
from ppdm_dask.release.order import BlockOps, bucket_of, n_files, output_positions, row_keys, shuffle

OPS = BlockOps(len, lambda b, i: b[i], lambda bs: np.concatenate(bs))


def _run(x: np.ndarray, parts: int, key: Key, n_out: int) -> list[np.ndarray]:
    blocks = np.array_split(x, parts)
    out = shuffle([dask.delayed(b) for b in blocks], [len(b) for b in blocks], key, n_out, OPS, name="t")
    return list(dask.compute(*out, scheduler="sync"))


def test_row_keys_depend_on_global_row_only():
    key = Key(11)
    whole = row_keys(key, 0, 3 * BLOCK_ROWS + 17)
    # any cut of the rows gives the same keys (blocks straddled on purpose)
    cuts = [0, 5, BLOCK_ROWS - 1, BLOCK_ROWS + 3, 2 * BLOCK_ROWS + 100, 3 * BLOCK_ROWS + 17]
    pieces = [row_keys(key, a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    assert np.array_equal(np.concatenate(pieces), whole)
    assert not np.array_equal(row_keys(Key(12), 0, 1000), whole[:1000])
    assert len(np.unique(whole)) == whole.size  # 64-bit keys: no ties here


def test_buckets_exact_and_uniform():
    keys = np.array([0, 2**63, 2**64 - 1], dtype=np.uint64)
    assert bucket_of(keys, 4).tolist() == [0, 2, 3]
    assert bucket_of(keys, 1).tolist() == [0, 0, 0]
    counts = np.bincount(bucket_of(row_keys(Key(3), 0, 100_000), 10), minlength=10)
    assert counts.min() > 9_500 and counts.max() < 10_500
    assert n_files(0, 10) == 1 and n_files(10, 10) == 1 and n_files(11, 10) == 2


@pytest.mark.parametrize("n_out", [1, 3])
def test_same_key_same_order_for_any_partitioning(n_out):
    x = np.arange(20_000)
    key = Key(2024)
    ref = _run(x, 1, key, n_out)
    for parts in (2, 4, 7):
        got = _run(x, parts, key, n_out)
        assert all(np.array_equal(a, b) for a, b in zip(ref, got))
    assert sorted(np.concatenate(ref).tolist()) == x.tolist()  # a permutation: nothing lost or doubled
    other = _run(x, 1, Key(2025), n_out)
    assert not np.array_equal(np.concatenate(other), np.concatenate(ref))


def test_order_unlinkable_and_inverted_by_the_owner():
    x = np.arange(50_000)
    key = Key(99)
    out = np.concatenate(_run(x, 5, key, 4))
    rho = spearmanr(out, np.arange(out.size)).statistic
    assert abs(rho) < 0.05
    # the owner of the key recovers where every input row went
    pos = output_positions(key, x.size, 4)
    assert np.array_equal(out[pos], x)

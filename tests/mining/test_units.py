"""Counting units (ppdm_dask.mining.units): the plan by hand, the concatenation against scipy, and
mining on units equal to brute force whatever the grouping."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.mining import apriori
from ppdm_dask.mining.units import MIN_UNIT_ROWS, block_bytes, concat_rows, plan_units

from .test_apriori import brute_force


def test_small_blocks_form_one_unit_when_the_threshold_is_low():
    # 16 blocks of 1,000 rows, min_count 40: a unit wants all 16,000 rows (40 < 100)
    plan = plan_units([1000] * 16, [5000] * 16, 40, min_local_count=100)
    assert plan.units == [list(range(16))] and plan.rows == (16000,)
    assert plan.moved_bytes == 15 * int(block_bytes(1000, 5000))
    assert "16 blocks searched as 1 unit(s)" in plan.reason and "scaled thresholds 40-40" in plan.reason


def test_units_reach_the_rows_a_scaled_threshold_needs():
    # N = 400,000, min_count 1,000: 100 needs 40,000 rows; MIN_UNIT_ROWS asks 32,768 -> 40,000
    plan = plan_units([10_000] * 40, [10] * 40, 1000, min_local_count=100)
    assert all(len(u) == 4 for u in plan.units) and len(plan.units) == 10
    assert min(-(-1000 * r // 400_000) for r in plan.rows) >= 100


def test_large_blocks_stay_apart_and_the_byte_bound_holds():
    plan = plan_units([100_000] * 4, [10**6] * 4, 10, min_local_count=100)
    assert plan.units == [[0, 1, 2, 3]]  # 4 x 8 MB fits 128 MiB
    plan = plan_units([100_000] * 4, [10**6] * 4, 10, min_local_count=100, max_bytes=17e6)
    assert plan.units == [[0, 1], [2, 3]]
    assert all(block_bytes([100_000] * len(u), [10**6] * len(u)).sum() <= 17e6 for u in plan.units)
    plan = plan_units([MIN_UNIT_ROWS * 2] * 3, [1] * 3, 10**6, min_local_count=100)
    assert plan.units == [[0], [1], [2]] and "one unit each" in plan.reason and not plan.coalesced


def test_a_short_remainder_joins_the_last_unit():
    plan = plan_units([30_000, 30_000, 30_000, 5_000], [1] * 4, 10**5, min_local_count=100)
    assert plan.units == [[0, 1], [2, 3]]  # [3] alone (5,000 rows) would be below the rows wanted


def test_concat_rows_equals_scipy_vstack():
    rng = np.random.default_rng(1)
    mats = [sp.random_array((n, 9), density=0.3, random_state=rng, format="csr").astype(bool).astype(np.int32) for n in (3, 0, 5)]
    mats = [sp.csr_array((m.data, m.indices.astype(np.int32), m.indptr.astype(np.int32)), shape=m.shape) for m in mats]
    sliced = mats[2][1:4]  # a row slice: indptr need not start at 0 in general
    got = concat_rows(mats[0], mats[1], sliced)
    want = sp.vstack([mats[0], mats[1], sliced], format="csr")
    assert (got != want).nnz == 0 and got.shape == want.shape
    assert got.indices.dtype == np.int32 and got.indptr.dtype == np.int32


@pytest.mark.parametrize("nparts", [1, 3, 8, 16])
def test_mining_on_units_equals_brute_force(nparts):
    rng = np.random.default_rng(nparts)
    rows = [list(np.flatnonzero(rng.random(12) < 0.4)) for _ in range(300)]
    tx = TransactionArray.from_lists(rows, npartitions=nparts)
    want = brute_force(rows, 9)
    stats: list[dict] = []
    fi = apriori(tx, 9, on_level=stats.append, progress=False)
    assert fi.as_dict() == want
    assert apriori(tx, 9, coalesce=False, progress=False).as_dict() == want
    units = stats[-1]["units"]
    assert ("1 unit(s) of 300-300 rows" in units) if nparts > 1 else units == "one block"

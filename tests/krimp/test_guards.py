"""The KRIMP miner's guards: the candidates a database surely has are bounded before mining, and
the miner's per-level tables are sized by the deepest level it can reach (frequent items of a
row, max_len, and in closed mode the rows above min-support), not by the longest row."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from ppdm_dask.cli.flags import cli_message
from ppdm_dask.errors import ResultTooLargeError
from ppdm_dask.krimp import candidates as C
from ppdm_dask.krimp import mine_candidates
from ppdm_dask.krimp._kernels import as_database


def _brute(rows, minsup, closed, max_len):
    counts: Counter = Counter()
    for r in rows:
        s = sorted(set(r))
        for k in range(2, len(s) + 1):
            counts.update(frozenset(c) for c in itertools.combinations(s, k))
    out = {x: c for x, c in counts.items() if c >= minsup}
    sets = [frozenset(r) for r in rows]
    if closed:
        out = {x: c for x, c in out.items() if frozenset.intersection(*[s for s in sets if x <= s]) == x}
        root = frozenset.intersection(*sets)
        if len(root) >= 2 and len(rows) >= minsup:
            out[root] = len(rows)
    return {x: c for x, c in out.items() if max_len is None or len(x) <= max_len}


@pytest.mark.parametrize("seed", range(40))
def test_few_rows_many_items_vs_brute_force(seed):
    """Few, long rows: the closed miner's depth is bounded by the rows, not the row length."""
    rng = random.Random(seed)
    items = rng.randint(4, 13)
    rows = [sorted(rng.sample(range(1, items + 1), rng.randint(1, items))) for _ in range(rng.randint(1, 5))]
    rows += [rows[0]] * rng.randint(0, 2)
    for minsup in (1, 2, 3):
        for closed in (False, True):
            for max_len in (None, 2, 4):
                c = mine_candidates(rows, minsup, closed=closed, max_len=max_len, max_candidates=None)
                got = {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)}
                assert got == _brute(rows, minsup, closed, max_len), (rows, minsup, closed, max_len)


def test_depth_is_bounded_by_frequent_items_and_rows():
    d = as_database([list(range(1, 1001)), [1, 2, 3], [2, 3, 4]])
    assert C._max_depth(d, 1, False, 0) == 1000
    assert C._max_depth(d, 2, False, 0) == 4  # items 1-4 only are in 2 rows
    assert C._max_depth(d, 1, False, 3) == 3
    assert C._max_depth(d, 1, True, 0) == 3  # closed: 3 rows, support falls at every level


def test_floor_counts_exclusions_and_max_len():
    row = list(range(1, 31))  # 2^30 - 31 subsets of 2 or more items
    with pytest.raises(ResultTooLargeError, match="transaction of 30 items") as e:
        mine_candidates([row, [1, 2]], 1)
    assert "refused before mining" in str(e.value) and "--max-candidates" in cli_message(e.value)
    # a max_len that keeps them under the bound: C(30, 2) + C(30, 3) = 4,495 candidates
    assert len(mine_candidates([row, [1, 2]], 1, max_len=3)) == 4495
    # closed candidates are not bounded by it (here: one closed set per distinct row)
    assert len(mine_candidates([row, [1, 2]], 1, closed=True)) == 2
    # the floor is a lower bound: never refuses what fits (2^20 subsets, bound 2^21)
    assert len(mine_candidates([list(range(20))], 1, max_candidates=2**21)) == 2**20 - 21
    # one item of each excluded combination is left out of the bound: 19 items, 2^19 - 20
    # subsets; the true count, 786,411 (no set holding both 1 and 2), fits a bound of exactly that
    c = mine_candidates([list(range(1, 21))], 1, exclude=[[1, 2]], max_candidates=786_411)
    assert len(c) == 786_411
    with pytest.raises(ResultTooLargeError, match="transaction of 30 items"):
        mine_candidates([row], 1, exclude=[[1, 2]])


def test_tables_that_do_not_fit_are_refused(monkeypatch):
    import importlib

    G = importlib.import_module("ppdm_dask.mining.guards")
    monkeypatch.setattr(G, "available_bytes", lambda: 2**20)  # 1 MiB "available"
    with pytest.raises(ResultTooLargeError, match="candidate miner's tables for 3,000 items, 3 rows") as e:
        mine_candidates([list(range(3000)), [1, 2], [2, 3]], 2, closed=True)
    assert "--max-len" in cli_message(e.value)

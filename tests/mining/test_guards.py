"""The candidate guard of Apriori and EMASK-Apriori: a level's candidates are bounded before they
are built (the prefix-join pairs of :func:`join_count`), with their memory in the error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask import TransactionArray
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.emask import mine
from ppdm_dask.errors import ResultTooLargeError
from ppdm_dask.mining import apriori
from ppdm_dask.mining.candidates import apriori_gen, join_count
from ppdm_dask.mining.guards import candidate_bytes, check_candidates


@given(st.integers(1, 4), st.lists(st.lists(st.integers(0, 9), min_size=4, max_size=4), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_join_count_bounds_apriori_gen(width, draws):
    frequent = np.unique(np.sort(np.array([d[:width] for d in draws]), axis=1), axis=0)
    frequent = frequent[np.all(np.diff(frequent, axis=1) > 0, axis=1)] if width > 1 else frequent
    frequent = np.unique(frequent, axis=0).astype(np.int32)
    if frequent.shape[0] == 0:
        return
    cands, _ = apriori_gen(frequent)
    n = join_count(frequent)
    assert n >= cands.shape[0]
    prefixes = {}
    for row in frequent.tolist():
        prefixes[tuple(row[:-1])] = prefixes.get(tuple(row[:-1]), 0) + 1
    assert n == sum(g * (g - 1) // 2 for g in prefixes.values())  # exactly the joined pairs


def test_guard_fires_before_the_level_is_built():
    # 3 rows, one of 30 items, min-count 1: level k has C(30, k) candidates (level 4: 27,405)
    tx = TransactionArray.from_lists([list(range(30)), [0, 1, 2], [1, 2, 3]], npartitions=1)
    levels = []
    with pytest.raises(
        ResultTooLargeError, match=r"level 4 would build up to 27,405 candidate itemsets \(about [\d.,]+ MiB"
    ) as e:
        apriori(tx, 1, max_candidates=20_000, on_level=lambda st: levels.append(st["length"]), progress=False)
    assert levels == [1, 2, 3] and "max_candidates" in str(e.value) and "--max-candidates" in cli_message(e.value)
    levels.clear()
    with pytest.raises(ResultTooLargeError, match="level 4 would build up to 27,405"):
        mine(tx, 1.0, 1.0, 1, max_candidates=20_000, on_level=lambda st: levels.append(st["length"]), progress=False)
    assert levels == [1, 2, 3]
    # under the bound: the same run completes (2^30 is not reached: max_length)
    assert len(apriori(tx, 1, max_length=3, max_candidates=20_000, progress=False)) == 30 + 435 + 4060


def test_guard_memory_branch():
    # within the count bound, but more than half the memory said to be available
    need = candidate_bytes(1_000_000, 5)
    with pytest.raises(ResultTooLargeError, match="more than 50% of the"):
        check_candidates(1_000_000, 5, None, memory=need)
    check_candidates(1_000_000, 5, None, memory=4 * need)  # fits
    with pytest.raises(ResultTooLargeError, match="over the bound of 999,999"):
        check_candidates(1_000_000, 5, 999_999, memory=4 * need)

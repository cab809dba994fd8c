"""The partition strategy (ppdm_dask.mining.partition) and the strategy choice
(ppdm_dask.mining.strategy): exact against brute force and pyfim, independent of the
partitioning and of the scheduler; the bound falls back to level-wise."""

from __future__ import annotations

import json
import warnings

import dask
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask import TransactionArray
from ppdm_dask.errors import DuplicateItemsWarning, InvalidParameter
from ppdm_dask.mining import ResultTooLargeError, apriori
from ppdm_dask.mining import _eclat_kernels as E
from ppdm_dask.mining.strategy import choose_strategy

from .test_apriori import brute_force
from .test_reference import _assert_same_itemsets, _min_count, _norm, _pyfim_reference, _read, _reference_transactions

pytestmark = pytest.mark.skipif(not E.available(), reason="numba not installed")


def _tx(rows, nparts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicateItemsWarning)
        return TransactionArray.from_lists(rows, npartitions=nparts)


def _strategies(fi) -> set[str]:
    return {s["strategy"] for s in fi.level_stats if s["length"] >= 3}


@given(
    st.lists(st.lists(st.integers(0, 11), max_size=8), min_size=1, max_size=60),
    st.integers(1, 6),
    st.integers(1, 5),
    st.booleans(),
)
@settings(max_examples=100, deadline=None)
def test_partition_equals_brute_force_sparse(rows, min_count, nparts, coalesce):
    # coalesce=False: one local search per block and the count pass (the blocks are tiny)
    min_count = min(min_count, len(rows))
    fi = apriori(_tx(rows, nparts), min_count, strategy="partition", coalesce=coalesce, progress=False)
    assert fi.as_dict() == brute_force(rows, min_count)


@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.floats(0.45, 0.9), st.integers(8, 13))
@settings(max_examples=40, deadline=None)
def test_partition_equals_brute_force_dense(seed, nparts, density, n_items):
    coalesce = bool(seed % 2)
    rng = np.random.default_rng(seed)
    rows = [list(np.flatnonzero(rng.random(n_items) < density)) for _ in range(int(rng.integers(20, 120)))]
    min_count = max(1, int(len(rows) * rng.uniform(0.2, 0.6)))
    want = brute_force(rows, min_count)
    fi = apriori(_tx(rows, nparts), min_count, strategy="partition", coalesce=coalesce, progress=False)
    assert fi.as_dict() == want
    assert apriori(
        _tx(rows, nparts), min_count, strategy="partition", max_length=4, coalesce=coalesce, progress=False
    ).as_dict() == {s: c for s, c in want.items() if len(s) <= 4}


def test_results_do_not_depend_on_partitions_or_strategy():
    rng = np.random.default_rng(3)
    # blocks that differ: the first half denser on items 0..6, so local results differ and
    # the second pass has itemsets to count
    rows = [list(np.flatnonzero(np.r_[rng.random(7) < (0.8 if i < 200 else 0.45), rng.random(9) < 0.45])) for i in range(400)]
    want = brute_force(rows, 60)
    for nparts in (1, 2, 4, 7):
        for strategy in ("partition", "levelwise", "auto"):
            for coalesce in (True, False):
                fi = apriori(_tx(rows, nparts), 60, strategy=strategy, coalesce=coalesce, progress=False)
                assert fi.as_dict() == want, (nparts, strategy, coalesce)
    fi = apriori(_tx(rows, 2), 60, strategy="partition", coalesce=False, progress=False)
    lvl3 = next(s for s in fi.level_stats if s["length"] == 3)
    assert lvl3["strategy"] == "partition" and lvl3["passes"] == 2 and lvl3["recounted"] > 0
    later = [s for s in fi.level_stats if s["length"] > 3]
    assert later and all(s["counted_with"] == 3 for s in later)


def test_bound_falls_back_to_levelwise(monkeypatch):
    import importlib

    A = importlib.import_module("ppdm_dask.mining.apriori")  # the module (the package exports the function)
    rng = np.random.default_rng(4)
    rows = [list(np.flatnonzero(rng.random(12) < 0.6)) for _ in range(120)]
    want = brute_force(rows, 20)
    monkeypatch.setattr(A, "LOCAL_MAX_ITEMSETS", 10)
    for nparts in (1, 3):
        fi = apriori(_tx(rows, nparts), 20, strategy="partition", coalesce=False, progress=False)
        assert fi.as_dict() == want
        assert _strategies(fi) == {"levelwise"}
        assert "local search passed 10 itemsets" in fi.level_stats[-1]["strategy_reason"]


def test_guards_apply_to_the_partition_strategy():
    rows = [list(range(14))] * 30
    with pytest.raises(ResultTooLargeError):
        apriori(_tx(rows, 1), 1, strategy="partition", max_itemsets=5000, progress=False)
    with pytest.raises(InvalidParameter, match="strategy"):
        apriori(_tx(rows, 1), 1, strategy="depth-first", progress=False)


@pytest.mark.parametrize("memory_plan", ["persist", "packed", "stream"])
def test_memory_plans(memory_plan):
    rng = np.random.default_rng(6)
    rows = [list(np.flatnonzero(rng.random(12) < 0.6)) for _ in range(150)]
    fi = apriori(_tx(rows, 3), 30, strategy="partition", memory_plan=memory_plan, coalesce=False, progress=False)
    assert fi.as_dict() == brute_force(rows, 30)
    assert _strategies(fi) == {"partition"}


def test_cost_model_choices():
    dense = np.array([[a, b] for a in range(20) for b in range(a + 1, 20)], np.int32)  # every pair frequent: a deep search
    c = choose_strategy("auto", dense, [8124], 1625, None, 20)
    assert c.strategy == "partition" and "level-wise" in c.reason
    # several blocks at a low scaled threshold: local searches could explode
    c = choose_strategy("auto", dense, [15000] * 4, 60, None, 20)
    assert c.strategy == "levelwise" and "scaled threshold" in c.reason
    # a few pairs, no candidates of length 3: nothing to gain
    assert choose_strategy("auto", np.array([[0, 1], [2, 3]], np.int32), [1000], 10, None, 4).strategy == "levelwise"
    # a level-wise search that ends within one pass costs no more passes
    chain = np.array([[0, 1], [0, 2], [1, 2]], np.int32)
    c = choose_strategy("auto", chain, [10**6], 10, None, 3)
    assert "(the end)" in c.reason
    assert choose_strategy("levelwise", dense, [8124], 1625, None, 20).strategy == "levelwise"


def test_auto_picks_partition_on_dense_and_levelwise_on_small_blocks_kept_apart():
    rng = np.random.default_rng(9)
    rows = [list(np.flatnonzero(rng.random(14) < 0.7)) for _ in range(400)]
    want = brute_force(rows, 120)
    fi = apriori(_tx(rows, 1), 120, progress=False)
    assert fi.as_dict() == want and _strategies(fi) == {"partition"}
    fi = apriori(_tx(rows, 4), 120, coalesce=False, progress=False)  # scaled threshold 30 < 100
    assert fi.as_dict() == want and _strategies(fi) == {"levelwise"}
    fi = apriori(_tx(rows, 4), 120, progress=False)  # the 4 blocks searched as one unit
    assert fi.as_dict() == want and _strategies(fi) == {"partition"}
    assert "4 blocks searched as 1 unit" in fi.level_stats[-1]["units"]


# ---------------------------------------------------------------------------- FIMI sets vs pyfim
FIMI = [
    ("mushroom", 0.20, 53_583),
    ("chess", 0.70, 48_731),
    ("BMS-WebView-1", 0.001, 3_991),
    ("retail", 0.001, 7_589),
    ("T10I4D100K", 0.003, 4_552),
]


@pytest.mark.parametrize(("name", "min_support", "expected"), FIMI, ids=[f"{n}@{s:g}" for n, s, _ in FIMI])
def test_partition_matches_pyfim(name, min_support, expected):
    n = len(_reference_transactions(name))
    ref = _pyfim_reference(name, _min_count(min_support, n))
    assert len(ref) == expected
    with dask.config.set(scheduler="threads"):
        for nparts, coalesce in ((1, True), (4, False), (16, True)):
            tx = _read(name, npartitions=nparts).persist(progress=False)
            fi = apriori(tx, min_support, strategy="partition", coalesce=coalesce, progress=False)
            assert _strategies(fi) == {"partition"}
            _assert_same_itemsets(
                _norm(fi.as_dict()), ref, f"{name} @ {min_support:g}, partition strategy, {nparts} partitions vs pyfim"
            )


@pytest.mark.cluster
@pytest.mark.parametrize(("name", "min_support"), [("chess", 0.70), ("mushroom", 0.30)])
def test_partition_on_cluster_equals_sync(on_cluster, name, min_support):
    with dask.config.set(scheduler="sync"):
        sync = _norm(apriori(_read(name), min_support, strategy="levelwise", progress=False).as_dict())
    tx = _read(name, npartitions=3).persist(progress=False)
    for coalesce in (True, False):
        fi = apriori(tx, min_support, strategy="partition", coalesce=coalesce, progress=False)
        assert _strategies(fi) == {"partition"}
        what = f"{name} @ {min_support:g}: partition (coalesce={coalesce}) on LocalCluster(2) vs level-wise sync"
        _assert_same_itemsets(_norm(fi.as_dict()), sync, what)


def test_cli_mine_strategy(tmp_path):
    from click.testing import CliRunner

    from ppdm_dask.cli import cli
    from ppdm_dask.data.datasets import sample_path

    out = {}
    for strategy in ("levelwise", "partition", "auto"):
        r = CliRunner().invoke(
            cli,
            [
                "--scheduler",
                "sync",
                "--no-progress",
                "--json",
                "mine",
                str(sample_path("chess")),
                "--min-support",
                "0.8",
                "--strategy",
                strategy,
                "--out",
                str(tmp_path / f"{strategy}.parquet"),
            ],
        )
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert {lv["strategy"] for lv in d["levels"] if lv["length"] >= 3} == (
            {"partition"} if strategy != "levelwise" else {"levelwise"}
        )
        out[strategy] = pq.read_table(tmp_path / f"{strategy}.parquet").to_pylist()
    assert out["levelwise"] == out["partition"] == out["auto"]  # same rows, same order
    text = CliRunner().invoke(
        cli, ["--scheduler", "sync", "--no-progress", "mine", str(sample_path("chess")), "--min-support", "0.8"]
    )
    assert "levels >= 3: partition (" in text.output
    bad = CliRunner().invoke(
        cli, ["--scheduler", "sync", "mine", str(sample_path("chess")), "--min-support", "0.8", "--strategy", "dfs"]
    )
    assert bad.exit_code == 2 and "Traceback" not in bad.output

"""The one level-wise driver: a toy counting step and a toy judge plugged into it give the
brute-force answer, and Apriori and EMASK-Apriori both mine through it (nowhere else is there a
level loop)."""

from __future__ import annotations

import itertools
import pathlib
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ppdm_dask
from ppdm_dask import TransactionArray
from ppdm_dask.emask import mine
from ppdm_dask.mining import apriori
from ppdm_dask.mining import levelwise as L
from ppdm_dask.mining.apriori import ExactCounts


class DenseCounter:
    """A brute-force counting step on a small dense 0/1 matrix: every count by looking at every row."""

    def __init__(self, X: np.ndarray) -> None:
        self.X = np.asarray(X, dtype=bool)
        self.bit_items: np.ndarray | None = None
        self.passes = 0

    def _count(self, cols) -> int:
        return int(self.X[:, list(cols)].all(axis=1).sum())

    def item_counts(self) -> np.ndarray:
        self.passes += 1
        return self.X.sum(axis=0).astype(np.int64)

    def pair_counts(self, items: np.ndarray) -> np.ndarray:
        self.passes += 1
        return np.array([self._count(pair) for pair in itertools.combinations(items.tolist(), 2)], np.int64)

    def use_bitsets(self, items: np.ndarray) -> None:
        self.bit_items = np.asarray(items)

    def extension_counts_many(self, queries):
        self.passes += 1
        out = []
        for parents, parent_of, last in queries:
            out.append(
                np.array([self._count(self.bit_items[list(parents[p]) + [la]]) for p, la in zip(parent_of, last)], np.int64)
            )
        return out

    def plan_fields(self) -> dict:
        return {"plan": "dense"}

    def release(self) -> None:
        self.bit_items = None


def brute_force(X: np.ndarray, min_count: int, max_length: int | None) -> dict[tuple, int]:
    X = np.asarray(X, dtype=bool)
    out = {}
    top = X.shape[1] if max_length is None else max_length
    for k in range(1, top + 1):
        for combo in itertools.combinations(range(X.shape[1]), k):
            c = int(X[:, list(combo)].all(axis=1).sum())
            if c >= min_count:
                out[combo] = c
    return out


def as_dict(levels) -> dict[tuple, int]:
    return {tuple(r): int(c) for k, (ids, counts) in levels.items() for r, c in zip(ids.tolist(), counts.tolist())}


@given(
    st.integers(1, 9),
    st.integers(1, 30),
    st.floats(0.2, 0.9),
    st.integers(1, 8),
    st.one_of(st.none(), st.integers(1, 5)),
    st.integers(0, 2**31),
)
@settings(max_examples=80, deadline=None)
def test_a_toy_counting_step_gives_the_brute_force_itemsets(n_items, n_rows, density, min_count, max_length, seed):
    X = np.random.default_rng(seed).random((n_rows, n_items)) < density
    stats = []
    driver = L.LevelwiseDriver(
        DenseCounter(X), ExactCounts(min_count), n_items, max_length=max_length, on_level=stats.append
    ).run()
    assert as_dict(driver.levels) == brute_force(X, min_count, max_length)
    assert driver.stats == stats and [s["length"] for s in stats] == sorted({s["length"] for s in stats})
    for s in stats:  # every level's statistics say what it counted and found
        assert s["frequent"] == driver.levels[s["length"]][1].size and s["plan"] == "dense"
    assert stats[0]["candidates"] == n_items


class TopTwo:
    """A toy judge: every candidate grows the next level, only the two best are reported."""

    def extra_bytes(self, k: int) -> int:
        return 0

    def judge(self, k: int, counts: np.ndarray, ids: L.CandidateIds) -> L.Verdict:
        best = np.sort(np.argsort(-counts, kind="stable")[:2])
        return L.Verdict(np.arange(counts.size), ids(best), counts[best])


def test_the_judge_decides_what_grows_apart_from_what_is_reported():
    X = np.random.default_rng(5).random((40, 6)) < 0.5
    driver = L.LevelwiseDriver(DenseCounter(X), TopTwo(), 6).run()
    assert sorted(driver.levels) == list(range(1, 7))  # all grown: every length is reached
    for k, (ids, counts) in driver.levels.items():
        every = brute_force(X, 0, k)
        every = {s: c for s, c in every.items() if len(s) == k}
        top = sorted(every.values(), reverse=True)[:2]
        assert sorted(counts.tolist(), reverse=True) == top
        assert all(every[tuple(r)] == c for r, c in zip(ids.tolist(), counts.tolist()))
    assert [s["candidates"] for s in driver.stats] == [6, 15, 20, 15, 6, 1]  # C(6, k): nothing pruned


def test_apriori_and_emask_mine_through_the_driver(monkeypatch):
    runs = []
    real = L.LevelwiseDriver.run

    def spy(self, **kw):
        runs.append(type(self.judge).__name__)
        return real(self, **kw)

    monkeypatch.setattr(L.LevelwiseDriver, "run", spy)
    tx = TransactionArray.from_lists([[0, 1, 2, 3], [0, 1, 2], [1, 2, 3], [0, 2, 3]] * 3, npartitions=2)
    apriori(tx, 2, progress=False, strategy="levelwise")
    mine(tx, 0.9, 0.95, 2, progress=False)
    assert runs == ["ExactCounts", "ReconstructedSupports"]


def test_the_level_loop_exists_only_in_the_driver():
    root = pathlib.Path(ppdm_dask.__file__).parent
    # candidate generation, the candidate guard and counting ahead: only the driver calls them
    # (plus the modules that define them and the strategy's cost model, which only looks ahead)
    calls = re.compile(r"\b(apriori_gen|check_candidates|CountAhead)\(")
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if calls.search(p.read_text()))
    assert users == ["mining/ahead.py", "mining/candidates.py", "mining/guards.py", "mining/levelwise.py", "mining/strategy.py"]
    for family in ("mining/apriori.py", "emask/mining.py"):
        text = (root / family).read_text()
        assert "LevelwiseDriver(" in text and not re.search(r"\bwhile\b", text)

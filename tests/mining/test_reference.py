"""Exactness of ``ppdm_dask.mining`` against established miners (pyfim, mlxtend).

References (dev dependencies, used only here):

* pyfim (Borgelt's C implementation), ``fim.apriori(..., supp=-min_count)`` -- a negative
  ``supp`` is an absolute transaction count, ``report='a'`` returns ``[(itemset, count), ...]``.
* mlxtend ``fpgrowth`` / ``association_rules`` (pure Python/pandas; only on the smaller sets).

Both references read the FIMI ``.dat`` files with plain Python (one transaction per line, items
separated by white space, duplicates collapsed), independently of ``ppdm_dask.read``.

Threshold: an itemset is frequent iff ``count >= min_count`` with
``min_count = ceil(min_support * N - 1e-9)`` (the epsilon guards float products such as
``0.003 * 100000``); every reference is driven with that same absolute count.
"""

from __future__ import annotations

import functools
import math
import warnings
from itertools import combinations
from pathlib import Path

import dask
import fim
import numpy as np
import pandas as pd
import pytest
from mlxtend.frequent_patterns import association_rules as mlx_association_rules
from mlxtend.frequent_patterns import fpgrowth as mlx_fpgrowth

import ppdm_dask
from ppdm_dask.mining import apriori, association_rules

from ..conftest import _shared_data

# (dataset, min_support, expected number of frequent itemsets of every length >= 1)
# chess @ 80%: 8,227, counted from both pyfim (no always-present items in chess) and mlxtend.
PYFIM_CASES = [
    ("mushroom", 0.20, 53_583),
    ("T10I4D100K", 0.003, 4_552),
    ("T10I4D100K", 0.01, 385),
    ("retail", 0.001, 7_589),
    ("BMS-WebView-1", 0.001, 3_991),
    ("chess", 0.80, 8_227),
]
# mlxtend is pure Python: only the small/dense sets and the cheap T10I4D100K threshold.
MLXTEND_CASES = [("mushroom", 0.20, 53_583), ("chess", 0.80, 8_227), ("T10I4D100K", 0.01, 385)]


def _min_count(min_support: float, n: int) -> int:
    return max(1, math.ceil(min_support * n - 1e-9))


def _fimi(name: str) -> Path:
    root = _shared_data()
    if root is None:
        pytest.skip("shared data folder not available on this machine")
    return root / "fimi" / f"{name}.dat"


@functools.cache
def _reference_transactions(name: str) -> tuple[tuple[int, ...], ...]:
    """The .dat file parsed with plain Python (independent of ppdm_dask's reader)."""
    with open(_fimi(name)) as f:
        return tuple(tuple(sorted({int(x) for x in line.split()})) for line in f)


def _label(x):
    return x.item() if hasattr(x, "item") else x


def _norm(d) -> dict[frozenset, int]:
    """Itemset dict with plain-Python labels and counts (numpy int64 -> int)."""
    return {frozenset(_label(i) for i in k): int(v) for k, v in d.items()}


def _assert_same_itemsets(ours: dict, ref: dict, what: str) -> None:
    """Exact equality, with a readable minimal diff (smallest itemsets first) on failure."""
    if ours == ref:
        return
    key = lambda s: (len(s), sorted(s))  # noqa: E731
    only_ours = sorted(set(ours) - set(ref), key=key)
    only_ref = sorted(set(ref) - set(ours), key=key)
    wrong = sorted((s for s in set(ours) & set(ref) if ours[s] != ref[s]), key=key)
    lines = [
        f"{what}: ours has {len(ours)} itemsets, reference {len(ref)}; "
        f"{len(only_ours)} only in ours, {len(only_ref)} only in the reference, {len(wrong)} with different counts"
    ]
    lines += [f"  only ours:  {sorted(s)} ours={ours[s]} ref=absent" for s in only_ours[:5]]
    lines += [f"  only ref:   {sorted(s)} ours=absent ref={ref[s]}" for s in only_ref[:5]]
    lines += [f"  count diff: {sorted(s)} ours={ours[s]} ref={ref[s]}" for s in wrong[:5]]
    pytest.fail("\n".join(lines))


# ---------------------------------------------------------------------------- references
@functools.cache
def _pyfim_reference(name: str, min_count: int) -> dict[frozenset, int]:
    tr = _reference_transactions(name)
    n = len(tr)
    res = fim.apriori([list(t) for t in tr], target="s", supp=-min_count, zmin=1, report="a")
    ref = {frozenset(items): int(count) for items, count in res}
    # pyfim 6.28 does not report itemsets made *only* of items present in every transaction
    # (mushroom: item 85 is in all 8,124 rows, so {85} is missing -- 53,582 instead of 53,583;
    # supersets mixing such items with others are reported correctly). We add those itemsets
    # back by brute force: every non-empty subset of the always-present items has count N,
    # hence is frequent whenever N >= min_count. Only absent ones are added, so a pyfim that
    # reports them itself is unaffected.
    always = set(tr[0]).intersection(*map(set, tr[1:])) if tr else set()
    if n >= min_count:
        for k in range(1, len(always) + 1):
            for combo in combinations(sorted(always), k):
                s = frozenset(combo)
                if s not in ref:
                    ref[s] = n
                assert ref[s] == n
    return ref


@functools.cache
def _reference_frame(name: str) -> pd.DataFrame:
    """Dense bool one-hot DataFrame (rows = transactions, columns = item labels) for mlxtend."""
    tr = _reference_transactions(name)
    labels = sorted({i for t in tr for i in t})
    pos = {lab: j for j, lab in enumerate(labels)}
    m = np.zeros((len(tr), len(labels)), dtype=bool)
    rows = np.repeat(np.arange(len(tr)), [len(t) for t in tr])
    cols = np.fromiter((pos[i] for t in tr for i in t), dtype=np.int64, count=rows.size)
    m[rows, cols] = True
    return pd.DataFrame(m, columns=labels)


def _mlxtend_itemsets(name: str, min_count: int) -> pd.DataFrame:
    df = _reference_frame(name)
    n = len(df)
    # mlxtend uses ceil(min_support * N) for the tree and support >= min_support for items;
    # (min_count - 0.5) / N makes both equal to "count >= min_count" without float edge cases.
    return mlx_fpgrowth(df, min_support=(min_count - 0.5) / n, use_colnames=True)


@functools.cache
def _mlxtend_reference(name: str, min_count: int) -> dict[frozenset, int]:
    fi = _mlxtend_itemsets(name, min_count)
    n = len(_reference_frame(name))
    counts = np.rint(fi["support"].to_numpy() * n).astype(np.int64)
    return {frozenset(_label(i) for i in s): int(c) for s, c in zip(fi["itemsets"], counts)}


# ---------------------------------------------------------------------------- ours
def _read(name: str, npartitions: int | None = None):
    tx = ppdm_dask.read(str(_fimi(name)), progress=False)
    if npartitions is not None:
        tx = tx.repartition(npartitions=npartitions)
    return tx


@functools.cache
def _ours_sync(name: str, min_support: float):
    """Our result on the synchronous scheduler (cached: several tests share it)."""
    with dask.config.set(scheduler="sync"):
        return apriori(_read(name), min_support, progress=False)


# ---------------------------------------------------------------------------- tests
@pytest.mark.parametrize(("name", "min_support", "expected"), PYFIM_CASES, ids=[f"{n}@{s:g}" for n, s, _ in PYFIM_CASES])
def test_matches_pyfim(name, min_support, expected):
    n = len(_reference_transactions(name))
    min_count = _min_count(min_support, n)
    fi = _ours_sync(name, min_support)
    assert fi.n_transactions == n
    assert fi.min_count == min_count
    ours = _norm(fi.as_dict())
    assert len(fi) == len(ours)
    ref = _pyfim_reference(name, min_count)
    assert len(ref) == expected, f"pyfim reference has {len(ref)} itemsets, expected {expected}"
    _assert_same_itemsets(ours, ref, f"{name} @ {min_support:g} vs pyfim apriori")
    assert len(ours) == expected


@pytest.mark.parametrize(("name", "min_support", "expected"), MLXTEND_CASES, ids=[f"{n}@{s:g}" for n, s, _ in MLXTEND_CASES])
def test_matches_mlxtend_fpgrowth(name, min_support, expected):
    n = len(_reference_transactions(name))
    min_count = _min_count(min_support, n)
    ours = _norm(_ours_sync(name, min_support).as_dict())
    ref = _mlxtend_reference(name, min_count)
    assert len(ref) == expected, f"mlxtend reference has {len(ref)} itemsets, expected {expected}"
    _assert_same_itemsets(ours, ref, f"{name} @ {min_support:g} vs mlxtend fpgrowth")


def test_absolute_min_support_equals_fraction():
    name, frac = "BMS-WebView-1", 0.001
    n = len(_reference_transactions(name))
    min_count = _min_count(frac, n)
    with dask.config.set(scheduler="sync"):
        fi = apriori(_read(name), min_count, progress=False)
    assert fi.min_count == min_count
    _assert_same_itemsets(_norm(fi.as_dict()), _norm(_ours_sync(name, frac).as_dict()), "absolute vs fractional min_support")


def test_partition_independence_mushroom():
    results = {}
    for nparts in (1, 8, 64):
        tx = _read("mushroom", npartitions=nparts)
        assert tx.n_partitions == nparts
        results[nparts] = _norm(apriori(tx, 0.20, progress=False).as_dict())
    assert len(results[1]) == 53_583
    _assert_same_itemsets(results[8], results[1], "mushroom @ 20%: 8 partitions vs 1")
    _assert_same_itemsets(results[64], results[1], "mushroom @ 20%: 64 partitions vs 1")


@pytest.mark.cluster
@pytest.mark.parametrize(("name", "min_support", "expected"), [("BMS-WebView-1", 0.001, 3_991), ("T10I4D100K", 0.003, 4_552)])
def test_cluster_equals_sync(on_cluster, name, min_support, expected):
    sync = _norm(_ours_sync(name, min_support).as_dict())  # computed on the sync scheduler
    # several partitions, so that both worker processes take part
    tx = _read(name, npartitions=4).persist(progress=False)
    fi = apriori(tx, min_support, progress=False)
    ours = _norm(fi.as_dict())
    assert len(ours) == expected
    _assert_same_itemsets(ours, sync, f"{name} @ {min_support:g}: LocalCluster(2) vs sync")


def _as_set(x) -> frozenset:
    if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__"):
        return frozenset([_label(x)])
    return frozenset(_label(i) for i in x)


def test_association_rules_match_mlxtend():
    name, min_support, min_conf = "mushroom", 0.30, 0.9
    n = len(_reference_transactions(name))
    min_count = _min_count(min_support, n)

    fi = _ours_sync(name, min_support)
    ours_df = association_rules(fi, min_conf).to_pandas()
    ours = {}
    for row in ours_df.itertuples(index=False):
        k = (_as_set(row.antecedent), _as_set(row.consequent))
        assert k not in ours, f"duplicate rule {k}"
        ours[k] = row

    ref_fi = _mlxtend_itemsets(name, min_count)
    counts = {frozenset(s): int(c) for s, c in zip(ref_fi["itemsets"], np.rint(ref_fi["support"].to_numpy() * n))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mlxtend's certainty metric divides by 0
        # a slightly lower threshold, then the exact filter below: confidence = count(A u C) / count(A)
        # on integer counts, compared with min_confidence (mushroom has 12 rules at exactly 9/10,
        # where mlxtend's support-ratio floats could fall on either side)
        ref_df = mlx_association_rules(ref_fi, num_itemsets=n, metric="confidence", min_threshold=min_conf - 1e-6)
    ref = {}
    for a, c, conf, lift, supp in zip(
        ref_df["antecedents"], ref_df["consequents"], ref_df["confidence"], ref_df["lift"], ref_df["support"]
    ):
        a, c = _as_set(a), _as_set(c)
        if counts[a | c] / counts[a] >= min_conf:
            ref[(a, c)] = (conf, lift, supp, counts[a | c])

    only_ours = set(ours) - set(ref)
    only_ref = set(ref) - set(ours)
    show = lambda ks: [
        (sorted(a), sorted(c)) for a, c in sorted(ks, key=lambda k: (len(k[0]) + len(k[1]), sorted(k[0]), sorted(k[1])))[:5]
    ]  # noqa: E731
    assert not only_ours and not only_ref, (
        f"{len(ours)} rules in ours, {len(ref)} in mlxtend; only ours (first 5): {show(only_ours)}; "
        f"only mlxtend (first 5): {show(only_ref)}"
    )
    assert len(ours) > 0
    bad = []
    for k, (conf, lift, supp, count) in ref.items():
        r = ours[k]
        if not (
            math.isclose(r.confidence, conf, rel_tol=1e-9)
            and math.isclose(r.lift, lift, rel_tol=1e-9)
            and math.isclose(r.support, supp, rel_tol=1e-9)
            and int(r.count) == count
        ):
            bad.append((sorted(k[0]), sorted(k[1]), (r.count, r.support, r.confidence, r.lift), (count, supp, conf, lift)))
    assert not bad, (
        f"{len(bad)} rules differ (antecedent, consequent, ours (count, support, confidence, lift), mlxtend): {bad[:5]}"
    )

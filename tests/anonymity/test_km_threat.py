"""The officer's summary of k^m releases (ppdm_dask.anonymity.km_threat): records singled out by
m + 1 known items against brute force (itertools over every basket), the sampled and capped
estimates against the same brute force, utility at the generalised level on the hand example of
docs/anonymity.md (hierarchy ALL -> {A, B}), and the audit plot drawn on whole-number ticks."""

from __future__ import annotations

import re
from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from ppdm_dask import TransactionArray
from ppdm_dask.anonymity.estimators import KmAnonymizer
from ppdm_dask.anonymity.km_threat import M_PLUS_1_THRESHOLD, item_images
from ppdm_dask.data.hierarchy import Hierarchy
from ppdm_dask.metrics.km_audit import singled_out
from ppdm_dask.report.plots import plot_svg

O24_H = [["a1", "A", "ALL"], ["a2", "A", "ALL"], ["b1", "B", "ALL"], ["b2", "B", "ALL"]]
O24_D = [["a1", "b1"], ["a2", "b1"], ["a1", "b2"], ["a2", "b2"], ["a1", "b1", "b2"]]


def _rows(seed=0, n=120, n_items=14):
    rng = np.random.default_rng(seed)
    return [sorted(set(rng.integers(0, n_items, rng.integers(1, 7)).tolist())) for _ in range(n)]


def _brute(rows, size, k):
    """Per row: holds a size-itemset of support 1, of support < k."""
    sets = [frozenset(r) for r in rows]
    support = Counter(c for s in sets for c in combinations(sorted(s), size))
    unique = [any(support[c] == 1 for c in combinations(sorted(s), size)) for s in sets]
    rare = [any(support[c] < k for c in combinations(sorted(s), size)) for s in sets]
    return np.array(unique), np.array(rare)


@pytest.mark.parametrize("npartitions", [1, 3])
def test_m_plus_1_against_brute_force(npartitions):
    rows = _rows()
    tx = TransactionArray.from_lists(rows).repartition(npartitions=npartitions)
    k, m = 3, 2
    rel = KmAnonymizer(k=k, m=m, fan_out=3).fit_release(tx)
    released = rel.data.to_lists()
    unique, rare = _brute(released, m + 1, k)
    assert unique.any()  # the example has records an adversary with 3 items singles out
    figs = rel.report_figures()
    attack = {a.id: a for a in figs.attacks}["attack_km_m_plus_1"]
    assert attack.success == pytest.approx(unique.sum() / len(released)) and attack.baseline == 0.0
    assert attack.threshold == M_PLUS_1_THRESHOLD and attack.flagged == (unique.mean() > M_PLUS_1_THRESHOLD)
    assert f"{int(unique.sum())} of " in attack.found and "all examined" in attack.found
    r = singled_out(rel.data, m + 1, k)
    assert (r["unique"], r["rare"]) == (int(unique.sum()), int(rare.sum())) and not r["sampled"]
    # at m items nothing is unique: the guarantee
    assert not _brute(released, m, k)[1].any() and singled_out(rel.data, m, k)["rare"] == 0


def test_m_plus_1_sampled_and_capped():
    rows = _rows(seed=4, n=200)
    tx = TransactionArray.from_lists(rows).repartition(npartitions=2)
    unique, rare = _brute(rows, 2, 4)
    r = singled_out(tx, 2, 4, max_targets=40)
    assert r["sampled"] and r["targets"] == 40
    lengths = np.array([len(x) for x in rows])
    assert r["eligible"] == int((lengths >= 2).sum())
    assert r["unique"] == int(unique[r["examined"]].sum()) and r["rare"] == int(rare[r["examined"]].sum())
    assert r["unique_share"] == pytest.approx(r["unique"] / 40 * r["eligible"] / len(rows))
    capped = singled_out(tx, 2, 4, max_subsets=2)
    assert capped["subsets_capped"] and capped["unique"] <= int(unique.sum())  # a lower bound


def test_utility_at_the_generalised_level_by_hand():
    # k = 2, m = 2 publishes the cut {B}: b1, b2 -> B; a1, a2 kept. The original mapped through it is
    # {a1,B}, {a2,B}, {a1,B}, {a2,B}, {a1,B}: the release itself, so σ⁺ = σ⁻ = ρ = 0 at the generalised
    # level (compared item by item, every itemset with b1 or b2 would count as lost).
    tx = TransactionArray.from_lists(O24_D)
    rel = KmAnonymizer(Hierarchy.from_table(O24_H), k=2, m=2).fit_release(tx)
    assert item_images(rel, tx) == {"a1": "a1", "a2": "a2", "b1": "B", "b2": "B"}
    figs = rel.report_figures(tx)
    by_id = {i.id: i for i in figs.utility}
    assert by_id["itemsets_sigma_minus"].value == 0.0 and by_id["itemsets_sigma_plus"].value == 0.0
    assert by_id["itemsets_rho"].value == 0.0 and "generalised level" in by_id["itemsets_rho"].note
    # a1 ×3 and a2 ×2 kept of 11 occurrences; NCP of {B} = 3/11
    assert by_id["km_items_published_as_is"].value == pytest.approx(100 * 5 / 11)
    assert by_id["km_ncp"].value == pytest.approx(100 * 3 / 11)
    assert figs.headline == ["km_items_published_as_is", "km_ncp", "itemsets_sigma_minus"]
    # without the owner's map a given hierarchy cannot be rebuilt: a note, no misleading figures
    rel.item_images = None
    figs = rel.report_figures(tx)
    assert not any(i.id.startswith("itemsets_") for i in figs.utility) and any("given hierarchy" in n for n in figs.notes)


def test_balanced_hierarchy_rebuilt_from_the_public_fan_out():
    rows = _rows(seed=2, n=150, n_items=20)
    tx = TransactionArray.from_lists(rows)
    rel = KmAnonymizer(k=4, m=2, fan_out=3).fit_release(tx)
    owner, ncp = dict(rel.item_images), rel.figures["utility"]["ncp"]
    rel.item_images = None  # what `ppdm report RELEASE --original SRC` has: neither the map nor the NCP
    rel.figures = {**rel.figures, "utility": {}}
    assert item_images(rel, tx) == owner
    by_id = {i.id: i for i in rel.report_figures(tx).utility}
    assert by_id["itemsets_sigma_minus"].value == 0.0
    assert by_id["km_ncp"].value == pytest.approx(100 * ncp, rel=1e-12)  # the anonymiser's own NCP


def test_audit_plot_on_whole_numbers():
    tx = TransactionArray.from_lists(_rows())
    rel = KmAnonymizer(k=3, m=2, fan_out=3).fit_release(tx)
    plot = next(i for i in rel.report_figures().risk if i.id == "km_audit_release")
    assert plot.series[0].y == [0, 0]  # an all-zero curve: matplotlib centred it on 0 (ticks down to −0.04)
    ticks = [t.replace("−", "-") for t in re.findall(r">([^<>]{1,8})</text>", plot_svg(plot.to_dict()))]
    numbers = [float(t) for t in ticks if re.fullmatch(r"-?[0-9.]+", t)]
    assert numbers and all(v.is_integer() and v >= 0 for v in numbers)

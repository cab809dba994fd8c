"""EMASK releases of baskets grouped from events, composed by person (docs/emask.md#the-person):
a person's ε is their baskets × ε per basket, summed over every release of theirs, whatever the
extract; a bound on baskets per person bounds it; the floor holds for the person. Oracles:
brute-force sums over the private user maps of the ingests."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from ppdm_dask.data.datasets import sample_path
from ppdm_dask.data.events import read_events
from ppdm_dask.emask import Distorter
from ppdm_dask.emask.composition import BP_CHECK, BUDGET_CHECK, person_basic_privacy, vector_basic_privacy
from ppdm_dask.emask.privacy import ldp_epsilon
from ppdm_dask.errors import WeakParameterError
from ppdm_dask.ledger import CompositionRefused, Ledger
from ppdm_dask.random import Key


@pytest.fixture(scope="module")
def extracts(tmp_path_factory):
    """Two overlapping extracts of the events sample (the first 14,000 events, the last 14,000)."""
    folder = tmp_path_factory.mktemp("events")
    table = pq.read_table(str(sample_path("events"))).sort_by([("ts", "ascending")])
    out = []
    for name, part in (("a", table.slice(0, 14_000)), ("b", table.slice(6_000))):
        pq.write_table(part, folder / f"{name}.parquet")
        out.append(str(folder / f"{name}.parquet"))
    return out


def _sessions(src, ledger, tmp_path, name, bound=None):
    """The sessions of an extract (30 min gap), their persons keyed by the ledger, and the
    private user map: the number of baskets of every user."""
    umap = str(tmp_path / f"{name}.map.parquet")
    tx, summary = read_events(
        src,
        user="user",
        item="item",
        time="ts",
        session_gap="30min",
        key=Key(3),
        person_key=ledger.person_key(),
        user_map=umap,
        max_baskets_per_user=bound,
    )
    users = pq.read_table(umap).column("user").to_pylist()
    per_user: dict[str, int] = {}
    for u in users:
        per_user[u] = per_user.get(u, 0) + 1
    return tx, summary, per_user


def _quantile(values, q):
    """The smallest value with at least a share q of the people at or below it."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    return float(v[int(np.ceil(q * v.size)) - 1]) if v.size else 0.0


def test_person_epsilon_is_the_brute_force_sum_over_releases_of_overlapping_extracts(extracts, tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    tx_a, _, users_a = _sessions(extracts[0], ledger, tmp_path, "a")
    tx_b, _, users_b = _sessions(extracts[1], ledger, tmp_path, "b")
    assert max(users_a.values()) > 10 and set(users_a) & set(users_b)  # heavy people, in both extracts

    # one release alone: the floor holds for the person, refused before any work
    with pytest.raises(WeakParameterError, match="max_baskets_per_user"):
        Distorter(0.3, 0.97, ledger=ledger).fit(tx_a)

    pq_a, pq_b = (0.3, 0.97), (0.2, 0.97)
    first = Distorter(*pq_a, key=Key(1), ledger=ledger, allow_weak=True).fit_transform(tx_a)
    eps_a, eps_b = ldp_epsilon(*pq_a), ldp_epsilon(*pq_b)
    own = first.figures["privacy"]
    assert own["baskets_per_person"]["max"] == max(users_a.values())
    assert own["epsilon_per_person"]["max"] == pytest.approx(max(users_a.values()) * eps_a)
    m1 = first.write(str(tmp_path / "ra"))
    # the public manifest states that nothing bounds a person's ε, never a count of the input
    assert str(m1["summary"]["privacy"]["epsilon_per_person"]).startswith("unbounded")
    assert str(max(users_a.values())) not in str(m1["summary"]["privacy"])

    second = Distorter(*pq_b, key=Key(2), ledger=ledger, allow_weak=True, epsilon_budget=30).fit_transform(tx_b)
    with pytest.raises(CompositionRefused, match=BP_CHECK) as refused:
        second.write(str(tmp_path / "rb"))
    assert m1["release"]["id"][:12] in str(refused.value) and "people shared" in str(refused.value)
    m2 = second.write(str(tmp_path / "rb"), allow_composition=True)
    assert {c["name"]: c["overridden"] for c in m2["release"]["ledger"]["composition"]["limits"]} == {
        BP_CHECK: True,
        BUDGET_CHECK: True,
    }
    figures = second.composition.figures

    # brute force over the user maps: every person of the second release
    eps = {u: n * eps_b + users_a.get(u, 0) * eps_a for u, n in users_b.items()}
    assert figures["people"] == len(users_b)
    assert figures["people_in_earlier_releases"] == len(set(users_a) & set(users_b))
    assert figures["epsilon_per_person_max"] == pytest.approx(max(eps.values()))
    assert figures["epsilon_per_person_median"] == pytest.approx(_quantile(list(eps.values()), 0.5))
    assert figures["epsilon_per_person_p90"] == pytest.approx(_quantile(list(eps.values()), 0.9))
    assert figures["max_baskets_per_person"] == max(users_b[u] + users_a.get(u, 0) for u in users_b)
    assert figures["people_over_budget"] == sum(1 for v in eps.values() if v > 30)
    # the floor for the person: their item seen in every basket of theirs, in both releases
    s0 = second.figures["privacy"]["s0"]
    below = sum(1 for u, n in users_b.items() if vector_basic_privacy([pq_b, pq_a], [n, users_a.get(u, 0)], s0) < 90)
    assert figures["people_below_floor"] == below > 0
    shared = second.composition.people["shared"]
    assert shared == {m1["release"]["id"]: len(set(users_a) & set(users_b))}


def test_a_bound_on_baskets_per_person_bounds_their_epsilon(extracts, tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    tx_a, summary, users_a = _sessions(extracts[0], ledger, tmp_path, "a", bound=3)
    tx_b, _, users_b = _sessions(extracts[1], ledger, tmp_path, "b", bound=3)
    assert max(users_a.values()) == 3 and summary.baskets_per_user["max"] > 3
    p, q = 0.2, 0.97
    eps = ldp_epsilon(p, q)
    first = Distorter(p, q, key=Key(1), ledger=ledger).fit_transform(tx_a)  # 3 baskets: BP > 90 %
    assert first.figures["privacy"]["basic_privacy_per_person"] == pytest.approx(
        person_basic_privacy(p, q, first.figures["privacy"]["s0"], 3)
    )
    m1 = first.write(str(tmp_path / "ra"))
    assert m1["release"]["parameters"]["max_baskets_per_person"] == 3
    assert m1["summary"]["privacy"]["epsilon_per_person"] == pytest.approx(3 * eps)
    second = Distorter(p, q, key=Key(2), ledger=ledger, allow_weak=True).fit_transform(tx_b)
    m2 = second.write(str(tmp_path / "rb"), allow_composition=True)
    both = set(users_a) & set(users_b)
    # with the bound, the largest ε of a person is the bound times ε per basket, per release
    worst = max(users_b[u] + users_a.get(u, 0) for u in users_b)
    assert worst == 6 and second.composition.figures["epsilon_per_person_max"] == pytest.approx(6 * eps)
    assert m2["release"]["ledger"]["composition"]["epsilon_per_person"] == pytest.approx(6 * eps)
    assert second.composition.figures["people_in_earlier_releases"] == len(both)


def test_the_person_column_is_never_published(extracts, tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    tx, _, _ = _sessions(extracts[0], ledger, tmp_path, "a", bound=1)
    rel = Distorter(0.3, 0.97, key=Key(1), ledger=ledger).fit_transform(tx)
    m = rel.write(str(tmp_path / "r"))
    assert "person" not in m["columns"]
    for part in m["partitions"]:
        assert "person" not in pq.read_schema(tmp_path / "r" / part["file"]).names

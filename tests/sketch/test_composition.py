"""Repeated sketch releases composed in the ledger by person (here each record its own person):
the components per record recounted from the written releases (keyed row order undone by the
owner) against the ledger's figures, the refusal and its override, partition independence,
k-variance edges."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.ledger import CompositionRefused, Ledger
from ppdm_dask.ledger.people import people_of, read_all
from ppdm_dask.random import Key
from ppdm_dask.release.order import output_positions
from ppdm_dask.sketch import DeltaAnonymizer, KVarianceAnonymizer
from ppdm_dask.sketch.composition import DELTA_CHECK, KVARIANCE_CHECK
from ppdm_dask.verification import open_release


def _tx(n=180, d=30, npartitions=4, seed=3):
    rng = np.random.default_rng(seed)
    x = ((rng.random((n, d)) < 0.2) * rng.integers(1, 4, size=(n, d))).astype(float)
    x[0] = 0.0
    x[1, :] = 0.0
    x[1, 4] = 2.0  # one non-zero: V_x = 0, no component is allowed in any release
    return TransactionArray.from_scipy(sp.csr_array(x), npartitions=npartitions, columns={"label": np.arange(n) % 3}), x


def _variance(x):
    """V_x from its definition: |x|^2 minus the largest x_t^2, 0 with at most one non-zero."""
    sq = x**2
    return np.where((x != 0).sum(axis=1) > 1, sq.sum(axis=1) - sq.max(axis=1), 0.0)


def _sketches_in_input_order(url, key, original):
    """The owner's view of a written release: each input record's stored sketch (a list),
    read from the part files and put back in the input's order with the release's stream key."""
    rel = open_release(str(url))
    parts = rel.manifest["partitions"]
    rows = []
    for p in parts:
        rows += pq.read_table(str(url / p["file"]), columns=["sketch"]).column("sketch").to_pylist()
    pos = output_positions(rel.owner_stream_key(key, original), original.n_transactions, len(parts))
    return [rows[pos[r]] for r in range(original.n_transactions)]


def _write_two(tmp_path, tx, ledger=None):
    kw = {} if ledger is None else {"ledger": ledger}
    first = DeltaAnonymizer(delta=3.0, m_max=12, key=Key(21), keep_suppressed=True, **kw).fit_transform(tx)
    first.write(str(tmp_path / "first"))
    second = DeltaAnonymizer(delta=5.0, m_max=12, key=Key(22), keep_suppressed=True, **kw).fit_transform(tx)
    return first, second


def test_two_delta_releases_recounted_from_their_files_match_the_ledger(tmp_path):
    tx, x = _tx()
    first, second = _write_two(tmp_path, tx)
    with pytest.raises(CompositionRefused, match="allow_composition=True") as refused:
        second.write(str(tmp_path / "refused"))
    assert DELTA_CHECK in str(refused.value) and "--allow-composition" in cli_message(refused.value)
    assert "1 earlier release(s) in the ledger" in str(refused.value) and "180 people shared" in str(refused.value)
    assert not (tmp_path / "refused").exists()
    manifest = second.write(str(tmp_path / "second"), allow_composition=True)

    # the oracle: both written releases, rows back in input order, sketches concatenated per record
    a = _sketches_in_input_order(tmp_path / "first", Key(21), tx)
    b = _sketches_in_input_order(tmp_path / "second", Key(22), tx)
    _, m_first = first.data.compute(progress=False)
    assert [len(s) for s in a] == list(m_first)  # the keyed order is undone: record r's own sketch
    combined = [list(sa) + list(sb) for sa, sb in zip(a, b)]
    m = np.array([len(s) for s in combined])
    delta = 3.0  # the smaller δ of the two: the weaker promise
    breaking = m * delta > _variance(x) + 1e-9  # m > V_x / δ, i.e. beyond floor(V_x / δ)
    assert 0 < breaking.sum() < x.shape[0]

    # what the ledger reports: its per-person values and the composition's figure
    ledger = Ledger()
    records = [r for r in ledger.records() if r.status == "committed"]
    # refused once written (before the commit): its record says so, its message names the figure
    assert len(records) == 2 and [r.status for r in ledger.records()].count("not committed") == 1
    assert f"{DELTA_CHECK}: {int(breaking.sum())} (needs 0)" in str(refused.value)
    stored = [read_all(ledger, people_of(ledger, r)) for r in records]
    assert stored[0]["person"].size == stored[1]["person"].size == x.shape[0]  # every record its own person
    np.testing.assert_array_equal(stored[0]["person"], stored[1]["person"])
    assert sorted((stored[0]["m"] + stored[1]["m"]).tolist()) == sorted(m.tolist())
    assert second.composition.figures["max_components_per_person"] == int(m.max())
    figures = records[-1].composition["figures"]
    assert figures["people_breaking_delta_condition"] == int(breaking.sum())
    assert figures["share_breaking_delta_condition"] == pytest.approx(breaking.mean())
    assert figures["delta"] == delta
    has = m > 0  # the δ the two releases together still guarantee
    assert figures["delta_met"] == pytest.approx(float(np.min(_variance(x)[has] / m[has]))) and figures["delta_met"] < delta
    # the manifest: the override, and only public parameters of the composition
    assert "composition: " + DELTA_CHECK in manifest["release"]["overrides"]
    public = manifest["release"]["ledger"]["composition"]
    assert public == {
        "releases": 2,
        "sketch_releases": 2,
        "delta": 3.0,
        "k_variance_releases": 0,
        "limits": [{"name": DELTA_CHECK, "ok": False, "overridden": True}],
    }


def test_a_release_alone_meets_its_condition_and_a_weak_enough_second_one_passes(tmp_path):
    tx, x = _tx()
    first = DeltaAnonymizer(delta=3.0, m_max=12, key=Key(21)).fit_transform(tx)
    man = first.write(str(tmp_path / "first"))
    # alone, a release is held to its own guarantee: nothing to compose
    assert man["release"]["ledger"]["composition"]["limits"] == []
    assert any("nothing to compose" in n for n in first.composition.notes)
    # a release whose δ is so large that it suppresses everything adds no component: it passes
    big = float(_variance(x).max()) + 1.0
    second = DeltaAnonymizer(delta=big, m_max=12, key=Key(22)).fit_transform(tx)
    man = second.write(str(tmp_path / "second"))
    assert man["release"]["ledger"]["composition"]["limits"][0]["ok"]
    assert second.composition.figures["delta"] == 3.0


@pytest.mark.parametrize("npartitions", [1, 7])
def test_composed_figures_do_not_depend_on_the_partitioning(tmp_path, npartitions):
    tx4, _ = _tx(npartitions=4)
    txn, _ = _tx(npartitions=npartitions)
    got = []
    for name, tx in (("four", tx4), ("other", txn)):
        ledger = Ledger(tmp_path / name / "ledger")
        _, second = _write_two(tmp_path / name, tx, ledger=ledger)
        second.write(str(tmp_path / name / "second"), allow_composition=True)
        got.append(second.composition)
    assert got[0].figures == got[1].figures and got[0].figures["people_breaking_delta_condition"] > 0


def _edge_bound(xi, xj):
    """M_ij by hand: floor(V / tau^2), V = |x|^2|y|^2 + (x.y)^2 - 2 sum x_t^2 y_t^2, tau = |x||y| - |x.y|."""
    dot = float(xi @ xj)
    v = (xi @ xi) * (xj @ xj) + dot**2 - 2.0 * float((xi**2) @ (xj**2))
    tau = np.sqrt((xi @ xi) * (xj @ xj)) - abs(dot)
    return np.inf if tau <= 1e-12 * np.sqrt((xi @ xi) * (xj @ xj)) else np.floor(v / tau**2 + 1e-9)


def test_two_kvariance_releases_compose_their_shared_components_per_edge(tmp_path):
    tx, x = _tx(n=120)
    est1 = KVarianceAnonymizer(k=3, m_max=12, key=Key(31), keep_suppressed=True)
    first = est1.fit_release(tx)
    man = first.write(str(tmp_path / "first"))
    assert man["release"]["ledger"]["composition"]["limits"] == []
    est2 = KVarianceAnonymizer(k=3, m_max=12, key=Key(32), keep_suppressed=True)
    second = est2.fit_release(tx)
    with pytest.raises(CompositionRefused, match="allow_composition=True") as refused:
        second.write(str(tmp_path / "refused"))
    assert KVARIANCE_CHECK in str(refused.value) and "--allow-composition" in cli_message(refused.value)
    second.write(str(tmp_path / "second"), allow_composition=True)
    # the oracle: every edge of the (shared) k-NN graph, its bound by hand, the components of
    # both releases that estimate x_i.x_j
    m1, m2 = est1.m_.astype(int), est2.m_.astype(int)
    bad = np.zeros(x.shape[0], bool)
    for i, row in enumerate(est1.graph_.indices):
        for j in row[row >= 0]:
            shared = min(m1[i], m1[j]) + min(m2[i], m2[j])
            bad[i] |= shared > _edge_bound(x[i], x[j])
    assert bad.any()
    assert second.composition.figures["people_breaking_k_variance"] == int(bad.sum())
    assert second.composition.figures["max_components_per_person"] == int((m1 + m2).max())


def test_delta_release_after_kvariance_counts_its_components(tmp_path):
    tx, x = _tx(n=120)
    est = KVarianceAnonymizer(k=3, m_max=12, key=Key(41))
    est.fit_release(tx).write(str(tmp_path / "kv"))
    delta = DeltaAnonymizer(delta=3.0, m_max=12, key=Key(42)).fit_transform(tx)
    delta.write(str(tmp_path / "delta"), allow_composition=True)
    _, m = delta.data.compute(progress=False)
    total = est.m_.astype(int) + np.asarray(m, int)
    want = int((total * 3.0 > _variance(x) + 1e-9).sum())
    comp = delta.composition
    assert comp.figures["people_breaking_delta_condition"] == want and want > 0
    assert {c.name for c in comp.checks} == {DELTA_CHECK, KVARIANCE_CHECK}


def test_overlapping_extracts_compose_their_shared_records(tmp_path):
    """Two δ releases of overlapping extracts (records 0-149, then 30-179): the records of both
    (each its own person) get the components of both releases; the others only their own."""
    _, x = _tx()
    first = TransactionArray.from_scipy(sp.csr_array(x[:150]), npartitions=3)
    second = TransactionArray.from_scipy(sp.csr_array(x[30:]), npartitions=2)
    a = DeltaAnonymizer(delta=3.0, m_max=12, key=Key(51)).fit_transform(first)
    a.write(str(tmp_path / "a"))
    b = DeltaAnonymizer(delta=5.0, m_max=12, key=Key(52)).fit_transform(second)
    with pytest.raises(CompositionRefused, match=DELTA_CHECK) as refused:
        b.write(str(tmp_path / "refused"))
    assert "people shared" in str(refused.value)
    b.write(str(tmp_path / "b"), allow_composition=True)
    # the oracle: components per record, by position in the original, both releases' own m
    _, ma = a.data.compute(progress=False)
    _, mb = b.data.compute(progress=False)
    m = np.zeros(x.shape[0], np.int64)
    m[:150] += np.asarray(ma, np.int64)
    m[30:] += np.asarray(mb, np.int64)
    v = _variance(x)
    # distinct records here (each its own person): the shared ones are records 30-149
    rows = np.unique(x[30:], axis=0, return_index=True)[1]
    assert rows.size == x.shape[0] - 30
    breaking = (m[30:] * 3.0 > v[30:] + 1e-9).sum()
    figures = b.composition.figures
    assert b.composition.people["shared"] == {manifest_of_release(tmp_path / "a"): 120}
    assert figures["people_breaking_delta_condition"] == int(breaking) > 0
    assert figures["max_components_per_person"] == int(m[30:].max())


def manifest_of_release(path):
    import json

    return json.loads((path / "_SUCCESS").read_text())["release"]["id"]

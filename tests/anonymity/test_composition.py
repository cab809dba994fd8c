"""Repeated table releases in the ledger (ppdm_dask.anonymity.composition): the intersection of
the equivalence classes of two releases that hold the same people, joined by person in the
ledger, against a brute force over the written files put back in the input's order by the key
holder."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import KAnonymizer, KmAnonymizer
from ppdm_dask.anonymity.composition import (
    CHECK_NAME,
    DIVERSITY_CHECK,
    NOT_PUBLISHED,
    bucket_tuples,
    combine_tuples,
    table_labels,
    tuple_figures,
)
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.data.tables import read_table
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.ledger import CompositionRefused, Ledger
from ppdm_dask.random import Key
from ppdm_dask.release.order import output_positions
from ppdm_dask.verification import open_release
from tests.release.helpers import manifest_of


@pytest.fixture(scope="module")
def people():
    return read_table(str(sample_path("people")), dtype=["age=int"])


def _mondrian(qi, key, k=5, **kw):
    others = [c for c in ("age", "sex", "zip") if c not in qi]
    return KAnonymizer(
        qi, k=k, identifiers="name", sensitive="diagnosis", insensitive=others, method="mondrian", key=Key(key), **kw
    )


def _in_input_order(url, key, original, n):
    """The key holder's view of a written release: its rows put back in the input's order."""
    rel = open_release(url)
    files = int(manifest_of(url)["release"]["row_order"]["files"])
    pos = output_positions(rel.owner_stream_key(Key(key), original), n, files)
    return rel, pos


def _table_in_input_order(url, key, original):
    n = int(original.shape[0].compute())
    rel, pos = _in_input_order(url, key, original, n)
    written = rel.data.compute().reset_index(drop=True)
    assert len(written) == n  # Mondrian suppresses nothing: every input row is in the files
    return written.iloc[pos].reset_index(drop=True)


def _brute_force(classes: list[pd.Series], k: int) -> tuple[int, int]:
    """Records published at least once, and records whose intersection class (the tuple of
    their classes; None: not published) has fewer than k records and fewer than their class in
    each release that publishes them."""
    frame = pd.DataFrame({f"r{j}": c.astype(object) for j, c in enumerate(classes)})
    published = frame.notna().any(axis=1)
    frame = frame[published].fillna("<not published>")
    size = frame.groupby(list(frame.columns))[frame.columns[0]].transform("size")
    alone = pd.Series(np.iinfo(np.int64).max, index=frame.index)
    for j, c in enumerate(classes):
        on = c[published].notna()
        own = frame.loc[on, f"r{j}"].map(frame.loc[on, f"r{j}"].value_counts())
        alone[on] = np.minimum(alone[on], own)
    return int(published.sum()), int(((size < k) & (size < alone)).sum())


def _disclosed(classes: list[pd.Series], sensitive: pd.Series) -> int:
    """Brute force: people published by every release whose intersection class holds one
    sensitive value while their class in each release alone held several."""
    frame = pd.DataFrame({f"r{j}": c.astype(object) for j, c in enumerate(classes)}).assign(s=sensitive.to_numpy())
    both = frame[[f"r{j}" for j in range(len(classes))]].notna().all(axis=1)
    frame = frame[both]
    one_value = frame.groupby([f"r{j}" for j in range(len(classes))])["s"].transform("nunique") == 1
    diverse = np.ones(len(frame), bool)
    for j in range(len(classes)):
        diverse &= (frame.groupby(f"r{j}")["s"].transform("nunique") > 1).to_numpy()
    return int((one_value.to_numpy() & diverse).sum())


def test_two_mondrian_releases_against_the_written_tables(people, tmp_path):
    """The issue's "must show": two Mondrian releases with other quasi-identifiers; the ledger's
    figure is the brute-force intersection of the two written tables' classes."""
    first, second = ["age", "zip"], ["age", "sex"]
    _mondrian(first, 1).fit_release(people).write(str(tmp_path / "r1"))
    heard: list[str] = []
    rel2 = _mondrian(second, 2).fit_release(people)
    with pytest.raises(CompositionRefused) as refused:
        rel2.write(str(tmp_path / "refused"), notify=heard.append)
    assert "--allow-composition" in cli_message(refused.value) and CHECK_NAME in str(refused.value)
    assert any("1 earlier release" in line for line in heard)  # said before the work
    assert not os.path.exists(tmp_path / "refused")  # nothing committed
    manifest = rel2.write(str(tmp_path / "r2"), allow_composition=True)
    figures = rel2.composition.figures

    one = _table_in_input_order(str(tmp_path / "r1"), 1, people)
    two = _table_in_input_order(str(tmp_path / "r2"), 2, people)
    assert (one["diagnosis"] == two["diagnosis"]).all()  # the same input row behind both
    classes = [one[first].astype(str).agg("|".join, axis=1), two[second].astype(str).agg("|".join, axis=1)]
    assert min(c.value_counts().min() for c in classes) >= 5  # each release is 5-anonymous alone
    published, below = _brute_force(classes, 5)
    sizes = pd.DataFrame({"a": classes[0], "b": classes[1]}).groupby(["a", "b"]).size()
    assert below == int(sizes[sizes < 5].sum()) > 0  # here: exactly the records of classes below k
    assert figures["people_below_k"] == below and figures["people_published"] == published == 1000
    assert figures["shared_people_published"] == 1000 and figures["shared_below_k"] == below
    assert figures["share_below_k"] == pytest.approx(below / 1000)
    assert figures["intersection_classes"] == len(sizes) and figures["smallest_intersection_class"] == sizes.min()
    assert figures["people_disclosed"] == _disclosed(classes, one["diagnosis"]) > 0
    assert rel2.composition.people["shared"] == {manifest_of(str(tmp_path / "r1"))["release"]["id"]: 1000}

    # the manifest: releases, k and whether the limits held (accepted, recorded) - never a count
    entry = manifest["release"]["ledger"]["composition"]
    assert entry == {
        "releases": 2,
        "table_releases": 2,
        "k": 5,
        "limits": [
            {"name": CHECK_NAME, "ok": False, "overridden": True},
            {"name": DIVERSITY_CHECK, "ok": False, "overridden": True},
        ],
    }
    assert f"composition: {CHECK_NAME}" in manifest["release"]["overrides"]
    # the owner's ledger keeps the figures of the composition
    recs = {r.status: r for r in Ledger().records() if r.release_id == manifest["release"]["id"]}
    assert sorted(recs) == ["committed", "not committed"]  # the refused attempt, and the accepted one
    assert recs["committed"].composition["figures"]["people_below_k"] == below


def test_labels_do_not_depend_on_the_partitioning(people):
    rows = []
    for parts in (1, 3):
        rel = _mondrian(["age", "zip"], 1).fit_release(people.repartition(npartitions=parts))
        blocks, _ = rel._row_blocks()
        assert len(blocks) == parts
        rows.append(np.concatenate([t.compute()["label"] for t in rel.ledger_rows(blocks)]))
    assert np.array_equal(rows[0], rows[1]) and (rows[0] != NOT_PUBLISHED).all()
    other = _mondrian(["age", "sex"], 2).fit_release(people)
    theirs = np.concatenate([t.compute()["label"] for t in other.ledger_rows(other._row_blocks()[0])])
    figs = [_compose([r, theirs], 5) for r in rows]
    assert figs[0]["people_below_k"] == figs[1]["people_below_k"] > 0


def test_same_classes_again_compose_without_loss(people, tmp_path):
    """The same parameters with another key publish the same classes: the intersection is each
    release's own, nothing falls below k, and the release is accepted."""
    _mondrian(["age", "zip"], 1).fit_release(people).write(str(tmp_path / "r1"))
    rel = _mondrian(["age", "zip"], 7).fit_release(people)
    manifest = rel.write(str(tmp_path / "r2"))
    assert rel.composition.figures["people_below_k"] == 0 and rel.composition.figures["people_disclosed"] == 0
    assert manifest["release"]["ledger"]["composition"]["limits"] == [
        {"name": CHECK_NAME, "ok": True, "overridden": False},
        {"name": DIVERSITY_CHECK, "ok": True, "overridden": False},
    ]


def test_suppressed_records_are_not_published_and_k_is_the_smallest(people):
    """Suppressed rows are labelled "not published"; a record published by one release only is
    in the class of the records published by that release alone."""
    block = pd.DataFrame({"age": ["20-29", "*", "20-29", "30-39"], "zip": ["021**", "*", "021**", "*"]})
    labels = table_labels(block, ["age", "zip"])
    assert labels[1] == NOT_PUBLISHED and labels[0] == labels[2] and labels[3] not in (labels[0], NOT_PUBLISHED)
    a = np.array([1, 1, 1, 0, 0, 2, 2, 2], dtype=np.uint64)  # release 1: two classes of 3, two records suppressed
    b = np.array([5, 5, 6, 6, 6, 6, 0, 0], dtype=np.uint64)  # release 2: a class of 2 (below k = 3 on its own)
    got = _compose([b, a], 3)
    published, below = _brute_force([pd.Series([x or None for x in a.tolist()]), pd.Series([x or None for x in b.tolist()])], 3)
    # by hand: classes (1,5)x2 (1,6)x1 (0,6)x2 (2,6)x1 (2,0)x2 are all below 3, but the two records
    # of (1,5) were already in a class of 2 in release 2 alone: the composition singles out 6
    assert (got["people_published"], got["people_below_k"]) == (published, below) == (8, 6)
    assert got["intersection_classes"] == 5 and got["smallest_intersection_class"] == 1
    assert (got["shared_below_k"], got["only_this_release_below_k"], got["only_earlier_releases_below_k"]) == (2, 2, 2)
    # cut into buckets of people in any way, the counts combine to the same figures
    halves = _compose([b, a], 3, split=True)
    assert halves == got
    assert _compose([b, a, np.zeros(8, np.uint64)], 3)["people_below_k"] == 6
    assert _compose([np.zeros(4, np.uint64), np.zeros(4, np.uint64)], 3)["people_published"] == 0


def _compose(labels: list[np.ndarray], k: int, split: bool = False) -> dict:
    """The ledger's join kernels on label columns (one per release, this one first; person i of
    every column is the same person), in one bucket or cut into two."""
    n = labels[0].size
    person = np.arange(1, n + 1, dtype=np.uint64)
    tables = [{"person": person, "records": np.ones(n, np.int64), "label": np.asarray(c, np.uint64)} for c in labels]
    cuts = [slice(0, n // 2), slice(n // 2, n)] if split else [slice(0, n)]
    parts = [
        bucket_tuples(
            {k2: v[c] for k2, v in tables[0].items()}, [{k2: v[c] for k2, v in t.items()} for t in tables[1:]], weighted=False
        )
        for c in cuts
    ]
    return tuple_figures(combine_tuples(parts), k, k, diversity=False)


def test_an_earlier_release_without_labels_is_a_bound(people, tmp_path):
    """When the ledger holds no people of an earlier release of the same input, every person
    both may publish counts: the limit fails even for the same classes, and a note says why."""
    m1 = _mondrian(["age", "zip"], 1).fit_release(people).write(str(tmp_path / "r1"))
    ledger = Ledger()
    rec = ledger.find(m1["release"]["id"])
    ledger.fs.rm(ledger._path("people", rec.uid), recursive=True)
    rel = _mondrian(["age", "zip"], 7).fit_release(people)
    with pytest.raises(CompositionRefused):
        rel.write(str(tmp_path / "r2"))
    rel.write(str(tmp_path / "r2"), allow_composition=True)
    assert rel.composition.figures["people_below_k"] == 1000
    assert any("no class labels" in n for n in rel.composition.notes)


# ---------------------------------------------------------------------------- k^m
def _baskets(n=240, items=16, seed=3):
    rng = np.random.default_rng(seed)
    return TransactionArray.from_lists(
        [[f"i{j:02d}" for j in sorted(rng.choice(items, rng.integers(1, 5), replace=False))] for _ in range(n)]
    )


def _hierarchy(path, parent) -> str:
    path.write_text("".join(f"i{j:02d};{parent(j)};*\n" for j in range(16)))
    return str(path)


def test_two_km_releases_against_the_written_baskets(tmp_path):
    """Two k^m releases generalising the items along crossing hierarchies (by j // 4 and by
    j % 4): together they tell items apart that each merges."""
    tx = _baskets()
    n = tx.n_transactions
    by_block = _hierarchy(tmp_path / "a.csv", lambda j: f"a{j // 4}")
    by_rest = _hierarchy(tmp_path / "b.csv", lambda j: f"b{j % 4}")
    KmAnonymizer(by_block, k=3, m=2, key=Key(1)).fit_release(tx).write(str(tmp_path / "k1"))
    rel = KmAnonymizer(by_rest, k=4, m=2, key=Key(2)).fit_release(tx)
    with pytest.raises(CompositionRefused):
        rel.write(str(tmp_path / "k2"))
    rel.write(str(tmp_path / "k2"), allow_composition=True)
    figures = rel.composition.figures
    classes = []
    for url, key in ((tmp_path / "k1", 1), (tmp_path / "k2", 2)):
        written, pos = _in_input_order(str(url), key, tx, n)
        lists = written.data.to_lists()
        classes.append(pd.Series(["|".join(sorted(map(str, lists[p]))) for p in pos]))
    published, below = _brute_force(classes, 3)  # k = 3, the smaller of the two
    assert figures["k"] == 3 and figures["people_published"] == published == n
    assert figures["people_below_k"] == below > 0
    # the same parameters again (another key): nothing narrowed, accepted
    fresh = Ledger(tmp_path / "fresh")
    KmAnonymizer(by_block, k=3, m=2, key=Key(5), ledger=fresh).fit_release(tx).write(str(tmp_path / "k3"))
    again = KmAnonymizer(by_block, k=3, m=2, key=Key(6), ledger=fresh).fit_release(tx)
    again.write(str(tmp_path / "k4"))
    assert again.composition.figures["people_below_k"] == 0 and again.composition.checks[0].ok
    # a release of the raw baskets (k^1 needs no generalisation here) already has whole baskets
    # below k on its own - k^m protects m known items, not the basket: composing it with a
    # coarser release singles out nobody beyond it
    raw = KmAnonymizer(by_rest, k=2, m=1, key=Key(7), ledger=fresh).fit_release(tx)
    raw.write(str(tmp_path / "k5"))
    assert raw.figures["utility"]["cut"] == [] and raw.composition.figures["people_below_k"] == 0
    assert raw.composition.figures["smallest_intersection_class"] == 1

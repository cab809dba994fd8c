"""Repeated KRIMP generator releases of one input (docs/krimp.md#repeated-releases): the ledger
counts them and the owner's report measures the union of their generated rows against the
original. Oracle: the two written releases read back as lists of labels, concatenated, and the
copies recounted with Python sets and counters (NAS by the list path of :mod:`.scores`, which
counts ``frozenset`` rows exactly)."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from ppdm_dask.data.datasets import load_sample
from ppdm_dask.krimp import KrimpGenerator
from ppdm_dask.krimp.composition import union_figures
from ppdm_dask.krimp.scores import normalized_anonymity_score
from ppdm_dask.random import Key
from ppdm_dask.verification import open_release


@pytest.fixture(scope="module")
def iris():
    return load_sample("iris")


def _write(tx, url, key, lines=None):
    # copies of unique records allowed (named, recorded): other keys copy other records
    rel = KrimpGenerator(2, key=Key(key), allow_weak=["unique copies"]).fit(tx).release()
    return rel, rel.write(str(url), notify=(lines.append if lines is not None else None))


def _rows(url):
    return [frozenset(r) for r in open_release(str(url)).data.to_lists()]


def _oracle(union, original):
    counts = Counter(original)
    unique = {r for r, c in counts.items() if c == 1}
    return {
        "union_unique_copies": sum(1 for r in union if r in unique),
        "union_unique_records_copied": len(unique & set(union)),
        "union_rows_copying_records": 100.0 * sum(1 for r in union if r in counts) / len(union),
        "union_rows_reproduced": 100.0 * sum(c for r, c in counts.items() if r in set(union)) / len(original),
    }


def test_union_of_two_releases_recounted_by_brute_force(iris, tmp_path):
    _write(iris, tmp_path / "k1", 1)
    lines: list[str] = []
    rel2, m2 = _write(iris, tmp_path / "k2", 2, lines)
    assert m2["release"]["ledger"]["composition"]["releases"] == 2
    assert any("1 earlier release(s)" in line for line in lines)
    fig = union_figures(open_release(str(tmp_path / "k2")).adopt(rel2), iris)
    items = {i.id: i for i in fig.risk}

    original = [frozenset(r) for r in iris.to_lists()]
    mine, theirs = _rows(tmp_path / "k2"), _rows(tmp_path / "k1")
    want, alone = _oracle(mine + theirs, original), _oracle(mine, original)
    assert items["union_releases"].value == 2
    for name in ("union_unique_copies", "union_unique_records_copied"):
        assert items[name].value == want[name], name
    for name in ("union_rows_copying_records", "union_rows_reproduced"):
        assert items[name].value == pytest.approx(want[name]), name
    assert items["union_nas"].value == pytest.approx(
        normalized_anonymity_score([list(r) for r in mine + theirs], [list(r) for r in original])
    )
    assert f"this release alone copies {alone['union_unique_records_copied']}" in items["union_unique_records_copied"].note
    assert all(items[i].about == "comparison" for i in items if i != "union_releases")
    # other keys copy other unique records: the union gives away more than this release
    assert want["union_unique_records_copied"] > alone["union_unique_records_copied"]
    assert [w.id for w in fig.warnings] == ["union_copies"] and fig.warnings[0].about == "comparison"


def test_deleted_earlier_release_is_noted_unreadable(iris, tmp_path):
    rel1, m1 = _write(iris, tmp_path / "k1", 1)
    shutil.rmtree(tmp_path / "k1")
    lines: list[str] = []
    rel2, m2 = _write(iris, tmp_path / "k2", 2, lines)
    assert m2["release"]["ledger"]["composition"]["releases"] == 2
    rid = m1["release"]["id"][:12]
    assert any(rid in line and "deleted or moved" in line for line in lines)
    fig = union_figures(open_release(str(tmp_path / "k2")).adopt(rel2), iris)
    items = {i.id: i for i in fig.risk}
    assert rid in items["union_unreadable"].text and "deleted or moved" in items["union_unreadable"].text
    assert "union_unique_copies" not in items and not fig.warnings
    # the report without the original still counts the releases and says what is missing
    report = open_release(str(tmp_path / "k2")).adopt(rel2).report_figures(None)
    assert "union_releases" in {i.id for i in report.risk} and "union_unreadable" in {i.id for i in report.risk}


def test_generator_passes_its_ledger_to_the_release(iris, tmp_path):
    gen = KrimpGenerator(2, key=Key(4), ledger=None)
    assert gen.get_params()["ledger"] is None and KrimpGenerator(**gen.get_params()).get_params() == gen.get_params()
    rel = gen.fit(iris).release()
    assert rel.ledger is None
    assert rel.write(str(tmp_path / "none"))["release"]["ledger"]["recorded"] is False

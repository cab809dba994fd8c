"""Repeated condensed releases of one input (docs/condensation.md#repeated-releases): the
ledger counts them and the owner's report measures the union of their pseudo-records against
the original. Oracle: the two written releases read back, concatenated, and every figure of the
union recounted from the full distance matrix and row-by-row equality in numpy."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from ppdm_dask.condensation import Condenser, StreamingCondenser
from ppdm_dask.condensation.composition import union_figures
from ppdm_dask.ledger import Ledger, Record
from ppdm_dask.ledger.earlier import unreadable_reason
from ppdm_dask.random import Key
from ppdm_dask.report.build import for_audience
from ppdm_dask.verification import open_release


def _data(n=150, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, 3)) * [1.0, 2.0, 0.5], columns=["a", "b", "c"])


def _write(df, url, key, lines=None):
    # levels drawn from 1-3 (the drawn levels are not part of the input): groups of one record
    # copy their record, and other keys draw other such groups
    rel = Condenser(privacy_levels=(1, 3), key=Key(key), allow_weak=True).fit(df).release()
    manifest = rel.write(str(url), notify=(lines.append if lines is not None else None))
    return rel, manifest


def _oracle(P, X, own_rows):
    """Every union figure by brute force: ``P`` the union's pseudo-records (this release's the
    first ``own_rows``), ``X`` the original."""
    D = np.sqrt(((P[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    j = np.argmin(D, axis=1)
    dcr = D[np.arange(P.shape[0]), j]
    XX = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(XX, np.inf)
    nn = XX.min(axis=1)
    tol = 1e-9 * np.maximum(1.0, np.abs(X[j]).max(axis=1))
    equal = (P[:, None, :] == X[None, :, :]).all(axis=2)  # exact equality, row by row
    unique_x = (X[:, None, :] == X[None, :, :]).all(axis=2).sum(axis=1) == 1  # no other original has its values
    unique_hit = equal & unique_x[None, :]
    copied = np.flatnonzero(unique_hit.any(axis=0))
    copied_here = np.flatnonzero(unique_hit[:own_rows].any(axis=0))
    return {
        "union_pseudo_copies": int(np.count_nonzero((dcr <= tol) & (nn[j] > tol))),
        "union_originals_copied": int(copied.size),
        "alone": int(copied_here.size),
        "union_dcr_median": float(np.median(dcr)),
        "union_dcr_p5": float(np.percentile(dcr, 5)),
        "union_dcr_closer_than_neighbour": 100.0 * float(np.mean(dcr < nn[j])),
        "union_dcr_below_original_p5": 100.0 * float(np.mean(dcr < np.percentile(nn, 5))),
    }


def test_union_of_two_releases_recounted_by_brute_force(tmp_path):
    df = _data()
    _write(df, tmp_path / "r1", 1)
    lines: list[str] = []
    rel2, m2 = _write(df, tmp_path / "r2", 2, lines)
    assert m2["release"]["ledger"]["composition"]["releases"] == 2
    assert any("1 earlier release(s)" in line for line in lines)
    written = open_release(str(tmp_path / "r2")).adopt(rel2)
    doc = written.report(df, verify=False)
    items = {i["id"]: i for s in doc["sections"] for i in s["items"]}

    P1 = open_release(str(tmp_path / "r1")).data.compute().to_numpy(dtype=float)
    P2 = open_release(str(tmp_path / "r2")).data.compute().to_numpy(dtype=float)
    want = _oracle(np.concatenate([P2, P1]), df.to_numpy(), P2.shape[0])
    assert items["union_releases"]["value"] == 2
    for name in ("union_pseudo_copies", "union_originals_copied"):
        assert items[name]["value"] == want[name], name
    for name in ("union_dcr_median", "union_dcr_p5", "union_dcr_closer_than_neighbour", "union_dcr_below_original_p5"):
        assert items[name]["value"] == pytest.approx(want[name]), name
    assert f"this release alone copies {want['alone']}" in items["union_originals_copied"]["note"]
    # the union is the concatenation: its copies add up the two releases' own
    assert want["union_pseudo_copies"] == items["pseudo_copies"]["value"] + _oracle(P1, df.to_numpy(), 0)["union_pseudo_copies"]
    # other keys copy other records (groups of one): the union gives away more than this release
    assert want["union_originals_copied"] > want["alone"]
    assert doc["decision"]["colour"] == "amber"
    assert any("copies" in w and "this release alone" in w for w in doc["decision"]["owner_warnings"])
    # the external report shows the count of releases (public in the manifest), nothing of the union
    ext = for_audience(doc, "external")
    ext_ids = {i["id"] for s in ext["sections"] for i in s["items"]}
    assert "union_releases" in ext_ids and not {i for i in ext_ids if i.startswith("union_") and i != "union_releases"}
    assert not any("this release alone" in w for w in ext["decision"]["warnings"])


def test_deleted_earlier_release_is_noted_unreadable(tmp_path):
    df = _data(80)
    rel1, m1 = _write(df, tmp_path / "r1", 1)
    shutil.rmtree(tmp_path / "r1")
    lines: list[str] = []
    rel2, m2 = _write(df, tmp_path / "r2", 2, lines)
    assert m2["release"]["ledger"]["composition"]["releases"] == 2
    rid = m1["release"]["id"][:12]
    assert any(rid in line and "deleted or moved" in line for line in lines)
    written = open_release(str(tmp_path / "r2")).adopt(rel2)
    fig = union_figures(written, df)
    items = {i.id: i for i in fig.risk}
    assert items["union_releases"].value == 2
    assert rid in items["union_unreadable"].text and "deleted or moved" in items["union_unreadable"].text
    assert items["union_unreadable"].about == "comparison"
    assert "union_pseudo_copies" not in items and not fig.warnings  # nothing readable to measure


def test_overwritten_destination_is_not_the_recorded_release(tmp_path):
    df = _data(60)
    _, m = _write(df, tmp_path / "r1", 1)
    other = Record({"record": "x", "release_id": "0" * 32, "destination": str(tmp_path / "r1")})
    assert "another release" in unreadable_reason(other, "condensation")
    same = Record({"record": "y", "release_id": m["release"]["id"], "destination": str(tmp_path / "r1")})
    assert unreadable_reason(same, "condensation") == ""
    assert "not one of krimp" in unreadable_reason(same, "krimp")


def test_first_release_and_release_read_from_disk(tmp_path):
    df = _data(60)
    rel1, _ = _write(df, tmp_path / "r1", 1)
    assert union_figures(open_release(str(tmp_path / "r1")).adopt(rel1), df).risk == []
    _write(df, tmp_path / "r2", 2)
    # read from disk without the fitted release (ppdm report later): found in the ledger by its id
    fig = union_figures(open_release(str(tmp_path / "r2")), df)
    assert {i.id: i.value for i in fig.risk if hasattr(i, "value")}["union_releases"] == 2
    assert "union_pseudo_copies" in {i.id for i in fig.risk}
    # without the original: the count and a note
    fig = union_figures(open_release(str(tmp_path / "r2")), None)
    assert [i.id for i in fig.risk if i.id.startswith("union_releases")] and any(
        "need the original" in n for n in fig.needs_original
    )


@pytest.mark.parametrize(
    "make",
    [lambda **kw: Condenser(privacy_levels=3, **kw), lambda **kw: StreamingCondenser(privacy_levels=3, **kw)],
    ids=["static", "dynamic"],
)
def test_estimators_pass_their_ledger_to_the_release(tmp_path, make):
    df = _data(60)
    est = make(key=Key(5), ledger=None)
    assert est.get_params()["ledger"] is None and type(est)(**est.get_params()).get_params() == est.get_params()
    rel = est.fit(df).release()
    assert rel.ledger is None
    assert rel.write(str(tmp_path / "none"))["release"]["ledger"]["recorded"] is False
    mine = Ledger(tmp_path / "mine")
    rel = make(key=Key(5), ledger=mine).fit(df).release()
    assert rel.ledger is mine
    rel.write(str(tmp_path / "mine-release"))
    assert len(mine.records()) == 1 and mine.records()[0].family == "condensation"


def test_an_overlapping_extract_composes_with_the_release_of_its_records(tmp_path):
    """The union is taken over every earlier release that holds the same records (each record
    its own person here), whatever its input: a release of records 0-149, then one of records
    50-199 composes with it (100 records shared), while a release of other records does not."""
    df = _data(n=200)
    first, m1 = _write(df.iloc[:150].reset_index(drop=True), tmp_path / "first", 1)
    _write(_data(n=150, seed=9), tmp_path / "other", 2)  # other records: nobody shared
    second = Condenser(privacy_levels=(1, 3), key=Key(3), allow_weak=True).fit(df.iloc[50:].reset_index(drop=True)).release()
    second.write(str(tmp_path / "second"))
    comp = second.composition
    assert [r.release_id for r in comp.earlier] == [m1["release"]["id"]]
    assert comp.people["shared"] == {m1["release"]["id"]: 100}
    assert comp.people["kind"] == "record" and comp.releases == 2

"""Attacks on sketch releases (docs/sketches.md#what-an-attacker-can-still-learn), on generated
data: two releases of the same records with one key file share neither their random vectors
nor their row order (before per-release streams: one generator seed for both, rows at one
position with |cosine| 0.9995 against 0.23 at random positions); no count of the original in
the public files."""

from __future__ import annotations

import numpy as np
import pytest

from ppdm_dask import Key
from ppdm_dask.data.quest import quest
from ppdm_dask.release.attacks import public_files
from ppdm_dask.sketch import DeltaAnonymizer, SketchGenerator, sketch
from ppdm_dask.sketch.attacks import component_correlation, release_linkage


@pytest.fixture(scope="module")
def tx():
    """T10.I4.D2K.N200: 2,000 baskets, 4 with at most one item (suppressed at δ = 0.3 and 0.5)."""
    return quest("T10.I4.D2K.N200", key=Key(1)).persist(progress=False)


def test_two_releases_with_one_key_share_no_random_vectors_or_order(tx, tmp_path):
    key = Key(7)
    rels = [DeltaAnonymizer(delta=d, m_max=256, key=key).fit_transform(tx) for d in (0.3, 0.5)]
    seeds = [r.data.generator.seed for r in rels]
    assert seeds[0] != seeds[1]
    # unrelated seeds: the same record's first component in the two releases is uncorrelated
    # (one generator gives exactly the same first component: correlation 1, the control)
    rho = component_correlation(rels[0].data, rels[1].data)
    assert abs(rho) < 4 / np.sqrt(tx.n_transactions), rho
    same_gen = sketch(tx, rels[1].data.m, generator=rels[0].data.generator, m_max=256)
    assert component_correlation(rels[0].data, same_gen) == pytest.approx(1.0)
    # nor do the written rows line up by position
    urls = [str(tmp_path / f"d{i}") for i in range(2)]
    for r, u in zip(rels, urls):
        r.write(u, allow_composition=True)  # two releases of one input: the ledger's limit accepted (recorded)
    link = release_linkage(*urls)
    assert link["cosine"]["ratio"] <= 1.1 and link["variance"]["ratio"] <= 1.1, link
    # the similarities do tell one record's rows apart when they line up: a release and itself
    self_link = release_linkage(urls[0], urls[0])
    assert self_link["cosine"]["ratio"] > 3 and self_link["variance"]["ratio"] > 2, self_link


def test_public_files_hold_no_count_of_the_original(tx, tmp_path):
    url = str(tmp_path / "d")
    rel = DeltaAnonymizer(delta=0.3, m_max=16, key=Key(2)).fit_transform(tx)
    manifest = rel.write(url)
    records = rel.summary()["records"]
    assert records["suppressed"] > 0 and records["input"] == tx.n_transactions  # the owner's figures
    files = public_files(url)
    blob = b"\n".join(files.values())
    for field in (
        b'"n_records"',
        b'"n_suppressed"',
        b'"input": ' + str(records["input"]).encode(),
        b'"suppressed": ' + str(records["suppressed"]).encode(),
    ):
        assert field not in blob, field
    assert manifest["n_published"] == records["published"] and manifest["summary"]["records"] == {
        "released": records["published"]
    }
    # the generator's seed is public by design: the sketches are decoded with it
    assert manifest["generator"]["seed"] == str(rel.data.generator.seed)
    assert SketchGenerator.from_metadata(manifest["generator"]).seed == rel.data.generator.seed

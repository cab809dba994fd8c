"""Distance to closest record, exact copies and their redraw (docs/condensation.md#distance-to-closest-record,
docs/condensation.md#synthetic-data-rules) against brute-force numpy oracles on small data:
the full distance matrix, and the set of original rows."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest

from ppdm_dask.condensation import Condenser, GroupTable, privacy_levels
from ppdm_dask.condensation import closest as C
from ppdm_dask.condensation.copies import RowKeys, exact_copies, row_keys
from ppdm_dask.condensation.pseudo import generate_dask
from ppdm_dask.condensation.release import redraw_copies
from ppdm_dask.random import Key


def _oracle(pseudo, original):
    """(dcr, closest original, that original's nearest other original) by the full distance matrix."""
    P, X = np.asarray(pseudo, float), np.asarray(original, float)
    D = np.sqrt(((P[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    j = np.argmin(D, axis=1)
    XX = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(XX, np.inf)
    return D[np.arange(P.shape[0]), j], j, XX.min(axis=1)


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 3.0, 0.5][:d]
    X[10] = X[11]  # a duplicated record: not unique
    return X


def test_closeness_matches_brute_force():
    X = _data()
    rng = np.random.default_rng(1)
    P = X[rng.integers(0, 400, 300)] + rng.normal(scale=0.05, size=(300, 3))
    P[0] = X[5]  # a copy of a unique record
    P[1] = X[10]  # a copy of a duplicated record
    P[2] = X[7] * (1 + 1e-13)  # within float tolerance of a unique record
    parts = [dask.delayed(P[:120]), dask.delayed(P[120:])]
    got = C.closeness(parts, 300, da.from_array(X, chunks=(97, 3)))
    dcr, j, nn = _oracle(P, X)
    assert got.measured == got.released == 300
    np.testing.assert_allclose(got.dcr, dcr, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(got.nearest[3:], j[3:])  # 0..2: distance ties between duplicates aside
    np.testing.assert_allclose(got.neighbour, nn[got.nearest], rtol=1e-12)
    np.testing.assert_allclose(np.sort(got.original_nn), np.sort(nn), rtol=1e-12)  # every original measured
    assert got.share_closer == pytest.approx(np.mean(dcr < nn[j]))
    assert np.flatnonzero(got.copies).tolist() == [0, 1, 2] and np.flatnonzero(got.unique_copies).tolist() == [0, 2]
    p5 = got.percentile(5)
    assert p5[0] == pytest.approx(np.percentile(dcr, 5)) and p5[1] == pytest.approx(np.percentile(nn, 5))


def test_closeness_measures_a_sample_beyond_the_limit(monkeypatch):
    monkeypatch.setattr(C, "QUERY_LIMIT", 100)
    X = _data(600, seed=2)
    P = np.random.default_rng(3).normal(size=(500, 3))
    got = C.closeness([dask.delayed(P[:250]), dask.delayed(P[250:])], 500, da.from_array(X, chunks=(150, 3)))
    assert 50 < got.measured < 160 and got.released == 500 and 50 < got.original_nn.size < 170
    full = _oracle(P, X)[0]
    sampled = np.concatenate([C.sample_block(P[:250], 0, 100 / 500, 0), C.sample_block(P[250:], 1, 100 / 500, 0)])
    np.testing.assert_allclose(got.dcr, _oracle(sampled, X)[0], rtol=1e-12)
    assert set(np.round(got.dcr, 12)) <= set(np.round(full, 12))


def test_exact_copies_match_the_set_of_original_rows():
    X = _data(300, seed=4)
    rng = np.random.default_rng(5)
    P = rng.normal(size=(200, 3))
    picks = [3, 10, 11, 250]
    P[[5, 40, 41, 199]] = X[picks]
    P[60] = -0.0 * X[3] + X[3]  # the same values (with -0.0 where 0.0)
    got = exact_copies([P[:77], P[77:]], [X[:100], X[100:]])
    pseudo_rows = np.array([b * 77 + r for b, r in got.pseudo])
    # oracle: each pseudo-row looked up among the original rows
    orig = {tuple(x): [] for x in X}
    for i, x in enumerate(X):
        orig[tuple(x)].append(i)
    expected = [i for i, y in enumerate(P) if tuple(y) in orig]
    assert pseudo_rows.tolist() == expected == [5, 40, 41, 60, 199]
    assert got.count.tolist() == [1, 2, 2, 1, 1] and got.n_unique == 3
    assert [b * 100 + r for b, r in got.original] == [3, 10, 10, 3, 250]
    # the row keys of a stream stand in for its records
    keyed = exact_copies([P], [RowKeys(row_keys(X[:150])), RowKeys(row_keys(X[150:]))])
    assert keyed.pseudo[:, 1].tolist() == expected


def test_a_pseudo_record_copying_a_unique_original_is_drawn_again():
    X = np.random.default_rng(6).normal(size=(60, 2))
    p = privacy_levels(60, 2, 4, key=1)
    groups = Condenser(rows_per_partition=None, key=Key(2)).fit(X, p).groups_
    key = Key(3)
    first = generate_dask(groups, key=key, rows_per_block=25).compute()
    # an original that is one of the pseudo-records: the rule must move it
    originals = np.vstack([X, first[17]])
    redraw, counts = redraw_copies(groups, key, da.from_array(originals, chunks=(20, 2)), rows_per_block=25)
    assert redraw == {17: 1} and counts == {"copies_found": 1, "pseudo_records_redrawn": 1, "unique_copies_left": 0}
    again = generate_dask(groups, key=key, rows_per_block=25, redraw=redraw).compute()
    changed = np.flatnonzero((again != first).any(axis=1))
    assert changed.tolist() == [17] and not (again[:, None, :] == originals[None]).all(axis=2).any()
    # the same row of another block cut is drawn the same way
    np.testing.assert_array_equal(generate_dask(groups, key=key, rows_per_block=7, redraw=redraw).compute(), again)
    # a duplicated original is not unique: nothing to redraw
    dup = np.vstack([originals, first[17]])
    assert redraw_copies(groups, key, da.from_array(dup, chunks=(30, 2)))[1]["copies_found"] == 0


def test_groups_of_one_record_cannot_be_redrawn():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [9.0, 1.0]])
    groups = GroupTable.from_points(X, [2, 2, 1, 1], np.array([0, 0, 1, 2]))
    redraw, counts = redraw_copies(groups, Key(1), da.from_array(X, chunks=(2, 2)))
    assert redraw == {} and counts == {"copies_found": 2, "pseudo_records_redrawn": 0, "unique_copies_left": 2}


def test_report_figures_recount_against_brute_force():
    rng = np.random.default_rng(7)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    rel = Condenser(privacy_levels=(2, 5), key=Key(4)).fit(df).release()
    items = {i.id: i for i in rel.report_figures(df).risk}
    P, X = rel.data.compute().to_numpy(), df.to_numpy()
    dcr, j, nn = _oracle(P, X)
    assert items["dcr_closer_than_neighbour"].value == pytest.approx(100 * np.mean(dcr < nn[j]))
    assert items["dcr_p5"].value == pytest.approx(np.percentile(dcr, 5))
    assert items["original_nn_p5"].value == pytest.approx(np.percentile(nn, 5))
    assert items["dcr_ratio_p5"].value == pytest.approx(np.percentile(dcr, 5) / np.percentile(nn, 5))
    assert items["pseudo_copies"].value == 0 and items["pseudo_records_redrawn"].value == 0
    assert all(items[k].about == "comparison" for k in ("dcr_closer_than_neighbour", "dcr_histogram", "membership_advantage"))
    hist = items["dcr_histogram"].series
    assert sum(hist[0].y) == 300 and sum(hist[1].y) == 300
    assert 0.0 <= items["membership_advantage"].value <= 1.0

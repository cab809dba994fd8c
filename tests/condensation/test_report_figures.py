"""Report figures of condensed releases against independent recounts: group size against the
largest privacy level from the written ``_groups.parquet``, μ from numpy covariances, 1-NN
accuracy from scikit-learn; the figures do not depend on the partitioning; Pima."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ppdm_dask.condensation import Condenser, privacy_levels
from ppdm_dask.condensation import report_figures as RF
from ppdm_dask.condensation.release import GROUPS_FILE
from ppdm_dask.random import Key
from ppdm_dask.release import Release


def _frame(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(6, d))
    lab = rng.integers(6, size=n)
    df = pd.DataFrame(c[lab] + rng.standard_normal((n, d)), columns=[f"x{j}" for j in range(d)])
    df["class"] = (lab % 3).astype(float)
    return df, privacy_levels(n, 2, 6, key=seed + 1)


def _items(fig):
    return {i.id: i for i in (*fig.risk, *fig.utility)}


def _mu(a, b):
    """Pearson correlation of the covariance entries i <= j (population covariances)."""
    iu = np.triu_indices(a.shape[1])
    return np.corrcoef(np.cov(a, rowvar=False, bias=True)[iu], np.cov(b, rowvar=False, bias=True)[iu])[0, 1]


def test_group_figures_match_the_written_groups_file(tmp_path):
    df, p = _frame()
    Condenser(rows_per_partition=250, key=Key(7)).fit(df, p).release().write(str(tmp_path / "c"))
    items = _items(Release.open(str(tmp_path / "c")).report_figures())
    t = pq.read_table(tmp_path / "c" / GROUPS_FILE)
    n, p_max = t.column("n").to_numpy(), t.column("p_max").to_numpy()
    assert p_max.max() == p.max() and n.sum() == len(df)
    assert items["groups_below_level"].value == int((n < p_max).sum()) == 0
    assert items["min_size_margin"].value == int((n - p_max).min())
    assert items["groups"].value == len(n) and items["smallest_group"].value == n.min()
    rows = {r[0]: r[1:] for r in items["groups_by_level"].rows}
    for level in np.unique(p_max):
        sel = n[p_max == level]
        assert rows[level][:3] == [len(sel), sel.sum(), sel.min()] and rows[level][3] == pytest.approx(sel.mean())
    groups, line = items["group_size_vs_level"].series
    assert set(zip(groups.x, groups.y)) == set(zip(p_max.tolist(), n.tolist()))
    assert list(line.x) == list(line.y) == np.unique(p_max).tolist()
    hist = items["group_size_hist"].series[0]
    counts, _ = np.histogram(n, bins=np.asarray(hist.x))
    assert list(hist.y) == counts.tolist()


def test_covariance_compatibility_matches_numpy():
    df, p = _frame()
    rel = Condenser(rows_per_partition=250, key=Key(7)).fit(df, p).release()
    items = _items(rel.report_figures(df))
    pseudo = rel.data.compute().to_numpy()
    X = df.to_numpy()
    assert items["covariance_compatibility"].value == pytest.approx(_mu(X, pseudo), rel=1e-9)
    sc = items["covariance_scatter"].series[0]
    iu = np.triu_indices(X.shape[1])
    np.testing.assert_allclose(sc.x, np.cov(X, rowvar=False, bias=True)[iu], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sc.y, np.cov(pseudo, rowvar=False, bias=True)[iu], rtol=1e-9, atol=1e-9)
    assert all(i.about == "comparison" for i in _items(rel.report_figures(df)).values() if i.id.startswith(("cov", "nn_")))


def _sklearn_accuracies(X, pseudo, label):
    from sklearn.neighbors import KNeighborsClassifier

    N = X.shape[0]
    test = np.sort(np.random.default_rng(RF._TEST_SEED).permutation(N)[: min(RF.TEST_SAMPLE, N // 3)])  # public sample
    train = np.setdiff1d(np.arange(N), test)
    feats = [j for j in range(X.shape[1]) if j != label]
    classes = np.unique(X[:, label])
    # a pseudo-record's class value is continuous: its class is the nearest class value
    py = classes[np.argmin(np.abs(pseudo[:, label][:, None] - classes[None, :]), axis=1)]
    acc = KNeighborsClassifier(1).fit(pseudo[:, feats], py).score(X[test][:, feats], X[test, label])
    base = KNeighborsClassifier(1).fit(X[train][:, feats], X[train, label]).score(X[test][:, feats], X[test, label])
    return acc, base


def test_nn_accuracy_matches_sklearn():
    df, p = _frame(n=900, seed=4)
    df[["x0", "x1", "x2"]] += np.random.default_rng(1).standard_normal((900, 3)) * 4  # overlapping classes
    rel = Condenser(rows_per_partition=300, key=Key(7)).fit(df, p).release()
    items = _items(rel.report_figures(df))
    acc, base = _sklearn_accuracies(df.to_numpy(), rel.data.compute().to_numpy(), 3)
    assert 0.3 < base < 1
    assert items["nn_accuracy_pseudo"].value == pytest.approx(acc)
    assert items["nn_accuracy_original"].value == pytest.approx(base)
    assert items["nn_accuracy_ratio"].value == pytest.approx(acc / base)


def test_no_class_column_no_accuracy():
    df, p = _frame()
    df = df.drop(columns="class")
    fig = Condenser(rows_per_partition=250, key=Key(7)).fit(df, p).release().report_figures(df)
    assert "covariance_compatibility" in fig.ids() and "nn_accuracy_pseudo" not in fig.ids()
    assert any("class column" in n for n in fig.notes)


def test_figures_do_not_depend_on_the_partitioning():
    df, p = _frame()
    rel = Condenser(rows_per_partition=250, key=Key(7)).fit(df, p).release()
    pseudo = rel.data.compute()
    out = []
    for parts in (1, 3):
        rel.data = dd.from_pandas(pseudo, npartitions=parts)
        fig = rel.report_figures(dd.from_pandas(df, npartitions=parts))
        out.append({i.id: i.to_dict() for i in (*fig.risk, *fig.utility)})
    assert out[0].keys() == out[1].keys()
    for k in out[0]:
        a, b = out[0][k], out[1][k]
        if k in ("covariance_compatibility", "covariance_scatter"):  # float sums in another order
            assert np.allclose(np.asarray(a.get("value", 0), float), np.asarray(b.get("value", 0), float), rtol=1e-12)
            if "series" in a:
                np.testing.assert_allclose(a["series"][0]["y"], b["series"][0]["y"], rtol=1e-10)
        else:
            assert a == b, k


def test_pima_condensed(shared_data, tmp_path):
    from ppdm_dask.data.uci import load_uci

    X, y = load_uci("pima", shared_data / "uci")
    df = pd.DataFrame(X, columns=[f"a{j}" for j in range(X.shape[1])])
    df["class"] = y.astype(float)
    p = privacy_levels(len(df), 6, 10, key=2)
    Condenser(key=Key(9)).fit(df, p).release().write(str(tmp_path / "pima"))
    items = _items(Release.open(str(tmp_path / "pima")).report_figures(df))
    t = pq.read_table(tmp_path / "pima" / GROUPS_FILE)
    n, p_max = t.column("n").to_numpy(), t.column("p_max").to_numpy()
    assert items["groups_below_level"].value == 0 and items["groups"].value == len(n) and p_max.max() == p.max()
    # the pseudo-data as written
    import glob

    pseudo = pd.concat([pq.read_table(f).to_pandas() for f in sorted(glob.glob(str(tmp_path / "pima" / "part-*.parquet")))])
    pseudo = pseudo[list(df.columns)].to_numpy()
    assert items["covariance_compatibility"].value == pytest.approx(_mu(df.to_numpy(), pseudo), rel=1e-9)
    acc, base = _sklearn_accuracies(df.to_numpy(), pseudo, X.shape[1])
    assert items["nn_accuracy_pseudo"].value == pytest.approx(acc)
    assert items["nn_accuracy_original"].value == pytest.approx(base) and 0.5 < base < 1

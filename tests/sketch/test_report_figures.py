"""Report figures of sketch releases against independent recounts: the components histogram and
the suppressed share from the written Parquet parts, the per-record variance margins from the
original written out in numpy, the similarity errors from exact numpy dot products, the 1-NN
baseline from scikit-learn; the figures do not depend on the partitioning; 20 Newsgroups."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.random import Key
from ppdm_dask.release import Release
from ppdm_dask.sketch import DeltaAnonymizer, KVarianceAnonymizer
from ppdm_dask.sketch import report_figures as RF


def _x(n=240, d=40, seed=0, continuous=False):
    rng = np.random.default_rng(seed)
    mask = rng.random((n, d)) < 0.15
    vals = rng.random((n, d)) * 3 + 0.1 if continuous else rng.integers(1, 4, size=(n, d))
    x = (mask * vals).astype(np.float32).astype(np.float64)  # weights are stored as float32
    x[:3] = 0.0
    x[3, :] = 0.0
    x[3, 5] = 2.0  # one non-zero: suppressed by the δ rule
    return x


def _tx(x, npartitions=3, record_ids=False):
    cols = {"label": np.arange(x.shape[0]) % 3}
    if record_ids:
        cols["record_id"] = np.arange(x.shape[0], dtype=np.int64) * 7 + 1
    return TransactionArray.from_scipy(sp.csr_array(x), npartitions=npartitions, columns=cols)


def _items(fig):
    return {i.id: i for i in (*fig.risk, *fig.utility)}


def _v_delta(x):
    """V = |x|^2 - max_t x_t^2, 0 with at most one non-zero (the δ condition's variance numerator)."""
    sq = x**2
    return np.where((x != 0).sum(1) > 1, sq.sum(1) - sq.max(1), 0.0)


def _parts_m(folder):
    import json

    man = json.loads((folder / "_SUCCESS").read_text())
    return man, np.concatenate(
        [pq.read_table(folder / p["file"], columns=["m"]).column("m").to_numpy() for p in man["partitions"]]
    )


@pytest.mark.parametrize("keep_suppressed", [True, False])
def test_components_and_suppressed_share_match_the_written_parts(tmp_path, keep_suppressed):
    x = _x()
    rel = DeltaAnonymizer(delta=3.0, m_max=16, key=Key(11), keep_suppressed=keep_suppressed).fit_transform(_tx(x))
    rel.write(str(tmp_path / "r"), rows_per_file=70)
    fig = Release.open(str(tmp_path / "r")).report_figures()
    man, m = _parts_m(tmp_path / "r")
    n_sup = int((np.asarray(rel.data.m.compute()) == 0).sum())  # the owner's count, from the release in memory
    assert n_sup > 0
    items = _items(fig)
    assert items["published_records"].value == int((m > 0).sum())
    assert items["mean_components"].value == pytest.approx(m[m > 0].mean())
    hist = items["components_hist"].series[0]
    want = np.bincount(m, minlength=17)
    lo = int(np.flatnonzero(want)[0])
    assert np.allclose(np.diff(hist.x), 1.0) and hist.x[0] == lo - 0.5  # one bin per m (m_max = 16)
    assert list(hist.y) == want[lo : lo + len(hist.y)].tolist() and sum(hist.y) == m.size
    assert all(i.about == "release" for i in fig.risk) and fig.utility == []
    assert any("need the original" in n for n in fig.needs_original)  # margins and utility
    if keep_suppressed:  # the suppressed records are published as empty rows: anybody recounts them
        assert int((m == 0).sum()) == n_sup and man["n_suppressed"] == n_sup and man["n_records"] == 240
        assert items["suppressed_share"].value == pytest.approx(100 * n_sup / 240)
    else:  # not in the files: the number suppressed is the owner's figure, about the original
        assert "n_records" not in man and "n_suppressed" not in man and "suppressed_share" not in items
        owner = _items(Release.open(str(tmp_path / "r")).adopt(rel).report_figures())["suppressed_share"]
        assert owner.about == "original" and owner.value == pytest.approx(100 * n_sup / 240)


def test_delta_margins_match_a_numpy_recount():
    x = _x()
    delta = 3.0
    tx = _tx(x)
    rel = DeltaAnonymizer(delta=delta, m_max=16, key=Key(11)).fit_transform(tx)
    items = _items(rel.report_figures(tx))
    _, m = rel.data.compute(progress=False)
    pub = m > 0
    ratio = _v_delta(x)[pub] / (m[pub] * delta)  # achieved variance V/m over the required δ
    assert items["records_below_threshold"].value == int((ratio < 1 - 1e-6).sum()) == 0
    assert items["min_variance_margin"].value == pytest.approx(max(ratio.min() - 1, 0.0), abs=1e-9)
    plot = items["variance_margin"]
    assert plot.about == "comparison"
    counts, _ = np.histogram(ratio, bins=np.asarray(plot.series[0].x))
    assert list(plot.series[0].y) == counts.tolist() and counts.sum() == pub.sum()
    # a record with fewer components than the rule allows has a larger margin, never a smaller one
    assert ratio.max() <= plot.series[0].x[-1] + 1e-12


def _cosine_knn(x, k):
    """Exact cosine k-NN (self excluded, ties by index)."""
    nrm = np.linalg.norm(x, axis=1)
    u = x / np.where(nrm > 0, nrm, 1)[:, None]
    sim = u @ u.T
    np.fill_diagonal(sim, -np.inf)
    sim[nrm == 0, :] = -np.inf
    sim[:, nrm == 0] = -np.inf
    idx = np.array([np.lexsort((np.arange(len(x)), -row))[:k] for row in sim])
    return np.where(nrm[:, None] > 0, idx, -1)


def test_kvariance_margins_match_a_numpy_recount():
    x = _x(n=60, d=12, seed=3, continuous=True)
    tx = _tx(x, npartitions=2)
    rel = KVarianceAnonymizer(k=3, m_max=32, key=Key(5)).fit_release(tx)
    items = _items(rel.report_figures(tx))
    _, m = rel.data.compute(progress=False)
    m = m.astype(np.int64)
    nbr = _cosine_knn(x, 3)
    ratios = np.full(len(x), np.inf)
    for i in range(len(x)):
        for j in nbr[i]:
            if j < 0 or min(m[i], m[j]) == 0:
                continue
            dot = x[i] @ x[j]
            # variance of one component's estimate of x_i.x_j, and the Cauchy-Schwarz gap
            v = (x[i] @ x[i]) * (x[j] @ x[j]) + dot**2 - 2 * np.sum(x[i] ** 2 * x[j] ** 2)
            tau = np.linalg.norm(x[i]) * np.linalg.norm(x[j]) - abs(dot)
            if tau > 1e-12 * np.linalg.norm(x[i]) * np.linalg.norm(x[j]):
                ratios[i] = min(ratios[i], v / (min(m[i], m[j]) * tau**2))
    r = ratios[(m > 0) & np.isfinite(ratios)]
    assert r.size > 10
    assert items["records_below_threshold"].value == int((r < 1 - 1e-6).sum()) == 0
    assert items["min_variance_margin"].value == pytest.approx(max(r.min() - 1, 0.0), rel=1e-9, abs=1e-9)
    assert sum(items["variance_margin"].series[0].y) == r.size


def _pairs_oracle(x, m, S):
    """The pairs of the public sample, redrawn, and their exact / estimated similarities in numpy."""
    pub = np.flatnonzero(m > 0)
    rng = np.random.default_rng(RF._PAIR_SEED)
    a, b = rng.choice(pub, RF.PAIR_SAMPLE), rng.choice(pub, RF.PAIR_SAMPLE)
    a, b = a[a != b], b[a != b]
    dot = np.einsum("ij,ij->i", x[a], x[b])
    cos = dot / (np.linalg.norm(x[a], axis=1) * np.linalg.norm(x[b], axis=1))
    est_dot, est_cos = [], []
    for i, j in zip(a, b):
        k = min(m[i], m[j])
        s = S[i, :k] @ S[j, :k]
        est_dot.append(s / k)
        den = np.sqrt((S[i, :k] @ S[i, :k]) * (S[j, :k] @ S[j, :k]))
        est_cos.append(s / den if den > 0 else 0.0)  # a zero sketch estimates no direction: cosine 0
    return dot, cos, np.array(est_dot), np.array(est_cos)


def test_similarity_errors_match_exact_numpy_dot_products():
    x = _x()
    tx = _tx(x)
    rel = DeltaAnonymizer(delta=3.0, m_max=16, key=Key(11)).fit_transform(tx)
    items = _items(rel.report_figures(tx))
    S, m = rel.data.compute(progress=False)
    dot, cos, est_dot, est_cos = _pairs_oracle(x, m, S)
    nz = dot != 0
    assert items["cosine_mean_abs_error"].value == pytest.approx(np.mean(np.abs(est_cos - cos)), rel=1e-9)
    assert items["dot_mean_relative_error"].value == pytest.approx(np.mean(np.abs(est_dot - dot)[nz] / np.abs(dot[nz])), rel=1e-9)
    sc = items["similarity_scatter"].series[0]
    np.testing.assert_allclose(sc.x, cos, atol=1e-12)
    np.testing.assert_allclose(sc.y, est_cos, atol=1e-12)
    assert items["similarity_scatter"].about == "comparison"


def test_knn_baseline_matches_sklearn():
    from sklearn.neighbors import KNeighborsClassifier

    x = _x(continuous=True)
    tx = _tx(x)
    rel = DeltaAnonymizer(delta=1.0, m_max=16, key=Key(11)).fit_transform(tx)
    items = _items(rel.report_figures(tx))
    y = np.arange(x.shape[0]) % 3
    sample, train, test = RF._split(x.shape[0], RF._KNN_SEED)  # the public sample
    xs, ys = x[sample], y[sample]
    live = np.linalg.norm(xs[train], axis=1) > 0  # zero rows are never neighbours
    clf = KNeighborsClassifier(n_neighbors=1, metric="cosine", algorithm="brute").fit(xs[train][live], ys[train][live])
    nz = np.linalg.norm(xs[test], axis=1) > 0
    want = np.mean(clf.predict(xs[test][nz]) == ys[test][nz])
    got_rows = items["knn_accuracy_original"].value * test.size
    # zero test rows (similarity 0 to everything) go to the first training record: count them apart
    zero_hits = int(np.sum(ys[test][~nz] == ys[train][live][0]))
    assert got_rows == pytest.approx(want * nz.sum() + zero_hits)
    assert 0 <= items["knn_accuracy_sketches"].value <= 1
    # beside them, the share of the most frequent label among the test records (always guessing it)
    assert items["knn_majority_rate"].value == pytest.approx(np.bincount(ys[test]).max() / test.size)


def test_figures_do_not_depend_on_the_partitioning():
    x = _x()
    out = []
    for parts in (1, 3):
        tx = _tx(x, npartitions=parts)
        rel = DeltaAnonymizer(delta=3.0, m_max=16, key=Key(11)).fit_transform(tx)
        fig = rel.report_figures(tx)
        out.append([i.to_dict() for i in (*fig.risk, *fig.utility)])
    assert out[0] == out[1]


@pytest.mark.slow  # 20 Newsgroups written and read back; the figures' oracles run on small data by default
def test_twenty_newsgroups_release_on_disk(shared_data, tmp_path):
    z = np.load(shared_data / "text" / "20news_bydate_counts.npz")
    X = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], 2000, replace=False))
    X, y = X[rows], np.asarray(z["labels"])[rows]
    tx = TransactionArray.from_scipy(X, npartitions=3, columns={"label": y, "record_id": rows.astype(np.int64)})
    rel = DeltaAnonymizer(delta=20.0, m_max=32, key=Key(3), keep_record_ids=True).fit_transform(tx)
    rel.write(str(tmp_path / "news"))
    fig = Release.open(str(tmp_path / "news")).report_figures(tx)
    items = _items(fig)
    man, m = _parts_m(tmp_path / "news")
    n_sup = 2000 - m.size  # the records not published (the manifest does not say how many)
    assert "n_records" not in man and items["suppressed_share"].about == "original"
    assert items["suppressed_share"].value == pytest.approx(100 * n_sup / 2000)
    assert sum(items["components_hist"].series[0].y) == m.size
    # published record ids match the release rows to the original: the margins are there
    d = X.toarray().astype(np.float32).astype(np.float64)
    _, m_mem = rel.data.compute(progress=False)
    ratio = _v_delta(d)[m_mem > 0] / (m_mem[m_mem > 0] * 20.0)
    assert items["records_below_threshold"].value == 0 and sum(items["variance_margin"].series[0].y) == ratio.size
    assert items["min_variance_margin"].value == pytest.approx(max(ratio.min() - 1, 0), abs=1e-9)
    assert 0 <= items["cosine_mean_abs_error"].value < 1
    assert 0 < items["knn_accuracy_original"].value <= 1 and 0 < items["knn_accuracy_sketches"].value <= 1

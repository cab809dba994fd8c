"""Mining on sketches (docs/sketches.md#mining-on-sketches): kNN classification and k-means against brute-force
oracles, exact-sketch (Hadamard) equivalence, the random-labelling protocol and the evaluation
helpers.

Sketches come from a dense reference: R in {±1}^(m_max x d), S = X @ R.T, components >= m_i zeroed.
Data are integer counts, so every sketch value, dot product and prefix sum is exact and the
oracles must agree bit for bit.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from ppdm_dask.errors import InvalidParameter
from ppdm_dask.sketch import _mining_kernels as K
from ppdm_dask.sketch.mining import (
    SketchKMeans,
    SketchKNNClassifier,
    average_cosine_similarity,
    classification_accuracy,
)


# ---------------------------------------------------------------------------------- helpers
class StandIn:
    """Minimal SketchArray-like object (values, m, columns, metadata) with given row chunks."""

    def __init__(self, S, m, rows=None, columns=None, metadata=None):
        rows = rows or S.shape[0]
        self.values = da.from_array(S, chunks=(rows, -1))
        self.m = da.from_array(np.asarray(m, np.int32), chunks=rows)
        self.columns = {k: da.from_array(np.asarray(v), chunks=rows) for k, v in (columns or {}).items()}
        self.metadata = dict(metadata or {})


def sketch(X, R, m):
    S = np.asarray(X, float) @ R.T
    S[np.arange(R.shape[0])[None, :] >= np.asarray(m)[:, None]] = 0.0
    return S


def make_data(seed, n, d, m_max, density=0.2, p_supp=0.15, maxval=3, n_classes=3):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < density) * rng.integers(1, maxval + 1, (n, d))
    R = rng.choice([-1.0, 1.0], (m_max, d))
    m = rng.integers(1, m_max + 1, n)
    m[rng.random(n) < p_supp] = 0
    y = rng.integers(0, n_classes, n)
    return X.astype(float), R, m, y


def brute_sim(a, ma, b, mb, lam=None):
    """Same-component cosine; with ``lam`` the shrunk one, ``cos * q / (q + lam)``."""
    q = min(ma, mb)
    dot = float(a[:q] @ b[:q])
    den = np.sqrt(float(a[:q] @ a[:q]) * float(b[:q] @ b[:q]))
    cos = dot / den if den > 0 else 0.0
    return cos if lam is None else cos * (q / (q + lam))


def brute_shrinkage(S, m, min_q=8, bounds=(1.0, 4096.0)):
    """Loop oracle of the empirical-Bayes lam: 1 / (mean c_q^2 - mean 1/q) over pairs with q >= min_q."""
    live = [i for i in range(len(m)) if m[i] > 0]
    c2, inv = [], []
    for a in range(len(live)):
        for b in range(a + 1, len(live)):
            i, j = live[a], live[b]
            q = min(m[i], m[j])
            if q >= min_q:
                c2.append(brute_sim(S[i], m[i], S[j], m[j]) ** 2)
                inv.append(1.0 / q)
    if len(c2) < 50:
        return bounds[1]
    tau2 = float(np.mean(c2) - np.mean(inv))
    return bounds[1] if tau2 <= 1 / bounds[1] else min(bounds[1], max(bounds[0], 1 / tau2))


def brute_knn(S_tr, m_tr, y_tr, S_te, m_te, k, lam=None):
    """Loop oracle: neighbours by (sim desc, index asc); vote, ties -> nearest tied label."""
    out, neigh = [], []
    for i in range(S_te.shape[0]):
        if m_te[i] == 0:
            out.append(None)
            neigh.append(None)
            continue
        cand = sorted((-brute_sim(S_te[i], m_te[i], S_tr[j], m_tr[j], lam), j) for j in range(S_tr.shape[0]) if m_tr[j] > 0)[:k]
        labs = [y_tr[j] for _, j in cand]
        counts = {lab: labs.count(lab) for lab in labs}
        top = max(counts.values())
        out.append(next(lab for lab in labs if counts[lab] == top))
        neigh.append([j for _, j in cand])
    return out, neigh


def ari(a, b):
    """Adjusted Rand index (Hubert & Arabie)."""
    from math import comb

    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1), dtype=np.int64)
    np.add.at(table, (ai, bi), 1)
    s_ij = sum(comb(int(v), 2) for v in table.ravel())
    s_a = sum(comb(int(v), 2) for v in table.sum(1))
    s_b = sum(comb(int(v), 2) for v in table.sum(0))
    expected = s_a * s_b / comb(len(a), 2)
    return (s_ij - expected) / (0.5 * (s_a + s_b) - expected)


def brute_kmeans(S, m, n_clusters, init, mode, max_iter, tol=0.0, lam=None):
    """Loop oracle of the documented algorithm (same init indices, same re-seeding rule)."""
    n, w = S.shape
    live = np.flatnonzero(m > 0)

    def centroid(members):
        c = np.zeros(w)
        if not members:
            return c, 0
        ms = m[members]
        if mode == "available":
            mc = int(ms.max())
            for j in range(mc):
                sel = [i for i in members if m[i] > j]
                c[j] = S[sel, j].sum() / len(sel)
        else:
            mc = int(ms.min())
            c[:mc] = S[members, :mc].sum(axis=0) / len(members)
        return c, mc

    members = [[int(i)] for i in init]
    previous = None
    for it in range(1, max_iter + 1):  # noqa: B007 (returned after the loop)
        cents = [centroid(mb) for mb in members]
        labels = np.full(n, -1)
        best = np.full(n, np.nan)
        for i in live:
            sims = [brute_sim(S[i], m[i], c, mc, lam) if mc > 0 else -np.inf for c, mc in cents]
            labels[i] = int(np.argmax(sims))
            best[i] = max(sims)
        sizes = np.bincount(labels[live], minlength=n_clusters)
        order = sorted(live, key=lambda i: (best[i], i))
        for c in range(n_clusters):
            if sizes[c] == 0:
                for i in order:
                    if sizes[labels[i]] > 1:
                        order.remove(i)
                        sizes[labels[i]] -= 1
                        labels[i] = c
                        sizes[c] += 1
                        break
        members = [list(np.flatnonzero(labels == c)) for c in range(n_clusters)]
        changed = len(live) if previous is None else int((labels != previous).sum())
        previous = labels
        if changed <= tol * len(live):
            break
    cents = [centroid(mb) for mb in members]
    return labels, np.array([c for c, _ in cents]), np.array([mc for _, mc in cents]), it


# ---------------------------------------------------------------------------------- kernels
def test_topk_select_total_order_with_ties():
    rng = np.random.default_rng(1)
    sim = rng.integers(0, 4, (50, 40)).astype(float)  # many ties
    sim[rng.random(sim.shape) < 0.1] = -np.inf
    index = np.sort(rng.choice(1000, 40, replace=False))
    for k in (1, 3, 7, 45):
        top_sim, top_idx = K.topk_select(sim, index, k)
        for r in range(sim.shape[0]):
            ref = sorted((-s, i) for s, i in zip(sim[r], index) if s > -np.inf)[:k]
            got = [(-s, i) for s, i in zip(top_sim[r], top_idx[r]) if i != K.NO_INDEX]
            assert got == ref
    # merging per-block lists equals selecting at once
    a = K.topk_select(sim[:, :15], index[:15], 5)
    b = K.topk_select(sim[:, 15:], index[15:], 5)
    merged = K.merge_topk([b, a], 5)
    np.testing.assert_array_equal(merged[1], K.topk_select(sim, index, 5)[1])


def test_vote_ties_go_to_nearest_tied_label():
    codes = np.array([0, 1, 2, 1, 0])
    # neighbours best-first; row 0: labels 1,0,0,1 -> tie 2:2 -> nearest is label 1
    top_idx = np.array([[1, 0, 4, 3], [2, 0, 1, K.NO_INDEX], [K.NO_INDEX] * 4])
    np.testing.assert_array_equal(K.vote(top_idx, codes, 3), [1, 2, -1])


def test_draw_by_counts():
    u = np.array([0.0, 0.19, 0.2, 0.69, 0.7, 0.9999])
    np.testing.assert_array_equal(K.draw_by_counts(u, np.array([2, 5, 0, 3])), [0, 0, 1, 1, 3, 3])


# ---------------------------------------------------------------------------------- kNN
@pytest.mark.parametrize(
    "k, similarity, shrinkage", [(1, "cosine", 0), (4, "cosine", 0), (4, "shrunk", 3.0), (1, "shrunk", "auto")]
)
def test_knn_equals_bruteforce(k, similarity, shrinkage):
    X, R, m, y = make_data(3, 150, 12, 16, density=0.3, maxval=1)  # binary: many exact ties
    S = sketch(X, R, m)
    tr, te = slice(0, 100), slice(100, 150)
    lam = None if similarity == "cosine" else brute_shrinkage(S[tr], m[tr]) if shrinkage == "auto" else shrinkage
    ref, neigh = brute_knn(S[tr], m[tr], y[tr], S[te], m[te], k, lam)
    results = []
    for rows in (None, 17):
        clf = SketchKNNClassifier(k=k, key=5, similarity=similarity, shrinkage=shrinkage).fit(StandIn(S[tr], m[tr], rows), y[tr])
        assert clf.shrinkage_ == (lam or 0.0)
        test = StandIn(S[te], m[te], rows and 13)
        pred = clf.predict(test)
        _, idx = clf.kneighbors(test)
        for i, (r, nb) in enumerate(zip(ref, neigh)):
            if r is not None:
                assert pred[i] == r
                assert list(idx[i]) == nb
            else:
                assert (idx[i] == -1).all()
        results.append(pred)
    np.testing.assert_array_equal(results[0], results[1])  # suppressed rows too
    assert (m[te] == 0).any() and (m[tr] == 0).any()


def test_knn_hadamard_sketches_equal_plain_cosine_knn():
    rng = np.random.default_rng(7)
    d = 32
    X = (rng.random((120, d)) < 0.3) * rng.integers(1, 5, (120, d)).astype(float)
    X[X.sum(1) == 0, 0] = 1.0
    y = rng.integers(0, 4, 120)
    R = scipy.linalg.hadamard(d).astype(float)  # R R^T = d I: sketches are exact up to scale
    S = sketch(X, R, np.full(120, d))
    tr, te = slice(0, 80), slice(80, 120)
    sq = (X * X).sum(1)
    cos = (X[te] @ X[tr].T) / np.sqrt(sq[te][:, None] * sq[tr][None, :])
    for k in (1, 3):
        clf = SketchKNNClassifier(k=k).fit((S[tr], np.full(80, d)), y[tr])
        _, idx = clf.kneighbors((S[te], np.full(40, d)))
        ref = np.array([sorted(range(80), key=lambda j: (-cos[i, j], j))[:k] for i in range(40)])
        np.testing.assert_array_equal(idx, ref)
        labs = y[tr][ref]
        expect = [next(v for v in row if list(row).count(v) == max(map(list(row).count, row))) for row in labs]
        np.testing.assert_array_equal(clf.predict((S[te], np.full(40, d))), expect)


def test_knn_suppressed_test_rows_follow_the_prior():
    X, R, m, _ = make_data(11, 60, 10, 8, p_supp=0.0)
    y = np.array([0] * 36 + [1] * 18 + [2] * 6)  # prior 0.6 / 0.3 / 0.1
    m_tr = m.copy()
    m_tr[[0, 40]] = 0  # suppressed training rows do not count in the prior
    S = sketch(X, R, m_tr)
    n_test = 20000
    test = (np.zeros((n_test, 8)), np.zeros(n_test, np.int64))
    clf = SketchKNNClassifier(key=123).fit((S, m_tr), y)
    np.testing.assert_array_equal(clf.class_counts_, [35, 17, 6])
    pred = clf.predict(test)
    counts = np.bincount(pred, minlength=3)
    expected = n_test * np.array([35, 17, 6]) / 58
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 13.8  # chi-square, 2 d.o.f., p = 0.001
    # reproducible for a key, independent of the partitioning; another key differs
    np.testing.assert_array_equal(pred, SketchKNNClassifier(key=123, block_rows=3001).fit((S, m_tr), y).predict(test))
    assert (pred != SketchKNNClassifier(key=124).fit((S, m_tr), y).predict(test)).any()


def test_knn_label_column_score_and_errors():
    X, R, m, y = make_data(5, 90, 10, 8)
    S = sketch(X, R, m)
    train = StandIn(S[:60], m[:60], 25, columns={"label": y[:60]})
    test = StandIn(S[60:], m[60:], 11, columns={"label": y[60:]})
    clf = SketchKNNClassifier(k=3, key=2).fit(train)
    assert clf.score(test) == classification_accuracy(y[60:], clf.predict(test))
    with pytest.raises(InvalidParameter):
        SketchKNNClassifier(k=0).fit(train)
    with pytest.raises(InvalidParameter):
        SketchKNNClassifier(similarity="jaccard").fit(train)
    with pytest.raises(InvalidParameter):
        SketchKNNClassifier().fit(train, "class")
    with pytest.raises(InvalidParameter):
        SketchKNNClassifier().fit((S[:5], np.zeros(5, int)), y[:5])
    with pytest.raises(InvalidParameter):
        SketchKNNClassifier().predict(test)
    other = StandIn(S[60:], m[60:], metadata={"generator": "B"})
    with pytest.raises(InvalidParameter):
        SketchKNNClassifier().fit(StandIn(S[:60], m[:60], metadata={"generator": "A"}), y[:60]).predict(other)


# ---------------------------------------------------------------------------------- k-means
@pytest.mark.parametrize(
    "mode, similarity", [("available", "cosine"), ("common", "cosine"), ("available", "shrunk"), ("common", "shrunk")]
)
def test_kmeans_equals_bruteforce(mode, similarity):
    X, R, m, _ = make_data(21, 120, 15, 12, density=0.25, maxval=4)
    X[7] = X[3]  # a duplicate seed: its cluster is empty after the first pass (re-seeding)
    init = [3, 7, 20, 50, 90]
    m[init] = [9, 9, 4, 12, 1]
    S = sketch(X, R, m)
    lam = brute_shrinkage(S, m) if similarity == "shrunk" else None
    ref_labels, ref_c, ref_mc, ref_iter = brute_kmeans(S, m, 5, init, mode, 15, lam=lam)
    for rows in (None, 23):
        km = SketchKMeans(5, max_iter=15, centroid_mode=mode, init=init, key=1, similarity=similarity).fit(StandIn(S, m, rows))
        assert km.shrinkage_ == (lam or 0.0)
        np.testing.assert_array_equal(km.labels_, ref_labels)
        np.testing.assert_allclose(km.centroids_, ref_c, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(km.centroid_m_, ref_mc)
        assert km.n_iter_ == ref_iter
        np.testing.assert_array_equal(km.cluster_sizes_, np.bincount(ref_labels[m > 0], minlength=5))
        np.testing.assert_array_equal(km.predict(StandIn(S, m, 31))[m > 0] >= 0, True)
    assert ref_iter > 1
    # after one pass the duplicate's cluster was empty and got re-seeded with one record
    one = SketchKMeans(5, max_iter=1, centroid_mode=mode, init=init, key=1, similarity=similarity).fit((S, m))
    assert one.cluster_sizes_[1] == 1 and one.labels_[7] == 0
    np.testing.assert_array_equal(one.labels_, brute_kmeans(S, m, 5, init, mode, 1, lam=lam)[0])


def test_kmeans_recovers_separated_clusters_and_is_partition_independent():
    rng = np.random.default_rng(4)
    n, groups, width = 400, 4, 20
    truth = rng.integers(0, groups, n)
    X = np.zeros((n, groups * width))
    for i, g in enumerate(truth):
        X[i, g * width + rng.choice(width, 8, replace=False)] = rng.integers(1, 4, 8)
    R = rng.choice([-1.0, 1.0], (64, X.shape[1]))
    m = rng.integers(32, 65, n)
    m[rng.random(n) < 0.1] = 0
    S = sketch(X, R, m)
    runs = [SketchKMeans(groups, key=9, block_rows=b).fit((S, m)) for b in (None, 37)]
    km = runs[0]
    live = m > 0
    assert ari(km.labels_[live], truth[live]) > 0.9
    np.testing.assert_array_equal(km.labels_[~live], -1)
    for attr in ("labels_", "assigned_labels_", "init_indices_", "centroid_m_"):
        np.testing.assert_array_equal(getattr(runs[1], attr), getattr(km, attr))
    np.testing.assert_allclose(runs[1].centroids_, km.centroids_, rtol=1e-12)
    assert (km.assigned_labels_ >= 0).all()
    np.testing.assert_array_equal(km.assigned_labels_[live], km.labels_[live])
    # quality in the original space: far better than a random partition
    quality = average_cosine_similarity(sp.csr_array(X), km.assigned_labels_)
    assert quality > average_cosine_similarity(X, rng.integers(0, groups, n)) + 0.2
    # random init is keyed and reproducible too
    a = SketchKMeans(groups, init="random", key=3).fit((S, m))
    b = SketchKMeans(groups, init="random", key=3, block_rows=50).fit((S, m))
    np.testing.assert_array_equal(a.init_indices_, b.init_indices_)
    np.testing.assert_array_equal(a.assigned_labels_, b.assigned_labels_)


def test_suppressed_records_go_to_clusters_in_proportion_to_sizes():
    rng = np.random.default_rng(2)
    S = np.zeros((6000, 4))
    m = np.zeros(6000, np.int64)
    # 40 live records in two orthogonal groups of 30 and 10
    S[:30, 0], S[30:40, 1], m[:40] = 1.0, 1.0, 4
    S[:40, 2] = rng.choice([-0.1, 0.1], 40)
    km = SketchKMeans(2, init=[0, 30], key=8).fit((S, m))
    np.testing.assert_array_equal(km.cluster_sizes_, [30, 10])
    share = np.bincount(km.assigned_labels_[40:], minlength=2) / 5960
    assert abs(share[0] - 0.75) < 4 * np.sqrt(0.75 * 0.25 / 5960)


def test_centroid_modes_hand_example():
    S = np.array([[1.0, 2, 3], [3, 4, 0], [5, 0, 0], [9, 9, 9]])
    m = np.array([3, 2, 1, 0])  # the last record is suppressed and never contributes
    sums, hist = K.cluster_partials(S, m, np.array([0, 0, 0, -1]), 1)
    C, mc = K.centroids_from_partials(sums, hist, "available")
    np.testing.assert_allclose(C, [[(1 + 3 + 5) / 3, (2 + 4) / 2, 3 / 1]])
    assert mc.tolist() == [3]
    C, mc = K.centroids_from_partials(sums, hist, "common")
    np.testing.assert_allclose(C, [[3.0, 0, 0]])
    assert mc.tolist() == [1]
    for mode, expect, em in (("available", [3.0, 3, 3], 3), ("common", [3.0, 0, 0], 1)):
        km = SketchKMeans(1, centroid_mode=mode, key=0).fit((S, m))
        np.testing.assert_allclose(km.centroids_, [expect])
        assert km.centroid_m_.tolist() == [em] and km.labels_.tolist() == [0, 0, 0, -1]


def test_kmeans_errors():
    S, m = np.eye(4), np.array([1, 1, 0, 0])
    with pytest.raises(InvalidParameter):
        SketchKMeans(3, key=0).fit((S, m))  # only 2 live records
    with pytest.raises(InvalidParameter):
        SketchKMeans(2, centroid_mode="median").fit((S, m))
    with pytest.raises(InvalidParameter):
        SketchKMeans(2, init=[0, 2]).fit((S, m))  # record 2 is suppressed
    with pytest.raises(InvalidParameter):
        SketchKMeans(2).predict((S, m))


# ---------------------------------------------------------------------------------- evaluation
def test_average_cosine_similarity_by_hand():
    X = sp.csr_array(np.array([[1.0, 0], [0, 1], [1, 1], [0, 0]]))
    # cluster 0 = {x0, x1}: centroid (.5, .5), cos = 1/sqrt2 each; cluster 1 = {x2, x3}:
    # centroid (.5, .5), cos(x2) = 1, the zero record contributes 0
    got = average_cosine_similarity(X, [0, 0, 1, 1])
    assert got == pytest.approx((2 / np.sqrt(2) + 1 + 0) / 4, rel=1e-12)
    # normalize=True: centroid of the unit vectors
    Y = np.array([[3.0, 0], [0, 1]])
    c = np.array([0.5, 0.5])
    assert average_cosine_similarity(Y, [0, 0], normalize=True) == pytest.approx(c[0] / np.linalg.norm(c), rel=1e-12)
    assert average_cosine_similarity(Y, [0, 0]) == pytest.approx((3 / np.sqrt(10) + 1 / np.sqrt(10)) / 2, rel=1e-12)
    with pytest.raises(InvalidParameter):
        average_cosine_similarity(X, [0, -1, 0, 0])


def test_classification_accuracy():
    assert classification_accuracy([1, 2, 3, 4], np.array([1, 2, 0, 4])) == 0.75
    assert classification_accuracy(["a", "b"], ["a", "a"]) == 0.5
    with pytest.raises(InvalidParameter):
        classification_accuracy([1, 2], [1])


# ---------------------------------------------------------------------------------- cluster
@pytest.mark.cluster
def test_on_local_cluster_equals_sync(on_cluster):
    X, R, m, y = make_data(8, 200, 14, 12)
    S = sketch(X, R, m)
    train, test = StandIn(S[:140], m[:140], 40), StandIn(S[140:], m[140:], 25)
    clf = SketchKNNClassifier(k=3, key=4).fit(train, y[:140], client=on_cluster)
    pred = clf.predict(test, client=on_cluster)
    km = SketchKMeans(4, key=6).fit(StandIn(S, m, 50), client=on_cluster)
    import dask

    with dask.config.set(scheduler="sync"):
        ref_pred = SketchKNNClassifier(k=3, key=4).fit(train, y[:140]).predict(test)
        ref_km = SketchKMeans(4, key=6).fit(StandIn(S, m, 50))
    np.testing.assert_array_equal(pred, ref_pred)
    np.testing.assert_array_equal(km.labels_, ref_km.labels_)
    np.testing.assert_array_equal(km.assigned_labels_, ref_km.assigned_labels_)
    np.testing.assert_allclose(km.centroids_, ref_km.centroids_, rtol=1e-12)


# ---------------------------------------------------------------------------------- SketchArray
def test_with_real_sketch_array():
    sk = pytest.importorskip("ppdm_dask.sketch.sketches")
    from ppdm_dask.data.transactions import TransactionArray
    from ppdm_dask.sketch.generator import SketchGenerator

    X, R, m, y = make_data(13, 160, 20, 16, density=0.3, maxval=1)
    X[X.sum(1) == 0, 0] = 1.0
    gen = SketchGenerator.from_matrix(R)

    def published(rows, parts):
        tx = TransactionArray.from_scipy(sp.csr_array(X[rows]), npartitions=parts, columns={"label": y[rows]})
        return sk.sketch(tx, m[rows], generator=gen, m_max=16)

    train, test = published(slice(0, 110), 3), published(slice(110, 160), 2)
    S = sketch(X, R, m)
    clf = SketchKNNClassifier(k=3, key=7).fit(train)  # labels from the "label" column
    ref = SketchKNNClassifier(k=3, key=7).fit((S[:110], m[:110]), y[:110])
    np.testing.assert_array_equal(clf.predict(test), ref.predict((S[110:], m[110:])))
    km = SketchKMeans(3, key=2).fit(train)
    np.testing.assert_array_equal(km.labels_, SketchKMeans(3, key=2).fit((S[:110], m[:110])).labels_)
    np.testing.assert_array_equal(km.predict(test), km.predict((S[110:], m[110:])))
    # sketches under another generator are not comparable
    other = sk.sketch(
        TransactionArray.from_scipy(sp.csr_array(X[110:])),
        m[110:],
        generator=SketchGenerator.from_matrix(-R),
        m_max=16,
    )
    with pytest.raises(InvalidParameter):
        clf.predict(other)
    with pytest.raises(InvalidParameter):
        km.predict(other)

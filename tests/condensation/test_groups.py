"""Group statistics, the principal-axis split and pseudo-data (docs/condensation.md#group-statistics,
docs/condensation.md#dynamic-maintenance, docs/condensation.md#pseudo-data), with the hand-computed
split examples of docs/condensation.md#correction-the-split-centroid-offset and
docs/condensation.md#clarification-the-split-condition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdm_dask.condensation.groups import CondensedGroup, GroupTable
from ppdm_dask.condensation.pseudo import canonical_eigh, generate, generate_dask, pseudo_points
from ppdm_dask.errors import DataFormatError, InvalidParameter
from ppdm_dask.random import Tag, as_key

SQ3 = math.sqrt(3.0)


def ref_stats(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference mean and population covariance by direct numpy computation."""
    return X.mean(axis=0), np.cov(X, rowvar=False, bias=True).reshape(X.shape[1], X.shape[1])


def random_group(n: int, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d) * 5
    return X, rng.integers(1, 6, size=n)


# ------------------------------------------------------------- the split, computed by hand
# points (±2, ±1), levels 1: C = diag(4, 1), a = sqrt(48), offset sqrt(3); children centred at
# (∓sqrt(3), 0) with covariance diag(1, 1) and Sc = diag(8, 2) each (the printed offset: 26 each)
def test_split_oracle_2d():
    X = np.array([[-2.0, -1.0], [-2.0, 1.0], [2.0, -1.0], [2.0, 1.0]])
    g = CondensedGroup.from_points(X, [1, 1, 1, 1])
    assert g.n == 4 and g.ps == 4.0 and g.should_split()
    np.testing.assert_allclose(g.covariance, np.diag([4.0, 1.0]), atol=1e-15)
    c1, c2 = g.split()
    assert (c1.n, c2.n) == (2, 2)
    np.testing.assert_allclose(c1.mean, [-SQ3, 0.0], atol=1e-14)
    np.testing.assert_allclose(c2.mean, [SQ3, 0.0], atol=1e-14)
    for c, sign in ((c1, -1), (c2, 1)):
        np.testing.assert_allclose(c.covariance, np.eye(2), atol=1e-14)
        np.testing.assert_allclose(c.Fs, [sign * 2 * SQ3, 0.0], atol=1e-14)
        np.testing.assert_allclose(c.Fs, [sign * 3.4641016, 0.0], atol=1e-7)
        np.testing.assert_allclose(c.Sc, np.diag([8.0, 2.0]), atol=1e-13)
        assert c.ps == 2.0 and c.req == 1
    np.testing.assert_allclose(c1.Sc + c2.Sc, np.diag([16.0, 4.0]), atol=1e-13)


def test_split_oracle_1d():
    # two points at ±√3: population variance 3 -> a = 6, offsets ∓1.5, child variance 0.75
    g = CondensedGroup(2, [10.0], [[6.0]], ps=2.0)
    assert g.covariance[0, 0] == pytest.approx(3.0)
    c1, c2 = g.split()
    assert c1.mean[0] == pytest.approx(8.5, abs=1e-14) and c2.mean[0] == pytest.approx(11.5, abs=1e-14)
    assert c1.covariance[0, 0] == pytest.approx(0.75) and c2.covariance[0, 0] == pytest.approx(0.75)


def test_split_odd_hand_computed():
    # n = 3, λ1 = 3 (a = 6), f = 1/3: centroids μ − a/3 = μ − 2 and μ + a/6 = μ + 1,
    # variances f²λ1 = 1/3 and (1 − f)²λ1 = 4/3; Ps shared 1/3 : 2/3
    g = CondensedGroup(3, [0.0], [[9.0]], ps=6.0, req=3)
    c1, c2 = g.split()
    assert (c1.n, c2.n) == (1, 2)
    assert c1.mean[0] == pytest.approx(-2.0) and c2.mean[0] == pytest.approx(1.0)
    assert c1.covariance[0, 0] == pytest.approx(1 / 3) and c2.covariance[0, 0] == pytest.approx(4 / 3)
    assert c1.ps == pytest.approx(2.0) and c2.ps == pytest.approx(4.0)
    assert c1.req == c2.req == 3  # children keep the parent's requirement (may be > n)


def test_split_other_eigenpairs_unchanged_and_degenerate():
    X, p = random_group(10, d=4, seed=3)
    g = CondensedGroup.from_points(X, p)
    lam, E = canonical_eigh(g.covariance)
    c1, c2 = g.split()
    for c, f2 in ((c1, 0.25), (c2, 0.25)):
        # along e1 the eigenvalue is f² λ1, the other eigenpairs are untouched
        np.testing.assert_allclose(E.T @ c.covariance @ E, np.diag(np.r_[lam[:-1], f2 * lam[-1]]), atol=1e-10)
    # a group of identical points splits into two copies of itself
    h = CondensedGroup.from_points(np.tile([[1.5, -2.0]], (4, 1)), 2)
    for c in h.split():
        assert c.n == 2 and np.array_equal(c.mean, [1.5, -2.0]) and not c.m2.any()
    with pytest.raises(InvalidParameter):
        CondensedGroup.from_points([[1.0, 2.0]], 1).split()


# ------------------------------------------------------- the split condition n² >= 2·Ps
def test_split_condition():
    X, _ = random_group(6, d=2, seed=1)
    g = CondensedGroup.from_points(X[:5], [2, 2, 2, 3, 5])
    assert g.ps == 14.0 and g.req == 5
    assert not g.should_split() and not g.should_split(strict=True)  # 25 < 28
    g.add_point(X[5], 3)
    assert g.n == 6 and g.ps == 17.0 and g.should_split() and g.should_split(strict=True)  # 36 >= 34
    c1, c2 = g.split()
    assert (c1.n, c2.n) == (3, 3) and c1.ps == 8.5 and c2.ps == 8.5
    e = CondensedGroup.from_points(X[:4], [2, 2, 2, 2])  # 16 vs 2 * 8
    assert e.should_split() and not e.should_split(strict=True)


# ------------------------------------------- odd splits conserve n, Fs, Sc and Ps exactly
@pytest.mark.parametrize("n,sizes", [(7, (3, 4)), (9, (4, 5)), (8, (4, 4))])
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_split_conservation(n, sizes, offset):
    for seed in range(5):
        X, p = random_group(n, d=3, seed=seed)
        g = CondensedGroup.from_points(X + offset, p)
        c1, c2 = g.split()
        assert (c1.n, c2.n) == sizes and c1.n + c2.n == g.n
        assert c1.ps + c2.ps == pytest.approx(g.ps, rel=1e-15)
        assert np.abs(c1.Fs + c2.Fs - g.Fs).max() <= 1e-12 * np.abs(g.Fs).max()
        assert np.abs(c1.Sc + c2.Sc - g.Sc).max() <= 1e-12 * np.abs(g.Sc).max()
        # children's covariances stay positive semi-definite
        assert np.linalg.eigvalsh(c1.covariance).min() > -1e-12 * np.trace(g.covariance)
        assert np.linalg.eigvalsh(c2.covariance).min() > -1e-12 * np.trace(g.covariance)


# ----------------------------------------------------------------------------------- statistics
def test_from_points_add_point_merge_match_numpy():
    X, p = random_group(40, d=3, seed=7)
    mu, C = ref_stats(X)
    g = CondensedGroup.from_points(X, p)
    assert g.n == 40 and g.ps == p.sum() and g.req == p.max()
    np.testing.assert_allclose(g.mean, mu, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(g.covariance, C, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g.Fs, X.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(g.Sc, X.T @ X, rtol=1e-12)
    assert g.ssq == pytest.approx(((X - mu) ** 2).sum(), rel=1e-12)

    w = CondensedGroup.from_points(X[:1], p[:1])
    for x, q in zip(X[1:], p[1:]):
        w.add_point(x, int(q))
    m = CondensedGroup.from_points(X[:13], p[:13]).merge(CondensedGroup.from_points(X[13:], p[13:]))
    for h in (w, m):
        assert h.n == 40 and h.ps == p.sum() and h.req == p.max()
        np.testing.assert_allclose(h.mean, mu, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h.covariance, C, rtol=1e-11, atol=1e-12)
    # SSQ of a union (docs/condensation.md#group-statistics)
    a, b = CondensedGroup.from_points(X[:13], p[:13]), CondensedGroup.from_points(X[13:], p[13:])
    expect = a.ssq + b.ssq + 13 * 27 / 40 * np.sum((a.mean - b.mean) ** 2)
    assert m.ssq == pytest.approx(expect, rel=1e-12)


def test_large_offset_centred_storage():
    rng = np.random.default_rng(11)
    noise = rng.normal(size=(500, 2)) @ np.array([[1.0, 0.3], [0.0, 0.5]])
    X = 1e8 + noise
    _, C_ref = ref_stats(X - 1e8)  # exact shift: the reference keeps every digit
    # the naive published-form covariance loses the digits (why storage is centred)
    naive = (X.T @ X) / 500 - np.outer(X.mean(0), X.mean(0))
    assert np.abs(naive - C_ref).max() > 1e-2
    g = CondensedGroup.from_points(X, 1)
    w = CondensedGroup.from_points(X[:1], 1)
    for x in X[1:]:
        w.add_point(x, 1)
    m = CondensedGroup.from_points(X[:200], 1).merge(CondensedGroup.from_points(X[200:], 1))
    t = GroupTable.from_points(X, np.ones(500, np.int64), np.zeros(500, np.int64))
    for cov in (g.covariance, w.covariance, m.covariance, t.covariance[0]):
        np.testing.assert_allclose(cov, C_ref, rtol=1e-6, atol=1e-7)


def test_table_from_points_matches_groups():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4)) * [1, 10, 100, 0.1] + 1e3
    p = rng.integers(1, 8, size=300)
    labels = rng.integers(0, 17, size=300)
    labels[:17] = np.arange(17)  # every group non-empty
    t = GroupTable.from_points(X, p, labels)
    assert len(t) == 17 and t.d == 4
    for g in range(17):
        ref = CondensedGroup.from_points(X[labels == g], p[labels == g])
        got = t[g]
        assert got.n == ref.n and got.ps == ref.ps and got.req == ref.req
        np.testing.assert_allclose(got.mean, ref.mean, rtol=1e-14)
        np.testing.assert_allclose(got.m2, ref.m2, rtol=1e-10, atol=1e-10 * np.abs(ref.m2).max())
    np.testing.assert_allclose(t.Fs.sum(0), X.sum(0), rtol=1e-12)
    np.testing.assert_allclose(t.Sc.sum(0), X.T @ X, rtol=1e-12)
    assert t.total_ssq == pytest.approx(sum(t[g].ssq for g in range(17)), rel=1e-12)
    assert t.feasible.tolist() == (t.n >= t.req).tolist()
    # n_groups larger than the labels used -> an empty group -> error
    with pytest.raises(InvalidParameter):
        GroupTable.from_points(X, p, labels, n_groups=18)
    with pytest.raises(InvalidParameter):
        GroupTable.from_points(X, p, np.where(labels == 3, 4, labels))
    with pytest.raises(DataFormatError):
        GroupTable.from_points(np.where(X > 1e3 + 200, np.nan, X), p, labels)


def test_table_ops_and_published():
    X, p = random_group(30, d=2, seed=9)
    labels = np.repeat(np.arange(5), 6)
    t = GroupTable.from_points(X, p, labels)
    m = t.merge_into(3, 1)
    assert len(m) == 4 and m.n.tolist() == [6, 6, 12, 6]
    ref = CondensedGroup.from_points(X[(labels == 3) | (labels == 1)], p[(labels == 3) | (labels == 1)])
    np.testing.assert_allclose(m.mean[2], ref.mean, rtol=1e-13)
    np.testing.assert_allclose(m.m2[2], ref.m2, rtol=1e-12, atol=1e-12)
    assert m.ps[2] == ref.ps and m.req[2] == ref.req
    for i, j in ((0, 0), (1, 2), (3, 4)):  # untouched groups keep their order
        np.testing.assert_array_equal(m.mean[i], t.mean[j])
    assert len(t) == 5  # the original table is unchanged
    with pytest.raises(InvalidParameter):
        t.merge_into(2, 2)

    both = GroupTable.concat([t.take([0, 1]), t.take(slice(2, 5))])
    np.testing.assert_array_equal(both.m2, t.m2)
    rebuilt = GroupTable.from_groups([t[g] for g in range(len(t))])
    np.testing.assert_array_equal(rebuilt.mean, t.mean)
    np.testing.assert_array_equal(rebuilt.req, t.req)
    assert len(GroupTable.empty(2)) == 0 and len(GroupTable.concat([GroupTable.empty(2), t])) == 5

    pub = t.published()
    assert set(pub) == {"n", "Fs", "Sc", "Ps"}
    assert set(t[0].published()) == {"n", "Fs", "Sc", "Ps"}
    back = GroupTable.from_published(**pub)
    assert back.req.tolist() == [1] * 5
    np.testing.assert_allclose(back.mean, t.mean, rtol=1e-13)
    np.testing.assert_allclose(back.m2, t.m2, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(back.ps, t.ps)


# ----------------------------------------------------------------------------------- pseudo-data
def test_canonical_eigh():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(50, 4, 4))
    C = A @ A.transpose(0, 2, 1)
    lam, E = canonical_eigh(C)
    np.testing.assert_allclose(E @ (lam[:, :, None] * E.transpose(0, 2, 1)), C, atol=1e-10)
    top = np.argmax(np.abs(E), axis=1)
    assert (np.take_along_axis(E, top[:, None, :], axis=1) > 0).all()
    for k in range(3):  # stacked == one by one, bit for bit
        l1, e1 = canonical_eigh(C[k])
        assert np.array_equal(l1, lam[k]) and np.array_equal(e1, E[k])
    # sign does not depend on the sign eigh happens to return
    l2, e2 = canonical_eigh(np.array([[2.0, 0.0], [0.0, 5.0]]))
    assert l2.tolist() == [2.0, 5.0] and np.array_equal(e2, np.eye(2))
    l3, _ = canonical_eigh(np.diag([-1e-3, 2.0]))
    assert l3.tolist() == [0.0, 2.0]  # clipped


def test_pseudo_moments_large_sample():
    mu = np.array([1.0, -2.0, 3.0])
    C = np.array([[2.0, 0.5, 0.3], [0.5, 1.0, 0.2], [0.3, 0.2, 0.5]])
    n = 200_000
    t = GroupTable(np.array([n]), mu[None], (n * C)[None], np.array([float(n)]), np.array([1]))
    Y = generate(t, key=2024)
    assert Y.shape == (n, 3)
    m, S = ref_stats(Y)
    assert np.abs(m - mu).max() < 0.01
    assert np.abs(S - C).max() < 0.01
    # along each eigenvector the coordinates are uniform on [-a/2, a/2] with a = sqrt(12 λ)
    lam, E = canonical_eigh(C)
    u = (Y - mu) @ E
    np.testing.assert_allclose(np.abs(u).max(axis=0), np.sqrt(3 * lam), rtol=1e-3)


def test_pseudo_mean_unbiased_over_keys():
    mu = np.array([0.5, 10.0, -3.0])
    C = np.array([[1.0, 0.4, 0.0], [0.4, 2.0, -0.3], [0.0, -0.3, 0.7]])
    n = 5
    t = GroupTable(np.array([n]), mu[None], (n * C)[None], np.array([10.0]), np.array([1]))
    means = np.array([generate(t, key=k).mean(axis=0) for k in range(2000)])
    se = means.std(axis=0, ddof=1) / math.sqrt(2000)
    assert (np.abs(means.mean(axis=0) - mu) < 4 * se).all()
    # and E[sample covariance] = C (loosely)
    covs = np.mean([np.cov(generate(t, key=k), rowvar=False, bias=False) for k in range(300)], axis=0)
    assert np.abs(covs - C).max() < 0.3


def test_pseudo_determinism_and_partition_invariance():
    X, p = random_group(60, d=3, seed=4)
    labels = np.arange(60) % 9
    t = GroupTable.from_points(X, p, labels)
    Y = generate(t, key=77)
    assert np.array_equal(Y, generate(t, key=77))
    assert not np.array_equal(Y, generate(t, key=78))
    starts = np.concatenate([[0], np.cumsum(t.n)])
    sub = generate(t.take([2, 6]), key=77, group_ids=[2, 6])
    np.testing.assert_array_equal(sub, np.concatenate([Y[starts[2] : starts[3]], Y[starts[6] : starts[7]]]))
    # without the global ids the subset's streams differ
    assert not np.array_equal(generate(t.take([2, 6]), key=77), sub)
    # pseudo_points with the group's stream is the same code path
    g = t[4]
    pts = pseudo_points(g.mean, g.covariance, g.n, as_key(77).generator(Tag.PSEUDO_DATA, 4))
    np.testing.assert_array_equal(pts, Y[starts[4] : starts[5]])
    with pytest.raises(InvalidParameter):
        generate(t, key=1, group_ids=[0, 1])


def test_pseudo_degenerate_groups():
    rng = np.random.default_rng(8)
    X = np.column_stack([rng.normal(size=20), np.full(20, 0.1), rng.normal(size=20)])
    labels = np.r_[np.zeros(19, np.int64), 1]  # group 1 is a single record
    t = GroupTable.from_points(X, 2, labels)
    assert t.mean[0, 1] == 0.1 and not t.m2[0, 1].any() and not t.m2[0, :, 1].any()
    Y = generate(t, key=3)
    assert (Y[:, 1] == 0.1).all()  # constant column -> exactly the mean
    assert np.array_equal(Y[19], X[19])  # n = 1 -> the record's statistics' mean
    # constants whose plain float mean is inexact, anywhere among d columns (eigh leaves
    # round-off in the zero row of other eigenvectors in many of these cases)
    for case in range(20):
        d, n, j = int(rng.integers(2, 8)), int(rng.integers(30, 60)), int(rng.integers(0, 8))
        j %= d
        c = [-7.77, 2.7, 1 / 3, 1e8 + 0.1][case % 4]
        Z = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
        Z[:, j] = c
        g = CondensedGroup.from_points(Z, 1)
        tz = GroupTable.from_points(Z, 1, np.zeros(n, np.int64))
        assert g.mean[j] == c and tz.mean[0, j] == c and not g.m2[j].any() and not tz.m2[0, j].any()
        assert (generate(tz, key=case)[:, j] == c).all()
        assert (pseudo_points(g.mean, g.covariance, n, np.random.default_rng(case))[:, j] == c).all()
    # collinear points: singular covariance, pseudo-points stay on the line
    s = rng.normal(size=30)
    L = np.column_stack([s, 2 * s + 1])
    Z = generate(GroupTable.from_points(L, 1, np.zeros(30, np.int64)), key=5)
    np.testing.assert_allclose(Z[:, 1], 2 * Z[:, 0] + 1, atol=1e-12)
    # d = 1
    one = GroupTable.from_points(rng.normal(size=(4000, 1)) * 3 + 1, 1, np.repeat([0, 1], 2000))
    W = generate(one, key=6)
    assert W.shape == (4000, 1)
    np.testing.assert_allclose(W[:2000].var(), one.covariance[0, 0, 0], rtol=0.1)
    np.testing.assert_allclose(W[2000:].mean(), one.mean[1, 0], atol=0.2)


@pytest.mark.parametrize("rows_per_block", [1, 7, 25])
def test_generate_dask_equals_generate(rows_per_block):
    X, p = random_group(120, d=3, seed=12)
    labels = np.sort(np.random.default_rng(0).integers(0, 15, size=120))
    labels[:15] = np.arange(15)
    labels = np.sort(labels)
    t = GroupTable.from_points(X, p, labels)
    Z = generate_dask(t, key=31, rows_per_block=rows_per_block)
    np.testing.assert_array_equal(Z.compute(), generate(t, key=31))
    # blocks end on group boundaries and stay within rows_per_block unless one group
    ends = set(np.cumsum(t.n).tolist())
    assert set(np.cumsum(Z.chunks[0]).tolist()) <= ends
    first = 0
    for c in Z.chunks[0]:
        k = np.searchsorted(np.cumsum(t.n), first + c) - np.searchsorted(np.cumsum(t.n), first)
        assert c <= rows_per_block or k == 1
        first += c


def test_generate_dask_key_handling():
    X, p = random_group(20, d=2, seed=1)
    t = GroupTable.from_points(X, p, np.arange(20) % 4)
    Z = generate_dask(t, rows_per_block=5)  # key=None: one fresh key for the whole array
    np.testing.assert_array_equal(Z.compute(), Z.compute())
    secret = 0x1234567890ABCDEF1234567890ABCDEF
    names = str(list(dict(generate_dask(t, key=secret, rows_per_block=5).dask).keys())).lower()
    assert "1234567890abcdef" not in names and str(secret) not in names
    assert generate_dask(GroupTable.empty(2), key=1).shape == (0, 2)
    with pytest.raises(InvalidParameter):
        generate_dask(t, key=1, rows_per_block=0)

"""Weighted strict Mondrian (ppdm_dask.anonymity.mondrian) against a textbook record-level version."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import check_k_anonymity, is_l_diverse
from ppdm_dask.anonymity._diversity import diverse_mask
from ppdm_dask.anonymity.mondrian import class_regions, mondrian_partition
from ppdm_dask.errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter

DIVERSITY = [
    (None, "distinct", None),
    (2, "distinct", None),
    (3, "distinct", None),
    (1.8, "entropy", None),
    (2, "recursive", 3.0),
]


# ----------------------------------------------------------------------------- textbook reference
def textbook_mondrian(X, categorical, k, s=None, n_s=0, l=None, kind="distinct", c=None):
    """Literal record-level strict Mondrian (LeFevre et al. 2006), plain recursion.

    Returns the classes as lists of record indices, left (smaller values) before right.
    """
    n, q = X.shape
    gspan = []
    for j in range(q):
        col = X[:, j]
        gspan.append(len(set(col.tolist())) if categorical[j] else col.max() - col.min())

    def diverse(rows):
        if l is None:
            return True
        counts = np.bincount(s[rows], minlength=n_s)[None, :]
        return bool(diverse_mask(counts, l, kind, c)[0])

    def width(rows, j):
        vals = X[rows, j]
        if categorical[j]:
            return len(set(vals.tolist())) / gspan[j]
        return (vals.max() - vals.min()) / (gspan[j] if gspan[j] > 0 else 1.0)

    def anonymize(rows):
        dims = [j for j in range(q) if len(set(X[rows, j].tolist())) > 1]
        for j in sorted(dims, key=lambda j: (-width(rows, j), j)):
            vals = sorted(X[rows, j].tolist())
            median = vals[math.ceil(len(rows) / 2) - 1]
            lhs = [r for r in rows if X[r, j] <= median]
            if len(lhs) == len(rows):
                lhs = [r for r in rows if X[r, j] < median]
            rhs = [r for r in rows if r not in set(lhs)]
            if len(lhs) >= k and len(rhs) >= k and diverse(lhs) and diverse(rhs):
                return anonymize(lhs) + anonymize(rhs)
        return [rows]

    return anonymize(list(range(n)))


def random_table(seed, n=None, q=None):
    """Random frequency set (distinct tuples, weights, sensitive counts) and its expanded records."""
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(20, 120))
    q = q or int(rng.integers(1, 4))
    categorical = rng.random(q) < 0.5
    cols = []
    for j in range(q):
        if categorical[j]:
            cols.append(rng.integers(0, int(rng.integers(2, 7)), n))
        else:
            cols.append(np.round(rng.normal(40, 12, n)) if rng.random() < 0.5 else rng.integers(0, 8, n) * 2.5)
    R = np.column_stack(cols).astype(float)  # records, with many duplicates
    n_s = int(rng.integers(2, 5))
    s = rng.integers(0, n_s, n)
    # frequency set: distinct QI tuples, weights, per-tuple sensitive counts
    X, inv = np.unique(R, axis=0, return_inverse=True)
    inv = inv.ravel()
    w = np.bincount(inv, minlength=len(X))
    S = np.zeros((len(X), n_s), dtype=np.int64)
    np.add.at(S, (inv, s), 1)
    return R, s, n_s, inv, X, w, S, categorical


def published_table(R, s, cid, categorical):
    """Released table: every record's QI replaced by its class region (independent of the code)."""
    df = pd.DataFrame({"s": s})
    for j in range(R.shape[1]):
        col = pd.Series(R[:, j])
        g = col.groupby(cid)
        if categorical[j]:
            lab = g.apply(lambda v: ",".join(str(int(x)) for x in sorted(set(v))))
        else:
            lab = g.min().astype(str) + "-" + g.max().astype(str)
        df[f"a{j}"] = lab.reindex(cid).to_numpy()
    return df


# ----------------------------------------------------------------------------- equivalence with textbook
@pytest.mark.parametrize("seed", range(30))
def test_weighted_equals_textbook_on_records(seed):
    R, s, n_s, inv, X, w, S, cat = random_table(seed)
    l, kind, c = DIVERSITY[seed % len(DIVERSITY)]
    total = S.sum(axis=0, keepdims=True)
    if l is not None and not diverse_mask(total, l, kind, c)[0]:
        l = None
    k = [1, 2, 3, 5, 8][(seed // 5) % 5]  # every k meets every diversity kind
    classes = textbook_mondrian(R, cat, k, s, n_s, l, kind, c)
    ref = np.empty(len(R), dtype=np.int64)
    for i, rows in enumerate(classes):
        ref[rows] = i
    weighted = mondrian_partition(X, w, k, categorical=cat, sensitive_counts=S, l=l, kind=kind, c=c)
    assert np.array_equal(weighted[inv], ref)
    # the same records given one by one (weights 1, duplicates merged internally)
    s_onehot = np.eye(n_s, dtype=np.int64)[s]
    records = mondrian_partition(R, np.ones(len(R), np.int64), k, categorical=cat, sensitive_counts=s_onehot, l=l, kind=kind, c=c)
    assert np.array_equal(records, ref)


@pytest.mark.parametrize("seed", range(12))
def test_classes_are_k_anonymous_and_l_diverse(seed):
    R, s, n_s, inv, X, w, S, cat = random_table(100 + seed, n=400)
    l, kind, c = DIVERSITY[seed % len(DIVERSITY)]
    if l is not None and not diverse_mask(S.sum(axis=0, keepdims=True), l, kind, c)[0]:
        l = None
    k = [2, 4, 7][seed % 3]
    cid = mondrian_partition(X, w, k, categorical=cat, sensitive_counts=S, l=l, kind=kind, c=c)
    n_cls = cid.max() + 1
    assert set(cid.tolist()) == set(range(n_cls))
    sizes = np.bincount(cid, weights=w)
    assert sizes.min() >= k
    counts = np.zeros((n_cls, n_s), dtype=np.int64)
    np.add.at(counts, cid, S)
    assert diverse_mask(counts, l, kind, c).all()
    # independent checkers on the released table
    pub = published_table(R, s, cid[inv], cat)
    qi = [f"a{j}" for j in range(R.shape[1])]
    r = check_k_anonymity(pub, qi, k)
    assert r.ok and r["k-anonymity"].stats["n_classes"] == n_cls
    if l is not None:
        assert is_l_diverse(pub, qi, "s", l, kind=kind, c=c)


def test_invariant_to_row_order():
    for seed in range(8):
        R, s, n_s, inv, X, w, S, cat = random_table(200 + seed, n=300)
        l = 2 if diverse_mask(S.sum(axis=0, keepdims=True), 2)[0] else None
        base = mondrian_partition(X, w, 3, categorical=cat, sensitive_counts=S, l=l)
        perm = np.random.default_rng(seed).permutation(len(X))
        shuffled = mondrian_partition(X[perm], w[perm], 3, categorical=cat, sensitive_counts=S[perm], l=l)
        assert np.array_equal(shuffled, base[perm])
        # splitting a tuple's weight over duplicate rows changes nothing either
        dup = np.r_[np.arange(len(X)), 0]
        w2 = w.copy()
        w2[0] = 1
        w_dup = np.r_[w2, w[0] - 1] if w[0] > 1 else None
        if w_dup is not None and l is None:
            assert np.array_equal(mondrian_partition(X[dup], w_dup, 3, categorical=cat), np.r_[base, base[0]])


def test_hand_example():
    # ages 1..8 (one record each) and a constant column: k=2 gives 4 pairs; k=3 -> {1..4}, {5..8}
    X = np.c_[np.arange(1, 9), np.zeros(8)].astype(float)
    w = np.ones(8, np.int64)
    assert list(mondrian_partition(X, w, 2, categorical=[False, True])) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert list(mondrian_partition(X, w, 3, categorical=[False, True])) == [0, 0, 0, 0, 1, 1, 1, 1]
    # weighted median: value 1 holds records 1..5 of 8 (the 4th is the median) -> left = {1}
    # (weight 5), right = {2, 3} (weight 3): allowed for k = 3
    Xw = np.array([[1.0], [2.0], [3.0]])
    assert list(mondrian_partition(Xw, [5, 2, 1], 3, categorical=[False])) == [0, 1, 1]
    # the median is the maximum -> cut below it
    assert list(mondrian_partition(Xw, [1, 1, 6], 2, categorical=[False])) == [0, 0, 1]
    assert list(mondrian_partition(Xw, [1, 1, 6], 3, categorical=[False])) == [0, 0, 0]


def test_class_regions():
    R, s, n_s, inv, X, w, S, cat = random_table(7, n=200, q=3)
    cid = mondrian_partition(X, w, 4, categorical=cat)
    reg = class_regions(X, w, cid, cat)
    assert reg.n_classes == cid.max() + 1 and reg.sizes.sum() == w.sum()
    for e in range(reg.n_classes):
        rows = R[cid[inv] == e]
        assert reg.sizes[e] == len(rows)
        for j in range(R.shape[1]):
            if cat[j]:
                assert set(reg.codes(e, j).tolist()) == set(rows[:, j].astype(int).tolist())
            else:
                assert (reg.low[e, j], reg.high[e, j]) == (rows[:, j].min(), rows[:, j].max())
    # arbitrary (non-contiguous) labels
    reg2 = class_regions(X, w, cid * 10 + 3, cat)
    assert list(reg2.labels) == [10 * i + 3 for i in range(reg.n_classes)]
    assert np.array_equal(reg2.sizes, reg.sizes)


def test_scales_to_many_tuples():
    rng = np.random.default_rng(5)
    n = 40_000
    X = np.c_[
        rng.integers(17, 91, n),
        rng.integers(0, 16, n),
        rng.integers(0, 41, n),
        rng.integers(0, 7, n),
        rng.integers(0, 14, n),
        rng.integers(0, 2, n),
    ].astype(float)
    X, w = np.unique(X, axis=0, return_counts=True)
    cid = mondrian_partition(X, w, 5, categorical=[False, True, True, True, True, True])
    assert np.bincount(cid, weights=w).min() >= 5 and cid.max() > 1000


def test_adult_k_anonymous(shared_data):
    df = pd.read_csv(shared_data / "adult" / "adult.csv", sep=";")
    qi = [c for c in df.columns if c != "salary-class"]
    cat = [c != "age" for c in qi]
    codes = pd.DataFrame(
        {c: (pd.Categorical(df[c], categories=sorted(df[c].unique())).codes if iscat else df[c]) for c, iscat in zip(qi, cat)}
    )
    codes["s"] = (df["salary-class"] == ">50K").astype(int)
    fs = codes.groupby(qi + ["s"]).size().unstack("s", fill_value=0)
    X, S = np.array(fs.index.tolist(), dtype=float), fs.to_numpy()
    cid = mondrian_partition(X, S.sum(axis=1), 5, categorical=cat, sensitive_counts=S, l=2)
    counts = np.zeros((cid.max() + 1, 2), np.int64)
    np.add.at(counts, cid, S)
    assert counts.sum(axis=1).min() >= 5 and (counts > 0).all()


# ----------------------------------------------------------------------------- errors
def test_errors():
    X = np.array([[1.0, 0], [2.0, 1], [3.0, 1]])
    w = np.array([1, 2, 1])
    cat = [False, True]
    for k in (0, -1, 1.5, True, None):
        with pytest.raises(InvalidParameter):
            mondrian_partition(X, w, k, categorical=cat)
    with pytest.raises(InfeasiblePrivacyError):
        mondrian_partition(X, w, 5, categorical=cat)
    with pytest.raises(InfeasiblePrivacyError):  # the whole table has one sensitive value
        mondrian_partition(X, w, 1, categorical=cat, sensitive_counts=np.c_[w, 0 * w], l=2)
    with pytest.raises(InvalidParameter):
        mondrian_partition(X, w[:2], 1, categorical=cat)
    with pytest.raises(InvalidParameter):
        mondrian_partition(X, w, 1, categorical=[False])
    with pytest.raises(InvalidParameter):
        mondrian_partition(X[:, 0], w, 1, categorical=cat)
    with pytest.raises(InvalidParameter):
        mondrian_partition(X, w, 1, categorical=cat, sensitive_counts=np.ones((2, 2)), l=2)
    with pytest.raises(InvalidParameter):  # l without sensitive counts
        mondrian_partition(X, w, 1, categorical=cat, l=2)
    with pytest.raises(DataFormatError):  # rows must sum to the weights
        mondrian_partition(X, w, 1, categorical=cat, sensitive_counts=np.ones((3, 2), int), l=2)
    nan = X.copy()
    nan[1, 0] = np.nan
    with pytest.raises(DataFormatError, match="NaN"):
        mondrian_partition(nan, w, 1, categorical=cat)
    bad_code = X.copy()
    bad_code[0, 1] = 0.5
    with pytest.raises(DataFormatError):
        mondrian_partition(bad_code, w, 1, categorical=cat)
    with pytest.raises(DataFormatError):
        mondrian_partition(X, [1, 0, 1], 1, categorical=cat)
    with pytest.raises(InvalidParameter):
        mondrian_partition(X, w, 1, categorical=cat, split="bogus")
    with pytest.raises(InvalidParameter):
        mondrian_partition(X, w, 1, categorical=cat, split="imprecision")
    with pytest.raises(InvalidParameter):
        mondrian_partition(X, w, 1, categorical=cat, queries=[{0: (1, 2)}], bounds=[0])
    with pytest.raises(InvalidParameter):  # lo > hi in a compiled query
        mondrian_partition(X, w, 1, categorical=cat, split="imprecision", queries=[{0: (3, 2)}], bounds=[0])
    with pytest.raises(InvalidParameter):  # one bound per query
        mondrian_partition(X, w, 1, categorical=cat, split="imprecision", queries=[{0: (1, 2)}], bounds=[])
    with pytest.raises(InvalidParameter):
        class_regions(X, w, [0, 1], cat)

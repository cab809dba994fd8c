"""Accuracy-constrained access control (docs/anonymity.md#accuracy-constrained-access-control): the
hand-computed imprecision example of that page, and the imprecision-driven partitioner."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdm_dask.anonymity._diversity import diverse_mask
from ppdm_dask.anonymity.access_control import (
    AccuracyConstrainedAnonymizer,
    Permission,
    Predicate,
    QISchema,
    Query,
    evaluate_permissions,
    imprecision,
    overlapping_classes,
    parse_permissions,
    parse_query,
    query_count,
    query_mask,
    select_anonymization,
)
from ppdm_dask.anonymity.mondrian import class_regions, mondrian_partition
from ppdm_dask.errors import InvalidParameter, PrivacyViolation

from .test_basics import PATIENTS

GENDERS = ("Female", "Male")
STATES = ("Karnataka", "Kerala", "Tamil Nadu")
SCHEMA = QISchema(("Age", "Gender", "State"), (False, True, True), {"Gender": GENDERS, "State": STATES})
# the clusters of cluster_l_diverse on the 10 patients with k = 3, l = 2
O2_2 = [["Johnson", "Joan", "Salima"], ["Rambha", "John", "Yadu"], ["Bahuksana", "sunny", "Ramsha", "Kishor"]]


def patients_x() -> np.ndarray:
    return np.c_[
        PATIENTS["Age"].to_numpy(float),
        [GENDERS.index(g[0].upper() + g[1:]) for g in PATIENTS["Gender"]],
        [STATES.index(s) for s in PATIENTS["State"]],
    ].astype(float)


def o2_2_classes() -> np.ndarray:
    names = PATIENTS["Name"].tolist()
    cid = np.full(len(names), -1)
    for e, members in enumerate(O2_2):
        for m in members:
            cid[names.index(m)] = e
    assert (cid >= 0).all()
    return cid


# ----------------------------------------------------------------------------- imprecision by hand
# Q = (Age in [25, 30] and State = Karnataka) selects 2 records and overlaps only the third class
# (4 records): imprec = 2
def test_o2_5_imprecision():
    X, w, cid = patients_x(), np.ones(10, np.int64), o2_2_classes()
    reg = class_regions(X, w, cid, SCHEMA.categorical)
    assert [tuple(reg.low[e, [0]]) + tuple(reg.high[e, [0]]) for e in range(3)] == [(17, 28), (19, 24), (23, 29)]
    assert [[STATES[i] for i in reg.codes(e, 2)] for e in range(3)] == [
        ["Kerala", "Tamil Nadu"],
        ["Kerala"],
        ["Karnataka", "Tamil Nadu"],
    ]
    assert all(len(reg.codes(e, 1)) == 2 for e in range(3))  # {F, M} everywhere
    assert list(reg.sizes) == [3, 3, 4]

    q = parse_query({"Age": [25, 30], "State": ["Karnataka"]}, SCHEMA)
    assert q == Query((Predicate("Age", 25, 30), Predicate("State", values=("Karnataka",))))
    mask = query_mask(X, q, schema=SCHEMA)
    assert sorted(PATIENTS["Name"][mask]) == ["Kishor", "sunny"]
    assert query_count(X, w, q, schema=SCHEMA) == 2
    assert list(overlapping_classes(reg, q, schema=SCHEMA)) == [False, False, True]
    assert imprecision(X, w, cid, q, schema=SCHEMA) == 2
    perms = [Permission("doctor", q, 2), Permission("doctor", q, 1.5), Permission("nurse", q, 0, name="strict")]
    rep = evaluate_permissions(X, w, cid, perms, schema=SCHEMA)
    assert [(p.true_count, p.returned, p.imprecision, p.satisfied) for p in rep.permissions] == [
        (2, 4, 2, True),
        (2, 4, 2, False),
        (2, 4, 2, False),
    ]
    assert rep.n_satisfied == 1 and rep.total_imprecision == 6 and rep.fraction_satisfied == pytest.approx(1 / 3)
    assert rep.roles["doctor"].n_satisfied == 1 and rep.roles["doctor"].n_permissions == 2
    assert rep.roles["nurse"].total_imprecision == 2
    df = rep.to_pandas()
    assert (
        df["name"].isna().tolist() == [True, True, False]
        and df["name"].iloc[2] == "strict"
        and list(rep.roles_to_pandas()["role"]) == ["doctor", "nurse"]
    )
    # the same on the frequency set (the two duplicated tuples merged with weight 2)
    Xu, inv, wu = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    cu = np.zeros(len(Xu), np.int64)
    cu[inv.ravel()] = cid
    assert len(Xu) == 8 and imprecision(Xu, wu, cu, q, schema=SCHEMA) == 2


# ----------------------------------------------------------------------------- brute force
def brute_imprecision(R, cid, cat, query):
    """Record-level definition: regions by Python min/max/set, overlap on every attribute."""

    def meets(rows, j, cons):
        vals = [R[r][j] for r in rows]
        if cat[j]:
            return bool(set(vals) & set(cons))
        return min(vals) <= cons[1] and max(vals) >= cons[0]

    def satisfies(r):
        return all((R[r][j] in set(cons)) if cat[j] else cons[0] <= R[r][j] <= cons[1] for j, cons in query.items())

    returned = 0
    for e in set(cid):
        rows = [r for r in range(len(R)) if cid[r] == e]
        if all(meets(rows, j, cons) for j, cons in query.items()):
            returned += len(rows)
    return returned - sum(satisfies(r) for r in range(len(R)))


def random_query(rng, X, cat):
    q = X.shape[1]
    attrs = rng.choice(q, size=int(rng.integers(1, q + 1)), replace=False)
    out = {}
    for j in sorted(attrs.tolist()):
        if cat[j]:
            top = int(X[:, j].max()) + 2  # sometimes a code absent from the data
            out[j] = sorted(rng.choice(top, size=int(rng.integers(1, top)), replace=False).tolist())
        else:
            a, b = np.sort(rng.uniform(X[:, j].min() - 2, X[:, j].max() + 2, 2))
            out[j] = (float(np.round(a)), float(np.round(b)))
    return out


def to_query(d, cat):
    return Query(tuple(Predicate(j, values=tuple(c)) if cat[j] else Predicate(j, *c) for j, c in d.items()))


@pytest.mark.parametrize("seed", range(10))
def test_imprecision_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, q = int(rng.integers(30, 80)), int(rng.integers(1, 4))
    cat = rng.random(q) < 0.5
    X = np.column_stack([rng.integers(0, 5, n) if cat[j] else rng.integers(0, 30, n) for j in range(q)]).astype(float)
    X, w = np.unique(X, axis=0, return_counts=True)
    R = np.repeat(X, w, axis=0).tolist()
    if seed % 2:  # a Mondrian partition
        cid = mondrian_partition(X, w, 3, categorical=cat)
    else:  # an arbitrary one (non-contiguous labels)
        cid = rng.integers(0, 6, len(X)) * 7
    rid = np.repeat(cid, w).tolist()
    reg = class_regions(X, w, cid, cat)
    for _ in range(15):
        d = random_query(rng, X, cat)
        query = to_query(d, cat)
        got = imprecision(X, w, cid, query, categorical=cat, regions=reg)
        assert got == brute_imprecision(R, rid, cat, d) >= 0
        assert query_count(X, w, query, categorical=cat) == sum(
            all((r[j] in set(c)) if cat[j] else c[0] <= r[j] <= c[1] for j, c in d.items()) for r in R
        )


# ----------------------------------------------------------------------------- the anonymiser
def grid_example():
    x, y = np.meshgrid(np.arange(100), np.arange(10), indexing="ij")
    X = np.c_[x.ravel(), y.ravel()].astype(float)
    schema = QISchema(("x", "y"), (False, False))
    perms = parse_permissions(
        [
            {"role": "a", "bound": 0, "where": {"x": [13, 27]}},
            {"role": "a", "bound": 0, "where": {"x": [61, 66], "y": [0, 4]}},
            {"role": "b", "bound": 5, "where": {"x": [40, 44], "y": [3, 7]}},
            {"role": "b", "bound": 0, "where": {"y": [8, 9], "x": [80, None]}},
        ],
        schema,
    )
    return X, np.ones(len(X), np.int64), schema, perms


def test_heuristic_beats_mondrian_on_selective_workload():
    X, w, schema, perms = grid_example()
    for k in (5, 10, 20):
        an = AccuracyConstrainedAnonymizer(k, perms).fit(X, w, schema=schema)
        assert np.bincount(an.class_id_).min() >= k
        base = evaluate_permissions(X, w, mondrian_partition(X, w, k, categorical=[False, False]), perms, schema=schema)
        assert an.report_.n_satisfied >= base.n_satisfied
        assert an.report_.total_imprecision <= base.total_imprecision
    # k = 10: every bound met by the heuristic, none by median cuts
    an = AccuracyConstrainedAnonymizer(10, perms).fit(X, w, schema=schema)
    assert an.report_.n_satisfied == 4 and an.report_.total_imprecision == 0
    assert base.n_satisfied == 0  # (k = 20) median cuts straddle every query
    k10 = evaluate_permissions(X, w, mondrian_partition(X, w, 10, categorical=[False, False]), perms, schema=schema)
    assert k10.n_satisfied == 0 and k10.total_imprecision == 140
    assert an.report_.roles["a"].n_satisfied == 2 and an.n_classes_ == an.regions_.n_classes


def test_heuristic_categorical_and_l_diverse():
    rng = np.random.default_rng(3)
    n = 3000
    X = np.c_[rng.integers(18, 80, n), rng.integers(0, 9, n), rng.integers(0, 2, n)].astype(float)
    s = rng.integers(0, 3, n)
    schema = QISchema(("age", "job", "sex"), (False, True, True), {"job": tuple("abcdefghi"), "sex": ("F", "M")})
    perms = parse_permissions(
        [
            {"role": "r1", "bound": 5, "where": {"job": ["c", "d", "e"], "age": [30, 39]}},
            {"role": "r1", "bound": 0, "where": {"job": "h"}},
            {"role": "r2", "bound": 10, "where": {"sex": "F", "age": [60, 64]}},
            {"role": "r2", "bound": 3, "where": {"job": ["a", "i"], "sex": "M", "age": [None, 25]}},
            {"role": "r3", "bound": 0, "where": {"age": [45, 47]}},
        ],
        schema,
    )
    Xu, inv, w = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    S = np.zeros((len(Xu), 3), np.int64)
    np.add.at(S, (inv.ravel(), s), 1)
    for l, kind in ((None, "distinct"), (2, "distinct"), (1.5, "entropy")):
        for k in (4, 15):
            an = AccuracyConstrainedAnonymizer(k, perms, l=l, kind=kind).fit(Xu, w, schema=schema, sensitive_counts=S)
            counts = np.zeros((an.n_classes_, 3), np.int64)
            np.add.at(counts, an.class_id_, S)
            assert counts.sum(axis=1).min() >= k and diverse_mask(counts, l, kind).all()
            base = mondrian_partition(Xu, w, k, categorical=schema.categorical, sensitive_counts=S, l=l, kind=kind)
            rb = evaluate_permissions(Xu, w, base, perms, schema=schema)
            assert an.report_.n_satisfied >= rb.n_satisfied
            assert an.report_ == evaluate_permissions(Xu, w, an.class_id_, perms, schema=schema)


def test_heuristic_without_permissions_is_mondrian():
    rng = np.random.default_rng(11)
    X = np.c_[rng.integers(0, 40, 500), rng.integers(0, 6, 500)].astype(float)
    X, w = np.unique(X, axis=0, return_counts=True)
    an = AccuracyConstrainedAnonymizer(6, []).fit(X, w, categorical=[False, True])
    assert np.array_equal(an.class_id_, mondrian_partition(X, w, 6, categorical=[False, True]))
    # an unconstrained query selects everything exactly: no influence either
    an = AccuracyConstrainedAnonymizer(6, [Permission("r", Query(), 0)]).fit(X, w, categorical=[False, True])
    assert np.array_equal(an.class_id_, mondrian_partition(X, w, 6, categorical=[False, True]))
    assert an.report_.n_satisfied == 1
    # sklearn convention: __init__ only stores
    est = AccuracyConstrainedAnonymizer(-1, "nonsense")
    assert est.k == -1 and not hasattr(est, "class_id_")


def test_heuristic_invariant_to_row_order():
    X, w, schema, perms = grid_example()
    rng = np.random.default_rng(0)
    w = rng.integers(1, 4, len(X))
    base = AccuracyConstrainedAnonymizer(12, perms).fit(X, w, schema=schema).class_id_
    perm = rng.permutation(len(X))
    again = AccuracyConstrainedAnonymizer(12, perms).fit(X[perm], w[perm], schema=schema).class_id_
    assert np.array_equal(again, base[perm])


# ----------------------------------------------------------------------------- selection
def test_select_anonymization_tie_rules():
    X = np.arange(10, dtype=float)[:, None]
    w = np.ones(10, np.int64)
    schema = QISchema(("x",), (False,))
    perms = [
        Permission("r", parse_query({"x": [0, 1]}, schema), 0),
        Permission("r", parse_query({"x": [0, 3]}, schema), 100),
        Permission("s", parse_query({"x": [8, 9]}, schema), 0),
    ]
    A = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 1])  # 2 satisfied, total 12
    B = np.array([0, 0, 1, 1, 1, 1, 1, 1, 2, 2])  # 3 satisfied, total 4
    C = np.array([0, 0, 1, 1, 2, 2, 2, 2, 3, 3])  # 3 satisfied, total 0
    D = np.array([0] * 5 + [1] * 5)  # 1 satisfied, total 7
    rep = {key: evaluate_permissions(X, w, v, perms, schema=schema) for key, v in zip("ABCD", (A, B, C, D))}
    assert [(r.n_satisfied, r.total_imprecision) for r in rep.values()] == [(2, 12), (3, 4), (3, 0), (1, 7)]
    sel = select_anonymization([A, D], perms, X, w, schema=schema)
    assert sel.key == 0 and np.array_equal(sel.class_id, A)  # more satisfied beats less imprecision
    assert select_anonymization([B, C], perms, X, w, schema=schema).key == 1  # tie -> less imprecision
    assert select_anonymization([C, C * 5 + 1, B], perms, X, w, schema=schema, k=2).key == 0  # full tie -> first
    sel = select_anonymization({"b": B, "c": C, "a": A}, perms, X, w, schema=schema)
    assert sel.key == "c" and set(sel.reports) == {"b", "c", "a"} and sel.report.total_imprecision == 0
    with pytest.raises(PrivacyViolation, match="3-anonymous"):
        select_anonymization([D, A], perms, X, w, schema=schema, k=3)
    S = np.eye(2, dtype=np.int64)[[0, 1] * 5]  # alternating sensitive values
    with pytest.raises(PrivacyViolation, match="diverse"):
        select_anonymization([D, np.arange(10)], perms, X, w, schema=schema, sensitive_counts=S, l=2)
    assert select_anonymization([D, C], perms, X, w, schema=schema, sensitive_counts=S, l=2).key == 1
    with pytest.raises(InvalidParameter):
        select_anonymization([], perms, X, w, schema=schema)
    with pytest.raises(InvalidParameter):
        select_anonymization([A[:5]], perms, X, w, schema=schema)


# ----------------------------------------------------------------------------- parsing
def test_parser():
    perms = parse_permissions(
        {
            "permissions": [
                {"role": "analyst", "bound": 10, "where": {"Age": [25, 30], "State": ["Karnataka"]}},
                {"role": "analyst", "bound": 0, "where": {"Gender": "Male", "Age": [None, 20]}, "name": "young men"},
                {"role": "auditor", "bound": 2.5, "where": {"Age": 24}},
            ]
        },
        SCHEMA,
    )
    assert [p.role for p in perms] == ["analyst", "analyst", "auditor"] and perms[1].name == "young men"
    assert perms[1].query.predicates[1] == Predicate("Age", -math.inf, 20)
    assert perms[2].query.compile(SCHEMA) == {0: (24.0, 24.0)}
    X, w = patients_x(), np.ones(10, np.int64)
    assert [query_count(X, w, p.query, schema=SCHEMA) for p in perms] == [2, 3, 2]
    # addressing by column index with codes (no schema labels)
    assert query_count(X, w, Query((Predicate(2, values=(0,)),)), categorical=SCHEMA.categorical) == 3


@pytest.mark.parametrize(
    "entry,match",
    [
        ({"role": "a", "bound": 1, "where": {"Zip": [1, 2]}}, "Zip"),
        ({"role": "a", "bound": 1, "where": {"Age": [30, 25]}}, "low 30.0 > high 25.0"),
        ({"role": "a", "bound": -1, "where": {"Age": [25, 30]}}, "bound"),
        ({"role": "a", "bound": float("nan"), "where": {"Age": [25, 30]}}, "bound"),
        ({"role": "a", "bound": True, "where": {"Age": [25, 30]}}, "bound"),
        ({"role": "a", "where": {"Age": [25, 30]}}, "missing keys"),
        ({"role": "a", "bound": 1, "where": {}, "colour": "red"}, "unknown keys"),
        ({"role": "", "bound": 1, "where": {}}, "role"),
        ({"role": "a", "bound": 1, "where": {"State": ["Goa"]}}, "Goa"),
        ({"role": "a", "bound": 1, "where": {"State": []}}, "empty"),
        ({"role": "a", "bound": 1, "where": {"Age": [1, 2, 3]}}, r"\[lo, hi\]"),
        ({"role": "a", "bound": 1, "where": {"Age": ["a", "b"]}}, "numbers"),
        ({"role": "a", "bound": 1, "where": [1]}, "mapping"),
    ],
)
def test_parser_errors(entry, match):
    with pytest.raises(InvalidParameter, match=match):
        parse_permissions([entry], SCHEMA)


def test_model_errors():
    with pytest.raises(InvalidParameter):
        parse_permissions({"perms": []}, SCHEMA)
    with pytest.raises(InvalidParameter):
        parse_permissions("x", SCHEMA)
    with pytest.raises(InvalidParameter):
        Predicate("Age", 1, 2, values=("a",))
    with pytest.raises(InvalidParameter):
        Predicate("Age", 1)
    with pytest.raises(InvalidParameter):
        Predicate("Age", float("nan"), 2)
    with pytest.raises(InvalidParameter, match="at most once"):
        Query((Predicate("Age", 1, 2), Predicate("Age", 3, 4)))
    with pytest.raises(InvalidParameter, match="value set"):  # range on a categorical column
        Query((Predicate("State", 0, 1),)).compile(SCHEMA)
    with pytest.raises(InvalidParameter, match="range"):
        Query((Predicate("Age", values=(1,)),)).compile(SCHEMA)
    with pytest.raises(InvalidParameter):
        QISchema(("a", "a"), (False, False))
    with pytest.raises(InvalidParameter):
        QISchema(("a",), (False,), {"a": ("x",)})
    with pytest.raises(InvalidParameter):
        Permission("r", {"Age": [1, 2]}, 1)
    X, w = patients_x(), np.ones(10, np.int64)
    with pytest.raises(InvalidParameter):  # schema of the wrong width
        evaluate_permissions(X[:, :2], w, np.zeros(10, int), [], schema=SCHEMA)
    with pytest.raises(InvalidParameter):
        query_count(
            X,
            w,
            Query(),
        )
    with pytest.raises(InvalidParameter):
        AccuracyConstrainedAnonymizer(3, ["not a permission"]).fit(X, w, schema=SCHEMA)

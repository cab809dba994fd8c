"""Clustering l-diverse partition (docs/anonymity.md#the-clustering-l-diverse-partition): the clusters
of the 10-patient table computed by hand for (k, l) = (3, 2), (2, 2) and (3, 3), a literal reference,
and the Dask path (docs/anonymity.md#distributed-execution-of-the-clustering)."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import Hierarchy, check_l_diversity, is_k_anonymous, is_l_diverse
from ppdm_dask.anonymity._cluster_kernels import choose_seeds, distance_weights
from ppdm_dask.anonymity.cluster import ClusterResult, cluster_l_diverse
from ppdm_dask.errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter

# P2 Figure 2: the 10 patients
from .test_basics import PATIENTS, QI  # noqa: E402  (P2 Figure 2: the 10 patients)

KINDS = [("distinct", 2, None), ("entropy", 1.5, None), ("recursive", 2, 3.0)]


def names(res: ClusterResult) -> list[set[str]]:
    """Clusters as sets of patient names, in cluster-id order."""
    return [set(PATIENTS["Name"][res.labels == i]) for i in range(res.n_clusters)]


# ---------------------------------------------------------------- the 10 patients by hand
# sorted by (Age, Gender, State): Johnson 17, Rambha 19, John 19, Bahuksana 23, Yadu 24, Joan 24,
# sunny 27, Salima 28, Ramsha 29, Kishor 29; diseases by frequency: Heart-related (3), Cancer, TB,
# Viral infection (2 each), No illness (1). k = 3, l = 2: seeds Johnson, Rambha, Bahuksana.
def test_o2_2_k3_l2_exact_with_published_ranges():
    res = cluster_l_diverse(PATIENTS, QI, "Disease", 3, 2, keep=["Name"])
    assert names(res) == [{"Johnson", "Joan", "Salima"}, {"Rambha", "John", "Yadu"}, {"Bahuksana", "sunny", "Ramsha", "Kishor"}]
    assert res.n_repaired_merges == 0
    ages = [res.table["Age"][res.labels == i].unique().tolist() for i in range(3)]
    assert ages == [["17-28"], ["19-24"], ["23-29"]]
    t = res.table
    assert list(t.columns) == ["Name", "Age", "Gender", "State", "Disease"]
    assert t.loc[PATIENTS["Name"] == "Johnson", "State"].item() == "Kerala|Tamil Nadu"
    assert t.loc[PATIENTS["Name"] == "Rambha", "State"].item() == "Kerala"
    assert (t["Disease"] == PATIENTS["Disease"]).all() and (t["Name"] == PATIENTS["Name"]).all()
    assert is_k_anonymous(t, QI, 3) and is_l_diverse(t, QI, "Disease", 2)
    s = res.summary()
    assert (s["k_achieved"], s["l_achieved"], s["discernibility"], s["n_clusters"]) == (3, 2, 9 + 9 + 16, 3)


def test_o2_2_k2_l2_greedy_then_repair():
    greedy = cluster_l_diverse(PATIENTS, QI, "Disease", 2, 2, repair=False)
    assert names(greedy)[0] == {"Johnson", "Kishor"}  # both Heart-related: violates l
    assert greedy.summary()["l_achieved"] == 1
    res = cluster_l_diverse(PATIENTS, QI, "Disease", 2, 2)
    assert names(res) == [{"Rambha", "Yadu", "Johnson", "Kishor"}, {"Bahuksana", "Ramsha"}, {"John", "Joan"}, {"sunny", "Salima"}]
    assert res.n_repaired_merges == 1
    ages = [res.table["Age"][res.labels == i].unique().tolist() for i in range(4)]
    assert ages == [["17-29"], ["23-29"], ["19-24"], ["27-28"]]
    assert is_k_anonymous(res.table, QI, 2)
    assert is_l_diverse(res.table, QI, "Disease", 2)


def test_o2_3_greedy_is_not_enough():
    greedy = cluster_l_diverse(PATIENTS, QI, "Disease", 3, 3, repair=False)
    assert names(greedy) == [
        {"Johnson", "Kishor"},
        {"Rambha", "John", "Yadu", "Joan"},
        {"Bahuksana", "sunny", "Salima", "Ramsha"},
    ]
    assert not is_k_anonymous(greedy.table, QI, 3)
    res = cluster_l_diverse(PATIENTS, QI, "Disease", 3, 3)
    assert names(res) == [{"Rambha", "John", "Yadu", "Joan", "Johnson", "Kishor"}, {"Bahuksana", "sunny", "Salima", "Ramsha"}]
    assert is_k_anonymous(res.table, QI, 3)
    assert is_l_diverse(res.table, QI, "Disease", 3)


def test_seed_rule_on_patients():
    # the sorted order of the 10 patients and the Disease codes in value order
    order = ["Johnson", "Rambha", "John", "Bahuksana", "Yadu", "Joan", "sunny", "Salima", "Ramsha", "Kishor"]
    dis = PATIENTS.set_index("Name").loc[order, "Disease"]
    dom = sorted(dis.unique())
    seeds = choose_seeds(np.array([dom.index(v) for v in dis]), len(dom), 5)
    assert [order[i] for i in seeds] == ["Johnson", "Rambha", "Bahuksana", "John", "sunny"]


def test_distance_weights_exact_and_float_modes():
    w, W = distance_weights(np.array([17.0, 0.0, 5.0]), np.array([29.0, 4.0, 5.0]), True, 2, 10)
    assert W == 12.0 and w.tolist() == [1.0, 3.0, 0.0]  # lcm(12, 4); range 0 -> weight 0
    w, W = distance_weights(np.array([0.0]), np.array([2.5]), False, 0, 10)
    assert W == 1.0 and w.tolist() == [0.4]


def test_hierarchy_publishes_lowest_common_ancestor():
    state = Hierarchy.from_table(
        [["Kerala", "Malabar", "South"], ["Tamil Nadu", "Coromandel", "South"], ["Karnataka", "Deccan", "South"]], name="State"
    )
    gender = Hierarchy.from_table([["Female", "*"], ["Male", "*"]], name="Gender")
    res = cluster_l_diverse(PATIENTS, QI, "Disease", 3, 2, hierarchies={"State": state, "Gender": gender})
    t = res.table
    assert sorted(t["State"].unique()) == ["*", "Kerala"]  # {Kerala, Tamil Nadu} -> root; single value kept
    assert set(t["Gender"]) == {"*"}
    one = cluster_l_diverse(PATIENTS[PATIENTS.State != "Karnataka"], ["State"], "Disease", 3, 1, hierarchies={"State": state})
    assert set(one.table["State"]) <= {"Kerala", "Tamil Nadu", "*"}


# ---------------------------------------------------------------- literal reference
# (docs/anonymity.md#the-clustering-l-diverse-partition)
def ref_diverse(counts: list[int], l: float, kind: str, c: float | None) -> bool:
    counts = [x for x in counts if x > 0]
    if l is None or l <= 1:
        return True
    if kind == "distinct":
        return len(counts) >= l
    if kind == "entropy":
        n = sum(counts)
        return -sum(x / n * math.log(x / n) for x in counts) >= math.log(l) - 1e-12
    s = sorted(counts, reverse=True)
    return len(s) >= l and s[0] < c * sum(s[int(l) - 1 :])


def reference(
    df: pd.DataFrame, qi: list[str], num: list[str], S: str, k: int, l: float, kind: str, c: float | None, repair: bool
) -> list[list[int]]:
    """docs/anonymity.md#the-clustering-l-diverse-partition transcribed literally, exact rational
    distances; clusters as row-index lists."""
    rows = df.to_dict("records")
    n = len(rows)
    cat = [a for a in qi if a not in num]
    rng = {a: max(r[a] for r in rows) - min(r[a] for r in rows) for a in num}
    T = sorted(range(n), key=lambda i: (tuple(rows[i][a] for a in qi), i))  # step 1
    K = n // k  # step 2
    freq = Counter(r[S] for r in rows)
    vals = sorted(freq, key=lambda v: (-freq[v], v))
    seeds, used, vi = [], set(), 0  # step 3
    while len(seeds) < K:
        v = vals[vi % len(vals)]
        vi += 1
        for x in T:
            if rows[x][S] == v and x not in used:
                seeds.append(x)
                used.add(x)
                break
    P = [[s] for s in seeds]  # step 4

    def mean(C, a):
        return Fraction(sum(Fraction(rows[i][a]) for i in C), len(C))

    def dist(x, C):
        d = sum((abs(Fraction(rows[x][a]) - mean(C, a)) / Fraction(rng[a]) for a in num if rng[a] > 0), Fraction(0))
        return d + sum(1 - Fraction(sum(rows[i][a] == rows[x][a] for i in C), len(C)) for a in cat)

    for x in T:  # step 5
        if x in used:
            continue
        order = sorted(range(K), key=lambda i: (dist(x, P[i]), i))
        for i in order:
            s = {rows[j][S] for j in P[i]}
            if len(P[i]) < k or (rows[x][S] not in s and len(s) < l):
                P[i].append(x)
                break
        else:
            P[order[0]].append(x)
    if not repair:
        return P

    def cdist(A, B):
        d = sum((abs(mean(A, a) - mean(B, a)) / Fraction(rng[a]) for a in num if rng[a] > 0), Fraction(0))
        for a in cat:
            fa, fb = Counter(rows[i][a] for i in A), Counter(rows[i][a] for i in B)
            d += Fraction(1, 2) * sum(abs(Fraction(fa[v], len(A)) - Fraction(fb[v], len(B))) for v in set(fa) | set(fb))
        return d

    def bad(C):
        return len(C) < k or not ref_diverse(list(Counter(rows[i][S] for i in C).values()), l, kind, c)

    while any(bad(C) for C in P):  # step 6, Repair-L
        if len(P) == 1:
            raise InfeasiblePrivacyError("one violating cluster left")
        i = min((j for j in range(len(P)) if bad(P[j])), key=lambda j: (len(P[j]), j))
        j = min((j for j in range(len(P)) if j != i), key=lambda j: (cdist(P[i], P[j]), j))
        P[j] = P[j] + P[i]
        del P[i]
    return P


def random_table(rng: np.random.Generator, floats: bool = False) -> tuple[pd.DataFrame, list[str], list[str]]:
    n = int(rng.integers(1, 31))
    q_num, q_cat = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    if q_num + q_cat == 0:
        q_cat = 1
    cols: dict[str, object] = {}
    for j in range(q_num):
        cols[f"x{j}"] = rng.uniform(-3, 3, n) if floats else rng.integers(0, int(rng.integers(1, 7)), n) * int(rng.integers(1, 4))
    for j in range(q_cat):
        cols[f"c{j}"] = np.array(list("pqrs"))[rng.integers(0, int(rng.integers(1, 5)), n)]
    cols["s"] = np.array(["A", "B", "C", "D"])[rng.integers(0, int(rng.integers(1, 5)), n)]
    df = pd.DataFrame(cols)
    qi = [c for c in df.columns if c != "s"]
    qi = list(rng.permutation(qi))  # mixed QI orders
    return df, qi, [c for c in qi if c.startswith("x")]


def _case(seed: int, floats: bool = False):
    rng = np.random.default_rng(seed)
    df, qi, num = random_table(rng, floats)
    n, n_s = len(df), df["s"].nunique()
    k = int(rng.integers(1, min(5, n) + 1))
    kind, _, c = KINDS[seed % 3]
    l = int(rng.integers(1, min(3, n_s) + 1)) if kind != "entropy" else float(rng.choice([1.0, 1.5, 2.0]))
    if kind == "entropy" and l > n_s:
        l = 1.0
    if kind == "recursive" and l < 2:
        l = min(2, n_s)
    return df, qi, num, k, l, kind, (c if kind == "recursive" else None)


@pytest.mark.parametrize("block", range(4))
def test_kernel_matches_literal_reference(block):
    compared = 0
    for seed in range(block * 25, block * 25 + 25):
        df, qi, num, k, l, kind, c = _case(seed, floats=(seed % 10 == 9))
        repair = seed % 7 != 0
        try:
            want = reference(df, qi, num, "s", k, l, kind, c, repair)
        except InfeasiblePrivacyError:
            with pytest.raises(InfeasiblePrivacyError):
                cluster_l_diverse(df, qi, "s", k, l, kind=kind, c=c, repair=repair)
            continue
        if kind != "distinct" and l > 1 and not ref_diverse(list(df["s"].value_counts()), l, kind, c):
            with pytest.raises(InfeasiblePrivacyError):  # refused up front, before the greedy
                cluster_l_diverse(df, qi, "s", k, l, kind=kind, c=c, repair=repair)
            continue
        got = cluster_l_diverse(df, qi, "s", k, l, kind=kind, c=c, repair=repair)
        clusters = [sorted(np.flatnonzero(got.labels == i).tolist()) for i in range(got.n_clusters)]
        assert clusters == [sorted(P) for P in want], (seed, qi, k, l, kind)
        compared += 1
    assert compared >= 15


# ---------------------------------------------------------------- guarantees (independent checkers)
@pytest.mark.parametrize("kind,l,c", KINDS)
def test_published_table_passes_independent_checks(kind, l, c):
    rng = np.random.default_rng(7)
    for trial in range(6):
        n = int(rng.integers(40, 400))
        df = pd.DataFrame(
            {
                "age": rng.integers(17, 80, n),
                "zip": rng.choice(["10001", "10002", "10003", "20001", "20002"], n),
                "sex": rng.choice(["F", "M"], n),
                "w": rng.normal(size=n).round(2),
                "dis": rng.choice(["flu", "hiv", "tb", "cold"], n, p=[0.4, 0.2, 0.2, 0.2]),
                "other": np.arange(n),
            }
        )
        qi = ["sex", "age", "zip", "w"]
        k = int(rng.integers(2, 12))
        res = cluster_l_diverse(df, qi, "dis", k, l, kind=kind, c=c)
        t = res.table
        assert list(t.columns) == ["age", "zip", "sex", "w", "dis"]  # 'other' dropped
        assert t.index.equals(df.index) and (t["dis"] == df["dis"]).all()
        assert is_k_anonymous(t, qi, k)
        chk = check_l_diversity(t, qi, "dis", l, kind=kind, c=c)
        assert chk.ok, (trial, chk.lines())
        s = res.summary()
        assert s["k_achieved"] >= k and sum(res.cluster_sizes) == n
        assert np.bincount(res.labels).tolist() == res.cluster_sizes.tolist()
        assert s["discernibility"] == int((res.cluster_sizes.astype(np.int64) ** 2).sum())
        if kind == "recursive":
            assert s["l_achieved"] < c
        else:
            assert s["l_achieved"] >= l - 1e-9
        # published ranges contain every member
        lo = t["age"].str.split("-").str[0].astype(int)
        hi = t["age"].str.split("-").str[-1].astype(int)
        assert ((lo <= df["age"]) & (df["age"] <= hi)).all()
        assert all(z in pub.split("|") for z, pub in zip(df["zip"], t["zip"]))


# ---------------------------------------------------------------- Dask
def _mixed_table(n: int = 600, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 90, n),
            "edu": rng.choice(["HS", "BSc", "MSc", "PhD"], n),
            "sex": rng.choice(["F", "M"], n),
            "sal": rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]),
        }
    )


def test_dask_one_partition_equals_pandas():
    df = _mixed_table()
    want = cluster_l_diverse(df, ["sex", "age", "edu"], "sal", 5, 2)
    ddf = dd.from_pandas(df, npartitions=4)
    got = cluster_l_diverse(ddf, ["sex", "age", "edu"], "sal", 5, 2, rows_per_partition=10_000)
    assert got.params["n_partitions"] == 1
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.n_repaired_merges == want.n_repaired_merges
    pd.testing.assert_frame_equal(got.table.compute(), want.table, check_dtype=False)


def test_dask_pyarrow_csv_one_partition(tmp_path):
    df = _mixed_table(200)
    path = tmp_path / "t.csv"
    df.to_csv(path, sep=";", index=False)
    ddf = dd.read_csv(str(path), sep=";", dtype_backend="pyarrow")
    got = cluster_l_diverse(ddf, ["age", "edu", "sex"], "sal", 4, 2, keep=None)
    want = cluster_l_diverse(pd.read_csv(path, sep=";", dtype_backend="pyarrow"), ["age", "edu", "sex"], "sal", 4, 2)
    np.testing.assert_array_equal(got.labels, want.labels)


@pytest.mark.parametrize("rows", [None, 97, 150])
def test_dask_several_partitions_keep_guarantees(rows):
    df = _mixed_table(900, seed=11)
    ddf = dd.from_pandas(df, npartitions=5)
    qi = ["sex", "age", "edu"]
    res = cluster_l_diverse(ddf, qi, "sal", 6, 2, rows_per_partition=rows)
    assert res.params["n_partitions"] == (5 if rows is None else -(-900 // rows))
    t = res.to_pandas()
    assert len(t) == len(df) and t.index.equals(df.index)
    assert res.labels.shape == (900,) and res.labels.min() == 0 and res.labels.max() == res.n_clusters - 1
    assert np.bincount(res.labels).tolist() == res.cluster_sizes.tolist()  # every row in exactly one cluster
    assert is_k_anonymous(t, qi, 6)
    assert is_l_diverse(t, qi, "sal", 2)
    assert is_k_anonymous(res.table, qi, 6)  # the lazy table too


def test_dask_empty_partitions_and_tiny_chunks():
    df = _mixed_table(300, seed=5).assign(rid=np.arange(300))
    ddf = dd.from_pandas(df, npartitions=6)
    ddf = ddf[ddf["rid"] >= 120]  # the first partitions are empty
    sub = df[df["rid"] >= 120]
    assert 0 in dask.compute(ddf.map_partitions(len))[0].tolist()
    res = cluster_l_diverse(ddf, ["age", "sex"], "sal", 7, 2, rows_per_partition=3)  # capped to floor(n/k)
    assert res.params["n_partitions"] == len(sub) // 7
    t = res.table.compute()
    assert t.index.equals(sub.index)
    assert is_k_anonymous(t, ["age", "sex"], 7) and is_l_diverse(t, ["age", "sex"], "sal", 2)
    one = cluster_l_diverse(ddf, ["age", "sex"], "sal", 7, 2, rows_per_partition=10**6)
    np.testing.assert_array_equal(one.labels, cluster_l_diverse(sub, ["age", "sex"], "sal", 7, 2).labels)


@pytest.mark.cluster
def test_dask_on_local_cluster(cluster_client):
    df = _mixed_table(500, seed=9)
    ddf = dd.from_pandas(df, npartitions=3)
    qi = ["age", "edu", "sex"]
    res = cluster_l_diverse(ddf, qi, "sal", 5, 1.5, kind="entropy", client=cluster_client)
    assert res.params["n_partitions"] == 3
    t = cluster_client.compute(res.table).result()
    assert is_k_anonymous(t, qi, 5) and is_l_diverse(t, qi, "sal", 1.5, kind="entropy")
    one = cluster_l_diverse(ddf, qi, "sal", 5, 1.5, kind="entropy", client=cluster_client, rows_per_partition=500)
    np.testing.assert_array_equal(one.labels, cluster_l_diverse(df, qi, "sal", 5, 1.5, kind="entropy").labels)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_bad_k(k):
    with pytest.raises(InvalidParameter, match="k must"):
        cluster_l_diverse(PATIENTS, QI, "Disease", k)


def test_infeasible_k_and_l():
    with pytest.raises(InfeasiblePrivacyError, match="k=11 exceeds the number of rows"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 11)
    with pytest.raises(InfeasiblePrivacyError, match="l=6 exceeds the 5 distinct value.*'Disease'"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, 6)
    skew = pd.DataFrame({"a": range(10), "s": ["x"] * 9 + ["y"]})
    with pytest.raises(InfeasiblePrivacyError, match="not entropy"):
        cluster_l_diverse(skew, ["a"], "s", 2, 2, kind="entropy")
    with pytest.raises(InfeasiblePrivacyError, match="exceeds"):
        cluster_l_diverse(dd.from_pandas(PATIENTS, npartitions=2), QI, "Disease", 2, 6)


def test_bad_columns_and_options():
    with pytest.raises(InvalidParameter, match="unknown column"):
        cluster_l_diverse(PATIENTS, ["Age", "Zip"], "Disease", 2)
    with pytest.raises(InvalidParameter, match="unknown column"):
        cluster_l_diverse(PATIENTS, QI, "Illness", 2)
    with pytest.raises(InvalidParameter, match="also a quasi-identifier"):
        cluster_l_diverse(PATIENTS, [*QI, "Disease"], "Disease", 2)
    with pytest.raises(InvalidParameter, match="at least one"):
        cluster_l_diverse(PATIENTS, [], "Disease", 2)
    with pytest.raises(InvalidParameter, match="keep"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, keep=["Age"])
    with pytest.raises(InvalidParameter, match="kind"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, 2, kind="max")
    with pytest.raises(InvalidParameter, match="c > 0"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, 2, kind="recursive")
    with pytest.raises(InvalidParameter, match="rows_per_partition"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, rows_per_partition=0)
    h = Hierarchy.from_table([["Female", "*"], ["Male", "*"]])
    with pytest.raises(InvalidParameter, match="not a quasi-identifier"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, hierarchies={"Religion": h})
    with pytest.raises(InvalidParameter, match="numeric QI 'Age'"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, hierarchies={"Age": h})
    with pytest.raises(DataFormatError, match="no path to the root"):
        cluster_l_diverse(PATIENTS, QI, "Disease", 2, hierarchies={"State": h})


def test_missing_values_and_empty_input():
    bad = PATIENTS.astype({"Age": float}).copy()
    bad.loc[[1, 4], "Age"] = np.nan
    with pytest.raises(DataFormatError, match=r"column 'Age' \(2 rows\)"):
        cluster_l_diverse(bad, QI, "Disease", 2)
    bad = PATIENTS.copy()
    bad.loc[3, "Disease"] = None
    with pytest.raises(DataFormatError, match=r"column 'Disease' \(1 rows\)"):
        cluster_l_diverse(bad, QI, "Disease", 2)
    with pytest.raises(DataFormatError, match=r"column 'Disease' \(1 rows\)"):
        cluster_l_diverse(dd.from_pandas(bad, npartitions=3), QI, "Disease", 2)
    with pytest.raises(DataFormatError, match="no rows"):
        cluster_l_diverse(PATIENTS.iloc[:0], QI, "Disease", 2)
    with pytest.raises(DataFormatError, match="no rows"):
        cluster_l_diverse(dd.from_pandas(PATIENTS.iloc[:0], npartitions=1), QI, "Disease", 2)
    inf = PATIENTS.astype({"Age": float}).copy()
    inf.loc[0, "Age"] = np.inf
    with pytest.raises(DataFormatError, match="non-finite"):
        cluster_l_diverse(inf, QI, "Disease", 2)

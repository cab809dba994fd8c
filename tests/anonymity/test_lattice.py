"""Full-domain anonymisation (lattice search, Datafly), Mondrian through ``anonymize``, frequency
sets and publishing: exactness against exhaustive pandas evaluation, the Adult oracle, partition
invariance, a 2-worker LocalCluster, pycanon cross-checks and bad input."""

from __future__ import annotations

import itertools

import dask.dataframe as dd
import numpy as np
import pandas as pd

# pycanon is a test-only cross-check, installed by the README's test command (with --no-deps: it pins
# exact numpy/pandas/scipy versions that would downgrade the environment)
import pycanon.anonymity as pycanon  # noqa: E402
import pytest

from ppdm_dask.anonymity import Hierarchy, anonymize, frequency_set, is_k_anonymous, is_l_diverse
from ppdm_dask.anonymity._diversity import diverse_mask
from ppdm_dask.anonymity.lattice import datafly, lattice_search
from ppdm_dask.errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter

from .test_basics import PATIENTS, QI


def _adult(shared_data):
    d = shared_data / "adult"
    df = pd.read_csv(d / "adult.csv", sep=";")
    qi = [c for c in df.columns if c != "salary-class"]
    h = {a: Hierarchy.from_csv(str(d / f"adult_hierarchy_{a}.csv"), name=a) for a in qi}
    return df, qi, h


@pytest.fixture(scope="module")
def adult(shared_data):
    return _adult(shared_data)


# ------------------------------------------------------------------ exhaustive oracle
def _brute_force(df, qi, h, k, sens=None, l=None, kind="distinct", c=None, max_supp=0.0):
    """Every lattice node evaluated by generalising the pandas table and grouping it."""
    n = len(df)
    limit = int(np.floor(max_supp * n + 1e-9))
    best = None
    for node in itertools.product(*[range(h[a].levels) for a in qi]):
        g = pd.DataFrame({a: h[a].generalize(df[a], lv) for a, lv in zip(qi, node)})
        if sens:
            g[sens] = df[sens].to_numpy()
        sizes = g.groupby(qi).size()
        bad = sizes < k
        if l is not None:
            vc = g.groupby(qi)[sens].value_counts().unstack(fill_value=0).loc[sizes.index]
            bad |= ~diverse_mask(vc.to_numpy(), l, kind, c)
        supp = int(sizes[bad].sum())
        if supp > limit:
            continue
        dm = int((sizes[~bad] ** 2).sum()) + supp * n
        cand = (dm, sum(node), node)
        best = cand if best is None or cand < best else best
    return best


def _small_adult(adult, n=1500, seed=3):
    df, _, h = adult
    qi = ["sex", "age", "race", "marital-status", "education"]
    return df.sample(n, random_state=seed).reset_index(drop=True), qi, {a: h[a] for a in qi}


@pytest.mark.parametrize(
    "k,max_supp,l,kind,c",
    [
        (1, 0.0, None, "distinct", None),  # the bottom node is optimal (shortcut)
        (3, 0.0, None, "distinct", None),
        (10, 0.0, None, "distinct", None),
        (5, 0.04, None, "distinct", None),
        (3, 0.02, 2, "distinct", None),
        (4, 0.0, 1.3, "entropy", None),
        (4, 0.03, 1.3, "entropy", None),  # non-monotone feasibility: the bound-pruned branch
        (3, 0.03, 2, "recursive", 4.0),
    ],
)
def test_lattice_is_exact(adult, k, max_supp, l, kind, c):
    df, qi, h = _small_adult(adult)
    fs = frequency_set(df, qi, sensitive="salary-class", hierarchies=h, require_hierarchies=True)
    res = lattice_search(fs, k, l=l, kind=kind, c=c, max_suppression=max_supp)
    dm, _, node = _brute_force(df, qi, h, k, "salary-class", l, kind, c, max_supp)
    assert (res.dm, res.node) == (dm, node)
    assert res.n_evaluated <= res.n_nodes


def test_adult_oracle_k5(adult):
    """Adult, k = 5, no suppression -> DM 33,627,534 with 45 classes (docs/anonymity.md#tests)."""
    df, qi, h = adult
    r = anonymize(df, qi, k=5, sensitive="salary-class", hierarchies=h)
    assert r.dm == 33_627_534
    assert r.class_sizes.size == 45 and r.n_suppressed == 0
    assert r.search["nodes_evaluated"] < r.search["lattice_nodes"] / 10  # predictive tagging prunes
    v = r.verify()
    assert v.ok and [c.name for c in v] == ["k-anonymity"]
    assert v["k-anonymity"].stats["n_classes"] == 45 and v["k-anonymity"].figure >= 5
    released = r.table.compute()
    assert pycanon.k_anonymity(released, qi) == v["k-anonymity"].figure


@pytest.mark.parametrize("k,max_supp", [(10, 0.05), (50, 0.0)])
def test_adult_identical_over_partitions_and_l_diverse(adult, k, max_supp):
    df, qi, h = adult
    outs = []
    for parts in (1, 8):
        r = anonymize(
            dd.from_pandas(df, npartitions=parts), qi, k=k, l=2, sensitive="salary-class", hierarchies=h, max_suppression=max_supp
        )
        outs.append((r.node, r.dm, r.n_suppressed, r.table.compute().sort_index()))
        v = r.verify()
        assert v.ok and [c.name for c in v] == ["k-anonymity", "l-diversity"]
        assert v["k-anonymity"].stats["n_suppressed"] == r.n_suppressed <= max_supp * len(df)
    assert outs[0][:3] == outs[1][:3]
    pd.testing.assert_frame_equal(outs[0][3], outs[1][3])
    rel = outs[0][3]
    kept = rel[~(rel[qi] == "*").all(axis=1)].reset_index(drop=True)
    assert pycanon.k_anonymity(kept, qi) >= k
    assert pycanon.l_diversity(kept, qi, ["salary-class"]) >= 2


def test_released_table_is_the_generalised_input(adult):
    df, qi, h = adult
    r = anonymize(df.head(3000), qi, k=10, sensitive="salary-class", hierarchies=h, max_suppression=0.02, keep=())
    rel = r.table.compute()
    assert list(rel.columns) == [*qi, "salary-class"]
    supp = (rel[qi] == "*").all(axis=1)
    assert int(supp.sum()) == r.n_suppressed
    for a in qi:  # every kept row is its original value generalised to the chosen level
        exp = h[a].generalize(df[a].head(3000), r.node[a])
        assert (rel.loc[~supp, a].astype(str).to_numpy() == np.asarray(exp, dtype=str)[~supp.to_numpy()]).all()
    assert (rel["salary-class"].to_numpy() == df["salary-class"].head(3000).to_numpy()).all()


def test_datafly_is_feasible_but_not_better_than_lattice(adult):
    df, qi, h = _small_adult(adult)
    fs = frequency_set(df, qi, sensitive="salary-class", hierarchies=h, require_hierarchies=True)
    for k, s in [(3, 0.0), (5, 0.04)]:
        g, o = datafly(fs, k, max_suppression=s), lattice_search(fs, k, max_suppression=s)
        assert g.stats.suppressed <= s * len(df) and g.dm >= o.dm


def test_mondrian_via_anonymize(adult):
    df, qi, h = adult
    r = anonymize(dd.from_pandas(df, npartitions=4), qi, k=5, l=2, sensitive="salary-class", hierarchies=h, method="mondrian")
    v = r.verify()
    assert v.ok and v["k-anonymity"].stats["n_classes"] == r.class_sizes.size and v["l-diversity"].figure >= 2
    # local recoding is far finer than the best full-domain recoding
    assert r.dm < 33_627_534 and 0 < r.gcp < 0.5
    rel = r.table.compute()
    assert pycanon.k_anonymity(rel, qi) >= 5 and pycanon.l_diversity(rel, qi, ["salary-class"]) >= 2


def test_figure3_patients_full_domain():
    """P2 Figures 2-3: with k = 2 the optimal node is Age in 10-year bands, Gender and State kept."""
    age = Hierarchy.from_intervals([[20, 30, 40]], low=0, high=120, closed="right", name="Age")
    gender = Hierarchy.from_table([["Male", "*"], ["Female", "*"]], name="Gender")
    state = Hierarchy.from_table(
        [["Kerala", "South", "*"], ["Tamil Nadu", "South", "*"], ["Karnataka", "South", "*"]], name="State"
    )
    r = anonymize(PATIENTS, QI, k=2, sensitive="Disease", hierarchies={"Age": age, "Gender": gender, "State": state})
    assert r.node == {"Age": 1, "Gender": 0, "State": 0}
    assert sorted(r.class_sizes.tolist()) == [2, 2, 3, 3] and r.dm == 26
    rel = r.table.compute()
    assert is_k_anonymous(rel, QI, 2) and not is_k_anonymous(rel, QI, 3)
    assert is_l_diverse(rel, QI, "Disease", 2)
    assert pycanon.k_anonymity(rel, QI) == 2


def test_cluster_matches_sync(adult, cluster_client):
    df, qi, h = adult
    ddf = dd.from_pandas(df, npartitions=6)
    a = anonymize(ddf, qi, k=25, sensitive="salary-class", hierarchies=h, max_suppression=0.05, client=cluster_client)
    b = anonymize(df, qi, k=25, sensitive="salary-class", hierarchies=h, max_suppression=0.05)
    assert (a.node, a.dm, a.n_suppressed) == (b.node, b.dm, b.n_suppressed)
    rel = cluster_client.compute(a.table).result().sort_index()
    pd.testing.assert_frame_equal(rel, b.table.compute().sort_index())


# ------------------------------------------------------------------ bad input
def test_bad_input(adult):
    df, qi, h = adult
    small = df.head(200)
    with pytest.raises(InvalidParameter, match=r"\[.education.\] have no generalisation hierarchy"):
        anonymize(small, qi, k=2, hierarchies={a: h[a] for a in qi if a != "education"})
    with pytest.raises(InfeasiblePrivacyError, match="larger than the number of records"):
        anonymize(small, qi, k=201, hierarchies=h)
    with pytest.raises(InvalidParameter, match="unknown sensitive attribute"):
        anonymize(small, qi, k=2, sensitive="salary", hierarchies=h)
    with pytest.raises(InvalidParameter, match="method"):
        anonymize(small, qi, k=2, hierarchies=h, method="incognito")
    with pytest.raises(InvalidParameter, match="sensitive attribute"):
        anonymize(small, qi, k=2, l=2, hierarchies=h)
    bad = small.copy()
    bad.loc[5, "native-country"] = "Atlantis"
    with pytest.raises(DataFormatError, match="Atlantis"):
        anonymize(bad, qi, k=2, hierarchies=h)
    nan = small.copy()
    nan.loc[7, "age"] = np.nan
    with pytest.raises(DataFormatError, match="age"):
        anonymize(nan, qi, k=2, hierarchies=h)
    with pytest.raises(InfeasiblePrivacyError, match="no generalisation satisfies"):
        anonymize(small, qi, k=2, l=3, sensitive="salary-class", hierarchies=h)  # only 2 salary values
    with pytest.raises(InvalidParameter, match="max_suppression"):
        anonymize(small, qi, k=2, hierarchies=h, max_suppression=1.5)


def test_empty_partitions(adult):
    df, qi, h = adult
    part = dd.from_pandas(df.head(400), npartitions=4)
    part = part[part["age"] > 30]  # some partitions may lose rows; then add empty ones explicitly
    empty = dd.from_pandas(df.head(0), npartitions=1)
    ddf = dd.concat([empty, part, empty])
    r = anonymize(ddf, qi, k=5, hierarchies=h, max_suppression=0.05)
    ref = anonymize(df.head(400)[df.head(400)["age"] > 30], qi, k=5, hierarchies=h, max_suppression=0.05)
    assert (r.node, r.dm) == (ref.node, ref.dm)
    assert len(r.table.compute()) == len(ref.table.compute())


def test_cluster_method_and_table_ncp(adult):
    """method='cluster' through anonymize; NCP recomputed from the released labels alone equals
    the NCP the anonymiser reports (Mondrian), and the cluster figures verify independently."""
    from ppdm_dask.anonymity.metrics import published_ncp

    df, qi, h = adult
    sub = df.head(4000)
    r = anonymize(sub, qi, k=5, l=2, sensitive="salary-class", hierarchies=h, method="cluster")
    v = r.verify()
    assert v.ok and v["k-anonymity"].stats["n_classes"] == r.class_sizes.size and r.class_sizes.sum() == len(sub)
    assert 0 < r.gcp < 1
    m = anonymize(sub, qi, k=5, sensitive="salary-class", hierarchies=h, method="mondrian")
    cat = {a: h[a] for a in qi if a != "age"}
    got = published_ncp(m.table, qi, hierarchies=cat, value_ranges={"age": float(sub["age"].max() - sub["age"].min())})
    assert got == pytest.approx(m.ncp_per_attribute, abs=1e-12)

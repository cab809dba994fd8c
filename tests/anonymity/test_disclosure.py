"""Attribute disclosure of relational releases (docs/anonymity.md#attribute-disclosure-and-t-closeness):
t-closeness as a privacy model of every anonymiser, its recount check and floor, the
attribute-disclosure figures, the linkage and attribute-inference attacks and the summary's
verdict. Oracles: hand computations, pycanon (t-closeness, entropy l), plain pandas recounts,
brute force over every released class."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pycanon.anonymity as pycanon
import pytest

from ppdm_dask.anonymity import AccessControlAnonymizer, AnonymizedRelease, KAnonymizer, check_t_closeness
from ppdm_dask.anonymity._diversity import Closeness, closeness_for, diverse_mask, emd
from ppdm_dask.anonymity.checks import class_counts
from ppdm_dask.anonymity.disclosure import class_profile, disclosure_summary
from ppdm_dask.anonymity.threat import INFERENCE_THRESHOLD, LINKAGE_THRESHOLD
from ppdm_dask.data.uci import ADULT_QI, load_adult
from ppdm_dask.errors import InvalidParameter, WeakParameterError
from ppdm_dask.random import Key
from ppdm_dask.report.decision import decide

from .test_basics import QI, published

QIS = list(ADULT_QI)
SAL = "salary-class"


# ---------------------------------------------------------------- independent oracles
def emd_by_pandas(df: pd.DataFrame, qi: list[str], sens: str, ordered: bool) -> pd.Series:
    """EMD of every class to the whole table, straight from the definition (a loop over classes)."""
    vals = sorted(df[sens].unique(), key=(float if ordered else str))
    p = df[sens].value_counts(normalize=True).reindex(vals).to_numpy()
    out = {}
    for key, g in df.groupby(qi if len(qi) > 1 else qi[0], sort=True):
        q = g[sens].value_counts(normalize=True).reindex(vals, fill_value=0).to_numpy()
        out[key] = (np.abs(np.cumsum(q - p)).sum() / (len(vals) - 1)) if ordered else 0.5 * np.abs(q - p).sum()
    return pd.Series(out)


def shares_by_pandas(df: pd.DataFrame, qi: list[str], sens: str) -> pd.DataFrame:
    """Per class: size and the share of its most frequent value."""
    g = df.groupby(qi)[sens]
    return pd.DataFrame({"size": g.size(), "top": g.agg(lambda s: s.value_counts().iloc[0])}).assign(
        share=lambda d: d["top"] / d["size"]
    )


def released(rel) -> pd.DataFrame:
    t = rel.data.compute() if hasattr(rel.data, "compute") else rel.data
    star = np.logical_and.reduce([t[a].astype(str) == "*" for a in rel.qi])
    return t[~star].reset_index(drop=True)


def items(figures) -> dict:
    return {i.id: i for i in (*figures.risk, *figures.utility, *figures.learn, *figures.attacks)}


@pytest.fixture(scope="module")
def adult():
    return load_adult()


# ---------------------------------------------------------------- 1. EMD by hand
def test_emd_by_hand():
    # table: values 1, 2, 3 with counts 2, 1, 1 -> p = (1/2, 1/4, 1/4)
    ref = np.array([2, 1, 1])
    # class A = (1, 0, 0): ordered: cumulative differences (1/2, 1/4, 0) / (m - 1 = 2) = 3/8;
    # equal: (1/2 + 1/4 + 1/4) / 2 = 1/2
    # class B = (0, 0, 2) = only value 3: cumulative (-1/2, -3/4, 0) -> 5/8; equal (1/2 + 1/4 + 3/4) / 2 = 3/4
    counts = np.array([[3, 0, 0], [0, 0, 2], [2, 1, 1]])
    assert emd(counts, ref, True) == pytest.approx([3 / 8, 5 / 8, 0])
    assert emd(counts, ref, False) == pytest.approx([1 / 2, 3 / 4, 0])
    # the columns are put in value order: the same figures with the values given as (3, 1, 2)
    c = closeness_for(0.5, "ordered", np.array([3, 1, 2]), ref[[2, 0, 1]])
    assert c.distances(counts[:, [2, 0, 1]]) == pytest.approx([3 / 8, 5 / 8, 0])
    assert list(diverse_mask(counts[:, [2, 0, 1]], None, closeness=c)) == [True, False, True]
    # a value the table lacks does not count; one value in the table: every EMD is 0
    assert emd(np.array([[1, 0, 0]]), np.array([4, 0, 0]), True) == pytest.approx([0.0])
    # text values: auto is equal, and ordered reads numbers in text by value ('10' after '9')
    assert closeness_for(0.2, "auto", np.array(["a", "b"], dtype=object), [1, 1]).kind == "equal"
    assert closeness_for(0.2, "auto", np.array([1.0, 2.0]), [1, 1]).kind == "ordered"
    assert list(closeness_for(0.2, "ordered", np.array(["10", "9"], dtype=object), [1, 1]).order) == [1, 0]
    with pytest.raises(InvalidParameter, match=r"t must be a number in \[0, 1\]"):
        closeness_for(1.5, "auto", np.array([1]), [1])
    with pytest.raises(InvalidParameter, match="distance must be one of"):
        closeness_for(0.2, "nearest", np.array([1]), [1])


def test_emd_kernels_agree_on_random_classes():
    """The dense kernel of the anonymisers and the sparse interval sums of the checker agree
    with the definition on random tables (values missing from classes, ties, one value)."""
    rng = np.random.default_rng(36)
    for _ in range(30):
        m = int(rng.integers(1, 9))
        n = int(rng.integers(5, 120))
        df = pd.DataFrame({"a": rng.integers(0, 5, n), "s": rng.choice(np.arange(m) * 7 - 3, n)})
        counts = class_counts(df, ["a"], "s")
        prof, table = class_profile(counts, ["a"], "s", ordered=True)
        ordered = emd_by_pandas(df, ["a"], "s", True) if df["s"].nunique() > 1 else pd.Series(0.0, index=prof["a"])
        equal = emd_by_pandas(df, ["a"], "s", False)
        assert prof.set_index("a")["emd_ordered"].to_numpy() == pytest.approx(ordered.reindex(prof["a"]).to_numpy(), abs=1e-12)
        assert prof.set_index("a")["emd_equal"].to_numpy() == pytest.approx(equal.reindex(prof["a"]).to_numpy(), abs=1e-12)
        piv = df.groupby(["a", "s"]).size().unstack(fill_value=0)
        ref = df["s"].value_counts().reindex(piv.columns).to_numpy()
        assert emd(piv.to_numpy(), ref, True) == pytest.approx(ordered.reindex(piv.index).to_numpy(), abs=1e-12)
        assert emd(piv.to_numpy(), ref, False) == pytest.approx(equal.reindex(piv.index).to_numpy(), abs=1e-12)


# ---------------------------------------------------------------- 2. Adult against pycanon
def test_t_closeness_and_entropy_l_against_pycanon_on_adult(adult):
    df, hier = adult
    # a numeric sensitive column for the ordered distance (pycanon's rule for numbers): the age
    # in decades (pycanon's loops cost a pass over the data per value and class)
    df = df.assign(decade=df["age"] // 10 * 10)
    without_age = [a for a in QIS if a != "age"]
    cases = [
        (SAL, QIS, dict(method="mondrian", l=2)),
        (SAL, QIS, dict(method="mondrian", t=0.2)),
        (SAL, QIS, dict(method="lattice", t=0.2)),
        ("decade", without_age, dict(method="mondrian", t=0.1)),
    ]
    for sens, qi, kw in cases:
        other = [c for c in df.columns if c not in qi and c != sens]
        rel = KAnonymizer(
            qi, k=5, sensitive=sens, insensitive=other, hierarchies=hier, key=Key(3), allow_unique=other, **kw
        ).fit_release(df)
        table = released(rel)
        counts = class_counts(table, qi, sens)
        s = disclosure_summary(counts, qi, sens)
        ordered = sens == "decade"
        got = s.t_ordered if ordered else s.t_equal
        assert got == pytest.approx(pycanon.t_closeness(table, qi, [sens]), abs=1e-12), (sens, kw)
        assert int(s.entropy_l + 1e-9) == pycanon.entropy_l_diversity(table, qi, [sens])
        assert s.distinct_l == pycanon.l_diversity(table, qi, [sens])
        if "t" in kw:
            assert rel.parameters["t_kind"] == ("ordered" if ordered else "equal") and got <= kw["t"] + 1e-9
            (check,) = [c for c in rel.guarantee_checks() if c.name == "t-closeness"]
            assert check.ok and check.figure == pytest.approx(got) and check.threshold == kw["t"]
            assert check_t_closeness(table, qi, sens, kw["t"]).ok


# ---------------------------------------------------------------- 3. every anonymiser keeps t
def _anonymizers(df, hier):
    few = ["sex", "age", "race", "marital-status", "education"]  # a smaller lattice: the search with suppression is not monotone
    yield "mondrian", QIS, KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", t=0.15, key=Key(1))
    yield "lattice", QIS, KAnonymizer(QIS, k=5, sensitive=SAL, method="lattice", hierarchies=hier, t=0.15, key=Key(1))
    # 69 records suppressed: the kept classes are compared with the kept records
    yield (
        "lattice+suppression",
        few,
        KAnonymizer(
            few,
            k=5,
            sensitive=SAL,
            method="lattice",
            hierarchies=hier,
            t=0.25,
            max_suppression=0.05,
            insensitive=[c for c in QIS if c not in few],
            key=Key(1),
        ),
    )
    yield "datafly", QIS, KAnonymizer(QIS, k=5, sensitive=SAL, method="datafly", hierarchies=hier, t=0.3, key=Key(1))
    yield "cluster", QIS, KAnonymizer(QIS, k=5, sensitive=SAL, method="cluster", t=0.15, key=Key(1))
    yield "cluster+l", QIS, KAnonymizer(QIS, k=5, sensitive=SAL, method="cluster", l=2, t=0.15, key=Key(1))
    yield (
        "access-control",
        QIS,
        AccessControlAnonymizer(
            [{"role": "r", "bound": 40, "where": {"age": [20, 30]}}], QIS, k=5, sensitive=SAL, t=0.15, key=Key(1)
        ),
    )


def test_every_anonymizer_releases_only_t_close_classes(adult):
    """Brute force: every released class (suppressed records left out) within t of the released
    records, recounted from the definition with pandas; and the anonymiser's own verify agrees."""
    df, hier = adult
    for name, qi, est in _anonymizers(df, hier):
        rel = est.fit_release(df)
        table = released(rel)
        t = rel.parameters["t"]
        d = emd_by_pandas(table, qi, SAL, ordered=False)
        assert d.max() <= t + 1e-9, name
        assert len(d) > 1, name  # not the trivial one-class answer
        if name == "lattice+suppression":
            assert len(table) < len(df)
        result = getattr(est.result_, "release", est.result_)
        assert result.verify().ok and [c.name for c in result.verify()][-1] == "t-closeness", name
        assert all(c.ok for c in rel.guarantee_checks()), name


def test_numeric_sensitive_on_dask_partitions(adult):
    """Ordered distance on a numeric sensitive column, input in several dask partitions (the
    clustering's chunked path included): classes within t, and the same Mondrian release from
    one or three partitions."""
    df, _ = adult
    qi = [a for a in QIS if a != "age"]
    other = [SAL]
    ddf = dd.from_pandas(df, npartitions=3)
    for method in ("mondrian", "cluster"):
        rel = KAnonymizer(qi, k=5, sensitive="age", insensitive=other, method=method, t=0.1, key=Key(2)).fit_release(ddf)
        table = released(rel)
        assert rel.parameters["t_kind"] == "ordered"
        assert emd_by_pandas(table, qi, "age", ordered=True).max() <= 0.1 + 1e-9, method
    one = KAnonymizer(qi, k=5, sensitive="age", insensitive=other, method="mondrian", t=0.1, key=Key(2)).fit_release(df)
    three = KAnonymizer(qi, k=5, sensitive="age", insensitive=other, method="mondrian", t=0.1, key=Key(2)).fit_release(ddf)
    key = [*qi, "age", SAL]
    a = released(one).sort_values(key).reset_index(drop=True)
    b = released(three).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a.astype(str), b.astype(str))


def test_lattice_suppression_compares_with_the_kept_records():
    """With suppression the reference is what is released: a class close to the whole table but
    far from the kept records is suppressed too (repeated until no kept class fails)."""
    from ppdm_dask.anonymity._lattice_kernels import node_stats

    # classes (one QI, no generalisation): A 10 x 'x'; B 5 x 'x' + 5 x 'y'; C 1 x 'y' (too small)
    codes = np.array([[0], [1], [1], [2]], dtype=np.int32)
    counts = np.array([10, 5, 5, 1])
    sens = np.array([0, 0, 1, 1])
    maps = [[np.arange(3)]]
    # the whole table: x 15/21, y 6/21; A: EMD 6/21 = 0.286; after C is suppressed the kept records
    # are x 15/20: A's EMD 0.25 and B's 0.25
    c = Closeness(0.26, "equal", np.array([15, 6]))
    stats, inv, bad = node_stats(codes, counts, sens, 2, maps, [0], 2, closeness=c)
    assert list(bad) == [False, False, True] and stats.suppressed == 1
    # t = 0.24: A and B both fail against the kept records: everything is suppressed
    stats, _, bad = node_stats(codes, counts, sens, 2, maps, [0], 2, closeness=Closeness(0.24, "equal", np.array([15, 6])))
    assert bad.all() and stats.suppressed == 21


# ---------------------------------------------------------------- 4. floors and parameters
def test_t_floor_and_parameters(adult):
    df, _ = adult
    with pytest.raises(WeakParameterError, match=r"t <= 0.5"):
        KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", t=0.7).fit(df)
    rel = KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", t=0.7, allow_weak=["t <= 0.5"], key=Key(1)).fit_release(df)
    assert rel.overrides == ("t <= 0.5",)
    floor = [c for c in rel.floor_checks() if c.name == "t <= 0.5"][0]
    assert floor.overridden and floor.figure == 0.7
    f = rel.report_figures()
    d = decide([*rel.floor_checks(), *rel.guarantee_checks()], f.attacks, f.warnings)
    assert d.colour == "amber" and any("t <= 0.5" in r for r in d.reasons)
    # t is decided on one sensitive column
    two = df.assign(extra=df[SAL])
    with pytest.raises(InvalidParameter, match="t-closeness needs exactly one sensitive column"):
        KAnonymizer(QIS, k=5, sensitive=[SAL, "extra"], t=0.2, method="mondrian").fit(two)


def test_t_check_fails_on_a_forged_class():
    """The recount refuses a release whose class is farther than t (a released table edited)."""
    t = published()
    rel = AnonymizedRelease(
        dd.from_pandas(t, npartitions=2, sort=False),
        method="hand",
        parameters={"k": 2, "qi": QI, "sensitive": "Disease", "t": 0.5, "t_kind": "equal"},
    )
    (check,) = [c for c in rel.guarantee_checks() if c.name == "t-closeness"]
    recount = emd_by_pandas(t, QI, "Disease", ordered=False)
    assert check.figure == pytest.approx(recount.max()) and check.ok == (recount.max() <= 0.5)
    forged = t.copy()
    forged.loc[forged["State"] == "Karnataka", "Disease"] = "TB"  # a class of three TB, and a rarer mix elsewhere
    rel = AnonymizedRelease(
        dd.from_pandas(forged, npartitions=2, sort=False),
        method="hand",
        parameters={"k": 2, "qi": QI, "sensitive": "Disease", "t": 0.5, "t_kind": "equal"},
    )
    (check,) = [c for c in rel.guarantee_checks() if c.name == "t-closeness"]
    recount = emd_by_pandas(forged, QI, "Disease", ordered=False)
    assert not check.ok and check.figure == pytest.approx(recount.max()) and recount.max() > 0.5
    assert check.where.endswith(", ".join(f"{a}={v}" for a, v in zip(QI, recount.idxmax())))
    assert check.stats["violating_classes"] == (recount > 0.5).sum()


# ---------------------------------------------------------------- 5. the figures, recounted
def test_homogeneity_counts_recounted_with_pandas(adult):
    """Mondrian k = 5, distinct l = 2 on the Adult sample: the classes with >= 90 % one salary
    value (the issue's 39 classes, 832 records) recounted with pandas, and the report's table."""
    df, hier = adult
    rel = KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", l=2, hierarchies=hier, key=Key(5)).fit_release(df)
    f = rel.report_figures()
    it = items(f)
    sh = shares_by_pandas(released(rel), QIS, SAL)
    hit = sh[sh["share"] >= 0.9]
    assert len(hit) > 0
    assert it["disclosure_classes_at_threshold"].value == len(hit)
    assert it["disclosure_records_at_threshold"].value == hit["size"].sum()
    table = it["disclosure_classes"]
    assert len(table.rows) == min(len(hit), 20)
    top = hit.sort_values(["share", "size"], ascending=False).iloc[0]
    assert table.rows[0][-1] == pytest.approx(round(top["share"], 4)) and table.rows[0][len(QIS)] == top["size"]
    hist = it["disclosure_top_share"].series[0]
    assert sum(hist.y) == len(sh) and hist.x[0] == 0 and hist.x[-1] == 1
    assert it["disclosure_distinct_l"].value == released(rel).groupby(QIS)[SAL].nunique().min() == 2
    ent = (
        released(rel)
        .groupby(QIS)[SAL]
        .agg(lambda s: -(s.value_counts(normalize=True) * np.log(s.value_counts(normalize=True))).sum())
    )
    assert it["disclosure_entropy_l"].value == pytest.approx(np.exp(ent.min()))
    assert it["disclosure_t_equal"].value == pytest.approx(emd_by_pandas(released(rel), QIS, SAL, False).max())
    # the learn item says it in words with the same numbers
    learn = it["learn_sensitive_confidence"].text
    assert f"for {hit['size'].sum():,} of {len(df):,} records ({len(hit)} classes" in learn


def test_attribute_inference_attack_on_adult(adult):
    """Distinct l = 2: the attack succeeds beyond its threshold and the summary (amber) names the
    classes; t-closeness 0.2: green, no flagged attack, no warning."""
    df, hier = adult
    rel = KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", l=2, hierarchies=hier, key=Key(5)).fit_release(df)
    f = rel.report_figures(df)
    att = items(f)["attack_attribute_inference"]
    table = released(rel)
    sh = shares_by_pandas(table, QIS, SAL)
    assert att.success == pytest.approx(sh["top"].sum() / len(table))
    assert att.baseline == pytest.approx(table[SAL].value_counts(normalize=True).max())
    assert att.threshold == INFERENCE_THRESHOLD and att.flagged
    d = decide([*rel.floor_checks(), *rel.guarantee_checks()], f.attacks, f.warnings)
    assert d.colour in ("amber", "red")
    hit = sh[sh["share"] >= 0.9]
    worst = hit.sort_values(["share", "size"], ascending=False).index[0]
    named = ", ".join(f"{a}={v}" for a, v in zip(QIS, worst))
    assert any(named in r for r in d.reasons)
    # the issue counted 39 classes, 832 records: the pandas recount of this release
    assert any(f"{len(hit)} classes ({hit['size'].sum():,} records" in r for r in d.reasons)
    assert f.headline == ["utility_gcp", "utility_query_error_mean", "utility_classifier_accuracy"]
    assert "k = 5" in f.guarantee and "distinct l = 2" in f.guarantee

    rel = KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", t=0.2, hierarchies=hier, key=Key(5)).fit_release(df)
    f = rel.report_figures(df)
    checks = [*rel.floor_checks(), *rel.guarantee_checks()]
    d = decide(checks, f.attacks, f.warnings)
    assert d.colour == "green", d.reasons
    assert not f.warnings and not any(a.flagged for a in f.attacks)
    assert "t = 0.2" in f.guarantee and "t-closeness" in f.protects


def test_linkage_attack():
    """Prosecutor re-identification by hand on the 10 patients (classes of 2, 2, 3, 3): success
    4 / 10, baseline 1 / 10, flagged (k = 2); a k >= 5 release never is."""
    rel = AnonymizedRelease(
        dd.from_pandas(published(), npartitions=1, sort=False),
        method="hand",
        parameters={"k": 2, "qi": QI, "sensitive": "Disease"},
    )
    f = rel.report_figures()
    a = items(f)["attack_linkage"]
    assert a.success == pytest.approx(4 / 10) and a.baseline == pytest.approx(1 / 10) and a.flagged
    assert a.threshold == LINKAGE_THRESHOLD and "10 records in classes of fewer than 5" in a.found
    # the worst k = 5 release: every class of exactly 5 -> average risk 1/5, advantage 1/5 - 1/n
    t = pd.DataFrame({"q": np.repeat(np.arange(4), 5).astype(str), "s": ["a", "b", "c", "d", "e"] * 4})
    rel = AnonymizedRelease(
        dd.from_pandas(t, npartitions=2, sort=False), method="hand", parameters={"k": 5, "qi": ["q"], "sensitive": "s"}
    )
    a = items(rel.report_figures())["attack_linkage"]
    assert a.success == pytest.approx(0.2) and not a.flagged


def test_warning_without_a_model_and_access_control(adult):
    """A sensitive column without l or t: the summary warns (amber) and counts the single-value
    classes, recounted with pandas (access control, as in the issue)."""
    df, _ = adult
    est = AccessControlAnonymizer([{"role": "r", "bound": 40, "where": {"age": [20, 30]}}], QIS, k=5, sensitive=SAL, key=Key(1))
    rel = est.fit_release(df)
    f = rel.report_figures()
    assert any("without an attribute-disclosure model" in w for w in f.warnings)
    sh = shares_by_pandas(released(rel), QIS, SAL)
    single = sh[sh["share"] == 1]
    att = items(f)["attack_attribute_inference"]
    assert f"{len(single):,} of them a single value" in att.found
    assert f.guarantee.startswith("Access control")
    d = decide([*rel.floor_checks(), *rel.guarantee_checks()], f.attacks, f.warnings)
    assert d.colour == "amber"


def test_figures_do_not_depend_on_partitioning(adult):
    df, hier = adult
    rel = KAnonymizer(QIS, k=5, sensitive=SAL, method="mondrian", l=2, hierarchies=hier, key=Key(5)).fit_release(df)
    table = released(rel)
    one = AnonymizedRelease(dd.from_pandas(table, npartitions=1, sort=False), method="mondrian", parameters=rel.parameters)
    four = AnonymizedRelease(
        dd.from_pandas(table.sample(frac=1, random_state=1), npartitions=4, sort=False),
        method="mondrian",
        parameters=rel.parameters,
    )
    a, b = one.report_figures(), four.report_figures()
    for i in ("disclosure_classes_at_threshold", "disclosure_records_at_threshold", "disclosure_entropy_l", "disclosure_t_equal"):
        assert items(a)[i].value == pytest.approx(items(b)[i].value)
    assert items(a)["disclosure_classes"].rows == items(b)["disclosure_classes"].rows
    assert [x.to_dict() for x in a.attacks] == [x.to_dict() for x in b.attacks]

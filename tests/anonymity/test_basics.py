"""Hierarchies, k-anonymity / l-diversity checks and metrics (docs/anonymity.md#generalisation-hierarchies,
docs/anonymity.md#k-anonymity-and-l-diversity), with the survey's 10-patient table as the hand-computed
example."""

from __future__ import annotations

import math

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import (
    Hierarchy,
    average_class_size,
    check_k_anonymity,
    check_l_diversity,
    discernibility,
    equivalence_classes,
    is_k_anonymous,
    is_l_diverse,
    ncp_categorical,
    ncp_level,
    ncp_numeric,
    prosecutor_risk,
)
from ppdm_dask.errors import DataFormatError, InvalidParameter
from ppdm_dask.release import Verdict

# P2 Figure 2: the 10 patients
PATIENTS = pd.DataFrame(
    [
        ("Ramsha", 29, "Female", "Tamil Nadu", "Hindu", "Cancer"),
        ("Yadu", 24, "Female", "Kerala", "Hindu", "Viral infection"),
        ("Salima", 28, "Female", "Tamil Nadu", "Muslim", "TB"),
        ("sunny", 27, "Male", "Karnataka", "Parsi", "No illness"),
        ("Joan", 24, "Female", "Kerala", "Christian", "Heart-related"),
        ("Bahuksana", 23, "Male", "Karnataka", "Buddhist", "TB"),
        ("Rambha", 19, "Male", "Kerala", "Hindu", "Cancer"),
        ("Kishor", 29, "Male", "Karnataka", "Hindu", "Heart-related"),
        ("Johnson", 17, "Male", "Kerala", "Christian", "Heart-related"),
        ("John", 19, "Male", "Kerala", "Christian", "Viral infection"),
    ],
    columns=["Name", "Age", "Gender", "State", "Religion", "Disease"],
)
QI = ["Age", "Gender", "State"]
ADULT_ATTRS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation", "salary-class"]


def kstats(df, qi, k, **kw) -> dict:
    """The counts of check_k_anonymity, after checking the Verdict / bool API agree."""
    v = check_k_anonymity(df, qi, k, **kw)
    assert isinstance(v, Verdict) and [c.name for c in v] == ["k-anonymity"]
    c = v["k-anonymity"]
    ok = is_k_anonymous(df, qi, k, **kw)
    assert type(ok) is bool and ok == v.ok == c.ok == c.stats["k_anonymous"] and c.threshold == k
    assert c.figure == (c.stats["min_class_size"] if c.stats["n_classes"] else None)
    return dict(c.stats)


def lstats(df, qi, s, l, kind="distinct", c=None, **kw) -> dict:
    """The counts of check_l_diversity, after checking the Verdict / bool API agree."""
    v = check_l_diversity(df, qi, s, l, kind=kind, c=c, **kw)
    assert isinstance(v, Verdict) and [x.name for x in v] == ["l-diversity"]
    chk = v["l-diversity"]
    ok = is_l_diverse(df, qi, s, l, kind=kind, c=c, **kw)
    assert type(ok) is bool and ok == v.ok == chk.ok == chk.stats["l_diverse"]
    return dict(chk.stats)


def published() -> pd.DataFrame:
    """P2 Figure 3: Name and Religion suppressed, Age in right-closed 10-year bands."""
    age = Hierarchy.from_intervals([20, 30, 40], low=0, high=120, closed="right", name="Age")
    t = PATIENTS.copy()
    t["Name"] = "*"
    t["Religion"] = "*"
    t["Age"] = age.generalize(t["Age"], 1)
    return t


# ---------------------------------------------------------------- the 10 patients by hand
# generalised on (Age band, Gender, State): classes of 2, 2, 3, 3 records with 2, 2, 3, 3 diseases,
# i.e. 2-anonymous and 2-diverse, not 3; the raw table (exact ages) is only 1-anonymous
def test_o2_1_published_table():
    t = published()
    assert list(t["Age"].iloc[[0, 6]]) == ["(20, 30]", "(0, 20]"]
    ec = equivalence_classes(t, QI)
    assert sorted(ec["count"]) == [2, 2, 3, 3]
    members = {tuple(sorted(PATIENTS.loc[g.index, "Name"])) for _, g in t.groupby(QI)}
    assert members == {("Ramsha", "Salima"), ("Joan", "Yadu"), ("Bahuksana", "Kishor", "sunny"), ("John", "Johnson", "Rambha")}
    assert kstats(t, QI, 2) == {
        "k_anonymous": True,
        "min_class_size": 2,
        "n_classes": 4,
        "violating_rows": 0,
        "n_suppressed": 0,
        "n_records": 10,
    }
    r3 = kstats(t, QI, 3)
    assert r3["k_anonymous"] is False and r3["min_class_size"] == 2 and r3["violating_rows"] == 4
    d2 = lstats(t, QI, "Disease", 2)
    assert d2["l_diverse"] and d2["achieved"] == 2 and d2["min_distinct"] == 2
    d3 = lstats(t, QI, "Disease", 3)
    assert not d3["l_diverse"] and d3["violating_classes"] == 2 and d3["violating_rows"] == 4
    e2 = lstats(t, QI, "Disease", 2, kind="entropy")
    assert e2["l_diverse"] and e2["min_entropy"] == pytest.approx(math.log(2)) and e2["achieved"] == pytest.approx(2.0)
    assert not lstats(t, QI, "Disease", 2.5, kind="entropy")["l_diverse"]


def test_o2_1_raw_table_is_1_anonymous():
    ec = equivalence_classes(PATIENTS, QI)
    assert sorted(ec["count"]) == [1, 1, 1, 1, 1, 1, 2, 2]
    dup = ec[ec["count"] == 2][QI].apply(tuple, axis=1).tolist()
    assert sorted(dup) == [(19, "Male", "Kerala"), (24, "Female", "Kerala")]
    r = kstats(PATIENTS, QI, 2)
    assert r == {
        "k_anonymous": False,
        "min_class_size": 1,
        "n_classes": 8,
        "violating_rows": 6,
        "n_suppressed": 0,
        "n_records": 10,
    }
    assert kstats(PATIENTS, QI, 1)["k_anonymous"]


def test_checks_return_verdicts_and_bools():
    """``is_*`` are plain bools (a failing table is falsy), ``check_*`` Verdicts whose one check
    names the class at fault."""
    assert is_k_anonymous(PATIENTS, QI, 2) is False and is_k_anonymous(published(), QI, 2) is True
    v = check_k_anonymity(PATIENTS, QI, 2)
    assert not v and not v.ok and v.failures() == [v["k-anonymity"]]
    c = v["k-anonymity"]
    assert c.figure == 1 and c.threshold == 2 and c.where.startswith("smallest class Age=")
    assert "FAILED k-anonymity: 1 (needs 2)" in c.line()
    d = check_l_diversity(published(), QI, "Disease", 3)
    assert not d and is_l_diverse(published(), QI, "Disease", 3) is False and d["l-diversity"].figure == 2
    assert d["l-diversity"].where.startswith("least diverse class Age=")
    assert Verdict.from_dict(d.to_dict()).ok is False and d.to_dict()["checks"][0]["stats"]["violating_classes"] == 2


# ---------------------------------------------------------------- counterexamples
def test_counterexamples():
    t = published()
    # move Kishor to Tamil Nadu: his class shrinks to 2 and Tamil Nadu-Male is a singleton
    bad = t.copy()
    bad.loc[7, "State"] = "Tamil Nadu"
    r = kstats(bad, QI, 2)
    assert not r["k_anonymous"] and r["min_class_size"] == 1 and r["violating_rows"] == 1
    # one class with a single disease: 2-anonymous but not 2-diverse (distinct nor entropy)
    homo = t.copy()
    homo.loc[[0, 2], "Disease"] = "TB"
    assert kstats(homo, QI, 2)["k_anonymous"]
    d = lstats(homo, QI, "Disease", 2)
    assert not d["l_diverse"] and d["min_distinct"] == 1 and d["violating_rows"] == 2
    assert not lstats(homo, QI, "Disease", 2, kind="entropy")["l_diverse"]
    # skewed class (3 x A, 1 x B): distinct 2-diverse but entropy below ln 2
    skew = pd.DataFrame({"q": ["a"] * 4, "s": ["A", "A", "A", "B"]})
    assert lstats(skew, "q", "s", 2)["l_diverse"]
    e = lstats(skew, "q", "s", 2, kind="entropy")
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert not e["l_diverse"] and e["min_entropy"] == pytest.approx(h)
    # suppressed '*' is an ordinary value
    sup = pd.DataFrame({"q": ["*", "*", "x"], "s": [1, 2, 3]})
    assert sorted(equivalence_classes(sup, "q")["count"]) == [1, 2]


def test_recursive_cl_diversity_hand_example():
    # class a: counts 5,3,2 ; class b: counts 4,4
    df = pd.DataFrame({"q": ["a"] * 10 + ["b"] * 8, "s": list("xxxxxyyyzz") + list("uuuuvvvv")})
    # l = 2: a: 5 < c*(3+2)=5c ; b: 4 < c*4  -> both need c > 1
    assert not lstats(df, "q", "s", 2, kind="recursive", c=1)["l_diverse"]
    r = lstats(df, "q", "s", 2, kind="recursive", c=1.01)
    assert r["l_diverse"] and r["achieved"] == pytest.approx(1.0)
    # l = 3: a: 5 < 2c -> c > 2.5 ; b has only 2 values -> never
    r3 = lstats(df, "q", "s", 3, kind="recursive", c=3)
    assert not r3["l_diverse"] and r3["violating_classes"] == 1 and r3["violating_rows"] == 8 and r3["achieved"] == math.inf
    only_a = df[df.q == "a"]
    assert lstats(only_a, "q", "s", 3, kind="recursive", c=2.6)["l_diverse"]
    assert not lstats(only_a, "q", "s", 3, kind="recursive", c=2.5)["l_diverse"]  # strict <
    # l = 1: r1 < c * total
    assert lstats(df, "q", "s", 1, kind="recursive", c=0.6)["l_diverse"]


# ---------------------------------------------------------------- pandas vs dask
def _split(df: pd.DataFrame, nparts: int, empty: bool) -> dd.DataFrame:
    """dask frame with ``nparts`` partitions; with ``empty`` one of them holds no rows."""
    bounds = np.linspace(0, len(df), nparts - int(empty) + 1).astype(int)
    parts = [df.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    if empty:
        parts.insert(1, df.iloc[:0])
    out = dd.from_delayed([dask.delayed(p) for p in parts], meta=df.iloc[:0])
    assert out.npartitions == nparts
    return out


@pytest.mark.parametrize("nparts,empty", [(2, False), (5, False), (5, True), (2, True)])
def test_dask_matches_pandas(nparts, empty):
    for src in (published(), PATIENTS):
        d = _split(src, nparts, empty)
        if empty:
            assert min(d.map_partitions(len).compute()) == 0
        pd.testing.assert_frame_equal(equivalence_classes(d, QI).astype(object), equivalence_classes(src, QI).astype(object))
        for k in (1, 2, 3):
            assert kstats(d, QI, k) == kstats(src, QI, k)
        for kind, l, c in [("distinct", 2, None), ("distinct", 3, None), ("entropy", 2, None), ("recursive", 2, 2.0)]:
            assert lstats(d, QI, "Disease", l, kind=kind, c=c) == lstats(src, QI, "Disease", l, kind=kind, c=c)


def test_mixed_and_typed_columns():
    # suppressed '*' mixed with numbers, a categorical QI and a pyarrow-string sensitive column
    df = pd.DataFrame(
        {
            "a": pd.Series([1, "*", 2, "*", 1], dtype=object),
            "b": pd.Categorical(list("xyxyx"), categories=list("xyz")),
            "s": pd.Series(list("pqrst"), dtype="string[pyarrow]"),
        }
    )
    for d in (df, dd.from_pandas(df, npartitions=2)):
        ec = equivalence_classes(d, ["a", "b"])
        assert [str(v) for v in ec["a"]] == ["*", "1", "2"] and list(ec["count"]) == [2, 2, 1]
        r = lstats(d, ["a", "b"], "s", 2)
        assert r["n_classes"] == 3 and r["violating_rows"] == 1 and r["achieved"] == 1


def test_dask_empty_table():
    t = published()
    empty = dd.from_pandas(t.iloc[:0], npartitions=1)
    assert kstats(empty, QI, 5) == {
        "k_anonymous": True,
        "min_class_size": 0,
        "n_classes": 0,
        "violating_rows": 0,
        "n_suppressed": 0,
        "n_records": 0,
    }
    assert lstats(empty, QI, "Disease", 2)["l_diverse"]


# ---------------------------------------------------------------- bad input
def test_bad_input():
    t = published()
    with pytest.raises(InvalidParameter, match="Zip"):
        check_k_anonymity(t, ["Age", "Zip"], 2)
    with pytest.raises(InvalidParameter, match="Illness"):
        check_l_diversity(t, QI, "Illness", 2)
    for k in (0, -1, 1.5, True):
        with pytest.raises(InvalidParameter):
            check_k_anonymity(t, QI, k)
    with pytest.raises(InvalidParameter):
        check_l_diversity(t, QI, "Disease", 0)
    with pytest.raises(InvalidParameter):
        check_l_diversity(t, QI, "Disease", 0.5, kind="entropy")
    with pytest.raises(InvalidParameter):
        check_l_diversity(t, QI, "Disease", 2, kind="recursive")  # c missing
    with pytest.raises(InvalidParameter):
        check_l_diversity(t, QI, "Disease", 2, kind="bogus")
    with pytest.raises(InvalidParameter):
        check_l_diversity(t, QI, "Age", 2)  # sensitive inside QI
    with pytest.raises(InvalidParameter):
        equivalence_classes(t, [])
    holes = t.copy()
    holes.loc[3, "State"] = None
    with pytest.raises(DataFormatError, match="State"):
        equivalence_classes(holes, QI)
    with pytest.raises(DataFormatError, match="State"):
        check_k_anonymity(dd.from_pandas(holes, npartitions=2), QI, 2)
    nan_s = t.copy()
    nan_s["Disease"] = nan_s["Disease"].where(nan_s.index != 0)
    with pytest.raises(DataFormatError, match="Disease"):
        check_l_diversity(nan_s, QI, "Disease", 2)


# ---------------------------------------------------------------- hierarchies
def test_adult_hierarchies_cover_adult(shared_data):
    adult = pd.read_csv(shared_data / "adult" / "adult.csv", sep=";")
    assert list(adult.columns) == ADULT_ATTRS and len(adult) == 30162
    expected_levels = {
        "age": 5,
        "education": 4,
        "marital-status": 3,
        "native-country": 3,
        "occupation": 3,
        "workclass": 3,
        "race": 2,
        "sex": 2,
        "salary-class": 2,
    }
    for attr in ADULT_ATTRS:
        h = Hierarchy.from_csv(str(shared_data / "adult" / f"adult_hierarchy_{attr}.csv"), name=attr)
        assert h.levels == expected_levels[attr], attr
        h.validate(adult[attr])
        top = h.generalize(adult[attr], h.levels - 1)
        assert (top == "*").all()
        assert (h.generalize(adult[attr], 0).astype(str) == adult[attr].astype(str)).all()
        # every level is a partition that coarsens the previous one
        prev = None
        for lev in range(h.levels):
            g = h.generalize(adult[attr], lev)
            if prev is not None:
                assert g.groupby(prev).nunique().max() == 1
            prev = g
    age = Hierarchy.from_csv(str(shared_data / "adult" / "adult_hierarchy_age.csv"))
    assert list(age.generalize([39, 50.0, "17"], 2)) == ["30-39", "40-49", "10-19"]
    assert age.n_leaves_under("30-39", 2) == 10 and age.n_leaves_under("*", 4) == age.n_leaves
    with pytest.raises(DataFormatError, match="0"):
        age.validate([0, 39, 150])


def test_from_csv_errors(tmp_path):
    def write(text):
        p = tmp_path / "h.csv"
        p.write_text(text)
        return str(p)

    h = Hierarchy.from_csv("file://" + write("a;A;*\nb;A;*\nc;B;*\n"))
    assert h.levels == 3 and list(h.leaves) == ["a", "b", "c"]
    assert list(h.generalize(["c", "a", "*"], 1)) == ["B", "A", "*"]
    with pytest.raises(DataFormatError, match="row 2 has 2 columns"):
        Hierarchy.from_csv(write("a;A;*\nb;*\n"))
    with pytest.raises(DataFormatError, match="one root"):
        Hierarchy.from_csv(write("a;A;*\nb;B;ALL\n"))
    with pytest.raises(DataFormatError, match="'A' at level 1 has 2 parents"):
        Hierarchy.from_csv(write("a;A;X;*\nb;A;Y;*\n"))
    with pytest.raises(DataFormatError, match="duplicate leaf"):
        Hierarchy.from_csv(write("a;A;*\na;B;*\n"))
    with pytest.raises(FileNotFoundError):
        Hierarchy.from_csv(str(tmp_path / "nope.csv"))
    with pytest.raises(DataFormatError, match="is empty"):
        Hierarchy.from_csv(write(""))
    # missing values: first 10 named plus the count
    with pytest.raises(DataFormatError, match=r"12 value\(s\).*'v0'.*and 2 more"):
        h.validate([f"v{i}" for i in range(12)] + ["a"])
    with pytest.raises(InvalidParameter):
        h.generalize(["a"], 3)


def test_interval_hierarchy():
    h = Hierarchy.from_intervals(width=10, low=0, high=100)
    assert h.levels == 6  # value, 10, 20, 40, 80, *
    x = [0, 9.99, 10, 25, 99]
    assert list(h.generalize(x, 1)) == ["[0, 10)", "[0, 10)", "[10, 20)", "[20, 30)", "[90, 100)"]
    assert list(h.generalize(x, 2)) == ["[0, 20)", "[0, 20)", "[0, 20)", "[20, 40)", "[80, 100)"]
    assert list(h.generalize(x, 4)) == ["[0, 80)"] * 4 + ["[80, 100)"]
    assert list(h.generalize(x, 5)) == ["*"] * 5
    assert list(h.generalize(x, 0)) == x
    with pytest.raises(DataFormatError, match="100"):
        h.validate([5, 100, -1])  # [0, 100): 100 is outside
    r = Hierarchy.from_intervals([[20, 30, 40], [40]], low=0, high=60, closed="right")
    assert list(r.generalize([20, 20.5, 30, 60], 1)) == ["(0, 20]", "(20, 30]", "(20, 30]", "(40, 60]"]
    assert list(r.generalize([20, 41], 2)) == ["(0, 40]", "(40, 60]"] and r.levels == 4
    assert r.interval_of("(20, 30]", 1) == (20.0, 30.0)
    s = pd.Series([5, 15], index=[7, 8], name="age")
    out = h.generalize(s, 1)
    assert list(out.index) == [7, 8] and out.name == "age"
    with pytest.raises(InvalidParameter, match="subset"):
        Hierarchy.from_intervals([[20, 30], [25]], low=0, high=60)
    with pytest.raises(InvalidParameter, match="multiple"):
        Hierarchy.from_intervals(width=[10, 15], low=0, high=60)
    with pytest.raises(InvalidParameter):
        Hierarchy.from_intervals([10], width=10, low=0, high=60)
    with pytest.raises(InvalidParameter):
        Hierarchy.from_intervals([70], low=0, high=60)


def test_balanced_hierarchy():
    h = Hierarchy.balanced(10, 3)
    assert h.levels == 4 and h.n_leaves == 10
    assert list(h.generalize([0, 4, 8, 9], 1)) == ["0-2", "3-5", "6-8", "9-9"]
    assert list(h.generalize([0, 9], 2)) == ["0-8", "9-9"]
    assert list(h.generalize(np.array([0, 9]), 3)) == ["*", "*"]
    assert h.n_leaves_under("0-8", 2) == 9 and h.n_leaves_under("9-9", 1) == 1
    assert Hierarchy.balanced(25, 5).levels == 3 and Hierarchy.balanced(1, 2).levels == 2
    with pytest.raises(DataFormatError, match="10"):
        h.validate([10])
    for bad in [(0, 2), (5, 1), (5, 2.5)]:
        with pytest.raises(InvalidParameter):
            Hierarchy.balanced(*bad)


# ---------------------------------------------------------------- metrics
def test_metrics():
    assert discernibility([2, 2, 3, 3]) == 26
    assert discernibility([2, 3], n_suppressed=1) == 4 + 9 + 6
    assert discernibility([2, 3], n_suppressed=1, n_total=10) == 23
    with pytest.raises(InvalidParameter):
        discernibility([2, 3], n_suppressed=1, n_total=5)
    for bad in ([0, 3], [1.5], ["a"]):
        with pytest.raises(InvalidParameter):
            discernibility(bad)
    assert average_class_size([2, 2, 3, 3], 2) == pytest.approx(10 / 8)
    risk = prosecutor_risk([2, 2, 3, 3])
    assert risk["max"] == 0.5 and risk["average"] == pytest.approx(0.4) and risk["records_at_risk"] == 1.0
    risk = prosecutor_risk([1, 4, 5], threshold=0.2)  # 1/4, 1/1 > 0.2 ; 1/5 not
    assert risk["max"] == 1.0 and risk["average"] == pytest.approx(0.3) and risk["records_at_risk"] == pytest.approx(0.5)
    cat = Hierarchy.from_table([["a", "A", "*"], ["b", "A", "*"], ["c", "B", "*"], ["d", "B", "*"], ["e", "B", "*"]])
    assert ncp_categorical(cat, "a", 0) == 0 and ncp_categorical(cat, "A", 1) == 0.25
    assert ncp_categorical(cat, "B", 1) == 0.5 and ncp_categorical(cat, "*", 2) == 1
    assert ncp_level(cat, ["a", "c", "e", "*"], 1) == pytest.approx((0.25 + 0.5 + 0.5 + 1) / 4)
    num = Hierarchy.from_intervals(width=10, low=0, high=100)
    assert ncp_numeric(num, "[20, 30)", 1) == pytest.approx(0.1) and ncp_numeric(num, "*", 5) == 1
    assert ncp_level(num, [5, 95], 4) == pytest.approx((0.8 + 0.2) / 2)

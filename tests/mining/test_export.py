"""Itemsets and rules in the layouts of mlxtend, SPMF and Spark's FPGrowth, and back.

Oracles: mlxtend's own ``apriori`` / ``association_rules`` on the same one-hot baskets (built
with pandas from the Python lists, not by our readers); pyarrow and plain text parsing of the
files we write; a tiny SPMF file written out by hand (the database of SPMF's documentation,
``contextPasquier99``, with its supports counted by hand: {1 3 4}, {2 3 5}, {1 2 3 5}, {2 5},
{1 2 3 5}).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mlxtend.frequent_patterns import apriori as mlx_apriori
from mlxtend.frequent_patterns import association_rules as mlx_association_rules

from ppdm_dask import TransactionArray
from ppdm_dask.errors import DataFormatError, InvalidParameter
from ppdm_dask.mining import apriori, association_rules
from ppdm_dask.mining.export import (
    MLXTEND_RULE_COLUMNS,
    format_of,
    read_itemsets,
    read_rules,
    write_itemsets,
    write_rules,
)

N_BASKETS = 200
MIN_SUPPORT = 0.051  # off every count / 200 boundary: both miners keep counts >= 11
MIN_CONFIDENCE = 0.37


def _baskets(labels: list, seed: int) -> list[list]:
    """Generated baskets: item i in a basket with probability falling with i, plus a planted
    pair so some rules have confidence 1 (conviction inf)."""
    rng = random.Random(seed)
    out = []
    for _ in range(N_BASKETS):
        b = [x for i, x in enumerate(labels) if rng.random() < 0.5 / (1 + 0.3 * i)]
        if labels[0] in b:
            b.append(labels[-1])  # labels[0] implies labels[-1]
        out.append(sorted(set(b)))
    return out


def _one_hot(baskets: list[list], labels: list) -> pd.DataFrame:
    cols = sorted(labels)
    return pd.DataFrame([[x in set(b) for x in cols] for b in baskets], columns=cols)


STRING_LABELS = [f"item {c}" for c in "abcdefghijkl"]  # spaces: labels that SPMF's id lines carry
INT_LABELS = [3, 7, 10, 12, 15, 21, 30, 31, 40, 55, 60, 99]


@pytest.fixture(params=["strings", "integers"])
def mined(request):
    labels = STRING_LABELS if request.param == "strings" else INT_LABELS
    baskets = _baskets(labels, seed=7 if request.param == "strings" else 11)
    tx = TransactionArray.from_lists(baskets, npartitions=3)
    fi = apriori(tx, MIN_SUPPORT)
    rules = association_rules(fi, MIN_CONFIDENCE)
    return baskets, labels, fi, rules


def _sorted_frame(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    key = df[keys].apply(lambda r: tuple(tuple(sorted(map(str, s))) for s in r), axis=1)
    return df.assign(_key=key).sort_values("_key").drop(columns="_key").reset_index(drop=True)


def _assert_frames_equal(ours: pd.DataFrame, theirs: pd.DataFrame, set_columns: list[str]) -> None:
    assert list(ours.columns) == list(theirs.columns)
    assert len(ours) == len(theirs)
    a, b = _sorted_frame(ours, set_columns), _sorted_frame(theirs, set_columns)
    for col in ours.columns:
        if col in set_columns:
            assert a[col].tolist() == b[col].tolist(), col
            assert all(isinstance(s, frozenset) for s in a[col])
        else:
            assert a[col].dtype == b[col].dtype == np.float64, col
            np.testing.assert_allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-12, atol=1e-12, err_msg=col)


def test_itemsets_equal_mlxtend_apriori(mined):
    baskets, labels, fi, _ = mined
    theirs = mlx_apriori(_one_hot(baskets, labels), min_support=MIN_SUPPORT, use_colnames=True)
    ours = fi.to_mlxtend()
    assert len(theirs) > 30 and fi.max_length >= 3  # a non-trivial set
    _assert_frames_equal(ours, theirs, ["itemsets"])
    # with the one-hot columns in label order, even the row order is mlxtend's
    assert ours["itemsets"].tolist() == theirs["itemsets"].tolist()
    assert all(type(x) is type(labels[0]) for s in ours["itemsets"] for x in s)  # Python labels, not numpy scalars


def test_rules_equal_mlxtend_association_rules(mined):
    baskets, labels, fi, rules = mined
    frequent = mlx_apriori(_one_hot(baskets, labels), min_support=MIN_SUPPORT, use_colnames=True)
    theirs = mlx_association_rules(frequent, num_itemsets=N_BASKETS, metric="confidence", min_threshold=MIN_CONFIDENCE)
    ours = rules.to_mlxtend()
    assert list(ours.columns) == ["antecedents", "consequents", *MLXTEND_RULE_COLUMNS]
    assert len(theirs) > 20 and np.isinf(theirs["conviction"]).any()  # confidence-1 rules are present
    _assert_frames_equal(ours, theirs, ["antecedents", "consequents"])


def test_no_rules_give_mlxtends_empty_frame():
    tx = TransactionArray.from_lists([["a"], ["b"], ["a", "b"]])
    rules = association_rules(apriori(tx, 1), 0.9)
    assert len(rules) == 0
    df = rules.to_mlxtend()
    assert list(df.columns) == ["antecedents", "consequents", *MLXTEND_RULE_COLUMNS] and len(df) == 0


@pytest.mark.parametrize("name, fmt", [("x.parquet", "ppdm"), ("x.txt", "spmf"), ("x.parquet", "spark"), ("x.csv", "mlxtend")])
def test_itemsets_round_trip(tmp_path, mined, name, fmt):
    _, _, fi, _ = mined
    url = str(tmp_path / name)
    assert write_itemsets(fi, url, format=fmt if fmt == "spark" else None) == fmt
    back = read_itemsets(url, n_transactions=N_BASKETS if fmt == "mlxtend" else None)
    assert back.as_dict() == fi.as_dict()
    assert back.n_transactions == N_BASKETS
    assert back.vocabulary.labels.dtype.kind == fi.vocabulary.labels.dtype.kind
    if fmt != "mlxtend":  # the CSV layout records no threshold
        assert back.min_count == fi.min_count
    for k in fi.levels:  # the same levels, column ids in the same order
        np.testing.assert_array_equal(back.levels[k][0], fi.levels[k][0])
        np.testing.assert_array_equal(back.levels[k][1], fi.levels[k][1])


@pytest.mark.parametrize("name, fmt", [("r.parquet", "ppdm"), ("r.txt", "spmf"), ("r.parquet", "spark"), ("r.csv", "mlxtend")])
def test_rules_round_trip(tmp_path, mined, name, fmt):
    _, _, _, rules = mined
    url = str(tmp_path / name)
    write_rules(rules, url, format=fmt if fmt == "spark" else None)
    back = read_rules(url, n_transactions=N_BASKETS if fmt == "mlxtend" else None)
    assert back.antecedents == rules.antecedents and back.consequents == rules.consequents
    np.testing.assert_array_equal(back.counts, rules.counts)
    np.testing.assert_array_equal(back.antecedent_counts, rules.antecedent_counts)
    np.testing.assert_array_equal(back.consequent_counts, rules.consequent_counts)
    for m, values in rules.measures.items():
        np.testing.assert_array_equal(back.measures[m], values, err_msg=m)
    if fmt != "mlxtend":
        assert back.min_confidence == rules.min_confidence


def test_spark_files_have_fpgrowths_schema(tmp_path, mined):
    _, labels, fi, rules = mined
    write_itemsets(fi, str(tmp_path / "fi.parquet"), format="spark")
    write_rules(rules, str(tmp_path / "r.parquet"), format="spark")
    t = pq.read_table(tmp_path / "fi.parquet")
    value = pa.string() if isinstance(labels[0], str) else pa.int64()
    assert t.schema.names == ["items", "freq"]
    assert t.schema.field("items").type == pa.list_(value) and t.schema.field("freq").type == pa.int64()
    got = {frozenset(i): f for i, f in zip(t.column("items").to_pylist(), t.column("freq").to_pylist())}
    assert got == fi.as_dict()
    r = pq.read_table(tmp_path / "r.parquet")
    assert r.schema.names == ["antecedent", "consequent", "confidence", "lift", "support"]
    assert r.schema.field("antecedent").type == r.schema.field("consequent").type == pa.list_(value)
    assert all(r.schema.field(c).type == pa.float64() for c in ("confidence", "lift", "support"))
    mlx = rules.to_mlxtend()  # the metrics checked against mlxtend above
    np.testing.assert_allclose(r.column("confidence").to_numpy(), mlx["confidence"], rtol=1e-12)
    np.testing.assert_allclose(r.column("lift").to_numpy(), mlx["lift"], rtol=1e-12)
    np.testing.assert_allclose(r.column("support").to_numpy(), mlx["support"], rtol=1e-12)
    assert [frozenset(a) for a in r.column("antecedent").to_pylist()] == mlx["antecedents"].tolist()


def test_spmf_text_lines(tmp_path, mined):
    baskets, labels, fi, rules = mined
    write_itemsets(fi, str(tmp_path / "fi.txt"))
    write_rules(rules, str(tmp_path / "r.txt"))
    lines = (tmp_path / "fi.txt").read_text().splitlines()
    names: dict[str, object] = {}
    if isinstance(labels[0], str):  # SPMF's text conversion: ids 1..n, named in @ITEM lines
        assert lines[0] == "@CONVERTED_FROM_TEXT"
        names = {ln.split("=", 2)[1]: ln.split("=", 2)[2] for ln in lines if ln.startswith("@ITEM=")}
        assert sorted(names.values()) == sorted({x for b in baskets for x in b})
    counted = {}
    for ln in lines:
        if ln.startswith("@"):
            continue
        items, sup = ln.split(" #SUP: ")
        labels_ = frozenset(names[t] if names else int(t) for t in items.split())
        counted[labels_] = int(sup)
    # oracle: the counts of those item sets in the baskets themselves
    assert counted == {s: sum(s <= set(b) for b in baskets) for s in counted}
    assert len(counted) == len(fi)
    rule_lines = [ln for ln in (tmp_path / "r.txt").read_text().splitlines() if not ln.startswith("@")]
    assert len(rule_lines) == len(rules)
    for ln in rule_lines:
        left, right = ln.split(" ==> ")
        cons, _, rest = right.partition(" #SUP: ")
        sup, conf, lift = (float(x) for x in rest.replace("#CONF:", "").replace("#LIFT:", "").split())
        to_set = lambda t: frozenset(names[x] if names else int(x) for x in t.split())  # noqa: E731
        a, c = to_set(left), to_set(cons)
        n_a = sum(a <= set(b) for b in baskets)
        n_c = sum(c <= set(b) for b in baskets)
        assert sup == sum((a | c) <= set(b) for b in baskets)
        assert conf == pytest.approx(sup / n_a, rel=1e-12) and lift == pytest.approx(sup * N_BASKETS / (n_a * n_c), rel=1e-12)


PASQUIER_ITEMSETS = """\
1 #SUP: 3
2 #SUP: 4
3 #SUP: 4
5 #SUP: 4
1 2 #SUP: 2
1 3 #SUP: 3
1 5 #SUP: 2
2 3 #SUP: 3
2 5 #SUP: 4
3 5 #SUP: 3
1 2 3 #SUP: 2
1 2 5 #SUP: 2
1 3 5 #SUP: 2
2 3 5 #SUP: 3
1 2 3 5 #SUP: 2
"""


def test_hand_written_spmf_file(tmp_path):
    """SPMF's Apriori on contextPasquier99 at minsup 40% (2 of 5), as its documentation shows it."""
    path = tmp_path / "spmf.txt"
    path.write_text(PASQUIER_ITEMSETS)
    with pytest.raises(InvalidParameter, match="n_transactions"):
        read_itemsets(str(path))  # SPMF's own files record no number of transactions
    fi = read_itemsets(str(path), n_transactions=5)
    db = [{1, 3, 4}, {2, 3, 5}, {1, 2, 3, 5}, {2, 5}, {1, 2, 3, 5}]
    brute = {}
    for mask in range(1, 32):
        s = frozenset(i for i in range(1, 6) if mask >> (i - 1) & 1)
        c = sum(s <= t for t in db)
        if c >= 2:
            brute[s] = c
    assert fi.as_dict() == brute
    assert fi.min_count == 2 and fi.vocabulary.labels.tolist() == [1, 2, 3, 5]
    # a rule file in the layout of SPMF's lift-enabled miner, items named through @ITEM lines
    rules = tmp_path / "rules.txt"
    rules.write_text(
        "@CONVERTED_FROM_TEXT\n@ITEM=1=bread\n@ITEM=2=milk and honey\n@ITEM=3=x=y\n"
        "1 ==> 3 #SUP: 3 #CONF: 1.0 #LIFT: 1.25\n2 ==> 1 3 #SUP: 2 #CONF: 0.5 #LIFT: 0.8333333333333334\n"
    )
    r = read_rules(str(rules), n_transactions=5)
    assert r.antecedents == [("bread",), ("milk and honey",)] and r.consequents == [("x=y",), ("bread", "x=y")]
    assert r.counts.tolist() == [3, 2]
    assert r.antecedent_counts.tolist() == [3, 4] and r.consequent_counts.tolist() == [4, 3]
    assert math.isinf(r.measures["conviction"][0])


def test_string_labels_that_look_like_numbers_stay_strings(tmp_path):
    tx = TransactionArray.from_lists([["1", "2"], ["1", "2"], ["2"]])
    fi = apriori(tx, 1)
    write_itemsets(fi, str(tmp_path / "fi.txt"))
    assert (
        read_itemsets(str(tmp_path / "fi.txt")).as_dict()
        == fi.as_dict()
        == {
            frozenset({"1"}): 2,
            frozenset({"2"}): 3,
            frozenset({"1", "2"}): 2,
        }
    )


def test_emask_estimates_are_rounded_where_the_layout_carries_integers(tmp_path):
    from ppdm_dask.data.vocabulary import Vocabulary
    from ppdm_dask.emask.mining import EstimatedItemsets

    est = EstimatedItemsets(
        {1: (np.array([[0], [1]], np.int32), np.array([10.4, 7.6]))}, Vocabulary(["a", "b"]), 20, 5, p=0.5, q=0.9
    )
    write_itemsets(est, str(tmp_path / "e.parquet"), format="spark")
    assert pq.read_table(tmp_path / "e.parquet").column("freq").to_pylist() == [10, 8]
    np.testing.assert_array_equal(est.to_mlxtend()["support"], [10.4 / 20, 7.6 / 20])


@pytest.mark.parametrize(
    "url, fmt, expected",
    [
        ("a.parquet", None, "ppdm"),
        ("a.csv", None, "mlxtend"),
        ("a.txt", None, "spmf"),
        ("a.parquet", "spark", "spark"),
        ("s3://b/a.PARQUET", None, "ppdm"),
        ("a.out", "spmf", "spmf"),
        ("a.parquet", "mlxtend", "mlxtend"),
        ("a", None, "ppdm"),
    ],
)
def test_format_of(url, fmt, expected):
    assert format_of(url, fmt) == expected


@pytest.mark.parametrize(
    "url, fmt", [("a.json", None), ("a.xlsx", None), ("a.csv", "spark"), ("a.txt", "ppdm"), ("a.parquet", "fim")]
)
def test_format_of_refuses(url, fmt):
    with pytest.raises(InvalidParameter) as e:
        format_of(url, fmt)
    assert e.value.parameter == "format"


def test_readers_name_the_file_at_fault(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("@PPDM n_transactions=4\n1 2 #SUP: two\n")
    with pytest.raises(DataFormatError, match=r"bad.txt, line 2: #SUP must be an integer"):
        read_itemsets(str(bad))
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    with pytest.raises(DataFormatError, match=r"other.parquet: no itemsets layout"):
        read_itemsets(str(other), n_transactions=3)


def test_csv_label_with_the_separator_is_refused(tmp_path):
    fi = apriori(TransactionArray.from_lists([["a,b", "c"], ["a,b"]]), 1)
    with pytest.raises(DataFormatError, match="write a .parquet file"):
        write_itemsets(fi, str(tmp_path / "x.csv"))
    assert not (tmp_path / "x.csv").exists()
    write_itemsets(fi, str(tmp_path / "x.parquet"), format="mlxtend")  # the Parquet container takes any label
    assert read_itemsets(str(tmp_path / "x.parquet")).as_dict() == fi.as_dict()


@pytest.mark.parametrize("name, fmt", [("e.parquet", None), ("e.txt", None), ("e.csv", None), ("e.parquet", "spark")])
def test_empty_results_round_trip(tmp_path, name, fmt):
    fi = apriori(TransactionArray.from_lists([["a"], ["b"]]), 2)
    rules = association_rules(fi, 0.5)
    assert len(fi) == 0 and len(rules) == 0
    write_itemsets(fi, str(tmp_path / name), format=fmt)
    write_rules(rules, str(tmp_path / f"r{name}"), format=fmt)
    assert len(read_itemsets(str(tmp_path / name), n_transactions=2)) == 0
    assert len(read_rules(str(tmp_path / f"r{name}"), n_transactions=2)) == 0


def test_spark_folder_of_part_files(tmp_path):
    """Spark's ``freqItemsets.write.parquet(path)`` makes a folder of part files without N."""
    folder = tmp_path / "freq"
    folder.mkdir()
    pq.write_table(pa.table({"items": [["x"], ["y"]], "freq": pa.array([4, 3], pa.int64())}), folder / "part-00000.parquet")
    pq.write_table(pa.table({"items": [["x", "y"]], "freq": pa.array([2], pa.int64())}), folder / "part-00001.parquet")
    with pytest.raises(InvalidParameter, match="n_transactions"):
        read_itemsets(str(folder))
    fi = read_itemsets(str(folder), n_transactions=5)
    assert fi.as_dict() == {frozenset({"x"}): 4, frozenset({"y"}): 3, frozenset({"x", "y"}): 2}
    assert fi.supports.tolist() == [0.8, 0.6, 0.4]


def test_csv_labels_that_pandas_would_read_as_missing(tmp_path):
    fi = apriori(TransactionArray.from_lists([["NA", "null"], ["NA"], ["nan", "NA"]]), 1)
    write_itemsets(fi, str(tmp_path / "x.csv"))
    assert read_itemsets(str(tmp_path / "x.csv"), n_transactions=3).as_dict() == fi.as_dict()

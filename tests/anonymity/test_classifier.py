"""The classifier figure of relational releases against a brute-force recount (plain Python:
the split by its formula, the majority label per class, the fallback), partition independence,
and the release wiring (in memory, written and handed over, written alone)."""

from __future__ import annotations

from collections import Counter, defaultdict

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import KAnonymizer, load_hierarchies
from ppdm_dask.anonymity.classifier import classifier_accuracy
from ppdm_dask.data.datasets import sample_files
from ppdm_dask.data.tables import read_table
from ppdm_dask.random import Key
from ppdm_dask.release import Release

PHI = 0x9E3779B97F4A7C15


def brute_accuracy(classes: list[tuple], labels: list[str]) -> float:
    """Held out: frac((i + 1) * φ / 2^64) < 0.2 (to 53 bits); majority per class among the
    others (ties: smallest label), else the overall majority."""
    test = [((((i + 1) * PHI) % 2**64) >> 11) / 2**53 < 0.2 for i in range(len(labels))]
    per: dict[tuple, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for c, y, t in zip(classes, labels, test):
        if not t:
            per[c][y] += 1
            overall[y] += 1
    top = max(overall.values())
    fallback = min(y for y, n in overall.items() if n == top)
    hits = total = 0
    for c, y, t in zip(classes, labels, test):
        if t:
            if per.get(c):
                best = max(per[c].values())
                pred = min(z for z, n in per[c].items() if n == best)
            else:
                pred = fallback
            hits += pred == y
            total += 1
    return hits / total


def test_against_brute_force_and_partitions():
    rng = np.random.default_rng(3)
    n = 997
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 6, n).astype(str),
            "b": rng.choice(["x", "y"], n),
            "y": rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2]),
        }
    )
    df.loc[df["a"] == "0", "y"] = "r"  # something to learn
    expected = brute_accuracy(list(zip(df["a"], df["b"])), list(df["y"]))
    for parts in (1, 3, 7):
        table = dd.from_pandas(df, npartitions=parts)
        ((acc, n_test, n_train),) = classifier_accuracy([(table, ["a", "b"])], "y")
        assert acc == pytest.approx(expected) and n_test + n_train == n and 150 < n_test < 250
        # known partition lengths skip the counting pass; wrong ones are corrected
        rows = [len(p) for p in table.to_delayed() for p in [p.compute()]]
        for guess in (rows, [n] + [0] * (parts - 1)):
            (again,) = classifier_accuracy([(table, ["a", "b"])], "y", partition_rows=guess, max_records=None)
            assert again[0] == pytest.approx(expected)
        if parts > 1:  # a cap: the first partitions holding that many records, nothing else
            (capped,) = classifier_accuracy([(table, ["a", "b"])], "y", partition_rows=rows, max_records=rows[0])
            first = df.iloc[: rows[0]]
            assert capped[0] == pytest.approx(brute_accuracy(list(zip(first["a"], first["b"])), list(first["y"])))


def test_release_figure(tmp_path):
    csv, zips, _ = sample_files("people")
    people = read_table(str(csv), dtype={"age": "int"})
    hier = load_hierarchies([f"zip={zips}"], None, ["zip"])
    rel = KAnonymizer(
        ["age", "sex", "zip"],
        k=5,
        l=2,
        sensitive="diagnosis",
        identifiers=["name"],
        method="mondrian",
        hierarchies=hier,
        key=Key(8),
    ).fit_release(people)
    released, orig = rel.data.compute(), people.compute()  # the release in memory is in input order
    qi = ["age", "sex", "zip"]
    expected = brute_accuracy([tuple(map(str, r)) for r in released[qi].itertuples(index=False)], list(orig["diagnosis"]))
    baseline = brute_accuracy([tuple(map(str, r)) for r in orig[qi].itertuples(index=False)], list(orig["diagnosis"]))
    got = {i.id: getattr(i, "value", None) for i in rel.report_figures(people).utility}
    assert got["utility_classifier_accuracy"] == pytest.approx(expected)
    assert got["utility_classifier_accuracy_original"] == pytest.approx(baseline)
    rel.write(str(tmp_path / "r"))
    alone = Release.open(str(tmp_path / "r")).report_figures(people)
    assert "utility_classifier_accuracy" not in {i.id for i in alone.utility}
    assert any("input order" in n for n in alone.notes)
    handed = {
        i.id: getattr(i, "value", None) for i in Release.open(str(tmp_path / "r")).adopt(rel).report_figures(people).utility
    }
    assert handed["utility_classifier_accuracy"] == pytest.approx(expected)

"""Where a basket command finds the baskets: a list column of any name (``--items-column``), or an
event table (``--user``/``--item``...). Contradicting options are refused before any work."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask import read
from ppdm_dask.errors import DataFormatError

from .test_cli import run

BASKETS = [["milk", "bread"], ["beer"], ["milk", "beer", "nuts"], ["bread"], ["milk", "bread", "beer"]]


def _pandas_list_file(path, column="item", values=BASKETS):
    """A Parquet file as pandas writes a column of lists (the issue's ``baskets_list.parquet``)."""
    pd.DataFrame({"basket_id": range(len(values)), column: values}).to_parquet(path)
    return str(path)


def test_a_list_column_of_another_name_is_read_with_items_column(tmp_path):
    src = _pandas_list_file(tmp_path / "baskets_list.parquet")
    r = run("mine", src, "--min-count", "2", ok=False)
    assert r.exit_code == 2
    line = r.stderr.strip()
    assert line.count("\n") == 0 and "no list column 'items'; its list columns: item" in line and "--items-column item" in line
    r = run("--json", "mine", src, "--min-count", "2", "--items-column", "item")
    got = json.loads(r.stdout)
    # oracle: the itemsets of count >= 2 counted by brute force over the baskets
    from itertools import combinations

    counts: dict[frozenset, int] = {}
    for b in BASKETS:
        for k in range(1, len(b) + 1):
            for c in combinations(sorted(b), k):
                counts[frozenset(c)] = counts.get(frozenset(c), 0) + 1
    assert got["itemsets"] == sum(1 for v in counts.values() if v >= 2)
    tx = read(src, items_column="item")
    assert sorted(map(sorted, tx.to_lists())) == sorted(map(sorted, BASKETS))


def test_integer_labels_in_a_list_column(tmp_path):
    src = _pandas_list_file(tmp_path / "ints.parquet", "sku", [[3, 1], [1], [7, 3, 1]])
    tx = read(src, items_column="sku")
    assert sorted(map(sorted, tx.to_lists())) == [[1], [1, 3], [1, 3, 7]]
    assert tx.vocabulary.is_integer


def test_a_scalar_column_named_as_the_list_is_refused_naming_it(tmp_path):
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({"user": ["a", "a", "b"], "item": ["x", "y", "x"]}), path)
    with pytest.raises(DataFormatError, match="column 'item' has type string, expected a list of items") as err:
        read(str(path), items_column="item")
    assert "`user` and `item`" in err.value.fix
    # an event table without list columns: the table message points to the event options
    r = run("mine", str(path), "--min-count", "1", ok=False)
    assert r.exit_code == 2 and "is a table, not baskets" in r.stderr and "--user and --item" in r.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--user", "u"], "needs both --user and --item (missing --item)"),
        (["--item", "i"], "needs both --user and --item (missing --user)"),
        (["--user", "u", "--item", "i", "--items-column", "x"], "--items-column reads a list column"),
        (["--user", "u", "--item", "i", "--session-gap", "30min"], "--session-gap needs the time of each event"),
        (["--user", "u", "--item", "i", "--time", "t", "--session-gap", "1", "--window", "1"], "cut baskets two ways"),
    ],
)
def test_contradicting_source_options_are_one_usage_error_before_any_work(tmp_path, args, words):
    r = run("mine", str(tmp_path / "absent.parquet"), "--min-count", "1", *args, ok=False)
    assert r.exit_code == 2 and words in r.stderr, r.stderr
    assert "no such file" not in r.stderr  # refused before the input is even looked at
    assert list(tmp_path.iterdir()) == []


def test_ingest_refuses_a_user_map_inside_the_output(tmp_path):
    src = tmp_path / "e.parquet"
    pq.write_table(pa.table({"user": ["a"], "item": ["x"]}), src)
    dst = tmp_path / "baskets"
    r = run("ingest", str(src), str(dst), "--user", "user", "--item", "item", "--user-map", str(dst / "map.parquet"), ok=False)
    assert r.exit_code == 2 and "--user-map" in r.stderr and "inside the output" in r.stderr
    r = run("ingest", str(src), str(dst), "--item", "item", ok=False)
    assert r.exit_code == 2 and "Missing option '--user'" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.parquet"]

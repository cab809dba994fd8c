"""Baskets or a table: the input-kind detector on every bundled and shared data file, on small
hand-made files in both directions, and in the readers that refuse the other kind."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask import read, read_table
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.datasets import SAMPLES, sample_files
from ppdm_dask.data.kind import (
    HEAD_BYTES,
    kind_of_manifest_format,
    kind_of_parquet_schema,
    kind_of_text,
    read_head,
    reading_as_baskets,
)
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DataFormatError

SAMPLE_DIR = Path(sample_files(next(iter(SAMPLES)))[0]).parent
TABLE_SAMPLES = ("people.csv", "adult_2k.csv", "ecoli.csv")

PEOPLE = "name,zip,age,sex,diagnosis\nUma Wilson,02138,21,male,healthy\nPriya Murphy,02143,36,female,diabetes\n"


def kind_of_file(path: Path) -> tuple[str, str]:
    head, complete = read_head(str(path))
    got = kind_of_text(head, complete=complete)
    return got.kind, got.reason


# ---------------------------------------------------------------------- the data we ship and use
def test_every_bundled_sample_is_told_right():
    fimi = sorted(SAMPLE_DIR.glob("*.dat.gz"))
    assert {p.name for p in fimi} >= {"mushroom.dat.gz", "chess.dat.gz", "led7.dat.gz", "bms-webview-1-5k.dat.gz"}
    for path in fimi:
        kind, why = kind_of_file(path)
        assert kind == "baskets" and why.startswith("FIMI lines"), (path.name, kind, why)
    for name in TABLE_SAMPLES:
        kind, why = kind_of_file(SAMPLE_DIR / name)
        assert kind == "table" and why.startswith("header row "), (name, why)
    # dense FIMI data has one field count on every line and is still baskets: ids, not names
    assert kind_of_file(SAMPLE_DIR / "chess.dat.gz") == ("baskets", "FIMI lines of 37 item ids each")
    assert kind_of_file(SAMPLE_DIR / "mushroom.dat.gz") == ("baskets", "FIMI lines of 23 item ids each")
    assert kind_of_file(SAMPLE_DIR / "people.csv") == (
        "table",
        "header row name,zip,age,sex,diagnosis; 5 fields in every row; column 'zip' holds numbers",
    )
    assert kind_of_file(SAMPLE_DIR / "adult_2k.csv")[1].startswith("header row sex;age;race;")


def test_every_shared_data_file_is_told_right(shared_data):
    baskets = sorted((shared_data / "fimi").glob("*.dat")) + sorted((shared_data / "lucs").glob("*.dat"))
    assert len(baskets) >= 18
    for path in baskets:
        assert kind_of_file(path)[0] == "baskets", path
    for path in sorted((shared_data / "adult").glob("adult*.csv")):
        assert kind_of_file(path)[0] == ("table" if "hierarchy" not in path.name else "unknown"), path
    # the UCI files have no header: decimals or values repeated within a row give them away
    for path in sorted((shared_data / "uci").glob("*.data")) + [shared_data / "text" / "CNAE-9.data"]:
        kind, why = kind_of_file(path)
        assert kind == "table" and why.startswith("no header, but "), (path, why)


# ---------------------------------------------------------------------- hand-made files
@pytest.mark.parametrize(
    "text, reason",
    [
        (PEOPLE, "header row name,zip,age,sex,diagnosis; 5 fields in every row; column 'zip' holds numbers"),
        (PEOPLE.replace(",", ";"), "header row name;zip;age;sex;diagnosis; 5 fields in every row; column 'zip' holds numbers"),
        (
            PEOPLE.replace(",", "\t"),
            "header row name<tab>zip<tab>age<tab>sex<tab>diagnosis; 5 fields in every row; column 'zip' holds numbers",
        ),
        ("\n\nname,age\n\nUma,21\n\n\nPriya,36\n\n", "header row name,age; 2 fields in every row; column 'age' holds numbers"),
        (",a,b\n0,x,1\n1,y,2\n", "header row ,a,b; 3 fields in every row; column 'b' holds numbers"),  # pandas' index column
        ("age\n23\n45\n67\n", "header row age; 1 field in every row; column 'age' holds numbers"),  # one column
        (
            'name,"home, town",age\n"Wilson, Uma",Boston,21\nPriya,"Salem, MA",36\n',
            "header row name,home, town,age; 3 fields in every row; column 'age' holds numbers",
        ),  # quoted cells
        (
            "sex,diagnosis\n" + "male,flu\nfemale,asthma\n" * 5,
            "header row sex,diagnosis; 2 fields in every row; column 'sex' repeats a few values of its own",
        ),
        (
            "name zip age\nUma 02138 21\nPriya 02143 36\n",
            "header row name zip age; 3 fields in every row; column 'zip' holds numbers",
        ),
        (
            "".join(f"{i},{i / 7:.3f},x{i}\n" for i in range(6)),
            "no header, but 3 fields in every row and column 2 holds decimal numbers (0.000, 0.143, 0.286, ...)",
        ),
        (
            "".join("1,0,0,2,0\n" for _ in range(6)),
            "no header, but 5 fields in every row and values repeat within 6 of 6 rows (a basket lists each item once)",
        ),
    ],
)
def test_tables(text, reason):
    got = kind_of_text(text)
    assert (got.kind, got.reason) == ("table", reason)
    assert kind_of_text(text.encode()).reason == reason  # bytes as read from a file


@pytest.mark.parametrize(
    "text",
    [
        "1 2 3\n4 5\n\n6\n",  # FIMI, with an empty transaction
        "".join(" ".join(str(j * 3 + i % 3) for j in range(10)) + " \n" for i in range(50)),  # dense FIMI, trailing spaces
        "citrus fruit,semi-finished bread,margarine,ready soups\ntropical fruit,yogurt,coffee\nwhole milk\n",
        '"a,b",c\nc,"d ""x"""\n"a,b"\n',  # quoted labels
        "milk\nbread\nmilk\nbeer\n",  # one item per basket
        "apple,zucchini\nbanana,milk\nbanana,bread\ncarrot,milk\n",  # fixed length, rare first basket, few rows
        "".join(",".join(f"a{j}={(i * 7 + j) % 3}" for j in range(5)) + "\n" for i in range(50)),  # dense categorical labels
        "1,3,9\n2,3\n4,5,9,11\n",  # basket CSV of integer ids
        "name,zip,age\n",  # a header alone: no rows below it to tell
        "",
    ],
)
def test_not_tables(text):
    assert kind_of_text(text).kind != "table"


def test_baskets_and_unknown():
    assert kind_of_text("1 2 3\n4 5\n") == kind_of_text(b"1 2 3\n4 5\n")
    assert kind_of_text("1 2 3\n4 5\n").reason == "FIMI lines of 2 to 3 item ids"
    assert kind_of_text('"a,b",c\nc,"d ""x"""\n"a,b"\n').reason == "lines of 1 to 2 items separated by ',' and no header row"
    # a header-like first line over ragged lines: a broken table or baskets; the reader decides
    assert kind_of_text("name,zip\nUma\nPriya,1,2,3\n").kind == "unknown"


def test_random_baskets_are_never_tables():
    """Basket files of every shape (fixed or varying length, uniform or Zipf-like items, sorted or
    not, integer or text labels, four separators): none is taken for a table."""
    rng = np.random.default_rng(35)
    for _ in range(150):
        n_items = int(rng.choice([10, 30, 100, 1000, 10000]))
        length = int(rng.integers(1, 6))
        fixed, zipf, ordered = rng.random(3) < (0.7, 0.5, 0.5)
        style = str(rng.choice(["{}", "item{}", "p{}", "prod_{}", "{}x", "label {}"]))
        sep = str(rng.choice([",", ";", "\t"] + ([" "] if " " not in style else [])))
        lines = []
        for _ in range(int(rng.choice([3, 8, 20, 50, 200]))):
            k = min(n_items, length if fixed else int(rng.integers(1, 2 * length + 1)))
            if zipf:
                ids = np.unique(np.minimum(rng.zipf(1.3, size=3 * k), n_items) - 1)[:k]
            else:
                ids = rng.choice(n_items, size=k, replace=False)
            labels = [style.format(i) for i in ids]
            lines.append(sep.join(sorted(labels) if ordered else labels))
        got = kind_of_text("\n".join(lines) + "\n")
        assert got.kind != "table", (got.reason, lines[:3])


def test_random_tables_are_tables():
    """Tables with a header, a numeric or a categorical column and names in the first column."""
    rng = np.random.default_rng(14)
    for _ in range(50):
        n = int(rng.integers(8, 300))
        sep = str(rng.choice([",", ";", "\t", "|"]))
        cols = {
            "name": [f"Person {i}" for i in range(n)],
            "sex": rng.choice(["female", "male"], n).tolist(),
            "diagnosis": rng.choice(["flu", "asthma", "healthy"], n).tolist(),
        }
        if rng.random() < 0.5:
            cols["age"] = rng.integers(18, 90, n).astype(str).tolist()
        lines = [sep.join(cols)] + [sep.join(c[i] for c in cols.values()) for i in range(n)]
        assert kind_of_text("\n".join(lines)).kind == "table"


def test_a_cut_off_head_loses_only_its_last_line():
    text = PEOPLE + "Ann Lee,0213"  # the head ends inside a row
    assert kind_of_text(text, complete=False).kind == "table"
    assert kind_of_text(text, complete=True).kind != "table"  # read as the whole file, the last row is short


def test_read_head_decompresses_and_cuts(tmp_path):
    gz = tmp_path / "people.csv.gz"
    gz.write_bytes(gzip.compress(PEOPLE.encode()))
    assert read_head(str(gz)) == (PEOPLE.encode(), True)
    big = tmp_path / "big.dat"
    big.write_bytes(b"1 2 3\n" * (HEAD_BYTES // 6 + 10))
    head, complete = read_head(str(big))
    assert len(head) == HEAD_BYTES and not complete
    glob = read_head(str(tmp_path / "*.csv.gz"))
    assert glob == (PEOPLE.encode(), True)
    assert read_head(str(tmp_path / "missing.csv")) is None
    assert read_head(str(tmp_path)) is None  # a folder


def test_parquet_schemas_and_manifests():
    items = pa.list_(pa.int32())
    assert kind_of_parquet_schema(["items", "label"], [items, pa.int64()]).kind == "baskets"
    got = kind_of_parquet_schema(["name", "age"], [pa.string(), pa.int64()])
    assert (got.kind, got.reason) == ("table", "columns name, age; no list column 'items' of items")
    assert kind_of_parquet_schema(["tags", "age"], [items, pa.int64()]).kind == "unknown"
    assert kind_of_manifest_format("ppdm-anonymized").kind == "table"
    assert kind_of_manifest_format("ppdm-condensed").kind == "table"
    assert kind_of_manifest_format("ppdm-transactions").kind == "baskets"
    assert kind_of_manifest_format("ppdm-sketches").kind == "unknown"


# ---------------------------------------------------------------------- the readers
def test_basket_readers_refuse_a_table(tmp_path):
    for name in TABLE_SAMPLES:
        with pytest.raises(DataFormatError, match="looks like a table, not baskets") as err:
            read(str(SAMPLE_DIR / name))
        assert "read_table" in str(err.value) and "check_kind=False" in str(err.value)
        cli = cli_message(err.value)
        assert "ppdm anonymize, ppdm access-control or ppdm condense" in cli and "--as-baskets" in cli
        assert "\n" not in cli
    gz = tmp_path / "people.csv.gz"
    gz.write_bytes(gzip.compress(PEOPLE.encode()))
    txt = tmp_path / "people.txt"  # FIMI by its name: the FIMI reader refuses it too
    txt.write_text(PEOPLE.replace(",", " ").replace("Uma Wilson", "Uma").replace("Priya Murphy", "Priya"))
    for path in (gz, txt):
        with pytest.raises(DataFormatError, match="looks like a table"):
            read(str(path))
    with pytest.raises(DataFormatError, match="looks like a table"):
        read(str(tmp_path / "*.csv.gz"))  # a glob: its first file


def test_the_override_reads_a_table_as_baskets(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("lemon,zucchini\n" + "apple,bread\nbanana,milk\n" * 5)  # the first basket looks like a header
    assert kind_of_text(path.read_text()).kind == "table"
    with pytest.raises(DataFormatError, match="looks like a table"):
        read(str(path))
    tx = read(str(path), check_kind=False)
    assert tx.n_transactions == 11 and sorted(tx.vocabulary.labels) == ["apple", "banana", "bread", "lemon", "milk", "zucchini"]
    with reading_as_baskets():
        assert read(str(path)).n_transactions == 11
    with pytest.raises(DataFormatError, match="looks like a table"):  # the override ends with its block
        read(str(path))


def test_basket_readers_refuse_parquet_tables(tmp_path):
    pq.write_table(pa.table({"name": ["a", "b"], "age": [1, 2]}), tmp_path / "t.parquet")
    with pytest.raises(DataFormatError, match=r"is a table, not baskets \(columns name, age; no list column 'items'") as err:
        read(str(tmp_path / "t.parquet"))
    assert "ppdm anonymize" in cli_message(err.value) and "--as-baskets" not in cli_message(err.value)
    folder = tmp_path / "release"  # a table release's manifest
    folder.mkdir()
    (folder / "_SUCCESS").write_text(json.dumps({"format": "ppdm-anonymized", "version": 2, "partitions": []}))
    with pytest.raises(DataFormatError, match="is a table, not baskets \\(a ppdm-anonymized dataset\\)"):
        read(str(folder))


def test_table_reader_refuses_baskets(tmp_path):
    for name in ("mushroom.dat.gz", "bms-webview-1-5k.dat.gz"):
        with pytest.raises(DataFormatError, match="holds baskets, not a table \\(FIMI lines of ") as err:
            read_table(str(SAMPLE_DIR / name))
        assert "ppdm mine, ppdm emask, ppdm sketch, ppdm km-anonymize or ppdm krimp" in cli_message(err.value)
    csv = tmp_path / "baskets.csv"
    csv.write_text("1,3,9\n2,3\n4,5,9,11\n")
    with pytest.raises(DataFormatError, match="holds baskets, not a table \\(lines of 2 to 4 items"):
        read_table(str(csv))
    txt = tmp_path / "baskets.txt"  # .txt is CSV to the table reader
    txt.write_text("1 3 9\n2 3\n")
    with pytest.raises(DataFormatError, match="holds baskets, not a table \\(FIMI lines"):
        read_table(str(txt))
    TransactionArray.from_lists([[1, 2], [2, 3]]).to_parquet(str(tmp_path / "tx"))
    with pytest.raises(DataFormatError, match="holds baskets, not a table \\(a ppdm-transactions dataset\\)"):
        read_table(str(tmp_path / "tx"))
    pq.write_table(pa.table({"items": [[1, 2], [3]], "label": [0, 1]}), tmp_path / "foreign.parquet")
    with pytest.raises(DataFormatError, match="holds baskets, not a table \\(a list column 'items' of items\\)"):
        read_table(str(tmp_path / "foreign.parquet"))
    # the tables themselves still read
    assert list(read_table(str(SAMPLE_DIR / "people.csv")).columns) == ["name", "zip", "age", "sex", "diagnosis"]

"""Typed table input: CSV columns are strings unless typed, nothing is lost, errors are named."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.sources import source_of
from ppdm_dask.data.tables import parse_dtypes, read_table, sniff_separator
from ppdm_dask.errors import DataFormatError, DatasetNotFoundError, InvalidParameter

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)

TEXT = "name;zip;age;code;flag\nann;02138;34;NA;yes\nbob;01002;;x;no\ncy;00501;71;;true\n"


@pytest.fixture
def people(tmp_path):
    p = tmp_path / "people.csv"
    p.write_text(TEXT)
    return p


def test_strings_by_default_leading_zeros_and_codes_survive(people):
    df = read_table(str(people))
    got = df.compute()
    assert got["zip"].tolist() == ["02138", "01002", "00501"]
    assert got["code"].tolist()[:2] == ["NA", "x"] and pd.isna(got["code"].iloc[2])  # only empty is missing
    assert got["age"].tolist()[0] == "34" and pd.isna(got["age"].iloc[1])
    assert all(str(t) != "int64" for t in df.dtypes)


def test_separator_sniffed(tmp_path, people):
    assert sniff_separator(str(people)) == ";"
    tsv = tmp_path / "t.csv"
    tsv.write_text(TEXT.replace(";", "\t"))
    assert sniff_separator(str(tsv)) == "\t"
    gz = tmp_path / "g.csv.gz"
    gz.write_bytes(gzip.compress(TEXT.replace(";", ",").encode()))
    assert read_table(str(gz)).compute()["zip"].tolist() == ["02138", "01002", "00501"]
    one = tmp_path / "one.csv"
    one.write_text("zip\n02138\n")
    assert read_table(str(one)).compute()["zip"].tolist() == ["02138"]


def test_declared_types_and_schema_file(tmp_path, people):
    got = read_table(str(people), dtype=["age=int", "flag=bool"]).compute()
    assert got["age"].tolist()[0] == 34 and pd.isna(got["age"].iloc[1]) and got["zip"].iloc[0] == "02138"
    assert got["flag"].tolist() == [True, False, True]
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": {"age": "float", "zip": "string"}}))
    got = read_table(str(people), schema=str(schema)).compute()
    assert got["age"].iloc[2] == 71.0 and got["zip"].iloc[2] == "00501"


def test_errors_name_column_value_and_flag(tmp_path, people):
    with pytest.raises(DataFormatError) as e:
        read_table(str(people), dtype={"name": "int"}).compute()
    assert "'name'" in str(e.value) and "ann" in str(e.value) and cli_message(e.value).endswith("(--dtype name=string)")
    with pytest.raises(DataFormatError, match="no column"):
        read_table(str(people), dtype=["height=int"])
    with pytest.raises(InvalidParameter, match="unknown type"):
        parse_dtypes(["age=decimal"])
    with pytest.raises(InvalidParameter, match="COLUMN=TYPE"):
        parse_dtypes(["age"])
    with pytest.raises(DatasetNotFoundError, match="nope.csv"):
        read_table(str(tmp_path / "nope.csv"))
    frac = tmp_path / "f.csv"
    frac.write_text("a\n1.5\n")
    with pytest.raises(DataFormatError, match="declared int"):
        read_table(str(frac), dtype=["a=int"]).compute()


def test_parquet_keeps_types_and_source_is_recorded(tmp_path, people):
    pq_path = tmp_path / "t.parquet"
    pd.DataFrame({"zip": ["02138"], "age": [34]}).to_parquet(pq_path)
    got = read_table(str(pq_path)).compute()
    assert got["zip"].iloc[0] == "02138" and int(got["age"].iloc[0]) == 34
    df = read_table(str(people))
    src = source_of(df)
    assert src is not None and src.format == "csv" and src.files == (str(people),)


def test_a_row_with_a_missing_field_is_refused_in_any_block(tmp_path):
    """pandas' C parser fills a short row with missing values; the table reader refuses it, naming
    the file, also when the row sits in a later block than the one dask samples for its meta."""
    rows = ["a,b,c"] + [f"{i},x,y" for i in range(5000)]
    rows[4000] = "4000,x"
    path = tmp_path / "ragged.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataFormatError, match=r"ragged\.csv: a row does not match the header: Expected 3 columns, got 2"):
        read_table(str(path), blocksize=10_000).compute()
    wide = tmp_path / "wide.csv"
    wide.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(DataFormatError, match=r"wide\.csv: a row does not match the header"):
        read_table(str(wide)).compute()
    # quoted separators and line breaks inside quotes are still one field; an empty field is missing
    ok = tmp_path / "ok.csv"
    ok.write_text('a,b,c\n1,"x,y",\n2,"line\nbreak",z\n')
    got = read_table(str(ok)).compute()
    assert got["b"].tolist() == ["x,y", "line\nbreak"] and pd.isna(got["c"].iloc[0]) and got["c"].iloc[1] == "z"


def test_a_duplicate_column_name_or_a_folder_is_refused(tmp_path):
    dup = tmp_path / "dup.csv"
    dup.write_text("a;b;a\n1;2;3\n")
    with pytest.raises(DataFormatError, match=r"dup\.csv: the header names column\(s\) \['a'\] more than once"):
        read_table(str(dup))
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    with pytest.raises(DataFormatError, match=r"folder\.csv is a folder, not a CSV file"):
        read_table(str(folder))
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"a,b\n" + b"".join(b"%d,x\n" % i for i in range(3000)) + b"1,caf\xe9\n")
    with pytest.raises(DataFormatError, match=r"latin\.csv: cannot read as CSV"):
        read_table(str(latin), blocksize=5_000).compute()


def test_a_csv_without_rows_is_refused_and_a_header_only_block_reads_as_no_rows(tmp_path):
    header_only = tmp_path / "header_only.csv"
    header_only.write_text("a,b,c")  # no newline either
    with pytest.raises(DataFormatError, match=r"header_only\.csv has a header but no rows"):
        read_table(str(header_only))
    empty = tmp_path / "empty.csv"
    empty.write_text("\n")
    with pytest.raises(DataFormatError, match=r"empty\.csv is empty"):
        read_table(str(empty))
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.csv").write_text("a,b\n1,2\n")
    (tmp_path / "parts" / "b.csv").write_text("a,b\n")  # a later file of a glob: zero rows, not an error
    got = read_table(str(tmp_path / "parts" / "*.csv")).compute()
    assert got.to_dict("records") == [{"a": "1", "b": "2"}]

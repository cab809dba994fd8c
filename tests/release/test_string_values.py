"""Text that looks like a number stays text, whatever the installed pandas / pyarrow.

pandas < 3 (and pandas 3 with pyarrow < 25) read a CSV with its pyarrow engine by inferring every
column's type and casting to ``str`` afterwards: ``02138`` came back as ``2138`` (and as ``2138.0``
in a column with an empty field, the empty field as the text ``nan``), so Mondrian published
``2138`` and the demo failed on the zip hierarchy. These tests pin the values from the CSV to the
released files — for every family that publishes text: the four anonymization methods, access
control, k^m-anonymity and EMASK (item labels), sketches (a text label column); condensation
publishes numbers and the KRIMP generator integer item ids — and run on the oldest supported versions
as well as on the newest (``pytest -m oldest``, the second job of ``.ci/run``). The expected
values come from Python's ``csv`` module and the released files are decoded with pyarrow alone,
so neither side depends on pandas' type inference.
"""

from __future__ import annotations

import csv
import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ppdm_dask import Key, read, read_table, verify
from ppdm_dask.anonymity import AccessControlAnonymizer, Hierarchy, KAnonymizer, KmAnonymizer
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.emask import Distorter
from ppdm_dask.sketch import DeltaAnonymizer

pytestmark = pytest.mark.oldest

#: codes a type-inferring reader would turn into numbers, booleans or missing values
CODES = ["02138", "NA", "00501", "007", "1e3", "TRUE", "nan", "-0", "0x1F", "N/A"]


def _csv_rows(path: Path, sep: str = ",") -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV as Python's csv module reads them (the oracle)."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter=sep))
    return rows[0], rows[1:]


def _published(folder: Path) -> dict[str, list]:
    """Every column of a release's part files, decoded by pyarrow (row order as written)."""
    out: dict[str, list] = {}
    for part in sorted(folder.glob("part-*.parquet")):
        for name, values in pq.read_table(part).to_pydict().items():
            out.setdefault(name, []).extend(values)
    return out


def _vocabulary(folder: Path) -> list:
    return pq.read_table(folder / "_vocabulary.parquet").column("label").to_pylist()


@pytest.fixture(scope="module")
def people(tmp_path_factory) -> Path:
    """The people sample with one more column, ``code``: text that type inference would change."""
    header, rows = _csv_rows(Path(sample_path("people")))
    path = tmp_path_factory.mktemp("people") / "people_codes.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([*header, "code"])
        w.writerows([*r, CODES[i % len(CODES)]] for i, r in enumerate(rows))
    return path


@pytest.fixture(scope="module")
def hierarchies() -> dict[str, Hierarchy]:
    return {
        "zip": Hierarchy.from_csv(str(sample_path("people-hierarchy-zip")), name="zip"),
        "sex": Hierarchy.from_csv(str(sample_path("people-hierarchy-sex")), name="sex"),
    }


def _nodes(path: Path) -> set[str]:
    """Every label of a hierarchy file (any level), as text."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {cell for row in csv.reader(fh, delimiter=";") for cell in row}


# ----------------------------------------------------------------------------- reading tables


def test_read_table_keeps_text_in_every_block_and_format(tmp_path):
    rng = np.random.default_rng(0)
    zips = ["02138", "00501", "01002", ""]  # an empty field beside the zips: pandas 2 gave '2138.0' and 'nan'
    lines = [[zips[i % 4], CODES[i % len(CODES)], str(i)] for i in rng.permutation(400)]
    path = tmp_path / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["zip", "code", "n"], *lines])
    header, want = _csv_rows(path)
    expect = {c: [r[j] or None for r in want] for j, c in enumerate(header)}  # only an empty field is missing
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    tsv = tmp_path / "t.tsv"
    tsv.write_text(path.read_text().replace(",", "\t"))
    for url, blocksize in ((path, "64MB"), (path, 500), (gz, None), (tsv, 700)):  # one block, many blocks, gzip, tabs
        df = read_table(str(url), blocksize=blocksize)
        got = df.compute()
        assert all(str(t) == "string" for t in df.dtypes) and all(str(t) == "string" for t in got.dtypes), (url, df.dtypes)
        for c in header:
            assert [None if pd.isna(v) else v for v in got[c].tolist()] == expect[c], (url, blocksize, c)
    # typed columns parse from the text, the others stay text
    typed = read_table(str(path), dtype={"n": "int"}, blocksize=500).compute()
    assert typed["n"].tolist() == [int(r[2]) for r in want] and typed["zip"].iloc[0] == want[0][0]
    # Parquet keeps what it was given
    pq_path = tmp_path / "t.parquet"
    read_table(str(path)).compute().to_parquet(pq_path)
    back = pq.read_table(pq_path).to_pydict()
    assert back["zip"] == expect["zip"] and back["code"] == expect["code"]
    assert read_table(str(pq_path)).compute()["code"].tolist() == expect["code"]


# ----------------------------------------------------------------------------- relational releases


@pytest.mark.parametrize("method", ["lattice", "datafly", "mondrian", "cluster"])
def test_every_anonymization_method_publishes_the_text_it_read(tmp_path, people, hierarchies, method):
    table = read_table(str(people))
    anonymizer = KAnonymizer(
        ["sex", "zip"],
        k=5,
        l=2,
        sensitive="diagnosis",
        identifiers=["name"],
        insensitive=["age", "code"],
        method=method,
        hierarchies=hierarchies,
        key=Key(7),
    )
    release = anonymizer.fit_release(table)
    release.write(str(tmp_path / "rel"))
    assert verify(str(tmp_path / "rel")).ok
    _check_relational(tmp_path / "rel", people)


def test_access_control_publishes_the_text_it_read(tmp_path, people, hierarchies):
    # a permission naming zips as text: '02138' must be a value of the column read
    perms = [{"role": "clinic", "bound": 1, "where": {"zip": ["02138", "02139"]}}]
    anonymizer = AccessControlAnonymizer(
        perms,
        ["sex", "zip"],
        k=5,
        sensitive="diagnosis",
        identifiers=["name"],
        insensitive=["age", "code"],
        hierarchies=hierarchies,
        key=Key(7),
    )
    anonymizer.fit_release(read_table(str(people))).write(str(tmp_path / "rel"))
    assert verify(str(tmp_path / "rel")).ok
    _check_relational(tmp_path / "rel", people)


def _check_relational(folder: Path, people: Path) -> None:
    header, rows = _csv_rows(people)
    col = {c: [r[j] for r in rows] for j, c in enumerate(header)}
    got = _published(folder)
    assert "name" not in got and len(got["code"]) >= 0.9 * len(rows)  # clustering may suppress a few records
    for c in ("code", "age", "diagnosis"):  # published as read (of the records not suppressed), in another order
        assert Counter(got[c]) <= Counter(col[c]), c
    assert Counter(got["code"]) == Counter(col["code"]) or len(got["code"]) < len(rows)
    # generalised zips are nodes of the hierarchy, or sets of them (access control: "07302|08540")
    nodes = _nodes(Path(sample_path("people-hierarchy-zip")))
    shown = {part for v in got["zip"] for part in v.split("|")}
    assert shown <= nodes and "02138" in nodes, sorted(shown - nodes)[:5]
    # one Arrow type for every text column, whatever the pandas ("string" was python-backed before
    # pandas 3: the generalised labels were written as string, the columns passed through as large_string)
    for part in folder.glob("part-*.parquet"):
        assert {str(t) for t in pq.read_schema(part).types} == {"large_string"}, pq.read_schema(part)


# ----------------------------------------------------------------------------- basket releases


def _baskets(tmp_path: Path, n: int = 400) -> tuple[Path, list[list[str]]]:
    """A basket CSV whose labels include codes that look like numbers; '02138' in most baskets."""
    rng = np.random.default_rng(1)
    other = [c for c in CODES if c != "02138"] + ["milk", "bread"]
    rows = []
    for i in range(n):
        picked = rng.choice(len(other), size=int(rng.integers(1, 4)), replace=False)
        rows.append((["02138"] if i % 5 else []) + [other[j] for j in sorted(picked)])
    path = tmp_path / "baskets.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path, rows


def test_km_anonymity_publishes_item_labels_as_read(tmp_path):
    path, rows = _baskets(tmp_path)
    tx = read(str(path))
    labels = {x for r in rows for x in r}
    assert sorted(tx.vocabulary.labels.tolist()) == sorted(labels)
    KmAnonymizer(k=5, m=2, fan_out=3, key=Key(7)).fit_release(tx).write(str(tmp_path / "km"))
    assert verify(str(tmp_path / "km")).ok
    published = _vocabulary(tmp_path / "km")
    assert "02138" in published and "2138" not in published and all(isinstance(v, str) for v in published)


def test_emask_publishes_item_labels_as_read(tmp_path):
    path, rows = _baskets(tmp_path)
    tx = read(str(path))
    Distorter(0.9, 0.9, key=Key(7), allow_weak=True).fit_transform(tx).write(str(tmp_path / "em"))
    assert verify(str(tmp_path / "em")).ok
    assert sorted(_vocabulary(tmp_path / "em")) == sorted({x for r in rows for x in r})


def test_sketch_publishes_a_text_label_column_as_given(tmp_path):
    rng = np.random.default_rng(3)
    n = 120
    label = np.array([CODES[i % len(CODES)] for i in range(n)], dtype=object)
    lists = [[int(j) for j in np.flatnonzero(rng.random(20) < 0.3)] or [0] for _ in range(n)]
    from ppdm_dask import TransactionArray

    tx = TransactionArray.from_lists(lists, npartitions=3, columns={"label": label})
    DeltaAnonymizer(delta=0.5, m_max=8, key=Key(7)).fit_transform(tx).write(str(tmp_path / "sk"))
    assert verify(str(tmp_path / "sk")).ok
    got = _published(tmp_path / "sk")["label"]
    assert Counter(got) <= Counter(label.tolist()) and "02138" in got

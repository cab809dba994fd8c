"""Reading checks what it reads: a dataset that does not match its manifest is one clear error
naming the broken file, never a silent result."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ppdm_dask import TransactionArray, read
from ppdm_dask.errors import CorruptDatasetError, DatasetNotFoundError
from ppdm_dask.mining import apriori


@pytest.fixture
def dataset(tmp_path):
    rng = np.random.default_rng(1)
    rows = [sorted(rng.choice(30, size=int(rng.integers(1, 6)), replace=False).tolist()) for _ in range(3000)]
    tx = TransactionArray.from_lists(rows).repartition(npartitions=3)
    out = tmp_path / "d"
    m = tx.to_parquet(str(out))
    assert all(len(p["sha256"]) == 64 for p in m["partitions"])
    return out


def test_intact_dataset_reads_and_verifies(dataset):
    assert read(str(dataset), verify=True).n_transactions == 3000
    assert len(apriori(read(str(dataset), verify=True), 0.05, progress=False)) > 0


def test_swapped_parts_are_refused(dataset):
    a, b = dataset / "part-00000.parquet", dataset / "part-00001.parquet"
    tmp = dataset / "x"
    shutil.move(a, tmp)
    shutil.move(b, a)
    shutil.move(tmp, b)
    with pytest.raises(CorruptDatasetError, match="part-0000[01].parquet"):
        apriori(read(str(dataset)), 0.05, progress=False)


def test_swapped_parts_of_equal_size_are_caught_by_checksums(dataset, tmp_path):
    # two parts with identical sizes: only the checksum tells them apart
    other = tmp_path / "e"
    TransactionArray.from_lists([[1, 2], [3, 4]] * 10 + [[5, 6], [7, 8]] * 10).repartition(npartitions=2).to_parquet(str(other))
    m = json.loads((other / "_SUCCESS").read_text())
    if m["partitions"][0]["bytes"] != m["partitions"][1]["bytes"]:
        pytest.fail("the fixture needs two parts of the same size")
    a, b = other / "part-00000.parquet", other / "part-00001.parquet"
    da_, db_ = a.read_bytes(), b.read_bytes()
    a.write_bytes(db_)
    b.write_bytes(da_)
    assert read(str(other)).n_transactions == 40  # sizes and rows agree: the cheap checks pass
    with pytest.raises(CorruptDatasetError, match="checksum"):
        read(str(other), verify=True).compute()


def test_wrong_row_counts_in_the_manifest(dataset):
    m = json.loads((dataset / "_SUCCESS").read_text())
    m["partitions"][1]["rows"] += 5
    (dataset / "_SUCCESS").write_text(json.dumps(m))
    # the total no longer matches the parts: refused when the manifest is read
    with pytest.raises(CorruptDatasetError, match="n_transactions = .* but its part files hold"):
        read(str(dataset))
    m["n_transactions"] += 5  # a consistent manifest, a wrong part entry: refused as the part is read
    (dataset / "_SUCCESS").write_text(json.dumps(m))
    with pytest.raises(CorruptDatasetError, match="part-00001.parquet holds .* rows, the manifest says"):
        read(str(dataset)).item_supports(progress=False)


def test_missing_and_truncated_parts_name_the_file(dataset):
    (dataset / "part-00002.parquet").unlink()
    with pytest.raises(CorruptDatasetError, match="part-00002.parquet listed in the manifest is missing"):
        read(str(dataset))
    m = json.loads((dataset / "_SUCCESS").read_text())
    m["partitions"][0].pop("bytes")  # an old manifest without sizes: the reader still names the file
    m["partitions"] = m["partitions"][:2]
    m["n_transactions"] = sum(p["rows"] for p in m["partitions"])
    (dataset / "_SUCCESS").write_text(json.dumps(m))
    p = dataset / "part-00000.parquet"
    p.write_bytes(p.read_bytes()[:-40])
    with pytest.raises(CorruptDatasetError, match="part-00000.parquet is unreadable"):
        read(str(dataset)).compute()


def test_missing_dataset_names_the_path(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="nowhere"):
        read(str(tmp_path / "nowhere"))

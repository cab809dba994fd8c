"""TransactionArray: constructors, statistics, partition invariance, schedulers, I/O round trips."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask import TransactionArray, read
from ppdm_dask.errors import (
    CorruptDatasetError,
    DataFormatError,
    DatasetExistsError,
    DatasetNotFoundError,
    DuplicateItemsWarning,
    IncompleteDatasetError,
    InvalidParameter,
    ItemIdError,
)

from ..conftest import FIMI_FILES

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


def _lines(path):
    with open(path) as fh:
        return [[int(x) for x in line.split()] for line in fh]


def _brute_supports(rows):
    c = Counter(x for r in rows for x in r)
    return c


@pytest.mark.parametrize("name", FIMI_FILES)
def test_fimi_parquet_fimi_roundtrip_and_supports(shared_data, tmp_path, name):
    src = shared_data / "fimi" / name
    rows = _lines(src)
    tx = read(str(src), blocksize="512KiB")
    assert tx.n_transactions == len(rows)
    pq_url = str(tmp_path / "data.parquet")
    tx.to_parquet(pq_url)
    back = read(pq_url)
    out = tmp_path / "out.dat"
    back.to_fimi(str(out))
    assert _lines(out) == rows  # exact, including item order and empty lines
    supports = back.item_supports()
    brute = _brute_supports(rows)
    labels = back.vocabulary.labels
    assert len(labels) == len(brute)
    assert {int(l): int(s) for l, s in zip(labels, supports)} == dict(brute)


def test_results_do_not_depend_on_partitions(shared_data):
    tx = read(str(shared_data / "fimi" / "mushroom.dat"))
    ref_m = tx.compute()
    ref_s = tx.item_supports()
    ref_d = tx.describe()
    for n in (1, 7, 64):
        r = tx.repartition(npartitions=n)
        assert r.n_partitions == n
        assert (r.compute() != ref_m).nnz == 0
        assert np.array_equal(r.item_supports(), ref_s)
        d = r.describe()
        assert d["length_histogram"] == ref_d["length_histogram"] and d["nnz"] == ref_d["nnz"]


@pytest.mark.parametrize("scheduler", ["sync", "threads", "processes"])
def test_results_do_not_depend_on_local_scheduler(shared_data, scheduler):
    tx = read(str(shared_data / "fimi" / "chess.dat")).repartition(npartitions=7)
    ref = tx.item_supports(scheduler="sync")
    with dask.config.set(scheduler=scheduler):
        assert np.array_equal(tx.item_supports(), ref)
        assert tx.describe()["nnz"] == 118_252


@pytest.mark.cluster
def test_on_two_worker_local_cluster(shared_data, tmp_path, on_cluster):
    src = str(shared_data / "fimi" / "BMS-WebView-1.dat")
    tx = read(src, blocksize="200KiB")
    assert tx.n_partitions > 2
    supports = tx.item_supports()
    tx.to_parquet(str(tmp_path / "bms"))
    back = read(str(tmp_path / "bms")).repartition(npartitions=64)
    assert np.array_equal(back.item_supports(), supports)
    assert back.describe()["nnz"] == 149_639
    # work really ran on both worker processes
    assert len(on_cluster.scheduler_info()["workers"]) == 2
    with dask.config.set(scheduler="sync"):
        assert np.array_equal(read(src).item_supports(), supports)


def test_empty_partitions_and_empty_transactions(tmp_path):
    tx = TransactionArray.from_lists([[1, 2], [], [], [3]], npartitions=1)
    tx = tx._rechunk((1, 0, 2, 0, 1))
    assert tx.partition_rows == (1, 0, 2, 0, 1)
    assert tx.item_supports().tolist() == [1, 1, 1]
    d = tx.describe()
    assert d["empty_transactions"] == 2 and d["n_partitions"] == 5
    tx.to_parquet(str(tmp_path / "e"))
    back = read(str(tmp_path / "e"))
    assert back.partition_rows == (1, 0, 2, 0, 1)
    assert back.to_lists() == [[1, 2], [], [], [3]]
    back.to_fimi(str(tmp_path / "e.dat"))
    assert (tmp_path / "e.dat").read_text() == "1 2\n\n\n3\n"
    empty = TransactionArray.from_lists([])
    assert empty.n_transactions == 0 and empty.describe()["nnz"] == 0


def test_constructors_agree():
    rows = [[0, 2], [1], [], [0, 1, 2]]
    dense = np.zeros((4, 3), dtype=np.int64)
    for i, r in enumerate(rows):
        dense[i, r] = 1
    import pandas as pd
    import sparse

    variants = {
        "lists": TransactionArray.from_lists(rows, npartitions=2),
        "scipy": TransactionArray.from_scipy(sp.csr_matrix(dense), npartitions=3),
        "pydata": TransactionArray.from_scipy(sparse.COO.from_numpy(dense)),
        "pandas": TransactionArray.from_pandas(pd.Series(rows)),
        "arrow": TransactionArray.from_arrow(pa.array(rows, type=pa.list_(pa.int32()))),
    }
    for name, tx in variants.items():
        assert tx.to_lists() == rows, name
        assert tx.n_items == 3, name
        assert tx.compute().indices.dtype == np.int32 and tx.compute().data.dtype == np.int32
    g = variants["lists"].to_sparse()
    assert np.array_equal(g.compute().todense(), dense)


def test_string_labels_and_vocabulary(tmp_path):
    tx = TransactionArray.from_lists([["milk", "bread"], ["beer"], []])
    assert tx.vocabulary.labels.tolist() == ["beer", "bread", "milk"]
    assert tx.to_lists() == [["bread", "milk"], ["beer"], []]
    tx.to_parquet(str(tmp_path / "s"))
    assert read(str(tmp_path / "s")).to_lists() == [["bread", "milk"], ["beer"], []]
    from ppdm_dask.io import write

    write(tx, str(tmp_path / "s.csv"))
    assert read(str(tmp_path / "s.csv")).to_lists() == [["bread", "milk"], ["beer"], []]
    with pytest.raises(DataFormatError, match="integer item labels"):
        tx.to_fimi(str(tmp_path / "s.dat"))


def test_duplicates_removed_with_warning():
    with pytest.warns(DuplicateItemsWarning, match="1 duplicate"):
        tx = TransactionArray.from_lists([[3, 1, 3], [2]])
    assert tx.to_lists() == [[1, 3], [2]]


def test_bad_input_errors(tmp_path):
    with pytest.raises(ItemIdError, match="negative"):
        TransactionArray.from_lists([[1, -2]])
    with pytest.raises(DataFormatError, match="NaN"):
        TransactionArray.from_lists([[1.0, float("nan")]])
    with pytest.raises(DataFormatError, match="non-integer"):
        TransactionArray.from_lists([[1.5]])
    with pytest.raises(DataFormatError, match="NaN"):
        TransactionArray.from_scipy(sp.csr_matrix(np.array([[np.nan, 1.0]])))
    bad = tmp_path / "bad.dat"
    bad.write_text("1 2\n3 x\n")
    with pytest.raises(DataFormatError, match="non-integer"):
        read(str(bad))
    with pytest.raises(DatasetNotFoundError):
        read(str(tmp_path / "missing.dat"))
    with pytest.raises(DatasetNotFoundError):
        read(str(tmp_path / "missing"))
    with pytest.raises(InvalidParameter):
        TransactionArray.from_lists([[1]]).repartition(npartitions=0)
    # a Parquet file without a list column: a table, and the error says which commands read tables
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "flat.parquet")
    with pytest.raises(DataFormatError, match="table, not baskets .*no list column 'items'"):
        read(str(tmp_path / "flat.parquet"))
    pq.write_table(pa.table({"items": [1, 2]}), tmp_path / "scalar.parquet")
    with pytest.raises(DataFormatError, match="expected a list"):
        read(str(tmp_path / "scalar.parquet"))
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataFormatError, match="unreadable"):
        read(str(tmp_path / "junk.parquet"))


def test_out_of_range_ids_in_ppdm_parquet_are_rejected(tmp_path):
    tx = TransactionArray.from_lists([[0, 1], [2]])
    tx.to_parquet(str(tmp_path / "d"))
    # corrupt one part: an id beyond the vocabulary
    part = tmp_path / "d" / "part-00000.parquet"
    table = pq.read_table(part)
    bad = pa.table({"items": pa.array([[0, 1], [7]], type=pa.list_(pa.int32()))}).replace_schema_metadata(table.schema.metadata)
    pq.write_table(bad, part)
    with pytest.raises(CorruptDatasetError, match="part-00000.parquet has .* bytes"):
        read(str(tmp_path / "d")).compute()
    # a manifest forged to match the file: the ids are still range-checked while reading
    manifest = json.loads((tmp_path / "d" / "_SUCCESS").read_text())
    manifest["partitions"][0].update(bytes=part.stat().st_size, sha256=hashlib.sha256(part.read_bytes()).hexdigest())
    (tmp_path / "d" / "_SUCCESS").write_text(json.dumps(manifest))
    with pytest.raises(ItemIdError, match="outside"):
        read(str(tmp_path / "d")).compute()


def test_foreign_parquet_with_labels(tmp_path):
    pq.write_table(pa.table({"items": pa.array([[10, 5], [5], [], [99, 10]])}), tmp_path / "f.parquet", row_group_size=2)
    tx = read(str(tmp_path / "f.parquet"))
    assert tx.n_partitions == 2  # one per row group
    assert tx.to_lists() == [[5, 10], [5], [], [10, 99]]
    assert tx.vocabulary.labels.tolist() == [5, 10, 99]
    pq.write_table(pa.table({"items": pa.array([[1, None]])}), tmp_path / "n.parquet")
    with pytest.raises(DataFormatError, match="null item"):
        read(str(tmp_path / "n.parquet"))
    pq.write_table(pa.table({"items": pa.array([[1], None])}), tmp_path / "n2.parquet")
    with pytest.raises(DataFormatError, match="null"):
        read(str(tmp_path / "n2.parquet"))


def test_columns_weights_and_metadata_roundtrip(tmp_path):
    m = sp.csr_array(np.array([[0, 2.5, 0], [1, 0, 3], [0, 0, 0]]))
    tx = TransactionArray.from_scipy(
        m, columns={"label": np.array([0, 1, 1]), "record_id": np.array([7, 8, 9])}, metadata={"p": 0.4, "q": 0.98}, npartitions=2
    )
    tx.to_parquet(str(tmp_path / "w"))
    back = read(str(tmp_path / "w"))
    assert back.metadata == {"p": 0.4, "q": 0.98}
    assert back.columns["label"].compute().tolist() == [0, 1, 1]
    assert back.columns["record_id"].compute().tolist() == [7, 8, 9]
    w = sp.vstack(dask.compute(*back.weights.to_delayed().ravel()))
    assert np.allclose(w.toarray(), m.toarray())
    # the metadata is in every Parquet footer, and nothing secret may go there
    md = pq.read_schema(tmp_path / "w" / "part-00000.parquet").metadata[b"ppdm"]
    assert b'"q": 0.98' in md
    from ppdm_dask.random import Key

    for bad in ({"key": 1}, {"x": Key(5)}, {"seed": 3}):
        tx.metadata = bad
        with pytest.raises(InvalidParameter):
            tx.to_parquet(str(tmp_path / "secret"))
        assert not (tmp_path / "secret").exists()


def test_write_refuses_existing_and_overwrites_on_request(tmp_path):
    tx = TransactionArray.from_lists([[1]])
    tx.to_parquet(str(tmp_path / "x"))
    with pytest.raises(DatasetExistsError):
        tx.to_parquet(str(tmp_path / "x"))
    TransactionArray.from_lists([[2], [3]]).to_parquet(str(tmp_path / "x"), overwrite=True)
    assert read(str(tmp_path / "x")).to_lists() == [[2], [3]]


def _explode(block, block_id=None):
    if block_id[0] == 2:
        raise RuntimeError("injected failure in partition 2")
    return block


def test_failed_write_leaves_no_readable_dataset(tmp_path):
    tx = TransactionArray.from_lists([[i % 5, 5 + i % 3] for i in range(100)], npartitions=4)
    broken = tx._replace(blocks=tx.blocks.map_blocks(_explode, dtype=np.int32, meta=tx.blocks._meta))
    target = tmp_path / "release"
    with pytest.raises(RuntimeError, match="injected"):
        broken.to_parquet(str(target))
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # temporary files cleaned up
    with pytest.raises(DatasetNotFoundError):
        read(str(target))
    with pytest.raises(RuntimeError, match="injected"):
        broken.to_fimi(str(tmp_path / "release.dat"))
    assert list(tmp_path.iterdir()) == []


def test_uncommitted_dataset_is_refused(tmp_path):
    tx = TransactionArray.from_lists([[1], [2]])
    tx.to_parquet(str(tmp_path / "d"))
    (tmp_path / "d" / "_SUCCESS").unlink()
    with pytest.raises(IncompleteDatasetError, match="uncommitted"):
        read(str(tmp_path / "d"))


def test_repartition_by_bytes(shared_data):
    tx = read(str(shared_data / "fimi" / "T10I4D100K.dat"))
    r = tx.repartition(1_000_000)
    # CSR bytes = 8 per item occurrence (index + data) + 4 per row: 8,481,824 bytes -> 9 blocks
    assert r.n_partitions == 9
    assert sum(r.partition_rows) == tx.n_transactions
    nnz = r._block_nnz()
    sizes = 8 * nnz + 4 * np.asarray(r.partition_rows)
    assert sizes.max() <= 1.05 * 8_481_824 / 9
    assert np.array_equal(r.item_supports(), tx.item_supports())


def test_describe_and_density():
    tx = TransactionArray.from_lists([[0, 1], [1], [], [0, 1, 2]], npartitions=2)
    d = tx.describe()
    assert d["nnz"] == 6 and d["n_items"] == 3
    assert d["density"] == pytest.approx(6 / 12) and tx.density == pytest.approx(0.5)
    assert d["length_histogram"] == {0: 1, 1: 1, 2: 1, 3: 1}
    assert tx.nnz == 6


@given(st.lists(st.lists(st.integers(0, 40), max_size=12), max_size=60), st.integers(1, 9))
@settings(max_examples=40, deadline=None)
def test_property_roundtrip_and_supports(tmp_path_factory, rows, nparts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicateItemsWarning)
        tx = TransactionArray.from_lists(rows, npartitions=nparts)
    canon = [sorted(set(r)) for r in rows]
    assert tx.to_lists() == canon
    brute = Counter(x for r in canon for x in r)
    assert {int(l): int(s) for l, s in zip(tx.vocabulary.labels, tx.item_supports())} == dict(brute)
    d = tmp_path_factory.mktemp("h")
    tx.to_parquet(str(d / "p"))
    assert read(str(d / "p")).to_lists() == canon

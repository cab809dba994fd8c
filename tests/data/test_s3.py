"""Parquet and FIMI on s3:// through fsspec/s3fs against a local moto server."""

from __future__ import annotations

import numpy as np
import pytest

from ppdm_dask import TransactionArray, read
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.errors import DatasetExistsError, DatasetNotFoundError, IncompleteDatasetError

pytestmark = pytest.mark.s3


def _fs(s3):
    import s3fs

    return s3fs.S3FileSystem(**s3["storage_options"])


def test_parquet_roundtrip_on_s3(s3):
    opts = s3["storage_options"]
    tx = read(str(sample_path("mushroom"))).repartition(npartitions=5)
    url = f"{s3['prefix']}/mushroom"
    tx.to_parquet(url, storage_options=opts)
    listing = sorted(p.rsplit("/", 1)[-1] for p in _fs(s3).ls(url))
    assert listing == ["_SUCCESS", "_vocabulary.parquet"] + [f"part-{i:05d}.parquet" for i in range(5)]
    back = read(url, storage_options=opts)
    assert back.partition_rows == tx.partition_rows
    assert (back.compute() != tx.compute()).nnz == 0
    with pytest.raises(DatasetExistsError):
        tx.to_parquet(url, storage_options=opts)
    # FIMI text on S3 as well
    tx.to_fimi(f"{s3['prefix']}/m.dat", storage_options=opts)
    again = read(f"{s3['prefix']}/m.dat", storage_options=opts)
    assert np.array_equal(again.item_supports(), tx.item_supports())


def _explode(block, block_id=None):
    if block_id[0] == 1:
        raise RuntimeError("injected failure")
    return block


def test_failed_write_on_s3_leaves_nothing_readable(s3):
    opts = s3["storage_options"]
    tx = TransactionArray.from_lists([[i % 7] for i in range(50)], npartitions=3)
    broken = tx._replace(blocks=tx.blocks.map_blocks(_explode, dtype=np.int32, meta=tx.blocks._meta))
    url = f"{s3['prefix']}/broken"
    with pytest.raises(RuntimeError, match="injected"):
        broken.to_parquet(url, storage_options=opts)
    with pytest.raises((DatasetNotFoundError, IncompleteDatasetError)):
        read(url, storage_options=opts)
    fs = _fs(s3)
    fs.invalidate_cache()
    assert not fs.exists(s3["prefix"]) or fs.find(s3["prefix"]) == []  # temporary objects removed


@pytest.mark.cluster
def test_s3_on_two_worker_cluster(s3, on_cluster):
    opts = s3["storage_options"]
    tx = read(str(sample_path("bms-webview-1-5k"))).repartition(npartitions=6)
    ref = tx.item_supports(scheduler="sync")
    url = f"{s3['prefix']}/bms"
    tx.to_parquet(url, storage_options=opts)  # written by the worker processes
    back = read(url, storage_options=opts)
    assert np.array_equal(back.item_supports(), ref)  # read by the worker processes
    assert len(on_cluster.scheduler_info()["workers"]) == 2


def test_cli_generate_and_info_on_s3(s3):
    import json

    from click.testing import CliRunner

    from ppdm_dask.cli import cli

    so = s3["storage_options"]
    opts = [
        "--storage-option",
        f"endpoint_url={so['endpoint_url']}",
        "--storage-option",
        "key=testing",
        "--storage-option",
        "secret=testing",
    ]
    url = f"{s3['prefix']}/quest"
    runner = CliRunner()
    r = runner.invoke(cli, ["--scheduler", "threads", "--no-progress", *opts, "generate", "quest", "T10.I4.D20K.N1K", url])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["--scheduler", "threads", "--no-progress", "--json", *opts, "info", url])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["n_transactions"] == 20_000 and d["n_items"] == 1000
    assert abs(d["mean_length"] - 10) < 0.2


def test_two_writers_to_one_prefix_exactly_one_commits(s3):
    """Object stores: the commit runs under a lock object (conditional put) and re-checks the
    destination, so a writer whose destination appeared meanwhile fails with "already exists"."""
    from ppdm_dask.data import commit
    from ppdm_dask.data.parquet import read_parquet, write_parquet
    from ppdm_dask.errors import DatasetExistsError

    opts = s3["storage_options"]
    url = f"{s3['prefix']}/race"
    tx = TransactionArray.from_lists([[1, 2], [2, 3]] * 10)
    write_parquet(TransactionArray.from_lists([[7]] * 5), f"{s3['prefix']}/theirs", storage_options=opts)
    real = commit._commit_remote

    def other_commits_first(fs, tmp, path, u, **kw):  # the other job's dataset lands at the destination now
        fs.copy(path.rsplit("/", 1)[0] + "/theirs", path, recursive=True)
        return real(fs, tmp, path, u, **kw)

    commit._commit_remote = other_commits_first
    try:
        with pytest.raises(DatasetExistsError, match="already exists"):
            write_parquet(tx, url, storage_options=opts)
    finally:
        commit._commit_remote = real
    assert read_parquet(url, storage_options=opts).n_transactions == 5
    import fsspec

    fs, _ = fsspec.core.url_to_fs(url, **opts)
    assert not [p for p in fs.ls(s3["prefix"].removeprefix("s3://")) if "__ppdm_" in p]


def test_a_held_commit_lock_stops_a_second_writer(s3, monkeypatch):
    """While one writer holds the prefix's lock object, another cannot commit there."""
    import fsspec

    from ppdm_dask.data import commit
    from ppdm_dask.data.parquet import write_parquet

    opts = s3["storage_options"]
    url = f"{s3['prefix']}/locked"
    fs, path = fsspec.core.url_to_fs(url, **opts)
    with commit._remote_lock(fs, path, url):
        monkeypatch.setattr(commit, "_LOCK_WAIT", 0.5)
        with pytest.raises(DatasetExistsError, match="being committed by another job"):
            write_parquet(TransactionArray.from_lists([[1]] * 3), url, storage_options=opts)
    write_parquet(TransactionArray.from_lists([[1]] * 3), url, storage_options=opts)  # lock released
    assert read(url, storage_options=opts).n_transactions == 3

"""A keyed random job survives a killed worker process with byte-identical output."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import threading
import time

import dask
import pytest

from ppdm_dask.data.quest import quest
from ppdm_dask.random import Key

SPEC = "T10.I4.D240K.N1K"
BLOCK = 8192


def _part_bytes(folder):
    return {os.path.basename(p): open(p, "rb").read() for p in sorted(glob.glob(os.path.join(folder, "*")))}


@pytest.mark.cluster
def test_killed_worker_mid_job_gives_identical_bytes(tmp_path):
    from distributed import Client, LocalCluster

    key = Key(0x5EED)
    ref_dir = tmp_path / "undisturbed"
    with dask.config.set(scheduler="threads"):
        quest(SPEC, key=key, rows_per_partition=BLOCK, block_rows=BLOCK).to_parquet(str(ref_dir), progress=False)

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1")
    client = Client(cluster, set_as_default=False)
    out_dir = tmp_path / "disturbed"
    errors: list[BaseException] = []
    try:

        def job():
            try:
                with client.as_current(), dask.config.set(scheduler=client.get):
                    quest(SPEC, key=key, rows_per_partition=BLOCK, block_rows=BLOCK).to_parquet(str(out_dir), progress=False)
            except BaseException as exc:  # reported below
                errors.append(exc)

        pids = client.run(os.getpid)
        thread = threading.Thread(target=job)
        thread.start()
        # wait until the job is under way: some, not all, partitions written
        deadline = time.time() + 120
        n_parts = 240_000 // BLOCK + 1
        written = 0
        while time.time() < deadline:
            written = len(glob.glob(str(tmp_path / ".disturbed.__ppdm_tmp-*" / "part-*.parquet")))
            if written >= 2:
                break
            time.sleep(0.02)
        assert 2 <= written < n_parts, f"job not caught mid-way ({written} of {n_parts} parts)"
        victim = sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)
        thread.join(300)
        assert not thread.is_alive()
        assert not errors, errors
        # the killed process is gone (the job finished without it; whether the nanny manages to
        # restart it is not part of the guarantee: distributed's restart after SIGKILL can fail)
        assert pids[victim] not in client.run(os.getpid).values()
    finally:
        # a nanny whose restart failed can block shutdown: bound it
        with contextlib.suppress(Exception):
            client.close(timeout=20)
        with contextlib.suppress(Exception):
            cluster.close(timeout=20)
    assert _part_bytes(out_dir) == _part_bytes(ref_dir)


def test_progress_with_a_non_default_client(cluster_client):
    """compute/persist with progress on an explicit client that is not the default one (the
    non-TTY summary waits with distributed.wait, which looks up the default client)."""
    import dask.array as da

    from ppdm_dask.progress import compute, persist

    x = da.ones((100, 10), chunks=(10, 10))
    (total,) = compute(x.sum(), client=cluster_client, progress=True)
    (y,) = persist(x + 1, client=cluster_client, progress=True)
    assert total == 1000 and float(cluster_client.compute(y.sum()).result()) == 2000

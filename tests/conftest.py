"""Shared fixtures: data locations, a 2-process LocalCluster, a moto S3 server."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import dask
import pytest

REPO = Path(__file__).resolve().parents[1]
FIMI_FILES = ["T10I4D100K.dat", "retail.dat", "mushroom.dat", "chess.dat", "BMS-WebView-1.dat"]


def _shared_data() -> Path | None:
    env = os.environ.get("PPDM_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates += [REPO.parent / "shared" / "data", REPO / ".." / "shared" / "data"]
    for c in candidates:
        if (c / "fimi").is_dir():
            return c.resolve()
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's shared data folder (../shared/data beside the checkout, as in CI)."""
    path = _shared_data()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("shared data folder not found beside the checkout (set PPDM_SHARED_DATA)")
        pytest.skip("shared data folder not available on this machine")
    return path


def _ledger_of_its_own(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PPDM_LEDGER", str(tmp_path_factory.mktemp("ledger")))
        yield


#: Every test records its releases in a ledger of its own, never the user's: releases of one
#: sample input in two tests must not compose with each other. Module- and session-scoped
#: fixtures that write releases run before a test's own fixture: they get one per module / run.
_session_ledger = pytest.fixture(scope="session", autouse=True, name="_session_ledger")(_ledger_of_its_own)
_module_ledger = pytest.fixture(scope="module", autouse=True, name="_module_ledger")(_ledger_of_its_own)
_private_ledger = pytest.fixture(autouse=True, name="_private_ledger")(_ledger_of_its_own)


@pytest.fixture(autouse=True)
def _sync_scheduler_by_default():
    """Tests run on the synchronous scheduler unless they ask for the cluster."""
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture(autouse=True)
def _no_info_lines_of_other_clusters():
    """Keep distributed's INFO lines out of every test's captured stderr, whichever cluster
    logs them.

    distributed's loggers log at INFO; a LocalCluster only hides that by setting the level of
    the stderr *handlers* for its lifetime (``silence_logs``) and restoring the level it found
    when it closes. With clusters that overlap (the session's ``cluster_client``, this file's
    fixtures, a cluster another test closes late) the first to close restores INFO while the
    others still run, and where the records go to the root logger's handlers (under pytest)
    no cluster silences them at all: INFO lines of a cluster shutting down ("Scheduler closing
    all comms") landed in the stderr of whatever test ran then
    (``test_progress_in_a_log_is_plain_periodic_lines`` failed on them). The *loggers* are held
    at WARNING instead, for each test, whatever the handlers do: warnings still show.
    """
    import logging

    from ppdm_dask.cluster import quiet_distributed_logs

    with quiet_distributed_logs(logging.WARNING):
        yield


@pytest.fixture(scope="session")
def cluster_client():
    """A LocalCluster with two worker processes for the whole session (not the default client)."""
    from distributed import Client, LocalCluster

    from ppdm_dask.cluster import worker_environment

    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment()}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1")
    client = Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def on_cluster(cluster_client):
    """Make the session cluster the current client inside one test."""
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        yield cluster_client


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (random port) and storage options that reach it."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    opts = {"key": "testing", "secret": "testing", "endpoint_url": endpoint, "client_kwargs": {"region_name": "us-east-1"}}
    import boto3

    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    ).create_bucket(Bucket="ppdm-test")
    yield {"endpoint": endpoint, "storage_options": opts, "bucket": "ppdm-test"}
    server.stop()


@pytest.fixture
def s3(s3_server):
    """Per-test unique prefix inside the test bucket."""
    import uuid

    return {**s3_server, "prefix": f"s3://{s3_server['bucket']}/{uuid.uuid4().hex[:8]}"}

"""Tests of ppdm_dask.cluster, ppdm_dask.progress and the deploy recipes under cluster/."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import py_compile
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import dask.config
import distributed
import numpy as np
import pytest
import yaml

from ppdm_dask import progress as progress_mod
from ppdm_dask.cluster import (
    ARROW_MEMORY_POOL,
    MALLOC_TRIM_THRESHOLD,
    PRE_SPAWN_ENVIRON_KEY,
    SchedulerUnreachable,
    current_client,
    get_client,
    worker_environment,
)
from ppdm_dask.errors import InvalidParameter, PPDMError

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "cluster"


# --------------------------------------------------------------------------- get_client


@pytest.mark.cluster
def test_local_cluster_processes_and_malloc_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # An inherited value would override the config (distributed's rule): test the config path.
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert worker_environment()["MALLOC_TRIM_THRESHOLD_"] == str(MALLOC_TRIM_THRESHOLD)

    with get_client(n_workers=2) as client:
        cluster = client.cluster
        assert isinstance(cluster, distributed.LocalCluster)
        assert current_client() is client
        info = client.scheduler_info()["workers"]
        assert len(info) == 2
        assert all(w["nthreads"] == 1 for w in info.values())
        assert all(addr.startswith("tcp://127.0.0.1:") for addr in info)

        pids = client.run(os.getpid)
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()  # processes

        seen = client.run(os.getenv, "MALLOC_TRIM_THRESHOLD_")
        assert set(seen.values()) == {str(MALLOC_TRIM_THRESHOLD)}
        # distributed's other pre-spawn defaults are kept
        assert set(client.run(os.getenv, "OMP_NUM_THREADS").values()) == {"1"}
        # Arrow frees what it allocates back to the system allocator (not kept by mimalloc)
        pools = client.run(lambda: __import__("pyarrow").default_memory_pool().backend_name)
        assert set(pools.values()) == {"system"}

        x = da.arange(1000, chunks=100)
        assert int(client.compute(x.sum()).result()) == 499500

    # leaving the block closed the client AND the cluster it started
    assert cluster.status.name == "closed"
    assert client.status == "closed"
    assert current_client() is None


@pytest.mark.cluster
def test_quiet_local_cluster_keeps_task_failures_off_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """get_client(quiet=True): a failing task raises at the client, the workers (processes that
    share this stderr) do not log "Compute Failed", and closing it quietly writes nothing."""
    from ppdm_dask.cluster import QuietTaskErrors, close_client

    def boom(_: int) -> None:
        raise ValueError("bad input in task")

    client = get_client(n_workers=1, quiet=True)
    try:
        assert QuietTaskErrors.name in client.run(lambda dask_worker: list(dask_worker.plugins)).popitem()[1]
        with pytest.raises(ValueError, match="bad input in task"):
            progress_mod.compute(dask.delayed(boom)(1), client=client)
        time.sleep(0.5)  # a worker's log line would arrive asynchronously
    finally:
        close_client(client, quiet=True)
    assert client.status == "closed"
    _, err = capfd.readouterr()
    assert "Compute Failed" not in err and "bad input in task" not in err, err


@pytest.mark.cluster
def test_quiet_local_cluster_keeps_shuffle_notes_off_stderr() -> None:
    """get_client(quiet=True): the in-process scheduler's WARNING notes on each P2P shuffle's life
    ("Shuffle ... initialized by task ...", "... deactivated ...", which reached the stderr of
    `ppdm verify --original` on a table) are filtered on their logger; its other warnings are not."""
    import dask.dataframe as dd
    import pandas as pd

    from ppdm_dask.cluster import _SHUFFLE_LOGGER, _not_a_shuffle_note, close_client

    def record(msg: str, *args: Any) -> logging.LogRecord:  # as distributed logs them
        return logging.LogRecord(_SHUFFLE_LOGGER, logging.WARNING, __file__, 0, msg, args, None)

    assert not _not_a_shuffle_note(record("Shuffle %s initialized by task %r executed on worker %s", "ab", ("t", 0), "tcp://w"))
    assert not _not_a_shuffle_note(record("Shuffle %s deactivated due to stimulus '%s'", "ab", "task-finished"))
    assert not _not_a_shuffle_note(record("Shuffle %s restarted due to stimulus '%s", "ab", "s"))
    assert _not_a_shuffle_note(record("Shuffle %s failed: %s", "ab", "out of disk"))

    class Collect(logging.Handler):
        def emit(self, rec: logging.LogRecord) -> None:
            notes.append(rec.getMessage())

    notes: list[str] = []
    # a handler on the logger itself, at WARNING whatever an earlier test in this process left
    shuffle_logger = logging.getLogger(_SHUFFLE_LOGGER)
    handler, level = Collect(logging.WARNING), shuffle_logger.level
    shuffle_logger.setLevel(logging.WARNING)
    shuffle_logger.addHandler(handler)
    client = get_client(n_workers=2, quiet=True)
    try:
        assert _not_a_shuffle_note in shuffle_logger.filters
        df = dd.from_pandas(pd.DataFrame({"x": np.arange(200) % 7, "y": np.arange(200)}), npartitions=4)
        assert len(df.shuffle("x", shuffle_method="p2p").compute()) == 200
        assert not [m for m in notes if m.startswith("Shuffle")], notes
    finally:
        close_client(client, quiet=True)
        shuffle_logger.removeHandler(handler)
        shuffle_logger.setLevel(level)


def test_closing_clusters_leak_no_info_lines() -> None:
    """The cause of the flaky progress test: clusters that close (a test's own, or one that
    overlaps another: the first to close restores distributed's stderr handler to INFO while
    the other runs) log INFO lines that reached the stderr of whatever test ran then. No INFO
    record of distributed may reach a handler (a test's stderr) while a test runs."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    collect = Collect(logging.DEBUG)
    logging.getLogger("distributed").addHandler(collect)
    try:
        kw: dict[str, Any] = {"n_workers": 1, "threads_per_worker": 1, "processes": False, "dashboard_address": None}
        first = distributed.LocalCluster(**kw)
        second = distributed.LocalCluster(**kw)
        first.close()
        second.close()  # "Scheduler closing all comms", "Remove worker ..." are INFO
    finally:
        logging.getLogger("distributed").removeHandler(collect)
    info = [f"{r.name}: {r.getMessage()}" for r in records if r.levelno < logging.WARNING]
    assert info == [], info[:5]


def test_worker_environment_keeps_explicit_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask.config.set({f"{PRE_SPAWN_ENVIRON_KEY}.MALLOC_TRIM_THRESHOLD_": 12345}):
        assert worker_environment()["MALLOC_TRIM_THRESHOLD_"] == "12345"
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "777")
    assert worker_environment()["MALLOC_TRIM_THRESHOLD_"] == "777"


def test_unreachable_scheduler_raises_quickly() -> None:
    start = time.perf_counter()
    with pytest.raises(PPDMError, match="127.0.0.1:1"):
        get_client("tcp://127.0.0.1:1", timeout=2)
    assert time.perf_counter() - start < 15
    assert issubclass(SchedulerUnreachable, PPDMError)


def test_missing_scheduler_file(tmp_path: Path) -> None:
    with pytest.raises(SchedulerUnreachable, match="does not exist"):
        get_client(str(tmp_path / "scheduler.json"))


def test_local_only_options_warn_with_address() -> None:
    with pytest.warns(UserWarning, match="n_workers"), pytest.raises(PPDMError):
        get_client("tcp://127.0.0.1:1", n_workers=4, timeout=1)


@pytest.mark.parametrize("kwargs", [{"n_workers": 0}, {"threads_per_worker": -1}, {"n_workers": 1.5}])
def test_invalid_sizes(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameter):
        get_client(**kwargs)


def test_empty_address() -> None:
    with pytest.raises(InvalidParameter):
        get_client("  ")


# --------------------------------------------------------------------------- real scheduler


def _dask_cmd(sub: str) -> list[str]:
    exe = Path(sys.executable).parent / "dask"
    if exe.exists():
        return [str(exe), sub]
    return [sys.executable, "-m", f"distributed.cli.dask_{sub}"]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop our subprocesses in reverse start order (workers before the scheduler, which
    keeps their shutdown fast); kill a process group that does not exit in time."""
    for proc in reversed(procs):
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        # each was started in its own session: its group holds it and the worker it spawned
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


@pytest.fixture
def dask_cli_cluster(tmp_path: Path) -> Iterator[Path]:
    """`dask scheduler` + two `dask worker` subprocesses configured with cluster/dask.yaml."""
    sched_file = tmp_path / "scheduler.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_") and k != "MALLOC_TRIM_THRESHOLD_"}
    env["DASK_CONFIG"] = str(RECIPES / "dask.yaml")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    logs = tmp_path / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, cmd: list[str]) -> None:
        with open(logs / f"{name}.log", "wb") as log:
            procs.append(
                subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            )

    try:
        start(
            "scheduler",
            _dask_cmd("scheduler")
            + [
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--scheduler-file",
                str(sched_file),
                "--no-dashboard",
            ],
        )
        for i in range(2):
            start(
                f"worker{i}",
                _dask_cmd("worker")
                + [
                    "--scheduler-file",
                    str(sched_file),
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--memory-limit",
                    "1GiB",
                    "--death-timeout",
                    "30",
                    "--name",
                    f"w{i}",
                ],
            )
        deadline = time.monotonic() + 180  # two worker processes on a loaded 2-core CI machine
        while not sched_file.exists() and time.monotonic() < deadline and procs[0].poll() is None:
            time.sleep(0.2)
        n = 0
        with contextlib.suppress(OSError, ValueError, KeyError):
            address = json.loads(sched_file.read_text())["address"]
            with distributed.Client(address, timeout=10, set_as_default=False) as c:
                with contextlib.suppress(TimeoutError):
                    c.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
                n = len(c.scheduler_info()["workers"])
        if n < 2:
            dump = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(logs.iterdir()))
            pytest.fail(f"dask CLI cluster did not come up with 2 workers ({n}):\n{dump}")
        yield sched_file
    finally:
        _stop(procs)


def _count_workers(sched_file: Path) -> list[str]:
    address = json.loads(sched_file.read_text())["address"]
    with distributed.Client(address, timeout=5, set_as_default=False) as c:
        return list(c.scheduler_info()["workers"])


@pytest.mark.cluster
def test_dask_cli_scheduler_and_workers(dask_cli_cluster: Path) -> None:
    address = json.loads(dask_cli_cluster.read_text())["address"]
    assert address.startswith("tcp://127.0.0.1:")
    for target in (address, str(dask_cli_cluster)):  # an address or a scheduler file
        with get_client(target) as client:
            assert client.cluster is None  # nothing started locally
            assert len(client.scheduler_info()["workers"]) == 2

            rng = np.random.default_rng(0)
            data = rng.random((400, 50))
            x = da.from_array(data, chunks=(50, 50))  # 8 chunks
            y = (x * 2 + 1).persist()
            distributed.wait(y)
            holders = {w for ws in client.who_has(y).values() for w in ws}
            assert len(holders) == 2  # tasks ran on both workers

            (total, col) = progress_mod.compute(y.sum(), y.mean(axis=0), progress=False)
            np.testing.assert_allclose(total, (data * 2 + 1).sum())
            np.testing.assert_allclose(col, (data * 2 + 1).mean(axis=0))

            # workers started with DASK_CONFIG=cluster/dask.yaml got the pre-spawn environment
            seen = client.run(os.getenv, "MALLOC_TRIM_THRESHOLD_")
            assert set(seen.values()) == {str(MALLOC_TRIM_THRESHOLD)}
            assert set(client.run(os.getenv, "ARROW_DEFAULT_MEMORY_POOL").values()) == {ARROW_MEMORY_POOL}
            assert set(client.run(lambda: dask.config.get("distributed.worker.memory.pause")).values()) == {0.8}
        assert client.status == "closed"
    # a real ppdm job through the CLI's --scheduler option (the installed console script)
    exe = Path(sys.executable).parent / "ppdm"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ppdm_dask.cli"]
    out = dask_cli_cluster.parent / "quest-out"
    gen = subprocess.run(
        cmd + ["--scheduler", address, "--json", "generate", "quest", "T10.I4.D20K.N1K", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gen.returncode == 0, gen.stderr
    info = subprocess.run(cmd + ["--scheduler", address, "--json", "info", str(out)], capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    summary = json.loads(info.stdout)
    assert summary["n_transactions"] == 20_000 and abs(summary["mean_length"] - 10) < 0.2
    # closing the clients left the external cluster running
    assert len(_count_workers(dask_cli_cluster)) == 2


# --------------------------------------------------------------------------- progress


@pytest.fixture
def inproc_client() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _collections() -> tuple[Any, Any, int]:
    x = da.arange(100, chunks=10)
    return x.sum(), (x + 1)[:3], 7


@pytest.mark.parametrize("tty", [False, True])
def test_compute_local_progress_on_stderr(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tty: bool) -> None:
    monkeypatch.setattr(progress_mod, "_stderr_is_tty", lambda: tty)
    assert current_client() is None
    s, head, seven = progress_mod.compute(*_collections(), progress=True)
    assert s == 4950 and head.tolist() == [1, 2, 3] and seven == 7
    out, err = capfd.readouterr()
    assert out == ""
    if tty:
        assert "100% Completed" in err
    else:  # short work on a log: nothing at all (no carriage-return bar)
        assert err == ""


def _slow(x: int) -> int:
    time.sleep(0.05)
    return x


@pytest.mark.parametrize("distributed_client", [False, True])
def test_progress_in_a_log_is_plain_periodic_lines(request, capfd, monkeypatch, distributed_client) -> None:
    if distributed_client:
        request.getfixturevalue("inproc_client")
    monkeypatch.setattr(progress_mod, "_stderr_is_tty", lambda: False)
    monkeypatch.setenv("PPDM_PROGRESS_INTERVAL", "0.1")
    tasks = [dask.delayed(_slow)(i) for i in range(30)]
    (got,) = progress_mod.compute(tasks, progress=True, **({} if distributed_client else {"scheduler": "sync"}))
    assert got == list(range(30))
    out, err = capfd.readouterr()
    lines = err.splitlines()
    assert out == "" and "\r" not in err and len(lines) >= 2
    assert all(line.startswith("[progress] ") for line in lines)
    assert lines[-1].startswith("[progress] done: 100% of ")


@pytest.mark.parametrize("tty", [False, True])
def test_compute_distributed_progress_on_stderr(
    inproc_client: distributed.Client, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    monkeypatch.setattr(progress_mod, "_stderr_is_tty", lambda: tty)
    assert current_client() is inproc_client
    s, head, seven = progress_mod.compute(*_collections(), progress=True)
    assert s == 4950 and head.tolist() == [1, 2, 3] and seven == 7
    # explicit client, no progress
    (s2,) = progress_mod.compute(da.ones(10, chunks=5).sum(), client=inproc_client, progress=False)
    assert s2 == 10
    out, err = capfd.readouterr()
    assert out == ""
    assert ("100% Completed" in err) if tty else err == ""


def test_compute_no_progress_writes_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    (s,) = progress_mod.compute(da.ones(10, chunks=5).sum(), progress=False)
    assert s == 10
    assert capfd.readouterr() == ("", "")


def test_explicit_local_scheduler_wins_over_client(inproc_client: distributed.Client) -> None:
    calls: list[int] = []

    def f(v: int) -> int:
        calls.append(v)  # only visible here if run in this thread (sync scheduler)
        return v

    (v,) = progress_mod.compute(dask.delayed(f)(3), scheduler="sync", progress=False)
    assert v == 3 and calls == [3]


def test_compute_propagates_errors(inproc_client: distributed.Client) -> None:
    def boom(_: Any) -> None:
        raise ZeroDivisionError("boom")

    with pytest.raises(ZeroDivisionError):
        progress_mod.compute(dask.delayed(boom)(1), progress=False)


@pytest.mark.parametrize("use_client", [False, True])
def test_persist(request: pytest.FixtureRequest, capfd: pytest.CaptureFixture[str], use_client: bool) -> None:
    if use_client:
        request.getfixturevalue("inproc_client")
    x = da.arange(20, chunks=5) * 2
    (p,) = progress_mod.persist(x)
    assert isinstance(p, da.Array)
    if use_client:
        assert all(f.status == "finished" for f in distributed.futures_of(p))
    assert p.sum().compute() == 380
    out, _ = capfd.readouterr()
    assert out == ""


# --------------------------------------------------------------------------- recipes


def _schema() -> dict[str, Any]:
    path = Path(distributed.__file__).parent / "distributed-schema.yaml"
    return yaml.safe_load(path.read_text())


def _assert_known(cfg: dict[str, Any], schema: dict[str, Any], path: str = "") -> None:
    props = schema.get("properties")
    if props is None:  # free-form mapping (e.g. pre-spawn-environ): any key allowed
        return
    for key, value in cfg.items():
        assert key in props, f"unknown dask config key {path}{key}"
        if isinstance(value, dict):
            _assert_known(value, props[key], f"{path}{key}.")


def test_dask_yaml_is_valid_config() -> None:
    path = RECIPES / "dask.yaml"
    raw = yaml.safe_load(path.read_text())
    _assert_known(raw, _schema())

    cfg = dask.config.collect(paths=[str(path)], env={})
    mem = cfg["distributed"]["worker"]["memory"]
    assert 0 < mem["target"] <= mem["spill"] < mem["pause"] < mem["terminate"] < 1
    env = cfg["distributed"]["nanny"]["pre-spawn-environ"]
    assert int(env["MALLOC_TRIM_THRESHOLD_"]) == MALLOC_TRIM_THRESHOLD
    assert env["ARROW_DEFAULT_MEMORY_POOL"] == ARROW_MEMORY_POOL
    assert "OMP_NUM_THREADS" in env  # distributed's other defaults kept
    for key in ("connect", "tcp"):
        dask.utils.parse_timedelta(cfg["distributed"]["comm"]["timeouts"][key])

    # merged over the defaults, the keys resolve through the normal config API
    merged = dask.config.merge(dask.config.config, cfg)
    assert dask.config.get("distributed.worker.memory.pause", config=merged) == mem["pause"]


def test_kubernetes_manifest() -> None:
    doc = yaml.safe_load((RECIPES / "kubernetes" / "daskcluster.yaml").read_text())
    assert doc["apiVersion"] == "kubernetes.dask.org/v1"
    assert doc["kind"] == "DaskCluster"
    spec = doc["spec"]
    assert spec["worker"]["replicas"] >= 1

    (worker,) = spec["worker"]["spec"]["containers"]
    args = worker["args"]
    assert args[:2] == ["dask", "worker"]
    assert "$(DASK_WORKER_NAME)" in args and "--nthreads" in args and "--memory-limit" in args
    assert args[args.index("--nthreads") + 1] == "1"
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert "ppdm-dask[s3]" in env["EXTRA_PIP_PACKAGES"]
    assert int(env["MALLOC_TRIM_THRESHOLD_"]) == MALLOC_TRIM_THRESHOLD
    assert {"requests", "limits"} <= set(worker["resources"])
    # dask's memory limit stays below the container limit, so dask spills before the OOM killer
    limit = dask.utils.parse_bytes(args[args.index("--memory-limit") + 1])
    assert limit < dask.utils.parse_bytes(worker["resources"]["limits"]["memory"].replace("Gi", "GiB"))

    (sched,) = spec["scheduler"]["spec"]["containers"]
    assert sched["args"][:2] == ["dask", "scheduler"]
    ports = {p["port"] for p in spec["scheduler"]["service"]["ports"]}
    assert 8786 in ports


def test_slurm_script_compiles(tmp_path: Path) -> None:
    src = RECIPES / "slurm" / "slurm_cluster.py"
    py_compile.compile(str(src), cfile=str(tmp_path / "slurm_cluster.pyc"), doraise=True)
    text = src.read_text()
    assert 'if __name__ == "__main__":' in text and "MALLOC_TRIM_THRESHOLD_" in text
    assert "get_client(cluster.scheduler_address" in text


def test_readme_uses_current_cli() -> None:
    text = (RECIPES / "README.md").read_text()
    assert "dask scheduler" in text and "dask worker" in text and "DASK_CONFIG" in text
    # the hyphenated commands were removed from distributed; only mention them as such
    for line in text.splitlines():
        if "dask-scheduler" in line or "dask-worker" in line:
            assert "removed" in line


class _FakeClient:
    """Just what the budget helpers read: the scheduler's view of the workers."""

    def __init__(self, workers: dict) -> None:
        self._workers = workers

    def scheduler_info(self) -> dict:
        return {"workers": self._workers}


def test_memory_budget_from_the_workers_limits() -> None:
    from ppdm_dask.cluster import memory_budget

    gib = 2**30
    client = _FakeClient({"a": {"memory_limit": gib, "nthreads": 2}, "b": {"memory_limit": 2 * gib, "nthreads": 1}})
    # the smallest limit counts for every worker
    assert memory_budget(0.1, client, local=5)[0] == pytest.approx(0.1 * gib * 2)
    unlimited = _FakeClient({"a": {"memory_limit": 0, "nthreads": 1}})
    assert memory_budget(0.1, unlimited, local=5) == (5.0, "local scheduler")


def test_memory_headroom_is_what_is_left_below_the_spill_target() -> None:
    from ppdm_dask.cluster import memory_headroom

    mib = 2**20
    client = _FakeClient(
        {
            "a": {"memory_limit": 1000 * mib, "nthreads": 1, "metrics": {"memory": 300 * mib}},
            "b": {"memory_limit": 1000 * mib, "nthreads": 2, "metrics": {"memory": 700 * mib}},
        }
    )
    with dask.config.set({"distributed.worker.memory.target": 0.6}):
        left, threads = memory_headroom(client)
    assert left == pytest.approx(300 * mib) and threads == 3  # 600 - 300, and nothing below 0 for b
    assert memory_headroom(_FakeClient({"a": {"memory_limit": 0, "nthreads": 1}})) is None

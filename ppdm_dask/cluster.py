"""Access to a Dask cluster: connect to a running scheduler or start a local one.

Typical use::

    from ppdm_dask.cluster import get_client

    if __name__ == "__main__":          # required: see below
        with get_client() as client:    # LocalCluster, one process worker per core
            ...                         # dask computations run on the cluster
        # leaving the block closes the client AND the LocalCluster it started

    client = get_client("tcp://scheduler-host:8786")   # an existing ``dask scheduler``
    ...
    close_client(client)                                # or client.close()

Worker processes of a local cluster are started with the ``spawn`` method, which re-imports
the main module in every worker: a *script* that calls :func:`get_client` without an address
must therefore guard its top-level code with ``if __name__ == "__main__":``, otherwise each
worker would try to start a cluster of its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import dask
import dask.config
import distributed
from dask.system import CPU_COUNT
from distributed.system import MEMORY_LIMIT

from .errors import InvalidParameter, PPDMError

#: glibc ``MALLOC_TRIM_THRESHOLD_`` given to worker processes (bytes). distributed's default
#: (64 KiB) makes glibc hand freed memory back to the OS after almost every large free, so
#: allocation-heavy kernels re-fault fresh pages all the time; the team measured them up to
#: 6x slower than with a 1 GiB threshold. Memory is still trimmed by distributed's own
#: ``malloc_trim`` calls when a worker approaches its memory limit.
MALLOC_TRIM_THRESHOLD: int = 1 << 30

#: PyArrow memory pool of worker processes. Arrow's default (mimalloc) keeps the memory freed
#: after reading Parquet in the process: measured on 1 GB workers, a read of 10 M baskets left
#: 315 MiB resident per worker against 225 MiB with the system allocator, and k-variance at
#: 10 M records spilled 20 GiB with mimalloc against 3 GiB with the system pool.
ARROW_MEMORY_POOL: str = "system"

#: Dask config key holding the environment set by nannies *before* spawning a worker process
#: (glibc reads ``MALLOC_*`` variables once, at process start-up, so ``distributed.nanny.environ``
#: would be too late).
PRE_SPAWN_ENVIRON_KEY = "distributed.nanny.pre-spawn-environ"

#: Seconds to wait for an existing scheduler before giving up.
CONNECT_TIMEOUT: float = 10.0

# distributed's shipped default for MALLOC_TRIM_THRESHOLD_; any other configured value is a
# deliberate user choice and is left alone.
_DISTRIBUTED_DEFAULT_TRIM = 65536


class SchedulerUnreachable(PPDMError, ConnectionError):
    """The Dask scheduler at the given address could not be reached."""


def _pre_spawn_config() -> dict[str, Any]:
    """Current ``pre-spawn-environ`` mapping with the ppdm-dask trim threshold merged in."""
    env = dict(dask.config.get(PRE_SPAWN_ENVIRON_KEY, default={}) or {})
    current = env.get("MALLOC_TRIM_THRESHOLD_", _DISTRIBUTED_DEFAULT_TRIM)
    # ``None`` means "unset" in dask config and is respected like any explicit value.
    if current is not None and str(current) == str(_DISTRIBUTED_DEFAULT_TRIM):
        env["MALLOC_TRIM_THRESHOLD_"] = MALLOC_TRIM_THRESHOLD
    env.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_MEMORY_POOL)
    return env


def worker_environment() -> dict[str, str]:
    """Environment that nannies set before spawning a worker process.

    This is distributed's ``distributed.nanny.pre-spawn-environ`` mapping (thread-count limits
    such as ``OMP_NUM_THREADS=1`` are kept) with ``MALLOC_TRIM_THRESHOLD_`` raised to
    :data:`MALLOC_TRIM_THRESHOLD` unless it was configured explicitly, and PyArrow's memory
    pool set to :data:`ARROW_MEMORY_POOL` unless configured. As in distributed,
    variables already present in ``os.environ`` take precedence over the config.

    Returns
    -------
    dict of str to str
        Variable name to value, as the worker process will see it.
    """
    return {k: os.environ.get(k, str(v)) for k, v in _pre_spawn_config().items() if v is not None}


def configure_worker_environment() -> dict[str, str]:
    """Install :func:`worker_environment` in the (process-global) dask config.

    Set globally rather than in a ``with dask.config.set(...)`` block because nannies read the
    key when they are created, which also happens later when a cluster is scaled up or a worker
    is restarted. Only workers spawned by this process are affected. Idempotent.

    Returns
    -------
    dict of str to str
        The effective worker environment (see :func:`worker_environment`).
    """
    dask.config.set({PRE_SPAWN_ENVIRON_KEY: _pre_spawn_config()})
    return worker_environment()


def _resolve_address(address: str) -> str:
    """Scheduler address from a URI or from a scheduler JSON file (``--scheduler-file``)."""
    address = address.strip()
    if not address:
        raise InvalidParameter("scheduler address must not be empty")
    if "://" not in address and (address.endswith(".json") or os.path.isfile(address)):
        path = Path(address).expanduser()
        try:
            info = json.loads(path.read_text())
            return str(info["address"])
        except FileNotFoundError:
            raise SchedulerUnreachable(f"scheduler file {str(path)!r} does not exist") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PPDMError(f"cannot read a scheduler address from {str(path)!r}: {exc}") from exc
    return address


def _connect(address: str, timeout: float) -> distributed.Client:
    target = _resolve_address(address)
    try:
        return distributed.Client(target, timeout=timeout, set_as_default=True)
    except (OSError, TimeoutError) as exc:  # refused / timed out / DNS failure
        raise SchedulerUnreachable(
            f"cannot reach the Dask scheduler at {target!r} within {timeout:g} s; "
            "is `dask scheduler` running there and the port reachable?"
        ) from exc
    except ValueError as exc:  # unparsable address / unknown protocol
        raise InvalidParameter(f"invalid scheduler address {address!r}: {exc}") from exc


def get_client(
    address: str | None = None,
    *,
    n_workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | float | None = "auto",
    dashboard: bool = False,
    timeout: float = CONNECT_TIMEOUT,
    quiet: bool = False,
    **cluster_kwargs: Any,
) -> distributed.Client:
    """Connect to a Dask scheduler, or start a local cluster of process workers.

    The returned client is registered as the default client, so plain ``.compute()`` calls and
    :func:`ppdm_dask.progress.compute` use it. Close it with ``client.close()``,
    :func:`close_client` or by using it as a context manager (``with get_client() as client:``);
    for a local cluster this also shuts the cluster and its worker processes down.

    A script that calls this without ``address`` must guard its top-level code with
    ``if __name__ == "__main__":`` (worker processes are spawned and re-import ``__main__``).

    Parameters
    ----------
    address : str, optional
        Address of a running scheduler (``tcp://host:8786``, ``tls://...``) or the path to the
        JSON file written by ``dask scheduler --scheduler-file``. ``None`` starts a
        ``LocalCluster``.
    n_workers : int, optional
        Local cluster only: number of worker processes. Default: one per core (or
        ``cores // threads_per_worker``).
    threads_per_worker : int, optional
        Local cluster only: threads per worker. Default 1 (the kernels hold the GIL in places,
        processes scale better).
    memory_limit : str, float or None, default "auto"
        Local cluster only: memory limit *per worker*. ``"auto"`` splits the memory available
        to this process (cgroup aware) evenly between the workers; ``None`` or 0 disables the
        limit; other values are passed to distributed (e.g. ``"4GiB"``).
    dashboard : bool, default False
        Local cluster only: serve the diagnostics dashboard (on 127.0.0.1:8787, or a free port
        if that one is taken). Off by default to avoid port clashes.
    timeout : float, default 10
        Seconds to wait for an existing scheduler before raising.
    quiet : bool, default False
        Local cluster only: keep the workers' reports of failed tasks ("Compute Failed" with
        the task and its traceback) off stderr (:class:`QuietTaskErrors`); the exception still
        reaches the caller of ``compute``, which reports it (the ``ppdm`` command line prints
        it as its one error line). The workers' other warnings (memory, spilling, pausing)
        still show. Close such a client with ``close_client(client, quiet=True)`` to keep the
        cluster's shutdown messages off stderr as well.
    **cluster_kwargs
        Local cluster only: further keyword arguments of ``distributed.LocalCluster``; they
        override the defaults chosen here (``processes=True``, ``host="127.0.0.1"``, ...).

    Returns
    -------
    distributed.Client
        The connected client (its ``.cluster`` is the LocalCluster when one was started).

    Raises
    ------
    SchedulerUnreachable
        (a :class:`~ppdm_dask.errors.PPDMError`) the scheduler cannot be reached in time.
    InvalidParameter
        Invalid address or cluster sizing.
    """
    if address is not None:
        local_only = {"n_workers": n_workers, "threads_per_worker": threads_per_worker}
        ignored = [k for k, v in local_only.items() if v is not None] + sorted(cluster_kwargs)
        if memory_limit != "auto":
            ignored.append("memory_limit")
        if dashboard:
            ignored.append("dashboard")
        if ignored:
            warnings.warn(
                f"{', '.join(ignored)} only apply to a local cluster and are ignored when connecting to an existing scheduler",
                UserWarning,
                stacklevel=2,
            )
        return _connect(address, timeout)

    for name, value in (("n_workers", n_workers), ("threads_per_worker", threads_per_worker)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InvalidParameter(f"{name} must be a positive integer, got {value!r}")
    threads = threads_per_worker or 1
    workers = n_workers or max(1, CPU_COUNT // threads)
    if memory_limit == "auto":
        # distributed's own "auto" gives each worker a share proportional to its threads /
        # cores, which under-uses memory when n_workers * threads < cores.
        memory_limit = MEMORY_LIMIT // workers if MEMORY_LIMIT else None

    options: dict[str, Any] = {
        "n_workers": workers,
        "threads_per_worker": threads,
        "processes": True,
        "memory_limit": memory_limit,
        "host": "127.0.0.1",
        "dashboard_address": "127.0.0.1:8787" if dashboard else None,
    }
    if not dashboard:
        # the scheduler's HTTP server (health, metrics) would still take 8787, and warn into the
        # user's output whenever that port is taken: any free port will do
        options["scheduler_kwargs"] = {"dashboard_address": "127.0.0.1:0"}
    options.update(cluster_kwargs)

    configure_worker_environment()
    # ``Client(**kwargs)`` without an address starts the LocalCluster itself and therefore
    # owns it: closing the client (or leaving its ``with`` block) closes the cluster too.
    try:
        client = distributed.Client(address=None, set_as_default=True, **options)
    except BaseException:
        _drop_unstarted_default()
        raise
    if quiet:
        # the local scheduler runs in this process: its notes on every shuffle's life go to the
        # command's stderr otherwise
        logging.getLogger(_SHUFFLE_LOGGER).addFilter(_not_a_shuffle_note)  # idempotent
        try:
            # on the workers that run now and on every worker started later (restarts)
            client.register_plugin(QuietTaskErrors(), name=QuietTaskErrors.name)
        except BaseException:
            client.close()
            raise
    return client


_SHUFFLE_LOGGER = "distributed.shuffle._scheduler_plugin"
_SHUFFLE_NOTES = ("Shuffle %s initialized", "Shuffle %s deactivated", "Shuffle %s restarted")


def _not_a_shuffle_note(record: logging.LogRecord) -> bool:
    """Logging filter: false for the scheduler's notes on a shuffle's life (distributed logs each
    P2P shuffle started, retried or finished as a WARNING): routine, not news for the user; the
    outcome of a failed shuffle reaches the client as the task's exception."""
    return not (isinstance(record.msg, str) and record.msg.startswith(_SHUFFLE_NOTES))


def _not_a_task_failure(record: logging.LogRecord) -> bool:
    """Logging filter: false for a worker's "Compute Failed" report of a failed task."""
    return not (isinstance(record.msg, str) and record.msg.startswith("Compute Failed"))


class QuietTaskErrors(distributed.WorkerPlugin):
    """Worker plugin: the worker does not log its "Compute Failed" reports (the failed task,
    its exception and traceback, 7 to 9 lines on the stderr the local workers share with the
    command). The exception itself still travels to the client, which raises it from
    ``compute``; the worker's other messages (memory, spilling, pausing) are untouched."""

    name = "ppdm-quiet-task-errors"

    def setup(self, worker: Any) -> None:
        logging.getLogger("distributed.worker").addFilter(_not_a_task_failure)  # idempotent

    def teardown(self, worker: Any) -> None:
        logging.getLogger("distributed.worker").removeFilter(_not_a_task_failure)


@contextlib.contextmanager
def quiet_distributed_logs(level: int = logging.CRITICAL) -> Iterator[None]:
    """Raise the level of distributed's loggers (``distributed`` and every ``distributed.*``
    logger that exists) to at least ``level`` in this process while the block runs; their
    levels are restored when it ends."""
    names = ["distributed"] + sorted(n for n in logging.root.manager.loggerDict if n.startswith("distributed."))
    loggers = [logging.getLogger(n) for n in names]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        if lg.getEffectiveLevel() < level:
            lg.setLevel(level)
    try:
        yield
    finally:
        for lg, old in zip(loggers, saved):
            lg.setLevel(old)


def close_client(client: distributed.Client | None, *, quiet: bool = False) -> None:
    """Close a client from :func:`get_client` (and the local cluster it started, if any).

    Parameters
    ----------
    client : distributed.Client or None
        The client; ``None`` is accepted and ignored.
    quiet : bool, default False
        Keep what distributed logs in this process while the cluster shuts down off stderr
        (e.g. "Worker process still alive after 4.0 seconds, killing" when a failed job
        closes a cluster whose workers are still busy): the job has ended, its outcome is
        reported by the caller.
    """
    if client is not None:
        if quiet and client.cluster is not None:
            _quiet_workers(client)
        # get_client lets Client() start the LocalCluster, so the client owns it and closes it.
        with quiet_distributed_logs() if quiet else contextlib.nullcontext():
            client.close()


def _quiet_process_logs() -> None:
    """Run on the workers of a local cluster about to close: what they log from now on (a
    heartbeat that finds the scheduler gone, ...) is the shutdown's, not news for the user."""
    for name in ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _quiet_workers(client: distributed.Client, timeout: float = 5.0) -> None:
    """:func:`_quiet_process_logs` on every worker of ``client``, waiting at most ``timeout``
    seconds (a worker busy in a task that holds the GIL answers late: the close goes on)."""

    def run() -> None:
        with contextlib.suppress(Exception):
            client.run(_quiet_process_logs, on_error="ignore")

    thread = threading.Thread(target=run, name="ppdm-quiet-workers", daemon=True)
    thread.start()
    thread.join(timeout)


@contextlib.contextmanager
def job_thread_pool() -> Iterator[None]:
    """Run a job on dask's ``threads`` scheduler; when it ends, wait for the tasks the pool still
    runs, then retire the pool (dask starts a new one for the next job).

    On an error dask's threads scheduler raises as soon as one task fails while the pool's
    other threads go on with their tasks: without this the error would be reported, and the
    process might begin to exit, while they still run (native code included). A
    ``KeyboardInterrupt`` does not wait (queued tasks are cancelled either way).
    """
    try:
        yield
    except BaseException as exc:
        _retire_default_pool(wait=not isinstance(exc, KeyboardInterrupt))
        raise
    _retire_default_pool(wait=True)


def _retire_default_pool(wait: bool) -> None:
    import dask.threaded

    with dask.threaded.pools_lock:
        pool, dask.threaded.default_pool = dask.threaded.default_pool, None
    if pool is not None:
        pool.shutdown(wait=wait, cancel_futures=True)


def _drop_unstarted_default() -> None:
    """Close the default client a failed start left behind: distributed registers a Client as
    the default before it starts its cluster, and one whose cluster failed to start stays the
    default ("connecting", no scheduler), where the next job of the process would find it."""
    try:
        client = distributed.default_client()
    except ValueError:
        return
    if client.status != "running":
        with contextlib.suppress(Exception):
            client.close(timeout=2)


def current_client() -> distributed.Client | None:
    """The active default distributed client, or ``None`` if there is none.

    Returns
    -------
    distributed.Client or None
    """
    try:
        client = distributed.default_client()
    except ValueError:
        return None
    if client.status in ("closing", "closed"):
        return None
    return cast(distributed.Client, client)  # distributed's default_client is not annotated


def memory_budget(share: float, client: distributed.Client | None = None, *, local: float) -> tuple[float, str]:
    """Bytes that ``share`` of the workers' memory holds (the smallest worker's limit times the
    number of workers), and a description; ``local`` bytes without a cluster (or without limits).

    Parameters
    ----------
    share : float
        Fraction of the memory that one kind of persisted state may take.
    client : distributed.Client, optional
        Default: the active one.
    local : float
        The budget on the local schedulers.
    """
    workers = _limited_workers(client)
    if workers:
        limits = [lim for _, lim in workers]
        return share * min(limits) * len(limits), f"{len(limits)} workers of {min(limits) / 2**20:,.0f} MiB"
    return float(local), "local scheduler"


def worker_memory_budget(share: float, client: distributed.Client | None = None, *, local: float) -> float:
    """Bytes that ``share`` of the smallest worker's memory limit holds (what one task's state may
    take on any worker); ``local`` without a cluster or without limits."""
    workers = _limited_workers(client)
    return share * min(lim for _, lim in workers) if workers else float(local)


def _limited_workers(client: distributed.Client | None) -> list[tuple[dict[str, Any], float]]:
    """``(scheduler's record, memory limit)`` of every worker of ``client`` (default: the active
    one); empty without a cluster or when any worker has no limit (nothing to plan against)."""
    client = client if client is not None else current_client()
    if client is None:
        return []
    workers = list(client.scheduler_info().get("workers", {}).values())
    limits = [float(w.get("memory_limit") or 0) for w in workers]
    if not limits or min(limits) <= 0:
        return []
    return list(zip(workers, limits))


def memory_headroom(client: distributed.Client | None = None) -> tuple[float, int] | None:
    """``(bytes, threads)``: the memory the workers have left below Dask's spill target
    (``distributed.worker.memory.target`` of each limit, less the process memory each worker
    reports: its libraries, caches and whatever it holds now) summed over the workers, and
    their threads; ``None`` without a cluster or without limits. A plan made after a first pass
    sees the footprint the workers really have, which fixed shares of the limit do not."""
    workers = _limited_workers(client)
    if not workers:
        return None
    target = float(dask.config.get("distributed.worker.memory.target", 0.6) or 0.6)
    left = sum(max(0.0, target * lim - float((w.get("metrics") or {}).get("memory") or 0)) for w, lim in workers)
    return left, sum(max(1, int(w.get("nthreads") or 1)) for w, _ in workers)


def memory_plan(
    nbytes: float, share: float, client: distributed.Client | None = None, *, local: float, what: str = "state"
) -> tuple[str, str, float]:
    """``("persist", why, budget)`` when ``nbytes`` fit in ``share`` of the workers' memory
    (``budget`` bytes, :func:`memory_budget`), else ``("stream", why, budget)``: state that does
    not fit is recomputed or re-read, never left to the Dask workers to spill."""
    budget, where = memory_budget(share, client, local=local)
    mib = 2**20
    within = (
        f"the local budget of {budget / mib:,.0f} MiB"
        if where == "local scheduler"
        else f"{share:.0%} of the memory of {where}: {budget / mib:,.0f} MiB"
    )
    head = f"{what}, {nbytes / mib:,.1f} MiB"
    if nbytes <= budget:
        return "persist", f"{head}: persist (within {within})", budget
    return "stream", f"{head}: stream (over {within}; recomputed or re-read at every pass instead of being spilled)", budget


__all__ = [
    "memory_budget",
    "worker_memory_budget",
    "memory_headroom",
    "memory_plan",
    "MALLOC_TRIM_THRESHOLD",
    "ARROW_MEMORY_POOL",
    "PRE_SPAWN_ENVIRON_KEY",
    "CONNECT_TIMEOUT",
    "SchedulerUnreachable",
    "get_client",
    "close_client",
    "quiet_distributed_logs",
    "QuietTaskErrors",
    "job_thread_pool",
    "current_client",
    "worker_environment",
    "configure_worker_environment",
]

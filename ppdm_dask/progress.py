"""Compute / persist dask collections with an optional progress bar on stderr.

Progress always goes to **stderr** so that machine-readable output on stdout (``ppdm --json``)
stays clean. On a terminal a live bar is drawn; when stderr is not a TTY (logs, CI, pipes) no
live bar is drawn and a single summary line is written when the work is done.

The scheduler is chosen like :func:`dask.compute` does: an explicit ``client``, else an explicit
``scheduler=`` keyword or ``dask.config`` ``scheduler`` setting (e.g. ``"threads"``), else the
active distributed client (:func:`ppdm_dask.cluster.current_client`), else dask's default.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

import dask
import distributed
from dask.diagnostics import ProgressBar
from dask.utils import format_time

from .cluster import current_client

_BAR_WIDTH = 40


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced / closed stream
        return False


def _summary_line(elapsed: float) -> str:
    return f"[{'#' * _BAR_WIDTH}] | 100% Completed | {format_time(elapsed)}\n"


@contextlib.contextmanager
def _summary_on_success() -> Iterator[None]:
    """Non-TTY progress: one line once the work has finished successfully."""
    start = time.perf_counter()
    yield
    with contextlib.suppress(ValueError, OSError, AttributeError):
        sys.stderr.write(_summary_line(time.perf_counter() - start))
        sys.stderr.flush()


def _pick_client(client: distributed.Client | None, kwargs: dict[str, Any]) -> distributed.Client | None:
    """The distributed client to use (removing ``scheduler`` from kwargs), or None for dask's."""
    if client is not None:
        kwargs.pop("scheduler", None)
        return client
    scheduler = kwargs.get("scheduler")
    if scheduler is None:
        scheduler = dask.config.get("scheduler", None)
    if isinstance(scheduler, distributed.Client):
        kwargs.pop("scheduler", None)
        return scheduler
    if scheduler is None or scheduler in ("dask.distributed", "distributed"):
        active = current_client()
        if active is not None:
            kwargs.pop("scheduler", None)
        return active
    # An explicit local scheduler (``threads``, ``sync``, ...) wins over the default client,
    # exactly as in dask.compute; let dask resolve it.
    return None


def _distributed_progress(futures: Sequence[Any]) -> None:
    """Block until ``futures`` are done, drawing distributed's text bar on stderr."""
    if not futures:
        return
    if _stderr_is_tty():
        # distributed's TextProgressBar writes to ``sys.stdout`` (looked up at write time, from
        # the client's event-loop thread); a process-wide redirect is the only public way to
        # move it. It is in place only while the bar blocks.
        with contextlib.redirect_stdout(sys.stderr):
            distributed.progress(futures, notebook=False)
    else:
        with _summary_on_success():
            distributed.wait(futures)


def _local_progress() -> contextlib.AbstractContextManager[Any]:
    if _stderr_is_tty():
        return ProgressBar(out=sys.stderr)
    return _summary_on_success()


def compute(
    *collections: Any,
    progress: bool = False,
    client: distributed.Client | None = None,
    **kwargs: Any,
) -> tuple[Any, ...]:
    """Compute dask collections, like :func:`dask.compute`, with optional progress on stderr.

    Parameters
    ----------
    *collections
        Dask collections (arrays, dataframes, delayed ...); other objects pass through.
    progress : bool, default False
        Show a progress bar (live on a TTY, one summary line otherwise) on stderr.
    client : distributed.Client, optional
        Client to run on. Default: the active default client, unless a local scheduler was
        requested with ``scheduler=`` or ``dask.config``.
    **kwargs
        Passed to ``Client.compute`` or ``dask.compute`` (e.g. ``optimize_graph``,
        ``scheduler``).

    Returns
    -------
    tuple
        One result per input collection, as :func:`dask.compute` returns them.
    """
    active = _pick_client(client, kwargs)
    if active is None:
        with _local_progress() if progress else contextlib.nullcontext():
            return dask.compute(*collections, **kwargs)

    futures = active.compute(list(collections), **kwargs)
    try:
        if progress:
            # as_current: distributed.wait/progress look up the *default* client, which need not
            # be this one (a Client(set_as_default=False) passed in explicitly)
            with active.as_current():
                _distributed_progress(distributed.futures_of(futures))
        return tuple(active.gather(futures))
    except BaseException:
        # Ctrl-C or a failure: do not leave the rest of the graph running on the cluster.
        with contextlib.suppress(Exception):
            active.cancel(distributed.futures_of(futures))
        raise


def persist(
    *collections: Any,
    progress: bool = False,
    client: distributed.Client | None = None,
    **kwargs: Any,
) -> tuple[Any, ...]:
    """Persist dask collections in (cluster) memory, like :func:`dask.persist`.

    On a distributed client this blocks until the data is in worker memory (showing progress
    if requested), so the returned collections are immediately cheap to use.

    Parameters
    ----------
    *collections
        Dask collections; other objects pass through.
    progress : bool, default False
        Show a progress bar (live on a TTY, one summary line otherwise) on stderr.
    client : distributed.Client, optional
        Client to run on. Default: as in :func:`compute`.
    **kwargs
        Passed to ``Client.persist`` or ``dask.persist``.

    Returns
    -------
    tuple
        The persisted collections, one per input.
    """
    active = _pick_client(client, kwargs)
    if active is None:
        with _local_progress() if progress else contextlib.nullcontext():
            return dask.persist(*collections, **kwargs)

    persisted = active.persist(list(collections), **kwargs)
    futures = distributed.futures_of(persisted)
    try:
        with active.as_current():  # wait/progress use the default client (see compute)
            if progress:
                _distributed_progress(futures)
            if futures:
                distributed.wait(futures)
        for future in futures:
            if future.status == "error":
                future.result()  # re-raise the task's exception, as dask.persist would
    except BaseException:
        with contextlib.suppress(Exception):
            active.cancel(futures)
        raise
    return tuple(persisted)


__all__ = ["compute", "persist"]

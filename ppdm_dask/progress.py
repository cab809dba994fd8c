"""Compute / persist dask collections with optional progress on stderr.

Progress always goes to **stderr** so that machine-readable output on stdout (``ppdm --json``)
stays clean. On a terminal a live bar is drawn. When stderr is not a terminal (a log file, CI,
a pipe) no bar is drawn — a bar's carriage returns would turn a log into one huge line —: a
plain line ``[progress] 42% of 310 tasks, 20s`` (of the results, on a distributed cluster) every ``PPDM_PROGRESS_INTERVAL`` seconds (default
10) while the work runs, and a ``done`` line at the end of work that lasted that long; short work
writes nothing.

The scheduler is chosen like :func:`dask.compute` does: an explicit ``client``, else an explicit
``scheduler=`` keyword or ``dask.config`` ``scheduler`` setting (e.g. ``"threads"``), else the
active distributed client (:func:`ppdm_dask.cluster.current_client`), else dask's default.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import dask
import distributed
from dask.callbacks import Callback
from dask.delayed import Delayed
from dask.diagnostics import ProgressBar
from dask.utils import format_time

from .cluster import current_client
from .errors import with_message

_DEFAULT_INTERVAL = 10.0


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced / closed stream
        return False


def log_interval() -> float:
    """Seconds between two plain progress lines (``PPDM_PROGRESS_INTERVAL``, default 10)."""
    try:
        return max(0.05, float(os.environ.get("PPDM_PROGRESS_INTERVAL", _DEFAULT_INTERVAL)))
    except ValueError:
        return _DEFAULT_INTERVAL


def _write(line: str) -> None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class _PlainLines:
    """Plain progress lines from a background thread: ``report()`` returns ``(done, total)``."""

    def __init__(self, report: Callable[[], tuple[int, int]], unit: str = "tasks") -> None:
        self._report = report
        self._unit = unit
        self._stop = threading.Event()
        self._start = time.perf_counter()
        self._printed = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _line(self, prefix: str) -> None:
        done, total = self._report()
        pct = f"{100 * done / total:.0f}% of {total:,} {self._unit}" if total else "started"
        _write(f"[progress] {prefix}{pct}, {format_time(time.perf_counter() - self._start)}")
        self._printed = True

    def _run(self) -> None:
        interval = log_interval()
        while not self._stop.wait(interval):
            self._line("")

    def __enter__(self) -> _PlainLines:
        self._thread.start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        if self._printed and exc_type is None:
            self._line("done: ")


class _LocalLines(Callback):
    """Plain progress lines for dask's local schedulers (threads, processes, sync)."""

    def __init__(self) -> None:
        super().__init__()
        self._state: dict | None = None
        self._lines: _PlainLines | None = None

    def _counts(self) -> tuple[int, int]:
        s = self._state
        if not s:
            return 0, 0
        done = len(s["finished"])
        return done, done + sum(len(s[k]) for k in ("ready", "waiting", "running"))

    def _start(self, dsk: Any) -> None:
        self._lines = _PlainLines(self._counts).__enter__()

    def _pretask(self, key: Any, dsk: Any, state: dict) -> None:
        self._state = state

    def _finish(self, dsk: Any, state: dict, errored: bool) -> None:
        self._state = state
        if self._lines is not None:
            self._lines.__exit__(RuntimeError if errored else None)


def pick_client(client: distributed.Client | None, kwargs: dict[str, Any]) -> distributed.Client | None:
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
    """Block until ``futures`` are done: distributed's bar on a terminal, plain lines otherwise."""
    if not futures:
        return
    if _stderr_is_tty():
        # distributed's TextProgressBar writes to ``sys.stdout`` (looked up at write time, from
        # the client's event-loop thread); a process-wide redirect is the only public way to
        # move it. It is in place only while the bar blocks.
        with contextlib.redirect_stdout(sys.stderr):
            distributed.progress(futures, notebook=False)
        return
    futures = list(futures)

    def counts() -> tuple[int, int]:
        return sum(f.done() for f in futures), len(futures)

    with _PlainLines(counts, unit="results"):  # the scheduler's task counts are not public API
        distributed.wait(futures)


def _local_progress() -> contextlib.AbstractContextManager[Any]:
    if _stderr_is_tty():
        return ProgressBar(out=sys.stderr)
    return _LocalLines()


def _reraise(exc: BaseException) -> NoReturn:
    """Raise a task's exception that came back from a worker, with its message restored when the
    trip lost it (:func:`ppdm_dask.errors.with_message`)."""
    fixed = with_message(exc)
    if fixed is exc:
        raise exc
    raise fixed from exc.__cause__


def _one_graph(obj: Any) -> Any:
    """A list or tuple of delayed objects as one delayed object of the same type.

    dask optimizes (culls) every delayed object of a list separately, each against the whole
    graph it shares with the others: the write tasks of a release, which all depend on one
    shuffle, took O(files x tasks) to submit (51 s of a 150 s write at 30 M rows, against 3 s
    at 10 M). As one collection the graph is optimized once; the result is the same.
    """
    if type(obj) in (list, tuple) and len(obj) > 1 and all(isinstance(o, Delayed) for o in obj):
        return dask.delayed(type(obj), pure=True)(list(obj))
    return obj


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
    collections = tuple(_one_graph(c) for c in collections)
    active = pick_client(client, kwargs)
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
    except BaseException as exc:
        # Ctrl-C or a failure: do not leave the rest of the graph running on the cluster.
        with contextlib.suppress(Exception):
            active.cancel(distributed.futures_of(futures))
        _reraise(exc)


def compute_each(tasks: Sequence[Any], consume: Callable[[int, Any], None], *, client: distributed.Client | None = None) -> None:
    """Compute the delayed ``tasks`` and call ``consume(i, result)`` as soon as task ``i`` is ready.

    On a distributed client every result is released from the cluster once consumed, so the
    results never pile up in the workers' memory (as they do until the last task finishes with
    :func:`compute`); on the local schedulers they are computed together, then consumed.
    """
    active = pick_client(client, {})
    if active is None:
        for i, result in enumerate(dask.compute(*tasks)):
            consume(i, result)
        return
    futures = active.compute(list(tasks))
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        with active.as_current():  # as_completed looks up the current client
            for future in distributed.as_completed(futures):
                consume(index[future.key], future.result())
                future.release()
    except BaseException as exc:
        with contextlib.suppress(Exception):
            active.cancel(futures)
        _reraise(exc)


def ship(payloads: Sequence[Any], client: distributed.Client | None = None) -> list:
    """Driver-side payloads (arrays, tuples of arrays) for tasks: scattered to the workers of a
    distributed client, so the task graph stays small and each payload travels once; on the local
    schedulers they are returned as they are (embedded in the graph, where nothing travels)."""
    active = pick_client(client, {})
    return list(active.scatter(list(payloads), hash=False)) if active is not None else list(payloads)


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
    active = pick_client(client, kwargs)
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
    except BaseException as exc:
        with contextlib.suppress(Exception):
            active.cancel(futures)
        _reraise(exc)
    return tuple(persisted)


__all__ = ["compute", "compute_each", "persist", "step_reporter", "log_interval", "pick_client"]


def step_reporter(label: str) -> Callable[[int, int, str], None]:
    """Progress of a driver-side loop (e.g. the KRIMP search): call it with ``(done, total,
    extra)``. On a terminal it redraws one line; otherwise it writes a plain line at most every
    ``PPDM_PROGRESS_INTERVAL`` seconds, and a last one when ``done == total`` if it wrote any."""
    tty = _stderr_is_tty()
    interval = log_interval()
    start = time.perf_counter()
    state = {"last": start, "printed": False}

    def report(done: int, total: int, extra: str = "") -> None:
        text = f"{label}: {done:,}/{total:,}" + (f", {extra}" if extra else "")
        if tty:
            end = "\n" if done >= total else ""
            with contextlib.suppress(ValueError, OSError, AttributeError):
                sys.stderr.write(f"\r{text}{end}")
                sys.stderr.flush()
            return
        now = time.perf_counter()
        if now - state["last"] >= interval or (done >= total and state["printed"]):
            _write(f"[progress] {text}, {format_time(now - start)}")
            state["last"], state["printed"] = now, True

    return report

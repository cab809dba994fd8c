"""The core of the ``ppdm`` command line: global options, the scheduler, and the job helper every
command runs in (inputs and outputs checked, then the scheduler started; :mod:`._errors` turns
failures into the error line and the exit code).

A job's order is the user's time: usage errors and refused options first (in the command, before
:func:`job`), then a missing input or an existing output, and only then the scheduler — the
default LocalCluster takes seconds to start and is started for work that can run.

Exit codes: 0 success; 1 an unexpected error (a bug: one line, ``--debug`` for the traceback);
2 bad input, a usage error, a refused parameter or a failed check; 130 interrupted.
Every error is one ``ppdm: error: ...`` line on stderr that names the file, column or option at
fault and, where one exists, the flag that fixes it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import PPDMError
from ._errors import usage_error
from ._inputs import refuse_missing
from ._sources import check_basket_source, read_events
from .flags import cli_message

if TYPE_CHECKING:
    from ..base import Estimator
    from ..random import Key

LOCAL_SCHEDULERS = ("sync", "synchronous", "threads", "processes")


class Context:
    """Global options shared by the sub-commands (``ctx.obj``)."""

    def __init__(
        self,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        key_file: str | None = None,
        as_json: bool = False,
        progress: bool = True,
        debug: bool = False,
        verify_input: bool = False,
        ledger: str | None = None,
        no_ledger: bool = False,
    ) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.storage_options = dict(storage_options or {})
        self.key_file = key_file
        self.as_json = as_json
        self.progress = progress
        self.debug = debug
        self.verify_input = verify_input
        #: ``--as-baskets`` of the command: text input that looks like a table is read as baskets
        self.as_baskets = False
        self.ledger_url = ledger
        self.no_ledger = bool(no_ledger)
        #: ``--allow-composition`` of the release command (set by the option's callback)
        self.allow_composition = False
        #: where a basket reader finds the baskets: ``--items-column``, or an event table's
        #: ``--user``/``--item``/``--time``... (set by the options' callbacks)
        self.basket_source: dict[str, Any] = {}
        #: the command writes a release (set by the release options' callback)
        self.writes_release = False

    def ledger(self) -> Any:
        """The release ledger of the job (``--ledger``, else the default), or None with
        ``--no-ledger``."""
        self.check_ledger_options()
        if self.no_ledger:
            return None
        from ..ledger import Ledger

        return Ledger(
            self.ledger_url, storage_options=self.storage_options if self.ledger_url and "://" in self.ledger_url else None
        )

    def check_ledger_options(self) -> None:
        """Refuse ``--ledger`` with ``--no-ledger`` (a job checks this before it starts)."""
        if self.no_ledger and self.ledger_url:
            raise usage_error("--ledger and --no-ledger contradict each other", "give one of them")

    @contextlib.contextmanager
    def runtime(self) -> Iterator[str]:
        """Activate the scheduler for a job; yields a description of it.

        A bad ``--key-file`` is refused before a cluster starts. On ``threads`` a failing job
        leaves only once the pool is idle (:func:`ppdm_dask.cluster.job_thread_pool`). The
        default LocalCluster keeps the workers' reports of failed tasks off stderr (the error
        is the command's one line) and closes quietly (``quiet``; not with ``--debug``). With
        ``--as-baskets`` every basket reader of the job reads a table-like text file as baskets
        (also the readers called inside the job, such as verify's ``--original``).
        """
        from ..data.kind import reading_as_baskets

        if self.key_file is not None and Path(self.key_file).exists():
            self.key()
        with reading_as_baskets() if self.as_baskets else contextlib.nullcontext(), self._scheduler() as where:
            yield where

    @contextlib.contextmanager
    def _scheduler(self) -> Iterator[str]:
        """The scheduler of :meth:`runtime`."""
        import dask

        if self.scheduler in LOCAL_SCHEDULERS:
            from ..cluster import job_thread_pool

            with (
                dask.config.set(scheduler=self.scheduler),
                job_thread_pool() if self.scheduler == "threads" else contextlib.nullcontext(),
            ):
                yield f"local {self.scheduler} scheduler"
            return
        from ..cluster import close_client, get_client

        quiet = self.scheduler is None and not self.debug  # the LocalCluster started for this job
        client = get_client(self.scheduler, n_workers=self.workers, quiet=quiet)
        try:
            yield self.scheduler or f"LocalCluster ({len(client.scheduler_info()['workers'])} process workers)"
        finally:
            close_client(client, quiet=quiet)

    def key(self) -> Key:
        """The random key: read from --key-file, or created there, or a fresh secret one."""
        from ..errors import InvalidParameter
        from ..random import Key

        if self.key_file is None:
            return Key.generate()
        path = Path(self.key_file)
        if path.exists():
            return Key.from_file(path)
        key = Key.generate()
        try:
            key.to_file(path)
        except OSError as exc:
            raise InvalidParameter(
                f"cannot create key file {path}: {exc.strerror or exc}",
                cli="--key-file: give a path in an existing, writable folder",
            ) from None
        click.echo(f"new random key written to {path} (keep it secret; reuse it to reproduce this run)", err=True)
        return key

    # ------------------------------------------------------------------ reading
    def read_transactions(self, url: str, fmt: str | None = None) -> Any:
        """Transactions from ``url`` (Parquet checksums checked with ``--verify-input``): baskets
        in any supported format, a list column named by ``--items-column``, or an event table
        grouped into baskets by ``--user``/``--item`` (:meth:`read_events`)."""
        from ..data.formats import detect_format
        from ..io import read

        if "user" in self.basket_source:
            return read_events(self, url, fmt)[0]
        kw: dict[str, Any] = {"verify": True} if self.verify_input and (fmt or detect_format(url)) == "parquet" else {}
        if "items_column" in self.basket_source:
            kw["items_column"] = self.basket_source["items_column"]
        return read(url, format=fmt, storage_options=self.storage_options, progress=self.progress, **kw)

    def transactions_for_passes(self, url: str, fmt: str | None = None) -> tuple[Any, str]:
        """Transactions a job reads several times (see :func:`ppdm_dask.io.input_for_passes`),
        and the reason for the job summary."""
        from ..io import input_for_passes

        return input_for_passes(self.read_transactions(url, fmt), url, format=fmt, progress=self.progress)

    def read_table(self, url: str, *, sep: str | None = None, dtype: Sequence[str] = (), schema: str | None = None) -> Any:
        """A typed table from CSV or Parquet (see :func:`ppdm_dask.data.tables.read_table`)."""
        from ..data.tables import read_table

        return read_table(
            url, storage_options=self.storage_options, sep=sep, dtype=list(dtype), schema=schema, verify=self.verify_input
        )

    # ------------------------------------------------------------------ output
    def emit(self, summary: Mapping[str, Any], text: str) -> None:
        """Print the job summary as JSON (--json) or as text, on stdout."""
        if self.as_json:
            click.echo(json.dumps(summary, indent=1, default=json_default))
        else:
            click.echo(text)


def json_default(obj: Any) -> Any:
    """JSON of what :func:`json.dumps` does not know: numpy numbers and arrays as numbers and
    lists, anything else as its text."""
    np = sys.modules.get("numpy")  # a numpy value exists only once numpy is loaded: no import here
    if np is not None:
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj)
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    return str(obj)


# ---------------------------------------------------------------------- jobs
@dataclass
class Job:
    """What a running command knows about its job: where it runs and since when."""

    where: str
    start: float = field(default_factory=time.perf_counter)

    @property
    def seconds(self) -> float:
        return round(time.perf_counter() - self.start, 3)


@contextlib.contextmanager
def job(
    obj: Context,
    *,
    inputs: Sequence[str | None] = (),
    outputs: Sequence[str | None] = (),
    overwrite: bool = False,
    estimators: Sequence[Estimator] = (),
) -> Iterator[Job]:
    """Run a command's work: refuse a refused parameter of ``estimators``, a missing input and an
    existing output **before** any work (no cluster is started for a job that cannot run), then
    activate the scheduler and time the job."""
    obj.check_ledger_options()
    check_basket_source(obj.basket_source)
    for est in estimators:
        est.validate_params()
    for url in inputs:
        if url:
            refuse_missing(url, obj.storage_options)
    from ..data.folder import refuse_existing
    from ..release import is_csv_destination, sidecar_manifest

    named = [u for u in outputs if u]
    places = [u if "://" in u else str(Path(u).expanduser().resolve()) for u in named]
    for i, place in enumerate(places):
        if place in places[:i]:  # the second commit would replace (or be refused by) the first
            raise usage_error(f"two outputs of this job name the same location {named[i]}", "give each output its own path")
    for url in outputs:
        if url:
            refuse_existing(url, obj.storage_options, overwrite=overwrite)
            if is_csv_destination(url):
                refuse_existing(sidecar_manifest(url), obj.storage_options, overwrite=overwrite)
    with obj.runtime() as where:
        yield Job(where)


def write_release(
    obj: Context,
    release: Any,
    dst: str | None,
    *,
    original: Any = None,
    overwrite: bool = False,
    rows_per_file: int | None = None,
    check: bool = True,
    report: bool = True,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Write ``release`` at ``dst`` (nothing without ``dst``) and, unless ``report`` is false, its
    privacy and utility report beside it (against ``original``, the job's input; the verdict is
    the one recounted on the written files before the commit). Returns ``(manifest, report
    paths)``, the paths with the report's ``decision``."""
    if not dst:
        return None, None
    manifest = release.write(
        dst,
        storage_options=obj.storage_options,
        overwrite=overwrite,
        progress=obj.progress,
        rows_per_file=rows_per_file,
        check=check,
        ledger=obj.ledger(),
        allow_composition=obj.allow_composition,
        notify=lambda line: click.echo(line, err=True),
    )
    if not report:
        return manifest, None
    from ..verification import open_release

    written = open_release(dst, storage_options=obj.storage_options).adopt(release)
    try:
        doc = written.report(
            original, storage_options=obj.storage_options, verify=False, overwrite=overwrite, progress=obj.progress
        )
    except PPDMError as exc:  # the release is committed and verified: a report that cannot be made does not undo that
        click.echo(
            f"ppdm: warning: {dst} is written and verified, but its report could not be made: "
            f"{cli_message(exc)} ('ppdm report {dst}' retries)",
            err=True,
        )
        return manifest, None
    return manifest, {**doc["paths"], "decision": doc.get("decision")}

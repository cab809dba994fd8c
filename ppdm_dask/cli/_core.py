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
        #: what each event table read by this job held (its :class:`EventSummary`, as a dict)
        self.event_summaries: list[dict[str, Any]] = []

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
    def check_basket_source(self) -> None:
        """Refuse contradicting basket-source options (a job checks this before it starts)."""
        src = self.basket_source
        events = [
            f for f in ("user", "item", "time", "session_gap", "window", "count", "max_user_events", "heavy_users") if f in src
        ]
        if events and "items_column" in src:
            raise usage_error("--items-column reads a list column; --user/--item read an event table", "give one of them")
        if events and not ("user" in src and "item" in src):
            missing = "--user" if "user" not in src else "--item"
            raise usage_error(f"an event table needs both --user and --item (missing {missing})", f"add {missing} COL")
        if "session_gap" in src and "window" in src:
            raise usage_error("--session-gap and --window cut baskets two ways", "give one of them")
        if ("session_gap" in src or "window" in src) and "time" not in src:
            flag = "--session-gap" if "session_gap" in src else "--window"
            raise usage_error(f"{flag} needs the time of each event", "add --time COL")

    def read_transactions(self, url: str, fmt: str | None = None) -> Any:
        """Transactions from ``url`` (Parquet checksums checked with ``--verify-input``): baskets
        in any supported format, a list column named by ``--items-column``, or an event table
        grouped into baskets by ``--user``/``--item`` (:meth:`read_events`)."""
        from ..data.formats import detect_format
        from ..io import read

        if "user" in self.basket_source:
            return self.read_events(url, fmt)[0]
        kw: dict[str, Any] = {"verify": True} if self.verify_input and (fmt or detect_format(url)) == "parquet" else {}
        if "items_column" in self.basket_source:
            kw["items_column"] = self.basket_source["items_column"]
        return read(url, format=fmt, storage_options=self.storage_options, progress=self.progress, **kw)

    def ingest_key(self) -> Key:
        """The key of the keyed order of baskets grouped from an event table: the ``--key-file``
        key; for a release read straight from the events without one, a key derived from the
        ledger's secret, so that the same events give the same baskets in the same order and the
        ledger composes every release of them as releases of one input (a fresh key would make
        each a new input); else a fresh key."""
        if self.key_file is None and self.writes_release and not self.no_ledger:
            import hashlib
            import hmac

            from ..random import Key

            secret = self.ledger().secret()
            return Key(int.from_bytes(hmac.new(secret, b"ppdm-ingest-order", hashlib.sha256).digest()[:16], "little"))
        return self.key()

    def read_events(
        self, url: str, fmt: str | None = None, *, user_map: str | None = None, staging: str | None = None
    ) -> tuple[Any, Any]:
        """The baskets of the event table at ``url`` (``--user``, ``--item`` ...; see
        :func:`ppdm_dask.data.events.read_events`) and its summary, told on stderr in one line
        (the heavy users by pseudonym only: the user column is never printed)."""
        from ..data.events import read_events

        src = {k: v for k, v in self.basket_source.items() if k != "items_column"}
        if fmt is not None and fmt not in ("parquet", "csv"):
            raise usage_error(f"an event table is read from Parquet or CSV, not --format {fmt}", "--format parquet or csv")
        tx, summary = read_events(
            url,
            key=self.ingest_key(),
            user_map=user_map,
            staging=staging,
            format=fmt,
            storage_options=self.storage_options,
            progress=self.progress,
            **src,
        )
        self.event_summaries.append(summary.as_dict())
        click.echo(f"[events] {summary_line(url, summary)}", err=True)
        return tx, summary

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


def summary_line(url: str, summary: Any) -> str:
    """What an event table held and gave, in one line (counts only; heavy users by pseudonym)."""
    d = summary.as_dict()
    unit = {"user": "users", "session": "sessions", "window": "user windows"}.get(d["mode"], "baskets")
    text = (
        f"{url}: {d['n_events']:,} events of {d['n_users']:,} users -> {d['n_baskets']:,} baskets ({unit}) "
        f"over {d['n_items']:,} items"
    )
    dropped = {f: d.get(f, 0) for f in ("n_null_user", "n_null_item", "n_null_time")}
    if any(dropped.values()):
        text += "; skipped events with no " + ", ".join(f"{f.removeprefix('n_null_')} ({n:,})" for f, n in dropped.items() if n)
    if d.get("n_heavy"):
        named = ", ".join(f"{p} ({n:,} events)" for p, n in d["heavy_users"][:3])
        text += f"; {d['n_heavy']:,} heavy users ({d['heavy_policy']}): {named}" + (" ..." if d["n_heavy"] > 3 else "")
    return text


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
    obj.check_basket_source()
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

"""Where a basket command finds its baskets: a list column of any name (``--items-column``) or an
event table grouped into baskets (``--user``, ``--item``, ``--time`` ...; see
:mod:`ppdm_dask.data.events`). The options' callbacks fill ``Context.basket_source``; the job's
readers take the baskets from there."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import posixpath
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import click

from ._errors import usage_error

__all__ = [
    "EVENT_OPTIONS",
    "check_basket_source",
    "ingest_key",
    "person_key",
    "read_events",
    "staging_beside",
    "summary_line",
]

#: the Python names of the event-table options (``Context.basket_source`` keys)
EVENT_OPTIONS = (
    "user",
    "item",
    "time",
    "session_gap",
    "window",
    "count",
    "max_user_events",
    "heavy_users",
    "max_baskets_per_user",
)


def check_basket_source(src: Mapping[str, Any]) -> None:
    """Refuse contradicting basket-source options in one usage error (before any work)."""
    events = [f for f in EVENT_OPTIONS if f in src]
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


def ingest_key(obj: Any) -> Any:
    """The key of the keyed order of baskets grouped from an event table: the ``--key-file`` key;
    for a release read straight from the events without one, a key derived from the ledger's
    secret, so that the same events give the same baskets in the same order and the ledger
    composes every release of them as releases of one input (a fresh key would make each a new
    input); else a fresh key."""
    if obj.key_file is None and obj.writes_release and not obj.no_ledger:
        from ..random import Key

        secret = obj.ledger().secret()
        return Key(int.from_bytes(hmac.new(secret, b"ppdm-ingest-order", hashlib.sha256).digest()[:16], "little"))
    return obj.key()


def person_key(obj: Any) -> Any:
    """The key of the ``person`` column of baskets grouped from an event table: with a ledger,
    the ledger's key of persons (derived from its secret), so that one user has the same
    pseudonym in every release recorded there, whatever the ingest's parameters or order key;
    with ``--no-ledger`` the job's key (``--key-file``, else a fresh one)."""
    if not obj.no_ledger:
        ledger = obj.ledger()
        ledger.check_writable()  # an unwritable ledger: one error naming it
        return ledger.person_key()
    return obj.key()


def read_events(
    obj: Any, url: str, fmt: str | None = None, *, user_map: str | None = None, staging: str | None = None, tell: bool = True
) -> tuple[Any, Any]:
    """The baskets of the event table at ``url`` (``--user``, ``--item`` ...; see
    :func:`ppdm_dask.data.events.read_events`) and its summary, told on stderr in one line (the
    heavy users by pseudonym only: the user column is never printed; ``tell=False`` for a command
    whose own summary says it)."""
    from ..data.events import read_events as group

    if fmt is not None and fmt not in ("parquet", "csv"):
        raise usage_error(f"an event table is read from Parquet or CSV, not --format {fmt}", "--format parquet or csv")
    src = {k: v for k, v in obj.basket_source.items() if k in EVENT_OPTIONS}
    tx, summary = group(
        url,
        key=ingest_key(obj),
        person_key=person_key(obj),
        user_map=user_map,
        staging=staging,
        format=fmt,
        storage_options=obj.storage_options,
        progress=obj.progress,
        **src,
    )
    if tell:
        click.echo(f"[events] {summary_line(url, summary)}", err=True)
    return tx, summary


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
    per = d.get("baskets_per_user") or {}
    if d["mode"] != "user" and per:
        text += f"; baskets per user: median {per['median']:g}, p90 {per['p90']:g}, max {per['max']:,}"
    if d.get("max_baskets_per_user") is not None:
        text += (
            f"; at most {d['max_baskets_per_user']:,} baskets per user: dropped {d['n_baskets_over_bound']:,} "
            f"baskets of {d['n_users_over_bound']:,} users"
        )
    return text


@contextlib.contextmanager
def staging_beside(dst: str, storage_options: Mapping[str, Any] | None = None) -> Iterator[str]:
    """A hidden staging folder beside ``dst`` for the shuffle of an ingest (its pieces go through
    files there, so the workers hold one block per task whatever the size of the event table),
    removed when the job ends, failed or not."""
    from fsspec.core import url_to_fs

    head, name = posixpath.split(dst.rstrip("/"))
    folder = (
        posixpath.join(head, f".{name}.ingest-staging-{secrets.token_hex(4)}")
        if head
        else f".{name}.ingest-staging-{secrets.token_hex(4)}"
    )
    try:
        yield folder
    finally:
        fs, path = url_to_fs(folder, **dict(storage_options or {}))
        if fs.exists(path):
            fs.rm(path, recursive=True)

"""``ppdm ingest``: an event table (one row per user and item) grouped into a basket dataset."""

from __future__ import annotations

import posixpath
from pathlib import Path

import click

from ._core import Context, job
from ._errors import usage_error
from ._options import FORMATS, event_source, overwrite
from ._sources import read_events, staging_beside, summary_line


def _place(url: str) -> str:
    """A location compared with another: a resolved local path, or the URL without a trailing /."""
    return url.rstrip("/") if "://" in url else str(Path(url).expanduser().resolve())


def refuse_user_map_inside(user_map: str | None, dst: str) -> None:
    """The user map links baskets back to people: it may not go inside the dataset's folder, which
    is shared with the baskets (one usage error before any work)."""
    if user_map is None:
        return
    inner, outer = _place(user_map), _place(dst)
    if inner == outer or inner.startswith(outer.rstrip("/") + ("/" if "://" in outer else posixpath.sep)):
        raise usage_error(
            f"--user-map {user_map} is inside the output {dst}: the map from users to rows must stay private",
            "give --user-map a path outside DST",
        )


@click.command()
@click.argument("src")
@click.argument("dst")
@event_source
@click.option(
    "--from",
    "src_fmt",
    type=click.Choice(["parquet", "csv"]),
    default=None,
    help="Input format (default: from the extension; a folder is Parquet, Hive partitions included).",
)
@click.option(
    "--to",
    "dst_fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format (default: from the extension; a folder is a ppdm Parquet dataset).",
)
@click.option(
    "--user-map",
    default=None,
    metavar="FILE",
    help="Also write the private map from each user to their rows (Parquet; outside DST; keep it secret).",
)
@overwrite
@click.pass_obj
def ingest(
    obj: Context, src: str, dst: str, src_fmt: str | None, dst_fmt: str | None, user_map: str | None, overwrite: bool
) -> None:
    """Group an event table (one row per user and item, optionally timed) into baskets: one per
    user, per session (--session-gap) or per time window (--window).

    The user column is an identifier: it is never written, printed or logged; the baskets are
    written in a random order derived from the key (--key-file), and only --user-map writes the
    link from users to rows, into a private file of its own. Every basket command reads an event
    table directly with the same options; ingest once to release or mine it several times."""
    if "user" not in obj.basket_source or "item" not in obj.basket_source:
        missing = "--user" if "user" not in obj.basket_source else "--item"
        raise usage_error(f"Missing option '{missing}' (the {missing[2:]} column of the event table)", f"add {missing} COL")
    refuse_user_map_inside(user_map, dst)
    from ..io import write

    with (
        job(obj, inputs=[src], outputs=[dst, user_map], overwrite=overwrite) as j,
        staging_beside(dst, obj.storage_options) as staging,
    ):
        tx, s = read_events(obj, src, src_fmt, user_map=user_map, staging=staging, tell=False)
        write(tx, dst, format=dst_fmt, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    summary = {"src": src, "dst": dst, **s.as_dict(), "n_partitions": tx.n_partitions, "user_map": user_map, "seconds": j.seconds}
    lines = [
        f"{summary_line(src, s)}",
        f"  wrote {tx.n_transactions:,} baskets to {dst} ({tx.n_partitions} partitions) in {j.seconds:.1f} s",
    ]
    if user_map:
        lines.append(f"  private user map: {user_map} (it links the baskets to people: keep it apart from the data)")
    obj.emit(summary, "\n".join(lines))

"""Data commands: ``info``, ``convert``, ``generate quest``, ``samples``."""

from __future__ import annotations

import os
from typing import Any

import click
import numpy as np

from ._core import Context, job
from ._options import as_baskets, basket_source, input_format, overwrite


def _histogram_text(hist: dict[int, int], width: int = 40) -> list[str]:
    if not hist:
        return ["  (no transactions)"]
    lo, hi = min(hist), max(hist)
    n_bins = min(12, hi - lo + 1)  # group lengths into at most 12 bins
    edges = np.linspace(lo, hi + 1, n_bins + 1)
    counts = np.zeros(n_bins, np.int64)
    for k, v in hist.items():
        counts[min(int(np.searchsorted(edges, k, side="right")) - 1, n_bins - 1)] += v
    top = counts.max()
    lines = []
    for i in range(n_bins):
        a, b = int(np.ceil(edges[i])), int(np.ceil(edges[i + 1])) - 1
        label = f"{a}" if a >= b else f"{a}-{b}"
        lines.append(f"  {label:>9} | {'#' * int(round(width * counts[i] / top)) if top else ''} {counts[i]}")
    return lines


def describe_text(url: str, d: dict[str, Any]) -> str:
    lines = [
        f"{url}",
        f"  transactions  {d['n_transactions']:,}  ({d['empty_transactions']:,} empty)",
        f"  items         {d['n_items']:,}",
        f"  ones (nnz)    {d['nnz']:,}",
        f"  density       {d['density']:.6f}",
        f"  length        mean {d['mean_length']:.3f}, min {d['min_length']}, max {d['max_length']}",
        f"  partitions    {d['n_partitions']}",
    ]
    if d.get("columns"):
        lines.append(f"  columns       {', '.join(d['columns'])}")
    if d.get("metadata"):
        lines.append("  metadata      " + ", ".join(f"{k}={v}" for k, v in d["metadata"].items()))
    lines.append("  transaction length histogram:")
    lines.extend(_histogram_text(d["length_histogram"]))
    return "\n".join(lines)


@click.command()
@click.argument("url")
@input_format
@click.pass_obj
def info(obj: Context, url: str, fmt: str | None) -> None:
    """Rows, items, density and the length histogram of a dataset."""
    with job(obj, inputs=[url]):
        d = obj.read_transactions(url, fmt).describe(progress=obj.progress)
    d["url"] = url
    obj.emit(d, describe_text(url, d))


@click.command()
@click.argument("src")
@click.argument("dst")
@click.option(
    "--from",
    "src_fmt",
    type=click.Choice(["parquet", "fimi", "csv"]),
    default=None,
    help="Input format (default: from the extension).",
)
@click.option(
    "--to",
    "dst_fmt",
    type=click.Choice(["parquet", "fimi", "csv"]),
    default=None,
    help="Output format (default: from the extension; a folder is Parquet).",
)
@click.option("--partitions", type=click.IntRange(min=1), default=None, help="Number of output partitions.")
@click.option(
    "--target-bytes", type=click.IntRange(min=1), default=None, help="Repartition to about this many CSR bytes per partition."
)
@as_baskets
@basket_source
@overwrite
@click.pass_obj
def convert(
    obj: Context,
    src: str,
    dst: str,
    src_fmt: str | None,
    dst_fmt: str | None,
    partitions: int | None,
    target_bytes: int | None,
    overwrite: bool,
) -> None:
    """Convert between FIMI, basket CSV and Parquet (atomic write)."""
    from ..io import write

    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite) as j:
        tx = obj.read_transactions(src, src_fmt)
        if partitions is not None or target_bytes is not None:
            tx = tx.repartition(target_bytes, npartitions=partitions)
        write(tx, dst, format=dst_fmt, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    summary = {
        "src": src,
        "dst": dst,
        "n_transactions": tx.n_transactions,
        "n_items": tx.n_items,
        "n_partitions": tx.n_partitions,
        "seconds": j.seconds,
    }
    obj.emit(
        summary,
        f"wrote {tx.n_transactions:,} transactions over {tx.n_items:,} items to {dst} ({tx.n_partitions} partitions) in {j.seconds:.1f} s",
    )


@click.group()
def generate() -> None:
    """Synthetic data generators."""


@generate.command("quest")
@click.argument("spec")
@click.argument("out")
@click.option(
    "--partition-rows", type=click.IntRange(min=1), default=None, help="Rows per partition (rounded to whole generator blocks)."
)
@overwrite
@click.pass_obj
def generate_quest(obj: Context, spec: str, out: str, partition_rows: int | None, overwrite: bool) -> None:
    """IBM-Quest market-basket data, e.g. T10.I4.D100K.N1K (C20.I4.D200K: two classes)."""
    from ..data.quest import parse_spec, quest
    from ..io import write

    qs = parse_spec(spec)
    with job(obj, outputs=[out], overwrite=overwrite) as j:
        tx = quest(qs, key=obj.key(), rows_per_partition=partition_rows)
        write(tx, out, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    summary = {
        "spec": qs.name,
        "out": out,
        "n_transactions": tx.n_transactions,
        "n_items": tx.n_items,
        "n_partitions": tx.n_partitions,
        "seconds": j.seconds,
    }
    obj.emit(
        summary,
        f"generated {qs.name}: {tx.n_transactions:,} transactions, {tx.n_items:,} items, {tx.n_partitions} partitions -> {out} in {j.seconds:.1f} s",
    )


@generate.command("events")
@click.argument("out")
@click.option("--events", "n_events", type=click.IntRange(min=1), default=100_000, show_default=True, help="Events to write.")
@click.option("--users", "n_users", type=click.IntRange(min=1), default=5_000, show_default=True, help="Users.")
@click.option("--items", "n_items", type=click.IntRange(min=1), default=1_000, show_default=True, help="Distinct items.")
@click.option("--files", "n_files", type=click.IntRange(min=1), default=None, help="Parquet files [default: 1; 7 with --hive].")
@click.option("--hive", is_flag=True, help="Hive-partition the files by day (day=2026-01-01/...), over 7 days.")
@overwrite
@click.pass_obj
def generate_events(
    obj: Context, out: str, n_events: int, n_users: int, n_items: int, n_files: int | None, hive: bool, overwrite: bool
) -> None:
    """A synthetic event log (user, item, ts, qty): Zipf item popularity, sessions, a few bots."""
    from ..data.eventlog import generate_events as write_events

    with job(obj, outputs=[out], overwrite=overwrite) as j:
        summary = write_events(
            out, n_events=n_events, n_users=n_users, n_items=n_items, key_or_seed=obj.key(), n_files=n_files or (7 if hive else 1), hive=hive,
            storage_options=obj.storage_options,
        )  # fmt: skip
    summary = {**summary, "out": out, "seconds": j.seconds}
    obj.emit(summary, f"generated {n_events:,} events of {n_users:,} users over {n_items:,} items -> {out} in {j.seconds:.1f} s")


@click.command()
@click.option("--copy", "names", multiple=True, metavar="NAME", help="Copy this sample into --to (repeatable).")
@click.option("--to", "dest", default=".", show_default=True, type=click.Path(file_okay=False), help="Folder for --copy.")
@click.pass_obj
def samples(obj: Context, names: tuple[str, ...], dest: str) -> None:
    """List the data samples bundled with the package (or copy some with --copy)."""
    import shutil

    from ..data.datasets import list_samples, sample_files, sample_path

    if names:
        os.makedirs(dest, exist_ok=True)
        copied = {n: [shutil.copy(f, os.path.join(dest, f.name)) for f in sample_files(n)] for n in names}
        obj.emit(copied, "\n".join(f"{n:18} -> {', '.join(p)}" for n, p in copied.items()))
        return
    items = {name: {"description": desc, "path": str(sample_path(name))} for name, desc in list_samples().items()}
    obj.emit(items, "\n".join(f"{n:18} {v['description']}" for n, v in items.items()))

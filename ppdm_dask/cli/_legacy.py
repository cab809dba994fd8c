"""The ``ppdm`` command line.

Every job runs on a Dask scheduler: ``--scheduler ADDRESS`` (a running ``dask scheduler``),
``--scheduler threads|sync`` (in-process), or, by default, a LocalCluster of process workers
started for the job. Inputs and outputs are local paths or fsspec URLs (``s3://...``) with
``--storage-option k=v``. Bad input ends with one ``ppdm: error: ...`` line and a non-zero exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import click
import numpy as np

from .errors import PPDMError, PrivacyViolation

LOCAL_SCHEDULERS = ("sync", "synchronous", "threads", "processes")


class Context:
    """Global options shared by the sub-commands."""

    def __init__(self, scheduler: str | None, workers: int | None, storage_options: dict[str, Any], key_file: str | None, as_json: bool, progress: bool, debug: bool) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.storage_options = storage_options
        self.key_file = key_file
        self.as_json = as_json
        self.progress = progress
        self.debug = debug

    @contextlib.contextmanager
    def runtime(self) -> Iterator[str]:
        """Activate the scheduler for a job; yields a description of it."""
        import dask

        if self.scheduler in LOCAL_SCHEDULERS:
            with dask.config.set(scheduler=self.scheduler):
                yield f"local {self.scheduler} scheduler"
            return
        from .cluster import get_client

        with get_client(self.scheduler, n_workers=self.workers) as client:
            where = self.scheduler or f"LocalCluster ({len(client.scheduler_info()['workers'])} process workers)"
            yield where

    def key(self):
        """The random key: read from --key-file, or created there, or a fresh secret one."""
        from .random import Key

        if self.key_file is None:
            return Key.generate()
        path = Path(self.key_file)
        if path.exists():
            return Key.from_file(path)
        key = Key.generate()
        key.to_file(path)
        click.echo(f"new random key written to {path} (keep it secret; reuse it to reproduce this run)", err=True)
        return key

    def emit(self, summary: dict[str, Any], text: str) -> None:
        """Print the job summary as JSON (--json) or as text."""
        if self.as_json:
            click.echo(json.dumps(summary, indent=1, default=_json_default))
        else:
            click.echo(text)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def _parse_storage_options(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"expected k=v, got {item!r}", param_hint="--storage-option")
        k, v = item.split("=", 1)
        low = v.lower()
        if low in ("true", "false"):
            out[k] = low == "true"
        else:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = v
    return out


class PPDMGroup(click.Group):
    """A group that turns library errors into one clear line and a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except PPDMError as exc:
            _fail(ctx, exc, 2)
        except (OSError, ValueError, KeyError) as exc:
            _fail(ctx, exc, 1)
        except Exception as exc:  # a bug: still one line unless --debug
            _fail(ctx, exc, 1)


def _fail(ctx: click.Context, exc: BaseException, code: int) -> None:
    obj = ctx.find_object(Context)
    if obj is not None and obj.debug:
        raise exc
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if not isinstance(exc, PPDMError):
        msg = f"{type(exc).__name__}: {msg}"
    click.echo(f"ppdm: error: {msg}", err=True)
    ctx.exit(code)


@click.group(cls=PPDMGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--scheduler", envvar="PPDM_SCHEDULER", default=None, metavar="ADDRESS", help="Dask scheduler address (tcp://host:8786 or a scheduler file), or 'threads'/'sync'. Default: start a LocalCluster.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes of the default LocalCluster (default: one per core).")
@click.option("--storage-option", "storage_option", multiple=True, metavar="K=V", help="fsspec storage option, repeatable (e.g. endpoint_url=http://..., key=..., anon=true).")
@click.option("--key-file", type=click.Path(dir_okay=False), default=None, help="File holding the random key; created (mode 600) if missing. Without it a fresh secret key is used.")
@click.option("--json", "as_json", is_flag=True, help="Print the job summary as JSON on stdout.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.version_option(package_name="ppdm-dask")
@click.pass_context
def cli(ctx: click.Context, scheduler, workers, storage_option, key_file, as_json, progress, debug) -> None:
    """Privacy-preserving data mining on Dask."""
    ctx.obj = Context(scheduler, workers, _parse_storage_options(storage_option), key_file, as_json, progress, debug)


# ---------------------------------------------------------------------- info
def _histogram_text(hist: dict[int, int], width: int = 40) -> list[str]:
    if not hist:
        return ["  (no transactions)"]
    keys = sorted(hist)
    # group lengths into at most 12 bins
    lo, hi = keys[0], keys[-1]
    n_bins = min(12, hi - lo + 1)
    edges = np.linspace(lo, hi + 1, n_bins + 1)
    counts = np.zeros(n_bins, np.int64)
    for k, v in hist.items():
        counts[min(int(np.searchsorted(edges, k, side="right")) - 1, n_bins - 1)] += v
    top = counts.max()
    lines = []
    for i in range(n_bins):
        a, b = int(np.ceil(edges[i])), int(np.ceil(edges[i + 1])) - 1
        label = f"{a}" if a >= b else f"{a}-{b}"
        bar = "#" * int(round(width * counts[i] / top)) if top else ""
        lines.append(f"  {label:>9} | {bar} {counts[i]}")
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


@cli.command()
@click.argument("url")
@click.option("--format", "fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Input format (default: from the extension).")
@click.pass_obj
def info(obj: Context, url: str, fmt: str | None) -> None:
    """Rows, items, density and the length histogram of a dataset."""
    from .io import read

    with obj.runtime():
        tx = read(url, format=fmt, storage_options=obj.storage_options, progress=obj.progress)
        d = tx.describe(progress=obj.progress)
    d["url"] = url
    obj.emit(d, describe_text(url, d))


# ---------------------------------------------------------------------- convert
@cli.command()
@click.argument("src")
@click.argument("dst")
@click.option("--from", "src_fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Input format (default: from the extension).")
@click.option("--to", "dst_fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Output format (default: from the extension; a folder is Parquet).")
@click.option("--partitions", type=click.IntRange(min=1), default=None, help="Number of output partitions.")
@click.option("--target-bytes", type=click.IntRange(min=1), default=None, help="Repartition to about this many CSR bytes per partition.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def convert(obj: Context, src: str, dst: str, src_fmt, dst_fmt, partitions, target_bytes, overwrite) -> None:
    """Convert between FIMI, basket CSV and Parquet (atomic write)."""
    from .io import read, write

    t0 = time.perf_counter()
    with obj.runtime():
        tx = read(src, format=src_fmt, storage_options=obj.storage_options, progress=obj.progress)
        if partitions is not None or target_bytes is not None:
            tx = tx.repartition(target_bytes, npartitions=partitions)
        write(tx, dst, format=dst_fmt, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    summary = {"src": src, "dst": dst, "n_transactions": tx.n_transactions, "n_items": tx.n_items, "n_partitions": tx.n_partitions, "seconds": round(time.perf_counter() - t0, 3)}
    obj.emit(summary, f"wrote {tx.n_transactions:,} transactions over {tx.n_items:,} items to {dst} ({tx.n_partitions} partitions) in {summary['seconds']:.1f} s")


# ---------------------------------------------------------------------- generate
@cli.group()
def generate() -> None:
    """Synthetic data generators."""


@generate.command("quest")
@click.argument("spec")
@click.argument("out")
@click.option("--partition-rows", type=click.IntRange(min=1), default=None, help="Rows per partition (rounded to whole generator blocks).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def generate_quest(obj: Context, spec: str, out: str, partition_rows, overwrite) -> None:
    """IBM-Quest market-basket data, e.g. T10.I4.D100K.N1K (C20.I4.D200K: two classes)."""
    from .data.quest import parse_spec, quest
    from .io import write

    qs = parse_spec(spec)
    key = obj.key()
    t0 = time.perf_counter()
    with obj.runtime():
        tx = quest(qs, key=key, rows_per_partition=partition_rows)
        write(tx, out, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    secs = time.perf_counter() - t0
    summary = {"spec": qs.name, "out": out, "n_transactions": tx.n_transactions, "n_items": tx.n_items, "n_partitions": tx.n_partitions, "seconds": round(secs, 3)}
    obj.emit(summary, f"generated {qs.name}: {tx.n_transactions:,} transactions, {tx.n_items:,} items, {tx.n_partitions} partitions -> {out} in {secs:.1f} s")


# ---------------------------------------------------------------------- mine
def _support_value(text: str) -> float | int:
    """'0.003' or '3e-3' -> a fraction; '250' -> an absolute count."""
    t = text.strip()
    try:
        return int(t) if t.isdigit() else float(t)
    except ValueError:
        raise click.BadParameter(f"not a number: {text!r}", param_hint="--min-support") from None


@cli.command()
@click.argument("url")
@click.option("--min-support", required=True, help="A fraction in (0, 1] (e.g. 0.003) or an absolute count (e.g. 250).")
@click.option("--max-length", type=click.IntRange(min=1), default=None, help="Longest itemsets to mine.")
@click.option("--max-itemsets", type=click.IntRange(min=1), default=50_000_000, show_default=True, help="Stop with an error before the result grows past this many itemsets.")
@click.option("--rules", "with_rules", is_flag=True, help="Also derive association rules.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=0.6, show_default=True, help="Rule confidence threshold.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Input format (default: from the extension).")
@click.option("--out", default=None, help="Write the frequent itemsets to this Parquet file.")
@click.option("--rules-out", default=None, help="Write the rules to this Parquet file.")
@click.option("--overwrite", is_flag=True, help="Replace existing outputs.")
@click.pass_obj
def mine(obj: Context, url, min_support, max_length, max_itemsets, with_rules, min_confidence, fmt, out, rules_out, overwrite) -> None:
    """Exact frequent itemsets (distributed Apriori) and, with --rules, association rules."""
    from .io import read
    from .mining import apriori, association_rules

    ms = _support_value(min_support)

    def level_line(st: dict[str, Any]) -> None:
        click.echo(f"[mine] level {st['length']}: {st['candidates']:,} candidates -> {st['frequent']:,} frequent ({st['seconds']:.2f} s)", err=True)

    t0 = time.perf_counter()
    with obj.runtime() as where:
        tx = read(url, format=fmt, storage_options=obj.storage_options, progress=obj.progress).persist(progress=obj.progress)
        fi = apriori(tx, ms, max_length=max_length, max_itemsets=max_itemsets, progress=obj.progress, on_level=level_line)
    rules = association_rules(fi, min_confidence) if with_rules or rules_out else None
    if out:
        fi.to_parquet(out, storage_options=obj.storage_options, overwrite=overwrite)
    if rules is not None and rules_out:
        rules.to_parquet(rules_out, storage_options=obj.storage_options, overwrite=overwrite)
    secs = time.perf_counter() - t0
    summary = {
        "url": url, "n_transactions": fi.n_transactions, "min_count": fi.min_count, "itemsets": len(fi),
        "levels": fi.level_stats, "rules": len(rules) if rules is not None else None, "seconds": round(secs, 3), "scheduler": where,
    }
    lines = [f"{url}: {len(fi):,} frequent itemsets (support >= {fi.min_count:,} of {fi.n_transactions:,} transactions) in {secs:.2f} s",
             "  length  candidates    frequent   seconds"]
    lines += [f"  {st['length']:>6}  {st['candidates']:>10,}  {st['frequent']:>10,}  {st['seconds']:8.3f}" for st in fi.level_stats]
    if rules is not None:
        lines.append(f"  {len(rules):,} association rules with confidence >= {min_confidence}")
        top = rules.to_pandas().sort_values(["confidence", "lift"], ascending=False).head(5)
        for _, r in top.iterrows():
            lines.append(f"    {list(r['antecedent'])} -> {list(r['consequent'])}  conf {r['confidence']:.3f}  lift {r['lift']:.2f}")
    if out:
        lines.append(f"  itemsets written to {out}")
    obj.emit(summary, "\n".join(lines))


# ---------------------------------------------------------------------- emask
@cli.group()
def emask() -> None:
    """EMASK/MASK: distort transactions, choose (p, q), mine distorted data, audit privacy."""


def _pq_from(tx: Any, p: float | None, q: float | None) -> tuple[float, float]:
    p = p if p is not None else tx.metadata.get("p")
    q = q if q is not None else tx.metadata.get("q")
    if p is None or q is None:
        raise click.UsageError("give --p and --q (the input's metadata does not record them)")
    return float(p), float(q)


@emask.command("choose")
@click.option("--s0", type=float, default=None, help="Average item support (fraction). Or give --data to estimate it.")
@click.option("--data", default=None, help="Estimate s0 (mean transaction length / items) from this dataset.")
@click.option("--min-support", type=float, default=0.003, show_default=True, help="Mining support at which accuracy is screened (Eq. 6).")
@click.option("--privacy-min", type=float, default=90.0, show_default=True, help="Minimum basic privacy (percent).")
@click.option("--q-min", type=float, default=0.95, show_default=True, help="Keep only q > this.")
@click.pass_obj
def emask_choose(obj: Context, s0, data, min_support, privacy_min, q_min) -> None:
    """Candidate (p, q): basic privacy >= privacy-min at s0, accuracy no worse than MASK (0.9, 0.9)."""
    from .emask.parameters import choose_parameters, estimate_s0
    from .io import read

    if (s0 is None) == (data is None):
        raise click.UsageError("give exactly one of --s0 and --data")
    if data is not None:
        with obj.runtime():
            s0 = estimate_s0(read(data, storage_options=obj.storage_options, progress=obj.progress))
    choices = choose_parameters(s0, min_support, privacy_min=privacy_min, q_min=q_min)
    rows = [{"p": c.p, "q": c.q, "basic_privacy": c.basic_privacy, "err6": c.err6, "ldp_epsilon": c.ldp_epsilon} for c in choices]
    lines = [f"s0 = {s0:.5g}, min_support = {min_support}: {len(rows)} candidate(s)", "     p     q   BP (%)   Eq.6 err   eps/bit"]
    lines += [f"  {r['p']:.2f}  {r['q']:.2f}   {r['basic_privacy']:6.2f}   {r['err6']:8.4f}   {r['ldp_epsilon']:7.3f}" for r in rows]
    obj.emit({"s0": s0, "min_support": min_support, "candidates": rows}, "\n".join(lines))


@emask.command("distort")
@click.argument("src")
@click.argument("dst")
@click.option("--p", "p", type=float, required=True, help="Probability that a 1 stays 1.")
@click.option("--q", "q", type=float, required=True, help="Probability that a 0 stays 0.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def emask_distort(obj: Context, src, dst, p, q, overwrite) -> None:
    """Release a distorted copy of SRC at DST (p, q recorded in its metadata, never the key)."""
    from .emask import distort
    from .emask.privacy import basic_privacy, ldp_epsilon
    from .io import read, write

    key = obj.key()
    t0 = time.perf_counter()
    with obj.runtime():
        tx = read(src, storage_options=obj.storage_options, progress=obj.progress)
        d = distort(tx, p, q, key=key)
        write(d, dst, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
        s0 = float(tx.describe(progress=False)["mean_length"]) / max(tx.n_items, 1)
    bp = basic_privacy(p, q, s0=s0)
    eps = ldp_epsilon(p, q)
    summary = {"src": src, "dst": dst, "p": p, "q": q, "n_transactions": tx.n_transactions, "s0": s0, "basic_privacy": bp, "ldp_epsilon_per_item": eps, "seconds": round(time.perf_counter() - t0, 3)}
    obj.emit(summary, f"distorted {tx.n_transactions:,} transactions with p={p}, q={q} -> {dst}\n  basic privacy {bp:.2f}% (s0 = {s0:.4g}); local DP epsilon {eps:.3f} per item")


@emask.command("mine")
@click.argument("url")
@click.option("--p", "p", type=float, default=None, help="Distortion p (default: from the data's metadata).")
@click.option("--q", "q", type=float, default=None, help="Distortion q (default: from the data's metadata).")
@click.option("--min-support", required=True, help="A fraction in (0, 1] or an absolute count.")
@click.option("--max-length", type=click.IntRange(min=1), default=None)
@click.option("--prune-margin", type=click.FloatRange(0, 1, max_open=True), default=0.0, show_default=True, help="Keep candidates down to (1 - margin) x threshold (fewer misses, more work).")
@click.option("--out", default=None, help="Write the itemsets with reconstructed supports to this Parquet file.")
@click.option("--overwrite", is_flag=True)
@click.pass_obj
def emask_mine(obj: Context, url, p, q, min_support, max_length, prune_margin, out, overwrite) -> None:
    """EMASK-Apriori: frequent itemsets of the original data from its distorted release."""
    from .emask import mine as emask_mine_fn
    from .io import read

    ms = _support_value(min_support)

    def level_line(st: dict[str, Any]) -> None:
        click.echo(f"[emask] level {st['length']}: {st['candidates']:,} candidates -> {st['frequent']:,} frequent ({st['seconds']:.2f} s)", err=True)

    t0 = time.perf_counter()
    with obj.runtime():
        d = read(url, storage_options=obj.storage_options, progress=obj.progress).persist(progress=obj.progress)
        p, q = _pq_from(d, p, q)
        r = emask_mine_fn(d, p, q, ms, max_length=max_length, prune_margin=prune_margin, progress=obj.progress, on_level=level_line)
    if out:
        r.to_parquet(out, storage_options=obj.storage_options, overwrite=overwrite)
    secs = time.perf_counter() - t0
    summary = {"url": url, "p": p, "q": q, "itemsets": len(r), "levels": r.level_stats, "seconds": round(secs, 3)}
    lines = [f"{url}: {len(r):,} itemsets with reconstructed support >= threshold (p={p}, q={q}) in {secs:.2f} s",
             "  length  candidates    frequent   seconds"]
    lines += [f"  {st['length']:>6}  {st['candidates']:>10,}  {st['frequent']:>10,}  {st['seconds']:8.3f}" for st in r.level_stats]
    obj.emit(summary, "\n".join(lines))


@emask.command("audit")
@click.argument("original")
@click.argument("distorted")
@click.option("--min-support", default="0.003", show_default=True, help="Mining support (fraction or count).")
@click.option("--p", "p", type=float, default=None, help="Default: from the distorted data's metadata.")
@click.option("--q", "q", type=float, default=None, help="Default: from the distorted data's metadata.")
@click.pass_obj
def emask_audit(obj: Context, original, distorted, min_support, p, q) -> None:
    """Owner-side audit: BP, re-interrogated privacy RP, local-DP epsilon, accuracy (rho, sigma+/-), slowdown."""
    from .emask import mine as emask_mine_fn
    from .emask.privacy import basic_privacy, ldp_epsilon, reinterrogated_privacy
    from .metrics import itemset_accuracy
    from .mining import apriori
    from .io import read

    ms = _support_value(min_support)
    with obj.runtime():
        t = read(original, storage_options=obj.storage_options, progress=obj.progress).persist(progress=obj.progress)
        d = read(distorted, storage_options=obj.storage_options, progress=obj.progress).persist(progress=obj.progress)
        if t.n_transactions != d.n_transactions or t.n_items != d.n_items:
            raise click.UsageError("ORIGINAL and DISTORTED differ in shape; audit needs the original of this release")
        if d.partition_rows != t.partition_rows:
            d = d._rechunk(t.partition_rows)
        p, q = _pq_from(d, p, q)
        t0 = time.perf_counter()
        truth = apriori(t, ms, progress=obj.progress)
        t_apriori = time.perf_counter() - t0
        t0 = time.perf_counter()
        rec = emask_mine_fn(d, p, q, ms, progress=obj.progress)
        t_emask = time.perf_counter() - t0
        s0 = float(t.describe(progress=False)["mean_length"]) / max(t.n_items, 1)
        bp = basic_privacy(p, q, s0=s0)
        rp = reinterrogated_privacy(t, d, rec, bp)
    acc = itemset_accuracy(truth.as_dict(), rec.as_dict())
    summary = {"p": p, "q": q, "s0": s0, "basic_privacy": bp, "reinterrogated_privacy": rp, "ldp_epsilon_per_item": ldp_epsilon(p, q),
               "slowdown": t_emask / t_apriori if t_apriori > 0 else None, "accuracy": acc}
    lines = [f"audit of {distorted} (p={p}, q={q}) against {original}",
             f"  basic privacy        {bp:6.2f} %   (s0 = {s0:.4g})",
             f"  re-interrogated      {rp:6.2f} %",
             f"  local DP epsilon     {ldp_epsilon(p, q):6.3f} per item",
             f"  slowdown             {summary['slowdown']:.2f}  (EMASK-Apriori {t_emask:.2f} s / Apriori {t_apriori:.2f} s)",
             f"  support error rho    {acc['rho']:6.2f} %",
             f"  sigma+ / sigma-      {acc['sigma_plus']:6.2f} % / {acc['sigma_minus']:.2f} %"]
    obj.emit(summary, "\n".join(lines))


# ---------------------------------------------------------------------- sketch
class _DefaultCommandGroup(click.Group):
    """A group whose first argument may be a sub-command or, otherwise, the default one's
    arguments: ``ppdm sketch IN OUT --delta D`` == ``ppdm sketch anonymize IN OUT --delta D``."""

    default_command = "anonymize"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def _sketch_method(delta: float | None, k: int | None) -> None:
    if (delta is None) == (k is None):
        raise click.UsageError("give exactly one of --delta (δ-anonymity) and --k (k-variance anonymity)")


def _anonymizer(delta, k, m_max, metric, knn_scope, approximate, key=None, generator=None):
    from .sketch import DeltaAnonymizer, KVarianceAnonymizer

    if delta is not None:
        return DeltaAnonymizer(delta, m_max=m_max, key=key, generator=generator)
    return KVarianceAnonymizer(k, m_max=m_max, metric=metric, knn_scope=knn_scope, approximate=approximate, key=key, generator=generator)


_sketch_options = [
    click.option("--delta", type=float, default=None, help="δ-anonymity: minimum variance of any attribute reconstruction (units of x²)."),
    click.option("--k", "k", type=click.IntRange(min=1), default=None, help="k-variance anonymity: number of nearest neighbours."),
    click.option("--m-max", type=click.IntRange(min=1), default=256, show_default=True, help="Cap on sketch components per record."),
    click.option("--metric", type=click.Choice(["cosine", "euclidean"]), default="cosine", show_default=True, help="k-NN distance (k-variance)."),
    click.option("--knn-scope", type=click.Choice(["global", "partition"]), default="global", show_default=True, help="Neighbours from the whole data (exact) or within partitions (paper's linear-time variant)."),
    click.option("--approximate", is_flag=True, help="Approximate k-NN for very large data (k-variance)."),
]


def _with_sketch_options(fn):
    for opt in reversed(_sketch_options):
        fn = opt(fn)
    return fn


@cli.group(cls=_DefaultCommandGroup)
def sketch() -> None:
    """Sketch-based anonymization of sparse records (Aggarwal & Yu).

    \b
    ppdm sketch IN OUT --delta 0.2     δ-anonymous sketches (per record, collection time)
    ppdm sketch IN OUT --k 5           k-variance anonymous sketches (k nearest neighbours)
    ppdm sketch evaluate IN --k 5      utility vs the original data (the paper's protocol)
    """


@sketch.command("anonymize")
@click.argument("src")
@click.argument("dst")
@_with_sketch_options
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def sketch_anonymize(obj: Context, src, dst, delta, k, m_max, metric, knn_scope, approximate, overwrite) -> None:
    """Publish SRC as anonymized sketches at DST (Parquet; the public generator seed in the manifest)."""
    from .io import read

    _sketch_method(delta, k)
    key = obj.key()
    t0 = time.perf_counter()
    with obj.runtime():
        tx = read(src, storage_options=obj.storage_options, progress=obj.progress)
        an = _anonymizer(delta, k, m_max, metric, knn_scope, approximate, key=key)
        if k is not None:
            an.fit(tx, progress=obj.progress)
        else:
            an.fit(tx)
        manifest = an.transform(tx).to_parquet(dst, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    secs = time.perf_counter() - t0
    n = int(manifest.get("n_records", tx.n_transactions))
    n_sup = int(manifest.get("n_suppressed", 0))
    summary = {"src": src, "dst": dst, "method": "delta" if delta is not None else "k-variance", "delta": delta, "k": k, "m_max": m_max,
               "n_records": n, "n_suppressed": n_sup, "mean_components": manifest.get("mean_components"), "seconds": round(secs, 3)}
    lines = [f"{n:,} records -> {dst}: " + (f"δ-anonymous (δ = {delta})" if delta is not None else f"{k}-variance anonymous ({metric}, {knn_scope} k-NN)"),
             f"  suppressed        {n_sup:,} ({100.0 * n_sup / max(n, 1):.2f} %)",
             f"  mean components   {summary['mean_components'] or 0:.2f} of at most {m_max}"]
    if k is not None:
        r = an.report_
        summary.update({key_: r[key_] for key_ in ("n_iter", "converged", "violations", "knn_seconds")})
        lines.append(f"  sweeps            {r['n_iter']} (converged: {r['converged']}); k-NN edges violating Def. 3: {r['violations']}")
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


@sketch.command("evaluate")
@click.argument("src")
@_with_sketch_options
@click.option("--label-column", default="label", show_default=True, help="Class labels for the classification task.")
@click.option("--neighbors", type=click.IntRange(min=1), default=1, show_default=True, help="k of the k-NN classifier.")
@click.option("--clusters", type=click.IntRange(min=2), default=10, show_default=True, help="K of k-means.")
@click.option("--task", type=click.Choice(["both", "classify", "cluster"]), default="both", show_default=True)
@click.pass_obj
def sketch_evaluate(obj: Context, src, delta, k, m_max, metric, knn_scope, approximate, label_column, neighbors, clusters, task) -> None:
    """Utility of anonymized sketches of SRC against the original (classification accuracy and
    clustering similarity, the paper's protocol); nothing is written."""
    from .io import read
    from .sketch.evaluation import evaluate

    _sketch_method(delta, k)
    key = obj.key()
    tasks = ("classify", "cluster") if task == "both" else (task,)
    with obj.runtime():
        tx = read(src, storage_options=obj.storage_options, progress=obj.progress)
        if "classify" in tasks and label_column not in tx.columns:
            raise click.UsageError(f"{src} has no column {label_column!r} (needed for classification; use --task cluster)")
        X = tx.compute(progress=obj.progress)
        if tx.weights is not None:
            from .progress import compute

            (w,) = compute(tx.weights, progress=False)
            X = w
        labels = tx.columns[label_column].compute() if label_column in tx.columns else np.zeros(X.shape[0], np.int64)

        def anonymize(part, generator):
            an = _anonymizer(delta, k, m_max, metric, knn_scope, approximate, key=key if approximate else None, generator=generator)
            return an.fit_transform(part, progress=False) if k is not None else an.fit_transform(part)

        r = evaluate(X, labels, anonymize, key=key, n_neighbors=neighbors, n_clusters=clusters, tasks=tasks)
    r.pop("baseline", None)
    lines = [f"{src}: " + (f"δ = {delta}" if delta is not None else f"k = {k}") + f" (m_max {m_max})"]
    if "accuracy" in r:
        lines.append(f"  {neighbors}-NN accuracy     {r['accuracy']:.4f}  original {r['baseline_accuracy']:.4f}  ratio {r['accuracy_ratio']:.3f}  (suppressed test records {100 * r['suppressed_test']:.1f} %)")
    if "similarity" in r:
        lines.append(f"  k-means similarity  {r['similarity']:.4f}  original {r['baseline_similarity']:.4f}  ratio {r['similarity_ratio']:.3f}  (suppressed {100 * r['suppressed']:.1f} %, mean components {r['mean_components']:.1f})")
    obj.emit(r, "\n".join(lines))


# ---------------------------------------------------------------------- condense
def _privacy_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        a, b = (int(v) for v in text.split(":"))
    except ValueError:
        raise click.BadParameter(f"expected LOW:HIGH integers, got {text!r}") from None
    if a < 1 or b < a:
        raise click.BadParameter(f"need 1 <= LOW <= HIGH, got {text!r}")
    return a, b


@cli.command()
@click.argument("src")
@click.argument("dst")
@click.option("--privacy-column", default=None, help="Column holding each record's privacy level (an integer >= 1).")
@click.option("--privacy-range", default=None, metavar="LOW:HIGH", help="Draw levels uniformly from LOW..HIGH with the key (the paper's protocol).")
@click.option("--privacy-level", type=click.IntRange(min=1), default=None, help="One level for every record.")
@click.option("--columns", default=None, help="Comma-separated attributes to condense (default: every numeric column but the privacy column).")
@click.option("--dynamic", is_flag=True, help="Dynamic (streaming) maintenance over the partitions in order, instead of the static algorithm.")
@click.option("--rows-per-partition", type=click.IntRange(min=1), default=200_000, show_default=True, help="Rows per spatial cell of the static algorithm (groups never span cells; larger = closer to the single-machine result, slower).")
@click.option("--standardize", is_flag=True, help="Z-score attributes for the grouping distances (output stays in the original units).")
@click.option("--check/--no-check", default=True, show_default=True, help="Recount group sizes and statistics from the input (independent check; loads the data on the client).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def condense(obj: Context, src, dst, privacy_column, privacy_range, privacy_level, columns, dynamic, rows_per_partition, standardize, check, overwrite) -> None:
    """Condense the numeric records of SRC into groups of at least each member's privacy level
    and write pseudo-data plus the group statistics to DST (Aggarwal & Yu)."""
    from .condensation import Condenser, check_condensation, condense_stream, generate_dask, privacy_levels
    from .condensation.io import read_table, table_to_array, write_release
    from .progress import compute

    chosen = [o for o in (privacy_column, privacy_range, privacy_level) if o is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --privacy-column, --privacy-range, --privacy-level")
    rng_spec = _privacy_range(privacy_range)
    key = obj.key()
    t0 = time.perf_counter()
    with obj.runtime() as where:
        df = read_table(src, storage_options=obj.storage_options)
        if privacy_column is not None and privacy_column not in df.columns:
            raise click.UsageError(f"{src} has no column {privacy_column!r}; columns: {list(df.columns)}")
        cols = [c.strip() for c in columns.split(",")] if columns else None
        X, names = table_to_array(df, columns=cols, exclude=(privacy_column,) if privacy_column else ())
        n = int(X.shape[0])
        if privacy_column is not None:
            (raw,) = compute(df[privacy_column].to_dask_array(lengths=True), progress=False)
            p = np.asarray(raw)
        elif rng_spec is not None:
            p = privacy_levels(n, *rng_spec, key=key)
        else:
            p = np.full(n, privacy_level, dtype=np.int64)
        if dynamic:
            groups, cond = condense_stream(X, p, key=key)
            labels = None
            report = {"n_records": n, "n_groups": len(groups), "splits": cond.n_splits_, "ssq": float(groups.total_ssq)}
        else:
            cond = Condenser(rows_per_partition=rows_per_partition, standardize=standardize, key=key)
            cond.fit(X, p, progress=obj.progress)
            groups, report = cond.groups_, dict(cond.report_)
            labels = cond._labels
        verdict = None
        if check and labels is not None:
            (Xc,) = compute(X, progress=False)
            verdict = check_condensation(Xc, cond._privacy, labels, groups)
            if not verdict["ok"]:
                raise PrivacyViolation(f"independent check failed: {verdict}")
        pseudo = generate_dask(groups, key=key)
        summary = {"method": "dynamic" if dynamic else "static", **report, "privacy_min": int(np.min(p)), "privacy_max": int(np.max(p)),
                   "min_group_size": int(groups.n.min()), "mean_group_size": float(groups.n.mean())}
        write_release(dst, groups, pseudo, names, summary=summary, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    secs = time.perf_counter() - t0
    summary.update({"check": verdict, "seconds": round(secs, 2), "scheduler": where, "out": dst})
    lines = [
        f"{src}: {n:,} records x {len(names)} attributes -> {dst} ({summary['method']} condensation, on {where})",
        f"  privacy levels     {summary['privacy_min']}..{summary['privacy_max']}",
        f"  groups             {len(groups):,} (sizes {summary['min_group_size']}..{int(groups.n.max())}, mean {summary['mean_group_size']:.2f})",
        f"  SSQ                {summary['ssq']:.6g} (sum of squared distances to group means; lower = more utility)",
    ]
    if verdict is not None:
        lines.append(f"  independent check  every group >= its members' levels: {verdict['infeasible'] == 0}; statistics match the records (max rel. error {verdict['max_stat_error']:.1e})")
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


# ---------------------------------------------------------------------- anonymize / access-control
def _split_list(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _load_hierarchies(specs: tuple[str, ...], folder: str | None, qi: list[str], storage_options: dict[str, Any]) -> dict[str, Any]:
    """``attr=FILE`` (ARX CSV, ';'), ``attr=interval:LOW:HIGH:WIDTH``, and ``--hierarchies DIR``
    (``DIR/*<attr>.csv`` for every QI not given explicitly)."""
    from .anonymity import Hierarchy

    out: dict[str, Any] = {}
    for spec in specs:
        attr, sep, value = spec.partition("=")
        if not sep or not attr or not value:
            raise click.BadParameter(f"expected ATTR=FILE or ATTR=interval:LOW:HIGH:WIDTH, got {spec!r}", param_hint="--hierarchy")
        if value.startswith("interval:"):
            try:
                low, high, width = (float(x) for x in value.split(":")[1:])
            except ValueError:
                raise click.BadParameter(f"expected interval:LOW:HIGH:WIDTH, got {value!r}", param_hint="--hierarchy") from None
            out[attr] = Hierarchy.from_intervals(width=width, low=low, high=high, name=attr)
        else:
            out[attr] = Hierarchy.from_csv(value, name=attr, storage_options=storage_options)
    if folder:
        import fsspec

        fs, _, (root,) = fsspec.get_fs_token_paths(folder, storage_options=storage_options)
        files = fs.ls(root, detail=False)
        for a in qi:
            if a in out:
                continue
            hits = [f for f in files if f.rsplit("/", 1)[-1] in (f"{a}.csv", ) or f.endswith(f"_{a}.csv")]
            if len(hits) == 1:
                prefix = folder.split("://", 1)[0] + "://" if "://" in folder else ""
                out[a] = Hierarchy.from_csv(prefix + hits[0] if prefix and not hits[0].startswith(prefix) else hits[0],
                                            name=a, storage_options=storage_options)
    return out


def _privacy_lines(summary: dict[str, Any], verdict: dict[str, Any] | None) -> list[str]:
    lines = [
        f"  classes            {summary['n_classes']:,} (smallest {summary['min_class_size']}, C_avg {summary['avg_class_size'] or 0:.2f})",
        f"  suppressed         {summary['n_suppressed']:,} records ({100 * summary['suppressed_fraction']:.2f}%)",
        f"  risk (prosecutor)  max {summary['risk_max']:.3f}, average {summary['risk_average']:.4f}, records at risk (>0.2) {100 * summary['records_at_risk']:.2f}%",
        f"  utility            DM {summary['discernibility']:,}, GCP {summary['gcp']:.4f}"
        + (f", precision {summary['precision']:.4f}" if summary.get("precision") is not None else ""),
    ]
    if verdict is not None:
        k = verdict["k"]
        line = f"  independent check  k achieved {k['min_class_size']} ({'ok' if k['k_anonymous'] else 'VIOLATED'})"
        if "l" in verdict:
            lv = verdict["l"]
            line += f", l achieved {lv['achieved']:.3g} {lv['kind']} ({'ok' if lv['l_diverse'] else 'VIOLATED'})"
        lines.append(line)
    return lines


def _qi_from(df: Any, qi: str | None, sensitive: str | None, keep: list[str]) -> list[str]:
    cols = _split_list(qi) or [c for c in df.columns if c != sensitive and c not in keep]
    if not cols:
        raise click.UsageError("no quasi-identifiers: pass --qi")
    return cols


@cli.command()
@click.argument("src")
@click.argument("dst")
@click.option("--qi", default=None, help="Comma-separated quasi-identifiers (default: every column but --sensitive and --keep).")
@click.option("--sensitive", default=None, help="Sensitive attribute (published unchanged; needed for --l).")
@click.option("--hierarchy", "hierarchy", multiple=True, metavar="ATTR=FILE", help="Hierarchy of a QI: an ARX CSV file (';', one row per leaf) or interval:LOW:HIGH:WIDTH. Repeatable.")
@click.option("--hierarchies", "hierarchy_dir", default=None, metavar="DIR", help="Folder with one <...>_<attr>.csv hierarchy per QI (as shared/data/adult).")
@click.option("--k", "k", type=click.IntRange(min=1), required=True, help="Minimum equivalence class size.")
@click.option("--l", "l", type=float, default=None, help="l-diversity of --sensitive.")
@click.option("--l-kind", type=click.Choice(["distinct", "entropy", "recursive"]), default="distinct", show_default=True)
@click.option("--c", "c", type=float, default=None, help="c of recursive (c, l)-diversity.")
@click.option("--max-suppression", type=click.FloatRange(0, 1), default=0.0, show_default=True, help="Fraction of records that may be suppressed (lattice, datafly).")
@click.option("--method", type=click.Choice(["lattice", "datafly", "mondrian", "cluster"]), default="lattice", show_default=True,
              help="lattice: optimal full-domain (min discernibility); datafly: greedy full-domain; mondrian: multidimensional partitioning; cluster: clustering l-diverse partition.")
@click.option("--keep", default=None, help="Comma-separated further columns to publish unchanged (all others are dropped).")
@click.option("--sep", default=",", show_default=True, help="CSV field separator.")
@click.option("--check/--no-check", default=True, show_default=True, help="Recount k and l from the released table (independent check).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def anonymize(obj: Context, src, dst, qi, sensitive, hierarchy, hierarchy_dir, k, l, l_kind, c, max_suppression, method, keep, sep, check, overwrite) -> None:
    """k-anonymise (and l-diversify) the table SRC (CSV or Parquet) and write the release to DST."""
    from .anonymity import anonymize as run, write_release
    from .condensation.io import read_table

    t0 = time.perf_counter()
    keep_cols = _split_list(keep)
    with obj.runtime() as where:
        df = read_table(src, storage_options=obj.storage_options, sep=sep, pyarrow=True)
        qis = _qi_from(df, qi, sensitive, keep_cols)
        hier = _load_hierarchies(hierarchy, hierarchy_dir, qis, obj.storage_options)
        res = run(df, qis, k=k, sensitive=sensitive, hierarchies=hier, l=l, kind=l_kind, c=c, max_suppression=max_suppression,
                  method=method, keep=keep_cols, progress=obj.progress)
        verdict = res.verify() if check else None
        if verdict is not None and not verdict["ok"]:
            raise PrivacyViolation(f"independent check failed: {verdict}")
        summary = res.summary()
        write_release(dst, res.table, summary={**summary, "check": verdict}, storage_options=obj.storage_options,
                      overwrite=overwrite, progress=obj.progress)
    secs = time.perf_counter() - t0
    summary.update({"check": verdict, "seconds": round(secs, 2), "scheduler": where, "out": dst})
    what = f"k={k}" + (f", l={l:g} ({l_kind})" if l is not None else "")
    lines = [f"{src}: {summary['n_records']:,} records, QI {qis} -> {dst} ({method}, {what}, on {where})"]
    if summary["node"]:
        lines.append(f"  generalisation     {summary['node']} ({summary.get('nodes_evaluated')} of {summary.get('lattice_nodes')} lattice nodes evaluated)")
    lines += _privacy_lines(summary, verdict)
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


@cli.command("access-control")
@click.argument("src")
@click.option("--permissions", "perm_file", required=True, help="JSON file: a list of {role, bound, where: {attr: [lo, hi] | value | [values]}, name}.")
@click.option("--qi", default=None, help="Comma-separated quasi-identifiers (default: every column but --sensitive and --keep).")
@click.option("--sensitive", default=None, help="Sensitive attribute.")
@click.option("--k", "k", type=click.IntRange(min=1), required=True)
@click.option("--l", "l", type=float, default=None)
@click.option("--l-kind", type=click.Choice(["distinct", "entropy", "recursive"]), default="distinct", show_default=True)
@click.option("--c", "c", type=float, default=None)
@click.option("--keep", default=None, help="Comma-separated further columns to publish unchanged.")
@click.option("--sep", default=",", show_default=True, help="CSV field separator.")
@click.option("--out", "dst", default=None, help="Write the release here.")
@click.option("--overwrite", is_flag=True)
@click.pass_obj
def access_control(obj: Context, src, perm_file, qi, sensitive, k, l, l_kind, c, keep, sep, dst, overwrite) -> None:
    """Anonymise SRC for a workload of role permissions with imprecision bounds (Pervaiz et al.)
    and report, per permission and per role, the imprecision and whether the bound holds, beside
    plain Mondrian."""
    import fsspec

    from .anonymity import write_release
    from .anonymity.anonymize import anonymize_for_permissions
    from .condensation.io import read_table

    try:
        with fsspec.open(perm_file, "r", **obj.storage_options) as fh:
            spec = json.load(fh)
    except FileNotFoundError:
        raise click.BadParameter(f"no such file: {perm_file}", param_hint="--permissions") from None
    except json.JSONDecodeError as e:
        raise click.BadParameter(f"{perm_file} is not valid JSON: {e}", param_hint="--permissions") from None
    t0 = time.perf_counter()
    keep_cols = _split_list(keep)
    with obj.runtime() as where:
        df = read_table(src, storage_options=obj.storage_options, sep=sep, pyarrow=True)
        qis = _qi_from(df, qi, sensitive, keep_cols)
        res = anonymize_for_permissions(df, qis, spec, k=k, sensitive=sensitive, l=l, kind=l_kind, c=c, keep=keep_cols,
                                        progress=obj.progress)
        verdict = res.release.verify()
        if not verdict["ok"]:
            raise PrivacyViolation(f"independent check failed: {verdict}")
        summary = res.release.summary()
        if dst:
            write_release(dst, res.release.table, summary={**summary, "check": verdict}, storage_options=obj.storage_options,
                          overwrite=overwrite, progress=obj.progress)
    secs = time.perf_counter() - t0
    perms = res.report.to_pandas()
    base = res.baseline.to_pandas()
    summary.update({"check": verdict, "seconds": round(secs, 2), "scheduler": where, "out": dst,
                    "permission_report": perms.to_dict(orient="records"), "roles": res.report.roles_to_pandas().to_dict(orient="records"),
                    "mondrian_roles": res.baseline.roles_to_pandas().to_dict(orient="records")})
    lines = [f"{src}: {summary['n_records']:,} records, QI {qis}, k={k}" + (f", l={l:g}" if l else "") + f" (on {where})",
             f"  permissions met    {summary['permissions_satisfied']}/{summary['permissions']} (plain Mondrian: {summary['mondrian_permissions_satisfied']}); "
             f"total imprecision {summary['total_imprecision']:,} (Mondrian {summary['mondrian_total_imprecision']:,})"]
    for role, rs in res.report.roles.items():
        b = res.baseline.roles[role]
        lines.append(f"  role {role:14} {rs.n_satisfied}/{rs.n_permissions} met, imprecision {rs.total_imprecision:,} (Mondrian {b.n_satisfied}/{b.n_permissions}, {b.total_imprecision:,})")
    for (_, p), (_, q) in zip(perms.iterrows(), base.iterrows()):
        label = p["name"] or f"{p['role']}"
        lines.append(f"    {label:18} |Q_T|={p['true_count']:,} returned {p['returned']:,} imprecision {p['imprecision']:,} <= {p['bound']:g}? "
                     f"{'yes' if p['satisfied'] else 'NO'} (Mondrian {q['imprecision']:,})")
    lines += _privacy_lines(summary, verdict)
    if dst:
        lines.append(f"  release            {dst}")
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


@cli.command("km-anonymize")
@click.argument("src")
@click.argument("dst")
@click.option("--k", "k", type=click.IntRange(min=1), required=True, help="Every itemset of at most m items is supported 0 or >= k times.")
@click.option("--m", "m", type=click.IntRange(min=1), default=2, show_default=True, help="Adversary knowledge: number of items known.")
@click.option("--hierarchy", "hierarchy_file", default=None, help="Item hierarchy: ARX CSV (';', one row per item label, a column per level).")
@click.option("--fan-out", type=click.IntRange(min=2), default=None, help="Instead of --hierarchy: a balanced hierarchy over the sorted item labels.")
@click.option("--method", type=click.Choice(["AA", "DA"]), default="AA", show_default=True, help="Apriori-based (AA) or direct (DA) anonymization.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Input format (default: from the extension).")
@click.option("--check/--no-check", default=True, show_default=True, help="Recount every itemset of <= m items in the output (independent check).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def km_anonymize(obj: Context, src, dst, k, m, hierarchy_file, fan_out, method, fmt, check, overwrite) -> None:
    """k^m-anonymize the transactions SRC by global item generalisation (Terrovitis et al.) and
    write the generalised transactions to DST."""
    from .anonymity import Hierarchy
    from .anonymity.km import is_km_anonymous, km_anonymize as run
    from .io import read, write

    if (hierarchy_file is None) == (fan_out is None):
        raise click.UsageError("give exactly one of --hierarchy FILE and --fan-out F")
    t0 = time.perf_counter()
    with obj.runtime() as where:
        tx = read(src, format=fmt, storage_options=obj.storage_options, progress=obj.progress)
        if hierarchy_file:
            hier = Hierarchy.from_csv(hierarchy_file, name="items", storage_options=obj.storage_options)
        else:
            hier = Hierarchy.balanced(tx.n_items, fan_out, labels=tx.vocabulary.labels, name="items")
        res = run(tx, hier, k, m, method=method, progress=obj.progress)
        verdict = is_km_anonymous(res.transactions, k, m, progress=obj.progress) if check else None
        if verdict is not None and not verdict["km_anonymous"]:
            raise PrivacyViolation(f"independent check failed: {verdict}")
        write(res.transactions, dst, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
    secs = time.perf_counter() - t0
    summary = {**res.summary(), "check": verdict, "seconds": round(secs, 2), "scheduler": where, "out": dst}
    lines = [f"{src}: {tx.n_transactions:,} transactions, {tx.n_items:,} items -> {dst} (k={k}, m={m}, {method}, on {where})",
             f"  cut                {len(res.cut):,} published nodes; {res.n_generalized_items:,} of {tx.n_items:,} items generalised",
             f"  information loss   NCP {res.ncp:.4f} (0 = no generalisation, 1 = every item -> '*')"]
    if verdict is not None:
        lines.append(f"  independent check  every itemset of <= {m} items has support 0 or >= {k}: {verdict['km_anonymous']} "
                     f"(smallest support {verdict['min_support']})")
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


# ---------------------------------------------------------------------- krimp
@cli.group()
def krimp() -> None:
    """KRIMP code tables, the KRIMP data generator and DS dissimilarity (Vreeken et al.)."""


def _exclude_arg(values: tuple[str, ...]) -> list[list[int]]:
    out = []
    for v in values:
        try:
            out.append([int(x) for x in v.replace(" ", ",").split(",") if x])
        except ValueError:
            raise click.BadParameter(f"expected comma-separated item ids, got {v!r}", param_hint="--exclude") from None
    return out


@krimp.command("compress")
@click.argument("src")
@click.option("--min-support", required=True, help="Candidate min-support: an absolute count (e.g. 1, 20) or a fraction in (0, 1).")
@click.option("--closed", is_flag=True, help="Closed frequent itemsets as candidates (else all frequent itemsets).")
@click.option("--no-prune", is_flag=True, help="No post-acceptance pruning (as the generator paper).")
@click.option("--max-len", type=click.IntRange(min=2), default=None, help="Longest candidate itemsets.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Input format (default: from the extension).")
@click.option("--out", default=None, help="Write the code table (JSON) here.")
@click.pass_obj
def krimp_compress(obj: Context, src, min_support, closed, no_prune, max_len, fmt, out) -> None:
    """Find the KRIMP code table of SRC and report its compression."""
    from .io import read
    from .krimp import krimp as run
    from .mining import min_count_of

    t0 = time.perf_counter()
    with obj.runtime() as where:
        tx = read(src, format=fmt, storage_options=obj.storage_options, progress=obj.progress)
        res = run(tx, min_support=min_count_of(_support_value(min_support), tx.n_transactions), closed=closed, prune=not no_prune,
                  max_len=max_len, progress=obj.progress)
    ct = res.code_table
    if out:
        ct.save(out)
    s = ct.sizes()
    secs = time.perf_counter() - t0
    summary = {"src": src, "min_support": res.min_support, "closed": closed, "prune": not no_prune, "n_candidates": res.n_candidates,
               "n_accepted": res.n_accepted, "n_pruned": res.n_pruned, "code_table_itemsets": ct.n_nontrivial,
               "seconds_mining": res.seconds_mining, "seconds_search": res.seconds_search, "sizes": s, "out": out,
               "seconds": round(secs, 2), "scheduler": where}
    lines = [f"{src}: {tx.n_transactions:,} transactions, {tx.n_items:,} items ({'closed' if closed else 'all'} candidates, min-support {min_support}, on {where})",
             f"  candidates         {res.n_candidates:,} (mining {res.seconds_mining:.2f} s, search {res.seconds_search:.2f} s)",
             f"  code table         {ct.n_nontrivial:,} itemsets + {len(ct.itemsets) - ct.n_nontrivial:,} singletons",
             f"  compressed size    L(D|CT) {s['L_D_CT']:,.1f} + L(CT|D) {s['L_CT_D']:,.1f} = {s['total']:,.1f} bits "
             f"(standard code table {s['total_ST']:,.1f}); L% = {s['L_percent']:.2f}"]
    if out:
        lines.append(f"  code table written to {out}")
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


@krimp.command("generate")
@click.argument("src")
@click.argument("dst")
@click.option("--min-support", required=True, help="Candidate min-support (k-anonymity-like: patterns rarer than this are never used).")
@click.option("--laplace", type=click.FloatRange(min=0), default=0.001, show_default=True, help="Added to every usage (diversity).")
@click.option("--rows", type=click.IntRange(min=1), default=None, help="Rows to generate (default: as many as SRC).")
@click.option("--closed", is_flag=True, help="Closed candidates.")
@click.option("--prune", is_flag=True, help="Post-acceptance pruning (the paper used none).")
@click.option("--max-len", type=click.IntRange(min=2), default=None, help="Longest pattern in the code table.")
@click.option("--exclude", multiple=True, metavar="I,J,...", help="Sensitive item combination: no pattern may contain all of them. Repeatable.")
@click.option("--domain-order", type=click.Choice(["random", "columns"]), default="random", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["parquet", "fimi", "csv"]), default=None, help="Input format (default: from the extension).")
@click.option("--check/--no-check", default=True, show_default=True, help="Report NAS and DS(generated, original).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.pass_obj
def krimp_generate(obj: Context, src, dst, min_support, laplace, rows, closed, prune, max_len, exclude, domain_order, fmt, check, overwrite) -> None:
    """Generate a synthetic categorical database from the KRIMP code table of SRC."""
    from .io import read, write
    from .krimp.generator import KrimpGenerator
    from .krimp.scores import dissimilarity, normalized_anonymity_score
    from .mining import min_count_of

    key = obj.key()
    t0 = time.perf_counter()
    with obj.runtime() as where:
        tx = read(src, format=fmt, storage_options=obj.storage_options, progress=obj.progress)
        ms = min_count_of(_support_value(min_support), tx.n_transactions)
        gen = KrimpGenerator(ms, laplace=laplace, closed=closed, prune=prune, max_len=max_len, exclude=_exclude_arg(exclude),
                             domain_order=domain_order).fit(tx)
        out = gen.sample(rows, key=key)
        write(out, dst, storage_options=obj.storage_options, overwrite=overwrite, progress=obj.progress)
        written = read(dst, storage_options=obj.storage_options, progress=False)
        nas = float(normalized_anonymity_score(written, tx)) if check else None
        ds = dissimilarity(written, tx, min_support=ms, closed=closed, prune=prune) if check else None
    secs = time.perf_counter() - t0
    summary = {"src": src, "dst": dst, "min_support": ms, "laplace": laplace, "closed": closed, "prune": prune, "max_len": max_len,
               "exclude": _exclude_arg(exclude), "domain_order": domain_order, "n_rows": written.n_transactions,
               "n_domains": len(gen.domains_), "code_table_itemsets": gen.code_table_.n_nontrivial,
               "avg_patterns_per_row": gen.avg_patterns_per_row_, "nas": nas, "ds": ds, "seconds": round(secs, 2), "scheduler": where}
    lines = [f"{src}: {tx.n_transactions:,} rows, {len(gen.domains_)} domains -> {dst}: {written.n_transactions:,} generated rows (on {where})",
             f"  code table         {gen.code_table_.n_nontrivial:,} itemsets (min-support {ms}, laplace {laplace})",
             f"  privacy            {gen.avg_patterns_per_row_:.2f} code-table elements per row (more = better privacy)"
             + (f"; NAS {nas:.3f} (0 = no original row reproduced at its support level)" if nas is not None else ""),
             ]
    if ds is not None:
        lines.append(f"  utility            DS(generated, original) = {ds:.4f} (0 = same pattern structure)")
    lines.append(f"  done in {secs:.1f} s")
    obj.emit(summary, "\n".join(lines))


@krimp.command("ds")
@click.argument("a")
@click.argument("b")
@click.option("--min-support", required=True, help="Candidate min-support for both code tables.")
@click.option("--closed", is_flag=True, help="Closed candidates.")
@click.option("--no-prune", is_flag=True, help="No post-acceptance pruning.")
@click.pass_obj
def krimp_ds(obj: Context, a, b, min_support, closed, no_prune) -> None:
    """DS dissimilarity of two databases from their KRIMP code tables (0 = identical structure)."""
    from .io import read
    from .krimp.scores import dissimilarity

    t0 = time.perf_counter()
    with obj.runtime() as where:
        x = read(a, storage_options=obj.storage_options, progress=obj.progress)
        y = read(b, storage_options=obj.storage_options, progress=obj.progress)
        d = dissimilarity(x, y, min_support=_support_value(min_support), closed=closed, prune=not no_prune, details=True)
    secs = time.perf_counter() - t0
    ds = d["ds"] if isinstance(d, dict) else float(d)
    summary = {"a": a, "b": b, "details": d, "ds": ds, "seconds": round(secs, 2), "scheduler": where}
    obj.emit(summary, f"DS({a}, {b}) = {ds:.4f}  (min-support {min_support}; {secs:.1f} s on {where})")


# ---------------------------------------------------------------------- samples / demo
@cli.command()
@click.pass_obj
def samples(obj: Context) -> None:
    """List the data samples bundled with the package."""
    from .data.datasets import list_samples, sample_path

    items = {name: {"description": desc, "path": str(sample_path(name))} for name, desc in list_samples().items()}
    obj.emit(items, "\n".join(f"{n:18} {v['description']}" for n, v in items.items()))


@cli.command()
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Keep the demo outputs in this folder (default: a temporary folder).")
@click.option("--rows", type=click.IntRange(min=1000), default=20000, help="Rows of the synthetic Quest data set.")
@click.pass_obj
def demo(obj: Context, out: str | None, rows: int) -> None:
    """End-to-end run on bundled data: sample -> Parquet -> read back -> statistics -> Apriori
    and rules; Quest data generated and inspected."""
    from .data.datasets import load_sample
    from .data.quest import parse_spec, quest
    from .io import read

    with contextlib.ExitStack() as stack:
        folder = out or stack.enter_context(tempfile.TemporaryDirectory(prefix="ppdm-demo-"))
        os.makedirs(folder, exist_ok=True)
        t0 = time.perf_counter()
        with obj.runtime() as where:
            click.echo(f"[demo] running on {where}", err=True)
            tx = load_sample("mushroom", npartitions=4)
            path = os.path.join(folder, "mushroom.parquet")
            tx.to_parquet(path, overwrite=True, progress=obj.progress)
            back = read(path)
            supports = back.item_supports(progress=obj.progress)
            same = bool((back.compute(progress=False) != tx.compute(progress=False)).nnz == 0)
            d = back.describe(progress=obj.progress)
            top = np.argsort(-supports, kind="stable")[:5]
            from .mining import apriori, association_rules

            fi = apriori(back, 0.3, progress=obj.progress)
            rules = association_rules(fi, 0.9)
            qspec = parse_spec(f"T10.I4.D{rows}.N1K")
            q = quest(qspec, key=obj.key())
            qpath = os.path.join(folder, "quest.parquet")
            q.to_parquet(qpath, overwrite=True, progress=obj.progress)
            qd = read(qpath).describe(progress=obj.progress)
        secs = time.perf_counter() - t0
    summary = {
        "mushroom": {k: d[k] for k in ("n_transactions", "n_items", "nnz", "density", "mean_length")},
        "round_trip_identical": same,
        "mining": {"min_support": 0.3, "itemsets": len(fi), "by_length": {st["length"]: st["frequent"] for st in fi.level_stats}, "rules_conf_0.9": len(rules)},
        "top_items": [{"item": back.vocabulary.labels[i].item(), "support": int(supports[i])} for i in top],
        "quest": {"spec": qspec.name, **{k: qd[k] for k in ("n_transactions", "n_items", "mean_length", "n_partitions")}},
        "seconds": round(secs, 2),
        "scheduler": where,
    }
    text = "\n".join(
        [
            f"mushroom sample: {d['n_transactions']:,} transactions, {d['n_items']} items, density {d['density']:.4f}",
            f"  Parquet round trip identical: {same}",
            "  most frequent items: " + ", ".join(f"{t['item']} ({t['support']:,})" for t in summary["top_items"]),
            f"  Apriori at 30% support: {len(fi):,} frequent itemsets (longest {fi.max_length}), {len(rules):,} rules with confidence >= 0.9",
            f"Quest {qspec.name}: {qd['n_transactions']:,} transactions, mean length {qd['mean_length']:.2f}, {qd['n_partitions']} partitions",
            f"done in {secs:.1f} s on {where}" + (f"; outputs in {out}" if out else ""),
        ]
    )
    obj.emit(summary, text)


def main() -> None:
    """Entry point of the ``ppdm`` console script."""
    cli(prog_name="ppdm")


if __name__ == "__main__":  # pragma: no cover
    main()

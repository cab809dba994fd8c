"""``ppdm mine``: exact frequent itemsets and association rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ._core import Context, job
from ._errors import usage_error
from ._options import Number, apriori_max_candidates, check_count, input_format, overwrite, support_from, support_options

#: output layouts (:mod:`ppdm_dask.mining.export`): by extension, and the extensions each writes.
#: Kept here so a wrong name is refused before the miner loads; a test checks that it agrees
#: with :func:`ppdm_dask.mining.export.format_of`.
OUT_FORMATS = ("ppdm", "mlxtend", "spmf", "spark")
_BY_EXTENSION = {"": "ppdm", ".parquet": "ppdm", ".pq": "ppdm", ".csv": "mlxtend", ".txt": "spmf"}  # no extension: as before
_EXTENSIONS = {
    "ppdm": (".parquet", ".pq"),
    "mlxtend": (".csv", ".parquet", ".pq"),
    "spmf": (".txt",),
    "spark": (".parquet", ".pq"),
}

out_format_option = click.option(
    "--out-format",
    "out_format_name",
    type=click.Choice(OUT_FORMATS),
    default=None,
    help="Layout of the result files: ppdm (our Parquet), mlxtend (its DataFrame as .csv, item sets as "
    "comma-joined labels, or .parquet), spmf (SPMF's text) or spark (FPGrowth's Parquet). "
    "Default: by extension, .parquet (or none) -> ppdm, .csv -> mlxtend, .txt -> spmf.",
)


def out_format(url: str | None, fmt: str | None, flag: str) -> str | None:
    """The layout ``url`` is written in, or one usage error naming ``flag`` and --out-format."""
    if url is None:
        return None
    import posixpath

    ext = posixpath.splitext(url.rstrip("/").split("?", 1)[0])[1].lower()
    if fmt is None:
        if ext not in _BY_EXTENSION:
            raise usage_error(
                f"{flag} {url}: cannot tell the output format from the extension {ext!r}",
                "name it .parquet, .csv or .txt, or give --out-format",
            )
        return _BY_EXTENSION[ext]
    known = {e for exts in _EXTENSIONS.values() for e in exts}
    if ext in known and ext not in _EXTENSIONS[fmt]:
        raise usage_error(f"{flag} {url}: --out-format {fmt} is not written as {ext}", f"name it {' or '.join(_EXTENSIONS[fmt])}")
    return fmt


def level_line(prefix: str) -> Callable[[dict[str, Any]], None]:
    def line(st: dict[str, Any]) -> None:
        click.echo(
            f"[{prefix}] level {st['length']}: {st['candidates']:,} candidates -> {st['frequent']:,} frequent ({st['seconds']:.2f} s)",
            err=True,
        )

    return line


def levels_text(level_stats: list[dict[str, Any]]) -> list[str]:
    lines = ["  length  candidates    frequent   seconds"]
    lines += [
        f"  {st['length']:>6}  {st['candidates']:>10,}  {st['frequent']:>10,}  {st['seconds']:8.3f}"
        + (f"  (counted in the pass of length {st['counted_with']})" if "counted_with" in st else "")
        for st in level_stats
    ]
    plans = list(dict.fromkeys(st[f] for st in level_stats for f in ("rows", "memory") if st.get(f)))
    lines += [f"  memory plan: {p}" for p in plans]  # which plans ran for the rows and bitsets, and why
    units = list(dict.fromkeys(st["units"] for st in level_stats if st.get("units")))
    lines += [f"  units: {u}" for u in units]  # blocks counted and searched together, and why
    strategies = list(dict.fromkeys((st["strategy"], st.get("strategy_reason", "")) for st in level_stats if st.get("strategy")))
    lines += [f"  levels >= 3: {name} ({why})" for name, why in strategies]  # which strategy ran, and why
    return lines


@click.command()
@click.argument("url")
@support_options()
@click.option("--max-length", type=click.IntRange(min=1), default=None, help="Longest itemsets to mine.")
@click.option(
    "--max-itemsets",
    type=click.IntRange(min=1),
    default=50_000_000,
    show_default=True,
    help="Stop with an error before the result grows past this many itemsets.",
)
@apriori_max_candidates
@click.option(
    "--strategy",
    type=click.Choice(["auto", "levelwise", "partition"]),
    default="auto",
    show_default=True,
    help="How itemsets of length >= 3 are mined (same result): one pass per level, or a depth-first local search per "
    "partition plus one exact count of what some partitions missed; auto chooses by a cost model.",
)
@click.option("--rules", "with_rules", is_flag=True, help="Also derive association rules.")
@click.option("--min-confidence", type=Number(0, 1), default=0.6, show_default=True, help="Rule confidence threshold.")
@input_format
@click.option("--out", default=None, help="Write the frequent itemsets to this file (.parquet, .csv or .txt; see --out-format).")
@click.option("--rules-out", default=None, help="Write the rules to this file (.parquet, .csv or .txt; see --out-format).")
@out_format_option
@overwrite
@click.pass_obj
def mine(
    obj: Context,
    url: str,
    min_support: str | None,
    min_count: int | None,
    max_length: int | None,
    max_itemsets: int,
    max_candidates: int,
    strategy: str,
    with_rules: bool,
    min_confidence: float,
    fmt: str | None,
    out: str | None,
    rules_out: str | None,
    out_format_name: str | None,
    overwrite: bool,
) -> None:
    """Exact frequent itemsets (distributed Apriori) and, with --rules, association rules.

    The support threshold is --min-support (a fraction of the transactions in (0, 1]) or
    --min-count (a number of transactions). --strategy chooses how the itemsets of length >= 3
    are mined; the result is the same."""
    ms = support_from(min_support, min_count)
    out_fmt = out_format(out, out_format_name, "--out")
    rules_fmt = out_format(rules_out, out_format_name, "--rules-out")
    with job(obj, inputs=[url], outputs=[out, rules_out], overwrite=overwrite) as j:
        from ..mining import apriori, association_rules  # after the checks: a usage error loads no miner

        tx, input_plan = obj.transactions_for_passes(url, fmt)
        check_count(ms, tx.n_transactions, url)
        fi = apriori(
            tx,
            ms,
            max_length=max_length,
            max_itemsets=max_itemsets,
            max_candidates=max_candidates,
            strategy=strategy,
            progress=obj.progress,
            on_level=level_line("mine") if obj.progress else None,
        )
    rules = association_rules(fi, min_confidence) if with_rules or rules_out else None
    if out:
        from ..mining.export import write_itemsets

        write_itemsets(fi, out, format=out_fmt, storage_options=obj.storage_options, overwrite=overwrite)
    if rules is not None and rules_out:
        from ..mining.export import write_rules

        write_rules(rules, rules_out, format=rules_fmt, storage_options=obj.storage_options, overwrite=overwrite)
    summary = {
        "url": url,
        "n_transactions": fi.n_transactions,
        "min_count": fi.min_count,
        "itemsets": len(fi),
        "levels": fi.level_stats,
        "rules": len(rules) if rules is not None else None,
        "out_format": out_fmt,
        "rules_out_format": rules_fmt,
        "input_plan": input_plan,
        "seconds": j.seconds,
        "scheduler": j.where,
    }
    lines = [
        f"{url}: {len(fi):,} frequent itemsets (support >= {fi.min_count:,} of {fi.n_transactions:,} transactions) in {j.seconds:.2f} s",
        *levels_text(fi.level_stats),
        f"  memory plan: {input_plan}",
    ]
    if rules is not None:
        lines.append(f"  {len(rules):,} association rules with confidence >= {min_confidence}")
        top = rules.to_pandas().sort_values(["confidence", "lift"], ascending=False).head(5)
        lines += [
            f"    {list(r['antecedent'])} -> {list(r['consequent'])}  conf {r['confidence']:.3f}  lift {r['lift']:.2f}"
            for _, r in top.iterrows()
        ]
    if out:
        lines.append(f"  itemsets written to {out}" + (f" ({out_fmt} layout)" if out_fmt != "ppdm" else ""))
    if rules is not None and rules_out:
        lines.append(f"  rules written to {rules_out}" + (f" ({rules_fmt} layout)" if rules_fmt != "ppdm" else ""))
    obj.emit(summary, "\n".join(lines))

"""``ppdm mine``: exact frequent itemsets and association rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ._core import Context, job
from ._options import Number, apriori_max_candidates, check_count, input_format, overwrite, support_from, support_options


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
@click.option("--out", default=None, help="Write the frequent itemsets to this Parquet file.")
@click.option("--rules-out", default=None, help="Write the rules to this Parquet file.")
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
    overwrite: bool,
) -> None:
    """Exact frequent itemsets (distributed Apriori) and, with --rules, association rules.

    The support threshold is --min-support (a fraction of the transactions in (0, 1]) or
    --min-count (a number of transactions). --strategy chooses how the itemsets of length >= 3
    are mined; the result is the same."""
    ms = support_from(min_support, min_count)
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
        fi.to_parquet(out, storage_options=obj.storage_options, overwrite=overwrite)
    if rules is not None and rules_out:
        rules.to_parquet(rules_out, storage_options=obj.storage_options, overwrite=overwrite)
    summary = {
        "url": url,
        "n_transactions": fi.n_transactions,
        "min_count": fi.min_count,
        "itemsets": len(fi),
        "levels": fi.level_stats,
        "rules": len(rules) if rules is not None else None,
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
        lines.append(f"  itemsets written to {out}")
    obj.emit(summary, "\n".join(lines))

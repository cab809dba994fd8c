"""``ppdm krimp compress | generate | ds``: KRIMP code tables, generator releases, DS."""

from __future__ import annotations

from typing import Any

import click

from ._core import Context, job, write_release
from ._options import (
    Number,
    as_baskets,
    check_count,
    input_format,
    overwrite,
    release_output,
    support_from,
    support_options,
    support_text,
)
from ._summary import emit_release


@click.group()
def krimp() -> None:
    """KRIMP code tables, the KRIMP data generator and DS dissimilarity (Vreeken et al.)."""


#: ``--max-candidates``: the guard against candidate explosion (low min-support on dense data)
max_candidates = click.option(
    "--max-candidates",
    type=click.IntRange(min=1),
    default=20_000_000,
    show_default=True,
    help="Stop with an error before more candidate itemsets than this are mined.",
)
#: ``--distributed``: the cover on the workers (one block per partition), the same code table
distributed = click.option(
    "--distributed",
    is_flag=True,
    help="Keep the cover on the cluster's workers, one block per input partition (the same code table).",
)
#: ``--prune/--no-prune`` of the DS computations: the same default in ``generate`` and ``ds``
ds_prune = click.option(
    "--prune/--no-prune",
    default=False,
    show_default=True,
    help="Post-acceptance pruning of the code tables (off: the generator paper's DS).",
)


def _exclude_arg(values: tuple[str, ...]) -> list[list[int]]:
    """``--exclude I,J,...`` (repeatable) -> combinations of item ids: at least 2 distinct items
    each, no combination twice. A single item is refused: singletons are always in the code
    table, so the item would still be generated (only no pattern would hold it)."""
    from ..errors import InvalidParameter

    out: list[list[int]] = []
    seen: dict[frozenset[int], str] = {}
    for v in values:
        try:
            combo = [int(x) for x in v.replace(" ", ",").split(",") if x]
        except ValueError:
            raise InvalidParameter(
                f"--exclude {v!r}: expected comma-separated item ids", cli="--exclude I,J,... with integer item ids"
            ) from None
        if len(set(combo)) != len(combo):
            dup = sorted({i for i in combo if combo.count(i) > 1})
            raise InvalidParameter(
                f"--exclude {v!r} names item {', '.join(map(str, dup))} more than once",
                cli="list each item of an --exclude combination once",
            )
        if len(combo) < 2:
            raise InvalidParameter(
                f"--exclude {v!r}: a combination needs at least 2 items; a single item is still generated through its singleton "
                "code",
                cli="--exclude I,J,... with 2 or more items; remove an item from the source data to suppress it",
            )
        key = frozenset(combo)
        if key in seen:
            raise InvalidParameter(
                f"--exclude {v!r} repeats the combination {seen[key]!r}", cli="give each --exclude combination once"
            )
        seen[key] = v
        out.append(combo)
    return out


def _check_exclude(excluded: list[list[int]], tx: Any, src: str) -> None:
    """Every item of an --exclude combination must be an item of SRC (else it excludes nothing)."""
    if not excluded:
        return
    import numpy as np

    from ..errors import InvalidParameter

    labels = np.asarray(tx.vocabulary.labels)
    asked = np.unique(np.concatenate([np.asarray(c, dtype=np.int64) for c in excluded]))
    known = np.isin(asked, labels.astype(np.int64)) if labels.dtype.kind in "iu" else np.zeros(asked.size, bool)
    if not known.all():
        missing = asked[~known].tolist()
        shown = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10:,} more" if len(missing) > 10 else "")
        raise InvalidParameter(
            f"--exclude: item{'s' if len(missing) > 1 else ''} {shown} {'are' if len(missing) > 1 else 'is'} not "
            f"in {src}, so the combination would exclude nothing",
            cli=f"--exclude with items of {src}",
        )


@krimp.command("compress")
@click.argument("src")
@support_options(what="Candidate min-support")
@click.option("--closed", is_flag=True, help="Closed frequent itemsets as candidates (else all frequent itemsets).")
@click.option("--no-prune", is_flag=True, help="No post-acceptance pruning (as the generator paper).")
@click.option("--max-len", type=click.IntRange(min=2), default=None, help="Longest candidate itemsets.")
@max_candidates
@distributed
@input_format
@click.option("--out", default=None, metavar="CT.json", help="Save the code table (JSON, with its public parameters) here.")
@overwrite
@click.pass_obj
def krimp_compress(
    obj: Context,
    src: str,
    min_support: str | None,
    min_count: int | None,
    closed: bool,
    no_prune: bool,
    max_len: int | None,
    max_candidates: int,
    distributed: bool,
    fmt: str | None,
    out: str | None,
    overwrite: bool,
) -> None:
    """Find the KRIMP code table of SRC and report its compression (candidates: the itemsets of
    --min-count transactions, or of a --min-support fraction of them; the papers' "min-support 1"
    is --min-count 1)."""
    from ..krimp import krimp as run
    from ..mining import min_count_of

    ms = support_from(min_support, min_count)
    with job(obj, inputs=[src], outputs=[out], overwrite=overwrite) as j:
        tx = obj.read_transactions(src, fmt)
        check_count(ms, tx.n_transactions, src)
        res = run(
            tx,
            min_support=min_count_of(ms, tx.n_transactions),
            closed=closed,
            prune=not no_prune,
            max_len=max_len,
            progress=obj.progress,
            max_candidates=max_candidates,
            distributed=distributed,
        )
    ct = res.code_table
    if out:
        ct.save(out, storage_options=obj.storage_options, overwrite=overwrite)
    s = ct.sizes()
    summary = {
        "src": src,
        "min_support": res.min_support,
        "closed": closed,
        "prune": not no_prune,
        "n_candidates": res.n_candidates,
        "n_accepted": res.n_accepted,
        "n_pruned": res.n_pruned,
        "code_table_itemsets": ct.n_nontrivial,
        "seconds_mining": res.seconds_mining,
        "seconds_search": res.seconds_search,
        "sizes": s,
        "out": out,
        "seconds": j.seconds,
        "scheduler": j.where,
    }
    if distributed:
        summary["distributed"] = {k: res.stats[k] for k in ("blocks", "round_trips", "proposals", "planner")}
    lines = [
        f"{src}: {tx.n_transactions:,} transactions, {tx.n_items:,} items ({'closed' if closed else 'all'} candidates, "
        f"{support_text(ms)}{'' if isinstance(ms, int) else f' = {res.min_support:,} rows'}, on {j.where})",
        f"  candidates         {res.n_candidates:,} (mining {res.seconds_mining:.2f} s, search {res.seconds_search:.2f} s)",
        f"  code table         {ct.n_nontrivial:,} itemsets + {len(ct.itemsets) - ct.n_nontrivial:,} singletons",
        f"  compressed size    L(D|CT) {s['L_D_CT']:,.1f} + L(CT|D) {s['L_CT_D']:,.1f} = {s['total']:,.1f} bits "
        f"(standard code table {s['total_ST']:,.1f}); L% = {s['L_percent']:.2f}",
    ]
    if distributed:
        pl = res.stats["planner"]
        lines.append(
            f"  distributed        {res.stats['blocks']}; {res.stats['round_trips']:,} round trips, batches of "
            f"{pl['batch_size']} candidates (cost model)"
        )
    if out:
        lines.append(f"  code table written to {out}")
    lines.append(f"  done in {j.seconds:.1f} s")
    obj.emit(summary, "\n".join(lines))


@krimp.command("generate")
@click.argument("src")
@click.argument("dst")
@support_options(what="Candidate min-support", note="Patterns rarer than this are never used (floor: 2 transactions).")
@click.option("--laplace", type=Number(min=0), default=0.001, show_default=True, help="Added to every usage (diversity).")
@click.option("--rows", type=click.IntRange(min=1), default=None, help="Rows to generate (default: as many as SRC).")
@click.option("--closed", is_flag=True, help="Closed candidates.")
@ds_prune
@click.option("--max-len", type=click.IntRange(min=2), default=None, help="Longest pattern in the code table.")
@max_candidates
@distributed
@click.option(
    "--exclude",
    multiple=True,
    metavar="I,J,...",
    help="Sensitive combination of 2 or more items of SRC: no pattern may contain all of them. Repeatable.",
)
@click.option("--domain-order", type=click.Choice(["random", "columns"]), default="random", show_default=True)
@click.option("--scores/--no-scores", default=True, show_default=True, help="Report NAS and DS(generated, original).")
@click.option(
    "--allow-unique-copies",
    is_flag=True,
    help="Do not redraw generated rows that equal a record unique in SRC (they identify a person); recorded in the "
    "manifest. --allow-weak alone does not lift this rule.",
)
@input_format
@release_output
@click.pass_obj
def krimp_generate(
    obj: Context,
    src: str,
    dst: str,
    min_support: str | None,
    min_count: int | None,
    laplace: float,
    rows: int | None,
    closed: bool,
    prune: bool,
    max_len: int | None,
    max_candidates: int,
    distributed: bool,
    exclude: tuple[str, ...],
    domain_order: str,
    scores: bool,
    allow_unique_copies: bool,
    fmt: str | None,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """Release a synthetic categorical database generated from the KRIMP code table of SRC
    (with its public patterns in _patterns.parquet); refused below a min-support of 2 transactions
    (--min-count 2) unless --allow-weak. A generated row equal to a record that occurs once in SRC
    is redrawn (unless --allow-unique-copies)."""
    from ..krimp import KrimpGenerator, avg_patterns_per_row, dissimilarity, normalized_anonymity_score
    from ..krimp.release import MIN_SUPPORT, UNIQUE_COPIES
    from ..mining import min_count_of

    support = support_from(min_support, min_count)
    excluded = _exclude_arg(exclude)
    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite) as j:
        tx = obj.read_transactions(src, fmt)
        check_count(support, tx.n_transactions, src)
        _check_exclude(excluded, tx, src)
        ms = min_count_of(support, tx.n_transactions)
        weak = [*([MIN_SUPPORT] if allow_weak else []), *([UNIQUE_COPIES] if allow_unique_copies else [])]
        gen = KrimpGenerator(
            ms,
            laplace,
            closed=closed,
            prune=prune,
            max_len=max_len,
            exclude=excluded,
            domain_order=domain_order,
            key=obj.key(),
            n_rows=rows,
            allow_weak=weak,
            max_candidates=max_candidates,
            distributed=distributed,
        ).fit(tx, progress=obj.progress)
        release = gen.release()
        manifest, rep = write_release(
            obj, release, dst, original=tx, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
        written = obj.read_transactions(dst)
        # a basket CSV release has no n_patterns column: count on the (keyed, reproducible) rows
        extra = {"avg_patterns_per_row": avg_patterns_per_row(written if "n_patterns" in written.columns else release.data)}
        release.redraw_counts(progress=obj.progress)  # owner side: shown in the summary (computed by the report already)
        if scores:
            extra["nas"] = float(normalized_anonymity_score(written, tx))
            ds = dissimilarity(written, tx, min_support=ms, closed=closed, prune=prune)
            assert not isinstance(ds, dict)  # details=False: DS is a number
            extra["ds"] = float(ds)
    text = [f"  {'scores' if i == 0 else '':<12} {k:<24} {v:,.4f}" for i, (k, v) in enumerate(extra.items())]
    if scores:
        text.append(
            f"  {'':<12} (DS with pruning {'on' if prune else 'off'}, as `ppdm krimp ds` with {'--prune' if prune else 'its default'})"
        )
    emit_release(obj, release, src=src, dst=dst, manifest=manifest, job=j, extra_text=text, extra_json=extra, report=rep)


@krimp.command("ds")
@click.argument("a")
@click.argument("b")
@support_options(what="Candidate min-support of both code tables")
@click.option("--closed", is_flag=True, help="Closed candidates.")
@ds_prune
@max_candidates
@as_baskets
@click.pass_obj
def krimp_ds(
    obj: Context, a: str, b: str, min_support: str | None, min_count: int | None, closed: bool, prune: bool, max_candidates: int
) -> None:
    """DS dissimilarity of two databases from their KRIMP code tables (0 = identical structure)."""
    from ..krimp.scores import dissimilarity

    ms = support_from(min_support, min_count)
    with job(obj, inputs=[a, b]) as j:
        x, y = obj.read_transactions(a), obj.read_transactions(b)
        check_count(ms, x.n_transactions, a)
        check_count(ms, y.n_transactions, b)
        d = dissimilarity(x, y, min_support=ms, closed=closed, prune=prune, details=True, max_candidates=max_candidates)
    ds = d["ds"] if isinstance(d, dict) else float(d)
    summary = {"a": a, "b": b, "details": d, "ds": ds, "seconds": j.seconds, "scheduler": j.where}
    summary["prune"] = prune
    obj.emit(
        summary,
        f"DS({a}, {b}) = {ds:.4f}  ({support_text(ms)}, pruning {'on' if prune else 'off'}; {j.seconds:.1f} s on {j.where})",
    )

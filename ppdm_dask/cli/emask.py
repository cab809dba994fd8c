"""``ppdm emask choose | distort | mine | audit``: EMASK/MASK distortion releases."""

from __future__ import annotations

from typing import Any

import click

from ._core import Context, job, write_release
from ._errors import usage_error
from ._options import (
    Number,
    apriori_max_candidates,
    as_baskets,
    basket_source,
    check_count,
    input_format,
    overwrite,
    release_output,
    support_from,
    support_options,
)
from ._summary import emit_release
from .mining import level_line, levels_text, out_format, out_format_option


@click.group()
def emask() -> None:
    """EMASK/MASK: choose (p, q), release a distorted copy, mine it, audit its privacy."""


def _check_pq(p: float | None, q: float | None) -> None:
    """Both --p and --q given: the library's check (p + q != 1) before any work; each flag's
    range is its click type's."""
    from ..emask.distortion import check_pq

    if p is not None and q is not None:
        check_pq(p, q)


def _pq(obj: Context, url: str, tx: Any, p: float | None, q: float | None) -> tuple[float, float]:
    """--p/--q, else the data's metadata, else the release manifest."""
    from ..emask.release import pq_from_manifest

    recorded = pq_from_manifest(url, storage_options=obj.storage_options) or (tx.metadata.get("p"), tx.metadata.get("q"))
    p = p if p is not None else recorded[0]
    q = q if q is not None else recorded[1]
    if p is None or q is None:
        raise usage_error(f"{url} records no distortion parameters", "give --p and --q")
    return float(p), float(q)


@emask.command("choose")
@click.option(
    "--s0",
    type=Number(0, 1, min_open=True, max_open=True),
    default=None,
    help="Average item support (fraction). Or give --data to estimate it.",
)
@click.option("--data", default=None, help="Estimate s0 (mean transaction length / items) from this dataset.")
@click.option(
    "--min-support",
    type=Number(0, 1, min_open=True),
    default=0.003,
    show_default=True,
    metavar="FRACTION",
    help="Mining support (a fraction of the transactions in (0, 1]) at which accuracy is screened (Eq. 6).",
)
@click.option("--privacy-floor", type=Number(0, 100), default=90.0, show_default=True, help="Minimum basic privacy (percent).")
@click.option("--q-min", type=Number(0, 1), default=0.95, show_default=True, help="Keep only q > this.")
@as_baskets
@basket_source
@click.pass_obj
def emask_choose(
    obj: Context, s0: float | None, data: str | None, min_support: float, privacy_floor: float, q_min: float
) -> None:
    """Candidate (p, q): basic privacy >= the floor at s0, accuracy no worse than MASK (0.9, 0.9)."""
    from ..emask.parameters import choose_parameters, estimate_s0

    if (s0 is None) == (data is None):
        raise usage_error("give exactly one of --s0 and --data")
    if data is not None:
        with job(obj, inputs=[data]):
            s0 = estimate_s0(obj.read_transactions(data))
    assert s0 is not None  # exactly one of --s0 and --data (checked above)
    choices = choose_parameters(s0, min_support, privacy_floor=privacy_floor, q_min=q_min)
    rows = [{"p": c.p, "q": c.q, "basic_privacy": c.basic_privacy, "err6": c.err6, "ldp_epsilon": c.ldp_epsilon} for c in choices]
    lines = [
        f"s0 = {s0:.5g}, min_support = {min_support}, floor {privacy_floor:g}%: {len(rows)} candidate(s)",
        "     p     q   BP (%)   Eq.6 err   eps/bit",
    ]
    lines += [
        f"  {r['p']:.2f}  {r['q']:.2f}   {r['basic_privacy']:6.2f}   {r['err6']:8.4f}   {r['ldp_epsilon']:7.3f}" for r in rows
    ]
    obj.emit({"s0": s0, "min_support": min_support, "privacy_floor": privacy_floor, "candidates": rows}, "\n".join(lines))


def _catalogue(obj: Context, url: str, tx: Any) -> list[Any]:
    """The item labels of the --items FILE (one a line), of the data's label type."""
    from ..data.sidefiles import read_text_file
    from ..errors import InvalidParameter

    lines = [
        x.strip()
        for x in read_text_file(url, what="item catalogue", parameter="items", storage_options=obj.storage_options).splitlines()
    ]
    labels = [x for x in lines if x]
    if not tx.vocabulary.is_integer:
        return labels
    for i, x in enumerate(lines, 1):
        if x and not (x.isascii() and x.isdigit()):
            raise InvalidParameter(
                f"{url} line {i}: {x!r} is not an item id; the data's items are integers",
                cli="--items FILE with one integer item id a line",
            )
    return [int(x) for x in labels]


@emask.command("distort")
@click.argument("src")
@click.argument("dst")
@click.option("--p", "p", type=Number(0, 1), required=True, help="Probability that a 1 stays 1.")
@click.option("--q", "q", type=Number(0, 1), required=True, help="Probability that a 0 stays 0.")
@click.option(
    "--privacy-floor",
    type=Number(0, 100),
    default=90.0,
    show_default=True,
    help="Refuse a basic privacy below this (percent; the floor of 'emask choose').",
)
@click.option(
    "--items",
    "items_file",
    default=None,
    metavar="FILE",
    help="A public item catalogue, one item label a line, fixed before the data are seen: every item of it is "
    "distorted, so the release's item list tells nothing about the data. Default: the input's own items, "
    "which the release publishes (they tell which items some basket holds).",
)
@click.option(
    "--epsilon-budget",
    type=Number(0, min_open=True),
    default=None,
    metavar="E",
    help="Most local-DP epsilon per item that all the releases of SRC in the ledger may add up to: a release "
    "beyond it is refused unless --allow-composition (recorded). Default: no epsilon budget; the "
    "composition is held to the privacy floor.",
)
@input_format
@release_output
@click.pass_obj
def emask_distort(
    obj: Context,
    src: str,
    dst: str,
    p: float,
    q: float,
    privacy_floor: float,
    items_file: str | None,
    epsilon_budget: float | None,
    fmt: str | None,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """Release a distorted copy of SRC at DST (rows in a keyed random order; p and q in the
    manifest, never the key nor the data's s0); refused below the basic-privacy floor unless
    --allow-weak, and, composed with the earlier releases of SRC in the ledger, below the floor
    or beyond --epsilon-budget unless --allow-composition."""
    from ..emask import Distorter

    est = Distorter(p, q, privacy_floor=privacy_floor, allow_weak=allow_weak, epsilon_budget=epsilon_budget)
    with job(obj, inputs=[src, items_file], outputs=[dst], overwrite=overwrite, estimators=[est]) as j:
        tx = obj.read_transactions(src, fmt)
        items = _catalogue(obj, items_file, tx) if items_file else None
        release = est.set_params(key=obj.key(), items=items).fit(tx, progress=obj.progress).release()
        manifest, rep = write_release(
            obj, release, dst, original=tx, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
    emit_release(obj, release, src=src, dst=dst, manifest=manifest, job=j, report=rep)


@emask.command("mine")
@click.argument("url")
@click.option("--p", "p", type=Number(0, 1), default=None, help="Distortion p (default: from the release).")
@click.option("--q", "q", type=Number(0, 1), default=None, help="Distortion q (default: from the release).")
@support_options()
@click.option("--max-length", type=click.IntRange(min=1), default=None, help="Longest itemsets to mine.")
@apriori_max_candidates
@click.option(
    "--prune-margin",
    type=Number(0, 1, max_open=True),
    default=0.0,
    show_default=True,
    help="Keep candidates down to (1 - margin) x threshold (fewer misses, more work).",
)
@input_format
@click.option(
    "--out",
    default=None,
    help="Write the itemsets with reconstructed supports to this file (.parquet, .csv or .txt; see --out-format).",
)
@out_format_option
@overwrite
@click.pass_obj
def emask_mine(
    obj: Context,
    url: str,
    p: float | None,
    q: float | None,
    min_support: str | None,
    min_count: int | None,
    max_length: int | None,
    max_candidates: int,
    prune_margin: float,
    fmt: str | None,
    out: str | None,
    out_format_name: str | None,
    overwrite: bool,
) -> None:
    """EMASK-Apriori: frequent itemsets of the original data from its distorted release.

    The support threshold is --min-support (a fraction of the transactions in (0, 1]) or
    --min-count (a number of transactions)."""
    from ..emask import mine

    ms = support_from(min_support, min_count)
    _check_pq(p, q)
    out_fmt = out_format(out, out_format_name, "--out")
    with job(obj, inputs=[url], outputs=[out], overwrite=overwrite) as j:
        d, input_plan = obj.transactions_for_passes(url, fmt)
        check_count(ms, d.n_transactions, url)
        p, q = _pq(obj, url, d, p, q)
        r = mine(
            d,
            p,
            q,
            ms,
            max_length=max_length,
            max_candidates=max_candidates,
            prune_margin=prune_margin,
            progress=obj.progress,
            on_level=level_line("emask") if obj.progress else None,
        )
    if out:
        from ..mining.export import write_itemsets

        # SPMF and Spark carry integer counts: the reconstructed estimates are rounded there
        write_itemsets(r, out, format=out_fmt, storage_options=obj.storage_options, overwrite=overwrite)
    summary = {
        "url": url,
        "p": p,
        "q": q,
        "itemsets": len(r),
        "levels": r.level_stats,
        "input_plan": input_plan,
        "seconds": j.seconds,
        "scheduler": j.where,
    }
    lines = [
        f"{url}: {len(r):,} itemsets with reconstructed support >= threshold (p={p}, q={q}) in {j.seconds:.2f} s",
        *levels_text(r.level_stats),
        f"  memory plan: {input_plan}",
    ]
    obj.emit(summary, "\n".join(lines))


@emask.command("audit")
@click.argument("original")
@click.argument("distorted")
@support_options(0.003, what="Mining support")
@click.option("--p", "p", type=Number(0, 1), default=None, help="Default: from the release.")
@click.option("--q", "q", type=Number(0, 1), default=None, help="Default: from the release.")
@as_baskets
@click.pass_obj
def emask_audit(
    obj: Context, original: str, distorted: str, min_support: str | None, min_count: int | None, p: float | None, q: float | None
) -> None:
    """Owner-side audit: BP, re-interrogated privacy RP (needs the release's --key-file to
    re-align its keyed row order), local-DP epsilon, accuracy (rho, sigma+/-), slowdown."""
    from ..emask import audit
    from ..emask.release import pq_from_manifest
    from ..verification import open_release

    ms = support_from(min_support, min_count, default=0.003)
    _check_pq(p, q)
    is_release = pq_from_manifest(distorted, storage_options=obj.storage_options) is not None
    if not is_release and (p is None or q is None):
        raise usage_error(f"{distorted} is not an EMASK release, so it records no distortion parameters", "give --p and --q")
    with job(obj, inputs=[original, distorted]) as j:
        t = obj.read_transactions(original).persist(progress=obj.progress)
        check_count(ms, t.n_transactions, original)
        d = open_release(distorted, storage_options=obj.storage_options) if is_release else obj.read_transactions(distorted)
        key = obj.key() if obj.key_file else None
        a = audit(t, d, ms, p=p, q=q, key=key, progress=obj.progress)
    rp, acc = a["reinterrogated_privacy"], a["accuracy"]
    lines = [
        f"audit of {distorted} (p={a['p']}, q={a['q']}) against {original} ({j.seconds:.1f} s)",
        f"  basic privacy        {a['basic_privacy']:6.2f} %   (s0 = {a['s0']:.4g})",
        f"  re-interrogated      {rp:6.2f} %"
        if rp is not None
        else "  re-interrogated      needs --key-file (the release's rows are in keyed order)",
        f"  local DP epsilon     {a['ldp_epsilon_per_item']:6.3f} per item",
        f"  slowdown             {a['slowdown']:.2f}  (EMASK-Apriori {a['seconds_emask']:.2f} s / Apriori {a['seconds_apriori']:.2f} s)",
        f"  support error rho    {acc['rho']:6.2f} %",
        f"  sigma+ / sigma-      {acc['sigma_plus']:6.2f} % / {acc['sigma_minus']:.2f} %",
    ]
    obj.emit({**a, "original": original, "release": distorted, "seconds": j.seconds}, "\n".join(lines))

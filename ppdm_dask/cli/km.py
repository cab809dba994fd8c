"""``ppdm km-anonymize``: k^m-anonymous releases of transactions (Terrovitis et al.)."""

from __future__ import annotations

import click

from ._core import Context, job, write_release
from ._errors import usage_error
from ._options import input_format, release_output
from ._summary import emit_release


@click.command("km-anonymize")
@click.argument("src")
@click.argument("dst")
@click.option(
    "--k",
    "k",
    type=click.IntRange(min=1),
    required=True,
    help="Every itemset of at most m items is supported 0 or >= k times (floor: 2).",
)
@click.option(
    "--m", "m", type=click.IntRange(min=1), default=2, show_default=True, help="Adversary knowledge: number of items known."
)
@click.option(
    "--hierarchy",
    "hierarchy_file",
    default=None,
    metavar="FILE",
    help="Item hierarchy: ARX CSV (';', one row per item label, a column per level).",
)
@click.option(
    "--fan-out",
    type=click.IntRange(min=2),
    default=None,
    help="Instead of --hierarchy: a balanced hierarchy over the sorted item labels.",
)
@click.option(
    "--method",
    type=click.Choice(["AA", "DA"]),
    default="AA",
    show_default=True,
    help="Apriori-based (AA) or direct (DA) anonymization.",
)
@input_format
@release_output
@click.pass_obj
def km_anonymize(
    obj: Context,
    src: str,
    dst: str,
    k: int,
    m: int,
    hierarchy_file: str | None,
    fan_out: int | None,
    method: str,
    fmt: str | None,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """k^m-anonymize the transactions SRC by global item generalisation and write the release to
    DST (a ppdm transaction folder, or DST.csv: one basket CSV file)."""
    from ..anonymity import Hierarchy, KmAnonymizer

    if (hierarchy_file is None) == (fan_out is None):
        raise usage_error("give exactly one of --hierarchy FILE and --fan-out F", "--hierarchy FILE or --fan-out F")
    hier = Hierarchy.from_csv(hierarchy_file, name="items", storage_options=obj.storage_options) if hierarchy_file else None
    est = KmAnonymizer(hier, k=k, m=m, method=method, fan_out=fan_out, allow_weak=allow_weak, key=obj.key())
    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite, estimators=[est]) as j:
        tx = obj.read_transactions(src, fmt)
        release = est.fit_release(tx, progress=obj.progress)
        manifest, rep = write_release(
            obj, release, dst, original=tx, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
    r = est.report_
    extra = [f"  {'cut':<12} {r['cut_size']:,} published nodes; {r['n_generalized_items']:,} items generalised"]
    emit_release(obj, release, src=src, dst=dst, manifest=manifest, job=j, extra_text=extra, extra_json={"report": r}, report=rep)

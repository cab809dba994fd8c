"""``ppdm condense``: condensation with per-record privacy levels (static or dynamic)."""

from __future__ import annotations

from typing import Any

import click

from ._core import Context, job, write_release
from ._errors import usage_error
from ._options import release_output, split_list, table_input
from ._summary import emit_release


def privacy_spec(column: str | None, span: str | None, level: int | None) -> Any:
    """The privacy levels of exactly one of --privacy-column, --privacy-range, --privacy-level:
    ``None`` (a column), ``(low, high)`` or an int."""
    if sum(o is not None for o in (column, span, level)) != 1:
        raise usage_error("give exactly one of --privacy-column, --privacy-range, --privacy-level")
    if span is None:
        return level
    try:
        low, high = (int(v) for v in span.split(":"))
    except ValueError:
        raise click.BadParameter(f"expected LOW:HIGH integers, got {span!r}", param_hint="--privacy-range") from None
    if low < 1 or high < low:
        raise click.BadParameter(f"need 1 <= LOW <= HIGH, got {span!r}", param_hint="--privacy-range")
    return low, high


@click.command()
@click.argument("src")
@click.argument("dst")
@click.option("--privacy-column", default=None, help="Column holding each record's privacy level (an integer >= 1).")
@click.option(
    "--privacy-range",
    default=None,
    metavar="LOW:HIGH",
    help="Draw levels uniformly from LOW..HIGH with the key (the paper's protocol).",
)
@click.option("--privacy-level", type=click.IntRange(min=1), default=None, help="One level for every record.")
@click.option(
    "--columns",
    default=None,
    help="Comma-separated attributes to condense, converted to numbers (default: every numeric column but the privacy column).",
)
@click.option(
    "--dynamic",
    is_flag=True,
    help="Dynamic (streaming) maintenance over the partitions in order, instead of the static algorithm.",
)
@click.option(
    "--rows-per-partition",
    type=click.IntRange(min=1),
    default=200_000,
    show_default=True,
    help="Rows per spatial cell of the static algorithm (groups never span cells; larger = closer to the single-machine result, slower).",
)
@click.option(
    "--standardize", is_flag=True, help="Z-score attributes for the grouping distances (output stays in the original units)."
)
@click.option(
    "--publish-statistics",
    is_flag=True,
    help="Also publish n, the sums and the sums of products of the groups of more than d + 1 records "
    "(_statistics.parquet; recorded in the manifest). Smaller groups' statistics give their members away "
    "and are never published.",
)
@table_input
@release_output
@click.pass_obj
def condense(
    obj: Context,
    src: str,
    dst: str,
    privacy_column: str | None,
    privacy_range: str | None,
    privacy_level: int | None,
    columns: str | None,
    dynamic: bool,
    rows_per_partition: int,
    standardize: bool,
    publish_statistics: bool,
    sep: str | None,
    dtype: tuple[str, ...],
    schema: str | None,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """Condense the numeric records of SRC into groups of at least each member's privacy level
    and release pseudo-data with the groups' sizes at DST (Aggarwal & Yu); no pseudo-record
    copies a unique record of SRC. The release is verified before it is committed (check it
    against SRC, copies included, with ppdm verify DST --original SRC)."""
    from ..condensation import Condenser, StreamingCondenser

    spec = privacy_spec(privacy_column, privacy_range, privacy_level)
    common = {
        "privacy_levels": spec,
        "privacy_column": privacy_column,
        "columns": split_list(columns) or None,
        "allow_weak": allow_weak,
        "publish_statistics": publish_statistics,
    }
    if dynamic:
        cond: Any = StreamingCondenser(**common)
    else:
        cond = Condenser(rows_per_partition=rows_per_partition, standardize=standardize, **common)
    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite, estimators=[cond]) as j:
        table = obj.read_table(src, sep=sep, dtype=dtype, schema=schema)
        release = cond.set_params(key=obj.key()).fit(table, progress=obj.progress).release(progress=obj.progress)
        manifest, rep = write_release(
            obj, release, dst, original=table, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
    memory = getattr(cond, "report_", {}).get("memory")
    extra = [f"  {'memory plan':<12} {memory}"] if memory else []
    emit_release(
        obj,
        release,
        src=src,
        dst=dst,
        manifest=manifest,
        job=j,
        extra_text=extra,
        extra_json={"memory_plan": memory} if memory else None,
        report=rep,
    )

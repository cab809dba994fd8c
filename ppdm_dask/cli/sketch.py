"""``ppdm sketch``: δ- and k-variance anonymous sketches (``anonymize``, the default) and the
paper's utility evaluation (``evaluate``)."""

from __future__ import annotations

from typing import Any

import click
import numpy as np

from ._core import Context, job, write_release
from ._errors import usage_error
from ._options import Number, input_format, release_output, split_list, stack
from ._summary import emit_release


class DefaultCommandGroup(click.Group):
    """A group whose first argument may be a sub-command or, otherwise, the default one's
    arguments: ``ppdm sketch IN OUT --delta D`` == ``ppdm sketch anonymize IN OUT --delta D``."""

    default_command = "anonymize"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


method_options = stack(
    click.option(
        "--delta",
        type=Number(min=0, min_open=True),
        default=None,
        help="δ-anonymity: minimum variance of any attribute reconstruction (units of x²).",
    ),
    click.option(
        "--k", "k", type=click.IntRange(min=1), default=None, help="k-variance anonymity: number of nearest neighbours."
    ),
    click.option(
        "--m-max", type=click.IntRange(min=1), default=256, show_default=True, help="Cap on sketch components per record."
    ),
    click.option(
        "--metric",
        type=click.Choice(["cosine", "euclidean"]),
        default="cosine",
        show_default=True,
        help="k-NN distance (k-variance).",
    ),
    click.option(
        "--knn-scope",
        type=click.Choice(["global", "partition"]),
        default="global",
        show_default=True,
        help="Neighbours from the whole data (exact) or within partitions (paper's linear-time variant).",
    ),
    click.option("--approximate", is_flag=True, help="Approximate k-NN for very large data (k-variance)."),
)


def anonymizer(
    delta: float | None, k: int | None, m_max: int, metric: str, knn_scope: str, approximate: bool, **kwargs: Any
) -> Any:
    """The anonymizer of the method options (exactly one of ``delta`` and ``k``)."""
    from ..sketch import DeltaAnonymizer, KVarianceAnonymizer

    if (delta is None) == (k is None):
        raise usage_error("give exactly one of --delta (δ-anonymity) and --k (k-variance anonymity)")
    if delta is not None:
        return DeltaAnonymizer(delta, m_max=m_max, **kwargs)
    assert k is not None  # exactly one of delta and k (checked above)
    return KVarianceAnonymizer(k, m_max=m_max, metric=metric, knn_scope=knn_scope, approximate=approximate, **kwargs)


@click.group(cls=DefaultCommandGroup)
def sketch() -> None:
    """Sketch-based anonymization of sparse records (Aggarwal & Yu).

    \b
    ppdm sketch IN OUT --delta 0.2     δ-anonymous sketches (per record, collection time)
    ppdm sketch IN OUT --k 5           k-variance anonymous sketches (k nearest neighbours)
    ppdm sketch evaluate IN --k 5      utility vs the original data (the paper's protocol)
    ppdm sketch evaluate IN --sweep delta=0.1,0.2,0.5,1,2 --plot frontier.svg
                                       the privacy-utility frontier
    """


@sketch.command("anonymize")
@click.argument("src")
@click.argument("dst")
@method_options
@input_format
@click.option("--keep-suppressed", is_flag=True, help="Write suppressed records as empty rows (default: left out).")
@release_output
@click.pass_obj
def sketch_anonymize(
    obj: Context,
    src: str,
    dst: str,
    delta: float | None,
    k: int | None,
    m_max: int,
    metric: str,
    knn_scope: str,
    approximate: bool,
    fmt: str | None,
    keep_suppressed: bool,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """Publish SRC as anonymized sketches at DST (a Parquet release: rows in a keyed order, the
    public generator seed in the manifest, verified before it is committed)."""
    an = anonymizer(delta, k, m_max, metric, knn_scope, approximate, keep_suppressed=keep_suppressed, allow_weak=allow_weak)
    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite, estimators=[an]) as j:
        tx = obj.read_transactions(src, fmt)
        release = an.set_params(key=obj.key()).fit_release(tx, progress=obj.progress)
        manifest, rep = write_release(
            obj, release, dst, original=tx, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
    extra, extra_json = [], None
    if k is not None:
        r = an.report_
        extra.append(f"  {'sweeps':<12} {r['n_iter']} (converged: {r['converged']}); k-NN in {r['knn_seconds']:.1f} s")
        if r.get("knn_plan"):
            extra.append(f"  {'memory plan':<12} {r['knn_plan']}")
            extra_json = {"memory_plan": r["knn_plan"]}
    emit_release(obj, release, src=src, dst=dst, manifest=manifest, job=j, extra_text=extra, extra_json=extra_json, report=rep)


def sweep_levels(text: str | None) -> tuple[str, list[float]] | None:
    """``"delta=0.1,0.2,0.5"`` -> ``("delta", [0.1, 0.2, 0.5])``; ``"k=2,5"`` -> ``("k", [2, 5])``."""
    if text is None:
        return None
    name, sep, values = text.partition("=")
    name = name.strip().lower().replace("δ", "delta")
    if not sep or name not in ("delta", "k"):
        raise click.BadParameter(f"expected delta=V1,V2,... or k=V1,V2,..., got {text!r}", param_hint="--sweep")
    try:
        levels = [int(v) if name == "k" else float(v) for v in split_list(values)]
    except ValueError:
        raise click.BadParameter(
            f"{name} levels must be {'integers' if name == 'k' else 'numbers'}: {values!r}", param_hint="--sweep"
        ) from None
    if not levels:
        raise click.BadParameter("no levels given", param_hint="--sweep")
    if any(v <= 0 for v in levels):
        raise click.BadParameter(f"{name} levels must be positive: {values!r}", param_hint="--sweep")
    return name, levels


@sketch.command("evaluate")
@click.argument("src")
@method_options
@input_format
@click.option(
    "--sweep",
    default=None,
    metavar="delta=V,V,...|k=V,V,...",
    help="The privacy-utility frontier: evaluate at every level (e.g. delta=0.1,0.2,0.5,1,2 or k=2,5,10,20) "
    "instead of one --delta / --k.",
)
@click.option("--plot", "plot_path", default=None, metavar="FILE", help="With --sweep: draw the frontier to FILE (.svg or .png).")
@click.option(
    "--similarity",
    type=click.Choice(["shrunk", "cosine", "euclidean"]),
    default="shrunk",
    show_default=True,
    help="Similarity of the miners on sketches (shrunk: the estimated cosine shrunk by its variance).",
)
@click.option("--label-column", default="label", show_default=True, help="Class labels for the classification task.")
@click.option("--neighbors", type=click.IntRange(min=1), default=1, show_default=True, help="k of the k-NN classifier.")
@click.option("--clusters", type=click.IntRange(min=2), default=10, show_default=True, help="K of k-means.")
@click.option("--task", type=click.Choice(["both", "classify", "cluster"]), default="both", show_default=True)
@click.option("--overwrite", is_flag=True, help="Replace an existing --plot file.")
@click.pass_obj
def sketch_evaluate(
    obj: Context,
    src: str,
    delta: float | None,
    k: int | None,
    m_max: int,
    metric: str,
    knn_scope: str,
    approximate: bool,
    fmt: str | None,
    sweep: str | None,
    plot_path: str | None,
    similarity: str,
    label_column: str,
    neighbors: int,
    clusters: int,
    task: str,
    overwrite: bool,
) -> None:
    """Utility of anonymized sketches of SRC against the original (classification accuracy and
    clustering similarity, the paper's protocol) at one level, or with --sweep at several
    (the privacy-utility frontier); nothing is published."""
    from ..progress import compute
    from ..sketch.evaluation import draw_frontier, evaluate, frontier

    levels = sweep_levels(sweep)
    if levels is not None and (delta is not None or k is not None):
        raise usage_error("--sweep sets the levels itself: leave out --delta and --k")
    if plot_path is not None and levels is None:
        raise usage_error("--plot draws the frontier of a sweep", "--sweep delta=0.1,0.2,0.5,1,2")
    if plot_path is not None and not plot_path.lower().endswith((".svg", ".png")):
        raise click.BadParameter(f"{plot_path}: the plot is written as .svg or .png", param_hint="--plot")
    if levels is None:
        anonymizer(delta, k, m_max, metric, knn_scope, approximate)  # the method options are checked before any work
    tasks = ("classify", "cluster") if task == "both" else (task,)
    with job(obj, inputs=[src], outputs=[plot_path], overwrite=overwrite) as j:
        key = obj.key()
        tx = obj.read_transactions(src, fmt)
        if "classify" in tasks and label_column not in tx.columns:
            raise usage_error(f"{src} has no column {label_column!r} (needed for classification)", "--task cluster")
        (X,) = compute(tx.weights if tx.weights is not None else tx.blocks, progress=obj.progress)
        labels = tx.columns[label_column].compute() if label_column in tx.columns else np.zeros(X.shape[0], np.int64)

        def make(level_delta: float | None, level_k: int | None, generator: Any) -> Any:
            return anonymizer(
                level_delta,
                level_k,
                m_max,
                metric,
                knn_scope,
                approximate,
                generator=generator,
                allow_weak=True,
                key=key if approximate else None,
            )

        common: dict[str, Any] = {
            "key": key,
            "n_neighbors": neighbors,
            "n_clusters": clusters,
            "tasks": tasks,
            "similarity": similarity,
        }
        if levels is not None:
            name, values = levels

            def said(row: dict[str, Any]) -> None:
                if obj.progress and not obj.as_json:
                    click.echo(f"  {name} = {row['level']}: done ({row['seconds']:.1f} s)", err=True)

            rows = frontier(
                X,
                labels,
                name,
                values,
                on_level=said,
                make=lambda v, g: make(v if name == "delta" else None, int(v) if name == "k" else None, g),
                **common,
            )
            if plot_path is not None:
                draw_frontier(rows, plot_path, overwrite=overwrite, storage_options=obj.storage_options)
        else:
            r = evaluate(X, labels, lambda part, g: make(delta, k, g).fit_release(part), **common)
    if levels is not None:
        emit_frontier(
            obj,
            src,
            rows,
            m_max=m_max,
            similarity=similarity,
            neighbors=neighbors,
            plot_path=plot_path,
            where=j.where,
            seconds=j.seconds,
        )
        return
    r.pop("baseline", None)
    lines = [
        f"{src}: "
        + (f"δ = {delta}" if delta is not None else f"k = {k}")
        + f" (m_max {m_max}, similarity {similarity}), {j.seconds:.1f} s"
    ]
    if "accuracy" in r:
        lines.append(
            f"  {neighbors}-NN accuracy     {r['accuracy']:.4f}  original {r['baseline_accuracy']:.4f}  ratio "
            f"{r['accuracy_ratio']:.3f}  chance {r['chance_accuracy']:.4f}  (suppressed test records {100 * r['suppressed_test']:.1f} %)"
        )
    if "similarity" in r:
        lines.append(
            f"  k-means similarity  {r['similarity']:.4f}  original {r['baseline_similarity']:.4f}  ratio "
            f"{r['similarity_ratio']:.3f}  (suppressed {100 * r['suppressed']:.1f} %, mean components {r['mean_components']:.1f})"
        )
    obj.emit({**r, "src": src, "similarity_measure": similarity, "scheduler": j.where}, "\n".join(lines))


def emit_frontier(
    obj: Context,
    src: str,
    rows: list[dict[str, Any]],
    *,
    m_max: int,
    similarity: str,
    neighbors: int,
    plot_path: str | None,
    where: str,
    seconds: float,
) -> None:
    """The frontier as a table (text) or JSON (--json)."""
    from ..sketch.evaluation import frontier_figures

    _, table = frontier_figures(rows)
    name = table.columns[0]
    lines = [
        f"{src}: privacy-utility frontier ({len(rows)} levels of {name}, m_max {m_max}, {neighbors}-NN and k-means "
        f"on {similarity} similarity), {seconds:.1f} s"
    ]
    header = ["level", "accuracy", "acc. ratio", "chance", "similarity", "sim. ratio", "mean m", "suppressed"]
    lines.append("  " + "  ".join(f"{h:>10}" for h in header))

    def cell(v: Any, fmt: str) -> str:
        return f"{'-':>10}" if v is None else f"{v:>10{fmt}}"

    for r in table.rows:
        lines.append(
            "  "
            + "  ".join(
                [
                    f"{r[0]:>10g}",
                    cell(r[1], ".4f"),
                    cell(r[2], ".3f"),
                    cell(r[3], ".4f"),
                    cell(r[4], ".4f"),
                    cell(r[5], ".3f"),
                    cell(r[6], ".1f"),
                    cell(r[7], ".1f") + ("" if r[7] is None else "%"),
                ]
            )
        )
    if plot_path is not None:
        lines.append(f"  plot: {plot_path}")
    for r in rows:
        r.pop("baseline", None)
    obj.emit(
        {
            "src": src,
            "method": rows[0]["method"],
            "similarity_measure": similarity,
            "levels": rows,
            "plot": plot_path,
            "scheduler": where,
        },
        "\n".join(lines),
    )

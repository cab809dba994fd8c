"""``ppdm sketch``: δ- and k-variance anonymous sketches (``anonymize``, the default) and the
paper's utility evaluation (``evaluate``)."""

from __future__ import annotations

from typing import Any

import click
import numpy as np

from . import cli
from ._core import Context, emit_release, job, usage_error, write_release
from ._options import input_format, release_output, stack


class DefaultCommandGroup(click.Group):
    """A group whose first argument may be a sub-command or, otherwise, the default one's
    arguments: ``ppdm sketch IN OUT --delta D`` == ``ppdm sketch anonymize IN OUT --delta D``."""

    default_command = "anonymize"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


method_options = stack(
    click.option("--delta", type=float, default=None, help="δ-anonymity: minimum variance of any attribute reconstruction (units of x²)."),
    click.option("--k", "k", type=click.IntRange(min=1), default=None, help="k-variance anonymity: number of nearest neighbours."),
    click.option("--m-max", type=click.IntRange(min=1), default=256, show_default=True, help="Cap on sketch components per record."),
    click.option("--metric", type=click.Choice(["cosine", "euclidean"]), default="cosine", show_default=True, help="k-NN distance (k-variance)."),
    click.option("--knn-scope", type=click.Choice(["global", "partition"]), default="global", show_default=True,
                 help="Neighbours from the whole data (exact) or within partitions (paper's linear-time variant)."),
    click.option("--approximate", is_flag=True, help="Approximate k-NN for very large data (k-variance)."),
)


def anonymizer(delta: float | None, k: int | None, m_max: int, metric: str, knn_scope: str, approximate: bool,
               **kwargs: Any) -> Any:
    """The anonymizer of the method options (exactly one of ``delta`` and ``k``)."""
    from ..sketch import DeltaAnonymizer, KVarianceAnonymizer

    if (delta is None) == (k is None):
        raise usage_error("give exactly one of --delta (δ-anonymity) and --k (k-variance anonymity)")
    if delta is not None:
        return DeltaAnonymizer(delta, m_max=m_max, **kwargs)
    return KVarianceAnonymizer(k, m_max=m_max, metric=metric, knn_scope=knn_scope, approximate=approximate, **kwargs)


@cli.group(cls=DefaultCommandGroup)
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
@method_options
@input_format
@click.option("--keep-suppressed", is_flag=True, help="Write suppressed records as empty rows (default: left out).")
@release_output
@click.pass_obj
def sketch_anonymize(obj: Context, src, dst, delta, k, m_max, metric, knn_scope, approximate, fmt, keep_suppressed,
                     overwrite, rows_per_file, allow_weak, check, report) -> None:
    """Publish SRC as anonymized sketches at DST (a Parquet release: rows in a keyed order, the
    public generator seed in the manifest, verified before it is committed)."""
    an = anonymizer(delta, k, m_max, metric, knn_scope, approximate, keep_suppressed=keep_suppressed, allow_weak=allow_weak)
    with job(obj, outputs=[dst], overwrite=overwrite) as j:
        tx = obj.read_transactions(src, fmt)
        release = an.set_params(key=obj.key()).fit_transform(tx, progress=obj.progress)
        manifest, rep = write_release(obj, release, dst, original=tx, overwrite=overwrite,
                                       rows_per_file=rows_per_file, check=check, report=report)
    extra = []
    if k is not None:
        r = an.report_
        extra.append(f"  {'sweeps':<12} {r['n_iter']} (converged: {r['converged']}); k-NN in {r['knn_seconds']:.1f} s")
    emit_release(obj, release, src=src, dst=dst, manifest=manifest, job=j, extra_text=extra, report=rep)


@sketch.command("evaluate")
@click.argument("src")
@method_options
@input_format
@click.option("--label-column", default="label", show_default=True, help="Class labels for the classification task.")
@click.option("--neighbors", type=click.IntRange(min=1), default=1, show_default=True, help="k of the k-NN classifier.")
@click.option("--clusters", type=click.IntRange(min=2), default=10, show_default=True, help="K of k-means.")
@click.option("--task", type=click.Choice(["both", "classify", "cluster"]), default="both", show_default=True)
@click.pass_obj
def sketch_evaluate(obj: Context, src, delta, k, m_max, metric, knn_scope, approximate, fmt, label_column, neighbors,
                    clusters, task) -> None:
    """Utility of anonymized sketches of SRC against the original (classification accuracy and
    clustering similarity, the paper's protocol); nothing is written."""
    from ..progress import compute
    from ..sketch.evaluation import evaluate

    anonymizer(delta, k, m_max, metric, knn_scope, approximate)  # the method options are checked before any work
    tasks = ("classify", "cluster") if task == "both" else (task,)
    with job(obj) as j:
        key = obj.key()
        tx = obj.read_transactions(src, fmt)
        if "classify" in tasks and label_column not in tx.columns:
            raise usage_error(f"{src} has no column {label_column!r} (needed for classification)", "--task cluster")
        (X,) = compute(tx.weights if tx.weights is not None else tx.blocks, progress=obj.progress)
        labels = tx.columns[label_column].compute() if label_column in tx.columns else np.zeros(X.shape[0], np.int64)

        def anonymize(part: Any, generator: Any) -> Any:
            an = anonymizer(delta, k, m_max, metric, knn_scope, approximate, generator=generator, allow_weak=True,
                            key=key if approximate else None)
            return an.fit_transform(part)

        r = evaluate(X, labels, anonymize, key=key, n_neighbors=neighbors, n_clusters=clusters, tasks=tasks)
    r.pop("baseline", None)
    lines = [f"{src}: " + (f"δ = {delta}" if delta is not None else f"k = {k}") + f" (m_max {m_max}), {j.seconds:.1f} s"]
    if "accuracy" in r:
        lines.append(f"  {neighbors}-NN accuracy     {r['accuracy']:.4f}  original {r['baseline_accuracy']:.4f}  ratio "
                     f"{r['accuracy_ratio']:.3f}  (suppressed test records {100 * r['suppressed_test']:.1f} %)")
    if "similarity" in r:
        lines.append(f"  k-means similarity  {r['similarity']:.4f}  original {r['baseline_similarity']:.4f}  ratio "
                     f"{r['similarity_ratio']:.3f}  (suppressed {100 * r['suppressed']:.1f} %, mean components {r['mean_components']:.1f})")
    obj.emit({**r, "src": src, "scheduler": j.where}, "\n".join(lines))

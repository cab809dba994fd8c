"""Risk and utility figures of condensed releases for the privacy report
(docs/condensation.md#report-figures).

Risk, from the published group statistics (``about="release"``):

``group_size_vs_level``
    Scatter of every group's size against the largest privacy level of its members (distinct
    pairs), with the line size = level: every point must lie on or above it.
``groups_by_level``
    Per largest privacy level: groups, records, smallest and mean group size.
``groups_below_level``, ``min_size_margin``, ``groups``, ``smallest_group``
    Groups smaller than their largest level (must be 0), the smallest ``n - p_max``, the
    number of groups and the smallest group.
``group_size_hist``
    Histogram of the group sizes.

Utility, with the original (``about="comparison"``):

``covariance_compatibility``
    μ: Pearson correlation of the covariance entries (upper triangle) of the original and of the
    pseudo-data.
``covariance_scatter``
    The covariance entries of the pseudo-data against the original's.
``nn_accuracy_pseudo``, ``nn_accuracy_original``, ``nn_accuracy_ratio``
    When a class column was condensed with the attributes (``label``, ``class``, ``target`` or
    ``y``): 1-NN accuracy (Euclidean on the other attributes) on a fixed sample of original test
    records, trained on the pseudo-data (their class value rounded to the nearest class) and on
    the other original records.

The moments and the nearest neighbours are computed per partition (one task each) and added
up or merged on the client; the test sample is drawn from a fixed public seed by global row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dask
import numpy as np

from ..release.figures import Figures, Plot, Series, Table, Value, histogram
from . import _figure_kernels as FK

if TYPE_CHECKING:
    from .release import CondensedRelease

__all__ = ["condensed_report_figures", "LABEL_NAMES", "TEST_SAMPLE"]

#: names of a condensed attribute taken as the class (case-insensitive)
LABEL_NAMES = ("label", "class", "target", "y")
#: original records tested by the 1-NN figures
TEST_SAMPLE = 1000
_TEST_SEED = 0x5EED_0003


# ---------------------------------------------------------------------- risk
def group_figures(pub: dict[str, np.ndarray]) -> list[Any]:
    """The risk figures of the published group statistics (``n``, ``p_max``)."""
    n, p_max = np.asarray(pub["n"], np.int64), np.asarray(pub["p_max"], np.int64)
    x, y, reduced = FK.size_level_points(n, p_max)
    levels = np.unique(p_max)
    below = int(np.count_nonzero(n < p_max))
    edges, counts = histogram(n, integer=True)
    note = "one point per distinct (level, size) pair" + ("; only each level's smallest and largest group" if reduced else "")
    return [
        Plot("group_size_vs_level", "Group size against the largest privacy level of its members", "scatter",
             [Series("groups", x.tolist(), y.tolist()), Series("size = level", levels.tolist(), levels.tolist())],
             x_label="largest privacy level in the group", y_label="group size (records)", note=note),
        Table("groups_by_level", "Groups by their largest privacy level",
              ["largest level", "groups", "records", "smallest group", "mean group size"], FK.level_table(n, p_max)),
        Value("groups_below_level", "Groups smaller than their largest privacy level", below, unit="groups",
              note="must be 0"),
        Value("min_size_margin", "Smallest group size minus its largest privacy level",
              int((n - p_max).min()) if n.size else None, unit="records"),
        Value("groups", "Groups", int(n.size), unit="groups"),
        Value("smallest_group", "Smallest group", int(n.min()) if n.size else None, unit="records"),
        Plot("group_size_hist", "Group sizes", "histogram", [Series("groups", edges, counts)],
             x_label="group size (records)", y_label="groups"),
    ]


# ---------------------------------------------------------------------- utility
def _moments(parts: list[Any], **ckw: Any) -> list[tuple[int, np.ndarray, np.ndarray]]:
    from ..progress import compute

    (out,) = compute([dask.delayed(FK.moments, pure=True)(p) for p in parts], **ckw)
    return list(out)


def _total(ms: list[tuple[int, np.ndarray, np.ndarray]], d: int) -> tuple[int, np.ndarray, np.ndarray]:
    return (sum(m[0] for m in ms), sum((m[1] for m in ms), np.zeros(d)), sum((m[2] for m in ms), np.zeros((d, d))))


def _covariance_figures(pseudo_parts: list[Any], orig_parts: list[Any], d: int, **ckw: Any) -> tuple[list[Any], list[int]]:
    """μ and the covariance scatter; returns the pseudo-data partition sizes too."""
    mp, mo = _moments(pseudo_parts, **ckw), _moments(orig_parts, **ckw)
    cov_p, cov_o = FK.covariance(*_total(mp, d)), FK.covariance(*_total(mo, d))
    iu = np.triu_indices(d)
    mu = FK.compatibility(cov_o, cov_p)
    items = [
        Value("covariance_compatibility", "Covariance compatibility μ", mu, about="comparison",
              note="Pearson correlation of the covariance entries (i <= j) of the original and the pseudo-data; 1 = same pattern"),
        Plot("covariance_scatter", "Covariance entries: pseudo-data against original", "scatter",
             [Series("entries i <= j", cov_o[iu].tolist(), cov_p[iu].tolist())],
             x_label="original covariance", y_label="pseudo-data covariance", about="comparison"),
    ]
    return items, [m[0] for m in mp]


def _label_index(columns: list[str]) -> int | None:
    for i, c in enumerate(columns):
        if str(c).lower() in LABEL_NAMES:
            return i
    return None


def _nearest_labels(parts: list[Any], offsets: np.ndarray, features: list[int], label: int, test: np.ndarray,
                    exclude: np.ndarray | None, **ckw: Any) -> np.ndarray:
    from ..progress import compute

    tasks = [dask.delayed(FK.nearest, pure=True)(p, features, label, int(offsets[i]), test, exclude)
             for i, p in enumerate(parts)]
    (res,) = compute(tasks, **ckw)
    return FK.merge_nearest(list(res))


def _accuracy_figures(rel: "CondensedRelease", X: Any, pseudo_parts: list[Any], pseudo_rows: list[int],
                      **ckw: Any) -> tuple[list[Any], list[str]]:
    from ..progress import compute

    import dask.array as da

    label = _label_index(rel.columns)
    if label is None:
        return [], [f"1-NN accuracy: no condensed class column (one of {list(LABEL_NAMES)})"]
    N, d = int(X.shape[0]), int(X.shape[1])
    features = [j for j in range(d) if j != label]
    if not features or N < 3:
        return [], ["1-NN accuracy: too few attributes or records"]
    rng = np.random.default_rng(_TEST_SEED)
    test_rows = np.sort(rng.permutation(N)[: min(TEST_SAMPLE, N // 3)])
    test, classes = compute(X[test_rows], da.unique(X[:, label]), **ckw)
    test, classes = np.asarray(test), np.asarray(classes)
    y_test = test[:, label]
    q = test[:, features]
    orig_off = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    base_pred = _nearest_labels(list(X.to_delayed().ravel()), orig_off, features, label, q, test_rows, **ckw)
    pseudo_off = np.concatenate([[0], np.cumsum(pseudo_rows)]).astype(np.int64)
    pred = FK.nearest_class(_nearest_labels(pseudo_parts, pseudo_off, features, label, q, None, **ckw), classes)
    acc, base = float(np.mean(pred == y_test)), float(np.mean(base_pred == y_test))
    note = (f"{test_rows.size} original test records; class column {rel.columns[label]!r}; the pseudo-data were "
            "condensed from all records, the test records included")
    return [
        Value("nn_accuracy_pseudo", "1-NN accuracy, trained on the pseudo-data", acc, about="comparison", note=note),
        Value("nn_accuracy_original", "1-NN accuracy, trained on the other original records", base, about="comparison",
              note=note),
        Value("nn_accuracy_ratio", "1-NN accuracy, pseudo-data / original", acc / base if base > 0 else float("nan"),
              about="comparison"),
    ], []


def condensed_report_figures(rel: "CondensedRelease", original: Any = None, **ckw: Any) -> Figures:
    """The risk and utility figures of a condensed release (see the module docstring).

    Parameters
    ----------
    rel : CondensedRelease
    original : optional
        The condenser's input (a table, an array, or ``(X, levels)``): the utility figures.
    **ckw
        ``client=``, ``progress=`` for the distributed passes.
    """
    ckw.setdefault("progress", False)
    fig = Figures(risk=group_figures(rel.published))
    if original is None:
        fig.notes.append("the utility figures need the original data")
        return fig
    X, _ = rel._original_arrays(original)
    d = len(rel.columns) or int(X.shape[1])
    if int(X.shape[1]) != d:
        fig.notes.append(f"utility figures: the original has {int(X.shape[1])} attributes, the release {d}")
        return fig
    X = X.rechunk({1: -1})
    pseudo_parts = list(rel.data.to_delayed())
    items, pseudo_rows = _covariance_figures(pseudo_parts, list(X.to_delayed().ravel()), d, **ckw)
    fig.utility += items
    items, notes = _accuracy_figures(rel, X, pseudo_parts, pseudo_rows, **ckw)
    fig.utility += items
    fig.notes += notes
    return fig

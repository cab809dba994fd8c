"""Risk and utility figures of condensed releases for the privacy report
(docs/condensation.md#report-figures).

Risk, from the published group sizes (``about="release"``):

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
``statistics_published``, ``statistics_withheld``
    With ``publish_statistics``: the groups whose statistics are published and those left out
    (at most d + 1 records: their statistics would give their members away).

Risk against the original (``about="comparison"``; docs/condensation.md#distance-to-closest-record):

``pseudo_copies``
    Pseudo-records equal to an original record that no other original shares (exactly, every
    row; or within float tolerance, the rows measured): must be 0.
``pseudo_records_redrawn``
    Pseudo-records the condenser drew again because they copied a unique original (the
    release in memory that was written knows it).
``dcr_closer_than_neighbour``
    Share of the measured pseudo-records closer to their closest original than that original's
    own nearest other original.
``dcr_p5``, ``original_nn_p5``, ``dcr_ratio_p5``
    5th percentile of the distance to the closest original, of the originals' own
    nearest-neighbour distances, and their ratio (below 1: pseudo-records come closer to the
    originals than the originals come to each other).
``dcr_histogram``
    Both distributions on common bins.
``membership_advantage``
    The membership-inference experiment of :func:`.attacks.membership_advantage` on a sample of
    up to :data:`MIA_SAMPLE` original records with the release's method and parameters: half
    condensed, half held out; the DCR attacker's best TPR − FPR.

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
    the other original records; ``nn_majority_rate`` the share of the most frequent class among
    the test records (the accuracy of always guessing it).
``utility_quality_score``, ``utility_column_shapes``, ``utility_pair_trends``
    The quality score of the pseudo-data as SDMetrics defines it (:mod:`ppdm_dask.metrics.quality`):
    1 − KS per attribute, 1 − |Δ Pearson r| / 2 per pair, the mean of the two means.

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

__all__ = ["condensed_report_figures", "closeness_figures", "membership_figures", "LABEL_NAMES", "TEST_SAMPLE", "MIA_SAMPLE"]

#: original records of the membership-inference experiment at most (half condensed, half held out)
MIA_SAMPLE = 20_000
#: public seed of that experiment (its key and sample): owner-side, only for reproducibility
_MIA_SEED = 0x5EED_0036
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
        Plot(
            "group_size_vs_level",
            "Group size against the largest privacy level of its members",
            "scatter",
            [Series("groups", x.tolist(), y.tolist()), Series("size = level", levels.tolist(), levels.tolist())],
            x_label="largest privacy level in the group",
            y_label="group size (records)",
            note=note,
        ),
        Table(
            "groups_by_level",
            "Groups by their largest privacy level",
            ["largest level", "groups", "records", "smallest group", "mean group size"],
            FK.level_table(n, p_max),
        ),
        Value("groups_below_level", "Groups smaller than their largest privacy level", below, unit="groups", note="must be 0"),
        Value(
            "min_size_margin",
            "Smallest group size minus its largest privacy level",
            int((n - p_max).min()) if n.size else None,
            unit="records",
        ),
        Value("groups", "Groups", int(n.size), unit="groups"),
        Value("smallest_group", "Smallest group", int(n.min()) if n.size else None, unit="records"),
        Plot(
            "group_size_hist",
            "Group sizes",
            "histogram",
            [Series("groups", edges, counts)],
            x_label="group size (records)",
            y_label="groups",
        ),
    ]


def statistics_figures(rel: CondensedRelease) -> list[Any]:
    """Counts of the published and the withheld group statistics (with ``publish_statistics``)."""
    if rel.statistics is None:
        return []
    from .release import statistics_min_size

    rows = int(len(rel.statistics["n"]))
    d = rel.d or int(np.asarray(rel.statistics["Fs"]).shape[-1])
    return [
        Value(
            "statistics_published",
            "Groups whose statistics (n, Fs, Sc) are published",
            rows,
            unit="groups",
            note=f"groups of at least {statistics_min_size(d)} records (more than d + 1)",
        ),
        Value(
            "statistics_withheld",
            "Groups whose statistics are withheld",
            int(len(rel.published["n"])) - rows,
            unit="groups",
            note="at most d + 1 records: their statistics would give their members away",
        ),
    ]


# ---------------------------------------------------------------------- risk against the original
def closeness_figures(rel: CondensedRelease, X: Any, **ckw: Any) -> list[Any]:
    """Copies of unique originals and the distance-to-closest-record figures (see the module
    docstring), from one exact join and one :func:`.closest.closeness`."""
    from .closest import COPY_RTOL, closeness
    from .copies import exact_copies

    parts = list(rel.data.to_delayed())
    released = int(np.asarray(rel.published["n"]).sum())
    exact = exact_copies(parts, list(X.to_delayed().ravel()), **ckw)
    near = closeness(parts, released, X, **ckw)
    close_only = int(np.count_nonzero(near.unique_copies & (near.dcr > 0)))
    sampled = "" if near.measured >= released else f" (a public-seeded sample of {near.measured:,} of {released:,})"
    items: list[Any] = [
        Value(
            "pseudo_copies",
            "Pseudo-records copying a unique original record",
            exact.n_unique + close_only,
            about="comparison",
            unit="records",
            note=f"{exact.n_unique} equal exactly (every row), {close_only} more within a relative "
            f"{COPY_RTOL:g} (rows measured{sampled}); must be 0",
        )
    ]
    redrawn = (rel.figures.get("privacy") or {}).get("pseudo_records_redrawn")
    if redrawn is not None:
        items.append(
            Value(
                "pseudo_records_redrawn",
                "Pseudo-records drawn again (they copied a unique original)",
                int(redrawn),
                about="comparison",
                unit="records",
                note=f"{int((rel.figures.get('privacy') or {}).get('unique_copies_left', 0))} left (groups of one "
                "record, whose pseudo-record is the record)",
            )
        )
    if not near.measured:
        return items
    dcr5, nn5, ratio = near.percentile(5)
    hi = (
        float(np.percentile(np.concatenate([near.dcr, near.original_nn]), 99)) if near.original_nn.size else float(near.dcr.max())
    )
    edges = np.linspace(0.0, hi if hi > 0 else 1.0, 41)
    dcr_counts = np.histogram(np.minimum(near.dcr, edges[-1]), bins=edges)[0]
    nn_counts = np.histogram(np.minimum(near.original_nn, edges[-1]), bins=edges)[0]
    note = f"{near.measured:,} pseudo-records measured{sampled}; distances Euclidean in the attributes' units"
    items += [
        Value(
            "dcr_closer_than_neighbour",
            "Pseudo-records closer to an original than that original's nearest other original",
            100.0 * near.share_closer,
            about="comparison",
            unit="%",
            note=note,
        ),
        Value("dcr_p5", "Distance to the closest original, 5th percentile", dcr5, about="comparison", note=note),
        Value(
            "original_nn_p5",
            "Originals' nearest-neighbour distance, 5th percentile",
            nn5,
            about="comparison",
            note=f"{near.original_nn.size:,} original records measured",
        ),
        Value(
            "dcr_ratio_p5",
            "5th percentiles: distance to closest original / originals' nearest-neighbour distance",
            ratio,
            about="comparison",
            note="below 1: the pseudo-data come closer to the originals than the originals come to each other",
        ),
        # fresh records of the population fall below the originals' own 5th percentile about 5 % of the time
        Value(
            "dcr_below_original_p5",
            "Pseudo-records closer to an original than the originals' 5th-percentile nearest-neighbour distance",
            100.0 * float(np.mean(near.dcr < nn5)),
            about="comparison",
            unit="%",
            note=note + "; fresh records of the same population: about 5 %",
        ),
        Plot(
            "dcr_histogram",
            "Distance to the closest original against the originals' nearest-neighbour distances",
            "histogram",
            [
                Series("pseudo-record to closest original", edges.tolist(), dcr_counts.tolist()),
                Series("original to nearest other original", edges.tolist(), nn_counts.tolist()),
            ],
            x_label="distance (last bin: everything beyond the 99th percentile)",
            y_label="records",
            about="comparison",
        ),
    ]
    return items


def _mia_levels(rel: CondensedRelease, X: Any, levels: Any, rows: np.ndarray, **ckw: Any) -> tuple[Any, str | None]:
    """The levels of the sampled records for the experiment: the original's (a column, a
    constant, ``(X, levels)``), or the release's range (drawn by the condenser)."""
    from ..progress import compute

    params = rel.parameters
    if "privacy_range" in params:
        return tuple(params["privacy_range"]), None
    if levels is None:
        return None, "membership inference: the levels were given per record; give the original as (X, levels)"
    (p,) = compute(levels[rows] if hasattr(levels, "dask") else np.asarray(levels)[rows], **ckw)
    return np.asarray(p, np.int64), None


def membership_figures(rel: CondensedRelease, X: Any, levels: Any, **ckw: Any) -> tuple[list[Any], list[str]]:
    """The membership-inference advantage (see the module docstring) on a public-seeded sample
    of up to :data:`MIA_SAMPLE` records condensed with the release's method and parameters."""
    from ..progress import compute
    from ..random import Key
    from .attacks import membership_advantage

    N = int(X.shape[0])
    if N < 8:
        return [], ["membership inference: too few records"]
    rng = np.random.default_rng(_MIA_SEED)
    rows = np.sort(rng.permutation(N)[:MIA_SAMPLE]) if N > MIA_SAMPLE else np.arange(N)
    spec, why = _mia_levels(rel, X, levels, rows, **ckw)
    if why:
        return [], [why]
    (sample,) = compute(X[rows], **ckw)
    sample = np.asarray(sample, np.float64)
    params = rel.parameters

    def condense(train: np.ndarray, members: np.ndarray) -> np.ndarray:
        from .condenser import Condenser
        from .dynamic import StreamingCondenser

        lv = spec if isinstance(spec, tuple) else np.minimum(spec[members], train.shape[0])
        kw: dict[str, Any] = {"privacy_levels": lv, "key": Key(_MIA_SEED), "allow_weak": True}
        if rel.method == "dynamic":
            est: Any = StreamingCondenser(
                split_strict=bool(params.get("split_strict", False)), repair_splits=bool(params.get("repair_splits", True)), **kw
            )
        else:
            est = Condenser(rows_per_partition=None, standardize=bool(params.get("standardize", False)), **kw)
        out = est.fit(train).release(client=ckw.get("client"))
        return np.asarray(compute(out.data.to_dask_array(lengths=True), **ckw)[0])

    res = membership_advantage(sample, condense, key=Key(_MIA_SEED))
    note = (
        f"{res.members:,} records condensed with the release's method and parameters, {res.holdout:,} held out "
        f"(a public-seeded sample of {rows.size:,} original records); the attacker calls a record a member when its "
        f"distance to the closest pseudo-record is at most {res.threshold:.4g}: TPR {res.tpr:.3f}, FPR {res.fpr:.3f}"
    )
    return [
        Value(
            "membership_advantage",
            "Membership-inference advantage (distance-to-closest-record attacker)",
            res.advantage,
            about="comparison",
            note=note + "; 0 = no better than guessing",
        )
    ], []


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
        Value(
            "covariance_compatibility",
            "Covariance compatibility μ",
            mu,
            about="comparison",
            note="Pearson correlation of the covariance entries (i <= j) of the original and the pseudo-data; 1 = same pattern",
        ),
        Plot(
            "covariance_scatter",
            "Covariance entries: pseudo-data against original",
            "scatter",
            [Series("entries i <= j", cov_o[iu].tolist(), cov_p[iu].tolist())],
            x_label="original covariance",
            y_label="pseudo-data covariance",
            about="comparison",
        ),
    ]
    return items, [m[0] for m in mp]


def _label_index(columns: list[str]) -> int | None:
    for i, c in enumerate(columns):
        if str(c).lower() in LABEL_NAMES:
            return i
    return None


def _nearest_labels(
    parts: list[Any],
    offsets: np.ndarray,
    features: list[int],
    label: int,
    test: np.ndarray,
    exclude: np.ndarray | None,
    **ckw: Any,
) -> np.ndarray:
    from ..progress import compute

    tasks = [dask.delayed(FK.nearest, pure=True)(p, features, label, int(offsets[i]), test, exclude) for i, p in enumerate(parts)]
    (res,) = compute(tasks, **ckw)
    return FK.merge_nearest(list(res))


def _accuracy_figures(
    rel: CondensedRelease, X: Any, pseudo_parts: list[Any], pseudo_rows: list[int], **ckw: Any
) -> tuple[list[Any], list[str]]:
    import dask.array as da

    from ..progress import compute

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
    note = (
        f"{test_rows.size} original test records; class column {rel.columns[label]!r}; the pseudo-data were "
        "condensed from all records, the test records included"
    )
    return [
        Value("nn_accuracy_pseudo", "1-NN accuracy, trained on the pseudo-data", acc, about="comparison", note=note),
        Value(
            "nn_accuracy_original", "1-NN accuracy, trained on the other original records", base, about="comparison", note=note
        ),
        Value(
            "nn_accuracy_ratio",
            "1-NN accuracy, pseudo-data / original",
            acc / base if base > 0 else float("nan"),
            about="comparison",
        ),
    ], []


def condensed_report_figures(rel: CondensedRelease, original: Any = None, **ckw: Any) -> Figures:
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
    fig = Figures(risk=group_figures(rel.published) + statistics_figures(rel))
    if original is None:
        fig.needs_original.append("the utility figures and the distances to the original records need the original data")
        return fig
    X, levels = rel._original_arrays(original)
    d = len(rel.columns) or int(X.shape[1])
    if int(X.shape[1]) != d:
        fig.notes.append(f"utility figures: the original has {int(X.shape[1])} attributes, the release {d}")
        return fig
    X = X.rechunk({1: -1})
    fig.risk += closeness_figures(rel, X, **ckw)
    items, notes = membership_figures(rel, X, levels, **ckw)
    fig.risk += items
    fig.notes += notes
    pseudo_parts = list(rel.data.to_delayed())
    items, pseudo_rows = _covariance_figures(pseudo_parts, list(X.to_delayed().ravel()), d, **ckw)
    fig.utility += items
    items, notes = _accuracy_figures(rel, X, pseudo_parts, pseudo_rows, **ckw)
    fig.utility += items + (_majority_figures(rel, X, **ckw) if items else [])
    fig.notes += notes
    fig += _quality_figures(rel, X, **ckw)
    return fig


def _majority_figures(rel: CondensedRelease, X: Any, **ckw: Any) -> list[Any]:
    """The majority-class rate of the 1-NN test records (the same fixed sample): the accuracy of
    always guessing the most frequent class, the floor the 1-NN accuracies are read against."""
    from ..progress import compute

    label = _label_index(rel.columns)
    N = int(X.shape[0])
    rows = np.sort(np.random.default_rng(_TEST_SEED).permutation(N)[: min(TEST_SAMPLE, N // 3)])
    (y,) = compute(X[rows, label], **ckw)
    _, counts = np.unique(np.asarray(y), return_counts=True)
    rate = float(counts.max() / counts.sum()) if counts.size else float("nan")
    return [
        Value(
            "nn_majority_rate",
            "Majority-class rate of the 1-NN test records (always guessing the most frequent class)",
            rate,
            about="comparison",
            unit="share",
            note=f"{rows.size} original test records; read the 1-NN accuracies against it",
        )
    ]


def _quality_figures(rel: CondensedRelease, X: Any, **ckw: Any) -> Figures:
    """The quality score of the pseudo-data against the original (:mod:`ppdm_dask.metrics.quality`),
    every attribute numeric (a condensed class column too: its pseudo-values are continuous)."""
    import dask.dataframe as dd

    from ..metrics.quality import quality_figures, quality_report

    cols = [str(c) for c in rel.columns] or [f"x{j}" for j in range(int(X.shape[1]))]
    orig = dd.from_dask_array(X, columns=cols)
    pseudo = rel.data if hasattr(rel.data, "columns") else dd.from_dask_array(rel.data, columns=cols)
    pseudo = pseudo.rename(columns=dict(zip(pseudo.columns, cols)))
    q = quality_report(orig, pseudo, cols, numeric=cols, **ckw)
    return Figures(
        utility=quality_figures(q, "the pseudo-data", column_kind="attribute"), notes=[f"quality: {n}" for n in q.notes]
    )

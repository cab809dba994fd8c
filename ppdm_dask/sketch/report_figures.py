"""Risk and utility figures of sketch releases for the privacy report (docs/sketches.md#report-figures).

Risk, from the released rows (``about="release"``):

``components_hist``
    Number of sketch components per published record (suppressed records kept as empty rows
    in the m = 0 bin).
``published_records``, ``mean_components``
    Published records, mean m of the published ones.

The owner's risk figure (``about="original"``, unless ``keep_suppressed`` publishes the
suppressed records as empty rows):

``suppressed_share``
    Share of suppressed input records (%): the number of records suppressed is not in any
    public file, since an adversary who knows every record but one would learn from it whether
    the last was suppressed.

Risk against the original (``about="comparison"``: each record's released m is compared with
its own original values; needs the release in input order, or published ``record_id`` columns
on both sides):

``variance_margin``, ``min_variance_margin``, ``records_below_threshold``
    Per published record the achieved variance over the variance its condition requires (see
    :mod:`._figure_kernels`): histogram, the smallest relative margin (ratio - 1) and the records
    below their threshold (0 for a sound release).

Utility (``about="comparison"``, with the original):

``similarity_scatter``, ``cosine_mean_abs_error``, ``dot_mean_relative_error``
    Estimated against exact cosine similarity on a fixed sample of pairs of published records,
    and the errors of the estimated dot products.
``knn_accuracy_sketches``, ``knn_accuracy_original``, ``knn_accuracy_ratio``
    1-NN classification accuracy on the sketches (the miners' default, shrunk cosine) and on the
    original records (cosine), on a fixed sample split 2:1 (when the data carry a ``label`` column).
``utility_frontier``, ``utility_frontier_table``
    The privacy-utility frontier around the release's level: the release's method re-run on a
    fixed sample of FRONTIER_SAMPLE original records at a few levels (δ/4 .. 4δ, or k = 2, 5,
    10, 20 and the release's k), with 10-NN accuracy and k-means similarity ratios, components
    and suppression per level (docs/sketches.md#the-privacy-utility-frontier).

The officer's summary (``guarantee``, ``protects``, ``learn``, ``attacks``, ``headline``):
:mod:`.threat` (δ as the reconstruction error an attacker faces, the record reconstruction
attack with the original).

Every pass is distributed (one task per row block; margins are binned on the workers) and
every sample is drawn from a fixed public seed by global row, so the figures do not depend on
the partitioning.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter
from ..release.figures import About, Figures, Plot, Series, Value
from . import _figure_kernels as FK

if TYPE_CHECKING:
    from .release import SketchRelease

__all__ = [
    "sketch_report_figures",
    "frontier_levels",
    "PAIR_SAMPLE",
    "KNN_SAMPLE",
    "FRONTIER_SAMPLE",
    "LABEL_COLUMN",
    "gather_original",
    "gather_sketches",
]

#: record pairs of the similarity figures
PAIR_SAMPLE = 1000
#: records (train + test) of the kNN accuracy figures
KNN_SAMPLE = 3000
#: Records of the original the frontier of the report is measured on (a fixed public sample)
FRONTIER_SAMPLE = 1500
#: the class column the kNN figures use
LABEL_COLUMN = "label"
#: public seeds of the samples (the samples are not secret: they only choose what to measure)
_PAIR_SEED, _KNN_SEED, _FRONTIER_SEED = 0x5EED_0001, 0x5EED_0002, 0x5EED_0003


class _Alignment(NamedTuple):
    """The release's numbers of components in the original's row blocks, and for each original
    record its row in the release (None: the same row)."""

    m: da.Array
    release_row: np.ndarray | None


def _offsets(rows: Any) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(rows, dtype=np.int64))]).astype(np.int64)


# ---------------------------------------------------------------------- gathering sample rows
def gather_original(tx: Any, rows: np.ndarray, **ckw: Any) -> sp.csr_array:
    """Rows ``rows`` (global, any order) of a TransactionArray as a float64 CSR array."""
    from ..progress import compute

    rows = np.asarray(rows, dtype=np.int64)
    want = np.unique(rows)
    off = _offsets(tx.partition_rows)
    blocks = tx.blocks.to_delayed().ravel()
    weights = tx.weights.to_delayed().ravel() if tx.weights is not None else [None] * len(blocks)
    tasks = []
    for i, (b, w) in enumerate(zip(blocks, weights)):
        sel = want[(want >= off[i]) & (want < off[i + 1])]
        if sel.size:
            tasks.append(dask.delayed(FK.take_rows, pure=True)(b, w, int(off[i]), sel, int(tx.n_items)))
    (parts,) = compute(tasks, **ckw)
    X = sp.vstack(parts, format="csr") if parts else sp.csr_array((0, int(tx.n_items)))
    return sp.csr_array(X[np.searchsorted(want, rows)])


def gather_sketches(sk: Any, rows: np.ndarray, **ckw: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(values, m)`` of release rows ``rows`` (global, any order)."""
    from ..progress import compute

    rows = np.asarray(rows, dtype=np.int64)
    want = np.unique(rows)
    off = _offsets(sk.partition_rows)
    tasks = []
    for i, (v, m) in enumerate(zip(sk.values.to_delayed().ravel(), sk.m.to_delayed().ravel())):
        sel = want[(want >= off[i]) & (want < off[i + 1])]
        if sel.size:
            tasks.append(dask.delayed(FK.take_sketch_rows, pure=True)(v, m, int(off[i]), sel))
    (parts,) = compute(tasks, **ckw)
    width = int(sk.m_max)
    values = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, width))
    m = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    at = np.searchsorted(want, rows)
    return values[at], m[at]


# ---------------------------------------------------------------------- alignment
def _align(rel: SketchRelease, original: Any, **ckw: Any) -> _Alignment | None:
    """How the released rows map onto the original's records, or None when they cannot be
    matched (a release read from disk is in a keyed order without its suppressed records)."""
    from ..progress import compute

    sk, n = rel.data, int(original.n_transactions)
    rows = tuple(original.partition_rows)
    if rel._disk is None and sk.n_records == n:  # in memory: input order
        m = sk.m if tuple(sk.m.chunks[0]) == rows else sk.m.rechunk({0: rows})
        return _Alignment(m.astype(np.int64), None)
    if "record_id" in sk.columns and "record_id" in original.columns:
        ids, m, ids_orig = compute(sk.columns["record_id"], sk.m, original.columns["record_id"], **ckw)
        ids, m, ids_orig = np.asarray(ids), np.asarray(m, np.int64), np.asarray(ids_orig)
        release_row = np.full(n, -1, dtype=np.int64)
        if ids.size:
            order = np.argsort(ids, kind="stable")
            at = np.minimum(np.searchsorted(ids[order], ids_orig), ids.size - 1)
            found = ids[order][at] == ids_orig
            release_row[found] = order[at][found]
        m_full = np.where(release_row >= 0, m[np.maximum(release_row, 0)] if ids.size else 0, 0)
        return _Alignment(da.from_array(m_full.astype(np.int64), chunks=(rows,)), release_row)
    return None


# ---------------------------------------------------------------------- risk
def _suppression_counts(rel: SketchRelease, total: Any, original: Any = None) -> tuple[int, int, About] | None:
    """``(input records, suppressed records, about)``: recounted from the rows when they show
    them (suppressed records kept as empty rows: ``about="release"``), else the owner's figures
    (a release in memory, the one that was written handed over with adopt, or the original's
    records less the published ones: ``about="original"``, never in the external report); None
    when none of these is at hand."""
    n_input, n_suppressed = rel._input_counts(total)
    if n_input is not None:
        return n_input, int(n_suppressed or 0), ("release" if rel.keep_suppressed else "original")
    fitted = getattr(rel, "fitted", None)
    records = (fitted.figures if fitted is not None else rel.figures).get("records") or {}
    if "input" in records and "suppressed" in records:
        return int(records["input"]), int(records["suppressed"]), "original"
    if original is not None:  # a suppressed record publishes nothing: the others are the published rows
        n = int(original.n_transactions)
        return n, max(n - int(total["rows"]), 0), "original"
    return None


def _component_figures(rel: SketchRelease, original: Any = None, **ckw: Any) -> list[Any]:
    total, _ = rel._recount(**ckw)
    hist = np.asarray(total["hist"], dtype=np.int64)[: rel.m_max + 1].copy()
    if not rel.keep_suppressed:
        hist[0] = 0  # the suppressed records publish nothing: the histogram is of the published rows
    published = int(hist[1:].sum())
    mean = float((np.arange(hist.size)[1:] * hist[1:]).sum() / published) if published else 0.0
    edges, counts = FK.integer_bins(hist)
    out: list[Any] = [
        Plot(
            "components_hist",
            "Sketch components per published record",
            "histogram",
            [Series("records", edges, counts)],
            x_label="components m" + (" (0 = suppressed, published as an empty row)" if rel.keep_suppressed else ""),
            y_label="records",
            note=f"m is capped at m_max = {rel.m_max}",
        ),
        Value("published_records", "Published records", published, unit="records"),
        Value("mean_components", "Mean components per published record", mean, unit="components"),
    ]
    counts_known = _suppression_counts(rel, total, original)
    if counts_known is not None:
        n_input, n_suppressed, about = counts_known
        out.insert(
            1,
            Value(
                "suppressed_share",
                "Suppressed records",
                100.0 * n_suppressed / n_input if n_input else 0.0,
                about=about,
                unit="%",
                note=f"{n_suppressed} of {n_input} input records publish nothing"
                + ("" if about == "release" else " (the owner's figure: not in any public file)"),
            ),
        )
    return out


def _margin_figures(ratios: list[Any], condition: str, **ckw: Any) -> list[Any]:
    """Histogram and summary of the per-record variance ratios, ``ratios`` delayed per block;
    a first pass finds their range, a second bins them on the workers."""
    from ..progress import compute

    (summaries,) = compute([dask.delayed(FK.ratio_summary, pure=True)(r) for r in ratios], **ckw)
    finite = sum(s["finite"] for s in summaries)
    infinite = sum(s["infinite"] for s in summaries)
    below = sum(s["below"] for s in summaries)
    lo = min((s["min"] for s in summaries), default=np.inf)
    hi = max((s["max"] for s in summaries), default=-np.inf)
    edges, log = FK.ratio_edges(lo, hi)
    (counts,) = compute([dask.delayed(FK.ratio_histogram, pure=True)(r, edges) for r in ratios], **ckw)
    total = np.sum(counts, axis=0) if counts else np.zeros(len(edges) - 1, np.int64)
    if finite:
        margin = lo - 1.0
        margin = 0.0 if -FK.TOLERANCE < margin < 0 else margin  # rounding of the tolerant floor
    else:
        margin = float("inf") if infinite else float("nan")
    note = f"{finite} published records" + (f"; {infinite} with no constraining edge are not shown" if infinite else "")
    return [
        Plot(
            "variance_margin",
            f"Variance margin of each record ({condition})",
            "histogram",
            [Series("records", [float(e) for e in edges], [int(c) for c in total])],
            x_label="achieved variance / required variance (>= 1 meets the condition)",
            y_label="records",
            about="comparison",
            log_x=log,
            note=note,
        ),
        Value(
            "min_variance_margin",
            "Smallest relative variance margin",
            margin,
            about="comparison",
            note="min over published records of achieved/required variance - 1; >= 0 meets the condition",
        ),
        Value(
            "records_below_threshold",
            "Records below their variance threshold",
            int(below),
            about="comparison",
            unit="records",
            note="must be 0",
        ),
    ]


def _delta_margins(rel: SketchRelease, original: Any, al: _Alignment, **ckw: Any) -> list[Any]:
    delta = float(rel.parameters["delta"])
    blocks = original.blocks.to_delayed().ravel()
    weights = original.weights.to_delayed().ravel() if original.weights is not None else [None] * len(blocks)
    ratios = [
        dask.delayed(FK.delta_ratios, pure=True)(b, w, m, delta) for b, w, m in zip(blocks, weights, al.m.to_delayed().ravel())
    ]
    return _margin_figures(ratios, f"δ = {delta:g}", **ckw)


def _kvariance_margins(rel: SketchRelease, original: Any, al: _Alignment, **ckw: Any) -> list[Any]:
    from ..neighbors import knn
    from ..progress import compute

    p = rel.parameters
    graph = knn(
        original,
        int(p["k"]),
        metric=p.get("metric", "cosine"),
        scope=p.get("knn_scope", "global"),
        client=ckw.get("client"),
        progress=bool(ckw.get("progress", False)),
    )
    (m,) = compute(al.m, **ckw)
    r = FK.kvariance_ratios(graph.indices, graph.dots, graph.cross, graph.sqnorms, np.asarray(m))
    # the graph is on the driver already: bin it there, in the blocks of the original
    off = _offsets(original.partition_rows)
    ratios = [dask.delayed(r[off[i] : off[i + 1]]) for i in range(len(off) - 1)]
    return _margin_figures(ratios, f"k = {int(p['k'])}", **ckw)


# ---------------------------------------------------------------------- utility
def _similarity_figures(rel: SketchRelease, original: Any, al: _Alignment, **ckw: Any) -> tuple[list[Any], list[str]]:
    from ..progress import compute

    (m,) = compute(al.m, **ckw)
    pub = np.flatnonzero(np.asarray(m) > 0)
    if pub.size < 2:
        return [], ["similarity figures: fewer than two published records"]
    rng = np.random.default_rng(_PAIR_SEED)
    a, b = rng.choice(pub, PAIR_SAMPLE), rng.choice(pub, PAIR_SAMPLE)
    keep = a != b
    a, b = a[keep], b[keep]
    X = gather_original(original, np.concatenate([a, b]), **ckw)
    rows = np.concatenate([a, b]) if al.release_row is None else al.release_row[np.concatenate([a, b])]
    S, ms = gather_sketches(rel.data, rows, **ckw)
    k = a.size
    est_dot, est_cos = FK.pair_estimates(S[:k], ms[:k], S[k:], ms[k:])
    dot, cos = FK.exact_pairs(X[:k], X[k:])
    nz = dot != 0
    rel_err = float(np.mean(np.abs(est_dot[nz] - dot[nz]) / np.abs(dot[nz]))) if nz.any() else float("nan")
    items = [
        Plot(
            "similarity_scatter",
            "Estimated against exact cosine similarity",
            "scatter",
            [Series("record pairs", [float(v) for v in cos], [float(v) for v in est_cos])],
            x_label="exact cosine (original)",
            y_label="estimated cosine (sketches)",
            about="comparison",
            note=f"{k} random pairs of published records; a perfect estimate lies on the diagonal",
        ),
        Value(
            "cosine_mean_abs_error",
            "Mean absolute error of the estimated cosine",
            float(np.mean(np.abs(est_cos - cos))),
            about="comparison",
            note=f"over {k} random pairs of published records",
        ),
        Value(
            "dot_mean_relative_error",
            "Mean relative error of the estimated dot product",
            rel_err,
            about="comparison",
            unit="share",
            note=f"|estimate - exact| / |exact| over the {int(nz.sum())} sampled pairs with a non-zero exact dot product",
        ),
    ]
    return items, []


def _split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fixed sample of at most KNN_SAMPLE of ``n`` records (sorted) split 2:1 (positions)."""
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.permutation(n)[:KNN_SAMPLE])
    perm = rng.permutation(sample.size)
    n_test = int(round(sample.size / 3))
    return sample, np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _sketch_accuracy(S: np.ndarray, m: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, **ckw: Any) -> float:
    from ..random import Key
    from .mining import SketchKNNClassifier

    if not (m[train] > 0).any():
        return float("nan")
    clf = SketchKNNClassifier(k=1, key=Key(_KNN_SEED)).fit((S[train], m[train]), y[train], **ckw)
    return float(np.mean(clf.predict((S[test], m[test]), **ckw) == y[test]))


def _knn_figures(rel: SketchRelease, original: Any, al: _Alignment | None, **ckw: Any) -> tuple[list[Any], list[str]]:
    from ..progress import compute
    from .evaluation import exact_knn_predict

    if LABEL_COLUMN not in original.columns:
        return [], [f"kNN accuracy: the original has no {LABEL_COLUMN!r} column"]
    n = int(original.n_transactions)
    sample, train, test = _split(n, _KNN_SEED)
    if train.size == 0 or test.size == 0:
        return [], ["kNN accuracy: too few records"]
    (y_all,) = compute(original.columns[LABEL_COLUMN], **ckw)
    y = np.asarray(y_all)[sample]
    X = gather_original(original, sample, **ckw)
    base = float(np.mean(exact_knn_predict(X[train], y[train], X[test], k=1) == y[test]))
    if al is not None:  # the same records on both sides: suppressed test records get prior labels
        rows = sample if al.release_row is None else al.release_row[sample]
        S, m = gather_sketches(rel.data, np.maximum(rows, 0), **ckw)
        m = np.where(rows >= 0, m, 0)
        acc = _sketch_accuracy(S, m, y, train, test, **ckw)
        note = f"1-NN on {sample.size} records split 2:1, the same records on both sides"
    elif LABEL_COLUMN in rel.data.columns:  # the release's own rows: only the published records
        s_sample, s_train, s_test = _split(int(rel.data.n_records), _KNN_SEED)
        S, m = gather_sketches(rel.data, s_sample, **ckw)
        (y_rel,) = compute(rel.data.columns[LABEL_COLUMN], **ckw)
        acc = _sketch_accuracy(S, m, np.asarray(y_rel)[s_sample], s_train, s_test, **ckw) if s_test.size else float("nan")
        note = (
            "1-NN on samples split 2:1: the published records of the release (suppressed ones are not "
            "in it) and the original's records"
        )
    else:
        return [], [f"kNN accuracy: the release publishes no {LABEL_COLUMN!r} column"]
    ratio = acc / base if base > 0 else float("nan")
    return [
        Value("knn_accuracy_sketches", "1-NN accuracy on the sketches", acc, about="comparison", note=note),
        Value("knn_accuracy_original", "1-NN accuracy on the original records", base, about="comparison", note=note),
        Value("knn_accuracy_ratio", "1-NN accuracy, sketches / original", ratio, about="comparison"),
        _knn_majority(y[test]),
    ], []


def _knn_majority(y_test: np.ndarray) -> Value:
    """The majority-class rate of the original's 1-NN test records: the accuracy of always
    guessing the most frequent label, the floor both accuracies are read against."""
    _, counts = np.unique(np.asarray(y_test), return_counts=True)
    rate = float(counts.max() / counts.sum()) if counts.size else float("nan")
    return Value(
        "knn_majority_rate",
        "Majority-class rate of the 1-NN test records (always guessing the most frequent label)",
        rate,
        about="comparison",
        unit="share",
        note=f"{counts.sum():,} original test records; read the 1-NN accuracies against it",
    )


def frontier_levels(method: str, level: float) -> list[float]:
    """The levels of the report's frontier around a release's level: δ/4, δ/2, δ, 2δ, 4δ, or
    k = 2, 5, 10, 20 and the release's k."""
    if method == "delta":
        return [level * f for f in (0.25, 0.5, 1.0, 2.0, 4.0)]
    return sorted({2, 5, 10, 20, int(level)})


def _frontier_figures(rel: SketchRelease, original: Any, **ckw: Any) -> tuple[list[Any], list[str]]:
    """The frontier of the release's method on a fixed sample of the original (driver side: a
    sample of FRONTIER_SAMPLE records is small, so it runs on the local scheduler)."""
    from ..progress import compute
    from ..random import Key
    from .delta import DeltaAnonymizer
    from .evaluation import frontier, frontier_figures
    from .kvariance import KVarianceAnonymizer

    p = rel.parameters
    method = "delta" if rel.method == "delta" else "k"
    level = p.get("delta") if method == "delta" else p.get("k")
    if level is None:
        return [], ["utility frontier: the release records no privacy level"]
    n = int(original.n_transactions)
    sample = np.sort(np.random.default_rng(_FRONTIER_SEED).permutation(n)[:FRONTIER_SAMPLE])
    if sample.size < 30:
        return [], ["utility frontier: too few records"]
    X = gather_original(original, sample, **ckw)
    labelled = LABEL_COLUMN in original.columns
    y = np.asarray(compute(original.columns[LABEL_COLUMN], **ckw)[0])[sample] if labelled else np.zeros(sample.size, np.int64)
    m_max = int(p.get("m_max", 256))

    def make(v: float, g: Any) -> Any:
        if method == "delta":
            return DeltaAnonymizer(float(v), m_max=m_max, generator=g, allow_weak=True)
        return KVarianceAnonymizer(int(v), m_max=m_max, metric=p.get("metric", "cosine"), generator=g, allow_weak=True)

    tasks = ("classify", "cluster") if labelled else ("cluster",)
    levels = frontier_levels(method, level)
    if method == "k":  # the split's test third is anonymized on its own: k below its size
        levels = [v for v in levels if v < sample.size // 3 - 1]
        if not levels:
            return [], ["utility frontier: too few records for k-variance at these levels"]
    try:
        with dask.config.set(scheduler="sync"):
            rows = frontier(
                X,
                y,
                method,
                levels,
                key=Key(_FRONTIER_SEED),
                make=make,
                n_neighbors=10,
                n_clusters=min(10, max(2, sample.size // 50)),
                tasks=tasks,
            )
    except InvalidParameter as exc:  # e.g. every sampled record suppressed at these levels: nothing to mine
        return [], [f"utility frontier: not measured ({exc.message})"]
    plot, table = frontier_figures(rows)
    note = (
        f"the release's method re-run at each level on a fixed sample of {sample.size} original records "
        f"(the release's level: {level}); 10-NN accuracy and k-means similarity on the sketches over the same on the originals"
    )
    plot = dataclasses.replace(plot, note=note)
    return [plot, table], ([] if labelled else [f"utility frontier: no {LABEL_COLUMN!r} column, so k-means similarity only"])


# ---------------------------------------------------------------------- entry point
def sketch_report_figures(rel: SketchRelease, original: Any = None, **ckw: Any) -> Figures:
    """The risk and utility figures of a sketch release (see the module docstring).

    Parameters
    ----------
    rel : SketchRelease
    original : TransactionArray, optional
        The anonymizer's input: the per-record margins and the utility figures.
    **ckw
        ``client=``, ``progress=`` for the distributed passes.
    """
    from .threat import sketch_threat

    ckw.setdefault("progress", False)
    fig = Figures(risk=_component_figures(rel, original, **ckw))
    if original is None:
        fig.needs_original.append("the variance margins and the utility figures need the original data")
        return sketch_threat(rel, fig, **ckw)
    # the released rows of a written release are in a keyed order: the release in memory that was
    # written (handed over with adopt) is in input order and holds the same sketches
    fitted = getattr(rel, "fitted", None)
    src = fitted if fitted is not None else rel
    al = _align(src, original, **ckw)
    if al is None:
        fig.notes.append(
            "the variance margins and the similarity errors need the released rows matched to the "
            "original's: a release in input order, or record_id columns published and in the original"
        )
    elif src.method == "delta":
        fig.risk += _delta_margins(src, original, al, **ckw)
    elif src.method == "k-variance" and not src.parameters.get("approximate", False):
        fig.risk += _kvariance_margins(src, original, al, **ckw)
    else:
        fig.notes.append("variance margins: the k-NN graph of an approximate k-variance release is not recomputed")
    if al is not None:
        items, notes = _similarity_figures(src, original, al, **ckw)
        fig.utility += items
        fig.notes += notes
    items, notes = _knn_figures(src, original, al, **ckw)
    fig.utility += items
    fig.notes += notes
    items, notes = _frontier_figures(src, original, **ckw)
    fig.utility += items
    fig.notes += notes
    return sketch_threat(src, fig, original, al, **ckw)

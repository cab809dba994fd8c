"""The paper's evaluation protocol for anonymized sketches (Aggarwal & Yu §4;
docs/sketches.md#mining-on-sketches).

* Classification: a random 2:1 train/test split; train and test are anonymized *separately*
  (with one shared generator, so their sketches are comparable); k-NN on the sketches; a
  suppressed test record gets a label drawn from the class prior. Baseline: the same k-NN with
  exact cosine on the original records.
* Clustering: k-means (K = 10) on the sketches of all records; quality = average cosine
  similarity of every ORIGINAL record to its cluster's centroid in the ORIGINAL representation;
  suppressed records go to random clusters in proportion to the cluster sizes. Baseline:
  spherical k-means on the original records, same quality measure.

The baselines are exact numpy/scipy computations on the client (they are references, not
products); the anonymization and the mining on sketches run on Dask.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter
from ..random import Key, KeyLike, Tag, as_key
from ._mining_kernels import vote
from .generator import SketchGenerator
from .mining import SketchKMeans, SketchKNNClassifier, average_cosine_similarity

__all__ = [
    "train_test_split",
    "exact_knn_predict",
    "spherical_kmeans",
    "evaluate",
    "frontier",
    "frontier_figures",
    "draw_frontier",
    "SWEEP_METHODS",
]

#: The privacy parameter of each method, as the sweep names it.
SWEEP_METHODS = ("delta", "k")


def train_test_split(n: int, *, key: KeyLike, test_fraction: float = 1 / 3) -> tuple[np.ndarray, np.ndarray]:
    """Random split without replacement; sorted (train, test) row indices (2:1 by default)."""
    if not 0 < test_fraction < 1:
        raise InvalidParameter(f"test_fraction must be in (0, 1), got {test_fraction}")
    perm = as_key(key).generator(Tag.EVALUATION_SPLIT, 1).permutation(int(n))
    n_test = int(round(test_fraction * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _normalized(X: sp.csr_array) -> sp.csr_array:
    X = sp.csr_array(X, dtype=np.float64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_array(sp.diags_array(scale) @ X)


def exact_knn_predict(X_train: Any, y_train: np.ndarray, X_test: Any, *, k: int = 1, block_rows: int = 512) -> np.ndarray:
    """k-NN labels of ``X_test`` by exact cosine similarity to ``X_train`` (the baseline).

    Neighbours ranked by (similarity desc, train index asc); majority vote with ties to the
    nearest tied label — the rule of :class:`SketchKNNClassifier`. Zero-norm training rows are
    never neighbours; a zero-norm test row has similarity 0 to every record (ties by index).
    """
    A = _normalized(X_train)
    B = _normalized(X_test)
    classes, codes = np.unique(np.asarray(y_train), return_inverse=True)
    valid_train = np.asarray(A.multiply(A).sum(axis=1)).ravel() > 0
    At = sp.csr_array(A.T)
    out = np.empty(B.shape[0], dtype=np.int64)
    idx_all = np.arange(A.shape[0])
    for lo in range(0, B.shape[0], block_rows):
        hi = min(B.shape[0], lo + block_rows)
        sim = (B[lo:hi] @ At).toarray()
        sim[:, ~valid_train] = -np.inf
        kk = min(k, A.shape[0])
        part = np.argpartition(-sim, kk - 1, axis=1)[:, :kk] if kk < sim.shape[1] else np.tile(idx_all, (hi - lo, 1))
        psim = np.take_along_axis(sim, part, axis=1)
        order = np.lexsort((part, -psim), axis=1)
        top = np.take_along_axis(part, order, axis=1)
        # argpartition breaks ties at the k-th similarity arbitrarily: redo rows where records
        # tied with the k-th are left out, so that ties go to the smaller index exactly
        kth = psim.min(axis=1)
        straddle = np.flatnonzero((sim == kth[:, None]).sum(axis=1) > (psim == kth[:, None]).sum(axis=1))
        for r in straddle:
            cand = np.flatnonzero(sim[r] >= kth[r])
            top[r] = cand[np.lexsort((cand, -sim[r, cand]))[:kk]]
        pred = vote(top, codes, classes.size)
        out[lo:hi] = classes[pred]
    return out


def spherical_kmeans(X: Any, n_clusters: int = 10, *, key: KeyLike, max_iter: int = 20) -> np.ndarray:
    """Cosine k-means on the original records (the clustering baseline); labels (N,).

    Random distinct seeds from the key, assignment by cosine to the normalised centroid, until a
    fixed point or ``max_iter`` passes. Zero rows join cluster 0 (they have no direction).
    """
    A = _normalized(X)
    n = A.shape[0]
    nonzero = np.flatnonzero(np.diff(A.indptr) > 0)
    if nonzero.size < n_clusters:
        raise InvalidParameter(f"only {nonzero.size} non-zero records for {n_clusters} clusters")
    rng = as_key(key).generator(Tag.KMEANS_INIT, 1)
    seeds = rng.choice(nonzero, size=n_clusters, replace=False)
    C = A[seeds].toarray()
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        sim = (A @ C.T) if sp.issparse(A) else A @ C.T
        new = np.asarray(np.argmax(sim, axis=1)).ravel()
        if np.array_equal(new, labels):
            break
        labels = new
        sums = np.asarray((sp.csr_array((np.ones(n), (labels, np.arange(n))), shape=(n_clusters, n)) @ A).todense())
        norms = np.linalg.norm(sums, axis=1)
        empty = norms == 0
        C = np.where(empty[:, None], C, sums / np.where(empty, 1.0, norms)[:, None])
    return labels


def evaluate(
    X: Any,
    labels: np.ndarray,
    anonymize: Callable[[Any, SketchGenerator], Any],
    *,
    key: KeyLike = None,
    n_neighbors: int = 1,
    n_clusters: int = 10,
    tasks: tuple[str, ...] = ("classify", "cluster"),
    npartitions: int | None = None,
    client: Any = None,
    baseline: dict[str, float] | None = None,
    similarity: str = "shrunk",
) -> dict[str, Any]:
    """Utility of anonymized sketches relative to the original data (the paper's Figs. 3-12).

    Parameters
    ----------
    X : scipy sparse (N, d)
        Original records (counts or 0/1).
    labels : array (N,)
        Class labels (classification).
    anonymize : callable (TransactionArray, SketchGenerator) -> SketchRelease or SketchArray
        E.g. ``lambda tx, g: KVarianceAnonymizer(k=5, generator=g).fit_release(tx)`` (the
        release's ``.data`` is used).
    key : Key, int or bytes
        Secret key of the split, the generator and the miners' random steps.
    baseline : dict, optional
        ``{"accuracy": ..., "similarity": ...}`` already computed for this X, labels and key
        (they do not depend on the anonymization) — saves recomputing them in a sweep.
    similarity : {"shrunk", "cosine", "euclidean"}, default "shrunk"
        The similarity of the miners on sketches (docs/sketches.md#the-variance-aware-similarity).

    Returns
    -------
    dict
        ``accuracy``, ``baseline_accuracy``, ``accuracy_ratio``, ``chance_accuracy`` (labels drawn
        from the training prior: ``sum_c p_train(c) p_test(c)``), ``suppressed_test``,
        ``similarity``, ``baseline_similarity``, ``similarity_ratio``, ``suppressed``,
        ``mean_components`` (of the published records), ``seconds``.
    """
    from ..data.transactions import TransactionArray
    from ..progress import compute

    key = as_key(key)
    X = sp.csr_array(X)
    labels = np.asarray(labels)
    gen = SketchGenerator.from_key(Key(int(key.digest("evaluate-generator")[:32], 16)))
    out: dict[str, Any] = {}
    baseline = dict(baseline or {})
    t0 = time.perf_counter()

    def tx_of(rows: np.ndarray | None) -> Any:
        sub = X if rows is None else X[rows]
        cols = {"label": labels if rows is None else labels[rows]}
        return TransactionArray.from_scipy(sub, npartitions=npartitions, columns=cols)

    def sketches(tx: Any) -> Any:
        out = anonymize(tx, gen)
        return getattr(out, "data", out).persist(progress=False, client=client)  # a release's sketches

    if "classify" in tasks:
        train, test = train_test_split(X.shape[0], key=key)
        s_train = sketches(tx_of(train))
        s_test = sketches(tx_of(test))
        clf = SketchKNNClassifier(k=n_neighbors, key=key, similarity=similarity).fit(s_train, labels[train], client=client)
        pred = clf.predict(s_test, client=client)
        out["accuracy"] = float(np.mean(pred == labels[test]))
        if "accuracy" not in baseline:
            baseline["accuracy"] = float(
                np.mean(exact_knn_predict(X[train], labels[train], X[test], k=n_neighbors) == labels[test])
            )
        out["baseline_accuracy"] = baseline["accuracy"]
        out["accuracy_ratio"] = out["accuracy"] / baseline["accuracy"] if baseline["accuracy"] > 0 else float("nan")
        classes, codes = np.unique(labels, return_inverse=True)
        p_train = np.bincount(codes[train], minlength=classes.size) / max(1, train.size)
        p_test = np.bincount(codes[test], minlength=classes.size) / max(1, test.size)
        out["chance_accuracy"] = float(p_train @ p_test)
        m_train, m_test = compute(s_train.m, s_test.m, progress=False, client=client)
        out["suppressed_test"] = float(np.mean(m_test == 0))
        if "cluster" not in tasks:  # otherwise from the sketches of all records, below
            m_all = np.concatenate([m_train, m_test])
            out["suppressed"] = float(np.mean(m_all == 0))
            out["mean_components"] = float(m_all[m_all > 0].mean()) if (m_all > 0).any() else 0.0
    if "cluster" in tasks:
        s_all = sketches(tx_of(None))
        km = SketchKMeans(n_clusters=n_clusters, key=key, similarity=similarity).fit(s_all, client=client)
        out["similarity"] = average_cosine_similarity(X, km.assigned_labels_)
        if "similarity" not in baseline:
            baseline["similarity"] = average_cosine_similarity(X, spherical_kmeans(X, n_clusters, key=key))
        out["baseline_similarity"] = baseline["similarity"]
        out["similarity_ratio"] = out["similarity"] / baseline["similarity"] if baseline["similarity"] > 0 else float("nan")
        (m_all,) = compute(s_all.m, progress=False, client=client)
        out["suppressed"] = float(np.mean(m_all == 0))
        kept = m_all[m_all > 0]
        out["mean_components"] = float(kept.mean()) if kept.size else 0.0
    out["seconds"] = time.perf_counter() - t0
    out["baseline"] = baseline
    return out


def _default_anonymizer(method: str, level: float, generator: SketchGenerator) -> Any:
    from .delta import DeltaAnonymizer
    from .kvariance import KVarianceAnonymizer

    if method == "delta":
        return DeltaAnonymizer(float(level), generator=generator, allow_weak=True)
    return KVarianceAnonymizer(int(level), generator=generator, allow_weak=True)


def frontier(
    X: Any,
    labels: np.ndarray,
    method: str,
    levels: Any,
    *,
    key: KeyLike = None,
    make: Callable[[float, SketchGenerator], Any] | None = None,
    n_neighbors: int = 10,
    n_clusters: int = 10,
    tasks: tuple[str, ...] = ("classify", "cluster"),
    similarity: str = "shrunk",
    npartitions: int | None = None,
    client: Any = None,
    on_level: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """The privacy-utility frontier of a data set: :func:`evaluate` at every privacy level.

    Parameters
    ----------
    method : {"delta", "k"}
        δ-anonymity (``levels`` are values of δ) or k-variance anonymity (numbers of neighbours).
    levels : sequence of numbers
        In the order given (sorted by the caller if wanted).
    make : callable (level, generator) -> anonymizer, optional
        Builds the anonymizer of one level (default: ``DeltaAnonymizer(level)`` or
        ``KVarianceAnonymizer(level)`` with the shared generator, weak levels allowed: the sweep
        measures, it publishes nothing).
    on_level : callable, optional
        Called with every finished row (progress).

    Returns
    -------
    list of dict
        One row per level: ``method``, ``level`` and the measures of :func:`evaluate`
        (``accuracy``, ``accuracy_ratio``, ``chance_accuracy``, ``similarity``,
        ``similarity_ratio``, ``mean_components``, ``suppressed``, ...). The baselines on the
        original are computed once.
    """
    if method not in SWEEP_METHODS:
        raise InvalidParameter(f"the sweep's method must be one of {SWEEP_METHODS}, got {method!r}")
    levels = list(levels)
    if not levels:
        raise InvalidParameter("the sweep needs at least one level")
    make = make or (lambda level, g: _default_anonymizer(method, level, g))
    rows: list[dict[str, Any]] = []
    baseline: dict[str, float] | None = None
    for level in levels:

        def anonymize(tx: Any, g: SketchGenerator, level: Any = level) -> Any:
            return make(level, g).fit_release(tx)

        r = evaluate(
            X,
            labels,
            anonymize,
            key=key,
            n_neighbors=n_neighbors,
            n_clusters=n_clusters,
            tasks=tasks,
            npartitions=npartitions,
            client=client,
            baseline=baseline,
            similarity=similarity,
        )
        baseline = r.pop("baseline")
        rows.append({"method": method, "level": level, **r})
        if on_level is not None:
            on_level(rows[-1])
    return rows


def frontier_figures(rows: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The frontier as a report plot (utility ratios and published share against the level) and
    a table (:class:`ppdm_dask.release.figures.Plot`, :class:`~ppdm_dask.release.figures.Table`)."""
    from ..release.figures import Plot, Series, Table

    method = rows[0]["method"]
    name = "δ" if method == "delta" else "k"
    x = [r["level"] for r in rows]
    series = []
    if "accuracy_ratio" in rows[0]:
        series.append(Series("k-NN accuracy / original", x, [r["accuracy_ratio"] for r in rows]))
    if "similarity_ratio" in rows[0]:
        series.append(Series("k-means similarity / original", x, [r["similarity_ratio"] for r in rows]))
    series.append(Series("published share", x, [1.0 - r["suppressed"] for r in rows]))
    positive = all(v > 0 for v in x)
    plot = Plot(
        "utility_frontier",
        f"Privacy-utility frontier ({'δ-anonymity' if method == 'delta' else 'k-variance anonymity'})",
        "line",
        series,
        x_label=f"privacy level {name} (larger: more private)",
        y_label="ratio to the original",
        about="comparison",
        log_x=positive and max(x) / min(x) >= 10,
        note="utility of mining on the sketches divided by the same mining on the original records",
    )
    cols = [name, "accuracy", "accuracy ratio", "chance", "similarity", "similarity ratio", "mean components", "suppressed %"]
    table_rows = [
        [
            r["level"],
            r.get("accuracy"),
            r.get("accuracy_ratio"),
            r.get("chance_accuracy"),
            r.get("similarity"),
            r.get("similarity_ratio"),
            r.get("mean_components"),
            None if "suppressed" not in r else 100 * r["suppressed"],
        ]
        for r in rows
    ]
    table = Table("utility_frontier_table", "Privacy-utility frontier", cols, table_rows, about="comparison")
    return plot, table


def draw_frontier(rows: list[dict[str, Any]], path: str, *, overwrite: bool = False, storage_options: Any = None) -> None:
    """Draw the frontier of :func:`frontier` (matplotlib, off-screen) to ``path`` (any fsspec URL
    ending in .svg or .png), atomically; an existing file is refused unless ``overwrite``."""
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from ..data.atomic import atomic_file

    plot, _ = frontier_figures(rows)
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    try:
        for s in plot.series:
            ax.plot(s.x, s.y, marker="o", label=s.name)
        if plot.log_x:
            ax.set_xscale("log")
        finite = [v for s in plot.series for v in s.y if v is not None and np.isfinite(v)]
        ax.set_ylim(0, max(1.05, 1.05 * max(finite, default=1.0)))
        ax.set_xlabel(plot.x_label)
        ax.set_ylabel(plot.y_label)
        ax.set_title(plot.title)
        ax.legend(frameon=False)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(
            buf,
            format="svg" if path.lower().endswith(".svg") else "png",
            dpi=120,
            metadata={"Date": None} if path.lower().endswith(".svg") else None,
        )
    finally:
        plt.close(fig)
    with atomic_file(path, storage_options=storage_options, overwrite=overwrite) as f:
        f.write(buf.getvalue())

"""k-variance anonymous sketches (corrected Def. 3 / Fig. 2 of Aggarwal & Yu;
docs/sketches.md#k-variance-anonymity).

Pipeline (docs/sketches.md#distributed-execution): the kNN graph over the whole data (ALLPAIRS over row-block pairs, exact,
:func:`ppdm_dask.neighbors.knn`), the bounds M_ij per edge (computed from quantities the kNN
pass carries: dot products and sum_t x_t^2 y_t^2), the ordered m-sweeps on the driver (SEQ: a
few numbers per edge), then sketching (MAP).

Where the distributed result differs from the sequential paper algorithm:

* ``knn_scope="global"`` (default): nowhere. The kNN graph is exact under the total order
  (distance, index) for any partitioning, and the sweeps run sequentially in the paper's order,
  so m is identical to the single-machine algorithm's (tested).
* ``knn_scope="partition"``: neighbours are searched inside each partition only (the paper's
  linear-time "partition based method",
  docs/sketches.md#clarification-partition-local-neighbours); Def. 3 then holds w.r.t. that graph, not the
  global one, and the result depends on the partitioning.
* ``approximate=True``: an approximate kNN graph (measured recall < 1); Def. 3 holds w.r.t. the
  graph found. Intended for data too large for the exact all-pairs pass.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import Estimator, check_is_fitted
from ..constraints import Interval, Options, validate
from ..errors import InvalidParameter
from ..random import KeyLike
from . import _kvariance_kernels as KV
from .generator import SketchGenerator
from .sketches import resolve_generator, sketch

if TYPE_CHECKING:
    from .release import SketchRelease

__all__ = ["KVarianceAnonymizer", "kvariance_components"]

_NEIGHBOURHOODS = ("symmetric", "knn")
_SCOPES = ("global", "partition")
_THRESHOLDS = ("corrected", "paper")


#: the parameters of k-variance anonymization (:mod:`ppdm_dask.constraints`)
KVARIANCE_CONSTRAINTS: dict[str, list[Any]] = {
    "k": [Interval(int, 1, None)],
    "m_max": [Interval(int, 1, None)],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "neighbourhood": [Options(_NEIGHBOURHOODS)],
    "threshold": [Options(_THRESHOLDS)],
    "knn_scope": [Options(_SCOPES)],
}


def kvariance_components(
    graph: Any,
    *,
    m_max: int = 256,
    neighbourhood: str = "symmetric",
    max_iter: int = 20,
    tol: float = 0,
    threshold: str = "corrected",
) -> tuple[np.ndarray, dict[str, Any]]:
    """Numbers of components m_i from a kNN graph (steps 0 and 2-5 of
    docs/sketches.md#k-variance-anonymity).

    Parameters
    ----------
    graph : KNNGraph
        From :func:`ppdm_dask.neighbors.knn` (needs ``indices``, ``distances``, ``dots``,
        ``cross``, ``sqnorms``).
    m_max : int
        The paper's "infinity": the cap and the initial value.
    neighbourhood : {"symmetric", "knn"}
        ``"symmetric"`` (default): m_q is constrained by its kNN and by every record having q
        among its kNN, which keeps Def. 3 valid after every major iteration. ``"knn"``:
        paper-literal (only kNN(q)) followed by the mandatory repair pass
        (docs/sketches.md#correction-symmetric-neighbourhood-or-a-repair-pass).
    max_iter, tol
        Stop after ``max_iter`` major iterations or when sum |change of m| <= ``tol``.
    threshold : {"corrected", "paper"}
        The sd threshold of Def. 3: the corrected Cauchy-Schwarz gap (default,
        docs/sketches.md#correction-the-k-variance-threshold-is-the-cauchy-schwarz-gap) or the
        paper's printed square root of it (reproduction studies only: not scale-invariant; see
        :func:`~ppdm_dask.sketch._kvariance_kernels.edge_bounds`).

    Returns
    -------
    m : ndarray of int32, shape (N,)
        0 = suppressed (zero rows and rows whose bound reaches 0).
    info : dict
        ``n_iter``, ``changes`` (sum |change| per major iteration), ``repaired``,
        ``violations`` (independent recount; 0), ``converged``.
    """
    v = validate(
        KVARIANCE_CONSTRAINTS,
        {"m_max": m_max, "max_iter": max_iter, "neighbourhood": neighbourhood, "tol": tol, "threshold": threshold},
    )
    m_max, max_iter = v["m_max"], v["max_iter"]
    indices = np.asarray(graph.indices, dtype=np.int64)
    bounds = KV.edge_bounds(
        indices,
        np.asarray(graph.dots, np.float64),
        np.asarray(graph.cross, np.float64),
        np.asarray(graph.sqnorms, np.float64),
        m_max,
        threshold,
    )
    active = np.asarray(graph.sqnorms) > 0  # step 0: zero rows are suppressed and take no part
    kth = np.asarray(graph.distances, np.float64)[:, -1] if indices.shape[1] else np.zeros(indices.shape[0])
    order = KV.processing_order(kth, active)
    indptr, nbr, bnd = KV.symmetric_adjacency(indices, bounds, neighbourhood == "symmetric")
    m = np.where(active, m_max, 0).astype(np.int64)
    changes: list[int] = []
    converged = False
    for _ in range(max_iter):
        changes.append(KV.sweep(order, indptr, nbr, bnd, m, m_max))
        if changes[-1] <= tol:
            converged = True
            break
    repaired = KV.repair(indices, bounds, m) if neighbourhood == "knn" else 0
    info = {
        "n_iter": len(changes),
        "changes": changes,
        "converged": converged,
        "repaired": repaired,
        "violations": KV.violations(indices, bounds, m),
    }
    return m.astype(np.int32), info


class KVarianceAnonymizer(Estimator):
    """Publish each record as a sketch whose similarity to each of its k nearest neighbours
    cannot be estimated better than the gap to the maximum possible similarity
    (docs/sketches.md#k-variance-anonymity).

    For every kNN edge (i, j) the standard deviation of the min(m_i, m_j)-component estimate
    of x_i.x_j must be at least ``tau_ij = |x_i||x_j| - |x_i.x_j|`` (corrected Def. 3,
    docs/sketches.md#correction-the-k-variance-threshold-is-the-cauchy-schwarz-gap and
    docs/sketches.md#correction-the-variance-in-definition-3-is-the-dot-product-variance),
    i.e. ``min(m_i, m_j) <= M_ij = floor(V_ij / tau_ij^2)``. Records are processed outliers
    first (decreasing k-NN distance) and each gets the LARGEST admissible m
    (docs/sketches.md#correction-each-record-gets-the-largest-admissible-number-of-components); major
    iterations repeat until m stops changing. Records with m = 0 are suppressed.

    Parameters
    ----------
    k : int, default 5
        Anonymity level (neighbours per record); must be smaller than the number of records.
    m_max : int, default 256
        Cap on the components per record (the paper's initial "infinity").
    metric : {"cosine", "euclidean"}
        Distance of the kNN graph. M_ij does not depend on scaling, so normalisation only
        changes the graph.
    neighbourhood : {"symmetric", "knn"}
        See :func:`kvariance_components`.
    max_iter : int, default 20
    tol : float, default 0
        Stop when the total change of m in a major iteration is at most ``tol`` (0 = fixed point).
    knn_scope : {"global", "partition"}
        Exact kNN over the whole data (default) or within partitions (paper's linear-time
        variant; see the module docstring).
    approximate : bool
        Use :func:`ppdm_dask.neighbors.approximate_knn` (for very large data; measured recall).
    key : Key, int or bytes, optional
        Secret key: derives the public generator seed (one-way) and, with ``approximate``, the
        candidate search. Mutually exclusive with ``generator`` for the sketches. A fresh
        secret key drawn at :meth:`fit` when omitted (``key_``).
    generator : SketchGenerator, optional
    threshold : {"corrected", "paper"}
        ``"paper"`` uses the printed, dimensionally inconsistent threshold of Def. 3
        (docs/sketches.md#correction-the-k-variance-threshold-is-the-cauchy-schwarz-gap) —
        for reproducing the paper's figures only; its privacy guarantee is not scale-invariant,
        so it is a weak parameter: refused unless ``allow_weak=["threshold = corrected"]``
        (recorded in the manifest).
    keep_suppressed, keep_record_ids : bool, default False
        Write suppressed records as empty rows; publish a ``record_id`` column (see
        :class:`~.delta.DeltaAnonymizer`).
    allow_weak : bool or sequence of str
        Privacy floors explicitly overridden (``"k >= 2"``), recorded in the manifest.
    ledger : "default", Ledger, str or None
        As :class:`~.delta.DeltaAnonymizer`.

    Attributes
    ----------
    m_ : ndarray of int32
    graph_ : KNNGraph
    generator_ : SketchGenerator
    n_iter_ : int
    key_ : Key
        The key of every release of this fit (resolved at :meth:`fit`).
    report_ : dict
        ``n_records``, ``n_suppressed``, ``mean_components`` (kept records), ``k``, ``m_max``,
        ``n_iter``, ``changes``, ``converged``, ``violations`` (recounted; 0), ``knn_seconds``,
        ``sweep_seconds``, ``metric``, ``knn_scope``, ``approximate``, ``knn_plan`` (how the
        approximate search used memory; empty for the exact one).
    """

    def __init__(
        self,
        k: int = 5,
        m_max: int = 256,
        metric: str = "cosine",
        neighbourhood: str = "symmetric",
        max_iter: int = 20,
        tol: float = 0,
        knn_scope: str = "global",
        approximate: bool = False,
        key: KeyLike = None,
        generator: SketchGenerator | None = None,
        threshold: str = "corrected",
        keep_suppressed: bool = False,
        keep_record_ids: bool = False,
        allow_weak: Any = False,
        ledger: Any = "default",
    ) -> None:
        self.k = k
        self.m_max = m_max
        self.metric = metric
        self.neighbourhood = neighbourhood
        self.max_iter = max_iter
        self.tol = tol
        self.knn_scope = knn_scope
        self.approximate = approximate
        self.key = key
        self.generator = generator
        self.threshold = threshold
        self.keep_suppressed = keep_suppressed
        self.keep_record_ids = keep_record_ids
        self.allow_weak = allow_weak
        self.ledger = ledger

    def _parameters(self) -> dict[str, Any]:
        return {
            "k": int(self.k),
            "m_max": int(self.m_max),
            "metric": self.metric,
            "neighbourhood": self.neighbourhood,
            "knn_scope": self.knn_scope,
            "approximate": bool(self.approximate),
            "threshold": self.threshold,
            "max_iter": int(self.max_iter),
            "tol": self.tol,
            "keep_suppressed": bool(self.keep_suppressed),
            "keep_record_ids": bool(self.keep_record_ids),
        }

    _parameter_constraints = {name: KVARIANCE_CONSTRAINTS[name] for name in ("k", "m_max", "knn_scope")}

    def _validate(self, n_records: int) -> None:
        k = self.validate_params()["k"]
        if k >= n_records:
            raise InvalidParameter(f"k={k} must be smaller than the number of records ({n_records})", parameter="k")
        if self.approximate and self.knn_scope != "global":
            raise InvalidParameter(
                "the approximate k-NN search covers the whole data, not partitions",
                python="knn_scope='global'",
                fix="`knn_scope` global",
            )

    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> KVarianceAnonymizer:
        """Compute the kNN graph of the TransactionArray ``X`` and the numbers of components ``m_``.

        Raises
        ------
        WeakParameterError
            ``k < 2`` without ``allow_weak`` (checked before any pass over the data).
        """
        from ..data.digest import content_digest
        from ..neighbors import approximate_knn, knn
        from .release import SketchRelease

        tx = X
        self._validate(tx.n_transactions)
        # refuse before any pass over the data
        self._overrides = SketchRelease.overrides_of("k-variance", self._parameters(), self.allow_weak)
        self._resolve_key()
        # every random step (MinHash rounds, the generator) draws from the release's own
        # streams: key + identity, the input named by its content digest
        self._input_digest = content_digest(tx, client=client, progress=progress)
        skey = SketchRelease.streams_for(self.key_, "k-variance", self._parameters(), self._input_digest)
        self.generator_ = resolve_generator(None if self.generator is not None else skey, self.generator)
        t0 = time.perf_counter()
        if self.approximate:
            graph = approximate_knn(tx, self.k, metric=self.metric, key=skey, client=client, progress=progress)
        else:
            graph = knn(tx, self.k, metric=self.metric, scope=self.knn_scope, client=client, progress=progress)
        t1 = time.perf_counter()
        m, info = kvariance_components(
            graph,
            m_max=self.m_max,
            neighbourhood=self.neighbourhood,
            max_iter=self.max_iter,
            tol=self.tol,
            threshold=self.threshold,
        )
        t2 = time.perf_counter()
        self.graph_, self.m_, self.n_iter_ = graph, m, info["n_iter"]
        self._fitted_X = tx
        kept = m[m > 0]
        self.report_ = {
            "n_records": int(m.size),
            "n_suppressed": int(m.size - kept.size),
            "mean_components": float(kept.mean()) if kept.size else 0.0,
            "k": int(self.k),
            "m_max": int(self.m_max),
            "metric": self.metric,
            "knn_scope": self.knn_scope,
            "approximate": bool(self.approximate),
            "threshold": self.threshold,
            **info,
            "knn_seconds": t1 - t0,
            "knn_plan": graph.plan,
            "sweep_seconds": t2 - t1,
        }
        return self

    def release(self, *, client: Any = None, progress: bool = False) -> SketchRelease:
        """The release of the sketches of the fitted data with its ``m_`` (lazy); ``.data`` is
        the :class:`~.sketches.SketchArray` in input order. (``m_`` is of the fitted records,
        from their k-NN graph: it is no parameter for other data, hence no ``transform``.)"""
        from ..data.sources import source_of
        from .release import SketchRelease, sketch_figures

        check_is_fitted(self, "m_")
        tx = self._fitted_X
        out = sketch(tx, self.m_, generator=self.generator_, m_max=int(self.m_max))
        out.metadata.update(
            {
                "method": "k-variance",
                "k": int(self.k),
                "m_max": int(self.m_max),
                "metric": self.metric,
                "neighbourhood": self.neighbourhood,
                "knn_scope": self.knn_scope,
                "approximate": bool(self.approximate),
                "threshold": self.threshold,
            }
        )  # the number suppressed is the owner's (report_, the release's figures): never in metadata
        r = self.report_
        privacy = {
            "k": int(self.k),
            "violations": int(r["violations"]),
            "converged": bool(r["converged"]),
            "knn_scope": self.knn_scope,
            "approximate": bool(self.approximate),
        }
        release = SketchRelease(
            out,
            method="k-variance",
            parameters=self._parameters(),
            figures=sketch_figures(r, privacy),
            key=self.key_,
            source=source_of(tx),
            input_info={"rows": int(tx.n_transactions)},
            overrides=self._overrides,
            input_digest=self._input_digest,
            ledger=self.ledger,
            # each record's V_x and k-NN edges for the ledger (docs/sketches.md#repeated-releases)
            ledger_input=tx,
            ledger_graph=(self.graph_, self.threshold),
        )
        return release

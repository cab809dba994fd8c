"""Repeated sketch releases of one input composed in the ledger (docs/sketches.md#repeated-releases).

Each release of an input draws its own random vectors (the generator is derived from the key
and the release's identity), so an adversary holding two releases of record x has
``m_1 + m_2`` independent components of it: the attribute estimates average over all of them
and their variance falls to ``V_x / (m_1 + m_2)``. The ledger therefore stores, per record and
in the input's row order, what a later release needs to compose without the earlier data:

* column 0: m, the components the record got in this release (0 = suppressed);
* column 1: ``V_x = |x|^2 - max_t x_t^2`` (the δ rule's variance; 0 with at most one non-zero);
* k-variance releases only, ``k`` columns of the record's k-NN neighbours (global rows, -1 =
  none) and ``k`` columns of their bounds ``M_ij`` (not capped at ``m_max``, so that bounds
  above one release's cap still count when components of several releases add up).

The checks:

* composed δ-anonymity (when one of the composed releases is δ-anonymous): with δ the smallest
  δ of those releases (the weakest promise made), a record breaks the condition when
  ``sum_r m_r > floor(V_x / δ)``; the owner's figure ``delta_met`` is the δ the releases
  together still guarantee, ``min V_x / sum_r m_r`` over the records with a component;
* composed k-variance anonymity (when one of them is k-variance anonymous): the dot product
  x_i.x_j is estimated from ``min(m_i, m_j)`` components of each release, so an edge (i, j) of
  the k-NN graph of a k-variance release breaks when ``sum_r min(m_i^r, m_j^r) > M_ij``; a
  record breaks when one of its edges does.

Components of every sketch release of the input count in both checks, whatever its method:
a component is a component. The kernels are pure numpy; :func:`row_tasks` wires them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ledger.compose import Composition
from ..release.verdict import Check
from . import _kernels as K

__all__ = [
    "SketchComposition",
    "record_variance",
    "ledger_block",
    "edge_columns",
    "row_tasks",
    "compose_sketches",
    "delta_breaks",
    "kvariance_breaks",
    "DELTA_CHECK",
    "KVARIANCE_CHECK",
]

DELTA_CHECK = "composed δ-anonymity"
KVARIANCE_CHECK = "composed k-variance anonymity"
#: cap of the stored k-NN bounds: exact in float64, far above any number of components
_BOUND_CAP = 2**53


@dataclass
class SketchComposition(Composition):
    """A :class:`~ppdm_dask.ledger.Composition` that also keeps, for the owner, the composed
    number of components of every record (``composed_m``, input order; never written to a
    manifest nor to the ledger's JSON)."""

    composed_m: np.ndarray | None = None


# ---------------------------------------------------------------------- kernels (numpy only)
def record_variance(block: Any, weights: Any = None) -> np.ndarray:
    """Kernel: ``V_x = |x|^2 - max_t x_t^2`` of every row of a CSR block (0 for rows with at
    most one non-zero), float64; ``weights`` (the same sparsity) hold the values when given."""
    src = weights if weights is not None else block
    data = np.asarray(src.data, dtype=np.float64) if weights is not None else np.ones(src.indices.size)
    total, top = K.row_sq_stats(src.indptr, data)
    nnz = np.diff(np.asarray(src.indptr, dtype=np.int64))
    return np.where(nnz > 1, total - top, 0.0)


def ledger_block(m: np.ndarray, v: np.ndarray, edges: np.ndarray | None = None) -> np.ndarray:
    """Kernel: one block of the values the ledger stores (m, V_x[, neighbours, bounds])."""
    cols = [np.asarray(m, dtype=np.float64)[:, None], np.asarray(v, dtype=np.float64)[:, None]]
    if edges is not None:
        cols.append(np.asarray(edges, dtype=np.float64))
    return np.hstack(cols)


def delta_breaks(composed_m: np.ndarray, v: np.ndarray, delta: float) -> np.ndarray:
    """Records whose composed components exceed the δ condition: ``m > floor(V_x / δ)``
    (the tolerant floor of the δ rule, docs/sketches.md#clarification-tolerant-floor)."""
    limit = np.maximum(K.ifloor(np.asarray(v, dtype=np.float64) / float(delta)), 0)
    return np.asarray(composed_m, dtype=np.int64) > limit


def kvariance_breaks(ms: Sequence[np.ndarray], neighbours: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Records with a k-NN edge (i, j) whose components over all releases,
    ``sum_r min(m_i^r, m_j^r)``, exceed its bound ``M_ij``."""
    valid = neighbours >= 0
    j = np.where(valid, neighbours, 0)
    shared = np.zeros(neighbours.shape, dtype=np.int64)
    for m in ms:
        m = np.asarray(m, dtype=np.int64)
        shared += np.minimum(m[:, None], m[j])
    return (valid & (shared > bounds)).any(axis=1)


def edge_columns(graph: Any, threshold: str) -> np.ndarray:
    """The k-NN neighbours and their bounds ``M_ij`` (uncapped) of a k-variance release, one row
    per record: ``[neighbours..., bounds...]``."""
    from ._kvariance_kernels import edge_bounds

    indices = np.asarray(graph.indices, dtype=np.int64)
    bounds = edge_bounds(
        indices,
        np.asarray(graph.dots, np.float64),
        np.asarray(graph.cross, np.float64),
        np.asarray(graph.sqnorms, np.float64),
        _BOUND_CAP,
        threshold,
    )
    return np.hstack([indices.astype(np.float64), bounds.astype(np.float64)])


# ---------------------------------------------------------------------- wiring
def row_tasks(release: Any) -> list[Any] | None:
    """One lazy task per row chunk of ``release.data`` computing its :func:`ledger_block` in
    the input's row order, from the release's components and the input it was made from
    (None when the release does not hold its input, e.g. one read back from disk). A
    k-variance release also stores its k-NN edges (:func:`edge_columns`)."""
    import dask
    import dask.array as da

    tx = getattr(release, "_ledger_input", None)
    if tx is None or release.data is None:
        return None
    m = release.data.m
    meta = np.empty(0, np.float64)
    if tx.weights is not None:
        v = da.map_blocks(record_variance, tx.blocks, tx.weights, drop_axis=1, dtype=np.float64, meta=meta)
    else:
        v = tx.blocks.map_blocks(record_variance, None, drop_axis=1, dtype=np.float64, meta=meta)
    if v.chunks[0] != m.chunks[0]:
        v = v.rechunk((m.chunks[0],))
    knn = getattr(release, "_ledger_graph", None)  # (k-NN graph, threshold) of a k-variance release
    edges = edge_columns(*knn) if knn is not None else None
    starts = np.cumsum((0,) + tuple(m.chunks[0]))
    block = dask.delayed(ledger_block, pure=True)
    return [
        block(mb, vb, None if edges is None else edges[starts[i] : starts[i + 1]])
        for i, (mb, vb) in enumerate(zip(m.to_delayed().ravel(), v.to_delayed().ravel()))
    ]


def _values_now(release: Any) -> np.ndarray | None:
    """The release's :func:`ledger_block` values computed now (None without its input)."""
    from ..progress import compute

    tasks = row_tasks(release)
    if not tasks:
        return None
    (parts,) = compute(tasks, progress=False)
    return np.concatenate([np.asarray(p) for p in parts])


def _method(record: Any) -> tuple[str, dict[str, Any]]:
    return str(record.get("method") or ""), dict(record.get("parameters") or {})


def compose_sketches(release: Any, earlier: Sequence[Any], ledger: Any, rows: Any = None) -> SketchComposition:
    """The sketch release ``release`` composed with the ``earlier`` releases of its input.

    ``rows`` are this release's :func:`ledger_block` values once the sketches are written; before
    the work (``rows`` None) they are computed from the input when an earlier sketch release is
    recorded (one pass, no sketching), so that a release beyond a limit is refused before it is
    sketched. Every record's components are added up over the releases and checked."""
    comp = SketchComposition(list(earlier))
    sketches = [r for r in earlier if r.family == "sketch"]
    others = len(earlier) - len(sketches)
    methods = [_method(r) for r in sketches] + [(release.method, dict(release.parameters))]
    deltas = [float(p["delta"]) for meth, p in methods if meth == "delta" and p.get("delta") is not None]
    delta = min(deltas) if deltas else None
    n_kvar = sum(1 for meth, _ in methods if meth == "k-variance")
    comp.figures["releases"] = comp.releases
    comp.figures["sketch_releases"] = len(methods)
    if delta is not None:
        comp.figures["delta"] = delta
    # public: parameters of the releases only (never a count of the input's records)
    comp.public = {"sketch_releases": len(methods), "delta": delta, "k_variance_releases": n_kvar}
    if others:
        comp.notes.append(f"{others} release(s) of other families of this input are counted, not composed with sketches")
    if rows is None:
        # before the work: one pass over the input (no sketching) refuses a release that would
        # break a limit before it is sketched and written; checked again once written
        rows = _values_now(release) if sketches else None
        if rows is None:
            if sketches:
                comp.notes.append(
                    "each record's components over the releases are added up and checked once the "
                    "sketches are written, before the commit"
                )
            return comp

    current = np.asarray(rows, dtype=np.float64)
    if current.ndim != 2 or current.shape[1] < 2:
        comp.notes.append("this release's per-record values are not the sketch layout: nothing composed per record")
        return comp
    n = current.shape[0]
    tables: list[np.ndarray] = []
    for r in sketches:
        got = ledger.read_rows(r)
        if got is None or np.ndim(got) != 2 or got.shape[0] != n or got.shape[1] < 2:
            comp.notes.append(
                f"release {r.release_id or r.uid} holds no per-record values in the ledger: its components are not counted"
            )
            continue
        tables.append(np.asarray(got, dtype=np.float64))
    tables.append(current)
    ms = [t[:, 0].astype(np.int64) for t in tables]
    composed = np.sum(ms, axis=0) if n else np.zeros(0, np.int64)
    comp.composed_m = composed
    comp.figures["max_components_per_record"] = int(composed.max()) if n else 0
    v = current[:, 1]
    if delta is not None:
        bad = delta_breaks(composed, v, delta)
        count = int(bad.sum())
        comp.figures["records_breaking_delta_condition"] = count
        comp.figures["share_breaking_delta_condition"] = count / n if n else 0.0
        # the δ the releases together still guarantee: the smallest V_x / m over records with a component
        has = composed > 0
        comp.figures["delta_met"] = float(np.min(v[has] / composed[has])) if has.any() else None
        comp.checks.append(
            Check(
                DELTA_CHECK,
                count == 0,
                count,
                0,
                detail=f"records whose sketches of {len(tables)} release(s) together have more than floor(V_x/δ) components "
                f"(δ = {delta:g}, the smallest δ of the composed releases)",
            )
        )
    kvar = [t for t in tables if t.shape[1] > 2]
    if kvar:
        bad = np.zeros(n, dtype=bool)
        for t in kvar:
            k = (t.shape[1] - 2) // 2
            bad |= kvariance_breaks(ms, t[:, 2 : 2 + k].astype(np.int64), t[:, 2 + k : 2 + 2 * k])
        count = int(bad.sum())
        comp.figures["records_breaking_k_variance"] = count
        comp.figures["share_breaking_k_variance"] = count / n if n else 0.0
        comp.checks.append(
            Check(
                KVARIANCE_CHECK,
                count == 0,
                count,
                0,
                detail=f"records with a k-NN edge whose shared components over {len(tables)} release(s), "
                "sum of min(m_i, m_j), exceed the edge's bound M_ij",
            )
        )
    elif n_kvar:
        comp.notes.append("no k-NN graph of the k-variance release(s) in the ledger: k-variance not composed")
    return comp

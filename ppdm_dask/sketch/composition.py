"""Repeated sketch releases composed in the ledger by person (docs/sketches.md#repeated-releases).

Each release draws its own random vectors (the generator is derived from the key and the
release's identity), so an adversary holding two releases of a person's record x has
``m_1 + m_2`` independent components of it: the attribute estimates average over all of them
and their variance falls to ``V_x / (m_1 + m_2)``. The ledger therefore keeps, per person and
for every release, what a later release needs to compose without the earlier data
(:mod:`ppdm_dask.ledger.people`):

* ``m``: the most components any record of the person got in the release (0 = suppressed);
* ``v``: the smallest ``V_x = |x|^2 - max_t x_t^2`` of the person's records (the δ rule's
  variance; 0 with at most one non-zero) — the person's most exposed record, as if the same
  record came back in every release;
* k-variance releases only: the edges of the k-NN graph between persons, with their bounds
  ``M_ij`` (not capped at ``m_max``, so that bounds above one release's cap still count when
  components of several releases add up), in ``people/<record>/_edges.parquet``.

The checks, over every earlier sketch release that shares people with this one:

* composed δ-anonymity (when one of the composed releases is δ-anonymous): with δ the smallest
  δ of those releases (the weakest promise made), a person breaks the condition when
  ``sum_r m_r > floor(v / δ)``; the owner's figure ``delta_met`` is the δ the releases together
  still guarantee, ``min v / sum_r m_r`` over the people with a component;
* composed k-variance anonymity (when one of them is k-variance anonymous): the dot product
  x_i.x_j is estimated from ``min(m_i, m_j)`` components of each release, so an edge (i, j) of
  the k-NN graph of a k-variance release breaks when ``sum_r min(m_i^r, m_j^r) > M_ij``; a
  person breaks when one of their edges does. The edges are composed on the driver: a k-NN
  graph (k edges per record) is held there by the release that built it.

Components of every sketch release count in both checks, whatever its method: a component is a
component. The kernels are pure numpy; :func:`row_tasks` wires them.
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
    "bucket_components",
    "combine_components",
    "DELTA_CHECK",
    "KVARIANCE_CHECK",
]

DELTA_CHECK = "composed δ-anonymity"
KVARIANCE_CHECK = "composed k-variance anonymity"
#: cap of the stored k-NN bounds: exact in float64, far above any number of components
_BOUND_CAP = 2**53


@dataclass
class SketchComposition(Composition):
    """A :class:`~ppdm_dask.ledger.Composition` of sketch releases."""


# ---------------------------------------------------------------------- kernels (numpy only)
def record_variance(block: Any, weights: Any = None) -> np.ndarray:
    """Kernel: ``V_x = |x|^2 - max_t x_t^2`` of every row of a CSR block (0 for rows with at
    most one non-zero), float64; ``weights`` (the same sparsity) hold the values when given."""
    src = weights if weights is not None else block
    data = np.asarray(src.data, dtype=np.float64) if weights is not None else np.ones(src.indices.size)
    total, top = K.row_sq_stats(src.indptr, data)
    nnz = np.diff(np.asarray(src.indptr, dtype=np.int64))
    return np.where(nnz > 1, total - top, 0.0)


def ledger_block(m: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    """Kernel: one block of the values the ledger keeps per record (then per person): m, V_x."""
    return {"m": np.asarray(m, dtype=np.int64), "v": np.asarray(v, dtype=np.float64)}


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


# ---------------------------------------------------------------------- the join (kernels)
def bucket_components(
    own: dict[str, np.ndarray], theirs: list[dict[str, np.ndarray]], *, delta: float | None, weighted: bool
) -> dict[str, Any]:
    """Join kernel: for the people of this release in one bucket range, their components summed
    over this release and the earlier sketch releases (``theirs``), and their smallest ``v``;
    returns the bucket's counts (people, people breaking the δ condition, the largest composed
    m, the smallest ``v / m``)."""
    m = own["m"].astype(np.int64).copy()
    v = own["v"].astype(np.float64).copy()
    for t in theirs:
        _, ia, ib = np.intersect1d(own["person"], t["person"], assume_unique=True, return_indices=True)
        m[ia] += t["m"][ib].astype(np.int64)
        v[ia] = np.minimum(v[ia], t["v"][ib])
    w = own["records"].astype(np.int64) if weighted else np.ones(m.size, np.int64)
    out: dict[str, Any] = {
        "people": int(w.sum()),
        "max_m": int(m.max()) if m.size else 0,
        "breaking": int(w[delta_breaks(m, v, delta)].sum()) if delta is not None else 0,
        "delta_met": float(np.min(v[m > 0] / m[m > 0])) if (m > 0).any() else None,
    }
    return out


def combine_components(parts: list[dict[str, Any]]) -> dict[str, Any]:
    mets = [p["delta_met"] for p in parts if p["delta_met"] is not None]
    return {
        "people": sum(p["people"] for p in parts),
        "max_m": max(p["max_m"] for p in parts),
        "breaking": sum(p["breaking"] for p in parts),
        "delta_met": min(mets) if mets else None,
    }


def _components_kernel(
    own: dict[str, np.ndarray], theirs: list[dict[str, np.ndarray]], delta: float | None, weighted: bool
) -> dict[str, Any]:
    return bucket_components(own, theirs, delta=delta, weighted=weighted)


# ---------------------------------------------------------------------- wiring
def row_tasks(release: Any) -> list[Any] | None:
    """One lazy task per row chunk of ``release.data`` computing its :func:`ledger_block` in
    the input's row order, from the release's components and the input it was made from
    (None when the release does not hold its input, e.g. one read back from disk)."""
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
    block = dask.delayed(ledger_block, pure=True)
    return [block(mb, vb) for mb, vb in zip(m.to_delayed().ravel(), v.to_delayed().ravel())]


def _method(record: Any) -> tuple[str, dict[str, Any]]:
    return str(record.get("method") or ""), dict(record.get("parameters") or {})


def edges_table(release: Any, ledger: Any, compute_kwargs: dict[str, Any]) -> dict[str, np.ndarray] | None:
    """The k-NN edges of a k-variance release between persons: ``person``, ``neighbour`` (keyed
    pseudonyms) and ``bound`` (M_ij), one row per edge; None for a δ release."""
    from ..ledger.people import keyed_people
    from ..progress import compute

    knn = getattr(release, "_ledger_graph", None)
    people = getattr(release, "people", None)
    if knn is None or people is None:
        return None
    edges = edge_columns(*knn)
    k = edges.shape[1] // 2
    nbr, bounds = edges[:, :k].astype(np.int64), edges[:, k:]
    (blocks,) = compute(people.blocks, **{**compute_kwargs, "progress": False})
    ids = keyed_people(ledger, np.concatenate([np.asarray(b) for b in blocks]) if blocks else np.zeros((0, 2), np.uint64))
    valid = nbr >= 0
    rows = np.repeat(np.arange(nbr.shape[0]), k).reshape(nbr.shape)
    (m,) = compute(release.data.m, **{**compute_kwargs, "progress": False})
    m = np.asarray(m, dtype=np.int64)
    # the components of the edge's own two records in this release: the release alone keeps
    # min(m_i, m_j) <= M_ij per record, whatever other records of the same persons got
    shared = np.minimum(m[rows[valid]], m[nbr[valid]])
    return {"person": ids[rows[valid]], "neighbour": ids[nbr[valid]], "bound": bounds[valid], "own": shared}


def _all_people(ledger: Any, ref: Any) -> dict[str, np.ndarray]:
    from ..ledger.people import read_all

    return read_all(ledger, ref, ["m", "v"])


def _lookup(table: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """m of each pseudonym of ``ids`` in a release's people (0 where it does not hold them)."""
    pos = np.searchsorted(table["person"], ids)
    pos = np.minimum(pos, max(table["person"].size - 1, 0))
    hit = (table["person"][pos] == ids) if table["person"].size else np.zeros(ids.size, bool)
    return np.where(hit, table["m"][pos] if table["person"].size else 0, 0).astype(np.int64)


def _edge_breaks(ledger: Any, edge_sets: list[tuple[int, dict[str, np.ndarray]]], refs: list[Any]) -> int:
    """People with a k-NN edge (in any composed k-variance release) whose shared components over
    every composed release exceed its bound (driver side: the edges and the releases' m). An
    edge of release r counts its own records' components in r, and the person's most components
    in every other release."""
    tables = [_all_people(ledger, r) for r in refs]
    bad: set[int] = set()
    for r0, e in edge_sets:
        if not e["person"].size:
            continue
        shared = np.asarray(e["own"], np.int64).copy()
        for r, t in enumerate(tables):
            if r != r0:
                shared += np.minimum(_lookup(t, e["person"]), _lookup(t, e["neighbour"]))
        bad.update(np.unique(e["person"][shared > e["bound"]]).tolist())
    return len(bad)


def compose_sketches(release: Any, earlier: Sequence[Any], ledger: Any, people: Any = None) -> SketchComposition:
    """The sketch release ``release`` composed with the ``earlier`` releases that share its input
    or its people.

    Before the work (``people`` None): what will be composed. Once the sketches are written
    (``people``: a :class:`~ppdm_dask.ledger.PeopleJoin`), every person's components are added
    up over the sketch releases that hold them (:func:`bucket_components`) and checked; the
    k-NN edges of the k-variance releases are checked on the driver."""
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
        comp.notes.append(f"{others} release(s) of other families are counted, not composed with sketches")
    if people is None:
        if sketches:
            comp.notes.append(
                "each person's components over the releases are added up and checked once the sketches are "
                "written, before the commit"
            )
        return comp
    from functools import partial

    joined = [(r, ref) for r, ref, _ in people.earlier if r.family == "sketch"]
    weighted = people.mine.kind == "record"
    kernel = partial(_components_kernel, delta=delta, weighted=weighted)
    total = people.join(kernel, combine_components, columns=["m", "v"])
    unit = "records (each record its own person)" if weighted else "people"
    comp.figures["max_components_per_person"] = int(total["max_m"])
    if people.missing:
        comp.notes.append(
            f"{len(people.missing)} earlier release(s) of this input hold no people in the ledger: their components are not counted"
        )
    if not joined:
        # alone, the release is held to its own guarantee (recounted from its files); its people
        # and edges are kept for the releases that come after it
        if n_kvar:
            mine_edges = edges_table(release, people.ledger, people.compute_kwargs)
            if mine_edges is not None:
                from ..ledger.people import write_side_table

                write_side_table(people.ledger, people.mine.uid, "_edges", mine_edges)
        comp.notes.append("no earlier sketch release shares people with this one: nothing to compose")
        return comp
    if delta is not None:
        count = int(total["breaking"])
        n = int(total["people"])
        comp.figures["people_breaking_delta_condition"] = count
        comp.figures["share_breaking_delta_condition"] = count / n if n else 0.0
        comp.figures["delta_met"] = total["delta_met"]
        comp.checks.append(
            Check(
                DELTA_CHECK,
                count == 0,
                count,
                0,
                detail=f"{unit} whose sketches of {len(joined) + 1} release(s) together have more than floor(V_x/δ) "
                f"components (δ = {delta:g}, the smallest δ of the composed releases)",
            )
        )
    if n_kvar:
        mine_edges = edges_table(release, people.ledger, people.compute_kwargs)
        store = people.ledger
        from ..ledger.people import read_side_table, write_side_table

        if mine_edges is not None:
            write_side_table(store, people.mine.uid, "_edges", mine_edges)
        edge_sets = [mine_edges] + [read_side_table(store, ref.uid, "_edges") for _, ref in joined]
        refs = [people.mine] + [ref for _, ref in joined]
        if not any(e is not None for e in edge_sets):
            comp.notes.append("no k-NN graph of the k-variance release(s) in the ledger: k-variance not composed")
        else:
            count = _edge_breaks(store, [(r, e) for r, e in enumerate(edge_sets) if e is not None], refs)
            comp.figures["people_breaking_k_variance"] = count
            comp.checks.append(
                Check(
                    KVARIANCE_CHECK,
                    count == 0,
                    count,
                    0,
                    detail=f"{unit} with a k-NN edge whose shared components over {len(refs)} release(s), "
                    "sum of min(m_i, m_j), exceed the edge's bound M_ij",
                )
            )
    return comp

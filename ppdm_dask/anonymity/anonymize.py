"""``anonymize``: k-anonymity / l-diversity of a relational table by one of four methods.

* ``lattice`` — optimal full-domain generalisation with a suppression limit (exact minimum
  discernibility; :mod:`.lattice`),
* ``datafly`` — greedy full-domain generalisation (baseline),
* ``mondrian`` — strict multidimensional partitioning (LeFevre et al.; fast baseline),
* ``cluster`` — the clustering l-diverse partition of Dave & Chand §5 (corrected) with local recoding (:mod:`.cluster`).

The first three decide on the frequency set (one distributed group-by over the data) and publish
with one ``map_partitions`` pass, so they scale with the number of *distinct* QI tuples; the
released table is a lazy dask DataFrame with the input's partitions. Every figure of the summary
is computed from the decision; :meth:`AnonymizationResult.verify` recounts k and l from the
released table alone (a :class:`~ppdm_dask.release.Verdict`). The estimators of
:mod:`.estimators` wrap these functions and hand back a release to write.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..constraints import check
from ..data.hierarchy import Hierarchy
from ..errors import InfeasiblePrivacyError, InvalidParameter
from ..release import Verdict
from ._diversity import COUNT_CONSTRAINTS, closeness_for, resolve_t_kind, validate_closeness, validate_diversity
from .checks import class_counts, k_anonymity_check, l_diversity_check, t_closeness_check
from .frequency import FrequencySet, QIDomain, as_dask, frequency_set
from .metrics import average_class_size, discernibility, ncp, prosecutor_risk
from .names import METHODS


@dataclass
class AnonymizationResult:
    """A released table and its privacy and utility figures.

    Attributes
    ----------
    table : dask.dataframe.DataFrame
        Released table (QIs generalised, suppressed records with every QI ``'*'``, the sensitive
        attribute and the kept columns).
    method : str
    qi : list of str
    sensitive : str or None
    k : int
    l, kind, c : l-diversity parameters (``l=None``: none)
    max_suppression : float
    node : dict or None
        Chosen level per QI (full-domain methods).
    class_sizes : ndarray
        Sizes of the released (kept) equivalence classes.
    n_records, n_suppressed : int
    ncp_per_attribute : dict
        Mean NCP of each QI over all records (suppressed = 1).
    seconds : float
        Wall time of the decision (frequency set + search), without writing.
    search : dict
        Method-specific figures (lattice size, nodes evaluated, ...).
    t, t_kind : t-closeness parameters (``t=None``: none; ``t_kind`` resolved: ordered or equal)
    """

    table: dd.DataFrame
    method: str
    qi: list[str]
    sensitive: str | None
    k: int
    l: float | None
    kind: str
    c: float | None
    max_suppression: float
    node: dict[str, int] | None
    class_sizes: np.ndarray
    n_records: int
    n_suppressed: int
    ncp_per_attribute: dict[str, float]
    seconds: float
    search: dict[str, Any] = field(default_factory=dict)
    precision_: float | None = None
    #: rows of each partition of ``table`` when counted on the way (saves a pass when writing)
    partition_rows: list[int] | None = None
    t: float | None = None
    t_kind: str | None = None

    @property
    def dm(self) -> int:
        """Discernibility: sum |E|^2 over released classes + suppressed * N."""
        return discernibility(self.class_sizes, self.n_suppressed, self.n_records)

    @property
    def gcp(self) -> float:
        """Global certainty penalty: mean NCP over records and QIs (0 = original, 1 = all '*')."""
        return float(np.mean(list(self.ncp_per_attribute.values()))) if self.ncp_per_attribute else 0.0

    def summary(self) -> dict[str, Any]:
        """Privacy and utility figures as a flat dict (JSON-serialisable)."""
        sizes = self.class_sizes
        risk = prosecutor_risk(sizes)
        return {
            "method": self.method,
            "k": self.k,
            "l": self.l,
            "l_kind": self.kind if self.l is not None else None,
            "c": self.c,
            "t": self.t,
            "t_kind": self.t_kind if self.t is not None else None,
            "max_suppression": self.max_suppression,
            "node": self.node,
            "n_records": self.n_records,
            "n_suppressed": self.n_suppressed,
            "suppressed_fraction": self.n_suppressed / self.n_records if self.n_records else 0.0,
            "n_classes": int(sizes.size),
            "min_class_size": int(sizes.min()) if sizes.size else 0,
            "discernibility": self.dm,
            "avg_class_size": average_class_size(sizes, self.k) if sizes.size else None,
            "gcp": self.gcp,
            "ncp": self.ncp_per_attribute,
            "precision": self.precision_,
            "risk_max": risk["max"],
            "risk_average": risk["average"],
            "records_at_risk": risk["records_at_risk"],
            "seconds": self.seconds,
            **self.search,
        }

    def verify(self, *, client: Any = None, progress: bool = False) -> Verdict:
        """Recount k (and l, t) from the released table alone, independently of the anonymiser:
        one distributed group-by, checks ``"k-anonymity"`` (and ``"l-diversity"``, ``"t-closeness"``)."""
        with_l = self.l is not None and self.sensitive is not None
        with_t = self.t is not None and self.sensitive is not None
        counts = class_counts(self.table, self.qi, self.sensitive if with_l or with_t else None, client=client, progress=progress)
        checks = [k_anonymity_check(counts, self.qi, self.k)]
        if with_l:
            checks.append(l_diversity_check(counts, self.qi, self.sensitive, self.l, self.kind, self.c))
        if with_t:
            checks.append(t_closeness_check(counts, self.qi, self.sensitive, self.t, self.t_kind or "auto"))
        return Verdict(checks)


def _check_k(k: Any, n: int) -> int:
    """``k`` checked (:data:`COUNT_CONSTRAINTS`) and no larger than the ``n`` records."""
    k = check("k", k, COUNT_CONSTRAINTS["k"])
    if k > n:
        raise InfeasiblePrivacyError(f"k={k} is larger than the number of records ({n})")
    return int(k)


def _level_ncp(dom: QIDomain) -> list[np.ndarray]:
    """NCP of every node code at every level of a QI's hierarchy."""
    h = dom.hierarchy
    out = []
    for level, labels in enumerate(dom.labels):
        if level == 0:
            out.append(np.zeros(len(labels)))
        elif level == h.levels - 1:
            out.append(np.ones(len(labels)))
        else:
            out.append(np.array([ncp(h, lab, level) for lab in labels], dtype=float))
    return out


def _given_frequency(fs: FrequencySet, qi: Any, sensitive: str | None) -> FrequencySet:
    """A precomputed frequency set, checked to be of these columns."""
    qi = [qi] if isinstance(qi, str) else list(qi)
    if not isinstance(fs, FrequencySet) or list(fs.qi) != qi or fs.sensitive != sensitive:
        raise InvalidParameter(f"frequency= must be the frequency set of qi={qi}, sensitive={sensitive!r}")
    return fs


def _full_domain_labels(fs: FrequencySet, tuples: np.ndarray, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Labels and NCP of every tuple at a lattice node."""
    labels = np.empty(tuples.shape, dtype=object)
    pen = np.empty(tuples.shape, dtype=float)
    for j, d in enumerate(fs.domains):
        gen = d.maps[node[j]][tuples[:, j]]
        labels[:, j] = d.labels[node[j]][gen]
        pen[:, j] = _level_ncp(d)[node[j]][gen]
    return labels, pen


def _fmt(x: Any) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def _region_labels(
    fs: FrequencySet, tuples: np.ndarray, class_id: np.ndarray, *, use_hierarchy: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Local recoding of partition classes: numeric [min, max] ("lo-hi"), categorical lowest
    common ancestor in the hierarchy (or the sorted value set joined by '|' without one, or when
    ``use_hierarchy`` is False: the region is then exactly the class's values)."""
    n, q = tuples.shape
    labels = np.empty((n, q), dtype=object)
    pen = np.zeros((n, q))
    order = np.argsort(class_id, kind="stable")
    bounds = np.r_[0, np.flatnonzero(np.diff(class_id[order])) + 1, n]
    for j, d in enumerate(fs.domains):
        col = tuples[:, j]
        if d.numeric:
            vals = d.values.astype(float)
            span = float(vals.max() - vals.min()) if len(vals) else 0.0
        lvl_ncp = _level_ncp(d) if d.maps and use_hierarchy else None
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows = order[a:b]
            codes = np.unique(col[rows])
            if d.numeric:
                lo, hi = vals[codes].min(), vals[codes].max()
                labels[rows, j] = _fmt(lo) if lo == hi else f"{_fmt(lo)}-{_fmt(hi)}"
                pen[rows, j] = (hi - lo) / span if span > 0 else 0.0
            elif lvl_ncp is not None:
                level = next(lv for lv in range(d.height) if len(np.unique(d.maps[lv][codes])) == 1)
                node = d.maps[level][codes[0]]
                labels[rows, j] = d.labels[level][node]
                pen[rows, j] = lvl_ncp[level][node]
            else:
                labels[rows, j] = (
                    str(d.values[codes[0]]) if len(codes) == 1 else "|".join(sorted(str(d.values[c]) for c in codes))
                )
                leaves = d.hierarchy.n_leaves if d.hierarchy is not None and d.hierarchy.kind == "categorical" else len(d.values)
                pen[rows, j] = (len(codes) - 1) / (leaves - 1) if leaves > 1 else 0.0
    return labels, pen


def anonymize(
    df: Any,
    qi: str | Sequence[str],
    *,
    k: int,
    sensitive: str | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
    max_suppression: float = 0.0,
    method: str = "lattice",
    keep: Sequence[str] = (),
    client: Any = None,
    progress: bool = False,
    frequency: FrequencySet | None = None,
    t: float | None = None,
    t_kind: str = "auto",
) -> AnonymizationResult:
    """k-anonymise (and optionally l-diversify, t-close) a table.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        The original table (pyarrow string dtypes are fine).
    qi : str or sequence of str
        Quasi-identifiers.
    k : int
        Minimum equivalence class size.
    sensitive : str, optional
        Sensitive attribute (published as is; needed for l-diversity).
    hierarchies : mapping attr -> Hierarchy
        Generalisation hierarchies. ``lattice`` and ``datafly`` need one per QI; ``mondrian`` and
        ``cluster`` cut numeric QIs by value and use a categorical hierarchy (if given) to label a
        class by the lowest common ancestor of its values.
    l, kind, c : optional
        l-diversity: ``kind`` distinct, entropy or recursive (c, l).
    max_suppression : float
        Fraction of records that may be suppressed (full-domain methods); suppressed records keep
        their sensitive value and have every QI ``'*'``.
    method : {"lattice", "datafly", "mondrian", "cluster"}
    keep : sequence of str
        Further columns to publish unchanged (everything else is dropped).
    client : distributed.Client, optional
        Compute on this client.
    progress : bool
        Progress bar for the distributed passes.
    frequency : FrequencySet, optional
        The frequency set of ``df`` on ``qi`` (and ``sensitive``) with these hierarchies, when
        already computed (saves the pass over the data; full-domain and Mondrian methods).
    t : float, optional
        t-closeness: every released class's sensitive distribution is within Earth Mover's
        Distance t of the released records' (docs/anonymity.md#attribute-disclosure-and-t-closeness).
    t_kind : {"auto", "ordered", "equal"}
        The EMD's ground distance; ``auto``: ordered for a numeric sensitive column, else equal.

    Returns
    -------
    AnonymizationResult

    Raises
    ------
    InvalidParameter
        Unknown method/columns, a QI without a required hierarchy, bad parameters.
    InfeasiblePrivacyError
        k larger than the table, or no solution within the suppression limit.
    DataFormatError
        Missing values, values outside a hierarchy.
    """
    if method not in METHODS:
        raise InvalidParameter(f"method must be one of {METHODS}, got {method!r}")
    l, kind, c = validate_diversity(l, kind, c)
    t, t_kind = validate_closeness(t, t_kind)
    if l is not None and sensitive is None:
        raise InvalidParameter("l-diversity needs a sensitive attribute (sensitive=...)")
    if t is not None and sensitive is None:
        raise InvalidParameter("t-closeness needs a sensitive attribute (sensitive=...)", fix="`sensitive` COL")
    if method == "cluster":
        return _cluster(
            df,
            qi,
            k=k,
            sensitive=sensitive,
            hierarchies=hierarchies,
            l=l,
            kind=kind,
            c=c,
            keep=keep,
            client=client,
            t=t,
            t_kind=t_kind,
        )
    start = time.perf_counter()
    ddf = as_dask(df)
    if frequency is None:
        fs = frequency_set(
            ddf,
            qi,
            sensitive=sensitive,
            hierarchies=hierarchies,
            require_hierarchies=method in ("lattice", "datafly"),
            client=client,
            progress=progress,
        )
    else:
        fs = _given_frequency(frequency, qi, sensitive)
        if method in ("lattice", "datafly"):
            from .frequency import check_hierarchies

            check_hierarchies(fs.qi, {d.name: d.hierarchy for d in fs.domains if d.hierarchy is not None}, required=True)
    n = fs.n_records
    k = _check_k(k, n)
    tuples, weights, scounts, row_to_tuple = fs.tuples()
    closeness = _closeness(ddf, sensitive, t, t_kind, fs, scounts)
    search: dict[str, Any] = {"n_distinct_tuples": int(len(tuples))}
    node_dict = None
    precision = None
    if method in ("lattice", "datafly"):
        from .lattice import datafly, lattice_search

        fn = lattice_search if method == "lattice" else datafly
        res = fn(fs, k, l=l, kind=kind, c=c, max_suppression=max_suppression, closeness=closeness)
        supp_tuple = np.zeros(len(tuples), dtype=bool)
        supp_tuple[row_to_tuple] = res.suppressed_classes[res.inverse]
        labels, pen = _full_domain_labels(fs, tuples, res.node)
        node_dict = {a: int(v) for a, v in zip(fs.qi, res.node)}
        search.update({"lattice_nodes": res.n_nodes, "nodes_evaluated": res.n_evaluated})
        heights = np.array([d.height - 1 for d in fs.domains], dtype=float)
        frac = np.where(heights > 0, np.array(res.node) / np.where(heights > 0, heights, 1), 0.0)
        w_kept = weights[~supp_tuple].sum()
        precision = float(1.0 - (frac.mean() * w_kept + 1.0 * (n - w_kept)) / n)
    else:
        if max_suppression:
            raise InvalidParameter("max_suppression applies to the full-domain methods (lattice, datafly) only")
        from .mondrian import mondrian_partition

        cat = [not d.numeric for d in fs.domains]
        class_id = mondrian_partition(
            fs.numeric_matrix(tuples),
            weights,
            k,
            categorical=cat,
            sensitive_counts=scounts if sensitive else None,
            l=l,
            kind=kind,
            c=c,
            closeness=closeness,
        )
        supp_tuple = np.zeros(len(tuples), dtype=bool)
        labels, pen = _region_labels(fs, tuples, np.asarray(class_id))
        search["n_partitions"] = int(len(np.unique(class_id)))
    return _finish(
        ddf,
        fs,
        tuples,
        weights,
        labels,
        pen,
        supp_tuple,
        keep=keep,
        method=method,
        k=k,
        l=l,
        kind=kind,
        c=c,
        max_suppression=max_suppression,
        node=node_dict,
        start=start,
        search=search,
        precision=precision,
        closeness=closeness,
    )


def _closeness(ddf: Any, sensitive: str | None, t: float | None, t_kind: str, fs: FrequencySet, scounts: np.ndarray) -> Any:
    """The t-closeness requirement over the frequency set's sensitive values (None without t):
    the table's counts are the column sums of the per-tuple counts."""
    if t is None:
        return None
    return closeness_for(t, resolve_t_kind(t_kind, ddf[sensitive].dtype), fs.sensitive_values, scounts.sum(axis=0))


def _finish(
    ddf,
    fs,
    tuples,
    weights,
    labels,
    pen,
    supp_tuple,
    *,
    keep,
    method,
    k,
    l,
    kind,
    c,
    max_suppression,
    node,
    start,
    search,
    precision=None,
    closeness=None,
) -> AnonymizationResult:
    """Publish per-tuple labels and gather the figures of the released classes."""
    from .publish import publish

    table = publish(ddf, fs, tuples, labels, supp_tuple, keep=keep)
    n = fs.n_records
    # released classes: partitions whose recoded labels coincide are one class to a reader
    kept_sizes = _sizes_from_tuples(tuples, weights, supp_tuple, labels)
    n_sup = int(weights[supp_tuple].sum())
    pen = pen.copy()
    pen[supp_tuple] = 1.0
    ncp_attr = {a: float((pen[:, j] * weights).sum() / n) for j, a in enumerate(fs.qi)}
    return AnonymizationResult(
        table=table,
        method=method,
        qi=list(fs.qi),
        sensitive=fs.sensitive,
        k=k,
        l=l,
        kind=kind,
        c=c,
        max_suppression=float(max_suppression),
        node=node,
        class_sizes=kept_sizes,
        n_records=n,
        n_suppressed=n_sup,
        ncp_per_attribute=ncp_attr,
        seconds=time.perf_counter() - start,
        search=search,
        precision_=precision,
        partition_rows=fs.partition_rows,
        t=closeness.t if closeness is not None else None,
        t_kind=closeness.kind if closeness is not None else None,
    )


def _sizes_from_tuples(tuples: np.ndarray, weights: np.ndarray, suppressed: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Sizes of the released classes: kept tuples grouped by their published labels."""
    keep = ~suppressed
    if not keep.any():
        return np.zeros(0, dtype=np.int64)
    lab = labels[keep]
    _, inv = np.unique(np.array(["\x1f".join(map(str, r)) for r in lab], dtype=object), return_inverse=True)
    return np.bincount(inv.reshape(-1), weights=weights[keep]).astype(np.int64)


def _cluster(
    df: Any,
    qi: Any,
    *,
    k: int,
    sensitive: str | None,
    hierarchies: Any,
    l: float | None,
    kind: str,
    c: float | None,
    keep: Sequence[str],
    client: Any,
    t: float | None = None,
    t_kind: str = "auto",
) -> AnonymizationResult:
    from .cluster import cluster_l_diverse
    from .metrics import published_ncp

    if sensitive is None:
        raise InvalidParameter("method='cluster' needs a sensitive attribute (the algorithm seeds clusters by it)")
    start = time.perf_counter()
    qi = [qi] if isinstance(qi, str) else list(qi)
    ddf = as_dask(df)
    numeric = [
        a
        for a in qi
        if a in ddf.columns and pd.api.types.is_numeric_dtype(ddf[a].dtype) and not pd.api.types.is_bool_dtype(ddf[a].dtype)
    ]
    # numeric QIs are cut by value (published as ranges); hierarchies label categorical clusters
    cat_h = {a: h for a, h in dict(hierarchies or {}).items() if a in qi and a not in numeric}
    res = cluster_l_diverse(
        df,
        qi,
        sensitive,
        k,
        l if l is not None else 1,
        hierarchies=cat_h,
        kind=kind,
        c=c,
        client=client,
        keep=list(keep),
        t=t,
        t_kind=t_kind,
    )
    table = as_dask(res.table)
    # released classes (clusters whose recoded labels coincide are one class to a reader)
    from .checks import equivalence_classes

    sizes = equivalence_classes(table, qi)["count"].to_numpy(dtype=np.int64)
    lo_hi = [ddf[a].min() for a in numeric] + [ddf[a].max() for a in numeric]
    others = [a for a in qi if a not in numeric and a not in cat_h]
    nv = [ddf[a].nunique() for a in others]
    from ..progress import compute

    got = compute(*lo_hi, *nv, client=client, progress=False) if (lo_hi or nv) else ()
    ranges = {a: float(got[len(numeric) + i]) - float(got[i]) for i, a in enumerate(numeric)}
    n_values = {a: int(v) for a, v in zip(others, got[2 * len(numeric) :])}
    ncp_attr = published_ncp(res.table, qi, hierarchies=cat_h, value_ranges=ranges, n_values=n_values)
    return AnonymizationResult(
        table=table,
        method="cluster",
        qi=qi,
        sensitive=sensitive,
        k=int(k),
        l=l,
        kind=kind,
        c=c,
        max_suppression=0.0,
        node=None,
        class_sizes=sizes,
        n_records=int(sizes.sum()),
        n_suppressed=0,
        ncp_per_attribute=ncp_attr,
        seconds=time.perf_counter() - start,
        search={"n_clusters": int(res.n_clusters), "n_repaired_merges": int(res.n_repaired_merges)},
        t=res.params.get("t"),
        t_kind=res.params.get("t_kind"),
    )


@dataclass
class AccessControlResult:
    """Release tuned for a permission workload, with the per-permission / per-role reports.

    ``release`` publishes categorical QIs as the value sets of the classes (the regions the
    imprecision is computed on), numeric QIs as ranges; ``report`` is that release's
    :class:`~ppdm_dask.anonymity.access_control.AccessReport`, ``baseline`` the same workload
    on plain Mondrian with the same k / l.
    """

    release: AnonymizationResult
    report: Any
    baseline: Any
    permissions: list
    regions: Any
    schema: Any

    def query(self, where: Mapping[str, Any]) -> dict[str, Any]:
        """Evaluate a selection predicate on the release: the overlapping classes (indices and
        their region labels) and how many tuples the release returns for it."""
        from .access_control import overlapping_classes, parse_query

        q = parse_query(where, self.schema)
        hit = np.flatnonzero(overlapping_classes(self.regions, q, schema=self.schema))
        return {"classes": hit.tolist(), "returned": int(self.regions.sizes[hit].sum())}


def anonymize_for_permissions(
    df: Any,
    qi: str | Sequence[str],
    permissions: Any,
    *,
    k: int,
    sensitive: str | None = None,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    keep: Sequence[str] = (),
    client: Any = None,
    progress: bool = False,
    frequency: FrequencySet | None = None,
    t: float | None = None,
    t_kind: str = "auto",
) -> AccessControlResult:
    """Accuracy-constrained privacy-preserving access control (Pervaiz et al., TKDE 2014).

    k-anonymise (and l-diversify) ``df`` with the top-down heuristic that picks Mondrian cuts to
    meet the imprecision bounds of as many permissions as possible
    (:class:`~ppdm_dask.anonymity.access_control.AccuracyConstrainedAnonymizer`), on the frequency
    set; report imprecision per permission and per role, beside plain Mondrian.

    Parameters
    ----------
    permissions : list of dict or {"permissions": [...]}
        ``{"role": str, "bound": tuples, "where": {attr: [lo, hi] | value | [values]}, "name": str}``
        (categorical values by their labels), or Permission objects.
    Other parameters as :func:`anonymize` (``frequency``: a precomputed frequency set; ``t``,
    ``t_kind``: t-closeness of every class, plain Mondrian's baseline included).

    Returns
    -------
    AccessControlResult
    """
    from .access_control import AccuracyConstrainedAnonymizer, Permission, QISchema, evaluate_permissions, parse_permissions
    from .mondrian import class_regions, mondrian_partition

    l, kind, c = validate_diversity(l, kind, c)
    t, t_kind = validate_closeness(t, t_kind)
    if l is not None and sensitive is None:
        raise InvalidParameter("l-diversity needs a sensitive attribute (sensitive=...)")
    if t is not None and sensitive is None:
        raise InvalidParameter("t-closeness needs a sensitive attribute (sensitive=...)", fix="`sensitive` COL")
    start = time.perf_counter()
    ddf = as_dask(df)
    if frequency is None:
        fs = frequency_set(ddf, qi, sensitive=sensitive, hierarchies=hierarchies, client=client, progress=progress)
    else:
        fs = _given_frequency(frequency, qi, sensitive)
    k = _check_k(k, fs.n_records)
    tuples, weights, scounts, _ = fs.tuples()
    closeness = _closeness(ddf, sensitive, t, t_kind, fs, scounts)
    X = fs.numeric_matrix(tuples)
    cat = [not d.numeric for d in fs.domains]
    schema = QISchema(
        columns=tuple(fs.qi),
        categorical=tuple(cat),
        categories={d.name: tuple(str(v) for v in d.values) for d in fs.domains if not d.numeric},
    )
    if isinstance(permissions, (list, tuple)) and permissions and all(isinstance(p, Permission) for p in permissions):
        perms = list(permissions)
    else:
        perms = parse_permissions(permissions, schema)
    sc = scounts if sensitive else None
    acm = AccuracyConstrainedAnonymizer(k, perms, l=l, kind=kind, c=c, closeness=closeness).fit(
        X, weights, sensitive_counts=sc, schema=schema
    )
    base_id = mondrian_partition(X, weights, k, categorical=cat, sensitive_counts=sc, l=l, kind=kind, c=c, closeness=closeness)
    baseline = evaluate_permissions(X, weights, base_id, perms, schema=schema, regions=class_regions(X, weights, base_id, cat))
    labels, pen = _region_labels(fs, tuples, np.asarray(acm.class_id_), use_hierarchy=False)
    search = {
        "n_distinct_tuples": int(len(tuples)),
        "n_partitions": int(acm.n_classes_),
        "permissions_satisfied": int(acm.report_.n_satisfied),
        "permissions": int(acm.report_.n_permissions),
        "total_imprecision": int(acm.report_.total_imprecision),
        "mondrian_permissions_satisfied": int(baseline.n_satisfied),
        "mondrian_total_imprecision": int(baseline.total_imprecision),
    }
    release = _finish(
        ddf,
        fs,
        tuples,
        weights,
        labels,
        pen,
        np.zeros(len(tuples), dtype=bool),
        keep=keep,
        method="access-control",
        k=k,
        l=l,
        kind=kind,
        c=c,
        max_suppression=0.0,
        node=None,
        start=start,
        search=search,
        closeness=closeness,
    )
    return AccessControlResult(
        release=release, report=acm.report_, baseline=baseline, permissions=perms, regions=acm.regions_, schema=schema
    )

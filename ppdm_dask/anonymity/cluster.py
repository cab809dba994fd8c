"""Clustering l-diverse partition (Dave & Chand §5, corrected: docs/anonymity.md#the-clustering-l-diverse-partition)
on pandas or Dask.

Sequential algorithm (pandas input)
-----------------------------------
1. Sort by the QI tuple in the order of ``qi``: numeric QIs ascending, categorical QIs by
   category order (the categories of a ``pandas.CategoricalDtype``, otherwise the sorted distinct
   values), ties by the original row index.
2. ``K = floor(n / k)`` clusters, seeded round-robin over the sensitive values (descending
   frequency, ties by value order), then every other record joins the nearest cluster that is
   smaller than k or lacks its sensitive value while having fewer than l distinct values
   (distinct count, as in the corrected loop condition), else the nearest cluster.
3. Repair-L: while a cluster is smaller than k or not l-diverse in the chosen ``kind`` or, with
   ``t``, not t-close to the whole table (decided by
   :func:`~ppdm_dask.anonymity._diversity.diverse_mask`), merge the smallest violating cluster
   into its nearest neighbour (ties: lowest index). One cluster of everything is always t-close,
   so t alone never makes the partition infeasible.
4. Publish per cluster: numeric QI -> ``"lo-hi"`` of [min, max] (``"v"`` if equal), categorical
   QI -> lowest common ancestor in its :class:`Hierarchy` or, without a hierarchy, the sorted
   distinct values joined by ``"|"``.

Centroid/distance definitions and their exact float64 evaluation are in
:mod:`ppdm_dask.anonymity._cluster_kernels`.

Dask input (partition-then-merge, docs/anonymity.md#distributed-execution-of-the-clustering)
--------------------------------------------------------------------------------------------
One pass collects row counts, missing values and the distinct values of every QI and of the
sensitive column. Each partition is encoded (codes, global row id) and the table is sorted
globally by a single int64 mixed-radix key of the QI codes/ranks plus the row id (falling back
to a multi-column sort when the key would overflow int64). The sorted rows are cut into ``m``
consecutive chunks of equal size (+-1 row), ``m`` = the input's ``npartitions`` or
``ceil(n / rows_per_partition)``, capped at ``floor(n / k)`` so that every chunk holds at least
k rows (a chunk with ``0 < n_p < k`` could only arise without this cap; the kernel would make it
one under-sized cluster for Repair-L). Each chunk runs the greedy with ``K_p = floor(n_p / k)``
(its own seeds and sensitive-value frequencies; ranges and codes are global); the driver
runs Repair-L over the summaries of all clusters (chunk order, then local index). With one
chunk the result equals the sequential algorithm exactly. With several, clusters do not span
chunks, so the partition can differ from (and be coarser than) the sequential one; k and l
are still guaranteed by Repair-L.

Memory on the driver: the per-row cluster labels (8 bytes per row, e.g. 240 KB for Adult's
30,162 rows), the distinct values of every QI (for a continuous numeric QI up to one float per
row) and the cluster summaries, ``~ K (4 D + 8 n_sens + 24 q_num)`` bytes for ``K`` clusters
and ``D`` distinct categorical values. The published table stays a lazy Dask DataFrame built
from the input partitions and the labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data.hierarchy import Hierarchy
from ..errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter
from ._cluster_kernels import Clusters, compact, distance_weights, greedy_clusters, repair_l
from ._diversity import closeness_for, diverse_mask, resolve_t_kind, validate_closeness, validate_diversity
from .metrics import discernibility

__all__ = ["ClusterResult", "cluster_l_diverse"]

_KEY_LIMIT = 2**62  # mixed-radix sort key must fit int64 (with headroom)


# --------------------------------------------------------------------------- result
@dataclass
class ClusterResult:
    """Result of :func:`cluster_l_diverse`.

    Attributes
    ----------
    table : pandas.DataFrame or dask.dataframe.DataFrame
        Published table: generalised QIs (strings), the sensitive column, ``keep`` columns.
        Same index and row order as the input.
    labels : numpy.ndarray of int64
        Cluster id (0..n_clusters-1) of every input row, in input order.
    n_clusters : int
        Number of clusters after Repair-L.
    n_repaired_merges : int
        Merges done by Repair-L.
    cluster_sizes : numpy.ndarray of int64
        Size of each cluster.
    sensitive_counts : numpy.ndarray of int64, shape (n_clusters, n_sensitive_values)
        Sensitive-value counts per cluster (values in sorted order).
    params : dict
        ``k``, ``l``, ``kind``, ``c``, ``n_rows``, ``n_partitions`` (greedy chunks).
    """

    table: Any
    labels: np.ndarray
    n_clusters: int
    n_repaired_merges: int
    cluster_sizes: np.ndarray
    sensitive_counts: np.ndarray
    params: dict = field(default_factory=dict)

    def to_pandas(self) -> pd.DataFrame:
        """The published table as a pandas DataFrame (computed if it is a Dask DataFrame)."""
        return self.table.compute() if hasattr(self.table, "compute") else self.table

    def summary(self) -> dict:
        """Privacy and utility figures of the clusters.

        Returns
        -------
        dict
            ``n_clusters``, ``n_repaired_merges``, ``k_achieved`` (min cluster size),
            ``l_achieved`` (distinct: fewest distinct sensitive values in a cluster; entropy:
            ``exp`` of the smallest cluster entropy; recursive: the largest
            ``r_1 / (r_l + ... + r_m)``, the clusters are (c, l)-diverse iff it is < c),
            ``discernibility`` (sum of squared cluster sizes), plus ``params``.
        """
        sizes, cnt = self.cluster_sizes, self.sensitive_counts
        kind, l = self.params.get("kind", "distinct"), self.params.get("l")
        if kind == "distinct":
            l_ach: float = int((cnt > 0).sum(axis=1).min())
        elif kind == "entropy":
            f = cnt / cnt.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.where(f > 0, f * np.log(np.where(f > 0, f, 1.0)), 0.0).sum(axis=1)
            l_ach = float(np.exp(h.min()))
        else:
            li = int(l)
            s = -np.sort(-cnt, axis=1)
            tail = s[:, li - 1 :].sum(axis=1) if s.shape[1] >= li else np.zeros(len(s))
            with np.errstate(divide="ignore"):
                l_ach = float(np.where(tail > 0, s[:, 0] / np.where(tail > 0, tail, 1), np.inf).max())
        return {
            "n_clusters": self.n_clusters,
            "n_repaired_merges": self.n_repaired_merges,
            "k_achieved": int(sizes.min()),
            "l_achieved": l_ach,
            "discernibility": discernibility(sizes),
            **self.params,
        }


# --------------------------------------------------------------------------- encoding
@dataclass
class _Encoder:
    """Global codes of the QIs and the sensitive column (picklable; shipped to every task)."""

    qi: list[str]
    num: list[str]
    cat: list[str]
    sensitive: str
    cat_domains: list[np.ndarray]
    sens_domain: np.ndarray
    num_domains: list[np.ndarray] | None  # sorted distinct numeric values (for the sort key)
    strides: list[int] | None  # mixed-radix key strides per QI (qi order), None: no key

    @property
    def offs(self) -> np.ndarray:
        return np.r_[0, np.cumsum([len(d) for d in self.cat_domains])].astype(np.int64)

    def sort_columns(self) -> list[str]:
        """Encoded columns in QI order (the multi-column sort keys)."""
        return [f"_x{self.num.index(c)}" if c in self.num else f"_c{self.cat.index(c)}" for c in self.qi]

    def encode(self, pdf: pd.DataFrame, rid0: int) -> pd.DataFrame:
        out: dict[str, np.ndarray] = {"_r": np.arange(rid0, rid0 + len(pdf), dtype=np.int64)}
        for j, c in enumerate(self.num):
            out[f"_x{j}"] = pdf[c].to_numpy(dtype=np.float64, na_value=np.nan)
        for j, c in enumerate(self.cat):
            out[f"_c{j}"] = _codes(pdf[c], self.cat_domains[j])
        out["_s"] = _codes(pdf[self.sensitive], self.sens_domain)
        if self.strides is not None:
            key = np.zeros(len(pdf), dtype=np.int64)
            for c, stride in zip(self.qi, self.strides):
                if c in self.num:
                    j = self.num.index(c)
                    rank = np.searchsorted(self.num_domains[j], out[f"_x{j}"])
                else:
                    rank = out[f"_c{self.cat.index(c)}"]
                key += rank.astype(np.int64) * np.int64(stride)
            out["_k"] = key
        return pd.DataFrame(out)


def _codes(s: pd.Series, domain: np.ndarray) -> np.ndarray:
    idx = pd.Index(domain, dtype=object).get_indexer(s.to_numpy(dtype=object))
    if (idx < 0).any():  # only possible if the data changed between passes
        raise DataFormatError(f"column {s.name!r} has values outside the collected domain")
    return idx.astype(np.int64)


def _ordered(values: Any, dtype: Any) -> np.ndarray:
    """Distinct values in category order (categorical dtype) or sorted order."""
    vals = list(pd.unique(np.asarray(values, dtype=object)))
    pos = (
        {v: i for i, v in enumerate(dtype.categories)}
        if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is not None
        else {}
    )
    if vals and all(v in pos for v in vals):  # known categories (not dask's placeholder)
        vals.sort(key=lambda v: pos[v])
    else:
        try:
            vals.sort()
        except TypeError:  # mixed types: a stable, documented order
            vals.sort(key=lambda v: (type(v).__name__, str(v)))
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out


def _is_numeric(dtype: Any) -> bool:
    return (
        pd.api.types.is_numeric_dtype(dtype)
        and not pd.api.types.is_bool_dtype(dtype)
        and not isinstance(dtype, pd.CategoricalDtype)
    )


# --------------------------------------------------------------------------- chunk task
def _chunk_task(
    parts: list[pd.DataFrame],
    slices: list[tuple[int, int]],
    n_num: int,
    n_cat: int,
    offs: np.ndarray,
    n_sens: int,
    w: np.ndarray,
    W: float,
    k: int,
    l: float,
) -> tuple:
    """Greedy on one chunk of the globally sorted encoded table (runs on a worker)."""
    frames = [p.iloc[a:b] for p, (a, b) in zip(parts, slices)]
    df = pd.concat(frames) if len(frames) != 1 else frames[0]
    X = np.column_stack([df[f"_x{j}"].to_numpy(np.float64) for j in range(n_num)]) if n_num else np.zeros((len(df), 0))
    C = np.column_stack([df[f"_c{j}"].to_numpy(np.int64) for j in range(n_cat)]) if n_cat else np.zeros((len(df), 0), np.int64)
    labels, cl = greedy_clusters(X, C, df["_s"].to_numpy(np.int64), offs, n_sens, w, W, k, l)
    return df["_r"].to_numpy(np.int64), labels, cl


# --------------------------------------------------------------------------- publishing
def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _publish_strings(enc: _Encoder, cl: Clusters, hierarchies: Mapping[str, Hierarchy]) -> pd.DataFrame:
    """Generalised QI strings of every cluster (one row per cluster, columns = QIs)."""
    out: dict[str, np.ndarray] = {}
    for j, c in enumerate(enc.num):
        out[c] = np.array([_fmt(a) if a == b else f"{_fmt(a)}-{_fmt(b)}" for a, b in zip(cl.mins[j], cl.maxs[j])], dtype=object)
    offs = enc.offs
    for j, c in enumerate(enc.cat):
        dom = enc.cat_domains[j]
        present = cl.cat[offs[j] : offs[j + 1]].T > 0  # (clusters, values)
        h = hierarchies.get(c)
        if h is None:
            names = np.array([str(v) for v in dom], dtype=object)
            memo: dict[bytes, str] = {}
            col = []
            for row in present:
                key = np.packbits(row).tobytes()
                if key not in memo:
                    memo[key] = "|".join(names[row])
                col.append(memo[key])
            out[c] = np.array(col, dtype=object)
            continue
        # lowest level at which all present values share one generalised label
        label = np.empty(cl.n, dtype=object)
        todo = np.ones(cl.n, dtype=bool)
        big = np.iinfo(np.int64).max
        for level in range(h.levels):
            gen = h.generalize(pd.Series(dom, dtype=object), level).to_numpy(dtype=object)
            ids, uniq = pd.factorize(pd.Series([str(g) for g in gen], dtype=object))
            mn = np.where(present, ids[None, :], big).min(axis=1)
            mx = np.where(present, ids[None, :], -1).max(axis=1)
            hit = todo & (mn == mx)
            label[hit] = np.asarray(uniq, dtype=object)[mn[hit]]
            todo &= ~hit
            if not todo.any():
                break
        out[c] = label
    return pd.DataFrame(out)


def _publish_part(pdf: pd.DataFrame, labels: np.ndarray, lookup: pd.DataFrame, columns: list[str], qi: list[str]) -> pd.DataFrame:
    out = pdf[columns].copy()
    for c in qi:
        out[c] = pd.Series(lookup[c].to_numpy(dtype=object)[labels], index=pdf.index, dtype=str)
    return out


# --------------------------------------------------------------------------- validation
def _check_args(
    df: Any, qi: Any, sensitive: Any, k: Any, l: Any, kind: str, c: Any, keep: Any, hierarchies: Any, rows_per_partition: Any
) -> tuple:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameter(f"k must be an integer >= 1, got {k!r}")
    l, kind, c = validate_diversity(l, kind, c)
    qi = [qi] if isinstance(qi, str) else list(qi)
    if not qi:
        raise InvalidParameter("qi must name at least one column")
    if len(set(qi)) != len(qi):
        raise InvalidParameter(f"qi has duplicate columns: {qi}")
    if not isinstance(sensitive, str):
        raise InvalidParameter(f"sensitive must be one column name, got {sensitive!r}")
    keep = [] if keep is None else ([keep] if isinstance(keep, str) else list(keep))
    cols = list(df.columns)
    unknown = [x for x in [*qi, sensitive, *keep] if x not in cols]
    if unknown:
        raise InvalidParameter(f"unknown column(s) {unknown}; the table has {cols}")
    if sensitive in qi:
        raise InvalidParameter(f"sensitive attribute {sensitive!r} is also a quasi-identifier")
    dup = [x for x in keep if x in qi or x == sensitive]
    if dup:
        raise InvalidParameter(f"keep lists QI or sensitive column(s) {dup}; they are always published")
    hierarchies = dict(hierarchies or {})
    for name, h in hierarchies.items():
        if name not in qi:
            raise InvalidParameter(f"hierarchy given for {name!r}, which is not a quasi-identifier {qi}")
        if not isinstance(h, Hierarchy):
            raise InvalidParameter(f"hierarchies[{name!r}] must be a Hierarchy, got {type(h).__name__}")
        if _is_numeric(df.dtypes[name]):
            raise InvalidParameter(
                f"hierarchy given for numeric QI {name!r}; numeric QIs are published as [min, max] ranges "
                "(cast the column to strings to generalise it with a hierarchy)"
            )
        if h.kind != "categorical":
            raise InvalidParameter(f"hierarchy of categorical QI {name!r} must be categorical, got {h.kind!r}")
    if rows_per_partition is not None and (
        isinstance(rows_per_partition, bool) or not isinstance(rows_per_partition, (int, np.integer)) or rows_per_partition < 1
    ):
        raise InvalidParameter(f"rows_per_partition must be an integer >= 1, got {rows_per_partition!r}")
    return int(k), l, kind, c, qi, keep, hierarchies


def _check_data(
    n: int,
    na: Mapping[str, int],
    k: int,
    l: float | None,
    kind: str,
    c: float | None,
    sensitive: str,
    sens_counts: np.ndarray,
    num_bounds: Mapping[str, tuple[float, float]],
) -> None:
    if n == 0:
        raise DataFormatError("the input table has no rows")
    missing = {col: int(v) for col, v in na.items() if int(v) > 0}
    if missing:
        raise DataFormatError(
            "missing values (NaN/None) in " + ", ".join(f"column {col!r} ({v} rows)" for col, v in missing.items())
        )
    bad = [col for col, (lo, hi) in num_bounds.items() if not (math.isfinite(lo) and math.isfinite(hi))]
    if bad:
        raise DataFormatError(f"non-finite values (inf) in numeric quasi-identifier(s) {bad}")
    if k > n:
        raise InfeasiblePrivacyError(f"k={k} exceeds the number of rows ({n})")
    if l is not None and l > 1:
        n_vals = int((sens_counts > 0).sum())
        if l > n_vals:
            raise InfeasiblePrivacyError(f"l={l} exceeds the {n_vals} distinct value(s) of the sensitive column {sensitive!r}")
        if not diverse_mask(sens_counts[None, :], l, kind, c)[0]:
            raise InfeasiblePrivacyError(
                f"the whole table is not {kind} {l}-diverse on {sensitive!r}, so no partition of it can be"
            )


def _validate_hierarchies(enc: _Encoder, hierarchies: Mapping[str, Hierarchy]) -> None:
    """Fail early (DataFormatError naming the values) if a value is missing from its hierarchy."""
    for j, col in enumerate(enc.cat):
        h = hierarchies.get(col)
        if h is not None:
            h.validate(pd.Series(enc.cat_domains[j], dtype=object))


def _make_encoder(
    qi: list[str], sensitive: str, dtypes: Mapping[str, Any], uniques: Mapping[str, Any], with_key: bool
) -> _Encoder:
    num = [c for c in qi if _is_numeric(dtypes[c])]
    cat = [c for c in qi if c not in num]
    cat_domains = [_ordered(uniques[c], dtypes[c]) for c in cat]
    sens_domain = _ordered(uniques[sensitive], dtypes[sensitive])
    num_domains = strides = None
    if with_key:
        num_domains = [np.unique(np.asarray(uniques[c], dtype=np.float64)) for c in num]
        sizes = [len(num_domains[num.index(c)]) if c in num else len(cat_domains[cat.index(c)]) for c in qi]
        if math.prod(max(s, 1) for s in sizes) < _KEY_LIMIT:
            strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    return _Encoder(
        qi=qi,
        num=num,
        cat=cat,
        sensitive=sensitive,
        cat_domains=cat_domains,
        sens_domain=sens_domain,
        num_domains=num_domains,
        strides=strides,
    )


def _is_dask(df: Any) -> bool:
    return hasattr(df, "npartitions") and hasattr(df, "map_partitions")


# --------------------------------------------------------------------------- public API
def cluster_l_diverse(
    df: Any,
    qi: str | Sequence[str],
    sensitive: str,
    k: int,
    l: float | None = 1,
    *,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    kind: str = "distinct",
    c: float | None = None,
    repair: bool = True,
    keep: Sequence[str] | None = None,
    client: Any = None,
    rows_per_partition: int | None = None,
    t: float | None = None,
    t_kind: str = "auto",
) -> ClusterResult:
    """Clustering l-diverse partition (docs/anonymity.md#the-clustering-l-diverse-partition) and the
    published generalised table.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        Input table. QIs with a numeric dtype are numeric, all others categorical.
    qi : str or sequence of str
        Quasi-identifiers; their order is the sort order of step 1.
    sensitive : str
        Sensitive column (kept as is in the output).
    k : int
        Minimum cluster size (>= 1, <= number of rows).
    l : number, optional
        l-diversity parameter (default 1: none). The greedy uses the distinct count; Repair-L
        and the guarantee use ``kind``.
    hierarchies : mapping of str to Hierarchy, optional
        Categorical hierarchies of categorical QIs (published as the lowest common ancestor);
        categorical QIs without one are published as ``"v1|v2|..."``.
    kind : {"distinct", "entropy", "recursive"}
        l-diversity flavour.
    c : float, optional
        Constant of recursive (c, l)-diversity.
    repair : bool, default True
        Run Repair-L. Without it the greedy clusters are returned as they are (they need not be
        k-anonymous nor l-diverse: docs/anonymity.md#addition-repair-l).
    keep : sequence of str, optional
        Other columns copied unchanged to the output (all others are dropped).
    client : distributed.Client, optional
        Scheduler for the Dask computations (default: dask's current scheduler).
    rows_per_partition : int, optional
        Dask input: rows per greedy chunk after the global sort (default: as many chunks as
        input partitions). Capped so that every chunk has at least k rows.
    t : float, optional
        t-closeness of every cluster to the whole table (Repair-L merges until it holds).
    t_kind : {"auto", "ordered", "equal"}
        The EMD's ground distance (``auto``: ordered for a numeric sensitive column).

    Returns
    -------
    ClusterResult
        ``table`` is a pandas DataFrame for pandas input and a lazy Dask DataFrame for Dask
        input (same partitions as the input); ``labels`` is a numpy array in both cases.

    Raises
    ------
    InvalidParameter
        Bad k/l/kind/c, unknown columns, sensitive column among the QIs, bad hierarchies.
    DataFormatError
        Empty table, missing or infinite values in a QI or the sensitive column, a value
        missing from its hierarchy.
    InfeasiblePrivacyError
        k larger than the number of rows, l larger than the number of distinct sensitive values
        (or the whole table not l-diverse for ``kind``).
    """
    k, l, kind, c, qi, keep, hierarchies = _check_args(df, qi, sensitive, k, l, kind, c, keep, hierarchies, rows_per_partition)
    t, t_kind = validate_closeness(t, t_kind)
    l_greedy = 1.0 if l is None else float(l)
    columns = [x for x in df.columns if x in set(qi) | {sensitive} | set(keep)]
    dtypes = {x: df.dtypes[x] for x in [*qi, sensitive]}
    tc = (t, resolve_t_kind(t_kind, dtypes[sensitive])) if t is not None else None
    if _is_dask(df):
        return _run_dask(
            df, qi, sensitive, k, l, l_greedy, kind, c, repair, hierarchies, columns, dtypes, client, rows_per_partition, tc
        )

    # ---------------- pandas: the sequential algorithm
    n = len(df)
    na = df[[*qi, sensitive]].isna().sum().to_dict()
    nums = [x for x in qi if _is_numeric(dtypes[x])]
    bounds = {x: (float(df[x].min()), float(df[x].max())) for x in nums} if n and not any(na.values()) else {}
    sens_counts = df[sensitive].value_counts(dropna=True).to_numpy(dtype=np.int64)
    _check_data(n, na, k, l, kind, c, sensitive, sens_counts, bounds)
    uniques = {x: df[x].to_numpy(dtype=object) for x in [*qi, sensitive]}
    enc = _make_encoder(qi, sensitive, dtypes, uniques, with_key=False)
    _validate_hierarchies(enc, hierarchies)
    e = enc.encode(df, 0)
    order = np.lexsort([e["_r"].to_numpy(), *[e[s].to_numpy() for s in reversed(enc.sort_columns())]])
    e = e.iloc[order]
    X = np.column_stack([e[f"_x{j}"].to_numpy() for j in range(len(enc.num))]) if enc.num else np.zeros((n, 0))
    w, W = distance_weights(X.min(axis=0), X.max(axis=0), bool(np.all(X == np.round(X))), len(enc.cat), n)
    rid, labels, cl = _chunk_task([e], [(0, n)], len(enc.num), len(enc.cat), enc.offs, len(enc.sens_domain), w, W, k, l_greedy)
    lab, cl, merges = _merge(n, [(rid, labels, cl)], enc, w, W, k, l, kind, c, repair, tc)
    lookup = _publish_strings(enc, cl, hierarchies)
    table = _publish_part(df, lab, lookup, columns, qi)
    return ClusterResult(
        table=table,
        labels=lab,
        n_clusters=cl.n,
        n_repaired_merges=merges,
        cluster_sizes=cl.size.copy(),
        sensitive_counts=cl.sens.copy(),
        params={"k": k, "l": l, "kind": kind, "c": c, "n_rows": n, "n_partitions": 1, **_t_params(tc)},
    )


def _t_params(tc: tuple[float, str] | None) -> dict[str, Any]:
    return {"t": tc[0], "t_kind": tc[1]} if tc is not None else {}


def _merge(
    n: int,
    results: list[tuple],
    enc: _Encoder,
    w: np.ndarray,
    W: float,
    k: int,
    l: float | None,
    kind: str,
    c: float | None,
    repair: bool,
    tc: tuple[float, str] | None = None,
) -> tuple[np.ndarray, Clusters, int]:
    """Driver: concatenate chunk clusters, Repair-L, and labels per global row id. ``tc``:
    ``(t, resolved distance)`` of t-closeness against the whole table (all clusters' counts)."""
    labels = np.empty(n, dtype=np.int64)
    base = 0
    for rid, lab, cl in results:
        labels[rid] = lab + base
        base += cl.n
    cl = Clusters.concat([r[2] for r in results])
    merges = 0
    if repair:
        closeness = closeness_for(tc[0], tc[1], enc.sens_domain, cl.sens.sum(axis=0)) if tc is not None else None
        root, merges = repair_l(cl, enc.offs, w, W, k, l, kind, c, closeness)
        new_id, cl = compact(cl, root)
        labels = new_id[labels]
    return labels, cl, merges


def _run_dask(
    ddf: Any,
    qi: list[str],
    sensitive: str,
    k: int,
    l: float | None,
    l_greedy: float,
    kind: str,
    c: float | None,
    repair: bool,
    hierarchies: Mapping[str, Hierarchy],
    columns: list[str],
    dtypes: Mapping[str, Any],
    client: Any,
    rows_per_partition: int | None,
    tc: tuple[float, str] | None = None,
) -> ClusterResult:
    import dask

    from ..progress import compute

    def _compute(*objs: Any) -> tuple:
        return compute(*objs, progress=False, client=client)

    # pass 1: sizes, missing values, distinct values
    cols = [*qi, sensitive]
    lens_d = ddf.map_partitions(len)
    uniq = {x: ddf[x].dropna().unique() for x in cols}
    out = _compute(lens_d, ddf[cols].isna().sum(), ddf[sensitive].value_counts(dropna=True), *uniq.values())
    lens, na, vc = np.asarray(out[0], dtype=np.int64), out[1], out[2]
    uniques = {x: np.asarray(u, dtype=object) for x, u in zip(uniq, out[3:])}
    n = int(lens.sum())
    nums = [x for x in qi if _is_numeric(dtypes[x])]
    bounds = {}
    for x in nums:
        u = np.asarray(uniques[x], dtype=np.float64)
        bounds[x] = (float(u.min()), float(u.max())) if len(u) else (0.0, 0.0)
    _check_data(n, na.to_dict(), k, l, kind, c, sensitive, vc.to_numpy(dtype=np.int64), bounds)
    enc = _make_encoder(qi, sensitive, dtypes, uniques, with_key=True)
    _validate_hierarchies(enc, hierarchies)
    # distance weights from the global ranges, as in the sequential path
    lo = np.array([bounds[x][0] for x in enc.num], dtype=np.float64)
    hi = np.array([bounds[x][1] for x in enc.num], dtype=np.float64)
    integral = all(bool(np.all(d == np.round(d))) for d in enc.num_domains)
    w, W = distance_weights(lo, hi, integral, len(enc.cat), n)

    # pass 2: encode with global row ids, sort globally, cut into equal chunks
    offsets = np.r_[0, np.cumsum(lens)[:-1]]
    enc_d = dask.delayed(enc, pure=True)
    parts = [dask.delayed(_encode_part)(p, int(o), enc_d) for p, o in zip(ddf.to_delayed(), offsets)]
    meta = enc.encode(ddf._meta, 0)
    import dask.dataframe as dd

    edf = dd.from_delayed(parts, meta=meta, verify_meta=False)
    by = ["_k", "_r"] if enc.strides is not None else [*enc.sort_columns(), "_r"]
    srt = edf.sort_values(by)
    srt = client.persist(srt) if client is not None else srt.persist()
    sparts = srt.to_delayed()
    slens = np.asarray(_compute(srt.map_partitions(len))[0], dtype=np.int64)
    m = int(ddf.npartitions) if rows_per_partition is None else -(-n // int(rows_per_partition))
    m = max(1, min(m, n // k))
    cuts = [(j * n) // m for j in range(m + 1)]
    cum = np.r_[0, np.cumsum(slens)]
    offs = enc.offs
    tasks = []
    for j in range(m):
        lo, hi = cuts[j], cuts[j + 1]
        pieces, slices = [], []
        for p in range(len(sparts)):
            a, b = max(lo, cum[p]), min(hi, cum[p + 1])
            if a < b:
                pieces.append(sparts[p])
                slices.append((int(a - cum[p]), int(b - cum[p])))
        tasks.append(
            dask.delayed(_chunk_task)(pieces, slices, len(enc.num), len(enc.cat), offs, len(enc.sens_domain), w, W, k, l_greedy)
        )
    results = list(_compute(*tasks))
    del srt, sparts, tasks  # release the persisted sort

    lab, cl, merges = _merge(n, results, enc, w, W, k, l, kind, c, repair, tc)

    # published table: input partitions + their slice of the labels
    lookup = _publish_strings(enc, cl, hierarchies)
    lookup_d = dask.delayed(lookup, pure=True)
    out_parts = [
        dask.delayed(_publish_part)(p, lab[o : o + ln], lookup_d, columns, qi)
        for p, o, ln in zip(ddf.to_delayed(), offsets, lens)
    ]
    out_meta = _publish_part(ddf._meta, np.zeros(0, dtype=np.int64), lookup, columns, qi)
    table = dd.from_delayed(out_parts, meta=out_meta, verify_meta=False)
    return ClusterResult(
        table=table,
        labels=lab,
        n_clusters=cl.n,
        n_repaired_merges=merges,
        cluster_sizes=cl.size.copy(),
        sensitive_counts=cl.sens.copy(),
        params={"k": k, "l": l, "kind": kind, "c": c, "n_rows": n, "n_partitions": m, **_t_params(tc)},
    )


def _encode_part(pdf: pd.DataFrame, rid0: int, enc: _Encoder) -> pd.DataFrame:
    return enc.encode(pdf, rid0)

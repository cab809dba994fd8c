"""Utility of a k-anonymised table against its original: discernibility, NCP / GCP and the
relative error of a workload of COUNT queries.

Pure pandas / numpy kernels. The caller brings to the driver the released equivalence classes
(one distributed group-by: the quasi-identifier labels and a ``count`` per class) and, per
quasi-identifier, the value counts of the original (its *domain*); the true answers of the
query workload are counted on the original's partitions by :func:`answer_queries`.

How a released label is read (:func:`coverage`): the set of original domain values it covers.

* ``'*'`` covers the whole domain;
* a value of the domain covers itself;
* a node of a categorical hierarchy (when the hierarchies are given) covers its leaves;
* ``a|b|c`` (a value set of local recoding) covers its members;
* on a numeric quasi-identifier, ``lo-hi`` (both ends included, as Mondrian and clustering
  write them), ``[a, b)``, ``(a, b]``, ``[a, b]`` or ``[a-b[`` cover the domain values inside;
* anything else (a hierarchy node without its hierarchy) cannot be read: it is counted as if
  it covered the whole domain — an upper bound of the loss — and reported as unread.

NCP of a label (normalised certainty penalty, 0 = exact, 1 = ``'*'``): categorical
``(covered values - 1) / (domain size - 1)``; numeric the width of the interval (clipped to the
original's range; the extent of the covered values for sets and nodes) over the original's
range ``max - min``. A quasi-identifier's NCP is the mean over the input records, suppressed
records (released ``'*'`` or left out of the release) counting 1; GCP is the mean NCP over the
quasi-identifiers. DM = sum of squared class sizes + suppressed records x N.

The workload: :data:`N_QUERIES` COUNT queries drawn with the public seed :data:`SEED`, each
selecting one or two quasi-identifiers (a range of domain values of a numeric one, a random set
of values of a categorical one). The estimate from the release spreads each class uniformly
over the domain values its labels cover; the relative error is
``|estimate - true| / max(true, bound)`` with ``bound = max(1, 0.1% of N)`` so that near-empty
queries do not dominate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..data.hierarchy import ROOT, as_keys
from .metrics import discernibility

__all__ = [
    "SEED",
    "N_QUERIES",
    "Domain",
    "Query",
    "domain_of",
    "hierarchy_nodes",
    "coverage",
    "label_table",
    "utility_summary",
    "query_workload",
    "answer_queries",
    "estimate_queries",
    "relative_errors",
    "error_bound",
    "spread_over_domain",
]

#: the public seed of the query workload (the same queries for every release of a table)
SEED = 20_160_517
N_QUERIES = 200
COUNT = "count"

_NUM = r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_DASH_RANGE = re.compile(rf"^\s*({_NUM})\s*-\s*({_NUM})\s*$")
_BRACKETS = re.compile(rf"^\s*([\[\(\]])\s*({_NUM})\s*[,;-]\s*({_NUM})\s*([\]\)\[])\s*$")


@dataclass(frozen=True)
class Domain:
    """The values one quasi-identifier takes in the original: string ``keys`` (the form
    :func:`~ppdm_dask.data.hierarchy.as_keys` gives), their record ``counts`` and, for a numeric
    one, the numbers (``values``, ascending; keys in the same order)."""

    name: str
    keys: np.ndarray
    counts: np.ndarray
    numeric: bool
    values: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.keys)

    @property
    def span(self) -> float:
        """``max - min`` of a numeric domain (0 for a categorical one)."""
        if not self.numeric or not self.size:
            return 0.0
        return float(self.values[-1] - self.values[0])


def domain_of(name: str, counts: pd.Series, numeric_dtype: bool = False, categorical: bool = False) -> Domain:
    """The :class:`Domain` of a column from its value counts (missing values left out).

    Numeric when the column's dtype is (``numeric_dtype``) or every value reads as a number,
    unless ``categorical`` (a column generalised by a categorical hierarchy, e.g. zip codes:
    their loss is counted in leaves, not as a numeric range, as the anonymiser does)."""
    keys = as_keys(pd.Series(counts.index.to_numpy(dtype=object)))
    vc = pd.Series(counts.to_numpy(dtype=np.int64), index=keys)
    vc = vc[pd.notna(vc.index)].groupby(level=0).sum()
    keys = vc.index.to_numpy(dtype=object)
    nums = pd.to_numeric(pd.Series(keys, dtype=object), errors="coerce").to_numpy(dtype=float)
    numeric = bool(len(keys)) and not categorical and (numeric_dtype or bool(np.isfinite(nums).all()))
    if numeric:
        order = np.argsort(nums, kind="stable")
        return Domain(name, keys[order], vc.to_numpy()[order], True, nums[order])
    order = np.argsort(keys.astype(str), kind="stable")
    return Domain(name, keys[order], vc.to_numpy()[order], False, None)


def _interval(label: str) -> tuple[float, float, bool, bool] | None:
    """``(lo, hi, lo included, hi included)`` of an interval label, or None."""
    m = _DASH_RANGE.match(label)
    if m:
        return float(m.group(1)), float(m.group(2)), True, True
    m = _BRACKETS.match(label)
    if m:
        return float(m.group(2)), float(m.group(3)), m.group(1) == "[", m.group(4) == "]"
    return None


def hierarchy_nodes(hierarchy: Any) -> dict[str, np.ndarray]:
    """The leaves under every inner node of a categorical hierarchy (``{node: leaf keys}``;
    empty for an interval hierarchy, whose labels are read as intervals)."""
    if hierarchy is None or getattr(hierarchy, "kind", None) != "categorical":
        return {}
    leaves = np.asarray(hierarchy.leaves, dtype=object)
    out: dict[str, list[np.ndarray]] = {}
    for level in range(1, hierarchy.levels - 1):
        gen = as_keys(pd.Series(np.asarray(hierarchy.generalize(leaves, level), dtype=object)))
        for node in pd.unique(gen):
            out.setdefault(str(node), []).append(leaves[gen == node])
    return {k: np.unique(np.concatenate(v).astype(str)).astype(object) for k, v in out.items()}


def coverage(
    label: Any, dom: Domain, nodes: Mapping[str, np.ndarray] | None = None
) -> tuple[np.ndarray | None, tuple[float, float] | None]:
    """The domain values a released ``label`` covers, as a boolean mask over ``dom.keys``
    (None when the label cannot be read), and for an interval label its bounds.

    See the module docstring for the forms that are read; ``nodes`` are the inner nodes of the
    quasi-identifier's categorical hierarchy, when known (:func:`hierarchy_nodes`).
    """
    key = as_keys([label])[0]
    keys = dom.keys
    if key == ROOT:
        return np.ones(dom.size, dtype=bool), None
    hit = keys == key
    if hit.any():
        return hit, None
    if nodes and key in nodes:
        return np.isin(keys, nodes[key]), None
    if "|" in key:
        return np.isin(keys, key.split("|")), None
    if dom.numeric:
        iv = _interval(key)
        if iv is not None:
            lo, hi, lo_in, hi_in = iv
            v = dom.values
            mask = ((v >= lo) if lo_in else (v > lo)) & ((v <= hi) if hi_in else (v < hi))
            return mask, (lo, hi)
    return None, None


def _ncp(mask: np.ndarray, bounds: tuple[float, float] | None, dom: Domain) -> float:
    """NCP of one read label (see the module docstring)."""
    if dom.numeric:
        span = dom.span
        if span <= 0:
            return 0.0
        if bounds is not None:
            lo, hi = max(bounds[0], dom.values[0]), min(bounds[1], dom.values[-1])
            return min(1.0, max(0.0, hi - lo) / span)
        if not mask.any():
            return 0.0
        covered = dom.values[mask]
        return float(covered.max() - covered.min()) / span
    if dom.size <= 1:
        return 0.0
    return max(0, int(mask.sum()) - 1) / (dom.size - 1)


@dataclass(frozen=True)
class Labels:
    """The distinct released labels of one quasi-identifier: for each, the domain values it
    covers (``cover``: labels x domain), its NCP and whether it could be read."""

    labels: np.ndarray
    cover: np.ndarray
    ncp: np.ndarray
    read: np.ndarray


def label_table(labels: Sequence[Any], dom: Domain, hierarchy: Any = None) -> Labels:
    """Read every distinct label of a quasi-identifier (unread labels cover the whole domain,
    NCP 1). ``hierarchy``: the quasi-identifier's hierarchy, when known — a
    :class:`~ppdm_dask.data.hierarchy.Hierarchy`, or the part a written release publishes
    (:class:`~.public_hierarchies.PublicHierarchy`: node sizes without the leaves).

    With a hierarchy, the NCP of its nodes is the anonymiser's (categorical: leaves under the node
    over the hierarchy's leaves; interval: the width over the hierarchy's range), so the console,
    the manifest and every report give one GCP. A categorical node of a published hierarchy has a
    known NCP but cannot be mapped to the original's values: its coverage stays unread."""
    from .public_hierarchies import as_public, node_ncp, set_ncp

    labels = np.asarray(list(labels), dtype=object)
    nodes = hierarchy_nodes(hierarchy) if not _is_public(hierarchy) else {}
    pub = as_public(hierarchy)
    cover = np.ones((len(labels), dom.size), dtype=bool)
    ncp = np.ones(len(labels))
    read = np.zeros(len(labels), dtype=bool)
    for i, lab in enumerate(labels):
        key = as_keys([lab])[0]
        mask, bounds = coverage(lab, dom, nodes)
        known = node_ncp(pub, key) if pub is not None else None
        if mask is None:
            if known is not None:  # a published node: its loss is known, the values it covers are not
                ncp[i] = known
            continue
        read[i] = True
        cover[i] = mask
        if key == ROOT:
            ncp[i] = 1.0
        elif known is not None and not (dom.size and (dom.keys == key).any()):
            ncp[i] = known
        elif pub is not None and pub.kind == "categorical" and "|" in key:
            ncp[i] = set_ncp(pub, len(key.split("|")))
        elif pub is not None and pub.kind == "categorical":
            ncp[i] = 0.0  # a leaf
        else:
            ncp[i] = _ncp(mask, bounds, dom)
    return Labels(labels, cover, ncp, read)


def _is_public(hierarchy: Any) -> bool:
    from .public_hierarchies import PublicHierarchy

    return isinstance(hierarchy, PublicHierarchy)


def _codes(classes: pd.DataFrame, column: str, table: Labels) -> np.ndarray:
    """Index of each class's label of ``column`` in ``table.labels``."""
    return pd.Index(as_keys(pd.Series(table.labels, dtype=object))).get_indexer(as_keys(classes[column]))


def utility_summary(classes: pd.DataFrame, qi: Sequence[str], tables: Mapping[str, Labels], n_dropped: int = 0) -> dict[str, Any]:
    """DM, NCP per quasi-identifier and GCP of a release.

    Parameters
    ----------
    classes : pandas.DataFrame
        The released classes: the ``qi`` labels and ``count`` (suppressed records, every QI
        ``'*'``, included when they were released).
    tables : mapping
        :func:`label_table` of each quasi-identifier.
    n_dropped : int
        Suppressed records left out of the release.

    Returns
    -------
    dict
        ``n_total`` (N, input records), ``n_suppressed``, ``discernibility``, ``ncp``
        (``{qi: mean NCP}``), ``gcp``, ``unread`` (``{qi: [labels that could not be read]}``)
        and ``unread_records`` (``{qi: records with such a label}``), ``sized`` (``{qi: the
        unread labels whose NCP a published hierarchy gives}``).
    """
    qi = list(qi)
    counts = classes[COUNT].to_numpy(dtype=np.int64)
    star = np.ones(len(classes), dtype=bool)
    for a in qi:
        star &= as_keys(classes[a]) == ROOT
    n_suppressed = int(counts[star].sum()) + int(n_dropped)
    n_total = int(counts.sum()) + int(n_dropped)
    kept = counts[~star]
    dm = discernibility(kept, n_suppressed, n_total)
    ncp: dict[str, float] = {}
    unread: dict[str, list[str]] = {}
    unread_records: dict[str, int] = {}
    sized: dict[str, list[str]] = {}
    for a in qi:
        t = tables[a]
        code = _codes(classes, a, t)
        per = np.where(code >= 0, t.ncp[np.maximum(code, 0)], 1.0)
        ncp[a] = (float((per * counts).sum()) + n_dropped) / n_total if n_total else 0.0
        bad = ~t.read
        unread[a] = [str(x) for x in t.labels[bad]]
        # unread labels whose NCP a published hierarchy still gives (node sizes without leaves)
        sized[a] = [str(x) for x in t.labels[bad & (t.ncp < 1.0)]]
        unread_records[a] = int(counts[(code >= 0) & bad[np.maximum(code, 0)]].sum())
    gcp = float(np.mean(list(ncp.values()))) if ncp else 0.0
    return {
        "n_total": n_total,
        "n_suppressed": n_suppressed,
        "discernibility": dm,
        "ncp": ncp,
        "gcp": gcp,
        "unread": unread,
        "unread_records": unread_records,
        "sized": sized,
    }


# ---------------------------------------------------------------------------- query workload
@dataclass(frozen=True)
class Query:
    """One COUNT query: ``where`` maps a quasi-identifier to the mask of its selected domain
    values (a range of a numeric domain, a set of a categorical one)."""

    where: dict[str, np.ndarray]

    def describe(self, domains: Mapping[str, Domain]) -> str:
        parts = []
        for a, sel in self.where.items():
            d = domains[a]
            keys = d.keys[sel]
            if d.numeric:
                parts.append(f"{keys[0]} <= {a} <= {keys[-1]}")
            else:
                parts.append(f"{a} in {{{', '.join(map(str, keys))}}}")
        return " and ".join(parts)


def query_workload(domains: Sequence[Domain], n: int = N_QUERIES, seed: int = SEED) -> list[Query]:
    """``n`` random COUNT queries over one or two quasi-identifiers (drawn with ``seed``):
    a numeric quasi-identifier selects the domain values between two random ones, a
    categorical one a random set of 1 to half its values."""
    rng = np.random.default_rng(seed)
    usable = [d for d in domains if d.size]
    out: list[Query] = []
    if not usable:
        return out
    for _ in range(n):
        width = 1 if len(usable) == 1 else int(rng.integers(1, 3))
        picked = rng.choice(len(usable), size=width, replace=False)
        where: dict[str, np.ndarray] = {}
        for i in sorted(int(p) for p in picked):
            d = usable[i]
            sel = np.zeros(d.size, dtype=bool)
            if d.numeric:
                a, b = sorted(int(x) for x in rng.integers(0, d.size, size=2))
                sel[a : b + 1] = True
            else:
                r = int(rng.integers(1, max(1, math.ceil(d.size / 2)) + 1))
                sel[rng.choice(d.size, size=r, replace=False)] = True
            where[d.name] = sel
        out.append(Query(where))
    return out


def _domain_codes(values: pd.Series, keys: np.ndarray) -> np.ndarray:
    """Position of each value's key in ``keys`` (-1: not in the domain, or missing); keys are
    made once per distinct value."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    at = pd.Index(keys).get_indexer(as_keys(pd.Series(uniques, dtype=values.dtype if len(uniques) else object)))
    return np.where(codes >= 0, at[np.maximum(codes, 0)] if len(at) else -1, -1)


def answer_queries(part: pd.DataFrame, queries: Sequence[Query], keys: Mapping[str, np.ndarray]) -> np.ndarray:
    """Kernel: the exact answer of every query on one partition of the original (int64, one
    per query). ``keys`` are the domain keys of each quasi-identifier (the order of the masks).
    The partition is first reduced to its distinct quasi-identifier tuples with their counts,
    so each query is evaluated once per distinct tuple rather than once per record."""
    if not len(part):
        return np.zeros(len(queries), dtype=np.int64)
    names = [a for a in keys if a in part.columns]
    codes = {a: _domain_codes(part[a], keys[a]) for a in names}
    return answer_on_tuples(codes, np.ones(len(part), dtype=np.int64), queries, {a: len(keys[a]) for a in names})


def answer_on_tuples(
    codes: Mapping[str, np.ndarray], weights: np.ndarray, queries: Sequence[Query], sizes: Mapping[str, int]
) -> np.ndarray:
    """The answer of every query on weighted rows given by their domain positions per
    quasi-identifier (``codes[a]``: position in the domain's keys, -1 outside it; ``sizes[a]``:
    the domain's size). Equal rows are merged first."""
    out = np.zeros(len(queries), dtype=np.int64)
    names = list(codes)
    shifted = [np.asarray(codes[a], dtype=np.int64) + 1 for a in names]  # 0: outside the domain
    radix = [int(sizes[a]) + 1 for a in names]
    weights = np.asarray(weights, dtype=np.int64)
    if float(np.prod(np.asarray(radix, dtype=float))) < 2.0**62:  # one int64 per tuple
        packed = np.zeros(weights.size, dtype=np.int64)
        for c, r in zip(shifted, radix):
            packed = packed * r + c
        uniq, inverse = np.unique(packed, return_inverse=True)
        weights = np.bincount(inverse, weights=weights, minlength=uniq.size).astype(np.int64)
        cols = []
        for r in reversed(radix):
            uniq, c = np.divmod(uniq, r)
            cols.append(c)
        tuple_codes = dict(zip(names, reversed(cols)))
    else:
        tuples = pd.DataFrame(dict(zip(names, shifted))).assign(_w=weights).groupby(names, sort=False)["_w"].sum().reset_index()
        weights = tuples["_w"].to_numpy(dtype=np.int64)
        tuple_codes = {a: tuples[a].to_numpy() for a in names}
    for j, q in enumerate(queries):
        hit = np.ones(weights.size, dtype=bool)
        for a, sel in q.where.items():
            # code 0 (a value outside the domain: missing) is selected by no query
            hit &= np.concatenate([[False], sel])[tuple_codes[a]]
        out[j] = int(weights[hit].sum())
    return out


def frequency_counts(fs: Any, qi: Sequence[str]) -> list[pd.Series]:
    """From the original's frequency set (its distinct QI tuples with their record counts, as
    the anonymizer counted them on the input): the number of classes of each size and the value
    counts of each quasi-identifier, as the passes over the original give them."""
    cols = [fs.qi.index(a) for a in qi]
    radix = [len(fs.domains[j].values) for j in cols]
    codes = np.asarray(fs.codes, dtype=np.int64)
    counts = np.asarray(fs.counts, dtype=np.int64)
    if float(np.prod(np.asarray(radix, dtype=float))) < 2.0**62:
        packed = np.zeros(len(counts), dtype=np.int64)
        for j, r in zip(cols, radix):
            packed = packed * r + codes[:, j]
        _, inverse = np.unique(packed, return_inverse=True)
    else:
        _, inverse = np.unique(codes[:, cols], axis=0, return_inverse=True)
    sizes = np.bincount(inverse.ravel(), weights=counts).astype(np.int64)
    out = [pd.Series(sizes).value_counts()]
    for j in cols:
        n = np.bincount(codes[:, j], weights=counts, minlength=len(fs.domains[j].values)).astype(np.int64)
        values = pd.Index(np.asarray(fs.domains[j].values, dtype=object), dtype=object)
        out.append(pd.Series(n, index=values)[n > 0])
    return out


def frequency_answers(fs: Any, queries: Sequence[Query], domains: Mapping[str, Domain]) -> np.ndarray:
    """The exact answers of the queries from the original's frequency set."""
    codes, sizes = {}, {}
    for a, dom in domains.items():
        j = fs.qi.index(a)
        at = pd.Index(dom.keys).get_indexer(as_keys(pd.Series(np.asarray(fs.domains[j].values, dtype=object))))
        codes[a] = at[np.asarray(fs.codes[:, j], dtype=np.int64)]
        sizes[a] = len(dom.keys)
    return answer_on_tuples(codes, fs.counts, queries, sizes)


def estimate_queries(classes: pd.DataFrame, queries: Sequence[Query], tables: Mapping[str, Labels]) -> np.ndarray:
    """The answer of every query estimated from the released classes: each class's records are
    spread uniformly over the domain values its labels cover (float, one per query)."""
    counts = classes[COUNT].to_numpy(dtype=float)
    codes = {a: _codes(classes, a, t) for a, t in tables.items()}
    sizes = {a: t.cover.sum(axis=1) for a, t in tables.items()}
    out = np.zeros(len(queries))
    for j, q in enumerate(queries):
        share = np.ones(len(classes))
        for a, sel in q.where.items():
            t = tables[a]
            hit = t.cover[:, sel].sum(axis=1)
            frac = np.divide(hit, sizes[a], out=np.zeros(len(hit)), where=sizes[a] > 0)
            code = codes[a]
            # a label missing from the table (cannot happen for labels of these classes) selects nothing
            share *= np.where(code >= 0, frac[np.maximum(code, 0)], 0.0)
        out[j] = float((share * counts).sum())
    return out


def error_bound(n_total: int) -> float:
    """The sanity bound of the relative error: 0.1% of the records, at least 1."""
    return max(1.0, 0.001 * n_total)


def relative_errors(estimates: np.ndarray, truth: np.ndarray, n_total: int) -> np.ndarray:
    """``|estimate - true| / max(true, bound)`` per query (see :func:`error_bound`)."""
    truth = np.asarray(truth, dtype=float)
    return np.abs(np.asarray(estimates, dtype=float) - truth) / np.maximum(truth, error_bound(n_total))


def spread_over_domain(classes: pd.DataFrame, column: str, table: Labels) -> np.ndarray:
    """The records of the released ``classes`` spread over the domain values of ``column``:
    each class's ``count`` shared evenly among the values its label covers (the distribution a
    reader of the release infers, as the query estimates do); float, one per ``table``'s domain
    value (the order of :attr:`Domain.keys`)."""
    code = _codes(classes, column, table)
    per = classes[COUNT].to_numpy(dtype=float)
    mass = np.bincount(np.maximum(code, 0), weights=np.where(code >= 0, per, 0.0), minlength=len(table.labels))
    size = table.cover.sum(axis=1).astype(float)
    share = np.divide(mass, size, out=np.zeros_like(mass), where=size > 0)
    return (table.cover * share[:, None]).sum(axis=0)

"""The generalisation hierarchies a table release publishes beside its rows (``_hierarchies.parquet``),
so that the report made later from the written release (``ppdm report``) reads the released
labels as the job's own report and the console did.

What is published, per quasi-identifier with a hierarchy:

* an interval hierarchy — its intervals at every level (the bounds the user gave with
  ``interval:LOW:HIGH:WIDTH``: parameters, not data);
* a categorical hierarchy — the name of every inner node and *how many* leaves it has, and the
  total number of leaves: what the information loss (NCP) of a node needs. The leaves
  themselves are **not** published: a hierarchy is often made from the data (every zip code
  that occurs), and its leaves would then list original values the release generalised away.
  A node's leaf count is the one fact beyond the released labels (how many values the node
  stands for).

A report from the written release therefore gets the same NCP / GCP as the job's; it cannot map a
categorical node to the original's values (the leaves are withheld), so its query estimates treat
such a node as covering every value (said in its notes). The quality score reads the labels with
this published part in both reports, so it is the same in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..data.hierarchy import ROOT, as_keys

__all__ = [
    "HIERARCHIES_FILE",
    "PublicHierarchy",
    "as_public",
    "public_hierarchies_table",
    "read_public_hierarchies",
    "node_ncp",
    "set_ncp",
]

HIERARCHIES_FILE = "_hierarchies.parquet"

_SCHEMA = pa.schema(
    [
        ("attr", pa.string()),
        ("kind", pa.string()),
        ("levels", pa.int32()),
        ("level", pa.int32()),
        ("node", pa.string()),
        ("leaves", pa.int64()),
        ("low", pa.float64()),
        ("high", pa.float64()),
        ("closed", pa.string()),
    ]
)


@dataclass
class PublicHierarchy:
    """What a release publishes of one hierarchy (see the module docstring).

    ``under``: inner node -> leaves under it (categorical); ``bounds``: interval node ->
    ``(low, high)`` (interval); ``n_leaves`` (categorical), ``low`` / ``high`` (interval).
    """

    kind: str
    levels: int
    n_leaves: int | None = None
    low: float | None = None
    high: float | None = None
    closed: str = "left"
    under: dict[str, int] = field(default_factory=dict)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)


def _public(h: Any) -> PublicHierarchy:
    """The published part of a :class:`~ppdm_dask.data.hierarchy.Hierarchy`."""
    if h.kind == "interval":
        bounds = {}
        for level in range(1, h.levels - 1):
            for node in h.nodes(level):
                bounds[str(node)] = h.interval_of(node, level)
        return PublicHierarchy("interval", h.levels, low=float(h.low), high=float(h.high), closed=h.closed, bounds=bounds)
    under = {}
    for level in range(1, h.levels - 1):
        for node in h.nodes(level):
            under[as_keys([node])[0]] = int(h.n_leaves_under(node, level))
    return PublicHierarchy("categorical", h.levels, n_leaves=int(h.n_leaves), under=under)


def as_public(h: Any) -> PublicHierarchy | None:
    """``h`` as a :class:`PublicHierarchy` (None stays None)."""
    if h is None or isinstance(h, PublicHierarchy):
        return h
    return _public(h)


def public_hierarchies_table(hierarchies: Mapping[str, Any], qi: Any) -> pa.Table:
    """The side file's table: one row per published node of each quasi-identifier's hierarchy
    (and one ``'*'`` row holding the totals)."""
    rows: dict[str, list[Any]] = {f.name: [] for f in _SCHEMA}

    def add(
        attr: str, p: PublicHierarchy, level: int, node: str, leaves: int | None, low: float | None, high: float | None
    ) -> None:
        for k, v in (
            ("attr", attr),
            ("kind", p.kind),
            ("levels", p.levels),
            ("level", level),
            ("node", node),
            ("leaves", leaves),
            ("low", low),
            ("high", high),
            ("closed", p.closed),
        ):
            rows[k].append(v)

    for attr in qi:
        h = hierarchies.get(attr)
        if h is None:
            continue
        p = as_public(h)
        add(attr, p, p.levels - 1, ROOT, p.n_leaves, p.low, p.high)
        for node, n in sorted(p.under.items()):
            add(attr, p, -1, node, n, None, None)
        for node, (lo, hi) in sorted(p.bounds.items()):
            add(attr, p, -1, node, None, lo, hi)
    return pa.table(rows, schema=_SCHEMA)


def read_public_hierarchies(table: pa.Table | Mapping[str, list] | None) -> dict[str, PublicHierarchy]:
    """The hierarchies of a side file's table (or of its ``to_pydict()`` form, kept in a CSV
    release's manifest)."""
    if table is None:
        return {}
    d = table.to_pydict() if isinstance(table, pa.Table) else dict(table)
    out: dict[str, PublicHierarchy] = {}
    for i in range(len(d.get("attr", []))):
        attr, node = d["attr"][i], d["node"][i]
        p = out.setdefault(attr, PublicHierarchy(d["kind"][i], int(d["levels"][i]), closed=d["closed"][i] or "left"))
        if node == ROOT:
            p.n_leaves = d["leaves"][i]
            p.low, p.high = d["low"][i], d["high"][i]
        elif p.kind == "categorical":
            p.under[node] = int(d["leaves"][i])
        else:
            p.bounds[node] = (float(d["low"][i]), float(d["high"][i]))
    return out


def node_ncp(p: PublicHierarchy, key: str) -> float | None:
    """NCP of a released label that is a node of the hierarchy (None: not a node), as the
    anonymiser computes it: categorical ``(leaves under − 1) / (leaves − 1)``, interval
    ``width / (high − low)``."""
    if key == ROOT:
        return 1.0
    if p.kind == "categorical" and key in p.under:
        n = p.n_leaves or 0
        return (p.under[key] - 1) / (n - 1) if n > 1 else 0.0
    if p.kind == "interval" and key in p.bounds:
        lo, hi = p.bounds[key]
        span = float(p.high - p.low) if p.high is not None and p.low is not None else 0.0
        return (hi - lo) / span if span > 0 else 0.0
    return None


def set_ncp(p: PublicHierarchy, members: int) -> float:
    """NCP of a value set ``a|b|c`` of ``members`` values under a categorical hierarchy."""
    n = p.n_leaves or 0
    return max(0, members - 1) / (n - 1) if n > 1 else 0.0

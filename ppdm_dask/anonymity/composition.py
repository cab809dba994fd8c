"""Repeated releases of one input by the table families: the intersection of their equivalence
classes (docs/anonymity.md#repeated-releases).

Two k-anonymous releases of one table — with another k, other quasi-identifiers, another
method — each hide every published record among at least k records. An attacker who holds both
and knows a person's quasi-identifiers finds the person's class in each release and keeps only
the records in *both*: the person hides in the intersection of the two classes, which can be far
smaller than k. The same holds for k^m releases of one basket set.

The ledger lets the owner count this before a release is committed:

* :func:`table_labels` / :func:`basket_labels` (kernels, one block at a time, pure numpy): per
  record, in the input's row order, a 64-bit label of its class in the release — the hash of its
  released (generalised) quasi-identifier values, or of its whole released itemset; 0 for a
  record the release does not publish (:data:`NOT_PUBLISHED`);
* :func:`intersection_counts`: given the labels of several releases (one column each), the
  intersection class of a record is its tuple of labels; counted over the records published at
  least once;
* :func:`compose_tables`: the :class:`~ppdm_dask.ledger.Composition` of a new table release with
  the earlier table releases of its input (the ``compose`` hook of
  :class:`~.release.AnonymizedRelease` and :class:`~.km_release.KmRelease`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "NOT_PUBLISHED",
    "TABLE_FAMILIES",
    "CHECK_NAME",
    "table_labels",
    "basket_labels",
    "intersection_counts",
    "compose_tables",
]

#: the label of a record a release does not publish (suppressed, or left out)
NOT_PUBLISHED = np.uint64(0)
#: the families whose releases compose by their classes (releases of other families are left to them)
TABLE_FAMILIES = ("relational", "km")
#: the name of the limit (and of the override written in the manifest when it is accepted)
CHECK_NAME = "composed k-anonymity"
#: the text a missing released value is hashed as (no released label contains a NUL)
_MISSING = "\x00missing"


def _published(h: np.ndarray) -> np.ndarray:
    """Labels of published records: a hash that happens to be 0 becomes 1, so that no class is
    taken for "not published" (two classes then share a label only as two 64-bit hashes collide,
    about n² / 2⁶⁵ for n classes)."""
    h = np.asarray(h, dtype=np.uint64)
    return np.where(h == NOT_PUBLISHED, np.uint64(1), h)


def table_labels(block: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """Kernel: the class label of every row of one block of a relational release (rows in the
    input's order, suppressed ones still in).

    The label hashes the released quasi-identifier values as text (:func:`~ppdm_dask.data.hierarchy.as_keys`:
    ``39`` and ``"39"`` agree), so it depends on the row alone, never on the partitioning. A
    suppressed row (every quasi-identifier ``'*'``) publishes no quasi-identifier: it is labelled
    :data:`NOT_PUBLISHED`, whether it is left out of the files or kept as ``'*'`` (the release's
    own k-anonymity leaves it out in both cases).
    """
    from ..data.fingerprints import label_hashes
    from ..data.hierarchy import as_keys
    from ..release.tables import suppressed_rows

    n = len(block)
    if not qi or not n:
        return np.zeros(n, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    for j, a in enumerate(qi):
        keys = as_keys(block[a])
        keys[pd.isna(keys)] = _MISSING
        codes, uniques = pd.factorize(keys)
        # each distinct (position, value) hashed once; the row's label sums them (mod 2^64)
        text = np.array([f"{j}\x1f{u}" for u in uniques], dtype=object)
        with np.errstate(over="ignore"):
            h += label_hashes(text)[0][codes]
    labels = _published(h)
    labels[suppressed_rows(block, tuple(qi))] = NOT_PUBLISHED
    return labels


def basket_labels(block: tuple, hashes: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Kernel: the class label of every transaction of one block of a k^m release: the hash of
    its whole released (generalised) itemset (``hashes``: :func:`~ppdm_dask.data.fingerprints.label_hashes`
    of the release's vocabulary, computed once). Every transaction is published (global
    recoding leaves none out), an empty one included."""
    from ..data.fingerprints import row_fingerprints

    return _published(row_fingerprints(block[0], *hashes)[:, 0])


def intersection_counts(columns: np.ndarray, k: int) -> dict[str, Any]:
    """The intersection classes of several releases from their labels.

    Parameters
    ----------
    columns : ndarray of uint64, shape (n_records, n_releases)
        One column of labels per release, rows aligned on the input's records;
        :data:`NOT_PUBLISHED` where a release does not publish the record.
    k : int
        The smallest k of the releases.

    Returns
    -------
    dict
        ``records_published`` (published by at least one release), ``intersection_classes``
        (among those records), ``smallest_intersection_class``, ``records_below_k`` (records
        whose intersection class has fewer than k records *and* fewer than their class in each
        release that publishes them: the records the composition singles out beyond what the
        releases allowed alone), ``share_below_k`` (of the published records), ``exposed`` (bool
        mask of those records), ``published`` (bool mask).
    """
    cols = np.asarray(columns, dtype=np.uint64)
    if cols.ndim == 1:
        cols = cols[:, None]
    n, r = cols.shape
    published = (cols != NOT_PUBLISHED).any(axis=1)
    sizes = np.zeros(n, dtype=np.int64)
    alone = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)  # the record's smallest class in one release
    n_classes = 0
    if n and published.any():
        frame = pd.DataFrame(cols[published].view(np.int64), columns=[f"r{j}" for j in range(r)])
        groups = frame.groupby(list(frame.columns), sort=False)
        sizes[published] = groups[frame.columns[0]].transform("size").to_numpy()
        n_classes = int(groups.ngroups)
        for j in range(r):
            c = cols[:, j]
            on = c != NOT_PUBLISHED
            if on.any():
                _, inv, cnt = np.unique(c[on], return_inverse=True, return_counts=True)
                alone[on] = np.minimum(alone[on], cnt[inv.ravel()])
    exposed = published & (sizes < int(k)) & (sizes < alone)
    n_pub = int(published.sum())
    below = int(exposed.sum())
    return {
        "records_published": n_pub,
        "intersection_classes": n_classes,
        "smallest_intersection_class": int(sizes[published].min()) if n_pub else 0,
        "records_below_k": below,
        "share_below_k": below / n_pub if n_pub else 0.0,
        "exposed": exposed,
        "published": published,
    }


def _k_of(record: Any) -> int | None:
    figures = record.get("figures") or {}
    k = figures.get("k", (record.get("parameters") or {}).get("k"))
    try:
        return int(k) if k is not None else None
    except (TypeError, ValueError):
        return None


def compose_tables(release: Any, earlier: Sequence[Any], ledger: Any, rows: Any = None) -> Any:
    """The composition of a table release with the earlier table releases of its input.

    Before the work (``rows`` None): the number of releases, the k the intersection will be held
    to, and what will be checked. With this release's labels (``rows``): the labels of every
    earlier table release the ledger holds (:meth:`~ppdm_dask.ledger.Ledger.read_rows`) are
    composed with them (:func:`intersection_counts`); the limit ``composed k-anonymity`` holds
    when no record is singled out. An earlier release whose labels the ledger does not hold
    counts as singling out every record this release publishes (a conservative bound: the
    owner cannot recount it), and the limit fails.

    Public part (the manifest): the number of table releases composed, the k, and whether the
    limit held (never a count of records).
    """
    from ..ledger.compose import Composition
    from ..release.verdict import Check

    tables = [r for r in earlier if r.family in TABLE_FAMILIES]
    comp = Composition(list(earlier))
    ks = [int(release.parameters["k"])] + [k for k in map(_k_of, tables) if k is not None]
    k = min(ks)
    comp.figures.update({"table_releases": len(tables) + 1, "k": k})
    comp.public.update({"table_releases": len(tables) + 1, "k": k})
    others = len(earlier) - len(tables)
    if others:
        comp.notes.append(f"{others} earlier release(s) of other families are composed by their own rules, not here")
    if not tables:
        return comp
    if rows is None:
        comp.notes.append(
            f"will check, once the release is made: the records whose class in the intersection of the "
            f"equivalence classes of these {len(tables) + 1} releases is below k = {k} (the smallest k "
            "among them)"
        )
        return comp
    mine = np.asarray(rows, dtype=np.uint64).ravel()
    cols, unread = [mine], []
    for r in tables:
        got = ledger.read_rows(r)
        got = None if got is None else np.asarray(got).ravel()
        if got is None or got.size != mine.size:
            unread.append(r)
        else:
            cols.append(got.astype(np.uint64, copy=False))
    counts = intersection_counts(np.column_stack(cols), k)
    exposed, published = counts.pop("exposed"), counts.pop("published")
    if unread:  # every record published by both may be singled out: those this release publishes
        exposed = exposed | (mine != NOT_PUBLISHED)
        below = int(exposed.sum())
        counts.update(records_below_k=below, share_below_k=below / max(1, int(published.sum())))
        comp.notes.append(
            f"{len(unread)} earlier release(s) ({', '.join(r.release_id or r.uid for r in unread)}) have no "
            "class labels in the ledger: every record published by both may be singled out (a bound, "
            "not a count)"
        )
    comp.figures.update(counts)
    below = int(counts["records_below_k"])
    comp.checks.append(
        Check(
            CHECK_NAME,
            below == 0,
            below,
            0,
            stats={"records_published": counts["records_published"]},
            detail=f"records in an intersection class of {len(tables) + 1} releases below k = {k} "
            f"({counts['share_below_k']:.2%} of the records published)",
        )
    )
    return comp

"""Repeated releases by the table families, composed by person: the intersection of their
equivalence classes (docs/anonymity.md#repeated-releases, docs/ledger.md#tables-the-intersection-of-a-persons-classes).

Two k-anonymous releases that hold one person — of one table with another k or other
quasi-identifiers, or of this month's and last month's extract — each hide the person among at
least k records. An attacker who holds both and knows the person's quasi-identifiers finds the
person's class in each release and keeps only the people in *both*: the person hides in the
intersection of the two classes, which can be far smaller than k. The same holds for k^m
releases of baskets.

The ledger lets the owner count this before a release is committed, person by person, whatever
the input of the earlier releases:

* :func:`table_labels` / :func:`basket_labels` / :func:`sensitive_labels` (kernels, one block at
  a time, pure numpy): per record, a 64-bit label of its class in the release — the hash of its
  released (generalised) quasi-identifier values, or of its whole released itemset; 0 for a
  record the release does not publish (:data:`NOT_PUBLISHED`) — and of its sensitive value; the
  ledger keeps them per person (a person with records in several classes gets the set of them);
* :func:`bucket_tuples` / :func:`combine_tuples` (kernels of the join, one bucket of people at a
  time): every person's tuple of labels over the releases, counted by tuple and by class;
  :func:`tuple_figures` turns the totals into the people in an intersection class below k, and
  the classes of one sensitive value whose people's classes were diverse in every release alone;
* :func:`compose_tables`: the :class:`~ppdm_dask.ledger.Composition` of a new table release with
  every earlier table release that shares people with it (the ``compose`` hook of
  :class:`~.release.AnonymizedRelease` and :class:`~.km_release.KmRelease`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..bitops import splitmix64

__all__ = [
    "NOT_PUBLISHED",
    "TABLE_FAMILIES",
    "CHECK_NAME",
    "DIVERSITY_CHECK",
    "table_labels",
    "basket_labels",
    "sensitive_labels",
    "bucket_tuples",
    "combine_tuples",
    "tuple_figures",
    "compose_tables",
]

#: the label of a record a release does not publish (suppressed, or left out)
NOT_PUBLISHED = np.uint64(0)
#: the families whose releases compose by their classes (releases of other families are left to them)
TABLE_FAMILIES = ("relational", "km")
#: the name of the limit (and of the override written in the manifest when it is accepted)
CHECK_NAME = "composed k-anonymity"
#: the limit on sensitive values: no intersection class of one value whose classes were diverse
DIVERSITY_CHECK = "composed diversity"
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


def sensitive_labels(block: pd.DataFrame, qi: Sequence[str], sensitive: str) -> np.ndarray:
    """Kernel: a 64-bit label of every row's sensitive value (by its text, with the column's
    name: two releases compare sensitive values only of the same column); 0 for a row the
    release does not publish (suppressed)."""
    from ..data.fingerprints import label_hashes
    from ..release.tables import suppressed_rows

    n = len(block)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    values = block[sensitive].astype(object).where(block[sensitive].notna(), _MISSING).astype(str)
    codes, uniques = pd.factorize(values)
    text = np.array([f"{sensitive}\x1f{u}" for u in uniques], dtype=object)
    labels = _published(label_hashes(text)[0][codes])
    if qi:
        labels[suppressed_rows(block, tuple(qi))] = NOT_PUBLISHED
    return labels


def _k_of(record: Any) -> int | None:
    figures = record.get("figures") or {}
    k = figures.get("k", (record.get("parameters") or {}).get("k"))
    try:
        return int(k) if k is not None else None
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------- the join (kernels)
_TUPLE_SALT = np.uint64(0x9B05688C2B3E6C1F)


def _tuple_hash(labels: np.ndarray) -> np.ndarray:
    """One 64-bit hash per row of a label matrix (release position counts)."""
    h = np.zeros(labels.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(labels.shape[1]):
            h += splitmix64(labels[:, j] ^ splitmix64(np.full(labels.shape[0], j, np.uint64) + _TUPLE_SALT))
    return h


def _group_rows(
    keys: np.ndarray, weight: np.ndarray, labels: np.ndarray, sens: np.ndarray, multi: np.ndarray
) -> dict[str, np.ndarray]:
    """Rows grouped by ``keys``: weights summed, the first row's labels, the sensitive label of
    the group when it has one, and whether it has several (``multi``)."""
    if keys.size == 0:
        return {
            "key": keys.astype(np.uint64),
            "weight": np.zeros(0, np.int64),
            "labels": labels[:0],
            "sens": np.zeros(0, np.uint64),
            "multi": np.zeros(0, bool),
        }
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    s = sens[order]
    m = multi[order]
    # a group holds several sensitive labels when one of its rows does, or when two differ
    first = s[starts]
    differs = np.r_[False, (s[1:] != s[:-1]) & (k[1:] == k[:-1])]
    return {
        "key": k[starts],
        "weight": np.add.reduceat(weight[order], starts),
        "labels": labels[order][starts],
        "sens": first,
        "multi": np.logical_or.reduceat(m | differs, starts),
    }


def bucket_tuples(own: dict[str, np.ndarray], theirs: list[dict[str, np.ndarray]], *, weighted: bool) -> dict[str, Any]:
    """Join kernel: the people of one bucket range across this release (``own``) and the
    earlier table releases (``theirs``), each a table of ``person``, ``records``, ``label`` and
    ``sens`` (:mod:`ppdm_dask.ledger.people`).

    Returns the bucket's partial counts: the people grouped by their tuple of labels over all
    releases (``all``) and over the earlier ones only (``prev``), each group with its weight
    (people; records when each record is its own person, ``weighted``), labels and sensitive
    labels; and per release its classes' weights and sensitive labels (``classes``)."""
    tables = [own, *theirs]
    persons = np.unique(np.concatenate([t["person"] for t in tables])) if tables else np.zeros(0, np.uint64)
    n, r = persons.size, len(tables)
    labels = np.zeros((n, r), dtype=np.uint64)
    sens = np.zeros((n, r), dtype=np.uint64)
    weight = np.zeros(n, dtype=np.int64) if weighted else np.ones(n, dtype=np.int64)
    for j, t in enumerate(tables):
        pos = np.searchsorted(persons, t["person"])
        labels[pos, j] = t["label"]
        sens[pos, j] = t["sens"] if "sens" in t else 0
        if weighted:
            weight[pos] = np.maximum(weight[pos], t["records"])
    published = (labels != NOT_PUBLISHED).any(axis=1)
    # a person's sensitive label: the same in every release that publishes it (the same column)
    s = np.where(labels != NOT_PUBLISHED, sens, 0).max(axis=1)
    several = ((np.where(labels != NOT_PUBLISHED, sens, 0) != s[:, None]) & (labels != NOT_PUBLISHED)).any(axis=1)
    out: dict[str, Any] = {}
    sub = labels[published]
    out["all"] = _group_rows(_tuple_hash(sub), weight[published], sub, s[published], several[published])
    prev = published & (labels[:, 1:] != NOT_PUBLISHED).any(axis=1) if r > 1 else np.zeros(n, bool)
    sub = labels[prev][:, 1:]
    out["prev"] = _group_rows(_tuple_hash(sub), weight[prev], sub, s[prev], several[prev])
    classes = []
    for j in range(r):
        on = labels[:, j] != NOT_PUBLISHED
        classes.append(_group_rows(labels[on, j], weight[on], labels[on, j : j + 1], sens[on, j], np.zeros(int(on.sum()), bool)))
    out["classes"] = classes
    return out


def _combine_groups(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    keys = np.concatenate([p["key"] for p in parts])
    weight = np.concatenate([p["weight"] for p in parts])
    labels = np.concatenate([p["labels"] for p in parts])
    sens = np.concatenate([p["sens"] for p in parts])
    multi = np.concatenate([p["multi"] for p in parts])
    return _group_rows(keys, weight, labels, sens, multi)


def combine_tuples(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine the partial counts of several buckets (a tree reduction's step)."""
    return {
        "all": _combine_groups([p["all"] for p in parts]),
        "prev": _combine_groups([p["prev"] for p in parts]),
        "classes": [_combine_groups([p["classes"][j] for p in parts]) for j in range(len(parts[0]["classes"]))],
    }


def _lookup(groups: dict[str, np.ndarray], keys: np.ndarray, field: str, missing: Any) -> np.ndarray:
    """``groups[field]`` of each of ``keys`` (``missing`` where a key is not a group)."""
    pos = np.searchsorted(groups["key"], keys)
    pos = np.minimum(pos, max(groups["key"].size - 1, 0))
    found = groups["key"].size > 0
    hit = (groups["key"][pos] == keys) if found else np.zeros(keys.size, bool)
    vals = groups[field][pos] if found else np.zeros(keys.size, dtype=np.asarray(missing).dtype)
    return np.where(hit, vals, missing)


def tuple_figures(total: dict[str, Any], k: int, k_prev: int | None, *, diversity: bool) -> dict[str, Any]:
    """The figures of the composition from the combined counts (:func:`combine_tuples`): the
    people published at least once; those in an intersection class below k that is smaller
    than their class in each release that publishes them (singled out), split into those this
    release shares with an earlier one, those of this release only and those of earlier
    releases only; those singled out already before this release (not counted against it); and
    with ``diversity`` the people in an intersection class of one sensitive value whose
    classes in every release that publishes them held several (``people_disclosed``)."""
    groups = total["all"]
    labels = groups["labels"]
    size = groups["weight"].astype(np.int64)
    r = labels.shape[1] if labels.ndim == 2 else 0
    big = np.iinfo(np.int64).max
    alone = np.full(size.size, big, dtype=np.int64)
    diverse = np.ones(size.size, dtype=bool)
    for j in range(r):
        on = labels[:, j] != NOT_PUBLISHED
        own = total["classes"][j]
        alone[on] = np.minimum(alone[on], _lookup(own, labels[on, j], "weight", 0))
        diverse[on] &= _lookup(own, labels[on, j], "multi", False)
    exposed = (size < int(k)) & (size < alone)
    mine = labels[:, 0] != NOT_PUBLISHED if r else np.zeros(size.size, bool)
    in_prev = (labels[:, 1:] != NOT_PUBLISHED).any(axis=1) if r > 1 else np.zeros(size.size, bool)
    before = np.zeros(size.size, dtype=bool)
    if r > 1 and in_prev.any() and k_prev is not None:
        prev = total["prev"]
        keys = _tuple_hash(labels[in_prev][:, 1:])
        psize = _lookup(prev, keys, "weight", big)
        palone = np.full(keys.size, big, dtype=np.int64)
        sub = labels[in_prev]
        for j in range(1, r):
            on = sub[:, j] != NOT_PUBLISHED
            palone[on] = np.minimum(palone[on], _lookup(total["classes"][j], sub[on, j], "weight", 0))
        before[in_prev] = (psize < int(k_prev)) & (psize < palone)
    new = exposed & ~before
    published = int(size.sum())
    out: dict[str, Any] = {
        "people_published": published,
        "intersection_classes": int(size.size),
        "smallest_intersection_class": int(size.min()) if size.size else 0,
        "people_below_k": int(size[new].sum()),
        "share_below_k": float(size[new].sum()) / published if published else 0.0,
        "shared_people_published": int(size[mine & in_prev].sum()),
        "shared_below_k": int(size[new & mine & in_prev].sum()),
        "only_this_release_below_k": int(size[new & mine & ~in_prev].sum()),
        "only_earlier_releases_below_k": int(size[new & ~mine & in_prev].sum()),
        "below_k_before": int(size[exposed & before].sum()),
    }
    if diversity:
        has = groups["sens"] != NOT_PUBLISHED
        disclosed = has & ~groups["multi"] & diverse & (r > 1) & mine & in_prev
        out["people_disclosed"] = int(size[disclosed].sum())
        out["classes_disclosed"] = int(disclosed.sum())
    return out


def _table_kernel(own: dict[str, np.ndarray], theirs: list[dict[str, np.ndarray]], weighted: bool) -> dict[str, Any]:
    return bucket_tuples(own, theirs, weighted=weighted)


def compose_tables(release: Any, earlier: Sequence[Any], ledger: Any, people: Any = None) -> Any:
    """The composition of a table release with the earlier table releases that share its input
    or its people.

    Before the work (``people`` None): the number of releases of the same input, the k the
    intersection will be held to, and what will be checked. Once written (``people``: a
    :class:`~ppdm_dask.ledger.PeopleJoin`): every earlier table release that shares people with
    this one is joined person by person (:func:`bucket_tuples`, :func:`tuple_figures`); the limit
    ``composed k-anonymity`` holds when this release singles out nobody, and ``composed
    diversity`` (when the releases have the same sensitive column) when no intersection class of
    shared people holds one sensitive value where every release alone showed several. An
    earlier release of the same input whose people the ledger lacks counts as singling out
    every person this release publishes (a conservative bound).

    Public part (the manifest): the number of table releases composed, the k, and whether each
    limit held (never a count of people)."""
    from functools import partial

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
    if people is None:
        comp.notes.append(
            f"will check, once the release is made: the people whose class in the intersection of the "
            f"equivalence classes of these {len(tables) + 1} releases is below k = {k} (the smallest k "
            "among them), whatever release of whatever input holds them"
        )
        return comp
    joined = [(r, ref) for r, ref, _ in people.earlier if r.family in TABLE_FAMILIES]
    sens = (people.mine.extra or {}).get("sensitive")
    same_sens = [r for r, ref in joined if sens and (ref.extra or {}).get("sensitive") == sens]
    diversity = bool(sens) and len(same_sens) == len(joined) and bool(joined)
    weighted = people.mine.kind == "record"
    kernel = partial(_table_kernel, weighted=weighted)
    # the earlier releases joined are those of the families this one composes with (TABLE_FAMILIES)
    total = people.join(kernel, combine_tuples, columns=["label", "sens"]) if joined else None
    k_prev = min([kk for kk in (_k_of(r) for r, _ in joined) if kk is not None], default=None)
    if total is not None:
        figs = tuple_figures(total, k, k_prev, diversity=diversity)
    else:
        figs = {"people_published": people.mine.people, "people_below_k": 0, "share_below_k": 0.0}
    missing = [r for r in people.missing if r.family in TABLE_FAMILIES]
    if missing:  # every person both may publish may be singled out: those this release publishes
        published = int(people.mine.records if weighted else people.mine.people)
        figs.update(people_below_k=published, share_below_k=1.0 if published else 0.0)
        comp.notes.append(
            f"{len(missing)} earlier release(s) of this input ({', '.join(r.release_id or r.uid for r in missing)}) have no "
            "class labels in the ledger: every person published by both may be singled out (a bound, not a count)"
        )
    comp.figures.update(figs)
    below = int(figs["people_below_k"])
    unit = "records (each record its own person)" if weighted else "people"
    comp.checks.append(
        Check(
            CHECK_NAME,
            below == 0,
            below,
            0,
            stats={"people_published": int(figs.get("people_published", 0))},
            detail=f"{unit} this release leaves in an intersection class of {len(tables) + 1} releases below k = {k} "
            f"({figs['share_below_k']:.2%} of the {unit} published)",
        )
    )
    if diversity and "people_disclosed" in figs:
        bad = int(figs["people_disclosed"])
        comp.checks.append(
            Check(
                DIVERSITY_CHECK,
                bad == 0,
                bad,
                0,
                detail=f"shared {unit} whose intersection class holds one value of {sens} while their class in every "
                "release alone held several",
            )
        )
    return comp

"""A refreshed extract anonymised consistently with the earlier releases of the same people
(docs/anonymity.md#a-refreshed-extract-released-consistently).

This month's table shares most people with last month's, which was released k-anonymous. A
fresh anonymisation of the new extract cuts other classes, and an attacker who holds both
releases intersects each person's two classes (:mod:`.composition`): on the people sample, 770
of the 800 people the two extracts share fall below k. The ledger refuses such a release; this
module makes one that passes.

The method follows the invariance principle of m-invariance (Xiao & Tao, "m-Invariance:
Towards Privacy Preserving Re-publication of Dynamic Datasets", SIGMOD 2007): a person who
appears in several releases must be indistinguishable, in every one of them, from the same
group of people with the same sensitive values. m-invariance keeps a person's group by adding
counterfeit records for the members who left; here nothing fake is published — members who
cannot be kept consistently are suppressed instead, so every published row is a real record and
every figure of the release stays an honest count. Concretely, with E(p) the tuple of the
classes of person p in the earlier releases that share people with this one:

1. **The people already released** (E(p) known) are grouped by E. A group is published as one
   class of the new release, its quasi-identifiers generalised to cover exactly its members
   (numbers as ranges, categories as the lowest common node of their hierarchy): the
   intersection of a member's classes is then the whole group.
2. **The people who left** (in the earlier releases, not in this extract) must not be singled
   out by difference: the earlier class minus the published group would be them alone. So a
   group with d leavers, 0 < d < k, publishes only ``size - (k - d)`` members (the others are
   suppressed: at least k people of that earlier class are then absent from the release
   together), and a group that cannot keep k members is suppressed whole.
3. **Sensitive values stay diverse**: a published group must satisfy the release's
   l-diversity, and — even without l — a group whose members' earlier classes all held
   several sensitive values may not publish a single one (the members dropped for 2. are those
   of the most frequent values first).
4. **The people new in this extract** are anonymised among themselves with the release's
   method (Mondrian ...): their classes hold at least k new people, so no earlier release can
   narrow them; fewer than k new people are suppressed.

The ledger's own composition check (:func:`.composition.compose_tables`) then verifies the
result like any release: no person in an intersection class below k, no class of one sensitive
value where each release alone showed several. What it costs is reported beside a fresh
anonymisation of the same extract (suppressed records, NCP).

Memory: the extract's quasi-identifiers, sensitive column and persons, and the earlier
releases' people, are held on the driver (a table of people: millions of rows fit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..bitops import splitmix64
from ..errors import InvalidParameter
from .composition import NOT_PUBLISHED, TABLE_FAMILIES, _tuple_hash

__all__ = ["consistent_anonymize", "earlier_tables"]

#: the label of a suppressed quasi-identifier value
SUPPRESSED = "*"


def earlier_tables(ledger: Any, ids: np.ndarray) -> list[tuple[Any, dict[str, np.ndarray]]]:
    """The earlier table releases in ``ledger`` (committed or pending) that hold at least one of
    the persons ``ids``, with every person of theirs (``person``, ``label``, ``sens``)."""
    from ..ledger.people import people_of, read_all
    from ..ledger.store import counts_in_composition

    mine = np.unique(ids)
    out, seen = [], set()
    for rec in ledger.records():
        if rec.family not in TABLE_FAMILIES or not counts_in_composition(rec):
            continue
        key = rec.release_id or rec.uid
        ref = people_of(ledger, rec) if key not in seen else None
        if ref is None:
            continue
        table = read_all(ledger, ref, ["label", "sens"])
        if np.intersect1d(mine, table["person"], assume_unique=True).size:
            seen.add(key)
            out.append((rec, table))
    return out


def _lookup(table: Mapping[str, np.ndarray], ids: np.ndarray, field: str) -> np.ndarray:
    p = table["person"]
    if not p.size:
        return np.zeros(ids.size, np.uint64)
    pos = np.minimum(np.searchsorted(p, ids), p.size - 1)
    hit = p[pos] == ids
    vals = np.asarray(table.get(field, np.zeros(p.size, np.uint64)))[pos]
    return np.where(hit, vals, 0).astype(np.uint64)


def _row_codes(fs: Any, frame: pd.DataFrame) -> np.ndarray:
    """The leaf code of every row's quasi-identifier values in the frequency set's domains."""
    codes = np.empty((len(frame), len(fs.qi)), dtype=np.int64)
    for j, (a, d) in enumerate(zip(fs.qi, fs.domains)):
        index = pd.Index(list(d.values))
        got = index.get_indexer(pd.Index(frame[a].astype(object).tolist()))
        if (got < 0).any():
            raise InvalidParameter(f"a value of {a} is not in the table's domain (the frequency set): cannot label it")
        codes[:, j] = got
    return codes


def _drop_for_k(members: np.ndarray, sens: np.ndarray, r: int, order_key: np.ndarray) -> np.ndarray:
    """``members`` (positions) without ``r`` of them: those of the most frequent sensitive
    values first (keeps the group diverse), ties by the keyed order of the persons."""
    keep = list(members[np.argsort(order_key[members], kind="stable")])
    for _ in range(r):
        values, counts = np.unique(sens[keep], return_counts=True)
        top = values[np.argmax(counts)]
        victim = next(i for i in keep if sens[i] == top)
        keep.remove(victim)
    return np.array(keep, dtype=np.int64)


def consistent_anonymize(
    ddf: Any,
    people: Any,
    *,
    qi: Sequence[str],
    k: int,
    sensitive: str | None,
    hierarchies: Mapping[str, Any] | None,
    l: float | None,
    kind: str,
    c: float | None,
    method: str,
    keep: Sequence[str],
    fs: Any,
    ledger: Any,
    client: Any = None,
    progress: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """Anonymise ``ddf`` consistently with the earlier table releases in ``ledger`` that hold
    its people (see the module docstring); returns the
    :class:`~.anonymize.AnonymizationResult` and the owner's figures of the method."""
    from ..ledger.people import keyed_people
    from ..progress import compute
    from ._diversity import diverse_mask
    from .anonymize import AnonymizationResult, _region_labels, anonymize

    if ledger is None:
        raise InvalidParameter(
            "a consistent release needs the ledger of the earlier releases", fix="`consistent` with a `ledger`"
        )
    qi = list(qi)
    cols = [*qi, *([sensitive] if sensitive else [])]
    # two computes: a dataframe expression and delayed blocks do not mix in one graph
    (frame,) = compute(ddf[cols], client=client, progress=progress)
    (hashes,) = compute(people.blocks, client=client, progress=False)
    frame = frame.reset_index(drop=True)
    n = len(frame)
    ids = keyed_people(ledger, np.concatenate([np.asarray(h) for h in hashes]) if hashes else np.zeros((0, 2), np.uint64))
    tables = earlier_tables(ledger, ids)
    r = len(tables)
    labels = np.zeros((n, r), np.uint64)
    for j, (_, t) in enumerate(tables):
        labels[:, j] = _lookup(t, ids, "label")
    stayer = (labels != NOT_PUBLISHED).any(axis=1) if r else np.zeros(n, bool)
    e_row = _tuple_hash(labels)

    # the earlier population of every tuple E: who was published, how many are here again
    if r:
        everyone = np.unique(np.concatenate([t["person"] for _, t in tables]))
        their = np.column_stack([_lookup(t, everyone, "label") for _, t in tables])
        published = (their != NOT_PUBLISHED).any(axis=1)
        e_all = _tuple_hash(their[published])
        e_vals, e_counts = np.unique(e_all, return_counts=True)
        # an earlier class was diverse when it held two sensitive values or more
        diverse_earlier = []
        for _, t in tables:
            lab, sens = t["label"], t.get("sens", np.zeros(t["label"].size, np.uint64))
            on = lab != NOT_PUBLISHED
            pairs = np.unique(np.stack([lab[on], sens[on]], axis=1), axis=0) if on.any() else np.zeros((0, 2), np.uint64)
            cls, per = np.unique(pairs[:, 0], return_counts=True)
            diverse_earlier.append(set(cls[per > 1].tolist()))
    else:
        e_vals, e_counts = np.zeros(0, np.uint64), np.zeros(0, np.int64)
        diverse_earlier = []

    sens_codes = pd.factorize(frame[sensitive].astype(object))[0] if sensitive else np.zeros(n, np.int64)
    n_sens = int(sens_codes.max()) + 1 if n and sensitive else 1
    order_key = splitmix64(ids)
    published_group = np.full(n, -1, dtype=np.int64)  # stayer rows: their group id, -1 suppressed
    figures = {"earlier_releases": [rec.release_id or rec.uid for rec, _ in tables], "shared_people": 0}
    groups_total = groups_published = suppressed_stayers = 0
    if stayer.any():
        rows = np.flatnonzero(stayer)
        # one decision per person: a person's records are published or suppressed together
        person_ids, first = np.unique(ids[rows], return_index=True)
        figures["shared_people"] = int(person_ids.size)
        grp_e = e_row[rows]
        for gid, e in enumerate(np.unique(grp_e)):
            groups_total += 1
            members = rows[grp_e == e]
            persons = np.unique(ids[members])
            s = int(persons.size)
            pos = np.searchsorted(e_vals, e)
            total = int(e_counts[pos]) if pos < e_vals.size and e_vals[pos] == e else s
            d = max(0, total - s)
            keep_rows = members
            if 0 < d < k:  # leavers: k of their earlier class must stay unpublished with them
                drop = k - d
                if s - drop >= k:
                    # drop whole persons: the first record of each stands for the person
                    reps = members[np.unique(ids[members], return_index=True)[1]]
                    kept = _drop_for_k(reps, sens_codes, drop, order_key)
                    keep_rows = members[np.isin(ids[members], ids[kept])]
                else:
                    keep_rows = members[:0]
            n_keep = int(np.unique(ids[keep_rows]).size)
            ok = n_keep >= k
            if ok and sensitive:
                counts = np.bincount(sens_codes[keep_rows], minlength=n_sens)[None, :]
                if l is not None:
                    ok = bool(diverse_mask(counts, l, kind, c)[0])
                if ok and (counts > 0).sum() == 1:
                    # one value published where every earlier class of these people showed several
                    lab = labels[keep_rows[0]]
                    was = all(lab[j] in diverse_earlier[j] for j in range(r) if lab[j] != NOT_PUBLISHED)
                    ok = not was
            if ok:
                published_group[keep_rows] = gid
                groups_published += 1
            suppressed_stayers += int(np.unique(ids[members]).size) - (n_keep if ok else 0)

    # the people new in this extract: anonymised among themselves with the release's method
    new_rows = np.flatnonzero(~stayer)
    q = len(qi)
    out = np.full((n, q), SUPPRESSED, dtype=object)
    pen = np.ones((n, q))
    joiners_suppressed = 0
    joiner_classes = 0
    if new_rows.size:
        n_new_persons = int(np.unique(ids[new_rows]).size)
        if n_new_persons >= k:
            sub = frame.iloc[new_rows].reset_index(drop=True)
            res = anonymize(
                sub,
                qi,
                k=k,
                sensitive=sensitive,
                hierarchies=hierarchies,
                l=l,
                kind=kind,
                c=c,
                method=method,
                client=client,
                progress=False,
            )
            (table,) = compute(res.table, client=client, progress=False)
            table = table.reset_index(drop=True)
            out[new_rows] = table[qi].astype(object).to_numpy()
            supp = (table[qi].astype(str) == SUPPRESSED).all(axis=1).to_numpy()
            joiners_suppressed = int(supp.sum())
            joiner_classes = int(len(res.class_sizes))
            # NCP of the joiners' rows: from the result's per-attribute means over them
            for j, a in enumerate(qi):
                pen[new_rows, j] = res.ncp_per_attribute[a]
        else:
            joiners_suppressed = int(new_rows.size)
    pub = np.flatnonzero(published_group >= 0)
    if pub.size:
        codes = _row_codes(fs, frame.iloc[pub])
        lab, p = _region_labels(fs, codes, published_group[pub])
        out[pub] = lab
        pen[pub] = p

    released = _publish(ddf, out, qi, sensitive, keep)
    kept = (out != SUPPRESSED).any(axis=1)
    frame_labels = pd.DataFrame(out[kept], columns=qi).astype(str)
    sizes = frame_labels.groupby(qi).size().to_numpy(dtype=np.int64) if kept.any() else np.zeros(0, np.int64)
    result = AnonymizationResult(
        table=released,
        method=method,
        qi=qi,
        sensitive=sensitive,
        k=int(k),
        l=l,
        kind=kind,
        c=c,
        max_suppression=0.0,
        node=None,
        class_sizes=sizes,
        n_records=n,
        n_suppressed=int((~kept).sum()),
        ncp_per_attribute={a: float(pen[:, j].mean()) if n else 0.0 for j, a in enumerate(qi)},
        seconds=0.0,
        search={"consistent": True},
        partition_rows=list(getattr(fs, "partition_rows", None) or []) or None,
    )
    figures.update(
        {
            "earlier_groups": groups_total,
            "groups_published": groups_published,
            "shared_people_suppressed": suppressed_stayers,
            "new_people": int(np.unique(ids[new_rows]).size) if new_rows.size else 0,
            "new_people_classes": joiner_classes,
            "new_records_suppressed": joiners_suppressed,
        }
    )
    return result, figures


def _label_part(part: pd.DataFrame, start: int, labels: np.ndarray, qi: list[str], columns: list[str]) -> pd.DataFrame:
    """One partition of the release: its rows' labels in place of the quasi-identifiers."""
    n = len(part)
    out = part.reset_index(drop=True)[columns].copy()
    for j, a in enumerate(qi):
        out[a] = pd.array(labels[start : start + n, j].astype(str), dtype="string[pyarrow]")
    return out


def _publish(ddf: Any, labels: np.ndarray, qi: list[str], sensitive: str | None, keep: Sequence[str]) -> Any:
    """The released table: per row, its labels for the quasi-identifiers, then the sensitive
    column and ``keep`` (the same columns as :func:`.publish.publish`), the input's partitions."""
    import dask
    import dask.dataframe as dd

    from ..progress import compute

    columns = [*qi, *([sensitive] if sensitive else []), *[c for c in keep if c != sensitive]]
    (lengths,) = compute(ddf.map_partitions(len), progress=False)
    starts = np.concatenate([[0], np.cumsum(np.asarray(lengths).ravel())]).astype(np.int64)
    meta = _label_part(ddf._meta, 0, np.empty((0, len(qi)), dtype=object), qi, columns)
    fn = dask.delayed(_label_part, pure=True)
    labels_d = dask.delayed(labels, pure=True)
    parts = [fn(p, int(starts[i]), labels_d, qi, columns) for i, p in enumerate(ddf.to_delayed())]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)

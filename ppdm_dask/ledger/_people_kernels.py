"""Per-person values of a release, one block or one bucket at a time (pure numpy; no Dask).

The ledger stores, for every release, one row per person: the person's keyed pseudonym
(``person``, uint64, sorted), the number of the person's records (``records``) and the family's
values (a class label, ε, components ...), each aggregated over the person's records by one of
:data:`AGGREGATIONS`. Rows are cut into ``2**bits`` buckets by the top bits of the pseudonym, so
that two releases with different numbers of buckets still join bucket by bucket
(:func:`bucket_range`): one task holds one bucket of each release, never everything.

* :func:`person_ids` — the keyed pseudonyms of a block's persons (SipHash-2-4 of their unkeyed
  128-bit hashes under the ledger's person key);
* :func:`split_people` — a block's records aggregated per person and cut into buckets;
* :func:`merge_people` — one bucket's pieces from every block, aggregated again;
* :func:`slice_range`, :func:`bucket_range`, :func:`intersect` — what the joins need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..bitops import splitmix64

__all__ = [
    "AGGREGATIONS",
    "Table",
    "person_ids",
    "bucket_of",
    "bucket_range",
    "split_people",
    "merge_people",
    "slice_range",
    "intersect",
    "empty_table",
    "set_hash",
]

#: how a value column is aggregated over a person's records: ``sum``, ``min``, ``max``, or
#: ``set`` (one value when all the person's records agree, else a hash of the set of values)
AGGREGATIONS = ("sum", "min", "max", "set")
#: a table: column name -> 1-D array, ``person`` sorted ascending and unique
Table = dict[str, np.ndarray]
_SET_SALT = np.uint64(0x510E527FADE682D1)


def person_ids(hashes: np.ndarray, k0: int, k1: int) -> np.ndarray:
    """Keyed pseudonyms (uint64) of ``(rows, 2)`` unkeyed person hashes: SipHash-2-4 of the 16
    bytes of each hash under the key words ``k0, k1`` (a pseudorandom function: without the key
    nobody can compute the pseudonym of a guessed person)."""
    from ..data.siphash import siphash_pairs

    h = np.asarray(hashes, dtype=np.uint64).reshape(-1, 2)
    return siphash_pairs(k0, k1, np.ascontiguousarray(h[:, 0]), np.ascontiguousarray(h[:, 1]))


def bucket_of(ids: np.ndarray, bits: int) -> np.ndarray:
    """Bucket of every pseudonym at ``2**bits`` buckets: its top ``bits`` bits."""
    ids = np.asarray(ids, dtype=np.uint64)
    if bits <= 0:
        return np.zeros(ids.size, dtype=np.int64)
    return (ids >> np.uint64(64 - bits)).astype(np.int64)


def bucket_range(bucket: int, bits: int) -> tuple[int, int]:
    """The pseudonyms ``[lo, hi)`` of ``bucket`` at ``2**bits`` buckets, as Python integers."""
    width = 1 << (64 - bits)
    return int(bucket) * width, (int(bucket) + 1) * width


def empty_table(columns: Mapping[str, Any]) -> Table:
    """A table of no person with the columns ``person``, ``records`` and ``columns`` (name -> dtype)."""
    out: Table = {"person": np.zeros(0, np.uint64), "records": np.zeros(0, np.int64)}
    for name, dtype in columns.items():
        out[name] = np.zeros(0, dtype)
    return out


def set_hash(values: np.ndarray) -> np.uint64:
    """The hash that stands for a set of several distinct values (order-free, never 0 or 1)."""
    v = np.unique(np.asarray(values, dtype=np.uint64))
    with np.errstate(over="ignore"):
        h = np.sum(splitmix64(v ^ _SET_SALT), dtype=np.uint64)
    return np.uint64(h | np.uint64(2))


def _groups(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sort order of ``ids`` and the start of every run of one id in it."""
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if s.size else np.zeros(0, np.int64)
    return order, starts


def _reduce(values: np.ndarray, starts: np.ndarray, how: str) -> np.ndarray:
    if values.size == 0:
        return values[:0]
    if how == "sum":
        return np.add.reduceat(values, starts)
    if how == "min":
        return np.minimum.reduceat(values, starts)
    if how == "max":
        return np.maximum.reduceat(values, starts)
    raise ValueError(f"unknown aggregation {how!r}")


def _aggregate(ids: np.ndarray, records: np.ndarray, values: Mapping[str, np.ndarray], aggs: Mapping[str, str]) -> Table:
    """One row per person: ``records`` summed, each value aggregated by ``aggs`` (``set`` columns
    become the pairs ``(person, distinct value)`` under ``pairs:<name>`` and ``pairs_person:<name>``)."""
    order, starts = _groups(ids)
    s_ids = ids[order]
    out: Table = {"person": s_ids[starts], "records": _reduce(records[order], starts, "sum")}
    for name, how in aggs.items():
        v = np.asarray(values[name])
        if how == "set":
            pairs = np.unique(np.stack([ids, v.astype(np.uint64)], axis=1), axis=0) if ids.size else np.zeros((0, 2), np.uint64)
            out["pairs_person:" + name] = pairs[:, 0]
            out["pairs:" + name] = pairs[:, 1]
        else:
            out[name] = _reduce(v[order], starts, how)
    return out


def split_people(
    hashes: np.ndarray,
    values: Mapping[str, np.ndarray] | None,
    aggs: Mapping[str, str],
    k0: int,
    k1: int,
    bits: int,
    weights: np.ndarray | None = None,
) -> tuple[Table, ...]:
    """Kernel: one block's records, keyed (:func:`person_ids`), aggregated per person and cut
    into ``2**bits`` pieces by bucket. ``values`` are the family's per-record values (name ->
    1-D array, one entry per record); ``weights`` the records each row stands for (1 each by
    default)."""
    h = np.asarray(hashes, dtype=np.uint64).reshape(-1, 2)
    n = h.shape[0]
    vals = {k: np.asarray(v) for k, v in (values or {}).items()}
    for name, v in vals.items():
        if v.shape[0] != n:
            raise ValueError(f"the release's value {name!r} has {v.shape[0]} rows for {n} persons: not aligned")
    ids = person_ids(h, k0, k1)
    recs = np.ones(n, np.int64) if weights is None else np.asarray(weights, np.int64)
    table = _aggregate(ids, recs, vals, aggs)
    # the rows are sorted by pseudonym and a bucket is a range of them: cut by binary search
    starts = _bucket_starts(bits)
    cut = _cuts(table["person"], starts)
    cut_pairs = {name: _cuts(table["pairs_person:" + name], starts) for name, how in aggs.items() if how == "set"}
    out = []
    for b in range(1 << max(0, bits)):
        piece: Table = {k: v[cut[b] : cut[b + 1]] for k, v in table.items() if not k.startswith("pairs")}
        for name, c in cut_pairs.items():
            piece["pairs_person:" + name] = table["pairs_person:" + name][c[b] : c[b + 1]]
            piece["pairs:" + name] = table["pairs:" + name][c[b] : c[b + 1]]
        out.append(piece)
    return tuple(out)


def _bucket_starts(bits: int) -> np.ndarray:
    """The first pseudonym of every bucket at ``2**bits`` buckets."""
    if bits <= 0:
        return np.zeros(1, dtype=np.uint64)
    return np.array([b << (64 - bits) for b in range(1 << bits)], dtype=np.uint64)


def _cuts(sorted_ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Where each bucket begins in ``sorted_ids``, and its length at the end."""
    return np.r_[np.searchsorted(sorted_ids, starts, side="left"), sorted_ids.size].astype(np.int64)


def merge_people(pieces: Sequence[Table], aggs: Mapping[str, str]) -> Table:
    """Kernel: one bucket's pieces (from every block) aggregated per person; ``set`` columns
    resolved (one value, or :func:`set_hash` of the person's distinct values)."""
    pieces = [p for p in pieces if p is not None]
    ids = np.concatenate([p["person"] for p in pieces]) if pieces else np.zeros(0, np.uint64)
    recs = np.concatenate([p["records"] for p in pieces]) if pieces else np.zeros(0, np.int64)
    plain = {k: np.concatenate([p[k] for p in pieces]) for k, how in aggs.items() if how != "set"} if pieces else {}
    order, starts = _groups(ids)
    out: Table = {"person": ids[order][starts] if ids.size else ids, "records": _reduce(recs[order], starts, "sum")}
    for name, how in aggs.items():
        if how != "set":
            out[name] = _reduce(plain[name][order], starts, how)
            continue
        pp = np.concatenate([p["pairs_person:" + name] for p in pieces]) if pieces else np.zeros(0, np.uint64)
        pv = np.concatenate([p["pairs:" + name] for p in pieces]) if pieces else np.zeros(0, np.uint64)
        pairs = np.unique(np.stack([pp, pv], axis=1), axis=0) if pp.size else np.zeros((0, 2), np.uint64)
        col = np.zeros(out["person"].size, np.uint64)
        if pairs.size:
            first = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
            counts = np.diff(np.r_[first, pairs.shape[0]])
            col_vals = pairs[first, 1].copy()
            for i in np.flatnonzero(counts > 1):
                col_vals[i] = set_hash(pairs[first[i] : first[i] + counts[i], 1])
            pos = np.searchsorted(out["person"], pairs[first, 0])
            col[pos] = col_vals
        out[name] = col
    return out


def slice_range(table: Table, lo: int, hi: int) -> Table:
    """The rows of a table (sorted by person) whose pseudonym lies in ``[lo, hi)``."""
    p = table["person"]
    a = int(np.searchsorted(p, np.uint64(lo), side="left")) if lo > 0 else 0
    b = int(np.searchsorted(p, np.uint64(hi), side="left")) if hi < 2**64 else p.size
    return {k: v[a:b] for k, v in table.items()}


def intersect(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``a`` and in ``b`` (each sorted, unique) of the pseudonyms they share."""
    _, ia, ib = np.intersect1d(a, b, assume_unique=True, return_indices=True)
    return ia, ib

"""Whose each record is: the person behind the rows of an input (docs/ledger.md#the-person).

Privacy is owed to people, not rows: a person with 89 sessions has 89 baskets, a refreshed
extract holds most of last month's people again. Every release therefore knows, for each of its
records, the person it belongs to:

* **identifier** — a table with declared identifier columns (``name``, ``patient_id``): the
  person is the tuple of those values (the columns are dropped from the release, as always);
* **user** — baskets grouped from an event log: the ``person`` column that
  :func:`ppdm_dask.data.events.read_events` writes, a keyed pseudonym of the event log's user;
* **record** — no person column: the record itself (equal records share one hash and count as
  that many people of one record each; a record that changed between two extracts is another
  person). Said so wherever the person is named.

This module gives, one block at a time, the **unkeyed** 128-bit hash of each record's person
(two uint64 per row; pure numpy/pyarrow) and :class:`People`, the lazy blocks of those hashes
that a release carries. The hashes never leave memory: the ledger keys them with its own secret
(:meth:`ppdm_dask.ledger.Ledger.person_key`) before anything is stored, so no file holds a value
from which a guessed person could be tested without the secret.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _digest_kernels as K

__all__ = [
    "PERSON_COLUMN",
    "KINDS",
    "People",
    "identifier_hashes",
    "pseudonym_hashes",
    "describe",
    "frame_people",
    "transaction_people",
    "array_people",
    "block_person_counts",
    "merge_person_counts",
    "records_per_person_lazy",
    "histogram_figures",
    "rechunk_people",
]

#: the row column of baskets grouped from events that names their person (a keyed pseudonym)
PERSON_COLUMN = "person"
#: how a release knows its persons (see the module docstring)
KINDS = ("identifier", "user", "record")
#: the row column of transactions that identifies a record (an identifier when present)
RECORD_ID = "record_id"
_PSEUDONYM_SALT = np.uint64(0x6A09E667BB67AE85)
_POSITION_SALT = np.uint64(0x3C6EF372A54FF53A)


@dataclass
class People:
    """Whose each record of a release is.

    Attributes
    ----------
    blocks : list
        One lazy ``(rows, 2)`` uint64 array of unkeyed person hashes per block, aligned with the
        release's ledger rows (:meth:`~ppdm_dask.release.Release.ledger_rows`).
    kind : {"identifier", "user", "record"}
    columns : tuple of str
        The identifier columns (``identifier``), the pseudonym column (``user``), or none.
    bound : int, optional
        At most this many records per person (the events' ``max_baskets_per_user``); None: no
        bound was applied.
    """

    blocks: list[Any]
    kind: str
    columns: tuple[str, ...] = ()
    bound: int | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind of person {self.kind!r}; one of {KINDS}")

    @property
    def known(self) -> bool:
        """Whether a person is named (not the record itself): floors and figures then count
        people, not records."""
        return self.kind != "record"

    def describe(self) -> str:
        """Who the person is, in words (for summaries and reports)."""
        return describe(self.kind, self.columns)


def describe(kind: str, columns: Sequence[str] = ()) -> str:
    """The person of ``kind`` in words."""
    if kind == "identifier":
        cols = ", ".join(columns)
        return f"the identifier column{'s' if len(columns) > 1 else ''} {cols}"
    if kind == "user":
        return "the event log's user (a keyed pseudonym)"
    return "the record itself (no person column)"


def identifier_hashes(columns: Sequence[Any]) -> np.ndarray:
    """``(rows, 2)`` uint64 hashes of the tuple of identifier values of every row (``columns``:
    pyarrow or numpy arrays of the identifier columns, in the declared order). Values hash by
    type (:func:`~._digest_kernels.column_hashes`: ``"007"`` is not ``7``) and by position, not
    by column name, so a renamed identifier column still names the same people."""
    if not columns:
        raise ValueError("no identifier column")
    n = len(columns[0])
    out = np.zeros((n, 2), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, values in enumerate(columns):
            h = K.column_hashes(values) ^ K._splitmix(np.full(n, j, np.uint64) + _POSITION_SALT)
            out += K._mix_two(h)
    return out


def pseudonym_hashes(values: Any) -> np.ndarray:
    """``(rows, 2)`` uint64 hashes of the uint64 person pseudonyms of baskets grouped from events."""
    v = np.asarray(values).astype(np.uint64, copy=False).ravel()
    return np.stack([v, np.full(v.size, _PSEUDONYM_SALT, np.uint64)], axis=1)


def _column_people(values: Any) -> np.ndarray:
    return identifier_hashes([np.asarray(values)])


def _frame_block_people(df: Any, columns: tuple[str, ...]) -> np.ndarray:
    import pyarrow as pa

    arrays = []
    for c in columns:
        s = df[c]
        try:
            arrays.append(pa.Array.from_pandas(s))
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed objects: by their text
            arrays.append(pa.array(s.astype(str).to_numpy(), type=pa.string()))
    return identifier_hashes(arrays)


def _frame_block_records(df: Any) -> np.ndarray:
    from .digest import _frame_hashes

    return _frame_hashes(df)


def frame_people(ddf: Any, identifiers: Sequence[str] = ()) -> People:
    """The persons of a table (a dask or pandas DataFrame), one block per partition: by its
    ``identifiers`` when given, else each record is its own person."""
    import dask

    parts = list(ddf.to_delayed()) if hasattr(ddf, "to_delayed") else [dask.delayed(ddf)]
    cols = tuple(str(c) for c in identifiers)
    if cols:
        fn = dask.delayed(_frame_block_people, pure=True)
        return People([fn(p, cols) for p in parts], "identifier", cols)
    fn = dask.delayed(_frame_block_records, pure=True)
    return People([fn(p) for p in parts], "record")


def transaction_people(tx: Any) -> People:
    """The persons of a TransactionArray, one block per partition: its ``person`` column (baskets
    grouped from events) when it has one, else its ``record_id`` column (an identifier), else
    each basket is its own person (hashed with its items, weights and row columns, as its content
    digest hashes it)."""
    import dask

    from .digest import row_hashes

    if RECORD_ID in tx.columns:
        col = tx.columns[RECORD_ID].to_delayed().ravel()
        fn = dask.delayed(_column_people, pure=True)
        return People([fn(c) for c in col], "identifier", (RECORD_ID,))
    if PERSON_COLUMN in tx.columns:
        col = tx.columns[PERSON_COLUMN].to_delayed().ravel()
        fn = dask.delayed(pseudonym_hashes, pure=True)
        bound = ((tx.metadata or {}).get("ingest") or {}).get("max_baskets_per_user")
        return People([fn(c) for c in col], "user", (PERSON_COLUMN,), int(bound) if bound else None)
    _, parts, _ = row_hashes(tx)
    return People(list(parts), "record")


def array_people(X: Any) -> People:
    """The persons of numeric records (a dask or numpy array): each record its own person."""
    from .digest import row_hashes

    _, parts, _ = row_hashes(X)
    return People(list(parts), "record")


# ---------------------------------------------------------------------- records per person
def _person_keys(hashes: np.ndarray) -> np.ndarray:
    """One uint64 per person hash (its two words mixed): to count records per person."""
    h = np.asarray(hashes, dtype=np.uint64).reshape(-1, 2)
    with np.errstate(over="ignore"):
        return h[:, 0] ^ K._splitmix(h[:, 1] ^ _PSEUDONYM_SALT)


def block_person_counts(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel: the distinct persons of a block (sorted keys) and their records in it."""
    keys, counts = np.unique(_person_keys(hashes), return_counts=True)
    return keys, counts.astype(np.int64)


def merge_person_counts(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Kernel: the records per person of several blocks, added up."""
    keys = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint64)
    counts = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inv.ravel(), weights=counts, minlength=uniq.size).astype(np.int64)


def _histogram(total: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return np.bincount(total[1]).astype(np.int64) if total[1].size else np.zeros(1, np.int64)


def records_per_person_lazy(people: People) -> Any:
    """A delayed histogram of the records per person: ``h[r]`` persons have ``r`` records (one
    pass; a tree of sorted merges, so that no task holds more than the persons of its blocks)."""
    import dask

    from ..graph import tree_reduce

    parts = [dask.delayed(block_person_counts, pure=True)(b) for b in people.blocks]
    if not parts:
        return dask.delayed(np.zeros(1, np.int64))
    return dask.delayed(_histogram, pure=True)(tree_reduce(parts, merge_person_counts, split_every=4))


def histogram_figures(hist: np.ndarray) -> dict[str, Any]:
    """``persons``, ``records``, ``median``, ``p90`` and ``max`` records per person of a
    histogram of records per person (:func:`records_per_person_lazy`)."""
    h = np.asarray(hist, dtype=np.int64)
    n = int(h.sum())
    if n == 0:
        return {"persons": 0, "records": 0, "median": 0, "p90": 0, "max": 0}
    cum = np.cumsum(h)

    def quantile(q: float) -> int:
        return int(np.searchsorted(cum, q * n, side="left"))

    return {
        "persons": n,
        "records": int((h * np.arange(h.size)).sum()),
        "median": quantile(0.5),
        "p90": quantile(0.9),
        "max": int(np.flatnonzero(h)[-1]),
    }


def rechunk_people(people: People, rows: Sequence[int], to_rows: Sequence[int]) -> People:
    """``people`` (blocks of ``rows`` records) cut into blocks of ``to_rows`` records instead (the
    same records in the same order), to align them with a release cut otherwise."""
    if [int(r) for r in rows] == [int(r) for r in to_rows]:
        return people
    import dask.array as da

    arr = da.concatenate(
        [da.from_delayed(b, shape=(int(r), 2), dtype=np.uint64) for b, r in zip(people.blocks, rows)], axis=0
    ).rechunk((tuple(int(r) for r in to_rows), 2))
    return People(list(arr.to_delayed().ravel()), people.kind, people.columns, people.bound, list(people.notes))

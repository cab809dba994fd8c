"""The people of the ledger: one row per person for every release, and the joins by person
(docs/ledger.md#the-person).

Every release a job writes also gives the ledger, for each person it holds, the person's keyed
pseudonym, the number of the person's records and the family's values (kernels in
:mod:`._people_kernels`). They are stored under ``people/<record>/`` as hash-partitioned
Parquet: ``2**bits`` files ``<bits>-<bucket>.parquet``, each sorted by pseudonym, and a
``_meta.json`` written last (a release's people count only once it exists). ``bits`` grows
with the release so that a bucket holds about :data:`PEOPLE_PER_BUCKET` people.

Why hash-partitioned Parquet in the ledger's own folder rather than an open table format
(Delta Lake, Iceberg): the ledger is already a folder of immutable objects under its commit
lock on any fsspec URL, and a release's people are written once and never updated, so what a
table format adds — transactions over appends and updates, a catalogue — is not needed here,
while it would add a heavy dependency (``deltalake`` ships a Rust engine, ``pyiceberg`` a
catalogue) for every user of a laptop ledger. Parquet sorted by pseudonym is read by any engine
(DuckDB, Spark, pandas) should the owner want to.

Joins run as Dask tasks, one per bucket of the new release: each reads its own bucket and the
rows of every earlier release in the same range of pseudonyms (one file, part of a coarser file,
or several finer files), applies the family's kernel and returns a small partial result; a tree
reduction combines them. No task holds more than one bucket of each release, and nothing is
gathered per person on the driver.
"""

from __future__ import annotations

import io
import json
import math
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _people_kernels as K
from .store import Ledger, Record, put_object

__all__ = [
    "PEOPLE_DIR",
    "PEOPLE_PER_BUCKET",
    "PeopleRef",
    "bits_for",
    "person_words",
    "bucket_tasks",
    "write_meta",
    "people_of",
    "read_range",
    "read_all",
    "keyed_people",
    "write_side_table",
    "read_side_table",
    "overlaps",
    "join",
]

#: the folder of the people of every release in a ledger
PEOPLE_DIR = "people"
#: people a bucket holds at most (about: the pseudonyms are uniform); ~ 8 bytes each per column
PEOPLE_PER_BUCKET = 1 << 20
#: at most 2**MAX_BITS buckets per release
MAX_BITS = 12
_META = "_meta.json"
PEOPLE_VERSION = 1


def bits_for(n_records: int) -> int:
    """Bucket bits for a release of ``n_records`` records (an upper bound on its people)."""
    n = max(1, int(n_records))
    return int(min(MAX_BITS, max(0, math.ceil(math.log2(n / PEOPLE_PER_BUCKET))))) if n > PEOPLE_PER_BUCKET else 0


def person_words(ledger: Ledger) -> tuple[int, int]:
    """The two 64-bit SipHash words of the ledger's person key."""
    words = np.frombuffer(ledger.person_key().mac("ppdm-ledger-person-ids"), dtype="<u8")
    return int(words[0]), int(words[1])


@dataclass(frozen=True)
class PeopleRef:
    """One release's people in the ledger (its ``_meta.json``)."""

    uid: str
    bits: int
    columns: Mapping[str, str]
    kind: str
    people: int
    records: int
    family: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        return posixpath.join(PEOPLE_DIR, self.uid)

    def meta(self) -> dict[str, Any]:
        return {
            "version": PEOPLE_VERSION,
            "bits": self.bits,
            "columns": dict(self.columns),
            "kind": self.kind,
            "people": self.people,
            "records": self.records,
            "family": self.family,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_meta(cls, uid: str, meta: Mapping[str, Any]) -> PeopleRef:
        return cls(
            uid,
            int(meta["bits"]),
            dict(meta.get("columns") or {}),
            str(meta.get("kind") or "record"),
            int(meta.get("people") or 0),
            int(meta.get("records") or 0),
            str(meta.get("family") or ""),
            dict(meta.get("extra") or {}),
        )


def _bucket_path(root: str, uid: str, bits: int, bucket: int) -> str:
    return posixpath.join(root, PEOPLE_DIR, uid, f"{bits:02d}-{bucket:05d}.parquet")


def _table_bytes(table: K.Table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({k: v for k, v in table.items()}), buf, compression="zstd", row_group_size=1 << 20)
    return buf.getvalue()


def _write_bucket(
    fs: Any, root: str, uid: str, bits: int, bucket: int, pieces: list[K.Table], aggs: dict[str, str]
) -> dict[str, int]:
    """Task: one bucket's pieces merged per person and written (the object whole: a rename
    locally, one put remotely). Returns its counts."""
    table = K.merge_people(pieces, aggs)
    put_object(fs, _bucket_path(root, uid, bits, bucket), _table_bytes(table))
    return {"people": int(table["person"].size), "records": int(table["records"].sum())}


def _split(hashes: Any, values: Any, aggs: dict[str, str], k0: int, k1: int, bits: int) -> tuple[K.Table, ...]:
    """Task: a block's records, per person, cut into buckets (``values``: the family's dict of
    per-record arrays, or a ``(values, weights)`` pair, or None)."""
    weights = None
    if isinstance(values, tuple):
        values, weights = values
    return K.split_people(hashes, values, aggs, k0, k1, bits, weights)


def bucket_tasks(
    ledger: Ledger,
    uid: str,
    people_blocks: Sequence[Any],
    value_blocks: Sequence[Any] | None,
    aggs: Mapping[str, str],
    bits: int,
    *,
    name: str = "ledger-people",
) -> list[Any]:
    """Graph: the tasks that compute a release's people and write their buckets (one split per
    block, one merge-and-write per bucket); each bucket task returns its counts."""
    import dask
    from dask.base import tokenize

    k0, k1 = person_words(ledger)
    n_buckets = 1 << bits
    agg = dict(aggs)
    token = tokenize(name, uid, [getattr(b, "key", b) for b in people_blocks], bits)
    split = dask.delayed(_split, nout=n_buckets, pure=True)
    values = list(value_blocks) if value_blocks is not None else [None] * len(people_blocks)
    if len(values) != len(people_blocks):
        raise ValueError(f"{len(values)} blocks of values for {len(people_blocks)} blocks of persons")
    parts = [
        split(h, v, agg, k0, k1, bits, dask_key_name=f"{name}-split-{token}-{i}")
        for i, (h, v) in enumerate(zip(people_blocks, values))
    ]
    fs, root = ledger.fs, ledger.root
    write = dask.delayed(_write_bucket, pure=False)
    return [
        write(fs, root, uid, bits, b, [p[b] for p in parts], agg, dask_key_name=f"{name}-write-{token}-{b}")
        for b in range(n_buckets)
    ]


def keyed_people(ledger: Ledger, hashes: np.ndarray) -> np.ndarray:
    """The keyed pseudonyms of ``(rows, 2)`` unkeyed person hashes (on the driver)."""
    return K.person_ids(hashes, *person_words(ledger))


def write_side_table(ledger: Ledger, uid: str, name: str, table: Mapping[str, np.ndarray]) -> None:
    """A further table of a release's people (e.g. the k-NN edges of a k-variance release
    between persons), ``people/<record>/<name>.parquet``."""
    ledger._put(posixpath.join(ledger.root, PEOPLE_DIR, uid, f"{name}.parquet"), _table_bytes(dict(table)))


def read_side_table(ledger: Ledger, uid: str, name: str) -> K.Table | None:
    """A table written by :func:`write_side_table`, or None."""
    try:
        return _read_file(ledger.fs, posixpath.join(ledger.root, PEOPLE_DIR, uid, f"{name}.parquet"), None)
    except FileNotFoundError:
        return None


def read_all(ledger: Ledger, ref: PeopleRef, columns: Sequence[str] | None = None) -> K.Table:
    """Every person of a release (on the driver: for joins that need them all, e.g. graphs)."""
    parts = [read_range(ledger.fs, ledger.root, ref, b, ref.bits, columns) for b in range(1 << ref.bits)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def write_meta(ledger: Ledger, ref: PeopleRef) -> None:
    """Write a release's ``_meta.json`` (last: its people count from then on)."""
    ledger._put(posixpath.join(ledger.root, ref.folder, _META), json.dumps(ref.meta(), indent=1).encode())


def people_of(ledger: Ledger, record: Record | str) -> PeopleRef | None:
    """The people of a recorded release, or None when the ledger holds none."""
    uid = record.uid if isinstance(record, Record) else str(record)
    meta = ledger._read_json(posixpath.join(ledger.root, PEOPLE_DIR, uid, _META))
    if not meta or int(meta.get("version", 0)) != PEOPLE_VERSION:
        return None
    return PeopleRef.from_meta(uid, meta)


def _read_file(fs: Any, path: str, columns: Sequence[str] | None) -> K.Table:
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as fh:
        t = pq.read_table(fh, columns=list(columns) if columns is not None else None)
    return {c: t.column(c).to_numpy() for c in t.column_names}


def read_range(fs: Any, root: str, ref: PeopleRef, bucket: int, bits: int, columns: Sequence[str] | None = None) -> K.Table:
    """The rows of release ``ref`` whose pseudonyms fall in ``bucket`` at ``2**bits`` buckets:
    part of one of its coarser files, one file, or several of its finer files."""
    cols = None if columns is None else ["person", "records", *[c for c in columns if c in ref.columns]]
    lo, hi = K.bucket_range(bucket, bits)
    if ref.bits <= bits:
        mine = bucket >> (bits - ref.bits)
        table = _read_file(fs, _bucket_path(root, ref.uid, ref.bits, mine), cols)
        return K.slice_range(table, lo, hi) if ref.bits < bits else table
    span = 1 << (ref.bits - bits)
    parts = [_read_file(fs, _bucket_path(root, ref.uid, ref.bits, b), cols) for b in range(bucket * span, (bucket + 1) * span)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _overlap_task(fs: Any, root: str, mine: PeopleRef, others: list[PeopleRef], bucket: int) -> np.ndarray:
    """Task: people of ``mine`` in ``bucket`` shared with each of ``others``."""
    own = read_range(fs, root, mine, bucket, mine.bits, columns=())["person"]
    out = np.zeros(len(others), np.int64)
    for j, ref in enumerate(others):
        theirs = read_range(fs, root, ref, bucket, mine.bits, columns=())["person"]
        out[j] = np.intersect1d(own, theirs, assume_unique=True).size
    return out


def _sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(parts, axis=0)


def overlaps(ledger: Ledger, mine: PeopleRef, others: Sequence[PeopleRef], **compute_kwargs: Any) -> list[int]:
    """How many people of ``mine`` each of ``others`` holds (one pass over the pseudonyms)."""
    if not others:
        return []
    return [int(x) for x in join(ledger, mine, list(others), None, _sum_arrays, task=_overlap_task, **compute_kwargs)]


def _join_task(
    fs: Any, root: str, mine: PeopleRef, others: list[PeopleRef], bucket: int, kernel: Callable[..., Any], columns: Any
) -> Any:
    """Task: the family's ``kernel(mine, [theirs ...])`` on one bucket's range."""
    own = read_range(fs, root, mine, bucket, mine.bits, columns)
    theirs = [read_range(fs, root, ref, bucket, mine.bits, columns) for ref in others]
    return kernel(own, theirs)


def join(
    ledger: Ledger,
    mine: PeopleRef,
    others: Sequence[PeopleRef],
    kernel: Callable[[K.Table, list[K.Table]], Any] | None,
    combine: Callable[[list[Any]], Any],
    *,
    columns: Sequence[str] | None = None,
    task: Callable[..., Any] | None = None,
    name: str = "ledger-join",
    **compute_kwargs: Any,
) -> Any:
    """Join the people of ``mine`` with those of ``others`` bucket by bucket: ``kernel(own
    bucket, [the others' rows in its range])`` on each of ``mine``'s buckets (Dask tasks), its
    results combined by ``combine`` in a tree; returns the combined result.

    Only the rows in ``mine``'s buckets' ranges are read, so people of ``others`` that are not in
    ``mine`` are still seen, in their range (a kernel that needs them, e.g. the people an
    earlier release published and this one left out, finds them there).
    """
    import dask
    from dask.base import tokenize

    from ..graph import tree_reduce
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    fs, root = ledger.fs, ledger.root
    refs = list(others)
    token = tokenize(name, mine, refs, getattr(kernel, "__qualname__", kernel), columns)
    if task is not None:
        fn = dask.delayed(task, pure=True)
        parts = [fn(fs, root, mine, refs, b, dask_key_name=f"{name}-{token}-{b}") for b in range(1 << mine.bits)]
    else:
        fn = dask.delayed(_join_task, pure=True)
        parts = [fn(fs, root, mine, refs, b, kernel, columns, dask_key_name=f"{name}-{token}-{b}") for b in range(1 << mine.bits)]
    (out,) = compute(tree_reduce(parts, combine), **compute_kwargs)
    return out

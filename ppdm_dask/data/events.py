"""Event logs (one row per user, item[, time]) into baskets: a distributed group-by.

:func:`read_events` reads an event table (Parquet file or folder, Hive partitions included, or
CSV; any fsspec URL) and groups its events into one basket per user, per session of a user or
per time window of a user. The user column is an identifier: it is hashed with a keyed
SipHash-2-4 on the workers, the baskets are written in the order of that keyed hash (so the
output order says nothing about the users or the input order), and user values reach the
driver only when a private ``user_map`` is asked for. Every basket carries its person: the
``person`` column holds a keyed pseudonym of its user (under the person key, the same in every
ingest made with that key), and ``max_baskets_per_user`` bounds how many baskets one person
contributes. docs/events.md explains the rules.

Plan (kernels in :mod:`ppdm_dask.data._event_kernels`):

1. pre-pass over input blocks (Parquet row groups / CSV byte ranges): distinct user hashes with
   event counts and person pseudonyms, distinct items, nulls; merged in a tree -> vocabulary,
   heavy users, the number of output blocks, the person of every user hash (each merge or cut
   task gets the slice of its range of users) and, in user mode, the rows of every output block;
2. split: each input block cut into compact pieces by user hash (one per output block);
3. merge: user mode -> one CSR block per range of user hashes (lazy). Session/window mode ->
   sessions cut per range of user hashes, a user's baskets beyond ``max_baskets_per_user``
   dropped, the rest re-split by the basket's own keyed hash with its person pseudonym
   (computed now: the number of baskets is not known before), then one CSR block per range of
   basket hashes (lazy). Every merge also gives the ``person`` column of its block.

With ``staging`` the pieces go through files in that folder (one file per task, as
``release.order.stage_pieces``): a worker holds one block per running task.
"""

from __future__ import annotations

import datetime
import json
import math
import operator
import pickle
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import DataFormatError, DatasetNotFoundError, InvalidParameter
from ..random import Key, KeyLike, as_key
from . import _event_kernels as K
from .vocabulary import Vocabulary

__all__ = ["read_events", "EventSummary", "MODES", "HEAVY_POLICIES"]

MODES = ("user", "session", "window")
HEAVY_POLICIES = ("keep", "cap", "drop")
#: Heavy users listed by name (pseudonym) in the summary.
TOP_HEAVY = 20
_CSV_SAMPLE = 1 << 16


@dataclass(frozen=True)
class EventSummary:
    """What an ingest read, kept and dropped. Holds no user value: heavy users are named by
    a keyed pseudonym (``"user-" + 10 hex digits``) that only the key holder can recompute."""

    n_events: int
    n_events_used: int
    n_null_user: int
    n_null_item: int
    n_null_time: int
    n_users: int
    n_baskets: int
    n_items: int
    heavy_users: tuple[tuple[str, int], ...]
    n_heavy: int
    heavy_policy: str
    max_user_events: int
    n_events_dropped: int
    n_events_capped: int
    mode: str
    session_gap: float | int | None = None
    window: float | int | None = None
    time_unit: str | None = None
    #: the bound on baskets per user (``None``: no bound), the baskets it dropped and the users
    #: who had more baskets than it
    max_baskets_per_user: int | None = None
    n_baskets_over_bound: int = 0
    n_users_over_bound: int = 0
    #: baskets per user before the bound: ``{"median": .., "p90": .., "max": ..}`` (exact)
    baskets_per_user: Mapping[str, float | int] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (heavy users as ``[pseudonym, n_events]`` lists)."""
        out = asdict(self)
        out["heavy_users"] = [[p, int(n)] for p, n in self.heavy_users]
        out["baskets_per_user"] = dict(self.baskets_per_user)
        out["extra"] = dict(self.extra)
        return out


@dataclass(frozen=True)
class _Unit:
    """One block of input: a Parquet file's row groups, or a byte range of a CSV file, and the
    Hive partition values of its file."""

    path: str
    fmt: str
    row_groups: tuple[int, ...] = ()
    byte_range: tuple[int, int] = (0, 0)
    partition: tuple[tuple[str, Any], ...] = ()
    url: str = ""
    stamp: str = ""  # the file's fsspec ukey: a file rewritten in place gives new graph keys


@dataclass(frozen=True)
class _Spec:
    """How to read the three columns of any unit."""

    user: str
    item: str
    time: str | None
    time_kind: str | None
    partition_types: tuple[tuple[str, Any], ...]
    csv_types: tuple[tuple[str, Any], ...]
    sep: str


# ------------------------------------------------------------------------------ parameters
def _parse_duration(value: Any, name: str, kind: str) -> float | int:
    """A gap or window in the time column's units (nanoseconds for timestamps)."""
    if isinstance(value, bool):
        raise InvalidParameter(f"{name} must be a duration, not a boolean", parameter=name)
    number: float | int | None = None
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = value.item() if isinstance(value, np.generic) else value
    elif isinstance(value, str):
        try:
            number = float(value)
            number = int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
        except ValueError:
            number = None
    if kind != "timestamp":
        if number is None:
            raise InvalidParameter(
                f"{name} {value!r} is not a number; the time column is numeric, so give the duration in its units",
                parameter=name,
            )
        span = number
    elif number is not None:
        span = number * 10**9  # a bare number on a timestamp column: seconds
    else:
        import pandas as pd

        try:
            # '1d' is the common spelling; pandas 3 deprecates the lower-case day unit ('1D')
            span = pd.Timedelta(re.sub(r"(?<=[\d.])\s*d\b", "D", value.strip())).value
        except (ValueError, TypeError):
            raise InvalidParameter(
                f"{name} {value!r} is not a duration (examples: '30min', '1h', '900s')", parameter=name
            ) from None
    if not math.isfinite(float(span)) or span < 0 or (name == "window" and span == 0):
        raise InvalidParameter(f"{name} must be {'positive' if name == 'window' else 'zero or more'}", parameter=name)
    return int(span) if float(span).is_integer() else float(span)


def _check_parameters(
    time: str | None,
    session_gap: Any,
    window: Any,
    heavy_users: str,
    max_user_events: int,
    events_per_block: int,
    fmt: str | None,
    max_baskets_per_user: int | None = None,
) -> str:
    if session_gap is not None and window is not None:
        raise InvalidParameter(
            "session_gap and window are exclusive: give one", parameter="window", fix="drop `window` or `session_gap`"
        )
    if (session_gap is not None or window is not None) and time is None:
        which = "session_gap" if session_gap is not None else "window"
        raise InvalidParameter(f"{which} needs a time column", parameter=which, fix=f"give `time` with `{which}`")
    if heavy_users not in HEAVY_POLICIES:
        raise InvalidParameter(
            f"heavy_users must be one of {', '.join(HEAVY_POLICIES)}, got {heavy_users!r}", parameter="heavy_users"
        )
    if isinstance(max_user_events, bool) or not isinstance(max_user_events, (int, np.integer)) or max_user_events < 1:
        raise InvalidParameter("max_user_events must be a positive integer", parameter="max_user_events")
    if max_baskets_per_user is not None and (
        isinstance(max_baskets_per_user, bool)
        or not isinstance(max_baskets_per_user, (int, np.integer))
        or max_baskets_per_user < 1
    ):
        raise InvalidParameter(
            f"max_baskets_per_user must be a positive integer or None, got {max_baskets_per_user!r}",
            parameter="max_baskets_per_user",
        )
    if isinstance(events_per_block, bool) or not isinstance(events_per_block, (int, np.integer)) or events_per_block < 1:
        raise InvalidParameter("events_per_block must be a positive integer", parameter="events_per_block")
    if fmt not in (None, "parquet", "csv"):
        raise InvalidParameter(f"format must be 'parquet' or 'csv', got {fmt!r}", parameter="format")
    return "session" if session_gap is not None else "window" if window is not None else "user"


def _hash_keys(key: Key, identity: str) -> tuple[int, int, int, int]:
    mac = key.mac("ingest-users", identity.encode())
    words = np.frombuffer(mac, dtype="<u8")
    return int(words[0]), int(words[1]), int(words[2]), int(words[3])


def _person_words(person_key: Key) -> tuple[int, int]:
    """The SipHash key words of the person pseudonym: derived from the person key alone (no
    parameter of the ingest), so that one person key gives one user the same pseudonym in every
    ingest."""
    words = np.frombuffer(person_key.mac("ppdm-person", b"events-user"), dtype="<u8")[:2]
    return int(words[0]), int(words[1])


def _pseudonym(key: Key, identity: str, h: int) -> str:
    return "user-" + key.mac("ingest-pseudonym", identity.encode() + int(h).to_bytes(8, "little"))[:5].hex()


# ------------------------------------------------------------------------------ discovery
def _format_of(url: str, fs: Any, path: str, fmt: str | None) -> str:
    if fmt is not None:
        return fmt
    low = path.lower()
    if low.endswith(".csv"):
        return "csv"
    if fs.isdir(path) or low.endswith((".parquet", ".pq", ".parq")):
        return "parquet"
    raise InvalidParameter(
        f"{url}: cannot tell the format from the name", parameter="format", fix="give `format` ('parquet' or 'csv')"
    )


def _discover(
    urls: Sequence[str],
    fmt: str | None,
    storage_options: Mapping[str, Any] | None,
    events_per_block: int,
    needed: Mapping[str, str | None],
) -> tuple[Any, list[_Unit], dict[str, pa.DataType], dict[str, pa.DataType]]:
    """The filesystem, the units of work, the types of the columns (file and partition ones)
    and the partition columns' types."""
    import pyarrow.dataset as ds

    from .folder import open_fs

    units: list[_Unit] = []
    types: dict[str, pa.DataType] = {}
    part_types: dict[str, pa.DataType] = {}
    fs0 = None
    for url in urls:
        fs, path = open_fs(url, storage_options)
        fs0 = fs0 or fs
        if not fs.exists(path):
            raise DatasetNotFoundError(f"no event table at {url}")
        kind = _format_of(url, fs, path, fmt)
        try:
            dataset = ds.dataset(path, filesystem=fs, format=kind, partitioning="hive")
        except (pa.ArrowInvalid, OSError) as exc:
            raise DataFormatError(f"{url}: cannot read as {kind}: {exc}") from None
        for frag in dataset.get_fragments():
            keys = ds.get_partition_keys(frag.partition_expression) or {}
            partition = tuple(sorted(keys.items()))
            for name, _ in partition:
                part_types[name] = dataset.schema.field(name).type
            try:
                physical = frag.physical_schema
            except (pa.ArrowInvalid, OSError) as exc:
                raise DataFormatError(f"{url}: unreadable file {posixpath.basename(frag.path)} ({exc})") from None
            for f in physical:
                types.setdefault(f.name, f.type)
            names_here = set(physical.names) | set(keys)
            for role, col in needed.items():
                if col is not None and col not in names_here:
                    raise DataFormatError(
                        f"{url}: no column {col!r} (`{role}`) in {posixpath.basename(frag.path)} (columns: {sorted(names_here)})",
                        parameter=role,
                    )
            units_of = _parquet_units if kind == "parquet" else _csv_units
            stamp = _stamp(fs, frag.path)
            units.extend(replace(u, stamp=stamp) for u in units_of(fs, frag, partition, events_per_block, url))
    return fs0, units, {**types, **part_types}, part_types


def _stamp(fs: Any, path: str) -> str:
    try:
        return str(fs.ukey(path))
    except Exception:  # a filesystem without ukey/checksum: the size at least
        return str(fs.size(path))


def _parquet_units(fs: Any, frag: Any, partition: tuple, events_per_block: int, url: str) -> list[_Unit]:
    md = frag.metadata
    out: list[_Unit] = []
    group: list[int] = []
    rows = 0
    for g in range(md.num_row_groups):
        n = md.row_group(g).num_rows
        if group and rows + n > events_per_block:
            out.append(_Unit(frag.path, "parquet", tuple(group), partition=partition, url=url))
            group, rows = [], 0
        group.append(g)
        rows += n
    if group:
        out.append(_Unit(frag.path, "parquet", tuple(group), partition=partition, url=url))
    return out


def _csv_units(fs: Any, frag: Any, partition: tuple, events_per_block: int, url: str) -> list[_Unit]:
    size = int(fs.size(frag.path))
    with fs.open(frag.path, "rb") as fh:
        sample = fh.read(_CSV_SAMPLE)
    lines = max(sample.count(b"\n"), 1)
    block_bytes = max(int(len(sample) / lines * events_per_block), 1)
    starts = list(range(0, max(size, 1), block_bytes))
    return [_Unit(frag.path, "csv", byte_range=(s, min(s + block_bytes, size)), partition=partition, url=url) for s in starts]


def _check_columns(spec: _Spec, types: Mapping[str, pa.DataType], url: str) -> None:
    for role, col in (("user", spec.user), ("item", spec.item), ("time", spec.time)):
        if col is not None and col not in types:
            raise DataFormatError(
                f"{url}: no column {col!r} (`{role}`) (columns: {sorted(types)})",
                parameter=role,
            )


def _check_unit_columns(table_names: Sequence[str], spec: _Spec, unit: _Unit) -> None:
    for col in (spec.user, spec.item, spec.time):
        if col is not None and col not in table_names:
            raise DataFormatError(
                f"{unit.url}: file {posixpath.basename(unit.path)} has no column {col!r} (columns: {sorted(table_names)})"
            )


# ------------------------------------------------------------------------------ reading a unit
def _csv_bytes(fs: Any, unit: _Unit) -> tuple[bytes, bytes]:
    """The header line and the lines that start inside the unit's byte range."""
    start, end = unit.byte_range
    with fs.open(unit.path, "rb") as fh:
        header = fh.readline()
        if start == 0:
            pos = fh.tell()
        else:
            fh.seek(start - 1)
            fh.readline()  # the line that started before the range belongs to the previous unit
            pos = fh.tell()
        if pos >= end and start != 0:
            return header, b""
        body = fh.read(max(end - pos, 0))
        if body and not body.endswith(b"\n"):
            body += fh.readline()
    return header, body


def _read_unit(fs: Any, unit: _Unit, spec: _Spec) -> tuple[pa.Array, pa.Array, pa.Array | None]:
    """The user, item and time arrays of one unit (partition columns filled in)."""
    wanted = [c for c in dict.fromkeys((spec.user, spec.item, spec.time)) if c is not None]
    parts = dict(unit.partition)
    file_cols = [c for c in wanted if c not in parts]
    try:
        if unit.fmt == "parquet":
            import pyarrow.parquet as pq

            with fs.open(unit.path, "rb") as fh:
                pf = pq.ParquetFile(fh)
                _check_unit_columns(pf.schema_arrow.names + list(parts), spec, unit)
                table = pf.read_row_groups(list(unit.row_groups), columns=file_cols)
        else:
            import io

            import pyarrow.csv as pcsv

            header, body = _csv_bytes(fs, unit)
            head = pcsv.read_csv(io.BytesIO(header), parse_options=pcsv.ParseOptions(delimiter=spec.sep)).schema.names
            _check_unit_columns(list(head) + list(parts), spec, unit)
            table = pcsv.read_csv(
                io.BytesIO(header + body),
                parse_options=pcsv.ParseOptions(delimiter=spec.sep),
                convert_options=pcsv.ConvertOptions(
                    column_types=dict(spec.csv_types), include_columns=file_cols, strings_can_be_null=True
                ),
            )
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        # arrow quotes the offending value, which may be a user id: keep the rest of the message
        raise DataFormatError(f"{unit.url}: cannot read {posixpath.basename(unit.path)}: {_scrub(_first_line(exc))}") from None
    n = table.num_rows
    ptypes = dict(spec.partition_types)

    def column(name: str) -> pa.Array:
        if name in parts:
            return pa.array([parts[name]] * n, type=ptypes.get(name))
        return K._plain(table.column(name))

    user = K.id_values(column(spec.user), spec.user, "user")
    item = K.id_values(column(spec.item), spec.item, "item")
    time = K.time_values(column(spec.time), spec.time, spec.time_kind) if spec.time is not None and spec.time_kind else None
    return user, item, time


def _scrub(message: str) -> str:
    """An arrow error message without the values it quotes (``'...'`` and ``"..."``)."""
    import re

    return re.sub(r"'[^']*'|\"[^\"]*\"", "<value>", message)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _csv_types(fs: Any, units: Sequence[_Unit], spec_cols: Sequence[str], sep: str) -> dict[str, pa.DataType]:
    """Column types of CSV input, inferred once from the start of the first file and then
    imposed on every block (so that no block infers its own)."""
    import io

    import pyarrow.csv as pcsv

    first = next((u for u in units if u.fmt == "csv"), None)
    if first is None:
        return {}
    with fs.open(first.path, "rb") as fh:
        sample = fh.read(_CSV_SAMPLE)
    if len(sample) == _CSV_SAMPLE and b"\n" in sample:
        sample = sample[: sample.rindex(b"\n") + 1]
    try:
        table = pcsv.read_csv(
            io.BytesIO(sample),
            parse_options=pcsv.ParseOptions(delimiter=sep),
            convert_options=pcsv.ConvertOptions(strings_can_be_null=True),
        )
    except pa.ArrowInvalid as exc:
        raise DataFormatError(f"{first.url}: cannot read {posixpath.basename(first.path)} as CSV: {_first_line(exc)}") from None
    out = {}
    for name in spec_cols:
        if name in table.schema.names:
            typ = table.schema.field(name).type
            out[name] = pa.string() if pa.types.is_null(typ) else typ
    return out


# ------------------------------------------------------------------------------ task functions
def _scan_task(fs: Any, unit: _Unit, spec: _Spec, k0: int, k1: int, needs_time: bool, person: tuple[int, int]) -> dict[str, Any]:
    user, item, time = _read_unit(fs, unit, spec)
    return K.scan_block(user, item, time if needs_time else None, k0, k1, person)


def _pairs_task(fs: Any, unit: _Unit, spec: _Spec, k0: int, k1: int, needs_time: bool) -> tuple[np.ndarray, pa.Array]:
    """Distinct user hashes of a block with one user value each (only for a user map)."""
    user, item, time = _read_unit(fs, unit, spec)
    ok, *_ = K.valid_mask(user, item, time if needs_time else None)
    users = user.filter(pa.array(ok))
    h = K.siphash_users(users, k0, k1)
    hs, first = np.unique(h, return_index=True)
    return hs, users.take(pa.array(first))


def _split_task(fs: Any, unit: _Unit, spec: _Spec, needs_time: bool, kw: dict[str, Any]) -> tuple[K.Piece, ...]:
    user, item, time = _read_unit(fs, unit, spec)
    return K.split_block(user, item, time if needs_time else None, **kw)


def _stage_path(folder: str, stage: str, i: int) -> str:
    return posixpath.join(folder, f"{stage}-{i:05d}.bin")


def _write_pieces(fs: Any, path: str, pieces: Sequence[Any]) -> None:
    """One file per task: the pickled pieces one after the other, then their
    ``len(pieces) + 1`` little-endian int64 offsets and that count (our own scratch file).
    The index comes last so that each piece is written as soon as it is pickled: a task holds
    one pickled piece at a time, not a copy of all of them."""
    offsets = [0]
    with fs.open(path, "wb") as fh:
        for piece in pieces:
            blob = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
            fh.write(blob)
            offsets.append(offsets[-1] + len(blob))
            del blob
        fh.write(np.asarray(offsets + [len(pieces)], dtype="<i8").tobytes())


def _read_piece(fs: Any, path: str, j: int) -> Any:
    with fs.open(path, "rb") as fh:
        fh.seek(-8, 2)
        (n,) = np.frombuffer(fh.read(8), dtype="<i8")
        fh.seek(-8 * (int(n) + 2) + 8 * j, 2)
        lo, hi = np.frombuffer(fh.read(16), dtype="<i8")
        fh.seek(int(lo))
        return pickle.loads(fh.read(int(hi - lo)))  # written by _write_pieces of this ingest


def _split_to_file(fs: Any, unit: _Unit, spec: _Spec, needs_time: bool, kw: dict[str, Any], folder: str, i: int) -> int:
    _write_pieces(fs, _stage_path(folder, "split", i), _split_task(fs, unit, spec, needs_time, kw))
    return i


def _staged(fs: Any, folder: str, stage: str, n_in: int, j: int) -> list[Any]:
    """Piece ``j`` of every staged file, concatenated (the separate pieces are freed here)."""
    return [K.concat_pieces([_read_piece(fs, _stage_path(folder, stage, i), j) for i in range(n_in)])]


def _merge_users_task(
    pieces: list[K.Piece], rows: int, kw: dict[str, Any], users: tuple[np.ndarray, np.ndarray]
) -> tuple[Any, Any, np.ndarray]:
    _check_rows(users[0].size, rows)
    out = K.merge_users(pieces, users=users, **kw)
    _check_rows(out[0].shape[0], rows)
    return out


def _merge_users_staged(
    fs: Any, folder: str, n_in: int, j: int, rows: int, kw: dict[str, Any], users: tuple[np.ndarray, np.ndarray]
) -> tuple[Any, Any, np.ndarray]:
    return _merge_users_task(_staged(fs, folder, "split", n_in, j), rows, kw, users)


def _merge_baskets_task(pieces: list[K.Piece], rows: int, n_items: int) -> tuple[Any, Any, np.ndarray]:
    out = K.merge_baskets(pieces, n_items=n_items)
    _check_rows(out[0].shape[0], rows)
    return out


def _merge_baskets_staged(fs: Any, folder: str, n_in: int, j: int, rows: int, n_items: int) -> tuple[Any, Any, np.ndarray]:
    return _merge_baskets_task(_staged(fs, folder, "cut", n_in, j), rows, n_items)


def _cut_task(pieces: list[K.Piece], kw: dict[str, Any], users: tuple[np.ndarray, np.ndarray]) -> tuple[Any, ...]:
    return K.cut_sessions(pieces, users=users, **kw)


def _cut_staged(
    fs: Any, folder: str, n_in: int, j: int, kw: dict[str, Any], users: tuple[np.ndarray, np.ndarray]
) -> tuple[Any, ...]:
    out, counts, bmap, hist = K.cut_sessions(_staged(fs, folder, "split", n_in, j), users=users, **kw)
    _write_pieces(fs, _stage_path(folder, "cut", j), out)
    return None, counts, bmap, hist


def _check_rows(got: int, expected: int) -> None:
    if got != expected:
        raise DataFormatError(
            f"an output block has {got} baskets where the pre-pass counted {expected}: was the input changed meanwhile?"
        )


def _held(persisted: list[Any]) -> list[Any]:
    """Persisted phase-1 results as graph inputs that keep them alive: on a cluster the
    futures themselves (a graph that only names their keys lets the scheduler forget them once
    this function returns), locally the persisted objects."""
    try:
        from distributed import futures_of
    except ImportError:  # pragma: no cover - distributed is a dependency
        return persisted
    out = []
    for obj in persisted:
        futures = futures_of(obj)
        out.append(futures[0] if len(futures) == 1 else obj)
    return out


def _get(obj: Any, *path: int) -> Any:
    for p in path:
        obj = obj[p]
    return obj


# ------------------------------------------------------------------------------ public API
def read_events(
    url: str | Sequence[str],
    *,
    user: str,
    item: str,
    time: str | None = None,
    session_gap: float | int | str | datetime.timedelta | None = None,
    window: float | int | str | datetime.timedelta | None = None,
    count: bool = False,
    max_user_events: int = 100_000,
    heavy_users: str = "keep",
    max_baskets_per_user: int | None = None,
    key: KeyLike = None,
    person_key: KeyLike = None,
    user_map: str | None = None,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    sep: str | None = None,
    staging: str | None = None,
    events_per_block: int = 2_000_000,
    progress: bool = False,
) -> tuple[Any, EventSummary]:
    """Group an event table into baskets: one per user, per session or per time window.

    Parameters
    ----------
    url : str or sequence of str
        Parquet file or folder (Hive partitions included) or CSV file/folder, on any fsspec URL.
    user, item : str
        Columns of the user id (integer or string; an identifier: never written) and of the
        item label (integer or string; kept as the vocabulary's labels).
    time : str, optional
        Column of the event time: timestamp (any unit, with or without zone), date or number.
        Needed by ``session_gap`` and ``window``; in user mode it orders a heavy user's events
        for ``heavy_users="cap"``. An event with a null time is dropped (and counted).
    session_gap : number, str or timedelta, optional
        Session mode: a user's events sorted by time; a new session starts at an event more
        than ``session_gap`` after the previous one. A number is in the time column's units
        (seconds for timestamps); a string is a pandas duration (``"30min"``).
    window : number, str or timedelta, optional
        Window mode: one basket per user and ``floor(time / window)`` (windows aligned at 0,
        the epoch for timestamps).
    count : bool
        Keep the number of events of each item of a basket as float32 ``weights``.
    max_user_events : int
        A user with more events (after nulls) is heavy: named by pseudonym in the summary.
    heavy_users : {"keep", "cap", "drop"}
        Keep heavy users, keep only their ``max_user_events`` latest events (by time then item
        label), or drop them.
    max_baskets_per_user : int, optional
        Session/window mode: a user with more baskets keeps this many, those of smallest keyed
        basket key (a keyed, uniform choice that does not depend on time). ``None``: no bound.
        In user mode every user is one basket (the bound is met).
    key : Key, int or bytes, optional
        Secret key of the keyed user hash (and so of the row order); a fresh one by default.
    person_key : Key, int or bytes, optional
        Secret key of the ``person`` column: every basket's person is SipHash-2-4 of its user
        value under words derived from this key only, so one person key gives one user the same
        pseudonym in every ingest (whatever the mode, parameters or ``key``). Default: ``key``.
    user_map : str, optional
        Private Parquet file to write (eagerly, atomically) with the ``user`` value, its output
        ``row`` (and ``session`` in session/window mode). Never written unless asked.
    format : {"parquet", "csv"}, optional
        Input format; by default from the extension (a folder is Parquet).
    storage_options : mapping, optional
        fsspec options of ``url``, ``staging`` and ``user_map``.
    sep : str, optional
        CSV delimiter (default ``","``).
    staging : str, optional
        Folder URL where the pieces of the shuffle are written (bounded memory); they are left
        there for the lazy output to read: delete the folder after the output is written.
    events_per_block : int
        Events per unit of work (input blocks and output blocks are sized by it).
    progress : bool
        Progress bars for the passes that compute now.

    Returns
    -------
    (TransactionArray, EventSummary)
        The baskets (lazy; user mode fully, session/window mode after phase 1) in keyed order,
        with the row-aligned uint64 column ``person`` (``tx.columns["person"]``), and the
        summary.

    Raises
    ------
    InvalidParameter, DataFormatError, DatasetNotFoundError
    """
    mode = _check_parameters(
        time, session_gap, window, heavy_users, max_user_events, events_per_block, format, max_baskets_per_user
    )
    urls = [url] if isinstance(url, str) else list(url)
    if not urls:
        raise InvalidParameter("no input given", parameter="url")
    order_key = as_key(key)
    plan = _prepare(
        urls,
        user,
        item,
        time,
        mode,
        session_gap,
        window,
        count,
        heavy_users,
        int(max_user_events),
        order_key,
        format,
        storage_options,
        sep or ",",
        int(events_per_block),
        None if max_baskets_per_user is None else int(max_baskets_per_user),
        order_key if person_key is None else as_key(person_key),
    )
    counts = _prepass(plan, int(events_per_block), progress)
    staged = None
    if staging is not None:
        from .folder import open_fs

        sfs, base = open_fs(staging, storage_options)
        folder = posixpath.join(base, f"ingest-{plan.token(counts.n_out)[:16]}")
        sfs.makedirs(folder, exist_ok=True)
        staged = (sfs, folder)
    splits = _splits(plan, counts, staged, progress)
    if mode == "user":
        merges, rows = _user_merges(plan, counts, splits, staged)
        basket_map = None
        hist = np.array([0, counts.kept.size], np.int64)  # every user is one basket
    else:
        merges, rows, basket_map, hist = _session_merges(plan, counts, splits, staged, user_map is not None, progress)
    tx = _transactions(plan, counts, merges, rows)
    summary = _summary(plan, counts, int(sum(rows)), hist)
    if staging is not None and staged is not None:
        summary = replace(summary, extra={"staging_folder": f"{staging.rstrip('/')}/{posixpath.basename(staged[1])}"})
    if user_map is not None:
        _write_user_map(user_map, storage_options, plan, counts.kept, basket_map, progress)
    return tx, summary


@dataclass(frozen=True)
class _Plan:
    """Everything decided before reading: the input, the mode, the keyed hash."""

    fs: Any
    units: list[_Unit]
    spec: _Spec
    mode: str
    span: float | int | None
    needs_time: bool
    count: bool
    policy: str
    cap: int
    key: Key
    identity: str
    words: tuple[int, int, int, int]  # k0, k1 of the user hash; s0, s1 of the basket hash
    max_baskets: int | None
    person_key: Key
    person_words: tuple[int, int]  # p0, p1 of the person pseudonym

    def token(self, n_out: int) -> str:
        """Graph key names: one-way in the keys, new for other input files or parameters."""
        from dask.base import tokenize

        keys = (self.key.digest("ingest"), self.person_key.digest("ingest-person"))
        return str(tokenize(keys, self.identity, self.units, n_out, self.fs))


@dataclass(frozen=True)
class _Counts:
    """What the pre-pass found."""

    stats: dict[str, Any]
    vocab: Vocabulary
    heavy: np.ndarray  # sorted hashes of the heavy users
    heavy_named: tuple[tuple[str, int], ...]
    kept: np.ndarray  # sorted hashes of the users whose baskets are written
    kept_persons: np.ndarray  # their person pseudonyms (aligned)
    n_used: int
    n_dropped: int
    n_capped: int
    n_out: int
    user_bounds: np.ndarray  # kept[user_bounds[j]:user_bounds[j + 1]]: the users of output block j

    def users_of(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """The sorted hashes of the users of output block ``j``'s range (``bucket_of``) with
        their person pseudonyms: what one merge or cut task needs, not the whole map."""
        lo, hi = int(self.user_bounds[j]), int(self.user_bounds[j + 1])
        return self.kept[lo:hi].copy(), self.kept_persons[lo:hi].copy()


def _prepare(
    urls: list[str],
    user: str,
    item: str,
    time: str | None,
    mode: str,
    session_gap: Any,
    window: Any,
    count: bool,
    heavy_users: str,
    cap: int,
    key: Key,
    fmt: str | None,
    storage_options: Mapping[str, Any] | None,
    sep: str,
    events_per_block: int,
    max_baskets: int | None,
    person_key: Key,
) -> _Plan:
    """Find the input, check its columns, parse the durations and derive the hash keys."""
    fs, units, types, part_types = _discover(
        urls, fmt, storage_options, events_per_block, {"user": user, "item": item, "time": time}
    )
    csv_types: dict[str, pa.DataType] = {}
    if any(u.fmt == "csv" for u in units):
        csv_types = _csv_types(fs, units, [c for c in (user, item, time) if c], sep)
        types = {**types, **csv_types}
    _check_columns(_Spec(user, item, time, None, (), (), sep), types, urls[0])
    for role, col in (("user", user), ("item", item)):
        probe = pa.array([], type=types[col])  # one clear error before any task
        K.id_values(probe, col, role)
    kind = K.time_kind(types[time], time) if time is not None else None
    spec = _Spec(user, item, time, kind, tuple(part_types.items()), tuple(csv_types.items()), sep)
    span = None
    if mode != "user":
        name = "session_gap" if mode == "session" else "window"
        span = _parse_duration(session_gap if mode == "session" else window, name, kind or "int")
    if not units:
        raise DatasetNotFoundError(f"no data files in {urls[0]}")
    params: dict[str, Any] = {
        "user": user,
        "item": item,
        "time": time,
        "mode": mode,
        "span": span,
        "count": bool(count),
        "heavy_users": heavy_users,
        "max_user_events": cap,
    }
    if max_baskets is not None:  # absent when unbounded: the order of an unbounded ingest is unchanged
        params["max_baskets_per_user"] = max_baskets
    identity = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return _Plan(
        fs,
        units,
        spec,
        mode,
        span,
        time is not None,
        bool(count),
        heavy_users,
        cap,
        key,
        identity,
        _hash_keys(key, identity),
        max_baskets,
        person_key,
        _person_words(person_key),
    )


def _prepass(plan: _Plan, events_per_block: int, progress: bool) -> _Counts:
    """Step 1: user hashes with their event counts, items and nulls of every block, merged."""
    import dask

    from ..graph import tree_reduce
    from ..progress import compute

    k0, k1 = plan.words[:2]
    scans = [
        dask.delayed(_scan_task, pure=True)(plan.fs, u, plan.spec, k0, k1, plan.needs_time, plan.person_words) for u in plan.units
    ]
    (stats,) = compute(tree_reduce(scans, K.merge_scans, split_every=4), progress=progress)
    vocab = Vocabulary(stats["labels"], assume_sorted=True) if stats["labels"].size else Vocabulary.range(0)
    hashes, counts = stats["hashes"], stats["counts"]
    is_heavy = counts > plan.cap
    heavy, heavy_counts = hashes[is_heavy], counts[is_heavy]
    n_dropped = int(heavy_counts.sum()) if plan.policy == "drop" else 0
    n_capped = int((heavy_counts - plan.cap).sum()) if plan.policy == "cap" else 0
    top = np.argsort(-heavy_counts, kind="stable")[:TOP_HEAVY]
    named = tuple((_pseudonym(plan.key, plan.identity, int(heavy[i])), int(heavy_counts[i])) for i in top)
    n_valid = stats["n_events"] - stats["n_null_user"] - stats["n_null_item"] - stats["n_null_time"]
    n_used = int(n_valid - n_dropped - n_capped)
    kept = hashes[~is_heavy] if plan.policy == "drop" else hashes
    n_out = max(1, math.ceil(n_used / events_per_block))
    return _Counts(
        stats=stats,
        vocab=vocab,
        heavy=heavy,
        heavy_named=named,
        kept=kept,
        kept_persons=stats["persons"][~is_heavy] if plan.policy == "drop" else stats["persons"],
        n_used=n_used,
        n_dropped=n_dropped,
        n_capped=n_capped,
        n_out=n_out,
        user_bounds=np.searchsorted(K.bucket_of(kept, n_out), np.arange(n_out + 1)),
    )


def _splits(plan: _Plan, counts: _Counts, staged: tuple[Any, str] | None, progress: bool) -> list[Any] | None:
    """Step 2: every input block cut into one piece per output block (delayed), or, with
    staging, written to files now (``None`` is returned)."""
    import dask

    from ..progress import compute

    kw = dict(
        k0=plan.words[0],
        k1=plan.words[1],
        vocab=dask.delayed(counts.vocab.labels, pure=True),
        heavy=dask.delayed(counts.heavy, pure=True),
        policy=plan.policy,
        cap=plan.cap,
        collapse_time=plan.mode == "user",
        n_out=counts.n_out,
    )
    token = plan.token(counts.n_out)
    if staged is not None:
        sfs, folder = staged
        tasks = [
            dask.delayed(_split_to_file, pure=True)(
                plan.fs, u, plan.spec, plan.needs_time, kw, folder, i, dask_key_name=f"ingest-stage-{token}-{i}"
            )
            for i, u in enumerate(plan.units)
        ]
        compute(*tasks, progress=progress)
        return None
    split = dask.delayed(_split_task, nout=counts.n_out, pure=True)
    return [
        split(plan.fs, u, plan.spec, plan.needs_time, kw, dask_key_name=f"ingest-split-{token}-{i}")
        for i, u in enumerate(plan.units)
    ]


def _user_merges(
    plan: _Plan, counts: _Counts, splits: list[Any] | None, staged: tuple[Any, str] | None
) -> tuple[list[Any], list[int]]:
    """Step 3, user mode: one lazy merge per output block; its rows counted from the hashes."""
    import dask

    n_out, token = counts.n_out, plan.token(counts.n_out)
    rows = np.bincount(K.bucket_of(counts.kept, n_out), minlength=n_out).tolist()
    kw = dict(heavy=dask.delayed(counts.heavy, pure=True), policy=plan.policy, cap=plan.cap, n_items=len(counts.vocab))
    if splits is None:
        assert staged is not None
        sfs, folder = staged
        merges = [
            dask.delayed(_merge_users_staged, pure=True)(
                sfs, folder, len(plan.units), j, rows[j], kw, counts.users_of(j), dask_key_name=f"ingest-merge-{token}-{j}"
            )
            for j in range(n_out)
        ]
    else:
        merges = [
            dask.delayed(_merge_users_task, pure=True)(
                [p[j] for p in splits], rows[j], kw, counts.users_of(j), dask_key_name=f"ingest-merge-{token}-{j}"
            )
            for j in range(n_out)
        ]
    return merges, rows


def _session_merges(
    plan: _Plan, counts: _Counts, splits: list[Any] | None, staged: tuple[Any, str] | None, with_map: bool, progress: bool
) -> tuple[list[Any], list[int], tuple[np.ndarray, np.ndarray, np.ndarray] | None, np.ndarray]:
    """Step 3, session/window mode: sessions cut, bounded and re-split now (phase 1: the number
    of baskets of every output block and the histogram of baskets per user come back), then one
    lazy merge per output block."""
    import dask

    from ..progress import compute, persist

    n_out, token = counts.n_out, plan.token(counts.n_out)
    kw = dict(
        heavy=dask.delayed(counts.heavy, pure=True),
        policy=plan.policy,
        cap=plan.cap,
        mode=plan.mode,
        span=plan.span,
        s0=plan.words[2],
        s1=plan.words[3],
        n_out=n_out,
        with_map=with_map,
        max_baskets=plan.max_baskets,
    )
    n_items = len(counts.vocab)
    if splits is None:
        assert staged is not None
        sfs, folder = staged
        cut_tasks = [
            dask.delayed(_cut_staged, pure=True)(
                sfs, folder, len(plan.units), j, kw, counts.users_of(j), dask_key_name=f"ingest-cut-{token}-{j}"
            )
            for j in range(n_out)
        ]
        info = [c[1:] for c in compute(*cut_tasks, progress=progress)]
        pieces: list[list[Any]] = []
    else:
        cut_tasks = [
            dask.delayed(_cut_task, pure=True)(
                [p[j] for p in splits], kw, counts.users_of(j), dask_key_name=f"ingest-cut-{token}-{j}"
            )
            for j in range(n_out)
        ]
        cuts = _held(list(persist(*cut_tasks, progress=progress)))
        info = list(compute(*[dask.delayed(_get, pure=True)(c, slice(1, 4)) for c in cuts]))
        pieces = [[dask.delayed(_get, pure=True)(c, 0, j) for c in cuts] for j in range(n_out)]
    rows = np.sum([c[0] for c in info], axis=0).astype(np.int64).tolist()
    if splits is None:
        merges = [
            dask.delayed(_merge_baskets_staged, pure=True)(
                sfs, folder, n_out, j, rows[j], n_items, dask_key_name=f"ingest-merge-{token}-{j}"
            )
            for j in range(n_out)
        ]
    else:
        merges = [
            dask.delayed(_merge_baskets_task, pure=True)(block, rows[j], n_items, dask_key_name=f"ingest-merge-{token}-{j}")
            for j, block in enumerate(pieces)
        ]
    basket_map = None
    if with_map:
        maps = [c[1] for c in info]
        basket_map = (
            np.concatenate([m[0] for m in maps]),
            np.concatenate([m[1] for m in maps]),
            np.concatenate([m[2] for m in maps]),
        )
    hists = [c[2] for c in info]
    hist = np.zeros(max((h.size for h in hists), default=0), np.int64)
    for h in hists:
        hist[: h.size] += h
    return merges, rows, basket_map, hist


def _transactions(plan: _Plan, counts: _Counts, merges: list[Any], rows: list[int]) -> Any:
    """The lazy TransactionArray over the merge tasks (weights from the same tasks)."""
    import dask.array as da
    import scipy.sparse as sp
    from dask.highlevelgraph import HighLevelGraph

    from ..graph import blocks_from_tasks, unique_name
    from .transactions import TransactionArray

    n_items, token = len(counts.vocab), plan.token(counts.n_out)
    blocks = blocks_from_tasks(
        unique_name("ingest", token, "blocks"), [(operator.getitem, m.key, 0) for m in merges], rows, n_items, dependencies=merges
    )
    weights = None
    if plan.count:
        weights = blocks_from_tasks(
            unique_name("ingest", token, "weights"),
            [(operator.getitem, m.key, 1) for m in merges],
            rows,
            n_items,
            meta=sp.csr_array((0, 0), dtype=np.float32),
            dtype=np.float32,
            dependencies=merges,
        )
    name = unique_name("ingest", token, "person")
    dsk = {(name, j): (operator.getitem, m.key, 2) for j, m in enumerate(merges)}
    person = da.Array(
        HighLevelGraph.from_collections(name, dsk, dependencies=merges),
        name,
        (tuple(int(r) for r in rows),),
        dtype=np.uint64,
        meta=np.empty(0, np.uint64),
    )
    return TransactionArray(
        blocks,
        counts.vocab,
        metadata={"source": "events", "ingest": _public_parameters(plan)},
        columns={"person": person},
        weights=weights,
    )


def _public_parameters(plan: _Plan) -> dict[str, Any]:
    return {
        "mode": plan.mode,
        "session_gap": plan.span if plan.mode == "session" else None,
        "window": plan.span if plan.mode == "window" else None,
        "time_unit": ("ns" if plan.spec.time_kind == "timestamp" else "column") if plan.needs_time else None,
        "count": plan.count,
        "heavy_users": plan.policy,
        "max_user_events": plan.cap,
        "max_baskets_per_user": plan.max_baskets,
        "person": "user",  # the person of each basket is the event log's user (column `person`)
    }


def _per_user(hist: np.ndarray) -> dict[str, float | int]:
    """Median, 90th percentile and maximum of the baskets per user of a histogram (integers
    where they are whole)."""
    median, p90 = K.quantiles_of_histogram(hist, (0.5, 0.9))
    nonzero = np.flatnonzero(hist)
    top = int(nonzero[-1]) if nonzero.size else 0
    return {
        "median": int(median) if float(median).is_integer() else float(median),
        "p90": int(p90) if float(p90).is_integer() else float(p90),
        "max": top,
    }


def _summary(plan: _Plan, counts: _Counts, n_baskets: int, hist: np.ndarray) -> EventSummary:
    stats = counts.stats
    public = _public_parameters(plan)
    over = np.zeros(0, np.int64)
    if plan.max_baskets is not None and hist.size > plan.max_baskets + 1:
        over = hist[plan.max_baskets + 1 :]
    excess = np.arange(over.size, dtype=np.int64) + 1  # baskets beyond the bound of a user counted in over[i]
    return EventSummary(
        n_events=int(stats["n_events"]),
        n_events_used=counts.n_used,
        n_null_user=int(stats["n_null_user"]),
        n_null_item=int(stats["n_null_item"]),
        n_null_time=int(stats["n_null_time"]),
        n_users=int(stats["hashes"].size),
        n_baskets=n_baskets,
        n_items=len(counts.vocab),
        heavy_users=counts.heavy_named,
        n_heavy=int(counts.heavy.size),
        heavy_policy=plan.policy,
        max_user_events=plan.cap,
        n_events_dropped=counts.n_dropped,
        n_events_capped=counts.n_capped,
        mode=plan.mode,
        session_gap=public["session_gap"],
        window=public["window"],
        time_unit=public["time_unit"],
        max_baskets_per_user=plan.max_baskets,
        n_baskets_over_bound=int((over * excess).sum()),
        n_users_over_bound=int(over.sum()),
        baskets_per_user=_per_user(hist),
    )


def _write_user_map(
    url: str,
    storage_options: Mapping[str, Any] | None,
    plan: _Plan,
    kept: np.ndarray,
    basket_map: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    progress: bool,
) -> None:
    """The private user -> row(s) file (user values come to the driver here only)."""
    import dask
    import pyarrow.parquet as pq

    from ..progress import compute
    from .atomic import atomic_file

    k0, k1 = plan.words[:2]
    parts = compute(
        *[dask.delayed(_pairs_task, pure=True)(plan.fs, u, plan.spec, k0, k1, plan.needs_time) for u in plan.units],
        progress=progress,
    )
    hs = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint64)
    vals = pa.concat_arrays([p[1] for p in parts]) if parts else pa.array([], pa.large_string())
    hs_u, first = np.unique(hs, return_index=True)
    vals = vals.take(pa.array(first))
    if plan.mode == "user":
        users_h = kept
        row = np.arange(kept.size, dtype=np.int64)  # rows are in ascending hash order
        session = None
    else:
        assert basket_map is not None
        bh, bs, bk = basket_map
        order = np.argsort(bk, kind="stable")
        row = np.empty(bk.size, np.int64)
        row[order] = np.arange(bk.size)
        users_h, session = bh, bs
    pos = np.searchsorted(hs_u, users_h)
    table = {"user": vals.take(pa.array(pos)), "row": pa.array(row)}
    if session is not None:
        table["session"] = pa.array(session)
    out = pa.table(table).sort_by([("row", "ascending")])
    with atomic_file(url, storage_options=storage_options, overwrite=False) as fh:
        pq.write_table(out, fh)

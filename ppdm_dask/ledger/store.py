"""The ledger's storage: one folder (a local path or any fsspec URL) of immutable JSON objects.

Layout (docs/ledger.md#how-it-is-stored)::

    secret                         32 random bytes (hex): keys the input fingerprints
    records/<input>/<record>.json  one object per release, written before the release's work
    events/<record>/<event>.json   committed | failed | withdrawn | composed, appended later
    people/<record>/...            the release's people: per-person values, hash-partitioned
                                   Parquet (:mod:`.people`; private)
    locks/<input>, locks/people    the lock of an input, and of the people (ppdm's commit lock)

Why a folder of objects rather than one database file: the same code serves a laptop and a team
bucket (object stores hold no SQLite file, and SQLite on network file systems loses writes);
every record and event is a new object with a unique name, so concurrent jobs never overwrite
one another and no record is lost; a record is written with one put (a rename locally), so a
crash leaves it whole or absent. Deciding on a new release (reading the input's records,
composing, writing the new record) happens under the input's lock, so two jobs cannot both
spend the last of a budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import posixpath
import secrets
import socket
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import DatasetNotFoundError, InvalidParameter
from .location import default_location

__all__ = ["Ledger", "Record", "STATUSES", "counts_in_composition", "put_object"]

LEDGER_VERSION = 1
#: the states of a record (docs/ledger.md#states-of-a-record)
STATUSES = ("pending", "committed", "not committed", "withdrawn")


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _pid_dead(host: str, pid: int) -> bool:
    """Whether the job that wrote a record is a dead process of this host (a job on another host
    is never presumed dead)."""
    if host != _host_tag() or pid == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


@dataclass
class Record:
    """One release in the ledger: what the job wrote before its work, and the events since.

    ``status`` is derived: ``withdrawn`` (forgotten by the owner), ``committed``, ``not
    committed`` (the job failed, or died between its record and its commit), or ``pending`` (the
    job may still run).
    """

    data: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)

    def __getitem__(self, name: str) -> Any:
        return self.data[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

    @property
    def uid(self) -> str:
        return str(self.data["record"])

    @property
    def release_id(self) -> str:
        return str(self.data.get("release_id") or "")

    @property
    def family(self) -> str:
        return str(self.data.get("family") or "")

    def last(self, kind: str) -> dict[str, Any] | None:
        """The latest event of ``kind``."""
        found = [e for e in self.events if e.get("event") == kind]
        return found[-1] if found else None

    @property
    def composition(self) -> dict[str, Any]:
        """The composition recorded with the release (the latest ``composed`` event, else the
        one computed when the job started)."""
        ev = self.last("composed")
        return dict((ev or {}).get("composition") or self.data.get("composition") or {})

    @property
    def status(self) -> str:
        kinds = {e.get("event") for e in self.events}
        if "withdrawn" in kinds:
            return "withdrawn"
        if "committed" in kinds:
            return "committed"
        if "failed" in kinds:
            return "not committed"
        if _pid_dead(str(self.data.get("host", "")), int(self.data.get("pid", -1))):
            return "not committed"
        return "pending"

    def summary(self) -> dict[str, Any]:
        """The record as shown by ``ppdm ledger`` (no per-record values)."""
        out = {k: v for k, v in self.data.items() if k not in ("host", "pid", "time_ns")}
        out["status"] = self.status
        out["composition"] = self.composition
        why = self.last("failed") or self.last("withdrawn")
        if why and why.get("reason"):
            out["status_reason"] = why["reason"]
        out["events"] = [{k: v for k, v in e.items() if k != "composition"} for e in self.events]
        return out

    def line(self) -> str:
        """One line naming the release: id, family/method, when, where, status (a release the
        composition refused once its files were written says so)."""
        status = self.status
        if status == "not committed" and (self.last("failed") or {}).get("refused"):
            status += ": refused by the composition"
        return (
            f"{self.release_id or self.uid} {self.family}/{self.get('method')} {self.get('created')} -> "
            f"{self.get('destination')} [{status}]"
        )


def counts_in_composition(record: Record) -> bool:
    """Whether a record takes part in composing a new release of its input: committed, or
    pending (its job may still commit); not a withdrawn one nor one that never committed."""
    return record.status in ("committed", "pending")


class Ledger:
    """The record of every release of every input (docs/ledger.md).

    Parameters
    ----------
    url : str, optional
        A local folder or an fsspec URL (``s3://bucket/ppdm-ledger``) shared by a team. Default:
        ``$PPDM_LEDGER``, else ``ppdm-dask/ledger`` in the user's data directory.
    storage_options : mapping, optional
        fsspec options of ``url``.
    """

    def __init__(self, url: str | os.PathLike | None = None, *, storage_options: Mapping[str, Any] | None = None) -> None:
        self.url = str(url) if url is not None else default_location()
        self.storage_options = dict(storage_options or {})
        self._fs: Any = None
        self._secret: bytes | None = None

    def __repr__(self) -> str:
        return f"Ledger({self.url!r})"

    @classmethod
    def default(cls) -> Ledger:
        """The ledger of this user (``$PPDM_LEDGER`` or the user's data directory)."""
        return cls()

    # ------------------------------------------------------------------ storage
    @property
    def fs(self) -> Any:
        if self._fs is None:
            from ..data.folder import open_fs

            self._fs, self._root = open_fs(self.url, self.storage_options)
        return self._fs

    @property
    def root(self) -> str:
        _ = self.fs
        return self._root

    def _path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def _local(self) -> bool:
        from ..data.commit import is_local

        return is_local(self.fs)

    def _put(self, path: str, data: bytes, *, create: bool = False) -> bool:
        """Write one object whole (a rename locally, one put remotely); with ``create`` only when
        it does not exist yet. False when ``create`` and it existed."""
        return put_object(self.fs, path, data, create=create, local=self._local())

    def _read_json(self, path: str) -> dict[str, Any] | None:
        try:
            with self.fs.open(path, "rb") as fh:
                return json.loads(fh.read().decode())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

    def _list(self, folder: str) -> list[str]:
        try:
            return sorted(p.rstrip("/") for p in self.fs.ls(folder, detail=False))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def check_writable(self) -> None:
        """Create the ledger (and its secret) now: a ledger that cannot be written is one error
        before any work."""
        try:
            self.secret()
        except OSError as exc:
            raise InvalidParameter(
                f"cannot write the ledger at {self.url}: {exc.strerror or exc}",
                python="Ledger(url) of a writable location, or ledger=None to opt out (recorded)",
                fix="`ledger` URL of a writable location, or `no_ledger` (recorded in the manifest)",
            ) from None

    # ------------------------------------------------------------------ the secret
    def secret(self) -> bytes:
        """The ledger's secret, created by the first job that needs it (the first writer wins a
        race; the others read it)."""
        if self._secret is None:
            path = self._path("secret")
            got = self._read_text(path)
            if got is None:
                self._put(path, secrets.token_hex(32).encode(), create=True)
                got = self._read_text(path)
            if not got:
                raise InvalidParameter(f"the ledger at {self.url} has an unreadable secret ({path})")
            self._secret = bytes.fromhex(got.strip())
        return self._secret

    def _read_text(self, path: str) -> str | None:
        try:
            with self.fs.open(path, "rb") as fh:
                return fh.read().decode()
        except FileNotFoundError:
            return None

    def input_fingerprint(self, digest: bytes) -> str:
        """The ledger's name of an input: ``HMAC(secret, digest)``. The same input gets the same
        name whatever release key is used; without the secret nobody can test a guess."""
        return hmac.new(self.secret(), b"ppdm-ledger-input\0" + bytes(digest), hashlib.sha256).hexdigest()[:32]

    def person_key(self) -> Any:
        """The ledger's key of persons (a :class:`~ppdm_dask.random.Key` derived one-way from
        its secret): every pseudonym of a person that the ledger joins on is keyed by it, so
        the same person gets the same pseudonym in every release recorded here, and nobody
        without the secret can test a guess of a person against a pseudonym
        (docs/ledger.md#the-person)."""
        from ..random import Key

        return Key(int.from_bytes(hmac.new(self.secret(), b"ppdm-ledger-person", hashlib.sha256).digest()[:16], "big"))

    @contextlib.contextmanager
    def lock(self, fingerprint: str) -> Iterator[None]:
        """Hold the input's lock while deciding on and recording a release of it."""
        from ..data.commit import exclusive

        path = self._path("locks", fingerprint)
        if self._local():
            os.makedirs(posixpath.dirname(path), mode=0o700, exist_ok=True)
        with exclusive(self.fs, path, f"the ledger's input {fingerprint}"):
            yield

    # ------------------------------------------------------------------ records
    def add(self, fields: Mapping[str, Any]) -> Record:
        """Write a new record (``input`` and ``release_id`` among ``fields``); returns it."""
        from ..release.manifest import created

        uid = f"{created().replace(':', '').replace('-', '')}-{secrets.token_hex(6)}"
        # time_ns orders the records of one second (created is to the second, for people)
        data = {
            "version": LEDGER_VERSION,
            "record": uid,
            "created": created(),
            "time_ns": time.time_ns(),
            "host": _host_tag(),
            "pid": os.getpid(),
            **dict(fields),
        }
        self._put(self._path("records", str(data["input"]), uid + ".json"), _dumps(data))
        return Record(data)

    def event(self, record: Record | str, kind: str, **fields: Any) -> dict[str, Any]:
        """Append an event to a record (``committed``, ``failed``, ``withdrawn``, ``composed``)."""
        from ..release.manifest import created

        uid = record.uid if isinstance(record, Record) else str(record)
        ev = {"event": kind, "time": created(), **fields}
        self._put(self._path("events", uid, f"{ev['time'].replace(':', '')}-{kind}-{secrets.token_hex(4)}.json"), _dumps(ev))
        if isinstance(record, Record):
            record.events.append(ev)
        return ev

    def _events(self, uid: str) -> list[dict[str, Any]]:
        evs = [e for e in (self._read_json(p) for p in self._list(self._path("events", uid))) if e]
        return sorted(evs, key=lambda e: str(e.get("time")))

    def inputs(self) -> list[str]:
        """The fingerprints of every recorded input."""
        return [posixpath.basename(p) for p in self._list(self._path("records"))]

    def records(self, fingerprint: str | None = None) -> list[Record]:
        """The records of one input (or of all), oldest first, with their events."""
        fps = [fingerprint] if fingerprint else self.inputs()
        out = []
        for fp in fps:
            for p in self._list(self._path("records", fp)):
                if not p.endswith(".json") or posixpath.basename(p).startswith("."):
                    continue
                data = self._read_json(p)
                if data:
                    out.append(Record(data, self._events(str(data["record"]))))
        return sorted(out, key=lambda r: (int(r.get("time_ns") or 0), str(r.get("created")), r.uid))

    def find(self, ident: str) -> Record:
        """The record of a release id or record id (a unique prefix of either is enough)."""
        ident = str(ident).strip()
        hits = [r for r in self.records() if ident and (r.release_id.startswith(ident) or r.uid.startswith(ident))]
        if not hits:
            raise DatasetNotFoundError(
                f"no release {ident!r} in the ledger at {self.url}", cli="'ppdm ledger list' shows the recorded releases"
            )
        ids = {r.uid for r in hits}
        if len(ids) > 1 and len({r.release_id for r in hits}) > 1:
            raise InvalidParameter(
                f"{ident!r} names {len(ids)} releases in the ledger; give more of the id", cli="'ppdm ledger list' shows the ids"
            )
        return hits[-1]

    def forget(self, ident: str, reason: str) -> Record:
        """Mark a release as withdrawn (it no longer counts in compositions); the record stays."""
        if not str(reason or "").strip():
            raise InvalidParameter("say why the release is withdrawn", python="reason='...'", fix="`reason` TEXT")
        rec = self.find(ident)
        self.event(rec, "withdrawn", reason=str(reason))
        return rec

    # ------------------------------------------------------------------ export
    def export(self, fingerprint: str | None = None) -> dict[str, Any]:
        """Every record with its events and status, as JSON-ready data (no secret, no people)."""
        return {"ledger": LEDGER_VERSION, "records": [r.summary() for r in self.records(fingerprint)]}


def put_object(fs: Any, path: str, data: bytes, *, create: bool = False, local: bool | None = None) -> bool:
    """Write one object of the ledger whole: locally to a temporary file then renamed (mode
    600), remotely with one put; with ``create`` only when it does not exist yet (the first
    writer wins). Returns False when ``create`` and it existed. Used by the driver and by the
    tasks that write the people's buckets."""
    if local is None:
        from ..data.commit import is_local

        local = is_local(fs)
    parent = posixpath.dirname(path)
    if local:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        tmp = posixpath.join(parent, f".{posixpath.basename(path)}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        if create:
            try:
                os.link(tmp, path)  # fails if it exists: the first writer wins
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
            return True
        os.replace(tmp, path)
        return True
    if create:
        try:
            fs.pipe_file(path, data, mode="create")
            return True
        except FileExistsError:
            return False
        except (TypeError, NotImplementedError, ValueError):  # no conditional put: best effort
            if fs.exists(path):
                return False
    fs.pipe_file(path, data)
    return True


def _dumps(obj: Any) -> bytes:
    from ..release.figures import plain  # numpy values to Python ones, non-finite numbers as text

    return json.dumps(plain(obj), indent=1, default=str).encode()

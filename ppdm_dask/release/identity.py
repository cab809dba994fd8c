"""The identity of a release and what derives from it.

A release is identified by its family, method, public parameters and the content digest of its
input (:mod:`ppdm_dask.data.digest`: the input's records, whatever their order, and the order of
its rows). Under the owner's key the identity gives (docs/randomness.md#one-key-many-releases-the-release-identity):

* the **stream key** of the release, ``HMAC(key, "streams", identity)``: every random step of
  the release (row order, distortion, sketches, generation, condensation) draws from it, so one
  key file never lines two releases up, and the same key, parameters and input reproduce the
  same bytes. The rows' order is part of it: streams are drawn per row position, so a re-sorted
  copy of the input gets streams of its own (one key never reuses the noise of a row on another
  record);
* the public **release id**, ``HMAC(key, "release-id", identity)``: unrelated across releases,
  and only the key holder can tell which input and parameters gave it;
* the public **key fingerprint** salted by the release id (:meth:`Key.fingerprint`), and the
  keyed **input fingerprint** ``HMAC(key, "input", id ‖ records identity)``, where the records
  identity leaves the rows' order out: the key holder checks that a release was made with their
  key and these parameters from given records, in any order; nobody else can test a guess of the
  input against them, or match them across releases.

Nothing unkeyed about the input is ever written: the digest itself stays in memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..random import Key

__all__ = [
    "ReleaseIdentity",
    "canonical_parameters",
    "stream_key",
    "release_id",
    "key_fingerprint",
    "input_fingerprint",
    "provenance",
]


def _plain(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    return str(obj)


def canonical_parameters(parameters: Mapping[str, Any]) -> str:
    """The parameters as canonical JSON: what the manifest holds, read back (tuples as lists,
    numpy scalars as Python numbers), keys sorted; the same text before and after a write."""
    plain = json.loads(json.dumps(dict(parameters), default=_plain, allow_nan=True))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=True)


@dataclass(frozen=True)
class ReleaseIdentity:
    """Family, method, public parameters and input digest of a release (``None``: no input,
    e.g. sketches of records sketched one at a time)."""

    family: str
    method: str
    parameters: str  # canonical JSON (canonical_parameters)
    input_digest: bytes | None

    @classmethod
    def of(cls, family: str, method: str, parameters: Mapping[str, Any], input_digest: bytes | None) -> ReleaseIdentity:
        return cls(str(family), str(method), canonical_parameters(parameters), input_digest)

    def digest(self) -> bytes:
        """SHA-256 of the identity, the rows' order included (private: it contains the unkeyed
        input digest)."""
        h = hashlib.sha256(b"ppdm-release-identity-v2\0")
        for part in (self.family, self.method, self.parameters):
            h.update(part.encode() + b"\0")
        h.update(bytes(self.input_digest) if self.input_digest is not None else b"no input")
        return h.digest()

    def records_digest(self) -> bytes | None:
        """SHA-256 of the identity without the rows' order (the input's records in any order),
        or None without an input: what the input fingerprint proves."""
        from ..data.digest import records_of

        records = records_of(self.input_digest)
        if records is None:
            return None
        h = hashlib.sha256(b"ppdm-release-records-v1\0")
        for part in (self.family, self.method, self.parameters):
            h.update(part.encode() + b"\0")
        h.update(records)
        return h.digest()


def stream_key(key: Key, identity: ReleaseIdentity) -> Key:
    """The key every random stream of the release derives from."""
    return key.derive("ppdm-release-streams", identity.digest())


def release_id(key: Key, identity: ReleaseIdentity) -> str:
    """The public id of the release (32 hex digits)."""
    return key.mac("ppdm-release-id", identity.digest())[:16].hex()


def key_fingerprint(key: Key, rid: str) -> str:
    """The public key fingerprint of the release ``rid`` (salted by the id)."""
    return key.fingerprint(bytes.fromhex(rid))


def input_fingerprint(key: Key, rid: str, identity: ReleaseIdentity) -> str | None:
    """The keyed, release-salted fingerprint of the release's records and parameters (not of the
    rows' order; None without an input digest)."""
    records = identity.records_digest()
    if records is None:
        return None
    return key.mac("ppdm-input-fingerprint", bytes.fromhex(rid) + records)[:16].hex()


def provenance(key: Key, identity: ReleaseIdentity) -> dict[str, Any]:
    """The public provenance fields of a release: ``id``, ``key_fingerprint`` and
    ``input_fingerprint``."""
    rid = release_id(key, identity)
    return {
        "id": rid,
        "key_fingerprint": key_fingerprint(key, rid),
        "input_fingerprint": input_fingerprint(key, rid, identity),
    }

"""Keyed, reproducible, per-unit random streams.

A :class:`Key` is a 128-bit secret. Every random step of the library derives its stream from
``(key, tag, *unit)`` with ``numpy.random.SeedSequence(entropy=key, spawn_key=(tag, *unit))``
(docs/randomness.md#streams-and-tags), where ``tag`` names the algorithm and ``unit`` identifies the piece
of work (a partition, a fixed-size block of global rows, a sketch component ...). A retried or
re-scheduled task therefore draws exactly the same numbers, whatever the scheduler or the number
of workers.

The default key comes from :mod:`secrets` and is never printed: ``repr(key)`` hides the value,
and the library never writes keys into outputs, logs or Parquet metadata. Save a key explicitly
with :meth:`Key.to_file` (the CLI's ``--key-file``) when a run must be reproduced.
"""

from __future__ import annotations

import enum
import os
import secrets
from pathlib import Path

import numpy as np

from .errors import InvalidParameter

__all__ = ["Key", "KeyLike", "Tag", "as_key", "generator", "seed_sequence", "BLOCK_ROWS"]

#: Rows per randomness block for algorithms whose output must not depend on partitioning:
#: streams are derived per block of global row indices (``unit = (block,)``).
BLOCK_ROWS = 65536


class Tag(enum.IntEnum):
    """Stream tags: one per randomized algorithm (the table of docs/randomness.md#streams-and-tags).

    A tag's number enters every stream drawn with it: numbers are written out here and never
    reused or changed. Which family draws from which tag is said by its entry in
    :mod:`ppdm_dask.families` (``Family.tags``; the shared layers' in ``SHARED_TAGS``).
    """

    SKETCH = 0  # shared ±1 generator of the sketches (per component)
    CONDENSE_STATIC = 1  # static condensation: Segment's samples (per cell)
    PSEUDO_DATA = 2  # condensation pseudo-data (per group)
    CONDENSE_DYNAMIC = 3  # dynamic condensation: the static initialisation
    DISTORT = 4  # MASK/EMASK distortion (per block of global rows)
    KRIMP_GENERATE = 5  # KRIMP generator (per block of output rows)
    QUEST = 6  # Quest synthetic data generator
    SAMPLE = 7  # generic sampling for callers' own use (the library uses the tags below)
    ROW_ORDER = 8  # keyed random row order of every release (per block of global rows)
    PRIVACY_LEVELS = 9  # condensation: privacy levels drawn for the paper's protocol
    CONDENSE_CELLS = 10  # condensation: sample that places the k-d tree cuts of the cells
    EVALUATION_SPLIT = 11  # evaluation harnesses: train/test split permutations
    KMEANS_INIT = 12  # k-means on sketches (and its evaluation): initial centroids
    KMEANS_SUPPRESSED = 13  # k-means on sketches: random clusters of suppressed records
    KNN_PRIOR = 14  # k-NN on sketches: random labels of suppressed test records
    KNN_MINHASH = 15  # approximate k-NN: MinHash rounds
    S0_SAMPLE = 16  # EMASK: row sample that estimates the average item support s0


class Key:
    """A secret 128-bit random key.

    Parameters
    ----------
    value : int
        Non-negative integer below 2**128.

    Notes
    -----
    ``repr`` and ``str`` never show the value. Keys pickle (tasks carry them to workers).
    """

    __slots__ = ("_value",)

    def __init__(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InvalidParameter(f"a key must be an integer, got {type(value).__name__}")
        value = int(value)
        if not 0 <= value < 2**128:
            raise InvalidParameter("a key must be a non-negative integer below 2**128")
        self._value = value

    @classmethod
    def generate(cls) -> Key:
        """A fresh key from the operating system's entropy source."""
        return cls(secrets.randbits(128))

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Key:
        """Read a key written by :meth:`to_file` (hex, optionally ``0x``-prefixed, or decimal).

        Raises
        ------
        InvalidParameter
            The file is missing, a folder, unreadable, empty, binary, or does not hold one
            integer below 2**128; the message names the file (and, on the command line, the
            ``--key-file`` flag).
        """
        hint = {
            "python": "write one with Key.to_file(path)",
            "cli": "--key-file: give a key file written by ppdm, or a new path to create one there",
        }
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            raise InvalidParameter(f"no key file at {path}", **hint) from None
        except IsADirectoryError:
            raise InvalidParameter(f"key file {path} is a folder, not a file", **hint) from None
        except OSError as exc:
            raise InvalidParameter(f"cannot read key file {path}: {exc.strerror or exc}", **hint) from None
        try:
            text = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise InvalidParameter(
                f"key file {path} holds binary data, not a key (a key file holds one hexadecimal number)", **hint
            ) from None
        if not text:
            raise InvalidParameter(f"key file {path} is empty", **hint)
        try:
            value = int(text, 16) if not text.isdigit() or text.startswith("0x") else int(text)
        except ValueError:
            raise InvalidParameter(f"key file {path} does not hold an integer key", **hint) from None
        if not 0 <= value < 2**128:
            raise InvalidParameter(f"key file {path} holds a number outside a 128-bit key (0 to 2**128 - 1)", **hint)
        return cls(value)

    def to_file(self, path: str | os.PathLike) -> None:
        """Write the key as hex to a new file readable only by its owner."""
        fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"0x{self._value:032x}\n")

    def seed_sequence(self, tag: int, *unit: int) -> np.random.SeedSequence:
        """The SeedSequence of stream ``(tag, *unit)``."""
        return np.random.SeedSequence(entropy=self._value, spawn_key=(int(tag),) + tuple(int(u) for u in unit))

    def generator(self, tag: int, *unit: int) -> np.random.Generator:
        """An independent ``numpy.random.Generator`` for stream ``(tag, *unit)``."""
        return np.random.default_rng(self.seed_sequence(tag, *unit))

    def digest(self, purpose: str) -> str:
        """A one-way SHA-256 fingerprint of the key for ``purpose`` (e.g. Dask graph names,
        which dashboards and logs show); it reveals nothing about the key itself."""
        import hashlib

        return hashlib.sha256(purpose.encode() + b"\0" + self._value.to_bytes(16, "big")).hexdigest()

    def mac(self, purpose: str, message: bytes = b"") -> bytes:
        """HMAC-SHA256 of ``message`` under the key, for ``purpose``: one-way, and only the key
        holder can compute it (release ids, keyed fingerprints, derived keys)."""
        import hmac

        return hmac.new(self._value.to_bytes(16, "big"), purpose.encode() + b"\0" + bytes(message), "sha256").digest()

    def derive(self, purpose: str, message: bytes = b"") -> Key:
        """A new key, one-way from this one, ``message`` and ``purpose`` (the first 128 bits of
        :meth:`mac`): unrelated keys for different messages, the same key for the same one."""
        return Key(int.from_bytes(self.mac(purpose, message)[:16], "big"))

    def fingerprint(self, salt: bytes = b"") -> str:
        """A public fingerprint of the key under ``salt``: tells the holder of a key file
        whether this key made a release (recompute it with the release's public salt) and
        nothing more. Releases use their own salt (their id), so the fingerprints of two
        releases made with one key cannot be matched."""
        return self.mac("ppdm-key-fingerprint", salt)[:16].hex()

    def __dask_tokenize__(self) -> str:
        # dask hashes task arguments into graph names; give it a one-way digest, never the value
        return self.digest("dask-tokenize")

    def __repr__(self) -> str:
        return "Key(<secret>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Key) and secrets.compare_digest(
            self._value.to_bytes(16, "big"), other._value.to_bytes(16, "big")
        )

    def __hash__(self) -> int:
        return hash(("ppdm-key", self._value))

    def __reduce__(self):
        return (Key, (self._value,))


KeyLike = Key | int | bytes | None


def as_key(key: KeyLike = None) -> Key:
    """Normalise ``key``: ``None`` draws a fresh secret key; ints and bytes (≤ 16) are wrapped."""
    if key is None:
        return Key.generate()
    if isinstance(key, Key):
        return key
    if isinstance(key, (bytes, bytearray)):
        if len(key) > 16:
            raise InvalidParameter("a key given as bytes must be at most 16 bytes long")
        return Key(int.from_bytes(bytes(key), "big"))
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return Key(int(key))
    raise InvalidParameter(f"cannot use a {type(key).__name__} as a random key")


def seed_sequence(key: KeyLike, tag: int, *unit: int) -> np.random.SeedSequence:
    """SeedSequence of stream ``(tag, *unit)`` under ``key`` (see :meth:`Key.seed_sequence`)."""
    return as_key(key).seed_sequence(tag, *unit)


def generator(key: Key, tag: int, *unit: int) -> np.random.Generator:
    """Generator of stream ``(tag, *unit)`` under ``key``; ``key`` must be explicit here."""
    if not isinstance(key, Key):
        raise InvalidParameter("generator() needs an explicit Key; use as_key() first")
    return key.generator(tag, *unit)

"""Row fingerprints of transaction blocks (pure numpy kernels, no Dask).

A row's fingerprint is two wrapping 64-bit sums of per-label hashes (the row length mixed into
the second): it depends only on the row's set of item labels — not on column ids or order — so
rows of two databases with different vocabularies compare. Two distinct item sets share a
fingerprint with probability below n²·2⁻¹²⁸. Used to count distinct and unique rows (KRIMP's
anonymity score, the unique-basket share of the report).
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["label_hashes", "row_fingerprints", "fingerprint_counts", "merge_fingerprint_counts"]

_M1 = np.uint64(0x9E3779B97F4A7C15)
_SALT1 = np.uint64(0x243F6A8885A308D3)
_SALT2 = np.uint64(0x13198A2E03707344)
_LEN = np.uint64(0xA4093822299F31D0)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = (x + _M1).astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def label_hashes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit hashes of every item label (driver side, once per vocabulary;
    integer and string labels never collide by type)."""
    labels = np.asarray(labels)
    if labels.dtype.kind in "iu":
        v = labels.astype(np.int64).view(np.uint64)
        return _splitmix(v ^ _SALT1), _splitmix(_splitmix(v ^ _SALT2))
    h1 = np.empty(labels.size, np.uint64)
    h2 = np.empty(labels.size, np.uint64)
    for k, s in enumerate(labels.tolist()):
        d = hashlib.blake2b(str(s).encode("utf-8"), digest_size=16, person=b"ppdm-row-fp").digest()
        h1[k] = int.from_bytes(d[:8], "little")
        h2[k] = int.from_bytes(d[8:], "little")
    return h1, h2


def row_fingerprints(block, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
    """``(rows, 2)`` uint64 fingerprints of the rows of a CSR block (``h1``, ``h2``: the
    :func:`label_hashes` of its vocabulary)."""
    ip = np.asarray(block.indptr, np.int64)
    idx = np.asarray(block.indices, np.int64)
    with np.errstate(over="ignore"):
        c1 = np.zeros(idx.size + 1, np.uint64)
        c2 = np.zeros(idx.size + 1, np.uint64)
        np.cumsum(h1[idx], out=c1[1:])
        np.cumsum(h2[idx], out=c2[1:])
        f1 = c1[ip[1:]] - c1[ip[:-1]]
        f2 = c2[ip[1:]] - c2[ip[:-1]] + np.diff(ip).astype(np.uint64) * _LEN
    return np.stack([f1, f2], axis=1)


def fingerprint_counts(fp: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct fingerprints (lexicographically sorted) and their summed counts."""
    if fp.shape[0] == 0:
        return np.zeros((0, 2), np.uint64), np.zeros(0, np.int64)
    order = np.lexsort((fp[:, 1], fp[:, 0]))
    fp, counts = fp[order], counts[order]
    starts = np.flatnonzero(np.r_[True, np.any(fp[1:] != fp[:-1], axis=1)])
    return fp[starts], np.add.reduceat(counts, starts).astype(np.int64)


def merge_fingerprint_counts(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Tree-combine step: union of fingerprints, counts summed."""
    parts = [p for p in parts if p[0].shape[0]]
    if not parts:
        return np.zeros((0, 2), np.uint64), np.zeros(0, np.int64)
    return fingerprint_counts(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

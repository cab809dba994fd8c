"""Pseudo-records that copy original records exactly (docs/condensation.md#synthetic-data-rules).

A pseudo-record is drawn uniformly around its group's centroid along the group's principal
axes, so it equals an original record only when the group has no spread at all (every member
the same record — a group of one record, or of identical records) or by a coincidence of
probability about 2⁻⁵² per coordinate. The rule of the release is nevertheless checked on every
row, not argued: :func:`exact_copies` finds the pseudo-records equal to an original record and
tells whether that original is **unique** (no other original record has the same values); the
condensers redraw those pseudo-records (:func:`~.pseudo.generate_dask` with ``redraw``) until
none copies a unique original, and count them.

The join is distributed and linear: every row (original and pseudo) gets its 128-bit content
hash (the digest's row hash, ``-0.0`` as ``0.0``), rows are routed to buckets by hash, and one
task per bucket matches the pseudo-rows against the original rows of its bucket (all-to-all of
24 bytes per row). Two different rows share a hash with probability below 2⁻⁶⁴ per pair.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask
import numpy as np

from ..data import _digest_kernels as DK

__all__ = ["CopyMatches", "RowKeys", "row_keys", "route_keys", "match_bucket", "exact_copies", "exact_copies_lazy", "MAX_BUCKETS"]

#: Buckets of the join at most (one task each).
MAX_BUCKETS = 64


def _matrix(part: Any) -> np.ndarray:
    if hasattr(part, "to_numpy"):
        return part.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.asarray(part, dtype=np.float64)


class RowKeys(NamedTuple):
    """The row hashes of a block of original records kept instead of the records (a stream's
    records are not kept: only these 16 bytes per record)."""

    keys: np.ndarray


def row_keys(part: Any) -> np.ndarray:
    """Kernel: the ``(n, 2)`` uint64 content hashes of the rows of one block."""
    if isinstance(part, RowKeys):
        return np.asarray(part.keys, np.uint64).reshape(-1, 2)
    A = _matrix(part)
    if A.ndim == 1:
        A = A[:, None]
    return DK.array_row_hashes(A) if A.shape[0] else np.zeros((0, 2), np.uint64)


def route_keys(part: Any, block: int, n_buckets: int) -> tuple:
    """Kernel: the row hashes of one block cut into ``n_buckets`` pieces by hash; each piece is
    ``(keys (m, 2), block, local rows (m,))``."""
    keys = row_keys(part)
    bucket = (keys[:, 0] % np.uint64(n_buckets)).astype(np.int64) if keys.shape[0] else np.zeros(0, np.int64)
    order = np.argsort(bucket, kind="stable")
    bounds = np.searchsorted(bucket[order], np.arange(n_buckets + 1))
    return tuple((keys[order[a:b]], int(block), order[a:b].astype(np.int64)) for a, b in zip(bounds[:-1], bounds[1:]))


def match_bucket(originals: list, pseudo: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel: the pseudo-rows of one bucket equal to an original row.

    Returns ``(pseudo ids (m, 2) [block, row], original count (m,), original ids (m, 2))``: for
    every matching pseudo-row, how many original rows have its values and one of them (the
    first by block and row)."""
    empty = (np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64))
    ok = [k for k, _, _ in originals if k.shape[0]]
    pk = [k for k, _, _ in pseudo if k.shape[0]]
    if not ok or not pk:
        return empty
    okeys = np.concatenate(ok)
    oids = np.concatenate([np.column_stack([np.full(r.size, b, np.int64), r]) for k, b, r in originals if k.shape[0]])
    pkeys = np.concatenate(pk)
    pids = np.concatenate([np.column_stack([np.full(r.size, b, np.int64), r]) for k, b, r in pseudo if k.shape[0]])
    # one code per distinct hash over both sides: a pseudo-row matches when its code is an original's
    codes = np.unique(np.concatenate([okeys, pkeys]), axis=0, return_inverse=True)[1].reshape(-1)
    ocode, pcode = codes[: okeys.shape[0]], codes[okeys.shape[0] :]
    counts = np.bincount(ocode, minlength=int(codes.max()) + 1)
    first = np.full(counts.size, -1, np.int64)
    order = np.lexsort((oids[:, 1], oids[:, 0]))  # by (block, row): np.unique keeps the first
    seen, at = np.unique(ocode[order], return_index=True)
    first[seen] = order[at]
    hit = counts[pcode] > 0
    return pids[hit], counts[pcode[hit]], oids[first[pcode[hit]]]


class CopyMatches(NamedTuple):
    """Pseudo-rows equal to an original row: ``pseudo`` their ids ``(block, row)`` in the
    pseudo-data's blocks, ``count`` how many original rows have their values, ``original`` the
    id ``(block, row)`` of the first such original."""

    pseudo: np.ndarray
    count: np.ndarray
    original: np.ndarray

    @property
    def unique(self) -> np.ndarray:
        """Mask of the matches whose original record is unique in the original data."""
        return self.count == 1

    @property
    def n_unique(self) -> int:
        return int(np.count_nonzero(self.unique))


def exact_copies_lazy(pseudo_blocks: list, original_blocks: list, n_buckets: int | None = None) -> Any:
    """The delayed :class:`CopyMatches` of delayed pseudo-data blocks against delayed original
    blocks (numpy arrays or pandas DataFrames with the attributes in the same order)."""
    B = int(n_buckets or max(1, min(MAX_BUCKETS, len(original_blocks))))
    route = dask.delayed(route_keys, pure=True, nout=B)
    o = [route(b, i, B) for i, b in enumerate(original_blocks)]
    p = [route(b, i, B) for i, b in enumerate(pseudo_blocks)]
    parts = [dask.delayed(match_bucket, pure=True)([x[j] for x in o], [x[j] for x in p]) for j in range(B)]
    return dask.delayed(_gather, pure=True)(parts)


def _gather(parts: list) -> CopyMatches:
    if not parts:
        return CopyMatches(np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64))
    pseudo = np.concatenate([p[0] for p in parts])
    order = np.lexsort((pseudo[:, 1], pseudo[:, 0])) if pseudo.size else np.zeros(0, np.int64)
    return CopyMatches(pseudo[order], np.concatenate([p[1] for p in parts])[order], np.concatenate([p[2] for p in parts])[order])


def exact_copies(pseudo_blocks: list, original_blocks: list, **compute_kwargs: Any) -> CopyMatches:
    """:func:`exact_copies_lazy`, computed (``client=``, ``progress=``)."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    (out,) = compute(exact_copies_lazy(pseudo_blocks, original_blocks), **compute_kwargs)
    return out

"""The content digest of an input collection: what "the same input" means for a release.

The digest is two digests of 32 bytes each, one :class:`InputDigest` of 64 bytes
(kernels in :mod:`._digest_kernels`), from one pass over the data (a tree reduction):

* :attr:`InputDigest.records` — the records, whatever their order: a multiset hash of the rows.
  The same records re-sorted, re-partitioned, written as CSV or as Parquet are one input. It is
  what the ledger knows an input by, and what a release's input fingerprint proves it was made
  from (docs/ledger.md#the-input-is-its-records).
* :attr:`InputDigest.order` — the rows in their order, as a polynomial hash. It only salts the
  release's random streams (:mod:`ppdm_dask.release.identity`): streams are drawn per row
  position, and a re-sorted copy of an input must never reuse them (the noise of one row would
  fall on another record, and two releases lined up would cancel it).

Neither depends on the files, the partitioning, the vocabulary's column ids or the library
versions. The digest is never written anywhere: it is an unkeyed function of the data, so
publishing it would let anyone test a guess of the input. Public files carry keyed fingerprints
derived from it instead.
"""

from __future__ import annotations

import hashlib
from typing import Any

import dask
import numpy as np

from . import _digest_kernels as K

__all__ = [
    "InputDigest",
    "content_digest",
    "content_digest_lazy",
    "finish_digest",
    "finish_records",
    "join_digests",
    "records_of",
]


class InputDigest(bytes):
    """The 64-byte digest of an input: :attr:`records` (order-free) then :attr:`order`."""

    @property
    def records(self) -> bytes:
        """The 32-byte digest of the records, in any order."""
        return bytes(self[:32])

    @property
    def order(self) -> bytes:
        """The 32-byte digest of the rows in their order."""
        return bytes(self[32:])

    def __repr__(self) -> str:  # never printed whole: it is an unkeyed function of the data
        return "InputDigest(...)"


def records_of(digest: bytes | None) -> bytes | None:
    """The records part of a digest (a 32-byte digest of an older kind is its own records part)."""
    if digest is None:
        return None
    return digest.records if isinstance(digest, InputDigest) else bytes(digest)[:32]


def _tx_hashes(block: Any, weights: Any, cols: tuple, label_hash: np.ndarray) -> np.ndarray:
    col_h = [K.column_hashes(np.asarray(c)) for c in cols]
    w = None if weights is None else np.asarray(weights.data)
    return K.transaction_row_hashes(block.indptr, block.indices, label_hash, w, col_h)


def _frame_hashes(df: Any) -> np.ndarray:
    import pyarrow as pa

    cols = []
    for name in df.columns:
        s = df[name]
        try:
            arr = pa.Array.from_pandas(s)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed objects: by their text
            arr = pa.array(s.astype(str).to_numpy(), type=pa.string())
        cols.append((str(name), arr))
    return K.frame_row_hashes(cols) if cols else np.zeros((len(df), 2), np.uint64)


def _array_hashes(x: Any) -> np.ndarray:
    return K.array_row_hashes(np.asarray(x))


def row_hashes(obj: Any) -> tuple[str, list[Any], list[int] | None]:
    """The kind of ``obj``, one delayed ``(rows, 2)`` uint64 array of its row hashes per block (in
    row order), and the rows of every block when known without a pass (arrays)."""
    import dask.array as da

    if hasattr(obj, "vocabulary") and hasattr(obj, "blocks"):  # TransactionArray
        label_hash = K.column_hashes(np.asarray(obj.vocabulary.labels))
        blocks = obj.blocks.to_delayed().ravel()
        weights = obj.weights.to_delayed().ravel() if obj.weights is not None else [None] * len(blocks)
        names = sorted(obj.columns)
        cols = [obj.columns[n].to_delayed().ravel() for n in names]
        fn = dask.delayed(_tx_hashes, pure=True)
        parts = [fn(b, w, tuple(c[i] for c in cols), label_hash) for i, (b, w) in enumerate(zip(blocks, weights))]
        kind = "transactions:" + ",".join(names) + (":weights" if obj.weights is not None else "")
        return kind, parts, [int(r) for r in obj.partition_rows]
    if hasattr(obj, "to_delayed") and hasattr(obj, "columns") and hasattr(obj, "dtypes"):  # dask DataFrame
        return "table", [dask.delayed(_frame_hashes, pure=True)(p) for p in obj.to_delayed()], None
    if hasattr(obj, "columns") and hasattr(obj, "dtypes"):  # pandas DataFrame
        return "table", [dask.delayed(_frame_hashes, pure=True)(obj)], [len(obj)]
    if isinstance(obj, da.Array):
        arr = _as_2d(obj)
        return f"array:{arr.shape[1]}", [dask.delayed(_array_hashes, pure=True)(b) for b in arr.to_delayed().ravel()], None
    arr = np.asarray(obj)
    if arr.ndim in (1, 2) and arr.dtype.kind in "biuf":
        return f"array:{1 if arr.ndim == 1 else arr.shape[1]}", [dask.delayed(_array_hashes, pure=True)(arr)], [arr.shape[0]]
    raise TypeError(f"cannot digest a {type(obj).__name__}")


def _as_2d(obj: Any) -> Any:
    arr = obj if obj.ndim == 2 else obj[:, None]
    return arr.rechunk({1: -1}) if len(arr.chunks[1]) > 1 else arr


def _aligned_arrays(objs: tuple[Any, ...]) -> list[Any] | None:
    """The array pieces of one input (``None`` kept) cut into the same row blocks, or None when a
    piece is not an array (its records are then digested piece by piece)."""
    import dask.array as da

    present = [o for o in objs if o is not None]
    if len(present) < 2 or not all(isinstance(o, (da.Array, np.ndarray)) and np.ndim(o) in (1, 2) for o in present):
        return None
    if any(isinstance(o, np.ndarray) and o.dtype.kind not in "biuf" for o in present):
        return None
    arrays = [None if o is None else _as_2d(da.asarray(o)) for o in objs]
    first = next(a for a in arrays if a is not None)
    if any(a is not None and a.shape[0] != first.shape[0] for a in arrays):
        return None
    chunks = first.chunks[0]
    return [None if a is None else a.rechunk({0: chunks}) for a in arrays]


def _block_state(*hashes: Any) -> tuple[tuple[Any, ...], tuple[int, tuple[int, ...]]]:
    """Task: the order state of every piece's block and the multiset state of its records."""
    polys = tuple(K.block_poly(h) if h is not None else K.EMPTY_POLY for h in hashes)
    return polys, K.block_multiset(K.pair_row_hashes(list(hashes)))


def _combine_states(parts: list[Any]) -> tuple[tuple[Any, ...], tuple[int, tuple[int, ...]]]:
    polys = tuple(K.combine_polys([p[0][i] for p in parts]) for i in range(len(parts[0][0])))
    return polys, K.combine_multisets([p[1] for p in parts])


def finish_digest(kind: str, state: tuple) -> bytes:
    """The 32-byte order digest of a combined state ``(rows, lanes)`` of a collection of ``kind``."""
    n, lanes = state
    text = f"ppdm-content-digest-v1\0{kind}\0{int(n)}\0" + ",".join(str(int(v)) for v in lanes)
    return hashlib.sha256(text.encode()).digest()


def finish_records(kinds: list[str], state: tuple) -> bytes:
    """The 32-byte records digest of a combined multiset state of an input whose pieces are of
    ``kinds`` (``"none"`` for an absent piece)."""
    n, lanes = state
    text = "ppdm-records-digest-v1\0" + "\1".join(kinds) + f"\0{int(n)}\0" + ",".join(str(int(v)) for v in lanes)
    return hashlib.sha256(text.encode()).digest()


def join_digests(pieces: list[bytes]) -> bytes:
    """One digest of several: the piece itself when there is one, else a SHA-256 of the tuple."""
    if len(pieces) == 1:
        return pieces[0]
    return hashlib.sha256(b"ppdm-content-digest-tuple\0" + b"".join(pieces)).digest()


def _assemble(kinds: list[str], states: list[Any]) -> InputDigest:
    """Task: the :class:`InputDigest` from each group's combined state (one group when the pieces
    are aligned, else one per piece: their records digests are then joined as a tuple)."""
    order: list[bytes] = []
    records: list[bytes] = []
    for group_kinds, state in zip(kinds, states):
        names = group_kinds.split("\1")
        polys, mset = state
        order += [b"none" if k == "none" else finish_digest(k, p) for k, p in zip(names, polys)]
        records.append(finish_records(names, mset))
    return InputDigest(join_digests(records) + join_digests(order))


def content_digest_lazy(*objs: Any) -> Any:
    """A delayed :class:`InputDigest` of ``objs`` (TransactionArray, dask or pandas DataFrame, dask
    or numpy array; several for an input made of aligned pieces, e.g. records and their privacy
    levels; ``None`` entries count as absent), to compute together with other passes.

    Pieces that are arrays are cut into the same row blocks so that a record's pieces are hashed
    together (:func:`~._digest_kernels.pair_row_hashes`): the records digest then binds each
    record to its own privacy level. Other combinations are digested piece by piece."""
    from ..graph import tree_reduce

    if not objs:
        raise TypeError("cannot digest nothing")
    aligned = _aligned_arrays(objs)
    groups: list[tuple[Any, ...]] = [tuple(aligned)] if aligned is not None else [(o,) for o in objs]
    kinds, states = [], []
    for group in groups:
        names: list[str] = []
        tasks: list[list[Any] | None] = []
        for obj in group:
            if obj is None:
                names.append("none")
                tasks.append(None)
                continue
            kind, parts, _ = row_hashes(obj)
            names.append(kind)
            tasks.append(parts)
        n_blocks = max((len(t) for t in tasks if t is not None), default=0)
        if any(t is not None and len(t) != n_blocks for t in tasks):  # pragma: no cover - aligned above
            raise ValueError("the pieces of the input are not cut into the same blocks")
        fn = dask.delayed(_block_state, pure=True)
        parts = [fn(*[None if t is None else t[i] for t in tasks]) for i in range(n_blocks)]
        empty = (tuple(K.EMPTY_POLY for _ in names), K.EMPTY_SET)
        states.append(tree_reduce(parts, _combine_states) if parts else dask.delayed(empty))
        kinds.append("\1".join(names))
    return dask.delayed(_assemble, pure=True)(kinds, states)


def content_digest(*objs: Any, **compute_kwargs: Any) -> InputDigest:
    """The :class:`InputDigest` of ``objs`` (see :func:`content_digest_lazy`): one pass."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    (out,) = compute(content_digest_lazy(*objs), **compute_kwargs)
    return out

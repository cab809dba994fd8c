"""The content digest of an input collection: what "the same input" means for a release.

A release's random streams derive from its key *and* its identity, and the identity names the
input by this digest (:mod:`ppdm_dask.release.identity`). The digest depends on the rows and
their order only — not on the files, the partitioning, the vocabulary's column ids or the
library versions — so the same data read from another copy, in 1 or 40 partitions, gives the
same release, and any other data gives unrelated streams. One pass over the data, a tree
reduction of per-block polynomial hashes (kernels in :mod:`._digest_kernels`).

The digest is never written anywhere: it is an unkeyed function of the data, so publishing it
would let anyone test a guess of the input. Public files carry keyed fingerprints derived from
it instead.
"""

from __future__ import annotations

import hashlib
from typing import Any

import dask
import numpy as np

from . import _digest_kernels as K

__all__ = ["content_digest", "content_digest_lazy", "finish_digest", "join_digests"]


def _tx_block(block: Any, weights: Any, cols: tuple, label_hash: np.ndarray) -> tuple:
    col_h = [K.column_hashes(np.asarray(c)) for c in cols]
    w = None if weights is None else np.asarray(weights.data)
    return K.block_poly(K.transaction_row_hashes(block.indptr, block.indices, label_hash, w, col_h))


def _frame_block(df: Any) -> tuple:
    import pyarrow as pa

    cols = []
    for name in df.columns:
        s = df[name]
        try:
            arr = pa.Array.from_pandas(s)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed objects: by their text
            arr = pa.array(s.astype(str).to_numpy(), type=pa.string())
        cols.append((str(name), arr))
    return K.block_poly(K.frame_row_hashes(cols) if cols else np.zeros((len(df), 2), np.uint64))


def _array_block(x: Any) -> tuple:
    return K.block_poly(K.array_row_hashes(np.asarray(x)))


def _parts(obj: Any) -> tuple[str, list[Any]]:
    """The kind of ``obj`` and one delayed digest state per block, in row order."""
    import dask.array as da

    if hasattr(obj, "vocabulary") and hasattr(obj, "blocks"):  # TransactionArray
        label_hash = K.column_hashes(np.asarray(obj.vocabulary.labels))
        blocks = obj.blocks.to_delayed().ravel()
        weights = obj.weights.to_delayed().ravel() if obj.weights is not None else [None] * len(blocks)
        names = sorted(obj.columns)
        cols = [obj.columns[n].to_delayed().ravel() for n in names]
        fn = dask.delayed(_tx_block, pure=True)
        parts = [fn(b, w, tuple(c[i] for c in cols), label_hash) for i, (b, w) in enumerate(zip(blocks, weights))]
        return "transactions:" + ",".join(names) + (":weights" if obj.weights is not None else ""), parts
    if hasattr(obj, "to_delayed") and hasattr(obj, "columns") and hasattr(obj, "dtypes"):  # dask DataFrame
        return "table", [dask.delayed(_frame_block, pure=True)(p) for p in obj.to_delayed()]
    if hasattr(obj, "columns") and hasattr(obj, "dtypes"):  # pandas DataFrame
        return "table", [dask.delayed(_frame_block, pure=True)(obj)]
    if isinstance(obj, da.Array):
        arr = obj if obj.ndim == 2 else obj[:, None]
        if len(arr.chunks[1]) > 1:
            arr = arr.rechunk({1: -1})
        return f"array:{arr.shape[1]}", [dask.delayed(_array_block, pure=True)(b) for b in arr.to_delayed().ravel()]
    arr = np.asarray(obj)
    if arr.ndim in (1, 2) and arr.dtype.kind in "biuf":
        return f"array:{1 if arr.ndim == 1 else arr.shape[1]}", [dask.delayed(_array_block, pure=True)(arr)]
    raise TypeError(f"cannot digest a {type(obj).__name__}")


def finish_digest(kind: str, state: tuple) -> bytes:
    """The 32-byte digest of a combined state ``(rows, lanes)`` of a collection of ``kind``."""
    n, lanes = state
    text = f"ppdm-content-digest-v1\0{kind}\0{int(n)}\0" + ",".join(str(int(v)) for v in lanes)
    return hashlib.sha256(text.encode()).digest()


def _finish(kind: str, parts: list) -> bytes:
    return finish_digest(kind, K.combine_polys(parts))


def content_digest_lazy(*objs: Any) -> Any:
    """A delayed 32-byte digest of ``objs`` (TransactionArray, dask or pandas DataFrame, dask or
    numpy array; several for an input made of aligned pieces, e.g. records and their privacy
    levels; ``None`` entries count as absent), to compute together with other passes."""
    from ..graph import tree_reduce

    pieces = []
    for obj in objs:
        if obj is None:
            pieces.append(dask.delayed(b"none"))
            continue
        kind, parts = _parts(obj)
        state = tree_reduce(parts, K.combine_polys) if parts else dask.delayed(K.EMPTY_POLY)
        pieces.append(dask.delayed(finish_digest, pure=True)(kind, state))
    return dask.delayed(join_digests, pure=True)(pieces)


def join_digests(pieces: list[bytes]) -> bytes:
    """One digest of several: the piece itself when there is one, else a SHA-256 of the tuple."""
    if len(pieces) == 1:
        return pieces[0]
    return hashlib.sha256(b"ppdm-content-digest-tuple\0" + b"".join(pieces)).digest()


def content_digest(*objs: Any, **compute_kwargs: Any) -> bytes:
    """The 32-byte content digest of ``objs`` (see :func:`content_digest_lazy`): one pass."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    (out,) = compute(content_digest_lazy(*objs), **compute_kwargs)
    return out

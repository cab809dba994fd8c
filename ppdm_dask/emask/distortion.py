"""MASK / EMASK distortion of transactions (SPEC §4.1), per partition and per record."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import scipy.sparse as sp

from ..graph import blocks_from_tasks, unique_name
from ..errors import InvalidParameter
from ..random import Key, KeyLike, Tag, as_key
from . import _kernels as K

__all__ = ["distort", "distort_record", "check_pq", "DELTA_MIN"]

#: Smallest admissible |p + q - 1|: below it the distorted data carry no information.
DELTA_MIN = 1e-6


def check_pq(p: float, q: float) -> tuple[float, float]:
    """Validate the flip probabilities: 0 <= p, q <= 1 and p + q != 1."""
    for name, v in (("p", p), ("q", q)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not (0.0 <= float(v) <= 1.0):
            raise InvalidParameter(f"{name} must be a probability in [0, 1], got {v!r}")
    if abs(float(p) + float(q) - 1.0) < DELTA_MIN:
        raise InvalidParameter(
            f"p + q = 1 (p={p}, q={q}): the distorted data would be independent of the original, nothing can be reconstructed"
        )
    return float(p), float(q)


def _distort_task(block: sp.csr_array, p: float, q: float, key: Key, first_row: int) -> sp.csr_array:
    return K.distort_block(block, p, q, key.generator(Tag.DISTORT, first_row))


def distort(tx: Any, p: float, q: float, *, key: KeyLike = None) -> Any:
    """Distort every bit of ``tx``: a 1 stays 1 w.p. ``p``, a 0 becomes 1 w.p. ``1 - q``.

    MASK is ``p = q``; the paper's recommended EMASK setting is p = 0.4, q = 0.98.

    Parameters
    ----------
    tx : TransactionArray
    p, q : float
        Probabilities; ``p + q = 1`` is refused (nothing could be reconstructed).
    key : Key, int or bytes, optional
        Secret random key; a fresh one from the OS when omitted. Never written anywhere.

    Returns
    -------
    TransactionArray
        Same shape, vocabulary and partitioning; metadata records p, q and n_items.

    Notes
    -----
    Sparse and exact (no densifying): kept ones are Bernoulli(p) on the stored entries, and per
    row K ~ Binomial(n_items - len, 1 - q) new items are drawn uniformly among the absent ones.
    Each partition draws from the stream ``(Tag.DISTORT, first global row of the partition)``,
    so a retried task or another scheduler reproduces the output exactly; a different
    *partitioning* gives another (equally distributed) draw.
    """
    from ..data.transactions import TransactionArray

    p, q = check_pq(p, q)
    key = as_key(key)
    starts = np.r_[0, np.cumsum(tx.partition_rows)][:-1]
    src = tx.blocks.to_delayed().ravel()
    # the key enters the graph name only through a one-way digest
    name = unique_name("distort", tx.blocks.name, p, q, key.digest("ppdm-distort-graph"))
    tasks = [(_distort_task, s.key, p, q, key, int(first)) for s, first in zip(src, starts)]
    blocks = blocks_from_tasks(name, tasks, tx.partition_rows, tx.n_items, dependencies=[tx.blocks])
    meta = dict(tx.metadata)
    meta.update({"distortion": "emask" if p != q else "mask", "p": p, "q": q, "n_items": tx.n_items})
    return TransactionArray(blocks, tx.vocabulary, metadata=meta, columns=tx.columns)


def distort_record(items: Iterable[int], p: float, q: float, n_items: int, *, key: KeyLike = None, record_index: int = 0) -> np.ndarray:
    """Distort one record at collection time (column ids in ``[0, n_items)``); returns the
    sorted distorted column ids. Stream ``(Tag.DISTORT, -1 - record_index)`` keeps it apart
    from the partition streams of :func:`distort`."""
    p, q = check_pq(p, q)
    ids = np.unique(np.asarray(list(items), dtype=np.int64))
    if ids.size and (ids[0] < 0 or ids[-1] >= n_items):
        from ..errors import ItemIdError

        raise ItemIdError(f"item ids must lie in [0, {n_items})")
    block = sp.csr_array((np.ones(ids.size, np.int32), ids.astype(np.int32), np.array([0, ids.size], np.int32)), shape=(1, n_items))
    rng = as_key(key).generator(Tag.DISTORT, 2**63 - 1 - int(record_index))
    return K.distort_block(block, p, q, rng).indices.astype(np.int64)

"""MASK / EMASK distortion of transactions (docs/emask.md#distortion), per block of global rows and
per record (docs/randomness.md#block-seeding)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..constraints import Interval, validate
from ..errors import InvalidParameter
from ..graph import blocks_from_tasks, unique_name
from ..random import BLOCK_ROWS, Key, KeyLike, Tag, as_key
from . import _kernels as K

__all__ = ["distort", "distort_record", "check_pq", "block_aligned_rows", "DELTA_MIN", "DISTORTION_CONSTRAINTS"]

#: Smallest admissible |p + q - 1|: below it the distorted data carry no information.
DELTA_MIN = 1e-6


#: the parameters of a distortion (:mod:`ppdm_dask.constraints`): the flip probabilities, the
#: basic-privacy floor in percent and the local-DP budget per item (None: no budget). One
#: declaration for the :class:`~.Distorter` (at fit), a release read back and the command line.
DISTORTION_CONSTRAINTS: dict[str, list[Any]] = {
    "p": [Interval(float, 0, 1)],
    "q": [Interval(float, 0, 1)],
    "privacy_floor": [Interval(float, 0, 100)],
    "epsilon_budget": [None, Interval(float, 0, None, closed="neither")],
}


def check_pq(p: float, q: float) -> tuple[float, float]:
    """Validate the flip probabilities: 0 <= p, q <= 1 and p + q != 1."""
    pq = validate(DISTORTION_CONSTRAINTS, {"p": p, "q": q})
    p, q = pq["p"], pq["q"]
    if abs(p + q - 1.0) < DELTA_MIN:
        raise InvalidParameter(
            f"p + q = 1 (p={p:g} and q={q:g} add up to 1): the distorted data would be independent of the original, "
            "nothing can be reconstructed",
            python="p + q != 1",
            fix="`p` and `q` with p + q != 1",
        )
    return p, q


def _distort_blocks(block: sp.csr_array, p: float, q: float, key: Key, first_row: int) -> sp.csr_array:
    """Kernel: distort a partition made of whole randomness blocks (global rows ``first_row``..,
    ``first_row`` a multiple of ``BLOCK_ROWS``); block ``b`` draws from ``(Tag.DISTORT, b)``."""
    n = block.shape[0]
    if n <= BLOCK_ROWS:
        return K.distort_block(block, p, q, key.generator(Tag.DISTORT, first_row // BLOCK_ROWS))
    pieces = [
        K.distort_block(sp.csr_array(block[s : s + BLOCK_ROWS]), p, q, key.generator(Tag.DISTORT, (first_row + s) // BLOCK_ROWS))
        for s in range(0, n, BLOCK_ROWS)
    ]
    out = sp.csr_array(sp.vstack(pieces, format="csr"))
    out.indices = out.indices.astype(np.int32, copy=False)
    out.indptr = out.indptr.astype(np.int32, copy=False)
    return out


def block_aligned_rows(partition_rows: Sequence[int]) -> tuple[int, ...]:
    """Partition sizes whose boundaries are the input's rounded down to multiples of
    ``BLOCK_ROWS``: every partition then holds whole randomness blocks (the input itself when
    it is aligned already, e.g. a single partition)."""
    bounds = np.r_[0, np.cumsum(np.asarray(partition_rows, dtype=np.int64))]
    inner = (bounds[1:-1] // BLOCK_ROWS) * BLOCK_ROWS
    new = np.unique(np.r_[0, inner, bounds[-1]])
    return tuple(int(r) for r in np.diff(new)) or (0,)


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
        Same shape, vocabulary, partitioning and row columns; metadata records p, q and n_items.

    Notes
    -----
    Sparse and exact (no densifying): kept ones are Bernoulli(p) on the stored entries, and per
    row K ~ Binomial(n_items - len, 1 - q) new items are drawn uniformly among the absent ones.
    Rows are distorted in blocks of ``BLOCK_ROWS`` global rows, block ``b`` drawing from the
    stream ``(Tag.DISTORT, b)``: the output depends on the key and the data only, not on the
    partitioning, the scheduler or retries. An input whose partitions do not start on block
    boundaries is re-cut to block-aligned partitions for the distortion and the result re-cut
    back (two cheap slicing steps).
    """
    from ..data.transactions import TransactionArray

    p, q = check_pq(p, q)
    key = as_key(key)
    aligned = tx._rechunk(block_aligned_rows(tx.partition_rows))
    starts = np.r_[0, np.cumsum(aligned.partition_rows)][:-1]
    src = aligned.blocks.to_delayed().ravel()
    # the key enters the graph name only through a one-way digest
    name = unique_name("distort", aligned.blocks.name, p, q, key.digest("ppdm-distort-graph"))
    tasks = [(_distort_blocks, s.key, p, q, key, int(first)) for s, first in zip(src, starts)]
    blocks = blocks_from_tasks(name, tasks, aligned.partition_rows, tx.n_items, dependencies=[aligned.blocks])
    meta = dict(tx.metadata)
    meta.update({"distortion": "emask" if p != q else "mask", "p": p, "q": q, "n_items": tx.n_items})
    out = TransactionArray(blocks, tx.vocabulary, metadata=meta)._rechunk(tx.partition_rows)
    return out._replace(columns=tx.columns)


def distort_record(
    items: Iterable[int], p: float, q: float, n_items: int, *, key: KeyLike = None, record_index: int = 0
) -> np.ndarray:
    """Distort one record at collection time (column ids in ``[0, n_items)``); returns the
    sorted distorted column ids. Stream ``(Tag.DISTORT, -1 - record_index)`` keeps it apart
    from the partition streams of :func:`distort`."""
    p, q = check_pq(p, q)
    ids = np.unique(np.asarray(list(items), dtype=np.int64))
    if ids.size and (ids[0] < 0 or ids[-1] >= n_items):
        from ..errors import ItemIdError

        raise ItemIdError(f"item ids must lie in [0, {n_items})")
    block = sp.csr_array(
        (np.ones(ids.size, np.int32), ids.astype(np.int32), np.array([0, ids.size], np.int32)), shape=(1, n_items)
    )
    rng = as_key(key).generator(Tag.DISTORT, 2**63 - 1 - int(record_index))
    return K.distort_block(block, p, q, rng).indices.astype(np.int64)

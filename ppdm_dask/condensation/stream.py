"""Dynamic condensation over a Dask array: a FOLD over the row blocks in stream order.

Each block is computed where it lives (on the cluster) and fetched one at a time; the group
statistics are the fold state on the driver, so driver memory holds one block plus the groups.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

from ..random import KeyLike
from .dynamic import StreamingCondenser
from .groups import GroupTable

__all__ = ["condense_stream"]


def condense_stream(
    X: Any,
    privacy: Any,
    *,
    key: KeyLike = None,
    init_number: int | None = None,
    split_strict: bool = False,
    client: Any = None,
) -> tuple[GroupTable, StreamingCondenser]:
    """Feed the row blocks of ``X`` (dask or numpy, N x d) to a :class:`StreamingCondenser`.

    Parameters
    ----------
    X : dask.array.Array or ndarray
        Records in arrival order (block order).
    privacy : array (N,)
        Privacy level of each record.
    init_number : int, optional
        Records of the static initialisation (default: the first block, extended until feasible).

    Returns
    -------
    (groups, condenser) : the finalized groups and the condenser (counters ``n_splits_`` ...).
    """
    from ..progress import compute

    X = X if isinstance(X, da.Array) else da.from_array(np.asarray(X), chunks=(max(1, min(len(X), 100_000)), -1))
    p = np.asarray(privacy)
    cond = StreamingCondenser(init_number=init_number, split_strict=split_strict, key=key)
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
    for blk, a, b in zip(X.to_delayed().ravel(), offsets[:-1], offsets[1:]):
        (xb,) = compute(blk, progress=False, client=client)
        cond.partial_fit(np.asarray(xb), p[a:b])
    return cond.finalize(), cond

"""The item universe of an EMASK release: the input's own items, or a public item catalogue.

Every item of the universe is distorted (a 0 turns into a 1 with probability 1 − q), and the
universe is published (``_vocabulary.parquet``, the items of the basket CSV). When the universe
is the input's own list of items, it tells which items at least one original basket holds —
deterministically, outside the local-DP guarantee: an adversary who knows every basket but one
learns whether the last holds an item nobody else has (docs/emask.md#the-item-universe). A
public catalogue fixed before the data are seen (``Distorter(items=...)``, ``--items FILE``)
closes this channel: an item of the catalogue that no basket holds is distorted like any other,
so its presence in the release is noise.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter

__all__ = ["catalogue_vocabulary", "catalogue_digest", "on_vocabulary", "widen_block"]


def widen_block(block: sp.csr_array, index: np.ndarray, n_cols: int) -> sp.csr_array:
    """Kernel: ``block`` with column ``j`` moved to ``index[j]`` of ``n_cols`` columns
    (``index`` increasing, so every row stays sorted)."""
    indices = np.asarray(index, dtype=np.int64)[np.asarray(block.indices, dtype=np.int64)].astype(np.int32)
    return sp.csr_array(
        (np.array(block.data, copy=True), indices, np.array(block.indptr, dtype=np.int32, copy=True)),
        shape=(block.shape[0], int(n_cols)),
    )


def catalogue_vocabulary(items: Iterable[Any]) -> Any:
    """The :class:`~ppdm_dask.data.vocabulary.Vocabulary` of a catalogue (labels sorted, unique)."""
    from ..data.vocabulary import Vocabulary
    from ..errors import PPDMError

    try:
        vocab = Vocabulary(list(items))
    except PPDMError as exc:
        raise InvalidParameter(
            f"the item catalogue is not a list of item labels: {exc}", python="items=", fix="`items` FILE (one item label a line)"
        ) from None
    if len(vocab) == 0:
        raise InvalidParameter("the item catalogue is empty", python="items=", fix="`items` FILE (one item label a line)")
    return vocab


def catalogue_digest(vocabulary: Any) -> str:
    """Public digest of a catalogue's labels (a public parameter of the release: two releases of
    one input with other catalogues have other identities, hence other random streams)."""
    labels = vocabulary.labels.tolist()
    return hashlib.sha256(json.dumps(labels, separators=(",", ":")).encode()).hexdigest()[:32]


def on_vocabulary(tx: Any, vocabulary: Any) -> Any:
    """``tx`` with the columns of ``vocabulary``, a superset of its labels (items of the
    catalogue no basket holds become empty columns); one MAP task per block."""
    from ..data.transactions import TransactionArray
    from ..graph import CSR_META
    from .flip_rates import label_map

    if tx.vocabulary == vocabulary:
        return tx
    kind = "integers" if tx.vocabulary.is_integer else "strings"
    fix = {"python": "items= listing every item", "cli": "--items FILE listing every item"}
    if tx.vocabulary.labels.dtype.kind != vocabulary.labels.dtype.kind:
        raise InvalidParameter(f"the item catalogue's labels are not of the data's label type ({kind})", **fix)
    index = label_map(tx.vocabulary.labels, vocabulary.labels)
    missing = tx.vocabulary.labels[index < 0]
    if missing.size:
        raise InvalidParameter(
            f"{missing.size:,} item(s) of the data are not in the item catalogue (e.g. "
            f"{missing[:5].tolist()}); it must list every item the data can hold",
            **fix,
        )
    n_cols = len(vocabulary)
    chunks = (tx.blocks.chunks[0], (n_cols,))
    blocks = tx.blocks.map_blocks(widen_block, index, n_cols, chunks=chunks, dtype=tx.blocks.dtype, meta=CSR_META)
    weights = (
        tx.weights.map_blocks(widen_block, index, n_cols, chunks=chunks, dtype=tx.weights.dtype, meta=CSR_META)
        if tx.weights is not None
        else None
    )
    return TransactionArray(
        blocks, vocabulary, metadata=tx.metadata, columns=tx.columns, weights=weights, partition_nnz=tx.partition_nnz
    )

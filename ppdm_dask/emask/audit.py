"""Owner-side audit of an EMASK release: privacy (BP, re-interrogated privacy RP, local-DP ε)
and accuracy of EMASK-Apriori against exact Apriori on the original.

RP compares every original row with its distorted row. A written release stores its rows in a
keyed random order (so that nobody can link them by position); only the owner of the key can
put them back in the input's order (:func:`realign`), which is what RP needs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter

__all__ = ["realign", "audit", "aligned_distortion"]


def _split(block: sp.csr_array, rows: np.ndarray, bounds: np.ndarray) -> tuple:
    """Kernel: cut one release block into pieces ``(rows, input row ids)``, one per input partition."""
    dest = np.searchsorted(bounds, rows, side="right") - 1
    order = np.argsort(dest, kind="stable")
    cut = np.searchsorted(dest[order], np.arange(bounds.size))
    return tuple(
        (sp.csr_array(block[order[cut[k] : cut[k + 1]]]), rows[order[cut[k] : cut[k + 1]]]) for k in range(bounds.size - 1)
    )


def _merge(pieces: list[tuple], n_items: int) -> sp.csr_array:
    """Kernel: the rows of one input partition, in input order."""
    rows = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    blocks = [p[0] for p in pieces if p[0].shape[0]]
    merged = sp.csr_array(sp.vstack(blocks, format="csr")) if blocks else sp.csr_array((0, n_items), dtype=np.int32)
    out = sp.csr_array(merged[np.argsort(rows, kind="stable")])
    out.indices = out.indices.astype(np.int32, copy=False)
    out.indptr = out.indptr.astype(np.int32, copy=False)
    return out


def _same(x: Any) -> Any:
    return x


def realign(released: Any, key: Any, n_files: int, partition_rows: tuple[int, ...]) -> Any:
    """The rows of a release written in keyed order (``n_files`` part files, read back as one
    block per file), put back in the input's order and cut into ``partition_rows``.

    One split task per release block and one merge task per input partition; the input row of
    every output position (N int64) is computed on the client.
    """
    import dask

    from ..data.transactions import TransactionArray
    from ..graph import blocks_from_tasks, unique_name
    from ..release.order import output_positions

    n = released.n_transactions
    if sum(partition_rows) != n:
        raise InvalidParameter(f"the release has {n:,} rows, the original {sum(partition_rows):,}")
    pos = output_positions(key, n, int(n_files))
    origin = np.empty(n, np.int64)
    origin[pos] = np.arange(n, dtype=np.int64)
    starts = np.r_[0, np.cumsum(released.partition_rows)]
    bounds = np.r_[0, np.cumsum(partition_rows)].astype(np.int64)
    k = len(partition_rows)
    split = dask.delayed(_split, nout=k, pure=True)
    parts = [split(b, origin[starts[i] : starts[i + 1]], bounds) for i, b in enumerate(released.blocks.to_delayed().ravel())]
    merged = [dask.delayed(_merge, pure=True)([p[j] for p in parts], released.n_items) for j in range(k)]
    name = unique_name("emask-realign", released.blocks.name, key.digest("emask-realign"), partition_rows)
    blocks = blocks_from_tasks(name, [(_same, m.key) for m in merged], partition_rows, released.n_items, dependencies=merged)
    return TransactionArray(blocks, released.vocabulary, metadata=released.metadata)


def aligned_distortion(original: Any, released: Any, key: Any) -> Any:
    """The distorted rows in the original's order, or None when that needs a key not given."""
    from ..release import Release

    if not isinstance(released, Release):
        return released  # a TransactionArray from distort(): rows are in input order
    manifest = released.manifest
    if manifest is None:
        return released.data  # not written yet: still in input order
    if key is None:
        return None
    rel = manifest["release"]
    skey = released.owner_stream_key(key, original)  # the rows were ordered by the release's own stream key
    return realign(released.data, skey, int(rel["row_order"]["files"]), original.partition_rows)


def on_universe(original: Any, data: Any) -> Any:
    """The original on the columns of the release's item catalogue (its items must be among
    them; see :mod:`.items`)."""
    from .items import on_vocabulary

    return on_vocabulary(original, data.vocabulary)


def audit(
    original: Any,
    released: Any,
    min_support: float | int,
    *,
    p: float | None = None,
    q: float | None = None,
    key: Any = None,
    client: Any = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Privacy and accuracy of an EMASK release, for the owner of the original.

    Parameters
    ----------
    original : TransactionArray
    released : DistortedRelease or TransactionArray
        A release (written and opened, or from ``Distorter.release``), or distorted rows in
        the original's order (``distort``).
    min_support : float or int
        Mining support of the accuracy comparison.
    p, q : float, optional
        Default: the release's parameters (or the distorted data's metadata).
    key : Key, optional
        The release's key: needed for the re-interrogated privacy of a written release.

    Returns
    -------
    dict
        ``p``, ``q``, ``s0``, ``basic_privacy``, ``reinterrogated_privacy`` (None without the
        key), ``ldp_epsilon_per_item``, ``slowdown`` (EMASK-Apriori / Apriori time) and
        ``accuracy`` (ρ, σ⁺, σ⁻ of :func:`ppdm_dask.metrics.itemset_accuracy`).
    """
    from ..metrics import itemset_accuracy
    from ..mining import apriori
    from ..progress import compute
    from .distortion import check_pq
    from .mining import mine
    from .privacy import basic_privacy, ldp_epsilon, reinterrogated_privacy
    from .release import nnz_lazy

    data = getattr(released, "data", released)
    params = getattr(released, "parameters", None) or data.metadata
    p, q = check_pq(p if p is not None else params.get("p"), q if q is not None else params.get("q"))
    given = original  # as the Distorter saw it: its content digest is part of the release's identity
    if original.n_transactions == data.n_transactions and "item_catalogue" in params:
        original = on_universe(original, data)  # a release over a public catalogue: compare on its items
    if original.n_transactions != data.n_transactions or original.n_items != data.n_items:
        raise InvalidParameter("the original and the release differ in shape; the audit needs the original of this release")
    ckw = {"client": client, "progress": progress}
    t0 = time.perf_counter()
    truth = apriori(original, min_support, **ckw)
    t_apriori = time.perf_counter() - t0
    t0 = time.perf_counter()
    rec = mine(data, p, q, min_support, **ckw)
    t_emask = time.perf_counter() - t0
    (nnz,) = compute(nnz_lazy(original), **ckw)
    s0 = int(nnz[0]) / (original.n_transactions * original.n_items)
    bp = basic_privacy(p, q, s0=s0)
    aligned = aligned_distortion(given, released, key)
    rp = reinterrogated_privacy(original, aligned, rec, bp, **ckw) if aligned is not None else None
    return {
        "p": p,
        "q": q,
        "s0": s0,
        "basic_privacy": bp,
        "reinterrogated_privacy": rp,
        "ldp_epsilon_per_item": ldp_epsilon(p, q),
        "slowdown": t_emask / t_apriori if t_apriori > 0 else None,
        "seconds_apriori": t_apriori,
        "seconds_emask": t_emask,
        "accuracy": itemset_accuracy(truth.as_dict(), rec.as_dict()),
    }

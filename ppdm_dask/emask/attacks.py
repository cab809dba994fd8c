"""Attacks on EMASK releases, as an adversary runs them (docs/emask.md#what-an-attacker-can-still-learn).

* :func:`and_attack` — two releases of the same baskets: AND the rows at the same position of
  both files. When one key put the same basket at the same position of both and drew both
  distortions from the same random numbers, a 1 that survives in both is almost surely a true
  item (precision far above one release's). With per-release streams (the row order and the
  noise of each release derive from the key *and* the release's identity) the rows at one
  position belong to unrelated baskets, and the AND is no better than pairing random rows.
* :func:`shared_items_linkage` — the same question without the original: how many more items
  the rows at the same position share than rows at random positions
  (:func:`ppdm_dask.release.attacks.position_linkage`; 1.0 is no link).
* :func:`truth_in_file_order` — the evaluator's ground truth (owner side, needs the key): the
  original basket behind every row of a written release, in file order.

The releases are read as the adversary sees them: the rows in the order of the part files.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["and_attack", "shared_items_linkage", "rows_in_file_order", "truth_in_file_order", "on_columns"]

#: cyclic shifts standing in for random pairings (as in :func:`~ppdm_dask.release.attacks.position_linkage`)
SHIFTS = (1, 7, 31, 127, 509)


def rows_in_file_order(url: str, *, storage_options: Any = None) -> tuple[sp.csr_array, np.ndarray]:
    """``(rows, labels)`` of the release at ``url`` as its files hold them: a binary CSR matrix
    in file order and the item label of every column."""
    from ..io import read

    tx = read(url, storage_options=storage_options, progress=False)
    return sp.csr_array(tx.compute(progress=False)), np.asarray(tx.vocabulary.labels)


def on_columns(rows: sp.csr_array, labels: np.ndarray, onto: np.ndarray) -> sp.csr_array:
    """``rows`` (columns named by ``labels``) re-indexed onto the columns named by ``onto``
    (sorted unique labels); columns ``onto`` lacks are dropped."""
    from .flip_rates import label_map

    idx = label_map(labels, onto)
    coo = sp.coo_array(rows)
    keep = idx[coo.col] >= 0
    out = sp.csr_array(
        (np.ones(int(keep.sum()), np.int32), (coo.row[keep], idx[coo.col[keep]])), shape=(rows.shape[0], len(onto))
    )
    out.sum_duplicates()
    return out


def truth_in_file_order(url: str, key: Any, original: Any, *, storage_options: Any = None) -> sp.csr_array:
    """For the evaluator holding the key: the original basket behind every row of the release at
    ``url``, in the release's file order (from its stream key, :meth:`Release.owner_stream_key`)."""
    from ..release import Release
    from ..release.order import output_positions

    rel = Release.open(url, storage_options=storage_options)
    skey = rel.owner_stream_key(key, original)
    n = int(original.n_transactions)
    pos = output_positions(skey, n, int(rel.manifest["release"]["row_order"]["files"]))
    origin = np.empty(n, np.int64)
    origin[pos] = np.arange(n, dtype=np.int64)
    return sp.csr_array(sp.csr_array(original.compute(progress=False))[origin])


def _rate(hit: int, total: int) -> float:
    return float(hit) / float(total) if total else 0.0


def _and_counts(first: sp.csr_array, second: sp.csr_array, truth: sp.csr_array) -> tuple[int, int]:
    both = sp.csr_array(first.multiply(second))
    return int(sp.csr_array(both.multiply(truth)).nnz), int(both.nnz)


def and_attack(
    first: sp.csr_array, second: sp.csr_array, truth: sp.csr_array, *, shifts: tuple[int, ...] = SHIFTS
) -> dict[str, float]:
    """AND row i of one release with row i of another; how well the result recovers the true
    items of the basket behind row i of the first.

    Parameters
    ----------
    first, second : csr_array
        The two releases' rows in file order, on the same columns (:func:`on_columns`).
    truth : csr_array
        The original basket behind every row of ``first`` (:func:`truth_in_file_order`).

    Returns
    -------
    dict
        ``precision`` and ``recall`` of the AND at the same positions; ``one_release_precision``
        and ``one_release_recall`` (row i of ``first`` alone); ``random_pairs_precision`` (the AND
        of row i of ``first`` with rows at other positions of ``second``: no alignment) and
        ``advantage`` = ``precision - random_pairs_precision``.
    """
    first, second, truth = sp.csr_array(first), sp.csr_array(second), sp.csr_array(truth)
    if not first.shape == second.shape == truth.shape:
        raise ValueError(f"shapes differ: {first.shape}, {second.shape}, {truth.shape}")
    n = first.shape[0]
    hit, total = _and_counts(first, second, truth)
    one_hit = int(sp.csr_array(first.multiply(truth)).nnz)
    rnd = []
    for s in shifts:
        if n and s % n:
            h, t = _and_counts(first, sp.csr_array(second[(np.arange(n) + s) % n]), truth)
            rnd.append(_rate(h, t))
    out = {
        "precision": _rate(hit, total),
        "recall": _rate(hit, truth.nnz),
        "one_release_precision": _rate(one_hit, first.nnz),
        "one_release_recall": _rate(one_hit, truth.nnz),
        "random_pairs_precision": float(np.mean(rnd)) if rnd else 0.0,
    }
    out["advantage"] = out["precision"] - out["random_pairs_precision"]
    return out


def shared_items_linkage(first: sp.csr_array, second: sp.csr_array) -> dict[str, float]:
    """:func:`~ppdm_dask.release.attacks.position_linkage` of two releases' rows (same columns)
    with the number of items two rows share as the similarity."""
    from ..release.attacks import position_linkage

    def rows(m: sp.csr_array) -> list[frozenset]:
        m = sp.csr_array(m)
        return [frozenset(m.indices[m.indptr[i] : m.indptr[i + 1]].tolist()) for i in range(m.shape[0])]

    return position_linkage(rows(first), rows(second), lambda a, b: float(len(a & b)), shifts=SHIFTS)

"""Attacks on KRIMP generator releases, as an adversary runs them (docs/krimp.md#what-an-attacker-can-still-learn).

* **Membership inference** (:func:`membership_inference`): was a given record in the data the
  generator was fitted on? The experiment splits the original in a keyed way into members
  (the generator is fitted on them) and a hold-out (never seen); the attacker scores every
  candidate by the Hamming distance ``|c Δ g|`` from the candidate ``c`` to the closest generated
  row ``g`` (:func:`nearest_distances`; distance 0 is an exact copy) and calls "member" below —
  or above — a threshold. The advantage is the best ``|TPR − FPR|`` over every threshold and
  both directions (:func:`membership_advantage`): 0 means the release tells members from
  non-members no better than chance, 1 that it tells them apart perfectly; it is read against
  the advantage the same scores reach with shuffled labels (:func:`chance_advantage`).

The distances are one distributed pass over the generated rows (each block against the
candidates, an element-wise minimum in a tree reduction); the candidates, at most a few
thousand records, sit in every task's memory. Kernels are pure numpy/scipy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["nearest_distances", "membership_advantage", "chance_advantage", "membership_inference", "distance_kernel"]

#: Candidate × generated-row pairs compared at once in a kernel (a dense int64 block: 32 MB).
PAIRS_PER_CHUNK = 4_000_000


def distance_kernel(block: Any, cand: sp.csr_array, cand_len: np.ndarray) -> np.ndarray:
    """For each candidate (rows of ``cand``, in the block's column ids; ``cand_len``: its full
    length, items the block's vocabulary lacks included), the smallest ``|c Δ g|`` over the
    rows ``g`` of the CSR ``block`` (pure kernel; ``iinfo(int64).max`` for an empty block)."""
    best = np.full(cand.shape[0], np.iinfo(np.int64).max, np.int64)
    n = block.shape[0]
    if n == 0 or cand.shape[0] == 0:
        return best
    g = sp.csr_array(block, dtype=np.int64)
    glen = np.diff(g.indptr).astype(np.int64)
    step = max(1, PAIRS_PER_CHUNK // max(1, cand.shape[0]))
    ct = sp.csr_array(cand, dtype=np.int64)
    for s in range(0, n, step):
        e = min(n, s + step)
        overlap = (ct @ g[s:e].T).toarray()
        dist = cand_len[:, None] + glen[None, s:e] - 2 * overlap
        np.minimum(best, dist.min(axis=1), out=best)
    return best


def _min_all(parts: list[np.ndarray]) -> np.ndarray:
    return np.minimum.reduce(parts) if len(parts) > 1 else parts[0]


def _candidate_matrix(candidates: Sequence[Sequence[Any]], labels: np.ndarray) -> tuple[sp.csr_array, np.ndarray]:
    index = {v: j for j, v in enumerate(labels.tolist())}
    indptr, indices, lengths = [0], [], []
    for row in candidates:
        items = set(np.asarray(list(row)).tolist())
        lengths.append(len(items))
        ids = sorted(index[i] for i in items if i in index)
        indices.extend(ids)
        indptr.append(len(indices))
    mat = sp.csr_array(
        (np.ones(len(indices), np.int64), np.asarray(indices, np.int64), np.asarray(indptr, np.int64)),
        shape=(len(candidates), max(1, labels.size)),
    )
    return mat, np.asarray(lengths, np.int64)


def nearest_distances(candidates: Sequence[Sequence[Any]], released: Any, **compute_kwargs: Any) -> np.ndarray:
    """``|c Δ g|`` from every candidate record ``c`` (a collection of item labels) to the closest
    row ``g`` of ``released`` (a TransactionArray), rows compared as sets of labels.

    One pass over ``released`` (blocks against all candidates, minimum in a tree reduction).
    """
    import dask

    from ..graph import tree_reduce
    from ..progress import compute

    labels = np.asarray(released.vocabulary.labels)
    cand, cand_len = _candidate_matrix(candidates, labels)
    if released.n_transactions == 0:
        raise ValueError("no released rows to compare with")
    c = dask.delayed(cand, pure=True)
    parts = [dask.delayed(distance_kernel, pure=True)(b, c, cand_len) for b in released.blocks.to_delayed().ravel()]
    compute_kwargs.setdefault("progress", False)
    (best,) = compute(tree_reduce(parts, _min_all), **compute_kwargs)
    return np.asarray(best, np.int64)


def membership_advantage(member_scores: np.ndarray, holdout_scores: np.ndarray) -> dict[str, Any]:
    """The attacker's best advantage ``|TPR − FPR|`` over every threshold ``t`` of a distance
    score, in either direction: "member when score ≤ t" (close to a released row: copied) or
    "member when score > t" (far from every released row — what a generator that never copies a
    member's unique record leaves: a released row equal to a unique record says it was *not* a
    member). 0 when nobody is told apart.

    Returns ``advantage``, the ``rule`` that reaches it (``"member when distance <= t"`` /
    ``"member when distance > t"``, None for none), its ``threshold``, ``tpr`` and ``fpr``, and
    ``exact_match_advantage`` (the rule "member when a released row equals the record":
    ``TPR − FPR`` at t = 0, negative when copies point to the hold-out).
    """
    m = np.sort(np.asarray(member_scores, np.float64))
    h = np.sort(np.asarray(holdout_scores, np.float64))
    if m.size == 0 or h.size == 0:
        raise ValueError("membership advantage needs member and hold-out scores")
    ts = np.unique(np.concatenate([m, h]))
    tpr = np.searchsorted(m, ts, side="right") / m.size
    fpr = np.searchsorted(h, ts, side="right") / h.size
    diff = tpr - fpr
    k = int(np.argmax(np.abs(diff)))
    exact = float(np.mean(m <= 0) - np.mean(h <= 0))
    if diff[k] == 0:
        return {"advantage": 0.0, "rule": None, "threshold": None, "tpr": 0.0, "fpr": 0.0, "exact_match_advantage": exact}
    close = diff[k] > 0
    return {
        "advantage": float(abs(diff[k])),
        "rule": "member when distance <= t" if close else "member when distance > t",
        "threshold": float(ts[k]),
        "tpr": float(tpr[k] if close else 1 - tpr[k]),
        "fpr": float(fpr[k] if close else 1 - fpr[k]),
        "exact_match_advantage": exact,
    }


def chance_advantage(scores: np.ndarray, n_members: int, key: Any, rounds: int = 20) -> float:
    """The mean :func:`membership_advantage` of ``scores`` with the member / hold-out labels
    shuffled (keyed, ``rounds`` times): what the attack reaches by chance on samples of these
    sizes — the noise floor an advantage is to be read against."""
    from ..random import Tag

    rng = key.generator(Tag.EVALUATION_SPLIT, 1)
    scores = np.asarray(scores)
    out = []
    for _ in range(rounds):
        p = rng.permutation(scores.size)
        out.append(membership_advantage(scores[p[:n_members]], scores[p[n_members:]])["advantage"])
    return float(np.mean(out))


def membership_inference(
    original: Any,
    fit_generate: Callable[[Any], Any],
    key: Any,
    *,
    candidates: int = 1000,
    holdout_share: float = 0.5,
    **compute_kwargs: Any,
) -> dict[str, Any]:
    """The membership-inference experiment on ``original`` (a TransactionArray).

    The rows are split by a keyed random permutation (``key``: stream ``(EVALUATION_SPLIT, 0)``;
    the original is brought into memory as sparse rows) into members and a hold-out share;
    ``fit_generate(members)`` fits a generator on the members and returns the rows it
    generates; up to ``candidates`` members and as many hold-out records (random, from the same
    permutation) are scored by :func:`nearest_distances` and :func:`membership_advantage`.

    Returns the advantage figures with ``chance_advantage`` (:func:`chance_advantage`),
    ``members``, ``holdout`` (candidates of each side), ``train_rows``, ``holdout_rows``, and the
    candidates of each side that a generated row copies exactly (``member_copies``,
    ``holdout_copies``).
    """
    from ..data.transactions import TransactionArray
    from ..random import Tag

    n = original.n_transactions
    n_hold = int(round(n * float(holdout_share)))
    if not 0 < n_hold < n:
        raise ValueError(f"a hold-out share of {holdout_share} leaves no members or no hold-out out of {n} rows")
    compute_kwargs.setdefault("progress", False)
    csr = original.compute(**compute_kwargs)
    labels = np.asarray(original.vocabulary.labels)
    vals = labels[csr.indices].tolist()  # one conversion, then slices (TransactionArray.to_lists without a second compute)
    rows = [vals[csr.indptr[i] : csr.indptr[i + 1]] for i in range(n)]
    perm = key.generator(Tag.EVALUATION_SPLIT, 0).permutation(n)
    hold, train = perm[:n_hold], perm[n_hold:]
    members = TransactionArray.from_lists([rows[i] for i in np.sort(train)])
    generated = fit_generate(members)
    m_idx, h_idx = train[:candidates], hold[:candidates]
    dist = nearest_distances([rows[i] for i in m_idx] + [rows[i] for i in h_idx], generated, **compute_kwargs)
    out = membership_advantage(dist[: m_idx.size], dist[m_idx.size :])
    out["chance_advantage"] = chance_advantage(dist, int(m_idx.size), key)
    out.update(
        members=int(m_idx.size),
        holdout=int(h_idx.size),
        train_rows=int(train.size),
        holdout_rows=int(n_hold),
        member_copies=int(np.sum(dist[: m_idx.size] == 0)),
        holdout_copies=int(np.sum(dist[m_idx.size :] == 0)),
    )
    return out

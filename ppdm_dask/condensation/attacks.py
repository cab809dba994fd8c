"""Attacks on condensed releases, as an adversary runs them (docs/condensation.md#what-an-attacker-can-still-learn).

* :func:`reconstruct_records` — records rebuilt from the group statistics a release publishes
  (``_statistics.parquet``, or ``_groups.parquet`` of the layout that published every group's
  ``n, Fs, Sc``): a group of one record is its ``Fs``; a group whose scatter
  ``Sc − Fs Fsᵀ/n`` is zero is ``n`` copies of its mean; a group of two records is
  ``mean ± δ`` with ``δ = sqrt(λ/2)·e``, ``(λ, e)`` the top eigenpair of the scatter (the scatter
  of two records ``μ ± δ`` is ``2 δ δᵀ``). Larger groups are not determined by their
  statistics (any rotation of the centred members inside the subspace orthogonal to the
  all-ones vector keeps them), so they are left alone. :func:`records_recovered` counts the
  original records rebuilt to float precision.
* :func:`membership_advantage` — the membership-inference experiment: condense one half of the
  records (the members), keep the other half out, and let an attacker who sees only the
  pseudo-data call a record a member when its distance to the closest pseudo-record is below a
  threshold. The advantage is the largest ``TPR − FPR`` over thresholds (so an upper bound of
  this attacker's advantage at its best threshold; 0 = no better than guessing).

The attacks read only what the threat model gives the adversary: the public files of the
release, and (for the membership experiment) candidate records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ..random import Key, Tag

__all__ = [
    "Reconstruction",
    "solve_groups",
    "reconstruct_records",
    "records_recovered",
    "Membership",
    "membership_advantage",
    "RECOVERY_RTOL",
]

#: A record counts as recovered when every attribute is within this relative tolerance (of
#: max(1, |value|)) — "to the last digit" of any printed precision.
RECOVERY_RTOL = 1e-9


@dataclass(frozen=True)
class Reconstruction:
    """Records rebuilt from published statistics.

    Attributes
    ----------
    records : ndarray (m, d)
        The rebuilt records.
    group : ndarray (m,)
        The statistics row each comes from.
    solved_groups : int
        Groups whose members were all rebuilt.
    groups : int
        Statistics rows read.
    """

    records: np.ndarray
    group: np.ndarray
    solved_groups: int
    groups: int


def solve_groups(n: Any, Fs: Any, Sc: Any, *, rtol: float = RECOVERY_RTOL) -> Reconstruction:
    """The members of every group that its statistics ``(n, Fs, Sc)`` determine (see the module
    docstring): groups of one record, groups without spread, groups of two records."""
    n = np.asarray(n, np.int64).reshape(-1)
    G = n.shape[0]
    Fs = np.asarray(Fs, np.float64).reshape(G, -1)
    d = Fs.shape[1]
    Sc = np.asarray(Sc, np.float64).reshape(G, d, d)
    out, src, solved = [], [], 0
    for g in range(G):
        k = int(n[g])
        if k < 1:
            continue
        mean = Fs[g] / k
        scatter = Sc[g] - np.outer(Fs[g], Fs[g]) / k
        scatter = 0.5 * (scatter + scatter.T)
        scale = max(1.0, float(np.abs(Sc[g]).max()))
        if k == 1 or float(np.abs(scatter).max()) <= rtol * scale:
            out.append(np.repeat(mean[None, :], k, axis=0))
        elif k == 2:
            lam, E = np.linalg.eigh(scatter)
            delta = np.sqrt(max(float(lam[-1]), 0.0) / 2.0) * E[:, -1]
            out.append(np.stack([mean + delta, mean - delta]))
        else:
            continue
        src.append(np.full(k, g, np.int64))
        solved += 1
    recs = np.concatenate(out) if out else np.zeros((0, d))
    return Reconstruction(recs, np.concatenate(src) if src else np.zeros(0, np.int64), solved, G)


def reconstruct_records(url: str, *, storage_options: Any = None) -> Reconstruction:
    """Rebuild every record the public files of the condensed release at ``url`` determine
    (nothing when it publishes no statistics — the default)."""
    from .release import read_groups, read_statistics

    stats = read_statistics(url, storage_options=storage_options)
    if stats is None:
        d = len(read_groups(url, storage_options=storage_options)[1])
        return Reconstruction(np.zeros((0, d)), np.zeros(0, np.int64), 0, 0)
    return solve_groups(stats.n, stats.Fs, stats.Sc)


def records_recovered(rebuilt: Any, original: Any, *, rtol: float = RECOVERY_RTOL) -> int:
    """How many original records (rows of ``original``) equal a rebuilt record: every attribute
    within ``rtol · max(1, largest |attribute| of the record)``."""
    R = np.asarray(getattr(rebuilt, "records", rebuilt), np.float64)
    X = np.asarray(original, np.float64)
    if not R.shape[0] or not X.shape[0]:
        return 0
    dist = np.asarray(cKDTree(R).query(X, k=1, p=np.inf)[0])  # largest attribute difference to the nearest
    return int(np.count_nonzero(dist <= rtol * np.maximum(1.0, np.abs(X).max(axis=1))))


@dataclass(frozen=True)
class Membership:
    """Outcome of :func:`membership_advantage`."""

    advantage: float  #: max over thresholds of TPR − FPR
    tpr: float  #: at the best threshold
    fpr: float
    threshold: float
    members: int
    holdout: int


def _best_threshold(member_scores: np.ndarray, holdout_scores: np.ndarray) -> tuple[float, float, float, float]:
    """``(advantage, tpr, fpr, threshold)`` of "member iff score <= t" at its best t."""
    t = np.unique(np.concatenate([member_scores, holdout_scores]))
    if not t.size:
        return 0.0, 0.0, 0.0, float("nan")
    ms, hs = np.sort(member_scores), np.sort(holdout_scores)
    tpr = np.searchsorted(ms, t, side="right") / max(ms.size, 1)
    fpr = np.searchsorted(hs, t, side="right") / max(hs.size, 1)
    i = int(np.argmax(tpr - fpr))
    return float(max(tpr[i] - fpr[i], 0.0)), float(tpr[i]), float(fpr[i]), float(t[i])


def membership_advantage(
    X: Any, condense: Callable[[np.ndarray, np.ndarray], np.ndarray], *, key: Any = 0, members: float = 0.5
) -> Membership:
    """The membership-inference advantage of the distance-to-closest-record attacker.

    Parameters
    ----------
    X : array (N, d)
        The records of the experiment.
    condense : callable
        ``condense(X_members, member_rows) -> pseudo-data (m, d)``: the release of the members
        (``member_rows`` index ``X``, e.g. to take their privacy levels).
    key : Key or int
        The split (stream ``(EVALUATION_SPLIT, 0)``).
    members : float
        Share of the records condensed.
    """
    from ..random import as_key

    X = np.asarray(X, np.float64)
    N = X.shape[0]
    perm = as_key(key if not isinstance(key, int) else Key(key)).generator(Tag.EVALUATION_SPLIT, 0).permutation(N)
    m = int(round(members * N))
    inside, outside = np.sort(perm[:m]), np.sort(perm[m:])
    pseudo = np.asarray(condense(X[inside], inside), np.float64)
    tree = cKDTree(pseudo)
    dm = tree.query(X[inside], k=1)[0]
    dh = tree.query(X[outside], k=1)[0]
    adv, tpr, fpr, thr = _best_threshold(np.asarray(dm), np.asarray(dh))
    return Membership(adv, tpr, fpr, thr, int(inside.size), int(outside.size))

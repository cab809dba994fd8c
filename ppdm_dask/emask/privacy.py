"""Privacy and accuracy measures of EMASK distortion (docs/emask.md#privacy-measures,
docs/emask.md#accuracy-and-the-choice-of-p-and-q).

* :func:`basic_privacy` — BP = 100 (1 − R1), the probability of *not* reconstructing a 1
  (paper Eq. 2 at the average item support, or item-weighted over given supports).
* :func:`err6` / :func:`relative_error` — single-column reconstruction error (paper Eq. 6 and the
  corrected relative error, docs/emask.md#correction-the-relative-error-of-eq-6).
* :func:`ldp_epsilon` / :func:`record_epsilon` — the local-differential-privacy view of the same
  per-bit randomised response.
* :func:`reinterrogated_privacy` — RP, the privacy left after the miner has seen the frequent
  itemsets (owner-side evaluation, needs both T and D; two distributed passes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidParameter
from . import _privacy_kernels as PK
from .distortion import check_pq as _check_pq  # one p/q validation for the package

__all__ = [
    "r1",
    "basic_privacy",
    "err6",
    "relative_error",
    "ldp_epsilon",
    "record_epsilon",
    "breach_probabilities",
    "reinterrogated_privacy",
]


# ---------------------------------------------------------------------------- validation
def _check_support(s: Any, *, open_interval: bool, name: str = "s") -> np.ndarray:
    arr = np.asarray(s, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise InvalidParameter(f"{name} must be finite")
    bad = (arr <= 0.0) | (arr >= 1.0) if open_interval else (arr < 0.0) | (arr > 1.0)
    if np.any(bad):
        rng = "(0, 1)" if open_interval else "[0, 1]"
        raise InvalidParameter(f"{name} must lie in {rng}")
    return arr


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    # 0/0 only happens where the term's numerator vanishes identically (e.g. s = 1, p = 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0.0, 0.0, num / np.where(den == 0.0, 1.0, den))


# ---------------------------------------------------------------------------- basic privacy
def r1(p: float, q: float, s: Any) -> np.ndarray | float:
    """Reconstruction probability of a 1 for an item of support fraction ``s`` (vectorised in s).

    ``R1 = p² s / (s p + (1−s)(1−q)) + (1−p)² s / (s (1−p) + (1−s) q)``
    = P(Y=1|X=1) P(X=1|Y=1) + P(Y=0|X=1) P(X=1|Y=0).

    Parameters
    ----------
    p, q : float
        Probabilities that a 1 stays 1 and a 0 stays 0.
    s : float or array_like
        Support fraction(s) in [0, 1].

    Returns
    -------
    float or ndarray
        Same shape as ``s``.
    """
    p, q = _check_pq(p, q)
    s_arr = _check_support(s, open_interval=False)
    out = _ratio(p * p * s_arr, s_arr * p + (1 - s_arr) * (1 - q)) + _ratio(
        (1 - p) ** 2 * s_arr, s_arr * (1 - p) + (1 - s_arr) * q
    )
    return float(out) if out.ndim == 0 else out


def basic_privacy(p: float, q: float, *, s0: float | None = None, supports: Any = None) -> float:
    """Basic privacy BP = 100 (1 − R1) in percent (docs/emask.md#basic-privacy).

    Parameters
    ----------
    p, q : float
        Distortion parameters, ``|p + q − 1| >= 1e-6``.
    s0 : float, optional
        Average item support in (0, 1): the paper's Eq. 2, R1(p, q) ≈ R1(p, q, s0) (the mode of
        the paper's tables).
    supports : array_like, optional
        Support fraction of every item: the item-weighted R1 = Σ s_i R1(p,q,s_i) / Σ s_i.
        Because s R1(p,q,s) is convex in s, the s0 form over-estimates privacy (Jensen).

    Exactly one of ``s0`` and ``supports`` must be given.
    """
    if (s0 is None) == (supports is None):
        raise InvalidParameter("give exactly one of s0 (average item support) and supports")
    if s0 is not None:
        _check_support(s0, open_interval=True, name="s0")
        return 100.0 * (1.0 - float(r1(p, q, float(s0))))
    s = _check_support(supports, open_interval=False, name="supports").ravel()
    if s.size == 0 or s.sum() <= 0.0:
        raise InvalidParameter("supports must contain at least one positive support")
    r = np.asarray(r1(p, q, s))
    return 100.0 * (1.0 - float(np.dot(s, r) / s.sum()))


# ---------------------------------------------------------------------------- accuracy
def err6(p: float, q: float, s: Any) -> np.ndarray | float:
    """Paper Eq. 6: ``sqrt(p(1−p) + (1/s − 1) q(1−q)) / |p+q−1|`` (vectorised in s ∈ (0, 1]).

    This is √n times the true relative error
    (docs/emask.md#correction-the-relative-error-of-eq-6); it ranks (p, q) pairs correctly at a
    fixed s and N, which is how :func:`~ppdm_dask.emask.parameters.choose_parameters` uses it.
    The absolute value of p+q−1 makes it a magnitude also when p + q < 1.
    """
    p, q = _check_pq(p, q)
    s_arr = np.asarray(s, dtype=np.float64)
    if np.any(~np.isfinite(s_arr)) or np.any((s_arr <= 0) | (s_arr > 1)):
        raise InvalidParameter("s must lie in (0, 1]")
    out = np.sqrt(p * (1 - p) + (1.0 / s_arr - 1.0) * q * (1 - q)) / abs(p + q - 1)
    return float(out) if out.ndim == 0 else out


def relative_error(p: float, q: float, s: Any, n_transactions: int) -> np.ndarray | float:
    """Relative standard error of a reconstructed single-item support
    (docs/emask.md#correction-the-relative-error-of-eq-6).

    ``Err_rel = sqrt(s p(1−p) + (1−s) q(1−q)) / (s · sqrt(N) · |p+q−1|) = Err_6 / sqrt(sN)``,
    i.e. Δn̄ / n with n = sN true ones among N transactions.
    """
    if isinstance(n_transactions, bool) or not float(n_transactions) > 0:
        raise InvalidParameter("n_transactions must be positive")
    e6 = np.asarray(err6(p, q, s))
    out = e6 / np.sqrt(np.asarray(s, dtype=np.float64) * float(n_transactions))
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------- LDP view
def ldp_epsilon(p: float, q: float) -> float:
    """Local-DP ε of the per-bit mechanism (keep a 1 w.p. p, keep a 0 w.p. q).

    ``ε = max_y |ln(P(y|x=1) / P(y|x=0))| = max(|ln(p/(1−q))|, |ln((1−p)/q)|)``; ``inf`` when one of
    the two probabilities of an output is 0 (that output then reveals the bit with certainty).
    It bounds how much one output bit can change belief about one input bit. For the paper's
    defaults: (0.4, 0.98) → ln 20 ≈ 3.00; MASK (0.9, 0.9) → ln 9 ≈ 2.20.
    """
    p, q = _check_pq(p, q)

    def term(a: float, b: float) -> float:
        if a == 0.0 or b == 0.0:
            return math.inf  # a == b == 0 is excluded by p + q != 1
        return abs(math.log(a / b))

    return max(term(p, 1.0 - q), term(1.0 - p, q))


def record_epsilon(p: float, q: float, n_differing_items: int) -> float:
    """ε of the whole distorted record for two records differing in ``n_differing_items`` bits.

    Bits are distorted independently and bits on which two records agree have likelihood ratio 1,
    so composition over the k differing bits gives ``ε_record = k · ldp_epsilon``. This is the
    worst case over all record pairs at Hamming distance k (attained when all k bits differ in
    the same direction, e.g. k added items); a particular pair whose differing bits go both ways
    can have a smaller ratio, since p ≠ q makes the mechanism asymmetric.

    * adding or removing one item (k = 1): ε;
    * replacing one item by another (k = 2): 2ε;
    * arbitrary records over ``n_items`` items (k = n_items): the per-record guarantee in the
      usual LDP sense, ``n_items · ε`` — typically very large, which is why EMASK's own privacy
      measures (BP, RP) are average-case rather than worst-case.
    """
    if isinstance(n_differing_items, bool) or int(n_differing_items) != n_differing_items or n_differing_items < 0:
        raise InvalidParameter("n_differing_items must be a non-negative integer")
    eps = ldp_epsilon(p, q)
    k = int(n_differing_items)
    if k == 0:
        return 0.0
    return k * eps


# ---------------------------------------------------------------------------- reinterrogated privacy
def _itemset_levels(itemsets: Any, n_items: int) -> list[np.ndarray]:
    """Distinct itemsets as sorted ``(n_k, k)`` int64 arrays of column ids, one per length."""
    if hasattr(itemsets, "levels"):
        raw: Iterable[Sequence[int]] = (
            tuple(r) for k in sorted(itemsets.levels) for r in np.asarray(itemsets.levels[k][0]).tolist()
        )
    else:
        raw = itemsets
    by_len: dict[int, set[tuple[int, ...]]] = {}
    for s in raw:
        ids = tuple(sorted({int(i) for i in s}))
        if not ids:
            continue  # the empty itemset discloses nothing about any item
        if ids[0] < 0 or ids[-1] >= n_items:
            raise InvalidParameter(f"itemset {ids} holds column ids outside [0, {n_items})")
        by_len.setdefault(len(ids), set()).add(ids)
    return [np.array(sorted(v), dtype=np.int64).reshape(-1, k) for k, v in sorted(by_len.items())]


def _aligned(original: Any, distorted: Any) -> Any:
    if original.n_items != distorted.n_items or original.n_transactions != distorted.n_transactions:
        raise InvalidParameter(
            "original and distorted data must have the same shape "
            f"({original.n_transactions}x{original.n_items} vs {distorted.n_transactions}x{distorted.n_items})"
        )
    if original.vocabulary != distorted.vocabulary:
        raise InvalidParameter("original and distorted data must share the same item vocabulary")
    if distorted.partition_rows != original.partition_rows:
        # co-partitioning is required row by row; re-cut D along T's row boundaries
        distorted = distorted._rechunk(original.partition_rows)
    return distorted


def _pairs_of(original: Any, distorted: Any) -> list[tuple[Any, Any]]:
    t_parts = original.blocks.to_delayed().ravel().tolist()
    d_parts = distorted.blocks.to_delayed().ravel().tolist()
    return list(zip(t_parts, d_parts))


def _breach_vector(original: Any, distorted: Any, plan: PK.Plan, split_every: int, compute_kwargs: dict) -> np.ndarray:
    import dask

    from ..graph import tree_reduce
    from ..progress import compute

    plan_d = dask.delayed(plan, traverse=False)  # broadcast once, not embedded in every task
    parts = [dask.delayed(PK.breach_counts, pure=True)(t, d, plan_d) for t, d in _pairs_of(original, distorted)]
    (counts,) = compute(tree_reduce(parts, PK.sum_arrays, split_every=split_every), **compute_kwargs)
    n_i = PK.n_itemsets(plan)
    sizes, hits = counts[:n_i], counts[n_i:]
    # |S_I| repeated for each b ∈ I, in the plan's pair order
    per_pair = (
        np.concatenate([np.repeat(sizes[off : off + pos.shape[0]], k) for (k, pos), off in zip(plan[1], _offsets(plan))])
        if n_i
        else np.zeros(0)
    )
    # breach := 0 when no distorted row contains I (F is decided on reconstructed supports)
    return np.where(per_pair > 0, hits / np.maximum(per_pair, 1), 0.0)


def _offsets(plan: PK.Plan) -> list[int]:
    out, off = [], 0
    for _, pos in plan[1]:
        out.append(off)
        off += pos.shape[0]
    return out


def breach_probabilities(
    original: Any, distorted: Any, itemsets: Any, *, split_every: int = 8, **compute_kwargs: Any
) -> dict[tuple[tuple[int, ...], int], float]:
    """``breach(I, b) = |{t : I ⊆ D_t, b ∈ T_t}| / |{t : I ⊆ D_t}|`` for every I ∈ F and b ∈ I.

    Returns ``{(I as sorted tuple of column ids, b): breach}`` (0 when no row of D contains I).
    Arguments as in :func:`reinterrogated_privacy`.
    """
    distorted = _aligned(original, distorted)
    plan = PK.make_plan(_itemset_levels(itemsets, original.n_items))
    compute_kwargs.setdefault("progress", False)
    br = _breach_vector(original, distorted, plan, split_every, compute_kwargs)
    items = plan[0]
    out: dict[tuple[tuple[int, ...], int], float] = {}
    i = 0
    for _k, pos in plan[1]:
        for row in items[pos].tolist():
            for b in row:
                out[(tuple(row), b)] = float(br[i])
                i += 1
    return out


def reinterrogated_privacy(
    original: Any,
    distorted: Any,
    itemsets: Any,
    bp: float,
    *,
    split_every: int = 8,
    **compute_kwargs: Any,
) -> float:
    """Reinterrogated privacy RP, in percent (docs/emask.md#reinterrogated-privacy; breaches are judged
    on the distorted row, docs/emask.md#correction-breaches-are-judged-on-the-distorted-transaction).

    For every 1 of T at (t, b): privacy is ``bp`` if b is in no itemset of F, or if the 1 was
    flipped to 0 in D; otherwise ``100 (1 − max{breach(I, b) : I ∈ F, b ∈ I, I ⊆ D_t})``, with
    ``breach(I, b)`` the fraction of distorted rows containing I whose true row contains b.
    RP is the mean over all ones of T. If b belongs to itemsets of F but none of them lies in
    D_t (possible only when F is not downward closed, e.g. a hand-made list without {b}), the
    miner's output says nothing specific about (t, b) and its privacy stays ``bp``.

    Parameters
    ----------
    original, distorted : TransactionArray
        T and its distortion D: same vocabulary, same rows (D is re-cut along T's partitions if
        needed).
    itemsets : FrequentItemsets or iterable of tuples of column ids
        F, the itemsets disclosed by mining (normally including the 1-itemsets). For a
        ``FrequentItemsets`` the column ids of ``.levels`` are used; they must refer to the same
        vocabulary as ``original``.
    bp : float
        Basic privacy in percent, e.g. ``basic_privacy(p, q, s0=...)``.
    split_every : int
        Fan-in of the tree reductions.
    **compute_kwargs
        Passed to :func:`ppdm_dask.progress.compute` (``progress`` defaults to False).

    Returns
    -------
    float
        RP in percent; NaN when T has no ones (the mean is then undefined).

    Notes
    -----
    Two passes over the co-partitioned (T, D) blocks, each a MAP of a pure kernel
    (:mod:`ppdm_dask.emask._privacy_kernels`) and a TREE sum: pass 1 counts |S_I| and
    |S_I ∩ T_b| per (I, b) with packed row bitmaps; pass 2 takes, per row, the maximal breach per
    item over the itemsets inside D_t and sums the privacies and the ones.
    """
    import dask

    from ..graph import tree_reduce
    from ..progress import compute

    bp = float(bp)
    if not 0.0 <= bp <= 100.0:
        raise InvalidParameter("bp is a percentage in [0, 100]")
    distorted = _aligned(original, distorted)
    plan = PK.make_plan(_itemset_levels(itemsets, original.n_items))
    compute_kwargs.setdefault("progress", False)
    breach = _breach_vector(original, distorted, plan, split_every, compute_kwargs)
    plan_d = dask.delayed(plan, traverse=False)
    breach_d = dask.delayed(breach, traverse=False)
    parts = [dask.delayed(PK.privacy_sums, pure=True)(t, d, plan_d, breach_d) for t, d in _pairs_of(original, distorted)]
    (sums,) = compute(tree_reduce(parts, PK.sum_arrays, split_every=split_every), **compute_kwargs)
    s_breach, n_q, n_ones = float(sums[0]), float(sums[1]), float(sums[2])
    if n_ones == 0:
        return math.nan
    return (bp * (n_ones - n_q) + 100.0 * s_breach) / n_ones

"""The officer's summary of an EMASK release: the guarantee in words, what an attacker can
still learn, and the threat model's attacks run on the release (docs/emask.md#what-an-attacker-can-still-learn,
docs/threat-model.md#emask-distortion).

Translations of the public parameters (p = P(a 1 stays 1), q = P(a 0 stays 0)):

* per item: a released bit moves an attacker's odds that the basket holds the item by at most
  a factor ``e^ε`` (``ε`` = :func:`~.privacy.ldp_epsilon`); from a prior ``s`` (the item's
  support) a released 1 gives the posterior ``s p / (s p + (1 − s)(1 − q))`` and a released 0
  ``s (1 − p) / (s (1 − p) + (1 − s) q)`` (Bayes);
* per record: two baskets differing in n items are told apart with at most ``n ε``; above
  :data:`MEANINGFUL_EPSILON` (odds factor e^10 ≈ 22,000) a bound says nothing, and the record
  level is then said to have no meaningful bound.

Attacks (each an :class:`~ppdm_dask.release.figures.Attack`):

``attack_item_inference`` (release)
    Guess "the basket holds the item" for every released 1. Success: the expected share of
    released 1s that are true items, from the item supports reconstructed from the release
    (``ŝ_i = (k_i / N − (1 − q)) / (p + q − 1)``, clipped to [0, 1]): ``Σ p ŝ_i N / Σ k_i``.
    Baseline: the same guess without the release, the prior ``Σ k_i ŝ_i / Σ k_i``.
``attack_item_inference_measured`` (comparison)
    The same, counted against the original: released 1s that are true 1s (row by row when the
    rows can be put in the original's order, else the expectation ``Σ p c_i / Σ k_i`` from the
    original's item counts c_i); baseline ``Σ k_i c_i / (N Σ k_i)``.
``attack_row_linkage`` (comparison)
    An adversary who knows :data:`LINK_KNOWN` items of a target's basket ranks the released
    rows by how many of them they hold (the likelihood-ratio ranking: every hit multiplies the
    odds by ``p q / ((1 − q)(1 − p))``; by how few when p < 1 − q) and takes the best; success: the share of
    :data:`LINK_TARGETS` sampled targets whose own row is the best (1/t for a tie of t rows);
    baseline 1/N. Needs the rows in the original's order (the release in memory, or the key).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import PPDMError
from ..release.figures import Attack, Figures, Text, Value
from ..report.units import percent as _share
from .privacy import basic_privacy, ldp_epsilon

__all__ = [
    "emask_threat",
    "item_posteriors",
    "record_epsilon_text",
    "item_inference",
    "linkage_kernel",
    "linkage_success",
    "row_linkage",
    "MEANINGFUL_EPSILON",
    "ITEM_INFERENCE_THRESHOLD",
    "LINKAGE_THRESHOLD",
    "LINK_KNOWN",
    "LINK_TARGETS",
]

#: Record-level ε above which the bound says nothing (odds may move by more than e^10 ≈ 22,000)
MEANINGFUL_EPSILON = 10.0
#: Advantage (share of released 1s that are true items, above the prior) the summary flags
ITEM_INFERENCE_THRESHOLD = 0.25
#: Advantage (share of targets linked to their row, above 1/N) the summary flags: one target in ten
LINKAGE_THRESHOLD = 0.1
#: Items of a target's basket the linkage adversary knows, and targets sampled
LINK_KNOWN = 3
LINK_TARGETS = 200
#: public seed of the linkage sample (it only chooses what to measure)
_LINK_SEED = 0x5EED_E3A5

_TEST = "tests/emask/test_threat.py"


def item_posteriors(p: float, q: float, s: float) -> tuple[float, float]:
    """``(P(x=1 | y=1), P(x=1 | y=0))`` for an item of prior support ``s`` (Bayes)."""
    one = s * p + (1.0 - s) * (1.0 - q)
    zero = s * (1.0 - p) + (1.0 - s) * q
    return (s * p / one if one > 0 else 1.0), (s * (1.0 - p) / zero if zero > 0 else 0.0)


def record_epsilon_text(eps: float, d: int) -> tuple[str, float]:
    """The per-record sentence and the record-level ε ``d·ε`` (``d`` items)."""
    if not math.isfinite(eps):
        return ("Per record: an output bit reveals its input bit with certainty (p or q is 0 or 1): no bound at all.", eps)
    rec = d * eps
    bounded = int(MEANINGFUL_EPSILON // eps) if eps > 0 else d
    if rec > MEANINGFUL_EPSILON:
        return (
            f"Per record: the local-DP ε of a whole basket is {d:,} items × {eps:.3g} = {rec:,.4g}, far above "
            f"{MEANINGFUL_EPSILON:g}: no meaningful record-level bound; the protection rests on per-item deniability. "
            f"Two baskets differing in at most {bounded:,} item{'s' if bounded != 1 else ''} stay within ε ≤ {MEANINGFUL_EPSILON:g}.",
            rec,
        )
    return (
        f"Per record: the local-DP ε of a whole basket is {d:,} × {eps:.3g} = {rec:.4g}: an attacker's odds about the "
        f"whole basket move by at most a factor e^{rec:.3g} = {math.exp(rec):,.4g}.",
        rec,
    )


def _reconstructed(k: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    return np.clip((k / n - (1.0 - q)) / (p + q - 1.0), 0.0, 1.0) if n else np.zeros_like(k, np.float64)


def item_inference(
    released_counts: np.ndarray, n: int, p: float, q: float, supports: np.ndarray | None = None
) -> tuple[float, float]:
    """``(success, baseline)`` of guessing "true item" for every released 1, expected from item
    supports (``supports``: the true ones, fractions; default: reconstructed from the release's
    item counts ``released_counts``)."""
    k = np.asarray(released_counts, np.float64)
    s = _reconstructed(k, n, p, q) if supports is None else np.asarray(supports, np.float64)
    ones = float(k.sum())
    if ones <= 0:
        return 0.0, 0.0
    return float((p * s * n).sum() / ones), float((k * s).sum() / ones)


def linkage_kernel(block: Any, known: sp.csr_array, sign: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per target (columns of ``known``, item x target indicators on the block's columns): the
    best score ``sign`` × (known items a row holds) of the block's rows, and how many rows reach
    it (``sign`` -1 when p < 1 − q: a held item then speaks against the row)."""
    b = sp.csr_array(block)
    t = known.shape[1]
    if b.shape[0] == 0:
        return np.full(t, -1, np.int64), np.zeros(t, np.int64)
    hits = sign * np.asarray((b.astype(np.int64) @ known).toarray(), np.int64)
    best = hits.max(axis=0)
    return best, (hits == best[None, :]).sum(axis=0).astype(np.int64)


def linkage_success(own: np.ndarray, best: np.ndarray, ties: np.ndarray) -> float:
    """Share of targets whose own row is the best match (1/t for a tie of t rows)."""
    won = (own >= best) & (ties > 0)
    return float(np.where(won, 1.0 / np.maximum(ties, 1), 0.0).mean()) if own.size else 0.0


def true_ones_kernel(original: Any, released: Any, to_release: np.ndarray, n_cols: int) -> int:
    """Released 1s of a block that are 1s of the original's block of the same rows (the
    original's columns mapped onto the release's by ``to_release``, -1: not listed)."""
    t = sp.coo_array(original)
    keep = to_release[t.col] >= 0
    T = sp.csr_array((np.ones(int(keep.sum()), np.int8), (t.row[keep], to_release[t.col[keep]])), shape=(t.shape[0], n_cols))
    D = sp.csr_array(released)
    D = sp.csr_array((np.ones(D.indices.size, np.int8), D.indices, D.indptr), shape=D.shape)
    return int(sp.csr_array(D.multiply(T)).nnz)


def _true_ones(original: Any, aligned: Any, ckw: dict[str, Any]) -> int:
    import dask

    from ..progress import compute
    from .flip_rates import label_map

    if tuple(aligned.partition_rows) != tuple(original.partition_rows):
        aligned = aligned._rechunk(tuple(original.partition_rows))
    to_release = label_map(np.asarray(original.vocabulary.labels), np.asarray(aligned.vocabulary.labels))
    task = dask.delayed(true_ones_kernel, pure=True)
    (parts,) = compute(
        [
            task(t, r, to_release, int(aligned.n_items))
            for t, r in zip(original.blocks.to_delayed().ravel(), aligned.blocks.to_delayed().ravel())
        ],
        **ckw,
    )
    return int(sum(parts))


def _combine(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    best = np.max([b for b, _ in parts], axis=0)
    ties = np.sum([np.where(b == best, c, 0) for b, c in parts], axis=0)
    return best, ties


def row_linkage(original: Any, aligned: Any, ckw: dict[str, Any], sign: int = 1) -> dict[str, Any] | None:
    """The linkage attack on the released rows ``aligned`` (in the original's order): a dict of
    ``success``, ``targets`` (original rows attacked), ``known`` (item x target indicators on
    the release's columns) and ``rows``; None without a target."""
    import dask

    from ..metrics.km_audit import gather_rows
    from ..progress import compute
    from ..release.attacks import public_sample
    from .flip_rates import label_map

    n = int(original.n_transactions)
    (lengths,) = compute(original.row_lengths(), **ckw)
    drawn = public_sample(np.asarray(lengths) > 0, LINK_TARGETS, _LINK_SEED)
    if drawn is None:
        return None
    targets, rng = drawn
    X = gather_rows(original, targets, **ckw)
    to_release = label_map(np.asarray(original.vocabulary.labels), np.asarray(aligned.vocabulary.labels))
    rows, cols = [], []
    for j in range(targets.size):
        items = X.indices[X.indptr[j] : X.indptr[j + 1]]
        chosen = rng.choice(items, min(LINK_KNOWN, items.size), replace=False)
        mapped = to_release[chosen]
        mapped = mapped[mapped >= 0]  # an item the release does not list is never held by a row
        rows += mapped.tolist()
        cols += [j] * mapped.size
    known = sp.csr_array((np.ones(len(rows), np.int64), (rows, cols)), shape=(aligned.n_items, targets.size))
    task = dask.delayed(linkage_kernel, pure=True)
    (parts,) = compute([task(b, known, sign) for b in aligned.blocks.to_delayed().ravel()], **ckw)
    best, ties = _combine(parts)
    D = gather_rows(aligned, targets, **ckw)
    own = sign * np.asarray([int((D[[j]] @ known[:, [j]]).toarray()[0, 0]) for j in range(targets.size)])
    return {"success": linkage_success(own, best, ties), "targets": targets, "known": known, "rows": n}


def emask_threat(rel: Any, figs: Figures, original: Any, ckw: dict[str, Any]) -> Figures:
    """Fill ``guarantee``, ``protects``, ``learn``, ``attacks``, ``headline`` and ``warnings``
    of an EMASK release's figures (see the module docstring)."""
    from ..progress import compute

    p, q = rel._pq()
    eps = ldp_epsilon(p, q)
    n = int(rel.data.n_transactions)
    d = int(rel.parameters.get("n_items") or rel.data.n_items)
    (k,) = compute(rel.data.item_supports_lazy(), **ckw)
    k = np.asarray(k, np.float64)
    s_hat = float(np.clip(_reconstructed(np.array([k.sum() / max(d, 1)]), n, p, q)[0], 0.0, 1.0))
    floor = rel.parameters.get("privacy_floor")
    bp = basic_privacy(p, q, s0=s_hat) if 0.0 < s_hat < 1.0 else None
    factor = math.exp(eps) if math.isfinite(eps) else math.inf
    figs.guarantee = (
        f"Every item bit of every basket was randomised on its own: an item a basket holds stays with probability p = {p:g}, "
        f"an item it does not hold stays absent with probability q = {q:g}. For any one item, the release moves an "
        f"attacker's odds that a given basket holds it by at most a factor e^ε = {factor:,.3g} (ε = {eps:.3g} per item); "
        f"{n:,} baskets over {d:,} items"
        + (
            f", basic privacy {bp:.1f} % at the average item support {s_hat:.3g} estimated "
            f"from the release" + (f" (floor {floor:g} %)" if isinstance(floor, (int, float)) else "")
            if bp is not None
            else ""
        )
        + "."
    )
    catalogue = "item_catalogue" in rel.parameters
    figs.protects = (
        "It protects each single item of a basket (a released 1 or 0 says little about it) and hides which row is whose "
        "behind a keyed row order. It does not protect a whole basket: ε adds up over the items two baskets differ in; "
        "nor a basket's length and rare items beyond the per-item bound"
        + ("." if catalogue else ", nor which items exist in the input (the item list is the input's own: no public catalogue).")
    )
    post1, post0 = item_posteriors(p, q, s_hat)
    rec_text, rec = record_epsilon_text(eps, d)
    learn: list[Any] = [
        Text(
            "learn_item",
            f"Per item: an attacker's odds that a given item is in a given basket move by at most a factor "
            f"e^ε = {factor:,.3g}. From the item's support as prior (the average, {s_hat:.3g}, estimated from the "
            f"release) a released 1 raises the belief to {_share(post1)}, a released 0 lowers it to "
            f"{_share(post0)}; from a 50 % prior no released bit takes it beyond "
            f"{_share(factor / (1 + factor)) if math.isfinite(factor) else '100 %'}.",
        ),
        Value(
            "learn_item_odds_factor",
            "Largest factor by which one released bit moves the odds about one item",
            factor,
            unit="×",
            note="e^ε, ε = ln max(p/(1−q), (1−q)/p, (1−p)/q, q/(1−p))",
        ),
        Value(
            "learn_item_posterior_one",
            "Belief that an item is truly there after a released 1 (average item support as prior)",
            100.0 * post1,
            unit="%",
            note=f"s p / (s p + (1 − s)(1 − q)) at s = {s_hat:.4g}",
        ),
        Text("learn_record", rec_text),
        Value(
            "learn_record_epsilon",
            "Local-DP ε of a whole basket (all items)",
            rec,
            note=f"no meaningful bound above {MEANINGFUL_EPSILON:g}",
        ),
    ]
    unique = next((i for i in figs.risk if isinstance(i, Value) and i.id == "unique_baskets_release"), None)
    noise, kept = (1.0 - q) * (1.0 - s_hat) * d, p * s_hat * d
    learn.append(
        Text(
            "learn_unique_baskets",
            (
                (f"{unique.value:.1f} % of the released rows are unique baskets. " if unique is not None else "")
                + f"Distorted baskets are unique by construction: each row gets about {noise:,.1f} items it did not hold (1 − q of "
                f"the absent ones) and keeps about {kept:,.1f} true ones, so that only {_share(post1)} of its items are true. "
                "A unique distorted row does not identify a person: it is not the person's basket, and the rows are in a keyed "
                "order. Likewise the k^m audit of the release counts rare combinations of released (mostly added) items, not "
                "people who can be singled out; the linkage attack below measures that."
            ),
        )
    )
    figs.learn += learn
    ok, base = item_inference(k, n, p, q)
    figs.attacks.append(
        Attack(
            "attack_item_inference",
            "item inference from a released 1",
            ok,
            base,
            ITEM_INFERENCE_THRESHOLD,
            "share of released 1s that are true items (expected, from the item supports reconstructed from the release)",
            found=f"guessing 'present' for each of the {int(k.sum()):,} released 1s is right {_share(ok)} of the time, against "
            f"{_share(base)} from the item supports alone",
            test=f"{_TEST}::test_item_inference_by_hand",
        )
    )
    if original is not None:
        figs.attacks += _comparison_attacks(rel, original, k, p, q, ckw)
        # counted on the original: a warning for the owner's report only
        figs.warnings += [
            Text("warning_item_list", w, about="comparison") for w in _item_list_warning(rel, original, catalogue, ckw)
        ]
    have = {i.id for i in figs.utility}
    figs.headline = [i for i in ("itemsets_rho", "itemsets_sigma_minus", "itemsets_sigma_plus") if i in have]
    return figs


def _comparison_attacks(rel: Any, original: Any, k: np.ndarray, p: float, q: float, ckw: dict[str, Any]) -> list[Attack]:
    from ..progress import compute
    from .audit import aligned_distortion
    from .flip_rates import counts_on

    n = int(original.n_transactions)
    labels = np.asarray(rel.data.vocabulary.labels)
    (c,) = compute(original.item_supports_lazy(), **ckw)
    c = counts_on(np.asarray(c, np.float64), np.asarray(original.vocabulary.labels), labels)
    ones = float(k.sum())
    base = float((k * c).sum() / (n * ones)) if ones and n else 0.0
    try:
        aligned = aligned_distortion(original, rel, rel.key)
    except PPDMError:  # a release that is not a distortion of this original: the recount says so
        aligned = None
    out = []
    if aligned is not None and aligned.n_transactions == n:
        ok, how = _true_ones(original, aligned, ckw) / ones if ones else 0.0, "counted row by row"
    else:
        ok, how = float((p * c).sum() / ones) if ones else 0.0, "expected from the original's item counts (rows not aligned)"
    out.append(
        Attack(
            "attack_item_inference_measured",
            "item inference from a released 1 (against the original)",
            ok,
            base,
            ITEM_INFERENCE_THRESHOLD,
            "share of released 1s that are true items of their basket",
            about="comparison",
            found=f"{_share(ok)} of the released 1s are true items ({how}); the prior is {_share(base)}",
            test=f"{_TEST}::test_item_inference_against_the_original",
        )
    )
    if aligned is None:
        return out
    link = row_linkage(original, aligned, ckw, sign=1 if p >= 1.0 - q else -1)
    if link is not None:
        ok, targets, rows = link["success"], int(link["targets"].size), link["rows"]
        out.append(
            Attack(
                "attack_row_linkage",
                f"linkage of a basket to its row from {LINK_KNOWN} known items",
                ok,
                1.0 / rows,
                LINKAGE_THRESHOLD,
                f"share of {targets} sampled targets whose own row holds the most of their known items",
                about="comparison",
                found=f"knowing {LINK_KNOWN} items of a basket (fewer when it has fewer) picks its own row out of {rows:,} "
                f"for {_share(ok)} of {targets} targets",
                test=f"{_TEST}::test_row_linkage_against_brute_force",
            )
        )
    return out


def _item_list_warning(rel: Any, original: Any, catalogue: bool, ckw: dict[str, Any]) -> list[str]:
    from ..progress import compute

    if catalogue:
        return []
    (c,) = compute(original.item_supports_lazy(), **ckw)
    single = int((np.asarray(c) == 1).sum())
    if not single:
        return []
    return [
        f"{single:,} item{'s' if single != 1 else ''} of the published item list {'are' if single != 1 else 'is'} held by a "
        "single basket of the original: without a public item catalogue (--items) an adversary who knows every other "
        "basket learns that the remaining one holds it"
    ]

"""The officer's summary of a sketch release: the guarantee in words, δ translated into the
reconstruction error an attacker faces, and the record reconstruction attack
(docs/sketches.md#what-an-attacker-can-still-learn, docs/threat-model.md#sketches).

* **δ**: any estimate of one attribute of a published record from its sketch has variance at
  least δ (units of x²), so a standard error of at least √δ, against an adversary who knows
  every random vector. For 0/1 baskets, deciding "item present" from an estimate ~ N(x_t, δ) by
  the best threshold (0.5) errs with probability Φ(−1 / (2√δ)) at the least (equal priors).
* **m reveals V**: ``m = ⌊V/δ⌋`` below ``m_max`` gives ``m δ <= V < (m + 1) δ``; for a 0/1 basket
  (V = length − 1) with δ < 1 that is the basket's length exactly.
* ``attack_record_reconstruction`` (comparison): for :data:`RECON_RECORDS` sampled published
  records, the adversary reconstructs each attribute ``x̂_t = (1/m) Σ_j s^j r_t^j`` on the
  record's non-zero attributes and as many of its zero ones drawn at random
  (:func:`attribute_sets`). Success: the share of the squared error of the column-mean guess that
  the sketch removes, ``max(0, 1 − Σ (x̂ − x)² / Σ (mean − x)²)`` (the attacker keeps the better
  of the two guesses); baseline 0 (the column mean). Flagged above
  :data:`RECONSTRUCTION_THRESHOLD`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..release.figures import Attack, Figures, Text, Value

__all__ = [
    "sketch_threat",
    "attribute_sets",
    "reconstruction_errors",
    "presence_error",
    "RECON_RECORDS",
    "RECONSTRUCTION_THRESHOLD",
]

#: published records the reconstruction attack samples
RECON_RECORDS = 200
#: share of the column-mean guess's squared error the sketch may remove before the summary flags it
RECONSTRUCTION_THRESHOLD = 0.5
#: public seed of the attack's sample (it only chooses what to measure)
_RECON_SEED = 0x5EED_0004

_TEST = "tests/sketch/test_threat.py"


def presence_error(delta: float) -> float:
    """Smallest error rate of deciding a 0/1 attribute from an estimate with standard error
    √δ (threshold at 0.5, equal priors): Φ(−1 / (2√δ))."""
    return 0.5 * math.erfc(1.0 / (2.0 * math.sqrt(delta)) / math.sqrt(2.0)) if delta > 0 else 0.0


def attribute_sets(X: sp.csr_array, seed: int = _RECON_SEED) -> list[np.ndarray]:
    """Per row of ``X``: its non-zero columns and as many zero columns drawn at random."""
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    out = []
    for i in range(X.shape[0]):
        nz = np.sort(X.indices[X.indptr[i] : X.indptr[i + 1]]).astype(np.int64)
        zeros = np.setdiff1d(np.arange(d, dtype=np.int64), nz, assume_unique=True)
        pick = rng.choice(zeros, min(nz.size, zeros.size), replace=False) if zeros.size else np.zeros(0, np.int64)
        out.append(np.concatenate([nz, np.sort(pick)]))
    return out


def reconstruction_errors(
    X: sp.csr_array, S: np.ndarray, m: np.ndarray, generator: Any, means: np.ndarray, sets: list[np.ndarray]
) -> tuple[float, float, int]:
    """``(Σ (x̂ − x)², Σ (mean − x)², attributes)`` over the attribute sets of the rows of ``X``
    (sketch rows ``S`` with ``m`` components)."""
    from .primitives import attribute_estimate

    err_sketch = err_mean = 0.0
    count = 0
    for i, cols in enumerate(sets):
        if not cols.size or m[i] < 1:
            continue
        x = np.asarray(X[[i]][:, cols].toarray()).ravel()
        est, _ = attribute_estimate(S[i], int(m[i]), generator, cols)
        err_sketch += float(((np.asarray(est) - x) ** 2).sum())
        err_mean += float(((means[cols] - x) ** 2).sum())
        count += cols.size
    return err_sketch, err_mean, count


def _column_means(original: Any, **ckw: Any) -> np.ndarray:
    import dask

    from ..progress import compute
    from ._figure_kernels import take_rows

    def sums(block: Any, weights: Any, n_items: int) -> np.ndarray:
        rows = np.diff(np.asarray(block.indptr))
        X = take_rows(block, weights, 0, np.arange(rows.size), n_items)
        return np.asarray(X.sum(axis=0)).ravel()

    blocks = original.blocks.to_delayed().ravel()
    weights = original.weights.to_delayed().ravel() if original.weights is not None else [None] * len(blocks)
    (parts,) = compute([dask.delayed(sums, pure=True)(b, w, int(original.n_items)) for b, w in zip(blocks, weights)], **ckw)
    n = max(int(original.n_transactions), 1)
    return np.sum(parts, axis=0) / n if parts else np.zeros(int(original.n_items))


def _reconstruction(rel: Any, original: Any, al: Any, **ckw: Any) -> Attack | None:
    from ..progress import compute
    from ..release.attacks import public_sample
    from .report_figures import gather_original, gather_sketches

    (m_all,) = compute(al.m, **ckw)
    drawn = public_sample(np.asarray(m_all) > 0, RECON_RECORDS, _RECON_SEED)
    if drawn is None:
        return None
    sample = drawn[0]
    X = gather_original(original, sample, **ckw)
    rows = sample if al.release_row is None else al.release_row[sample]
    S, m = gather_sketches(rel.data, rows, **ckw)
    means = _column_means(original, **ckw)
    es, em, count = reconstruction_errors(X, S, m, rel.data.generator, means, attribute_sets(X))
    success = max(0.0, 1.0 - es / em) if em > 0 else 0.0
    return Attack(
        "attack_record_reconstruction",
        "record reconstruction from the sketch",
        success,
        0.0,
        RECONSTRUCTION_THRESHOLD,
        "share of the squared error of the column-mean guess removed by reconstructing from the sketch",
        about="comparison",
        found=f"over {count:,} attributes of {sample.size} sampled published records (their non-zero attributes and as "
        f"many zero ones): mean squared error {es / max(count, 1):.4g} from the sketch against "
        f"{em / max(count, 1):.4g} from the column means",
        test=f"{_TEST}::test_reconstruction_against_numpy",
    )


def sketch_threat(rel: Any, figs: Figures, original: Any = None, al: Any = None, **ckw: Any) -> Figures:
    """Fill the summary fields of a sketch release's figures (see the module docstring)."""
    p = rel.parameters
    published, mean_m = rel.published_counts(**ckw)
    m_max = int(rel.m_max)
    from .release import RECORD_ID_COLUMNS

    carried = sorted(c for c in rel.data.columns if c not in RECORD_ID_COLUMNS or p.get("keep_record_ids"))
    if rel.method == "delta":
        delta = float(p["delta"])
        se = math.sqrt(delta)
        figs.guarantee = (
            f"Each of the {published:,} published records is a sketch of at most ⌊V/δ⌋ random ±1 projections "
            f"(mean {mean_m:.1f}, at most m_max = {m_max}), so an attacker who knows every random vector still "
            f"estimates any one of its attributes with a variance of at least δ = {delta:g} (a standard error of "
            f"at least √δ = {se:.3g}); records with V = |x|² − max x_t² below δ are not published."
        )
        err = presence_error(delta)
        figs.learn += [
            Text(
                "learn_reconstruction_error",
                f"Reconstruction error: any attribute of a published record is estimated with a standard error of at least "
                f"√δ = {se:.3g} (in the units of the data). For 0/1 baskets, deciding whether a given item is in a basket "
                f"from its sketch is wrong at least {100 * err:.1f} % of the time (best threshold, Gaussian approximation, "
                f"equal priors).",
            ),
            Value(
                "learn_attribute_standard_error",
                "Smallest standard error of reconstructing one attribute",
                se,
                note="√δ; in the units of the data",
            ),
            Value(
                "learn_presence_error",
                "Smallest error rate of deciding a 0/1 item from the sketch",
                100.0 * err,
                unit="%",
                note="Φ(−1/(2√δ)), Gaussian approximation, equal priors",
            ),
            Text(
                "learn_variance_revealed",
                f"Each published record's m (components) is public and gives V = |x|² − max x_t² to within δ: "
                f"m·δ <= V < (m + 1)·δ below m_max = {m_max}"
                + (
                    f"; for 0/1 baskets (V = length − 1) with δ = {delta:g} < 1 that is the basket's length exactly."
                    if delta < 1
                    else "."
                ),
            ),
        ]
    else:
        k = p.get("k")
        figs.guarantee = (
            f"Each of the {published:,} published records is a sketch of m random ±1 projections (mean {mean_m:.1f}, "
            f"at most m_max = {m_max}) chosen so that, for each of its k = {k} nearest neighbours, the standard "
            "deviation of the estimated similarity is at least the gap to the largest possible similarity: the "
            "sketch does not tell the record from its neighbours."
        )
        margin = next((i.value for i in figs.risk if isinstance(i, Value) and i.id == "min_variance_margin"), None)
        figs.learn.append(
            Text(
                "learn_reconstruction_error",
                f"A record's similarity to each of its {k} nearest neighbours is estimated with a standard "
                "deviation at least the gap to the largest possible similarity"
                + (
                    f" (the tightest record reaches {100 * (1 + margin):.0f} % of the variance it must have)"
                    if isinstance(margin, float) and math.isfinite(margin)
                    else ""
                )
                + f"; with {mean_m:.1f} components on average, nothing bounds the reconstruction of a "
                "single attribute (see the reconstruction attack).",
            )
        )
    figs.protects = (
        "It protects the values of each published record against reconstruction from its sketch (the random "
        "vectors being public). It does not hide whether a record whose values are known was published: its "
        "sketch is a deterministic function of the record and the public vectors, so such a record is found "
        "among the rows"
        + (f", with the columns carried in clear ({', '.join(carried)})" if carried else "")
        + "; nor a record's size (m is public), nor suppression of a record of an adversary who knows all others."
    )
    if original is not None and al is not None:
        attack = _reconstruction(rel, original, al, **ckw)
        if attack is not None:
            figs.attacks.append(attack)
    have = {i.id for i in figs.utility}
    figs.headline = [i for i in ("knn_accuracy_ratio", "cosine_mean_abs_error", "dot_mean_relative_error") if i in have]
    return figs

"""Do the published rows of an EMASK release come from a (p, q) distortion of the original with
the declared p and q? Two tests for ``verify --original`` (docs/emask.md#checks-that-look-at-the-rows).

Without the key (:func:`item_flip_test`)
    The rows of a written release are in a keyed random order, so without the key only
    aggregates line up with the original. Per item j (count ``c_j`` in the original of N rows)
    the released count is a sum of independent bits,
    ``k_j ~ Binomial(c_j, p) + Binomial(N - c_j, 1 - q)``: ``E k_j = p c_j + (1 - q)(N - c_j)``,
    ``Var k_j = p (1 - p) c_j + q (1 - q)(N - c_j)``, independent across items. This is a linear
    model in ``θ = (p, 1 - q)`` with known variances: the weighted least-squares estimate
    ``θ̂ = θ0 + A⁺ r`` (``A = Xᵀ W X``, ``r = Xᵀ W (k - X θ0)``, ``X_j = (c_j, N - c_j)``,
    ``W = diag(1 / Var k_j)`` at the declared θ0) has covariance ``A⁻¹``, and the score statistic
    ``T = rᵀ A⁺ r = (θ̂ - θ0)ᵀ A (θ̂ - θ0)`` is χ² with rank(A) degrees of freedom when the
    declared (p, q) are the true ones. The declared pair lies in the joint confidence region of
    level ``1 - ALPHA`` iff ``T <= χ²_{rank}(1 - ALPHA)``; the test fails otherwise. ``ALPHA`` is
    the false-alarm rate of the other count checks of an EMASK release (|z| > 6, ≈ 2e-9).

With the owner's key (:func:`row_flip_test`)
    The rows are put back in the original's order (:func:`~.audit.realign`), and for every row
    the kept ones ``k11_i ~ Binomial(n1_i, p)`` and the added ones
    ``k01_i ~ Binomial(n0_i, 1 - q)`` are counted exactly. Four |z| scores: the totals (the
    observed flip rates against p and 1 - q) and the dispersion of the rows around their
    binomial means (``Σ (k11_i - p n1_i)^2`` against its exact mean and variance; likewise for
    the zeros) — a release that publishes some rows intact and distorts others harder, so that
    the totals come out right, fails the dispersion.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from ._flip_kernels import ROW_SUMS

__all__ = ["Z_MAX", "ALPHA", "item_flip_test", "row_flip_test", "counts_on", "label_map"]

#: Largest admissible |z| of a count against its law (the EMASK release's count checks).
Z_MAX = 6.0
#: False-alarm rate of a two-sided |z| > Z_MAX (≈ 2e-9); the χ² tests use the same level.
ALPHA = float(2.0 * stats.norm.sf(Z_MAX))


def label_map(labels: np.ndarray, onto: np.ndarray) -> np.ndarray:
    """Index in ``onto`` (sorted unique labels) of every label of ``labels``; -1 where absent."""
    labels, onto = np.asarray(labels), np.asarray(onto)
    if onto.size == 0:
        return np.full(labels.size, -1, np.int64)
    at = np.minimum(np.searchsorted(onto, labels), onto.size - 1)
    return np.where(onto[at] == labels, at, -1).astype(np.int64)


def counts_on(counts: np.ndarray, labels: np.ndarray, onto: np.ndarray) -> np.ndarray:
    """Item counts given over ``labels`` re-indexed over ``onto`` (0 for labels of ``onto``
    that ``labels`` lacks, e.g. items no row of a basket CSV release holds)."""
    idx = label_map(labels, onto)
    out = np.zeros(len(onto), np.float64)
    keep = idx >= 0
    np.add.at(out, idx[keep], np.asarray(counts, np.float64)[keep])
    return out


def item_flip_test(released: np.ndarray, original: np.ndarray, n_rows: int, p: float, q: float) -> dict[str, Any]:
    """Estimate (p, q) from the item counts of a release and of its original, and test the
    declared pair (module docstring).

    Parameters
    ----------
    released, original : ndarray
        Count of every item in the release and in the original (the same items, same order).
    n_rows : int
        Rows of the original (= of the release).
    p, q : float
        Declared parameters.

    Returns
    -------
    dict
        ``p_hat``, ``q_hat`` and their standard errors ``se_p``, ``se_q`` (None when not
        identifiable: every item has the same support), ``statistic`` T, ``dof``,
        ``threshold``, ``exact_mismatches`` (items whose count (p, q) fixes exactly, e.g. with
        q = 1 an item absent from the original, and which differ) and ``ok``.
    """
    k = np.asarray(released, np.float64)
    c = np.asarray(original, np.float64)
    n = float(n_rows)
    theta0 = np.array([p, 1.0 - q])
    x = np.column_stack([c, n - c])
    mean = x @ theta0
    var = p * (1.0 - p) * c + q * (1.0 - q) * (n - c)
    exact = var <= 1e-12
    mismatches = int(np.count_nonzero(exact & (np.abs(k - mean) > 1e-6)))
    w = np.where(exact, 0.0, 1.0 / np.where(exact, 1.0, var))
    a = (x * w[:, None]).T @ x
    r = x.T @ (w * (k - mean))
    a_inv = np.linalg.pinv(a, rcond=1e-12, hermitian=True)
    dof = int(np.linalg.matrix_rank(a, hermitian=True)) if a.any() else 0
    statistic = float(r @ a_inv @ r) if dof else 0.0
    threshold = float(stats.chi2.isf(ALPHA, dof)) if dof else 0.0
    out: dict[str, Any] = {"statistic": statistic, "dof": dof, "threshold": threshold, "exact_mismatches": mismatches,
                           "p_hat": None, "q_hat": None, "se_p": None, "se_q": None}
    if dof == 2:
        theta = theta0 + a_inv @ r
        out.update(p_hat=float(theta[0]), q_hat=float(1.0 - theta[1]), se_p=float(math.sqrt(max(a_inv[0, 0], 0.0))),
                   se_q=float(math.sqrt(max(a_inv[1, 1], 0.0))))
    out["ok"] = bool(statistic <= threshold and mismatches == 0)
    return out


def _z(observed: float, mean: float, var: float) -> float:
    if var > 0:
        return float((observed - mean) / math.sqrt(var))
    return 0.0 if abs(observed - mean) <= 1e-6 else math.inf


def row_flip_test(sums: np.ndarray, p: float, q: float) -> dict[str, Any]:
    """The |z| scores of the flip rates measured row by row (:data:`~._flip_kernels.ROW_SUMS`
    summed over the rows), against the declared (p, q).

    Returns
    -------
    dict
        ``p_hat`` (kept / ones), ``q_hat`` (1 - added / zeros), ``z`` (the four scores by name:
        ``kept``, ``added``, ``kept_dispersion``, ``added_dispersion``), ``max_abs_z`` and
        ``ok`` (every |z| <= :data:`Z_MAX`).
    """
    s = dict(zip(ROW_SUMS, np.asarray(sums, np.float64).tolist()))
    v1, v0 = p * (1.0 - p), q * (1.0 - q)
    z = {"kept": _z(s["kept"], p * s["ones"], v1 * s["ones"]),
         "added": _z(s["added"], (1.0 - q) * s["zeros"], v0 * s["zeros"]),
         "kept_dispersion": _z(s["dev_kept"], v1 * s["ones"], s["var_dev_kept"]),
         "added_dispersion": _z(s["dev_added"], v0 * s["zeros"], s["var_dev_added"])}
    worst = max(abs(v) for v in z.values())
    return {"p_hat": s["kept"] / s["ones"] if s["ones"] else None,
            "q_hat": 1.0 - s["added"] / s["zeros"] if s["zeros"] else None,
            "z": z, "max_abs_z": worst, "ok": bool(worst <= Z_MAX), "sums": s}

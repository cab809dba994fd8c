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
    ``k01_i ~ Binomial(n0_i, 1 - q)`` are counted exactly. Four scores: the totals (the observed
    flip rates against p and 1 - q, exact binomial tails) and the dispersion of the rows around
    their binomial means (``Σ (k11_i - p n1_i)^2`` against its exact mean and variance, read on
    a scaled χ² with the same two moments; likewise for the zeros) — a release that publishes
    some rows intact and distorts others harder, so that the totals come out right, fails the
    dispersion. Each score is given as the |z| of a normal variable with the same two-sided tail
    probability, held to :data:`Z_MAX`.
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
    out: dict[str, Any] = {
        "statistic": statistic,
        "dof": dof,
        "threshold": threshold,
        "exact_mismatches": mismatches,
        "p_hat": None,
        "q_hat": None,
        "se_p": None,
        "se_q": None,
    }
    if dof == 2:
        theta = theta0 + a_inv @ r
        out.update(
            p_hat=float(theta[0]),
            q_hat=float(1.0 - theta[1]),
            se_p=float(math.sqrt(max(a_inv[0, 0], 0.0))),
            se_q=float(math.sqrt(max(a_inv[1, 1], 0.0))),
        )
    out["ok"] = bool(statistic <= threshold and mismatches == 0)
    return out


def _two_sided_z(lower: float, upper: float) -> float:
    """The |z| of a normal variable with the same two-sided tail probability as a statistic
    whose lower and upper tail probabilities are ``lower`` (P(X <= x)) and ``upper`` (P(X >= x))."""
    tail = min(lower, upper, 0.5)
    return math.inf if tail <= 0 else float(stats.norm.isf(tail))


def _binomial_z(observed: float, trials: float, rate: float) -> float:
    """|z| equivalent of ``observed`` ones in ``trials`` Bernoulli(``rate``) bits, from the exact
    binomial tails (a sum of rare flips is skewed: its normal tail would be far too thin)."""
    n, k = int(round(trials)), int(round(observed))
    if rate <= 0.0 or rate >= 1.0 or n == 0:
        return 0.0 if k == round(rate * n) else math.inf
    return _two_sided_z(float(stats.binom.cdf(k, n, rate)), float(stats.binom.sf(k - 1, n, rate)))


def _dispersion_z(observed: float, mean: float, var: float) -> float:
    """|z| equivalent of the rows' dispersion ``Σ (k_i - n_i r)^2`` against its exact mean and
    variance, read on the scaled χ² with the same two moments (``var / 2 mean`` × χ²(2 mean² /
    var)): the sum of squares of skewed counts has a long right tail that the normal misses."""
    if var <= 0 or mean <= 0:
        return 0.0 if abs(observed - mean) <= 1e-6 else math.inf
    scale, dof = var / (2.0 * mean), 2.0 * mean * mean / var
    x = observed / scale
    return _two_sided_z(float(stats.chi2.cdf(x, dof)), float(stats.chi2.sf(x, dof)))


def row_flip_test(sums: np.ndarray, p: float, q: float) -> dict[str, Any]:
    """The |z| scores of the flip rates measured row by row (:data:`~._flip_kernels.ROW_SUMS`
    summed over the rows), against the declared (p, q): each the |z| of a normal variable with
    the same two-sided tail probability (exact binomial tails for the totals, a two-moment
    scaled χ² for the dispersions).

    Returns
    -------
    dict
        ``p_hat`` (kept / ones), ``q_hat`` (1 - added / zeros), ``z`` (the four |z| by name:
        ``kept``, ``added``, ``kept_dispersion``, ``added_dispersion``), ``max_abs_z`` and
        ``ok`` (every |z| <= :data:`Z_MAX`).
    """
    s = dict(zip(ROW_SUMS, np.asarray(sums, np.float64).tolist()))
    v1, v0 = p * (1.0 - p), q * (1.0 - q)
    z = {
        "kept": _binomial_z(s["kept"], s["ones"], p),
        "added": _binomial_z(s["added"], s["zeros"], 1.0 - q),
        "kept_dispersion": _dispersion_z(s["dev_kept"], v1 * s["ones"], s["var_dev_kept"]),
        "added_dispersion": _dispersion_z(s["dev_added"], v0 * s["zeros"], s["var_dev_added"]),
    }
    worst = max(z.values())
    return {
        "p_hat": s["kept"] / s["ones"] if s["ones"] else None,
        "q_hat": 1.0 - s["added"] / s["zeros"] if s["zeros"] else None,
        "z": z,
        "max_abs_z": worst,
        "ok": bool(worst <= Z_MAX),
        "sums": s,
    }

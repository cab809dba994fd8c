"""Support reconstruction from distorted counts (docs/emask.md#support-reconstruction)."""

from __future__ import annotations

import warnings

import numpy as np

from . import _kernels as K
from .distortion import check_pq

__all__ = ["transition_matrix", "reconstruct_classes", "reconstruct_support", "IllConditionedWarning"]


class IllConditionedWarning(UserWarning):
    """The transition matrix is badly conditioned: reconstructed supports are very noisy."""


def transition_matrix(n: int, p: float, q: float) -> np.ndarray:
    """(n+1)x(n+1) matrix M[i, j] = P(i distorted ones | j true ones), classes ordered 0..n
    ones (corrected Eq. 4: the exponent of (1-p) is j-k;
    docs/emask.md#correction-the-transition-matrix)."""
    p, q = check_pq(p, q)
    if n < 1:
        raise ValueError("n must be >= 1")
    return K.transition_matrix(n, p, q)


def reconstruct_classes(distorted_class_counts: np.ndarray, p: float, q: float, *, cond_limit: float = 1e8) -> np.ndarray:
    """Estimated true class counts C^T from distorted ones C^D by solving M C^T = C^D.

    Solves (never inverts); warns with :class:`IllConditionedWarning` when cond(M) > cond_limit.
    """
    c = np.asarray(distorted_class_counts, dtype=np.float64)
    n = c.shape[0] - 1
    m = transition_matrix(n, p, q)
    cond = np.linalg.cond(m)
    if cond > cond_limit:
        warnings.warn(
            f"transition matrix for n={n}, p={p}, q={q} has condition number {cond:.3g}", IllConditionedWarning, stacklevel=2
        )
    return np.linalg.solve(m, c)


def reconstruct_support(sigma: np.ndarray, p: float, q: float, *, method: str = "closed_form", return_variance: bool = False):
    """Estimated true support of n-itemsets from the sums of distorted supports of their subsets.

    Parameters
    ----------
    sigma : array (n+1,) or (n+1, m)
        ``sigma[j]`` = Σ of the distorted supports N_D(U) over the j-subsets U of the itemset
        (``sigma[0]`` = number of transactions, ``sigma[n]`` = the itemset's own count).
    method : {"closed_form", "matrix"}
        Closed form Δ^-n Σ_U (-(1-q))^{n-|U|} N_D(U), or the all-ones class of M^-1 C^D with
        C^D from inclusion-exclusion. They agree to rounding.
    return_variance : bool
        Also return the unbiased variance estimate V̂ (closed form only).
    """
    p, q = check_pq(p, q)
    sigma = np.asarray(sigma, dtype=np.float64)
    n = sigma.shape[0] - 1
    if method == "closed_form":
        est = K.closed_form_estimate(list(sigma), n, p, q)
    elif method == "matrix":
        classes = K.class_counts_from_subsets(sigma)
        est = reconstruct_classes(classes, p, q)[n]
    else:
        raise ValueError(f"unknown method {method!r}")
    if return_variance:
        return est, K.closed_form_variance(list(sigma), n, p, q, est)
    return est

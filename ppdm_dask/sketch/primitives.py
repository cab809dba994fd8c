"""Estimators on padded sketches (docs/sketches.md#estimators-and-their-variances), vectorised over
rows (NumPy only).

Conventions: ``S`` is a float ``(n, width)`` array of sketches (a 1-D array is one record), ``m``
the number of valid leading components of each row (an int or ``(n,)``); entries beyond
``m_i`` are ignored (masked), so zero- or NaN-padded inputs both work. Pairwise estimators use
the first ``min(m_i, m_j)`` components for every term (the paper's Eq. 3.9 is only consistent that
way: docs/sketches.md#clarification-pairwise-estimates-use-the-same-components).

Each estimator returns ``(est, var_est)``: ``est`` is the mean of the m per-component unbiased
estimates (``s^j r_t^j``, ``s^j u^j``, ``(s^j)^2``, ``(s^j - u^j)^2``) and ``var_est`` their sample
variance divided by m — an unbiased estimate of the estimator's variance, because components
are independent. ``est`` is NaN when m = 0 (suppressed), ``var_est`` is NaN when m < 2.
The exact variances of docs/sketches.md#estimators-and-their-variances are :func:`attribute_variance`, :func:`dot_variance`,
:func:`sqnorm_variance` and :func:`sqdist_variance` (for tests and planning).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _kernels as K

__all__ = [
    "attribute_estimate",
    "dot",
    "sqnorm",
    "sqdist",
    "cosine",
    "centroid",
    "component_sums",
    "dot_matrix",
    "cosine_matrix",
    "similarity_matrix",
    "shrunk_cosine",
    "estimate_shrinkage",
    "attribute_variance",
    "dot_variance",
    "sqnorm_variance",
    "sqdist_variance",
]


def _rows(S: Any, m: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    S = np.asarray(S, dtype=np.float64)
    single = S.ndim == 1
    S = S[None, :] if single else S
    if S.ndim != 2:
        raise ValueError("sketches must be a 1-D or 2-D array")
    m = np.broadcast_to(np.asarray(m, dtype=np.int64), (S.shape[0],))
    if m.size and (m.min() < 0 or m.max() > S.shape[1]):
        raise ValueError(f"numbers of components must lie in [0, {S.shape[1]}]")
    return S, m, single


def _pair(S1: Any, m1: Any, S2: Any, m2: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    A, ma, sa = _rows(S1, m1)
    B, mb, sb = _rows(S2, m2)
    n = np.broadcast_shapes((A.shape[0],), (B.shape[0],))[0]
    k = np.minimum(np.broadcast_to(ma, (n,)), np.broadcast_to(mb, (n,)))
    w = min(A.shape[1], B.shape[1], int(k.max()) if k.size else 0)
    A = np.broadcast_to(A[:, :w], (n, w))
    B = np.broadcast_to(B[:, :w], (n, w))
    return A, B, k, sa and sb


def _mask(k: np.ndarray, w: int) -> np.ndarray:
    return np.arange(w)[None, :] < k[:, None]


def _mean_var(E: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row means of the first k_i per-component estimates and the variance of that mean."""
    mask = _mask(k, E.shape[1])
    E = np.where(mask, E, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = E.sum(axis=1) / k
        dev = np.where(mask, E - est[:, None], 0.0)  # two-pass: no cancellation
        var = (dev**2).sum(axis=1) / ((k - 1) * k)
    est = np.where(k >= 1, est, np.nan)
    var = np.where(k >= 2, var, np.nan)
    return est, var


def _out(single: bool, *arrays: np.ndarray):
    res = tuple(a[0] if single else a for a in arrays)
    return res if len(res) > 1 else res[0]


def attribute_estimate(S: Any, m: Any, generator: Any, t: Any) -> tuple[np.ndarray, np.ndarray]:
    """Reconstruct attribute(s) ``t``: ``x̂_t = (1/m) sum_j s^j r_t^j`` (mean x_t, variance
    ``(|x|^2 - x_t^2)/m``).

    Parameters
    ----------
    S, m : sketches and their component counts
    generator : SketchGenerator
        The generator that made the sketches.
    t : int or 1-D array of int
        Item column id(s).

    Returns
    -------
    est, var_est : ndarray
        ``(n,)`` for a scalar ``t``, ``(n, len(t))`` otherwise (a leading axis less for 1-D S).
    """
    S, m, single = _rows(S, m)
    scalar_t = np.ndim(t) == 0
    items = np.atleast_1d(np.asarray(t))
    w = min(S.shape[1], int(m.max()) if m.size else 0)
    mask = _mask(m, w)
    Sm = np.where(mask, S[:, :w], 0.0)
    r = generator.signs(items, w).astype(np.float64)  # (w, n_t)
    # per-component estimates e_j = s^j r_t^j and e_j^2 = (s^j)^2 since r^2 = 1
    sums = Sm @ r
    sq = (Sm**2).sum(axis=1)[:, None]
    k = m[:, None].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = sums / k
        var = np.maximum(sq - k * est**2, 0.0) / ((k - 1) * k)
    est = np.where(k >= 1, est, np.nan)
    var = np.where(k >= 2, var, np.nan)
    if scalar_t:
        est, var = est[:, 0], var[:, 0]
    return _out(single, est, var)


def dot(S1: Any, m1: Any, S2: Any, m2: Any) -> tuple[np.ndarray, np.ndarray]:
    """Dot products ``x·y`` of aligned rows from the first ``min(m1, m2)`` components
    (rows broadcast: one sketch against many works). Variance ``V(x, y)/m``."""
    A, B, k, single = _pair(S1, m1, S2, m2)
    return _out(single, *_mean_var(A * B, k))


def sqnorm(S: Any, m: Any) -> tuple[np.ndarray, np.ndarray]:
    """Squared norms ``|x|^2`` from ``m`` components. Variance ``(2|x|^4 - 2 sum x_t^4)/m``."""
    S, m, single = _rows(S, m)
    return _out(single, *_mean_var(S**2, m))


def sqdist(S1: Any, m1: Any, S2: Any, m2: Any) -> tuple[np.ndarray, np.ndarray]:
    """Squared distances ``|x - y|^2`` from the first ``min(m1, m2)`` components."""
    A, B, k, single = _pair(S1, m1, S2, m2)
    return _out(single, *_mean_var((A - B) ** 2, k))


def cosine(S1: Any, m1: Any, S2: Any, m2: Any) -> np.ndarray:
    """Cosine ``dot / sqrt(sqnorm_x sqnorm_y)``, all three from the same first
    ``min(m1, m2)`` components (NaN when that is 0 or a norm estimate is 0)."""
    A, B, k, single = _pair(S1, m1, S2, m2)
    mask = _mask(k, A.shape[1])
    A = np.where(mask, A, 0.0)
    B = np.where(mask, B, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = (A * B).sum(axis=1) / np.sqrt((A**2).sum(axis=1) * (B**2).sum(axis=1))
    cos = np.where(k >= 1, cos, np.nan)
    return _out(single, cos)


def component_sums(S: Any, m: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(sums, counts)`` over rows of each component j, counting only rows with ``m_i > j``:
    the associative partial of :func:`centroid` (TREE-sum it across blocks)."""
    S, m, _ = _rows(S, m)
    w = int(m.max()) if m.size else 0
    mask = _mask(m, w)
    sums = np.where(mask, S[:, :w], 0.0).sum(axis=0)
    counts = np.bincount(m, minlength=w + 1)[::-1].cumsum()[::-1][1:] if w else np.zeros(0, np.int64)
    return sums, counts.astype(np.int64)


def centroid(S: Any, m: Any, mode: str = "available") -> tuple[np.ndarray, int]:
    """Sketch of the centroid of a set of records (docs/sketches.md#centroid-sketches); suppressed rows
    never count.

    Parameters
    ----------
    mode : {"available", "common"}
        ``"available"``: component j is the mean of ``s_i^j`` over rows with ``m_i >= j``
        (the exact sketch of the centroid of those rows), ``m_c = max m_i``. ``"common"``:
        ``m_c = min m_i`` over non-suppressed rows and every component averages all of them
        (an exactly unbiased, but short, sketch of the centroid).

    Returns
    -------
    c : ndarray
        float64 ``(width,)`` zero padded beyond ``m_c``.
    m_c : int
        0 when every row is suppressed (or there are none).
    """
    S, m, _ = _rows(S, m)
    c = np.zeros(S.shape[1], dtype=np.float64)
    kept = m > 0
    if not kept.any():
        return c, 0
    if mode == "available":
        sums, counts = component_sums(S[kept], m[kept])
        c[: sums.size] = sums / counts
        return c, int(sums.size)
    if mode == "common":
        mc = int(m[kept].min())
        c[:mc] = S[kept, :mc].mean(axis=0)
        return c, mc
    raise ValueError(f"centroid mode must be 'available' or 'common', got {mode!r}")


def _masked(S: Any, m: Any) -> tuple[np.ndarray, np.ndarray]:
    S, m, _ = _rows(S, m)
    return np.where(_mask(m, S.shape[1]), S, 0.0), m


def dot_matrix(SA: Any, mA: Any, SB: Any, mB: Any) -> tuple[np.ndarray, np.ndarray]:
    """All-pairs dot products between two blocks: ``(dots (nA, nB), mins (nA, nB))``.

    With zero padding ``SA @ SB.T`` already sums the first ``min(m_a, m_b)`` components; it
    is divided by that count (NaN where it is 0). One BLAS product, O(nA nB width).
    """
    A, ma = _masked(SA, mA)
    B, mb = _masked(SB, mB)
    w = min(A.shape[1], B.shape[1])
    mins = np.minimum.outer(ma, mb)
    raw = A[:, :w] @ B[:, :w].T
    with np.errstate(divide="ignore", invalid="ignore"):
        dots = np.where(mins > 0, raw / mins, np.nan)
    return dots, mins


def cosine_matrix(SA: Any, mA: Any, SB: Any, mB: Any) -> tuple[np.ndarray, np.ndarray]:
    """All-pairs estimated cosines ``(cos (nA, nB), mins (nA, nB))``; every pair's dot and
    norms use its own first ``min(m_a, m_b)`` components (prefix sums of squares)."""
    A, ma = _masked(SA, mA)
    B, mb = _masked(SB, mB)
    w = min(A.shape[1], B.shape[1])
    A, B = A[:, :w], B[:, :w]
    mins = np.minimum.outer(ma, mb)
    raw = A @ B.T
    cum_a = np.concatenate([np.zeros((A.shape[0], 1)), np.cumsum(A**2, axis=1)], axis=1)
    cum_b = np.concatenate([np.zeros((B.shape[0], 1)), np.cumsum(B**2, axis=1)], axis=1)
    idx = np.minimum(mins, w)
    na = np.take_along_axis(cum_a, idx, axis=1)
    nb = np.take_along_axis(cum_b, idx.T, axis=1).T
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.where(mins > 0, raw / np.sqrt(na * nb), np.nan)
    return cos, mins


def shrunk_cosine(S1: Any, m1: Any, S2: Any, m2: Any, shrinkage: float) -> np.ndarray:
    """The variance-aware similarity ``cos_m * m / (m + lam)``, ``m = min(m1, m2)``, ``lam =
    shrinkage`` (docs/sketches.md#the-variance-aware-similarity): the posterior mean of the cosine
    under a prior ``N(0, 1/lam)`` when the same-component cosine :func:`cosine` has noise
    variance ``1/m``. Its absolute value is at most ``m / (m + lam)``."""
    lam = check_shrinkage(shrinkage)
    A, B, k, single = _pair(S1, m1, S2, m2)
    cos = cosine(A, k, B, k)
    return _out(single, cos * (k / (k + lam)))


def estimate_shrinkage(S: Any, m: Any) -> float:
    """Empirical-Bayes ``lam`` of :func:`shrunk_cosine` from a sample of sketches:
    ``1 / (mean c_q^2 - mean 1/q)`` over the pairs with ``q = min(m_i, m_j) >= 8`` common
    components, clipped to ``[1, 4096]`` (4096 when the estimates are all noise or there are
    fewer than 50 such pairs). Use a few thousand records: the cost is quadratic."""
    from ._mining_kernels import estimate_shrinkage as _estimate

    S, m, _ = _rows(S, m)
    return _estimate(S, m)[0]


def similarity_matrix(
    SA: Any, mA: Any, SB: Any, mB: Any, similarity: str = "shrunk", shrinkage: Any = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """All-pairs estimated similarities between two blocks ``(sim (nA, nB), mins (nA, nB))``, the
    measure the miners rank by (docs/sketches.md#the-variance-aware-similarity).

    Parameters
    ----------
    similarity : {"shrunk", "cosine", "euclidean"}, default "shrunk"
        Shrunk cosine, same-component cosine, or minus the estimated squared distance.
    shrinkage : "auto" or float >= 0, default "auto"
        ``lam`` of ``"shrunk"``; ``"auto"``: :func:`estimate_shrinkage` on at most 2,000
        unsuppressed rows of ``SB`` evenly spaced (as the miners do).

    Pairs with a suppressed side get NaN.
    """
    from . import _mining_kernels as MK

    if similarity not in MK.SIMILARITIES:
        raise ValueError(f"similarity must be one of {MK.SIMILARITIES}, got {similarity!r}")
    A, ma = _masked(SA, mA)
    B, mb = _masked(SB, mB)
    if similarity == "shrunk" and isinstance(shrinkage, str) and shrinkage == "auto":
        rows = MK.shrinkage_sample(mb)
        lam = MK.estimate_shrinkage(B[rows], mb[rows])[0]
    else:
        lam = check_shrinkage(shrinkage) if similarity == "shrunk" else 0.0
    w = min(A.shape[1], B.shape[1])
    A, B = np.ascontiguousarray(A[:, :w]), np.ascontiguousarray(B[:, :w])
    sim = MK.pair_similarity(A, ma, MK.prefix_sqnorms(A), B, mb, MK.prefix_sqnorms(B), similarity, lam)
    mins = np.minimum.outer(ma, mb)
    return np.where(mins > 0, sim, np.nan), mins


def check_shrinkage(shrinkage: Any, *, auto: bool = False) -> float | str:
    """``shrinkage`` as a float (a finite number >= 0), or ``"auto"`` where ``auto`` allows it."""
    from ..errors import InvalidParameter

    if auto and isinstance(shrinkage, str) and shrinkage == "auto":
        return shrinkage
    if isinstance(shrinkage, bool) or not isinstance(shrinkage, (int, float, np.number)) or not 0 <= shrinkage < np.inf:
        allowed = "'auto' or a finite number >= 0" if auto else "a finite number >= 0"
        raise InvalidParameter(f"shrinkage must be {allowed}, got {shrinkage!r}")
    return float(shrinkage)


# ---------------------------------------------------------------------- exact variances
# (docs/sketches.md#estimators-and-their-variances)
def _vec(x: Any) -> np.ndarray:
    if hasattr(x, "toarray"):
        x = x.toarray()
    return np.asarray(x, dtype=np.float64).ravel()


def attribute_variance(x: Any, t: Any, m: int = 1) -> np.ndarray | float:
    """Exact variance ``(|x|^2 - x_t^2)/m`` of the reconstruction of attribute(s) ``t``."""
    x = _vec(x)
    return ((x @ x) - x[np.asarray(t)] ** 2) / m


def dot_variance(x: Any, y: Any, m: int = 1) -> float:
    """Exact variance ``V(x, y)/m`` of the dot-product estimate, with the corrected
    ``V = |x|^2 |y|^2 + (x·y)^2 - 2 sum_t x_t^2 y_t^2``
    (docs/sketches.md#correction-variance-of-the-dot-product-estimate)."""
    x, y = _vec(x), _vec(y)
    return float(K.dot_variance(x @ x, y @ y, x @ y, (x**2) @ (y**2))) / m


def sqnorm_variance(x: Any, m: int = 1) -> float:
    """Exact variance ``(2|x|^4 - 2 sum x_t^4)/m`` of the squared-norm estimate."""
    return dot_variance(x, x, m)


def sqdist_variance(x: Any, y: Any, m: int = 1) -> float:
    """Exact variance ``(2|x-y|^4 - 2 sum (x_t - y_t)^4)/m`` of the squared-distance estimate."""
    d = _vec(x) - _vec(y)
    return dot_variance(d, d, m)

"""Choice of the EMASK distortion parameters (p, q)
(docs/emask.md#clarification-at-which-support-eq-6-is-evaluated)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidParameter
from . import privacy as P
from .distortion import DELTA_MIN

__all__ = ["ParameterChoice", "choose_parameters", "estimate_s0"]

_DEFAULT_P = tuple(round(0.1 * i, 2) for i in range(1, 10))
_DEFAULT_Q = tuple(round(0.01 * i, 2) for i in range(90, 100))


@dataclass(frozen=True)
class ParameterChoice:
    """One admissible (p, q) pair.

    Attributes
    ----------
    p, q : float
    basic_privacy : float
        BP (percent) at the average item support s0 (paper Eq. 2).
    err6 : float
        Paper Eq. 6 at s = min_support.
    relative_error : float or None
        Corrected relative error (docs/emask.md#correction-the-relative-error-of-eq-6) at s = min_support and ``n_transactions``, when given.
    ldp_epsilon : float
        Per-bit local-DP ε (see :func:`ppdm_dask.emask.privacy.ldp_epsilon`).
    """

    p: float
    q: float
    basic_privacy: float
    err6: float
    relative_error: float | None
    ldp_epsilon: float


def _grid(values: Sequence[float] | None, default: tuple[float, ...], name: str) -> list[float]:
    vals = default if values is None else values
    out = sorted({round(float(v), 2) for v in vals})
    if not out or any(not 0.0 <= v <= 1.0 for v in out):
        raise InvalidParameter(f"{name} must be a non-empty collection of probabilities in [0, 1]")
    return out


def choose_parameters(
    s0: float,
    min_support: float = 0.003,
    *,
    privacy_floor: float = 90.0,
    q_min: float = 0.95,
    p_grid: Sequence[float] | None = None,
    q_grid: Sequence[float] | None = None,
    baseline: tuple[float, float] = (0.9, 0.9),
    n_transactions: int | None = None,
) -> list[ParameterChoice]:
    """(p, q) pairs of the paper's "window of opportunity" (docs/emask.md#accuracy-and-the-choice-of-p-and-q).

    A grid pair is kept when

    * privacy: BP(p, q) at the **average item support** ``s0`` (Eq. 2) is ``>= privacy_floor``;
    * accuracy: Err_6(p, q) at the **mining support** ``s = min_support`` (the weakest itemset that
      must still be found) is no worse than that of the MASK ``baseline`` (0.9, 0.9) at the same s;
    * ``q > q_min`` (strictly).

    Parameters
    ----------
    s0 : float
        Average item support in (0, 1), e.g. from :func:`estimate_s0`.
    min_support : float
        Mining support fraction in (0, 1] (0.3 % in the paper).
    privacy_floor, q_min : float
        Thresholds (percent, the :class:`~.Distorter`'s floor; probability).
    p_grid, q_grid : sequence of float, optional
        Defaults 0.1..0.9 step 0.1 and 0.90..0.99 step 0.01; values are rounded to 2 decimals.
        Pairs with p + q = 1 (nothing reconstructible) are skipped.
    baseline : (float, float)
        Reference pair for the accuracy criterion.
    n_transactions : int, optional
        When given, each choice also reports the corrected relative error at min_support.

    Returns
    -------
    list of ParameterChoice
        Sorted by p, then q.

    Notes
    -----
    The paper does not say at which support Eq. 6 is evaluated
    (docs/emask.md#clarification-at-which-support-eq-6-is-evaluated); evaluating it at the mining
    support reproduces Table 1 exactly for s0 = 0.01: (0.3, 0.99), (0.4, 0.98), (0.5, 0.97),
    (0.6, 0.96). For s0 = 0.005 it yields all ten pairs of Table 2 **plus (0.8, 0.96), (0.8, 0.97)
    and (0.9, 0.96)**, which Table 2 does not list (most likely an omission: (0.8, 0.96) is
    evaluated in the paper's Table 6 anyway).
    """
    P._check_support(s0, open_interval=True, name="s0")
    ms = float(min_support)
    if not 0.0 < ms <= 1.0:
        raise InvalidParameter("min_support must lie in (0, 1]")
    if n_transactions is not None and not n_transactions > 0:
        raise InvalidParameter("n_transactions must be positive")
    ref = float(P.err6(baseline[0], baseline[1], ms))
    out: list[ParameterChoice] = []
    for p in _grid(p_grid, _DEFAULT_P, "p_grid"):
        for q in _grid(q_grid, _DEFAULT_Q, "q_grid"):
            if not q > q_min or abs(p + q - 1.0) < DELTA_MIN:
                continue
            bp = P.basic_privacy(p, q, s0=s0)
            e6 = float(P.err6(p, q, ms))
            # relative tolerance: the baseline itself (and ties) must pass despite rounding
            if bp < privacy_floor or e6 > ref * (1.0 + 1e-12):
                continue
            rel = float(P.relative_error(p, q, ms, n_transactions)) if n_transactions is not None else None
            out.append(ParameterChoice(p, q, bp, e6, rel, P.ldp_epsilon(p, q)))
    return out


# ---------------------------------------------------------------------------- s0 estimation
def _rows_nnz(block: Any) -> np.ndarray:
    return np.array([block.shape[0], block.indptr[-1] - block.indptr[0]], dtype=np.int64)


def _sampled_rows_nnz(block: Any, start: int, fraction: float, key: Any) -> np.ndarray:
    """Rows and ones of a keyed Bernoulli(fraction) row sample of one block.

    Uniforms are drawn per global block of ``BLOCK_ROWS`` rows, so the sample does not depend
    on the partitioning.
    """
    from ..random import BLOCK_ROWS, Tag

    n = block.shape[0]
    lengths = np.diff(block.indptr).astype(np.int64)
    keep = np.zeros(n, dtype=bool)
    r = 0
    while r < n:
        g = start + r
        b, off = divmod(g, BLOCK_ROWS)
        take = min(n - r, BLOCK_ROWS - off)
        u = key.generator(Tag.S0_SAMPLE, b).random(BLOCK_ROWS)[off : off + take]
        keep[r : r + take] = u < fraction
        r += take
    return np.array([keep.sum(), lengths[keep].sum()], dtype=np.int64)


def estimate_s0(tx: Any, *, sample_fraction: float | None = None, key: Any = None) -> float:
    """Average item support s0 = mean transaction length / number of items.

    This is the mean support fraction over **all** items of the vocabulary (Σ_i s_i / d =
    nnz / (N d)), the definition under which the paper's T10.I4.D1M.N1K has s0 = 10 / 1000 =
    0.01 (docs/emask.md#basic-privacy); items that never occur count with support 0.

    Parameters
    ----------
    tx : TransactionArray
    sample_fraction : float, optional
        Estimate from a keyed Bernoulli sample of rows with this inclusion probability in (0, 1]
        (reproducible for a fixed ``key``; independent of the partitioning).
    key : Key, int or bytes, optional
        Random key for the sample (a fresh secret key when None).

    Raises
    ------
    InvalidParameter
        When the data (or the sample) has no transactions or no items.
    """
    import dask

    from ..graph import tree_reduce
    from ..progress import compute
    from ..random import as_key
    from ._privacy_kernels import sum_arrays

    if tx.n_items == 0:
        raise InvalidParameter("the vocabulary is empty: s0 is undefined")
    parts_in = tx.blocks.to_delayed().ravel().tolist()
    if sample_fraction is None:
        parts = [dask.delayed(_rows_nnz, pure=True)(b) for b in parts_in]
    else:
        f = float(sample_fraction)
        if not 0.0 < f <= 1.0:
            raise InvalidParameter("sample_fraction must lie in (0, 1]")
        k = as_key(key)
        starts = np.r_[0, np.cumsum(tx.partition_rows)][:-1].tolist()
        parts = [dask.delayed(_sampled_rows_nnz, pure=True)(b, s, f, k) for b, s in zip(parts_in, starts)]
    (tot,) = compute(tree_reduce(parts, sum_arrays), progress=False)
    n_rows, nnz = int(tot[0]), int(tot[1])
    if n_rows == 0:
        raise InvalidParameter("no transactions (or an empty sample): s0 is undefined")
    return nnz / (n_rows * tx.n_items)

"""Accuracy of reconstructed frequent itemsets against the true ones (docs/emask.md#accuracy-metrics,
docs/emask.md#correction-the-support-error-is-averaged-over-the-correctly-found-itemsets).

With F the true frequent itemsets (mined from T) and R the reconstructed ones (mined from D):

* support error ρ = 100 · mean over f ∈ F ∩ R of |rec_sup_f − act_sup_f| / act_sup_f
  (normalised by |F ∩ R|, the itemsets correctly identified as frequent; 0 when F ∩ R = ∅);
* identity errors σ⁺ = 100 |R ∖ F| / |F| (false positives), σ⁻ = 100 |F ∖ R| / |F| (false
  negatives).

Inputs are ``{itemset: support}`` mappings (itemsets as frozensets or any iterable of labels;
supports as counts or fractions, the same unit on both sides) or objects with ``.as_dict()``
such as :class:`~ppdm_dask.mining.results.FrequentItemsets`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InvalidParameter

__all__ = ["support_error", "identity_errors", "itemset_accuracy"]

_METRICS = ("rho", "sigma_plus", "sigma_minus")


def _as_map(x: Any, name: str) -> dict[frozenset, float]:
    if hasattr(x, "as_dict"):
        x = x.as_dict()
    if not isinstance(x, Mapping):
        raise InvalidParameter(f"{name} must be a mapping {{itemset: support}} or have .as_dict()")
    out: dict[frozenset, float] = {}
    for k, v in x.items():
        key = k if isinstance(k, frozenset) else frozenset([k] if isinstance(k, (str, bytes)) else k)
        out[key] = float(v)
    return out


def _rho(f: Mapping[frozenset, float], r: Mapping[frozenset, float]) -> float:
    common = f.keys() & r.keys()
    if not common:
        return 0.0  # no correctly identified itemset, nothing to compare (the paper's Table 5, level 8)
    act = np.array([f[k] for k in common])
    if np.any(act <= 0):
        raise InvalidParameter("true supports of frequent itemsets must be positive")
    rec = np.array([r[k] for k in common])
    return float(100.0 * np.mean(np.abs(rec - act) / act))


def _sigmas(f: Mapping[frozenset, Any], r: Mapping[frozenset, Any]) -> tuple[float, float]:
    n_f = len(f)
    fp = len(r.keys() - f.keys())
    fn = len(f.keys() - r.keys())
    if n_f == 0:
        # relative to an empty true set: no false negatives; false positives are unbounded
        return (math.inf if fp else 0.0), 0.0
    return 100.0 * fp / n_f, 100.0 * fn / n_f


def support_error(true: Any, reconstructed: Any) -> float:
    """Support error ρ in percent over the itemsets in both F and R (0 when there are none)."""
    return _rho(_as_map(true, "true"), _as_map(reconstructed, "reconstructed"))


def identity_errors(true: Any, reconstructed: Any) -> tuple[float, float]:
    """Identity errors ``(σ⁺, σ⁻)`` in percent of |F|.

    When F is empty, σ⁻ = 0 and σ⁺ = 0 if R is empty too, else ``inf``.
    """
    return _sigmas(_as_map(true, "true"), _as_map(reconstructed, "reconstructed"))


def _summary(f: dict[frozenset, float], r: dict[frozenset, float]) -> dict[str, Any]:
    sp, sm = _sigmas(f, r)
    return {
        "rho": _rho(f, r),
        "sigma_plus": sp,
        "sigma_minus": sm,
        "n_true": len(f),
        "n_reconstructed": len(r),
        "n_common": len(f.keys() & r.keys()),
    }


def itemset_accuracy(true: Any, reconstructed: Any) -> dict[str, Any]:
    """ρ, σ⁺, σ⁻ overall and per itemset length, with set sizes and across-level variances.

    Returns
    -------
    dict
        ``rho``, ``sigma_plus``, ``sigma_minus`` (percent), ``n_true`` (|F|),
        ``n_reconstructed`` (|R|), ``n_common`` (|F ∩ R|) for all itemsets;
        ``levels``: ``{length: same keys}`` for every length present in F or R (ascending);
        ``variance``: ``{metric: population variance across levels}`` of ρ, σ⁺, σ⁻, over the
        levels where the metric is finite (NaN when there is none).
    """
    f = _as_map(true, "true")
    r = _as_map(reconstructed, "reconstructed")
    out = _summary(f, r)
    lengths = sorted({len(k) for k in f} | {len(k) for k in r})
    levels = {
        n: _summary({k: v for k, v in f.items() if len(k) == n}, {k: v for k, v in r.items() if len(k) == n}) for n in lengths
    }
    out["levels"] = levels
    variance = {}
    for m in _METRICS:
        vals = np.array([lv[m] for lv in levels.values()], dtype=np.float64)
        vals = vals[np.isfinite(vals)]
        variance[m] = float(np.var(vals)) if vals.size else math.nan
    out["variance"] = variance
    return out

"""Kernels of the report figures of condensed releases (docs/condensation.md#report-figures):
pure numpy / scipy, no dask."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import cKDTree

__all__ = [
    "as_matrix",
    "moments",
    "covariance",
    "compatibility",
    "nearest",
    "merge_nearest",
    "nearest_class",
    "level_table",
    "size_level_points",
]


def as_matrix(part: Any) -> np.ndarray:
    """One partition (pandas DataFrame or ndarray) as a float64 2-D array."""
    if hasattr(part, "to_numpy"):
        return part.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.asarray(part, dtype=np.float64)


def moments(part: Any) -> tuple[int, np.ndarray, np.ndarray]:
    """``(n, Σx, Σxxᵀ)`` of one partition (added up over partitions)."""
    A = as_matrix(part)
    return int(A.shape[0]), A.sum(axis=0), A.T @ A


def covariance(n: int, s: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Population covariance ``Σxxᵀ/n - x̄x̄ᵀ`` from the summed moments."""
    mean = np.asarray(s, np.float64) / max(n, 1)
    return np.asarray(S, np.float64) / max(n, 1) - np.outer(mean, mean)


def compatibility(cov_a: np.ndarray, cov_b: np.ndarray) -> float:
    """Covariance compatibility μ: Pearson correlation of the upper-triangle entries (diagonal
    included) of two covariance matrices (NaN when either set of entries is constant)."""
    iu = np.triu_indices(np.asarray(cov_a).shape[0])
    a, b = np.asarray(cov_a)[iu], np.asarray(cov_b)[iu]
    if a.size < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def nearest(
    part: Any, features: list[int], label: int, start: int, test: np.ndarray, exclude: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest record of one training partition (Euclidean on ``features``) to every test row:
    ``(squared distance, its label value, its global row)``; ``exclude`` global rows (sorted)
    are left out (the test records themselves). inf / -1 where the partition has no record."""
    A = as_matrix(part)
    rows = np.arange(start, start + A.shape[0], dtype=np.int64)
    if exclude is not None and exclude.size:
        keep = ~np.isin(rows, exclude)
        A, rows = A[keep], rows[keep]
    nt = np.asarray(test).shape[0]
    if not A.shape[0] or not nt:
        return np.full(nt, np.inf), np.full(nt, np.nan), np.full(nt, -1, np.int64)
    dist, idx = cKDTree(A[:, features]).query(np.asarray(test, np.float64), k=1)
    return np.asarray(dist, np.float64) ** 2, A[idx, label], rows[idx]


def merge_nearest(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Label of the nearest record over all partitions (ties: the smallest global row)."""
    d = np.stack([p[0] for p in parts])
    y = np.stack([p[1] for p in parts])
    g = np.stack([np.where(p[2] >= 0, p[2], np.iinfo(np.int64).max) for p in parts])
    best = np.lexsort((g, d), axis=0)[0]
    return y[best, np.arange(d.shape[1])]


def nearest_class(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each (pseudo-data) label value mapped to the nearest class value (ties: the smaller)."""
    classes = np.sort(np.asarray(classes, np.float64))
    v = np.asarray(values, np.float64)
    hi = np.clip(np.searchsorted(classes, v), 0, classes.size - 1)
    lo = np.clip(hi - 1, 0, classes.size - 1)
    return np.where(np.abs(v - classes[lo]) <= np.abs(classes[hi] - v), classes[lo], classes[hi])


def level_table(n: np.ndarray, p_max: np.ndarray) -> list[list[Any]]:
    """Per largest privacy level: ``[level, groups, records, smallest group, mean group size]``."""
    n, p_max = np.asarray(n, np.int64), np.asarray(p_max, np.int64)
    rows = []
    for t in np.unique(p_max):
        sel = n[p_max == t]
        rows.append([int(t), int(sel.size), int(sel.sum()), int(sel.min()), float(sel.mean())])
    return rows


def size_level_points(n: np.ndarray, p_max: np.ndarray, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray, bool]:
    """The distinct ``(p_max, n)`` pairs of the groups (x, y); beyond ``max_points`` only each
    level's smallest and largest group (``True`` when reduced so)."""
    pairs = (
        np.unique(np.column_stack([np.asarray(p_max, np.int64), np.asarray(n, np.int64)]), axis=0)
        if len(n)
        else np.zeros((0, 2), np.int64)
    )
    if pairs.shape[0] <= max_points:
        return pairs[:, 0], pairs[:, 1], False
    levels = np.unique(pairs[:, 0])
    lo = np.array([pairs[pairs[:, 0] == t, 1].min() for t in levels])
    hi = np.array([pairs[pairs[:, 0] == t, 1].max() for t in levels])
    return np.concatenate([levels, levels]), np.concatenate([lo, hi]), True

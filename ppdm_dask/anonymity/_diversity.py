"""Vectorised l-diversity tests on per-class sensitive-value counts (pure numpy kernels).

Every anonymiser (lattice, Mondrian, clustering, access control) decides "is this class l-diverse"
on a matrix of sensitive-value counts, one row per class; the independent checker
(:func:`ppdm_dask.anonymity.check_l_diversity`) recounts from the released table instead.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidParameter

KINDS = ("distinct", "entropy", "recursive")


def validate_diversity(l: float | None, kind: str = "distinct", c: float | None = None) -> tuple[float | None, str, float | None]:
    """Check (l, kind, c) and return them normalised; ``l=None`` means no l-diversity."""
    if kind not in KINDS:
        raise InvalidParameter(f"l-diversity kind must be one of {KINDS}, got {kind!r}")
    if l is None:
        return None, kind, None
    if isinstance(l, bool) or not isinstance(l, (int, float, np.integer, np.floating)) or not l >= 1:
        raise InvalidParameter(f"l must be a number >= 1, got {l!r}")
    if kind != "entropy" and float(l) != int(l):
        raise InvalidParameter(f"l must be an integer for {kind} l-diversity, got {l!r}")
    if kind == "recursive":
        if c is None or isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0:
            raise InvalidParameter(f"recursive (c, l)-diversity needs c > 0, got c={c!r}", cli="--c > 0")
        c = float(c)
    elif c is not None:
        raise InvalidParameter(f"c is only used with kind='recursive' (got kind={kind!r})", cli="--c only with --l-kind recursive")
    return (float(l) if kind == "entropy" else int(l)), kind, c


def diverse_mask(counts: np.ndarray, l: float | None, kind: str = "distinct", c: float | None = None) -> np.ndarray:
    """Which classes are l-diverse.

    Parameters
    ----------
    counts : ndarray, shape (n_classes, n_values)
        Sensitive-value counts per class (non-negative integers).
    l : number or None
        ``None`` (or 1) accepts every class.
    kind : {"distinct", "entropy", "recursive"}
        distinct: at least l values with a non-zero count; entropy: -sum f ln f >= ln l
        (1e-12 tolerance); recursive: r_1 < c (r_l + ... + r_m), r_i the i-th largest count.
    c : float, optional
        Needed for ``recursive``.

    Returns
    -------
    ndarray of bool, shape (n_classes,)
    """
    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise InvalidParameter("counts must be a 2-d array (classes x sensitive values)")
    if l is None or l <= 1:
        return np.ones(counts.shape[0], dtype=bool)
    if kind == "distinct":
        return (counts > 0).sum(axis=1) >= l
    if kind == "entropy":
        tot = counts.sum(axis=1, keepdims=True).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(counts > 0, counts / np.where(tot > 0, tot, 1.0), 0.0)
            h = -(np.where(f > 0, f * np.log(np.where(f > 0, f, 1.0)), 0.0)).sum(axis=1)
        return (h >= math.log(l) - 1e-12) & (tot[:, 0] > 0)
    if kind == "recursive":
        l = int(l)
        if counts.shape[1] < l:
            return np.zeros(counts.shape[0], dtype=bool)
        s = -np.sort(-counts, axis=1)
        return s[:, 0] < c * s[:, l - 1:].sum(axis=1)
    raise InvalidParameter(f"l-diversity kind must be one of {KINDS}, got {kind!r}")

"""Attacks on sketch releases, as an adversary runs them (docs/sketches.md#what-an-attacker-can-still-learn).

Two releases of the same records made with one key file (e.g. δ = 0.3 and δ = 0.5):

* :func:`release_linkage` — do the rows at one position of both files belong to the same
  record? Measured with :func:`ppdm_dask.release.attacks.position_linkage` on two
  similarities of the rows: the |cosine| of the two sketches over their common components
  (1 for one record sketched with the same random vectors: the generator is prefix-stable) and
  the agreement of the variances the numbers of components reveal (``m·δ`` is V rounded down to
  a multiple of δ). 1.0 is no link.
* :func:`component_correlation` — do the two releases share their random vectors? The
  correlation, over records, of the first component of each record's sketch in the two
  releases (in the input's order, for the owner): 1 with one generator, about 0 with unrelated
  ones.

The generator's seed is public (sketches are decoded with it): what matters is that the seeds
of two releases are unrelated, which the per-release streams give (the seed derives from the
key and the release's identity).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sketch_rows", "release_linkage", "component_correlation"]


def sketch_rows(url: str, *, storage_options: Any = None) -> tuple[list[np.ndarray], np.ndarray, dict[str, Any]]:
    """``(sketches, m, parameters)`` of the release at ``url`` in file order: each published
    row's m values, its number of components and the release's public parameters."""
    from ..release import Release
    from .sketches import read_sketches

    values, m = read_sketches(url, storage_options=storage_options).compute(progress=False)
    params = Release.load_manifest(url, storage_options=storage_options)[2]["release"]["parameters"]
    return [values[i, : m[i]] for i in range(m.size)], np.asarray(m, np.int64), dict(params)


def _prefix_cosine(a: tuple[np.ndarray, int, float], b: tuple[np.ndarray, int, float]) -> float:
    k = min(a[1], b[1])
    x, y = a[0][:k], b[0][:k]
    den = float(np.linalg.norm(x) * np.linalg.norm(y))
    return abs(float(x @ y)) / den if den else 0.0


def _variance_agreement(a: tuple[np.ndarray, int, float], b: tuple[np.ndarray, int, float]) -> float:
    # m = floor(V/δ) (below m_max): m·δ <= V < (m+1)·δ, so one record's two rows agree within max δ
    return 1.0 / (1.0 + abs(a[1] * a[2] - b[1] * b[2]))


def release_linkage(first: str, second: str, *, storage_options: Any = None) -> dict[str, dict[str, float]]:
    """Position linkage of two written δ-anonymous sketch releases (module docstring).

    Returns
    -------
    dict
        ``{"cosine": {...}, "variance": {...}}``, each the ``same`` / ``random`` / ``ratio`` of
        :func:`~ppdm_dask.release.attacks.position_linkage`.
    """
    from ..release.attacks import position_linkage

    rows = []
    for url in (first, second):
        sketches, m, params = sketch_rows(url, storage_options=storage_options)
        delta = float(params.get("delta", 1.0))
        rows.append([(s, int(k), delta) for s, k in zip(sketches, m)])
    return {
        "cosine": position_linkage(rows[0], rows[1], _prefix_cosine),
        "variance": position_linkage(rows[0], rows[1], _variance_agreement),
    }


def component_correlation(first: Any, second: Any, **compute_kwargs: Any) -> float:
    """Pearson correlation, over the records both publish, of the first sketch component of
    each record in two SketchArrays of the same records in the same (input) order."""
    compute_kwargs.setdefault("progress", False)
    v1, m1 = first.compute(**compute_kwargs)
    v2, m2 = second.compute(**compute_kwargs)
    both = (m1 > 0) & (m2 > 0)
    if both.sum() < 2:
        return 0.0
    a, b = v1[both, 0], v2[both, 0]
    if a.std() == 0 or b.std() == 0:
        return 1.0 if np.array_equal(a, b) else 0.0
    return float(np.corrcoef(a, b)[0, 1])

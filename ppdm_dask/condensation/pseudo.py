"""Pseudo-data from condensed groups (stream tag 2; docs/condensation.md#pseudo-data).

Each group's points are drawn independently along the eigenvectors of its covariance:
``u_k ~ Uniform(−a_k/2, a_k/2)`` with ``a_k = sqrt(12 λ_k)`` (so ``Var u_k = λ_k``;
docs/condensation.md#correction-standard-deviation-of-a-uniform-distribution)
and ``y = μ + Σ_k u_k e_k``. Group g draws from the stream ``(Tag.PSEUDO_DATA, group_id)``, so a
group's points do not depend on which other groups are generated in the same call: the Dask
version packs groups into blocks and gives exactly the same array whatever the block size.

Eigen-decompositions are canonicalised (docs/condensation.md#clarification-canonical-eigenvectors): eigenvalues clipped at 0, each eigenvector's
largest-magnitude component made positive, so the output is a function of the statistics and
the key only.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataFormatError, InvalidParameter
from ..random import KeyLike, Tag, as_key
from .groups import GroupTable

if TYPE_CHECKING:  # dask is needed only by generate_dask
    import dask.array

__all__ = ["canonical_eigh", "pseudo_points", "generate", "generate_dask"]


def canonical_eigh(C: Any) -> tuple[np.ndarray, np.ndarray]:
    """Canonical eigen-decomposition of a symmetric matrix (or a stack of them).

    Parameters
    ----------
    C : array (..., d, d)
        Symmetric matrices (only the lower triangle is read, as by ``numpy.linalg.eigh``).

    Returns
    -------
    lam : ndarray (..., d)
        Eigenvalues in ascending order, clipped at 0.
    E : ndarray (..., d, d)
        Eigenvectors as columns; each column's largest-|.| component is positive (the first
        such component on ties) (docs/condensation.md#clarification-canonical-eigenvectors).
    """
    C = np.asarray(C, dtype=np.float64)
    if C.ndim < 2 or C.shape[-1] != C.shape[-2]:
        raise InvalidParameter(f"expected square matrices (..., d, d), got shape {C.shape}")
    if not np.isfinite(C).all():
        raise DataFormatError("covariance matrix has NaN or infinite entries")
    lam, E = np.linalg.eigh(C)
    lam = np.maximum(lam, 0.0)
    # argmax returns the first maximum: the tie rule of the spec
    top = np.argmax(np.abs(E), axis=-2)[..., None, :]  # (..., 1, d)
    sign = np.where(np.take_along_axis(E, top, axis=-2) < 0, -1.0, 1.0)
    return lam, E * sign


def _draw(
    mean: np.ndarray, width: np.ndarray, E: np.ndarray, zero_var: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """n points of one group from its eigenvectors and widths ``a_k = sqrt(12 λ_k)`` (the single
    code path of :func:`pseudo_points` and :func:`generate`)."""
    u = (rng.random((n, width.shape[0])) - 0.5) * width  # U(-a/2, a/2); much cheaper than uniform(low, high)
    y = mean + u @ E.T
    if zero_var.any():
        # a zero-variance coordinate is the mean exactly; u @ E.T could add round-off there
        y[:, zero_var] = mean[zero_var]
    return y


def pseudo_points(mean: Any, cov: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` pseudo-points (n, d) of a group with centroid ``mean`` and covariance ``cov``.

    ``u_k ~ U(−a_k/2, a_k/2)``, ``a_k = sqrt(12 λ_k)`` independently, ``y = μ + Σ_k u_k e_k``,
    with ``λ, E = canonical_eigh(cov)``; a row of ``u`` is drawn per point (d uniforms in
    ascending eigenvalue order). Constant coordinates (zero variance) equal the mean exactly.
    """
    mean = np.asarray(mean, dtype=np.float64).reshape(-1)
    cov = np.asarray(cov, dtype=np.float64)
    d = mean.shape[0]
    if cov.shape != (d, d):
        raise InvalidParameter(f"covariance must have shape ({d}, {d}), got {cov.shape}")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise InvalidParameter(f"n must be a non-negative integer, got {n!r}")
    lam, E = canonical_eigh(cov)
    return _draw(mean, np.sqrt(12.0 * lam), E, np.diagonal(cov) == 0.0, int(n), rng)


def _check_table(groups: Any) -> GroupTable:
    if not isinstance(groups, GroupTable):
        raise InvalidParameter(f"expected a GroupTable, got {type(groups).__name__}")
    return groups


def generate(groups: GroupTable, *, key: KeyLike = None, group_ids: Any = None, redraw: Any = None) -> np.ndarray:
    """Pseudo-data of every group, stacked in group order (docs/condensation.md#pseudo-data).

    Parameters
    ----------
    groups : GroupTable
    key : Key, int or bytes, optional
        Secret key (``None``: a fresh one, i.e. not reproducible).
    group_ids : int array (G,), optional
        Stream id of each group (default ``arange(G)``): group g draws from
        ``key.generator(Tag.PSEUDO_DATA, group_ids[g])``, so its points do not depend on the
        other groups of the call. Pass the global ids when generating a subset.
    redraw : mapping {row: attempt}, optional
        Rows of the output (in this call's numbering) drawn again: row ``r``, the ``j``-th point
        of group g, is replaced by one point from the stream ``(Tag.PSEUDO_DATA, group_ids[g],
        attempt, j)`` (docs/condensation.md#synthetic-data-rules: a pseudo-record that copies a
        unique original record is drawn again).

    Returns
    -------
    ndarray (Σ n, d) float64
    """
    groups = _check_table(groups)
    key = as_key(key)
    G = len(groups)
    if group_ids is None:
        ids = np.arange(G, dtype=np.int64)
    else:
        ids = np.asarray(group_ids)
        if ids.shape != (G,) or (G and ids.dtype.kind not in "iu"):
            raise InvalidParameter(f"group_ids must be {G} integers, got shape {ids.shape} dtype {ids.dtype}")
        ids = ids.astype(np.int64)
        if G and ids.min() < 0:
            raise InvalidParameter("group_ids must be non-negative")
    out = np.empty((int(groups.n.sum()), groups.d))
    if G == 0:
        return out
    lam, E = canonical_eigh(groups.covariance)  # batched eigh equals per-matrix eigh bit for bit
    width = np.sqrt(12.0 * lam)
    zero_var = np.diagonal(groups.m2, axis1=1, axis2=2) == 0.0
    start = 0
    for g in range(G):
        n = int(groups.n[g])
        rng = key.generator(Tag.PSEUDO_DATA, int(ids[g]))
        out[start : start + n] = _draw(groups.mean[g], width[g], E[g], zero_var[g], n, rng)
        start += n
    if redraw:
        first = np.concatenate([[0], np.cumsum(groups.n)])
        for r, attempt in sorted((int(r), int(a)) for r, a in dict(redraw).items()):
            if not 0 <= r < out.shape[0] or attempt < 1:
                raise InvalidParameter(f"redraw needs rows in 0..{out.shape[0] - 1} and attempts >= 1, got {r}: {attempt}")
            g = int(np.searchsorted(first, r, side="right")) - 1
            rng = key.generator(Tag.PSEUDO_DATA, int(ids[g]), attempt, r - int(first[g]))
            out[r] = _draw(groups.mean[g], width[g], E[g], zero_var[g], 1, rng)[0]
    return out


def _block_bounds(n: np.ndarray, rows_per_block: int) -> list[tuple[int, int]]:
    """Consecutive group ranges of about ``rows_per_block`` rows; a group is never split."""
    bounds, lo, rows = [], 0, 0
    for g, size in enumerate(n.tolist()):
        if rows and rows + size > rows_per_block:
            bounds.append((lo, g))
            lo, rows = g, 0
        rows += size
    if lo < len(n):
        bounds.append((lo, len(n)))
    return bounds


def _generate_block(groups: GroupTable, key: Any, lo: int, redraw: dict[int, int] | None = None) -> np.ndarray:
    return generate(groups, key=key, group_ids=np.arange(lo, lo + len(groups), dtype=np.int64), redraw=redraw)


def generate_dask(
    groups: GroupTable, *, key: KeyLike = None, rows_per_block: int = 100_000, redraw: Any = None
) -> dask.array.Array:
    """Pseudo-data of all groups as a (Σ n, d) float64 dask array (MAP per block of groups).

    Consecutive groups are packed into blocks of about ``rows_per_block`` rows (a group is never
    split; a group larger than that is a block of its own); each block is one task calling
    :func:`generate` on its groups with their global ids, so the result equals
    ``generate(groups, key=key)`` exactly, whatever ``rows_per_block``. ``key=None`` draws one
    fresh key for the whole array. ``redraw`` maps global rows to attempts (see :func:`generate`).
    """
    import dask
    import dask.array as da
    from dask.base import tokenize

    groups = _check_table(groups)
    if isinstance(rows_per_block, bool) or not isinstance(rows_per_block, numbers.Integral) or rows_per_block < 1:
        raise InvalidParameter(f"rows_per_block must be a positive integer, got {rows_per_block!r}")
    key = as_key(key)
    d = groups.d
    if len(groups) == 0:
        return da.from_array(np.empty((0, d)), chunks=((0,), (d,)))
    # graph names must not reveal the key: use its one-way digest, never the key itself
    redraw = {int(r): int(a) for r, a in dict(redraw or {}).items()}
    token = tokenize(key.digest("pseudo-data"), groups.n, groups.mean, groups.m2, int(rows_per_block), sorted(redraw.items()))
    first = np.concatenate([[0], np.cumsum(groups.n)])
    blocks = []
    # each block's groups travel inside its task (d^2 floats per group: about 1 GB for 1.1 M
    # groups of 10 attributes), so a worker receives only the groups of the blocks it runs;
    # scattered up front they did not fit in 1 GB workers
    for i, (lo, hi) in enumerate(_block_bounds(groups.n, int(rows_per_block))):
        rows = int(groups.n[lo:hi].sum())
        a, b = int(first[lo]), int(first[hi])
        mine = {r - a: t for r, t in redraw.items() if a <= r < b} or None
        task = dask.delayed(_generate_block)(
            groups.take(slice(lo, hi)), key, lo, mine, dask_key_name=f"pseudo-data-task-{token}-{i}"
        )
        blocks.append(
            da.from_delayed(task, shape=(rows, d), dtype=np.float64, meta=np.empty((0, d)), name=f"pseudo-data-{token}-{i}")
        )
    return blocks[0] if len(blocks) == 1 else da.concatenate(blocks, axis=0)

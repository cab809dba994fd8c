"""Spatial partitioning for partition-then-merge condensation (step 1 of
docs/condensation.md#partition-then-merge-on-dask).

Groups cannot span partitions, so rows that are close in attribute space must land in the same
partition. A k-d tree is cut on a sample (median-like quantile splits along the widest
dimension, so cells hold about the same number of rows), every row is routed to its cell, and an
all-to-all graph moves the rows: one bucketing task per input block, one gathering task per cell.
Global row numbers travel with the rows so the private group membership can be checked against
the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KDCells", "kd_cells", "route", "bucket_block", "gather_cell"]


@dataclass(frozen=True)
class KDCells:
    """A k-d tree over attribute space with ``n_cells`` leaves.

    Internal node ``i`` sends rows with ``X[:, dim[i]] <= threshold[i]`` to ``left[i]`` and the
    others to ``right[i]``; children ``< 0`` are leaves, cell ``-child - 1``.
    """

    dim: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    n_cells: int


def kd_cells(sample: np.ndarray, n_cells: int) -> KDCells:
    """Cut ``sample`` (s, d) into ``n_cells`` cells of about equal sample counts.

    Each node splits its sample along the dimension of largest spread at the quantile that gives
    the left child ``floor(c/2)`` of the node's ``c`` cells, so any ``n_cells`` works (not only
    powers of two). Deterministic for a given sample.
    """
    sample = np.asarray(sample, dtype=np.float64)
    n_cells = max(1, int(n_cells))
    dims: list[int] = []
    thr: list[float] = []
    left: list[int] = []
    right: list[int] = []
    next_cell = [0]

    def build(rows: np.ndarray, cells: int) -> int:
        if cells == 1 or rows.shape[0] < 2:
            leaf = next_cell[0]
            next_cell[0] += cells  # a cell that cannot be split further absorbs the cells it was given
            return -leaf - 1
        spread = rows.max(axis=0) - rows.min(axis=0)
        d = int(np.argmax(spread))
        c_left = cells // 2
        t = float(np.quantile(rows[:, d], c_left / cells, method="inverted_cdf"))
        mask = rows[:, d] <= t
        if mask.all() or not mask.any():  # ties at the cut: no progress possible along d
            leaf = next_cell[0]
            next_cell[0] += cells
            return -leaf - 1
        node = len(dims)
        dims.append(d)
        thr.append(t)
        left.append(0)
        right.append(0)
        left[node] = build(rows[mask], c_left)
        right[node] = build(rows[~mask], cells - c_left)
        return node

    root = build(sample, n_cells)
    if root < 0:  # a single leaf: encode as a node that sends everything left
        return KDCells(np.zeros(1, np.int64), np.array([np.inf]), np.array([root]), np.array([root]), next_cell[0])
    return KDCells(np.array(dims, np.int64), np.array(thr), np.array(left, np.int64), np.array(right, np.int64), next_cell[0])


def route(X: np.ndarray, cells: KDCells) -> np.ndarray:
    """Cell index (int64, ``0..n_cells-1``) of every row of ``X``."""
    X = np.asarray(X, dtype=np.float64)
    node = np.zeros(X.shape[0], dtype=np.int64)
    active = np.arange(X.shape[0])
    out = np.empty(X.shape[0], dtype=np.int64)
    while active.size:
        nd = node[active]
        go_left = X[active, cells.dim[nd]] <= cells.threshold[nd]
        nxt = np.where(go_left, cells.left[nd], cells.right[nd])
        leaf = nxt < 0
        out[active[leaf]] = -nxt[leaf] - 1
        node[active] = nxt
        active = active[~leaf]
    return out


def bucket_block(
    X: np.ndarray, privacy: np.ndarray, offset: int, cells: KDCells, lo: int = 0, hi: int | None = None
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """Split one input block into per-cell pieces ``(X_c, privacy_c, global_rows_c)`` for the
    cells ``lo..hi-1`` (default: every cell); rows of other cells are dropped."""
    hi = cells.n_cells if hi is None else hi
    cell = route(X, cells)
    order = np.argsort(cell, kind="stable")
    bounds = np.searchsorted(cell[order], np.arange(lo, hi + 1))
    rows = offset + order
    return tuple((X[order[a:b]], privacy[order[a:b]], rows[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))


def gather_cell(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate one cell's pieces of every input block (given in block order)."""
    if not parts:
        return np.empty((0, d)), np.empty(0, np.int64), np.empty(0, np.int64)
    return (
        np.concatenate([p[0] for p in parts]).reshape(-1, d),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )

"""Roll-up of a frequency set to one node of the generalisation lattice (pure numpy).

A lattice node is a vector of hierarchy levels, one per quasi-identifier. Rolling the frequency
set up to a node gives its equivalence classes: their sizes and, for l-diversity, their
sensitive-value counts. Records are suppressed per class (a class that is too small, not
diverse or not t-close is suppressed whole), so every figure of a node follows from these two
arrays.

t-closeness compares each class with the records that are released: once classes are
suppressed, the distribution of the rest moves, and a class that was close to the whole table
may not be close to what is left. Suppression is therefore repeated against the kept records
until no kept class fails (it only grows, so it ends; at worst with every class suppressed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._diversity import Closeness, diverse_mask

_DENSE_LIMIT = 1 << 22  # bincount over the key space when it is at most this big


@dataclass(frozen=True)
class NodeStats:
    """Equivalence-class figures of one lattice node (kept = not suppressed)."""

    node: tuple[int, ...]
    n_classes: int
    n_kept_classes: int
    suppressed: int
    sum_sq_all: int
    bound: int
    sum_sq_kept: int
    min_kept: int

    def dm(self, n_total: int) -> int:
        """Discernibility: sum of squared kept class sizes + suppressed * N."""
        return self.sum_sq_kept + self.suppressed * n_total


def class_index(codes: np.ndarray, maps: Sequence[Sequence[np.ndarray]], node: Sequence[int]) -> tuple[np.ndarray, int]:
    """Class of every frequency-set row at ``node``.

    Parameters
    ----------
    codes : ndarray (n, q) int32
        Leaf codes.
    maps : per column, per level, ``leaf code -> node code`` arrays.
    node : levels per column.

    Returns
    -------
    (inverse, n_classes)
        ``inverse[i]`` in ``0..n_classes-1``; classes numbered in ascending order of their
        generalised tuples (mixed-radix key order).
    """
    n, q = codes.shape
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for j in range(q):
        m = maps[j][node[j]]
        radix = int(m.max()) + 1 if len(m) else 1
        if space > (1 << 62) // max(radix, 1):  # key would overflow: fall back to row-wise unique
            gen = np.stack([maps[jj][node[jj]][codes[:, jj]] for jj in range(q)], axis=1)
            _, inv = np.unique(gen, axis=0, return_inverse=True)
            inv = inv.reshape(-1)
            return inv, int(inv.max()) + 1 if n else 0
        key = key * radix + m[codes[:, j]]
        space *= radix
    if space <= max(_DENSE_LIMIT, 4 * n):
        present = np.zeros(space, dtype=bool)
        present[key] = True
        rank = np.cumsum(present) - 1
        return rank[key], int(present.sum())
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.reshape(-1), len(uniq)


def node_stats(
    codes: np.ndarray,
    counts: np.ndarray,
    sensitive_codes: np.ndarray,
    n_sensitive: int,
    maps: Sequence[Sequence[np.ndarray]],
    node: Sequence[int],
    k: int,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
    closeness: Closeness | None = None,
) -> tuple[NodeStats, np.ndarray, np.ndarray]:
    """Equivalence classes of ``node`` and which of them must be suppressed.

    With ``closeness``, a kept class must be t-close to the kept records (see the module
    docstring); its ``reference`` is replaced by their counts.

    Returns
    -------
    (stats, inverse, suppressed_class_mask)
    """
    inv, nc = class_index(codes, maps, node)
    sizes = np.bincount(inv, weights=counts, minlength=nc).astype(np.int64)
    bad = sizes < k
    if (l is not None and l > 1) or closeness is not None:
        sc = np.bincount(inv * n_sensitive + sensitive_codes, weights=counts, minlength=nc * n_sensitive)
        sc = sc.reshape(nc, n_sensitive).astype(np.int64)
        bad |= ~diverse_mask(sc, l, kind, c)
        while closeness is not None and not bad.all():
            far = ~bad & ~closeness.with_reference(sc[~bad].sum(axis=0)).mask(sc)
            if not far.any():
                break
            bad |= far
    kept = sizes[~bad]
    stats = NodeStats(
        node=tuple(int(x) for x in node),
        n_classes=int(nc),
        n_kept_classes=int(kept.size),
        suppressed=int(sizes[bad].sum()),
        sum_sq_all=int((sizes * sizes).sum()),
        bound=int((sizes * np.maximum(sizes, k)).sum()),
        sum_sq_kept=int((kept * kept).sum()),
        min_kept=int(kept.min()) if kept.size else 0,
    )
    return stats, inv, bad

"""Apriori candidate generation (prefix join + subset pruning), vectorised; pure numpy."""

from __future__ import annotations

import numpy as np

__all__ = ["apriori_gen", "join_count", "rows_in", "RowIndex"]


def _pack(rows: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros(rows.shape[0], dtype=np.uint64)
    for j in range(rows.shape[1]):
        out = (out << np.uint64(bits)) | rows[:, j].astype(np.uint64)
    return out


class RowIndex:
    """Exact lookup of integer rows of a fixed width in a table, built once.

    Rows are packed into one uint64 key when they fit (bits of the table's largest id times
    the width <= 64), else compared lexicographically through a structured view.
    """

    def __init__(self, table: np.ndarray) -> None:
        table = np.asarray(table)
        self.width = table.shape[1]
        self.top = int(table.max()) if table.size else -1
        self.bits = max(1, self.top.bit_length())
        self.packed = self.bits * self.width <= 64
        keys = self._keys(table)
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]

    def _keys(self, rows: np.ndarray) -> np.ndarray:
        if self.packed:
            return _pack(rows, self.bits)
        dt = np.dtype([(f"f{j}", np.int64) for j in range(self.width)])
        return np.ascontiguousarray(rows, dtype=np.int64).view(dt).ravel()

    def find(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(index into the table, found mask)`` for each query row."""
        query = np.asarray(query)
        m = query.shape[0]
        if m == 0 or self.keys.size == 0:
            return np.zeros(m, np.int64), np.zeros(m, dtype=bool)
        # ids above the table's largest cannot match (and would not pack into ``bits``)
        in_range = (query >= 0).all(axis=1) & (query <= self.top).all(axis=1)
        q = self._keys(np.where(in_range[:, None], query, 0))
        pos = np.minimum(np.searchsorted(self.keys, q), self.keys.size - 1)
        found = in_range & (self.keys[pos] == q)
        return self.order[pos], found


def rows_in(query: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Boolean mask: which rows of ``query`` (m, w) occur as rows of ``table`` (n, w)."""
    return RowIndex(table).find(query)[1]


def join_count(frequent: np.ndarray) -> int:
    """Number of (k-1)-itemset pairs :func:`apriori_gen` joins for ``frequent`` (rows sorted, in
    lexicographic order): the arrays it builds before subset pruning, and an upper bound on the
    candidates it returns. O(n) and allocation-free beyond one boolean per row: the guard of the
    miners checks it before any candidate is built."""
    frequent = np.asarray(frequent)
    n, km1 = frequent.shape
    if n < 2:
        return 0
    if km1 == 1:
        return n * (n - 1) // 2
    same = np.all(frequent[1:, :-1] == frequent[:-1, :-1], axis=1)
    starts = np.flatnonzero(np.r_[True, ~same])
    sizes = np.diff(np.r_[starts, n]).astype(np.int64)
    return int((sizes * (sizes - 1) // 2).sum())


def apriori_gen(frequent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidates of length k from the frequent (k-1)-itemsets.

    Parameters
    ----------
    frequent : (n, k-1) int array, rows sorted ascending and in lexicographic order.

    Returns
    -------
    candidates : (m, k) int array, lexicographically sorted.
    left : (m,) index of each candidate's (k-1)-prefix in ``frequent`` (non-decreasing).

    Two (k-1)-itemsets sharing their first k-2 items join; a candidate survives only if every
    (k-1)-subset is frequent (Agrawal & Srikant 1994). No per-candidate Python loop.
    """
    n, km1 = frequent.shape
    if n < 2:
        return np.zeros((0, km1 + 1), frequent.dtype), np.zeros(0, np.int64)
    if km1 == 1:
        same = np.ones(n - 1, dtype=bool)
    else:
        same = np.all(frequent[1:, :-1] == frequent[:-1, :-1], axis=1)
    starts = np.flatnonzero(np.r_[True, ~same])
    ends = np.r_[starts[1:], n]
    end_of = np.repeat(ends, ends - starts)
    cnt = end_of - np.arange(n) - 1
    total = int(cnt.sum())
    if total == 0:
        return np.zeros((0, km1 + 1), frequent.dtype), np.zeros(0, np.int64)
    left = np.repeat(np.arange(n), cnt)
    offs = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    right = left + 1 + offs
    last_r = frequent[right, -1]
    keep = np.ones(total, dtype=bool)
    if km1 >= 2:
        top = int(frequent.max()) + 1
        bits = max(1, int(top - 1).bit_length())
        if bits * km1 <= 64:
            # subsets without position d < k-2 = (prefix without d) + last(left) + last(right);
            # their packed keys come from per-parent keys, so nothing 2-D is built per candidate
            table = np.sort(_pack(frequent, bits))
            tail = (frequent[left, -1].astype(np.uint64) << np.uint64(bits)) | last_r.astype(np.uint64)
            for d in range(km1 - 1):
                head = _pack(np.delete(frequent[:, : km1 - 1], d, axis=1), bits)
                q = (head[left] << np.uint64(2 * bits)) | tail
                idx = np.minimum(np.searchsorted(table, q), table.size - 1)
                keep &= table[idx] == q
        else:
            cands = np.concatenate([frequent[left], last_r[:, None]], axis=1)
            index = RowIndex(frequent)
            for d in range(km1 - 1):
                sub = np.delete(cands[keep], d, axis=1)
                keep[np.flatnonzero(keep)[~index.find(sub)[1]]] = False
    left = left[keep]
    cands = np.concatenate([frequent[left], last_r[keep][:, None]], axis=1)
    return cands, left

"""Apriori candidate generation (prefix join + subset pruning), vectorised; pure numpy."""

from __future__ import annotations

import numpy as np

__all__ = ["apriori_gen", "rows_in"]


def _pack(rows: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros(rows.shape[0], dtype=np.uint64)
    for j in range(rows.shape[1]):
        out = (out << np.uint64(bits)) | rows[:, j].astype(np.uint64)
    return out


def rows_in(query: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Boolean mask: which rows of ``query`` (m, w) occur as rows of ``table`` (n, w)."""
    if query.shape[0] == 0 or table.shape[0] == 0:
        return np.zeros(query.shape[0], dtype=bool)
    top = int(max(query.max(), table.max())) + 1
    bits = max(1, int(top - 1).bit_length())
    if bits * query.shape[1] <= 64:
        keys = np.sort(_pack(table, bits))
        q = _pack(query, bits)
        idx = np.minimum(np.searchsorted(keys, q), keys.size - 1)
        return keys[idx] == q
    # wide rows: lexicographic search on structured views
    dt = np.dtype([(f"f{j}", np.int64) for j in range(query.shape[1])])
    t = np.ascontiguousarray(table, dtype=np.int64).view(dt).ravel()
    q = np.ascontiguousarray(query, dtype=np.int64).view(dt).ravel()
    t = np.sort(t)
    idx = np.minimum(np.searchsorted(t, q), t.size - 1)
    return t[idx] == q


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
            for d in range(km1 - 1):
                sub = np.delete(cands[keep], d, axis=1)
                keep[np.flatnonzero(keep)[~rows_in(sub, frequent)]] = False
    left = left[keep]
    cands = np.concatenate([frequent[left], last_r[keep][:, None]], axis=1)
    return cands, left

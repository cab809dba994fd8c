"""Per-block kernels of k^m-anonymity (docs/anonymity.md#km-anonymity-of-set-valued-data); pure numpy /
numba, no dask.

Nodes of the item hierarchy are small integers: the items (column ids ``0..n_items-1``) are the
leaves, internal nodes are numbered after them, ``parent[root] == -1``. Ancestry is tested in
O(1) with Euler-tour intervals: ``a`` is an ancestor-or-self of ``b`` iff
``tin[a] <= tin[b] < tout[a]``.

Itemsets are packed into int64 *keys*: the sorted node ids ``x_1 < ... < x_s`` (``s <= m``) are
stored as ``x_i + 1`` in ``bits = 63 // m`` bit fields, left-aligned (``x_1`` in the highest
field, empty fields 0). Consequences used throughout: keys are positive, distinct itemsets give
distinct keys, and numeric key order is the lexicographic order of the id tuples with a prefix
before its extensions (trie preorder over ids). The packing is general in ``m``; it needs
``n_nodes < 2**bits - 1`` (m <= 3: about two million nodes), checked by :func:`key_bits`.

Counting has two exact engines, chosen per block by a cost model (:func:`plan_vertical`):

* an open-addressing hash table (multiplicative hashing, linear probing, interleaved key/count
  slots, grown at half load) filled by a depth-first enumeration of the admissible subsets of
  every expanded transaction: one probe per counted occurrence;
* for the few very long transactions (BMS-WebView-1: a few hundred of 59,602 produce almost all
  of the ~70M 3-subsets), a vertical depth-first search over packed row bitsets: the cost is per
  itemset with non-zero support, not per occurrence.

Both give identical counts; per-block results are sorted runs, merged (also across blocks, in
the tree reduction) by linear merges.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ..bitops import ctpop  # LLVM's population count, shared by every family's kernels
from ..errors import InvalidParameter

__all__ = [
    "key_bits",
    "pack_itemsets",
    "unpack_keys",
    "key_sizes",
    "count_block",
    "plan_vertical",
    "count_plain_block",
    "merge_counts",
    "recode_block",
    "empty_counts",
    "traversal",
    "direct_anonymization",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def key_bits(m: int, n_nodes: int) -> int:
    """Bits per node id in a packed key of itemsets of size <= ``m`` over ``n_nodes`` nodes.

    Raises
    ------
    InvalidParameter
        The ids do not fit (``n_nodes + 1 >= 2**(63 // m)``).
    """
    bits = 63 // int(m)
    if bits < 1 or n_nodes + 1 >= (1 << bits):
        raise InvalidParameter(
            f"itemsets of size m={m} over {n_nodes} hierarchy nodes cannot be packed into 64-bit keys ({bits} bits per node id)",
            python="a smaller m or a smaller hierarchy",
            fix="a smaller `m` or a smaller `hierarchy`",
        )
    return bits


def pack_itemsets(sets: np.ndarray, bits: int) -> np.ndarray:
    """Keys of the rows of ``sets`` (``(n, m)`` node ids, -1 = no item).

    The ids of a row need not be sorted; they must be distinct.
    """
    sets = np.sort(np.asarray(sets, dtype=np.int64), axis=1)
    n, m = sets.shape
    keys = np.zeros(n, dtype=np.int64)
    # padding (-1) sorts first; left-align the real ids
    sizes = (sets >= 0).sum(axis=1)
    for r in range(m):
        col_in_row = m - sizes + r  # position of the r-th real id inside the sorted row
        valid = r < sizes
        ids = sets[np.arange(n), np.minimum(col_in_row, m - 1)]
        keys |= np.where(valid, (ids + 1) << (bits * (m - 1 - r)), 0)
    return keys


def unpack_keys(keys: np.ndarray, m: int, bits: int) -> np.ndarray:
    """``(n, m)`` sorted node ids of the packed ``keys`` (-1 pads shorter itemsets)."""
    keys = np.asarray(keys, dtype=np.int64)
    mask = (1 << bits) - 1
    out = np.empty((keys.size, m), dtype=np.int64)
    for r in range(m):
        out[:, r] = ((keys >> (bits * (m - 1 - r))) & mask) - 1
    return out


def key_sizes(keys: np.ndarray, m: int, bits: int) -> np.ndarray:
    """Number of items of each packed key."""
    keys = np.asarray(keys, dtype=np.int64)
    mask = (1 << bits) - 1
    size = np.zeros(keys.size, dtype=np.int64)
    for r in range(m):
        size += ((keys >> (bits * (m - 1 - r))) & mask) != 0
    return size


def empty_counts() -> tuple[np.ndarray, np.ndarray]:
    """An empty (keys, counts) pair."""
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


# ---------------------------------------------------------------------- counting
@numba.njit(cache=True, nogil=True)
def _slot(key, shift):  # pragma: no cover - compiled
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@numba.njit(cache=True, nogil=True)
def _grow(table, log_cap):  # pragma: no cover - compiled
    # table: interleaved (key, count) slots, so a probe touches one cache line
    new_log = log_cap + 1
    cap = np.int64(1) << new_log
    mask = cap - 1
    shift = 64 - new_log
    out = np.zeros(2 * cap, dtype=np.int64)
    for i in range(table.size // 2):
        k = table[2 * i]
        if k != 0:
            j = _slot(k, shift)
            while out[2 * j] != 0:
                j = (j + 1) & mask
            out[2 * j] = k
            out[2 * j + 1] = table[2 * i + 1]
    return out, new_log


@numba.njit(cache=True, nogil=True)
def _expand(indptr, indices, r, node_map, parent, stamp, tag, e):  # pragma: no cover - compiled
    """Write exp(row r) (mapped items + all ancestors, each once) into e; return its size."""
    ne = 0
    for p in range(indptr[r], indptr[r + 1]):
        x = node_map[indices[p]]
        while x >= 0 and stamp[x] != tag:
            stamp[x] = tag
            e[ne] = x
            ne += 1
            x = parent[x]  # a stamped node has all its ancestors stamped already
    return ne


@numba.njit(cache=True, nogil=True)
def _expanded_sizes(indptr, indices, node_map, parent):  # pragma: no cover - compiled
    n_rows = indptr.size - 1
    stamp = np.full(parent.size, -1, dtype=np.int64)
    e = np.empty(parent.size, dtype=np.int64)
    out = np.empty(n_rows, dtype=np.int64)
    for r in range(n_rows):
        out[r] = _expand(indptr, indices, r, node_map, parent, stamp, r, e)
    return out


@numba.njit(cache=True, nogil=True)
def _union_growth(indptr, indices, rows, node_map, parent):  # pragma: no cover - compiled
    """|union of exp(r)| after each of ``rows`` (in that order)."""
    stamp = np.full(parent.size, -1, dtype=np.int64)
    e = np.empty(parent.size, dtype=np.int64)
    out = np.empty(rows.size, dtype=np.int64)
    n = 0
    for i in range(rows.size):
        n += _expand(indptr, indices, rows[i], node_map, parent, stamp, 0, e)
        out[i] = n
    return out


@numba.njit(cache=True, nogil=True)
def _related(x, y, tin, tout):  # pragma: no cover - compiled
    return (tin[y] <= tin[x] and tin[x] < tout[y]) or (tin[x] <= tin[y] and tin[y] < tout[x])


@numba.njit(cache=True, nogil=True)
def _count_hash(indptr, indices, rows, node_map, parent, tin, tout, m, bits, check):  # pragma: no cover
    """Counts of the admissible subsets (size 1..m) of exp(r) for ``rows``, in a hash table.

    ``check``: skip subsets holding a node together with one of its ancestors
    (docs/anonymity.md#correction-the-count-tree-skips-an-item-together-with-its-ancestor)."""
    n_nodes = parent.size
    log_cap = 10
    table = np.zeros(2 << log_cap, dtype=np.int64)
    used = 0
    stamp = np.full(n_nodes, -1, dtype=np.int64)
    e = np.empty(n_nodes, dtype=np.int64)
    idx = np.empty(m, dtype=np.int64)
    acc = np.empty(m + 1, dtype=np.int64)
    shifts = np.empty(m, dtype=np.int64)
    for d in range(m):
        shifts[d] = bits * (m - 1 - d)
    for i in range(rows.size):
        ne = _expand(indptr, indices, rows[i], node_map, parent, stamp, i, e)
        if ne == 0:
            continue
        ex = np.sort(e[:ne])
        # depth-first enumeration in increasing id order
        d = 0
        idx[0] = 0
        acc[0] = 0
        while d >= 0:
            if idx[d] >= ne:
                d -= 1
                if d >= 0:
                    idx[d] += 1
                continue
            x = ex[idx[d]]
            ok = True
            if check:
                for q in range(d):
                    if _related(x, ex[idx[q]], tin, tout):
                        ok = False
                        break
            if ok:
                key = acc[d] | ((x + 1) << shifts[d])
                shift = 64 - log_cap
                mask = (np.int64(1) << log_cap) - 1
                j = _slot(key, shift)
                while True:
                    kk = table[2 * j]
                    if kk == key:
                        table[2 * j + 1] += 1
                        break
                    if kk == 0:
                        table[2 * j] = key
                        table[2 * j + 1] = 1
                        used += 1
                        break
                    j = (j + 1) & mask
                if 2 * used > (np.int64(1) << log_cap):
                    table, log_cap = _grow(table, log_cap)
                if d + 1 < m and idx[d] + 1 < ne:
                    acc[d + 1] = key
                    idx[d + 1] = idx[d] + 1
                    d += 1
                    continue
            idx[d] += 1
    return table


@numba.njit(cache=True, nogil=True)
def _count_vertical(indptr, indices, rows, node_map, parent, tin, tout, m, bits, check):  # pragma: no cover
    """Same counts for ``rows`` by depth-first search over packed row bitsets (Eclat style):
    the cost is per itemset with non-zero support, not per occurrence, which wins for the few
    very long transactions whose subsets dominate the hash counting. Output sorted by key."""
    n_nodes = parent.size
    n_rows = rows.size
    n_words = (n_rows + 63) // 64
    stamp = np.full(n_nodes, -1, dtype=np.int64)
    pos = np.full(n_nodes, -1, dtype=np.int64)
    e = np.empty(n_nodes, dtype=np.int64)
    n_u = 0
    for i in range(n_rows):
        ne = _expand(indptr, indices, rows[i], node_map, parent, stamp, 0, e)
        for q in range(ne):
            pos[e[q]] = 0
    u = np.flatnonzero(pos == 0)  # sorted node ids of the union
    n_u = u.size
    for q in range(n_u):
        pos[u[q]] = q
    bs = np.zeros((n_u, n_words), dtype=np.uint64)
    stamp[:] = -1
    for i in range(n_rows):
        ne = _expand(indptr, indices, rows[i], node_map, parent, stamp, i, e)
        word = i >> 6
        bit = np.uint64(1) << np.uint64(i & 63)
        for q in range(ne):
            bs[pos[e[q]], word] |= bit
    cap = 1024
    out_k = np.empty(cap, dtype=np.int64)
    out_c = np.empty(cap, dtype=np.int64)
    n_out = 0
    cur = np.empty((m, n_words), dtype=np.uint64)
    idx = np.empty(m, dtype=np.int64)
    acc = np.empty(m + 1, dtype=np.int64)
    shifts = np.empty(m, dtype=np.int64)
    for d in range(m):
        shifts[d] = bits * (m - 1 - d)
    if n_u == 0:
        return out_k[:0], out_c[:0]
    d = 0
    idx[0] = 0
    acc[0] = 0
    while d >= 0:
        if idx[d] >= n_u:
            d -= 1
            if d >= 0:
                idx[d] += 1
            continue
        x = u[idx[d]]
        ok = True
        if check:
            for q in range(d):
                if _related(x, u[idx[q]], tin, tout):
                    ok = False
                    break
        if ok:
            c = np.uint64(0)
            row = bs[idx[d]]
            if d == 0:
                for w in range(n_words):
                    cur[0, w] = row[w]
                    c += ctpop(row[w])
            else:
                for w in range(n_words):
                    v = cur[d - 1, w] & row[w]
                    cur[d, w] = v
                    c += ctpop(v)
            if c > 0:
                key = acc[d] | ((x + 1) << shifts[d])
                if n_out == cap:
                    cap *= 2
                    nk = np.empty(cap, dtype=np.int64)
                    nc = np.empty(cap, dtype=np.int64)
                    nk[:n_out] = out_k[:n_out]
                    nc[:n_out] = out_c[:n_out]
                    out_k = nk
                    out_c = nc
                out_k[n_out] = key
                out_c[n_out] = np.int64(c)
                n_out += 1
                if d + 1 < m and idx[d] + 1 < n_u:
                    acc[d + 1] = key
                    idx[d + 1] = idx[d] + 1
                    d += 1
                    continue
        idx[d] += 1
    return out_k[:n_out].copy(), out_c[:n_out].copy()


@numba.njit(cache=True, nogil=True)
def _merge2(k1, c1, k2, c2):  # pragma: no cover - compiled
    """Merge two sorted unique key runs, adding the counts of equal keys."""
    n1, n2 = k1.size, k2.size
    ok = np.empty(n1 + n2, dtype=np.int64)
    oc = np.empty(n1 + n2, dtype=np.int64)
    i = 0
    j = 0
    n = 0
    while i < n1 and j < n2:
        a = k1[i]
        b = k2[j]
        if a < b:
            ok[n] = a
            oc[n] = c1[i]
            i += 1
        elif b < a:
            ok[n] = b
            oc[n] = c2[j]
            j += 1
        else:
            ok[n] = a
            oc[n] = c1[i] + c2[j]
            i += 1
            j += 1
        n += 1
    while i < n1:
        ok[n] = k1[i]
        oc[n] = c1[i]
        i += 1
        n += 1
    while j < n2:
        ok[n] = k2[j]
        oc[n] = c2[j]
        j += 1
        n += 1
    return ok[:n].copy(), oc[:n].copy()


def _from_table(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys, counts = table[0::2], table[1::2]
    keep = keys != 0
    k, c = keys[keep], counts[keep]
    order = np.argsort(k)  # keys are unique: no stability needed
    return k[order], c[order]


#: Cost model of :func:`plan_vertical`, in ns, measured on BMS-WebView-1 (x86-64, AVX2): a hash
#: probe per *estimated* subset (the estimate ignores the item-with-ancestor filter, ~3x too many, and the
#: probe is a cache miss once the table outgrows the cache), the fixed cost of one bitset
#: candidate, and one streamed 64-bit AND + popcount.
HASH_PROBE_NS = 80.0
CANDIDATE_NS = 10.0
WORD_NS = 0.3


def _subset_counts(sizes: np.ndarray, m: int, lo: int = 1) -> np.ndarray:
    """sum_{j=lo..m} C(size, j) as float64 (an estimate of the subsets to enumerate)."""
    sizes = np.asarray(sizes, np.float64)
    out = np.zeros(sizes.size)
    term = np.ones(sizes.size)
    for j in range(1, m + 1):
        term = term * np.maximum(sizes - (j - 1), 0) / j
        if j >= lo:
            out += term
    return out


def plan_vertical(indptr: np.ndarray, indices: np.ndarray, node_map: np.ndarray, parent: np.ndarray, m: int) -> np.ndarray:
    """Rows to count with bitsets (the rest go to the hash table), by a cost model.

    Hash counting costs one random probe per enumerated subset; bitset counting costs, per
    itemset of size < m with non-zero support in the chosen rows (bounded by all such subsets
    of their union U), one AND + popcount over their bit rows for each later node of U (about
    |U| / m of them). The first ``L`` rows by subset count go to bitsets, ``L`` from
    {0, 64, 128, 256, ...} minimising the estimate.
    """
    sizes = _expanded_sizes(indptr, indices, node_map, parent)
    n = sizes.size
    if n == 0:
        return np.zeros(0, np.int64)
    subsets = _subset_counts(sizes, m)
    order = np.argsort(-subsets, kind="stable")
    cum = np.r_[0.0, np.cumsum(subsets[order])]
    prefixes = np.r_[0.0, np.cumsum(_subset_counts(sizes[order], m - 1))] if m > 1 else np.zeros(n + 1)
    growth = _union_growth(indptr, indices, order.astype(np.int64), node_map, parent)
    best_l, best_cost = 0, HASH_PROBE_NS * cum[-1]
    l_try = 64
    while True:
        l_ = min(l_try, n)
        u = float(growth[l_ - 1])
        p = 1.0 + min(prefixes[l_], float(_subset_counts(np.array([u]), m - 1)[0]) if m > 1 else 0.0)
        cost = HASH_PROBE_NS * (cum[-1] - cum[l_]) + p * u / m * (CANDIDATE_NS + WORD_NS * ((l_ + 63) // 64))
        if cost < best_cost:
            best_l, best_cost = l_, cost
        if l_ == n:
            break
        l_try *= 2
    return np.sort(order[:best_l]).astype(np.int64)


def _count(block, node_map, parent, tin, tout, m, bits, check, vertical_rows):
    b = sp.csr_array(block)
    if b.shape[0] == 0 or b.indices.size == 0:
        return empty_counts()
    indptr, indices = b.indptr.astype(np.int64), b.indices.astype(np.int64)
    node_map = np.asarray(node_map, np.int64)
    parent = np.asarray(parent, np.int64)
    tin, tout = np.asarray(tin, np.int64), np.asarray(tout, np.int64)
    if vertical_rows is None:
        vertical_rows = plan_vertical(indptr, indices, node_map, parent, int(m))
    vertical_rows = np.asarray(vertical_rows, np.int64)
    mask = np.ones(b.shape[0], bool)
    mask[vertical_rows] = False
    rest = np.flatnonzero(mask).astype(np.int64)
    parts = []
    if rest.size:
        parts.append(_from_table(_count_hash(indptr, indices, rest, node_map, parent, tin, tout, int(m), int(bits), check)))
    if vertical_rows.size:
        parts.append(_count_vertical(indptr, indices, vertical_rows, node_map, parent, tin, tout, int(m), int(bits), check))
    return merge_counts(parts)


def count_block(
    block: sp.csr_array,
    node_map: np.ndarray,
    parent: np.ndarray,
    tin: np.ndarray,
    tout: np.ndarray,
    m: int,
    bits: int,
    vertical_rows: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Count tree contribution of one CSR block (PopulateTree as corrected in
    docs/anonymity.md#correction-the-count-tree-skips-an-item-together-with-its-ancestor).

    Every transaction ``t`` (row) is mapped through ``node_map`` (column id -> node id; the
    identity for raw data, the published node for recoded data) and expanded with all ancestors;
    every subset ``c`` of the expansion with ``1 <= |c| <= m`` and no node together with one of
    its ancestors is counted once.

    Parameters
    ----------
    vertical_rows : array of row indices, optional
        Rows to count with bitsets instead of the hash table (default: :func:`plan_vertical`).
        Both give identical counts; the choice is only about speed.

    Returns
    -------
    (keys, counts) : sorted unique int64 keys (see module docstring) and int64 counts.
    """
    return _count(block, node_map, parent, tin, tout, m, bits, True, vertical_rows)


def count_plain_block(
    block: sp.csr_array, m: int, bits: int, vertical_rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Counts of all itemsets of size 1..m of the rows of a plain block (no hierarchy).

    Keys pack column ids. Used to verify published (recoded) data.
    """
    n = sp.csr_array(block).shape[1]
    ident = np.arange(n, dtype=np.int64)
    return _count(block, ident, np.full(n, -1, np.int64), ident, ident + 1, m, bits, False, vertical_rows)


def merge_counts(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum sorted (keys, counts) runs exactly (pairwise linear merges)."""
    runs = [(np.asarray(k, np.int64), np.asarray(c, np.int64)) for k, c in parts if len(k)]
    if not runs:
        return empty_counts()
    while len(runs) > 1:
        runs.sort(key=lambda r: r[0].size)  # merge the two smallest first
        (k1, c1), (k2, c2) = runs[0], runs[1]
        runs = [_merge2(k1, c1, k2, c2)] + runs[2:]
    return runs[0]


def recode_block(block: sp.csr_array, col_map: np.ndarray, n_cols: int) -> sp.csr_array:
    """Global recoding of one block: column ``j`` becomes ``col_map[j]``; duplicates inside a
    transaction collapse (the published transaction is a set). Returns int32 CSR, data ones."""
    b = sp.csr_array(block)
    n = b.shape[0]
    if n == 0 or b.indices.size == 0:
        return sp.csr_array((np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(n + 1, np.int32)), shape=(n, n_cols))
    mapped = np.asarray(col_map, np.int64)[b.indices]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(b.indptr))
    code = np.unique(rows * n_cols + mapped)  # sorted by (row, column), duplicates gone
    r, c = np.divmod(code, n_cols)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    return sp.csr_array((np.ones(c.size, np.int32), c.astype(np.int32), indptr.astype(np.int32)), shape=(n, n_cols))


# ---------------------------------------------------------------------- DA traversal
@numba.njit(cache=True, nogil=True)
def _rank_sorted(key, rank, m, bits, mask, ids, digits):  # pragma: no cover - compiled
    """Node ids of ``key`` sorted by rank into ``ids``, rank+1 into ``digits``; returns size."""
    s = 0
    for r in range(m):
        x = ((key >> (bits * (m - 1 - r))) & mask) - 1
        if x < 0:
            break
        rk = rank[x] + 1
        j = s
        while j > 0 and digits[j - 1] > rk:  # insertion sort of <= m items
            digits[j] = digits[j - 1]
            ids[j] = ids[j - 1]
            j -= 1
        digits[j] = rk
        ids[j] = x
        s += 1
    return s


@numba.njit(cache=True, nogil=True)
def _traversal(keys, rank, m, bits, n_nodes):  # pragma: no cover - compiled
    """Itemsets of ``keys`` in count-tree preorder, plus the inverted index node -> positions.

    A count-tree node is the path of its items in item order (ascending ``rank``); preorder is
    the lexicographic order of the rank sequences with a prefix before its extensions, i.e.
    the numeric order of the rank sequences packed like keys (rank + 1, 0 = padding). Sorted by
    an LSD radix sort over the m fields (one pass per field, n_nodes + 1 buckets, sequential
    reads), carrying the original keys along.
    """
    n = keys.size
    mask = (np.int64(1) << bits) - 1
    ids = np.empty(m, dtype=np.int64)
    digits = np.empty(m, dtype=np.int64)
    rk = np.empty(n, dtype=np.int64)
    for i in range(n):
        s = _rank_sorted(keys[i], rank, m, bits, mask, ids, digits)
        v = np.int64(0)
        for r in range(s):
            v |= digits[r] << (bits * (m - 1 - r))
        rk[i] = v
    src_r = rk
    src_k = keys.copy()
    dst_r = np.empty(n, dtype=np.int64)
    dst_k = np.empty(n, dtype=np.int64)
    cnt = np.empty(n_nodes + 2, dtype=np.int64)
    for r in range(m - 1, -1, -1):
        sh = bits * (m - 1 - r)
        cnt[:] = 0
        for i in range(n):
            cnt[((src_r[i] >> sh) & mask) + 1] += 1
        for d in range(1, n_nodes + 2):
            cnt[d] += cnt[d - 1]
        for i in range(n):
            d = (src_r[i] >> sh) & mask
            dst_r[cnt[d]] = src_r[i]
            dst_k[cnt[d]] = src_k[i]
            cnt[d] += 1
        src_r, dst_r = dst_r, src_r
        src_k, dst_k = dst_k, src_k
    sets = np.empty((n, m), dtype=np.int32)
    for i in range(n):
        s = _rank_sorted(src_k[i], rank, m, bits, mask, ids, digits)
        for r in range(m):
            sets[i, r] = ids[r] if r < s else -1
    # inverted index by counting sort: positions stay ascending within a node
    ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    for i in range(n):
        for r in range(m):
            x = sets[i, r]
            if x >= 0:
                ptr[x + 1] += 1
    for x in range(n_nodes):
        ptr[x + 1] += ptr[x]
    fill = ptr[:-1].copy()
    pos = np.empty(ptr[n_nodes], dtype=np.int64)
    for i in range(n):
        for r in range(m):
            x = sets[i, r]
            if x >= 0:
                pos[fill[x]] = i
                fill[x] += 1
    return sets, ptr, pos


def traversal(keys: np.ndarray, rank: np.ndarray, m: int, bits: int, n_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count-tree preorder of the itemsets ``keys`` (item order = ascending ``rank``).

    Returns
    -------
    sets : (n, m) int32
        Node ids of each itemset in item order (-1 padded), rows in preorder.
    inv_ptr, inv_pos : int64
        CSR map node -> ascending row positions holding it.
    """
    return _traversal(np.ascontiguousarray(keys, dtype=np.int64), np.asarray(rank, np.int64), int(m), int(bits), int(n_nodes))


@numba.njit(cache=True, nogil=True)
def _refresh(in_cut, parent, n_leaves, occ_under, under, pub, cut_cost_below, cut_leaves_below):  # pragma: no cover
    """Published flags and, per node, the cost / leaves of cut nodes strictly below it."""
    n = parent.size
    for x in range(n):
        cut_cost_below[x] = 0
        cut_leaves_below[x] = 0
    for x in range(n):
        covered = False
        a = parent[x]
        while a >= 0:
            if in_cut[a]:
                covered = True
                break
            a = parent[a]
        pub[x] = (not covered) and (x < n_leaves or in_cut[x])
        if in_cut[x]:
            a = parent[x]
            while a >= 0:
                cut_cost_below[a] += occ_under[x]
                cut_leaves_below[a] += under[x]
                a = parent[a]


@numba.njit(cache=True, nogil=True)
def _lookup(sorted_keys, key):  # pragma: no cover - compiled
    i = np.searchsorted(sorted_keys, key)
    return i < sorted_keys.size and sorted_keys[i] == key


@numba.njit(cache=True, nogil=True)
def _cut_after(in_cut, new_nodes, n_new, tin, tout):  # pragma: no cover - compiled
    """Sorted node ids of normalise(C ∪ N') (N' non-nested, disjoint from C's ancestors)."""
    n = in_cut.size
    out = np.empty(n, dtype=np.int64)
    c = 0
    for x in range(n):
        member = False
        if in_cut[x]:
            member = True
            for q in range(n_new):
                g = new_nodes[q]
                if tin[g] <= tin[x] and tin[x] < tout[g]:
                    member = False
                    break
        else:
            for q in range(n_new):
                if new_nodes[q] == x:
                    member = True
                    break
        if member:
            out[c] = x
            c += 1
    return out[:c]


@numba.njit(cache=True, nogil=True)
def _lex_less(a, b):  # pragma: no cover - compiled
    n = min(a.size, b.size)
    for i in range(n):
        if a[i] != b[i]:
            return a[i] < b[i]
    return a.size < b.size


@numba.njit(cache=True, nogil=True)
def _best_generalisation(
    J, s, in_cut, parent, tin, tout, occ_under, under, ccb, clb, freq_keys, m, bits, best_new
):  # pragma: no cover - compiled
    """Minimal-NCP admissible C' for the violating itemset J[:s] (the candidate step of DA,
    docs/anonymity.md#km-anonymity-of-set-valued-data).

    Writes the new cut nodes N' = C' - C into ``best_new`` and returns their number (0 if
    no candidate is admissible). Costs are integer NCP numerators, so ties are exact.
    """
    depth_max = 0
    for i in range(s):
        d = 0
        a = J[i]
        while a >= 0:
            d += 1
            a = parent[a]
        depth_max = max(depth_max, d)
    chain = np.full((s, depth_max), -1, dtype=np.int64)
    clen = np.zeros(s, dtype=np.int64)
    for i in range(s):
        a = J[i]
        while a >= 0:
            chain[i, clen[i]] = a
            clen[i] += 1
            a = parent[a]
    choice = np.zeros(s, dtype=np.int64)
    cand = np.empty(s, dtype=np.int64)
    newn = np.empty(s, dtype=np.int64)
    img = np.empty(s, dtype=np.int64)
    n_best = 0
    best_cost = np.int64(0)
    best_leaves = np.int64(0)
    best_cut = np.empty(0, dtype=np.int64)
    have_best_cut = False
    done = False
    while not done:
        # N = chosen generalisations g(j) != j (deduplicated)
        nc = 0
        for i in range(s):
            if choice[i] > 0:
                g = chain[i, choice[i]]
                dup = False
                for q in range(nc):
                    if cand[q] == g:
                        dup = True
                        break
                if not dup:
                    cand[nc] = g
                    nc += 1
        # N' = members of N without a strict ancestor in N (no ancestor of N is in C: every
        # g(j) is an ancestor of a published j)
        nn = 0
        for q in range(nc):
            g = cand[q]
            dominated = False
            for r in range(nc):
                h = cand[r]
                if h != g and tin[h] <= tin[g] and tin[g] < tout[h]:
                    dominated = True
                    break
            if not dominated:
                newn[nn] = g
                nn += 1
        if nn > 0:
            dcost = np.int64(0)
            dleaves = np.int64(0)
            for q in range(nn):
                g = newn[q]
                dcost += occ_under[g] - ccb[g]
                dleaves += under[g] - clb[g]
            better_possible = n_best == 0 or dcost < best_cost or (dcost == best_cost and dleaves <= best_leaves)
            if better_possible:
                # J' = image of J under C'
                for i in range(s):
                    x = J[i]
                    img[i] = x
                    for q in range(nn):
                        g = newn[q]
                        if tin[g] <= tin[x] and tin[x] < tout[g]:
                            img[i] = g
                            break
                simg = np.sort(img[:s])
                key = np.int64(0)
                f = 0
                for i in range(s):
                    if i > 0 and simg[i] == simg[i - 1]:
                        continue
                    key |= (simg[i] + 1) << (bits * (m - 1 - f))
                    f += 1
                if _lookup(freq_keys, key):
                    take = False
                    if n_best == 0 or dcost < best_cost or dleaves < best_leaves:
                        take = True
                        have_best_cut = False
                    else:  # equal cost and leaves: same C' iff same N'; else lexicographic
                        sa = np.sort(newn[:nn])
                        sb = np.sort(best_new[:n_best])
                        same = sa.size == sb.size
                        if same:
                            for q in range(sa.size):
                                if sa[q] != sb[q]:
                                    same = False
                                    break
                        if not same:
                            if not have_best_cut:
                                best_cut = _cut_after(in_cut, best_new, n_best, tin, tout)
                                have_best_cut = True
                            this_cut = _cut_after(in_cut, newn, nn, tin, tout)
                            if _lex_less(this_cut, best_cut):
                                take = True
                                best_cut = this_cut
                    if take:
                        n_best = nn
                        best_cost = dcost
                        best_leaves = dleaves
                        for q in range(nn):
                            best_new[q] = newn[q]
        # next choice (odometer)
        i = 0
        while i < s:
            choice[i] += 1
            if choice[i] < clen[i]:
                break
            choice[i] = 0
            i += 1
        if i == s:
            done = True
    return n_best


@numba.njit(cache=True, nogil=True)
def _da_run(
    sets, inv_ptr, inv_pos, freq_keys, parent, tin, tout, n_leaves, occ_under, under, in_cut, m, bits
):  # pragma: no cover - compiled
    """DA traversal: same cuts as the literal "restart the preorder after every change"
    (docs/anonymity.md#correction-da-checks-every-published-itemset-until-nothing-changes).

    Only itemsets with 0 < support < k are traversed (the literal algorithm passes over the
    others without acting), so one is a violation iff all its items are published. The literal algorithm's next change is made at the first violation in preorder
    under the current cut. Instead of restarting, we scan forward (``pos``) and keep a min-heap
    of already scanned positions that must be looked at again. Equivalence: a scanned position
    found clean (some item unpublished) stays clean until one of its items becomes published, because the cut only coarsens:
    a leaf, once covered, stays covered; an internal node becomes published exactly when it
    enters the cut; published nodes only leave the cut by being covered (unpublished for good).
    So after a change C -> C', only scanned positions holding a node of C' - C (the inverted
    index) can have become violations; they go to the heap. The position where the change was
    made now holds a covered item (every admissible C' generalises some item of J), so it stays
    clean. Popping the heap minimum before advancing ``pos`` therefore always finds the first
    violation in preorder, i.e. the literal algorithm's choice, with the same cut; and when the
    heap is empty and ``pos`` is at the end, a literal full pass would find no violation.
    Returns the number of changes (-1: a violation without admissible generalisation).
    """
    n_sets = sets.shape[0]
    n_nodes = parent.size
    pub = np.zeros(n_nodes, dtype=np.bool_)
    ccb = np.zeros(n_nodes, dtype=np.int64)
    clb = np.zeros(n_nodes, dtype=np.int64)
    _refresh(in_cut, parent, n_leaves, occ_under, under, pub, ccb, clb)
    heap = np.empty(max(n_sets, 1), dtype=np.int64)
    hn = 0
    in_heap = np.zeros(max(n_sets, 1), dtype=np.bool_)
    best_new = np.empty(m, dtype=np.int64)
    J = np.empty(m, dtype=np.int64)
    pos = 0
    changes = 0
    while True:
        if hn > 0:  # pop the smallest pending position
            q = heap[0]
            hn -= 1
            last = heap[hn]
            i = 0
            while True:
                c = 2 * i + 1
                if c >= hn:
                    break
                if c + 1 < hn and heap[c + 1] < heap[c]:
                    c += 1
                if heap[c] < last:
                    heap[i] = heap[c]
                    i = c
                else:
                    break
            if hn > 0:
                heap[i] = last
            in_heap[q] = False
        elif pos < n_sets:
            q = pos
            pos += 1
        else:
            break
        s = 0
        published = True
        for r in range(m):
            x = sets[q, r]
            if x < 0:
                break
            J[s] = x
            s += 1
            if not pub[x]:
                published = False
                break
        if not published:
            continue
        # every traversed itemset has 0 < count < k: a published one is a violation
        nb = _best_generalisation(J, s, in_cut, parent, tin, tout, occ_under, under, ccb, clb, freq_keys, m, bits, best_new)
        if nb == 0:
            return -1
        for x in range(n_nodes):
            if in_cut[x]:
                for t in range(nb):
                    g = best_new[t]
                    if tin[g] <= tin[x] and tin[x] < tout[g]:
                        in_cut[x] = False
                        break
        for t in range(nb):
            in_cut[best_new[t]] = True
        _refresh(in_cut, parent, n_leaves, occ_under, under, pub, ccb, clb)
        changes += 1
        # re-examine already scanned itemsets that hold a newly published node
        for t in range(nb):
            g = best_new[t]
            for p in range(inv_ptr[g], inv_ptr[g + 1]):
                y = inv_pos[p]
                if y >= pos:
                    break
                if not in_heap[y]:
                    in_heap[y] = True
                    i = hn
                    hn += 1
                    while i > 0:
                        par = (i - 1) // 2
                        if heap[par] > y:
                            heap[i] = heap[par]
                            i = par
                        else:
                            break
                    heap[i] = y
    return changes


def direct_anonymization(
    small_keys: np.ndarray,
    m: int,
    rank: np.ndarray,
    freq_keys: np.ndarray,
    parent: np.ndarray,
    tin: np.ndarray,
    tout: np.ndarray,
    n_leaves: int,
    occ_under: np.ndarray,
    under: np.ndarray,
    in_cut: np.ndarray,
    bits: int,
) -> tuple[np.ndarray, int]:
    """DA (docs/anonymity.md#km-anonymity-of-set-valued-data) on the count tree split at k.

    Parameters
    ----------
    small_keys : int64
        Keys (packed for ``m``, ``bits``) of the count-tree itemsets with support < k.
    m : int
        Itemset size of the key packing.
    rank : (n_nodes,) int64
        Item order (0 = first).
    freq_keys : sorted int64
        Keys of the itemsets with support >= k (the admissibility look-up).
    parent, tin, tout : node tree.
    n_leaves : int
        Nodes ``< n_leaves`` are leaves (items).
    occ_under, under : int64
        Per node: leaf occurrences below it times leaves below it (NCP numerator; 0 for leaves),
        and number of hierarchy leaves below it.
    in_cut : bool
        Starting cut (internal nodes, normalised).
    bits : int
        Key bits.

    Returns
    -------
    (in_cut, n_changes)
    """
    parent = np.asarray(parent, np.int64)
    in_cut = np.array(in_cut, dtype=np.bool_, copy=True)
    sets, inv_ptr, inv_pos = traversal(small_keys, rank, m, bits, parent.size)
    changes = _da_run(
        sets,
        inv_ptr,
        inv_pos,
        np.ascontiguousarray(freq_keys, dtype=np.int64),
        parent,
        np.asarray(tin, np.int64),
        np.asarray(tout, np.int64),
        int(n_leaves),
        np.asarray(occ_under, np.int64),
        np.asarray(under, np.int64),
        in_cut,
        int(m),
        int(bits),
    )
    if changes < 0:
        raise RuntimeError("no admissible generalisation exists (k exceeds the non-empty transactions)")
    return in_cut, int(changes)

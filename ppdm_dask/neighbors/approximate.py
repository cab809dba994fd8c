"""Approximate k-nearest neighbours for data too large for the exact all-pairs pass.

Candidate generation (partition-then-merge over a keyed sort). In each of ``n_rounds`` rounds
every record gets a sort key made of three independent *weighted MinHash* winners: for race q
the winner is ``argmin_t E[q, t] / |x_t|^3`` over the record's items, with
``E ~ Exponential(1)`` per item drawn from the key. For binary data this is plain MinHash (two
records share a winner with probability equal to their Jaccard similarity); with weights it is
P-MinHash on ``|x|^3`` (a record's high-weight items win more often; the winner does not change
when a record is rescaled, as cosine needs). The exponent was chosen on 20 Newsgroups counts:
recall at 8 rounds of 512 was 0.58 / 0.66 / 0.70 / 0.70 / 0.61 for ``|x|``, ``x^2``,
``|x|^3``, ``x^4``, ``x^8``. Records are sorted by
``(winner labels, global index)`` and the sorted order is cut into windows of ``n_candidates``
consecutive records at a random offset; every record is compared exactly with the other records
of its window. Similar records share winners, hence sort keys, hence windows.

Re-ranking is exact: the windows run the same kernel as :func:`~ppdm_dask.neighbors.knn`, so
the returned distances, dot products and ``sum x_t^2 y_t^2`` are exactly those of the exact
graph; only some true neighbours may be missing (see :func:`recall`). The lists of all rounds
are merged per record (k smallest ``(distance, index)``, repeated candidates removed).

Cost per round: O(nnz) for the keys (one pass over the input's own blocks), a sort of N keys
on the driver (8 bytes per record; the window ids, 4 bytes per record, travel in the task
graph), one all-to-all of the rows into window groups, and about ``N * n_candidates / 2`` exact
pair evaluations instead of ``N^2 / 2``. Rounds run in waves whose k-th distances cap the next
waves (fewer exact comparisons, same result). The result depends on the key but not on the
partitioning, the grouping or the workers.

Memory: a group (one window task) holds about :data:`GROUP_BYTES` of rows, so the all-to-all
has (N / group rows)^2 edges per round, whatever the input's partitioning. A wave routes at
most what fits in :data:`WAVE_MEMORY_SHARE` of the workers' memory (or in what they have left
below their spill target after the key pass, the kept input and one window task per thread,
when that is less), counting every routed row twice (its piece and its copy in the window task)
with its routing; a larger round runs in several waves, and each split decodes only the rows
its wave routes. The input is kept in the workers' memory between the waves only when it fits in
:data:`INPUT_MEMORY_SHARE` of it (binary rows packed); otherwise every wave re-reads it. Each
group's lists leave the workers as soon as they are ready and are merged into the k-NN graph
(N x k x 32 bytes) on the driver, where the caller receives it; the workers get back only each
row's k-th distance (8 bytes per record).

Measured (2-worker LocalCluster, k = 10): Quest C20.I6.D200K 8 x 512 -> recall 0.81 in ~11 s (exact: ~20 s);
20 Newsgroups counts 8 x 1024 -> recall 0.78 (exact is faster there: N is small).

Randomness: stream ``key.generator(Tag.KNN_MINHASH, round)``; the key itself never enters
the task graph or the output.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp
from numba import njit

from ..data.packed import PackedRows, pack_rows, packed_nbytes, unpack_rows
from ..errors import InvalidParameter
from ..random import KeyLike, Tag, as_key
from . import _kernels as K
from .exact import KNNGraph, check_neighbors, delayed_blocks

__all__ = ["approximate_knn", "recall"]

_RACES = 3
_LABEL_BITS = 21
_INVALID = np.uint64(np.iinfo(np.uint64).max)

#: Rows of one window task (and of one result block) in memory: column ids and float64 values.
GROUP_BYTES = 32 * 2**20
#: Rounds per wave at most (a wave's window tasks hold that many copies of the rows).
MAX_WAVE_ROUNDS = 2
#: Share of the workers' memory the rows routed at once (one wave) may take with their lists.
WAVE_MEMORY_SHARE = 0.1
#: The same budget on the local schedulers.
LOCAL_WAVE_BYTES = 2 * 2**30
#: A wave keeps at least this fraction of its share when the workers have less left (below it,
#: the waves' fixed costs would dominate; the workers then spill a little instead).
WAVE_FLOOR = 0.25
#: Share of the workers' memory the input rows may take when kept between the waves.
INPUT_MEMORY_SHARE = 0.15
#: The same budget on the local schedulers.
LOCAL_INPUT_BYTES = 2 * 2**30


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def _minhash_keys(indptr, indices, values, expo, labels):  # pragma: no cover - compiled
    """Packed sort key per row: the labels of the 3 weighted-MinHash winners (21 bits each)."""
    n = indptr.size - 1
    out = np.empty(n, np.uint64)
    for i in range(n):
        if indptr[i] == indptr[i + 1]:
            out[i] = np.uint64(0xFFFFFFFFFFFFFFFF)
            continue
        key = np.uint64(0)
        for q in range(expo.shape[0]):
            best = np.inf
            win = -1
            for p in range(indptr[i], indptr[i + 1]):
                x = abs(values[p])
                x = x * x * x  # race weight |x_t|^3 (see the module docstring)
                if x == 0.0:
                    continue
                v = expo[q, indices[p]] / x
                if v < best:
                    best = v
                    win = indices[p]
            lab = np.uint64(labels[q, win]) if win >= 0 else np.uint64(0)
            key = (key << np.uint64(_LABEL_BITS)) | lab
        out[i] = key
    return out


def _values(block: sp.csr_array, weights: sp.csr_array | None) -> np.ndarray:
    if weights is None:
        return np.ones(block.indices.size, np.float64)
    return np.asarray(weights.data, dtype=np.float64)


def _block_keys(block, weights, round_params: list) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Sort keys of one block for every round, ``(n_rounds, n)`` uint64, ``|x|^2``, the
    block's number of entries (to size the window tasks) and, for binary rows, the exact bytes
    the block takes packed (to decide whether the input is kept)."""
    vals = _values(block, weights)
    indptr = np.asarray(block.indptr, np.int64)
    keys = np.zeros((len(round_params), block.shape[0]), np.uint64)
    for r, (expo, labels) in enumerate(round_params):
        keys[r] = _minhash_keys(indptr, block.indices, vals, expo, labels)
    sq = K._row_sq(indptr, vals)
    keys[:, sq == 0] = _INVALID  # |x| = 0 (explicit zeros): no neighbours
    packed = packed_nbytes(sp.csr_array(block)) if weights is None else 0
    return keys, sq, int(block.indices.size), packed


def _split(block, weights, start: int, routed: tuple, per_group: int) -> dict:
    """The block's rows routed in one round of a wave: ``routed`` = (their local positions,
    ascending, int32; their window ids; their caps or None). Returns ``{group: (column ids, row
    lengths, values or None, gidx, window, cap)}``. Only the routed rows are decoded (a wave
    routes a small part of each block); binary rows carry no values (the window task makes
    them); a row's cap (its k-th distance after the earlier waves) travels with it."""
    local, window, cap = routed
    if isinstance(block, PackedRows):
        sub = unpack_rows(block, local)
    else:
        sub = sp.csr_array(block[local])
    cap = np.full(local.size, np.inf) if cap is None else cap
    dest = window // per_group
    order = np.argsort(dest, kind="stable")  # rows of one group together, in block order
    sub = sp.csr_array(sub[order])
    vals = None if weights is None else np.asarray(sp.csr_array(weights[local[order]]).data, dtype=np.float32)
    dest, gidx, window, cap = dest[order], local[order].astype(np.int64) + start, window[order], cap[order]
    indptr = sub.indptr
    cuts = np.flatnonzero(np.r_[True, dest[1:] != dest[:-1], True])
    out = {}
    for a, b in zip(cuts[:-1], cuts[1:]):
        lo, hi = int(indptr[a]), int(indptr[b])
        out[int(dest[a])] = (
            np.asarray(sub.indices[lo:hi], np.int32),
            np.diff(indptr[a : b + 1]),
            None if vals is None else vals[lo:hi],
            gidx[a:b],
            window[a:b],
            cap[a:b],
        )
    return out


def _window_knn(pieces: list, k: int, cosine: bool, exclude_self: bool, n_items: int):
    """Exact top-k inside every window of one group, as ``(gidx, dist, index, dot, cross)``
    sorted by ``gidx``, for the rows that found at least one candidate; candidates farther than a row's cap (its k-th distance after the earlier
    waves) are skipped: they cannot enter its final list."""
    pieces = [p for p in pieces if p[3].size]
    if not pieces:
        return (np.zeros(0, np.int64), *K.empty_topk(0, k))
    lengths = np.concatenate([p[1] for p in pieces])
    indices = np.concatenate([p[0] for p in pieces])
    data = np.ones(indices.size) if pieces[0][2] is None else np.concatenate([p[2] for p in pieces]).astype(np.float64)
    m = sp.csr_array((data, indices, np.r_[0, np.cumsum(lengths)]), shape=(lengths.size, n_items))
    del indices, data
    gidx = np.concatenate([p[3] for p in pieces])
    win = np.concatenate([p[4] for p in pieces])
    cap = np.concatenate([p[5] for p in pieces])
    order = np.lexsort((gidx, win))  # by window, then global index (the kernel's tie order)
    m, gidx, win, cap = sp.csr_array(m[order]), gidx[order], win[order], cap[order]
    m.sort_indices()
    bounds = np.flatnonzero(np.r_[True, win[1:] != win[:-1], True])
    res = K.windows_topk(m, gidx, bounds, k, cosine=cosine, exclude_self=exclude_self, cap=cap)
    # only rows that found a candidate under their cap travel back (after the first waves: few)
    found = np.flatnonzero(res[1][:, 0] >= 0)
    order = found[np.argsort(gidx[found], kind="stable")]
    return (gidx[order], *(x[order] for x in res))


def _windows(keys: np.ndarray, shift: int, width: int) -> np.ndarray:
    """Window id of every row (-1: no neighbours) from its sort key; ties by global index."""
    n = keys.size
    valid = np.flatnonzero(keys != _INVALID)
    order = valid[np.argsort(keys[valid], kind="stable")]
    window = np.full(n, -1, np.int32)
    window[order] = (np.arange(order.size) + shift) // width
    return window


def _wave_tasks(blocks, weights, starts, windows, wave, per_group, k, cosine, exclude_self, kth, n_items, client) -> list:
    """Delayed window-task results of one wave (``wave`` lists ``(round, g_lo, g_hi)``): per
    round one split task per block holding routed rows and one task per window group.
    ``windows`` are the window ids on the driver and ``kth`` each row's k-th distance so far (or
    None). Each split gets only its routed rows' positions, window ids and caps (16 bytes per
    routed row, released with the wave), so the workers hold no per-record state besides the
    input. The results go straight to the driver, which merges them into the graph: the graph
    has (blocks + groups) tasks per round plus one edge per (block, group) piece."""
    from ..progress import ship

    dl = functools.partial(dask.delayed, pure=True)
    out = []
    for r, g_lo, g_hi in wave:
        group = windows[r] // per_group  # -1 (no window) stays -1
        sel = np.flatnonzero((group >= g_lo) & (group < g_hi))
        cut = np.searchsorted(sel, starts)
        used = [b for b in range(len(blocks)) if cut[b + 1] > cut[b]]
        routed = []
        for b in used:
            rows = sel[cut[b] : cut[b + 1]]
            routed.append(((rows - starts[b]).astype(np.int32), windows[r, rows], None if kth is None else kth[rows]))
        present = [set(np.unique(group[sel[cut[b] : cut[b + 1]]]).tolist()) for b in used]
        splits = [
            (dl(_split)(blocks[b], weights[b], int(starts[b]), payload, per_group), there)
            for b, payload, there in zip(used, ship(routed, client), present)
        ]
        for g in range(g_lo, g_hi):
            parts = [s[g] for s, there in splits if g in there]
            if parts:
                out.append(dl(_window_knn)(parts, k, cosine, exclude_self, n_items))
    return out


def _waves(windows: np.ndarray, per_group: int, wave_rows: int) -> list[list[tuple[int, int, int]]]:
    """Consecutive ``(round, first group, end group)`` ranges whose rows stay within
    ``wave_rows``; rounds 0 and 1 alone, later waves at most :data:`MAX_WAVE_ROUNDS` rounds
    (each wave's k-th distances cap the next ones' comparisons)."""
    waves: list[list[tuple[int, int, int]]] = []
    cur: list[tuple[int, int, int]] = []
    rows = 0
    for r in range(windows.shape[0]):
        valid = windows[r][windows[r] >= 0]
        sizes = np.bincount(valid // per_group) if valid.size else np.zeros(0, np.int64)
        if cur and (r <= 2 or len({w[0] for w in cur}) >= MAX_WAVE_ROUNDS):
            waves.append(cur)
            cur, rows = [], 0
        g_lo = 0
        for g, size in enumerate(sizes):
            if rows + size > wave_rows and (rows > 0 or g > g_lo):
                if g > g_lo:
                    cur.append((r, g_lo, g))
                waves.append(cur)
                cur, rows, g_lo = [], 0, g
            rows += int(size)
        if sizes.size > g_lo:
            cur.append((r, g_lo, int(sizes.size)))
    if cur:
        waves.append(cur)
    return [w for w in waves if w]


def group_plan(n: int, nnz: int, packed: int, n_candidates: int, k: int, weighted: bool, client: Any = None) -> dict:
    """Rows per window task and result block, whether the input is kept in memory, and the
    rows routed at once (a wave).

    A window task holds its group's rows about three times (the pieces, their concatenation,
    the sorted copy), so a group is sized to :data:`GROUP_BYTES` of rows in memory (int32 column
    ids and float64 values per entry, 8 bytes per row): fewer, larger groups keep the task graph
    small (its all-to-all edges grow with the square of the number of groups; measured at 10 M
    records on 1 GB workers, groups of 19 MiB spilled more than groups of 32 MiB).
    """
    from ..cluster import memory_budget, memory_headroom, memory_plan

    mean = nnz / max(n, 1)
    row_bytes = 12.0 * mean + 8.0
    rows = max(n_candidates, int(GROUP_BYTES // row_bytes))
    # the input as persisted blocks: binary rows packed (``packed``: their exact bytes), weighted
    # ones as CSR (int32 ids and values, float32 weights with their own ids)
    stored = (16 * nnz + 8 * n) if weighted else packed
    plan, why, _ = memory_plan(stored, INPUT_MEMORY_SHARE, client, local=LOCAL_INPUT_BYTES, what="input rows")
    # a routed row: its piece (column ids, float32 values, length, gidx, window id, cap), which
    # the workers hold (and count) twice: in its split's output and as its window task's input,
    # plus its routing (position, window id, cap: 16 bytes); its top-k list leaves the workers
    # as soon as its group is done
    in_flight = 2 * ((8 if weighted else 4) * mean + 28) + 16
    budget, where = memory_budget(WAVE_MEMORY_SHARE, client, local=LOCAL_WAVE_BYTES)
    wave_why = (
        f"the local budget of {budget / 2**20:,.0f} MiB"
        if where == "local scheduler"
        else f"{WAVE_MEMORY_SHARE:.0%} of the memory of {where}, {budget / 2**20:,.0f} MiB"
    )
    room = memory_headroom(client)
    if room is not None:
        # what the workers have left below their spill target after the key pass, less the
        # kept input and one window task per thread (its group about three times)
        left = room[0] - (stored if plan == "persist" else 0) - room[1] * 3 * GROUP_BYTES
        if left < budget:
            budget = max(left, WAVE_FLOOR * budget)
            wave_why = (
                f"what the workers have left below their spill target after the input and one window "
                f"task per thread, {budget / 2**20:,.0f} MiB"
            )
    wave_rows = max(n_candidates, int(budget // in_flight))
    wave_why = f"{wave_rows:,} routed rows ({in_flight:,.0f} bytes each in flight: {wave_why})"
    return {"group_rows": rows, "input": plan, "input_reason": why, "wave_rows": wave_rows, "wave_reason": wave_why}


# ----------------------------------------------------------------------------- public
def approximate_knn(
    tx: Any,
    k: int,
    *,
    metric: str = "cosine",
    n_candidates: int = 512,
    n_rounds: int = 8,
    key: KeyLike = None,
    exclude_self: bool = True,
    group_rows: int | None = None,
    wave_rows: int | None = None,
    client: Any = None,
    progress: bool = False,
) -> KNNGraph:
    """Approximate kNN graph with exact distances: keyed MinHash windows + exact re-ranking.

    Parameters
    ----------
    tx : TransactionArray
        Records (values from ``tx.weights`` when present, else 1.0).
    k : int
        Neighbours per record, ``1 <= k < N``.
    metric : {"cosine", "euclidean"}
        As in :func:`~ppdm_dask.neighbors.knn`. The candidates favour cosine similarity.
    n_candidates : int, default 512
        Window size: each record is compared exactly with ``n_candidates - 1`` others per round.
    n_rounds : int, default 8
        Independent rounds (more rounds: higher recall, linear cost). They run in waves of
        1, 1, 2, 2, ... rounds; the k-th distances found by earlier waves cap the later ones,
        which then skip most exact comparisons (without changing the result).
    key : Key, int or bytes, optional
        Randomness (default: a fresh secret key). Same key, same result, for any partitioning.
    exclude_self : bool
        Neighbours are other records.
    group_rows : int, optional
        Rows per window task and per result block (default: :data:`GROUP_BYTES` of rows in
        memory, from the input's mean row length; the result does not depend on it).
    wave_rows : int, optional
        Rows routed to window groups at once (default: what fits in :data:`WAVE_MEMORY_SHARE`
        of the workers' memory); a round larger than this runs in several waves, each reading
        the input again. The result does not depend on it.
    client, progress
        As in :func:`~ppdm_dask.neighbors.knn`.

    Returns
    -------
    KNNGraph
        ``scope="approximate"``. Every returned neighbour carries its exact distance, dot
        product and cross term; rows may miss some true neighbours and may have fewer than k
        (padding ``-1``/``inf``).
    """
    from ..progress import compute_each, persist, step_reporter

    k = check_neighbors(tx, k, metric, exclude_self)
    for name, value, low in (("n_candidates", n_candidates, 2), ("n_rounds", n_rounds, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InvalidParameter(f"{name} must be an integer >= {low}, got {value!r}")
    for name, value in (("group_rows", group_rows), ("wave_rows", wave_rows)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise InvalidParameter(f"{name} must be a positive integer, got {value!r}")
    n_candidates, n_rounds = int(n_candidates), int(n_rounds)
    cosine = metric == "cosine"
    n, n_items = tx.n_transactions, tx.n_items
    rng_key = as_key(key)
    rounds = []
    for r in range(n_rounds):
        g = rng_key.generator(Tag.KNN_MINHASH, r)
        expo = g.exponential(size=(_RACES, n_items))
        labels = g.integers(0, 2**_LABEL_BITS, size=(_RACES, n_items), dtype=np.int64)
        rounds.append((expo, labels, int(g.integers(0, n_candidates))))
    del rng_key
    params = dask.delayed([(e, lab) for e, lab, _ in rounds], pure=True, traverse=False)

    dl = functools.partial(dask.delayed, pure=True)
    # Pass 1 on the input's own blocks: sort keys, |x|^2 and entries (to size the groups).
    blocks, weights = delayed_blocks(tx)
    # each block's keys go straight to the driver (8 bytes per record and round: gathered by one
    # task they would not fit in a worker at 10 M records)
    got: dict[int, tuple] = {}
    compute_each([dl(_block_keys)(b, w, params) for b, w in zip(blocks, weights)], got.__setitem__, client=client)
    parts = [got.pop(i) for i in range(len(blocks))]
    keys = np.concatenate([np.asarray(p[0]).reshape(n_rounds, -1) for p in parts], axis=1)
    sq = np.concatenate([p[1] for p in parts])
    plan = group_plan(
        n, int(sum(p[2] for p in parts)), int(sum(p[3] for p in parts)), n_candidates, k, tx.weights is not None, client
    )
    del parts
    group_rows = plan["group_rows"] if group_rows is None else int(group_rows)
    per_group = max(1, group_rows // n_candidates)  # windows per window task
    # Result blocks of ~group_rows rows; kept in memory only when they fit (else every wave
    # re-reads the input instead of leaving it to the workers to spill).
    txr = tx.repartition(npartitions=max(1, math.ceil(n / group_rows)))
    blocks, weights = delayed_blocks(txr)
    if plan["input"] == "persist":  # binary rows kept as varint byte streams (~1.3 bytes per entry)
        blocks = [b if tx.weights is not None else dl(pack_rows)(b) for b in blocks]
        kept = persist(*blocks, *(w for w in weights if w is not None), client=client, progress=False)
        blocks = list(kept[: len(blocks)])
        weights = list(kept[len(blocks) :]) if tx.weights is not None else weights
    starts = np.r_[0, np.cumsum(txr.partition_rows)].astype(np.int64)
    windows = np.stack([_windows(keys[r], rounds[r][2], n_candidates) for r in range(n_rounds)])
    del keys

    # The graph lives on the driver (the caller gets it there anyway); each wave's lists are
    # merged into it, and its k-th distances go with the next wave's routed rows as their caps
    # (a cap only removes candidates that cannot enter a list: the result does not depend on
    # the waves). A wave holds at most wave_rows routed rows, so the all-to-all never holds more
    # than its memory share, however large the data.
    waves = _waves(windows, per_group, plan["wave_rows"] if wave_rows is None else int(wave_rows))
    graph = K.empty_topk(n, k)

    def merge(_: int, result) -> None:
        rows, *lists = result
        if rows.size:
            merged = K.merge_topk_unique(rows, [(rows, *(f[rows] for f in graph)), (rows, *lists)], k)
            for f, v in zip(graph, merged):
                f[rows] = v

    report = step_reporter("approximate k-NN waves") if progress else None
    for i, wave in enumerate(waves):
        kth = None if i == 0 else graph[0][:, -1]  # read when the wave is made (merge updates the graph)
        tasks = _wave_tasks(blocks, weights, starts, windows, wave, per_group, k, cosine, exclude_self, kth, n_items, client)
        compute_each(tasks, merge, client=client)  # each group's lists leave the workers when ready
        del tasks
        if report is not None:
            report(i + 1, len(waves), f"{sum(hi - lo for _, lo, hi in wave)} groups")
    how = (
        f"{len(blocks)} groups of <= {group_rows:,} rows ({per_group} windows each); {len(waves)} waves over "
        f"{n_rounds} rounds, each within {plan['wave_reason']}; each group's lists merged on the driver as they arrive; "
        f"{plan['input_reason']}"
    )
    return KNNGraph(
        indices=graph[1],
        distances=graph[0],
        dots=graph[2],
        cross=graph[3],
        sqnorms=sq,
        k=k,
        metric=metric,
        scope="approximate",
        plan=how,
    )


def recall(approx: KNNGraph, exact: KNNGraph, *, rtol: float = 1e-12) -> float:
    """Fraction of the exact neighbours that ``approx`` found, ties counted by distance.

    For every row with ``m`` exact neighbours (``m <= k``), the approximate neighbours at a
    distance ``<=`` the exact m-th distance are hits (a different record at the same distance as
    the exact k-th one is as good), capped at ``m``. Returns ``sum hits / sum m`` (1.0 if the
    exact graph has no edges).
    """
    if approx.indices.shape != exact.indices.shape:
        raise InvalidParameter("the two graphs must have the same number of rows and the same k")
    valid_e = exact.indices >= 0
    m = valid_e.sum(axis=1)
    if m.sum() == 0:
        return 1.0
    rows = np.arange(m.size)
    kth = np.where(m > 0, exact.distances[rows, np.maximum(m - 1, 0)], -np.inf)
    limit = kth + rtol * np.maximum(1.0, np.abs(np.where(np.isfinite(kth), kth, 0.0)))
    hits = ((approx.indices >= 0) & (approx.distances <= limit[:, None])).sum(axis=1)
    return float(np.minimum(hits, m).sum() / m.sum())

"""Per-block kernels of the event-log group-by (:mod:`ppdm_dask.data.events`): pure numpy,
numba and pyarrow, no Dask.

An event block is three arrow arrays (user, item, optional time). The kernels

* hash users with SipHash-2-4 (:func:`siphash_users`): a keyed 64-bit pseudonym that never
  leaves the worker as anything but a number, and the sort key of the output;
* scan a block (:func:`scan_block`): distinct user hashes with their event counts (and the
  person pseudonym of each, :func:`siphash_users` under the person key's words), distinct
  items, null counts — tree-merged on the driver (:func:`merge_scans`);
* split a block (:func:`split_block`) into compact pieces ``(hash, item id, time, count)``, one
  per output block (a range of the sort key);
* merge the pieces of one output block: user mode straight to CSR (:func:`merge_users`),
  session/window mode first into sessions re-split by their own sort key, a user's baskets
  beyond a bound dropped (:func:`cut_sessions`), then to CSR (:func:`merge_baskets`). Each
  output block comes with the person pseudonym of every basket (:func:`person_of` looks the
  pseudonyms up in the pre-pass's map of the block's users).

Everything is sorted by numbers that depend only on the events and the key, so the output does
not depend on how the events were cut into files, row groups or tasks.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from ..errors import DataFormatError
from .siphash import TYPE_INT, TYPE_STR, siphash, siphash_pairs, siphash_users

__all__ = [
    "TYPE_INT",
    "TYPE_STR",
    "siphash",
    "siphash_users",
    "siphash_pairs",
    "bucket_of",
    "id_values",
    "time_values",
    "valid_mask",
    "scan_block",
    "merge_scans",
    "person_of",
    "bound_baskets",
    "quantiles_of_histogram",
    "split_block",
    "merge_users",
    "cut_sessions",
    "merge_baskets",
    "Piece",
    "concat_pieces",
]

#: A piece of the shuffle: (sort key uint64, item id int32, time int64 or float64, count int32);
#: the time array is empty when the mode does not need it. After :func:`cut_sessions` the time
#: slot carries the basket's person pseudonym (uint64 viewed as int64).
Piece = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def bucket_of(keys: np.ndarray, n_out: int) -> np.ndarray:
    """Output block of each sort key: ``floor(key * n_out / 2**64)`` (the high bits), so the
    blocks are consecutive ranges of the key (as ``release.order.bucket_of``)."""
    return ((keys >> np.uint64(32)) * np.uint64(n_out) >> np.uint64(32)).astype(np.int64)


# ------------------------------------------------------------------------------ columns
def _plain(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _integral_floats(arr: pa.Array, column: str, role: str) -> pa.Array:
    """Whole numbers stored as floats (pandas writes an integer column with missing values as
    float64) as int64; other floats are refused, counted but never quoted."""
    values = arr.to_numpy(zero_copy_only=False)
    ok = np.isnan(values) | ((values == np.floor(values)) & (np.abs(values) < 2.0**63))
    if not ok.all():
        raise DataFormatError(
            f"{role} column {column!r} holds {int((~ok).sum())} non-integer number(s); {role}s must be integers or strings"
        )
    return arr.cast(pa.int64(), safe=False)


#: what each role's values must be, for the refusal of another type
_MUST = {"user": "a user id must be an integer or a string", "item": "item labels must be integers or strings"}


def id_values(arr: pa.Array | pa.ChunkedArray, column: str, role: str) -> pa.Array:
    """The user or item column (``role``) as int64 or large_string arrow values (nulls kept);
    whole floats are integers."""
    arr = _plain(arr)
    if pa.types.is_floating(arr.type):
        return _integral_floats(arr, column, role)
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64())
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr.cast(pa.large_string())
    raise DataFormatError(f"{role} column {column!r} has type {arr.type}; {_MUST[role]}")


def time_kind(typ: pa.DataType, column: str) -> str:
    """``"timestamp"`` (timestamps and dates, as int64 nanoseconds since the epoch), ``"int"``
    or ``"float"`` (numbers in the column's own units)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
        return "timestamp"
    if pa.types.is_integer(typ):
        return "int"
    if pa.types.is_floating(typ):
        return "float"
    raise DataFormatError(f"time column {column!r} has type {typ}; it must be a timestamp, a date or a number")


def time_values(arr: pa.Array | pa.ChunkedArray, column: str, kind: str) -> pa.Array:
    """The time column as int64 nanoseconds (``kind == "timestamp"``), int64 or float64."""
    arr = _plain(arr)
    if time_kind(arr.type, column) != kind:
        raise DataFormatError(f"time column {column!r} has type {arr.type} in one part of the input and {kind} in another")
    if kind == "timestamp":
        if pa.types.is_date32(arr.type):
            days = arr.cast(pa.int32()).cast(pa.int64())
            return pc.multiply_checked(days, pa.scalar(86_400 * 10**9, pa.int64()))
        if pa.types.is_date64(arr.type):
            return pc.multiply_checked(arr.cast(pa.int64()), pa.scalar(10**6, pa.int64()))
        unit = arr.type.unit
        ints = arr.cast(pa.timestamp(unit)).cast(pa.int64())  # drops the zone: values are UTC instants
        factor = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
        return pc.multiply_checked(ints, pa.scalar(factor, pa.int64())) if factor != 1 else ints
    return arr.cast(pa.int64() if kind == "int" else pa.float64())


def valid_mask(user: pa.Array, item: pa.Array, time: pa.Array | None) -> tuple[np.ndarray, int, int, int]:
    """Rows with a user, an item (and a time when ``time`` is given); and the three null
    counts: null user; user but null item; user and item but null time."""
    u = np.asarray(user.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    i = np.asarray(item.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    n_null_user = int((~u).sum())
    n_null_item = int((u & ~i).sum())
    ok = u & i
    n_null_time = 0
    if time is not None:
        t = np.asarray(time.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        n_null_time = int((ok & ~t).sum())
        ok &= t
    return ok, n_null_user, n_null_item, n_null_time


def _numbers(arr: pa.Array, dtype: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


# ------------------------------------------------------------------------------ scan
def scan_block(
    user: pa.Array, item: pa.Array, time: pa.Array | None, k0: int, k1: int, person: tuple[int, int] | None = None
) -> dict[str, Any]:
    """Pre-pass of one block: distinct user hashes (sorted) with their numbers of events,
    distinct items, counts of events and of dropped nulls; with ``person`` (two key words) also
    ``persons``: the person pseudonym of each distinct user hash, ``siphash_users`` of the user
    value under those words (the smallest one if two user values share a hash, so that the
    result does not depend on the order of the rows).

    ``time`` is given only when the mode needs it (its nulls drop events)."""
    ok, nu, ni, nt = valid_mask(user, item, time)
    mask = pa.array(ok)
    users = user.filter(mask)
    items = item.filter(mask)
    h = siphash_users(users, k0, k1)
    order = np.argsort(h)
    hs = h[order]
    starts = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]]) if hs.size else np.zeros(0, np.int64)
    distinct = pc.unique(items)
    labels = distinct.to_numpy(zero_copy_only=False)
    out = {
        "n_events": len(user),
        "n_null_user": nu,
        "n_null_item": ni,
        "n_null_time": nt,
        "hashes": hs[starts],
        "counts": np.diff(np.r_[starts, hs.size]).astype(np.int64),
        "labels": np.sort(labels.astype(np.int64) if pa.types.is_integer(distinct.type) else labels.astype(object)),
        "kind": "i" if pa.types.is_integer(distinct.type) else "s",
    }
    if person is not None:
        ph = siphash_users(users, person[0], person[1])[order]
        out["persons"] = np.minimum.reduceat(ph, starts) if starts.size else np.zeros(0, np.uint64)
    return out


@numba.njit(cache=True, nogil=True)
def _merge_counts(
    ha: np.ndarray, ca: np.ndarray, pa_: np.ndarray, hb: np.ndarray, cb: np.ndarray, pb: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of two sorted unique hash arrays, the counts of a hash in both summed, its person
    the smaller of the two (they are equal unless two user values share a hash)."""
    out_h = np.empty(ha.size + hb.size, np.uint64)
    out_c = np.empty(ha.size + hb.size, np.int64)
    out_p = np.empty(ha.size + hb.size, np.uint64)
    i = j = k = 0
    while i < ha.size or j < hb.size:
        if j >= hb.size or (i < ha.size and ha[i] < hb[j]):
            out_h[k], out_c[k], out_p[k] = ha[i], ca[i], pa_[i]
            i += 1
        elif i >= ha.size or hb[j] < ha[i]:
            out_h[k], out_c[k], out_p[k] = hb[j], cb[j], pb[j]
            j += 1
        else:
            out_h[k], out_c[k], out_p[k] = ha[i], ca[i] + cb[j], min(pa_[i], pb[j])
            i += 1
            j += 1
        k += 1
    return out_h[:k].copy(), out_c[:k].copy(), out_p[:k].copy()


def merge_scans(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Tree-merge of :func:`scan_block` results (sums, sorted unions; ``persons`` kept aligned
    with ``hashes`` when every part has them)."""
    kinds = {p["kind"] for p in parts if p["labels"].size}
    if len(kinds) > 1:
        raise DataFormatError("the item column holds integers in one part of the input and strings in another")
    with_persons = all("persons" in p for p in parts)

    def persons(p: dict[str, Any]) -> np.ndarray:
        return p["persons"] if with_persons else np.zeros(p["hashes"].size, np.uint64)

    # pairwise merges of sorted arrays: a task holds its inputs and one output, no sort buffers
    hashes, counts, people = parts[0]["hashes"], parts[0]["counts"], persons(parts[0])
    for p in parts[1:]:
        hashes, counts, people = _merge_counts(hashes, counts, people, p["hashes"], p["counts"], persons(p))
    labels = [p["labels"] for p in parts if p["labels"].size]
    out = {
        "n_events": sum(p["n_events"] for p in parts),
        "n_null_user": sum(p["n_null_user"] for p in parts),
        "n_null_item": sum(p["n_null_item"] for p in parts),
        "n_null_time": sum(p["n_null_time"] for p in parts),
        "hashes": hashes,
        "counts": counts,
        "labels": np.unique(np.concatenate(labels)) if labels else np.zeros(0, np.int64),
        "kind": kinds.pop() if kinds else "i",
    }
    if with_persons:
        out["persons"] = people
    return out


def person_of(hashes: np.ndarray, persons: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The person pseudonym of every user hash of ``query``, from the sorted user hashes of the
    pre-pass (``hashes``) and their pseudonyms (``persons``, aligned)."""
    if not query.size:
        return np.zeros(0, np.uint64)
    pos = np.minimum(np.searchsorted(hashes, query), max(hashes.size - 1, 0))
    if not hashes.size or np.any(hashes[pos] != query):
        raise DataFormatError("a user is missing from the pre-pass (was the input changed meanwhile?)")
    return np.asarray(persons[pos], dtype=np.uint64)


def bound_baskets(users: np.ndarray, keys: np.ndarray, sessions: np.ndarray, bound: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Baskets given by their user hash (grouped: a user's baskets adjacent), keyed sort key
    and session number: which ones to keep so that no user has more than ``bound`` (a user
    with more keeps the ``bound`` of smallest key, ties by session number; ``None``: all), and
    the number of baskets of every user before the bound (one entry per user, in order)."""
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]]) if users.size else np.zeros(0, np.int64)
    per_user = np.diff(np.r_[starts, users.size]).astype(np.int64)
    keep = np.ones(users.size, bool)
    if bound is not None and per_user.size and per_user.max() > bound:
        order = np.lexsort((sessions, keys, users))  # users grouped the same way: ranks by key
        rank = np.arange(users.size) - np.repeat(starts, per_user)
        keep[order] = rank < bound
    return keep, per_user


def quantiles_of_histogram(hist: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Quantiles of the values ``v`` counted ``hist[v]`` times, as ``numpy.quantile``'s default
    (linear interpolation between order statistics) on the values written out; 0 when empty."""
    hist = np.asarray(hist, dtype=np.int64)
    n = int(hist.sum())
    if n == 0:
        return [0.0 for _ in qs]
    cum = np.cumsum(hist)
    out = []
    for q in qs:
        pos = q * (n - 1)
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        v_lo = int(np.searchsorted(cum, lo, side="right"))  # the value of order statistic ``lo``
        v_hi = int(np.searchsorted(cum, hi, side="right"))
        out.append(v_lo + (v_hi - v_lo) * (pos - lo))
    return out


@numba.njit(cache=True, nogil=True)
def _group_order(bounds: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A permutation that sorts ``values`` inside each group ``[bounds[g], bounds[g+1])``
    (groups stay where they are): insertion sort for the many small groups, a merge sort for
    the few large ones."""
    perm = np.arange(values.size)
    for g in range(bounds.size - 1):
        a, b = bounds[g], bounds[g + 1]
        if b - a <= 1:
            continue
        if b - a <= 32:
            for i in range(a + 1, b):
                p = perm[i]
                v = values[p]
                j = i - 1
                while j >= a and values[perm[j]] > v:
                    perm[j + 1] = perm[j]
                    j -= 1
                perm[j + 1] = p
        else:
            perm[a:b] = a + np.argsort(values[a:b], kind="mergesort")
    return perm


@numba.njit(cache=True, nogil=True)
def _collapse_groups(bounds: np.ndarray, ids: np.ndarray, cnt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inside each group ``[bounds[g], bounds[g+1])``: item ids sorted, equal ones collapsed
    with their counts summed. Returns the ids, the counts and the new size of every group."""
    perm = _group_order(bounds, ids)
    out_ids = np.empty(ids.size, np.int32)
    out_cnt = np.empty(ids.size, np.int64)
    sizes = np.zeros(bounds.size - 1, np.int64)
    k = 0
    for g in range(bounds.size - 1):
        start = k
        for j in range(bounds[g], bounds[g + 1]):
            i = perm[j]
            if k > start and out_ids[k - 1] == ids[i]:
                out_cnt[k - 1] += cnt[i]
            else:
                out_ids[k] = ids[i]
                out_cnt[k] = cnt[i]
                k += 1
        sizes[g] = k - start
    return out_ids[:k], out_cnt[:k], sizes


def _collapse_by_key(
    keys: np.ndarray, ids: np.ndarray, cnt: np.ndarray, *, new_group: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by ``keys`` (sorted here unless ``new_group`` marks the group starts of rows
    already grouped), equal item ids of a group collapsed: ``(index of each output row's group
    start in the grouped input, keys, ids, counts)``, groups in key order, ids ascending."""
    if new_group is None:
        order = np.argsort(keys)
        keys, ids, cnt = keys[order], ids[order], cnt[order]
        new_group = np.r_[True, keys[1:] != keys[:-1]] if keys.size else np.zeros(0, bool)
    starts = np.flatnonzero(new_group)
    bounds = np.r_[starts, keys.size].astype(np.int64)
    out_ids, out_cnt, sizes = _collapse_groups(bounds, ids.astype(np.int32, copy=False), cnt.astype(np.int64, copy=False))
    first = np.repeat(starts, sizes)
    return first, keys[first], out_ids, out_cnt


# ------------------------------------------------------------------------------ split
def _encode_items(items: pa.Array, vocab: np.ndarray) -> np.ndarray:
    if pa.types.is_integer(items.type):
        if vocab.dtype.kind != "i":
            raise DataFormatError("the item column holds integers in one part of the input and strings in another")
        vals = _numbers(items, np.int64)
        return np.searchsorted(vocab, vals).astype(np.int32)
    if vocab.dtype.kind == "i" and vocab.size:
        raise DataFormatError("the item column holds integers in one part of the input and strings in another")
    ids = pc.index_in(items, value_set=pa.array(vocab.astype(object), type=pa.large_string()))
    return _numbers(ids.fill_null(-1), np.int32)


def _in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if not sorted_set.size:
        return np.zeros(values.size, bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return sorted_set[pos] == values


def _keep_latest(h: np.ndarray, t: np.ndarray, ids: np.ndarray, cap: int) -> np.ndarray:
    """Indices of the ``cap`` latest events of every user, latest by (time, item id): sorted by
    (user, time, item), the last ``cap`` of each user."""
    order = np.lexsort((ids, t, h))
    hs = h[order]
    ends = np.r_[np.flatnonzero(hs[1:] != hs[:-1]), hs.size - 1] if hs.size else np.zeros(0, np.int64)
    end_of = np.repeat(ends, np.diff(np.r_[-1, ends]))
    keep = end_of - np.arange(hs.size) < cap
    return order[keep]


def split_block(
    user: pa.Array,
    item: pa.Array,
    time: pa.Array | None,
    *,
    k0: int,
    k1: int,
    vocab: np.ndarray,
    heavy: np.ndarray,
    policy: str,
    cap: int,
    collapse_time: bool,
    n_out: int,
) -> tuple[Piece, ...]:
    """Cut one event block into ``n_out`` pieces by user hash.

    Rows with nulls go; heavy users' events go (``policy == "drop"``) or only their ``cap``
    latest events of this block stay (``"cap"``; the global latest ``cap`` are among them).
    Other events with equal (user, item) — and equal time unless ``collapse_time`` is false —
    collapse into one row with a count, so a piece holds at most one row per distinct event.
    """
    ok, *_ = valid_mask(user, item, time)
    if not ok.all():  # copies only when there are nulls to drop
        mask = pa.array(ok)
        user, item, time = user.filter(mask), item.filter(mask), time.filter(mask) if time is not None else None
    h = siphash_users(user, k0, k1)
    ids = _encode_items(item, vocab)
    del user, item
    if ids.size and (ids.min() < 0 or ids.max() >= vocab.size):
        raise DataFormatError("an item is missing from the vocabulary of the pre-pass (was the input changed meanwhile?)")
    needs_t = not collapse_time or policy == "cap"  # user mode reads times only to cap heavy users
    t = _numbers(time, None) if (time is not None and needs_t) else np.zeros(h.size if needs_t else 0, np.int64)
    heavy_rows = _in_sorted(h, heavy)
    if policy == "drop" and heavy_rows.any():
        keep = ~heavy_rows
        h, ids, heavy_rows = h[keep], ids[keep], heavy_rows[keep]
        t = t[keep] if needs_t else t
    cnt = np.ones(h.size, np.int32)
    capped = heavy_rows if policy == "cap" else None
    if capped is not None and capped.any():
        # capped users keep raw events (their cap counts events); everyone else collapses
        free = ~capped
        sel = _keep_latest(h[capped], t[capped], ids[capped], cap)
        hc, tc, idc = h[capped][sel], t[capped][sel], ids[capped][sel]
        if collapse_time:
            _, hf, idf, cf = _collapse_by_key(h[free], ids[free], cnt[free])
            tf = np.zeros(hf.size, t.dtype)
        else:
            hf, tf, idf, cf = h[free], t[free], ids[free], cnt[free]
        h = np.concatenate([hf, hc])
        t = np.concatenate([tf, tc])
        ids = np.concatenate([idf, idc])
        cnt = np.concatenate([cf, np.ones(hc.size, np.int64)])
    elif collapse_time:
        _, h, ids, cnt = _collapse_by_key(h, ids, cnt)
        t = np.zeros(h.size if needs_t else 0, np.int64)
    # session/window mode without capped users: events stay events until the sessions are cut
    return _cut(h, ids.astype(np.int32), t, cnt.astype(np.int32), n_out)


def _cut(keys: np.ndarray, ids: np.ndarray, t: np.ndarray, cnt: np.ndarray, n_out: int) -> tuple[Piece, ...]:
    dest = bucket_of(keys, n_out)
    order = np.argsort(dest, kind="stable")
    bounds = np.searchsorted(dest[order], np.arange(n_out + 1))
    timed = t.size == keys.size
    return tuple(
        (keys[idx], ids[idx], t[idx] if timed else t, cnt[idx])
        for idx in (order[bounds[j] : bounds[j + 1]] for j in range(n_out))
    )


def concat_pieces(pieces: list[Piece]) -> Piece:
    """The pieces of one task as one (no copy for a single piece)."""
    if not pieces:
        return (np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int32))
    if len(pieces) == 1:
        h, ids, t, cnt = pieces[0]
    else:
        h, ids, t, cnt = (np.concatenate([p[c] for p in pieces]) for c in range(4))
    if t.size != h.size:  # pieces without times (user mode): zeros where a kernel reads them
        t = np.zeros(h.size, np.int64)
    return h, ids, t, cnt


def _apply_cap(h: np.ndarray, ids: np.ndarray, t: np.ndarray, cnt: np.ndarray, heavy: np.ndarray, cap: int) -> Piece:
    capped = _in_sorted(h, heavy)
    if not capped.any():
        return h, ids, t, cnt
    sel = _keep_latest(h[capped], t[capped], ids[capped], cap)
    free = ~capped
    return (
        np.concatenate([h[free], h[capped][sel]]),
        np.concatenate([ids[free], ids[capped][sel]]),
        np.concatenate([t[free], t[capped][sel]]),
        np.concatenate([cnt[free], cnt[capped][sel]]),
    )


# ------------------------------------------------------------------------------ merge
def _baskets(
    keys: np.ndarray, ids: np.ndarray, cnt: np.ndarray, n_items: int, tags: np.ndarray | None = None
) -> tuple[sp.csr_array, sp.csr_array, np.ndarray, np.ndarray | None]:
    """:func:`baskets_csr`, and with ``tags`` (one uint64 per input row) the tag of every output
    row: the smallest tag of its rows (they are equal unless two baskets share a key)."""
    order = np.argsort(keys)
    keys, ids, cnt = keys[order], ids[order], cnt[order]
    new_group = np.r_[True, keys[1:] != keys[:-1]] if keys.size else np.zeros(0, bool)
    _, k, i, c = _collapse_by_key(keys, ids, cnt, new_group=new_group)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if k.size else np.zeros(0, np.int64)
    indptr = np.r_[starts, k.size].astype(np.int32)
    indices = i.astype(np.int32)
    shape = (starts.size, int(n_items))
    block = sp.csr_array((np.ones(indices.size, np.int32), indices, indptr), shape=shape)
    weights = sp.csr_array((c.astype(np.float32), indices.copy(), indptr.copy()), shape=shape)
    row_tags = None
    if tags is not None:
        groups = np.flatnonzero(new_group)
        sorted_tags = np.asarray(tags, dtype=np.uint64)[order]
        row_tags = np.minimum.reduceat(sorted_tags, groups) if groups.size else np.zeros(0, np.uint64)
    return block, weights, k[starts], row_tags


def baskets_csr(
    keys: np.ndarray, ids: np.ndarray, cnt: np.ndarray, n_items: int
) -> tuple[sp.csr_array, sp.csr_array, np.ndarray]:
    """One output block: a row per distinct sort key (ascending), its items (ascending, unique)
    and their counts. Returns the 0/1 CSR block, the float32 counts with the same structure and
    the row keys."""
    block, weights, row_keys, _ = _baskets(keys, ids, cnt, n_items)
    return block, weights, row_keys


def merge_users(
    pieces: list[Piece],
    *,
    heavy: np.ndarray,
    policy: str,
    cap: int,
    n_items: int,
    users: tuple[np.ndarray, np.ndarray],
) -> tuple[sp.csr_array, sp.csr_array, np.ndarray]:
    """User mode: the baskets of one output block (one row per user hash), from its pieces, and
    the person pseudonym of every row (``users``: the sorted user hashes of the block's range
    with their pseudonyms, from the pre-pass)."""
    h, ids, t, cnt = concat_pieces(pieces)
    if policy == "cap":
        h, ids, t, cnt = _apply_cap(h, ids, t, cnt, heavy, cap)
    block, weights, row_keys, _ = _baskets(h, ids, cnt, n_items)
    return block, weights, person_of(users[0], users[1], row_keys)


def session_numbers(h: np.ndarray, t: np.ndarray, *, mode: str, span: float | int) -> np.ndarray:
    """Session number of every event, the events sorted by (user, time).

    ``"session"``: a user's sessions count from 0; an event starts a new one when its time
    minus the previous event's time is more than ``span`` (equal times and gap-exact events
    stay together). ``"window"``: ``floor(time / span)``, windows aligned at 0."""
    if mode == "window":
        if t.dtype.kind == "i" and float(span).is_integer():
            return np.floor_divide(t, np.int64(span))
        return np.floor(t / float(span)).astype(np.int64)
    if not h.size:
        return np.zeros(0, np.int64)
    first = np.r_[True, h[1:] != h[:-1]]
    gap = np.zeros(h.size, bool)
    gap[1:] = (t[1:] - t[:-1]) > span
    new = first | gap
    glob = np.cumsum(new) - 1
    user_first = np.maximum.accumulate(np.where(first, glob, 0))
    return (glob - user_first).astype(np.int64)


def cut_sessions(
    pieces: list[Piece],
    *,
    heavy: np.ndarray,
    policy: str,
    cap: int,
    mode: str,
    span: float | int,
    s0: int,
    s1: int,
    n_out: int,
    with_map: bool,
    users: tuple[np.ndarray, np.ndarray],
    max_baskets: int | None = None,
) -> tuple[tuple[Piece, ...], np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None, np.ndarray]:
    """Session/window mode, phase 1 on the events of a range of users: sessions cut, each
    basket keyed by ``SipHash((s0, s1), user hash || session number)``, a user with more than
    ``max_baskets`` baskets left with the ``max_baskets`` of smallest key
    (:func:`bound_baskets`), and the baskets re-split into ``n_out`` pieces by their key, the
    time slot of each piece carrying the basket's person pseudonym (looked up in ``users``:
    the sorted user hashes of this range with their pseudonyms, from the pre-pass).

    Returns the pieces, the number of baskets in each, (``with_map``) the (user hash, session
    number, basket key) of every basket kept, and the histogram of the number of baskets per
    user before the bound (``hist[b]`` users had ``b`` baskets)."""
    h, ids, t, cnt = concat_pieces(pieces)
    if policy == "cap":
        h, ids, t, cnt = _apply_cap(h, ids, t, cnt, heavy, cap)
    # sorted by (user, time): one argsort of the hashes, then each user's events by time
    order = np.argsort(h)
    hs = h[order]
    bounds = np.r_[np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]]) if hs.size else np.zeros(0, np.int64), hs.size]
    del hs
    order = order[_group_order(bounds.astype(np.int64), t[order])]  # one permutation, applied once
    h, ids, t, cnt = h[order], ids[order], t[order], cnt[order]
    sess = session_numbers(h, t, mode=mode, span=span)
    new = np.r_[True, (h[1:] != h[:-1]) | (sess[1:] != sess[:-1])] if h.size else np.zeros(0, bool)
    first_row, hh, ii, cc = _collapse_by_key(h, ids, cnt, new_group=new)
    ss = sess[first_row]
    keys = siphash_pairs(s0, s1, hh, ss)
    first = np.r_[True, (hh[1:] != hh[:-1]) | (ss[1:] != ss[:-1])] if hh.size else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    sizes = np.diff(np.r_[starts, hh.size])
    keep, per_user = bound_baskets(hh[starts], keys[starts], ss[starts], max_baskets)
    if not keep.all():
        rows = np.repeat(keep, sizes)
        hh, ii, cc, ss, keys = hh[rows], ii[rows], cc[rows], ss[rows], keys[rows]
        starts = np.r_[0, np.cumsum(sizes[keep])[:-1]].astype(np.int64) if keep.any() else np.zeros(0, np.int64)
        sizes = sizes[keep]
    persons = np.repeat(person_of(users[0], users[1], hh[starts]), sizes)
    out = _cut(keys, ii.astype(np.int32), persons.view(np.int64), cc.astype(np.int32), n_out)
    counts = np.bincount(bucket_of(keys[starts], n_out), minlength=n_out).astype(np.int64)
    basket_map = (hh[starts], ss[starts], keys[starts]) if with_map else None
    return out, counts, basket_map, np.bincount(per_user).astype(np.int64)


def merge_baskets(pieces: list[Piece], *, n_items: int) -> tuple[sp.csr_array, sp.csr_array, np.ndarray]:
    """Session/window mode, phase 2: the baskets of one output block, sorted by their key, and
    the person pseudonym of every basket (carried in the pieces' time slot)."""
    k, ids, tag, cnt = concat_pieces(pieces)
    block, weights, _, persons = _baskets(k, ids, cnt, n_items, tags=tag.view(np.uint64))
    assert persons is not None
    return block, weights, persons

"""Kernels of the event-log group-by against references written here: SipHash-2-4 in pure
Python (and the published test vectors), the session rule as a loop, the cap as a sort."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask.data import _event_kernels as K

MASK = 2**64 - 1
KEY_WORDS = (0x0706050403020100, 0x0F0E0D0C0B0A0908)  # the key 00 01 .. 0f of the SipHash paper


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & MASK


def _round(v: list[int]) -> None:
    v[0] = (v[0] + v[1]) & MASK
    v[1] = _rotl(v[1], 13) ^ v[0]
    v[0] = _rotl(v[0], 32)
    v[2] = (v[2] + v[3]) & MASK
    v[3] = _rotl(v[3], 16) ^ v[2]
    v[0] = (v[0] + v[3]) & MASK
    v[3] = _rotl(v[3], 21) ^ v[0]
    v[2] = (v[2] + v[1]) & MASK
    v[1] = _rotl(v[1], 17) ^ v[2]
    v[2] = _rotl(v[2], 32)


def siphash_reference(k0: int, k1: int, msg: bytes) -> int:
    """SipHash-2-4 as the paper writes it (Aumasson & Bernstein 2012), one byte string."""
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    n = len(msg)
    tail = msg[n - n % 8 :]
    words = [int.from_bytes(msg[i : i + 8], "little") for i in range(0, n - n % 8, 8)]
    words.append(int.from_bytes(tail, "little") | ((n & 0xFF) << 56))
    for m in words:
        v[3] ^= m
        _round(v)
        _round(v)
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        _round(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def test_published_vectors():
    # the paper's vectors: key 00..0f, messages 00 .. (n-1); n = 0 and n = 15 (a partial word)
    assert siphash_reference(*KEY_WORDS, b"") == 0x726FDB47DD0E0E31
    assert K.siphash(*KEY_WORDS, b"") == 0x726FDB47DD0E0E31
    assert K.siphash(*KEY_WORDS, bytes(range(15))) == 0xA129CA6149BE45E5
    assert K.siphash(*KEY_WORDS, bytes(range(8))) == siphash_reference(*KEY_WORDS, bytes(range(8)))


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=40), st.integers(0, MASK), st.integers(0, MASK))
def test_siphash_matches_the_reference(msg, k0, k1):
    assert K.siphash(k0, k1, msg) == siphash_reference(k0, k1, msg)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=20), st.integers(0, MASK), st.integers(0, MASK))
def test_string_users_hash_type_byte_and_utf8(values, k0, k1):
    arr = pa.array(values, pa.large_string())
    got = K.siphash_users(arr.slice(0), k0, k1)
    want = [siphash_reference(k0, k1, bytes([K.TYPE_STR]) + v.encode()) for v in values]
    assert got.tolist() == want
    # a slice (arrow offset) reads the right bytes
    assert K.siphash_users(arr.slice(1), k0, k1).tolist() == want[1:]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20), st.integers(0, MASK), st.integers(0, MASK))
def test_integer_users_hash_type_byte_and_8_le_bytes(values, k0, k1):
    got = K.siphash_users(pa.array(values, pa.int64()), k0, k1)
    want = [siphash_reference(k0, k1, bytes([K.TYPE_INT]) + struct.pack("<q", v)) for v in values]
    assert got.tolist() == want


def test_integer_and_string_one_differ():
    a = K.siphash_users(pa.array([1]), 3, 4)
    b = K.siphash_users(pa.array(["1"]), 3, 4)
    assert a[0] != b[0]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, MASK), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=10))
def test_pair_hash_is_siphash_of_16_bytes(pairs):
    a = np.array([p[0] for p in pairs], np.uint64)
    b = np.array([p[1] for p in pairs], np.int64)
    want = [siphash_reference(5, 6, struct.pack("<Qq", x, y)) for x, y in pairs]
    assert K.siphash_pairs(5, 6, a, b).tolist() == want


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), min_size=0, max_size=40),
    st.integers(0, 6),
)
def test_session_numbers_follow_the_gap_rule(events, gap):
    events = sorted(events)
    h = np.array([e[0] for e in events], np.uint64)
    t = np.array([e[1] for e in events], np.int64)
    want = []
    for i, (u, ti) in enumerate(events):
        if i == 0 or events[i - 1][0] != u:
            s = 0
        elif ti - events[i - 1][1] > gap:  # strictly more than the gap starts a new session
            s += 1
        want.append(s)
    assert K.session_numbers(h, t, mode="session", span=gap).tolist() == want


@pytest.mark.parametrize("span", [7, 2.5])
def test_window_numbers_floor_aligned_at_zero(span):
    t = np.array([-8, -1, 0, 6, 7, 13, 14, 100], np.int64)
    want = [int(np.floor(x / span)) for x in t.tolist()]
    assert K.session_numbers(np.zeros(t.size, np.uint64), t, mode="window", span=span).tolist() == want


def test_keep_latest_by_time_then_item():
    h = np.array([1, 1, 1, 1, 2, 2], np.uint64)
    t = np.array([5, 9, 9, 1, 3, 4], np.int64)
    ids = np.array([0, 2, 1, 3, 0, 1], np.int32)
    kept = K._keep_latest(h, t, ids, 2)
    # user 1 sorted by (time, item): (1,3) (5,0) (9,1) (9,2) -> the last two; user 2 keeps both
    assert sorted(zip(h[kept].tolist(), t[kept].tolist(), ids[kept].tolist())) == [(1, 9, 1), (1, 9, 2), (2, 3, 0), (2, 4, 1)]


def test_bucket_of_is_a_monotone_range_split():
    rng = np.random.default_rng(1)
    keys = np.sort(rng.integers(0, 2**64 - 1, 1000, dtype=np.uint64))
    b = K.bucket_of(keys, 7)
    assert np.all(np.diff(b) >= 0) and b.min() >= 0 and b.max() <= 6
    assert b.tolist() == [(int(k) >> 32) * 7 >> 32 for k in keys.tolist()]


def test_baskets_csr_rows_sorted_by_key_items_sorted_and_counted():
    keys = np.array([9, 3, 9, 3, 3], np.uint64)
    ids = np.array([1, 2, 0, 2, 0], np.int32)
    cnt = np.array([1, 1, 2, 1, 1], np.int64)
    block, weights, rows = K.baskets_csr(keys, ids, cnt, 4)
    assert rows.tolist() == [3, 9]
    assert block.indptr.tolist() == [0, 2, 4] and block.indices.tolist() == [0, 2, 0, 1]
    assert weights.data.tolist() == [1.0, 2.0, 2.0, 1.0]
    assert block.indices.dtype == np.int32 and block.indptr.dtype == np.int32


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 20), max_size=15), min_size=1, max_size=5))
def test_merge_scans_counts_every_user_like_a_concatenated_unique(blocks):
    parts = []
    for b in blocks:
        h, c = np.unique(np.array(b, np.uint64), return_counts=True)
        parts.append(
            {
                "n_events": len(b),
                "n_null_user": 0,
                "n_null_item": 0,
                "n_null_time": 0,
                "hashes": h,
                "counts": c.astype(np.int64),
                "labels": np.zeros(0, np.int64),
                "kind": "i",
            }
        )
    merged = K.merge_scans(parts)
    want_h, want_c = np.unique(np.array([x for b in blocks for x in b], np.uint64), return_counts=True)
    assert merged["hashes"].tolist() == want_h.tolist() and merged["counts"].tolist() == want_c.tolist()
    assert merged["n_events"] == sum(len(b) for b in blocks)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), max_size=40))
def test_quantiles_of_a_histogram_equal_numpy_on_the_values(values):
    hist = np.bincount(np.array(values, np.int64)) if values else np.zeros(0, np.int64)
    got = K.quantiles_of_histogram(hist, (0.5, 0.9))
    want = [float(np.quantile(values, q)) for q in (0.5, 0.9)] if values else [0.0, 0.0]
    assert got == pytest.approx(want)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, MASK)), max_size=30, unique_by=lambda x: x[1]), st.integers(1, 4))
def test_bound_keeps_each_users_baskets_of_smallest_key(baskets, bound):
    baskets = sorted(baskets)  # grouped by user
    users = np.array([b[0] for b in baskets], np.uint64)
    keys = np.array([b[1] for b in baskets], np.uint64)
    sessions = np.arange(len(baskets), dtype=np.int64)
    keep, per_user = K.bound_baskets(users, keys, sessions, bound)
    by_user: dict[int, list[int]] = {}
    for u, k in baskets:
        by_user.setdefault(u, []).append(k)
    assert per_user.tolist() == [len(by_user[u]) for u in sorted(by_user)]
    want = {(u, k) for u, ks in by_user.items() for k in sorted(ks)[:bound]}
    assert {b for b, kept in zip(baskets, keep.tolist()) if kept} == want
    assert K.bound_baskets(users, keys, sessions, None)[0].all()


def test_scan_gives_the_person_of_every_user_hash_and_merge_keeps_them_aligned():
    users = pa.array([5, 3, 5, 9, 3, 3], pa.int64())
    items = pa.array(["a"] * 6)
    parts = [K.scan_block(users.slice(i, 3), items.slice(i, 3), None, 1, 2, (7, 8)) for i in (0, 3)]
    merged = K.merge_scans(parts)
    h = K.siphash_users(pa.array([3, 5, 9], pa.int64()), 1, 2)
    p = K.siphash_users(pa.array([3, 5, 9], pa.int64()), 7, 8)
    order = np.argsort(h)
    assert merged["hashes"].tolist() == h[order].tolist() and merged["counts"].tolist() == np.array([3, 2, 1])[order].tolist()
    assert merged["persons"].tolist() == p[order].tolist()
    assert K.person_of(merged["hashes"], merged["persons"], h[::-1]).tolist() == p[::-1].tolist()
    with pytest.raises(Exception, match="missing from the pre-pass"):
        K.person_of(merged["hashes"], merged["persons"], np.array([12345], np.uint64))

"""Dynamic (streaming) condensation (docs/condensation.md#dynamic-maintenance): the split-condition
examples of docs/condensation.md#clarification-the-split-condition through the streaming API, a pure-Python
transcription of insert(x, p) as the oracle, conservation, determinism, chunking invariance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdm_dask.condensation.dynamic import StreamingCondenser
from ppdm_dask.condensation.groups import CondensedGroup, GroupTable
from ppdm_dask.condensation.release import CondensedRelease
from ppdm_dask.condensation.static import construct_groups
from ppdm_dask.data.digest import content_digest
from ppdm_dask.errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter
from ppdm_dask.random import Tag, as_key


# --------------------------------------------------------------------------- reference
def _sqdist(x, m) -> float:
    s = 0.0
    for a in range(len(x)):
        t = x[a] - m[a]
        s += t * t
    return s


class RefStream:
    """Literal transcription of docs/condensation.md#dynamic-maintenance with CondensedGroup objects and the documented choices:
    child 1 replaces the parent, child 2 is appended, children re-checked breadth-first; the pool
    is retried after every insertion into a group (earliest eligible first) and becomes a group
    when |pool| >= max level in it; finalize merges the pool by the Repair rule."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.groups: list[CondensedGroup] = []
        self.pool: list[tuple[np.ndarray, int]] = []
        self.events = {"split": 0, "cascade": 0, "pooled": 0, "retried": 0, "pool_group": 0, "pool_merge": 0}

    def init(self, X, p, key, init_number=None, strict=False) -> None:
        # the initialisation draws from the stream key of the release the stream would make if it
        # ended after these records (method, public parameters, content digest of the records and levels)
        params = {
            "privacy_levels": "per record (not published)",
            "columns": [f"x{j}" for j in range(X.shape[1])],
            "init_number": init_number,
            "split_strict": strict,
            "repair_splits": True,
            "publish_statistics": False,
        }
        skey = CondensedRelease.streams_for(as_key(key), "dynamic", params, content_digest(X, p))
        labels = construct_groups(X, p, skey.generator(Tag.CONDENSE_DYNAMIC, 0))
        table = GroupTable.from_points(X, p, labels)
        self.groups = [table[g] for g in range(len(table))]

    def split_cascade(self, i: int) -> None:
        queue, before = [i], self.events["split"]
        while queue:
            h = queue.pop(0)
            if self.groups[h].should_split(self.strict):
                c1, c2 = self.groups[h].split()
                self.groups[h] = c1
                self.groups.append(c2)
                queue += [h, len(self.groups) - 1]
                self.events["split"] += 1
        if self.events["split"] - before > 1:
            self.events["cascade"] += 1  # children split again

    def eligible(self, p: int) -> list[int]:
        return [k for k, G in enumerate(self.groups) if G.n >= p - 1]

    def place(self, x, p) -> None:
        E = self.eligible(p)
        best = min(E, key=lambda k: (_sqdist(x, self.groups[k].mean), k))  # ties: earliest
        self.groups[best].add_point(x, p)
        self.split_cascade(best)

    def check_pool(self) -> None:
        if self.pool and len(self.pool) >= max(q for _, q in self.pool):
            self.groups.append(
                CondensedGroup.from_points(np.stack([x for x, _ in self.pool]), np.array([q for _, q in self.pool]))
            )
            self.pool = []
            self.events["pool_group"] += 1
            self.split_cascade(len(self.groups) - 1)

    def insert(self, x, p) -> None:
        if not self.eligible(p):
            self.pool.append((x, p))
            self.events["pooled"] += 1
            self.check_pool()
            return
        self.place(x, p)
        changed = False
        while True:
            j = next((k for k, (_, q) in enumerate(self.pool) if self.eligible(q)), None)
            if j is None:
                break
            xj, qj = self.pool.pop(j)
            self.events["retried"] += 1
            changed = True
            self.place(xj, qj)
        if changed:
            self.check_pool()

    def finalize(self) -> None:
        if not self.pool:
            return
        r = max(q for _, q in self.pool)
        self.groups.append(CondensedGroup.from_points(np.stack([x for x, _ in self.pool]), np.array([q for _, q in self.pool])))
        self.pool = []
        self.events["pool_merge"] += 1
        i = len(self.groups) - 1
        while self.groups[i].n < r:
            assert len(self.groups) > 1
            j = min(
                (k for k in range(len(self.groups)) if k != i),
                key=lambda k: (_sqdist(self.groups[k].mean, self.groups[i].mean), k),
            )
            self.groups[j] = self.groups[j].merge(self.groups[i])
            del self.groups[i]
            i = j if j < i else j - 1


def _init_length(p: np.ndarray, init_number: int) -> int:
    """Shortest prefix L >= init_number with L >= max level of its rows (plain loop)."""
    for L in range(init_number, len(p) + 1):
        if L >= max(p[:L]):
            return L
    return len(p)


def _blocks(N: int, rng) -> list[tuple[int, int]]:
    cuts = np.sort(rng.choice(np.arange(1, N), size=min(N - 1, int(rng.integers(0, 6))), replace=False)) if N > 1 else []
    edges = [0, *map(int, cuts), N]
    return list(zip(edges[:-1], edges[1:]))


def _feed(cond: StreamingCondenser, X, p, bounds) -> StreamingCondenser:
    for a, b in bounds:
        cond.partial_fit(X[a:b], p[a:b])
    return cond


def _assert_same(table: GroupTable, ref: list[CondensedGroup]) -> None:
    assert len(table) == len(ref)
    np.testing.assert_array_equal(table.n, [g.n for g in ref])
    np.testing.assert_allclose(table.ps, [g.ps for g in ref], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(table.mean, np.stack([g.mean for g in ref]), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(table.m2, np.stack([g.m2 for g in ref]), rtol=1e-9, atol=1e-9)


def _mixture(N, d, rng, k=4):
    centres = rng.normal(scale=4.0, size=(k, d))
    return centres[rng.integers(k, size=N)] + rng.normal(size=(N, d))


# --------------------------------------------------------------------------- split condition
# levels 2, 2, 2, 3, 5: 25 < 28, no split; a sixth record of level 3: 36 >= 34, split into 3 + 3
def test_o1_4_split_condition_through_stream():
    X = np.array([[0.0, 0.0], [1.0, 0.2], [0.3, 1.1], [1.2, 1.0], [0.5, -0.7], [2.0, 0.4]])
    p = np.array([2, 2, 2, 3, 5, 3])
    c = StreamingCondenser(init_number=2, key=0)
    c.partial_fit(X[:5], p[:5])
    g = c.groups_
    assert len(g) == 1 and g.n[0] == 5 and g.ps[0] == 14.0  # 25 < 28: no split
    assert c.n_splits_ == 0 and c.init_number_ == 2
    c.partial_fit(X[5:], p[5:])  # 36 >= 34: split
    g = c.groups_
    assert c.n_splits_ == 1
    np.testing.assert_array_equal(g.n, [3, 3])
    np.testing.assert_array_equal(g.ps, [8.5, 8.5])
    # the children are exactly CondensedGroup.split of the six points' statistics
    c1, c2 = CondensedGroup.from_points(X, p).split()
    np.testing.assert_allclose(g.mean, [c1.mean, c2.mean], atol=1e-12)
    np.testing.assert_allclose(g.Fs.sum(0), X.sum(0), atol=1e-12)
    np.testing.assert_allclose(g.Sc.sum(0), X.T @ X, atol=1e-12)


@pytest.mark.parametrize("strict, groups", [(False, 2), (True, 1)])
def test_o1_4_equality_case_all_level_two(strict, groups):
    X = np.array([[0.0], [1.0], [3.0], [4.5]])
    c = StreamingCondenser(init_number=2, split_strict=strict, key=0).partial_fit(X, [2, 2, 2, 2])
    assert len(c.groups_) == groups  # 16 >= 16 splits, 16 > 16 does not
    if groups == 2:
        np.testing.assert_array_equal(c.groups_.n, [2, 2])
        np.testing.assert_array_equal(c.groups_.ps, [4.0, 4.0])


def test_nearest_group_ties_go_to_the_earliest():
    # two singletons (level 1) at 0 and 2; a record at 1 is equidistant: group 0 takes it
    c = StreamingCondenser(init_number=2, split_strict=True, key=0)
    c.partial_fit(np.array([[0.0], [2.0], [1.0]]), [1, 1, 1])
    assert c.groups_.n.tolist() == [2, 1]  # 4 > 4 is false under split_strict: no split
    np.testing.assert_array_equal(c.groups_.mean[:, 0], [0.5, 2.0])


# --------------------------------------------------------------------------- pool
def test_pool_retry_when_group_grows():
    X = np.array([[0.0], [1.0], [0.5], [0.7]])
    c = StreamingCondenser(init_number=2, key=0)
    c.partial_fit(X[:3], [2, 2, 4])  # level 4 needs a group of >= 3 members
    assert c.n_pending_ == 1 and c.groups_.n.tolist() == [2]
    c.partial_fit(X[3:], [2])  # group reaches 3: the pooled record joins it
    assert c.n_pending_ == 0 and c.groups_.n.tolist() == [4] and c.groups_.ps.tolist() == [10.0]


def test_pool_becomes_group_and_finalize_repair_chain():
    X = np.array([[0.0], [10.0], [20.0], [100.0], [101.0], [102.0], [103.0], [50.0]])
    p = np.array([1, 1, 1, 4, 4, 4, 4, 4])
    c = StreamingCondenser(init_number=3, key=0).partial_fit(X[:6], p[:6])
    assert c.groups_.n.tolist() == [1, 1, 1] and c.n_pending_ == 3
    c.partial_fit(X[6:7], p[6:7])  # |pool| = 4 >= 4: a new group at the end
    assert c.groups_.n.tolist() == [1, 1, 1, 4] and c.n_pending_ == 0
    np.testing.assert_allclose(c.groups_.mean[3], [101.5])
    # a lone level-5 record at the end: pooled, then merged by the Repair rule at finalize
    c2 = StreamingCondenser(init_number=3, key=0).partial_fit(X[[0, 1, 2, 7]], [1, 1, 1, 4])
    assert c2.n_pending_ == 1
    out = c2.finalize()
    # pool {50} -> nearest {20} (n 2 < 4) -> nearest {10} (3 < 4) -> nearest {0}: one group of 4
    assert out.n.tolist() == [4] and c2.n_pending_ == 0
    np.testing.assert_allclose(out.mean[0], [20.0])
    again = c2.finalize()  # idempotent
    np.testing.assert_array_equal(again.n, out.n)
    np.testing.assert_array_equal(again.m2, out.m2)


def test_finalize_infeasible_stream():
    c = StreamingCondenser(init_number=2, key=0).partial_fit(np.array([[0.0], [1.0], [2.0]]), [2, 2, 5])
    assert c.n_pending_ == 1
    with pytest.raises(InfeasiblePrivacyError, match="5"):
        c.finalize()


# --------------------------------------------------------------------------- oracle
def test_kernel_matches_pure_python_reference():
    rng = np.random.default_rng(2024)
    totals = {"split": 0, "cascade": 0, "pooled": 0, "retried": 0, "pool_group": 0, "pool_merge": 0}
    for case in range(100):
        d = int(rng.integers(1, 4))
        N = int(rng.integers(3, 70))
        X = _mixture(N, d, rng, k=int(rng.integers(1, 4)))
        # low levels first (small initial groups), higher later: exercises the pending pool
        top = 1 + (np.arange(N) * int(rng.integers(2, 8))) // N
        p = 1 + rng.integers(0, top + 1)
        if case % 7 == 0:
            p = rng.integers(1, 4, size=N)
        elif case % 4 == 1:  # singletons first, then records no singleton can take: pool groups
            p = np.where(np.arange(N) < N // 3, 1, rng.integers(3, 7, size=N))
        elif case % 4 == 3:  # Repair builds large low-Ps initial groups: recursive splits
            p = np.ones(N, dtype=np.int64)
            p[rng.integers(0, N, size=2)] = rng.integers(6, 12, size=2)
        init_number = int(rng.integers(1, max(2, N // 3)))
        strict = bool(case % 5 == 0)
        key = int(rng.integers(1 << 30))
        L = _init_length(p, init_number)
        if L > N or N < max(p[:L]):
            continue
        ref = RefStream(strict)
        ref.init(X[:L], p[:L], key, init_number, strict)
        for i in range(L, N):
            ref.insert(X[i], int(p[i]))
        cond = _feed(StreamingCondenser(init_number=init_number, split_strict=strict, key=key), X, p, _blocks(N, rng))
        assert cond.init_number_ == L
        _assert_same(cond.groups_, ref.groups)
        assert cond.n_pending_ == len(ref.pool)
        assert cond.n_splits_ == ref.events["split"]
        if N >= max(p):
            ref.finalize()
            _assert_same(cond.finalize(), ref.groups)
        for k in totals:
            totals[k] += ref.events[k]
    # the random streams must exercise every path
    assert all(v > 0 for v in totals.values()), totals


# --------------------------------------------------------------------------- invariants
def _check_conservation(table: GroupTable, X, p) -> None:
    assert table.n.sum() == len(X)
    scale = np.abs(X).max() ** 2 * len(X)
    assert np.abs(table.Fs.sum(0) - X.sum(0)).max() <= 1e-9 * np.abs(X).max() * len(X)
    assert np.abs(table.Sc.sum(0) - X.T @ X).max() <= 1e-9 * scale
    assert math.isclose(table.ps.sum(), p.sum(), rel_tol=1e-12)


def test_conservation_and_no_data_loss():
    rng = np.random.default_rng(7)
    N, d = 3000, 4
    X = _mixture(N, d, rng, k=6) + 50.0
    p = rng.integers(2, 11, size=N)
    p[1500] = 40  # a demanding late record
    c = StreamingCondenser(init_number=200, key=3)
    for a, b in _blocks(N, rng):
        c.partial_fit(X[a:b], p[a:b])
        assert c.groups_.n.sum() + c.n_pending_ + c.n_buffered_ == c.n_seen_ == b
    assert c.n_splits_ > 0
    out = c.finalize()
    _check_conservation(out, X, p)
    assert c.n_pending_ == 0
    assert out.n.min() >= 1


def test_determinism_and_chunking_invariance():
    rng = np.random.default_rng(11)
    N = 800
    X = _mixture(N, 3, rng)
    p = rng.integers(1, 9, size=N)
    one = StreamingCondenser(init_number=100, key=5).partial_fit(X, p).finalize()
    same = StreamingCondenser(init_number=100, key=5).fit(X, p).groups_
    for t in (
        same,
        *(
            _feed(StreamingCondenser(init_number=100, key=5), X, p, _blocks(N, np.random.default_rng(s))).finalize()
            for s in range(4)
        ),
    ):
        np.testing.assert_array_equal(t.n, one.n)
        np.testing.assert_array_equal(t.mean, one.mean)
        np.testing.assert_array_equal(t.m2, one.m2)
        np.testing.assert_array_equal(t.ps, one.ps)
    # init_number=None: the first block is the initialisation, the rest may be chunked freely; the
    # records it took are the public init_number (the same 100 rows as init_number=100)
    a = _feed(StreamingCondenser(key=5, allow_weak=True), X, p, [(0, 100), (100, N)])  # (level-1 records alone)
    b = _feed(StreamingCondenser(key=5, allow_weak=True), X, p, [(0, 100), (100, 300), (300, 301), (301, N)])
    for t in (a, b):
        assert t.init_number_ == 100 and t.release().parameters["init_number"] == 100
        np.testing.assert_array_equal(t.finalize().n, one.n)
        np.testing.assert_array_equal(t.finalize().mean, one.mean)
    c = _feed(StreamingCondenser(key=5, allow_weak=True), X, p, [(0, 150), (150, N)])  # another initialisation: another release
    assert c.release().parameters["init_number"] == 150 and c.release().stream_key != a.release().stream_key
    other = StreamingCondenser(init_number=100, key=6).fit(X, p).groups_
    assert len(other) != len(one) or not np.array_equal(other.mean, one.mean)


# --------------------------------------------------------------------------- initialisation
def test_none_mode_buffers_until_feasible():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    p = np.full(30, 2)
    p[0] = 9
    c = StreamingCondenser(key=1).partial_fit(X[:4], p[:4])
    assert c.init_number_ is None and c.n_buffered_ == 4 and c.groups_.n.size == 0
    c.partial_fit(X[4:8], p[4:8])  # 8 < 9: still buffering
    assert c.init_number_ is None and c.n_buffered_ == 8
    c.partial_fit(X[8:20], p[8:20])  # whole buffered blocks: 20 rows
    assert c.init_number_ == 20 and c.n_buffered_ == 0
    c.partial_fit(X[20:], p[20:])
    _check_conservation(c.finalize(), X, p)
    # the stream ends while buffering: static construction with Repair on the buffer
    short = StreamingCondenser(key=1).partial_fit(X[:5], p[:5]).partial_fit(X[5:9], p[5:9])
    out = short.finalize()
    assert short.init_number_ == 9 and out.n.sum() == 9 and out.feasible.all()
    with pytest.raises(InfeasiblePrivacyError):
        StreamingCondenser(key=1).partial_fit(X[:5], p[:5]).finalize()


def test_fit_default_init_rule():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 2))
    p = np.full(30, 2)
    c = StreamingCondenser(key=1).fit(X, p)
    assert c.init_number_ == 3  # ceil(0.1 * 30)
    p[1] = 7
    c = StreamingCondenser(key=1).fit(X, p)
    assert c.init_number_ == 7  # shortest feasible prefix >= 3
    _check_conservation(c.groups_, X, p)
    p[29] = 30  # feasible only with the whole data set: pooled, then repaired into one group
    c = StreamingCondenser(key=1).fit(X, p)
    assert c.groups_.n.tolist() == [30]
    # ceil(0.3) = 1 row of level 1 initialises; level 3 waits in the pool until the group has 2
    tiny = StreamingCondenser(key=1).fit(X[:3], [1, 3, 2])
    assert tiny.init_number_ == 1 and tiny.groups_.n.tolist() == [3]
    with pytest.raises(InfeasiblePrivacyError):
        StreamingCondenser(key=1).fit(X[:3], [1, 4, 2])
    assert len(StreamingCondenser(key=1).fit(np.empty((0, 2)), np.empty(0, np.int64)).groups_) == 0


# --------------------------------------------------------------------------- bad input
def test_bad_input():
    X = np.zeros((4, 2))
    with pytest.raises(InvalidParameter, match=">= 1"):
        StreamingCondenser().partial_fit(X, [1, 0, 2, 2])
    with pytest.raises(InvalidParameter, match="integers"):
        StreamingCondenser().partial_fit(X, [1.5, 1, 2, 2])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(DataFormatError, match="NaN"):
        StreamingCondenser().partial_fit(bad, [1, 1, 2, 2])
    c = StreamingCondenser().partial_fit(X, [1, 1, 2, 2])
    with pytest.raises(InvalidParameter, match="2 attributes"):
        c.partial_fit(np.zeros((3, 3)), [1, 1, 1])
    with pytest.raises(InvalidParameter, match="one level per row"):
        c.partial_fit(np.zeros((3, 2)), [1, 1])
    for bad_init in (0, -3, 2.5, True):
        assert StreamingCondenser(init_number=bad_init).init_number is bad_init  # __init__ only stores
        with pytest.raises(InvalidParameter, match="init_number"):
            StreamingCondenser(init_number=bad_init).partial_fit(X, [1, 1, 2, 2])
    with pytest.raises(InvalidParameter, match="no data"):
        StreamingCondenser().finalize()

"""EMASK privacy measures, parameter selection and s0 estimation (docs/emask.md#privacy-measures,
docs/emask.md#accuracy-and-the-choice-of-p-and-q): basic privacy against the paper's Tables 3 and 6,
the (p, q) choice reproducing its Tables 1-2, and the hand-computed reinterrogated-privacy example
(RP = 26.11) of docs/emask.md#reinterrogated-privacy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.emask import _privacy_kernels as PK
from ppdm_dask.emask.parameters import ParameterChoice, choose_parameters, estimate_s0
from ppdm_dask.emask.privacy import (
    basic_privacy,
    breach_probabilities,
    err6,
    ldp_epsilon,
    r1,
    record_epsilon,
    reinterrogated_privacy,
    relative_error,
)
from ppdm_dask.errors import InvalidParameter

# ---------------------------------------------------------------------------- basic privacy
O35 = {
    0.01: {(0.6, 0.96): 91.94, (0.5, 0.97): 92.54, (0.4, 0.98): 92.91, (0.3, 0.99): 92.53, (0.9, 0.9): 92.49},
    0.005: {
        (0.8, 0.96): 92.67,
        (0.7, 0.96): 94.29,
        (0.6, 0.96): 95.71,
        (0.6, 0.97): 94.44,
        (0.7, 0.97): 92.61,
        (0.6, 0.98): 92.06,
        (0.5, 0.98): 94.29,
        (0.4, 0.98): 96.16,
        (0.4, 0.99): 93.12,
        (0.3, 0.99): 95.82,
    },
}
PAPER = {  # Tables 3 and 6
    0.01: {(0.6, 0.96): 92, (0.5, 0.97): 92.6, (0.4, 0.98): 93, (0.3, 0.99): 92.6},
    0.005: {
        (0.8, 0.96): 92.7,
        (0.7, 0.96): 94.3,
        (0.6, 0.96): 95.8,
        (0.6, 0.97): 94.5,
        (0.7, 0.97): 92.7,
        (0.6, 0.98): 92.1,
        (0.5, 0.98): 94.3,
        (0.4, 0.98): 96.2,
        (0.4, 0.99): 93.2,
        (0.3, 0.99): 96,
    },
}


@pytest.mark.parametrize("s0", [0.01, 0.005])
def test_basic_privacy_oracle_o35(s0):
    for (p, q), bp in O35[s0].items():
        assert basic_privacy(p, q, s0=s0) == pytest.approx(bp, abs=0.005)
    for (p, q), bp in PAPER[s0].items():
        assert abs(basic_privacy(p, q, s0=s0) - bp) <= 0.2


def test_r1_definition_and_vectorised():
    p, q = 0.4, 0.98
    s = np.array([0.001, 0.01, 0.3, 1.0, 0.0])
    got = r1(p, q, s)
    # P(Y=1|X=1)P(X=1|Y=1) + P(Y=0|X=1)P(X=1|Y=0) from Bayes
    py1 = s * p + (1 - s) * (1 - q)
    want = p * (s * p / py1) + (1 - p) * (s * (1 - p) / (1 - py1))
    np.testing.assert_allclose(got, want)
    assert isinstance(r1(p, q, 0.01), float)
    # MASK is symmetric in p <-> 1 - p
    assert r1(0.9, 0.9, 0.01) == pytest.approx(r1(0.1, 0.1, 0.01))
    # s = 1 with p = 0: the 0/0 term is 0
    assert r1(0.0, 0.5, 1.0) == pytest.approx(1.0)


def test_basic_privacy_weighted_supports():
    s = np.array([0.001, 0.004, 0.01, 0.02, 0.0])
    p, q = 0.4, 0.98
    want = 100 * (1 - np.dot(s, r1(p, q, s)) / s.sum())
    assert basic_privacy(p, q, supports=s) == pytest.approx(want)
    # Jensen: the s0 approximation over-estimates privacy
    assert basic_privacy(p, q, s0=s.mean() * len(s) / 4) >= basic_privacy(p, q, supports=s[:4])
    # equal supports: both modes agree
    assert basic_privacy(p, q, supports=[0.01] * 7) == pytest.approx(basic_privacy(p, q, s0=0.01))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(p=0.5, q=0.5, s0=0.01),
        dict(p=0.3, q=0.7 + 1e-8, s0=0.01),
        dict(p=1.2, q=0.9, s0=0.01),
        dict(p=0.4, q=0.98, s0=0.0),
        dict(p=0.4, q=0.98, s0=1.0),
        dict(p=0.4, q=0.98),
        dict(p=0.4, q=0.98, s0=0.01, supports=[0.1]),
        dict(p=0.4, q=0.98, supports=[0.0, 0.0]),
        dict(p=0.4, q=0.98, supports=[0.5, 1.5]),
    ],
)
def test_basic_privacy_validation(kwargs):
    p, q = kwargs.pop("p"), kwargs.pop("q")
    with pytest.raises(InvalidParameter):
        basic_privacy(p, q, **kwargs)


def test_pq_sum_one_message():
    with pytest.raises(InvalidParameter, match="reconstruct"):
        r1(0.5, 0.5, 0.1)


# ---------------------------------------------------------------------------- accuracy, epsilon
def test_err6_and_relative_error_o36():
    assert err6(0.9, 0.9, 0.003) == pytest.approx(6.8465, abs=1e-4)
    for (p, q), e in {(0.3, 0.99): 6.4512, (0.4, 0.98): 6.8389, (0.5, 0.97): 6.7016, (0.6, 0.96): 6.4389}.items():
        assert err6(p, q, 0.003) == pytest.approx(e, abs=1e-4)
    assert relative_error(0.4, 0.98, 0.01, 10**6) == pytest.approx(0.038858, abs=1e-6)
    assert relative_error(0.4, 0.98, 0.01, 10**6) == pytest.approx(err6(0.4, 0.98, 0.01) / 100)
    # Δn̄/n directly (docs/emask.md#correction-the-relative-error-of-eq-6)
    p, q, N, n = 0.4, 0.98, 10**6, 10**4
    dn = math.sqrt(n * p * (1 - p) + (N - n) * q * (1 - q)) / (p + q - 1)
    assert relative_error(p, q, n / N, N) == pytest.approx(dn / n)
    np.testing.assert_allclose(err6(0.4, 0.98, np.array([0.003, 0.01])), [err6(0.4, 0.98, 0.003), err6(0.4, 0.98, 0.01)])
    with pytest.raises(InvalidParameter):
        relative_error(0.4, 0.98, 0.01, 0)
    with pytest.raises(InvalidParameter):
        err6(0.4, 0.98, 0.0)


def test_ldp_epsilon():
    assert ldp_epsilon(0.4, 0.98) == pytest.approx(math.log(20))
    assert ldp_epsilon(0.9, 0.9) == pytest.approx(math.log(9))
    assert ldp_epsilon(1.0, 0.9) == math.inf
    assert ldp_epsilon(0.5, 1.0) == math.inf
    # brute force over outputs and inputs
    for p, q in [(0.3, 0.99), (0.7, 0.2), (0.1, 0.1)]:
        P = {(1, 1): p, (0, 1): 1 - p, (1, 0): 1 - q, (0, 0): q}  # (y, x)
        eps = max(abs(math.log(P[y, 1] / P[y, 0])) for y in (0, 1))
        assert ldp_epsilon(p, q) == pytest.approx(eps)
    assert record_epsilon(0.4, 0.98, 1) == pytest.approx(ldp_epsilon(0.4, 0.98))
    assert record_epsilon(0.4, 0.98, 1000) == pytest.approx(1000 * math.log(20))
    assert record_epsilon(0.4, 0.98, 0) == 0.0
    with pytest.raises(InvalidParameter):
        record_epsilon(0.4, 0.98, -1)
    with pytest.raises(InvalidParameter):
        ldp_epsilon(0.5, 0.5)


def test_record_epsilon_is_tight_by_enumeration():
    # two records differing in k bits: max over all outputs of the log likelihood ratio
    p, q, k = 0.4, 0.98, 3

    def lik(y, x):
        return math.prod((p if yi else 1 - p) if xi else ((1 - q) if yi else q) for yi, xi in zip(y, x))

    def worst(x, x2):
        return max(abs(math.log(lik(y, x) / lik(y, x2))) for y in itertools.product((0, 1), repeat=4))

    bound = record_epsilon(p, q, k)
    pairs = [
        (x, x2)
        for x in itertools.product((0, 1), repeat=4)
        for x2 in itertools.product((0, 1), repeat=4)
        if sum(a != b for a, b in zip(x, x2)) == k
    ]
    assert max(worst(x, x2) for x, x2 in pairs) == pytest.approx(bound)  # tight over pairs
    assert worst((1, 1, 0, 1), (0, 0, 1, 1)) < bound  # mixed directions: smaller


# ---------------------------------------------------------------------------- parameter selection
TABLE1 = [(0.3, 0.99), (0.4, 0.98), (0.5, 0.97), (0.6, 0.96)]
TABLE2_PLUS = [
    (0.3, 0.99),
    (0.4, 0.98),
    (0.4, 0.99),
    (0.5, 0.97),
    (0.5, 0.98),
    (0.6, 0.96),
    (0.6, 0.97),
    (0.6, 0.98),
    (0.7, 0.96),
    (0.7, 0.97),
    (0.8, 0.96),
    (0.8, 0.97),
    (0.9, 0.96),
]


def test_choose_parameters_o36():
    got = choose_parameters(0.01)
    assert [(c.p, c.q) for c in got] == TABLE1
    for c, e in zip(got, [6.4512, 6.8389, 6.7016, 6.4389]):
        assert isinstance(c, ParameterChoice)
        assert c.err6 == pytest.approx(e, abs=1e-4)
        assert c.basic_privacy == pytest.approx(O35[0.01][(c.p, c.q)], abs=0.005)
        assert c.relative_error is None
        assert c.ldp_epsilon == pytest.approx(ldp_epsilon(c.p, c.q))
    got = choose_parameters(0.005, n_transactions=10**6)
    assert [(c.p, c.q) for c in got] == TABLE2_PLUS
    extra = {(c.p, c.q): c.basic_privacy for c in got[-3:]}
    assert [round(v, 2) for v in extra.values()] == [92.67, 90.53, 90.85]
    assert got[0].relative_error == pytest.approx(relative_error(0.3, 0.99, 0.003, 10**6))


def test_choose_parameters_options():
    # the MASK baseline itself passes the accuracy test (tie) when q_min allows it
    got = choose_parameters(0.01, q_min=0.0, privacy_floor=0.0, p_grid=[0.9], q_grid=[0.9])
    assert [(c.p, c.q) for c in got] == [(0.9, 0.9)]
    # p + q = 1 is skipped, not an error
    assert choose_parameters(0.01, q_min=0.0, privacy_floor=0.0, p_grid=[0.1], q_grid=[0.9]) == []
    assert choose_parameters(0.01, privacy_floor=101) == []
    with pytest.raises(InvalidParameter):
        choose_parameters(0.0)
    with pytest.raises(InvalidParameter):
        choose_parameters(0.01, min_support=0)
    with pytest.raises(InvalidParameter):
        choose_parameters(0.01, p_grid=[])


def test_estimate_s0():
    rng = np.random.default_rng(0)
    m = (rng.random((3000, 40)) < 0.1).astype(np.int32)
    m[:, 39] = 0  # an item that never occurs still counts (support 0)
    tx = TransactionArray.from_scipy(sp.csr_array(m), npartitions=3)
    assert estimate_s0(tx) == pytest.approx(m.sum() / m.size)
    a = estimate_s0(tx, sample_fraction=0.3, key=7)
    b = estimate_s0(tx.repartition(npartitions=5), sample_fraction=0.3, key=7)
    assert a == b  # keyed and partition-independent
    assert a == pytest.approx(m.sum() / m.size, rel=0.1)
    assert estimate_s0(tx, sample_fraction=1.0, key=1) == pytest.approx(m.sum() / m.size)
    with pytest.raises(InvalidParameter):
        estimate_s0(tx, sample_fraction=0.0)


# ---------------------------------------------------------------------------- reinterrogated privacy
def _ta(rows, n_items, npartitions):
    m = np.zeros((len(rows), n_items), dtype=np.int32)
    for i, r in enumerate(rows):
        m[i, list(r)] = 1
    return TransactionArray.from_scipy(sp.csr_array(m), npartitions=npartitions)


def test_rp_oracle_o37():
    T = [{0, 1}, {0, 1}, {0}, {1}]  # a = 0, b = 1
    D = [{0, 1}, {0}, {0, 1}, {1}]
    F = [(0,), (1,), (0, 1)]
    for nt, nd in [(1, 1), (2, 2), (4, 3)]:
        t, d = _ta(T, 2, nt), _ta(D, 2, nd)
        br = breach_probabilities(t, d, F)
        assert br == pytest.approx({((0,), 0): 1.0, ((1,), 1): 2 / 3, ((0, 1), 0): 1.0, ((0, 1), 1): 0.5})
        rp = reinterrogated_privacy(t, d, F, 90)
        assert rp == pytest.approx((0 + 100 / 3 + 0 + 90 + 0 + 100 / 3) / 6)
        assert round(rp, 2) == 26.11


def test_rp_with_frequent_itemsets_and_labels():
    from ppdm_dask.mining.results import FrequentItemsets

    t = TransactionArray.from_lists([["a", "b"], ["a", "b"], ["a"], ["b"]], npartitions=2)
    d = TransactionArray.from_lists([["a", "b"], ["a"], ["a", "b"], ["b"]], npartitions=1)
    fi = FrequentItemsets(
        levels={1: (np.array([[0], [1]], np.int32), np.array([3, 3])), 2: (np.array([[0, 1]], np.int32), np.array([2]))},
        vocabulary=t.vocabulary,
        n_transactions=4,
        min_count=1,
    )
    assert reinterrogated_privacy(t, d, fi, 90) == pytest.approx(235 / 9)


def _brute_rp(T, D, F, bp):
    F = [frozenset(f) for f in {tuple(sorted(f)) for f in F} if f]

    def breach(I, b):
        S = [t for t in range(len(D)) if I <= D[t]]
        return sum(b in T[t] for t in S) / len(S) if S else 0.0

    inF = set().union(*F) if F else set()
    priv = []
    for t in range(len(T)):
        for b in T[t]:
            cands = [breach(I, b) for I in F if b in I and I <= D[t]]
            if b not in inF or b not in D[t] or not cands:
                priv.append(bp)
            else:
                priv.append(100 * (1 - max(cands)))
    return sum(priv) / len(priv) if priv else math.nan


def _random_case(seed, n=150, d=9):
    rng = np.random.default_rng(seed)
    T = [set(np.flatnonzero(rng.random(d) < rng.uniform(0.15, 0.5)).tolist()) for _ in range(n)]
    D = []
    for t in T:
        D.append({i for i in range(d) if (rng.random() < 0.7 if i in t else rng.random() < 0.15)})
    F = [c for k in (1, 2, 3) for c in itertools.combinations(range(d), k) if rng.random() < 0.5]
    F.append((0, 1, 2, 3, 4, 5, 6))  # probably in no distorted row: breach 0
    return T, D, F


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rp_matches_brute_force_all_partitionings(seed):
    T, D, F = _random_case(seed)
    want = _brute_rp(T, D, F, 87.5)
    got = [reinterrogated_privacy(_ta(T, 9, a), _ta(D, 9, b), F, 87.5) for a, b in [(1, 1), (4, 4), (7, 3)]]
    for g in got:
        assert g == pytest.approx(want, rel=1e-12, abs=1e-12)
    # breach values vs brute force
    br = breach_probabilities(_ta(T, 9, 3), _ta(D, 9, 2), F)
    for (I, b), v in list(br.items())[:40]:
        S = [t for t in range(len(D)) if set(I) <= D[t]]
        assert v == pytest.approx(sum(b in T[t] for t in S) / len(S) if S else 0.0)


def test_rp_validation_and_edge_cases():
    T, D, F = _random_case(5, n=20)
    t, d = _ta(T, 9, 2), _ta(D, 9, 2)
    assert reinterrogated_privacy(t, d, [], 80) == pytest.approx(80)  # nothing disclosed
    with pytest.raises(InvalidParameter):
        reinterrogated_privacy(t, d, [(0, 99)], 80)
    with pytest.raises(InvalidParameter):
        reinterrogated_privacy(t, d, F, 120)
    with pytest.raises(InvalidParameter):
        reinterrogated_privacy(t, _ta(D, 10, 2), F, 80)
    empty = _ta([set()] * 5, 3, 2)
    assert math.isnan(reinterrogated_privacy(empty, empty, [(0,)], 80))


# ---------------------------------------------------------------------------- kernels alone
def test_kernels_chunking(monkeypatch):
    T, D, F = _random_case(11, n=300, d=9)
    t = _ta(T, 9, 1).compute()
    d = _ta(D, 9, 1).compute()
    by_len = {}
    for f in {tuple(sorted(f)) for f in F}:
        by_len.setdefault(len(f), []).append(f)
    plan = PK.make_plan([np.array(sorted(v)) for _, v in sorted(by_len.items())])
    ref1 = PK.breach_counts(t, d, plan)
    sizes = ref1[: PK.n_itemsets(plan)]
    per_pair = np.concatenate(
        [
            np.repeat(sizes[o : o + pos.shape[0]], k)
            for (k, pos), o in zip(plan[1], np.cumsum([0] + [p.shape[0] for _, p in plan[1]])[:-1])
        ]
    )
    breach = np.where(per_pair > 0, ref1[PK.n_itemsets(plan) :] / np.maximum(per_pair, 1), 0.0)
    ref2 = PK.privacy_sums(t, d, plan, breach)
    assert ref2[2] == t.nnz
    # brute force of the per-block sums
    items = plan[0]
    tot, nq = 0.0, 0
    i = 0
    pairs = {}
    for _k, pos in plan[1]:
        for row in items[pos].tolist():
            for b in row:
                pairs.setdefault(b, []).append((frozenset(row), breach[i]))
                i += 1
    for r in range(len(T)):
        for b in T[r]:
            c = [v for I, v in pairs.get(b, []) if I <= D[r]]
            if b in D[r] and c:
                tot += 1 - max(c)
                nq += 1
    assert ref2[0] == pytest.approx(tot) and ref2[1] == nq
    # tiny row and itemset chunks give the same numbers
    monkeypatch.setattr(PK, "ROW_CHUNK", 64)
    monkeypatch.setattr(PK, "MAX_CHUNK_BYTES", 1)
    np.testing.assert_array_equal(PK.breach_counts(t, d, plan), ref1)
    np.testing.assert_allclose(PK.privacy_sums(t, d, plan, breach), ref2, rtol=1e-12)
    # pack_columns against a dense reference, with a row offset
    bits = PK.pack_columns(t, items, 70, 200)
    dense = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little", count=130).astype(bool)
    np.testing.assert_array_equal(dense, t.toarray()[70:200][:, items].T.astype(bool))
    assert PK.sum_arrays([np.array([1, 2]), np.array([3, 4])]).tolist() == [4, 6]

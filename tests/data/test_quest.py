"""Quest synthetic market-basket generator: notation, statistics, determinism, layout."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask.data import _quest_kernels as QK
from ppdm_dask.data.quest import QuestPatterns, QuestSpec, make_patterns, parse_spec, quest
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.random import Key


def _blocks(tx) -> list[sp.csr_array]:
    return list(dask.compute(*tx.blocks.to_delayed().ravel(), scheduler="sync"))


def _csr(tx) -> sp.csr_array:
    return QK.vstack_csr(_blocks(tx), tx.n_items)


@pytest.fixture(scope="module")
def t10():
    """T10.I4.D20K.N1K under a fixed key (shared by the statistical tests)."""
    tx = quest("T10.I4.D20K.N1K", key=Key(11), block_rows=4096)
    return tx, _csr(tx)


# ---------------------------------------------------------------------------------- notation
@pytest.mark.parametrize(
    "text,expected",
    [
        ("T10.I4.D100K", QuestSpec(T=10, I=4, D=100_000)),
        ("T10I4D100K", QuestSpec(T=10, I=4, D=100_000)),
        ("t10.i4.d100k.n1k", QuestSpec(T=10, I=4, D=100_000, N=1000)),
        ("T20.I6.D1M.N2K.L5K", QuestSpec(T=20, I=6, D=1_000_000, N=2000, L=5000)),
        ("T2.5I1.5D10K", QuestSpec(T=2.5, I=1.5, D=10_000)),
        ("T10.I4.D1.5K", QuestSpec(T=10, I=4, D=1500)),
        ("C20.I4.D200K", QuestSpec(T=20, I=4, D=200_000, n_classes=2)),
        ("  D5K.I2.T5  ", QuestSpec(T=5, I=2, D=5000)),
    ],
)
def test_parse_spec_valid_forms(text, expected):
    spec = parse_spec(text)
    assert spec == expected
    assert parse_spec(spec.name) == spec  # the name gives back the notation


def test_spec_name():
    assert parse_spec("t10i4d100k").name == "T10.I4.D100K.N1K"
    assert parse_spec("C20I6D200K").name == "C20.I6.D200K.N1K"
    assert QuestSpec(T=10, I=4, D=1234, N=500).name == "T10.I4.D1234.N500"
    assert QuestSpec(T=2.5, I=2, D=1500, N=100_000, L=500).name == "T2.5.I2.D1.5K.N100K.L500"


@pytest.mark.parametrize(
    "text,msg",
    [
        ("", "empty"),
        ("T10.I4", "lacks field"),
        ("I4.D10K", "lacks field"),
        ("T10.X4.D1K", "unknown field 'X'"),
        ("T10.I4.D1K.T5", "twice"),
        ("T10.C20.I4.D1K", "twice"),
        ("T10.I4.D1.5555K", "whole number"),
        ("T10..I4.D1K", "position 3"),
        ("T10.I4.D1K.", "position"),
        ("10.I4.D1K", "position 0"),
        ("T10.I4.D-5", "position"),
        ("T0.5.I1.D1K", "T .*>= 1"),
        ("T20.I2.D1K.N10", "T .*<= N = 10"),
        ("T10.I2000.D1K", "between 1 and N"),
    ],
)
def test_parse_spec_errors(text, msg):
    with pytest.raises(InvalidParameter, match=msg):
        parse_spec(text)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(T=0.5, I=1, D=10),
        dict(T=20, I=1, D=10, N=10),
        dict(T=10, I=0.5, D=10),
        dict(T=10, I=4, D=-1),
        dict(T=10, I=4, D=10, N=0),
        dict(T=10, I=4, D=10, L=0),
        dict(T=10, I=4, D=10, correlation=1.5),
        dict(T=10, I=4, D=10, corruption_mean=-0.1),
        dict(T=10, I=4, D=10, corruption_var=-1),
        dict(T=10, I=4, D=10.5),
        dict(T=10, I=4, D=10, n_classes=3),
        dict(T=float("nan"), I=4, D=10),
    ],
)
def test_spec_validation(kwargs):
    with pytest.raises(InvalidParameter):
        QuestSpec(**kwargs)


def test_quest_argument_errors():
    with pytest.raises(InvalidParameter):
        quest("T10.I4.D1K", key=1, rows_per_partition=0)
    with pytest.raises(InvalidParameter):
        quest("T10.I4.D1K", key=1, block_rows=0)
    with pytest.raises(InvalidParameter):
        quest(42, key=1)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- statistics
def test_mean_length_t10_i4(t10):
    tx, m = t10
    lengths = np.diff(m.indptr)
    assert m.shape == (20_000, 1000) and tx.n_transactions == 20_000
    assert abs(lengths.mean() / 10 - 1) < 0.02
    assert lengths.min() >= 1


def test_mean_length_t20_i6():
    m = _csr(quest("T20.I6.D10K", key=Key(12), block_rows=4096))
    assert abs(np.diff(m.indptr).mean() / 20 - 1) < 0.02


def test_mean_length_when_patterns_are_large():
    # I close to T: the literal "add in half the cases" rule overshoots by ~14% here
    m = _csr(quest("T5.I4.D10K", key=Key(13), block_rows=4096))
    assert abs(np.diff(m.indptr).mean() / 5 - 1) < 0.02


def test_pattern_sizes_are_one_plus_poisson():
    spec = QuestSpec(T=10, I=4, D=0)
    p = make_patterns(spec, Key(5))
    assert isinstance(p, QuestPatterns) and len(p) == spec.L
    sizes = p.sizes
    assert sizes.min() >= 1
    lam, n = spec.I - 1, spec.L
    # size - 1 ~ Poisson(3): mean and variance both 3; standard errors sqrt(3/n), sqrt(21/n)
    assert abs((sizes - 1).mean() - lam) < 4 * np.sqrt(lam / n)
    assert abs((sizes - 1).var() - lam) < 4 * np.sqrt(lam * (1 + 3 * lam) - lam**2) / np.sqrt(n)
    for q in range(50):  # items of a pattern are distinct and in range
        items = p.pattern(q)
        assert np.unique(items).size == items.size and items.min() >= 0 and items.max() < spec.N
    assert np.isclose(p.weights.sum(), 1) and (p.weights > 0).all()
    assert ((p.corruption >= 0) & (p.corruption <= 1)).all()
    assert abs(p.corruption.mean() - 0.5) < 0.05  # clipping is symmetric around 0.5


def _share_with_previous(p: QuestPatterns) -> float:
    shares = [np.isin(p.pattern(q), p.pattern(q - 1)).mean() for q in range(1, len(p))]
    return float(np.mean(shares))


def test_consecutive_patterns_are_correlated():
    key = Key(6)
    correlated = _share_with_previous(make_patterns(QuestSpec(T=10, I=4, D=0), key))
    uncorrelated = QuestSpec(T=10, I=4, D=0, correlation=0.0)
    independent = _share_with_previous(make_patterns(uncorrelated, key))
    # E[min(round(f * size), size) / size] with f ~ Exp(mean 0.5): about 0.38 (rounding, clipping)
    assert 0.3 < correlated < 0.5
    assert independent < 0.02  # chance overlap only: about I / N


def test_item_supports_are_skewed(t10):
    _, m = t10
    supports = np.bincount(m.indices, minlength=1000).astype(float)
    top = np.sort(supports)[::-1][:100].sum() / supports.sum()
    cv = supports.std() / supports.mean()
    # baseline: uniform random baskets with the same lengths
    rng = np.random.default_rng(0)
    lengths = np.diff(m.indptr)
    uni = np.bincount(np.concatenate([rng.choice(1000, k, replace=False) for k in lengths]), minlength=1000).astype(float)
    uni_top = np.sort(uni)[::-1][:100].sum() / uni.sum()
    uni_cv = uni.std() / uni.mean()
    # measured: top 10% of items ~ 24% of occurrences (uniform: 11%), CV ~ 0.65 (uniform: 0.07)
    assert uni_top < 0.13 and uni_cv < 0.1
    assert top > 0.18
    assert cv > 0.4 and cv > 4 * uni_cv


def test_frequent_pairs_come_from_patterns(t10):
    # the densest item pairs co-occur far more than independence predicts
    _, m = t10
    x = m.astype(np.int64)
    co = (x.T @ x).toarray()
    sup = np.diag(co).astype(float)
    np.fill_diagonal(co, 0)
    n = m.shape[0]
    i, j = np.unravel_index(np.argmax(co), co.shape)
    assert co[i, j] > 5 * sup[i] * sup[j] / n


# ---------------------------------------------------------------------------------- determinism
def test_same_key_same_data_for_any_partitioning():
    key = Key(2024)
    ref = _csr(quest("T10.I4.D7.5K", key=key, block_rows=1000, rows_per_partition=1000))
    for rpp in (3000, 2500, None):
        tx = quest("T10.I4.D7.5K", key=key, block_rows=1000, rows_per_partition=rpp)
        m = _csr(tx)
        assert np.array_equal(m.indptr, ref.indptr) and np.array_equal(m.indices, ref.indices)

    def chunks(rpp):
        tx = quest("T10.I4.D7.5K", key=key, block_rows=1000, rows_per_partition=rpp)
        return tx.blocks.chunks[0]

    assert chunks(1000) == (1000,) * 7 + (500,)
    assert chunks(2500) == (3000, 3000, 1500)  # rounded up to whole blocks
    assert chunks(None) == (7500,)  # default: 8 blocks per partition
    # and for the threaded scheduler
    tx = quest("T10.I4.D7.5K", key=key, block_rows=1000, rows_per_partition=2000)
    parts = dask.compute(*tx.blocks.to_delayed().ravel(), scheduler="threads")
    m = QK.vstack_csr(list(parts), 1000)
    assert np.array_equal(m.indptr, ref.indptr) and np.array_equal(m.indices, ref.indices)


def test_different_key_different_data():
    a = _csr(quest("T10.I4.D2K", key=Key(1)))
    b = _csr(quest("T10.I4.D2K", key=Key(2)))
    assert not (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices))
    # key=None draws a fresh secret key
    c = _csr(quest("T10.I4.D2K"))
    assert not (np.array_equal(a.indptr, c.indptr) and np.array_equal(a.indices, c.indices))


def test_metadata_is_public_only():
    key = Key(987654321987654321)
    tx = quest("T10.I4.D3K", key=key)
    md = tx.metadata
    assert md["generator"] == "quest" and md["spec"] == "T10.I4.D3K.N1K"
    for name, value in dict(
        T=10.0, I=4.0, D=3000, N=1000, L=2000, correlation=0.5, corruption_mean=0.5, corruption_var=0.1
    ).items():
        assert md[name] == value
    assert "key" not in md
    assert "987654321987654321" not in repr(md)
    assert tx.vocabulary.identity and len(tx.vocabulary) == 1000
    assert not tx.columns
    m = tx.compute()  # the TransactionArray route gives the same CSR as the blocks
    ref = _csr(tx)
    assert m.shape == (3000, 1000) and np.array_equal(m.indices, ref.indices)


# ---------------------------------------------------------------------------------- two classes
def test_two_classes():
    key = Key(77)
    tx = quest("C20.I4.D6K", key=key, block_rows=1000, rows_per_partition=2000)
    assert tx.n_transactions == 6000 and tx.metadata["spec"] == "C20.I4.D6K.N1K"
    assert tx.metadata["n_classes"] == 2 and tx.metadata["T"] == 20.0
    label = tx.columns["label"]
    assert label.dtype == np.int32 and label.chunks[0] == tx.blocks.chunks[0]
    y = label.compute(scheduler="sync")
    assert np.array_equal(y, np.repeat([0, 1], 3000))
    m = _csr(tx)
    assert abs(np.diff(m.indptr).mean() / 20 - 1) < 0.02
    # different pattern sets per class ...
    p0 = make_patterns("C20.I4.D6K", key, class_index=0)
    p1 = make_patterns("C20.I4.D6K", key, class_index=1)
    assert not np.array_equal(p0.items[:50], p1.items[:50])
    # ... visible in the data: item supports of the halves are far less alike than two halves
    # of one class
    s0 = np.bincount(m[:3000].indices, minlength=1000)
    s1 = np.bincount(m[3000:].indices, minlength=1000)
    one = _csr(quest("T20.I4.D6K", key=key, block_rows=1000))
    h0 = np.bincount(one[:3000].indices, minlength=1000)
    h1 = np.bincount(one[3000:].indices, minlength=1000)
    across = np.corrcoef(s0, s1)[0, 1]
    within = np.corrcoef(h0, h1)[0, 1]
    assert within > 0.9 and across < 0.5


def test_two_classes_odd_and_empty():
    tx = quest("C10.I4.D7", key=Key(3), block_rows=4)
    y = tx.columns["label"].compute(scheduler="sync")
    assert y.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert tx.columns["label"].chunks == (tx.blocks.chunks[0],)
    empty = quest("C10.I4.D0", key=Key(3))
    assert empty.n_transactions == 0 and _csr(empty).shape == (0, 1000)
    assert empty.columns["label"].chunks == (empty.blocks.chunks[0],)


# ---------------------------------------------------------------------------------- layout
def test_block_layout():
    tx = quest("T10.I4.D5K.N300", key=Key(8), block_rows=1024, rows_per_partition=2048)
    blocks = _blocks(tx)
    assert [b.shape[0] for b in blocks] == list(tx.blocks.chunks[0]) == [2048, 2048, 904]
    for b in blocks:
        assert isinstance(b, sp.csr_array) and b.shape[1] == 300
        assert b.data.dtype == b.indices.dtype == b.indptr.dtype == np.int32
        assert (b.data == 1).all()
        assert b.indices.min() >= 0 and b.indices.max() < 300
        assert b.indptr[0] == 0 and b.indptr[-1] == b.indices.size
        assert (np.diff(b.indptr) >= 0).all()
        same_row = np.repeat(np.arange(b.shape[0]), np.diff(b.indptr))
        inner = same_row[1:] == same_row[:-1]
        assert (np.diff(b.indices.astype(np.int64))[inner] > 0).all()  # sorted and unique


def test_empty_and_tiny():
    tx = quest("T10.I4.D0", key=Key(1))
    assert tx.n_transactions == 0 and _csr(tx).shape == (0, 1000)
    m = _csr(quest("T3.I2.D1.N5.L1", key=Key(1)))
    assert m.shape == (1, 5) and 1 <= m.nnz <= 5


def test_degenerate_parameters_terminate():
    # every pattern fully corrupted: transactions can only be closed by the safety valve
    spec = QuestSpec(T=10, I=3, D=50, N=20, L=5, corruption_mean=1.0, corruption_var=0.0)
    m = _csr(quest(spec, key=Key(4)))
    assert m.shape == (50, 20) and m.nnz == 0
    # patterns mostly larger than the 1-item transactions and never corrupted
    spec = QuestSpec(T=1, I=5, D=50, N=5, L=3, corruption_mean=0.0, corruption_var=0.0)
    m = _csr(quest(spec, key=Key(4)))
    lengths = np.diff(m.indptr)
    assert m.shape == (50, 5) and (lengths >= 1).all() and (lengths <= 5).all()


def test_kernel_block_alone():
    rng = np.random.default_rng(0)
    ip, it, w, c = QK.generate_patterns(rng, 100, 3, 50, 0.5, 0.5, 0.1)
    b = QK.generate_block(np.random.default_rng(1), ip, it, w, c, 500, 50, 6.0)
    b2 = QK.generate_block(np.random.default_rng(1), ip, it, w, c, 500, 50, 6.0)
    assert b.shape == (500, 50) and np.array_equal(b.indices, b2.indices)
    assert QK.generate_block(np.random.default_rng(1), ip, it, w, c, 0, 50, 6.0).shape == (0, 50)
    stacked = QK.vstack_csr([b, b], 50)
    assert stacked.shape == (1000, 50) and stacked.indptr.dtype == np.int32
    assert np.array_equal(stacked[500:].toarray(), b.toarray())

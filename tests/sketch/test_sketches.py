"""Sketch-based privacy (docs/sketches.md): generator, sketching, δ-anonymity, primitives, I/O.

Oracles: the hand-computed examples of docs/sketches.md (δ-anonymity of small records, the
variances of small vectors, the k-variance bound of two 0/1 records), exhaustive enumeration of
sign vectors with an explicit
matrix generator, a pure-Python big-integer evaluation of the hash, dense ``X @ R.T``
references, brute-force δ-anonymity with exact rationals, and Monte Carlo over generator seeds.
"""

from __future__ import annotations

import itertools
import json
import math
import pickle
from fractions import Fraction

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from ppdm_dask import Key, TransactionArray
from ppdm_dask.errors import DatasetExistsError, IncompleteDatasetError, InvalidParameter
from ppdm_dask.sketch import (
    DeltaAnonymizer,
    SketchArray,
    SketchGenerator,
    anonymize_record,
    attribute_estimate,
    attribute_variance,
    centroid,
    component_sums,
    cosine,
    cosine_matrix,
    dot,
    dot_matrix,
    dot_variance,
    read_sketches,
    sketch,
    sqdist,
    sqdist_variance,
    sqnorm,
    sqnorm_variance,
)
from ppdm_dask.sketch import _kernels as K

P = K.PRIME


# ---------------------------------------------------------------------- helpers
def _py_signs(coef: np.ndarray, items) -> np.ndarray:
    """Big-integer reference of the hash: no folding tricks, no overflow possible."""
    out = np.empty((len(coef), len(items)), dtype=np.int8)
    for j, (a0, a1, a2, a3) in enumerate(coef.tolist()):
        for i, t in enumerate(int(t) for t in items):
            h = (a3 * t**3 + a2 * t**2 + a1 * t + a0) % P
            out[j, i] = 1 if h % 2 == 0 else -1
    return out


def _row(values, items=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values = np.asarray(values, dtype=np.float64)
    items = np.arange(values.size) if items is None else np.asarray(items)
    keep = values != 0
    return np.array([0, int(keep.sum())]), items[keep], values[keep]


def _weighted_tx(n=120, d=200, density=0.05, seed=0, **kw) -> tuple[TransactionArray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = sp.random(n, d, density=density, random_state=rng, format="csr")
    x.data = rng.integers(1, 5, x.data.size).astype(np.float64)
    return TransactionArray.from_scipy(x, **kw), x.toarray()


def _exact_delta_m(x: np.ndarray, delta: Fraction, m_max: int) -> int:
    """Largest r <= m_max with (|x|^2 - x_t^2)/r >= delta for every t (Def. 1), by search."""
    xs = [Fraction(int(v)) for v in x if v != 0]
    if len(xs) <= 1:
        return 0
    total = sum(v * v for v in xs)
    best = 0
    for r in range(1, m_max + 1):
        if all((total - v * v) / r >= delta for v in xs):
            best = r
    return best


@pytest.fixture(scope="module")
def pool():
    """16 components of each of the generators with seeds 0..5999: (6000, 16, 4) coefficients."""
    seeds = 6000
    coef = np.stack([SketchGenerator(s).coefficients(16) for s in range(seeds)])
    return coef


# ---------------------------------------------------------------------- δ-anonymity by hand
# x = (3, 4, 0, 0, 12): V = 169 - 144 = 25, so m = floor(25/δ); a 0/1 record with 20 ones: V = 19
# (docs/sketches.md#correction-δ-anonymity-uses-the-largest-admissible-m)
@pytest.mark.parametrize(
    "x, delta, expected",
    [
        ((3, 4, 0, 0, 12), 2.0, 12),
        ((3, 4, 0, 0, 12), 6.25, 4),  # boundary 25/4 = 6.25
        ((3, 4, 0, 0, 12), 30.0, 0),
        ((1,) * 20, 0.2, 95),
        ((1,) * 20, 0.3, 63),
        ((1,) * 20, 0.4, 47),
        ((1,) * 20, 1.0, 19),
        ((1, 0.1), 0.05, 0),
        ((0.1, 0.2, 0.5), 0.05, 1),
        ((0.1, 0.2, 0.7), 0.05, 1),  # float64 gives V/δ = 0.9999999999999998
        ((7.5,), 1e-6, 0),  # nnz <= 1: always suppressed (docs/sketches.md#correction-suppression-is-decided-at-one-component)
        ((0, 0, 0), 0.1, 0),
        ((1,) * 20, 0.01, 256),  # 1900 capped at m_max
    ],
)
def test_o0_1_delta_components(x, delta, expected):
    indptr, _, data = _row(x)
    assert K.delta_components(indptr, data, delta, 256).tolist() == [expected]
    sk = anonymize_record(range(len(x)), x, delta=delta, generator=SketchGenerator(1), m_max=256)
    assert sk.shape == (expected,)


def test_o0_1_float_boundaries_match_exact_rationals():
    """Every case equals the exact rational answer; the tolerance is exercised (a plain float
    floor gets some of these wrong)."""
    vals = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9, 1.1, 1.3]
    plain_wrong = 0
    for x in itertools.combinations(vals, 3):
        for d in (0.01, 0.02, 0.05, 0.1, 0.2, 0.3):
            xf = [Fraction(str(v)) for v in x]
            exact = (sum(v * v for v in xf) - max(v * v for v in xf)) / Fraction(str(d))
            want = min(math.floor(exact), 256)
            want = want if want >= 1 else 0
            indptr, _, data = _row(x)
            assert K.delta_components(indptr, data, d, 256)[0] == want, (x, d)
            tot, top = K.row_sq_stats(indptr, data)
            plain_wrong += math.floor((tot - top)[0] / d) != math.floor(exact)
    assert plain_wrong > 0
    assert K.ifloor(0.9999999999999998) == 1 and math.floor(0.9999999999999998) == 0
    assert K.ifloor([2.5, -0.5, np.inf, np.nan]).tolist() == [2, -1, 2**62, 0]


def test_delta_anonymizer_matches_brute_force():
    tx, x = _weighted_tx(n=150, d=40, density=0.08, seed=3, npartitions=4)
    for delta in (Fraction(1, 2), Fraction(3, 2), Fraction(3)):
        want = np.array([_exact_delta_m(row, delta, 32) for row in x])
        anon = DeltaAnonymizer(delta=float(delta), m_max=32, generator=SketchGenerator(5))
        out = anon.fit_transform(tx).data
        values, m = out.compute(progress=False)
        assert np.array_equal(m, want)
        rep = anon.report_
        assert rep["n_suppressed"] == int((want == 0).sum()) == out.n_suppressed()
        assert rep["mean_components"] == pytest.approx(want[want > 0].mean())
        assert rep["delta"] == float(delta) and rep["m_max"] == 32 and rep["n_records"] == 150
        assert out.metadata["method"] == "delta" and out.metadata["delta"] == float(delta)
        # sketches are the generator's sketches with those m (zero padded)
        ref = x @ SketchGenerator(5).signs(np.arange(40), 32).T.astype(float)
        assert np.array_equal(values, ref * (np.arange(32)[None, :] < want[:, None]))
        # collection-time anonymisation gives the same record sketches
        for i in (0, 7, 33):
            nz = np.flatnonzero(x[i])
            rec = anonymize_record(nz, x[i, nz], delta=float(delta), generator=SketchGenerator(5), m_max=32)
            assert np.array_equal(rec, values[i, : want[i]])


def test_delta_binary_records_empty_partitions_and_duplicates(tmp_path):
    tx = TransactionArray.from_lists([[1, 2, 3], [4], [], list(range(10, 30))], npartitions=6)
    assert 0 in tx.partition_rows
    out = DeltaAnonymizer(delta=0.4, generator=SketchGenerator(2)).fit_transform(tx).data
    values, m = out.compute(progress=False)
    assert m.tolist() == [5, 0, 0, 47]  # V = 2, 0, 0, 19
    out.to_parquet(str(tmp_path / "s"), progress=False, keep_suppressed=True)
    back = read_sketches(str(tmp_path / "s"))
    assert back.partition_rows == tx.partition_rows
    assert np.array_equal(back.compute(progress=False)[0], values)  # small integers: exact in float32
    # by default a suppressed record publishes nothing, not even its row; the manifest counts it
    manifest = out.to_parquet(str(tmp_path / "t"), progress=False)
    assert manifest["n_records"] == 4 and manifest["n_suppressed"] == 2
    kept = read_sketches(str(tmp_path / "t"))
    assert kept.n_records == 2 and np.array_equal(kept.compute(progress=False)[1], [5, 47])
    none = sketch(tx, 0, generator=SketchGenerator(2))
    assert none.m_max == 0 and none.n_suppressed() == 4
    g = SketchGenerator(2)
    assert np.array_equal(
        anonymize_record([3, 1, 2, 2], delta=0.4, generator=g), anonymize_record([1, 2, 3], delta=0.4, generator=g)
    )
    # with values, duplicates add up
    assert np.array_equal(
        anonymize_record([1, 2, 2], [1.0, 2.0, 3.0], delta=0.4, generator=g),
        anonymize_record([1, 2], [1.0, 5.0], delta=0.4, generator=g),
    )


# ---------------------------------------------------------------------- variances by enumeration
# all 2^d sign vectors: attribute variances |x|² - x_t² and the corrected dot-product variance
def _enumeration_sketches(rows: list[tuple], d: int) -> tuple[np.ndarray, np.ndarray, SketchGenerator]:
    R = np.array(list(itertools.product([-1, 1], repeat=d)), dtype=np.int8)
    gen = SketchGenerator.from_matrix(R)
    tx = TransactionArray.from_scipy(sp.csr_array(np.array(rows, dtype=np.float64)), npartitions=1)
    values, m = sketch(tx, R.shape[0], generator=gen).compute(progress=False)
    return values, R, gen


def test_o0_2_attribute_variance_by_enumeration():
    x = np.array([3.0, 4.0, 0.0, 12.0])
    values, R, gen = _enumeration_sketches([tuple(x)], 4)
    s = values[0]
    for t, want_var in enumerate([160, 153, 169, 25]):
        e = s * R[:, t]
        assert e.mean() == x[t] and e.var() == want_var
        assert attribute_variance(x, t) == want_var
        est, var_est = attribute_estimate(s, 16, gen, t)
        assert est == pytest.approx(x[t]) and var_est == pytest.approx(want_var / 15)
    est, _ = attribute_estimate(values, [16], gen, np.arange(4))
    assert np.allclose(est, x)


def test_o0_3_dot_variance_by_enumeration():
    values, _, _ = _enumeration_sketches([(1, 1)], 2)
    e = values[0] ** 2
    assert sorted(set(e.tolist())) == [0, 4] and e.mean() == 2 and e.var() == 4
    assert sqnorm_variance([1, 1]) == 4
    x = np.array([2, 1, 0, -2, -1, -3.0])
    y = np.array([-3, -3, -2, 2, 1, 3.0])
    values, _, _ = _enumeration_sketches([tuple(x), tuple(y)], 6)
    e = values[0] * values[1]
    assert e.mean() == -23 == x @ y and e.var() == 927
    assert dot_variance(x, y) == 927
    assert (x @ x) * (y @ y) - (x @ y) ** 2 == 155  # the paper's printed (wrong) formula
    # (docs/sketches.md#correction-variance-of-the-dot-product-estimate)
    est, var_est = dot(values[0], 64, values[1], 64)
    assert est == pytest.approx(-23) and var_est == pytest.approx(927 / 63)
    e2 = (values[0] - values[1]) ** 2
    assert e2.mean() == pytest.approx(((x - y) ** 2).sum()) and e2.var() == pytest.approx(sqdist_variance(x, y))


# ---------------------------------------------------------------------- scale invariance of M_ij
# two 0/1 records with 20 ones each, 10 in common: V = 480, tau = 10, M = floor(4.8) = 4
def test_o0_4_max_components():
    x = np.zeros(40)
    y = np.zeros(40)
    x[:20] = 1
    y[10:30] = 1

    def M(a, b, m_max=256):
        v = K.dot_variance(a @ a, b @ b, a @ b, (a**2) @ (b**2))
        return int(K.max_components(v, a @ a, b @ b, a @ b, m_max))

    assert K.dot_variance(20, 20, 10, 10) == 480
    assert M(x, y) == 4
    assert M(3.7 * x, 0.02 * y) == 4
    assert M(x / np.linalg.norm(x), y / np.linalg.norm(y)) == 4
    assert M(x, x) == 256 and M(x, 2 * x) == 256 and M(x, -x) == 256  # tau = 0
    assert M(x, y, m_max=3) == 3
    rng = np.random.default_rng(4)
    a = rng.random((200, 8)) * (rng.random((200, 8)) < 0.6)
    b = rng.random((200, 8)) * (rng.random((200, 8)) < 0.6)
    sa, sb = rng.uniform(0.01, 100, (2, 200, 1))

    def Mv(a, b):
        sqx, sqy, xy = (a * a).sum(1), (b * b).sum(1), (a * b).sum(1)
        return K.max_components(K.dot_variance(sqx, sqy, xy, (a * a * b * b).sum(1)), sqx, sqy, xy, 10**6)

    assert np.array_equal(Mv(a, b), Mv(sa * a, sb * b))


# ---------------------------------------------------------------------- generator
def test_hash_matches_big_integer_reference():
    g = SketchGenerator(2**127 + 12345)
    coef = g.coefficients(40)
    items = [0, 1, 2, 3, 17, 65536, 123456789, P - 2, P - 1]
    want = _py_signs(coef, items)
    assert np.array_equal(g.signs(items, 40), want)
    assert np.array_equal(g.signs_t(items, 40), want.T.astype(float))
    assert np.array_equal(K.component_coefficients(g.seed, 1, 41), coef)
    ss = np.random.SeedSequence(g.seed, spawn_key=(0, 7))
    assert np.array_equal(coef[6], np.random.default_rng(ss).integers(0, P, size=4))


def test_o0_7_prefix_stability_and_sign_balance():
    g1, g2 = SketchGenerator(99), SketchGenerator(99)
    assert np.array_equal(g1.coefficients(8), g2.coefficients(256)[:8])
    tx, _ = _weighted_tx(n=40, d=60, seed=1, npartitions=3)
    v8, _ = sketch(tx, 8, generator=g1).compute(progress=False)
    v256, _ = sketch(tx, 256, generator=g2).compute(progress=False)
    assert np.array_equal(v8, v256[:, :8])
    r = SketchGenerator(7).signs(np.arange(5000), 200)
    assert abs(r.astype(np.int64).mean()) <= 4 / math.sqrt(10**6)


def test_four_wise_independence(pool):
    coef = pool.reshape(-1, 4)  # 96,000 independent components
    n = coef.shape[0]
    r = K.signs(coef, np.arange(6)).astype(np.int64)  # (n, 6)
    crit = stats.chi2.ppf(1 - 1e-4, 15)
    for tup in itertools.combinations(range(6), 4):
        sub = r[:, tup]
        assert abs(sub.prod(axis=1).mean()) <= 4 / math.sqrt(n)
        code = ((sub > 0) * (1 << np.arange(4))).sum(axis=1)
        counts = np.bincount(code, minlength=16)
        chi2 = ((counts - n / 16) ** 2 / (n / 16)).sum()
        assert chi2 < crit, (tup, counts)


def test_generator_api_and_errors():
    key = Key(2**100 + 5)
    g = SketchGenerator.from_key(key)
    assert g == SketchGenerator.from_key(Key(2**100 + 5)) and g != SketchGenerator.from_key(Key(1))
    assert g.seed == int(key.digest("sketch-generator")[:32], 16)
    md = g.to_metadata()
    assert md == {"scheme": "poly4-mersenne31", "seed": str(g.seed), "prime": P}
    assert SketchGenerator.from_metadata(json.loads(json.dumps(md))) == g
    g.coefficients(32)
    g2 = pickle.loads(pickle.dumps(g))
    assert g2 == g and np.array_equal(g2.coefficients(32), g.coefficients(32))
    assert SketchGenerator.from_key(None) != SketchGenerator.from_key(None)
    with pytest.raises(InvalidParameter):
        g.signs([P], 4)
    with pytest.raises(InvalidParameter):
        g.signs([-1], 4)
    with pytest.raises(InvalidParameter):
        SketchGenerator(-1)
    with pytest.raises(InvalidParameter):
        SketchGenerator.from_matrix([[1, 0], [1, 1]])
    gm = SketchGenerator.from_matrix(np.ones((3, 5)))
    with pytest.raises(InvalidParameter):
        gm.signs([0], 4)  # only 3 components
    with pytest.raises(InvalidParameter):
        gm.signs([5], 2)  # only 5 items
    with pytest.raises(InvalidParameter):
        sketch(TransactionArray.from_lists([[0, 1]]), 4, generator=gm)
    assert SketchGenerator.from_metadata(gm.to_metadata()) == gm
    with pytest.raises(InvalidParameter):
        SketchGenerator.from_metadata({"scheme": "other"})


# ---------------------------------------------------------------------- sketching
@pytest.mark.parametrize("d", [50, 3_000_000])  # sign-table path / on-the-fly hashing path
def test_sketch_block_both_paths(d):
    rng = np.random.default_rng(d)
    n = 300
    x = sp.random(n, d, density=min(1.0, 2400 / (n * d)) if d > 50 else 0.3, random_state=rng, format="csr")
    x.data = rng.normal(size=x.data.size)
    coef = SketchGenerator(11).coefficients(24)
    m = rng.integers(0, 25, n)
    out = K.sketch_block(x.indptr, x.indices, x.data, n, coef, m)
    cols = np.unique(x.indices)
    local = sp.csr_array((x.data, np.searchsorted(cols, x.indices), x.indptr), shape=(n, cols.size))
    ref = local @ _py_signs(coef, cols).T.astype(float)
    assert np.allclose(out, ref * (np.arange(24)[None, :] < m[:, None]), rtol=0, atol=1e-12)
    assert np.all(out[np.arange(24)[None, :] >= m[:, None]] == 0.0)  # exact zero padding


@pytest.mark.parametrize("npartitions", [1, 4, 9])
def test_sketch_equals_dense_reference(npartitions):
    tx, x = _weighted_tx(n=80, d=300, seed=2, npartitions=npartitions, columns={"label": np.arange(80) % 3})
    g = SketchGenerator(123)
    R = g.signs(np.arange(300), 20).astype(float)
    out = sketch(tx, 20, generator=g)
    assert out.n_partitions == npartitions and out.columns.keys() == {"label"}
    values, m = out.compute(progress=False)
    assert np.array_equal(values, x @ R.T) and np.all(m == 20)
    # binary: weights dropped -> x = 1
    binary = TransactionArray(tx.blocks, tx.vocabulary)
    assert np.array_equal(sketch(binary, 20, generator=g).compute(progress=False)[0], (x != 0) @ R.T)
    # per-record m, numpy and dask, zero padded
    mi = np.arange(80) % 21
    ref = (x @ R.T) * (np.arange(20)[None, :] < mi[:, None])
    for arg in (mi, da.from_array(mi, chunks=17)):
        v, m = sketch(tx, arg, generator=g).compute(progress=False)
        assert np.array_equal(v, ref) and np.array_equal(m, mi)
    v, _ = sketch(tx, mi, generator=g, m_max=32).compute(progress=False)
    assert v.shape == (80, 32) and np.array_equal(v[:, :20], ref) and not v[:, 20:].any()


def test_sketch_same_for_any_partitioning_and_key():
    tx, _ = _weighted_tx(n=60, d=100, seed=5, npartitions=1)
    a = sketch(tx, 12, key=Key(77)).compute(progress=False)[0]
    b = sketch(tx.repartition(npartitions=5), 12, key=Key(77)).compute(progress=False)[0]
    assert np.array_equal(a, b)
    assert sketch(tx, 12, key=Key(77)).values.name == sketch(tx, 12, key=Key(77)).values.name
    assert not np.array_equal(a, sketch(tx, 12, key=Key(78)).compute(progress=False)[0])


def test_invalid_parameters():
    tx, _ = _weighted_tx(n=10, d=20, seed=6, npartitions=2)
    g = SketchGenerator(1)
    for bad in (0, -0.1, float("nan"), float("inf"), "0.2"):
        with pytest.raises(InvalidParameter):
            DeltaAnonymizer(delta=bad).fit_transform(tx)
    for bad in (0, -3, 2.5):
        with pytest.raises(InvalidParameter):
            DeltaAnonymizer(m_max=bad).fit_transform(tx)
    with pytest.raises(InvalidParameter):
        DeltaAnonymizer(key=1, generator=g).fit_transform(tx)
    with pytest.raises(InvalidParameter):
        sketch(tx, 4, key=1, generator=g)
    with pytest.raises(InvalidParameter):
        sketch(tx, -1, generator=g)
    with pytest.raises(InvalidParameter):
        sketch(tx, 8, generator=g, m_max=4)
    with pytest.raises(InvalidParameter):
        sketch(tx, np.arange(9), generator=g)  # wrong length
    with pytest.raises(InvalidParameter):
        sketch(tx, np.full(10, -1), generator=g)
    with pytest.raises(InvalidParameter):
        sketch(tx, np.full(10, 0.5), generator=g)
    with pytest.raises(InvalidParameter):
        sketch(tx, da.from_array(np.full(10, 9), chunks=5), generator=g, m_max=4).compute()
    with pytest.raises(InvalidParameter):
        anonymize_record([1, -2], delta=0.1, generator=g)
    with pytest.raises(InvalidParameter):
        anonymize_record([1, 2], [1.0], delta=0.1, generator=g)
    shown = repr(DeltaAnonymizer(key=Key(987654321)))
    assert "987654321" not in shown and f"{987654321:x}" not in shown and "<secret>" in shown


# ---------------------------------------------------------------------- Parquet
def test_parquet_round_trip(tmp_path):
    key = Key(0xC0FFEE_1234_5678_9ABC_DEF0)
    tx, x = _weighted_tx(n=90, d=50, seed=7, npartitions=3, columns={"label": np.arange(90) % 4})
    out = DeltaAnonymizer(delta=3.0, m_max=16, key=key).fit_transform(tx).data
    values, m = out.compute(progress=False)
    assert (m == 0).any() and (m > 0).any()
    url = str(tmp_path / "sk")
    manifest = out.to_parquet(url, progress=False, keep_suppressed=True)
    assert manifest["n_suppressed"] == int((m == 0).sum()) and manifest["n_records"] == 90
    back = read_sketches(url)
    assert isinstance(back, SketchArray) and back.partition_rows == out.partition_rows
    v2, m2 = back.compute(progress=False)
    assert np.array_equal(m2, m)
    assert np.array_equal(v2, values.astype(np.float32).astype(np.float64))  # float32 on disk
    assert np.array_equal(back.columns["label"].compute(), np.arange(90) % 4)
    assert back.generator == out.generator and back.n_items == 50
    assert back.metadata["delta"] == 3.0
    # the public seed is published, the key never
    text = (tmp_path / "sk" / "_SUCCESS").read_text()
    assert json.loads(text)["generator"]["seed"] == str(out.generator.seed)
    secrets_ = [str(key._value), f"{key._value:x}", f"{key._value:032x}"]
    for f in (tmp_path / "sk").iterdir():
        blob = f.read_bytes()
        assert not any(s.encode() in blob for s in secrets_), f.name
    # suppressed rows are empty lists on disk
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "sk" / "part-00000.parquet")
    lens = [len(v) for v in t.column("sketch").to_pylist()]
    assert lens == t.column("m").to_pylist() == m[: len(lens)].tolist()
    with pytest.raises(DatasetExistsError):
        out.to_parquet(url, progress=False)
    out.to_parquet(url, overwrite=True, progress=False)  # default: suppressed rows left out
    dropped = read_sketches(url)
    assert dropped.n_records == int((m > 0).sum())
    assert np.array_equal(dropped.columns["label"].compute(), (np.arange(90) % 4)[m > 0])
    (tmp_path / "sk" / "_SUCCESS").unlink()
    with pytest.raises(IncompleteDatasetError):
        read_sketches(url)


# ---------------------------------------------------------------------- primitives
def test_primitives_consistency():
    rng = np.random.default_rng(8)
    S = rng.normal(size=(7, 10))
    m = np.array([0, 1, 2, 5, 10, 10, 3])
    S[np.arange(10)[None, :] >= m[:, None]] = 0.0
    T = rng.normal(size=(4, 8))
    mt = np.array([8, 0, 4, 6])
    T[np.arange(8)[None, :] >= mt[:, None]] = 0.0
    dots, mins = dot_matrix(S, m, T, mt)
    cos, mins2 = cosine_matrix(S, m, T, mt)
    assert np.array_equal(mins, mins2)
    for i in range(7):
        for j in range(4):
            k = min(m[i], mt[j])
            e, _ = dot(S[i], m[i], T[j], mt[j])
            c = cosine(S[i], m[i], T[j], mt[j])
            if k == 0:
                assert np.isnan(dots[i, j]) and np.isnan(e) and np.isnan(cos[i, j]) and np.isnan(c)
                continue
            a, b = S[i, :k], T[j, :k]
            assert dots[i, j] == pytest.approx(a @ b / k) and e == pytest.approx(a @ b / k)
            assert cos[i, j] == pytest.approx(a @ b / np.sqrt((a @ a) * (b @ b))) == c
            d2, v2 = sqdist(S[i], m[i], T[j], mt[j])
            assert d2 == pytest.approx(((a - b) ** 2).mean())
            assert np.isnan(v2) if k < 2 else v2 == pytest.approx(((a - b) ** 2).var(ddof=1) / k)
    # rows broadcast: one sketch against a block
    e, _ = dot(T[0], 8, S, m)
    assert np.allclose(e[1:], dots[1:, 0])
    n2, v = sqnorm(S, m)
    assert np.isnan(n2[0]) and np.isnan(v[1]) and n2[4] == pytest.approx((S[4] ** 2).mean())
    # NaN padding is ignored as well
    Sn = np.where(np.arange(10)[None, :] >= m[:, None], np.nan, S)
    assert np.allclose(sqnorm(Sn, m)[0][1:], n2[1:])
    # centroids
    c, mc = centroid(S, m, mode="available")
    assert mc == 10
    for j in range(10):
        rows = m > j
        assert c[j] == pytest.approx(S[rows, j].mean())
    c2, mc2 = centroid(S, m, mode="common")
    assert mc2 == 1 and c2[0] == pytest.approx(S[1:, 0].mean()) and not c2[1:].any()
    sums, counts = component_sums(S, m)
    assert counts.tolist() == [(m > j).sum() for j in range(10)]
    assert centroid(S[:1], m[:1]) == (pytest.approx(np.zeros(10)), 0)
    with pytest.raises(ValueError):
        centroid(S, m, mode="median")


# ---------------------------------------------------------------------- unbiasedness, Monte Carlo
@pytest.fixture(scope="module")
def mc(pool):
    """Fixed x, y (d = 1000, nnz 20 each, overlap 8) sketched by 6000 generators x 16 components."""
    rng = np.random.default_rng(12)
    items = rng.choice(1000, 32, replace=False)
    x = np.zeros(32)
    y = np.zeros(32)
    x[:20] = rng.integers(1, 5, 20)
    y[12:] = rng.integers(1, 5, 20)
    T, m = pool.shape[:2]
    r = K.signs(pool.reshape(-1, 4), items).astype(np.float64).reshape(T, m, 32)
    return {"x": x, "y": y, "r": r, "sx": r @ x, "sy": r @ y, "T": T, "m": m}


def _check_mc_variance(e: np.ndarray, exact: float) -> None:
    """Empirical per-component variance within 5% of the exact one, 5% being >= 4 s.e."""
    e = e.ravel()
    dev2 = (e - e.mean()) ** 2
    emp = dev2.sum() / (e.size - 1)
    se = dev2.std() / math.sqrt(e.size)
    assert 0.05 * exact >= 4 * se, "not enough Monte Carlo draws for a 4 s.e. margin"
    assert abs(emp - exact) <= 0.05 * exact, (emp, exact)


def test_o0_6_unbiased_dot_product(mc):
    x, y, T, m = mc["x"], mc["y"], mc["T"], mc["m"]
    assert ((x != 0) & (y != 0)).sum() == 8
    V = dot_variance(x, y)
    est, var_est = dot(mc["sx"], m, mc["sy"], m)
    assert abs(est.mean() - x @ y) <= 4 * math.sqrt(V / (m * T))
    assert abs(est.var(ddof=1) / (V / m) - 1) <= 0.15
    # the per-record variance estimate is unbiased
    assert abs(var_est.mean() - V / m) <= 4 * var_est.std() / math.sqrt(T)
    # unshared generators (y sketched by another generator): meaningless, mean ~ 0
    un, _ = dot(mc["sx"], m, np.roll(mc["sy"], 1, axis=0), m)
    assert abs(un.mean()) <= 4 * math.sqrt((x @ x) * (y @ y) / (m * T))
    assert abs(un.mean() - x @ y) > 10 * math.sqrt((x @ x) * (y @ y) / (m * T))


def test_o0_6_unbiased_attribute_reconstruction(mc):
    x, T, m, r = mc["x"], mc["T"], mc["m"], mc["r"]
    for t in (int(np.argmax(x)), 3, 25):  # largest, another present, an absent attribute
        V = attribute_variance(x, t)
        e = mc["sx"] * r[:, :, t]
        est = e.mean(axis=1)
        assert abs(est.mean() - x[t]) <= 4 * math.sqrt(V / (m * T))
        assert abs(est.var(ddof=1) / (V / m) - 1) <= 0.15
        _check_mc_variance(e, V)


def test_variance_formulas_vs_monte_carlo(mc):
    x, y = mc["x"], mc["y"]
    _check_mc_variance(mc["sx"] * mc["sy"], dot_variance(x, y))
    _check_mc_variance(mc["sx"] ** 2, sqnorm_variance(x))
    _check_mc_variance((mc["sx"] - mc["sy"]) ** 2, sqdist_variance(x, y))
    # the printed formula of the paper is rejected by the same data
    # (docs/sketches.md#correction-variance-of-the-dot-product-estimate)
    printed = (x @ x) * (y @ y) - (x @ y) ** 2
    e = (mc["sx"] * mc["sy"]).ravel()
    assert abs(e.var() - printed) > 0.05 * printed


# ---------------------------------------------------------------------- cluster
@pytest.mark.cluster
def test_two_worker_cluster_identical(on_cluster):
    tx, _ = _weighted_tx(n=400, d=500, seed=9, npartitions=4, columns={"label": np.arange(400) % 2})
    anon = DeltaAnonymizer(delta=1.0, m_max=64, generator=SketchGenerator(31))
    ref_v, ref_m = anon.fit_transform(tx).data.compute(progress=False, scheduler="sync")
    out = anon.fit_transform(tx).data
    v, m = out.compute(progress=False)
    assert np.array_equal(v, ref_v) and np.array_equal(m, ref_m)
    assert anon.report(out.persist(progress=False))["n_suppressed"] == int((ref_m == 0).sum())
    assert len(on_cluster.scheduler_info()["workers"]) == 2


def test_per_record_components_travel_outside_the_graph(on_cluster):
    """A driver-side m array is scattered once, not embedded in the task graph; same sketches."""
    import cloudpickle

    tx, _ = _weighted_tx(n=30_000, d=300, seed=4, npartitions=3)
    m = np.random.default_rng(2).integers(0, 17, size=30_000)
    gen = SketchGenerator(5)
    ref_v, ref_m = sketch(tx, m, generator=gen, m_max=16).compute(progress=False, scheduler="sync")
    out = sketch(tx, m, generator=gen, m_max=16, client=on_cluster)
    graph = dict(out.m.__dask_graph__())
    assert len(cloudpickle.dumps(graph)) < m.astype(np.int32).nbytes // 4  # 120 kB of m: futures instead
    v, got_m = out.compute(progress=False)
    assert np.array_equal(got_m, m) and np.array_equal(v, ref_v) and np.array_equal(ref_m, m)

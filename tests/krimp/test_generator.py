"""KRIMP generator and its privacy/quality scores (docs/krimp.md#the-generator,
docs/krimp.md#privacy-the-anonymity-score, docs/krimp.md#quality-dissimilarity-and-pattern-comparison):
the corrected code table of the paper's Figure 1 (step probabilities and the exact output distribution),
the anonymity-score example, and properties of generation."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction as Fr

import dask
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DataFormatError, InvalidParameter, PPDMError
from ppdm_dask.krimp.generator import (
    GenerationError,
    KrimpGenerator,
    admissible_elements,
    check_domains,
    generate_rows,
    infer_domains,
    step_distribution,
    transaction_distribution,
)
from ppdm_dask.krimp.scores import (
    anonymity_levels,
    anonymity_score,
    avg_patterns_per_row,
    ds_from_tables,
    normalized_anonymity_score,
    pattern_comparison,
    row_fingerprint_counts,
)
from ppdm_dask.random import Tag, as_key

A, B, C, D, E, F = 1, 2, 3, 4, 5, 6
#: Corrected Fig. 1 code table (docs/krimp.md#correction-the-code-table-of-figure-1): raw usages; + laplace 1 = AC 3, BD 3, CF 2, A 1, B 2, C 1, D 1, E 3, F 3.
CT1 = [((A, C), 2), ((B, D), 2), ((C, F), 1), ((A,), 0), ((B,), 1), ((C,), 0), ((D,), 0), ((E,), 2), ((F,), 2)]
DOMS1 = [[A, B], [C, D], [E, F]]
#: Exact output distribution of the corrected Fig. 1 table (random domain order), derived by hand:
#: e.g. P(BDE) = 1/3·(3/9·1/2 + 2/9·5/32) + 1/3·(3/10·1/2 + 1/10·1/3) + 1/3·3/8·65/144 = 3191/17280
O42 = {
    (A, C, E): Fr(289, 1728),
    (A, C, F): Fr(1997, 8640),
    (A, D, E): Fr(301, 17280),
    (A, D, F): Fr(301, 17280),
    (B, C, E): Fr(301, 8640),
    (B, C, F): Fr(281, 1728),
    (B, D, E): Fr(3191, 17280),
    (B, D, F): Fr(3191, 17280),
}


def _needs_search():
    return pytest.importorskip("ppdm_dask.krimp.search")


def _literal(ct, doms, n, key, laplace, block_rows=4096, order="random"):
    """The procedure of docs/krimp.md#the-generator written literally with numpy's Generator calls
    (the reference)."""
    key = as_key(key)
    dom_of = {i: d for d, items in enumerate(doms) for i in items}
    elems = [(tuple(s), u + laplace) for s, u in ct]
    have = {s[0] for s, _ in elems if len(s) == 1}
    elems += [((i,), 0 + laplace) for d in doms for i in d if i not in have]
    out = []
    for b in range(-(-n // block_rows)):
        rng = key.generator(Tag.KRIMP_GENERATE, b)
        for _ in range(b * block_rows, min(n, (b + 1) * block_rows)):
            while True:
                t, open_, cands, ok = set(), list(range(len(doms))), list(elems), True
                while open_:
                    Dm = open_[rng.integers(len(open_))] if order == "random" else open_[0]
                    S = [c for c in cands if any(dom_of[i] == Dm for i in c[0])]
                    w = np.array([c[1] for c in S])
                    s = 0.0
                    for x in w:
                        s += x
                    if s == 0:
                        assert order == "columns"
                        ok = False
                        break
                    c = S[rng.choice(len(S), p=w / s)]
                    t |= set(c[0])
                    cd = {dom_of[i] for i in c[0]}
                    open_ = [x for x in open_ if x not in cd]
                    cands = [e for e in cands if not any(dom_of[i] in cd for i in e[0])]
                if ok:
                    break
            out.append(sorted(t))
    return out


# ---------------------------------------------------------------------- Figure 1 by hand
def test_o41_conditional_probabilities():
    d1 = step_distribution(CT1, DOMS1, 0, laplace=1)
    assert d1 == {(A, C): Fr(3, 9), (B, D): Fr(3, 9), (A,): Fr(1, 9), (B,): Fr(2, 9)}
    # after BD only E(3), F(3) remain eligible
    assert step_distribution(CT1, DOMS1, 2, assigned=[B, D], laplace=1) == {(E,): Fr(1, 2), (F,): Fr(1, 2)}
    assert step_distribution(CT1, DOMS1, 1, laplace=1)[(B, D)] == Fr(3, 10)
    # D3 first, E chosen: remaining CT = {AC, BD, A, B, C, D}
    assert admissible_elements(CT1, DOMS1, [E]) == [(A, C), (B, D), (A,), (B,), (C,), (D,)]
    with pytest.raises(InvalidParameter):
        step_distribution(CT1, DOMS1, 0, assigned=[A], laplace=1)


def test_o42_exact_distribution_and_erratum():
    assert transaction_distribution(CT1, DOMS1, laplace=1) == O42
    assert sum(O42.values()) == 1
    # figure-literal E = F = 1 (raw usage 0) gives another distribution, which pins the correction
    # (docs/krimp.md#correction-the-code-table-of-figure-1)
    literal_fig = [(s, 0 if s in ((E,), (F,)) else u) for s, u in CT1]
    assert transaction_distribution(literal_fig, DOMS1, laplace=1)[(B, D, E)] == Fr(157, 960)
    gen = KrimpGenerator.from_code_table(CT1, DOMS1, laplace=1.0)
    assert gen.exact_distribution() == O42


def test_o42_chi_square_100k():
    gen = KrimpGenerator.from_code_table(CT1, DOMS1, laplace=1.0)
    rows = gen.sample_lists(100_000, key=20240501)
    counts = Counter(map(tuple, rows))
    assert set(counts) <= set(O42)
    keys = sorted(O42)
    obs = np.array([counts[k] for k in keys])
    exp = np.array([float(O42[k]) for k in keys]) * 100_000
    chi2, p = stats.chisquare(obs, exp)  # 7 degrees of freedom
    assert p > 1e-4, (chi2, p)
    # P4 Fig. 5 indicator is computed during generation
    assert 1.0 < gen.avg_patterns_per_row_ < 3.0


def test_kernel_equals_literal_spec_procedure():
    for order in ("random", "columns"):
        for key in (0, 1, 2**100 + 7):
            ref = _literal(CT1, DOMS1, 700, key, 1.0, block_rows=256, order=order)
            items, npat, alphabet = generate_rows(CT1, DOMS1, 700, key=key, laplace=1.0, block_rows=256, domain_order=order)
            assert np.sort(items, axis=1).tolist() == ref
            assert alphabet.tolist() == [A, B, C, D, E, F]
            assert npat.min() >= 1 and npat.max() <= 3
    # more than 64 domains (multi-word masks), partial singletons, tiny laplace
    rs = np.random.default_rng(0)
    doms, lab = [], 0
    for _ in range(70):
        k = int(rs.integers(1, 5))
        doms.append(list(range(lab, lab + k)))
        lab += k
    ct = []
    for _ in range(300):
        ds = rs.choice(70, size=int(rs.integers(2, 6)), replace=False)
        ct.append((tuple(sorted(int(rs.choice(doms[d])) for d in ds)), int(rs.integers(0, 20))))
    ct += [((i,), int(rs.integers(0, 5))) for d in doms for i in d if rs.random() < 0.8]
    for order in ("random", "columns"):
        ref = _literal(ct, doms, 150, 7, 0.001, block_rows=64, order=order)
        items, _, _ = generate_rows(ct, doms, 150, key=7, laplace=0.001, block_rows=64, domain_order=order)
        assert np.sort(items, axis=1).tolist() == ref


def test_columns_order_restarts_and_distribution():
    # laplace 0 and B used but C, D, CF unused: after B the column order finds no admissible
    # weight for D2, discards the row and restarts it (same stream); equal to the literal procedure
    ct = [((A, C), 2), ((B, D), 2), ((C, F), 0), ((A,), 0), ((B,), 1), ((C,), 0), ((D,), 0), ((E,), 2), ((F,), 2)]
    ref = _literal(ct, DOMS1, 300, 3, 0.0, block_rows=100, order="columns")
    items, _, _ = generate_rows(ct, DOMS1, 300, key=3, laplace=0.0, block_rows=100, domain_order="columns")
    assert np.sort(items, axis=1).tolist() == ref
    assert {tuple(r[:2]) for r in ref} == {(A, C), (B, D)}
    # the paper's random order cannot restart: D3 first, then B leaves D2 without weight
    with pytest.raises(GenerationError):
        generate_rows(ct, DOMS1, 300, key=3, laplace=0.0)
    # the reference generator's column order gives another distribution than the paper's
    # (docs/krimp.md#clarification-the-random-choice-of-a-domain)
    dcol = transaction_distribution(CT1, DOMS1, laplace=1, domain_order="columns")
    assert sum(dcol.values()) == 1 and dcol != O42
    assert dcol[(B, D, E)] == Fr(3, 9) * Fr(1, 2) + Fr(2, 9) * Fr(1, 4) * Fr(1, 2)  # BD, E  |  B, D (CF 2, C 1, D 1), E


def test_zero_weight_raises_generation_error():
    ct = [((A, C), 1), ((A,), 0), ((B,), 0), ((C,), 0), ((D,), 0), ((E,), 1), ((F,), 0)]
    # whatever domain comes first, only AC and E carry weight
    rows, _, _ = generate_rows(ct, DOMS1, 50, key=1, laplace=0.0)
    assert {tuple(r) for r in np.sort(rows, axis=1).tolist()} == {(A, C, E)}
    ct_dead = [((A,), 0), ((B,), 0), ((C,), 1), ((D,), 0), ((E,), 1), ((F,), 0)]
    with pytest.raises(GenerationError):
        generate_rows(ct_dead, DOMS1, 10, key=1, laplace=0.0)
    assert issubclass(GenerationError, PPDMError)
    with pytest.raises(GenerationError):
        transaction_distribution(ct_dead, DOMS1, laplace=0)


# ---------------------------------------------------------------------- properties of generation
def test_one_item_per_domain_and_declared_values():
    doms = DOMS1 + [[7, 8, 9]]  # a domain absent from the code table: singletons appended (usage 0)
    gen = KrimpGenerator.from_code_table(CT1, doms, laplace=1.0, n_rows=500)
    tx = gen.sample(key=5, block_rows=128, blocks_per_partition=2)
    assert tx.n_transactions == 500 and tx.n_partitions == 2
    assert tx.vocabulary.labels.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    check_domains(tx, doms)  # exactly one item per domain
    rows = tx.to_lists()
    assert {r[-1] for r in rows} == {7, 8, 9}
    assert tx.metadata["generator"] == "krimp" and "key" not in str(tx.metadata)


def test_partition_and_scheduler_independence():
    gen = KrimpGenerator.from_code_table(CT1, DOMS1, laplace=1.0)
    key = as_key(99)
    ref = gen.sample_lists(3000, key=key, block_rows=256)
    assert gen.sample(3000, key=key, block_rows=256, blocks_per_partition=1).to_lists() == ref
    tx = gen.sample(3000, key=key, block_rows=256, blocks_per_partition=5)
    assert tx.partition_rows == (1280, 1280, 440)
    with dask.config.set(scheduler="threads"):
        assert tx.to_lists() == ref
    assert tx.repartition(npartitions=7).to_lists() == ref
    # same key -> same output; other key -> other output; a prefix is reproduced
    assert gen.sample_lists(3000, key=99, block_rows=256) == ref
    assert gen.sample_lists(1000, key=99, block_rows=256) == ref[:1000]
    assert gen.sample_lists(3000, key=100, block_rows=256) != ref
    # the n_patterns column and the indicator
    gen.sample_lists(3000, key=99, block_rows=256)
    assert avg_patterns_per_row(tx) == gen.avg_patterns_per_row_
    _, npat, _ = generate_rows(CT1, DOMS1, 3000, key=key, laplace=1.0, block_rows=256)
    assert avg_patterns_per_row(tx) == pytest.approx(npat.mean())
    assert avg_patterns_per_row(gen) == pytest.approx(npat.mean())
    # the key never shows up in the graph names
    assert all(str(99) not in str(k) for k in tx.blocks.__dask_keys__())


@pytest.mark.cluster
def test_cluster_output_equals_sync(on_cluster):
    gen = KrimpGenerator.from_code_table(CT1, DOMS1, laplace=1.0)
    ref = gen.sample_lists(5000, key=11, block_rows=512)
    assert gen.sample(5000, key=11, block_rows=512, blocks_per_partition=3).to_lists() == ref


def test_singleton_table_marginals_converge():
    """laplace -> 0 and a singleton-only table: generated marginals = observed marginals."""
    usages = {A: 700, B: 300, C: 100, D: 900, E: 500, F: 500}
    ct = [((i,), u) for i, u in usages.items()]
    items, npat, _ = generate_rows(ct, DOMS1, 20_000, key=3, laplace=1e-9)
    assert np.all(npat == 3)
    for dom in DOMS1:
        obs = np.array([(items == i).sum() for i in dom])
        exp = np.array([usages[i] for i in dom], float)
        exp = exp / exp.sum() * obs.sum()
        assert stats.chisquare(obs, exp).pvalue > 1e-4


# ---------------------------------------------------------------------- domains
def test_infer_domains_iris(shared_data):
    tx = TransactionArray.from_fimi(str(shared_data / "lucs" / "iris.dat"))
    doms = infer_domains(tx)
    assert [len(d) for d in doms] == [5, 5, 3, 3, 3]
    assert np.concatenate(doms).tolist() == tx.vocabulary.labels.tolist()
    assert doms[-1].tolist() == [17, 18, 19]  # the class label is the last attribute
    check_domains(tx, doms)


def test_infer_domains_small_and_errors():
    rows = [[1, 3, 6], [2, 3, 5], [1, 4, 5], [2, 4, 6]]
    assert [d.tolist() for d in infer_domains(rows)] == [[1, 2], [3, 4], [5, 6]]
    with pytest.raises(DataFormatError, match="exactly one item|domains="):
        infer_domains([[1, 2], [1], [2, 3]])  # rows of different lengths
    with pytest.raises(DataFormatError):
        infer_domains([[1, 2], [1, 3], [2, 3]])  # supports never add up consecutively
    with pytest.raises(DataFormatError, match="no domain"):
        check_domains(rows, [[1, 2], [3, 4]])
    with pytest.raises(DataFormatError, match="exactly one item"):
        check_domains(rows, [[1, 2, 3, 4], [5, 6]])
    with pytest.raises(InvalidParameter, match="more than one domain"):
        check_domains(rows, [[1, 2], [2, 3, 4], [5, 6]])


def test_code_table_validation_errors():
    with pytest.raises(InvalidParameter, match="two items of one domain"):
        generate_rows([((A, B), 1)], DOMS1, 5, key=1)
    with pytest.raises(InvalidParameter, match="outside every domain"):
        generate_rows([((A, 42), 1)], DOMS1, 5, key=1)
    with pytest.raises(InvalidParameter, match="laplace"):
        generate_rows(CT1, DOMS1, 5, key=1, laplace=-1.0)
    with pytest.raises(InvalidParameter, match="domain_order"):
        generate_rows(CT1, DOMS1, 5, key=1, domain_order="diagonal")
    with pytest.raises(InvalidParameter):
        generate_rows(CT1, DOMS1, -1, key=1)
    with pytest.raises(PPDMError, match="not fitted"):
        KrimpGenerator(1).sample_lists(3, key=1)
    gen = KrimpGenerator.from_code_table(CT1, DOMS1, laplace=1.0)
    with pytest.raises(InvalidParameter):
        gen.sample(10, key=1, block_rows=0)


# ---------------------------------------------------------------------- AS / NAS by hand
# db_o = [a, a, b, c, c, c, d], db_p = [a, b, e, e]: AS = 1·1/2 + 1/2·1 + 1/3·0 = 1, AS(db_o, db_o) = 11/6
_a, _b, _c, _d, _e = [1, 2], [3], [1, 4], [2, 3, 5], [6]
_DBO = [_a, _a, _b, _c, _c, _c, _d]
_DBP = [_a, _b, _e, _e]


def test_o45_anonymity_scores_exact():
    assert anonymity_score(_DBP, _DBO, exact=True) == 1
    assert normalized_anonymity_score(_DBP, _DBO, exact=True) == Fr(6, 11)
    assert anonymity_score(_DBO, _DBO, exact=True) == Fr(11, 6)
    assert normalized_anonymity_score(_DBP, _DBO) == pytest.approx(6 / 11, rel=1e-15)
    # distributed hash path (several partitions; mixed TransactionArray / list inputs)
    to = TransactionArray.from_lists(_DBO, npartitions=3)
    tp = TransactionArray.from_lists(_DBP, npartitions=2)
    assert normalized_anonymity_score(tp, to, exact=True) == Fr(6, 11)
    assert normalized_anonymity_score(_DBP, to, exact=True) == Fr(6, 11)
    assert anonymity_score(tp, _DBO, exact=True) == 1
    # identical -> 1, disjoint -> 0; row order and item order do not matter
    assert normalized_anonymity_score(to, to) == 1.0
    assert normalized_anonymity_score([list(reversed(r)) for r in reversed(_DBO)], _DBO) == 1.0
    assert normalized_anonymity_score([[7], [8, 9]], to) == 0.0
    lv = anonymity_levels(tp, to)
    assert lv["support"].tolist() == [1, 2, 3] and lv["n_in_generated"].tolist() == [1, 1, 0]
    # string labels
    s = [["x", "y"], ["x"], ["x"]]
    assert normalized_anonymity_score(TransactionArray.from_lists([["x"]]), TransactionArray.from_lists(s), exact=True) == Fr(
        1, 3
    )
    with pytest.raises(DataFormatError):
        anonymity_score(_DBP, [])


def test_row_fingerprint_kernel():
    rs = np.random.default_rng(1)
    rows = [sorted(set(rs.integers(0, 12, size=rs.integers(0, 4)).tolist())) for _ in range(400)]
    tx = TransactionArray.from_lists(rows + [[0]])  # vocabulary covers 0..11
    from ppdm_dask.data.fingerprints import label_hashes as _label_hashes

    h1, h2 = _label_hashes(tx.vocabulary.labels)
    fp, cnt = row_fingerprint_counts(tx.compute(), h1, h2)
    expected = Counter(tuple(r) for r in rows + [[0]])
    assert sorted(cnt.tolist()) == sorted(expected.values())
    assert cnt.sum() == 401 and fp.shape == (len(expected), 2)
    empty = row_fingerprint_counts(sp.csr_array((0, 12), dtype=np.int32), h1, h2)
    assert empty[0].shape == (0, 2)


# ---------------------------------------------------------------------- DS and patterns
def test_ds_from_tables_properties():
    from ppdm_dask.krimp.codetable import CodeTable

    x = [[1, 3, 5], [1, 3, 6], [2, 4, 5], [1, 3, 5], [2, 3, 6]]
    y = [[1, 4, 5], [2, 4, 6], [2, 4, 6], [1, 3, 5]]
    ctx = CodeTable.from_itemsets(x, [[1, 3]])
    cty = CodeTable.from_itemsets(y, [[2, 4, 6]])
    assert ds_from_tables(x, x, ctx, ctx) == 0.0
    d1 = ds_from_tables(x, y, ctx, cty, details=True)
    d2 = ds_from_tables(y, x, cty, ctx, details=True)
    assert d1["ds"] == d2["ds"] and d1["ds"] == max(d1["ratio_x"], d1["ratio_y"])
    # distributed covers give the same lengths as lists
    tx = TransactionArray.from_lists(x, npartitions=2)
    ty = TransactionArray.from_lists(y, npartitions=3)
    assert ds_from_tables(tx, ty, ctx, cty) == d1["ds"]
    # disjoint alphabets: finite thanks to the Laplace correction of unused singletons
    # (docs/krimp.md#clarification-laplace-correction-of-foreign-code-tables)
    z = [[10, 11], [10, 12]]
    dz = ds_from_tables(x, z, ctx, CodeTable.from_itemsets(z))
    assert np.isfinite(dz) and dz > 0
    assert ds_from_tables(x, z, ctx, CodeTable.from_itemsets(z), laplace=0.0) == np.inf


def test_dissimilarity_and_generator_on_small_categorical():
    _needs_search()
    from ppdm_dask.krimp.scores import dissimilarity

    db = [[1, 3, 5]] * 4 + [[2, 4, 6]] * 3 + [[1, 3, 6], [2, 4, 5], [2, 3, 5]]  # the ten rows of the hand-computed KRIMP run
    assert dissimilarity(db, db, min_support=2) == 0.0
    gen = KrimpGenerator(min_support=2, laplace=0.001).fit(db)
    assert [d.tolist() for d in gen.domains_] == [[1, 2], [3, 4], [5, 6]]
    out = gen.sample(200, key=4)
    check_domains(out, gen.domains_)
    x = TransactionArray.from_lists(db)
    a, b = dissimilarity(x, out, min_support=2), dissimilarity(out, x, min_support=2)
    assert a == b and np.isfinite(a)
    assert dissimilarity(db, [[7, 8], [7, 9]], min_support=1) < np.inf


def test_fit_lucs_iris_pattern_comparison(shared_data):
    _needs_search()
    tx = TransactionArray.from_fimi(str(shared_data / "lucs" / "iris.dat"))
    gen = KrimpGenerator(min_support=1, laplace=0.001, max_len=3, allow_weak=True).fit(tx)  # P4 setting, below the floor
    assert gen.code_table_.n_nontrivial > 0
    assert all(len(s) <= 3 for s in gen.code_table_.itemsets)
    out = gen.sample(key=8)
    assert out.n_transactions == 150
    check_domains(out, gen.domains_)
    pc = pattern_comparison(tx, out, 0.05)
    assert pc["n_equal"] + pc["n_missing"] == pc["n_original"] and 0 <= pc["pct_equal"] <= 100
    assert pc["pct_equal"] > 50
    nas = normalized_anonymity_score(out, tx)
    assert 0.0 <= nas <= 1.0
    assert 1.0 <= avg_patterns_per_row(out) <= 5.0
    same = pattern_comparison(tx, tx, 0.05, delta=0.0)
    assert same["pct_equal"] == 100.0 and same["avg_sup_diff_equal"] == 0.0 and same["n_new"] == 0
    assert same["frac_diff_gt_delta"] == 0.0
    assert pattern_comparison(tx, tx, 1)["n_original"] > pattern_comparison(tx, tx, 0.05)["n_original"]
    for bad in (1.5, 0.0, -2, "5%"):
        with pytest.raises(InvalidParameter):
            pattern_comparison(tx, out, bad)


def test_exclude_sensitive_combination():
    _needs_search()
    db = [[1, 3, 5]] * 6 + [[2, 4, 6]] * 5 + [[1, 4, 5], [2, 3, 6]]
    gen = KrimpGenerator(min_support=2, exclude=[(1, 3)]).fit(db)
    assert not any({1, 3} <= set(s.tolist()) for s in gen.code_table_.itemsets)
    free = KrimpGenerator(min_support=2).fit(db)
    assert any({1, 3} <= set(s.tolist()) for s in free.code_table_.itemsets)

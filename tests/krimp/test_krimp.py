"""KRIMP core: candidates, code tables, cover, sizes, search (docs/krimp.md#krimp-code-tables-and-the-search),
with the hand-computed examples of docs/krimp.md#tests: the five-row database covered in the order of
the paper's Figure 1, the ten-row KRIMP run (every accept/reject and size) and mushroom.

The exactness reference is the reference implementation of KRIMP kept in the shared data folder (a
literal transcription of the documented semantics; found by the ``krimp_std`` fixture below).
It is imported by path for the ten-row and small-data checks (code table and usages identical,
sizes equal to 1e-9), and transcribed below (``_ref_krimp``) with two changes only: the candidate
list is a parameter (so closed candidates can be fed) and stdlen(X) is summed over the items in
ascending new-id order (the library's documented order; krimp_std sums in frozenset iteration
order, which can differ in the last bit). With that, sizes must agree **bit for bit**.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask.errors import DataFormatError, InvalidParameter, ItemIdError
from ppdm_dask.krimp import (
    Candidates,
    CodeTable,
    as_database,
    cover,
    cover_usages,
    encoded_length,
    krimp,
    mine_candidates,
)
from ppdm_dask.krimp._kernels import exact_sum

A, B, C, D, E, F = 1, 2, 3, 4, 5, 6
DB5 = [[A, C, E], [A, C, F], [B, D, E], [B, D, F], [B, C, F]]
O44 = [[A, C, E]] * 4 + [[B, D, F]] * 3 + [[A, C, F], [B, D, E], [B, C, E]]


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def lucs(shared_data: Path) -> Path:
    return shared_data / "lucs"


def _load(path: Path, n: int | None = None) -> list[list[int]]:
    rows = [list(map(int, line.split())) for line in open(path) if line.strip()]
    return rows[:n] if n else rows


@pytest.fixture(scope="module")
def krimp_std(shared_data: Path):
    path = shared_data.parent / "spec_checks" / "krimp_std.py"
    # the shared folder was found (the shared_data fixture), so its spec checks must be there too
    assert path.exists(), f"{path} is missing from the shared folder"
    spec = importlib.util.spec_from_file_location("krimp_std", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _random_categorical(seed: int, n_rows: int, domains: list[int]) -> list[list[int]]:
    """Categorical rows (one item per attribute) with correlated attributes."""
    rng = np.random.default_rng(seed)
    base = np.cumsum([0] + domains[:-1]) + 1
    protos = [rng.integers(0, domains) for _ in range(3)]
    rows = []
    for _ in range(n_rows):
        p = protos[rng.integers(len(protos))]
        vals = np.where(rng.random(len(domains)) < 0.7, p, rng.integers(0, domains))
        rows.append(sorted((base + vals).tolist()))
    return rows


def _brute_frequent(rows, minsup, closed=False, max_len=None):
    sets = [frozenset(r) for r in rows]
    items = sorted(set().union(*sets))
    out = {}
    for k in range(1, len(items) + 1):
        found = False
        for X in itertools.combinations(items, k):
            s = sum(1 for t in sets if t.issuperset(X))
            if s >= minsup:
                out[frozenset(X)] = s
                found = True
        if not found:
            break
    if closed:
        out = {X: s for X, s in out.items() if not any(s == s2 and X < Y for Y, s2 in out.items())}
    return {X: s for X, s in out.items() if len(X) >= 2 and (max_len is None or len(X) <= max_len)}


# --- transcription of the reference implementation (see module docstring) -----------------------
def _ref_renumber(db):
    fr = Counter(i for t in db for i in t)
    order = sorted(fr, key=lambda i: (-fr[i], -i))
    fw = {i: k for k, i in enumerate(order)}
    return [frozenset(fw[i] for i in t) for t in db], order


def _ref_sizes(db, CT, items, sl):
    u = Counter()
    for t in db:
        rem = set(t)
        for c in CT:
            if c <= rem:
                u[c] += 1
                rem -= c
        for i in rem:
            u[frozenset([i])] += 1
    U = sum(u.values())
    elems = list(CT) + [frozenset([i]) for i in sorted(items)]
    LD = math.fsum(-u[c] * math.log2(u[c] / U) for c in elems if u[c] > 0)
    LCT = math.fsum(sum(sl[i] for i in sorted(c)) - math.log2(u[c] / U) for c in elems if u[c] > 0)
    return LD, LCT, u


def _ref_krimp(db, cands, prune=True):
    """db in new ids (frozensets); cands: [(frozenset new ids, support)] in candidate order."""
    fr = Counter(i for t in db for i in t)
    tot = sum(fr.values())
    sl = {i: -math.log2(v / tot) for i, v in fr.items()}
    items = set(fr)
    CT = []
    LD, LCT, u = _ref_sizes(db, CT, items, sl)
    best = LD + LCT
    for X, _s in cands:
        k = 0
        while k < len(CT) and len(CT[k]) >= len(X):
            k += 1
        CT2, pos = CT[:k] + [X] + CT[k:], k
        LD2, LCT2, u2 = _ref_sizes(db, CT2, items, sl)
        if not LD2 + LCT2 < best:
            continue
        CT, best, uold, u = CT2, LD2 + LCT2, u, u2
        if not prune:
            continue
        # pending list: the elements whose usage the acceptance decreased, in cover order
        pl = [c for c in CT[pos + 1 :] if u[c] < uold[c]]
        while pl:
            Y = pl.pop(0)
            if u[Y] == 0:
                CT = [c for c in CT if c != Y]
                continue
            i = CT.index(Y)
            CT3 = CT[:i] + CT[i + 1 :]
            LD3, LCT3, u3 = _ref_sizes(db, CT3, items, sl)
            if LD3 + LCT3 <= best:
                # after a removal: the pending list re-sorted by usage with the authors' sort (pass
                # a bubbles from position a on, stops after a pass without a swap), then the elements
                # the removal decreased, in cover order, each before the first pending one of
                # larger usage
                for a in range(len(pl) - 1):
                    changed = False
                    for b in range(a, len(pl) - 1):
                        if u3[pl[b]] > u3[pl[b + 1]]:
                            pl[b], pl[b + 1] = pl[b + 1], pl[b]
                            changed = True
                    if not changed:
                        break
                for c in CT3[i:]:
                    if u3[c] < u[c] and c not in pl:
                        k = next((k for k, e in enumerate(pl) if u3[e] > u3[c]), len(pl))
                        pl.insert(k, c)
                CT, best, u = CT3, LD3 + LCT3, u3
    LD, LCT, u = _ref_sizes(db, CT, items, sl)
    return CT, u, LD, LCT


def _ref_candidate_list(rows, cands: Candidates):
    """Our candidates in the reference's terms (new ids), in our order."""
    _, order = _ref_renumber(rows)
    fw = {i: k for k, i in enumerate(order)}
    return [(frozenset(fw[i] for i in X.tolist()), int(s)) for X, s in zip(cands, cands.supports)]


def _assert_same_as_reference(rows, cands, prune):
    db, order = _ref_renumber(rows)
    CT, u, LD, LCT = _ref_krimp(db, _ref_candidate_list(rows, cands), prune)
    res = krimp(rows, cands, prune=prune)
    ct = res.code_table
    got = [frozenset(x.tolist()) for x in ct.itemsets[: ct.n_nontrivial]]
    want = [frozenset(order[i] for i in c) for c in CT]
    assert got == want
    want_u = [u[c] for c in CT] + [u[frozenset([k])] for k in range(len(order))]
    assert ct.usages.tolist() == want_u
    assert [int(x[0]) for x in ct.itemsets[ct.n_nontrivial :]] == order
    s = ct.sizes()
    assert s["L_D_CT"] == LD and s["L_CT_D"] == LCT and s["total"] == LD + LCT  # bit for bit
    assert res.stats["best"] == s["total"]
    return res


# ----------------------------------------------------------------------------- numerics
def test_exact_sum_equals_math_fsum():
    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(0, 60))
        kind = trial % 4
        if kind == 0:
            x = rng.normal(size=n) * 10.0 ** rng.integers(-20, 20, size=n)
        elif kind == 1:  # heavy cancellation
            y = rng.normal(size=n // 2 + 1) * 1e16
            x = np.concatenate([y, -y, rng.normal(size=3)])
        elif kind == 2:  # half-way cases
            x = np.array([1e16, 1.0, 1e-16, -1e16, 2.0**-53, 1.0] * (n // 6 + 1))
        else:  # the KRIMP terms: -u*log2(u/U) and stdlen - log2(u/U)
            us = rng.integers(1, 10_000, size=n)
            U = int(us.sum()) + 1
            x = np.array([-int(u) * math.log2(int(u) / U) for u in us] + [3.5 - math.log2(int(u) / U) for u in us])
        rng.shuffle(x)
        assert exact_sum(x, x.size) == math.fsum(x.tolist())
    assert exact_sum(np.array([1e-16, 1.0, 1e16]), 3) == math.fsum([1e-16, 1.0, 1e16])
    assert exact_sum(np.zeros(0), 0) == 0.0


def test_numba_log2_is_libm_log2():
    import numba

    @numba.njit
    def lg(a, b):
        out = np.empty(a.size)
        for k in range(a.size):
            out[k] = math.log2(np.float64(a[k]) / np.float64(b[k]))
        return out

    rng = np.random.default_rng(2)
    a = rng.integers(1, 60_000, size=20_000)
    b = a + rng.integers(0, 2_000_000, size=a.size)
    got = lg(a, b)
    want = np.array([math.log2(int(x) / int(y)) for x, y in zip(a, b)])
    assert np.array_equal(got, want)


# ----------------------------------------------------------------------------- database / order
def test_renumbering_and_inputs(lucs):
    d = as_database(DB5)
    # the five-row database renumbered: new ids F0 C1 B2 E3 D4 A5
    # (docs/krimp.md#clarification-item-renumbering-decides-every-tie)
    assert d.new_labels.tolist() == [F, C, B, E, D, A]
    assert d.to_new([A, F]).tolist() == [5, 0]
    m = sp.csr_array(np.array([[1, 0, 1], [0, 1, 1]]))
    d2 = as_database(m, labels=[10, 20, 30])
    assert d2.labels.tolist() == [10, 20, 30] and d2.to_lists() == [[10, 30], [20, 30]]
    assert as_database(m).labels.tolist() == [0, 1, 2]
    from ppdm_dask import TransactionArray

    ta = TransactionArray.from_fimi(str(lucs / "iris.dat"))
    rows = _load(lucs / "iris.dat")
    d3, d4 = as_database(ta), as_database(rows)
    assert np.array_equal(d3.labels, d4.labels) and d3.to_lists() == d4.to_lists()
    assert np.array_equal(d3.new_ids, d4.new_ids)
    with pytest.raises(DataFormatError):
        as_database([])
    with pytest.raises(DataFormatError):
        as_database([[], []])
    with pytest.raises(DataFormatError):
        as_database([["a", "b"]])
    with pytest.raises(ItemIdError):
        as_database([[1, -2]])


# ----------------------------------------------------------------------------- cover by hand
# {ACE, ACF, BDE, BDF, BCF} covered by AC, BD, CF (the order of the paper's Figure 1), then singletons
def test_o43_cover_given_order():
    ct = CodeTable.from_itemsets(DB5, [[A, C], [B, D], [C, F]])
    u = dict(zip([tuple(x.tolist()) for x in ct.itemsets], ct.usages.tolist()))
    assert u == {(1, 3): 2, (2, 4): 2, (3, 6): 1, (2,): 1, (3,): 0, (6,): 2, (1,): 0, (4,): 0, (5,): 2}
    indptr, el = cover(DB5, ct)
    covers = [sorted(tuple(ct.itemsets[e].tolist()) for e in el[indptr[i] : indptr[i + 1]]) for i in range(5)]
    assert covers == [[(1, 3), (5,)], [(1, 3), (6,)], [(2, 4), (5,)], [(2, 4), (6,)], [(2,), (3, 6)]]
    # + laplace 1 = the corrected Fig. 1 (docs/krimp.md#correction-the-code-table-of-figure-1):
    # AC 3, BD 3, CF 2, A 1, B 2, C 1, D 1, E 3, F 3
    lap = {tuple(x.tolist()): k + 1 for x, k in zip(ct.itemsets, ct.usages.tolist())}
    assert lap == {(1, 3): 3, (2, 4): 3, (3, 6): 2, (1,): 1, (2,): 2, (3,): 1, (4,): 1, (5,): 3, (6,): 3}


def test_o43_standard_cover_order():
    cands = mine_candidates(DB5, 2)
    # candidate order: support desc, length desc, lex on new ids (F0 C1 B2 E3 D4 A5)
    assert cands.itemsets() == [[C, F], [B, F], [A, C], [B, D]]
    sel = [x for x in cands.itemsets() if x != [B, F]]
    ct = CodeTable.from_itemsets(DB5, sel)
    u = dict(zip([tuple(x.tolist()) for x in ct.itemsets], ct.usages.tolist()))
    assert [tuple(x.tolist()) for x in ct.itemsets[:3]] == [(3, 6), (1, 3), (2, 4)]
    assert u == {(3, 6): 2, (1, 3): 1, (2, 4): 2, (1,): 1, (2,): 1, (5,): 2, (6,): 1, (3,): 0, (4,): 0}


# ----------------------------------------------------------------------------- KRIMP run by hand
# ACE×4, BDF×3, ACF, BDE, BCE; all itemsets of support >= 2: CE accepted, AC, ACE, AE (equal size)
# rejected, BD accepted, BDF, BF, DF, BE rejected; CT = CE 5, BD 4 | singletons, 97.9781 bits
@pytest.mark.parametrize("prune", [True, False])
def test_o44_exact(prune, krimp_std):
    cands = mine_candidates(O44, 2)
    name = {v: k for k, v in zip("ABCDEF", range(1, 7))}
    assert ["".join(name[i] for i in x) for x in cands.itemsets()] == ["CE", "AC", "ACE", "AE", "BD", "BDF", "BF", "DF", "BE"]
    assert cands.supports.tolist() == [5, 5, 4, 4, 4, 3, 3, 3, 2]
    res = krimp(O44, min_support=2, prune=prune)
    ct = res.code_table
    assert ["".join(name[i] for i in x.tolist()) for x in ct.itemsets] == ["CE", "BD", "E", "C", "B", "A", "F", "D"]
    assert ct.usages.tolist() == [5, 4, 1, 1, 1, 5, 4, 0]
    assert ct.n_nontrivial == 2 and res.n_accepted == 2 and res.n_pruned == 0 and res.n_candidates == 9
    s = ct.sizes()
    assert round(s["L_D_CT"], 4) == 53.0194 and round(s["L_CT_D"], 4) == 44.9587
    assert round(s["total"], 4) == 97.9781 and round(s["L_percent"], 2) == 90.53
    assert round(s["L_D_ST"], 4) == 76.9679 and round(s["L_ST"], 4) == 31.2551
    assert round(s["total_ST"], 4) == 108.2230 and s["sum_usage"] == 21
    sl = dict(zip(ct.alphabet.tolist(), ct.std_lengths.tolist()))
    assert round(sl[C], 4) == round(sl[E], 4) == 2.3219 and round(sl[D], 4) == 2.9069
    # the literal reference script
    db, order = krimp_std.renumber([frozenset(r) for r in O44])
    CT, u, LD, LCT, LDST = krimp_std.krimp(db, 2, prune)
    assert [frozenset(order[i] for i in c) for c in CT] == [frozenset(x.tolist()) for x in ct.itemsets[:2]]
    assert LD + LCT == pytest.approx(s["total"], rel=1e-12, abs=0) and LDST == s["total_ST"]
    _assert_same_as_reference(O44, cands, prune)


# ----------------------------------------------------------------------------- candidates
@pytest.mark.parametrize("seed", range(4))
def test_miner_vs_brute_force(seed):
    rng = random.Random(seed)
    rows = [sorted(rng.sample(range(1, 11), rng.randint(1, 6))) for _ in range(40)]
    for minsup in (1, 3):
        for closed in (False, True):
            for max_len in (None, 3):
                want = _brute_frequent(rows, minsup, closed, max_len)
                c = mine_candidates(rows, minsup, closed=closed, max_len=max_len)
                got = {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)}
                assert got == want and len(c) == len(want)
    # exclude: drop every itemset containing all items of a combination
    c = mine_candidates(rows, 2, exclude=[[1, 2], [5]])
    want = {X: s for X, s in _brute_frequent(rows, 2).items() if not ({1, 2} <= X or 5 in X)}
    assert {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)} == want
    c = mine_candidates(rows, 2, closed=True, exclude=[[3, 4]])
    want = {X: s for X, s in _brute_frequent(rows, 2, True).items() if not {3, 4} <= X}
    assert {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)} == want


def test_closed_miner_dense_random_vs_pyfim():
    """Dense categorical data exercises LCM's known-failure inheritance and the merged databases."""
    fim = pytest.importorskip("fim")
    for seed in range(12):
        rng = np.random.default_rng(seed)
        doms = [int(x) for x in rng.integers(2, 5, size=int(rng.integers(4, 9)))]
        rows = _random_categorical(100 + seed, int(rng.integers(30, 250)), doms)
        for minsup in (1, 4):
            for max_len in (None, 3):
                c = mine_candidates(rows, minsup, closed=True, max_len=max_len)
                ref = fim.eclat(rows, target="c", supp=-minsup, report="a", zmin=2)
                want = {frozenset(x): s for x, s in ref if max_len is None or len(x) <= max_len}
                assert {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)} == want


def test_closed_miner_reports_closure_of_empty_set():
    # items 7 and 8 are in every row: {7, 8} is closed (support = |db|); pyfim does not report
    # the closure of the empty set, the reference KRIMP miner does (mushroom: 238,708 + {85})
    rows = [[1, 7, 8], [2, 7, 8], [1, 2, 7, 8]]
    c = mine_candidates(rows, 1, closed=True)
    got = {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)}
    assert got == _brute_frequent(rows, 1, closed=True)
    assert got[frozenset({7, 8})] == 3 and got[frozenset({1, 2, 7, 8})] == 1
    assert mine_candidates(rows, 1, closed=True, max_len=2).itemsets() == [[7, 8]]
    assert len(mine_candidates(rows, 1, closed=True, exclude=[[7]])) == 0


def _standard_key(rows):
    fr = Counter(i for t in rows for i in t)
    order = sorted(fr, key=lambda i: (-fr[i], -i))
    fw = {i: k for k, i in enumerate(order)}
    return lambda X, s: (-s, -len(X), tuple(sorted(fw[i] for i in X)))


@pytest.mark.parametrize(
    "name,minsup,closed", [("iris", 1, False), ("iris", 1, True), ("led7", 1, True), ("led7", 3, False), ("pima", 5, True)]
)
def test_miner_vs_pyfim_and_order(lucs, name, minsup, closed):
    fim = pytest.importorskip("fim")
    rows = _load(lucs / f"{name}.dat")
    c = mine_candidates(rows, minsup, closed=closed)
    ref = fim.eclat(rows, target="c" if closed else "s", supp=-minsup, report="a", zmin=2)
    assert {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)} == {frozenset(x): s for x, s in ref}
    key = _standard_key(rows)
    keys = [key(x, int(s)) for x, s in zip(c.itemsets(), c.supports)]
    assert keys == sorted(keys)
    assert all(x == sorted(x) for x in c.itemsets()[:100])


def test_candidate_order_tie_breaks():
    # equal frequencies: the larger original id gets the smaller new id
    rows = [[1, 2, 3], [1, 2, 3], [4, 5], [4, 5], [1, 5]]
    d = as_database(rows)
    assert d.new_labels.tolist() == [5, 1, 4, 3, 2]
    c = mine_candidates(rows, 2)
    # supp 2, len 3: {1,2,3}; then supp 2, len 2 in lex order of new ids: 45 (0,2), 13 (1,3), 12 (1,4), 23 (3,4)
    assert c.itemsets() == [[1, 2, 3], [4, 5], [1, 3], [1, 2], [2, 3]]
    rng = np.random.default_rng(5)
    rows = [sorted(set(rng.integers(1, 9, size=4).tolist())) for _ in range(30)]
    c = mine_candidates(rows, 1)
    key = _standard_key(rows)
    keys = [key(x, int(s)) for x, s in zip(c.itemsets(), c.supports)]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_candidates_container():
    c = mine_candidates(O44, 2)
    assert len(c) == 9 and c[0].tolist() == [3, 5] and c[-1].tolist() == [2, 5]
    assert [x.tolist() for x in c] == c.itemsets()
    assert c.offsets.tolist()[:3] == [0, 2, 4] and c.lengths.tolist()[2] == 3
    df = c.to_pandas()
    assert df["support"].tolist() == [5, 5, 4, 4, 4, 3, 3, 3, 2]
    assert len(mine_candidates(O44, 11)) == 0
    with pytest.raises(InvalidParameter):
        mine_candidates(O44, 0)
    with pytest.raises(InvalidParameter):
        mine_candidates(O44, 1.5)
    with pytest.raises(InvalidParameter):
        mine_candidates(O44, 2, max_len=1)
    with pytest.raises(InvalidParameter):
        mine_candidates(O44, 2, exclude=[[]])


# ----------------------------------------------------------------------------- KRIMP vs reference
@pytest.mark.parametrize("seed", range(6))
def test_krimp_vs_reference_random(seed):
    rows = _random_categorical(seed, 50 + 10 * seed, [3, 2, 4, 3, 2][: 3 + seed % 3])
    for closed in (False, True):
        cands = mine_candidates(rows, 1 + seed % 2, closed=closed)
        for prune in (True, False):
            _assert_same_as_reference(rows, cands, prune)


@pytest.mark.parametrize(
    "name,n,minsup,closed",
    [
        ("iris", None, 1, False),
        ("iris", None, 1, True),
        ("led7", 250, 1, True),
        ("led7", 300, 8, False),
        ("breast", 120, 2, True),
    ],
)
def test_krimp_vs_reference_lucs(lucs, name, n, minsup, closed):
    rows = _load(lucs / f"{name}.dat", n)
    cands = mine_candidates(rows, minsup, closed=closed)
    res_p = _assert_same_as_reference(rows, cands, True)
    res_n = _assert_same_as_reference(rows, cands, False)
    assert res_p.n_pruned > 0 and res_n.n_pruned == 0  # the pruning path is exercised


def test_krimp_vs_literal_script(lucs, krimp_std):
    rows = _load(lucs / "iris.dat")
    db, order = krimp_std.renumber([frozenset(r) for r in rows])
    CT, u, LD, LCT, LDST = krimp_std.krimp(db, 2, True)
    res = krimp(rows, min_support=2)
    ct = res.code_table
    assert [frozenset(order[i] for i in c) for c in CT] == [frozenset(x.tolist()) for x in ct.itemsets[: ct.n_nontrivial]]
    assert ct.usages[: ct.n_nontrivial].tolist() == [u[c] for c in CT]
    s = ct.sizes()
    assert s["L_D_CT"] == pytest.approx(LD, rel=1e-12) and s["L_CT_D"] == pytest.approx(LCT, rel=1e-12)
    assert s["total_ST"] == LDST


def test_krimp_given_candidates_and_inputs(lucs):
    rows = _load(lucs / "iris.dat")
    ref = krimp(rows, min_support=1, closed=True)
    cands = mine_candidates(rows, 1, closed=True)
    shuffled = cands.itemsets()
    random.Random(0).shuffle(shuffled)
    r2 = krimp(rows, shuffled)  # plain itemsets: put into the standard candidate order
    r3 = krimp(rows, cands)  # Candidates mined on another Database object of the same data
    from ppdm_dask import TransactionArray

    r4 = krimp(TransactionArray.from_fimi(str(lucs / "iris.dat")), min_support=1, closed=True)
    for r in (r2, r3, r4):
        assert [x.tolist() for x in r.code_table.itemsets] == [x.tolist() for x in ref.code_table.itemsets]
        assert np.array_equal(r.code_table.usages, ref.code_table.usages)
        assert r.code_table.sizes() == ref.code_table.sizes()
    # options filter given candidates like mined ones
    r5 = krimp(rows, cands, max_len=3, exclude=[[2, 7]])
    r6 = krimp(rows, min_support=1, closed=True, max_len=3, exclude=[[2, 7]])
    assert [x.tolist() for x in r5.code_table.itemsets] == [x.tolist() for x in r6.code_table.itemsets]
    assert all(x.size <= 3 and not {2, 7} <= set(x.tolist()) for x in r6.code_table.itemsets)
    # progress callback
    seen = []
    krimp(rows, cands, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(cands), len(cands))
    assert "L%" in str(ref) and ref.summary()["n_candidates"] == ref.n_candidates == len(cands)


def test_krimp_progress_line(capsys, monkeypatch):
    import ppdm_dask.progress as progress_mod

    monkeypatch.setattr(progress_mod, "_stderr_is_tty", lambda: True)
    krimp(O44, min_support=2, progress=True)
    assert "\rKRIMP candidates: 9/9" in capsys.readouterr().err
    # in a log (no terminal): no carriage returns; short work writes nothing
    monkeypatch.setattr(progress_mod, "_stderr_is_tty", lambda: False)
    krimp(O44, min_support=2, progress=True)
    assert capsys.readouterr().err == ""


def test_krimp_errors():
    with pytest.raises(InvalidParameter):
        krimp(O44)
    with pytest.raises(InvalidParameter):
        krimp(O44, min_support=0)
    with pytest.raises(DataFormatError):
        krimp([], min_support=1)
    with pytest.raises(ItemIdError):
        krimp(O44, [[1, 99]])
    # no candidates: the standard code table
    r = krimp(O44, [])
    s = r.code_table.sizes()
    assert r.code_table.n_nontrivial == 0 and s["total"] == s["total_ST"]


def test_mushroom_oracle(lucs):
    """Mushroom, closed candidates at min support 1, prune=True: the reference implementation's code
    table (206 non-singleton elements, 274,219.8 bits, L% 24.63)."""
    rows = _load(lucs / "mushroom.dat")
    res = krimp(rows, min_support=1, closed=True)
    # 238,709 closed itemsets of the reference miner = 238,708 with |X| >= 2 + the closed singleton {85}
    assert res.n_candidates == 238_708
    ct = res.code_table
    s = ct.sizes()
    assert ct.n_nontrivial == 206 and s["n_used_singletons"] == 62
    assert round(s["L_D_CT"], 1) == 248_284.7 and round(s["L_CT_D"], 1) == 25_935.2
    assert round(s["total"], 1) == 274_219.8 and round(s["total_ST"], 1) == 1_113_311.6
    assert round(s["L_percent"], 2) == 24.63
    assert res.stats["best"] == s["total"]
    assert res.stats["max_error_over_margin"] < 1e-3  # the fast pre-test is far inside its margin
    assert np.array_equal(cover_usages(rows, ct), ct.usages)


# ----------------------------------------------------------------------------- code table API
def test_codetable_api(tmp_path, lucs):
    rows = _load(lucs / "iris.dat")
    ct = krimp(rows, min_support=1, closed=True).code_table
    path = tmp_path / "ct.json"
    ct.save(path)
    back = CodeTable.load(path)
    assert [x.tolist() for x in back.itemsets] == [x.tolist() for x in ct.itemsets]
    assert np.array_equal(back.usages, ct.usages) and np.array_equal(back.supports, ct.supports)
    assert np.array_equal(back.std_lengths, ct.std_lengths) and back.sizes() == ct.sizes()
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(DataFormatError):
        CodeTable.load(tmp_path / "bad.json")
    # usages of the own db; encoded length = L(D|CT) up to rounding; with laplace per-row fsum
    assert np.array_equal(cover_usages(rows, ct), ct.usages)
    s = ct.sizes()
    assert encoded_length(rows, ct) == pytest.approx(s["L_D_CT"], rel=1e-14)
    lens = ct.code_lengths(1.0)
    U = int(ct.usages.sum())
    assert lens[0] == -math.log2((ct.usages[0] + 1) / (U + len(ct)))
    indptr, el = cover(rows, ct)
    assert encoded_length(rows, ct, 1.0) == math.fsum(lens[el].tolist())
    # code lengths and table
    cl = ct.code_lengths()
    assert np.all(np.isinf(cl[ct.usages == 0])) and np.all(np.isfinite(cl[ct.usages > 0]))
    df = ct.to_pandas()
    assert list(df.columns) == ["itemset", "length", "usage", "support", "code_length"] and len(df) == len(ct)
    # foreign rows: items outside the alphabet need with_alphabet
    with pytest.raises(ItemIdError):
        cover_usages([[1, 999]], ct)
    ext = ct.with_alphabet([999, 1000])
    assert ext.alphabet[-2:].tolist() == [999, 1000] and ext.itemsets[-1].tolist() == [999]
    assert ext.sizes()["total"] == ct.sizes()["total"]
    u = cover_usages([[999], [1000, 999]], ext)
    assert u[-2:].tolist() == [1, 2] and u.sum() == 3  # singletons 1000, 999
    assert math.isinf(encoded_length([[999]], ext)) and math.isfinite(encoded_length([[999]], ext, 1.0))
    # sparse input with labels
    m = sp.csr_array((np.ones(2), ([0, 0], [0, 1])), shape=(1, 2))
    assert cover_usages(m, ext, labels=[999, 1000]).sum() == 2
    with pytest.raises(InvalidParameter):
        ct.code_lengths(-1.0)


def test_cover_usages_on_the_cluster(shared_data, cluster_client):
    """Usage counting per partition + tree reduction equals the in-memory cover, for any
    partitioning, on a 2-worker LocalCluster."""
    from ppdm_dask.data.transactions import TransactionArray
    from ppdm_dask.krimp import cover_usages, cover_usages_dask, encoded_length, krimp, length_from_usages

    tx = TransactionArray.from_fimi(str(shared_data / "lucs" / "led7.dat"))
    ct = krimp(tx, min_support=5).code_table
    ref = cover_usages(tx, ct)
    assert ref.sum() > 0 and (ref == ct.usages).all()
    for parts in (1, 3, 7):
        got = cover_usages_dask(tx.repartition(npartitions=parts), ct, client=cluster_client)
        assert (got == ref).all()
    assert length_from_usages(ref, ct, 1.0) == encoded_length(tx, ct, 1.0)


# ----------------------------------------------------------------------------- authors' code tables
def _read_reference_ct(path: Path) -> list[tuple[tuple[int, ...], int, int]]:
    out = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        items, usage, support = (x.strip() for x in line.split("|"))
        out.append((tuple(sorted(int(i) for i in items.split())), int(usage), int(support)))
    return out


HERE = Path(__file__).resolve().parent


def _reference_case(request, name: str, closed: bool) -> tuple[list, list[list[int]]]:
    """(the authors' code table, the rows): led7 and pima from the copies bundled with the tests
    (tests/krimp/data, ppdm_dask samples), anneal from the shared folder."""
    from ppdm_dask.data.datasets import sample_path

    kind = "closed" if closed else "all"
    bundled = HERE / "data" / f"ct_{name}_{kind}_1.txt"
    if bundled.exists():
        import gzip

        with gzip.open(sample_path(name), "rt") as f:
            rows = [list(map(int, line.split())) for line in f if line.strip()]
        return _read_reference_ct(bundled), rows
    shared = request.getfixturevalue("shared_data")
    return (_read_reference_ct(shared / "krimp_reference" / f"ct_{name}_{kind}_1.txt"), _load(shared / "lucs" / f"{name}.dat"))


@pytest.mark.parametrize(
    "name, closed, n_elements, n_singletons, usage_sum, l_d, l_ct, total",
    [
        # figures as the authors' implementation prints them (krimp_reference/SOURCES.md), whole bits
        ("pima", False, 58, 32, 1_338, 6_963, 2_180, 9_143),
        ("anneal", True, 83, 58, 2_652, 16_596, 6_276, 22_873),
        ("led7", False, 152, 19, 3_816, 24_784, 5_841, 30_625),
    ],
)
def test_krimp_equals_authors_code_table(request, name, closed, n_elements, n_singletons, usage_sum, l_d, l_ct, total):
    """The final code table (elements in cover order, usages, supports, sizes) of the authors'
    implementation (prune on, min support 1)."""
    ref, rows = _reference_case(request, name, closed)
    ct = krimp(rows, min_support=1, closed=closed).code_table
    got = [(tuple(int(i) for i in x), int(u), int(s)) for x, u, s in zip(ct.itemsets, ct.usages, ct.supports)]
    want_ns = [e for e in ref if len(e[0]) > 1]
    assert len(want_ns) == n_elements
    assert got[: ct.n_nontrivial] == want_ns
    # the reference lists every singleton of the alphabet (unused ones with usage 0) with its
    # usage and support
    want_s = sorted(e for e in ref if len(e[0]) == 1)
    assert sorted(got[ct.n_nontrivial :]) == want_s
    assert sum(1 for e in want_s if e[1] > 0) == n_singletons
    s = ct.sizes()
    assert s["n_used_singletons"] == n_singletons and int(ct.usages.sum()) == usage_sum
    assert (round(s["L_D_CT"]), round(s["L_CT_D"]), round(s["total"])) == (l_d, l_ct, total)
    # and an independent recount of the usages: the plain greedy cover in the reference's order
    assert np.array_equal(cover_usages(rows, ct), ct.usages)


@pytest.mark.parametrize("name, n_elements, total", [("iris", 13, 1_475), ("breast", 30, 4_613), ("pageblocks", 53, 10_911)])
def test_krimp_sizes_equal_authors(shared_data, name, n_elements, total):
    """All itemsets at min support 1, prune on: the element counts and sizes the authors'
    implementation printed for these sets (krimp_reference/SOURCES.md)."""
    ct = krimp(_load(shared_data / "lucs" / f"{name}.dat"), min_support=1).code_table
    assert ct.n_nontrivial == n_elements and round(ct.sizes()["total"]) == total

"""k^m-anonymity of set-valued data (docs/anonymity.md#km-anonymity-of-set-valued-data and its
corrections): the hand-computed example of that page (hierarchy ALL -> {A, B}, five transactions)
and random databases checked against the optimum over all cuts.

Independent references written here: a brute-force count tree (itertools), a literal slow
transcription of the documented DA (restart after every change) and AA (recount per round), an
exhaustive search over all cuts, and an itertools k^m check.
"""

from __future__ import annotations

import itertools
import random
import warnings
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask.anonymity import _km_kernels as K
from ppdm_dask.anonymity.km import (
    KmResult,
    apriori_anonymization,
    check_km_anonymity,
    count_tree,
    direct_anonymization,
    is_km_anonymous,
    km_anonymize,
    ncp_km,
)
from ppdm_dask.data.hierarchy import Hierarchy
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DataFormatError, DuplicateItemsWarning, InfeasiblePrivacyError, InvalidParameter

ALL = "*"

# the example of docs/anonymity.md#information-loss-of-a-cut: ALL -> {A, B}, A -> {a1, a2}, B -> {b1, b2}
O24_H = [["a1", "A", "ALL"], ["a2", "A", "ALL"], ["b1", "B", "ALL"], ["b2", "B", "ALL"]]
O24_D = [["a1", "b1"], ["a2", "b1"], ["a1", "b2"], ["a2", "b2"], ["a1", "b1", "b2"]]


# ---------------------------------------------------------------- independent reference
class Lit:
    """A hierarchy table read literally: parent map, leaves below every node, node order.

    Node order (the documented convention of ppdm_dask.anonymity.km): items first in vocabulary
    order (sorted labels), then internal nodes by (level of first appearance, first row).
    """

    def __init__(self, rows: list[list[str]], items: list):
        rows = [list(r[:-1]) + [ALL] for r in rows]
        self.parent: dict[str, str] = {}
        self.level: dict[str, tuple[int, int]] = {}
        for i, r in enumerate(rows):
            for j in range(len(r) - 1):
                self.parent[r[j]] = r[j + 1]
            for j, x in enumerate(r):
                self.level.setdefault(x, (j, i))
        self.leaf_rows = [r[0] for r in rows]
        self.items = [str(x) for x in sorted(items)]
        internal = sorted({x for r in rows for x in r[1:]}, key=lambda x: self.level[x])
        self.order = {x: i for i, x in enumerate(self.items + internal)}

    def anc(self, x: str) -> list[str]:
        out = []
        while x in self.parent:
            x = self.parent[x]
            out.append(x)
        return out

    def under(self, n: str) -> int:
        return sum(1 for l in self.leaf_rows if l == n or n in self.anc(l))

    def is_leaf(self, x: str) -> bool:
        return x in self.leaf_rows

    def normalise(self, cut: set) -> frozenset:
        return frozenset(n for n in cut if not any(a in cut for a in self.anc(n)))

    def image(self, cut: frozenset, x: str) -> str:
        for a in [x] + self.anc(x):
            if a in cut:
                return a
        return x

    def published(self, cut: frozenset, x: str) -> bool:
        if any(a in cut for a in self.anc(x)):
            return False
        return self.is_leaf(x) or x in cut

    def exp(self, t) -> set:
        e = set(t)
        for x in t:
            e |= set(self.anc(x))
        return e

    def tree(self, D, m) -> Counter:
        """Brute-force PopulateTree: subsets of exp(t) without item+ancestor pairs
        (docs/anonymity.md#correction-the-count-tree-skips-an-item-together-with-its-ancestor)."""
        c: Counter = Counter()
        for t in D:
            e = sorted(self.exp(t))
            for s in range(1, m + 1):
                for S in itertools.combinations(e, s):
                    if any(b in self.anc(a) for a in S for b in S):
                        continue
                    c[frozenset(S)] += 1
        return c

    def occ(self, D) -> Counter:
        return Counter(x for t in D for x in set(t))

    def ncp_num(self, cut, occ) -> int:
        return sum(sum(v for l, v in occ.items() if n in self.anc(l)) * self.under(n) for n in cut)

    def ncp(self, cut, D) -> float:
        occ = self.occ(D)
        total = sum(occ.values())
        return self.ncp_num(cut, occ) / (len(self.leaf_rows) * total) if total else 0.0

    def recode(self, D, cut) -> list[frozenset]:
        return [frozenset(self.image(cut, x) for x in t) for t in D]


def literal_da(L: Lit, ct: Counter, occ: Counter, k: int, cut: frozenset = frozenset()) -> frozenset:
    """DA of docs/anonymity.md#km-anonymity-of-set-valued-data, transcribed literally: preorder
    traversal, restart after every change."""
    supp1 = Counter()
    for S, v in ct.items():
        if len(S) == 1:
            supp1[next(iter(S))] = v

    def rk(x):
        return (-supp1[x], L.order[x])

    pre = sorted(ct, key=lambda S: [rk(x) for x in sorted(S, key=rk)])
    while True:
        changed = False
        for S in pre:
            if not all(L.published(cut, x) for x in S):
                continue
            if ct[S] >= k:
                continue
            Js = sorted(S, key=rk)
            options = []
            for choice in itertools.product(*[[x] + L.anc(x) for x in Js]):
                new = L.normalise(set(cut) | {g for g, x in zip(choice, Js) if g != x})
                Jp = frozenset(L.image(new, x) for x in Js)
                if ct.get(Jp, 0) >= k:
                    key = (L.ncp_num(new, occ), sum(L.under(n) for n in new), sorted(L.order[n] for n in new))
                    options.append((key, new))
            cut = min(options, key=lambda o: o[0])[1]
            changed = True
            break
        if not changed:
            return cut


def literal_aa(L: Lit, D, k: int, m: int) -> frozenset:
    occ = L.occ(D)
    cut: frozenset = frozenset()
    for i in range(1, m + 1):
        cut = literal_da(L, L.tree(L.recode(D, cut), i), occ, k, cut)
    return cut


def brute_km(D, k: int, m: int) -> bool:
    c: Counter = Counter()
    for t in D:
        for s in range(1, m + 1):
            for S in itertools.combinations(sorted(set(t), key=str), s):
                c[S] += 1
    return all(v >= k for v in c.values())


def all_cuts(L: Lit, node: str = ALL) -> list[frozenset]:
    """Every cut below ``node`` as its set of generalised (internal) nodes."""
    children = [x for x, p in L.parent.items() if p == node]
    if not children:
        return [frozenset()]
    out = [frozenset({node})]
    for combo in itertools.product(*[all_cuts(L, c) for c in children]):
        out.append(frozenset().union(*combo))
    return out


def random_case(rng: random.Random, big: bool = False):
    """Random hierarchy table (leaves "0".."n-1", some never occurring) and transactions."""
    n_items = rng.randint(6, 12) if big else rng.randint(2, 7)
    n_extra = rng.randint(0, 2)
    depth = rng.randint(3, 5) if big else rng.randint(2, 4)  # columns: leaf, internal levels, root
    nodes = [str(i) for i in range(n_items + n_extra)]
    parents_of = []
    for j in range(1, depth - 1):
        n_par = rng.randint(1, max(1, len(nodes) - 1))
        assign = [rng.randrange(n_par) for _ in nodes]
        for p in range(n_par):  # every parent gets a child
            if p not in assign:
                assign[rng.randrange(len(assign))] = p
        used = sorted(set(assign))
        names = {p: f"N{j}_{used.index(p)}" for p in used}
        parents_of.append({c: names[a] for c, a in zip(nodes, assign)})
        nodes = [names[p] for p in used]
    rows = []
    for leaf in (str(i) for i in range(n_items + n_extra)):
        row, x = [leaf], leaf
        for pm in parents_of:
            x = pm[x]
            row.append(x)
        rows.append(row + ["root"])
    n_tx = rng.randint(10, 30) if big else rng.randint(3, 12)
    D = []
    for _ in range(n_tx):
        size = rng.choice([0, 1, 2, 2, 3, 3, 4, 5] if big else [0, 1, 1, 2, 2, 3, 4])
        D.append(sorted(rng.sample(range(n_items), min(size, n_items))))
    if not any(D):
        D[0] = [0]
    return rows, D


def as_sets(D) -> list[frozenset]:
    return [frozenset(str(x) for x in t) for t in D]


def tree_as_counter(tree) -> Counter:
    df = tree.to_pandas()
    return Counter({frozenset(s): int(v) for s, v in zip(df["itemset"], df["support"])})


# ---------------------------------------------------------------- the hand-computed example
def test_o2_4_count_tree():
    h = Hierarchy.from_table(O24_H)
    tree = count_tree(O24_D, h, 2, progress=False)
    got = tree_as_counter(tree)
    L = Lit(O24_H, ["a1", "a2", "b1", "b2"])
    assert got == L.tree(as_sets(O24_D), 2)
    assert got[frozenset({"a1"})] == 3 and got[frozenset({"A", "b1"})] == 3 and got[frozenset({ALL})] == 5
    assert frozenset({"a1", "A"}) not in got and not any(ALL in s and len(s) > 1 for s in got)
    assert tree.support(["a1"]) == 3 and tree.support(["A", "b1"]) == 3 and tree.support(["a2", "b2"]) == 1


@pytest.mark.parametrize("k,m,cut,ncp", [(2, 1, [], 0.0), (2, 2, ["B"], 3 / 11), (3, 2, ["A", "B"], 0.5)])
def test_o2_4_da_aa(k, m, cut, ncp):
    h = Hierarchy.from_table(O24_H)
    for method in ("DA", "AA"):
        r = km_anonymize(O24_D, h, k, m, method=method, progress=False)
        assert isinstance(r, KmResult)
        assert r.cut == cut and r.ncp == pytest.approx(ncp, abs=1e-12) and r.method == method
        assert is_km_anonymous(r.transactions, k, m)
        assert r.n_generalized_items == sum(1 for x in ["a1", "a2", "b1", "b2"] if x[0].upper() in cut)
    assert direct_anonymization(O24_D, h, k, m, progress=False) == cut
    assert apriori_anonymization(O24_D, h, k, m, progress=False) == cut


def test_o2_4_ncp_and_checks():
    h = Hierarchy.from_table(O24_H)
    assert ncp_km([], h, O24_D) == 0.0
    assert ncp_km(["A"], h, O24_D) == pytest.approx(5 * 0.5 / 11)
    assert ncp_km(["B"], h, O24_D) == pytest.approx(3 / 11)
    assert ncp_km(["A", "B"], h, O24_D) == pytest.approx(0.5)
    assert ncp_km(["*", "A"], h, O24_D) == ncp_km(["*"], h, O24_D) == pytest.approx(1.0)
    assert ncp_km(["B"], h, {"a1": 3, "a2": 2, "b1": 3, "b2": 3}) == pytest.approx(3 / 11)
    assert is_km_anonymous(O24_D, 2, 2) is False
    v = check_km_anonymity(O24_D, 2, 2)
    c = v["k^m-anonymity"]
    assert not v and c.figure == 1 and c.threshold == 2 and c.where == "itemset ['a2', 'b1'] (support 1)"
    raw = c.stats
    assert not raw["km_anonymous"] and raw["violations"] == 3 and raw["min_support"] == 1
    assert sorted(map(tuple, raw["examples"])) == [("a2", "b1"), ("a2", "b2"), ("b1", "b2")]
    # {A} alone still violates (b1, b2); {B} violates (a2) at k = 3
    L = Lit(O24_H, ["a1", "a2", "b1", "b2"])
    assert not is_km_anonymous(list(map(sorted, L.recode(as_sets(O24_D), frozenset({"A"})))), 2, 2)
    r = check_km_anonymity(list(map(sorted, L.recode(as_sets(O24_D), frozenset({"B"})))), 3, 2)["k^m-anonymity"].stats
    assert r["examples"] == [["B", "a2"], ["a2"]]  # vocabulary order: "B" < "a1"


# ---------------------------------------------------------------- count tree vs brute force
def test_count_tree_matches_bruteforce():
    rng = random.Random(7)
    for case in range(12):
        rows, D = random_case(rng)
        D = [t + t[:1] for t in D]  # repeated items (removed with a warning)
        D.append([])
        L = Lit(rows, sorted({x for t in D for x in t}))
        m = 1 + case % 3
        with pytest.warns(DuplicateItemsWarning):
            tx = TransactionArray.from_lists(D, npartitions=1 + case % 4)
        h = Hierarchy.from_table(rows)
        assert tree_as_counter(count_tree(tx, h, m, progress=False)) == L.tree(as_sets(D), m)


def test_count_engines_agree_and_plain_counts():
    rng = np.random.default_rng(3)
    h = Hierarchy.balanced(40, 3)
    lens = np.r_[rng.integers(0, 5, 200), rng.integers(15, 35, 30)]
    rows = [sorted(rng.choice(40, size=n, replace=False).tolist()) for n in lens]
    tx = TransactionArray.from_lists(rows)
    tree = count_tree(tx, h, 3, progress=False)
    nodes = tree.nodes
    block = tx.compute(progress=False)
    ident = np.arange(nodes.n_items)
    args = (block, ident, nodes.parent, nodes.tin, nodes.tout, 3, tree.bits)
    for vertical in (np.zeros(0, np.int64), np.arange(block.shape[0]), np.arange(0, block.shape[0], 7), None):
        keys, counts = K.count_block(*args, vertical_rows=vertical)
        assert np.array_equal(keys, tree.keys) and np.array_equal(counts, tree.counts)
    assert np.all(np.diff(tree.keys) > 0)
    # plain counting (no hierarchy) against itertools, both engines
    small = sp.csr_array(block[:60])
    ref: Counter = Counter()
    for r in range(small.shape[0]):
        for s in (1, 2, 3):
            ref.update(itertools.combinations(small.indices[small.indptr[r] : small.indptr[r + 1]].tolist(), s))
    bits = K.key_bits(3, 40)
    for vertical in (np.zeros(0, np.int64), np.arange(60)):
        keys, counts = K.count_plain_block(small, 3, bits, vertical_rows=vertical)
        got = {tuple(x for x in row if x >= 0): int(c) for row, c in zip(K.unpack_keys(keys, 3, bits).tolist(), counts)}
        assert got == dict(ref)
    # merge of runs = counts of the concatenation
    a, b = K.count_plain_block(block[:100], 2, K.key_bits(2, 40)), K.count_plain_block(block[100:], 2, K.key_bits(2, 40))
    whole = K.count_plain_block(block, 2, K.key_bits(2, 40))
    merged = K.merge_counts([a, K.empty_counts(), b])
    assert np.array_equal(merged[0], whole[0]) and np.array_equal(merged[1], whole[1])


def test_recode_block_collapses_duplicates():
    block = sp.csr_array(np.array([[1, 1, 0, 1], [0, 0, 0, 0], [0, 1, 1, 0]], dtype=np.int32))
    out = K.recode_block(block, np.array([0, 0, 1, 2]), 3)
    assert out.indices.dtype == np.int32 and out.data.dtype == np.int32
    assert out.toarray().tolist() == [[1, 0, 1], [0, 0, 0], [1, 1, 0]]


# ---------------------------------------------------------------- random cases: k^m-anonymous, no better
# than the optimum over all cuts, equal to the literal DA / AA
def test_o2_6_random_against_literal_and_optimum():
    rng = random.Random(2024)
    n_checked = 0
    for case in range(45):
        rows, D = random_case(rng)
        m = rng.choice([1, 2, 2, 3])
        n_nonempty = sum(1 for t in D if t)
        k = rng.randint(2, max(2, min(5, n_nonempty)))
        if k > n_nonempty:
            continue
        items = sorted({x for t in D for x in t})
        L = Lit(rows, items)
        Ds = as_sets(D)
        h = Hierarchy.from_table(rows)
        tx = TransactionArray.from_lists(D, npartitions=1 + case % 3)
        occ = L.occ(Ds)
        da_lit = literal_da(L, L.tree(Ds, m), occ, k)
        aa_lit = literal_aa(L, Ds, k, m)
        feasible = [c for c in all_cuts(L) if brute_km(L.recode(Ds, c), k, m)]
        best = min(L.ncp(c, Ds) for c in feasible)
        for method, lit in (("DA", da_lit), ("AA", aa_lit)):
            r = km_anonymize(tx, h, k, m, method=method, progress=False)
            assert r.cut == sorted(lit), (case, method)
            assert r.ncp == pytest.approx(L.ncp(lit, Ds), abs=1e-12)
            published = [frozenset(str(x) for x in t) for t in r.transactions.to_lists()]
            assert published == L.recode(Ds, lit)
            assert brute_km(published, k, m) and is_km_anonymous(r.transactions, k, m)
            assert r.ncp >= best - 1e-12
        n_checked += 1
    assert n_checked >= 30


def test_larger_random_cases_against_literal():
    """Cases with several cut changes, where already scanned itemsets must be re-examined
    (the fast traversal's pending set) to match the literal restart."""
    rng = random.Random(5)
    changes = Counter()
    for case in range(60):
        rows, D = random_case(rng, big=True)
        m, k = rng.choice([2, 3]), rng.randint(2, 6)
        if k > sum(1 for t in D if t):
            continue
        L = Lit(rows, sorted({x for t in D for x in t}))
        Ds = as_sets(D)
        h = Hierarchy.from_table(rows)
        tx = TransactionArray.from_lists(D, npartitions=2)
        lits = {"DA": literal_da(L, L.tree(Ds, m), L.occ(Ds), k), "AA": literal_aa(L, Ds, k, m)}
        for method, lit in lits.items():
            r = km_anonymize(tx, h, k, m, method=method, progress=False)
            assert r.cut == sorted(lit), (case, method)
            changes[method] += sum(x["changes"] for x in r.rounds) >= 3
    assert min(changes.values()) >= 10


def test_partitioning_does_not_matter():
    rng = np.random.default_rng(11)
    rows = [sorted(rng.choice(30, size=rng.integers(0, 6), replace=False).tolist()) for _ in range(80)]
    h = Hierarchy.balanced(30, 3)
    results = []
    for parts in (1, 4, 100):  # 100 > 80 rows: some partitions are empty
        tx = TransactionArray.from_lists(rows, npartitions=parts)
        for method in ("DA", "AA"):
            r = km_anonymize(tx, h, 4, 2, method=method, progress=False)
            assert r.transactions.n_partitions == tx.n_partitions
            assert r.transactions.partition_rows == tx.partition_rows
            results.append((method, r.cut, r.ncp, r.transactions.to_lists()))
    for method in ("DA", "AA"):
        same = [x[1:] for x in results if x[0] == method]
        assert all(s == same[0] for s in same[1:])


def test_on_local_cluster(cluster_client):
    rng = np.random.default_rng(5)
    rows = [sorted(rng.choice(25, size=rng.integers(1, 6), replace=False).tolist()) for _ in range(120)]
    h = Hierarchy.balanced(25, 5)
    tx = TransactionArray.from_lists(rows, npartitions=3)
    local = km_anonymize(tx, h, 5, 2, method="AA", progress=False)
    remote = km_anonymize(tx, h, 5, 2, method="AA", client=cluster_client, progress=False)
    assert remote.cut == local.cut and remote.ncp == local.ncp
    pub = remote.transactions.compute(client=cluster_client, progress=False)
    assert (pub != local.transactions.compute(progress=False)).nnz == 0
    chk = check_km_anonymity(remote.transactions, 5, 2, client=cluster_client)
    assert chk.ok and chk["k^m-anonymity"].figure >= 5
    t_local = count_tree(tx, h, 2, progress=False)
    t_remote = count_tree(tx, h, 2, client=cluster_client, progress=False)
    assert np.array_equal(t_local.keys, t_remote.keys) and np.array_equal(t_local.counts, t_remote.counts)


# ---------------------------------------------------------------- result object, hierarchy handling
def test_result_and_summary():
    h = Hierarchy.from_table(O24_H)
    tx = TransactionArray.from_lists(O24_D, npartitions=2, columns={"record_id": np.arange(5)})
    r = km_anonymize(tx, h, 3, 2, method="da", progress=False)
    s = r.summary()
    assert s["method"] == "DA" and s["k"] == 3 and s["m"] == 2 and s["cut"] == ["A", "B"]
    assert s["n_generalized_items"] == 4 and s["n_published_items"] == 2 and s["ncp"] == pytest.approx(0.5)
    assert list(r.transactions.vocabulary.labels) == ["A", "B"]
    assert r.transactions.metadata["k"] == 3 and "record_id" in r.transactions.columns
    tree = count_tree(O24_D, h, 2, progress=False)
    assert direct_anonymization(O24_D, h, 3, 1, tree=tree, progress=False) == direct_anonymization(O24_D, h, 3, 1, progress=False)


def test_integer_items_balanced_hierarchy_with_chains_and_extra_leaves():
    # balanced(26, 5) repeats "25-25" on two levels (one node); leaves 20..25 never occur
    h = Hierarchy.balanced(26, 5)
    D = [[0, 1], [1, 2], [0, 2, 3], [5, 6], [6, 7, 8], [1, 6], [10, 11], [10], [12, 0], [3, 4]]
    tree = count_tree(D, h, 2, progress=False)
    assert tree.support(["0-4"]) == 6 and tree.support(["0-24"]) == 10 and tree.support(["*"]) == 10
    for method in ("DA", "AA"):
        r = km_anonymize(D, h, 3, 2, method=method, progress=False)
        assert is_km_anonymous(r.transactions, 3, 2)
        assert r.ncp == pytest.approx(ncp_km(r.cut, h, D))
    # |I| = 26 hierarchy leaves, not the 13 items of the data
    occ = sum(len(t) for t in D)
    assert ncp_km(["0-4"], h, D) == pytest.approx(sum(len([x for x in t if x < 5]) for t in D) * 5 / (26 * occ))


def test_ambiguous_labels_rejected():
    rows = [["a", "X", "R"], ["b", "X", "R"], ["c", "Y", "R"], ["d", "X2", "R"]]
    bad = [r[:] for r in rows]
    bad[3][1] = "a"  # "a" is a leaf and an internal node over another leaf
    with pytest.raises(DataFormatError, match="'a'"):
        km_anonymize([["a", "d"]], Hierarchy.from_table(bad), 1, 1, progress=False)


# ---------------------------------------------------------------- errors
def test_errors():
    h = Hierarchy.from_table(O24_H)
    for bad in (0, -1, 1.5, True, "2", None):
        with pytest.raises(InvalidParameter, match="k must be"):
            km_anonymize(O24_D, h, bad, 2, progress=False)
        with pytest.raises(InvalidParameter, match="m must be"):
            km_anonymize(O24_D, h, 2, bad, progress=False)
        with pytest.raises(InvalidParameter):
            is_km_anonymous(O24_D, bad, 2)
    assert km_anonymize(O24_D, h, np.int64(2), np.int32(2), progress=False).cut == ["B"]
    with pytest.raises(InvalidParameter, match="method"):
        km_anonymize(O24_D, h, 2, 2, method="XX", progress=False)
    with pytest.raises(InfeasiblePrivacyError, match="non-empty transactions"):
        km_anonymize(O24_D + [[], []], h, 6, 1, progress=False)  # 7 transactions, 5 non-empty
    with pytest.raises(InfeasiblePrivacyError):
        km_anonymize(O24_D, h, 6, 1, method="DA", progress=False)
    with pytest.raises(DataFormatError, match="'c1'.*'zz'|'zz'.*'c1'"):
        km_anonymize([["a1", "c1"], ["zz"]], h, 1, 1, progress=False)
    with pytest.raises(InvalidParameter, match="categorical"):
        km_anonymize([[1, 2]], Hierarchy.from_intervals([5], low=0, high=10), 1, 1, progress=False)
    with pytest.raises(InvalidParameter, match="packed"):
        km_anonymize([[i] for i in range(200)], Hierarchy.balanced(200, 4), 1, 9, progress=False)
    with pytest.raises(InvalidParameter):
        km_anonymize("abc", h, 1, 1, progress=False)
    with pytest.raises(InvalidParameter, match="not a node"):
        ncp_km(["Q"], h, O24_D)
    # k = 1: nothing to do; empty partitions work
    tx = TransactionArray.from_lists(O24_D, npartitions=8)
    r = km_anonymize(tx, h, 1, 3, progress=False)
    assert r.cut == [] and r.ncp == 0.0 and r.transactions.to_lists() == [sorted(t) for t in O24_D]


def test_is_km_anonymous_matches_bruteforce():
    rng = random.Random(9)
    for _ in range(10):
        D = [rng.sample(range(6), rng.randint(0, 4)) for _ in range(rng.randint(1, 12))]
        k, m = rng.randint(1, 4), rng.randint(1, 3)
        c: Counter = Counter()
        for t in D:
            for s in range(1, m + 1):
                c.update(itertools.combinations(sorted(t), s))
        bad = sorted(S for S, v in c.items() if v < k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx = TransactionArray.from_lists(D, npartitions=3)
            got = check_km_anonymity(tx, k, m, progress=False)["k^m-anonymity"].stats
            assert is_km_anonymous(tx, k, m) is (not bad)
        assert got["km_anonymous"] == (not bad) and got["violations"] == len(bad)
        assert got["min_support"] == (min(c.values()) if c else None)
        assert [tuple(e) for e in got["examples"]] == bad[:10]

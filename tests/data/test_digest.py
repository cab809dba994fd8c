"""The content digest of an input: independent of the partitioning and the vocabulary's column
ids, sensitive to every value and its type; its records part independent of the row order, its
order part sensitive to it; the block fold and the multiset against references written with
Python integers."""

from __future__ import annotations

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask import TransactionArray
from ppdm_dask.data import _digest_kernels as K
from ppdm_dask.data.digest import content_digest


def _reference_poly(hashes: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """The fold of the kernels' docstring, term by term with Python integers (Horner's rule)."""
    words = [[int(h[0]) & 0xFFFFFFFFFFFFFFFF, int(h[0]) >> 32, int(h[1]) & 0xFFFFFFFFFFFFFFFF, int(h[1]) >> 32] for h in hashes]
    lanes = []
    for i, (p, b) in enumerate(zip(K.PRIMES.tolist(), K.BASES.tolist())):
        acc = 0
        for w in words:
            acc = (acc * b + w[i] % p) % p
        lanes.append(acc)
    return len(words), tuple(lanes)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)), max_size=60), st.data())
def test_block_fold_matches_python_integers_and_splits_anywhere(rows, data):
    h = np.array(rows, dtype=np.uint64).reshape(-1, 2)
    assert K.block_poly(h) == _reference_poly(h)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    pieces = [K.block_poly(h[a:b]) for a, b in zip([0, *cuts], [*cuts, len(rows)])]
    assert K.combine_polys(pieces) == _reference_poly(h)


def _reference_multiset(hashes: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """The multiset of the kernels' docstring with Python integers: lane j sums
    splitmix(h0 ^ splitmix(h1 ^ s_j)) mod 2**64."""
    mask = 2**64 - 1

    def splitmix(x: int) -> int:
        z = (x + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    salts = (0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89)
    lanes = [sum(splitmix(int(h[0]) ^ splitmix(int(h[1]) ^ s)) for h in hashes) & mask for s in salts]
    return len(hashes), tuple(lanes)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)), max_size=60), st.data())
def test_multiset_matches_python_integers_in_any_order_and_split(rows, data):
    h = np.array(rows, dtype=np.uint64).reshape(-1, 2)
    ref = _reference_multiset(h)
    assert K.block_multiset(h) == ref
    perm = np.array(data.draw(st.permutations(range(len(rows)))), dtype=np.int64)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    pieces = [K.block_multiset(h[perm][a:b]) for a, b in zip([0, *cuts], [*cuts, len(rows)])]
    assert K.combine_multisets(pieces[::-1]) == ref
    if len(rows) > 1 and rows[0] != rows[1]:
        # a multiset, not a set: a row twice is not the row once
        assert K.block_multiset(np.vstack([h, h[:1]])) != ref


def _baskets(seed=0, n=700):
    rng = np.random.default_rng(seed)
    return [sorted(rng.choice(50, size=int(rng.integers(0, 6)), replace=False).tolist()) for _ in range(n)]


def _with_unused_item(tx):
    """``tx`` (string labels) over a vocabulary with one more item, sorted first: every column id
    shifts by one."""
    import scipy.sparse as sp

    from ppdm_dask.data.vocabulary import Vocabulary

    m = tx.compute()
    wide = sp.csr_array((m.data, m.indices + 1, m.indptr), shape=(m.shape[0], m.shape[1] + 1))
    return TransactionArray.from_scipy(wide, vocabulary=Vocabulary(["a-unused", *tx.vocabulary.labels.tolist()]))


def test_transactions_digest_depends_on_rows_and_order_only():
    rows = _baskets()
    tx = TransactionArray.from_lists(rows)
    d = content_digest(tx)
    assert len(d) == 64 and d.records == d[:32] and d.order == d[32:]
    for parts in (2, 5, 13):
        assert content_digest(tx.repartition(npartitions=parts)) == d
    # the same rows over a larger vocabulary (other column ids): the same input
    named = TransactionArray.from_lists([[f"i{x}" for x in r] for r in rows])
    assert content_digest(_with_unused_item(named)) == content_digest(named)
    changed = [list(r) for r in rows]
    changed[123] = sorted(set(changed[123]) ^ {7})
    assert content_digest(TransactionArray.from_lists(changed)) != d
    swapped = list(rows)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    other = content_digest(TransactionArray.from_lists(swapped))
    assert rows[0] != rows[1] and other != d
    # the same records in another order: one input (records), other rows (order)
    assert other.records == d.records and other.order != d.order
    shuffled = [rows[i] for i in np.random.default_rng(5).permutation(len(rows))]
    assert content_digest(TransactionArray.from_lists(shuffled).repartition(npartitions=4)).records == d.records
    assert content_digest(TransactionArray.from_lists(changed)).records != d.records
    assert content_digest(TransactionArray.from_lists(rows[:-1])).records != d.records
    assert content_digest(TransactionArray.from_lists([*rows, rows[0]])).records != d.records  # one record twice
    as_text = [[str(i) for i in r] for r in rows]
    assert content_digest(TransactionArray.from_lists(as_text)) != d  # item 1 is not item "1"


def test_table_digest_typed_and_partition_independent():
    df = pd.DataFrame(
        {
            "zip": ["02138", "02139", "02140"] * 40,
            "age": np.arange(120) % 70,
            "w": np.linspace(0, 1, 120),
            "name": [f"p{i}" for i in range(120)],
        }
    )
    d = content_digest(dd.from_pandas(df, npartitions=1))
    assert all(content_digest(dd.from_pandas(df, npartitions=n)) == d for n in (3, 7))
    assert content_digest(df) == d
    # rows re-sorted and columns reordered: the same records, other rows
    resorted = df.sample(frac=1.0, random_state=3)[["name", "w", "zip", "age"]].reset_index(drop=True)
    got = content_digest(dd.from_pandas(resorted, npartitions=5))
    assert got.records == d.records and got.order != d.order
    as_int = df.assign(zip=df["zip"].astype(int))
    assert content_digest(as_int) != d  # "02138" and 2138 are different inputs
    renamed = df.rename(columns={"name": "id"})
    assert content_digest(renamed) != d
    one = df.copy()
    one.loc[5, "w"] = one.loc[5, "w"] + 1e-12
    assert content_digest(one) != d
    with_null = df.copy()
    with_null["zip"] = with_null["zip"].astype(object)
    with_null.loc[3, "zip"] = None
    assert content_digest(with_null) not in (d, content_digest(df.assign(zip=df["zip"].where(df.index != 3, "None"))))


def test_array_digest_and_tuples():
    x = np.random.default_rng(1).normal(size=(500, 4))
    d = content_digest(da.from_array(x, chunks=(77, 4)))
    assert d == content_digest(x) == content_digest(da.from_array(x, chunks=(500, 2)))
    assert content_digest(-0.0 * x + x) == d  # -0.0 and 0.0 are one value
    levels = np.arange(500) % 5 + 1
    both = content_digest(x, levels)
    assert both != d and both == content_digest(da.from_array(x, chunks=100), da.from_array(levels, chunks=250))
    assert content_digest(x, None) != d
    perm = np.random.default_rng(2).permutation(500)
    moved = content_digest(da.from_array(x[perm], chunks=(60, 4)), levels[perm])
    assert moved.records == both.records and moved.order != both.order  # records with their own levels, re-sorted
    # the same records and the same levels, but paired otherwise: other records
    assert content_digest(x, levels[perm]).records != both.records
    assert content_digest(x[perm], None).records == content_digest(x, None).records


def test_digest_of_something_else_is_refused():
    with pytest.raises(TypeError, match="cannot digest"):
        content_digest(object())

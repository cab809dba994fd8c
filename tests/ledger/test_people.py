"""The people of the ledger (ppdm_dask.ledger.people): per-person values aggregated over a
release's blocks and cut into buckets, against a pandas group-by; joins of releases cut into
different numbers of buckets against a brute force; the keyed pseudonyms."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask.ledger import Ledger
from ppdm_dask.ledger import _people_kernels as K
from ppdm_dask.ledger.people import PeopleRef, bucket_tasks, join, keyed_people, overlaps, people_of, read_all, write_meta
from ppdm_dask.ledger.store import Record

AGGS = {"s": "sum", "lo": "min", "hi": "max", "lab": "set"}


def _blocks(n_people: int, n_rows: int, n_blocks: int, seed: int):
    rng = np.random.default_rng(seed)
    person = rng.integers(0, n_people, size=n_rows)
    hashes = np.stack([person.astype(np.uint64) * np.uint64(7919) + np.uint64(1), np.full(n_rows, 5, np.uint64)], axis=1)
    values = {
        "s": rng.integers(0, 5, n_rows),
        "lo": rng.normal(size=n_rows),
        "hi": rng.integers(-3, 3, n_rows),
        "lab": rng.integers(1, 4, n_rows).astype(np.uint64),
    }
    cuts = np.sort(rng.choice(np.arange(1, n_rows), size=n_blocks - 1, replace=False)) if n_blocks > 1 else []
    edges = [0, *cuts, n_rows]
    blocks = [(hashes[a:b], {k: v[a:b] for k, v in values.items()}) for a, b in zip(edges[:-1], edges[1:])]
    return person, hashes, values, blocks


def _brute(ids: np.ndarray, values: dict) -> pd.DataFrame:
    frame = pd.DataFrame({"person": ids, **values})
    g = frame.groupby("person")
    out = pd.DataFrame({"records": g.size(), "s": g["s"].sum(), "lo": g["lo"].min(), "hi": g["hi"].max()})
    labs = g["lab"].agg(lambda x: sorted(set(int(v) for v in x)))
    out["lab"] = [int(v[0]) if len(v) == 1 else int(K.set_hash(np.array(v, np.uint64))) for v in labs]
    return out.sort_index()


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 40), st.integers(1, 200), st.integers(1, 6), st.integers(0, 3), st.integers(0, 10_000))
def test_split_and_merge_equal_a_group_by(n_people, n_rows, n_blocks, bits, seed):
    n_blocks = min(n_blocks, n_rows)
    _, hashes, values, blocks = _blocks(n_people, n_rows, n_blocks, seed)
    pieces = [K.split_people(h, v, AGGS, 11, 13, bits) for h, v in blocks]
    merged = [K.merge_people([p[b] for p in pieces], AGGS) for b in range(1 << bits)]
    ids = K.person_ids(hashes, 11, 13)
    want = _brute(ids, values)
    got = pd.DataFrame({k: np.concatenate([m[k] for m in merged]) for k in ("person", "records", "s", "lo", "hi", "lab")})
    # every bucket holds its own range of pseudonyms, sorted: the concatenation is sorted
    assert (np.diff(got["person"].to_numpy().astype(np.float64)) > 0).all() or len(got) <= 1
    for b, m in enumerate(merged):
        assert (K.bucket_of(m["person"], bits) == b).all()
    got = got.set_index("person").sort_index()
    assert got.index.to_numpy().tolist() == want.index.to_numpy().tolist()
    for col in ("records", "s", "hi", "lab"):
        assert got[col].astype(np.int64).tolist() == want[col].astype(np.int64).tolist(), col
    np.testing.assert_allclose(got["lo"].to_numpy(), want["lo"].to_numpy())


def test_pseudonyms_are_keyed_by_the_ledger(tmp_path):
    h = np.array([[1, 2], [3, 4], [1, 2]], dtype=np.uint64)
    a, b = Ledger(tmp_path / "a"), Ledger(tmp_path / "b")
    ida = keyed_people(a, h)
    assert ida[0] == ida[2] != ida[1]  # the same person, the same pseudonym
    assert (keyed_people(Ledger(tmp_path / "a"), h) == ida).all()  # the secret read back
    assert not np.isin(keyed_people(b, h), ida).any()  # another ledger: unrelated pseudonyms
    assert not np.isin(h.ravel(), ida).any()


def _store(ledger: Ledger, uid: str, blocks, bits: int) -> PeopleRef:
    tasks = bucket_tasks(ledger, uid, [dask.delayed(h) for h, _ in blocks], [dask.delayed(v) for _, v in blocks], AGGS, bits)
    (counts,) = dask.compute(tasks, scheduler="sync")
    ref = PeopleRef(uid, bits, AGGS, "identifier", sum(c["people"] for c in counts), sum(c["records"] for c in counts))
    write_meta(ledger, ref)
    return ref


def _own_and_theirs(own, theirs):
    """A join kernel for the test: the people of both sides in the bucket's range."""
    return [own["person"].copy(), *[t["person"].copy() for t in theirs]]


def _cat(parts):
    return [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]


@pytest.mark.parametrize("bits", [(0, 3), (3, 0), (2, 2), (1, 4)])
def test_releases_cut_into_other_buckets_join_person_by_person(tmp_path, bits):
    ledger = Ledger(tmp_path / "ledger")
    pa_, ha, va, ba = _blocks(300, 900, 4, 1)
    pb_, hb, vb, bb = _blocks(300, 700, 3, 2)  # the same people's space: most are in both
    ra = _store(ledger, "a", ba, bits[0])
    rb = _store(ledger, "b", bb, bits[1])
    assert people_of(ledger, Record({"record": "a"})) == ra and people_of(ledger, "nobody") is None
    all_a = read_all(ledger, ra)
    assert all_a["person"].size == np.unique(pa_).size and int(all_a["records"].sum()) == 900
    # the overlap against a brute force over the persons
    ida, idb = np.unique(keyed_people(ledger, ha)), np.unique(keyed_people(ledger, hb))
    (n,) = overlaps(ledger, rb, [ra])
    assert n == np.intersect1d(ida, idb).size > 0
    # a join by rb's buckets sees every person of both, each once, in its range
    own, theirs = join(ledger, rb, [ra], _own_and_theirs, _cat)
    assert sorted(own.tolist()) == sorted(idb.tolist()) and sorted(theirs.tolist()) == sorted(ida.tolist())

"""Sketch releases: written, verified from their files, tampering detected, keyed row order
independent of the partitioning, privacy floors, the estimator contract."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.errors import DataFormatError, NotFittedError, PrivacyViolation, WeakParameterError
from ppdm_dask.random import Key
from ppdm_dask.sketch import DeltaAnonymizer, KVarianceAnonymizer, SketchArray, read_sketches, sketch
from ppdm_dask.sketch.release import SketchRelease
from ppdm_dask.verification import verify
from tests.release.helpers import append_rows, data_bytes, flip_byte, forge_part, manifest_of

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


def _tx(n=240, d=40, npartitions=4, seed=0, record_ids=False):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, d)) < 0.15) * rng.integers(1, 4, size=(n, d))
    x[:3] = 0.0
    x[3, :] = 0.0
    x[3, 5] = 2.0  # one non-zero: suppressed by the δ rule
    cols = {"label": np.arange(n) % 3}
    if record_ids:
        cols["record_id"] = np.arange(n, dtype=np.int64)
    return TransactionArray.from_scipy(sp.csr_array(x.astype(float)), npartitions=npartitions, columns=cols), x


def _part_names(folder):
    return [p["file"] for p in manifest_of(folder)["partitions"]]


def _failed(verdict):
    return {c.name: c for c in verdict.failures()}


# ---------------------------------------------------------------- δ-anonymous sketches
def test_delta_release_written_verified_and_readable(tmp_path):
    tx, x = _tx()
    rel = DeltaAnonymizer(delta=3.0, m_max=16, key=Key(11)).fit_transform(tx)
    assert isinstance(rel, SketchRelease) and isinstance(rel.data, SketchArray)
    _, m = rel.data.compute(progress=False)
    manifest = rel.write(str(tmp_path / "d"), rows_per_file=70)
    assert manifest["release"]["family"] == "sketch" and manifest["format"] == "ppdm-sketches" and manifest["version"] == 2
    # the input's record count and the number suppressed are the owner's: not in the public manifest
    n_supp = int((m == 0).sum())
    assert n_supp > 0 and "n_records" not in manifest and "n_suppressed" not in manifest
    assert all("n_suppressed" not in p for p in manifest["partitions"]) and "n_suppressed" not in manifest["metadata"]
    assert manifest["n_published"] == 240 - n_supp and manifest["summary"]["records"] == {"released": 240 - n_supp}
    assert rel.summary()["records"] == {"input": 240, "published": 240 - n_supp, "suppressed": n_supp}
    assert manifest["guarantees"]["ok"] and len(manifest["partitions"]) == 4
    assert manifest["generator"]["seed"] == str(rel.data.generator.seed)
    v = verify(str(tmp_path / "d"), original=tx)
    assert v.ok, v.lines(failed_only=True)
    assert v["δ rule"].ok and v["records match the original"].figure == 240 - n_supp
    assert {c.name for c in verify(str(tmp_path / "d")).notes()} == {"records match the original", "δ rule"}
    back = read_sketches(str(tmp_path / "d"), verify=True)
    _, m_back = back.compute(progress=False)
    assert sorted(m_back.tolist()) == sorted(m[m > 0].tolist())  # the multiset of published m
    assert not np.array_equal(m_back, m[m > 0])  # keyed order, not the input order
    # in memory the check is record by record
    assert rel.verify(original=tx)["δ rule"].ok


def test_delta_same_key_same_bytes_for_1_3_and_19_partitions(tmp_path, monkeypatch):
    from ppdm_dask.sketch import sketches

    for parts in (1, 3, 19):
        tx, _ = _tx(npartitions=parts)
        DeltaAnonymizer(delta=2.0, m_max=16, key=Key(5)).fit_transform(tx).write(str(tmp_path / f"p{parts}"), rows_per_file=100)
    a, b, c = data_bytes(tmp_path / "p1"), data_bytes(tmp_path / "p3"), data_bytes(tmp_path / "p19")
    assert sorted(a) == sorted(b) == sorted(c) and len(a) == 3 and all(a[k] == b[k] == c[k] for k in a)
    # input blocks cut into row ranges of dense values (at most 7 rows here): the same bytes
    monkeypatch.setattr(sketches, "SKETCH_BLOCK_BYTES", 7 * 8 * 16)
    tx, _ = _tx(npartitions=1)
    rel = DeltaAnonymizer(delta=2.0, m_max=16, key=Key(5)).fit_transform(tx)
    assert max(rel.data.values.chunks[0]) <= 7 and rel.data.m.chunks == (rel.data.values.chunks[0],)
    rel.write(str(tmp_path / "cut"), rows_per_file=100)
    assert data_bytes(tmp_path / "cut") == a
    # staged through files, each piece kept as its rows' first m_i float32 values: the same bytes
    from ppdm_dask import cluster

    monkeypatch.setattr(cluster, "memory_budget", lambda share, client=None, *, local: (1.0, "test"))
    m = rel.write(str(tmp_path / "staged"), rows_per_file=100)
    assert m["release"]["row_order"]["shuffle"] == "staged" and data_bytes(tmp_path / "staged") == a
    tx, _ = _tx()
    # another release of the same input: not recorded (composing it is tests/sketch/test_composition.py)
    DeltaAnonymizer(delta=2.0, m_max=16, key=Key(6), ledger=None).fit_transform(tx).write(
        str(tmp_path / "other"), rows_per_file=100
    )
    assert data_bytes(tmp_path / "other") != a


def test_compact_blocks_take_concat_and_grouping(tmp_path, monkeypatch):
    """Release blocks hold each row's first m_i values (float32): taking rows equals taking
    them from the dense block and compacting (oracle); consecutive blocks are shuffled together
    and the bytes do not depend on the grouping."""
    from ppdm_dask.sketch import release as srel

    rng = np.random.default_rng(3)
    m = rng.integers(0, 7, size=50).astype(np.int32)
    dense = rng.standard_normal((50, 6)) * (np.arange(6)[None, :] < m[:, None])
    block = srel._block(dense, m, {"label": np.arange(50)})

    def compact_of(rows):
        return np.concatenate([dense[i, : m[i]] for i in rows]).astype(np.float32) if len(rows) else np.zeros(0, np.float32)

    assert np.array_equal(block[0], compact_of(range(50)))
    idx = rng.permutation(50)[:23]
    flat, mm, cols, starts = srel._take(block, idx)
    assert np.array_equal(flat, compact_of(idx)) and np.array_equal(mm, m[idx]) and np.array_equal(cols["label"], idx)
    assert np.array_equal(starts, np.concatenate([[0], np.cumsum(m[idx])[:-1]]))
    assert srel._take(block, np.zeros(0, np.int64))[0].size == 0
    both = srel._concat([srel._take(block, idx[:10]), srel._take(block, idx[10:])])
    assert all(np.array_equal(u, v) for u, v in zip(both[:2], (flat, mm))) and np.array_equal(both[3], starts)

    tx, _ = _tx(npartitions=6)
    rel = DeltaAnonymizer(delta=2.0, m_max=16, key=Key(5)).fit_transform(tx)
    blocks, rows = rel._row_blocks()
    assert len(blocks) == 1 and rows == [240]  # 240 compact rows fit in one shuffle input
    rel.write(str(tmp_path / "grouped"), rows_per_file=100)
    monkeypatch.setattr(srel, "_SHUFFLE_IN_BYTES", 50 * rel.row_bytes())  # at most 50 rows per input
    blocks, rows = rel._row_blocks()
    assert len(blocks) == 6 and sum(rows) == 240 and max(rows) <= 50
    rel.write(str(tmp_path / "single"), rows_per_file=100)
    assert data_bytes(tmp_path / "grouped") == data_bytes(tmp_path / "single")


def test_flipped_byte_is_named(tmp_path):
    tx, _ = _tx()
    out = tmp_path / "d"
    DeltaAnonymizer(delta=2.0, m_max=16, key=Key(1)).fit_transform(tx).write(str(out), rows_per_file=100)
    name = _part_names(out)[1]
    flip_byte(out / name)
    v = verify(str(out))
    assert not v.ok
    bad = [c for c in v.failures() if c.name == "file matches the manifest"]
    assert [c.where for c in bad] == [name]


def _row(values, m, label):
    return pa.table(
        {"sketch": pa.array([values], type=pa.list_(pa.float32())), "m": pa.array([m], pa.int32()), "label": pa.array([label])}
    )


def test_broken_guarantees_are_named(tmp_path):
    tx, _ = _tx()
    out = tmp_path / "d"
    DeltaAnonymizer(delta=2.0, m_max=16, key=Key(1)).fit_transform(tx).write(str(out), rows_per_file=100)
    assert verify(str(out)).ok
    # a record with more components than m_max (the files and checksums forged to match)
    append_rows(out, _row([1.0] * 17, 17, 0), name=_part_names(out)[0])
    failed = _failed(verify(str(out)))
    assert "components at most m_max" in failed and failed["components at most m_max"].where == _part_names(out)[0]
    assert "file matches the manifest" not in failed  # only the recount can tell


def test_published_suppressed_record_and_wrong_length_are_named(tmp_path):
    tx, _ = _tx()
    out = tmp_path / "d"
    DeltaAnonymizer(delta=2.0, m_max=16, key=Key(1)).fit_transform(tx).write(str(out), rows_per_file=100)
    name = _part_names(out)[2]
    append_rows(out, _row([], 0, 1), name=name)
    failed = _failed(verify(str(out)))
    assert failed["suppressed records absent"].where == name and failed["suppressed records absent"].figure == 1
    assert set(failed) == {"suppressed records absent"}  # the forger rewrote n_published: only the recount tells

    out2 = tmp_path / "e"
    DeltaAnonymizer(delta=2.0, m_max=16, key=Key(1)).fit_transform(tx).write(str(out2), rows_per_file=100)
    t = pq.read_table(out2 / name)
    m = t.column("m").to_numpy().copy()
    m[0] += 1 if m[0] < 16 else -1  # the stored sketch keeps its length
    forge_part(out2, name, t.set_column(t.schema.get_field_index("m"), "m", pa.array(m, pa.int32())))
    failed = _failed(verify(str(out2), original=tx))
    assert failed["sketch length equals m"].where == name
    assert "δ rule" in failed  # the multiset of m no longer follows the δ rule of the original


def test_keep_suppressed_and_record_ids(tmp_path):
    tx, _ = _tx(record_ids=True)
    an = DeltaAnonymizer(delta=2.0, m_max=16, key=Key(2), keep_suppressed=True)
    an.fit_transform(tx).write(str(tmp_path / "k"))
    man = manifest_of(tmp_path / "k")
    assert man["suppressed_rows_written"] and "record_id" not in man["columns"]
    assert sum(p["rows"] for p in man["partitions"]) == 240
    assert verify(str(tmp_path / "k"), original=tx).ok
    ids = DeltaAnonymizer(delta=2.0, m_max=16, key=Key(2), keep_record_ids=True, ledger=None)  # a second release: not recorded
    ids.fit_transform(tx).write(str(tmp_path / "ids"))
    assert "record_id" in manifest_of(tmp_path / "ids")["columns"]


def test_other_format_versions_are_refused(tmp_path):
    # only development versions wrote format version 1 (parts not hashed): refused, as is a newer one
    tx, _ = _tx()
    sk = DeltaAnonymizer(delta=2.0, m_max=16, key=Key(3)).fit_transform(tx).data
    sk.to_parquet(str(tmp_path / "v1"), progress=False)
    man = manifest_of(tmp_path / "v1")
    assert man["version"] == 2 and all("sha256" in p for p in man["partitions"])
    back = read_sketches(str(tmp_path / "v1"))
    assert np.array_equal(back.compute(progress=False)[1], sk.compute(progress=False)[1][sk.compute(progress=False)[1] > 0])
    for version, says in ((1, "development version"), (3, "newer ppdm-dask")):
        (tmp_path / "v1" / "_SUCCESS").write_text(json.dumps({**man, "version": version}))
        with pytest.raises(DataFormatError, match=says):
            read_sketches(str(tmp_path / "v1"))


# ---------------------------------------------------------------- k-variance
def test_kvariance_release_verified_in_memory_and_from_disk(tmp_path):
    tx, _ = _tx(n=120, npartitions=3, seed=4)
    an = KVarianceAnonymizer(k=3, m_max=32, key=Key(4))
    rel = an.fit_release(tx)
    v = rel.verify(original=tx)
    assert v.ok and v["k-variance (Def. 3)"].figure == 0 and v["k >= 2"].ok
    rel.write(str(tmp_path / "kv"))
    assert verify(str(tmp_path / "kv"), original=tx).ok
    flip_byte(tmp_path / "kv" / _part_names(tmp_path / "kv")[0])
    assert not verify(str(tmp_path / "kv")).ok
    # the guarantee broken by hand: every record gets m_max components
    loud = SketchRelease(sketch(tx, 32, generator=an.generator_), method="k-variance", parameters=rel.parameters)
    failed = _failed(loud.verify(original=tx))
    assert failed["k-variance (Def. 3)"].figure > 0 and failed["k-variance (Def. 3)"].where.startswith("record ")


def test_kvariance_appended_record_is_named(tmp_path):
    tx, _ = _tx(n=120, npartitions=3, seed=4)
    out = tmp_path / "kv"
    KVarianceAnonymizer(k=3, m_max=32, key=Key(4)).fit_release(tx).write(str(out))
    append_rows(out, _row([0.5] * 33, 33, 2), name=_part_names(out)[0])
    failed = _failed(verify(str(out), original=tx))
    # the number of records suppressed is not public, so one record more than published is not
    # "more than the original" (121 <= 120 + suppressed): the recount of the files tells
    assert {"components at most m_max", "record counts match the manifest"} <= set(failed)


def test_k_floor_refused_then_accepted_and_recorded(tmp_path):
    tx, _ = _tx(n=60, npartitions=2, seed=5)
    with pytest.raises(WeakParameterError, match="k >= 2"):
        KVarianceAnonymizer(k=1, m_max=16, key=Key(1)).fit(tx)
    rel = KVarianceAnonymizer(k=1, m_max=16, key=Key(1), allow_weak=["k >= 2"]).fit_release(tx)
    man = rel.write(str(tmp_path / "weak"))
    assert man["release"]["overrides"] == ["k >= 2"]
    v = verify(str(tmp_path / "weak"))
    assert v.ok and v["k >= 2"].overridden and not v["k >= 2"].ok
    # a release whose guarantee fails is never committed
    bad = SketchRelease(
        sketch(tx, 16, generator=rel.data.generator), method="delta", parameters={"delta": 1.0, "m_max": 8}, key=Key(1)
    )
    with pytest.raises(PrivacyViolation, match="components at most m_max"):
        bad.write(str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()


def test_estimator_contract():
    tx, _ = _tx(n=60, npartitions=2)
    for est in (DeltaAnonymizer(delta=0.5, key=Key(123456789)), KVarianceAnonymizer(k=2, m_max=8, key=Key(123456789))):
        params = est.get_params()
        assert params["key"] == Key(123456789) and "123456789" not in repr(est)
        with pytest.raises(NotFittedError):
            est.release()
        with pytest.raises(NotFittedError):
            est.report_
        assert est.fit(tx) is est and "n_suppressed" in est.report_
        rel = est.release()
        assert isinstance(rel, SketchRelease) and rel.data.n_records == 60
        assert rel.summary()["records"]["input"] == 60
    assert DeltaAnonymizer(delta="x").delta == "x"  # __init__ only stores

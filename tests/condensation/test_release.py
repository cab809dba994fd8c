"""Condensed releases: written, verified from their files (and against the original),
tampering detected, keyed order independent of the partitioning, the privacy floors, the split
groups of the paper (docs/condensation.md#clarification-split-children-may-be-smaller-than-their-members-levels), the estimator contract, typed CSV input."""

from __future__ import annotations

import json

import dask.array as da
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask.condensation import CondensedRelease, Condenser, StreamingCondenser, privacy_levels, read_groups
from ppdm_dask.condensation.release import GROUPS_FILE, SIZE_CHECK, read_statistics
from ppdm_dask.data.tables import read_table
from ppdm_dask.errors import DataFormatError, NotFittedError, PrivacyViolation, WeakParameterError
from ppdm_dask.random import Key
from ppdm_dask.verification import verify
from tests.release.helpers import append_rows, data_bytes, flip_byte, forge_part

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(6, d))
    X = c[rng.integers(6, size=n)] + rng.standard_normal((n, d))
    return X, privacy_levels(n, 2, 6, key=seed + 1)


ESTIMATORS = {
    "static": lambda **kw: Condenser(rows_per_partition=250, key=Key(7), **kw),
    "dynamic": lambda **kw: StreamingCondenser(key=Key(7), **kw),
}


def _failed(verdict):
    return {c.name: c for c in verdict.failures()}


@pytest.mark.parametrize("method", ["static", "dynamic"])
def test_release_written_verified_and_tampering_named(tmp_path, method):
    X, p = _data()
    rel = ESTIMATORS[method]().fit(X, p).release()
    assert isinstance(rel, CondensedRelease) and rel.method == method
    out = tmp_path / method
    manifest = rel.write(str(out), rows_per_file=250)
    assert manifest["format"] == "ppdm-condensed" and manifest["guarantees"]["ok"]
    assert manifest["n_records"] == 600 and manifest["n_groups"] == len(rel.groups) and manifest["statistics"] is None
    v = verify(str(out), original=(X, p))
    assert v.ok, v.lines(failed_only=True)
    assert v["records match the original"].figure == 600 and v["pseudo-data copies original records"].figure == 0
    groups, cols = read_groups(str(out), verify=True)
    assert cols == ["x0", "x1", "x2"] and sorted(groups) == ["n", "p_max"]  # sizes only: nothing that determines a record
    assert (groups["n"] >= groups["p_max"]).all() and groups["p_max"].max() == p.max() and groups["n"].sum() == 600
    assert not np.array_equal(groups["n"], rel.groups.n)  # the groups file is in a keyed order
    assert np.array_equal(np.sort(groups["n"]), np.sort(rel.groups.n))
    assert read_statistics(str(out)) is None
    pseudo = read_table(str(out)).compute()
    assert pseudo.shape == (600, 3)
    # one byte changed in a part file
    flip_byte(out / manifest["partitions"][1]["file"])
    bad = [c for c in verify(str(out)).failures() if c.name == "file matches the manifest"]
    assert [c.where for c in bad] == [manifest["partitions"][1]["file"]]


@pytest.mark.parametrize("method", ["static", "dynamic"])
def test_appended_small_group_is_named(tmp_path, method):
    X, p = _data()
    out = tmp_path / method
    ESTIMATORS[method]().fit(X, p).release().write(str(out))
    row = pa.table({"n": [1], "p_max": [5]})
    append_rows(out, row, name=GROUPS_FILE)
    failed = _failed(verify(str(out), original=(X, p)))
    assert failed[SIZE_CHECK].where == GROUPS_FILE and failed[SIZE_CHECK].figure == 1
    assert {"group sizes add up to the pseudo-data rows", "records match the original", "no group of a single record"} <= set(
        failed
    )
    assert "file matches the manifest" not in failed


def test_lowered_levels_are_caught_against_the_original(tmp_path):
    X, p = _data()
    out = tmp_path / "s"
    ESTIMATORS["static"]().fit(X, p).release().write(str(out))
    t = pq.read_table(out / GROUPS_FILE)
    lowered = t.set_column(t.schema.get_field_index("p_max"), "p_max", pa.array(np.ones(t.num_rows, np.int64)))
    forge_part(out, GROUPS_FILE, lowered)
    failed = _failed(verify(str(out), original=(X, p)))
    assert "privacy levels covered" in failed and "largest privacy level >= 2" in failed


@pytest.mark.parametrize("method", ["static", "dynamic"])
def test_same_key_same_bytes_for_1_3_and_19_partitions(tmp_path, method):
    X, p = _data(n=800)
    for parts, data in ((1, X), (3, da.from_array(X, chunks=267)), (19, da.from_array(X, chunks=43))):
        ESTIMATORS[method]().fit(data, p).release().write(str(tmp_path / f"{method}{parts}"), rows_per_file=300)
    a, b, c = (data_bytes(tmp_path / f"{method}{n}") for n in (1, 3, 19))
    assert sorted(a) == sorted(b) == sorted(c) and all(a[k] == b[k] == c[k] for k in a)


def test_level_floor_refused_then_accepted_and_recorded(tmp_path):
    X, _ = _data(n=50)
    with pytest.raises(WeakParameterError, match="largest privacy level >= 2"):
        Condenser(1, key=1).fit(X)
    with pytest.raises(WeakParameterError, match="no group of a single record"):  # each record alone: published as is
        Condenser(1, key=1, allow_weak=["largest privacy level >= 2"]).fit(X).release()
    rel = Condenser(1, key=1, allow_weak=True).fit(X).release()
    man = rel.write(str(tmp_path / "weak"))
    assert man["release"]["overrides"] == ["largest privacy level >= 2", "no group of a single record"]
    v = verify(str(tmp_path / "weak"))
    assert v.ok and v["largest privacy level >= 2"].overridden and v["no group of a single record"].overridden
    # every pseudo-record is its record: allowed by the recorded override, and said so
    copies = verify(str(tmp_path / "weak"), original=X)["pseudo-data copies original records"]
    assert copies.overridden and copies.figure == 50 and "groups of one record" in copies.detail
    assert rel.summary()["privacy"]["unique_copies_left"] == 50


def test_paper_split_groups_need_an_explicit_override(tmp_path):
    X, p = _data()
    paper = StreamingCondenser(key=Key(7), repair_splits=False).fit(X, p)
    assert (~paper.groups_.feasible).any()  # split children below their members' largest level
    with pytest.raises(PrivacyViolation, match=SIZE_CHECK):
        paper.release().write(str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()
    accepted = StreamingCondenser(key=Key(7), repair_splits=False, allow_weak=[SIZE_CHECK]).fit(X, p).release()
    accepted.write(str(tmp_path / "paper"))
    v = verify(str(tmp_path / "paper"), original=(X, p))
    assert v.ok and v[SIZE_CHECK].overridden
    repaired = StreamingCondenser(key=Key(7)).fit(X, p)
    assert repaired.release().summary()["privacy"]["split_groups_repaired"] == int((~repaired.groups_.feasible).sum())


def test_csv_with_string_columns(tmp_path):
    X, p = _data(n=300)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(level=p, name=[f"n{i}" for i in range(300)])
    df.to_csv(tmp_path / "t.csv", index=False)
    table = read_table(str(tmp_path / "t.csv"))  # every column a string
    with pytest.raises(DataFormatError, match="non-numeric"):
        Condenser(privacy_column="level", key=1).fit(table)
    cond = Condenser(privacy_column="level", columns=["a", "b", "c"], key=1).fit(table)
    rel = cond.release()
    assert rel.parameters["columns"] == ["a", "b", "c"] and rel.parameters["privacy_column"] == "level"
    man = rel.write(str(tmp_path / "out"))
    assert set(man["input"]) == {"fingerprint"} and "t.csv" not in json.dumps(man)
    assert rel.owner_input["files"][0]["file"] == "t.csv"  # the owner's record, never written
    v = verify(str(tmp_path / "out"), original=read_table(str(tmp_path / "t.csv")), key=Key(1))
    assert v.ok and v["privacy levels covered"].figure == 0 and v["made from this original with this key"].ok
    typed = read_table(str(tmp_path / "t.csv"), dtype={"a": "float", "b": "float", "c": "float", "level": "int"})
    assert Condenser(privacy_column="level", columns=["a", "b", "c"], key=1).fit(typed).groups_.n.sum() == 300
    with pytest.raises(DataFormatError, match="'name'"):
        Condenser(privacy_column="level", columns=["a", "name"], key=1).fit(table)


def test_estimator_contract():
    X, p = _data(n=100)
    for est in (Condenser(key=Key(424242)), StreamingCondenser(key=Key(424242))):
        assert "424242" not in repr(est) and est.get_params()["key"] == Key(424242)
        with pytest.raises(NotFittedError):
            est.release()
        with pytest.raises(NotFittedError):
            est.report_
        assert est.fit(X, p) is est and est.report_["n_records"] == 100
        rel = est.release()
        assert rel.summary()["records"]["input"] == 100 and rel.data.shape[1] == 3
    assert Condenser(rows_per_partition=-1).rows_per_partition == -1  # __init__ only stores

"""The EMASK estimator and release: floors, partition-independent distortion, verification of
written releases (tampering caught), the owner-side re-alignment of the keyed row order."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from ppdm_dask import Key, TransactionArray, open_release, read, verify
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.parquet import csr_to_arrow_list
from ppdm_dask.data.quest import quest
from ppdm_dask.emask import DistortedRelease, Distorter, audit, distort, mine, realign
from ppdm_dask.emask.privacy import basic_privacy, reinterrogated_privacy
from ppdm_dask.errors import InvalidParameter, NotFittedError, WeakParameterError
from ppdm_dask.random import BLOCK_ROWS

from ..release.helpers import data_bytes, flip_byte, forge_part, manifest_of

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


def _sparse_tx(n_rows: int, n_items: int, density: float, seed: int = 0, nparts: int = 1) -> TransactionArray:
    rng = np.random.default_rng(seed)
    # random_state=: the keyword of every supported scipy (rng= only from 1.15)
    m = sp.random_array((n_rows, n_items), density=density, format="csr", random_state=rng)
    m.data[:] = 1
    return TransactionArray.from_scipy(sp.csr_array(m.astype(np.int32)), npartitions=nparts)


@pytest.fixture(scope="module")
def quest_tx():
    """T10.I4.D5K.N1K: s0 ≈ 0.01, where (0.4, 0.98) has basic privacy ≈ 92.9 %."""
    return quest("T10.I4.D5K.N1K", key=Key(1)).persist(progress=False)


# ---------------------------------------------------------------------------- distortion
def test_distortion_does_not_depend_on_the_partitioning():
    tx = _sparse_tx(BLOCK_ROWS * 2 + 1234, 30, 0.1, seed=3)
    one = distort(tx, 0.4, 0.95, key=Key(8))
    for nparts in (4, 7):
        other = tx.repartition(npartitions=nparts)
        d = distort(other, 0.4, 0.95, key=Key(8))
        assert d.partition_rows == other.partition_rows  # the output keeps the input's partitioning
        assert (d.compute() != one.compute()).nnz == 0
    assert (distort(tx, 0.4, 0.95, key=Key(9)).compute() != one.compute()).nnz > 0


def test_release_bytes_same_for_1_3_and_19_partitions(tmp_path):
    tx = _sparse_tx(BLOCK_ROWS + 5000, 100, 0.01, seed=4)
    urls = []
    for nparts in (1, 3, 19):
        url = str(tmp_path / f"rel{nparts}")
        Distorter(0.4, 0.98, key=Key(77)).fit_transform(tx.repartition(npartitions=nparts)).write(url, rows_per_file=20_000)
        urls.append(url)
    a, b, c = (data_bytes(u) for u in urls)
    assert len([n for n in a if n.startswith("part-")]) == 4
    assert a == b == c
    other = str(tmp_path / "other-key")
    Distorter(0.4, 0.98, key=Key(78)).fit_transform(tx).write(other, rows_per_file=20_000, allow_composition=True)
    assert data_bytes(other) != a


# ---------------------------------------------------------------------------- estimator contract
def test_estimator_contract(quest_tx):
    est = Distorter(0.4, 0.98, key=Key(123456789), privacy_floor=85.0)
    assert est.get_params() == {
        "p": 0.4,
        "q": 0.98,
        "key": Key(123456789),
        "privacy_floor": 85.0,
        "allow_weak": False,
        "items": None,
        "epsilon_budget": None,
        "ledger": "default",
    }
    clone = Distorter(**est.get_params())
    assert clone.get_params() == est.get_params()
    est.set_params(privacy_floor=90.0)
    assert est.privacy_floor == 90.0
    assert "123456789" not in repr(est) and "key=<secret>" in repr(est)
    with pytest.raises(NotFittedError):
        est.report_
    with pytest.raises(NotFittedError):
        est.transform(quest_tx)
    with pytest.raises(InvalidParameter):
        est.set_params(r=1)
    assert est.fit(quest_tx) is est
    assert est.s0_ == pytest.approx(quest_tx.describe()["mean_length"] / 1000)
    assert est.basic_privacy_ == pytest.approx(basic_privacy(0.4, 0.98, s0=est.s0_))
    assert est.report_["overrides"] == [] and est.report_["ldp_epsilon_per_item"] == pytest.approx(np.log(20))
    rel = est.transform(quest_tx)
    assert isinstance(rel, DistortedRelease) and rel.method == "emask"
    # s0 is a figure of the original: the owner's (summary, console), never a public parameter
    assert rel.parameters == {"p": 0.4, "q": 0.98, "privacy_floor": 90.0, "n_items": 1000}
    assert rel.owner_s0() == est.s0_ and rel.summary()["privacy"]["s0"] == est.s0_
    assert Distorter(0.9, 0.9).fit_transform(quest_tx).method == "mask"


def test_files_are_sized_by_the_expected_row_length(quest_tx, tmp_path, monkeypatch):
    # a distorted row holds p·s0·n + (1 - q)(1 - s0)·n items in expectation: the release plans
    # its part files from that, so that a block stays near BLOCK_BYTES in memory
    from ppdm_dask.release import transactions as T

    rel = Distorter(0.4, 0.98, key=Key(4)).fit_transform(quest_tx)
    measured = rel.data.describe(progress=False)["mean_length"]
    assert rel.mean_row_length() == pytest.approx(measured, rel=0.02)
    monkeypatch.setattr(T, "BLOCK_BYTES", 300_000)
    want = int(300_000 // (8 * rel.mean_row_length() + 8))
    assert rel.default_rows_per_file == max(1024, want)
    manifest = rel.write(str(tmp_path / "d"), progress=False)
    assert len(manifest["partitions"]) == -(-quest_tx.n_transactions // max(1024, want))
    # a plain transaction release knows the length from the manifest's entry counts, else falls back
    src = str(tmp_path / "q")
    quest_tx.to_parquet(src, progress=False)
    from ppdm_dask.release import TransactionRelease

    class Copy(TransactionRelease):
        family = "copy"

        def guarantee_checks(self, **compute_kwargs):
            return []

    known = Copy(read(src), method="copy", parameters={})
    assert known.mean_row_length() == pytest.approx(quest_tx.describe(progress=False)["mean_length"])
    assert Copy(quest_tx, method="copy", parameters={}).default_rows_per_file == T.MAX_ROWS_PER_FILE


def test_floor_refused_before_distorting_and_overrides():
    tx = quest("T10.I4.D2K.N200", key=Key(2))  # s0 ≈ 0.05: BP(0.5, 0.97) ≈ 75 %
    with pytest.raises(WeakParameterError, match="basic privacy 7[0-9].[0-9]+% .* below the floor 90%") as err:
        Distorter(0.5, 0.97).fit(tx)
    assert "--allow-weak" in cli_message(err.value)
    assert Distorter(0.5, 0.97, privacy_floor=70).fit(tx).overrides_ == ()
    for allow in (True, ["basic privacy"], "basic privacy"):
        est = Distorter(0.5, 0.97, allow_weak=allow).fit(tx)
        assert est.overrides_ == ("basic privacy",)
    with pytest.raises(InvalidParameter, match="unknown privacy floor"):
        Distorter(0.5, 0.97, allow_weak=["k-anonymity"]).fit(tx)
    for bad in (dict(p=0.3, q=0.7), dict(p=0.5, q=0.97, privacy_floor=120)):
        with pytest.raises(InvalidParameter):
            Distorter(**bad).fit(tx)


# ---------------------------------------------------------------------------- written releases
def test_written_release_verifies_and_is_read_as_transactions(quest_tx, tmp_path):
    url = str(tmp_path / "rel")
    rel = Distorter(0.4, 0.98, key=Key(5)).fit_transform(quest_tx)
    manifest = rel.write(url)
    assert manifest["release"]["parameters"]["p"] == 0.4 and manifest["guarantees"]["ok"]
    back = read(url)
    assert back.n_transactions == 5000 and back.metadata["p"] == 0.4 and back.metadata["q"] == 0.98
    # the distortion draws from the release's own stream key (key + identity), not the key itself
    assert sorted(map(sorted, back.to_lists())) == sorted(
        map(sorted, distort(quest_tx, 0.4, 0.98, key=rel.stream_key).to_lists())
    )
    verdict = verify(url, original=quest_tx)
    assert verdict.ok, verdict.lines(failed_only=True)
    for name in (
        "s0 from the release density",
        "basic privacy (estimated from the release)",
        "basic privacy (original)",
        "same rows and items as the original",
        "s0 of the original",
        "ones consistent with a (p, q) distortion of the original",
        "flip rates as declared",
    ):
        assert verdict[name].ok
    assert verdict["flip rates per row"].status == "unchecked"  # rows in keyed order, no key given
    assert verdict["s0 from the release density"].figure == pytest.approx(rel.owner_s0(), abs=2e-3)
    assert verdict["s0 of the original"].figure == pytest.approx(rel.owner_s0(), rel=1e-12)
    # the owner's floor at the exact s0 is checked on the release in memory
    assert rel.verify()["basic privacy"].ok and "basic privacy" not in open_release(url).verify()
    # against another original of the same shape but three times as dense: the ones do not fit
    z = verify(url, original=_sparse_tx(5000, 1000, 0.03)).get("ones consistent with a (p, q) distortion of the original")
    assert z is not None and not z.ok


def test_tampering_is_caught(quest_tx, tmp_path):
    url = tmp_path / "rel"
    Distorter(0.4, 0.98, key=Key(6)).fit_transform(quest_tx).write(str(url))
    # the undistorted rows, checksums forged: only the density recount can tell
    forge_part(url, "part-00000.parquet", pa.table({"items": csr_to_arrow_list(quest_tx.compute())}))
    verdict = verify(str(url))
    assert [c.name for c in verdict.failures()] == ["s0 from the release density"]
    assert verdict["s0 from the release density"].figure < 0
    # one byte changed in a part file
    url2 = tmp_path / "rel2"
    Distorter(0.4, 0.98, key=Key(6)).fit_transform(quest_tx).write(str(url2))
    flip_byte(url2 / "part-00000.parquet")
    failed = verify(str(url2)).failures()
    assert failed and failed[0].where == "part-00000.parquet"


def test_weak_release_records_the_override(tmp_path):
    tx = quest("T10.I4.D2K.N200", key=Key(2))
    url = str(tmp_path / "weak")
    with pytest.raises(WeakParameterError):
        Distorter(0.5, 0.97).fit_transform(tx)
    Distorter(0.5, 0.97, allow_weak=True).fit_transform(tx).write(url)
    assert manifest_of(url)["release"]["overrides"] == ["basic privacy"]
    verdict = verify(url, original=tx)
    assert verdict.ok
    est = verdict["basic privacy (estimated from the release)"]
    assert est.overridden and not est.ok and est.line().startswith("OVERRIDDEN basic privacy")
    assert verdict["basic privacy (original)"].overridden


# ---------------------------------------------------------------------------- owner-side audit
def test_realign_and_audit_with_the_key(tmp_path):
    tx = _sparse_tx(3000, 40, 0.08, seed=9, nparts=3)
    key = Key(31)
    url = str(tmp_path / "rel")
    Distorter(0.5, 0.95, key=key, allow_weak=True).fit_transform(tx).write(url, rows_per_file=700)
    rel = open_release(url)
    files = manifest_of(url)["release"]["row_order"]["files"]
    assert files == 5
    skey = rel.owner_stream_key(key, tx)  # the key holder derives the release's stream key from the original
    aligned = realign(rel.data, skey, files, tx.partition_rows)
    expected = distort(tx, 0.5, 0.95, key=skey)
    assert aligned.partition_rows == tx.partition_rows
    assert (aligned.compute() != expected.compute()).nnz == 0
    a = audit(tx, rel, 0.05, key=key)
    rec = mine(expected, 0.5, 0.95, 0.05, progress=False)
    bp = basic_privacy(0.5, 0.95, s0=a["s0"])
    assert a["reinterrogated_privacy"] == pytest.approx(reinterrogated_privacy(tx, expected, rec, bp), rel=1e-12)
    assert a["accuracy"]["n_true"] > 0
    assert audit(tx, rel, 0.1)["reinterrogated_privacy"] is None  # no key: rows cannot be re-aligned
    with pytest.raises(InvalidParameter, match="not the key"):
        audit(tx, rel, 0.1, key=Key(32))


@pytest.mark.cluster
def test_release_on_the_cluster_equals_sync(on_cluster, tmp_path):
    tx = _sparse_tx(BLOCK_ROWS + 700, 60, 0.015, seed=12, nparts=3)
    est = Distorter(0.4, 0.98, key=Key(41))
    est.fit(tx, client=on_cluster)
    est.transform(tx).write(str(tmp_path / "cluster"), client=on_cluster, rows_per_file=30_000)
    import dask

    with dask.config.set(scheduler="sync"):
        Distorter(0.4, 0.98, key=Key(41)).fit_transform(tx).write(str(tmp_path / "sync"), rows_per_file=30_000)
    assert data_bytes(tmp_path / "cluster") == data_bytes(tmp_path / "sync")
    assert verify(str(tmp_path / "cluster"), original=tx, client=on_cluster).ok


def test_csv_release_with_items_no_row_holds(tmp_path):
    m = (np.random.default_rng(0).random((2000, 30)) < 0.1).astype(np.int32)
    m[:, 29] = 0  # an item of the vocabulary no row holds; q = 1 keeps it absent from the release
    tx = TransactionArray.from_scipy(sp.csr_array(m), npartitions=2)
    url = str(tmp_path / "rel.csv")
    Distorter(0.5, 1.0, key=Key(3), allow_weak=True).fit_transform(tx).write(url)
    rel = open_release(url)
    assert rel.data.n_items == 29 and rel.parameters["n_items"] == 30
    verdict = verify(url, original=tx)
    assert verdict.ok, verdict.lines(failed_only=True)
    assert verdict["s0 from the release density"].figure == pytest.approx(m.mean(), abs=0.01)
    manifest = json.loads((tmp_path / "rel.csv.manifest.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert manifest["summary"]["privacy"]["ldp_epsilon_per_item"] == "inf"

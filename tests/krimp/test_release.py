"""KRIMP generator releases: the estimator contract, the min-support floor, the public patterns,
verification of written releases (tampering caught), CodeTable persistence."""

from __future__ import annotations

import json
import os
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask import Key, TransactionArray, read, verify
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.parquet import csr_to_arrow_list
from ppdm_dask.errors import DatasetExistsError, DatasetNotFoundError, InvalidParameter, NotFittedError, WeakParameterError
from ppdm_dask.krimp import CodeTable, KrimpGenerator, krimp
from ppdm_dask.krimp.generator import check_domains
from ppdm_dask.krimp.release import PATTERNS_FILE, UNIQUE_COPIES_CHECK, GeneratedRelease

from ..release.helpers import data_bytes, flip_byte, forge_part, manifest_of

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


@pytest.fixture(scope="module")
def iris(shared_data):
    return read(str(shared_data / "lucs" / "iris.dat"))


def _release(tx, tmp_path, name="rel", **kw):
    url = tmp_path / name
    gen = KrimpGenerator(kw.pop("min_support", 2), key=kw.pop("key", Key(3)), **kw).fit(tx)
    rel = gen.release()
    rel.write(str(url))
    return gen, rel, url


# ---------------------------------------------------------------------------- estimator contract
def test_estimator_contract(iris):
    gen = KrimpGenerator(3, key=Key(987654321), n_rows=40, max_len=4)
    params = gen.get_params()
    assert params["min_support"] == 3 and params["n_rows"] == 40 and params["key"] == Key(987654321)
    assert KrimpGenerator(**params).get_params() == params
    assert gen.set_params(laplace=0.01) is gen and gen.laplace == 0.01
    assert "987654321" not in repr(gen) and "key=<secret>" in repr(gen) and "min_support=3" in repr(gen)
    for attr in ("code_table_", "report_"):
        with pytest.raises(NotFittedError):
            getattr(gen, attr)
    with pytest.raises(NotFittedError):
        gen.release()
    assert gen.fit(iris) is gen
    assert gen.report_["min_support"] == 3 and gen.report_["n_domains"] == 5
    rel = gen.release()
    assert isinstance(rel, GeneratedRelease) and rel.method == "krimp-generator" and rel.data.n_transactions == 40
    # library sampling is unchanged and uses the estimator's key by default
    assert gen.sample(40).to_lists() == gen.sample(40, key=Key(987654321)).to_lists()


def test_min_support_floor(iris, tmp_path):
    with pytest.raises(WeakParameterError, match="min-support 1 is below the floor 2") as err:
        KrimpGenerator(1).fit(iris)
    assert "--allow-weak" in cli_message(err.value)
    with pytest.raises(WeakParameterError):
        KrimpGenerator(1.0 / 150).fit(iris)  # a fraction giving one record
    with pytest.raises(InvalidParameter, match="unknown privacy floor"):
        KrimpGenerator(1, allow_weak=["basic privacy"]).fit(iris)
    gen, rel, url = _release(iris, tmp_path, min_support=1, allow_weak=["min-support"])
    assert gen.overrides_ == ("min-support",) and manifest_of(url)["release"]["overrides"] == ["min-support"]
    verdict = verify(str(url), original=iris)
    assert verdict.ok and verdict["min-support"].overridden
    assert verdict["min-support"].line().startswith("OVERRIDDEN min-support: 1 (needs 2)")


# ---------------------------------------------------------------------------- written releases
def test_release_patterns_and_verification(iris, tmp_path):
    gen, rel, url = _release(iris, tmp_path, min_support=3, max_len=3, exclude=[(1, 6)])
    files = sorted(os.listdir(url))
    assert files == ["_SUCCESS", PATTERNS_FILE, "_vocabulary.parquet", "part-00000.parquet"]
    table = pq.read_table(url / PATTERNS_FILE)
    assert table.column_names == ["items"]  # the supports and usages are counts of the original: never published
    patterns = table.to_pylist()
    ct = gen.code_table_
    assert len(patterns) == ct.n_nontrivial > 0  # laplace > 0: every non-singleton element can be drawn
    assert [p["items"] for p in patterns] == [x.tolist() for x in ct.itemsets[: ct.n_nontrivial]]
    rows = [set(r) for r in iris.to_lists()]  # brute force: every published pattern in >= 3 records
    assert min(sum(1 for r in rows if set(p["items"]) <= r) for p in patterns) >= 3
    assert max(len(p["items"]) for p in patterns) <= 3
    assert not any({1, 6} <= set(p["items"]) for p in patterns)
    back = read(str(url))
    assert back.n_transactions == 150 and "n_patterns" in back.columns
    check_domains(back, gen.domains_)
    verdict = verify(str(url), original=iris)
    assert verdict.ok, verdict.lines(failed_only=True)
    for name in (
        "pattern length",
        "excluded combinations",
        "patterns fit the domains",
        "rows as recorded",
        "unique copies",
        "one item per domain",
        "pattern support in the original",
        UNIQUE_COPIES_CHECK,
    ):
        assert verdict[name].ok and verdict[name].status == "check"
    nas = verdict["normalized anonymity score"].figure
    assert 0.0 <= nas <= 1.0
    from ppdm_dask.krimp import normalized_anonymity_score

    assert nas == pytest.approx(normalized_anonymity_score(back, iris))


def test_same_key_same_bytes_for_1_and_4_partitions(iris, tmp_path):
    urls = []
    for nparts in (1, 4):
        tx = iris.repartition(npartitions=nparts)
        _, _, url = _release(tx, tmp_path, name=f"p{nparts}", key=Key(11))
        urls.append(url)
    assert data_bytes(urls[0]) == data_bytes(urls[1])
    _, _, other = _release(iris, tmp_path, name="other", key=Key(12))
    assert data_bytes(other) != data_bytes(urls[0])


def test_tampering_is_caught(iris, tmp_path):
    _, _, url = _release(iris, tmp_path)
    flip_byte(url / "part-00000.parquet")
    failed = verify(str(url)).failures()
    assert failed and failed[0].where == "part-00000.parquet"

    # a pattern rarer than min-support slipped into the public patterns: {1, 8} is in one iris record
    _, _, url = _release(iris, tmp_path, name="rare")
    assert sum(1 for r in iris.to_lists() if {1, 8} <= set(r)) == 1
    table = pq.read_table(url / PATTERNS_FILE)
    forge_part(
        url, PATTERNS_FILE, pa.concat_tables([table, pa.table({"items": pa.array([[1, 8]], table.schema.field("items").type)})])
    )
    alone = verify(str(url))  # the release alone holds no support: only the original can tell
    assert alone.ok and alone["pattern support in the original"].status == "unchecked"
    verdict = verify(str(url), original=iris)
    assert [c.name for c in verdict.failures()] == ["pattern support in the original"]
    assert (
        verdict["pattern support in the original"].where == PATTERNS_FILE
        and verdict["pattern support in the original"].figure == 1
    )

    # a generated row with two items of one domain (and none of another)
    _, _, url = _release(iris, tmp_path, name="rows")
    rows = read(str(url)).compute()
    bad = rows.tolil()
    bad[0, :] = 0
    bad[0, [0, 1, 5, 10, 13]] = 1  # items 1, 2 share the first domain
    table = pq.read_table(url / "part-00000.parquet")
    forge_part(url, "part-00000.parquet", table.set_column(0, "items", csr_to_arrow_list(bad.tocsr())))
    verdict = verify(str(url))
    assert [c.name for c in verdict.failures()] == ["one item per domain"]
    assert verdict["one item per domain"].where == "part-00000.parquet" and verdict["one item per domain"].figure == 1


def test_pattern_support_recounted_on_the_original(iris, tmp_path):
    _, _, url = _release(iris, tmp_path)
    # an original in which the patterns are rare: the first 20 rows only
    few = TransactionArray.from_lists(iris.to_lists()[:20])
    verdict = verify(str(url), original=few)
    failed = [c.name for c in verdict.failures()]
    assert "pattern support in the original" in failed


def test_csv_release(iris, tmp_path):
    gen = KrimpGenerator(2, key=Key(5)).fit(iris)
    url = str(tmp_path / "gen.csv")
    gen.release().write(url)
    assert sorted(os.listdir(tmp_path)) == ["gen.csv", "gen.csv.manifest.json"]
    manifest = json.loads((tmp_path / "gen.csv.manifest.json").read_text())
    assert len(manifest["patterns"]["items"]) == gen.code_table_.n_nontrivial
    assert verify(url, original=iris).ok


# ---------------------------------------------------------------------------- code tables
def test_code_table_save_load(iris, tmp_path):
    ct = krimp(iris, min_support=2).code_table
    url = tmp_path / "ct" / "iris.json"
    ct.save(url)
    back = CodeTable.load(str(url))
    assert [x.tolist() for x in back.itemsets] == [x.tolist() for x in ct.itemsets]
    assert np.array_equal(back.usages, ct.usages) and np.array_equal(back.supports, ct.supports)
    assert back.sizes() == ct.sizes() and back.parameters == ct.parameters
    assert ct.parameters["min_support"] == 2 and ct.parameters["prune"] is True
    assert not any(w in json.dumps(json.loads(url.read_text())["parameters"]).lower() for w in ("key", "seed"))
    with pytest.raises(DatasetExistsError):
        ct.save(url)
    ct.save(url, overwrite=True)
    with pytest.raises(DatasetNotFoundError):
        CodeTable.load(tmp_path / "missing.json")
    ct.parameters["key"] = 42
    with pytest.raises(InvalidParameter, match="looks secret"):
        ct.save(tmp_path / "secret.json")
    assert not (tmp_path / "secret.json").exists()
    # a generator built from the saved table releases with the recorded min-support
    gen = KrimpGenerator.from_code_table(back, KrimpGenerator(2).fit(iris).domains_, key=Key(1))
    with pytest.raises(InvalidParameter, match="does not know the data"):
        gen.release()  # its unique records are unknown without the data
    rel = KrimpGenerator.from_code_table(back, gen.domains_, key=Key(1), data=iris).release()
    assert rel.parameters["min_support"] == 2 and rel.parameters["unique_copies"] == "redrawn"
    unique = {frozenset(r) for r, c in Counter(frozenset(x) for x in iris.to_lists()).items() if c == 1}
    assert unique and not unique & {frozenset(r) for r in rel.data.to_lists()}
    allowed = KrimpGenerator.from_code_table(back, gen.domains_, key=Key(1), allow_weak=["unique copies"]).release()
    assert allowed.parameters["unique_copies"] == "allowed" and allowed.overrides == ("unique copies",)


def test_code_table_save_is_atomic(iris, tmp_path, monkeypatch):
    import fsspec.implementations.local as local

    ct = krimp(iris, min_support=2).code_table
    url = tmp_path / "ct.json"
    ct.save(url)
    before = url.read_bytes()
    real_write = local.LocalFileOpener.write

    def failing_write(self, data):
        real_write(self, data[: len(data) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(local.LocalFileOpener, "write", failing_write)
    with pytest.raises(OSError, match="disk full"):
        ct.save(url, overwrite=True)
    with pytest.raises(OSError, match="disk full"):
        ct.save(tmp_path / "new.json")
    monkeypatch.undo()
    assert url.read_bytes() == before  # the existing table is untouched
    assert sorted(os.listdir(tmp_path)) == ["ct.json"]  # no partial file, no temporary left

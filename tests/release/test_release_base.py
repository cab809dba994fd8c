"""The Release protocol on a minimal family: atomic write in keyed order, hashed files, the check
before the commit, floors and overrides, reading back, verification of tampered releases."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from ppdm_dask import TransactionArray, families, read
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.errors import DatasetExistsError, PrivacyViolation, WeakParameterError
from ppdm_dask.families import Family
from ppdm_dask.random import Key
from ppdm_dask.release import Check, Release, TransactionRelease
from ppdm_dask.verification import verify

from .helpers import append_rows, data_bytes, flip_byte, manifest_of

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


class MinLengthRelease(TransactionRelease):
    """A toy family: every released transaction has at least ``min_len`` items."""

    family = "test-min-length"

    def floor_checks(self):
        return [self.floor("min_len >= 1", self.parameters["min_len"] >= 1, self.parameters["min_len"], 1)]

    def guarantee_checks(self, original=None, **kw):
        from ppdm_dask.progress import compute

        (lengths,) = compute(self.data.row_lengths(), **kw)
        shortest = int(lengths.min()) if lengths.size else 0
        checks = [Check("min length", shortest >= self.parameters["min_len"], shortest, self.parameters["min_len"])]
        if original is not None:
            checks.append(
                Check(
                    "same rows",
                    original.n_transactions == self.data.n_transactions,
                    self.data.n_transactions,
                    original.n_transactions,
                )
            )
        return checks


def _tx(n=2000, parts=1, seed=0, min_len=2):
    rng = np.random.default_rng(seed)
    rows = [sorted(rng.choice(40, size=int(rng.integers(min_len, 8)), replace=False).tolist()) for _ in range(n)]
    return TransactionArray.from_lists(rows).repartition(npartitions=parts)


@pytest.fixture(autouse=True)
def _the_toy_family():
    # a family plugs in through the registry (docs/architecture.md, "Adding a family")
    families.register(Family("test-min-length", f"{__name__}:MinLengthRelease"))
    yield
    families.unregister("test-min-length")


def test_write_open_verify_and_partition_independence(tmp_path):
    key = Key(1234)
    outs = []
    for parts in (1, 4):
        rel = MinLengthRelease(_tx(parts=parts), method="toy", parameters={"min_len": 2}, key=key)
        m = rel.write(str(tmp_path / f"r{parts}"), rows_per_file=700)
        outs.append(data_bytes(tmp_path / f"r{parts}"))
        assert m["guarantees"]["ok"] and len(m["partitions"]) == 3
    assert outs[0] == outs[1]  # same key: same bytes, whatever the input partitioning
    m = manifest_of(tmp_path / "r4")
    assert m["version"] == 2 and m["release"]["family"] == "test-min-length"
    assert m["release"]["key_fingerprint"] == key.fingerprint(bytes.fromhex(m["release"]["id"]))
    assert all(len(p["sha256"]) == 64 and p["bytes"] > 0 for p in m["partitions"])
    # readable as plain transactions, in a different (keyed) order, nothing lost
    back = read(str(tmp_path / "r4"))
    orig = _tx().to_lists()
    got = back.to_lists()
    assert sorted(map(tuple, got)) == sorted(map(tuple, orig)) and got != orig
    v = verify(str(tmp_path / "r4"), original=_tx())
    assert v.ok and v["same rows"].ok and v["min length"].figure >= 2 and v["min_len >= 1"].ok
    opened = Release.open(str(tmp_path / "r4"))
    assert isinstance(opened, MinLengthRelease) and opened.parameters == {"min_len": 2}


def test_staged_shuffle_writes_the_same_bytes(tmp_path, monkeypatch):
    # the whole release in flight, or its pieces through staging files: the same files, and the
    # staging folder is gone before the commit
    from ppdm_dask import cluster

    key, outs, plans = Key(77), [], []
    monkeypatch.setattr(MinLengthRelease, "row_bytes", lambda self: 64.0)
    for budget in (1e12, 1.0):
        monkeypatch.setattr(cluster, "memory_budget", lambda share, client=None, *, local, b=budget: (b, "test"))
        rel = MinLengthRelease(_tx(parts=3), method="toy", parameters={"min_len": 2}, key=key)
        m = rel.write(str(tmp_path / f"r{budget:g}"), rows_per_file=450)
        outs.append(data_bytes(tmp_path / f"r{budget:g}"))
        plans.append(m["release"]["row_order"]["shuffle"])
        assert not list(tmp_path.glob(f"r{budget:g}/_staging*")) and not list(tmp_path.glob(f"r{budget:g}/**/pieces-*"))
        assert "release of 2,000 rows in flight" in m["release"]["row_order"]["shuffle_reason"]
    assert plans == ["memory", "staged"] and outs[0] == outs[1] and len(outs[0]) == 6  # 5 parts, the vocabulary
    # rows of unknown size: staged on a cluster with memory limits, in memory on a local scheduler
    monkeypatch.setattr(MinLengthRelease, "row_bytes", lambda self: None)
    monkeypatch.setattr(cluster, "memory_budget", lambda share, client=None, *, local: (local, "local scheduler"))
    assert rel.shuffle_plan(10)[0] == "memory"
    monkeypatch.setattr(cluster, "memory_budget", lambda share, client=None, *, local: (1e9, "2 workers of 954 MiB"))
    assert rel.shuffle_plan(10) == ("staged", "rows of unknown size on 2 workers of 954 MiB: shuffled through staging files")


def test_other_key_other_order(tmp_path):
    a = MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=Key(1)).write(str(tmp_path / "a"))
    b = MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=Key(2)).write(str(tmp_path / "b"))
    assert a["partitions"][0]["sha256"] != b["partitions"][0]["sha256"]


def test_tampering_is_named(tmp_path):
    out = tmp_path / "r"
    MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=Key(5)).write(str(out), rows_per_file=700)
    flip_byte(out / "part-00001.parquet")
    v = verify(str(out))
    assert not v.ok
    assert [c.where for c in v.failures() if c.name == "file matches the manifest"] == ["part-00001.parquet"]
    assert "SHA-256" in v.lines(failed_only=True)[0]
    # without checksums the damaged file is still named, by the reader of the recount
    v = verify(str(out), checksums=False)
    assert [c.name for c in v.failures()] == ["guarantee recount"] and "part-00001.parquet" in v.failures()[0].detail
    # a truncated file is named by its size alone
    (out / "part-00002.parquet").write_bytes((out / "part-00002.parquet").read_bytes()[:-10])
    v = verify(str(out), checksums=False)
    assert any(c.where == "part-00002.parquet" and "bytes" in c.detail for c in v.failures())


def test_broken_guarantee_with_forged_checksums_is_caught_by_the_recount(tmp_path):
    out = tmp_path / "r"
    MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=Key(5)).write(str(out))
    append_rows(out, pa.table({"items": pa.array([[3]], type=pa.list_(pa.int32()))}))
    v = verify(str(out))
    assert not v.ok and [c.name for c in v.failures()] == ["min length"]
    assert v["min length"].figure == 1


def test_unlisted_file_and_missing_file(tmp_path):
    out = tmp_path / "r"
    MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=Key(5)).write(str(out))
    (out / "part-00009.parquet").write_bytes(b"extra")
    v = verify(str(out))
    assert [(c.name, c.where) for c in v.failures() if c.where] == [("no unlisted file", "part-00009.parquet")]
    (out / "part-00009.parquet").unlink()
    (out / "part-00000.parquet").unlink()
    v = verify(str(out))
    assert any(c.where == "part-00000.parquet" and c.detail == "missing" for c in v.failures())


def test_refusals_before_work_floors_and_overrides(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    with pytest.raises(DatasetExistsError) as e:
        MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}).write(str(out))
    assert cli_message(e.value).endswith("(--overwrite)")
    weak = MinLengthRelease(_tx(), method="toy", parameters={"min_len": 0})
    with pytest.raises(WeakParameterError) as e:
        weak.write(str(tmp_path / "w"))
    assert "--allow-weak" in cli_message(e.value) and not (tmp_path / "w").exists()
    MinLengthRelease(_tx(), method="toy", parameters={"min_len": 0}, overrides=["min_len >= 1"]).write(str(tmp_path / "w"))
    v = verify(str(tmp_path / "w"))
    assert v.ok and v["min_len >= 1"].overridden
    assert manifest_of(tmp_path / "w")["release"]["overrides"] == ["min_len >= 1"]


def test_failing_guarantee_is_never_committed(tmp_path):
    rel = MinLengthRelease(_tx(min_len=0), method="toy", parameters={"min_len": 2}, key=Key(5))
    with pytest.raises(PrivacyViolation, match="min length"):
        rel.write(str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists() and list(tmp_path.iterdir()) == []


def test_csv_destination(tmp_path):
    out = tmp_path / "rel.csv"
    m = MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=Key(8)).write(str(out))
    assert out.is_file() and (tmp_path / "rel.csv.manifest.json").is_file()
    assert m["release"]["output"] == "csv" and m["partitions"][0]["rows"] == 2000
    assert verify(str(out)).ok
    lines = out.read_text().splitlines()
    assert len(lines) == 2000 and all(len(line.split(",")) >= 2 for line in lines)
    flip_byte(out, 5)
    assert not verify(str(out)).ok
    with pytest.raises(DatasetExistsError):
        MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}).write(str(out))


def test_manifest_holds_no_key_or_credentials(tmp_path):
    key = Key(0x1234_5678_9ABC_DEF0_1122_3344_5566_7788)
    MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2}, key=key).write(
        str(tmp_path / "r"), storage_options={"auto_mkdir": True}
    )
    blob = b"".join(p.read_bytes() for p in (tmp_path / "r").iterdir())
    value = 0x1234_5678_9ABC_DEF0_1122_3344_5566_7788
    for needle in (f"{value:x}", f"{value:032x}", str(value)):
        assert needle.encode() not in blob
    assert b"auto_mkdir" not in blob
    with pytest.raises(Exception, match="looks secret"):
        MinLengthRelease(_tx(), method="toy", parameters={"min_len": 2, "seed": 5})


def test_input_provenance_is_keyed_and_kept_by_the_owner(tmp_path):
    """The public manifest names the input only by a keyed, release-salted fingerprint: no URL,
    file name, size or SHA-256 of an input file. The owner's record (for the internal report)
    keeps them, and the key holder can check which input made the release."""
    import hashlib

    from ppdm_dask.data.digest import content_digest
    from ppdm_dask.data.sources import source_of

    src = tmp_path / "secret_input_name.dat"
    src.write_text("\n".join(" ".join(map(str, r)) for r in _tx(n=50).to_lists()) + "\n")
    tx = read(str(src))
    key = Key(99)
    rel = MinLengthRelease(
        tx,
        method="toy",
        parameters={"min_len": 2},
        source=source_of(tx),
        key=key,
        input_info={"rows": 50, "schema": {"n_items": tx.n_items}},
        input_digest=content_digest(tx),
    )
    m = rel.write(str(tmp_path / "r"))
    text = (tmp_path / "r" / "_SUCCESS").read_text()
    assert set(m["input"]) == {"fingerprint"} and len(m["input"]["fingerprint"]) == 32
    for secret in ("secret_input_name", hashlib.sha256(src.read_bytes()).hexdigest(), content_digest(tx).hex(), str(tmp_path)):
        assert secret not in text

    def numbers(obj):
        if isinstance(obj, dict):
            return [n for k, v in obj.items() if k != "partitions" for n in numbers(v)]
        if isinstance(obj, list):
            return [n for v in obj for n in numbers(v)]
        return [obj] if isinstance(obj, int) and not isinstance(obj, bool) else []

    assert src.stat().st_size not in numbers(json.loads(text))  # the input's size is nowhere
    assert rel.owner_input["files"] == [
        {"file": "secret_input_name.dat", "bytes": src.stat().st_size, "sha256": hashlib.sha256(src.read_bytes()).hexdigest()}
    ]
    opened = Release.open(str(tmp_path / "r"))
    assert opened.verify(tx, key=key)["made from this original with this key"].ok
    other = _tx(n=50, seed=1)
    assert not opened.verify(other, key=key)["made from this original with this key"].ok
    assert not opened.verify(tx, key=Key(98))["made with this key"].ok


def test_table_part_files_are_sized_from_the_column_types(monkeypatch):
    """A table's rows per part file: BLOCK_BYTES over 8 bytes plus each column's width (numbers
    their itemsize, text TEXT_CELL_BYTES); capped at MAX_ROWS_PER_FILE, at least 1,024."""
    import dask.dataframe as dd
    import pandas as pd

    import ppdm_dask.release.tables as T

    df = pd.DataFrame(
        {
            "zip": ["123", "456"] * 50,
            "sex": ["f", "m"] * 50,
            "age": np.arange(100, dtype=np.int64),
            "w": np.ones(100, dtype=np.float32),
        }
    )

    class Toy(T.TableRelease):
        def guarantee_checks(self, original=None, **kw):
            return []

    rel = Toy(dd.from_pandas(df, npartitions=2), method="toy", parameters={})
    monkeypatch.setattr(T, "BLOCK_BYTES", 116 * 10_000)  # 8 + 48 + 48 + 8 + 4 = 116 bytes per row
    assert rel.default_rows_per_file == 10_000
    monkeypatch.setattr(T, "BLOCK_BYTES", 116 * 10**7)
    assert rel.default_rows_per_file == T.MAX_ROWS_PER_FILE
    monkeypatch.setattr(T, "BLOCK_BYTES", 116)
    assert rel.default_rows_per_file == 1024

"""The ledger's storage: keyed input names, no lost record under concurrent jobs (local and on
S3), a record of a job killed before its commit marked "not committed", withdrawal kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ppdm_dask.ledger import Ledger
from ppdm_dask.ledger.compose import reconcile

REPO = Path(__file__).resolve().parents[2]

#: a child job: one EMASK release of a fixed input, with a fresh key, recorded in the ledger
CHILD = r"""
import json, os, sys
import dask
import numpy as np
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.emask import Distorter
from ppdm_dask.ledger import Ledger
from ppdm_dask.random import Key

dst, ledger_url, die_at = sys.argv[1], sys.argv[2], sys.argv[3]
opts = json.loads(os.environ.get("LEDGER_OPTS") or "{}")
if die_at != "-":
    from ppdm_dask.data import commit
    def die(name):
        if name == die_at:
            os._exit(9)
    commit._step = die
rng = np.random.default_rng(7)
lists = [list(rng.choice(200, size=rng.integers(1, 6), replace=False)) for _ in range(300)]
with dask.config.set(scheduler="sync"):
    tx = TransactionArray.from_lists(lists, npartitions=2)
    rel = Distorter(0.5, 0.97, key=Key.generate(), privacy_floor=50).fit(tx).transform(tx)
    # the test is about the records, not the family's limits: every release is accepted
    rel.write(dst, ledger=Ledger(ledger_url, storage_options=opts), notify=lambda line: None, allow_composition=True)
"""


def _job(dst: str, ledger: str, die_at: str = "-", opts: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LEDGER_OPTS": json.dumps(opts or {})}
    return subprocess.run(
        [sys.executable, "-c", CHILD, dst, ledger, die_at], capture_output=True, text=True, env=env, timeout=300
    )


def test_an_input_is_named_by_the_ledgers_secret(tmp_path):
    a, b = Ledger(str(tmp_path / "a")), Ledger(str(tmp_path / "b"))
    digest = bytes(range(32))
    assert a.input_fingerprint(digest) == Ledger(str(tmp_path / "a")).input_fingerprint(digest)  # the same secret, read back
    assert a.input_fingerprint(digest) != b.input_fingerprint(digest)  # another ledger: unrelated names
    assert a.input_fingerprint(digest) != a.input_fingerprint(digest[::-1])
    assert oct((tmp_path / "a" / "secret").stat().st_mode & 0o777) == "0o600"


def test_the_secret_is_created_once_under_a_race(tmp_path):
    url = str(tmp_path / "race")
    with ThreadPoolExecutor(8) as ex:
        secrets = list(ex.map(lambda _: Ledger(url).secret(), range(8)))
    assert len(set(secrets)) == 1


def _concurrent(dsts: list[str], ledger: str, opts: dict | None = None) -> None:
    with ThreadPoolExecutor(len(dsts)) as ex:
        results = list(ex.map(lambda d: _job(d, ledger, opts=opts), dsts))
    for r in results:
        assert r.returncode == 0, r.stderr[-2000:]


def _check_eight(ledger: Ledger) -> None:
    records = ledger.records()
    assert len(records) == 8 and {r.status for r in records} == {"committed"}
    assert len({r["input"] for r in records}) == 1  # eight keys, one input
    # admission is serialised by the input's lock: the k-th job saw the k - 1 before it
    assert sorted(r.data["composition"]["releases"] for r in records) == list(range(1, 9))
    # once written, each composed with every other one recorded by then (a pending one counts)
    assert all(r.composition["releases"] >= r.data["composition"]["releases"] for r in records)


def test_eight_concurrent_jobs_lose_no_record(tmp_path):
    ledger = str(tmp_path / "ledger")
    _concurrent([str(tmp_path / f"out{i}") for i in range(8)], ledger)
    _check_eight(Ledger(ledger))


@pytest.mark.slow  # eight jobs through one moto server: a minute on two cores
def test_eight_concurrent_jobs_on_a_shared_s3_ledger_lose_no_record(s3, tmp_path):
    ledger = f"{s3['prefix']}/ledger"
    _concurrent([str(tmp_path / f"out{i}") for i in range(8)], ledger, opts=s3["storage_options"])
    _check_eight(Ledger(ledger, storage_options=s3["storage_options"]))


def test_a_job_killed_between_record_and_commit_leaves_a_record_not_committed(tmp_path):
    ledger = str(tmp_path / "ledger")
    r = _job(str(tmp_path / "out"), ledger, die_at="written")
    assert r.returncode == 9, r.stderr[-2000:]
    assert not (tmp_path / "out").exists()
    (rec,) = Ledger(ledger).records()
    assert rec.status == "not committed"
    changed = reconcile(Ledger(ledger))
    assert [s for _, s in changed] == ["not committed"]
    (rec,) = Ledger(ledger).records()
    assert rec.status == "not committed" and "between its record and its commit" in rec.last("failed")["reason"]
    # a release that never committed does not count in the next release's composition
    assert _job(str(tmp_path / "next"), ledger).returncode == 0
    latest = Ledger(ledger).records()[-1]
    assert latest.status == "committed" and latest.composition["releases"] == 1


def test_a_job_killed_after_its_commit_is_settled_as_committed(tmp_path):
    ledger = str(tmp_path / "ledger")
    assert _job(str(tmp_path / "out"), ledger, die_at="done").returncode == 9
    assert (tmp_path / "out" / "_SUCCESS").exists()
    (rec,) = Ledger(ledger).records()
    assert rec.status == "not committed"  # the job died before recording its commit ...
    reconcile(Ledger(ledger))
    (rec,) = Ledger(ledger).records()
    assert rec.status == "committed"  # ... and the release found at its destination settles it


def test_forget_marks_withdrawn_and_keeps_the_record(tmp_path):
    from ppdm_dask.errors import InvalidParameter

    ledger = Ledger(str(tmp_path / "ledger"))
    rec = ledger.add({"input": "f" * 32, "release_id": "a" * 32, "family": "emask", "method": "emask", "destination": "x"})
    ledger.event(rec, "committed")
    with pytest.raises(InvalidParameter, match="say why"):
        ledger.forget("aaaa", "")
    ledger.forget("aaaa", "sent to nobody")
    (back,) = ledger.records()
    assert back.status == "withdrawn" and back.last("withdrawn")["reason"] == "sent to nobody"
    assert ledger.export()["records"][0]["status"] == "withdrawn"

"""``ppdm ledger`` and the ledger options of release commands: the second release of an input
names the first before its work, the ledger's commands list, show, check, export and withdraw,
``--no-ledger`` is said in the manifest, and nothing of the ledger reaches a public file."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from ppdm_dask.cli import cli
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.ledger import Ledger

SRC = str(sample_path("bms-webview-1-5k"))


def run(*args, ok=True):
    result = CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


def _distort(dst, *extra, ok=True):
    # a floor two releases of the sample still meet together (composed basic privacy 78 %)
    return run(*extra, "emask", "distort", SRC, str(dst), "--p", "0.5", "--q", "0.97", "--privacy-floor", "75", ok=ok)


def test_two_releases_are_recorded_and_the_second_names_the_first(tmp_path):
    first = _distort(tmp_path / "r1")
    assert "first recorded release of this input" in first.stderr
    rid1 = json.loads((tmp_path / "r1" / "_SUCCESS").read_text())["release"]["id"]
    second = _distort(tmp_path / "r2")
    # said before the work: the earlier release by its id, before the job's summary
    assert "this input has 1 earlier release(s)" in second.stderr and rid1 in second.stderr
    summary = "ledger       recorded: composed with 1 earlier release(s) that share its input or its people"
    assert summary in second.stdout and "the person: the record itself" in second.stdout  # the job's summary
    listed = json.loads(run("--json", "ledger", "list").stdout)
    (records,) = listed["inputs"].values()
    assert [r["release_id"] for r in records][0] == rid1 and len(records) == 2
    assert {r["status"] for r in records} == {"committed"}
    assert records[1]["composition"]["releases"] == 2 and records[1]["composition"]["earlier"] == [rid1]
    manifest = json.loads((tmp_path / "r2" / "_SUCCESS").read_text())
    assert manifest["release"]["ledger"]["recorded"] is True and manifest["release"]["ledger"]["composition"]["releases"] == 2

    shown = run("ledger", "show", str(tmp_path / "r1")).stdout  # by the release's path
    assert rid1 in shown and "committed" in shown
    assert "withdrawn" in run("ledger", "forget", str(tmp_path / "r1"), "--reason", "never sent").stdout
    checked = json.loads(run("--json", "ledger", "check").stdout)
    (inp,) = checked["inputs"]
    assert inp["releases"] == 1 and inp["stale"] is True  # the second was composed with a release since withdrawn
    run("ledger", "export", "--out", str(tmp_path / "ledger.json"))
    doc = json.loads((tmp_path / "ledger.json").read_text())
    assert [r["status"] for r in doc["records"]] == ["withdrawn", "committed"]
    assert doc["records"][0]["status_reason"] == "never sent"
    # a third release composes with the second only (the first was withdrawn)
    third = _distort(tmp_path / "r3")
    assert "this input has 1 earlier release(s)" in third.stderr and rid1 not in third.stderr


def test_no_ledger_is_said_in_the_manifest_and_records_nothing(tmp_path):
    r = _distort(tmp_path / "r", "--no-ledger")
    assert "ledger       not recorded" in r.stdout
    assert json.loads(_distort(tmp_path / "j", "--no-ledger", "--json").stdout)["ledger"]["recorded"] is False
    manifest = json.loads((tmp_path / "r" / "_SUCCESS").read_text())
    assert manifest["release"]["ledger"]["recorded"] is False and "opt" in json.dumps(manifest["release"]["ledger"])
    assert Ledger().records() == []
    bad = run("--no-ledger", "--ledger", str(tmp_path / "l"), "ledger", "list", ok=False)
    assert bad.exit_code == 2 and "contradict" in bad.output


def test_an_explicit_ledger_location_is_used(tmp_path):
    where = tmp_path / "team-ledger"
    _distort(tmp_path / "r", "--ledger", str(where))
    assert len(Ledger(str(where)).records()) == 1 and Ledger().records() == []


def test_nothing_of_the_ledger_reaches_the_public_files(tmp_path):
    _distort(tmp_path / "r1")
    _distort(tmp_path / "r2")
    ledger = Ledger()
    fingerprint = ledger.records()[0]["input"]
    secret = ledger.secret().hex()
    public = [tmp_path / "r2" / "_SUCCESS", tmp_path / "r2.report-external.json"]
    run("report", str(tmp_path / "r2"), "--audience", "external", "--out", str(tmp_path / "r2.report-external.html"))
    for f in public:
        text = f.read_text()
        for secretish in (fingerprint, secret, os.environ["PPDM_LEDGER"], str(tmp_path / "r1")):
            assert secretish not in text, (f.name, secretish)
    ext = json.loads((tmp_path / "r2.report-external.json").read_text())
    ids = [i["id"] for s in ext["sections"] for i in s["items"]]
    assert "ledger_public" in ids and "ledger_earlier" not in ids  # the earlier releases are the owner's
    internal = json.loads((tmp_path / "r2.report.json").read_text())
    table = [i for s in internal["sections"] for i in s["items"] if i["id"] == "ledger_earlier"]
    assert table and table[0]["rows"][0][4] == str(tmp_path / "r1")


def test_an_unwritable_ledger_is_one_error_before_any_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _distort(tmp_path / "r", "--ledger", str(blocker / "ledger"), ok=False)
    assert r.exit_code == 2 and "cannot write the ledger" in r.output and "--no-ledger" in r.output
    assert not (tmp_path / "r").exists()

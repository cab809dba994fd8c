"""The ``ppdm`` command line: jobs, JSON summaries, clear one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ppdm_dask import read
from ppdm_dask.cli import cli
from ppdm_dask.data.datasets import sample_path


def run(*args, ok=True):
    result = CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_generate_info_convert(tmp_path):
    out = tmp_path / "q"
    key = tmp_path / "key"
    r = run("--key-file", str(key), "--json", "generate", "quest", "T10.I4.D5K.N1K", str(out))
    summary = json.loads(r.stdout)
    assert summary["n_transactions"] == 5000 and summary["n_items"] == 1000
    assert key.exists() and "key" not in r.stdout.lower().replace('"n_', "")
    # the key is not in the output data
    key_hex = key.read_text().strip()
    for f in out.iterdir():
        assert key_hex[2:].encode() not in f.read_bytes()
    info = json.loads(run("--json", "info", str(out)).stdout)
    assert info["n_transactions"] == 5000 and abs(info["mean_length"] - 10) < 0.5
    assert info["metadata"]["spec"] == "T10.I4.D5K.N1K"
    text = run("info", str(out)).stdout
    assert "density" in text and "histogram" in text
    # same key -> identical data
    run("--key-file", str(key), "generate", "quest", "T10.I4.D5K.N1K", str(tmp_path / "q2"))
    assert (read(str(out)).compute() != read(str(tmp_path / "q2")).compute()).nnz == 0
    # conversions
    run("convert", str(out), str(tmp_path / "q.dat"))
    run("convert", str(tmp_path / "q.dat"), str(tmp_path / "q.csv"))
    run("convert", "--partitions", "3", str(tmp_path / "q.csv"), str(tmp_path / "back"))
    back = read(str(tmp_path / "back"))
    assert back.n_partitions == 3
    assert back.to_lists() == read(str(out)).to_lists()


def test_samples_and_info_on_bundled_file():
    r = run("--json", "info", str(sample_path("chess")))
    d = json.loads(r.stdout)
    assert d["n_transactions"] == 3196 and d["nnz"] == 118252
    assert "mushroom" in run("samples").stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["info", "/no/such/place"], "no such file or folder: /no/such/place"),  # refused before the job starts
        (["generate", "quest", "X10.Y4", "OUT"], "ppdm: error:"),
        (["--storage-option", "oops", "info", "x"], "k=v"),
    ],
)
def test_bad_input_one_line_no_traceback(args, needle):
    r = run(*args, ok=False)
    assert r.exit_code != 0
    assert needle in r.output
    assert "Traceback" not in r.output


def test_existing_output_is_refused(tmp_path):
    run("convert", str(sample_path("iris")), str(tmp_path / "iris"))
    r = run("convert", str(sample_path("iris")), str(tmp_path / "iris"), ok=False)
    assert r.exit_code == 2 and "already exists" in r.output
    run("convert", "--overwrite", str(sample_path("iris")), str(tmp_path / "iris"))


def test_bad_fimi_file_error(tmp_path):
    bad = tmp_path / "bad.dat"
    bad.write_text("1 2\n3 -4\n")
    r = run("info", str(bad), ok=False)
    assert r.exit_code == 2 and "negative item id" in r.output and "Traceback" not in r.output


@pytest.mark.oldest
def test_console_script_on_local_cluster(tmp_path):
    """The installed entry point, default LocalCluster, progress on stderr, JSON on stdout: the
    demo releases a table and distorted baskets and mines them."""
    exe = os.path.join(os.path.dirname(sys.executable), "ppdm")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "ppdm_dask.cli"]
    out, key = tmp_path / "demo", tmp_path / "demo.key"
    proc = subprocess.run(
        cmd + ["--workers", "2", "--key-file", str(key), "--json", "demo", "--rows", "20000", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert "LocalCluster" in summary["scheduler"] and summary["folder"] == str(out)
    assert summary["table"]["verified"] and summary["table"]["privacy"]["k achieved"] >= 5
    assert summary["baskets"]["verified"] and summary["baskets"]["basic_privacy"] >= 90
    # the releases stand on their own, and the exact itemsets are what a recount of the same data gives
    from ppdm_dask import Key, verify
    from ppdm_dask.data.quest import quest
    from ppdm_dask.emask import basic_privacy
    from ppdm_dask.mining import apriori

    assert verify(str(out / "people_release")).ok and verify(str(out / "baskets_release")).ok
    baskets = quest("T10.I4.D20K.N1K", key=Key.from_file(key))
    m, b = summary["mining"], summary["baskets"]
    assert m["true_itemsets"] == len(apriori(baskets, 0.01, max_length=m["max_length"]))
    s0 = baskets.describe()["mean_length"] / baskets.n_items
    assert abs(b["basic_privacy"] - basic_privacy(b["p"], b["q"], s0=s0)) < 1e-9
    assert 0 < m["found"] <= m["true_itemsets"] and m["reconstructed_itemsets"] >= m["found"]
    assert read(str(out / "baskets_release")).n_transactions == 20000
    # it ends with the releases' reports: written, valid, about these releases
    from ppdm_dask.report import validate_report

    assert summary["reports"] == {
        "table": str(out / "people_release.report.html"),
        "baskets": str(out / "baskets_release.report.html"),
    }
    for name, family in (("people_release", "relational"), ("baskets_release", "emask")):
        doc = json.loads((out / f"{name}.report.json").read_text())
        validate_report(doc)
        assert doc["release"]["family"] == family and doc["verdict"]["ok"] and (out / f"{name}.report.html").exists()
        assert not list((out / name).glob("_report*")), "no report inside a release folder"
    # the baskets report compares itemsets of the length the console mined, and its |F| is the console's
    text = (out / "baskets_release.report.json").read_text()
    assert f"|F| = {m['true_itemsets']:,} " in text and f"at most {m['max_length']} items" in text


@pytest.mark.oldest
def test_demo_text_is_one_screen(tmp_path):
    r = run("demo", "--rows", "10000", "--out", str(tmp_path / "d"))
    lines = r.stdout.splitlines()
    assert len(lines) <= 28 and "k = 5" in r.stdout and "basic privacy" in r.stdout and str(tmp_path / "d") in r.stdout
    assert lines[-1].strip() == str(tmp_path / "d" / "baskets_release.report.html")

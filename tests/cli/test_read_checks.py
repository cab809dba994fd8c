"""Readers cannot be fooled: a ppdm dataset whose manifest and files disagree (a wrong row count,
a part swapped for another dataset's, a missing or truncated part, a ``_SUCCESS`` that is a
folder or not JSON) stops every reading command with one error line naming the dataset and the
file — never exit 0 with wrong results (on an earlier main, 11–13 of 15 read paths did)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ppdm_dask.data.datasets import sample_path

from .test_cli import run

RAW = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b:|Traceback")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    base = tmp_path_factory.mktemp("readers")
    run("convert", "--partitions", "4", str(sample_path("mushroom")), str(base / "mushroom"))
    run("convert", "--partitions", "4", str(sample_path("chess")), str(base / "chess"))
    return base


def _manifest(folder):
    return json.loads((folder / "_SUCCESS").read_text())


def _corrupt(kind, src, other, dst):
    shutil.copytree(src, dst)
    m = _manifest(dst)
    part = m["partitions"][1]["file"]
    if kind == "wrong rows":
        m["partitions"][1]["rows"] += 7
        m["n_transactions"] += 7
        (dst / "_SUCCESS").write_text(json.dumps(m))
    elif kind == "wrong total":
        m["n_transactions"] += 7
        (dst / "_SUCCESS").write_text(json.dumps(m))
        return "_SUCCESS"
    elif kind == "swapped part":
        shutil.copy(other / part, dst / part)
    elif kind == "missing part":
        (dst / part).unlink()
    elif kind == "truncated part":
        data = (dst / part).read_bytes()[:3000]
        (dst / part).write_bytes(data)
        m["partitions"][1]["bytes"] = len(data)  # a forged size: only reading the part can tell
        (dst / "_SUCCESS").write_text(json.dumps(m))
    elif kind == "manifest folder":
        (dst / "_SUCCESS").unlink()
        (dst / "_SUCCESS").mkdir()
        return "_SUCCESS"
    elif kind == "manifest not json":
        (dst / "_SUCCESS").write_text("{not json")
        return "_SUCCESS"
    return part


COMMANDS = {
    "info": ["info", "{in}"],
    "convert": ["convert", "{in}", "{out}.dat"],
    "mine": ["mine", "{in}", "--min-support", "0.5"],
    "emask distort": ["emask", "distort", "{in}", "{out}", "--p", "0.5", "--q", "0.97", "--allow-weak", "--no-report"],
    "sketch": ["sketch", "{in}", "{out}", "--delta", "0.5", "--no-report"],
    "krimp compress": ["krimp", "compress", "{in}", "--min-support", "0.5"],
}
KINDS = ["wrong rows", "wrong total", "swapped part", "missing part", "truncated part", "manifest folder", "manifest not json"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_corrupt_dataset_is_one_clear_error(datasets, tmp_path, name, kind):
    bad = tmp_path / "bad"
    culprit = _corrupt(kind, datasets / "mushroom", datasets / "chess", bad)
    argv = [a.format(**{"in": str(bad), "out": str(tmp_path / "out")}) for a in COMMANDS[name]]
    r = run(*argv, ok=False)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), r.stderr
    assert culprit in lines[0] and "bad" in lines[0], lines[0]
    assert not RAW.search(lines[0]), lines[0]
    assert not list(tmp_path.glob("out*")), "an output was written from a corrupt input"


# ---------------------------------------------------------------------- no error after a commit
def test_no_error_after_a_commit(tmp_path, monkeypatch):
    """Checks that can fail run before the first byte is written: on an earlier main, ``emask
    distort`` of a two-row file committed a release and then exited 2, and ``mine --out NEW
    --rules-out EXISTING`` wrote NEW before failing."""
    two = tmp_path / "two.dat"
    two.write_text("1 2 3\n2 3\n")
    r = run("emask", "distort", str(two), str(tmp_path / "rel"), "--p", "0.9", "--q", "0.97", "--allow-weak", ok=False)
    if r.exit_code == 0:
        assert run("verify", str(tmp_path / "rel"), ok=False).exit_code == 0
    else:
        assert r.exit_code == 2 and not (tmp_path / "rel").exists()
    existing = tmp_path / "rules.csv"
    existing.write_text("theirs")
    import ppdm_dask.mining as mining

    def no_mining(*a, **k):  # the refusal must come before any mining
        raise AssertionError("mined before refusing the existing output")

    monkeypatch.setattr(mining, "apriori", no_mining)
    r = run(
        "mine",
        str(sample_path("chess")),
        "--min-support",
        "0.9",
        "--out",
        str(tmp_path / "new.csv"),
        "--rules-out",
        str(existing),
        ok=False,
    )
    assert r.exit_code == 2 and "rules.csv already exists" in r.stderr and "--overwrite" in r.stderr
    assert not (tmp_path / "new.csv").exists() and existing.read_text() == "theirs"
    (tmp_path / "fi.csv").write_text("theirs")
    for argv in (
        ["mine", str(sample_path("chess")), "--min-support", "0.9", "--out", str(tmp_path / "fi.csv")],
        [
            "emask",
            "mine",
            str(sample_path("chess")),
            "--p",
            "0.5",
            "--q",
            "0.97",
            "--min-support",
            "0.9",
            "--out",
            str(tmp_path / "fi.csv"),
        ],
    ):
        r = run(*argv, ok=False)
        assert r.exit_code == 2 and "fi.csv already exists" in r.stderr and r.stdout == ""
    assert (tmp_path / "fi.csv").read_text() == "theirs"


def test_a_table_command_on_a_transaction_folder_names_the_format(datasets, tmp_path):
    """On an earlier main, ``condense`` of a transaction folder died with a raw ``KeyError``."""
    for argv in (
        ["condense", str(datasets / "mushroom"), str(tmp_path / "c"), "--privacy-level", "5"],
        ["anonymize", str(datasets / "mushroom"), str(tmp_path / "a"), "--qi", "x", "--k", "5"],
    ):
        r = run(*argv, ok=False)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1 and "ppdm-transactions" in lines[0], r.stderr
        assert not RAW.search(lines[0])


def test_a_table_folder_without_its_manifest_is_not_read_as_foreign_data(tmp_path):
    """A ppdm table release whose ``_SUCCESS`` is gone was read as plain Parquet (exit 0)."""
    out = tmp_path / "pk"
    run(
        "anonymize",
        str(sample_path("people")),
        str(out),
        "--identifier",
        "name",
        "--qi",
        "age,sex,zip",
        "--sensitive",
        "diagnosis",
        "--k",
        "5",
        "--method",
        "mondrian",
        "--dtype",
        "age=int",
        "--no-report",
    )
    (out / "_SUCCESS").unlink()
    r = run(
        "anonymize", str(out), str(tmp_path / "again"), "--qi", "age,sex,zip", "--sensitive", "diagnosis", "--k", "5", ok=False
    )
    assert r.exit_code == 2 and "no _SUCCESS manifest" in r.stderr and not (tmp_path / "again").exists()


def test_overwrite_of_the_input_itself_is_refused(datasets, tmp_path):
    """``emask distort X X --overwrite`` replaced the input folder, then failed reading it: the
    input was lost (found by the bad-input corpus)."""
    src = tmp_path / "self"
    shutil.copytree(datasets / "mushroom", src)
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    for argv in (
        ["emask", "distort", str(src), str(src), "--p", "0.5", "--q", "0.97", "--allow-weak", "--overwrite"],
        ["convert", str(src), str(src), "--overwrite"],
    ):
        r = run(*argv, ok=False)
        assert r.exit_code == 2 and "is the input of this job" in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before


def test_no_progress_means_no_level_lines(tmp_path):
    """``--no-progress`` silenced the bar but not the "[mine] level ..." lines: an error was then
    not the only line on stderr."""
    r = run("mine", str(sample_path("chess")), "--min-support", "0.9")
    assert "level" not in r.stderr, r.stderr


def test_damaged_compressed_input_and_manifest_folder_of_a_release(tmp_path):
    """A truncated or non-gzip ``.gz`` gave a raw ``EOFError`` / ``BadGzipFile``; ``verify`` and
    ``report`` of a release whose ``_SUCCESS`` is a folder gave a raw ``IsADirectoryError``."""
    import gzip

    data = gzip.compress(
        sample_path("chess").read_bytes()
        if not str(sample_path("chess")).endswith(".gz")
        else gzip.decompress(sample_path("chess").read_bytes())
    )
    (tmp_path / "cut.dat.gz").write_bytes(data[:5000])
    (tmp_path / "not.dat.gz").write_bytes(b"\x00\xff\xfe plain bytes")
    for name in ("cut.dat.gz", "not.dat.gz"):
        r = run("info", str(tmp_path / name), ok=False)
        assert r.exit_code == 2 and f"{name}: damaged or truncated gzip file" in r.stderr and not RAW.search(r.stderr)
    rel = tmp_path / "rel"
    run("emask", "distort", str(sample_path("chess")), str(rel), "--p", "0.5", "--q", "0.97", "--allow-weak", "--no-report")
    (rel / "_SUCCESS").unlink()
    (rel / "_SUCCESS").mkdir()
    for argv in (["verify", str(rel)], ["report", str(rel)]):
        r = run(*argv, ok=False)
        assert r.exit_code == 2 and "_SUCCESS is a folder" in r.stderr and not RAW.search(r.stderr), r.stderr

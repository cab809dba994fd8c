"""Baskets go to basket commands, tables to table commands: each refuses the other kind in one
line, before any work, naming the commands that read it. On an earlier main ``ppdm emask distort
people.csv dist/`` read the header as a transaction and every cell as an item, wrote every
person's name into ``_vocabulary.parquet`` and said "verified"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ppdm_dask.data.datasets import sample_path

from .test_cli import run

SAMPLES = sample_path("people").parent
PEOPLE = str(SAMPLES / "people.csv")
TABLE_COMMANDS = "ppdm anonymize, ppdm access-control or ppdm condense"
BASKET_COMMANDS = "ppdm mine, ppdm emask, ppdm sketch, ppdm km-anonymize or ppdm krimp"

BASKET_CMDS = {
    "emask distort": ["emask", "distort", "{in}", "{out}", "--p", "0.5", "--q", "0.97"],
    "mine": ["mine", "{in}", "--min-support", "0.1", "--out", "{out}.parquet"],
    "sketch": ["sketch", "{in}", "{out}", "--delta", "0.5"],
    "km-anonymize": ["km-anonymize", "{in}", "{out}", "--k", "5", "--fan-out", "4"],
    "krimp generate": ["krimp", "generate", "{in}", "{out}", "--min-count", "2"],
    "krimp compress": ["krimp", "compress", "{in}", "--min-count", "2"],
    "emask mine": ["emask", "mine", "{in}", "--p", "0.5", "--q", "0.97", "--min-support", "0.1"],
    "emask choose": ["emask", "choose", "--data", "{in}"],
    "sketch evaluate": ["sketch", "evaluate", "{in}", "--delta", "0.5", "--task", "cluster"],
    "convert": ["convert", "{in}", "{out}"],
    "info": ["info", "{in}"],
}


def _one_error(r, tmp_path) -> str:
    """The refusal: exit 2, one ``ppdm: error:`` line and nothing else on stderr or stdout, nothing
    written beside the input (no output, no temporary folder, no key file)."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), r.stderr
    assert r.stdout == ""
    assert not any(p.name != "input" for p in tmp_path.iterdir()), sorted(p.name for p in tmp_path.iterdir())
    return lines[0]


def test_emask_distort_of_people_is_refused_in_one_line(tmp_path):
    """The issue's command, as a user types it (a process, the sync scheduler)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SAMPLES.parents[2]), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppdm_dask.cli",
            "--scheduler",
            "sync",
            "emask",
            "distort",
            PEOPLE,
            "dist/",
            "--p",
            "0.5",
            "--q",
            "0.97",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("ppdm: error:") == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stdout == "" and list(tmp_path.iterdir()) == []
    line = r.stderr.strip()
    assert f"{PEOPLE} looks like a table, not baskets (header row name,zip,age,sex,diagnosis; 5 fields in every row" in line
    assert TABLE_COMMANDS in line and "--as-baskets" in line


#: people.csv on every basket command, the other table samples on three
CASES = [(name, "people.csv") for name in sorted(BASKET_CMDS)] + [
    (name, table) for table in ("adult_2k.csv", "ecoli.csv") for name in ("emask distort", "mine", "convert")
]


@pytest.mark.parametrize("name, table", CASES)
def test_basket_commands_refuse_a_table(tmp_path, name, table):
    (tmp_path / "input").mkdir()
    argv = [a.format(**{"in": str(SAMPLES / table), "out": str(tmp_path / "out")}) for a in BASKET_CMDS[name]]
    line = _one_error(run(*argv, ok=False), tmp_path)
    assert f"{table} looks like a table, not baskets (header row " in line and TABLE_COMMANDS in line, line


def test_two_input_commands_check_both(tmp_path):
    (tmp_path / "input").mkdir()
    chess = str(sample_path("chess"))
    for argv in (
        ["krimp", "ds", chess, PEOPLE, "--min-count", "100"],
        ["emask", "audit", PEOPLE, chess, "--p", "0.5", "--q", "0.97"],
    ):
        line = _one_error(run(*argv, ok=False), tmp_path)
        assert "people.csv looks like a table" in line


def test_as_baskets_reads_a_table_like_basket_file(tmp_path):
    """The override, for a basket CSV whose first line is a basket of rare labels."""
    baskets = tmp_path / "pairs.csv"
    baskets.write_text("lemon,zucchini\n" + "apple,bread\nbanana,milk\n" * 5)
    r = run("info", str(baskets), ok=False)
    assert r.exit_code == 2 and "pairs.csv looks like a table" in r.stderr
    r = run("--json", "info", str(baskets), "--as-baskets")
    assert '"n_transactions": 11' in r.stdout
    out = tmp_path / "pairs"
    run("convert", str(baskets), str(out), "--as-baskets")
    assert run("--json", "info", str(out)).exit_code == 0  # the converted dataset is baskets by its manifest
    # a release made with the override is verified against its original with it too: the flag
    # reaches the reader that verify calls inside the job
    rel = tmp_path / "rel"
    run("emask", "distort", str(baskets), str(rel), "--p", "0.5", "--q", "0.9", "--allow-weak", "--no-report", "--as-baskets")
    r = run("verify", str(rel), "--original", str(baskets), ok=False)
    assert r.exit_code == 2 and "pairs.csv looks like a table" in r.stderr
    assert "verified" in run("verify", str(rel), "--original", str(baskets), "--as-baskets").stdout


def test_a_table_release_is_refused_by_basket_commands(tmp_path):
    rel = tmp_path / "rel"
    run("condense", str(SAMPLES / "ecoli.csv"), str(rel), "--columns", "mcg,gvh,lip", "--privacy-level", "4", "--no-report")
    r = run("mine", str(rel), "--min-support", "0.5", ok=False)
    assert r.exit_code == 2 and f"{rel} is a table, not baskets (a ppdm-condensed dataset)" in r.stderr
    assert TABLE_COMMANDS in r.stderr and "--as-baskets" not in r.stderr


TABLE_CMDS = {
    "anonymize": ["anonymize", "{in}", "{out}", "--qi", "1", "--k", "2"],
    "access-control": ["access-control", "{in}", "--permissions", "{perm}", "--qi", "1", "--k", "2"],
    "condense": ["condense", "{in}", "{out}", "--privacy-level", "4"],
}


@pytest.mark.parametrize("name", sorted(TABLE_CMDS))
def test_table_commands_refuse_baskets(tmp_path, name):
    (tmp_path / "input").mkdir()
    tx = tmp_path / "input" / "mushroom"
    run("convert", str(sample_path("mushroom")), str(tx))
    basket_csv = tmp_path / "input" / "baskets.csv"
    basket_csv.write_text("1,3,9\n2,3\n4,5,9,11\n")
    for src, why in (
        (str(sample_path("mushroom")), "FIMI lines of 23 item ids each"),
        (str(tx), "a ppdm-transactions dataset"),
        (str(basket_csv), "lines of 2 to 4 items separated by ',' and no header row"),
    ):
        argv = [
            a.format(**{"in": src, "out": str(tmp_path / "out"), "perm": str(SAMPLES / "adult_permissions.json")})
            for a in TABLE_CMDS[name]
        ]
        line = _one_error(run(*argv, ok=False), tmp_path)
        assert f"{src} holds baskets, not a table ({why})" in line and BASKET_COMMANDS in line, line

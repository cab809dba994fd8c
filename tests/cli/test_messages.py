"""Messages of refused runs name the flag the user typed, never only the library's parameter.

* Numeric options refuse ``nan``, ``inf`` and values out of their range at parsing time (click's
  own float types let NaN through every range check).
* A library error about a parameter (``k=5000 is larger than ...``) gets the command's flag
  (``(--k)``), or carries its own command-line fix.
* Runaway sizes (partitions, rows, components, neighbours) are refused with the flag that bounds
  them instead of a MemoryError.
* Side files (hierarchy, permissions) and table CSVs are named in their errors; two outputs of
  one job at one path are refused before any work; a tampered release's report names the check.
"""

from __future__ import annotations

import json
import shutil

import click
import pytest

from ppdm_dask.cli import cli, main
from ppdm_dask.cli._errors import with_flag
from ppdm_dask.data.datasets import sample_path

HUGE = "1000000000000"
ROLES = ["--identifier", "name", "--qi", "age,sex,zip", "--sensitive", "diagnosis"]


def _ppdm(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["--scheduler", "sync", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _refused(capsys, *argv: str) -> str:
    """The one error line of a run that must be refused with exit 2."""
    code, out, err = _ppdm(capsys, *argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("ppdm: error: "), (code, err)
    assert "Error:" not in lines[0] and "Traceback" not in err, lines[0]
    return lines[0]


def _args(name: str, tmp_path) -> list[str]:
    tx, people, ecoli = str(sample_path("iris")), str(sample_path("people")), str(sample_path("ecoli"))
    perms = str(sample_path("adult").parent / "adult_permissions.json")
    return {
        "emask choose": ["emask", "choose"],
        "emask distort": ["emask", "distort", tx, str(tmp_path / "rel"), "--p", "0.5", "--q", "0.97", "--allow-weak"],
        "emask mine": ["emask", "mine", tx, "--p", "0.5", "--q", "0.97", "--min-support", "0.5"],
        "mine": ["mine", tx, "--min-support", "0.5", "--rules"],
        "sketch": ["sketch", tx, str(tmp_path / "rel")],
        "anonymize": ["anonymize", people, str(tmp_path / "rel"), *ROLES, "--k", "5", "--method", "mondrian"],
        "access-control": [
            "access-control",
            str(sample_path("adult")),
            "--permissions",
            perms,
            "--qi",
            "sex,age,race",
            "--sensitive",
            "salary-class",
            "--k",
            "10",
            "--dtype",
            "age=int",
        ],
        "krimp generate": ["krimp", "generate", tx, str(tmp_path / "rel"), "--min-count", "2"],
        "condense": ["condense", ecoli, str(tmp_path / "rel"), "--columns", "mcg,gvh"],
    }[name]


NUMBERS = [
    ("emask choose", "--s0", "nan"),
    ("emask choose", "--s0", "0"),
    ("emask choose", "--privacy-floor", "nan"),
    ("emask choose", "--q-min", "nan"),
    ("emask choose", "--min-support", "nan"),
    ("emask distort", "--p", "nan"),
    ("emask distort", "--q", "inf"),
    ("emask distort", "--p", "-1"),
    ("emask mine", "--prune-margin", "nan"),
    ("mine", "--min-confidence", "nan"),
    ("sketch", "--delta", "nan"),
    ("sketch", "--delta", "0"),
    ("sketch", "--delta", "inf"),
    ("anonymize", "--l", "nan"),
    ("anonymize", "--l", "0"),
    ("anonymize", "--c", "-1"),
    ("anonymize", "--max-suppression", "nan"),
    ("access-control", "--c", "nan"),
    ("krimp generate", "--laplace", "nan"),
]


@pytest.mark.parametrize("name,flag,value", NUMBERS, ids=[f"{n} {f} {v}" for n, f, v in NUMBERS])
def test_numbers_out_of_range_or_not_finite_are_refused_naming_the_flag(capsys, tmp_path, name, flag, value):
    line = _refused(capsys, *_args(name, tmp_path), flag, value)
    assert flag in line and value.lstrip("-") in line
    assert not (tmp_path / "rel").exists()


SIZES = [
    ("anonymize", ["--k", "5000"], "--k", "larger than the number of records"),
    ("sketch", ["--k", HUGE], "--k", "must be smaller than the number of records (150)"),
    ("sketch", ["--delta", "0.5", "--m-max", HUGE], "--m-max", "more than a sketch block holds"),
    ("krimp generate", ["--rows", HUGE], "--rows", "partitions, more than the 1,000,000"),
    ("condense", ["--privacy-level", "5000"], "--privacy-level", "only 336 records"),
    ("anonymize", ["--l", "50"], "--l", "not distinct 50-diverse"),
]


@pytest.mark.parametrize("name,extra,flag,message", SIZES, ids=[f"{n} {f}" for n, _, f, _ in SIZES])
def test_library_refusals_name_the_flag(capsys, tmp_path, name, extra, flag, message):
    line = _refused(capsys, *_args(name, tmp_path), *extra)
    assert flag in line and message in line, line
    assert "MemoryError" not in line and not (tmp_path / "rel").exists()


def test_runaway_partition_counts_are_refused(capsys, tmp_path):
    line = _refused(capsys, "convert", str(sample_path("iris")), str(tmp_path / "out"), "--partitions", HUGE)
    assert "--partitions <= 150" in line
    line = _refused(capsys, "generate", "quest", "T5.I2.D1000000000000.N50", str(tmp_path / "q"))
    assert "--partition-rows" in line and "partitions" in line
    line = _refused(
        capsys, "sketch", "evaluate", str(sample_path("iris")), "--delta", "0.5", "--task", "cluster", "--clusters", HUGE
    )
    assert "--clusters" in line
    assert not any(tmp_path.iterdir())


def test_with_flag_uses_the_leaf_commands_options_only():
    """The library's name is mapped through the options of the command that ran, so ``k`` of
    ``sketch evaluate`` is its ``--k`` and a name no option has is left alone."""

    def fail_in(*path: str, message: str) -> str:
        group = cli
        ctx = click.Context(cli)
        for p in path:
            group = group.get_command(ctx, p)  # the group loads a command's module when asked for it
        leaf_ctx = click.Context(group, parent=ctx)

        def run(ctx: click.Context) -> None:  # noqa: ARG001 - found on the traceback, as in click's invoke
            raise ValueError(message)

        try:
            run(leaf_ctx)
        except ValueError as exc:
            return with_flag(ctx, exc, message)
        raise AssertionError

    assert fail_in("emask", "choose", message="s0 must lie in (0, 1)").endswith("(--s0)")
    assert fail_in("anonymize", message="k=9 is larger than the number of records (3)").endswith("(--k)")
    assert fail_in("anonymize", message="records must be many") == "records must be many"
    assert fail_in("info", message="k=9 is larger") == "k=9 is larger"


def test_hierarchy_and_permission_files_are_named(capsys, tmp_path):
    bms = str(sample_path("bms-webview-1-5k"))
    short = tmp_path / "short_h.csv"
    short.write_text("10311;*\n12487;*\n")
    line = _refused(capsys, "km-anonymize", bms, str(tmp_path / "rel"), "--k", "5", "--hierarchy", str(short))
    assert "short_h.csv" in line and "no path to the root" in line
    folder = tmp_path / "h_dir.csv"
    folder.mkdir()
    line = _refused(capsys, "km-anonymize", bms, str(tmp_path / "rel"), "--k", "5", "--hierarchy", str(folder))
    assert "h_dir.csv is a folder" in line and "--hierarchy" in line
    binary = tmp_path / "h_bin.csv"
    binary.write_bytes(b"\x9d\x00\xff;*\n")
    line = _refused(
        capsys, "anonymize", str(sample_path("people")), str(tmp_path / "rel"), *ROLES, "--k", "5", "--hierarchy", f"sex={binary}"
    )
    assert "h_bin.csv is not UTF-8" in line
    shape = tmp_path / "perms.json"
    shape.write_text(json.dumps([1, 2]))
    line = _refused(
        capsys, *_args("access-control", tmp_path)[:2], "--permissions", str(shape), *_args("access-control", tmp_path)[4:]
    )
    assert "perms.json" in line and "permission 0 must be a mapping" in line and "--permissions" in line
    assert not (tmp_path / "rel").exists()


def test_table_csv_with_a_short_row_is_refused(capsys, tmp_path):
    ecoli = sample_path("ecoli").read_text().splitlines()
    ecoli[5] = ecoli[5].rsplit(",", 1)[0]  # drop the last field of one row
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("\n".join(ecoli) + "\n")
    line = _refused(capsys, "condense", str(ragged), str(tmp_path / "rel"), "--columns", "mcg,gvh", "--privacy-level", "3")
    assert "ragged.csv: a row does not match the header" in line
    assert not (tmp_path / "rel").exists()


def test_two_outputs_at_one_path_are_refused_before_work(capsys, tmp_path):
    same = str(tmp_path / "itemsets.parquet")
    line = _refused(
        capsys, "mine", str(sample_path("iris")), "--min-support", "0.5", "--rules", "--out", same, "--rules-out", same
    )
    assert "same location" in line and "itemsets.parquet" in line
    assert not any(tmp_path.iterdir())


def test_emask_audit_of_plain_data_asks_for_p_and_q(capsys, tmp_path):
    tx = str(sample_path("iris"))
    line = _refused(capsys, "emask", "audit", tx, tx)
    assert "is not an EMASK release" in line and "--p and --q" in line


def test_report_of_a_tampered_release_names_the_failing_check(capsys, tmp_path):
    rel = tmp_path / "rel"
    code, _, err = _ppdm(
        capsys, "anonymize", str(sample_path("people")), str(rel), *ROLES, "--k", "5", "--method", "mondrian", "--no-report"
    )
    assert code == 0, err
    part = next(rel.glob("part-*.parquet"))
    manifest = json.loads((rel / "_SUCCESS").read_text())
    entry = next(e for e in manifest["partitions"] if e["file"] == part.name)
    entry["sha256"] = "0" * 64  # the part no longer matches its recorded checksum (still readable)
    (rel / "_SUCCESS").write_text(json.dumps(manifest))
    line = _refused(capsys, "report", str(rel), "--out", str(tmp_path / "rep"))
    assert str(rel) in line and "fails its independent check: FAILED" in line and part.name in line
    assert (tmp_path / "rep" / "report.html").exists()


def test_a_report_that_cannot_be_made_does_not_fail_a_committed_release(capsys, tmp_path, monkeypatch):
    from ppdm_dask.errors import InvalidParameter
    from ppdm_dask.release import base

    def broken(self, *a, **k):
        raise InvalidParameter("no figures today")

    monkeypatch.setattr(base.Release, "report", broken)
    rel = tmp_path / "rel"
    code, out, err = _ppdm(capsys, "anonymize", str(sample_path("people")), str(rel), *ROLES, "--k", "5", "--method", "mondrian")
    assert code == 0 and (rel / "_SUCCESS").exists()
    assert "ppdm: warning:" in err and "no figures today" in err and "ppdm report" in err
    shutil.rmtree(rel)

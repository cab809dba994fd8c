"""Every subcommand fails the same way on bad input: one ``ppdm: error:`` line on stderr that names
the path or option at fault, nothing on stdout, a non-zero exit — for a missing input, a bad
option and an output that already exists (refused before any work)."""

from __future__ import annotations

import pytest

from ppdm_dask.cli import main
from ppdm_dask.data.datasets import sample_path

MISSING = "/no/such/input.dat"
MISSING_CSV = "/no/such/table.csv"


def _inputs() -> dict[str, str]:
    return {
        "tx": str(sample_path("iris")),
        "people": str(sample_path("people")),
        "ecoli": str(sample_path("ecoli")),
        "bms": str(sample_path("bms-webview-1-5k")),
        "perms": str(sample_path("adult").parent / "adult_permissions.json"),
        "adult": str(sample_path("adult")),
    }


ROLES = ["--identifier", "name", "--qi", "age,sex,zip", "--sensitive", "diagnosis"]

#: name -> (argv with {in} for the input and {out} for the output; the input kind)
COMMANDS = {
    "info": (["info", "{in}"], "tx"),
    "convert": (["convert", "{in}", "{out}"], "tx"),
    "mine": (["mine", "{in}", "--min-support", "0.5", "--out", "{out}"], "tx"),
    "emask choose": (["emask", "choose", "--data", "{in}"], "tx"),
    "emask distort": (["emask", "distort", "{in}", "{out}", "--p", "0.5", "--q", "0.97", "--allow-weak"], "tx"),
    "emask mine": (["emask", "mine", "{in}", "--p", "0.5", "--q", "0.97", "--min-support", "0.5", "--out", "{out}"], "tx"),
    "emask audit": (["emask", "audit", "{in}", "{in}", "--p", "0.5", "--q", "0.97"], "tx"),
    "sketch": (["sketch", "{in}", "{out}", "--delta", "0.5"], "tx"),
    "sketch evaluate": (["sketch", "evaluate", "{in}", "--delta", "0.5", "--task", "cluster"], "tx"),
    "condense": (["condense", "{in}", "{out}", "--columns", "mcg,gvh", "--privacy-level", "3"], "ecoli"),
    "anonymize": (["anonymize", "{in}", "{out}", *ROLES, "--k", "5", "--method", "mondrian"], "people"),
    "access-control": (
        [
            "access-control",
            "{in}",
            "--permissions",
            "{perms}",
            "--qi",
            "sex,age,race,marital-status,education,native-country,workclass,occupation",
            "--sensitive",
            "salary-class",
            "--k",
            "10",
            "--dtype",
            "age=int",
            "--out",
            "{out}",
        ],
        "adult",
    ),
    "km-anonymize": (["km-anonymize", "{in}", "{out}", "--k", "5", "--fan-out", "5"], "bms"),
    "krimp compress": (["krimp", "compress", "{in}", "--min-count", "2", "--out", "{out}"], "tx"),
    "krimp generate": (["krimp", "generate", "{in}", "{out}", "--min-count", "2"], "tx"),
    "krimp ds": (["krimp", "ds", "{in}", "{in}", "--min-count", "2"], "tx"),
    "verify": (["verify", "{in}"], "tx"),
    "report": (["report", "{in}"], "tx"),
}
#: a bad option value per command (the option named in the message)
BAD_OPTION = {
    "info": ("--format", "xml"),
    "convert": ("--partitions", "0"),
    "mine": ("--min-support", "lots"),
    "emask choose": ("--s0", "x"),
    "emask distort": ("--p", "two"),
    "emask mine": ("--max-length", "0"),
    "emask audit": ("--min-support", "x"),
    "sketch": ("--m-max", "0"),
    "sketch evaluate": ("--neighbors", "0"),
    "condense": ("--privacy-level", "0"),
    "anonymize": ("--k", "zero"),
    "access-control": ("--l-kind", "best"),
    "km-anonymize": ("--m", "0"),
    "krimp compress": ("--max-len", "1"),
    "krimp generate": ("--laplace", "-1"),
    "krimp ds": ("--max-candidates", "0"),
    "verify": ("--bogus", None),
    "report": ("--audience", "everyone"),
}


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["--scheduler", "sync", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _argv(name: str, src: str, out: str) -> list[str]:
    ins = _inputs()
    return [a.format(**{"in": src, "out": out, "perms": ins["perms"]}) for a in COMMANDS[name][0]]


def _one_line(code: int, out: str, err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0, err
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), err
    assert out == "", out
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_missing_input(name, capsys, tmp_path):
    missing = MISSING_CSV if COMMANDS[name][1] in ("people", "ecoli", "adult") else MISSING
    _one_line(*_run(capsys, _argv(name, missing, str(tmp_path / "out"))), missing)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_bad_option(name, capsys, tmp_path):
    option, value = BAD_OPTION[name]
    argv = _argv(name, _inputs()[COMMANDS[name][1]], str(tmp_path / "out")) + ([option, value] if value is not None else [option])
    _one_line(*_run(capsys, argv), option)


OUTPUTS = [n for n, (argv, _) in COMMANDS.items() if "{out}" in argv]


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_existing_output_refused_before_work(name, capsys, tmp_path):
    out = tmp_path / "exists"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    _one_line(*_run(capsys, _argv(name, _inputs()[COMMANDS[name][1]], str(out))), str(out), "already exists", "--overwrite")
    assert (out / "precious.txt").read_text() == "keep me"


def test_demo_existing_output(capsys, tmp_path):
    (tmp_path / "people_release").mkdir()
    _one_line(*_run(capsys, ["demo", "--rows", "10000", "--out", str(tmp_path)]), "people_release", "already exists")


def test_samples_unknown(capsys):
    _one_line(*_run(capsys, ["samples", "--copy", "nope"]), "nope", "ppdm samples")


def test_generate_quest_bad_spec(capsys, tmp_path):
    _one_line(*_run(capsys, ["generate", "quest", "X10.Y4", str(tmp_path / "q")]), "X10.Y4")

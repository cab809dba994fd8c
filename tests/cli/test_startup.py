"""A command line that starts at once: ``import ppdm_dask``, ``ppdm --help``/``--version`` and usage
errors load none of the heavy libraries; commands are registered once (``cli/commands.py``) and
imported when they run; a missing input fails before any LocalCluster starts; the scheduler's
shuffle notes stay off stderr unless ``--debug``.

The module checks run in fresh interpreters (``sys.modules`` of this test process holds whatever
earlier tests loaded); no timing is asserted here (``benchmarks/bench_startup.py`` times them).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import ppdm_dask
import ppdm_dask.cli as cli_package
from ppdm_dask.cli import cli
from ppdm_dask.cli.commands import LazyGroup, load_command, table
from ppdm_dask.data.datasets import sample_files, sample_path

#: what the command line must not load before the work starts (the issue's list)
HEAVY = ("dask.array", "dask.dataframe", "pandas", "numba", "scipy", "matplotlib")

ROOT = Path(ppdm_dask.__file__).resolve().parents[1]  # this checkout, also for the subprocesses

PROBE = """
import sys
{body}
heavy = {heavy!r}
print("LOADED", sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)), file=sys.stderr)
"""

RUN_CLI = """
from ppdm_dask.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    print("EXIT", exc.code, file=sys.stderr)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PPDM_SCHEDULER"}  # the default scheduler: a LocalCluster
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def probe(body: str, *args: str, heavy: tuple[str, ...] = HEAVY) -> tuple[list[str], str]:
    """Run ``body`` in a fresh interpreter; the heavy modules it left loaded, and its stderr."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body, heavy=heavy), *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")][-1]
    return eval(line[len("LOADED ") :]), proc.stderr  # noqa: S307 - our own repr of a list of str


def test_import_loads_no_heavy_library():
    loaded, _ = probe("import ppdm_dask")
    assert loaded == []


def test_the_probe_sees_a_heavy_import():
    """Control: the first use of a public name loads its module (and what it needs)."""
    loaded, _ = probe("import ppdm_dask; ppdm_dask.TransactionArray")
    assert "numba" in loaded and "scipy" in loaded


@pytest.mark.parametrize(
    "args,code",
    [
        (["--help"], 0),
        (["--version"], 0),
        (["mine", "--help"], 0),
        (["verify", "--help"], 0),
        (["mine", "x.dat", "--min-support"], 2),  # the option's value is missing
        (["mine", "x.dat"], 2),  # neither --min-support nor --min-count
        (["mine", "--no-such-flag"], 2),
        (["no-such-command"], 2),
    ],
)
def test_help_version_and_usage_errors_load_no_heavy_library(args, code):
    loaded, err = probe(RUN_CLI, *args)
    assert f"EXIT {code}" in err, err
    assert loaded == [], (args, loaded)


@pytest.mark.parametrize("name", sorted(table()))
def test_every_commands_help_loads_no_heavy_library(name):
    """``ppdm CMD --help`` imports the command's module and the choices of its options only."""
    loaded, err = probe(RUN_CLI, name, "--help")
    assert "EXIT 0" in err, err
    assert loaded == [], (name, loaded)


def test_missing_input_fails_before_anything_heavy_is_loaded():
    """``ppdm mine`` on the default scheduler (a LocalCluster): the missing input is the one
    error line, and not even ``distributed`` was imported, so no cluster can have started."""
    loaded, err = probe(RUN_CLI, "mine", "/no/such/file.dat", "--min-support", "0.1", heavy=(*HEAVY, "distributed"))
    assert "EXIT 2" in err and "ppdm: error: no such file or folder: /no/such/file.dat" in err, err
    assert loaded == []


@pytest.fixture
def cluster_spy(monkeypatch):
    """Every LocalCluster about to be created is recorded and refused (none is started)."""
    import distributed

    made: list[dict] = []

    def refuse(self, *args, **kwargs):
        made.append(kwargs)
        raise RuntimeError("a LocalCluster was started")

    monkeypatch.setattr(distributed.LocalCluster, "__init__", refuse)
    return made


def _default_scheduler(*args: str):
    return CliRunner().invoke(cli, ["--no-progress", "--no-ledger", *args], env={"PPDM_SCHEDULER": None})


def test_missing_input_starts_no_local_cluster(cluster_spy, tmp_path):
    people, _, _ = sample_files("people")
    missing = tmp_path / "no-such.csv"
    r = _default_scheduler("anonymize", str(missing), str(tmp_path / "out"), "--qi", "age,sex", "--k", "5")
    assert r.exit_code == 2 and f"no such file or folder: {missing}" in r.output, r.output
    assert cluster_spy == []
    # a missing second input (verify's --original) too, and a missing input of a command group
    r = _default_scheduler("verify", str(people), "--original", str(missing))
    assert r.exit_code == 2 and str(missing) in r.output and cluster_spy == []
    r = _default_scheduler("emask", "distort", str(tmp_path / "no.dat"), str(tmp_path / "d"), "--p", "0.6", "--q", "0.96")
    assert r.exit_code == 2 and "no.dat" in r.output and cluster_spy == []
    assert not (tmp_path / "out").exists() and not (tmp_path / "d").exists()


def test_the_spy_sees_a_job_that_starts_a_cluster(cluster_spy):
    """Control: an existing input on the default scheduler does reach the LocalCluster."""
    r = _default_scheduler("info", str(sample_path("chess")))
    assert r.exit_code == 1 and "a LocalCluster was started" in r.output
    assert len(cluster_spy) == 1
    # the client whose cluster failed to start is not left behind as the process's default
    import distributed

    with pytest.raises(ValueError):
        distributed.default_client()


def test_contradicting_ledger_flags_are_refused_before_the_job(cluster_spy, tmp_path):
    r = CliRunner().invoke(
        cli, ["--ledger", str(tmp_path / "l"), "--no-ledger", "info", str(sample_path("chess"))], env={"PPDM_SCHEDULER": None}
    )
    assert r.exit_code == 2 and "--ledger and --no-ledger" in r.output and cluster_spy == []


# ---------------------------------------------------------------------- one table of commands
def test_every_table_entry_is_the_command_it_names():
    for name, (module, attribute, text) in table().items():
        command = load_command(name)
        assert isinstance(command, click.Command) and command.name == name, (name, module, attribute)
        assert command.get_short_help_str(limit=10**6) == text, f"the one-line help of {name!r} differs from its docstring"


def _defined_commands() -> set[tuple[str, str]]:
    """(module, attribute) of every top-level click command of the ``cli`` modules that is not a
    sub-command of a group."""
    found: set[tuple[str, str]] = set()
    for info in pkgutil.iter_modules(cli_package.__path__):
        if info.name.startswith("_") or info.name == "commands":
            continue
        module = importlib.import_module(f"{cli_package.__name__}.{info.name}")
        commands = {attr: obj for attr, obj in vars(module).items() if isinstance(obj, click.Command)}
        nested = {id(sub) for obj in commands.values() if isinstance(obj, click.Group) for sub in obj.commands.values()}
        found |= {(module.__name__, attr) for attr, obj in commands.items() if id(obj) not in nested}
    return found


def test_every_command_module_is_registered_in_the_table():
    assert _defined_commands() == {(module, attribute) for module, attribute, _ in table().values()}


def test_help_lists_the_table():
    r = CliRunner().invoke(cli, ["--help"], terminal_width=300)
    assert r.exit_code == 0
    rows = [line.split(None, 1) for line in r.output.split("Commands:\n")[1].splitlines() if line.strip()]
    assert [name for name, _ in rows] == sorted(table())
    for name, text in rows:  # shortened at the width as click shortens a command's own help
        assert text == load_command(name).get_short_help_str(limit=300 - 6 - max(map(len, table()))), name


def toy() -> None:
    """Say hello. Only this first sentence is the one-line help."""
    click.echo("hello from the toy")


toy_command = click.command("toy")(toy)


def test_a_group_loads_commands_from_another_table():
    """What a registry of families does: a table of its own (module, attribute, help)."""
    table = {"toy": (__name__, "toy_command", "Say hello.")}
    group = LazyGroup("x", table=table)
    r = CliRunner().invoke(group, ["--help"])
    assert r.exit_code == 0 and "toy  Say hello." in r.output
    r = CliRunner().invoke(group, ["toy"])
    assert r.exit_code == 0 and r.output == "hello from the toy\n"
    assert group.get_command(click.Context(group), "nope") is None


# ---------------------------------------------------------------------- the package's names
def test_public_names_resolve_to_their_modules():
    from ppdm_dask import errors, io, random, release, verification
    from ppdm_dask.data import tables, transactions, vocabulary

    assert set(ppdm_dask.__all__) <= set(dir(ppdm_dask))
    expected = {
        "TransactionArray": transactions,
        "Vocabulary": vocabulary,
        "Key": random,
        "as_key": random,
        "read": io,
        "read_table": tables,
        "Release": release,
        "Roles": release,
        "Verdict": release,
        "Check": release,
        "verify": verification,
        "open_release": verification,
    }
    assert set(expected) | {"errors", "__version__"} == set(ppdm_dask.__all__)
    for name, module in expected.items():
        assert getattr(ppdm_dask, name) is getattr(module, name)
    assert ppdm_dask.errors is errors and isinstance(ppdm_dask.__version__, str)
    with pytest.raises(AttributeError, match="no_such_name"):
        ppdm_dask.no_such_name  # noqa: B018
    namespace: dict[str, object] = {}
    exec("from ppdm_dask import *", namespace)  # noqa: S102 - every name of __all__ is importable
    assert set(ppdm_dask.__all__) <= set(namespace)


def test_arrow_exit_wait_is_registered_at_import():
    """The exit wait for Arrow's threads (ppdm_dask.arrow_threads) is registered by ``import
    ppdm_dask`` itself, without pyarrow being imported."""
    loaded, err = probe(
        "import ppdm_dask.arrow_threads as a, ppdm_dask; print('REGISTERED', a._REGISTERED, file=sys.stderr)", heavy=("pyarrow",)
    )
    assert "REGISTERED [<function settle_arrow_threads" in err and loaded == []


# ---------------------------------------------------------------------- shuffle notes
@pytest.mark.cluster
def test_relational_job_prints_no_shuffle_notes(tmp_path):
    """``ppdm verify --original`` of a table release on the default LocalCluster shuffles (its
    P2P shuffles printed eight WARNING lines of distributed.shuffle); they stay off stderr, and
    show with --debug (the control: the job does shuffle)."""
    people, zips, _ = sample_files("people")
    rel = tmp_path / "people_release"
    made = CliRunner().invoke(
        cli,
        [
            "--scheduler",
            "sync",
            "--no-progress",
            "--no-ledger",
            "anonymize",
            str(people),
            str(rel),
            "--identifier",
            "name",
            "--qi",
            "age,sex,zip",
            "--sensitive",
            "diagnosis",
            "--k",
            "5",
            "--l",
            "2",
            "--method",
            "mondrian",
            "--hierarchy",
            f"zip={zips}",
            "--dtype",
            "age=int",
            "--no-report",
        ],
    )
    assert made.exit_code == 0, made.output

    def verify(*flags: str) -> subprocess.CompletedProcess:
        cmd = [
            sys.executable,
            "-m",
            "ppdm_dask.cli",
            "--workers",
            "2",
            "--no-progress",
            *flags,
            "verify",
            str(rel),
            "--original",
            str(people),
            "--dtype",
            "age=int",
        ]
        return subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=600)

    quiet = verify()
    assert quiet.returncode == 0, quiet.stderr
    assert "distributed.shuffle" not in quiet.stderr and "Shuffle" not in quiet.stderr, quiet.stderr
    loud = verify("--debug")
    assert loud.returncode == 0 and "distributed.shuffle" in loud.stderr, loud.stderr

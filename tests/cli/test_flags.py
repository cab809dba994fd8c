"""The command line's one table of flags (:mod:`ppdm_dask.cli.flags`) against the library's
errors and the commands' options: every parameter name an error can carry has a flag that some
``ppdm`` command takes (or is declared library-only), and the library spells no flag itself."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import click
import pytest

import ppdm_dask
from ppdm_dask.base import Estimator
from ppdm_dask.cli import cli
from ppdm_dask.cli.flags import FLAGS, LIBRARY_ONLY, cli_message, flag_of
from ppdm_dask.errors import InvalidParameter, PPDMError

PKG = Path(ppdm_dask.__file__).resolve().parent
NAMED = re.compile(r"(?<!`)`([A-Za-z_][A-Za-z0-9_]*)`(?!`)")


def _trees() -> list[tuple[Path, ast.AST]]:
    return [(p, ast.parse(p.read_text())) for p in sorted(PKG.rglob("*.py"))]


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _names_in_sources() -> dict[str, str]:
    """Every parameter name an error is raised with, read from the source: ``parameter=``
    keywords, the `names` of ``fix=`` texts and the names given to ``constraints.check``."""
    out: dict[str, str] = {}
    for path, tree in _trees():
        where = str(path.relative_to(PKG.parent))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg == "parameter" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    out.setdefault(kw.value.value, where)
                elif kw.arg == "fix":
                    for text in _strings(kw.value):
                        for name in NAMED.findall(text):
                            out.setdefault(name, where)
            fn = node.func
            if (
                isinstance(fn, ast.Name)
                and fn.id == "check"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                out.setdefault(node.args[0].value, where)
        for node in ast.walk(tree):  # fix texts kept in a variable first (fix = "raise `min_support` ...")
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "fix" for t in node.targets):
                for text in _strings(node.value):
                    for name in NAMED.findall(text):
                        out.setdefault(name, where)
    return out


def _names_in_constraints() -> dict[str, str]:
    """Every name of a declared constraint table: each estimator's ``_parameter_constraints``
    and each module's ``*_CONSTRAINTS`` mapping (imported, so computed tables count too)."""
    out: dict[str, str] = {}
    for info in pkgutil.walk_packages(ppdm_dask.__path__, "ppdm_dask."):
        if ".cli" in info.name:
            continue
        mod = importlib.import_module(info.name)
        for attr, value in vars(mod).items():
            if attr.endswith("_CONSTRAINTS") and isinstance(value, dict):
                for name in value:
                    out.setdefault(name, f"{info.name}.{attr}")
            if isinstance(value, type) and issubclass(value, Estimator):
                for name in value._parameter_constraints:
                    out.setdefault(name, f"{value.__name__}._parameter_constraints")
    return out


def _command_options() -> dict[str, set[str]]:
    """Every flag of every ``ppdm`` command (both spellings of an on/off pair), with the
    commands that take it."""
    flags: dict[str, set[str]] = {}

    def walk(cmd: click.Command, path: str) -> None:
        for p in cmd.params:
            if isinstance(p, click.Option):
                for opt in (*p.opts, *p.secondary_opts):
                    flags.setdefault(opt, set()).add(path)
        if isinstance(cmd, click.Group):  # ppdm loads its commands lazily: ask the group for each
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, f"{path} {name}")

    walk(cli, "ppdm")
    return flags


def test_every_parameter_an_error_names_has_a_flag_or_is_library_only():
    names = {**_names_in_constraints(), **_names_in_sources()}
    assert len(names) > 40  # the scan sees the library's errors (a broken scan finds nothing)
    missing = sorted(f"{n} ({where})" for n, where in names.items() if n not in FLAGS and n not in LIBRARY_ONLY)
    assert not missing, "names without a flag in ppdm_dask/cli/flags.py: " + ", ".join(missing)
    stale = sorted((set(FLAGS) | LIBRARY_ONLY) - set(names))
    assert not stale, f"entries of ppdm_dask/cli/flags.py that no error carries: {stale}"


def test_every_flag_of_the_table_exists_on_some_command():
    options = _command_options()
    absent = sorted(f"{name} -> {flag}" for name, flag in FLAGS.items() if flag not in options)
    assert not absent, absent
    assert not set(FLAGS) & LIBRARY_ONLY


def test_library_only_names_are_set_by_no_command():
    options = _command_options()
    dests: set[str] = set()

    def walk(cmd: click.Command) -> None:
        dests.update(p.name for p in cmd.params if isinstance(p, click.Option))
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub)

    walk(cli)
    assert not {n for n in LIBRARY_ONLY if n in dests or "--" + n.replace("_", "-") in options}


def test_the_library_spells_no_flag():
    bad = []
    for path, tree in _trees():
        if path.relative_to(PKG).parts[0] == "cli":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg in ("cli", "python", "fix", "parameter", "flag") and any(
                        re.search(r"(^|\s)--[a-z]", s) for s in _strings(kw.value)
                    ):
                        bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {kw.arg}=")
    assert not bad, bad


def test_message_names_the_parameter_for_python_and_the_flag_for_the_command_line():
    e = InvalidParameter(
        "too many itemsets", python="raise min_support", fix="raise `min_support` or `min_count`, set `max_length`"
    )
    assert str(e) == "too many itemsets (raise min_support)"
    assert cli_message(e) == "too many itemsets (raise --min-support or --min-count, set --max-length)"
    e = InvalidParameter("k must be an integer >= 1, got 0", parameter="k")
    assert str(e) == "k must be an integer >= 1, got 0" and cli_message(e) == "k must be an integer >= 1, got 0 (--k)"
    e = InvalidParameter("ledger at /x is read-only", fix="`ledger` URL elsewhere, or `no_ledger`")
    assert str(e) == "ledger at /x is read-only (ledger URL elsewhere, or no_ledger)"
    assert cli_message(e) == "ledger at /x is read-only (--ledger URL elsewhere, or --no-ledger)"
    assert cli_message(PPDMError("no such sample", cli="ppdm samples")) == "no such sample (ppdm samples)"
    assert flag_of("quasi_identifiers") == "--qi" and flag_of("block_rows") == "block_rows"


def test_hints_survive_a_process_boundary():
    import pickle

    e = InvalidParameter("bad", python="p + q != 1", parameter="p", fix="`p` and `q` with p + q != 1")
    back = pickle.loads(pickle.dumps(e))
    assert (back.python, back.parameter, back.fix, cli_message(back)) == (
        e.python,
        "p",
        e.fix,
        "bad (--p and --q with p + q != 1)",
    )


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["emask", "distort", "IN", "OUT", "--p", "0.4", "--q", "0.6"], "(--p and --q with p + q != 1)"),
    ],
)
def test_a_library_refusal_on_the_command_line_names_the_flag(tmp_path, capsys, argv, flag):
    from ppdm_dask.cli import main

    src = tmp_path / "in.dat"
    src.write_text("1 2\n2 3\n")
    argv = [str(src) if a == "IN" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    with pytest.raises(SystemExit) as e:
        main(["--scheduler", "sync", *argv])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2 and line.startswith("ppdm: error: p + q = 1") and line.endswith(flag)

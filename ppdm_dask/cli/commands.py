"""The commands of ``ppdm``, in one table, and the group that loads each one only when it runs.

A command is registered here and nowhere else: its name, the module and attribute of its click
command, and its one-line help (the first sentence of its docstring, kept equal by a test). The
group lists and describes the commands from the table, so ``ppdm --help``, ``ppdm --version``
and a usage error import no command module; ``ppdm mine ...`` (or ``ppdm mine --help``) imports
:mod:`ppdm_dask.cli.mining` alone. The heavy libraries (Dask's collections, pandas, numba, scipy)
load with the work that needs them.

:data:`COMMANDS` holds the commands every installation has (data, mining, verify, report, the
ledger, the demo); a method family's commands come from its entry in the family registry
(:func:`ppdm_dask.families.cli_commands`), read at each use so that a family registered later
(a plug-in) appears too. :func:`table` is the two together.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

__all__ = ["COMMANDS", "LazyGroup", "load_command", "table"]

#: the commands that belong to no method family: name -> (module, attribute of its click command
#: in the module, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "convert": ("ppdm_dask.cli.data", "convert", "Convert between FIMI, basket CSV and Parquet (atomic write)."),
    "demo": (
        "ppdm_dask.cli.demo",
        "demo",
        "Release a table with k-anonymity, release baskets with EMASK distortion, and mine the distorted baskets: "
        "what privacy was gained and what accuracy was kept, in words.",
    ),
    "generate": ("ppdm_dask.cli.data", "generate", "Synthetic data generators."),
    "ingest": (
        "ppdm_dask.cli.ingest",
        "ingest",
        "Group an event table (one row per user and item, optionally timed) into baskets: one per user, per "
        "session (--session-gap) or per time window (--window).",
    ),
    "info": ("ppdm_dask.cli.data", "info", "Rows, items, density and the length histogram of a dataset."),
    "ledger": ("ppdm_dask.cli.ledger", "ledger", "The release ledger: every release of an input, composed (docs/ledger.md)."),
    "mine": (
        "ppdm_dask.cli.mining",
        "mine",
        "Exact frequent itemsets (distributed Apriori) and, with --rules, association rules.",
    ),
    "report": (
        "ppdm_dask.cli.report",
        "report_cmd",
        "Write the privacy and utility report of RELEASE: report.json (validated against the schema shipped with "
        "ppdm) and one self-contained report.html with the figures.",
    ),
    "samples": ("ppdm_dask.cli.data", "samples", "List the data samples bundled with the package (or copy some with --copy)."),
    "verify": (
        "ppdm_dask.cli.verify",
        "verify_cmd",
        "Verify RELEASE: its manifest, the SHA-256 of every file, the privacy floors of its parameters and its "
        "guarantee recounted from the released data (k, l, k^m, group sizes, δ / k-variance conditions, suppressed "
        "records absent), and with --original the release against the original.",
    ),
}


def table() -> dict[str, tuple[str, str, str]]:
    """Every command of ``ppdm``: :data:`COMMANDS` and the registered families' commands (a family
    command may not take the name of another command)."""
    from ..families import cli_commands

    out = dict(COMMANDS)
    for name, entry in cli_commands().items():
        if name in out:
            raise ValueError(f"the family command {name!r} ({entry[0]}) takes the name of a ppdm command")
        out[name] = entry
    return out


def load_command(name: str, commands: Mapping[str, tuple[str, str, str]] | None = None) -> click.Command:
    """Import the module of command ``name`` and return its click command (``KeyError`` for a
    name the table does not hold)."""
    module, attribute, _ = (table() if commands is None else commands)[name]
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{module}.{attribute} is not a click command (the table of ppdm commands names it {name!r})")
    return command


class LazyGroup(click.Group):
    """A click group whose sub-commands come from a table (default :func:`table`: the commands
    and the registered families' commands) and are imported only when one of them is run or its
    help is asked for.

    Commands added with ``add_command`` or ``@group.command()`` work as in any group and take
    precedence over the table.
    """

    def __init__(self, *args: Any, table: Mapping[str, tuple[str, str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._table = table

    @property
    def table(self) -> Mapping[str, tuple[str, str, str]]:
        """The table of lazily loaded commands (read at each use: a family registered later
        appears too)."""
        return table() if self._table is None else self._table

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.table))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.table:
            self.add_command(load_command(cmd_name, self.table), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``, from the table's one-line helps (no command module is
        imported); shortened to the terminal width as click shortens a command's own help."""
        rows: list[tuple[str, str | None, click.Command | None]] = []
        for name in self.list_commands(ctx):
            loaded = self.commands.get(name)
            if loaded is not None:
                if not loaded.hidden:
                    rows.append((name, None, loaded))
            else:
                rows.append((name, self.table[name][2], None))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _, _ in rows)
        # a command not loaded is shortened by a stand-in that carries its help: click's own rule
        lines = [(name, (command or click.Command(name, help=text)).get_short_help_str(limit)) for name, text, command in rows]
        with formatter.section("Commands"):
            formatter.write_dl(lines)

"""Options declared once and shared by the commands (as click decorators)."""

from __future__ import annotations

from typing import Any, Callable

import click

FORMATS = ("parquet", "fimi", "csv")


def stack(*decorators: Callable) -> Callable:
    """One decorator that applies ``decorators`` in the order written."""
    def apply(fn: Callable) -> Callable:
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def split_list(text: str | None) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def support_value(text: str, flag: str = "--min-support") -> float | int:
    """``'0.003'`` or ``'3e-3'`` -> a fraction; ``'250'`` -> an absolute count."""
    t = str(text).strip()
    try:
        return int(t) if t.isdigit() else float(t)
    except ValueError:
        raise click.BadParameter(f"not a number: {text!r}", param_hint=flag) from None


#: ``--format``: input format of transaction data
input_format = click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                            help="Input format (default: from the extension; a folder is Parquet).")

#: ``--overwrite``
overwrite = click.option("--overwrite", is_flag=True, help="Replace an existing output (refused otherwise, before any work).")

#: options of every command that writes a release
release_output = stack(
    overwrite,
    click.option("--rows-per-file", type=click.IntRange(min=1), default=None,
                 help="Rows per output part file (default: the family's, ~100 MB per file)."),
    click.option("--allow-weak", is_flag=True,
                 help="Accept parameters below the privacy floors (e.g. k < 2, basic privacy < 90%); the override is recorded in the manifest."),
    click.option("--check/--no-check", default=True, show_default=True,
                 help="Read the written release back and recount its guarantee before committing it."),
    click.option("--report/--no-report", default=True, show_default=True,
                 help="Write the privacy and utility report (_report.html, _report.json) with the release."),
)

#: options of commands that read a relational table (CSV or Parquet)
table_input = stack(
    click.option("--sep", default=None, help="CSV field separator (default: sniffed from the file)."),
    click.option("--dtype", "dtype", multiple=True, metavar="COL=TYPE",
                 help="Column type (string, int, float, bool); CSV columns are strings unless typed. Repeatable."),
    click.option("--schema", default=None, metavar="FILE", help="JSON file of column types: {\"age\": \"int\", ...}."),
)

#: attribute roles of a relational table
roles = stack(
    click.option("--identifier", "identifiers", default=None, metavar="COLS",
                 help="Comma-separated direct identifiers (name, e-mail ...): never published."),
    click.option("--qi", default=None, metavar="COLS", help="Comma-separated quasi-identifiers: generalised."),
    click.option("--sensitive", default=None, metavar="COL", help="Sensitive attribute: published as is (protected by --l)."),
    click.option("--insensitive", default=None, metavar="COLS", help="Comma-separated columns published as is."),
    click.option("--allow-unique", default=None, metavar="COLS",
                 help="Quasi-identifier or insensitive columns accepted although nearly unique per record (recorded)."),
)


def roles_from(identifiers: str | None, qi: str | None, sensitive: str | None, insensitive: str | None,
               allow_unique: str | None) -> Any:
    """The :class:`~ppdm_dask.release.Roles` of the role options."""
    from ..release import Roles

    return Roles(identifiers=split_list(identifiers), quasi_identifiers=split_list(qi), sensitive=split_list(sensitive),
                 insensitive=split_list(insensitive), allow_unique=split_list(allow_unique))

"""The ``ppdm`` command line.

Every job runs on a Dask scheduler: ``--scheduler ADDRESS`` (a running ``dask scheduler``),
``--scheduler threads|sync`` (in-process), or, by default, a LocalCluster of process workers
started for the job. Inputs and outputs are local paths or fsspec URLs (``s3://...``) with
``--storage-option k=v``. Each command reads, fits, verifies, writes and prints the release
summary; bad input ends with one ``ppdm: error: ...`` line and a non-zero exit.

The commands are listed once, in :mod:`.commands` (name -> module, attribute, one-line help):
``ppdm --help`` and a usage error import none of them, a command's module is imported when it
runs. The core (:mod:`._core`: context and jobs; :mod:`._errors`: one error line and the exit
code; :mod:`._summary`: the release summary) and the shared options (:mod:`._options`) serve
one module per family.
"""

from __future__ import annotations

import click

from ._core import Context
from ._errors import PPDMGroup, main
from ._options import parse_storage_options


@click.group(cls=PPDMGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--scheduler",
    envvar="PPDM_SCHEDULER",
    default=None,
    metavar="ADDRESS",
    help="Dask scheduler address (tcp://host:8786 or a scheduler file), or 'threads'/'sync'. Default: start a LocalCluster.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes of the default LocalCluster (default: one per core).",
)
@click.option(
    "--storage-option",
    "storage_option",
    multiple=True,
    metavar="K=V",
    help="fsspec storage option, repeatable (e.g. endpoint_url=http://..., key=..., anon=true).",
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding the random key; created (mode 600) if missing. Without it a fresh secret key is used.",
)
@click.option(
    "--ledger",
    "ledger",
    default=None,
    metavar="URL",
    help="The release ledger (a folder or fsspec URL shared by a team). Default: $PPDM_LEDGER, else "
    "ppdm-dask/ledger in the user's data directory.",
)
@click.option("--no-ledger", is_flag=True, help="Do not record releases in a ledger (said in each manifest).")
@click.option("--json", "as_json", is_flag=True, help="Print the job summary as JSON on stdout.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
@click.option(
    "--verify-input", is_flag=True, help="Check the SHA-256 of every part of ppdm input datasets against their manifest."
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.version_option(package_name="ppdm-dask")
@click.pass_context
def cli(
    ctx: click.Context,
    scheduler: str | None,
    workers: int | None,
    storage_option: tuple[str, ...],
    ledger: str | None,
    no_ledger: bool,
    key_file: str | None,
    as_json: bool,
    progress: bool,
    verify_input: bool,
    debug: bool,
) -> None:
    """Privacy-preserving data mining on Dask."""
    ctx.obj = Context(
        scheduler=scheduler,
        workers=workers,
        storage_options=parse_storage_options(storage_option),
        key_file=key_file,
        as_json=as_json,
        progress=progress,
        debug=debug,
        verify_input=verify_input,
        ledger=ledger,
        no_ledger=no_ledger,
    )


__all__ = ["cli", "main", "Context"]

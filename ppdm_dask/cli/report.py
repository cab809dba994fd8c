"""``ppdm report``: the privacy and utility report of a written release."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import click

from ._core import Context, job
from ._options import as_baskets

if TYPE_CHECKING:  # the CLI loads no release module before a command runs
    from ..anonymity.release import AnonymizedRelease
    from ..release.base import Release


@click.command("report")
@click.argument("release")
@click.option("--original", default=None, metavar="SRC", help="The original data: utility figures and the original's risk.")
@click.option(
    "--out",
    default=None,
    metavar="FILE.html|DIR",
    help="Write the report here (default: beside the release, RELEASE.report.html and RELEASE.report.json; "
    "RELEASE.report-external.* for --audience external).",
)
@click.option(
    "--audience",
    type=click.Choice(["internal", "external"]),
    default="internal",
    show_default=True,
    help="external: leave out everything that describes the original data beyond what the release shows.",
)
@click.option("--sep", default=None, help="CSV separator of --original (default: sniffed).")
@click.option("--dtype", "dtype", multiple=True, metavar="COL=TYPE", help="Column types of a CSV --original. Repeatable.")
@click.option(
    "--verify/--no-verify",
    "reverify",
    default=True,
    show_default=True,
    help="Recount the guarantee now from the files (checksums included); --no-verify shows the write-time verdict.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing report.")
@click.option(
    "--sampling-fraction",
    type=float,
    default=None,
    metavar="F",
    help="Tables: the share of the population the original holds, in (0, 1]: population uniques (Pitman, Zayatz, SNB).",
)
@click.option(
    "--population-size",
    type=float,
    default=None,
    metavar="N",
    help="Tables: the population's number of records (at least the table's), instead of --sampling-fraction.",
)
@click.option(
    "--weight-column",
    default=None,
    metavar="COL",
    help="Tables: a sampling-weight column (of --original, or published): sdcMicro's individual risk.",
)
@click.option(
    "--hierarchy",
    "hierarchy",
    multiple=True,
    metavar="ATTR=FILE|ATTR=interval:LO:HI:W",
    help="Tables: the owner's hierarchy of a QI (as given to the job), to read released nodes with their leaves. Repeatable.",
)
@click.option(
    "--hierarchies",
    "hierarchy_dir",
    default=None,
    metavar="DIR",
    help="Tables: the folder of the owner's hierarchies (as given to the job): the report's figures then equal the job's.",
)
@as_baskets
@click.pass_obj
def report_cmd(
    obj: Context,
    release: str,
    original: str | None,
    out: str | None,
    audience: str,
    sep: str | None,
    dtype: tuple[str, ...],
    reverify: bool,
    overwrite: bool,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    weight_column: str | None = None,
    hierarchy: tuple[str, ...] = (),
    hierarchy_dir: str | None = None,
) -> None:
    """Write the privacy and utility report of RELEASE: report.json (validated against the
    schema shipped with ppdm) and one self-contained report.html with the figures. Sections:
    the decision (green, amber or red, with its reasons; also the first line printed), what an
    attacker can still learn, privacy (the independent recount and the risk figures), attack
    results, utility (with --original), what was released, how to reproduce."""
    owner: dict[str, Any] = {}
    if obj.key_file is not None and original is not None and audience == "internal":
        from ..random import Key

        owner = {"key": Key.from_file(obj.key_file)}  # the key holder's checks; never creates a key
    population = _population_options(sampling_fraction, population_size, weight_column)
    with job(obj, inputs=[release, original]) as j:
        from ..verification import open_release  # after the checks: a usage error loads none of it

        rel = open_release(release, storage_options=obj.storage_options)
        rel.ledger = obj.ledger()  # where the report finds the release's composition (--ledger)
        if population:
            _check_table_release(rel)
            owner["figure_options"] = population
        if hierarchy or hierarchy_dir:
            # the release publishes its hierarchies' node sizes, not their leaves: the owner's own
            # files make the query estimates (and so the report) the same as the job's
            from ..anonymity.hierarchies import load_hierarchies

            _check_table_release(rel, "--hierarchies / --hierarchy")
            table_release = cast("AnonymizedRelease", rel)  # checked just above: a table release
            owner.setdefault("figure_options", {})["hierarchies"] = load_hierarchies(
                list(hierarchy), hierarchy_dir, list(table_release.qi), storage_options=obj.storage_options
            )
        opts = {"sep": sep, "dtype": list(dtype)} if (original and (sep or dtype)) else {}
        doc = rel.report(
            original,
            out=out,
            audience=audience,
            storage_options=obj.storage_options,
            verify=reverify,
            overwrite=overwrite,
            original_options=opts,
            progress=obj.progress,
            **owner,
        )
    n_fig = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] == "plot")
    n_val = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] == "value")
    ok = doc["verdict"]["ok"]
    status = (
        ("verified" if ok else "FAILED")
        if reverify
        else ("as recorded when written: " + ("ok" if ok else "FAILED") + " (not re-checked now; ppdm verify re-checks)")
    )
    decision = doc["decision"]
    # the decision first: what the officer reads before anything else
    text = [
        f"{decision['colour'].upper()}: {decision['headline']}",
        *(f"  - {r}" for r in decision["reasons"]),
        f"{release}: {audience} report, guarantee {status}; {n_val} figures, {n_fig} plots ({j.seconds:.1f} s)",
        f"  html {doc['paths']['html']}",
        f"  json {doc['paths']['json']}",
    ]
    text += [f"  note {n}" for n in doc["notes"]]
    obj.emit(
        {
            "release": release,
            "audience": audience,
            "ok": doc["verdict"]["ok"],
            "decision": decision,
            "paths": doc["paths"],
            "seconds": j.seconds,
        },
        "\n".join(text),
    )
    if not doc["verdict"]["ok"]:
        from ..release.verdict import Verdict

        failed = Verdict.from_dict(doc["verdict"]).failures()
        first = failed[0].line() if failed else "FAILED"
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        click.echo(
            f"ppdm: error: {release} fails its independent check: {first}{more}; the report at {doc['paths']['html']} shows it",
            err=True,
        )
        raise click.exceptions.Exit(2)


def _population_options(fraction: float | None, size: float | None, weights: str | None) -> dict[str, Any]:
    """``--sampling-fraction`` / ``--population-size`` / ``--weight-column`` as report-figure
    options, checked before any work (the population size against the table's rows later)."""
    from ..errors import InvalidParameter

    if fraction is not None and size is not None:
        raise InvalidParameter(
            "--sampling-fraction and --population-size both given",
            cli="give one: --sampling-fraction F in (0, 1] or --population-size N",
        )
    if fraction is not None and not 0.0 < fraction <= 1.0:  # also NaN
        raise InvalidParameter(
            f"--sampling-fraction {fraction:g} is not in (0, 1]",
            cli="--sampling-fraction takes the share of the population the table holds, in (0, 1]",
        )
    if size is not None and not size > 0:
        raise InvalidParameter(
            f"--population-size {size:g} is not a positive number of records",
            cli="--population-size takes the population's number of records, at least the table's",
        )
    out = {"sampling_fraction": fraction, "population_size": size, "weights": weights}
    return {k: v for k, v in out.items() if v is not None}


def _check_table_release(rel: Release, flags: str = "--sampling-fraction, --population-size and --weight-column") -> None:
    """The population and hierarchy options apply to table releases only."""
    from ..anonymity.release import AnonymizedRelease
    from ..errors import InvalidParameter

    if not isinstance(rel, AnonymizedRelease):
        raise InvalidParameter(
            f"{flags} apply to table releases, not to a {rel.family} release", cli="leave them out for this release"
        )

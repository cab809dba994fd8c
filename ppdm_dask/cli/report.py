"""``ppdm report``: the privacy and utility report of a written release."""

from __future__ import annotations

import click

from . import cli
from ._core import Context, job
from ._options import as_baskets


@cli.command("report")
@click.argument("release")
@click.option("--original", default=None, metavar="SRC", help="The original data: utility figures and the original's risk.")
@click.option("--out", default=None, metavar="FILE.html|DIR",
              help="Write the report here (default: beside the release, RELEASE.report.html and RELEASE.report.json; "
                   "RELEASE.report-external.* for --audience external).")
@click.option("--audience", type=click.Choice(["internal", "external"]), default="internal", show_default=True,
              help="external: leave out everything that describes the original data beyond what the release shows.")
@click.option("--sep", default=None, help="CSV separator of --original (default: sniffed).")
@click.option("--dtype", "dtype", multiple=True, metavar="COL=TYPE", help="Column types of a CSV --original. Repeatable.")
@click.option("--verify/--no-verify", "reverify", default=True, show_default=True,
              help="Recount the guarantee now from the files (checksums included); --no-verify shows the write-time verdict.")
@click.option("--overwrite", is_flag=True, help="Replace an existing report.")
@as_baskets
@click.pass_obj
def report_cmd(obj: Context, release: str, original: str | None, out: str | None, audience: str, sep: str | None, dtype,
               reverify: bool, overwrite: bool) -> None:
    """Write the privacy and utility report of RELEASE: report.json (validated against the
    schema shipped with ppdm) and one self-contained report.html with the figures. Sections:
    the decision (green, amber or red, with its reasons; also the first line printed), what an
    attacker can still learn, privacy (the independent recount and the risk figures), attack
    results, utility (with --original), what was released, how to reproduce."""
    from ..verification import open_release

    owner = {}
    if obj.key_file is not None and original is not None and audience == "internal":
        from ..random import Key

        owner = {"key": Key.from_file(obj.key_file)}  # the key holder's checks; never creates a key
    with job(obj) as j:
        rel = open_release(release, storage_options=obj.storage_options)
        opts = {"sep": sep, "dtype": list(dtype)} if (original and (sep or dtype)) else {}
        doc = rel.report(original, out=out, audience=audience, storage_options=obj.storage_options, verify=reverify,
                         overwrite=overwrite, original_options=opts, progress=obj.progress, **owner)
    n_fig = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] == "plot")
    n_val = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] == "value")
    ok = doc["verdict"]["ok"]
    status = ("verified" if ok else "FAILED") if reverify else (
        "as recorded when written: " + ("ok" if ok else "FAILED") + " (not re-checked now; ppdm verify re-checks)")
    decision = doc["decision"]
    # the decision first: what the officer reads before anything else
    text = [f"{decision['colour'].upper()}: {decision['headline']}", *(f"  - {r}" for r in decision["reasons"]),
            f"{release}: {audience} report, guarantee {status}; {n_val} figures, {n_fig} plots ({j.seconds:.1f} s)",
            f"  html {doc['paths']['html']}", f"  json {doc['paths']['json']}"]
    text += [f"  note {n}" for n in doc["notes"]]
    obj.emit({"release": release, "audience": audience, "ok": doc["verdict"]["ok"], "decision": decision, "paths": doc["paths"],
              "seconds": j.seconds}, "\n".join(text))
    if not doc["verdict"]["ok"]:
        from ..release.verdict import Verdict

        failed = Verdict.from_dict(doc["verdict"]).failures()
        first = failed[0].line() if failed else "FAILED"
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        click.echo(f"ppdm: error: {release} fails its independent check: {first}{more}; the report at {doc['paths']['html']} "
                   "shows it", err=True)
        raise click.exceptions.Exit(2)

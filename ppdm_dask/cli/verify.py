"""``ppdm verify``: re-check a written release from its files alone."""

from __future__ import annotations

import click

from ._core import Context, job
from ._options import as_baskets


@click.command("verify")
@click.argument("release")
@click.option("--original", default=None, metavar="SRC", help="Also check the release against its original data.")
@click.option("--sep", default=None, help="CSV separator of --original (default: sniffed).")
@click.option("--dtype", "dtype", multiple=True, metavar="COL=TYPE", help="Column types of a CSV --original. Repeatable.")
@click.option("--no-checksums", is_flag=True, help="Only check that the files are present with their sizes (no hashing).")
@as_baskets
@click.pass_context
def verify_cmd(
    ctx: click.Context, release: str, original: str | None, sep: str | None, dtype: tuple[str, ...], no_checksums: bool
) -> None:
    """Verify RELEASE: its manifest, the SHA-256 of every file, the privacy floors of its
    parameters and its guarantee recounted from the released data (k, l, k^m, group sizes,
    δ / k-variance conditions, suppressed records absent), and with --original the release
    against the original. With the global --key-file and --original, the key holder also checks
    that the release was made with that key from that input and its recorded parameters.
    Properties that need the original are listed as NOT CHECKED without it. Exit 0 only when
    every check holds; one line per failed check."""
    obj: Context = ctx.obj
    key = None
    if obj.key_file is not None:  # the owner checks provenance; never create a key here
        from ..errors import InvalidParameter
        from ..random import Key

        if original is None:
            raise InvalidParameter(
                "--key-file with verify checks that the release was made from an input with that key: it needs the input",
                cli="give --original SRC (or leave out --key-file)",
            )
        key = Key.from_file(obj.key_file)
    with job(obj, inputs=[release, original]) as j:
        from ..release.names import FILE_CHECK
        from ..verification import open_release, verify  # after the checks: a usage error loads none of it

        orig = None
        if original is not None:
            kind = type(open_release(release, storage_options=obj.storage_options))
            kw = {"sep": sep, "dtype": list(dtype)} if (sep or dtype) else {}
            orig = kind.read_original(original, storage_options=obj.storage_options, **kw)
        verdict = verify(
            release,
            original=orig,
            storage_options=obj.storage_options,
            checksums=not no_checksums,
            progress=obj.progress,
            **({"key": key} if key is not None else {}),
        )
    failed = verdict.failures()
    notes = verdict.notes()
    text = [
        f"{release}: {'verified' if verdict.ok else 'VERIFICATION FAILED'} ({len(verdict) - len(notes)} checks, {len(failed)} failed, "
        f"{j.seconds:.1f} s)"
    ]
    shown = failed if failed else [c for c in verdict if c.name != FILE_CHECK and c.status == "check"]
    text += ["  " + c.line() for c in [*shown, *notes]]
    if verdict.ok:
        n_files = sum(1 for c in verdict if c.name == FILE_CHECK)
        text.append(
            f"  ok {n_files} file(s) match their SHA-256 in the manifest"
            if not no_checksums
            else f"  ok {n_files} file(s) present"
        )
    obj.emit({"release": release, "original": original, **verdict.to_dict(), "seconds": j.seconds}, "\n".join(text))
    for c in failed:
        click.echo(f"ppdm: error: {c.line()}", err=True)
    for c in notes:
        if c.status == "warning":
            click.echo(f"ppdm: warning: {c.line()}", err=True)
    if not verdict.ok:
        ctx.exit(2)

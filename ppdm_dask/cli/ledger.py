"""``ppdm ledger list | show | check | export | forget``: the record of every release."""

from __future__ import annotations

import json
from typing import Any

import click

from ._core import Context, json_default
from ._summary import _fmt as fmt


@click.group()
def ledger() -> None:
    """The release ledger: every release of an input, composed (docs/ledger.md).

    The ledger is --ledger URL, else $PPDM_LEDGER, else ppdm-dask/ledger in the user's data
    directory."""


def _store(obj: Context) -> Any:
    store = obj.ledger()
    if store is None:
        from ._errors import usage_error

        raise usage_error("--no-ledger: there is no ledger to read", "drop --no-ledger, or give --ledger URL")
    return store


def _release_id(obj: Context, ident: str) -> str:
    """A release id, or the id in the manifest of the release written at ``ident``."""
    from ..ledger.compose import destination_release_id

    if "/" in ident or "\\" in ident or "://" in ident:
        rid = destination_release_id(ident, obj.storage_options)
        if rid is None:
            from ..errors import DatasetNotFoundError

            raise DatasetNotFoundError(f"no committed release at {ident}", cli="give a release id ('ppdm ledger list')")
        return rid
    return ident


@ledger.command("list")
@click.option(
    "--input", "fingerprint", default=None, metavar="FP", help="Only the releases of this input (its ledger fingerprint)."
)
@click.pass_obj
def ledger_list(obj: Context, fingerprint: str | None) -> None:
    """The recorded releases, grouped by input, oldest first."""
    store = _store(obj)
    records = store.records(fingerprint)
    by_input: dict[str, list[Any]] = {}
    for r in records:
        by_input.setdefault(str(r.get("input")), []).append(r)
    lines = [f"ledger {store.url}: {len(records)} release(s) of {len(by_input)} input(s)"]
    for fp, recs in by_input.items():
        lines.append(f"input {fp}: {len(recs)} release(s)")
        lines += [f"  {r.line()}" for r in recs]
    obj.emit(
        {"ledger": store.url, "inputs": {fp: [r.summary() for r in recs] for fp, recs in by_input.items()}}, "\n".join(lines)
    )


@ledger.command("show")
@click.argument("release_id")
@click.pass_obj
def ledger_show(obj: Context, release_id: str) -> None:
    """One release: its record, events, status and composition (RELEASE_ID: a release id, a
    unique prefix of one as 'ppdm ledger list' shows, or the path of the written release)."""
    rec = _store(obj).find(_release_id(obj, release_id))
    s = rec.summary()
    comp = s.get("composition") or {}
    lines = [rec.line(), f"  input        {s.get('input')}", f"  parameters   {json.dumps(s.get('parameters'), default=str)}"]
    if s.get("overrides"):
        lines.append(f"  overrides    {', '.join(s['overrides'])}")
    lines.append(
        f"  composed     {comp.get('releases', 1)} release(s): "
        + ", ".join(f"{k}={fmt(v)}" for k, v in (comp.get("figures") or {}).items())
    )
    lines += [
        f"               {c.get('name')}: {'ok' if c.get('ok') else ('OVERRIDDEN' if c.get('overridden') else 'FAILED')}"
        f" ({fmt(c.get('figure'))} against {fmt(c.get('threshold'))})"
        for c in comp.get("checks") or []
    ]
    lines += [
        f"  event        {e.get('time')} {e.get('event')}" + (f": {e['reason']}" if e.get("reason") else "")
        for e in s.get("events") or []
    ]
    obj.emit(s, "\n".join(lines))


@ledger.command("check")
@click.pass_obj
def ledger_check(obj: Context) -> None:
    """Settle pending records (committed at their destination, or their job gone without a
    commit) and show the composed figures of every input with more than one release."""
    from ..ledger.compose import earlier_releases, reconcile
    from ..ledger.store import counts_in_composition

    store = _store(obj)
    changed = reconcile(store, obj.storage_options)
    lines = [f"ledger {store.url}: {len(changed)} pending record(s) settled"]
    lines += [f"  {rec.line()} (was pending)" for rec, _ in changed]
    inputs = []
    for fp in store.inputs():
        live = [r for r in store.records(fp) if counts_in_composition(r)]
        if not live:
            continue
        latest = live[-1]
        comp = latest.composition
        n = len(earlier_releases(store, fp, latest.release_id)) + 1
        stale = n != int(comp.get("releases", 1))
        inputs.append(
            {"input": fp, "releases": n, "latest": latest.summary(), "recorded_releases": comp.get("releases", 1), "stale": stale}
        )
        if n > 1 or stale:
            lines.append(f"input {fp}: {n} release(s) compose; latest {latest.line()}")
            lines += [f"  composed {k.replace('_', ' ')}: {fmt(v)}" for k, v in (comp.get("figures") or {}).items()]
            if stale:
                lines.append(
                    f"  note: the latest release was composed with {comp.get('releases', 1)} release(s); "
                    f"{n} count now (a release was withdrawn or settled since)"
                )
    obj.emit(
        {"ledger": store.url, "settled": [{"release_id": r.release_id, "status": s} for r, s in changed], "inputs": inputs},
        "\n".join(lines),
    )


@ledger.command("export")
@click.option("--out", default=None, metavar="FILE", help="Write the JSON here (default: stdout).")
@click.option("--input", "fingerprint", default=None, metavar="FP", help="Only the releases of this input.")
@click.pass_obj
def ledger_export(obj: Context, out: str | None, fingerprint: str | None) -> None:
    """Every record with its events, status and composition as JSON (no secret, no people or per-record
    values)."""
    doc = _store(obj).export(fingerprint)
    text = json.dumps(doc, indent=1, default=json_default)
    if out:
        from ..data.atomic import atomic_file

        with atomic_file(out, storage_options=obj.storage_options, overwrite=True, mode="w") as fh:
            fh.write(text)
        click.echo(f"{len(doc['records'])} record(s) exported to {out}", err=True)
    else:
        click.echo(text)


@ledger.command("forget")
@click.argument("release_id")
@click.option("--reason", required=True, help="Why the release is withdrawn (kept in the ledger).")
@click.pass_obj
def ledger_forget(obj: Context, release_id: str, reason: str) -> None:
    """Mark a release as withdrawn (RELEASE_ID: its id or the path of the written release): it no
    longer counts when later releases of its input are composed. The record stays (never
    deleted). Withdraw only a release whose data never reached anyone: what was published stays
    published."""
    rec = _store(obj).forget(_release_id(obj, release_id), reason)
    obj.emit({"release_id": rec.release_id, "status": rec.status, "reason": reason}, f"withdrawn: {rec.line()}")

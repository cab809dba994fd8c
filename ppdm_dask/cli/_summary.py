"""The one-screen summary every release command prints (text, or JSON with ``--json``)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any


def _fmt(value: Any) -> str:
    """A value as the summary shows it: integers with thousands separators, floats to four
    places (numpy's numbers too: numpy registers them as :mod:`numbers` types, so the summary
    needs no numpy import)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        v = float(value)
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:,.4f}" if abs(v) < 1e6 else f"{v:,.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]" if len(value) <= 12 else f"[{len(value):,} values]"
    return str(value)


def release_text(
    summary: Mapping[str, Any],
    *,
    src: str | None,
    dst: str | None,
    verdict: Any = None,
    job: Any = None,
    extra: Sequence[str] = (),
) -> str:
    """The one-screen text of a release job: what, parameters, records, privacy, utility, the
    verdict of the independent check, where it was written."""
    head = f"{summary.get('family')} release ({summary.get('method')})"
    if src or dst:
        head += f": {src or ''} -> {dst or '(not written)'}"
    lines = [head, f"  {'parameters':<12} {_fmt(summary.get('parameters', {}))}"]
    if summary.get("overrides"):
        lines.append(f"  {'OVERRIDES':<12} {', '.join(summary['overrides'])} (weak parameters accepted explicitly; recorded)")
    for section in ("records", "privacy", "utility"):
        for i, (k, v) in enumerate((summary.get(section) or {}).items()):
            lines.append(f"  {section if i == 0 else '':<12} {k:<24} {_fmt(v)}")
    lines.extend(extra)
    if verdict is not None:
        status = "ok" if verdict.ok else "FAILED"
        lines.append(f"  {'verified':<12} {status}: the written files, recounted independently ({len(verdict)} checks)")
        lines += [f"  {'':<12} {c.line()}" for c in verdict.checks]
    if job is not None:
        lines.append(f"  done in {job.seconds:.1f} s on {job.where}")
    return "\n".join(lines)


def emit_release(
    obj: Any,
    release: Any,
    *,
    src: str | None,
    dst: str | None,
    manifest: Mapping[str, Any] | None,
    job: Any,
    extra_text: Sequence[str] = (),
    extra_json: Mapping[str, Any] | None = None,
    report: Mapping[str, Any] | None = None,
) -> None:
    """Print a release job's summary (text or ``--json``), with the path of its report."""
    from ..release import Verdict

    verdict = Verdict.from_dict(manifest["guarantees"]) if manifest and manifest.get("guarantees") else None
    summary = release.summary()
    payload = {
        **summary,
        "src": src,
        "out": dst,
        "verdict": verdict.to_dict() if verdict is not None else None,
        "key_fingerprint": manifest["release"]["key_fingerprint"] if manifest else None,
        "seconds": job.seconds,
        "scheduler": job.where,
        "report_html": (report or {}).get("html"),
        **dict(extra_json or {}),
    }
    comp = getattr(release, "composition", None)
    if comp is not None:  # the composition with the input's earlier releases (the ledger)
        payload["ledger"] = comp.to_dict()
        extra_text = [*extra_text, ledger_text(comp)]
    elif manifest and (manifest["release"].get("ledger") or {}).get("recorded") is False:
        payload["ledger"] = manifest["release"]["ledger"]
        extra_text = [*extra_text, f"  {'ledger':<12} not recorded (--no-ledger; said in the manifest)"]
    text = release_text(summary, src=src, dst=dst, verdict=verdict, job=job, extra=extra_text)
    decision = (report or {}).get("decision")
    if decision:
        payload["decision"] = decision
        text += "\n" + decision_text(decision)
    obj.emit(payload, text + (f"\n  report: {report['html']}" if report else ""))


def ledger_text(comp: Any) -> str:
    """One line on the release's composition with the earlier releases that share its input or
    its people (and who the person is, once composed by person)."""
    people = getattr(comp, "people", None) or {}
    who = f"; the person: {people['describe']}" if people.get("describe") else ""
    if not comp.earlier:
        return f"  {'ledger':<12} recorded: no earlier release shares its input or its people{who}"
    limits = ", ".join(f"{c.name} {'ok' if c.ok else 'OVERRIDDEN'}" for c in comp.checks)
    shared = sum(int(v) for v in (people.get("shared") or {}).values())
    held = f", {shared:,} people shared" if people.get("shared") else ""
    return (
        f"  {'ledger':<12} recorded: composed with {len(comp.earlier)} earlier release(s) that share its input or its people"
        + held
        + (f" ({limits})" if limits else "")
        + who
    )


def decision_text(decision: Mapping[str, Any], reasons: int = 3) -> str:
    """The report's decision in a few lines: the colour and headline, then the first reasons."""
    lines = [f"  {'decision':<12} {str(decision['colour']).upper()}: {decision['headline']}"]
    for r in list(decision.get("reasons") or [])[:reasons]:
        lines.append(f"  {'':<12} - {r if len(r) <= 220 else r[:217] + '...'}")
    more = len(decision.get("reasons") or []) - reasons
    if more > 0:
        lines.append(f"  {'':<12} ({more} more in the report)")
    return "\n".join(lines)

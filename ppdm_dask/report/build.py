"""Assemble the report of a release as one JSON-friendly document (schema: ``schema.json``).

The sections come in the same order for every family, the decision first:

1. ``summary`` — the decision box: green, amber or red (:func:`.decision.decide`, the one place
   the colour is decided), its reasons, the guarantee in plain words and what it protects, the
   three largest risks (attack results) and the three headline utility figures;
2. ``learn`` — what an attacker can still learn from this release (the family's translation of
   its figures into what they let an attacker do);
3. ``privacy`` — the independent checks (the verdict: one row per check), then the family's
   risk figures (:meth:`Release.report_figures`);
4. ``attacks`` — the threat model's attacks run on the release: success against the baseline,
   the advantage and the threshold the summary uses;
5. ``utility`` — the family's utility figures (they need the original data);
6. ``released`` — what was released: method, public parameters, attribute roles, overrides,
   key fingerprint, versions, the input (its keyed fingerprint; for the owner also where it was
   read from) and the output files;
7. ``reproduce`` — how to re-check the release and to make it again.

Nothing here recomputes a guarantee or a figure: the verdict comes from the recount
(:func:`ppdm_dask.verify` on the written files, or the one done when it was written) and the
figures from the family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..release.figures import Attack, Figures, Table, Text, plain
from ..release.manifest import created, versions
from ..release.names import COMPOSITION_OVERRIDE, COMPOSITION_WHERE, FILE_CHECK

if TYPE_CHECKING:
    from ..release.verdict import Check

__all__ = ["REPORT_FORMAT", "REPORT_VERSION", "AUDIENCES", "SECTIONS", "build_report", "for_audience"]

REPORT_FORMAT = "ppdm-report"
REPORT_VERSION = 2
AUDIENCES = ("internal", "external")
#: (id, title) of the sections, in order
SECTIONS = (
    ("summary", "Decision"),
    ("learn", "What an attacker can still learn"),
    ("privacy", "Privacy: independent checks and risk figures"),
    ("attacks", "Attack results"),
    ("utility", "Utility"),
    ("released", "What was released"),
    ("reproduce", "How to reproduce"),
)
THREAT_MODEL = "docs/threat-model.md"


def _text(id: str, text: str, about: str = "release") -> dict[str, Any]:
    return {"type": "text", "id": id, "text": text, "about": about}


def _rows(mapping: Mapping[str, Any]) -> list[list[Any]]:
    return [[str(k), json.dumps(plain(v)) if isinstance(v, (list, dict)) else plain(v)] for k, v in mapping.items()]


def _provenance(release: Any, manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    """The public id, key fingerprint and keyed input fingerprint of the release (from its
    manifest, or computed from the key of a release in memory)."""
    from ..release.identity import provenance

    rel = dict((manifest or {}).get("release") or {})
    if rel.get("id"):
        return {
            "id": rel.get("id"),
            "key_fingerprint": rel.get("key_fingerprint"),
            "input_fingerprint": ((manifest or {}).get("input") or {}).get("fingerprint"),
        }
    key = release.key
    if key is None:
        return {"id": None, "key_fingerprint": None, "input_fingerprint": None}
    return provenance(key, release.identity)


def _released(
    release: Any, manifest: Mapping[str, Any] | None, url: str | None
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Items of the ``released`` section, the ``release`` record and the ``input`` record."""
    rel = dict((manifest or {}).get("release") or {})
    prov = _provenance(release, manifest)
    record = {
        "url": url,
        "family": release.family,
        "method": release.method,
        "parameters": plain(dict(release.parameters)),
        "roles": release.roles.to_dict() if release.roles is not None else None,
        "overrides": list(release.overrides),
        "id": prov["id"],
        "key_fingerprint": prov["key_fingerprint"],
        "created": rel.get("created"),
        "versions": rel.get("versions") or versions(),
        "written": manifest is not None,
    }
    if manifest is not None:
        parts = manifest.get("partitions") or []
        record["rows"] = int(sum(int(p.get("rows", 0)) for p in parts))
        record["files"] = [
            {"file": p["file"], "rows": p.get("rows"), "bytes": p.get("bytes"), "sha256": p.get("sha256")}
            for p in [*parts, *(manifest.get("files") or [])]
        ]
        record["manifest_sha256"] = manifest.get("_sha256")
    # the owner's record of the input (the release in memory knows it; public files do not)
    inp = dict(getattr(release, "owner_input", None) or getattr(release, "input_info", {}) or {})
    items: list[dict[str, Any]] = [
        Table(
            "released_what",
            "Release",
            ["", ""],
            _rows(
                {
                    "family": record["family"],
                    "method": record["method"],
                    "written": record["url"] or "(not written)",
                    "rows released": record.get("rows"),
                    "created": record["created"],
                    "release id": record["id"] or "(none)",
                    "key fingerprint": record["key_fingerprint"] or "(none)",
                    "manifest SHA-256": record.get("manifest_sha256") or "(not written)",
                }
            ),
        ).to_dict(),
        Table("released_parameters", "Public parameters", ["parameter", "value"], _rows(record["parameters"])).to_dict(),
    ]
    if record["roles"]:
        items.append(
            Table(
                "released_roles",
                "Attribute roles",
                ["role", "columns"],
                [[r, ", ".join(map(str, c)) if isinstance(c, list) else c] for r, c in record["roles"].items() if c],
            ).to_dict()
        )
    if record["overrides"]:
        items.append(
            _text(
                "released_overrides",
                "Privacy floors explicitly overridden by the user (recorded in the manifest): "
                + ", ".join(record["overrides"])
                + ".",
            )
        )
    files = inp.get("files") or []
    inp_rows = {
        "url": inp.get("url"),
        "format": inp.get("format"),
        "rows": inp.get("rows"),
        "columns": ", ".join(map(str, (inp.get("schema") or {}).keys())) or None,
        "files": len(files),
        "fingerprint": prov["input_fingerprint"],
    }
    items.append(
        Table("released_input", "Input", ["", ""], _rows({k: v for k, v in inp_rows.items() if v is not None})).to_dict()
    )
    if files:
        items.append(
            Table(
                "released_input_files",
                "Input files",
                ["file", "bytes", "SHA-256"],
                [[f.get("file"), f.get("bytes"), f.get("sha256")] for f in files[:200]],
            ).to_dict()
        )
    if record.get("files"):
        items.append(
            Table(
                "released_files",
                "Output files",
                ["file", "rows", "bytes", "SHA-256"],
                [[f["file"], f["rows"], f["bytes"], f["sha256"]] for f in record["files"][:200]],
            ).to_dict()
        )
    items.append(Table("released_versions", "Versions", ["package", "version"], _rows(record["versions"])).to_dict())
    return items, record, {**inp, "fingerprint": inp_rows["fingerprint"]}


def _status(c: Any) -> str:
    if c.status == "unchecked":
        return "not checked"
    if c.status == "warning":
        return "warning"
    return "ok" if c.ok else ("overridden" if c.overridden else "FAILED")


def _privacy(verdict: Any, verified: str, figures: Figures, composed: Sequence[Any] = ()) -> list[dict[str, Any]]:
    # one row per check, but the per-file checks of a many-file release in one row (failures named);
    # the limits of the composition with the input's earlier releases (the ledger) come last
    files = [c for c in verdict.checks if c.name == FILE_CHECK]
    rows = []
    for c in [*verdict.checks, *composed]:
        if c.name != FILE_CHECK:
            rows.append([c.name, _status(c), plain(c.figure), plain(c.threshold), c.where or "", c.detail])
        elif c is files[0]:
            bad = [f for f in files if not f.ok]
            rows.append(
                [
                    "files match the manifest",
                    "FAILED" if bad else "ok",
                    len(files) - len(bad),
                    len(files),
                    ", ".join(f.where or "" for f in bad[:20]),
                    "size and SHA-256 of every file listed in the manifest",
                ]
            )
    items = [
        Table(
            "privacy_checks",
            "Independent checks",
            ["check", "status", "figure", "threshold", "where", "detail"],
            rows,
            note=verified,
        ).to_dict()
    ]
    return items + [i.to_dict() for i in figures.risk]


def _reproduce(record: Mapping[str, Any], original_url: str | None) -> list[dict[str, Any]]:
    url = record.get("url") or "RELEASE"
    orig = f" --original {original_url}" if original_url else " --original SRC"
    return [
        _text(
            "reproduce_verify",
            f"Re-check the release from its files alone: ppdm verify {url} (and against its input: ppdm verify {url}{orig}).",
        ),
        _text("reproduce_report", f"Make this report again: ppdm report {url}{orig}."),
        _text(
            "reproduce_release",
            "Make the release again: run the same method with the public parameters above on the same "
            "input with the same key file (--key-file). Every random step derives from the key and the release's identity "
            "(method, parameters, input), so the output files have the same SHA-256 as listed; the key holder checks "
            f"that a release was made from an input with: ppdm --key-file KEY verify {url}{orig}.",
        ),
    ]


# ---------------------------------------------------------------------- the decision box
def _generic_guarantee(checks: Sequence[Check]) -> str:
    """The guarantee in words when the family gives none: the family's checks of the recount
    (``k-anonymity: 5 (needs 5)``; a check of an absence by its name alone)."""
    from .units import show_number

    own = [c for c in checks if c.name != FILE_CHECK and c.status == "check"]
    if not own:
        return "The release was checked against its manifest; the family states no guarantee of its own."

    def one(c: Check) -> str:
        if c.figure is None or (c.figure == 0 and c.threshold in (0, None)):
            return c.name
        return c.name + ": " + show_number(c.figure) + (f" (needs {show_number(c.threshold)})" if c.threshold is not None else "")

    held = [one(c) for c in own if c.ok]
    weak = [one(c) for c in own if not c.ok and c.overridden]
    bad = [one(c) for c in own if not (c.ok or c.overridden)]
    parts = [
        ("The independent recount of the released data holds: " + "; ".join(held) + ".") if held else "",
        ("Below its floor, accepted with --allow-weak: " + "; ".join(weak) + ".") if weak else "",
        ("It does not hold: " + "; ".join(bad) + ".") if bad else "",
    ]
    return " ".join(p for p in parts if p)


def _decision(checks: list[Any], attacks: list[Any], warnings: list[Any]) -> dict[str, Any]:
    """The document's ``decision``; a warning about the original (a :class:`Text` not about the
    release) goes to ``owner_warnings``, which the external report leaves out."""
    from .decision import attack_sentence, decide, warning_text

    d = decide(checks, attacks, warnings)
    out = d.to_dict()
    out["risks"] = [{**r.to_dict(), "sentence": attack_sentence(r)} for r in d.risks]
    out["warnings"] = [warning_text(w) for w in warnings if isinstance(w, str) or w.about == "release"]
    out["owner_warnings"] = [warning_text(w) for w in warnings if not (isinstance(w, str) or w.about == "release")]
    return out


def _summary(
    guarantee: str, protects: str, verified: str, headline: list[dict[str, Any]], why_no_headline: str
) -> list[dict[str, Any]]:
    """Items of the summary box (the colour, reasons and risks are the document's ``decision``)."""
    items = [Text("summary_guarantee", guarantee).to_dict()]
    if protects:
        items.append(Text("summary_protects", protects).to_dict())
    items.append(Text("summary_verified", verified).to_dict())
    items += headline
    if not headline:
        items.append(Text("summary_utility", why_no_headline).to_dict())
    return items


def _headline_values(utility: list[dict[str, Any]], ids: list[str]) -> list[dict[str, Any]]:
    """Copies of the headline utility values (``headline_<id>``: one element id per page)."""
    values = {i["id"]: i for i in utility if i.get("type") == "value"}
    return [{**values[h], "id": "headline_" + h} for h in ids[:3] if h in values]


_NO_ORIGINAL = "utility figures compare the release with its original data: give it with --original SRC"
_OWNER_ONLY = "comparison figures are in the owner's internal report"


def _why_no_headline(original_given: bool, audience: str) -> str:
    if audience == "external":
        return "Utility: the headline figures compare the release with the original data; " + _OWNER_ONLY + "."
    if not original_given:
        return "Utility needs the original data: " + _NO_ORIGINAL + "."
    return "The family names no headline utility figure; the utility section below holds its figures."


def _empty_note(section: str, original_given: bool, audience: str) -> str:
    """Why a section is empty (shown instead of its items)."""
    if section == "utility":
        if not original_given:
            return "Nothing to show: " + _NO_ORIGINAL + "."
        return "Nothing to show: " + (_OWNER_ONLY if audience == "external" else "the family computes no utility figure") + "."
    if section == "attacks":
        if audience == "external":
            return (
                "Nothing to show: no attack of the threat model was run on the release alone (attacks that need the "
                "original data are in the owner's internal report)."
            )
        return (
            "Nothing to show: no attack of the threat model was run on this release"
            + ("" if original_given else " (some need the original: --original SRC)")
            + "."
        )
    if section == "learn":
        return "Nothing to show: the family does not translate its figures into what an attacker can learn yet."
    if section == "privacy":
        return "Nothing to show."
    return ""


def _section_notes(doc: Mapping[str, Any], original_given: bool, audience: str) -> None:
    for section in doc["sections"]:
        note = ""
        if section["id"] == "attacks":
            note = (
                f"The attacks are those of the threat model ({THREAT_MODEL}): success is what the attacker achieves "
                "with the release, baseline what the same attacker achieves without it; an attack is flagged when "
                "its advantage (success - baseline) exceeds its threshold, and a flagged attack makes the decision amber."
            )
        if section["id"] == "learn":
            note = f"Each figure of this release translated into what it lets an attacker do (threat model: {THREAT_MODEL})."
        if not section["items"]:
            note = (note + " " if note else "") + _empty_note(section["id"], original_given, audience)
        if note:
            section["note"] = note
        else:
            section.pop("note", None)


def build_report(
    release: Any,
    original: Any = None,
    *,
    verdict: Any,
    verified: str,
    audience: str = "internal",
    figures: Figures | None = None,
    manifest: Mapping[str, Any] | None = None,
    url: str | None = None,
    original_url: str | None = None,
) -> dict[str, Any]:
    """The report document of ``release``.

    Parameters
    ----------
    release : Release
    original : optional
        The original data; only used to say whether utility figures could be computed.
    verdict : Verdict
        The independent recount (and floors) of the release.
    verified : str
        How and when the verdict was obtained (one sentence for the reader).
    audience : {"internal", "external"}
    figures : Figures, optional
        The family's figures (:meth:`Release.report_figures`).
    manifest : mapping, optional
        The manifest of a written release (with ``_sha256`` of its bytes).
    url, original_url : str, optional
        Where the release and the original live (shown in the reproduce section).
    """
    if audience not in AUDIENCES:
        from ..errors import InvalidParameter

        raise InvalidParameter(f"audience must be one of {AUDIENCES}, got {audience!r}", parameter="audience")
    from .ledger import composition_checks, composition_of, ledger_items

    figures = figures or Figures()
    released, record, inp = _released(release, manifest, url)
    utility = [i.to_dict() for i in figures.utility]
    original_given = original is not None
    notes = list(figures.notes)
    if original_given:
        notes += figures.needs_original
    else:  # the families say what needs the original their way; once is enough
        notes.append("No original data was given: the utility figures and the original's risk need it (--original SRC).")
    composed = composition_checks(composition_of(release)[0])
    checks = [*verdict.checks, *composed]
    headline = _headline_values(utility, list(figures.headline))
    summary = _summary(
        figures.guarantee or _generic_guarantee(checks),
        figures.protects,
        verified,
        headline,
        _why_no_headline(original_given, "internal"),
    )
    items = {
        "summary": summary,
        "learn": [i.to_dict() for i in figures.learn],
        "privacy": _privacy(verdict, verified, figures, composed) + ledger_items(release, manifest),
        "attacks": [a.to_dict() for a in figures.attacks],
        "utility": utility,
        "released": released,
        "reproduce": _reproduce(record, original_url),
    }
    doc = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "audience": audience,
        "created": created(),
        "with_original": original_given,
        "decision": _decision(checks, list(figures.attacks), list(figures.warnings)),
        "release": plain(record),
        "input": plain(inp),
        "verdict": verdict.to_dict(),
        "summary": plain(release.summary()),
        "public_summary": plain(_public_summary(release, manifest, record)),
        "sections": [{"id": sid, "title": title, "items": items[sid]} for sid, title in SECTIONS],
        "notes": notes,
    }
    _section_notes(doc, original_given, "internal")
    return for_audience(doc, audience)


def _public_summary(release: Any, manifest: Mapping[str, Any] | None, record: Mapping[str, Any]) -> dict[str, Any]:
    """The summary a public file may hold (the manifest's, or :meth:`Release.public_summary`)."""
    if manifest is not None and manifest.get("summary"):
        return dict(manifest["summary"])
    summary: dict[str, Any] = release.public_summary(int(record.get("rows") or 0))
    return summary


def _external_item(item: Mapping[str, Any]) -> bool:
    """Whether an item may go into the external report: what the release itself shows, and the
    single-number comparison scores (``score``: an aggregate, never a count of the original)."""
    about: str = item.get("about", "release")
    if item.get("type") == "value" and item.get("score") and about == "comparison":
        return True
    return about == "release"


def _attack(d: Mapping[str, Any]) -> Attack:
    """An :class:`Attack` back from its JSON (to decide on the attacks an audience sees)."""
    return Attack(
        id=d["id"],
        name=d["name"],
        success=d["success"],
        baseline=d["baseline"],
        threshold=d["threshold"],
        measure=d["measure"],
        about=d.get("about", "release"),
        found=d.get("found", ""),
        test=d.get("test", ""),
        unit=d.get("unit"),
    )


def for_audience(doc: Mapping[str, Any], audience: str) -> dict[str, Any]:
    """``doc`` for ``audience``: ``external`` keeps only what anyone holding the release could
    recount from it, plus single-number comparison scores (``Value.score``) — no other figure of
    the original or compared with it, no path (the release's and the input's URLs go, the
    reproduce commands say ``RELEASE``), nothing about the input but its keyed fingerprint, no
    attack that needs the original, and a decision taken on what is left (the external verdict
    is the recount from the release's files)."""
    from ..release.verdict import Check

    out: dict[str, Any] = json.loads(json.dumps(doc))
    out["audience"] = audience
    if audience == "internal":
        return out
    out["input"] = {"fingerprint": (doc.get("input") or {}).get("fingerprint")}
    public = out.pop("public_summary", None)  # never fall back to the owner's summary
    out["summary"] = public or {k: out["summary"][k] for k in ("family", "method", "parameters")}
    out["release"].pop("url", None)
    if out["release"].get("roles"):
        out["release"]["roles"] = {
            **{k: v for k, v in out["release"]["roles"].items() if k != "identifier"},
            "identifiers_dropped": len(out["release"]["roles"].get("identifier") or []),
        }
    for section in out["sections"]:
        had_headline = any(i.get("id", "").startswith("headline_") for i in section["items"])
        section["items"] = [
            i for i in section["items"] if _external_item(i) and i.get("id") not in ("released_input_files", "released_input")
        ]
        for i in section["items"]:
            if i.get("id") == "released_roles":
                i["rows"] = [r for r in i["rows"] if r[0] != "identifier"]
            if i.get("id") == "released_what":
                i["rows"] = [r for r in i["rows"] if r[0] != "written"]
        if section["id"] == "reproduce":
            section["items"] = _reproduce({}, None)
        if section["id"] == "summary":
            headline = [i for i in section["items"] if i.get("id", "").startswith("headline_")]
            section["items"] = [i for i in section["items"] if i.get("id") != "summary_utility"]
            if not headline:
                section["items"].append(
                    Text(
                        "summary_utility",
                        _why_no_headline(doc.get("with_original", False), "external")
                        if had_headline or doc.get("with_original")
                        else _why_no_headline(False, "internal"),
                    ).to_dict()
                )
    # the decision on what this audience sees: the attacks run on the release alone
    attacks = [_attack(i) for s in out["sections"] for i in s["items"] if i.get("type") == "attack"]
    checks = [Check.from_dict(c) for c in (out.get("verdict") or {}).get("checks", [])]
    # composition limits the owner accepted are public (the manifest's overrides); their figures are not
    checks += [
        Check(o[len(COMPOSITION_OVERRIDE) :], False, where=COMPOSITION_WHERE, overridden=True)
        for o in out["release"].get("overrides") or []
        if str(o).startswith(COMPOSITION_OVERRIDE)
    ]
    out["decision"] = _decision(checks, attacks, list((doc.get("decision") or {}).get("warnings") or []))
    _section_notes(out, bool(doc.get("with_original")), audience)
    out["notes"] = [
        *out.get("notes", []),
        "External report: only what can be recounted from the release itself is shown, "
        "with single-number comparison scores; the other figures of the original data and comparisons with "
        "it are in the owner's internal report.",
    ]
    return out

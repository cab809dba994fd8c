"""Assemble the report of a release as one JSON-friendly document (schema: ``schema.json``).

The sections come in the same order for every family:

1. ``released`` — what was released: method, public parameters, attribute roles, overrides,
   key fingerprint, versions, the input (its keyed fingerprint; for the owner also where it was
   read from) and the output files;
2. ``privacy`` — the guarantee, as the independent recount found it (the verdict: one row per
   check), then the family's risk figures (:meth:`Release.report_figures`);
3. ``utility`` — the family's utility figures (they need the original data);
4. ``reproduce`` — how to re-check the release and to make it again.

Nothing here recomputes a guarantee or a figure: the verdict comes from the recount
(:func:`ppdm_dask.verify` on the written files, or the one done when it was written) and the
figures from the family.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..release.figures import Figures, Table, Value, plain
from ..release.manifest import created, versions

__all__ = ["REPORT_FORMAT", "REPORT_VERSION", "AUDIENCES", "SECTIONS", "build_report", "for_audience"]

REPORT_FORMAT = "ppdm-report"
REPORT_VERSION = 1
AUDIENCES = ("internal", "external")
#: (id, title) of the sections, in order
SECTIONS = (
    ("released", "What was released"),
    ("privacy", "Privacy"),
    ("utility", "Utility"),
    ("reproduce", "How to reproduce"),
)


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
        return {"id": rel.get("id"), "key_fingerprint": rel.get("key_fingerprint"),
                "input_fingerprint": ((manifest or {}).get("input") or {}).get("fingerprint")}
    key = getattr(release, "_key", None)
    if key is None:
        return {"id": None, "key_fingerprint": None, "input_fingerprint": None}
    return provenance(key, release.identity)


def _released(release: Any, manifest: Mapping[str, Any] | None, url: str | None) -> tuple[list[dict], dict, dict]:
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
        record["files"] = [{"file": p["file"], "rows": p.get("rows"), "bytes": p.get("bytes"), "sha256": p.get("sha256")}
                           for p in [*parts, *(manifest.get("files") or [])]]
        record["manifest_sha256"] = manifest.get("_sha256")
    # the owner's record of the input (the release in memory knows it; public files do not)
    inp = dict(getattr(release, "owner_input", None) or getattr(release, "input_info", {}) or {})
    items: list[dict] = [
        Table("released_what", "Release", ["", ""], _rows({
            "family": record["family"], "method": record["method"], "written": record["url"] or "(not written)",
            "rows released": record.get("rows"), "created": record["created"], "release id": record["id"] or "(none)",
            "key fingerprint": record["key_fingerprint"] or "(none)",
            "manifest SHA-256": record.get("manifest_sha256") or "(not written)"})).to_dict(),
        Table("released_parameters", "Public parameters", ["parameter", "value"], _rows(record["parameters"])).to_dict(),
    ]
    if record["roles"]:
        items.append(Table("released_roles", "Attribute roles", ["role", "columns"],
                           [[r, ", ".join(map(str, c)) if isinstance(c, list) else c] for r, c in record["roles"].items() if c]).to_dict())
    if record["overrides"]:
        items.append(_text("released_overrides", "Privacy floors explicitly overridden by the user (recorded in the manifest): "
                           + ", ".join(record["overrides"]) + "."))
    files = inp.get("files") or []
    inp_rows = {"url": inp.get("url"), "format": inp.get("format"), "rows": inp.get("rows"),
                "columns": ", ".join(map(str, (inp.get("schema") or {}).keys())) or None,
                "files": len(files), "fingerprint": prov["input_fingerprint"]}
    items.append(Table("released_input", "Input", ["", ""], _rows({k: v for k, v in inp_rows.items() if v is not None})).to_dict())
    if files:
        items.append(Table("released_input_files", "Input files", ["file", "bytes", "SHA-256"],
                           [[f.get("file"), f.get("bytes"), f.get("sha256")] for f in files[:200]]).to_dict())
    if record.get("files"):
        items.append(Table("released_files", "Output files", ["file", "rows", "bytes", "SHA-256"],
                           [[f["file"], f["rows"], f["bytes"], f["sha256"]] for f in record["files"][:200]]).to_dict())
    items.append(Table("released_versions", "Versions", ["package", "version"], _rows(record["versions"])).to_dict())
    return items, record, {**inp, "fingerprint": inp_rows["fingerprint"]}


_FILE_CHECK = "file matches the manifest"


def _headline(verdict: Any) -> str:
    """``holds``, ``FAILS``, or — when floors were overridden — that the guarantee holds only
    with them (an override must never read like a plain pass)."""
    if not verdict.ok:
        return "FAILS"
    overridden = [c.name for c in verdict.checks if c.overridden]
    return "holds only with overridden floors: " + ", ".join(overridden) if overridden else "holds"


def _privacy(verdict: Any, verified: str, figures: Figures) -> list[dict]:
    def status(c: Any) -> str:
        return "ok" if c.ok else ("overridden" if c.overridden else "FAILED")

    # one row per check, but the per-file checks of a many-file release in one row (failures named)
    files = [c for c in verdict.checks if c.name == _FILE_CHECK]
    rows = []
    for c in verdict.checks:
        if c.name != _FILE_CHECK:
            rows.append([c.name, status(c), plain(c.figure), plain(c.threshold), c.where or "", c.detail])
        elif c is files[0]:
            bad = [f for f in files if not f.ok]
            rows.append(["files match the manifest", "FAILED" if bad else "ok", len(files) - len(bad), len(files),
                         ", ".join(f.where or "" for f in bad[:20]), "size and SHA-256 of every file listed in the manifest"])
    items = [
        Value("privacy_verified", "Guarantee", _headline(verdict), note=verified).to_dict(),
        Table("privacy_checks", "Independent checks", ["check", "status", "figure", "threshold", "where", "detail"], rows).to_dict(),
    ]
    return items + [i.to_dict() for i in figures.risk]


def _reproduce(record: Mapping[str, Any], original_url: str | None) -> list[dict]:
    url = record.get("url") or "RELEASE"
    orig = f" --original {original_url}" if original_url else " --original SRC"
    return [
        _text("reproduce_verify", f"Re-check the release from its files alone: ppdm verify {url}"
              f" (and against its input: ppdm verify {url}{orig})."),
        _text("reproduce_report", f"Make this report again: ppdm report {url}{orig}."),
        _text("reproduce_release", "Make the release again: run the same method with the public parameters above on the same "
              "input with the same key file (--key-file). Every random step derives from the key and the release's identity "
              "(method, parameters, input), so the output files have the same SHA-256 as listed; the key holder checks "
              f"that a release was made from an input with: ppdm --key-file KEY verify {url}{orig}."),
    ]


def build_report(release: Any, original: Any = None, *, verdict: Any, verified: str, audience: str = "internal",
                 figures: Figures | None = None, manifest: Mapping[str, Any] | None = None, url: str | None = None,
                 original_url: str | None = None) -> dict[str, Any]:
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

        raise InvalidParameter(f"audience must be one of {AUDIENCES}, got {audience!r}", cli="--audience internal|external")
    figures = figures or Figures()
    released, record, inp = _released(release, manifest, url)
    utility = [i.to_dict() for i in figures.utility]
    notes = list(figures.notes)
    if original is None:
        notes = [n for n in notes if "need the original" not in n]  # the families say it their way; once is enough
        notes.append("No original data was given: the utility figures and the original's risk need it (--original SRC).")
    doc = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "audience": audience,
        "created": created(),
        "release": plain(record),
        "input": plain(inp),
        "verdict": verdict.to_dict(),
        "summary": plain(release.summary()),
        "public_summary": plain(_public_summary(release, manifest, record)),
        "sections": [
            {"id": "released", "title": SECTIONS[0][1], "items": released},
            {"id": "privacy", "title": SECTIONS[1][1], "items": _privacy(verdict, verified, figures)},
            {"id": "utility", "title": SECTIONS[2][1], "items": utility},
            {"id": "reproduce", "title": SECTIONS[3][1], "items": _reproduce(record, original_url)},
        ],
        "notes": notes,
    }
    return for_audience(doc, audience)


def _public_summary(release: Any, manifest: Mapping[str, Any] | None, record: Mapping[str, Any]) -> dict[str, Any]:
    """The summary a public file may hold (the manifest's, or :meth:`Release.public_summary`)."""
    if manifest is not None and manifest.get("summary"):
        return dict(manifest["summary"])
    return release.public_summary(int(record.get("rows") or 0))


def _external_item(item: Mapping[str, Any]) -> bool:
    """Whether an item may go into the external report: only what the release itself shows."""
    return item.get("about", "release") == "release"


def for_audience(doc: Mapping[str, Any], audience: str) -> dict[str, Any]:
    """``doc`` for ``audience``: ``external`` keeps only what anyone holding the release could
    recount from it — no figure of the original or compared with it, nothing about the input but
    its keyed fingerprint, no check decided against the original (the external verdict is the
    recount from the release's files)."""
    out = json.loads(json.dumps(doc))
    out["audience"] = audience
    if audience == "internal":
        return out
    out["input"] = {"fingerprint": (doc.get("input") or {}).get("fingerprint")}
    public = out.pop("public_summary", None)  # never fall back to the owner's summary
    out["summary"] = public or {k: out["summary"][k] for k in ("family", "method", "parameters")}
    if out["release"].get("roles"):
        out["release"]["roles"] = {**{k: v for k, v in out["release"]["roles"].items() if k != "identifier"},
                                   "identifiers_dropped": len(out["release"]["roles"].get("identifier") or [])}
    for section in out["sections"]:
        section["items"] = [i for i in section["items"] if _external_item(i)
                            and i.get("id") not in ("released_input_files", "released_input")]
        for i in section["items"]:
            if i.get("id") == "released_roles":
                i["rows"] = [r for r in i["rows"] if r[0] != "identifier"]
    out["notes"] = [*out.get("notes", []), "External report: only what can be recounted from the release itself is shown; "
                    "figures of the original data and comparisons with it are in the owner's internal report."]
    return out

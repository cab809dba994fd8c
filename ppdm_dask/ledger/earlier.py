"""The earlier releases of an input, read back from where the ledger says they were written
(docs/ledger.md; docs/condensation.md#repeated-releases,
docs/krimp.md#repeated-releases).

Some families compose the released records themselves rather than figures: two synthetic
releases of one input together hold twice as many generated records, and what counts is how
close the *union* comes to the original. The ledger keeps where each release was written
(``destination``) and its release id; an earlier release is **readable** when that destination
still holds a committed release (its manifest) whose ``release.id`` is the record's id. A
folder deleted or moved, overwritten by another release, or not committed yet is not, and the
composition says which and why (in the job's output, the ledger's record and the owner's
report).

Reading a manifest is one small read per earlier release; the data stay lazy until a family
computes a figure of the union (:mod:`ppdm_dask.condensation.composition`,
:mod:`ppdm_dask.krimp.composition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PPDMError
from ..release.figures import Figures, Text, Value
from .compose import Composition, default_composition, resolve
from .store import Record

__all__ = [
    "union_start",
    "Earlier",
    "unreadable_reason",
    "open_earlier",
    "count_composition",
    "composition_of",
    "union_items",
    "short_id",
]


def short_id(record: Record) -> str:
    """The first 12 characters of a record's release id (enough to find it: ``ppdm ledger show``)."""
    return (record.release_id or record.uid)[:12]


@dataclass
class Earlier:
    """An earlier release of the input: its ledger record and, when readable, the release read
    back (data lazy); else ``reason`` says why not."""

    record: Record
    release: Any = None
    reason: str = ""

    @property
    def readable(self) -> bool:
        return self.release is not None

    def line(self) -> str:
        """``<id> at <destination>: <why not readable>``."""
        return f"{short_id(self.record)} at {self.record.get('destination')}: {self.reason}"


def _manifest(record: Record, storage_options: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """The manifest at the record's destination, or None and why not."""
    from ..release.base import Release

    dest = record.get("destination")
    if not dest:
        return None, "the ledger records no destination"
    try:
        _, _, manifest = Release.load_manifest(str(dest), storage_options=storage_options)
    except FileNotFoundError:  # DatasetNotFoundError too: nothing there, or no manifest
        if record.status == "pending":
            return None, "not committed yet (its job may still be running)"
        return None, "no committed release there any more (deleted or moved)"
    except (PPDMError, OSError, ValueError) as exc:
        return None, f"cannot be read ({exc})"
    return manifest, ""


def unreadable_reason(record: Record, family: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """Why the earlier release of ``record`` cannot join a union of ``family`` releases ("" when
    it can): only the manifest is read."""
    manifest, why = _manifest(record, storage_options)
    if manifest is None:
        return why
    rel = manifest.get("release") or {}
    if rel.get("id") != record.release_id:
        return f"it holds another release now (id {str(rel.get('id'))[:12]}), overwritten"
    if rel.get("family") != family:
        return f"a {rel.get('family')} release, not one of {family}: not part of the union"
    return ""


def open_earlier(records: Sequence[Record], family: str, *, storage_options: Mapping[str, Any] | None = None) -> list[Earlier]:
    """Every earlier release of ``records``, read back (lazy) where readable as a ``family``
    release."""
    from ..release.base import Release

    out = []
    for r in records:
        why = unreadable_reason(r, family, storage_options)
        if why:
            out.append(Earlier(r, None, why))
            continue
        try:
            out.append(Earlier(r, Release.open(str(r.get("destination")), storage_options=storage_options)))
        except (PPDMError, OSError, ValueError) as exc:
            out.append(Earlier(r, None, f"cannot be read ({exc})"))
    return out


def count_composition(release: Any, earlier: Sequence[Record], storage_options: Mapping[str, Any] | None = None) -> Composition:
    """The composition of a synthetic-data release: the number of releases of the input, how
    many earlier ones are still readable (their union with this one is measured in the owner's
    report, against the original), and a note for each that is not. No limit: the figures of the
    union need the original, which the job composing before its work does not read."""
    comp = default_composition(release, earlier)
    whys = [(r, unreadable_reason(r, release.family, storage_options)) for r in comp.earlier]
    comp.figures["earlier_readable"] = sum(1 for _, why in whys if not why)
    comp.notes += [
        f"earlier release {short_id(r)} at {r.get('destination')} is not in the union: {why}" for r, why in whys if why
    ]
    if comp.earlier:
        comp.notes.append(
            "the copies and distances of the union of the readable releases with this one are in the "
            "owner's report (they need the original)"
        )
    return comp


def composition_of(release: Any) -> Composition | None:
    """The composition of ``release``: the one its write computed, else (a release read from
    disk, e.g. for ``ppdm report``) the one its ledger recorded, found by its release id in the
    ledger the release names (the user's by default); None when there is none."""
    comp = getattr(release, "composition", None)
    if comp is not None:
        return comp
    rel = (getattr(release, "manifest", None) or {}).get("release") or {}
    if not rel.get("id") or not (rel.get("ledger") or {}).get("recorded"):
        return None
    try:
        ledger = resolve(getattr(release, "ledger", "default"))
        if ledger is None:
            return None
        ids = [str(i) for i in ledger.find(rel["id"]).composition.get("earlier") or []]
        return Composition([ledger.find(i) for i in ids])
    except (PPDMError, OSError, ValueError):  # a ledger that is gone: no composition to show
        return None


def union_items(family: str, opened: Sequence[Earlier]) -> list[Any]:
    """The report's items every union shows: the number of releases composed and a note for
    each earlier release not in the union (which, where, why). The destinations are the
    owner's: the notes are ``comparison`` items, left out of the external report."""
    items: list[Any] = [
        Value(
            "union_releases",
            "Releases of this input (this one included)",
            len(opened) + 1,
            unit="releases",
            note="as recorded in the ledger (the manifest shows the same count)",
        )
    ]
    good = [e for e in opened if e.readable]
    if good:
        items.append(
            Text(
                "union_composed",
                f"Measured as one union with this release: {len(good)} earlier {family} "
                "release(s) of this input, "
                + "; ".join(f"{short_id(e.record)} at {e.record.get('destination')}" for e in good)
                + ".",
                about="comparison",
            )
        )
    bad = [e for e in opened if not e.readable]
    if bad:
        items.append(
            Text(
                "union_unreadable",
                "Earlier releases of this input not in the union: " + "; ".join(e.line() for e in bad) + ".",
                about="comparison",
            )
        )
    return items


def union_start(family: str, opened: Sequence[Earlier], original: Any, needs: str) -> tuple[Figures, list[Any]]:
    """The union's first figures (which earlier releases were read, :func:`union_items`) and the
    readable earlier releases to measure it on; none when no earlier release is readable, or
    without the original (a note then says that ``needs`` it)."""
    if not opened:
        return Figures(), []
    fig = Figures(risk=union_items(family, opened))
    good = [e.release for e in opened if e.readable]
    if good and original is None:
        fig.needs_original.append(f"{needs} of the union of the releases need the original data")
        return fig, []
    return fig, good

"""What the report says of the ledger: whether the release was recorded, the earlier releases of
its input and the composed figures and limits (docs/ledger.md#in-the-report).

The composition comes from the release in memory (set when it was written) or, for a release
read back, from its record in the ledger (found by its public id). The public part (the manifest's
``release.ledger``) may go to the external report; the earlier releases and the composed figures
are the owner's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..release.figures import Table, Text, Value, plain
from ..release.verdict import Check

__all__ = ["composition_of", "ledger_items", "composition_checks"]


def composition_of(release: Any) -> tuple[dict[str, Any] | None, list[Any], str]:
    """``(composition as a dict, earlier records, where it was found)`` of ``release``."""
    comp = getattr(release, "composition", None)
    earlier: list[Any] = []
    if comp is not None and hasattr(comp, "to_dict"):
        return comp.to_dict(), list(comp.earlier), "the job that wrote it"
    rid = ((getattr(release, "manifest", None) or {}).get("release") or {}).get("id")
    entry = ((release.manifest or {}).get("release") or {}).get("ledger") if getattr(release, "manifest", None) else None
    if not rid or not (entry or {}).get("recorded"):
        return None, earlier, ""
    from ..errors import PPDMError
    from ..ledger.compose import resolve

    try:
        store = resolve(getattr(release, "ledger", "default"))
        if store is None:
            return None, earlier, ""
        rec = store.find(rid)
        comp_d = rec.composition
        for ident in comp_d.get("earlier") or []:
            try:
                earlier.append(store.find(ident))
            except PPDMError:
                continue
        return comp_d, earlier, f"the ledger at {store.url}"
    except (PPDMError, OSError, ValueError):
        return None, earlier, ""


def composition_checks(comp: Mapping[str, Any] | None) -> list[Check]:
    """The composition's limits as checks (a limit the owner accepted is ``overridden``)."""
    return [Check.from_dict(c) for c in (comp or {}).get("checks") or []]


def ledger_items(release: Any, manifest: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The report's items about the ledger (privacy section)."""
    entry = ((manifest or getattr(release, "manifest", None) or {}).get("release") or {}).get("ledger")
    comp, earlier, found = composition_of(release)
    items: list[dict[str, Any]] = []
    if entry is not None and not entry.get("recorded"):
        items.append(
            Text(
                "ledger_public",
                "This release was not recorded in a ledger (the owner opted out): nothing "
                "composes it with other releases of the same input or the same people.",
            ).to_dict()
        )
        return items
    public = (entry or {}).get("composition") or ({"releases": comp.get("releases", 1)} if comp else None)
    if public is None:
        return items
    n = int(public.get("releases", 1))
    shown = {k: v for k, v in public.items() if k not in ("releases", "limits")}
    text = (
        "No earlier recorded release shares its input or its people."
        if n <= 1
        else f"This release is one of {n} recorded releases that share its input or its people, composed person by "
        "person in the owner's ledger"
        + (": " + ", ".join(f"{k.replace('_', ' ')} {plain(v)}" for k, v in shown.items()) if shown else "")
        + "."
    )
    limits = public.get("limits") or []
    if limits:
        text += (
            " Composition limits: "
            + "; ".join(
                f"{lim['name']} {'held' if lim.get('ok') else ('accepted by the owner although exceeded' if lim.get('overridden') else 'EXCEEDED')}"
                for lim in limits
            )
            + "."
        )
    items.append(Text("ledger_public", text).to_dict())
    if comp is None:
        return items
    people = comp.get("people") or {}
    if people.get("describe"):
        items.append(
            Text(
                "ledger_person",
                f"Composed person by person (the person: {people['describe']}): this release holds "
                f"{int(people.get('persons') or 0):,} people in {int(people.get('records') or 0):,} records"
                + (f", at most {people['bound']} baskets each" if people.get("bound") else "")
                + ".",
                about="comparison",
            ).to_dict()
        )
    if earlier:
        shared = people.get("shared") or {}
        rows = [
            [
                r.release_id or r.uid,
                f"{r.family}/{r.get('method')}",
                r.get("created"),
                r.status,
                r.get("destination"),
                f"{int(shared[r.release_id or r.uid]):,}" if (r.release_id or r.uid) in shared else "same input",
            ]
            for r in earlier
        ]
        items.append(
            Table(
                "ledger_earlier",
                "Earlier releases that share this input or its people (the owner's ledger)",
                ["release id", "family / method", "created", "status", "destination", "people shared"],
                rows,
                about="comparison",
                note=f"Composition recorded by {found}.",
            ).to_dict()
        )
    for name, value in (comp.get("figures") or {}).items():
        if name == "releases":  # said in the text above
            continue
        items.append(
            Value(
                f"ledger_{name}", f"composed over {n} release(s): {name.replace('_', ' ')}", plain(value), about="comparison"
            ).to_dict()
        )
    for note in comp.get("notes") or []:
        items.append(Text(f"ledger_note_{len(items)}", note, about="comparison").to_dict())
    return items

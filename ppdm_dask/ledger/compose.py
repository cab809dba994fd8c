"""Composing a new release with the earlier releases of its input, and the passage of a release
job through the ledger (docs/ledger.md#what-is-composed-how).

A family says what composes through three hooks of :class:`~ppdm_dask.release.Release`:
``ledger_figures()`` (the figures its record keeps), ``ledger_rows()`` (a per-block function of
per-record values in the input's row order, stored privately when the composition needs the
records themselves) and ``compose(earlier, ledger, rows)`` (a :class:`Composition`). Limits are
:class:`~ppdm_dask.release.verdict.Check` s: one that fails refuses the release unless
``allow_composition`` (``--allow-composition``) accepts it, and the acceptance is recorded in the
manifest as an override.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import WeakParameterError
from ..release.names import COMPOSITION_OVERRIDE, COMPOSITION_WHERE
from ..release.verdict import Check
from .store import Ledger, Record, counts_in_composition

__all__ = ["Composition", "CompositionRefused", "Admission", "earlier_releases", "OPTED_OUT", "DEFAULT"]

log = logging.getLogger("ppdm_dask.ledger")

#: the value of ``ledger=`` that means "the default ledger" (``ledger=None`` opts out)
DEFAULT = "default"
#: what the manifest says of a release written with ``ledger=None``
OPTED_OUT = {"recorded": False, "opt_out": "the owner chose not to record this release in a ledger (ledger=None / --no-ledger)"}
#: override name written in the manifest when a composition limit was accepted
OVERRIDE_PREFIX = COMPOSITION_OVERRIDE


class CompositionRefused(WeakParameterError):
    """A release whose composition with the earlier releases of its input exceeds a limit."""


@dataclass
class Composition:
    """A release composed with the earlier releases of its input.

    Attributes
    ----------
    earlier : list of Record
        The earlier releases composed (committed or pending; one per release id).
    figures : dict
        The owner's figures of the composition (``epsilon_per_item``, ``share_below_k`` ...).
    public : dict
        What the public manifest shows: computed from public parameters (or the release's own
        files), never from the input's records.
    checks : list of Check
        The limits; a failing one refuses the release unless accepted.
    notes : list of str
        Sentences for the reader (what could not be composed and why).
    """

    earlier: list[Record] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    public: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def releases(self) -> int:
        """The number of releases composed, this one included."""
        return len(self.earlier) + 1

    def failing(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "releases": self.releases,
            "earlier": [r.release_id or r.uid for r in self.earlier],
            "figures": dict(self.figures),
            "checks": [c.to_dict() for c in self.checks],
            "notes": list(self.notes),
        }

    def manifest_dict(self) -> dict[str, Any]:
        """The public part: the number of releases composed and the family's public figures."""
        return {
            "releases": self.releases,
            **dict(self.public),
            "limits": [{"name": c.name, "ok": bool(c.ok), "overridden": bool(c.overridden)} for c in self.checks],
        }

    def lines(self) -> list[str]:
        """What a job prints before its work: the earlier releases and the composed figures."""
        if not self.earlier:
            return ["ledger: first recorded release of this input"]
        out = [f"ledger: this input has {len(self.earlier)} earlier release(s):"]
        out += [f"  - {r.line()}" for r in self.earlier]
        for name, value in self.figures.items():
            out.append(f"  composed {name.replace('_', ' ')}: {_fmt(value)}")
        out += [f"  {c.line()}" for c in self.checks]
        out += [f"  note: {n}" for n in self.notes]
        return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def earlier_releases(ledger: Ledger, fingerprint: str, release_id: str) -> list[Record]:
    """The releases of the input a new one composes with: committed or pending, not withdrawn,
    not this release (a re-run of the same release writes the same bytes), one per release id."""
    seen: dict[str, Record] = {}
    for r in ledger.records(fingerprint):
        if counts_in_composition(r) and r.release_id != release_id:
            seen.setdefault(r.release_id or r.uid, r)
    return list(seen.values())


class Admission:
    """One release job's passage through the ledger.

    :meth:`open` (before the work): under the input's lock, compose with the earlier releases,
    refuse beyond a limit, write the record (pending). :meth:`finish` (the files written, before
    the commit): compose again with the release's per-record values, refuse beyond a limit,
    store the values. :meth:`committed` / :meth:`failed` after the commit or a failure.
    """

    def __init__(
        self,
        ledger: Ledger,
        release: Any,
        *,
        release_id: str,
        destination: str,
        allow_composition: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.release = release
        self.release_id = release_id
        self.destination = destination
        self.allow = bool(allow_composition)
        self.notify = notify or log.info
        self.record: Record | None = None
        self.composition: Composition | None = None
        self.fingerprint: str | None = None
        self.accepted: list[str] = []

    def _decide(self, comp: Composition) -> None:
        bad = comp.failing()
        if bad and not self.allow:
            c = bad[0]
            raise CompositionRefused(
                f"{c.line()} with {len(comp.earlier)} earlier release(s) of this input in the ledger; refused (an earlier "
                "release that never reached anyone can be withdrawn: ppdm ledger forget ID --reason TEXT)",
                python="write(..., allow_composition=True) (recorded in the manifest)",
                fix="`allow_composition` (recorded in the manifest)",
            )
        # the report tells a composition limit from a floor of the release itself by its where
        comp.checks = [
            Check(
                c.name, c.ok, c.figure, c.threshold, where=COMPOSITION_WHERE, detail=c.detail, overridden=not c.ok, stats=c.stats
            )
            for c in comp.checks
        ]
        for c in bad:
            name = OVERRIDE_PREFIX + c.name
            if name not in self.accepted:
                self.accepted.append(name)

    def open(self) -> Composition:
        """Before the work: compose, refuse or record (pending); prints what it composed."""
        rel = self.release
        self.ledger.check_writable()
        digest = rel.input_digest
        self.fingerprint = self.ledger.input_fingerprint(digest) if digest is not None else "no-input"
        with self.ledger.lock(self.fingerprint):
            earlier = earlier_releases(self.ledger, self.fingerprint, self.release_id) if digest is not None else []
            comp = rel.compose(earlier, self.ledger, None)
            if digest is None:
                comp.notes.append("the release has no identified input: nothing to compose it with")
            self._decide(comp)
            self.record = self.ledger.add(
                {
                    "input": self.fingerprint,
                    "release_id": self.release_id,
                    "family": rel.family,
                    "method": rel.method,
                    "parameters": dict(rel.parameters),
                    "figures": rel.ledger_figures(),
                    "destination": self.destination,
                    "overrides": list(rel.overrides),
                    "composition": comp.to_dict(),
                }
            )
        self.composition = comp
        for line in comp.lines():
            self.notify(line)
        return comp

    def finish(self, rows: np.ndarray | None) -> Composition:
        """The files written, before the commit: compose with the per-record values, refuse or
        store them; returns the composition whose public part the manifest shows."""
        assert self.record is not None
        if rows is not None:
            self.ledger.write_rows(self.record, rows)
            self.record.data["rows"] = True
            earlier = earlier_releases(self.ledger, self.fingerprint or "", self.release_id)
            comp = self.release.compose(earlier, self.ledger, rows)
            self._decide(comp)
            self.composition = comp
            self.ledger.event(self.record, "composed", composition=comp.to_dict())
            if comp.earlier:
                for line in comp.lines():
                    self.notify(line)
        return self.composition  # type: ignore[return-value]

    def committed(self) -> None:
        if self.record is not None:
            self.ledger.event(self.record, "committed")

    def failed(self, exc: BaseException) -> None:
        if self.record is not None:
            try:
                self.ledger.event(self.record, "failed", reason=f"{type(exc).__name__}: {exc}"[:500])
            except Exception:  # the job's own error matters more
                pass


def resolve(ledger: Any) -> Ledger | None:
    """``ledger=`` of an estimator or of ``write``: the default ledger (``"default"``), a
    :class:`Ledger`, a location (str / path), or None (opted out)."""
    if ledger is None:
        return None
    if isinstance(ledger, Ledger):
        return ledger
    if isinstance(ledger, str) and ledger == DEFAULT:
        return Ledger.default()
    return Ledger(ledger)


def default_composition(release: Any, earlier: Sequence[Record]) -> Composition:
    """The composition of a family that composes nothing but the count of releases."""
    comp = Composition(list(earlier))
    comp.figures["releases"] = comp.releases
    return comp


def destination_release_id(destination: str, storage_options: Mapping[str, Any] | None = None) -> str | None:
    """The release id in the manifest committed at ``destination`` (None: nothing committed
    there, or not readable)."""
    from ..errors import PPDMError
    from ..release.base import Release

    try:
        _, _, manifest = Release.load_manifest(destination, storage_options=storage_options)
    except (PPDMError, OSError, ValueError):
        return None
    return str((manifest.get("release") or {}).get("id") or "") or None


def reconcile(ledger: Ledger, storage_options: Mapping[str, Any] | None = None) -> list[tuple[Record, str]]:
    """Settle the pending records: a release committed at its destination (its manifest has the
    record's release id) gets its ``committed`` event; one whose job is gone without a commit
    gets ``failed`` ("not committed"). Returns ``(record, what was done)`` for each changed."""
    changed = []
    for rec in ledger.records():
        if rec.status not in ("pending", "not committed") or rec.last("failed"):
            continue
        if destination_release_id(str(rec.get("destination")), storage_options) == rec.release_id:
            ledger.event(
                rec,
                "committed",
                reason="found committed at its destination by 'ppdm ledger check' (the job ended before recording its commit)",
            )
            changed.append((rec, "committed"))
        elif rec.status == "not committed":
            ledger.event(rec, "failed", reason="the job ended between its record and its commit")
            changed.append((rec, "not committed"))
    return changed

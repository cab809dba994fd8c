"""Composing a new release with the earlier releases that share its input or its people, and
the passage of a release job through the ledger (docs/ledger.md#what-is-composed-how).

A family says what composes through the hooks of :class:`~ppdm_dask.release.Release`:
``ledger_figures()`` (the figures its record keeps), ``ledger_columns()`` / ``ledger_rows()``
(per-record values, kept per person in the ledger, :mod:`.people`) and ``compose(earlier,
ledger, people)`` (a :class:`Composition`): before the work from the parameters and the earlier
releases of the same input, and once the files are written person by person with every earlier
release that shares people with it (:class:`PeopleJoin`). Limits are
:class:`~ppdm_dask.release.verdict.Check` s: one that fails refuses the release unless
``allow_composition`` (``--allow-composition``) accepts it, and the acceptance is recorded in the
manifest as an override.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import WeakParameterError
from ..release.names import COMPOSITION_OVERRIDE, COMPOSITION_WHERE
from ..release.verdict import Check
from .store import Ledger, Record, counts_in_composition

__all__ = ["Composition", "CompositionRefused", "Admission", "PeopleJoin", "earlier_releases", "OPTED_OUT", "DEFAULT"]

log = logging.getLogger("ppdm_dask.ledger")

#: the value of ``ledger=`` that means "the default ledger" (``ledger=None`` opts out)
DEFAULT = "default"
#: what the manifest says of a release written with ``ledger=None``
OPTED_OUT = {"recorded": False, "opt_out": "the owner chose not to record this release in a ledger (ledger=None / --no-ledger)"}
#: override name written in the manifest when a composition limit was accepted
OVERRIDE_PREFIX = COMPOSITION_OVERRIDE
#: the lock held while a release's people are composed and recorded (the whole ledger's: people
#: are shared across inputs)
PEOPLE_LOCK = "people"


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
    people : dict
        The owner's figures of the persons (once composed by person): ``kind`` (who the person
        is), ``persons`` (this release's) and ``shared`` (release id -> people it shares with
        this release).
    """

    earlier: list[Record] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    public: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    people: dict[str, Any] = field(default_factory=dict)

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
            "people": dict(self.people),
        }

    def shared_with(self, record: Record) -> int | None:
        """People this release shares with an earlier one (None: not known)."""
        got = (self.people.get("shared") or {}).get(record.release_id or record.uid)
        return None if got is None else int(got)

    def earlier_line(self, record: Record) -> str:
        """One earlier release: id, family/method, when, where, status, and the people shared."""
        n = self.shared_with(record)
        return record.line() + ("" if n is None else f", {n:,} people shared")

    def manifest_dict(self) -> dict[str, Any]:
        """The public part: the number of releases composed and the family's public figures."""
        return {
            "releases": self.releases,
            **dict(self.public),
            "limits": [{"name": c.name, "ok": bool(c.ok), "overridden": bool(c.overridden)} for c in self.checks],
        }

    def lines(self) -> list[str]:
        """What a job prints: the earlier releases (with the people each shares, once composed
        by person) and the composed figures."""
        by_person = bool(self.people)
        who = f" (the person: {self.people['describe']})" if by_person and self.people.get("describe") else ""
        if not self.earlier:
            if by_person:
                return [f"ledger: no earlier release shares people with this one{who}"]
            return ["ledger: first recorded release of this input (its people are composed once it is written)"]
        if by_person:
            out = [f"ledger: {len(self.earlier)} earlier release(s) share this input or its people{who}:"]
        else:
            out = [f"ledger: this input has {len(self.earlier)} earlier release(s):"]
        out += [f"  - {self.earlier_line(r)}" for r in self.earlier]
        for name, value in self.figures.items():
            out.append(f"  composed {name.replace('_', ' ')}: {_fmt(value)}")
        out += [f"  {c.line()}" for c in self.checks]
        out += [f"  note: {n}" for n in self.notes]
        return out


def _short(record: Record) -> str:
    return (record.release_id or record.uid)[:12]


def _refusal_item(comp: Composition, record: Record) -> str:
    """``<id> at <destination>, <n> people shared`` of an earlier release, for a refusal."""
    n = comp.shared_with(record)
    return f"{_short(record)} at {record.get('destination')}" + ("" if n is None else f", {n:,} people shared")


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


@dataclass
class PeopleJoin:
    """A release's people in the ledger and the earlier releases that share people with it.

    Attributes
    ----------
    ledger : Ledger
    mine : PeopleRef
        This release's people.
    earlier : list of (Record, PeopleRef, int)
        Every earlier release (committed or pending, of a family this one composes with) that
        shares people with this one, with its people and how many it shares.
    missing : list of Record
        Earlier releases of the same input whose people the ledger does not hold.
    compute_kwargs : dict
        ``client=``, ``progress=`` of the job.
    """

    ledger: Ledger
    mine: Any
    earlier: list[tuple[Record, Any, int]]
    missing: list[Record] = field(default_factory=list)
    compute_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def records(self) -> list[Record]:
        return [r for r, _, _ in self.earlier]

    def join(self, kernel: Callable[..., Any], combine: Callable[[list[Any]], Any], columns: Sequence[str] | None = None) -> Any:
        """The family's ``kernel`` over this release's buckets and the earlier ones' rows in
        their ranges, combined (:func:`ppdm_dask.ledger.people.join`)."""
        from .people import join

        return join(
            self.ledger, self.mine, [p for _, p, _ in self.earlier], kernel, combine, columns=columns, **self.compute_kwargs
        )


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
        self.people: Any = None
        self.columns: dict[str, str] = {}
        self.bits = 0

    def _decide(self, comp: Composition) -> None:
        bad = comp.failing()
        if bad and not self.allow:
            c = bad[0]
            listed = "; ".join(_refusal_item(comp, r) for r in comp.earlier[:5]) + (" ..." if len(comp.earlier) > 5 else "")
            first = _short(comp.earlier[0]) if comp.earlier else "ID"
            # with no person column, equal records are taken for one person: say so, and how to name people
            who = (
                " (no person column: equal records in two releases are taken for one person; a person column, "
                "--person or --user, composes by person instead)"
                if comp.people.get("kind") == "record" and any(comp.people.get("shared", {}).values())
                else ""
            )
            raise CompositionRefused(
                f"{c.line()} composed with {len(comp.earlier)} earlier release(s) in the ledger ({listed}){who}; refused "
                f"(an earlier release that never reached anyone can be withdrawn: ppdm ledger forget {first} --reason TEXT)",
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
        from ..data.digest import records_of

        # the input is its records: re-sorted, re-partitioned, CSV or Parquet, one input
        digest = records_of(rel.input_digest)
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

    def people_tasks(self, people: Any, values: list[Any] | None, columns: dict[str, str], n_records: int) -> list[Any]:
        """Tasks that write the release's people into the ledger (one per bucket; run with the
        write, before :meth:`finish`)."""
        from .people import bits_for, bucket_tasks

        assert self.record is not None
        self.people = people
        self.columns = dict(columns)
        self.bits = bits_for(n_records)
        return bucket_tasks(self.ledger, self.record.uid, people.blocks, values, self.columns, self.bits)

    def finish(self, buckets: Sequence[Mapping[str, int]] | None, **compute_kwargs: Any) -> Composition:
        """The files written, before the commit: the release's people made visible in the
        ledger, the earlier releases that share people with it found (whatever their input),
        the release composed with them person by person, refused or recorded; returns the
        composition whose public part the manifest shows.

        Under the ledger's people lock, so that of two jobs finishing at once the second
        composes with the first."""
        from .people import PeopleRef, people_of, write_meta

        assert self.record is not None
        if buckets is None or self.people is None:
            return self.composition  # type: ignore[return-value]
        rel = self.release
        people = self.people
        ref = PeopleRef(
            self.record.uid,
            self.bits,
            self.columns,
            people.kind,
            int(sum(int(b["people"]) for b in buckets)),
            int(sum(int(b["records"]) for b in buckets)),
            rel.family,
            {"describe": people.describe(), "bound": people.bound, **rel.ledger_people_extra()},
        )
        with self.ledger.lock(PEOPLE_LOCK):
            write_meta(self.ledger, ref)
            same_input = {r.uid for r in earlier_releases(self.ledger, self.fingerprint or "", self.release_id)}
            families = set(rel.composes_with())
            candidates, missing = [], []
            seen: set[str] = set()
            for r in self.ledger.records():
                if r.uid == self.record.uid or not counts_in_composition(r) or r.release_id == self.release_id:
                    continue
                key = r.release_id or r.uid
                if key in seen:
                    continue
                got = people_of(self.ledger, r) if r.family in families else None
                if got is not None:
                    seen.add(key)
                    candidates.append((r, got))
                elif r.uid in same_input:
                    seen.add(key)
                    missing.append(r)
            from .people import overlaps

            shared = overlaps(self.ledger, ref, [p for _, p in candidates], **compute_kwargs)
            sharing = [(r, p, n) for (r, p), n in zip(candidates, shared) if n > 0]
            join = PeopleJoin(self.ledger, ref, sharing, missing, dict(compute_kwargs))
            earlier = [r for r, _, _ in sharing] + missing
            # releases of the same input of other families still count (as before the work)
            earlier += [
                r
                for r in earlier_releases(self.ledger, self.fingerprint or "", self.release_id)
                if r.uid in same_input and all(r.uid != e.uid for e in earlier)
            ]
            comp = rel.compose(earlier, self.ledger, join)
            comp.people = {
                "kind": people.kind,
                "describe": people.describe(),
                "persons": ref.people,
                "records": ref.records,
                "bound": people.bound,
                "shared": {(r.release_id or r.uid): int(n) for r, _, n in sharing},
            }
            if missing:
                comp.notes.append(
                    f"{len(missing)} earlier release(s) of this input hold no people in the ledger "
                    "(recorded by an older version, or still being written): composed by their parameters only"
                )
            self._decide(comp)
            self.composition = comp
            self.ledger.event(self.record, "composed", composition=comp.to_dict())
        if comp.earlier:
            for line in comp.lines():
                self.notify(line)
        return comp

    def committed(self) -> None:
        if self.record is not None:
            self.ledger.event(self.record, "committed")

    def failed(self, exc: BaseException) -> None:
        if self.record is not None:
            try:
                refused = isinstance(exc, CompositionRefused)
                self.ledger.event(self.record, "failed", reason=f"{type(exc).__name__}: {exc}"[:500], refused=refused)
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

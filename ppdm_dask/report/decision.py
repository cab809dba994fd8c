"""The decision a report opens with: green, amber or red, and why.

One place decides the colour of every report's summary box (and ``ppdm report``'s console
line), from the independent recount and the family's attack results:

``red``
    a check of the recount fails: the release does not hold what its manifest says;
``amber``
    every check holds, but a privacy floor was overridden (``--allow-weak``), or an attack of
    the threat model succeeds beyond its threshold against its baseline, or the family found a
    risk it warns about (a sensitive column without an attribute-disclosure model ...);
``green``
    every check holds with no override, and no attack exceeds its threshold.

Each reason is one sentence naming the check, the override and its concrete consequence, or
the attack with its figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Decision", "decide", "COLOURS"]

COLOURS = ("green", "amber", "red")


@dataclass(frozen=True)
class Decision:
    """The summary's verdict: ``colour`` and the sentences that decided it (``reasons``), the
    attacks that exceed their threshold first (``risks``: the largest advantages first)."""

    colour: str
    reasons: list[str] = field(default_factory=list)
    risks: list[Any] = field(default_factory=list)

    @property
    def headline(self) -> str:
        return {
            "green": "Release may be approved: every check holds with no override and no attack exceeds its threshold",
            "amber": "Review before approving: the guarantee holds, but with the risks named below",
            "red": "Refuse: a check of the guarantee fails",
        }[self.colour]

    def to_dict(self) -> dict[str, Any]:
        return {
            "colour": self.colour,
            "headline": self.headline,
            "reasons": list(self.reasons),
            "risks": [r.to_dict() for r in self.risks],
        }


def _percent(x: float) -> str:
    from .units import percent

    return percent(x)


def attack_sentence(a: Any) -> str:
    """One sentence of an attack result for the summary."""
    show = (lambda x: f"{float(x):.4g}{(' ' + a.unit) if a.unit else ''}") if a.unit else _percent
    text = (
        f"{a.name}: {show(a.success)} against a baseline of {show(a.baseline)} "
        f"(advantage {show(a.advantage)}, threshold {show(a.threshold)})"
    )
    return text + (f"; {a.found}" if a.found else "")


def warning_text(w: Any) -> str:
    """The sentence of a warning: a string, or a :class:`~ppdm_dask.release.figures.Text`
    (whose ``about`` says whether it describes the original: the owner's report only)."""
    return w if isinstance(w, str) else str(w.text)


def decide(checks: Iterable[Any], attacks: Sequence[Any] = (), warnings: Sequence[str] = ()) -> Decision:
    """The colour and reasons of a report's summary.

    Parameters
    ----------
    checks : iterable of Check
        The verdict's checks (:class:`ppdm_dask.release.Check`).
    attacks : sequence of Attack
        The family's attack results (:class:`ppdm_dask.release.figures.Attack`).
    warnings : sequence of str or Text
        The family's risk warnings (:attr:`Figures.warnings`).
    """
    checks = list(checks)
    failed = [c for c in checks if not c.passed]
    overridden = [c for c in checks if c.overridden]
    flagged = sorted((a for a in attacks if a.flagged), key=lambda a: -a.advantage)
    reasons: list[str] = []
    from ..release.names import COMPOSITION_WHERE
    from .units import show_number as num

    for c in failed:
        reasons.append(
            f"Check failed: {c.name}"
            + (f" ({num(c.figure)} against {num(c.threshold)})" if c.figure is not None else "")
            + (f" in {c.where}" if c.where else "")
            + (f": {c.detail}" if c.detail else "")
            + "."
        )
    for c in overridden:
        against = f" ({num(c.figure)} against {num(c.threshold)})" if c.figure is not None else ""
        if c.where == COMPOSITION_WHERE:  # a limit of the composition with the input's earlier releases
            reasons.append(
                f"Limit of the composition with earlier releases of this input accepted with --allow-composition: "
                f"{c.name}{against}" + (f"; {c.detail}" if c.detail else "") + "."
            )
            continue
        reasons.append(
            f"Floor overridden with --allow-weak: {c.name} ({num(c.figure)} against the floor {num(c.threshold)})"
            + (f"; consequence: {c.detail}" if c.detail else "")
            + "."
        )
    reasons += [attack_sentence(a) + "." for a in flagged]
    texts = [warning_text(w) for w in warnings]
    reasons += [w if w.endswith(".") else w + "." for w in texts]
    colour = "red" if failed else ("amber" if overridden or flagged or warnings else "green")
    # the three largest risks: the flagged attacks, then the largest advantages below threshold
    rest = sorted((a for a in attacks if not a.flagged), key=lambda a: -a.advantage)
    return Decision(colour, reasons, (flagged + rest)[:3])

"""The figures a release contributes to its report: values, plots and tables, as plain data.

A family computes its risk and utility figures (distributed, on the released data and, when
given, on the original) and returns them as a :class:`Figures`; the :mod:`ppdm_dask.report`
package renders them (JSON, HTML with plots) and never recomputes them. Every figure says what
it describes in ``about``:

``"release"``
    computed from the released data alone (anyone holding the release can recompute it);
``"original"``
    describes the original data (e.g. the original's k^m audit curve);
``"comparison"``
    compares the release with the original (utility figures).

Units (``Value.unit``; the report renders them, the JSON keeps the raw number):

``"share"`` (also ``"fraction"``, ``"relative"``, ``"relative error"``, optionally followed by
words: ``"share of records"``)
    a share in [0, 1] (or a relative error, 1 = 100 %), shown as a percentage followed by the
    words: 0.125 with ``"share of records"`` reads "12.5 % of records";
``"%"``
    the value is already a percentage (0-100), shown with "%";
a plural count word (``"records"``, ``"classes"``, ``"itemsets"``, ``"rows"`` ...)
    shown in the singular for exactly one ("1 record", "2 records");
anything else
    shown as given after the number.

A table column whose header starts with one of the share words (``"share of records ..."``,
``"fraction of records ..."``) holds shares: its numbers are shown as percentages.

Plots whose y values are all whole numbers are drawn with integer y ticks from 0; whole-number
x values (and integer histograms, bins centred on integers) with integer x ticks.

The ``external`` report keeps ``release`` figures and the single-number ``comparison`` values
(aggregate utility scores), and leaves out ``original`` figures and the comparison plots and
tables (they show the original's distribution).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["Value", "Series", "Plot", "Table", "Text", "Attack", "Figures", "histogram", "ABOUT", "PLOT_KINDS"]

ABOUT = ("release", "original", "comparison")
#: ``bar``: categories against values; ``line`` / ``step``: x against y, one line per series;
#: ``scatter``: points; ``histogram``: pre-binned, ``x`` the bin edges (one more than ``y``)
PLOT_KINDS = ("bar", "line", "step", "scatter", "histogram")

About = Literal["release", "original", "comparison"]


def plain(value: Any) -> Any:
    """A JSON-friendly copy (numpy scalars and arrays to Python values, NaN to None, inf to a string)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def _check_about(about: str) -> None:
    if about not in ABOUT:
        raise ValueError(f"about must be one of {ABOUT}, got {about!r}")


@dataclass(frozen=True)
class Value:
    """One number (or short text) of the report.

    ``id`` is stable (tests and readers look figures up by it), ``label`` is what the reader
    sees, ``unit`` e.g. ``"records"`` or ``"%"``.
    """

    id: str
    label: str
    value: Any
    about: About = "release"
    unit: str | None = None
    note: str = ""
    #: a single-number comparison score (an aggregate such as a quality score or an accuracy,
    #: never a count of the original) that the external report may show beside the release's
    #: own figures
    score: bool = False

    def __post_init__(self) -> None:
        _check_about(self.about)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": "value",
            "id": self.id,
            "label": self.label,
            "value": plain(self.value),
            "about": self.about,
            "unit": self.unit,
            "note": self.note,
        }
        if self.score:
            out["score"] = True
        return out


@dataclass(frozen=True)
class Series:
    """One series of a plot: ``x`` and ``y`` of equal length (``histogram``: ``x`` the edges)."""

    name: str
    x: Sequence[Any]
    y: Sequence[Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "x": plain(list(self.x)), "y": plain(list(self.y))}


@dataclass(frozen=True)
class Plot:
    """A plot, as data: the report draws it (inline SVG) and keeps its numbers in the JSON.

    Keep plots small (at most a few thousand points: bin or sample on the workers).
    """

    id: str
    title: str
    kind: str
    series: Sequence[Series]
    x_label: str = ""
    y_label: str = ""
    about: About = "release"
    log_x: bool = False
    log_y: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        _check_about(self.about)
        if self.kind not in PLOT_KINDS:
            raise ValueError(f"plot kind must be one of {PLOT_KINDS}, got {self.kind!r}")
        for s in self.series:
            nx, ny = len(s.x), len(s.y)
            if (nx != ny + 1 and ny) if self.kind == "histogram" else nx != ny:
                raise ValueError(f"plot {self.id!r}, series {s.name!r}: {nx} x values for {ny} y values ({self.kind})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "plot",
            "id": self.id,
            "title": self.title,
            "kind": self.kind,
            "series": [s.to_dict() for s in self.series],
            "x_label": self.x_label,
            "y_label": self.y_label,
            "about": self.about,
            "log_x": self.log_x,
            "log_y": self.log_y,
            "note": self.note,
        }


@dataclass(frozen=True)
class Table:
    """A small table (at most a few hundred rows)."""

    id: str
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    about: About = "release"
    note: str = ""

    def __post_init__(self) -> None:
        _check_about(self.about)
        for r in self.rows:
            if len(r) != len(self.columns):
                raise ValueError(f"table {self.id!r}: a row of {len(r)} cells for {len(self.columns)} columns")

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "table",
            "id": self.id,
            "title": self.title,
            "columns": list(self.columns),
            "rows": [plain(list(r)) for r in self.rows],
            "about": self.about,
            "note": self.note,
        }


@dataclass(frozen=True)
class Text:
    """A paragraph of the report (words with this release's numbers in them)."""

    id: str
    text: str
    about: About = "release"

    def __post_init__(self) -> None:
        _check_about(self.about)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "id": self.id, "text": self.text, "about": self.about}


@dataclass(frozen=True)
class Attack:
    """One attack of the threat model (``docs/threat-model.md``), run on this release.

    ``success`` is what the attacker achieves with the release, ``baseline`` what the same
    attacker achieves without it (a guess from public base rates, or chance); the risk is the
    ``advantage``, success - baseline, and the report's summary names the attacks whose
    advantage exceeds ``threshold`` (``flagged``). Both are on the scale ``measure`` says
    (a share in [0, 1] unless ``unit`` says otherwise).

    Attributes
    ----------
    id : str
        Stable id (``attack_attribute_inference`` ...).
    name : str
        The attack, in words ("attribute inference from homogeneous classes").
    success, baseline, threshold : float
    measure : str
        What success counts ("share of records whose salary is guessed right").
    about : {"release", "original", "comparison"}
        ``release``: run on the released data alone; ``comparison``: needs the original.
    found : str
        What was found, with numbers and names (e.g. the homogeneous classes).
    test : str
        The test that bounds this attack on every change (``tests/...::test_...``).
    unit : str, optional
        ``None``: shares, shown as percentages.
    """

    id: str
    name: str
    success: float
    baseline: float
    threshold: float
    measure: str
    about: About = "release"
    found: str = ""
    test: str = ""
    unit: str | None = None

    def __post_init__(self) -> None:
        _check_about(self.about)

    @property
    def advantage(self) -> float:
        return float(self.success) - float(self.baseline)

    @property
    def flagged(self) -> bool:
        return self.advantage > float(self.threshold) + 1e-12

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "attack",
            "id": self.id,
            "name": self.name,
            "success": plain(float(self.success)),
            "baseline": plain(float(self.baseline)),
            "advantage": plain(self.advantage),
            "threshold": plain(float(self.threshold)),
            "flagged": self.flagged,
            "measure": self.measure,
            "about": self.about,
            "found": self.found,
            "test": self.test,
            "unit": self.unit,
        }


Item = Value | Plot | Table | Text


@dataclass
class Figures:
    """The figures of a release's report (see the module docstring).

    Attributes
    ----------
    risk, utility : list
        The risk figures and the utility figures (:class:`Value`, :class:`Plot`,
        :class:`Table`, :class:`Text`).
    notes : list of str
        Sentences for the reader on how the figures were made.
    needs_original : list of str
        What these figures leave out because the original was not given, one sentence each in
        the family's words ("the utility figures ... need the original data"): a list apart, so
        that the report can replace them by its one sentence on how to give the original
        without matching their words.
    guarantee : str
        The guarantee in plain words with this release's parameters and figures (the summary
        box's first sentence).
    protects : str
        What the guarantee protects against, and what it does not.
    learn : list
        "What an attacker can still learn": this release's figures translated into what they
        let an attacker do (items as for ``risk``).
    attacks : list of Attack
        The threat model's attacks run on the release (and the original when given).
    headline : list of str
        Ids of the (up to three) utility values the summary box shows.
    warnings : list of str or Text
        Risks found that are not attacks (e.g. a sensitive column published without any
        attribute-disclosure model); the summary names them and they make it amber.
    """

    risk: list[Item] = field(default_factory=list)
    utility: list[Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    guarantee: str = ""
    protects: str = ""
    learn: list[Item] = field(default_factory=list)
    attacks: list[Attack] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)
    warnings: list[str | Text] = field(default_factory=list)
    needs_original: list[str] = field(default_factory=list)

    def __add__(self, other: Figures) -> Figures:
        def join(a: str, b: str) -> str:
            return " ".join(t for t in (a, b) if t)

        return Figures(
            self.risk + other.risk,
            self.utility + other.utility,
            self.notes + other.notes,
            join(self.guarantee, other.guarantee),
            join(self.protects, other.protects),
            self.learn + other.learn,
            self.attacks + other.attacks,
            self.headline + other.headline,
            self.warnings + other.warnings,
            self.needs_original + other.needs_original,
        )

    def ids(self) -> list[str]:
        return [i.id for i in (*self.risk, *self.utility, *self.learn, *self.attacks)]

    def with_summary(self, summary: Figures) -> Figures:
        """These figures with a family's ``summary`` added: the headline is this one's first (a
        score another part of the report chose), then the summary's, each once, at most three."""
        out = self + summary
        out.headline = list(dict.fromkeys(self.headline + summary.headline))[:3]
        return out


def histogram(values: Any, bins: Any = "auto", *, integer: bool = False) -> tuple[list[float], list[int]]:
    """``(edges, counts)`` of ``values`` for a ``histogram`` plot (driver side, on small data
    such as one value per equivalence class). ``integer``: one bin per integer value up to 50
    distinct values, else integer-aligned bins."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return [0.0, 1.0], [0]
    if integer:
        lo, hi = math.floor(v.min()), math.ceil(v.max())
        width = max(1, math.ceil((hi - lo + 1) / 50))
        edges = np.arange(lo, hi + width + 1, width, dtype=float) - 0.5
        counts, edges = np.histogram(v, bins=edges)
    else:
        counts, edges = np.histogram(v, bins=bins)
    return [float(e) for e in edges], [int(c) for c in counts]

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

The ``external`` report keeps ``release`` figures and the single-number ``comparison`` values
(aggregate utility scores), and leaves out ``original`` figures and the comparison plots and
tables (they show the original's distribution).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np

__all__ = ["Value", "Series", "Plot", "Table", "Figures", "histogram", "ABOUT", "PLOT_KINDS"]

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

    def __post_init__(self) -> None:
        _check_about(self.about)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "value", "id": self.id, "label": self.label, "value": plain(self.value), "about": self.about,
                "unit": self.unit, "note": self.note}


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
        return {"type": "plot", "id": self.id, "title": self.title, "kind": self.kind,
                "series": [s.to_dict() for s in self.series], "x_label": self.x_label, "y_label": self.y_label,
                "about": self.about, "log_x": self.log_x, "log_y": self.log_y, "note": self.note}


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
        return {"type": "table", "id": self.id, "title": self.title, "columns": list(self.columns),
                "rows": [plain(list(r)) for r in self.rows], "about": self.about, "note": self.note}


Item = Value | Plot | Table


@dataclass
class Figures:
    """The risk and the utility figures of a release (see the module docstring)."""

    risk: list[Item] = field(default_factory=list)
    utility: list[Item] = field(default_factory=list)
    #: sentences for the reader (e.g. "utility needs --original")
    notes: list[str] = field(default_factory=list)

    def __add__(self, other: "Figures") -> "Figures":
        return Figures(self.risk + other.risk, self.utility + other.utility, self.notes + other.notes)

    def ids(self) -> list[str]:
        return [i.id for i in (*self.risk, *self.utility)]


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

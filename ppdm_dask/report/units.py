"""How the report writes numbers: units, shares as percentages, plurals (see the units
convention of :mod:`ppdm_dask.release.figures`)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["show_number", "show_value", "percent", "plural", "count_of", "share_unit"]


def show_number(value: Any) -> str:
    """A cell or a value as the reader sees it: thousands separators, 4 significant decimals."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.4f}" if 1e-3 <= abs(value) < 1e6 else f"{value:.4g}"
    return str(value)


#: units whose value is a share in [0, 1], shown as a percentage (the words after the share
#: stay: "fraction of records" -> "12.5 % of records")
_SHARE_UNITS = ("share", "fraction", "relative error", "relative")
#: unit words that take a singular for exactly 1 ("1 record", "2 records")
_IRREGULAR = {"classes": "class", "matches": "match", "boxes": "box", "queries": "query", "entries": "entry"}


def percent(share: float) -> str:
    """A share in [0, 1] as a percentage: ``12.5 %``, ``100 %``, ``0.042 %`` (two significant
    digits below 0.1 %, never a misleading ``0.0 %``)."""
    p = 100 * float(share)
    if not math.isfinite(p):
        return str(p)
    if p == 0:
        return "0 %"
    if abs(p) < 0.1:
        return f"{p:.2g} %"
    text = f"{p:,.1f}"
    for digits in range(2, 7):  # never round a share short of all (or beyond it) to "100 %"
        if p == 100 or float(text.replace(",", "")) != 100:
            break
        text = f"{p:,.{digits}f}"
    return (text[:-2] if text.endswith(".0") else text) + " %"


def plural(unit: str, value: Any) -> str:
    """``unit`` as it reads after ``value``: the singular of a plural unit word for exactly one
    (``records`` -> ``record``, ``classes`` -> ``class``); other units unchanged."""
    if not unit or isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) != 1:
        return unit
    first, _, rest = unit.partition(" ")
    if first in _IRREGULAR:
        first = _IRREGULAR[first]
    elif len(first) > 3 and first.endswith("s") and not first.endswith("ss") and first.isalpha():
        first = first[:-1]
    return first + (" " + rest if rest else "")


def count_of(count: int, word: str) -> str:
    """``count`` and a singular ``word``, plural unless the count is 1 (``1 record``,
    ``2,000 records``): for sentences that name a count."""
    return f"{int(count):,} {word}{'' if int(count) == 1 else 's'}"


def share_unit(unit: str) -> str | None:
    """The words that follow the percentage of a share unit (``""`` for a bare share), or None
    when ``unit`` is not a share."""
    u = unit.strip()
    for s in _SHARE_UNITS:
        if u == s or u.startswith(s + " "):
            return u[len(s) :].strip()
    return None


def show_value(value: Any, unit: str | None = None) -> str:
    """A value with its unit as the reader sees it (see the units convention of
    :mod:`ppdm_dask.release.figures`): shares as percentages (``12.5 % of records``), ``%``
    after a percentage, count words in the singular for one (``1 record``)."""
    unit = unit or ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        rest = share_unit(unit)
        if rest is not None:
            return percent(value) + (" " + rest if rest else "")
        if unit == "%" or unit.startswith("% "):
            return percent(value / 100) + unit[1:]
    text = show_number(value)
    return f"{text} {plural(unit, value)}" if unit else text

"""Render a report document as one self-contained HTML page (Jinja2 template, inline CSS, inline
SVG figures; no script, no external resource, readable offline)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .units import percent, plural, share_unit, show_value
from .units import show_number as _show

if TYPE_CHECKING:
    import jinja2

__all__ = ["render_html", "show_value", "percent", "plural"]

_HEX = re.compile(r"^[0-9a-f]{32,64}$")


def show_attack(a: Mapping[str, Any], key: str) -> str:
    """One figure of an attack result: a percentage for shares (``unit`` None), else the number
    with the attack's unit."""
    x = a.get(key)
    if x is None:
        return "–"
    return percent(x) if not a.get("unit") else show_value(x, a["unit"])


def _cell(value: Any, share: bool) -> str:
    """A table cell: a number of a share column as a percentage."""
    if share and isinstance(value, (int, float)) and not isinstance(value, bool):
        return percent(value)
    return _show(value)


def _cellclass(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "num"
    if isinstance(value, str) and _HEX.match(value):
        return "hash"
    return ""


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ppdm_dask.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["show"] = _show
    env.filters["cellclass"] = _cellclass
    env.globals["show_value"] = show_value
    env.globals["show_attack"] = show_attack
    env.filters["cell"] = _cell
    return env


def _blocks(items: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The items of a section in their order, consecutive values gathered into one grid and
    consecutive attack results into one table."""
    out: list[dict[str, Any]] = []
    for item in items:
        kind = {"value": "values", "attack": "attacks"}.get(item.get("type", ""))
        if kind:
            if not out or out[-1]["type"] != kind:
                out.append({"type": kind, "items": []})
            out[-1]["items"].append(item)
        elif item.get("type") == "table":
            # a column headed "share ..." / "fraction ..." holds shares: percentages, as values with that unit
            share = [i for i, c in enumerate(item.get("columns") or []) if share_unit(str(c)) is not None]
            out.append({**item, "share_columns": share})
        else:
            out.append(dict(item))
    return out


def render_html(doc: Mapping[str, Any]) -> str:
    """The HTML page of a report document (every plot drawn as inline SVG)."""
    from .plots import svg_figures

    svgs = svg_figures(doc)
    title = f"Privacy and utility report: {doc['release']['family']} release ({doc['release']['method']})"
    sections = [{**s, "blocks": _blocks(s["items"])} for s in doc["sections"]]
    return _environment().get_template("report.html.j2").render(doc=doc, sections=sections, svgs=svgs, title=title)

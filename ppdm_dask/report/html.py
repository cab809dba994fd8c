"""Render a report document as one self-contained HTML page (Jinja2 template, inline CSS, inline
SVG figures; no script, no external resource, readable offline)."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Mapping

__all__ = ["render_html"]

_HEX = re.compile(r"^[0-9a-f]{32,64}$")


def _show(value: Any) -> str:
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


def _cellclass(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "num"
    if isinstance(value, str) and _HEX.match(value):
        return "hash"
    return ""


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("ppdm_dask.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["show"] = _show
    env.filters["cellclass"] = _cellclass
    return env


def _blocks(items: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The items of a section in their order, consecutive values gathered into one grid."""
    out: list[dict[str, Any]] = []
    for item in items:
        if item.get("type") == "value":
            if not out or out[-1]["type"] != "values":
                out.append({"type": "values", "items": []})
            out[-1]["items"].append(item)
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

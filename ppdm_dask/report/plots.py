"""Draw the plots of a report (matplotlib, off-screen) as inline SVG.

Each plot is drawn from the numbers the report JSON keeps for it, so the page and the JSON show
the same figures. Text stays text in the SVG (searchable, small); each plot gets its own id
prefix, so several SVGs on one page never share an element id.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["plot_svg", "svg_figures", "integer_axes"]

_COLOURS = ("#1f5fa8", "#d9822b", "#2e8b57", "#a83232", "#6a4fa3", "#7a7a7a")
_WIDTH, _HEIGHT = 6.4, 3.4  # inches: one column of the page


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values if v is not None)


def _finite(x: list[Any], y: list[Any]) -> tuple[list[float], list[float]]:
    pts = [(a, b) for a, b in zip(x, y) if isinstance(a, (int, float)) and isinstance(b, (int, float))]
    return [p[0] for p in pts], [p[1] for p in pts]


def plot_svg(plot: Mapping[str, Any]) -> str:
    """The ``<svg>`` element of one plot item of the report (see
    :class:`ppdm_dask.release.figures.Plot`)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    kind = plot["kind"]
    series = plot.get("series") or []
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": f"ppdm-{plot['id']}",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        fig, ax = plt.subplots(figsize=(_WIDTH, _HEIGHT))
        try:
            _draw(ax, kind, series)
            ax.set_xlabel(plot.get("x_label") or "")
            ax.set_ylabel(plot.get("y_label") or "")
            if plot.get("log_x"):
                ax.set_xscale("symlog" if kind in ("bar", "histogram") else "log")
            if plot.get("log_y"):
                ax.set_yscale("symlog" if kind in ("bar", "histogram") else "log")
            _integer_axes(ax, kind, series, bool(plot.get("log_x")), bool(plot.get("log_y")))
            if len(series) > 1:
                ax.legend(frameon=False)
            fig.tight_layout()
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
        finally:
            plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: the SVG is inline
    # matplotlib writes its own ids; prefix them so two plots never clash on one page
    prefix = re.sub(r"[^A-Za-z0-9_-]", "_", plot["id"]) + "-"
    svg = re.sub(r'id="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(r'(xlink:href|href)="#([^"]+)"', lambda m: f'{m.group(1)}="#{prefix}{m.group(2)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", svg)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{_attr(plot.get("title", ""))}" ', 1)


def _attr(text: str) -> str:
    return str(text).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _draw(ax: Any, kind: str, series: list[Mapping[str, Any]]) -> None:
    n = max(1, len(series))
    for i, s in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        x, y = list(s.get("x") or []), list(s.get("y") or [])
        name = s.get("name") or None
        if kind == "histogram":
            if len(x) == len(y) + 1 and y:
                widths = [b - a for a, b in zip(x[:-1], x[1:])]
                ax.bar(
                    x[:-1],
                    y,
                    width=widths,
                    align="edge",
                    color=colour,
                    alpha=0.75 if n > 1 else 0.9,
                    edgecolor="white",
                    linewidth=0.4,
                    label=name,
                )
        elif kind == "bar":
            if _numeric(x) and n == 1:
                ax.bar(x, y, color=colour, label=name)
            else:  # categories (or several series): grouped bars at integer positions
                pos = range(len(x))
                width = 0.8 / n
                ax.bar([p - 0.4 + width * (i + 0.5) for p in pos], y, width=width, color=colour, label=name)
                ax.set_xticks(
                    list(pos), [str(v) for v in x], rotation=30 if len(x) > 6 else 0, ha="right" if len(x) > 6 else "center"
                )
        elif kind in ("line", "step"):
            xs, ys = _finite(x, y)
            if kind == "step":
                ax.step(xs, ys, where="post", color=colour, label=name)
                if len(xs) <= 30:  # the measured points (a one-point curve is otherwise invisible)
                    ax.plot(xs, ys, "o", markersize=3.5, color=colour)
            else:
                ax.plot(xs, ys, marker="o" if len(xs) <= 30 else None, markersize=3, color=colour, label=name)
        elif kind == "scatter":
            xs, ys = _finite(x, y)
            ax.scatter(xs, ys, s=8, alpha=0.6, color=colour, label=name, linewidths=0)
    if kind == "scatter" and series:
        # the diagonal: where release and original agree
        xs = [v for s in series for v in _finite(list(s.get("x") or []), list(s.get("y") or []))[0]]
        ys = [v for s in series for v in _finite(list(s.get("x") or []), list(s.get("y") or []))[1]]
        if xs and ys:
            lo, hi = min(min(xs), min(ys)), max(max(xs), max(ys))
            ax.plot([lo, hi], [lo, hi], color="#999999", linewidth=0.8, linestyle="--")


def _integers(values: list[Any]) -> bool:
    nums = [v for v in values if v is not None]
    return bool(nums) and _numeric(nums) and all(float(v).is_integer() for v in nums)


def integer_axes(kind: str, series: list[Mapping[str, Any]]) -> tuple[bool, bool]:
    """Whether the x and the y axis of a plot show counts (integer ticks only).

    The rule: y is a count axis when every y value of every series is a whole number (bar
    heights, histogram counts, numbers of itemsets ...); x is when every x value is a whole
    number (line, step, bar, scatter: m, k, sizes, levels), or, for a histogram, when its bin edges sit at
    half-integers (one bin per integer value, :func:`ppdm_dask.release.figures.histogram` with
    ``integer=True``): no tick at "2.5 classes" or at m = 1.5.
    """
    ys = [v for s in series for v in (s.get("y") or [])]
    xs = [v for s in series for v in (s.get("x") or [])]
    y_int = _integers(ys)
    if kind == "histogram":
        x_int = bool(xs) and _numeric(xs) and all(v is not None and (float(v) + 0.5).is_integer() for v in xs)
    else:
        x_int = _integers(xs)
    return x_int, y_int


def _integer_axes(ax: Any, kind: str, series: list[Mapping[str, Any]], log_x: bool, log_y: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    x_int, y_int = integer_axes(kind, series)
    if x_int and not log_x and not (kind == "bar" and not _numeric([v for s in series for v in (s.get("x") or [])])):
        if not (kind == "bar" and len(series) > 1):  # grouped bars keep their category ticks
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if y_int and not log_y:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ys = [v for s in series for v in (s.get("y") or []) if v is not None]
        if (
            ys and min(ys) >= 0 and kind != "scatter"
        ):  # counts are never negative: no axis below zero (an all-zero series included)
            ax.set_ylim(bottom=0, top=max(1, max(ys)) * 1.05)


def svg_figures(doc: Mapping[str, Any]) -> dict[str, str]:
    """``{plot id: <svg>}`` of every plot of a report document, in page order (e.g. to show them
    in a notebook: ``IPython.display.SVG``)."""
    return {item["id"]: plot_svg(item) for section in doc["sections"] for item in section["items"] if item.get("type") == "plot"}

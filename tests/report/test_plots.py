"""Count axes of report plots: integer ticks (no "2.5 classes", no m = 1.5) and no negative count
axis; other axes keep matplotlib's ticks. The rule is checked on the plot data and on the
drawn SVG's tick labels."""

from __future__ import annotations

import re

from ppdm_dask.release.figures import Plot, Series, histogram
from ppdm_dask.report.plots import integer_axes, plot_svg


def _ticks(svg: str) -> list[str]:
    # tick labels are kept as text (svg.fonttype none)
    return re.findall(r">([-−]?[0-9][0-9.,]*)</text>", svg)


def test_the_rule():
    edges, counts = histogram([5, 5, 6, 8, 9, 9, 9], integer=True)
    assert integer_axes("histogram", [{"x": edges, "y": counts}]) == (True, True)
    assert integer_axes("histogram", [{"x": [0.0, 0.25, 0.5], "y": [3, 1]}]) == (False, True)
    assert integer_axes("step", [{"x": [1, 2, 3], "y": [0.5, 0.25, 0.0]}]) == (True, False)
    assert integer_axes("scatter", [{"x": [5, 6], "y": [5, 5]}]) == (True, True)  # group size against level
    assert integer_axes("scatter", [{"x": [0.1, 2], "y": [1.5, 2]}]) == (False, False)  # supports
    assert integer_axes("bar", [{"x": ["a", "b"], "y": [1, 2]}]) == (False, True)


def test_count_plots_get_integer_ticks():
    edges, counts = histogram([5, 5, 6, 7, 7, 7], integer=True)  # edges at 4.5, 5.5 ...: ticks would say 5.5
    svg = plot_svg(Plot("h", "Class sizes", "histogram", [Series("release", edges, counts)], "size", "classes").to_dict())
    ticks = _ticks(svg)
    assert ticks and all(float(t.replace(",", "").replace("−", "-")).is_integer() for t in ticks), ticks
    # a k^m audit step curve at m = 1, 2 with all-zero counts: no m = 1.5, no negative count
    svg = plot_svg(Plot("s", "Rare itemsets", "step", [Series("release", [1, 2], [0, 0])], "m", "itemsets").to_dict())
    ticks = [float(t.replace(",", "").replace("−", "-")) for t in _ticks(svg)]
    assert ticks and all(t.is_integer() and t >= 0 for t in ticks), ticks


def test_shares_keep_decimal_ticks():
    svg = plot_svg(Plot("l", "Error", "line", [Series("release", [0.1, 0.2, 0.3], [0.01, 0.02, 0.04])], "x", "y").to_dict())
    assert any(not float(t.replace("−", "-")).is_integer() for t in _ticks(svg))

"""Privacy and utility reports of releases: ``report.json`` (versioned, validated against the
JSON Schema shipped here) and one self-contained HTML page with the figures drawn inline.

The families compute their figures (:meth:`ppdm_dask.release.Release.report_figures`) and the
guarantee comes from the independent recount; this package only assembles (:mod:`.build`),
validates (:mod:`.schema`), draws (:mod:`.plots`, :mod:`.html`) and writes (:mod:`.make`).
"""

from .build import AUDIENCES, REPORT_FORMAT, REPORT_VERSION, SECTIONS, build_report, for_audience
from .html import render_html
from .make import make_report, report_destination
from .plots import plot_svg, svg_figures
from .schema import report_schema, validate_report

__all__ = [
    "make_report",
    "build_report",
    "for_audience",
    "render_html",
    "report_schema",
    "validate_report",
    "report_destination",
    "plot_svg",
    "svg_figures",
    "AUDIENCES",
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "SECTIONS",
]

"""The report page in a real browser: headless Chromium renders it to a PNG; the page is not
blank and every figure is drawn where the layout puts it (inside the page, not on another
figure, with ink in its box)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ppdm_dask import open_release
from ppdm_dask.report import SECTIONS

from .browser import layout, screenshot
from .pages import make_page, pages
from .test_report import _figures, people_release  # noqa: F401  (the fixture)


def _png(path: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    img = mpimg.imread(str(path))
    return (img[..., :3] * 255).astype(np.uint8) if img.dtype != np.uint8 else img[..., :3]


def _overlap(a, b) -> bool:
    (x, y, w, h), (ox, oy, ow, oh) = a[:4], b[:4]
    return not (x + w <= ox + 0.5 or ox + ow <= x + 0.5 or y + h <= oy + 0.5 or oy + oh <= y + 0.5)


def check_rendered(html: Path, tmp: Path, png: Path | None = None, decision: dict | None = None) -> dict:
    """Render ``html``; assert the page and every figure are drawn, the decision box comes first
    (its top above every other section's, its colour class that of ``decision``), every section
    is there in order and no two blocks (plots, tables, value grids, the badge) overlap; return
    the layout."""
    box = layout(html, tmp)
    png = screenshot(html, png or tmp / "page.png", int(box["height"]) + 40, tmp)
    img = _png(png)
    ink = (img < 235).any(axis=2)
    assert ink.mean() > 0.02, "the page is blank"
    ids = [s[0] for s in SECTIONS]
    assert set(ids) <= set(box["sections"]), f"sections missing: {set(ids) - set(box['sections'])}"
    tops = [box["sections"][s][1] for s in ids]
    assert tops == sorted(tops), "sections out of order"
    summary = box["sections"]["summary"]
    assert all(summary[1] < box["sections"][s][1] for s in box["sections"] if s != "summary"), "the decision is not first"
    if decision is not None:
        assert summary[4].split() == ["decision", decision["colour"]], (summary[4], decision["colour"])
    rects = []
    for fid, (x, y, w, h) in box["figures"].items():
        assert w > 200 and h > 100, f"{fid} has no room ({w} x {h})"
        assert 0 <= x and x + w <= img.shape[1] + 1 and 0 <= y and y + h <= img.shape[0] + 1, f"{fid} is outside the page"
        region = img[int(y) : int(y + h), int(x) : int(x + w)]
        drawn = (region < 235).any(axis=2).mean()
        assert drawn > 0.01, f"{fid} is empty where the layout puts it"
        assert len(np.unique(region.reshape(-1, 3), axis=0)) > 3, f"{fid} is a flat box"
        for ox, oy, ow, oh, other in rects:
            assert not _overlap((x, y, w, h), (ox, oy, ow, oh)), f"{fid} overlaps {other}"
        rects.append((x, y, w, h, fid))
    blocks = [(b, r) for b, r in (box.get("blocks") or {}).items() if r[2] > 0 and r[3] > 0]
    for i, (b, r) in enumerate(blocks):
        for other, q in blocks[i + 1 :]:
            assert not _overlap(r, q), f"{b} overlaps {other}"
    return box


def test_report_renders_in_chromium(people_release, tmp_path, monkeypatch):  # noqa: F811
    url, _, table = people_release
    rel = open_release(url)
    monkeypatch.setattr(type(rel), "report_figures", lambda self, original=None, **k: _figures())
    doc = rel.report(table, out=str(tmp_path / "page.html"))
    plots = {f"fig-{i['id']}" for s in doc["sections"] for i in s["items"] if i["type"] == "plot"}
    box = check_rendered(Path(doc["paths"]["html"]), tmp_path, decision=doc["decision"])
    assert set(box["figures"]) == plots


def test_a_blank_page_is_caught(tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><body><section id='released'></section></body></html>")
    with pytest.raises(AssertionError, match="blank"):
        check_rendered(page, tmp_path)


def test_a_decision_below_the_details_and_overlapping_blocks_are_caught(tmp_path):
    """The layout checks fail on a page whose decision box comes after another section, and on
    one where a table is drawn over a value grid."""
    filler = "<p>" + "text " * 4000 + "</p>"
    sections = "".join(
        f"<section id='{s}'><h2>{s}</h2>{filler if s == 'learn' else ''}</section>" for s, _ in SECTIONS if s != "summary"
    )
    page = tmp_path / "late.html"
    page.write_text(
        f"<!DOCTYPE html><html><body>{sections}<section id='summary' class='decision green'>x</section></body></html>"
    )
    with pytest.raises(AssertionError, match="out of order|not first"):
        check_rendered(page, tmp_path)
    first = "".join(
        f"<section id='{s}' class='decision green'><h2>{s}</h2>{filler}</section>"
        if s == "summary"
        else f"<section id='{s}'><h2>{s}</h2></section>"
        for s, _ in SECTIONS
    )
    page = tmp_path / "overlap.html"
    page.write_text(
        f"<!DOCTYPE html><html><body>{first}<div class='values' style='position:absolute;top:10px;width:300px;"
        "height:200px'>v</div><table style='position:absolute;top:50px;width:300px;height:100px'><tr><td>t</td>"
        "</tr></table></body></html>"
    )
    with pytest.raises(AssertionError, match="overlaps"):
        check_rendered(page, tmp_path)
    page.write_text(first.join(["<!DOCTYPE html><html><body>", "</body></html>"]))
    with pytest.raises(AssertionError, match="amber"):
        check_rendered(page, tmp_path, decision={"colour": "amber"})


#: two pages in the default suite (a table and a basket release); the others with -m slow
FAST_PAGES = ("relational", "emask")


@pytest.mark.parametrize("name", [n if n in FAST_PAGES else pytest.param(n, marks=pytest.mark.slow) for n in pages()])
def test_family_page(name, tmp_path):
    """The page of a release made by the command line (``docs/reports/``): the decision box
    first in its JSON colour, every section present, no block drawn over another."""
    import json

    json_path, html = make_page(name, tmp_path)
    doc = json.loads(json_path.read_text())
    box = check_rendered(html, tmp_path, decision=doc["decision"])
    plots = {f"fig-{i['id']}" for s in doc["sections"] for i in s["items"] if i["type"] == "plot"}
    assert set(box["figures"]) == plots

"""The report page in a real browser: headless Chromium renders it to a PNG; the page is not
blank and every figure is drawn where the layout puts it (inside the page, not on another
figure, with ink in its box)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ppdm_dask import open_release

from .browser import layout, screenshot
from .test_report import _figures, people_release  # noqa: F401  (the fixture)


def _png(path: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    img = mpimg.imread(str(path))
    return (img[..., :3] * 255).astype(np.uint8) if img.dtype != np.uint8 else img[..., :3]


def check_rendered(html: Path, tmp: Path, png: Path | None = None) -> dict:
    """Render ``html``; assert the page and every figure are drawn; return the layout."""
    box = layout(html, tmp)
    png = screenshot(html, png or tmp / "page.png", int(box["height"]) + 40, tmp)
    img = _png(png)
    ink = (img < 235).any(axis=2)
    assert ink.mean() > 0.02, "the page is blank"
    assert {"released", "privacy", "utility", "reproduce"} <= set(box["sections"])
    tops = [box["sections"][s][1] for s in ("released", "privacy", "utility", "reproduce")]
    assert tops == sorted(tops), "sections out of order"
    rects = []
    for fid, (x, y, w, h) in box["figures"].items():
        assert w > 200 and h > 100, f"{fid} has no room ({w} x {h})"
        assert 0 <= x and x + w <= img.shape[1] + 1 and 0 <= y and y + h <= img.shape[0] + 1, f"{fid} is outside the page"
        region = img[int(y):int(y + h), int(x):int(x + w)]
        drawn = (region < 235).any(axis=2).mean()
        assert drawn > 0.01, f"{fid} is empty where the layout puts it"
        assert len(np.unique(region.reshape(-1, 3), axis=0)) > 3, f"{fid} is a flat box"
        for (ox, oy, ow, oh, other) in rects:
            assert x + w <= ox or ox + ow <= x or y + h <= oy or oy + oh <= y, f"{fid} overlaps {other}"
        rects.append((x, y, w, h, fid))
    return box


def test_report_renders_in_chromium(people_release, tmp_path, monkeypatch):  # noqa: F811
    url, _, table = people_release
    rel = open_release(url)
    monkeypatch.setattr(type(rel), "report_figures", lambda self, original=None, **k: _figures())
    doc = rel.report(table, out=str(tmp_path / "page.html"))
    plots = {f"fig-{i['id']}" for s in doc["sections"] for i in s["items"] if i["type"] == "plot"}
    box = check_rendered(Path(doc["paths"]["html"]), tmp_path)
    assert set(box["figures"]) == plots


def test_a_blank_page_is_caught(tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><body><section id='released'></section></body></html>")
    with pytest.raises(AssertionError, match="blank"):
        check_rendered(page, tmp_path)

"""Test-only helpers: render a report page in headless Chromium and find where its figures are.

Chromium is Debian's ``chromium`` (CI installs it; ``.ci/run``). The page itself has no script;
for the layout check the test writes a copy with a small script that records the bounding box of
every figure into the DOM, which ``--dump-dom`` prints after layout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-extensions",
    "--force-device-scale-factor=1",
    "--allow-file-access-from-files",
]
WIDTH = 1100

_PROBE = """<script>
window.addEventListener('load', function () {
  var out = {height: document.documentElement.scrollHeight, figures: {}, sections: {}};
  document.querySelectorAll('figure.plot').forEach(function (f) {
    var r = f.querySelector('svg').getBoundingClientRect();
    out.figures[f.id] = [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
  });
  document.querySelectorAll('section').forEach(function (s) {
    var r = s.getBoundingClientRect();
    out.sections[s.id] = [r.left, r.top + window.scrollY, r.width, r.height, s.className];
  });
  out.blocks = {};
  document.querySelectorAll('figure.plot, table, div.values, .decision-badge').forEach(function (b, i) {
    var r = b.getBoundingClientRect();
    out.blocks[(b.id || b.tagName.toLowerCase() + '-' + b.className) + '#' + i] = [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
  });
  var pre = document.createElement('pre'); pre.id = 'ppdm-layout'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    """The Chromium executable; skipped (failed under CI=true) when missing."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("Chromium is not installed (.ci/run installs Debian's chromium)")
    pytest.skip("Chromium is not installed: the rendering test needs Debian's chromium (apt-get install chromium)")


def _run(args: list[str], tmp: Path) -> str:
    env = {**os.environ, "HOME": str(tmp)}  # a profile of its own, never the user's
    proc = subprocess.run(
        [chromium(), *_FLAGS, f"--user-data-dir={tmp / 'profile'}", *args], capture_output=True, text=True, timeout=120, env=env
    )
    if proc.returncode != 0:
        raise AssertionError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def layout(html: Path, tmp: Path) -> dict:
    """``{"height", "figures": {id: [x, y, w, h]}, "sections": {id: [x, y, w, h, class]},
    "blocks": {...}}`` of the page as laid out (``blocks``: every plot, table, value grid and the
    decision badge)."""
    probe = tmp / "probe.html"
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    dom = _run(["--virtual-time-budget=5000", f"--window-size={WIDTH},1000", "--dump-dom", probe.as_uri()], tmp)
    m = re.search(r'<pre id="ppdm-layout">(.*?)</pre>', dom, re.S)
    assert m, "the layout probe did not run"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(html: Path, png: Path, height: int, tmp: Path) -> Path:
    """Render the page (without the probe) at its full height to ``png``."""
    _run([f"--window-size={WIDTH},{height}", f"--screenshot={png}", html.as_uri()], tmp)
    assert png.exists(), "chromium wrote no screenshot"
    return png

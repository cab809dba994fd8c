"""Make the report pages of ``docs/reports/``: one small release per family from the bundled
samples (``tests/report/pages.py`` lists the commands), its internal report, and a screenshot of
the page in headless Chromium (``<family>.png``; the first ``--height`` pixels of the page).

Run from the repository root::

    python docs/reports/make_pages.py            # every page
    python docs/reports/make_pages.py km emask   # some
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.report.browser import layout, screenshot  # noqa: E402
from tests.report.pages import make_page, pages  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"pages to make (default: all of {', '.join(pages())})")
    parser.add_argument("--height", type=int, default=2400, help="screenshot height in pixels (the page's top)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent), help="folder of the PNG files")
    args = parser.parse_args(argv)
    for name in args.names or list(pages()):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            json_path, html = make_page(name, tmp)
            decision = json.loads(json_path.read_text())["decision"]
            height = min(args.height, int(layout(html, tmp)["height"]) + 20)
            png = screenshot(html, Path(args.out) / f"{name}.png", height, tmp)
            print(f"{name}: {decision['colour'].upper()} {decision['headline']} -> {png}")


if __name__ == "__main__":
    main()

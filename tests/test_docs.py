"""The method pages under docs/ and the citations of them in the code.

* Every ``docs/<page>.md#<anchor>`` and every ``docs/<page>.md, "<heading>"`` cited in the package,
  the tests or the benchmarks names a page that exists and a heading of that page (anchors are
  computed from the headings as GitHub renders them).
* No file under ppdm_dask/ or tests/ cites the private design notebook the project was built
  from: its name (SPEC), its erratum ids (E0-1 ...), its oracle ids (O2-1 ...) or its scripts
  folder. The project documents what it implements in docs/ instead.
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = (
    "index",
    "mining",
    "emask",
    "sketches",
    "condensation",
    "anonymity",
    "krimp",
    "randomness",
    "data",
    "events",
    "report",
    "ledger",
    "threat-model",
    "architecture",
    "benchmarks",
)
SCANNED = ("ppdm_dask", "tests", "benchmarks")

#: ``docs/<page>.md#<anchor>`` (an anchor never contains '.', ')' or quotes: GitHub drops punctuation)
ANCHOR_CITE = re.compile(r"docs/([\w-]+)\.md#([\w-]+)")
#: ``docs/<page>.md, "<heading>"`` (the heading may wrap onto the next comment line)
HEADING_CITE = re.compile(r'docs/([\w-]+)\.md,\s*(?:#\s*)?"([^"]+)"')
#: a link to a page without anchor
PAGE_CITE = re.compile(r"docs/([\w-]+)\.md")

#: what a citation of the design notebook looks like
FORBIDDEN = {
    "SPEC": re.compile(r"\bSPEC\b"),
    "erratum id": re.compile(r"\bE[0-9]-[0-9]+\b"),
    "oracle id": re.compile(r"\bO[0-9]-[0-9]+\b"),
    "spec_checks": re.compile(r"spec_checks"),
}

#: Lines that must keep a forbidden word because it is a test *input*, not a citation:
#: tests/krimp/test_krimp.py imports the reference implementation of KRIMP from the shared
#: data folder at run time; its folder and file names are part of that lookup.
ALLOWED_LINES = {
    ("tests/krimp/test_krimp.py", 'path = shared_data.parent / "spec_checks" / "krimp_std.py"'),
}

#: TEMPORARY: files of work in progress elsewhere whose citations the lead replaces. Empty this
#: set once they cite docs/ pages (test_pending_list_is_still_needed says when); the test then
#: covers them too.
PENDING_FILES: set[str] = set()


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, markup characters and punctuation
    removed (letters, marks, digits, connectors such as ``_``, spaces and hyphens kept), spaces
    turned into hyphens."""
    text = heading.strip().lower()
    kept = [ch for ch in text if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"]
    return "".join(kept).replace(" ", "-")


def page_anchors(path: Path) -> dict[str, str]:
    """``anchor -> heading`` of every heading of a Markdown page (outside fenced code blocks),
    repeated anchors numbered ``-1``, ``-2`` ... as GitHub does."""
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if fence or not m:
            continue
        base = github_anchor(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out[base if n == 0 else f"{base}-{n}"] = m.group(2)
    return out


def _files(folders=SCANNED):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".md", ".txt", ".toml", ".cfg"):
                yield path


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.fixture(scope="module")
def anchors() -> dict[str, dict[str, str]]:
    return {p: page_anchors(DOCS / f"{p}.md") for p in PAGES if (DOCS / f"{p}.md").exists()}


def test_github_anchor_rule():
    assert (
        github_anchor("Correction: δ-anonymity uses the largest admissible m")
        == "correction-δ-anonymity-uses-the-largest-admissible-m"
    )
    assert github_anchor("k^m-anonymity of set-valued data") == "km-anonymity-of-set-valued-data"
    assert github_anchor("The `verify` check (Def. 3)") == "the-verify-check-def-3"


def test_every_page_exists_and_the_index_lists_them(anchors):
    assert sorted(anchors) == sorted(PAGES)
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in PAGES:
        if page != "index":
            assert f"({page}.md)" in index, f"docs/index.md does not link {page}.md"


def test_links_between_pages_resolve(anchors):
    for page in PAGES:
        text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w-]*)(?:\.md)?#([^)\s]+)\)", text):
            target = target or page
            assert target in anchors, f"docs/{page}.md links a missing page {target}.md"
            assert anchor in anchors[target], f"docs/{page}.md links {target}.md#{anchor}, which has no such heading"


def test_cited_anchors_and_headings_exist(anchors):
    problems, n_cites = [], 0
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        flat = re.sub(r"\n\s*#\s*", " ", text)  # a heading cited in a comment may wrap
        for page in PAGE_CITE.findall(text):
            if page not in anchors:
                problems.append(f"{_rel(path)}: docs/{page}.md does not exist")
        for page, anchor in ANCHOR_CITE.findall(text):
            n_cites += 1
            if page in anchors and anchor not in anchors[page]:
                problems.append(f"{_rel(path)}: docs/{page}.md has no heading with anchor #{anchor}")
        for page, heading in HEADING_CITE.findall(flat):
            n_cites += 1
            heading = re.sub(r"\s+", " ", heading)
            if page in anchors and github_anchor(heading) not in anchors[page]:
                problems.append(f'{_rel(path)}: docs/{page}.md has no heading "{heading}"')
    assert not problems, "\n".join(problems)
    assert n_cites > 100  # the code does cite the pages


def _pending(rel: str) -> bool:
    # this file names the patterns it looks for, so it is not checked against them
    return rel in PENDING_FILES or rel == "tests/test_docs.py"


def _prose(path: Path) -> list[tuple[int, str]]:
    """``(line number, text)`` of what can cite a document: for Python files the comments and
    string literals (docstrings included; names in the code are not citations, e.g. a constant
    ``SPEC`` holding a Quest data-set name), for other text files every line."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    kinds = {tokenize.COMMENT, tokenize.STRING} | {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in kinds:
            for k, piece in enumerate(tok.string.splitlines()):
                out.append((tok.start[0] + k, piece))
    return out


def test_no_citation_of_the_design_notebook():
    problems = []
    for path in _files(("ppdm_dask", "tests")):
        rel = _rel(path)
        if _pending(rel):
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for no, piece in _prose(path):
            if (rel, lines[no - 1].strip()) in ALLOWED_LINES:
                continue
            for what, pattern in FORBIDDEN.items():
                if pattern.search(piece):
                    problems.append(f"{rel}:{no}: cites the design notebook ({what}): {lines[no - 1].strip()}")
    assert not problems, "\n".join(problems)


def test_pending_list_is_still_needed():
    """The temporary allow-list only holds files that still cite the notebook: once a file is
    fixed, take it out so that the test covers it."""
    fixed = []
    for path in _files(("ppdm_dask", "tests")):
        rel = _rel(path)
        if rel not in PENDING_FILES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not any(p.search(text) for p in FORBIDDEN.values()):
            fixed.append(rel)
    assert not fixed, f"these files no longer cite the notebook; remove them from PENDING_FILES: {fixed}"

"""The declared dependencies: every package the code imports is declared with a lower bound,
``.ci/oldest.txt`` pins each to exactly that bound (the second job of ``.ci/run`` tests that set),
and the installed versions lie in the declared ranges — in the oldest job, equal to the pins."""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.oldest

REPO = Path(__file__).resolve().parents[1]


def _version(text: str) -> tuple[int, ...]:
    """``"2025.5"`` → ``(2025, 5, 0)``: release numbers only, padded for comparison."""
    parts = [int(p) for p in re.match(r"\d+(\.\d+)*", text).group(0).split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def _declared() -> dict[str, str]:
    """``{name: lower bound}`` of ``[project] dependencies``."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    out = {}
    for spec in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?>=([0-9.]+)", spec.replace(" ", ""))
        assert m, f"{spec!r}: every dependency is declared as NAME>=LOWER (a range the oldest job tests)"
        out[m.group(1).lower()] = m.group(3)
    return out


def _pins() -> dict[str, str]:
    lines = [ln.split("#")[0].strip() for ln in (REPO / ".ci" / "oldest.txt").read_text().splitlines()]
    return {name.lower(): v for name, v in (ln.split("==") for ln in lines if ln)}


def _imported() -> dict[str, str]:
    """Top-level third-party modules the package imports outside a ``try`` (optional imports, such
    as psutil for the free-memory guess, are inside one), each with a file that imports it."""
    out: dict[str, str] = {}
    for path in sorted((REPO / "ppdm_dask").rglob("*.py")):
        tree = ast.parse(path.read_text())
        optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) for s in t.body for n in ast.walk(s)}
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            )
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "ppdm_dask":
                    out.setdefault(top, str(path.relative_to(REPO)))
    return out


def test_every_imported_package_is_declared_and_pinned_to_its_bound():
    declared, pins = _declared(), _pins()
    undeclared = {m: f for m, f in _imported().items() if m.lower() not in declared}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    assert set(pins) == set(declared), (sorted(set(declared) - set(pins)), sorted(set(pins) - set(declared)))
    wrong = {n: (declared[n], pins[n]) for n in declared if _version(declared[n]) != _version(pins[n])}
    assert not wrong, f"lower bound in pyproject.toml and pin in .ci/oldest.txt differ: {wrong}"


def test_installed_versions_lie_in_the_declared_ranges():
    """Under ``PPDM_OLDEST_JOB=1`` (set by ``.ci/run``'s second job) they are the pins themselves:
    the job really runs on the oldest set."""
    declared, pins = _declared(), _pins()
    installed = {n: md.version(n) for n in declared}
    below = {n: (v, declared[n]) for n, v in installed.items() if _version(v) < _version(declared[n])}
    assert not below, f"installed below the declared lower bound: {below}"
    if os.environ.get("PPDM_OLDEST_JOB") == "1":
        off = {n: (v, pins[n]) for n, v in installed.items() if _version(v) != _version(pins[n])}
        assert not off, f"the oldest job does not run on the pinned versions: {off}"

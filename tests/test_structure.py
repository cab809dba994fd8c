"""The package's layering, checked from the source: imports only run down the floors, no package
reaches into another package's private module, and the command line stays thin."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "ppdm_dask"

#: floors from the ground up; a module may import its own floor or any floor below it
FLOORS = [
    {"errors", "constraints", "random", "families", "bitops", "lazy"},
    {"graph", "cluster", "progress", "base", "arrow_threads"},
    {"data", "io"},
    {"release", "report", "ledger"},
    {"mining", "metrics", "neighbors"},
    {"emask", "sketch", "condensation", "anonymity", "krimp"},
    {"verification", "cli", "__init__"},
]
FLOOR_OF = {name: i for i, names in enumerate(FLOORS) for name in names}


def _modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def _top(path: Path) -> str:
    """The top-level unit of a module: the sub-package or the module name."""
    rel = path.relative_to(PKG).parts
    return rel[0] if len(rel) > 1 else rel[0][:-3]


def _imports(path: Path) -> list[tuple[tuple[str, ...], int]]:
    """Every imported ppdm_dask module of ``path`` (absolute dotted parts below the package),
    with its line; imports inside functions count too."""
    tree = ast.parse(path.read_text())
    here = list(path.relative_to(PKG).with_suffix("").parts)
    pkg_parts = here[:-1] if here[-1] != "__init__" else here[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[: len(pkg_parts) - (node.level - 1)] if node.level > 1 else pkg_parts
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "ppdm_dask":
                target = node.module.split(".")[1:]
            else:
                continue
            if node.module is None or not target:
                # "from . import a, b": each name is a module of that package
                for alias in node.names:
                    out.append((tuple(target + [alias.name]), node.lineno))
            else:
                out.append((tuple(target), node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ppdm_dask":
                    out.append((tuple(parts[1:]), node.lineno))
    return out


def test_imports_only_run_down_the_floors():
    bad = []
    for path in _modules():
        src = _top(path)
        for target, line in _imports(path):
            if not target:
                continue
            dst = target[0]
            if dst not in FLOOR_OF or src not in FLOOR_OF or dst == src:
                continue
            if FLOOR_OF[dst] > FLOOR_OF[src]:
                bad.append(
                    f"{path.relative_to(PKG.parent)}:{line} imports {'.'.join(target)} (floor {FLOOR_OF[dst]} above {FLOOR_OF[src]})"
                )
    assert not bad, "\n".join(bad)


def test_every_unit_has_a_floor():
    units = {_top(p) for p in _modules()}
    assert units <= set(FLOOR_OF), sorted(units - set(FLOOR_OF))


def test_no_package_imports_a_private_module_of_another():
    bad = []
    for path in _modules():
        src = _top(path)
        for target, line in _imports(path):
            if len(target) >= 2 and target[0] != src and any(p.startswith("_") and p != "__init__" for p in target[1:]):
                bad.append(f"{path.relative_to(PKG.parent)}:{line} imports {'.'.join(target)}")
    assert not bad, "\n".join(bad)


def logical_lines(text: str) -> int:
    """Statements of a module (tokenize's NEWLINE tokens): its size whatever the formatter's
    layout (``ruff format`` puts one argument per line where a call does not fit)."""
    return sum(1 for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.NEWLINE)


def test_logical_lines_ignore_the_layout():
    assert logical_lines("f(a, b)\n") == logical_lines("f(\n    a,\n    b,\n)\n\n# note\n") == 1
    assert logical_lines('"""doc"""\nx = 1\nif x:\n    y = 2\n') == 4


@pytest.mark.parametrize("path", sorted((PKG / "cli").glob("*.py")), ids=lambda p: p.name)
def test_cli_modules_are_thin(path):
    # a command parses its options and calls the library: ~150 statements at most (the limit was
    # 250 lines before the code was formatted with ruff, when the largest module had 147)
    n = logical_lines(path.read_text())
    assert n <= 170, f"{path.name}: {n} statements"

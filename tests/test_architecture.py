"""The family registry and docs/architecture.md, kept true.

* A toy family added the way docs/architecture.md, "Adding a family", says (a ``Release``
  subclass, one ``Family`` registered with ``ppdm_dask.families.register``, a click command
  in its CLI module) is written, verified, opened, reported and run from ``ppdm`` like a
  built-in one; its guarantee is checked against the written files read directly (the oracle),
  and a release that breaks it is never committed.
* Every built-in family resolves: its release class imports with the matching ``family``, its
  CLI module defines the commands it names, its docs page exists, its tags are ``Tag`` members
  and are the tags its package draws from.
* Every hook, function and file that the page names exists, its table of floors is the one
  tests/test_structure.py enforces, and its checklist names every hook the base class leaves
  abstract.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import ppdm_dask
from ppdm_dask import families
from ppdm_dask.errors import DataFormatError, InvalidParameter, PrivacyViolation
from ppdm_dask.families import FAMILIES, SHARED_TAGS, Command, Family
from ppdm_dask.random import Key, Tag
from ppdm_dask.release import Check, Release, TableRelease

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"


# ---------------------------------------------------------------------------- the toy family
class ClipRelease(TableRelease):
    """Toy family (step 1 of the checklist): the table with its column ``value`` clipped to
    ``[lo, hi]``; the guarantee, recounted from the released rows, is that every value lies in
    that interval."""

    family = "toy-clip"
    data_format = "ppdm-toy-clip"

    def guarantee_checks(self, original=None, **compute_kwargs):
        from ppdm_dask.progress import compute

        lo, hi = self.parameters["lo"], self.parameters["hi"]
        low, high, rows = compute(
            self.data["value"].min(), self.data["value"].max(), self.data.map_partitions(len).sum(), **compute_kwargs
        )
        checks = [
            Check("values within [lo, hi]", bool(lo <= low and high <= hi), figure=[float(low), float(high)], threshold=[lo, hi])
        ]
        if original is not None:
            (n,) = compute(original.map_partitions(len).sum(), **compute_kwargs)
            checks.append(Check("every row released", int(rows) == int(n), figure=int(rows), threshold=int(n)))
        return checks

    def original_only_checks(self):
        return [("every row released", "the original's row count")]


def clip(table, lo: float, hi: float, *, key: Key | None = None) -> ClipRelease:
    """The toy family's algorithm."""
    return ClipRelease(table.assign(value=table["value"].clip(lo, hi)), method="clip", parameters={"lo": lo, "hi": hi}, key=key)


@click.command("toy-clip")
@click.argument("src")
@click.argument("dst")
@click.option("--lo", type=float, required=True, help="Smallest released value.")
@click.option("--hi", type=float, required=True, help="Largest released value.")
@click.pass_obj
def toy_clip(obj, src, dst, lo, hi):
    """Clip the column value of the table SRC to [LO, HI] and release it at DST (step 8)."""
    from ppdm_dask.cli._core import job, write_release
    from ppdm_dask.cli._summary import emit_release

    with job(obj, outputs=[dst]) as j:
        table = obj.read_table(src, dtype=["value=float"])
        release = clip(table, lo, hi, key=obj.key())
        manifest, rep = write_release(obj, release, dst, original=table)
    emit_release(obj, release, src=src, dst=dst, manifest=manifest, job=j, report=rep)


TOY = Family(
    "toy-clip",
    f"{__name__}:ClipRelease",
    tags=(),
    cli=__name__,
    commands=(Command("toy-clip", "toy_clip", "Clip a table's column value and release it (toy family)."),),
    docs="docs/architecture.md",
)


@pytest.fixture
def toy():
    """Step 7: the toy family registered (and its command on ``ppdm``); removed afterwards."""
    from ppdm_dask.cli import cli

    families.register(TOY)  # ppdm lists and loads the family's command from the registry
    yield TOY
    families.unregister(TOY.name)
    getattr(cli, "commands", {}).pop("toy-clip", None)


@pytest.fixture
def table_csv(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"id": np.arange(500), "value": rng.normal(0, 5, 500).round(3), "city": rng.choice(list("abc"), 500)})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _written_rows(folder: Path) -> pd.DataFrame:
    """The oracle: the part files read directly with pyarrow, as listed in the manifest."""
    manifest = json.loads((folder / "_SUCCESS").read_text())
    return pd.concat([pq.read_table(folder / p["file"]).to_pandas() for p in manifest["partitions"]], ignore_index=True)


def _run(*args):
    from ppdm_dask.cli import cli

    return CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", *args])


def test_toy_family_end_to_end_in_python(toy, table_csv, tmp_path):
    from ppdm_dask.data.tables import read_table

    path, frame = table_csv
    table = read_table(str(path), dtype=["value=float"])
    url = str(tmp_path / "out")
    manifest = clip(table, -2.0, 4.0, key=Key(11)).write(url)
    assert manifest["release"]["family"] == "toy-clip" and manifest["format"] == "ppdm-toy-clip" and manifest["guarantees"]["ok"]
    # the oracle: the same rows, values clipped by numpy, in a keyed order that is not the input's
    rows = _written_rows(Path(url))
    assert sorted(rows["value"]) == sorted(np.clip(frame["value"].to_numpy(), -2.0, 4.0))
    ids = rows["id"].astype(int).tolist()  # a CSV column not typed stays text
    assert sorted(ids) == list(range(500)) and ids != list(range(500))
    # read back through the registry: the class comes from the family's entry
    opened = Release.open(url)
    assert type(opened) is ClipRelease and opened.parameters == {"lo": -2.0, "hi": 4.0}
    verdict = ppdm_dask.verify(url, original=table)
    assert verdict.ok and verdict["values within [lo, hi]"].figure == [-2.0, 4.0]
    assert verdict["every row released"].figure == 500
    assert verdict["file matches the manifest"].ok
    assert ppdm_dask.verify(url)["every row released"].status == "unchecked"
    # the report: built, validated against the schema, whose family list now holds the toy
    from ppdm_dask.report import make_report, report_schema, validate_report

    doc = make_report(opened, table, out=str(tmp_path / "rep.html"))
    assert doc["release"]["family"] == "toy-clip" and (tmp_path / "rep.html").exists()
    assert "toy-clip" in report_schema()["properties"]["release"]["properties"]["family"]["enum"]
    body = {k: v for k, v in doc.items() if k != "paths"}
    validate_report(body)
    families.unregister("toy-clip")  # the schema's enum is the registry's: unregistered, the toy's report is refused
    try:
        with pytest.raises(DataFormatError, match="family"):
            validate_report(body)
        with pytest.raises(DataFormatError, match="unknown release family 'toy-clip'"):
            Release.open(url)
        unknown = ppdm_dask.verify(url)
        assert not unknown.ok and "unknown family" in unknown["manifest"].detail
    finally:
        families.register(TOY)


def test_toy_release_that_breaks_its_guarantee_is_not_committed(toy, table_csv, tmp_path):
    from ppdm_dask.data.tables import read_table

    path, _ = table_csv
    table = read_table(str(path), dtype=["value=float"])
    unclipped = ClipRelease(table, method="clip", parameters={"lo": -2.0, "hi": 4.0}, key=Key(1))
    with pytest.raises(PrivacyViolation, match="values within"):
        unclipped.write(str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()


def test_toy_family_on_the_command_line(toy, table_csv, tmp_path):
    path, frame = table_csv
    dst = tmp_path / "rel"
    r = _run("--json", "toy-clip", str(path), str(dst), "--lo", "0", "--hi", "1")
    assert r.exit_code == 0, (r.output, r.exception)
    summary = json.loads(r.stdout)
    assert summary["family"] == "toy-clip" and summary["verdict"]["ok"]
    rows = _written_rows(dst)
    assert sorted(rows["value"]) == sorted(np.clip(frame["value"].to_numpy(), 0, 1))
    assert Path(summary["report_html"]).exists()
    r = _run("verify", str(dst), "--original", str(path), "--dtype", "value=float")
    assert r.exit_code == 0, (r.output, r.exception)
    assert "verified" in r.stdout and "values within [lo, hi]" in r.stdout
    r = _run("report", str(dst), "--out", str(tmp_path / "again.html"))
    assert r.exit_code == 0, (r.output, r.exception)
    assert json.loads((tmp_path / "again.json").read_text())["release"]["family"] == "toy-clip"
    # a released value altered: the files no longer match the manifest and verify fails
    part = sorted(dst.glob("part-*.parquet"))[0]
    t = pq.read_table(part).to_pandas()
    t.loc[0, "value"] = 99.0
    t.to_parquet(part, index=False)
    r = _run("verify", str(dst))
    assert r.exit_code == 2 and "VERIFICATION FAILED" in r.stdout


def test_the_toy_command_is_listed_from_the_registry(toy):
    assert families.cli_commands()["toy-clip"] == (__name__, "toy_clip", TOY.commands[0].help)
    r = _run("--help")
    assert r.exit_code == 0 and "toy-clip" in r.stdout


# ---------------------------------------------------------------------------- the registry
def test_register_refuses_what_it_must(toy):
    families.register(TOY)  # the same family again: a no-op
    for bad, match in (
        (Family("Toy", "m:C"), "lower-case"),
        (Family("toy-2", "no-colon"), "module:Class"),
        (Family("toy-2", "m:C", commands=(Command("toy-2", "toy_2", "x"),)), "cli="),
        (Family("toy-2", "m:C", cli="m", commands=(Command("toy-clip", "toy_clip", "x"),)), "already"),
        (Family("toy-2", "m:C", cli="m", commands=(Command("toy-2", "toy_2", "two\nlines"),)), "one line"),
        (Family("toy-clip", "other:Class"), "different family"),
        ("toy-2", "Family"),
    ):
        with pytest.raises(InvalidParameter, match=match):
            families.register(bad)
    with pytest.raises(InvalidParameter, match="built-in"):
        families.unregister("emask")
    with pytest.raises(InvalidParameter, match="unknown family 'nope'"):
        families.get("nope")
    wrong = families.register(Family("toy-wrong", f"{__name__}:ClipRelease"))
    try:
        with pytest.raises(InvalidParameter, match="whose family is 'toy-clip'"):
            families.release_class(wrong.name)
    finally:
        families.unregister(wrong.name)
    assert families.names()[: len(FAMILIES)] == tuple(f.name for f in FAMILIES) and families.names()[-1] == "toy-clip"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_builtin_family_resolves(family):
    klass = families.release_class(family.name)
    assert issubclass(klass, Release) and klass.family == family.name and not getattr(klass, "__abstractmethods__", None)
    module = importlib.import_module(family.cli)
    for command in family.commands:
        obj = getattr(module, command.attribute)
        assert isinstance(obj, click.Command) and obj.name == command.name
        assert families.cli_commands()[command.name] == (family.cli, command.attribute, command.help)
    assert (ROOT / family.docs).is_file()
    assert set(family.tags) <= set(Tag.__members__)


def _tags_named_in(package: Path) -> set[str]:
    return set(re.findall(r"\bTag\.([A-Z_0-9]+)", "\n".join(p.read_text() for p in package.rglob("*.py"))))


def test_every_tag_belongs_to_a_family_or_a_shared_layer():
    claimed = set(SHARED_TAGS).union(*(f.tags for f in FAMILIES))
    assert claimed == set(Tag.__members__)
    by_package: dict[str, set[str]] = {}
    for f in FAMILIES:
        package = f.release.split(":")[0].split(".")[1]
        by_package.setdefault(package, set()).update(f.tags)
    for package, tags in by_package.items():
        assert _tags_named_in(ROOT / "ppdm_dask" / package) - set(SHARED_TAGS) == tags, package


def test_the_registry_module_is_light():
    # loaded without the package's __init__ (which today pulls in dask): families.py and what it
    # imports must not load any of the heavy libraries
    code = f"""
import sys, types
pkg = types.ModuleType("ppdm_dask")
pkg.__path__ = [{str(ROOT / "ppdm_dask")!r}]
sys.modules["ppdm_dask"] = pkg
import ppdm_dask.families as f
assert f.names()[0] == "relational"
heavy = ("dask", "pandas", "numpy", "numba", "scipy", "matplotlib", "pyarrow", "click")
print(",".join(m for m in heavy if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------------- the page
def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_every_name_the_page_gives_exists():
    from ppdm_dask.cli._core import Context

    text = PAGE.read_text(encoding="utf-8")
    code = re.findall(r"`([^`\s]+)`", text)
    owners = {"Release": Release, "Context": Context, "Tag": Tag}
    family_fields = {f.name for f in fields(Family)}
    n = 0
    for name in code:
        if re.fullmatch(r"ppdm_dask(\.\w+)+", name):
            _resolve(name)
        elif m := re.fullmatch(r"(Release|Context|Tag)\.(\w+)", name):
            assert hasattr(owners[m.group(1)], m.group(2)), name
        elif m := re.fullmatch(r"Family\.(\w+)", name):
            assert m.group(1) in family_fields, name
        elif re.fullmatch(r"(ppdm_dask|docs|tests)/[\w/.-]+", name):
            assert (ROOT / name).exists(), name
        else:
            continue
        n += 1
    assert n > 40  # the page does name the code it describes


def test_the_checklist_names_every_open_hook():
    checklist = _section("Adding a family")
    named = set(re.findall(r"`Release\.(\w+)`", checklist))
    assert set(Release.__abstractmethods__) <= named
    assert {"family", "data_format"} <= named
    items = re.findall(r"^(\d+)\. \*\*", checklist, flags=re.M)
    assert items == [str(i) for i in range(1, len(items) + 1)] and len(items) >= 8
    for f in fields(Family):  # every field of a registry entry is explained
        assert f"`Family.{f.name}`" in checklist, f.name


def test_the_floors_are_those_the_structure_test_enforces():
    from tests.test_structure import FLOORS

    rows = re.findall(r"^\|\s*(\d+)\s*\|([^|]+)\|", _section("The floors"), flags=re.M)
    table = [set(re.findall(r"`(\w+)`", units)) for _, units in rows]
    assert [int(i) for i, _ in rows] == list(range(len(FLOORS))) and table == FLOORS


def test_the_registry_never_imports_a_family_up_front():
    tree = ast.parse((ROOT / "ppdm_dask" / "families.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "importlib", "re", "dataclasses", "typing", "errors"}, imported


@pytest.mark.parametrize("path", sorted((ROOT / "ppdm_dask").rglob("_*kernels.py")), ids=lambda p: p.name)
def test_kernels_import_no_dask(path):
    # the page says so: per-partition kernels are plain numpy / numba, the wiring builds the graph
    tree = ast.parse(path.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    assert not imported & {"dask", "distributed"}, imported


def test_a_family_is_imported_only_when_its_release_is_needed():
    # before the registry, reading any release imported every family's module first
    code = """
import sys
import ppdm_dask
from ppdm_dask import families
mods = {f.name: f.release.split(":")[0] for f in families.FAMILIES}
before = [m for m in mods.values() if m in sys.modules]
families.release_class("emask")
print(before, [n for n, m in mods.items() if m in sys.modules])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["[]", "['emask']"]

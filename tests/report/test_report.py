"""The report package: document, schema, audience filter, HTML, files, command line.

The family figures are tested in each family's ``test_report_figures``; here the report is
built around a small relational release (the bundled ``people`` table) and around figures of
every kind, and every number is checked against the JSON it came from or a direct recount.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from ppdm_dask import open_release, verify
from ppdm_dask.anonymity import KAnonymizer, load_hierarchies
from ppdm_dask.cli import cli
from ppdm_dask.data.datasets import sample_files
from ppdm_dask.data.tables import read_table
from ppdm_dask.errors import DataFormatError, DatasetExistsError
from ppdm_dask.random import Key
from ppdm_dask.release import Figures, Plot, Series, Table, Value
from ppdm_dask.release.figures import Attack, Text
from ppdm_dask.report import SECTIONS, for_audience, render_html, report_schema, validate_report
from ppdm_dask.report.html import show_value

KEY = Key(0x7A3F_1234_5678_9ABC_DEF0_1357_2468_ACE0)


def _people():
    csv, zips, _ = sample_files("people")
    table = read_table(str(csv), dtype={"age": "int"})
    hier = load_hierarchies([f"zip={zips}"], None, ["zip"])
    return csv, table, hier


@pytest.fixture(scope="module")
def people_release(tmp_path_factory):
    csv, table, hier = _people()
    rel = KAnonymizer(
        ["age", "sex", "zip"], k=5, l=2, sensitive="diagnosis", identifiers=["name"], method="mondrian", hierarchies=hier, key=KEY
    ).fit_release(table)
    url = str(tmp_path_factory.mktemp("rel") / "people_release")
    rel.write(url)
    return url, csv, table


def _figures() -> Figures:
    """Figures of every kind and every ``about`` (what the families hand to the report)."""
    return Figures(
        risk=[
            Value("risk_max", "Highest risk", 0.2, unit="", note="1 / smallest class"),
            Plot(
                "risk_hist",
                "Class sizes",
                "histogram",
                [Series("release", [0.5, 1.5, 2.5, 3.5], [3, 0, 7])],
                x_label="size",
                y_label="classes",
            ),
            Plot(
                "risk_orig_hist", "Class sizes of the original", "bar", [Series("original", ["a", "b"], [5, 1])], about="original"
            ),
            Value("risk_orig_uniques", "Sample uniques of the original", 0.4, about="original"),
        ],
        utility=[
            Value("utility_ncp", "NCP", 0.3125, about="comparison"),
            Value("utility_score", "Overall quality score", 0.875, about="comparison", unit="share", score=True),
            Value("utility_kept", "Records kept", 1, about="comparison", unit="records"),
            Plot("utility_scatter", "Supports", "scatter", [Series("itemsets", [1, 2, 3], [1.1, 1.9, 3.2])], about="comparison"),
            Plot(
                "utility_curve",
                "Curve",
                "line",
                [Series("release", [1, 2, 3], [0, 0, 1]), Series("original", [1, 2, 3], [4, 9, 20])],
                about="comparison",
            ),
            Plot("utility_step", "Step", "step", [Series("release", [1, 2, 3], [1, 2, 2])]),
            Table("utility_table", "Per column", ["column", "ncp"], [["age", 0.25], ["zip", 0.375]], about="comparison"),
        ],
        notes=["a note for the reader"],
        guarantee="Every record shares its quasi-identifiers with at least 4 others (k = 5).",
        protects="Linkage by quasi-identifiers; not attribute disclosure within a class.",
        learn=[
            Text("learn_class", "An attacker who knows a record's quasi-identifiers narrows it to 5 records."),
            Value("learn_odds", "Largest belief change", 0.2, unit="share"),
        ],
        attacks=[
            Attack(
                "attack_linkage",
                "linkage",
                0.2,
                0.1,
                0.25,
                "share of records re-identified",
                found="smallest class of 5",
                test="tests/anonymity/test_attacks.py::test_linkage",
            ),
            Attack(
                "attack_membership",
                "membership inference",
                0.7,
                0.5,
                0.1,
                "accuracy",
                about="comparison",
                found="needs the original",
            ),
        ],
        headline=["utility_score", "utility_ncp", "utility_missing"],
    )


def section(doc, sid):
    """The items of section ``sid`` of a report document, by id."""
    return {i["id"]: i for i in next(s for s in doc["sections"] if s["id"] == sid)["items"]}


class _Links(HTMLParser):
    """Sections, figures, values and every reference to another resource of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: dict[str, int] = {}
        self.svg_in: str | None = None
        self.refs: list[str] = []
        self.scripts = 0
        self.values: dict[str, str] = {}
        self._value: str | None = None
        self._number = False
        self._figure: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "figure":
            self._figure = a.get("id")
            self.figures[self._figure] = 0
        if tag == "svg" and self._figure:
            self.figures[self._figure] += 1
        if tag == "script":
            self.scripts += 1
        for k in ("src", "href", "xlink:href"):
            if a.get(k) and not a[k].startswith("#"):
                self.refs.append(a[k])
        if tag == "div" and (a.get("id") or "").startswith("value-"):
            self._value = a["id"][6:]
        if tag == "div" and a.get("class") == "number" and self._value:
            self._number = True

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        if tag == "div" and self._number:
            self._number = False
            self._value = None

    def handle_data(self, data):
        if self._number and self._value:
            self.values[self._value] = self.values.get(self._value, "") + data


def _report(rel, original, tmp_path, monkeypatch, **kw):
    monkeypatch.setattr(type(rel), "report_figures", lambda self, original=None, **k: _figures())
    return rel.report(original, out=str(tmp_path / "r.html"), **kw)


# ---------------------------------------------------------------------- the document
def test_sections_schema_and_recount(people_release, tmp_path):
    url, _, table = people_release
    rel = open_release(url)
    doc = rel.report(table, out=str(tmp_path / "r.html"))
    validate_report({k: v for k, v in doc.items() if k != "paths"})
    assert [s["id"] for s in doc["sections"]] == [s[0] for s in SECTIONS]
    assert doc["release"]["family"] == "relational"
    assert doc["release"]["key_fingerprint"] == KEY.fingerprint(bytes.fromhex(doc["release"]["id"]))
    # the guarantee shown is the recount of the files: here recounted again with pandas
    released = pd.read_parquet(url)
    smallest = int(released.groupby(["age", "sex", "zip"], observed=True).size().min())
    check = {c["name"]: c for c in doc["verdict"]["checks"]}["k-anonymity"]
    assert check["figure"] == smallest and check["ok"] == (smallest >= 5)
    assert doc["verdict"]["ok"] == verify(url).ok
    # the input and output files as the manifest lists them, and the manifest's own hash
    manifest_bytes = (Path(url) / "_SUCCESS").read_bytes()
    import hashlib

    assert doc["release"]["manifest_sha256"] == hashlib.sha256(manifest_bytes).hexdigest()
    assert doc["release"]["rows"] == len(released)
    written = json.loads(Path(doc["paths"]["json"]).read_text())
    assert written == {k: v for k, v in doc.items() if k != "paths"}


def test_schema_rejects_what_it_must(people_release, tmp_path):
    url, _, table = people_release
    doc = open_release(url).report(table, out=str(tmp_path / "r.html"))
    doc.pop("paths")
    bad = json.loads(json.dumps(doc))
    bad["sections"] = bad["sections"][::-1]
    with pytest.raises(DataFormatError, match="sections"):
        validate_report(bad)
    bad = json.loads(json.dumps(doc))
    bad["sections"][2]["items"][0]["about"] = "elsewhere"
    with pytest.raises(DataFormatError, match="about|sections"):
        validate_report(bad)
    bad = json.loads(json.dumps(doc))
    bad["release"]["key"] = "00"
    with pytest.raises(DataFormatError):
        validate_report(bad)
    # version 2: the decision first, with a colour of the three
    assert doc["version"] == 2 and doc["sections"][0]["id"] == "summary"
    for change in (
        lambda d: d.update(version=1),
        lambda d: d.pop("decision"),
        lambda d: d["decision"].update(colour="yellow"),
        lambda d: d["sections"].insert(0, d["sections"].pop(5)),  # provenance first, as in version 1
        lambda d: d["sections"][3]["items"].append({"type": "attack", "id": "a", "about": "release"}),
    ):
        bad = json.loads(json.dumps(doc))
        change(bad)
        with pytest.raises(DataFormatError):
            validate_report(bad)
    assert report_schema()["$schema"].endswith("2020-12/schema")


def test_external_leaves_out_the_original(people_release, tmp_path, monkeypatch):
    url, csv, table = people_release
    rel = open_release(url)
    internal = _report(rel, table, tmp_path, monkeypatch)
    external = for_audience({k: v for k, v in internal.items() if k != "paths"}, "external")
    validate_report(external)
    items = {i["id"]: i for s in external["sections"] for i in s["items"]}
    assert "risk_orig_hist" not in items and "risk_orig_uniques" not in items  # about the original
    assert "utility_scatter" not in items and "utility_curve" not in items and "utility_table" not in items
    # what the release itself shows, plus single-number comparison scores (and nothing else compared)
    assert "utility_ncp" not in items and "utility_kept" not in items and "risk_hist" in items and "utility_step" in items
    assert "utility_score" in items and "headline_utility_score" in items and "headline_utility_ncp" not in items
    assert all(i.get("about", "release") == "release" or (i["type"] == "value" and i.get("score")) for i in items.values())
    # attacks: only those run on the release alone; the decision is taken on those
    assert "attack_linkage" in items and "attack_membership" not in items
    assert [r["id"] for r in external["decision"]["risks"]] == ["attack_linkage"]
    assert external["decision"]["colour"] == "green" and internal["decision"]["colour"] == "amber"
    # no path: neither the input's nor the release's (the reproduce commands say RELEASE)
    text = json.dumps(external)
    assert str(csv) not in text and "input_files" not in text and "released_input" not in text  # the input's URL and files
    assert (
        url not in text
        and "url" not in external["release"]
        and "RELEASE" in section(external, "reproduce")["reproduce_verify"]["text"]
    )
    assert "written" not in {r[0] for r in section(external, "released")["released_what"]["rows"]}
    assert url in json.dumps(internal)
    assert "name" not in {r[1] for i in items.values() if i["id"] == "released_roles" for r in i["rows"]}
    assert external["input"] == {"fingerprint": internal["input"]["fingerprint"]}
    assert external["summary"] == json.loads((Path(url) / "_SUCCESS").read_text())["summary"]  # the public one
    # Release.report(audience="external") writes the same selection beside the release
    doc = rel.report(table, audience="external", out=str(tmp_path / "ext"))
    assert Path(doc["paths"]["html"]).name == "report-external.html"
    ids = {i["id"] for s in doc["sections"] for i in s["items"]}
    assert ids == set(items)


def test_what_needs_the_original_is_said_once(people_release, tmp_path, monkeypatch):
    # the families' sentences on what needs the original give way to the report's one sentence
    url, _, table = people_release
    rel = open_release(url)
    family = "the frobnication figures need the original data"
    figs = _figures()
    figs.needs_original.append(family)
    monkeypatch.setattr(type(rel), "report_figures", lambda self, original=None, **k: figs)
    alone = rel.report(None, out=str(tmp_path / "alone.html"))
    assert alone["notes"][0] == "a note for the reader" and family not in alone["notes"]
    assert [n for n in alone["notes"] if n.startswith("No original data was given")] == [alone["notes"][-1]]
    given = rel.report(table, out=str(tmp_path / "given.html"))
    assert given["notes"] == ["a note for the reader", family]


def test_html_is_self_contained_and_shows_the_json(people_release, tmp_path, monkeypatch):
    url, _, table = people_release
    doc = _report(open_release(url), table, tmp_path, monkeypatch)
    html = Path(doc["paths"]["html"]).read_text(encoding="utf-8")
    page = _Links()
    page.feed(html)
    assert page.sections == [s[0] for s in SECTIONS]
    plots = [i for s in doc["sections"] for i in s["items"] if i["type"] == "plot"]
    assert plots and {f"fig-{p['id']}" for p in plots} == set(page.figures)
    assert all(n == 1 for n in page.figures.values())  # one inline svg per figure
    assert page.scripts == 0 and page.refs == []  # no script, no external resource
    assert not re.search(r"url\((?!#)", html) and "@import" not in html
    values = {i["id"]: i for s in doc["sections"] for i in s["items"] if i["type"] == "value"}
    assert set(page.values) == set(values)
    for vid, item in values.items():
        assert page.values[vid].strip() == show_value(item["value"], item.get("unit")), vid
    # the numbers of a plot are those of the JSON: the bar heights of the histogram are in its svg
    assert html.count('id="fig-') == len(plots)
    # a page renders from the document alone (render_html is what Release.report wrote)
    assert render_html({k: v for k, v in doc.items() if k != "paths"}).count("<svg") == len(plots)


def test_unwritten_release_report(tmp_path):
    _, table, hier = _people()
    rel = KAnonymizer(
        ["age", "sex", "zip"], k=5, identifiers=["name"], insensitive=["diagnosis"], method="mondrian", hierarchies=hier, key=KEY
    ).fit_release(table)
    doc = rel.report(table)
    assert doc["paths"] is None and doc["release"]["written"] is False
    assert "in memory" in section(doc, "summary")["summary_verified"]["text"]
    assert "in memory" in section(doc, "privacy")["privacy_checks"]["note"]
    doc = rel.report(table, out=str(tmp_path / "mem"))
    assert Path(doc["paths"]["html"]).exists() and Path(doc["paths"]["json"]).name == "report.json"


# ---------------------------------------------------------------------- files
def test_report_files_beside_the_release(people_release, tmp_path):
    url, _, table = people_release
    import shutil

    copy = str(tmp_path / "copy")
    shutil.copytree(url, copy)
    rel = open_release(copy)
    doc = rel.report(table)
    # beside the folder, never inside: copying the release folder does not publish the report
    assert Path(doc["paths"]["html"]) == tmp_path / "copy.report.html" and (tmp_path / "copy.report.json").exists()
    assert sorted(p.name for p in Path(copy).iterdir()) == sorted(p.name for p in Path(url).iterdir())
    assert verify(copy).ok and not [c for c in verify(copy).notes() if c.status == "warning"]
    with pytest.raises(DatasetExistsError):
        rel.report(table)
    rel.report(table, overwrite=True)
    # an internal report inside the folder (as earlier versions wrote it) is a warning
    shutil.copy(tmp_path / "copy.report.json", Path(copy) / "_report.json")
    v = verify(copy)
    assert v.ok and [(c.name, c.status, c.where) for c in v.notes() if c.status == "warning"] == [
        ("no internal report inside the release", "warning", "_report.json")
    ]
    (Path(copy) / "notes.txt").write_text("x")
    v = verify(copy)
    assert not v.ok and v.failures()[0].where == "notes.txt"


def test_csv_release_report_beside_the_file(tmp_path):
    _, table, hier = _people()
    rel = KAnonymizer(
        ["age", "sex", "zip"], k=5, identifiers=["name"], insensitive=["diagnosis"], method="mondrian", hierarchies=hier, key=KEY
    ).fit_release(table)
    out = str(tmp_path / "people.csv")
    rel.write(out)
    doc = open_release(out).report(table)
    assert doc["paths"]["html"] == out + ".report.html" and Path(out + ".report.json").exists()


# ---------------------------------------------------------------------- command line
def test_cli_jobs_write_the_report_and_ppdm_report(tmp_path):
    csv, zips, _ = sample_files("people")
    runner = CliRunner()
    base = ["--scheduler", "sync", "--no-progress"]
    job = [
        "anonymize",
        str(csv),
        "--identifier",
        "name",
        "--qi",
        "age,sex,zip",
        "--insensitive",
        "diagnosis",
        "--k",
        "5",
        "--method",
        "mondrian",
        "--dtype",
        "age=int",
        "--hierarchy",
        f"zip={zips}",
    ]
    r = runner.invoke(cli, [*base, *job[:2], str(tmp_path / "a"), *job[2:]])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a.report.html").exists() and f"report: {tmp_path / 'a.report.html'}" in r.output
    assert not list((tmp_path / "a").glob("_report*"))
    doc = json.loads((tmp_path / "a.report.json").read_text())
    # the job shows the verdict recounted on the written files before the commit (no second pass)
    assert doc["verdict"]["ok"] and "before they were committed" in section(doc, "summary")["summary_verified"]["text"]
    r = runner.invoke(cli, [*base, *job[:2], str(tmp_path / "b"), *job[2:], "--no-report"])
    assert r.exit_code == 0 and not (tmp_path / "b.report.html").exists()
    r = runner.invoke(
        cli, [*base, "report", str(tmp_path / "b"), "--original", str(csv), "--dtype", "age=int", "--audience", "external"]
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "b.report-external.html").exists() and "b.report-external.html" in r.output
    r = runner.invoke(cli, [*base, "report", str(tmp_path / "b"), "--out", str(tmp_path / "elsewhere.html")])
    assert r.exit_code == 0 and (tmp_path / "elsewhere.json").exists()
    # the console opens with the decision, as the page does
    decision = json.loads((tmp_path / "elsewhere.json").read_text())["decision"]
    assert r.output.splitlines()[0] == f"{decision['colour'].upper()}: {decision['headline']}"
    r = runner.invoke(cli, [*base, "report", str(tmp_path / "b"), "--out", str(tmp_path / "elsewhere.html")])
    assert r.exit_code == 2 and "--overwrite" in r.output
    r = runner.invoke(cli, [*base, "report", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no such file or folder" in r.output


RELEASE_COMMANDS = ["emask distort", "sketch", "condense", "anonymize", "access-control", "km-anonymize", "krimp generate"]


@pytest.mark.parametrize("name", RELEASE_COMMANDS)
def test_every_release_command_writes_its_report(name, tmp_path):
    """Each job writes a valid report of its own release beside it (about the job's input and
    with the verdict of the written files), and none with --no-report."""
    from tests.cli.test_errors import COMMANDS, _argv, _inputs

    src = _inputs()[COMMANDS[name][1]]
    base = ["--scheduler", "sync", "--no-progress"]
    runner = CliRunner()
    extra = ["--dtype", "age=int"] if name == "anonymize" else []
    r = runner.invoke(cli, [*base, *_argv(name, src, str(tmp_path / "a")), *extra])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "a.report.json").read_text())
    validate_report(doc)
    manifest = json.loads((tmp_path / "a" / "_SUCCESS").read_text())
    assert doc["release"]["family"] == manifest["release"]["family"] and doc["verdict"] == manifest["guarantees"]
    assert doc["input"]["url"] == src and section(doc, "utility"), "utility against the job's input"
    assert not list((tmp_path / "a").glob("_report*")), "the internal report is never inside the release folder"
    # a second release of the same input (another key): kept out of the ledger, whose composition is not tested here
    r = runner.invoke(cli, [*base, "--no-ledger", *_argv(name, src, str(tmp_path / "b")), *extra, "--no-report"])
    assert r.exit_code == 0, r.output
    assert not list(tmp_path.glob("b.report*")) and verify(str(tmp_path / "b")).ok


def test_an_overridden_floor_never_reads_like_a_plain_pass(tmp_path):
    """A release made with --allow-weak holds only with its overridden floors: the decision box
    is amber (never green) and names each floor with its consequence."""
    _, table, hier = _people()
    rel = KAnonymizer(
        ["age", "sex", "zip"],
        k=1,
        identifiers=["name"],
        insensitive=["diagnosis"],
        method="mondrian",
        hierarchies=hier,
        key=KEY,
        allow_weak=True,
    ).fit_release(table)
    doc = rel.report(table, out=str(tmp_path / "weak.html"))
    floor = next(c for c in doc["verdict"]["checks"] if c.get("overridden"))
    assert doc["verdict"]["ok"] and floor["name"] == "k >= 2"
    assert doc["decision"]["colour"] == "amber"
    assert any("--allow-weak" in r and "k >= 2" in r and floor.get("detail", "") in r for r in doc["decision"]["reasons"])
    html = Path(doc["paths"]["html"]).read_text(encoding="utf-8")
    assert 'class="decision amber"' in html and "green" not in re.findall(r'<section id="summary" class="([^"]+)"', html)[0]
    assert "k &gt;= 2" in html and "Guarantee verified" not in html


def test_summary_box_opens_the_page(people_release, tmp_path, monkeypatch):
    """The decision box is the page's first section: its colour is the JSON decision's, it shows
    the guarantee, what it protects, the largest risks and the headline utility values (ids
    missing from the utility figures are skipped); provenance comes after it."""
    url, _, table = people_release
    doc = _report(open_release(url), table, tmp_path, monkeypatch)
    html = Path(doc["paths"]["html"]).read_text(encoding="utf-8")
    page = _Links()
    page.feed(html)
    assert page.sections[0] == "summary" and page.sections.index("released") > page.sections.index("utility")
    first = re.search(r"<section ([^>]*)>", html).group(1)
    assert 'id="summary"' in first and f'class="decision {doc["decision"]["colour"]}"' in first
    box = html[html.index('<section id="summary"') : html.index("</section>")]
    assert doc["decision"]["headline"] in box and "Every record shares" in box and "Linkage by" in box
    # the flagged comparison attack first (internal), with success against baseline
    risks = doc["decision"]["risks"]
    assert [r["id"] for r in risks] == ["attack_membership", "attack_linkage"] and "70 % against a baseline of 50 %" in box
    assert doc["decision"]["colour"] == "amber" and "membership inference" in doc["decision"]["reasons"][0]
    summary = section(doc, "summary")
    assert [k for k in summary if k.startswith("headline_")] == ["headline_utility_score", "headline_utility_ncp"]
    assert 'id="value-headline_utility_score"' in box and "87.5 %" in box
    # attack results: one row per attack with every column
    attacks = section(doc, "attacks")
    assert set(attacks) == {"attack_linkage", "attack_membership"}
    row = re.search(r'<tr id="attack-attack_linkage"[^>]*>(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[2:7] == ["20 %", "10 %", "10 %", "25 %", "no"] and "test_linkage" in cells[8]
    assert "docs/threat-model.md" in next(s for s in doc["sections"] if s["id"] == "attacks")["note"]


def test_empty_sections_say_why(people_release, tmp_path, monkeypatch):
    """An empty utility section asks for --original only when it was not given; the external
    report given the original says the comparison figures are the owner's."""
    url, _, table = people_release
    rel = open_release(url)
    monkeypatch.setattr(
        type(rel),
        "report_figures",
        lambda self, original=None, **k: Figures(
            utility=[Value("u", "NCP", 0.5, about="comparison")] if original is not None else [], headline=["u"]
        ),
    )
    note = lambda d: next(s for s in d["sections"] if s["id"] == "utility").get("note", "")  # noqa: E731
    without = rel.report(None, out=str(tmp_path / "a.html"))
    assert "--original" in note(without) and "--original" in section(without, "summary")["summary_utility"]["text"]
    external = rel.report(table, audience="external", out=str(tmp_path / "b.html"))
    assert "--original" not in note(external) and "owner's internal report" in note(external)
    assert "owner's internal report" in section(external, "summary")["summary_utility"]["text"]
    html = Path(external["paths"]["html"]).read_text(encoding="utf-8")
    assert "give it with --original" not in html
    internal = rel.report(table, out=str(tmp_path / "c.html"))
    assert not note(internal) and "summary_utility" not in section(internal, "summary")


def test_a_warning_counted_on_the_original_stays_in_the_internal_report(people_release, tmp_path, monkeypatch):
    """A warning about the original (a Text not about the release) makes the owner's report
    amber and is left out of the external one, whose decision is taken without it."""
    url, _, table = people_release
    rel = open_release(url)
    secret = "7 items of the item list are held by a single basket of the original"
    monkeypatch.setattr(
        type(rel),
        "report_figures",
        lambda self, original=None, **k: Figures(
            warnings=[Text("warning_owner", secret, about="comparison"), "a release-side warning"]
        ),
    )
    internal = rel.report(table, out=str(tmp_path / "r.html"))
    assert internal["decision"]["owner_warnings"] == [secret] and internal["decision"]["warnings"] == ["a release-side warning"]
    assert any(secret in r for r in internal["decision"]["reasons"]) and internal["decision"]["colour"] == "amber"
    external = for_audience({k: v for k, v in internal.items() if k != "paths"}, "external")
    validate_report(external)
    assert secret not in json.dumps(external) and external["decision"]["warnings"] == ["a release-side warning"]
    monkeypatch.setattr(
        type(rel),
        "report_figures",
        lambda self, original=None, **k: Figures(warnings=[Text("warning_owner", secret, about="comparison")]),
    )
    internal = rel.report(table, out=str(tmp_path / "r2.html"))
    external = for_audience({k: v for k, v in internal.items() if k != "paths"}, "external")
    assert internal["decision"]["colour"] == "amber" and external["decision"]["colour"] == "green"
    assert secret not in render_html(external)

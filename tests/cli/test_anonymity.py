"""``ppdm anonymize``, ``ppdm access-control`` and ``ppdm km-anonymize``: releases that verify,
summaries, independent cross-checks (pycanon), tampering caught by ``ppdm verify``, one-line
errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pycanon.anonymity as pycanon
import pytest

from ppdm_dask import read
from ppdm_dask.anonymity import check_km_anonymity, is_k_anonymous, is_l_diverse
from ppdm_dask.data.datasets import sample_path
from tests.release.helpers import append_rows, flip_byte, forge_part, manifest_of

from .test_cli import run

QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
ROLES = ["--qi", ",".join(QI), "--sensitive", "salary-class"]


def _subset(shared_data, tmp_path, n=3000):
    src = tmp_path / "adult.csv"
    pd.read_csv(shared_data / "adult" / "adult.csv", sep=";").head(n).to_csv(src, sep=";", index=False)
    return src


def _verify(*args, ok=True):
    r = run("verify", *map(str, args), ok=ok)
    return r


def _forged_class(folder: Path, qi: list[str], size: int) -> pa.Table:
    """``size`` rows of the first part with every QI set to a label no released class has."""
    t = pq.read_table(folder / "part-00000.parquet").slice(0, size)
    for a in qi:
        i = t.schema.get_field_index(a)
        t = t.set_column(i, t.schema.field(i), pa.array(["forged-label"] * size, type=t.schema.field(i).type))
    return t


def _tamper_checks(out: Path, qi: list[str], k: int, original: Path | None = None) -> None:
    """A written release verifies; one byte changed in a part -> verify names the file; a class
    of size k-1 appended (manifest forged to match) -> verify names k-anonymity."""
    ok = _verify(out)
    assert "verified" in ok.stdout and "FAILED" not in ok.stdout
    if original is not None:
        _verify(out, "--original", original)
    parts = sorted(p.name for p in out.glob("part-*.parquet"))
    assert len(parts) >= 2  # --rows-per-file: the keyed order spreads rows over several files
    broken = out.parent / (out.name + "-flipped")
    broken.mkdir()
    for p in out.iterdir():
        (broken / p.name).write_bytes(p.read_bytes())
    flip_byte(broken / parts[1])
    bad = _verify(broken, ok=False)
    assert bad.exit_code == 2 and parts[1] in bad.stderr and "SHA-256" in bad.output
    append_rows(out, _forged_class(out, qi, k - 1))
    bad = _verify(out, ok=False)
    assert bad.exit_code == 2 and "FAILED k-anonymity" in bad.stderr and f"{k - 1} (needs {k})" in bad.stderr


def test_anonymize_lattice_and_mondrian(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path)
    hdir = shared_data / "adult"
    out = tmp_path / "rel"
    r = run(
        "--json",
        "anonymize",
        str(src),
        str(out),
        *ROLES,
        "--hierarchies",
        str(hdir),
        "--k",
        "5",
        "--l",
        "2",
        "--max-suppression",
        "0.02",
        "--rows-per-file",
        "1000",
    )
    s = json.loads(r.stdout)
    assert s["verdict"]["ok"] and s["method"] == "lattice" and s["family"] == "relational"
    n_sup = s["records"]["suppressed"]
    assert n_sup <= 60 and s["records"]["released"] == 3000 - n_sup
    rel = pd.read_parquet(out)
    assert list(rel.columns) == [*QI, "salary-class"] and len(rel) == 3000 - n_sup  # suppressed records left out
    assert is_k_anonymous(rel, QI, 5) and is_l_diverse(rel, QI, "salary-class", 2)
    assert pycanon.k_anonymity(rel, QI) >= 5 and pycanon.l_diversity(rel, QI, ["salary-class"]) >= 2
    manifest = manifest_of(out)
    assert manifest["format"] == "ppdm-anonymized" and manifest["release"]["parameters"]["k"] == 5
    # figures of the original (input rows, suppressed records, utility) are the owner's: the
    # console and the internal report beside the release, never the manifest
    assert "utility" not in manifest["summary"] and manifest["summary"]["records"] == {"released": 3000 - n_sup}
    assert not {"n_suppressed_dropped", "n_input_records"} & set(manifest) and set(manifest["input"]) == {"fingerprint"}
    internal = json.loads((tmp_path / "rel.report.json").read_text())
    items = {i["id"]: i for sec in internal["sections"] for i in sec["items"]}
    assert items["utility_discernibility"]["value"] == s["report"]["discernibility"]  # suppressed: original rows - released
    assert internal["summary"]["records"] == {"input": 3000, "released": 3000 - n_sup, "suppressed": n_sup}
    assert manifest["guarantees"]["ok"] and {c["name"] for c in manifest["guarantees"]["checks"]} >= {
        "k-anonymity",
        "l-diversity",
    }
    _tamper_checks(out, QI, 5, original=src)

    m = tmp_path / "m"
    # a second release of the input (another method), checked alone: kept out of the ledger
    text = run(
        "--no-ledger", "anonymize", str(src), str(m), *ROLES, "--k", "10", "--method", "mondrian", "--rows-per-file", "1000"
    ).stdout
    assert "ok k-anonymity" in text and "discernibility" in text and "partitions" in text
    rel = pd.read_parquet(m)
    assert pycanon.k_anonymity(rel, QI) >= 10 and len(rel) == 3000
    _tamper_checks(m, QI, 10, original=src)
    # an existing output is refused before any work
    bad = run("anonymize", str(src), str(m), *ROLES, "--k", "5", "--method", "mondrian", ok=False)
    assert bad.exit_code == 2 and "already exists" in bad.output


def test_anonymize_errors(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path, 200)
    hdir = shared_data / "adult"
    r = run(
        "anonymize",
        str(src),
        str(tmp_path / "x"),
        *ROLES,
        "--hierarchy",
        f"sex={hdir / 'adult_hierarchy_sex.csv'}",
        "--k",
        "2",
        ok=False,
    )
    assert r.exit_code == 2 and "no generalisation hierarchy" in r.output and "education" in r.output
    r = run("anonymize", str(src), str(tmp_path / "x"), *ROLES, "--hierarchies", str(hdir), "--k", "500", ok=False)
    assert r.exit_code == 2 and "larger than the number of records" in r.output
    r = run(
        "anonymize",
        str(src),
        str(tmp_path / "x"),
        "--qi",
        ",".join(QI),
        "--sensitive",
        "disease",
        "--hierarchies",
        str(hdir),
        "--k",
        "2",
        ok=False,
    )
    assert r.exit_code == 2 and "disease" in r.output
    # no roles: one line listing the unclassified columns and the flags
    r = run("anonymize", str(src), str(tmp_path / "x"), "--k", "5", "--method", "mondrian", ok=False)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "salary-class" in r.stderr and "--qi" in r.stderr
    # k = 1 is below the floor: refused, unless explicitly allowed (then recorded)
    r = run("anonymize", str(src), str(tmp_path / "x"), *ROLES, "--k", "1", "--method", "mondrian", ok=False)
    assert r.exit_code == 2 and "k >= 2" in r.stderr and "--allow-weak" in r.stderr
    assert not (tmp_path / "x").exists()  # nothing half-written
    s = json.loads(
        run(
            "--json", "anonymize", str(src), str(tmp_path / "x"), *ROLES, "--k", "1", "--method", "mondrian", "--allow-weak"
        ).stdout
    )
    assert s["overrides"] == ["k >= 2"] and manifest_of(tmp_path / "x")["release"]["overrides"] == ["k >= 2"]
    v = _verify(tmp_path / "x")
    assert "OVERRIDDEN k >= 2" in v.stdout


def test_anonymize_csv_output(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path, 1000)
    out = tmp_path / "release.csv"
    run("anonymize", str(src), str(out), *ROLES, "--k", "5", "--method", "mondrian")
    assert out.is_file() and (tmp_path / "release.csv.manifest.json").is_file()
    rel = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(rel) == 1000 and pycanon.k_anonymity(rel, QI) >= 5
    _verify(out, "--original", src)
    flip_byte(out, offset=out.stat().st_size // 2)
    bad = _verify(out, ok=False)
    assert bad.exit_code == 2 and "release.csv" in bad.stderr


def test_km_anonymize_cli(tmp_path):
    src = sample_path("bms-webview-1-5k")
    out = tmp_path / "km"
    s = json.loads(
        run(
            "--json", "km-anonymize", str(src), str(out), "--k", "5", "--m", "2", "--fan-out", "5", "--rows-per-file", "2000"
        ).stdout
    )
    assert s["verdict"]["ok"] and s["family"] == "km" and 0 < s["report"]["ncp"] < 1
    released = read(str(out))
    assert released.n_transactions == 5000 and check_km_anonymity(released, 5, 2).ok
    _verify(out, "--original", src)
    parts = sorted(p.name for p in out.glob("part-*.parquet"))
    assert len(parts) == 3
    # one byte changed
    broken = tmp_path / "km-flipped"
    broken.mkdir()
    for p in out.iterdir():
        (broken / p.name).write_bytes(p.read_bytes())
    flip_byte(broken / parts[0])
    bad = _verify(broken, ok=False)
    assert bad.exit_code == 2 and parts[0] in bad.stderr
    # k-1 transactions holding a new rare item combination: every pair of published items already
    # co-occurs, so a new item joins the vocabulary (files and manifest forged to match)
    vocab = pq.read_table(out / "_vocabulary.parquet")
    labels = vocab.column("label").to_pylist()
    forge_part(
        out, "_vocabulary.parquet", pa.table({"label": pa.array(labels + ["zz-forged"], type=vocab.schema.field("label").type)})
    )
    manifest = manifest_of(out)
    manifest["n_items"] += 1
    (out / "_SUCCESS").write_text(json.dumps(manifest))
    old = pq.read_table(out / parts[0])
    rows = pa.table({"items": pa.array([[0, len(labels)]] * 4, type=old.schema.field("items").type)})
    append_rows(out, rows, parts[0])
    bad = _verify(out, ok=False)
    assert bad.exit_code == 2 and "FAILED k^m-anonymity: 4 (needs 5)" in bad.stderr
    r = run("km-anonymize", str(src), str(tmp_path / "y"), "--k", "5", ok=False)
    assert r.exit_code == 2 and "--hierarchy" in r.output


def test_access_control_cli(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path)
    perms = tmp_path / "perms.json"
    perms.write_text(
        json.dumps(
            [
                {"role": "census", "name": "teenagers", "bound": 20, "where": {"age": [17, 19]}},
                {"role": "marketing", "name": "doctorates", "bound": 10, "where": {"education": "Doctorate"}},
            ]
        )
    )
    out = tmp_path / "ac"
    s = json.loads(
        run(
            "--json",
            "access-control",
            str(src),
            "--permissions",
            str(perms),
            *ROLES,
            "--dtype",
            "age=int",
            "--k",
            "5",
            "--out",
            str(out),
            "--rows-per-file",
            "1000",
        ).stdout
    )
    report = s["report"]
    assert s["verdict"]["ok"] and s["method"] == "access-control" and report["permissions"] == 2
    assert report["permissions_satisfied"] >= report["mondrian_permissions_satisfied"]
    assert {p["name"] for p in report["permission_report"]} == {"teenagers", "doctorates"}
    assert pycanon.k_anonymity(pd.read_parquet(out), QI) >= 5
    _tamper_checks(out, QI, 5, original=src)
    text = run("access-control", str(src), "--permissions", str(perms), *ROLES, "--dtype", "age=int", "--k", "5").stdout
    assert "teenagers" in text and "role census" in text and "(not written)" in text
    perms.write_text(json.dumps([{"role": "x", "bound": 1, "where": {"salary": [1, 2]}}]))
    r = run("access-control", str(src), "--permissions", str(perms), *ROLES, "--k", "5", ok=False)
    assert r.exit_code == 2 and "salary" in r.output
    r = run("access-control", str(src), "--permissions", str(tmp_path / "nope.json"), *ROLES, "--k", "5", ok=False)
    assert r.exit_code == 2 and "nope.json" in r.stderr and "--permissions" in r.stderr


def test_key_never_written(shared_data, tmp_path):
    """Keyed jobs: the key (hex, decimal, base64) is in no output file, manifest, stdout or stderr."""
    import base64

    from ppdm_dask.random import Key

    key_file = tmp_path / "key"
    Key.generate().to_file(key_file)
    value = int(key_file.read_text().strip(), 16)
    raw = value.to_bytes(16, "big")
    spellings = [
        f"{value:032x}",
        f"{value:x}",
        str(value),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
    ]
    src = _subset(shared_data, tmp_path, 1000)
    results = [
        run(
            "--key-file",
            str(key_file),
            "--json",
            "anonymize",
            str(src),
            str(tmp_path / "a"),
            *ROLES,
            "--k",
            "5",
            "--method",
            "mondrian",
        ),
        run(
            "--key-file",
            str(key_file),
            "--json",
            "anonymize",
            str(src),
            str(tmp_path / "a.csv"),
            *ROLES,
            "--k",
            "5",
            "--method",
            "mondrian",
        ),
        run(
            "--key-file",
            str(key_file),
            "--json",
            "km-anonymize",
            str(sample_path("bms-webview-1-5k")),
            str(tmp_path / "k"),
            "--k",
            "5",
            "--fan-out",
            "5",
        ),
    ]
    blobs = [r.stdout.encode() + r.stderr.encode() for r in results]
    blobs += [p.read_bytes() for d in ("a", "k") for p in (tmp_path / d).iterdir()]
    blobs += [(tmp_path / "a.csv").read_bytes(), (tmp_path / "a.csv.manifest.json").read_bytes()]
    for metadata in (pq.read_schema(p).metadata or {} for d in ("a", "k") for p in (tmp_path / d).glob("*.parquet")):
        blobs += [k + v for k, v in metadata.items()]
    for blob in blobs:
        for s in spellings:
            assert s.encode() not in blob and s.upper().encode() not in blob


@pytest.mark.parametrize("cmd", ["anonymize", "access-control", "km-anonymize"])
def test_table_commands_show_their_help(cmd):
    # their size is kept by tests/test_structure.py::test_cli_modules_are_thin
    assert run(cmd, "--help").exit_code == 0


def test_access_control_range_on_a_text_column_is_refused(tmp_path):
    """A numeric range on a column read as text would silently become the set {17, 19} (on main:
    |Q_T| 86 instead of 140, exit 0); it is refused, naming the column and the --dtype fix."""
    src = sample_path("adult")
    perms = tmp_path / "perms.json"
    perms.write_text(json.dumps([{"role": "census", "name": "teenagers", "bound": 20, "where": {"age": [17, 19]}}]))
    qi = "sex,age,race,marital-status,education,native-country,workclass,occupation"
    r = run(
        "access-control", str(src), "--permissions", str(perms), "--qi", qi, "--sensitive", "salary-class", "--k", "5", ok=False
    )
    assert r.exit_code == 2 and "'age' is read as text" in r.stderr and "--dtype age=int" in r.stderr
    s = json.loads(
        run(
            "--json",
            "access-control",
            str(src),
            "--permissions",
            str(perms),
            "--qi",
            qi,
            "--sensitive",
            "salary-class",
            "--k",
            "5",
            "--dtype",
            "age=int",
        ).stdout
    )
    (p,) = s["report"]["permission_report"]
    ages = pd.read_csv(src, sep=";")["age"]
    assert p["true_count"] == int(ages.between(17, 19).sum()) != int(ages.isin([17, 19]).sum())

"""``ppdm anonymize`` / ``ppdm access-control`` with an attribute-disclosure model from the
command line: t-closeness (``--t``, ``--t-kind``), entropy and recursive l-diversity, the floor
``t <= 0.5``, the console warning for a sensitive column without a model, and the report's
attribute-disclosure figures, checked against pycanon and pandas recounts of the written files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pycanon.anonymity as pycanon

from ppdm_dask.data.datasets import sample_path
from tests.release.helpers import manifest_of

from .test_cli import run

QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
ROLES = ["--qi", ",".join(QI), "--sensitive", "salary-class"]
SAMPLES = sample_path("adult").parent


HIERARCHIES = [x for a in QI for x in ("--hierarchy", f"{a}={SAMPLES / f'adult_hierarchy_{a}.csv'}")]


def _anonymize(tmp_path, name, *args, ok=True):
    # releases of one input with other models, each checked alone: the ledger's composition of
    # table releases is tests/anonymity/test_composition.py's
    return run(
        "--json",
        "--no-ledger",
        "anonymize",
        str(sample_path("adult")),
        str(tmp_path / name),
        *ROLES,
        "--dtype",
        "age=int",
        *HIERARCHIES,
        "--k",
        "5",
        "--method",
        "mondrian",
        *args,
        ok=ok,
    )


def _items(path) -> dict:
    doc = json.loads(path.read_text())
    return {i["id"]: i for sec in doc["sections"] for i in sec["items"]}


def test_t_closeness_end_to_end(tmp_path):
    r = _anonymize(tmp_path, "t", "--t", "0.2")
    s = json.loads(r.stdout)
    assert s["verdict"]["ok"] and s["parameters"]["t"] == 0.2 and s["parameters"]["t_kind"] == "equal"
    assert "warning" not in r.stderr
    manifest = manifest_of(tmp_path / "t")
    assert manifest["release"]["parameters"]["t"] == 0.2
    checks = {c["name"]: c for c in manifest["guarantees"]["checks"]}
    assert checks["t-closeness"]["ok"] and checks["t <= 0.5"]["ok"]
    rel = pd.read_parquet(tmp_path / "t")
    t = pycanon.t_closeness(rel, QI, ["salary-class"])
    assert t <= 0.2 and checks["t-closeness"]["figure"] == t
    items = _items(tmp_path / "t.report.json")
    assert items["disclosure_t_equal"]["value"] == t
    assert int(items["disclosure_entropy_l"]["value"] + 1e-9) == pycanon.entropy_l_diversity(rel, QI, ["salary-class"])
    # read back and verified independently
    v = run("verify", str(tmp_path / "t"))
    assert "ok t-closeness" in v.stdout


def test_no_model_warns_and_l_models_report(tmp_path):
    r = _anonymize(tmp_path, "none")
    assert "ppdm: warning: sensitive column 'salary-class' published without an attribute-disclosure model" in r.stderr
    rel = pd.read_parquet(tmp_path / "none")
    g = rel.groupby(QI)["salary-class"]
    share = g.agg(lambda x: x.value_counts(normalize=True).iloc[0])
    items = _items(tmp_path / "none.report.json")
    assert items["disclosure_classes_at_threshold"]["value"] == int((share >= 0.9).sum())
    assert items["disclosure_records_at_threshold"]["value"] == int(g.size()[share >= 0.9].sum())

    # entropy l: on a binary attribute at most exp(H(table)) < 2, so below the floor: --allow-weak
    r = _anonymize(tmp_path, "entropy", "--l", "1.5", "--l-kind", "entropy", ok=False)
    assert r.exit_code == 2 and "l >= 2" in r.stderr
    s = json.loads(_anonymize(tmp_path, "entropy", "--l", "1.5", "--l-kind", "entropy", "--allow-weak").stdout)
    assert s["overrides"] == ["l >= 2"] and s["parameters"]["l_kind"] == "entropy"
    rel = pd.read_parquet(tmp_path / "entropy")
    ent = rel.groupby(QI)["salary-class"].agg(
        lambda x: -(x.value_counts(normalize=True) * np.log(x.value_counts(normalize=True))).sum()
    )
    items = _items(tmp_path / "entropy.report.json")
    assert (
        items["disclosure_entropy_l"]["value"] >= 1.5 and abs(items["disclosure_entropy_l"]["value"] - np.exp(ent.min())) < 1e-9
    )
    checks = {c["name"]: c for c in manifest_of(tmp_path / "entropy")["guarantees"]["checks"]}
    assert checks["l-diversity"]["ok"] and checks["l >= 2"]["overridden"]

    # recursive (c, l): r1 < c (r2 + ...) in every class, recounted
    s = json.loads(_anonymize(tmp_path, "rec", "--l", "2", "--l-kind", "recursive", "--c", "4").stdout)
    assert s["verdict"]["ok"] and s["parameters"]["c"] == 4
    counts = pd.read_parquet(tmp_path / "rec").groupby(QI)["salary-class"].value_counts().unstack(fill_value=0)
    top, rest = counts.max(axis=1), counts.sum(axis=1) - counts.max(axis=1)
    assert (top < 4 * rest).all()


def test_t_floor_and_bad_values(tmp_path):
    r = _anonymize(tmp_path, "weak", "--t", "0.7", ok=False)
    assert r.exit_code == 2 and "t <= 0.5" in r.stderr and "--allow-weak" in r.stderr
    assert not (tmp_path / "weak").exists()
    r = _anonymize(tmp_path, "bad", "--t", "1.5", ok=False)
    assert r.exit_code == 2 and "--t" in r.output
    r = _anonymize(tmp_path, "bad", "--t", "0.2", "--t-kind", "nearest", ok=False)
    assert r.exit_code == 2 and "--t-kind" in r.output


def test_access_control_with_t(tmp_path):
    perms = sample_path("adult").parent / "adult_permissions.json"
    out = tmp_path / "ac"
    r = run(
        "--json",
        "access-control",
        str(sample_path("adult")),
        "--permissions",
        str(perms),
        *ROLES,
        "--dtype",
        "age=int",
        "--k",
        "5",
        "--t",
        "0.2",
        "--out",
        str(out),
    )
    s = json.loads(r.stdout)
    assert s["verdict"]["ok"] and s["parameters"]["t"] == 0.2 and "warning" not in r.stderr
    assert pycanon.t_closeness(pd.read_parquet(out), QI, ["salary-class"]) <= 0.2
    assert {c["name"] for c in manifest_of(out)["guarantees"]["checks"]} >= {"t-closeness", "t <= 0.5"}

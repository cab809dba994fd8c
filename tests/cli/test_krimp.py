"""``ppdm krimp compress | generate | ds``."""

from __future__ import annotations

import json

from ppdm_dask import read
from ppdm_dask.krimp import CodeTable
from ppdm_dask.krimp.generator import check_domains, infer_domains

from .test_cli import run


def test_krimp_compress_generate_ds(shared_data, tmp_path):
    src = shared_data / "lucs" / "iris.dat"
    ct_file = tmp_path / "iris_ct.json"
    s = json.loads(run("--json", "krimp", "compress", str(src), "--min-support", "1", "--out", str(ct_file)).stdout)
    assert s["n_candidates"] > 0 and 0 < s["sizes"]["L_percent"] < 100
    ct = CodeTable.load(ct_file)
    assert ct.n_nontrivial == s["code_table_itemsets"] and ct.sizes()["total"] == s["sizes"]["total"]
    out = tmp_path / "gen"
    key = tmp_path / "key"
    g = json.loads(run("--json", "--key-file", str(key), "krimp", "generate", str(src), str(out), "--min-support", "1").stdout)
    assert g["n_rows"] == 150 and g["n_domains"] == 5 and 0 <= g["nas"] <= 1 and g["ds"] >= 0
    gen = read(str(out))
    check_domains(gen, infer_domains(read(str(src))))  # exactly one item per attribute in every row
    # same key -> same rows
    out2 = tmp_path / "gen2"
    run("--key-file", str(key), "krimp", "generate", str(src), str(out2), "--min-support", "1", "--no-check")
    assert read(str(out2)).to_lists() == gen.to_lists()
    d = json.loads(run("--json", "krimp", "ds", str(src), str(src), "--min-support", "1").stdout)
    assert d["ds"] == 0.0
    text = run("krimp", "ds", str(src), str(out), "--min-support", "1").stdout
    assert text.startswith("DS(")


def test_krimp_errors(shared_data, tmp_path):
    src = shared_data / "lucs" / "iris.dat"
    r = run("krimp", "compress", str(src), "--min-support", "abc", ok=False)
    assert r.exit_code != 0 and "min-support" in r.output
    r = run("krimp", "generate", str(src), str(tmp_path / "g"), "--min-support", "1", "--exclude", "a,b", ok=False)
    assert r.exit_code != 0 and "exclude" in r.output
    r = run("krimp", "compress", str(tmp_path / "missing.dat"), "--min-support", "1", ok=False)
    assert r.exit_code != 0

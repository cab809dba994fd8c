"""``ppdm krimp compress | generate | ds`` and ``ppdm verify`` of KRIMP releases."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from ppdm_dask import read
from ppdm_dask.krimp import CodeTable
from ppdm_dask.krimp.generator import check_domains, infer_domains
from ppdm_dask.krimp.release import PATTERNS_FILE, UNIQUE_COPIES_CHECK

from ..release.helpers import data_bytes, flip_byte, forge_part, manifest_of
from .test_cli import run


def test_krimp_compress_generate_ds(shared_data, tmp_path):
    src = shared_data / "lucs" / "iris.dat"
    ct_file = tmp_path / "iris_ct.json"
    s = json.loads(run("--json", "krimp", "compress", str(src), "--min-count", "1", "--out", str(ct_file)).stdout)
    assert s["n_candidates"] > 0 and 0 < s["sizes"]["L_percent"] < 100
    ct = CodeTable.load(ct_file)
    assert ct.n_nontrivial == s["code_table_itemsets"] and ct.sizes()["total"] == s["sizes"]["total"]
    assert ct.parameters["min_support"] == 1 and ct.parameters["prune"] is True
    r = run("krimp", "compress", str(src), "--min-count", "1", "--out", str(ct_file), ok=False)
    assert r.exit_code == 2 and "already exists" in r.output
    run("krimp", "compress", str(src), "--min-count", "2", "--out", str(ct_file), "--overwrite")
    assert CodeTable.load(ct_file).parameters["min_support"] == 2
    out = tmp_path / "gen"
    key = tmp_path / "key"
    g = json.loads(run("--json", "--key-file", str(key), "krimp", "generate", str(src), str(out), "--min-count", "2").stdout)
    assert g["family"] == "krimp" and g["verdict"]["ok"] and g["records"]["rows"] == 150 and g["records"]["domains"] == 5
    assert 0 <= g["nas"] <= 1 and g["ds"] >= 0 and g["avg_patterns_per_row"] >= 1
    gen = read(str(out))
    check_domains(gen, infer_domains(read(str(src))))  # exactly one item per attribute in every row
    key_hex = key.read_text().strip()[2:].lstrip("0")
    assert all(key_hex.encode() not in f.read_bytes() for f in out.iterdir())
    # same key -> same release files
    out2 = tmp_path / "gen2"
    run("--key-file", str(key), "krimp", "generate", str(src), str(out2), "--min-count", "2", "--no-scores")
    assert data_bytes(out2) == data_bytes(out)
    d = json.loads(run("--json", "krimp", "ds", str(src), str(src), "--min-count", "1").stdout)
    assert d["ds"] == 0.0
    text = run("krimp", "ds", str(src), str(out), "--min-count", "1").stdout
    assert text.startswith("DS(")


def test_verify_krimp_release(shared_data, tmp_path):
    src = shared_data / "lucs" / "iris.dat"
    out = tmp_path / "gen"
    run("krimp", "generate", str(src), str(out), "--min-count", "3", "--no-scores")
    v = json.loads(run("--json", "verify", str(out), "--original", str(src)).stdout)
    assert v["ok"] and {c["name"] for c in v["checks"]} >= {
        "unique copies",
        "one item per domain",
        "pattern support in the original",
        UNIQUE_COPIES_CHECK,
        "normalized anonymity score",
    }
    # a pattern below min-support forged into the public patterns ({1, 8}: one iris record)
    table = pq.read_table(out / PATTERNS_FILE)
    forge_part(
        out, PATTERNS_FILE, pa.concat_tables([table, pa.table({"items": pa.array([[1, 8]], table.schema.field("items").type)})])
    )
    alone = run("verify", str(out)).stdout  # the public file holds no support: not checkable without the original
    assert "NOT CHECKED pattern support in the original" in alone
    r = run("verify", str(out), "--original", str(src), ok=False)
    assert r.exit_code == 2 and f"FAILED pattern support in the original: 1 (needs 3) in {PATTERNS_FILE}" in r.output
    # one byte changed in a part file
    out2 = tmp_path / "gen2"
    run("krimp", "generate", str(src), str(out2), "--min-count", "3", "--no-scores")
    flip_byte(out2 / "part-00000.parquet")
    r = run("verify", str(out2), ok=False)
    assert r.exit_code == 2 and "part-00000.parquet" in r.output


def test_min_support_floor(shared_data, tmp_path):
    src = shared_data / "lucs" / "iris.dat"
    r = run("krimp", "generate", str(src), str(tmp_path / "g"), "--min-count", "1", ok=False)
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert (
        r.exit_code == 2 and len(lines) == 1 and "min-support 1 is below the floor 2" in lines[0] and "--allow-weak" in lines[0]
    )
    assert not (tmp_path / "g").exists()
    text = run("krimp", "generate", str(src), str(tmp_path / "g"), "--min-count", "1", "--allow-weak", "--no-scores").stdout
    assert "OVERRIDES" in text and "min-support" in text
    assert manifest_of(tmp_path / "g")["release"]["overrides"] == ["min-support"]
    assert "OVERRIDDEN min-support" in run("verify", str(tmp_path / "g")).stdout


def test_unique_copies_rule_and_forged_rows(tmp_path):
    """Rows equal to a unique record of SRC are redrawn; --allow-unique-copies (not --allow-weak)
    lifts the rule and is recorded; a release whose rows are replaced by the original records
    fails verify --original, naming the check."""
    from collections import Counter

    from ppdm_dask.data.datasets import sample_path

    src = str(sample_path("led7"))
    original = [frozenset(r) for r in read(src).to_lists()]
    unique = {r for r, c in Counter(original).items() if c == 1}
    out = tmp_path / "gen"
    g = json.loads(run("--json", "krimp", "generate", src, str(out), "--min-count", "1", "--allow-weak", "--no-scores").stdout)
    assert g["parameters"]["unique_copies"] == "redrawn" and g["overrides"] == ["min-support"]
    assert g["privacy"]["rows_redrawn"] > 0 and not unique & {frozenset(r) for r in read(str(out)).to_lists()}
    free = tmp_path / "free"
    text = run("krimp", "generate", src, str(free), "--min-count", "2", "--allow-unique-copies", "--no-scores").stdout
    assert "OVERRIDES    unique copies" in text and "OVERRIDDEN unique copies: allowed (needs redrawn)" in text
    assert manifest_of(free)["release"]["overrides"] == ["unique copies"]
    assert unique & {frozenset(r) for r in read(str(free)).to_lists()}
    assert f"OVERRIDDEN {UNIQUE_COPIES_CHECK}" in run("verify", str(free), "--original", src).stdout
    # the forgery: the rows of the release replaced by the original records, checksums rewritten
    table = pq.read_table(out / "part-00000.parquet")
    index = {v: j for j, v in enumerate(read(str(out)).vocabulary.labels.tolist())}
    ids = pa.array([sorted(index[i] for i in r) for r in read(src).to_lists()], table.schema.field("items").type)
    forge_part(
        out, "part-00000.parquet", pa.table({"items": ids, "n_patterns": pa.array([1] * len(ids), pa.int64())}).cast(table.schema)
    )
    assert "NOT CHECKED " + UNIQUE_COPIES_CHECK in run("verify", str(out)).stdout
    r = run("verify", str(out), "--original", src, ok=False)
    assert r.exit_code == 2 and f"FAILED {UNIQUE_COPIES_CHECK}: {len(unique)} (needs 0)" in r.output


def test_krimp_errors(shared_data, tmp_path):
    src = shared_data / "lucs" / "iris.dat"
    r = run("krimp", "compress", str(src), "--min-support", "abc", ok=False)
    assert r.exit_code != 0 and "min-support" in r.output
    r = run("krimp", "generate", str(src), str(tmp_path / "g"), "--min-count", "2", "--exclude", "a,b", ok=False)
    assert r.exit_code != 0 and "exclude" in r.output
    r = run("krimp", "compress", str(tmp_path / "missing.dat"), "--min-count", "1", ok=False)
    assert r.exit_code != 0 and "missing.dat" in r.output and "Traceback" not in r.output


def test_compress_distributed_gives_the_same_table(tmp_path):
    from ppdm_dask.data.datasets import sample_path

    src = str(sample_path("led7"))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    s = json.loads(run("--json", "krimp", "compress", src, "--min-count", "2", "--out", str(a)).stdout)
    d = json.loads(run("--json", "krimp", "compress", src, "--min-count", "2", "--out", str(b), "--distributed").stdout)
    assert d["distributed"]["round_trips"] > 0 and "distributed" not in s
    ca, cb = CodeTable.load(a), CodeTable.load(b)
    assert [x.tolist() for x in ca.itemsets] == [x.tolist() for x in cb.itemsets]
    assert ca.usages.tolist() == cb.usages.tolist() and d["sizes"] == s["sizes"]
    assert "round trips" in run("krimp", "compress", src, "--min-count", "2", "--distributed").stdout


def test_generate_and_ds_report_the_same_ds(tmp_path):
    """`krimp generate` and `krimp ds` on the same pair report the same DS unless the pruning
    option differs, and both say which pruning they used."""
    from ppdm_dask.data.datasets import sample_path

    src = str(sample_path("led7"))
    key = tmp_path / "key"
    for flag, word in ((None, "off"), ("--prune", "on")):
        out = tmp_path / f"gen-{word}"
        extra = [flag] if flag else []
        g = run("--key-file", str(key), "krimp", "generate", src, str(out), "--min-count", "2", *extra)
        gj = json.loads(
            run(
                "--json",
                "--key-file",
                str(key),
                "krimp",
                "generate",
                src,
                str(tmp_path / f"j-{word}"),
                "--min-count",
                "2",
                *extra,
            ).stdout
        )
        assert f"DS with pruning {word}" in g.stdout
        d = json.loads(run("--json", "krimp", "ds", str(tmp_path / f"j-{word}"), src, "--min-count", "2", *extra).stdout)
        assert d["prune"] is (flag is not None)
        assert d["ds"] == gj["ds"]
        text = run("krimp", "ds", str(tmp_path / f"j-{word}"), src, "--min-count", "2", *extra).stdout
        assert f"pruning {word}" in text
    # the other pruning option gives another DS (both outputs say which one they used)
    other = json.loads(run("--json", "krimp", "ds", str(tmp_path / "j-off"), src, "--min-count", "2", "--prune").stdout)
    first = json.loads(run("--json", "krimp", "ds", str(tmp_path / "j-off"), src, "--min-count", "2").stdout)
    assert other["prune"] is True and first["prune"] is False

"""``ppdm emask choose | distort | mine | audit`` and ``ppdm verify`` of EMASK releases."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from ppdm_dask import read
from ppdm_dask.data.parquet import csr_to_arrow_list
from ppdm_dask.emask import basic_privacy

from ..release.helpers import flip_byte, forge_part, manifest_of
from .test_cli import run


@pytest.fixture(scope="module")
def orig(tmp_path_factory):
    """T10.I4.D5K.N1K (s0 ≈ 0.01: (0.4, 0.98) has basic privacy ≈ 92.9 %)."""
    out = tmp_path_factory.mktemp("emask") / "orig"
    run("generate", "quest", "T10.I4.D5K.N1K", str(out))
    return out


def test_distort_verify_mine_audit(orig, tmp_path):
    key = tmp_path / "key"
    rel = tmp_path / "rel"
    r = run("--key-file", str(key), "--json", "emask", "distort", str(orig), str(rel), "--p", "0.4", "--q", "0.98")
    d = json.loads(r.stdout)
    tx = read(str(orig))
    s0 = tx.describe()["mean_length"] / 1000
    assert d["family"] == "emask" and d["parameters"]["p"] == 0.4 and "s0" not in d["parameters"]
    assert d["privacy"]["s0"] == pytest.approx(s0)  # the owner's console shows the exact s0; the manifest does not
    assert d["privacy"]["basic_privacy"] == pytest.approx(basic_privacy(0.4, 0.98, s0=s0)) and d["verdict"]["ok"]
    key_hex = key.read_text().strip()[2:].lstrip("0")
    assert key_hex not in r.output and key_hex not in json.dumps(manifest_of(rel))
    assert all(key_hex.encode() not in f.read_bytes() for f in rel.iterdir())
    meta = read(str(rel)).metadata
    assert meta["p"] == 0.4 and meta["q"] == 0.98 and "key" not in json.dumps(meta).lower()
    # ppdm verify, alone and against the original
    v = run("verify", str(rel))
    assert "verified" in v.stdout and "ok s0 from the release density" in v.stdout
    v = json.loads(run("--json", "verify", str(rel), "--original", str(orig)).stdout)
    assert v["ok"] and any(c["name"] == "ones consistent with a (p, q) distortion of the original" for c in v["checks"])
    # mining takes p, q from the release
    m = json.loads(run("--json", "emask", "mine", str(rel), "--min-support", "0.02").stdout)
    assert m["itemsets"] > 0 and (m["p"], m["q"]) == (0.4, 0.98)
    # the audit re-aligns the keyed row order with the key
    a = json.loads(run("--json", "--key-file", str(key), "emask", "audit", str(orig), str(rel), "--min-support", "0.02").stdout)
    assert 0 < a["reinterrogated_privacy"] <= a["basic_privacy"] + 1e-9 and a["accuracy"]["n_true"] > 0
    text = run("emask", "audit", str(orig), str(rel), "--min-support", "0.02").stdout
    assert "needs --key-file" in text
    # an existing output is refused before any work
    bad = run("emask", "distort", str(orig), str(rel), "--p", "0.4", "--q", "0.98", ok=False)
    assert bad.exit_code == 2 and "already exists" in bad.output and "--overwrite" in bad.output


def test_csv_release_mined_with_parameters_from_its_manifest(orig, tmp_path):
    out = tmp_path / "rel.csv"
    run("emask", "distort", str(orig), str(out), "--p", "0.4", "--q", "0.98")
    assert (tmp_path / "rel.csv.manifest.json").exists()
    assert run("verify", str(out)).exit_code == 0
    m = json.loads(run("--json", "emask", "mine", str(out), "--min-support", "0.02").stdout)  # CSV data carry no metadata
    assert (m["p"], m["q"]) == (0.4, 0.98)


def test_verify_fails_on_tampering(orig, tmp_path):
    rel = tmp_path / "rel"
    run("emask", "distort", str(orig), str(rel), "--p", "0.4", "--q", "0.98")
    forge_part(rel, "part-00000.parquet", pa.table({"items": csr_to_arrow_list(read(str(orig)).compute())}))
    r = run("verify", str(rel), ok=False)
    assert r.exit_code == 2 and "ppdm: error: FAILED s0 from the release density" in r.output
    rel2 = tmp_path / "rel2"  # a second release of orig: composed with the first, accepted (docs/emask.md#repeated-releases)
    run("emask", "distort", str(orig), str(rel2), "--p", "0.4", "--q", "0.98", "--allow-composition")
    flip_byte(rel2 / "part-00000.parquet")
    r = run("verify", str(rel2), ok=False)
    assert r.exit_code == 2 and "FAILED file matches the manifest in part-00000.parquet" in r.output


def test_floor_refused_then_overridden(tmp_path):
    src = tmp_path / "n200"
    run("generate", "quest", "T10.I4.D2K.N200", str(src))  # s0 ≈ 0.05: BP(0.5, 0.97) ≈ 75 %
    dst = tmp_path / "weak"
    r = run("emask", "distort", str(src), str(dst), "--p", "0.5", "--q", "0.97", ok=False)
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "Traceback" not in r.output
    assert (
        lines[0].startswith("ppdm: error: basic privacy 7") and "below the floor 90%" in lines[0] and "--allow-weak" in lines[0]
    )
    assert not dst.exists()
    assert (
        run("emask", "distort", str(src), str(tmp_path / "low"), "--p", "0.5", "--q", "0.97", "--privacy-floor", "70").exit_code
        == 0
    )
    text = run("emask", "distort", str(src), str(dst), "--p", "0.5", "--q", "0.97", "--allow-weak", "--allow-composition").stdout
    assert "OVERRIDES" in text and "basic privacy" in text
    # the second release of src also goes below the floor composed with the first (accepted apart)
    assert manifest_of(dst)["release"]["overrides"] == ["basic privacy", "composition: composed basic privacy"]
    v = run("verify", str(dst), "--original", str(src))
    assert "OVERRIDDEN basic privacy" in v.stdout


def test_choose_and_usage_errors(orig, tmp_path):
    c = json.loads(run("--json", "emask", "choose", "--s0", "0.01").stdout)
    assert [(x["p"], x["q"]) for x in c["candidates"]] == [(0.3, 0.99), (0.4, 0.98), (0.5, 0.97), (0.6, 0.96)]
    c = json.loads(run("--json", "emask", "choose", "--data", str(orig), "--privacy-floor", "95").stdout)
    assert c["privacy_floor"] == 95 and all(x["basic_privacy"] >= 95 for x in c["candidates"])
    bad = run("emask", "distort", str(orig), str(tmp_path / "x"), "--p", "0.4", "--q", "0.6", ok=False)
    assert bad.exit_code == 2 and "p + q = 1" in bad.output and "Traceback" not in bad.output
    bad = run("emask", "choose", ok=False)
    assert bad.exit_code == 2 and "--s0" in bad.output


def test_verify_original_refuses_a_release_that_keeps_every_true_item(orig, tmp_path):
    # attack 4: the original's rows with noise at the density a (p, q) distortion has, checksums
    # rewritten: the files and the density pass; the flip rates against the original do not
    import numpy as np
    import scipy.sparse as sp

    from ..emask.test_attacks import _keep_every_true_item

    key, rel = tmp_path / "key", tmp_path / "rel"
    run("--key-file", str(key), "emask", "distort", str(orig), str(rel), "--p", "0.4", "--q", "0.98")
    assert run("--key-file", str(key), "verify", str(rel), "--original", str(orig)).exit_code == 0  # the honest one
    x = sp.csr_array(read(str(orig)).compute())
    forged = _keep_every_true_item(x, 0.4, 0.98, seed=1)[np.random.default_rng(2).permutation(x.shape[0])]
    forge_part(rel, "part-00000.parquet", pa.table({"items": csr_to_arrow_list(sp.csr_array(forged))}))
    alone = run("verify", str(rel))
    assert alone.exit_code == 0 and "NOT CHECKED flip rates as declared" in alone.output
    r = run("verify", str(rel), "--original", str(orig), ok=False)
    assert r.exit_code == 2 and "ppdm: error: FAILED flip rates as declared" in r.output and "OUTSIDE" in r.output
    r = run("--key-file", str(key), "verify", str(rel), "--original", str(orig), ok=False)
    assert r.exit_code == 2 and "ppdm: error: FAILED flip rates per row" in r.output


def test_distort_over_a_public_item_catalogue(orig, tmp_path):
    cat = tmp_path / "items.txt"
    cat.write_text("\n".join(str(i) for i in range(1010)) + "\n")  # Quest's 1,000 items and 10 nobody holds
    rel = tmp_path / "rel"
    r = json.loads(
        run("--json", "emask", "distort", str(orig), str(rel), "--p", "0.4", "--q", "0.98", "--items", str(cat)).stdout
    )
    assert r["parameters"]["n_items"] == 1010 and "item_catalogue" in r["parameters"] and r["verdict"]["ok"]
    assert manifest_of(rel)["n_items"] == 1010 and read(str(rel)).n_items == 1010
    assert run("verify", str(rel), "--original", str(orig)).exit_code == 0
    cat.write_text("1\n2\nx\n")
    bad = run("emask", "distort", str(orig), str(tmp_path / "bad"), "--p", "0.4", "--q", "0.98", "--items", str(cat), ok=False)
    lines = [x for x in bad.output.splitlines() if x.strip()]
    assert bad.exit_code == 2 and len(lines) == 1 and "line 3" in lines[0] and "--items" in lines[0]
    cat.write_text("1\n2\n3\n")
    bad = run("emask", "distort", str(orig), str(tmp_path / "bad"), "--p", "0.4", "--q", "0.98", "--items", str(cat), ok=False)
    assert bad.exit_code == 2 and "not in the item catalogue" in bad.output and "--items" in bad.output

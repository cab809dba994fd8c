"""``ppdm emask distort`` with the ledger: repeated releases of one input composed, budgeted,
refused in one line naming --allow-composition, and accepted with it (recorded)."""

from __future__ import annotations

import json
import math

from ppdm_dask.emask.composition import BP_CHECK, BUDGET_CHECK

from ..release.helpers import manifest_of
from .test_cli import run

LN20 = math.log(20)  # ε per item of (0.4, 0.98), by hand: ln(p / (1 - q))


def test_repeated_releases_composed_then_refused_then_accepted(tmp_path):
    src = tmp_path / "orig"
    run("generate", "quest", "T10.I4.D1K.N1K", str(src))  # s0 ≈ 0.01
    args = ["--p", "0.4", "--q", "0.98", "--privacy-floor", "60", "--epsilon-budget", "7", "--no-report"]
    first = run("emask", "distort", str(src), str(tmp_path / "r0"), *args)
    assert "ledger: first recorded release of this input" in first.stderr
    first_id = manifest_of(tmp_path / "r0")["release"]["id"]

    second = run("--json", "emask", "distort", str(src), str(tmp_path / "r1"), *args)
    assert json.loads(second.stdout)["family"] == "emask"  # what the ledger says goes to stderr
    err = second.stderr
    assert "this input has 1 earlier release(s)" in err and first_id in err
    assert f"composed epsilon per item: {2 * LN20:.4g}" in err and f"composed epsilon per record: {2000 * LN20:.4g}" in err
    comp = manifest_of(tmp_path / "r1")["release"]["ledger"]["composition"]
    assert comp["releases"] == 2 and abs(comp["epsilon_per_item"] - 2 * LN20) < 1e-9

    bad = run("emask", "distort", str(src), str(tmp_path / "r2"), *args, ok=False)
    lines = [x for x in bad.output.splitlines() if x.strip()]
    assert bad.exit_code == 2 and len(lines) == 1 and "Traceback" not in bad.output, bad.output
    assert lines[0].startswith(f"ppdm: error: FAILED {BUDGET_CHECK}: {3 * LN20:.6g}") and "--allow-composition" in lines[0]
    assert not (tmp_path / "r2").exists()

    run("emask", "distort", str(src), str(tmp_path / "r2"), *args, "--allow-composition")
    release = manifest_of(tmp_path / "r2")["release"]
    assert release["overrides"] == [f"composition: {BUDGET_CHECK}"]
    assert release["ledger"]["composition"]["releases"] == 3
    assert {c["name"]: c["overridden"] for c in release["ledger"]["composition"]["limits"]} == {
        BP_CHECK: False,
        BUDGET_CHECK: True,
    }


def test_bad_budget_names_the_flag(tmp_path):
    r = run(
        "emask",
        "distort",
        str(tmp_path / "x"),
        str(tmp_path / "y"),
        "--p",
        "0.4",
        "--q",
        "0.98",
        "--epsilon-budget",
        "0",
        ok=False,
    )
    assert r.exit_code == 2 and "--epsilon-budget" in r.output

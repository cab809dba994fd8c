"""``ppdm mine`` / ``ppdm emask mine`` write their results in other tools' layouts:
``--out``/``--rules-out`` by extension (.parquet ours, .csv mlxtend, .txt SPMF) or ``--out-format``.

Oracles: the files are re-read with pandas, pyarrow or plain text parsing, and their counts
compared with a brute-force count over the baskets of a FIMI file written in the test.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask.cli import main
from ppdm_dask.cli.mining import OUT_FORMATS, out_format
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.mining.export import format_of

N = 60
MIN_COUNT = 9


def _ppdm(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["--scheduler", "sync", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture(scope="module")
def baskets() -> list[list[int]]:
    rng = random.Random(3)
    return [sorted({x for x in range(1, 9) if rng.random() < 0.7 / x**0.3} or {1}) for _ in range(N)]


@pytest.fixture()
def src(tmp_path, baskets) -> str:
    path = tmp_path / "b.dat"
    path.write_text("".join(" ".join(map(str, b)) + "\n" for b in baskets))
    return str(path)


def _brute(baskets: list[list[int]]) -> dict[frozenset, int]:
    counts: Counter = Counter()
    for b in baskets:
        for k in range(1, len(b) + 1):
            counts.update(frozenset(c) for c in itertools.combinations(b, k))
    return {s: c for s, c in counts.items() if c >= MIN_COUNT}


def _support_of(s: frozenset, baskets) -> int:
    return sum(s <= set(b) for b in baskets)


def test_csv_is_mlxtends_layout(capsys, tmp_path, src, baskets):
    out, rules_out = tmp_path / "fi.csv", tmp_path / "rules.csv"
    code, stdout, err = _ppdm(
        capsys, "--json", "mine", src, "--min-count", str(MIN_COUNT), "--min-confidence", "0.3",
        "--out", str(out), "--rules-out", str(rules_out),
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(stdout)
    assert (summary["out_format"], summary["rules_out_format"]) == ("mlxtend", "mlxtend")
    fi = pd.read_csv(out)
    assert list(fi.columns) == ["support", "itemsets"]
    got = {frozenset(int(x) for x in s.split(",")): sup for s, sup in zip(fi["itemsets"].astype(str), fi["support"])}
    assert got.keys() == _brute(baskets).keys()
    assert all(sup == pytest.approx(c / N, rel=1e-12) for s, c in _brute(baskets).items() for sup in [got[s]])
    r = pd.read_csv(rules_out)
    assert list(r.columns[:2]) == ["antecedents", "consequents"] and "zhangs_metric" in r.columns and len(r) > 8
    for a, c, conf, sup in zip(r["antecedents"].astype(str), r["consequents"].astype(str), r["confidence"], r["support"]):
        a_, c_ = frozenset(map(int, a.split(","))), frozenset(map(int, c.split(",")))
        assert sup == pytest.approx(_support_of(a_ | c_, baskets) / N, rel=1e-12)
        assert conf == pytest.approx(_support_of(a_ | c_, baskets) / _support_of(a_, baskets), rel=1e-12) and conf >= 0.3


def test_txt_is_spmf(capsys, tmp_path, src, baskets):
    out = tmp_path / "fi.txt"
    code, _, err = _ppdm(capsys, "mine", src, "--min-count", str(MIN_COUNT), "--out", str(out))
    assert code == 0, err
    got = {}
    for line in out.read_text().splitlines():
        if line.startswith("@"):
            continue
        items, sup = line.split(" #SUP: ")
        got[frozenset(map(int, items.split()))] = int(sup)
    assert got == _brute(baskets)
    assert f"n_transactions={N}" in out.read_text()


def test_spark_layout(capsys, tmp_path, src, baskets):
    out, rules_out = tmp_path / "fi.parquet", tmp_path / "rules.parquet"
    code, stdout, err = _ppdm(
        capsys, "mine", src, "--min-count", str(MIN_COUNT), "--out-format", "spark",
        "--out", str(out), "--rules-out", str(rules_out),
    )  # fmt: skip
    assert code == 0, err
    assert "(spark layout)" in stdout
    t = pq.read_table(out)
    assert t.schema.names == ["items", "freq"] and t.schema.field("items").type == pa.list_(pa.int64())
    assert t.schema.field("freq").type == pa.int64()
    assert dict(zip(map(frozenset, t.column("items").to_pylist()), t.column("freq").to_pylist())) == _brute(baskets)
    r = pq.read_table(rules_out)
    assert r.schema.names == ["antecedent", "consequent", "confidence", "lift", "support"]
    for a, c, conf in zip(
        r.column("antecedent").to_pylist(), r.column("consequent").to_pylist(), r.column("confidence").to_pylist()
    ):
        both = _support_of(frozenset(a) | frozenset(c), baskets)
        assert conf == pytest.approx(both / _support_of(frozenset(a), baskets), rel=1e-12)


def test_parquet_default_is_unchanged(capsys, tmp_path, src, baskets):
    out = tmp_path / "fi.parquet"
    code, stdout, err = _ppdm(capsys, "mine", src, "--min-count", str(MIN_COUNT), "--out", str(out))
    assert code == 0, err
    t = pq.read_table(out)
    assert t.schema.names == ["items", "length", "count", "support"]
    assert dict(zip(map(frozenset, t.column("items").to_pylist()), t.column("count").to_pylist())) == _brute(baskets)
    assert "layout" not in stdout


def test_emask_mine_writes_spmf(capsys, tmp_path, src):
    out = tmp_path / "est.txt"
    code, _, err = _ppdm(capsys, "emask", "mine", src, "--p", "0.5", "--q", "0.97", "--min-support", "0.2", "--out", str(out))
    assert code == 0, err
    body = [ln for ln in out.read_text().splitlines() if not ln.startswith("@")]
    assert body and all(ln.split(" #SUP: ")[1].lstrip("-").isdigit() for ln in body)  # estimates rounded to counts


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["--out", "{d}/fi.json"], ["--out", "fi.json", "--out-format"]),
        (["--rules", "--rules-out", "{d}/r.xlsx"], ["--rules-out", "r.xlsx", "--out-format"]),
        (["--out", "{d}/fi.csv", "--out-format", "spark"], ["--out", "fi.csv", "--out-format spark"]),
        (["--out", "{d}/fi.parquet", "--out-format", "excel"], ["--out-format", "excel"]),
    ],
)
def test_bad_output_name_is_one_usage_error(capsys, tmp_path, src, argv, needles):
    argv = [a.format(d=tmp_path) for a in argv]
    code, out, err = _ppdm(capsys, "mine", src, "--min-count", str(MIN_COUNT), *argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and out == "" and len(lines) == 1 and lines[0].startswith("ppdm: error: "), err
    assert all(n in lines[0] for n in needles), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.dat"]  # nothing written


@pytest.mark.parametrize("fmt", [None, *OUT_FORMATS])
@pytest.mark.parametrize("name", ["x.parquet", "x.PQ", "x.csv", "x.txt", "x", "x.json", "s3://b/x.tsv", "dir.v2/x"])
def test_command_line_and_library_choose_the_same_layout(name, fmt):
    """The command line refuses names before the miner loads, with its own copy of the table."""
    import click

    try:
        lib = format_of(name, fmt)
    except InvalidParameter:
        lib = None
    try:
        cli = out_format(name, fmt, "--out")
    except click.UsageError:
        cli = None
    assert cli == lib

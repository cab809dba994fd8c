"""Support flags and the guards that refuse a run before its memory is allocated.

* ``--min-support`` is a fraction of the transactions in (0, 1] (``1`` = every transaction) for
  every command; an absolute count is ``--min-count N``; giving both (or neither where one is
  required) is one usage error naming both flags.
* Apriori and EMASK-Apriori bound a level's candidates (and their memory) *before* building it;
  the KRIMP miner refuses a database whose candidates surely exceed ``--max-candidates`` before
  it allocates anything.
* ``krimp generate --exclude``: items of SRC only, 2 or more distinct items, no repeats.
"""

from __future__ import annotations

import importlib
import itertools
import json
import random
from collections import Counter

import pandas as pd
import pytest

from ppdm_dask.cli import main
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.errors import ResultTooLargeError
from ppdm_dask.krimp import candidates as krimp_candidates

apriori_module = importlib.import_module("ppdm_dask.mining.apriori")  # the package exports the function under that name


def _ppdm(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the real entry point in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        main(["--scheduler", "sync", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _error_line(code: int, out: str, err: str) -> str:
    """The one ``ppdm: error:`` line of a refused run (exit 2, nothing on stdout)."""
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[")]  # "[mine] level ..." progress lines
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), err
    assert out == "", out
    assert "Traceback" not in err
    return lines[0]


def _write(path, rows) -> str:
    path.write_text("".join(" ".join(map(str, r)) + "\n" for r in rows))
    return str(path)


def _brute_force(rows, min_count: int) -> dict[frozenset, int]:
    counts: Counter = Counter()
    for r in rows:
        s = sorted(set(r))
        for k in range(1, len(s) + 1):
            counts.update(frozenset(c) for c in itertools.combinations(s, k))
    return {x: c for x, c in counts.items() if c >= min_count}


def _itemsets(parquet) -> dict[frozenset, int]:
    df = pd.read_parquet(parquet)
    return {frozenset(int(i) for i in x): int(c) for x, c in zip(df["items"], df["count"])}


# ---------------------------------------------------------------------------- --min-support / --min-count
def test_min_support_1_means_every_transaction(capsys, tmp_path):
    rows = [[1, 2, 3], [1, 2], [1, 2, 4], [2, 3, 1, 5]]
    src = _write(tmp_path / "tiny.dat", rows)
    code, out, err = _ppdm(capsys, "--json", "mine", src, "--min-support", "1", "--out", str(tmp_path / "fi.parquet"))
    assert code == 0, err
    s = json.loads(out)
    assert s["min_count"] == len(rows)  # 100 %, not the absolute count 1
    assert (
        _itemsets(tmp_path / "fi.parquet")
        == _brute_force(rows, len(rows))
        == {frozenset({1}): 4, frozenset({2}): 4, frozenset({1, 2}): 4}
    )
    # the same for KRIMP: min-support 1 is every row (iris: 150)
    code, out, err = _ppdm(capsys, "--json", "krimp", "compress", str(sample_path("iris")), "--min-support", "1")
    assert code == 0, err
    assert json.loads(out)["min_support"] == 150


def test_min_count_equals_min_support_fraction(capsys, tmp_path):
    rng = random.Random(3)
    rows = [sorted(rng.sample(range(1, 9), rng.randint(1, 6))) for _ in range(10)]
    src = _write(tmp_path / "ten.dat", rows)
    for flag, value, name in (("--min-count", "3", "count"), ("--min-support", str(3 / len(rows)), "fraction")):
        code, out, err = _ppdm(capsys, "--json", "mine", src, flag, value, "--out", str(tmp_path / f"{name}.parquet"))
        assert code == 0, err
        assert json.loads(out)["min_count"] == 3
    assert _itemsets(tmp_path / "count.parquet") == _itemsets(tmp_path / "fraction.parquet") == _brute_force(rows, 3)
    # a count given to --min-support is refused, with the flag that means it
    line = _error_line(*_ppdm(capsys, "mine", src, "--min-support", "3"))
    assert "--min-support 3 is not a fraction" in line and "--min-count 3" in line
    # a count above the number of transactions names --min-count
    line = _error_line(*_ppdm(capsys, "mine", src, "--min-count", "11"))
    assert "--min-count 11 exceeds the 10 transactions" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["mine", "{src}"],
        ["emask", "mine", "{src}", "--p", "0.5", "--q", "0.97"],
        ["emask", "audit", "{src}", "{src}", "--p", "0.5", "--q", "0.97"],
        ["krimp", "compress", "{src}"],
        ["krimp", "generate", "{src}", "{out}"],
        ["krimp", "ds", "{src}", "{src}"],
    ],
)
def test_both_support_flags_are_one_usage_error(capsys, tmp_path, argv):
    args = [a.format(src=str(sample_path("iris")), out=str(tmp_path / "out")) for a in argv]
    line = _error_line(*_ppdm(capsys, *args, "--min-support", "0.5", "--min-count", "3"))
    assert "--min-support" in line and "--min-count" in line and "not both" in line
    assert not (tmp_path / "out").exists()
    if argv[:2] != ["emask", "audit"]:  # audit has a default support (0.003)
        line = _error_line(*_ppdm(capsys, *args))
        assert "Missing option '--min-support'" in line and "'--min-count'" in line


# ---------------------------------------------------------------------------- Apriori / EMASK guards
def _spy_on_apriori_gen(monkeypatch, module) -> list[int]:
    """Record the length of the candidates every call of ``apriori_gen`` builds."""
    built: list[int] = []
    real = module.apriori_gen

    def spy(frequent):
        built.append(frequent.shape[1] + 1)
        return real(frequent)

    monkeypatch.setattr(module, "apriori_gen", spy)
    return built


@pytest.mark.parametrize(
    "argv", [["mine", "{src}"], ["emask", "mine", "{src}", "--p", "1", "--q", "1"]], ids=["mine", "emask-mine"]
)
def test_candidate_guard_fires_before_the_level_is_built(capsys, tmp_path, monkeypatch, argv):
    """3 rows, one of 60 items, min-count 1: level k has C(60, k) candidates (level 6: 50 M).
    With a bound of 100,000 the guard must stop at level 4 (487,635) before building it: no
    level above 3 is ever built."""
    from ppdm_dask.mining import ahead, levelwise

    src = _write(tmp_path / "adv.dat", [range(1, 61), [1, 2, 3], [2, 3, 4]])
    built = _spy_on_apriori_gen(monkeypatch, levelwise)  # the one level-wise driver of Apriori and EMASK
    built_ahead = _spy_on_apriori_gen(monkeypatch, ahead)  # counting ahead builds candidates too
    args = [a.format(src=src) for a in argv]
    code, out, err = _ppdm(capsys, *args, "--min-count", "1", "--max-candidates", "100000")
    line = _error_line(code, out, err)
    assert "level 4 would build up to 487,635 candidate itemsets" in line and "iB on the driver" in line
    assert "--max-candidates" in line and "--min-support" in line and "--max-length" in line
    assert built and max(built + built_ahead) <= 3  # levels 1-3 only: no candidate of length 4 was built
    assert "level 4" not in err.replace(line, "")


def test_candidate_guard_default_bound_counts_no_pairs(capsys, tmp_path, monkeypatch):
    """One row of 7,000 items: 24,496,500 pairs, over the default bound of 20,000,000: refused
    before level 2 is counted."""
    from ppdm_dask.mining.counting import SupportCounter

    def no_pairs(*a, **k):
        raise AssertionError("pairs counted")

    monkeypatch.setattr(SupportCounter, "pair_counts", no_pairs)
    src = _write(tmp_path / "wide.dat", [range(1, 7001), [1, 2], [2, 3]])
    line = _error_line(*_ppdm(capsys, "mine", src, "--min-count", "1"))
    assert "level 2 would build 24,496,500 candidate itemsets" in line and "over the bound of 20,000,000" in line
    assert "--max-candidates" in line


def test_emask_p_plus_q_one_refused_up_front(capsys):
    line = _error_line(*_ppdm(capsys, "emask", "mine", "/no/such/release", "--p", "0.3", "--q", "0.7", "--min-support", "0.1"))
    assert "add up to 1" in line and "--p" in line and "--q" in line and "/no/such" not in line
    line = _error_line(*_ppdm(capsys, "emask", "mine", "/no/such/release", "--p", "1.5", "--q", "0.9", "--min-support", "0.1"))
    assert "'--p': 1.5 is not in the range 0<=x<=1" in line and "/no/such" not in line


# ---------------------------------------------------------------------------- KRIMP guard
def test_krimp_refuses_a_million_item_transaction_before_mining(capsys, tmp_path, monkeypatch):
    """At min-count 1 a transaction of 1,000,000 items makes 2^1,000,000 candidates: refused
    before the miner runs (it is never called, so nothing of it is allocated)."""

    def no_kernel(*a, **k):
        raise AssertionError("the candidate miner ran")

    monkeypatch.setattr(krimp_candidates, "_mine_kernel", no_kernel)
    src = _write(tmp_path / "big.dat", [range(1, 1_000_001), [1, 2, 3], [2, 3, 4]])
    for argv in (["krimp", "compress", src], ["krimp", "ds", src, src]):
        line = _error_line(*_ppdm(capsys, *argv, "--min-count", "1"))
        assert "a transaction of 1,000,000 items" in line and "about 2^1,000,000 itemsets" in line
        assert "refused before mining" in line and "--max-candidates" in line and "--closed" in line


def test_krimp_guard_in_the_library():
    rows = [list(range(1, 1_000_001)), [1, 2, 3], [2, 3, 4]]
    with pytest.raises(ResultTooLargeError, match="every pair of its items"):
        krimp_candidates.mine_candidates(rows, 1, max_len=2)
    # min-support 2: only items 2 and 3 are frequent, so the miner's tables are tiny (they were
    # sized by the longest row: 1,000,000 levels of 15,625 words)
    c = krimp_candidates.mine_candidates(rows, 2)
    assert {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)} == _krimp_brute(rows, 2)
    # the same set repeated min-support times counts as one long row
    with pytest.raises(ResultTooLargeError, match="set of 40 items found in 2 transactions"):
        krimp_candidates.mine_candidates([list(range(40)), list(range(40)), [1, 2]], 2)


def _krimp_brute(rows, min_count):
    """Itemsets of >= 2 items with support >= min_count; every frequent one lies in a short row here."""
    sets = [set(r) for r in rows]
    subsets = {
        frozenset(x) for r in rows if len(r) <= 20 for k in range(2, len(r) + 1) for x in itertools.combinations(sorted(r), k)
    }
    support = {x: sum(x <= r for r in sets) for x in subsets}
    return {x: c for x, c in support.items() if c >= min_count}


# ---------------------------------------------------------------------------- --exclude
def test_exclude_is_checked(capsys, tmp_path):
    src = str(sample_path("iris"))  # items 1..19
    gen = ["krimp", "generate", src, str(tmp_path / "g"), "--min-count", "3", "--no-scores", "--no-report"]
    line = _error_line(*_ppdm(capsys, *gen, "--exclude", "99999,100000"))
    assert "--exclude" in line and "99999, 100000 are not in" in line and "exclude nothing" in line
    line = _error_line(*_ppdm(capsys, *gen, "--exclude", "1,6", "--exclude", "1,99999"))
    assert "item 99999 is not in" in line and "--exclude" in line
    line = _error_line(*_ppdm(capsys, *gen, "--exclude", "1"))
    assert "--exclude '1': a combination needs at least 2 items" in line
    line = _error_line(*_ppdm(capsys, *gen, "--exclude", "1,1"))
    assert "--exclude '1,1' names item 1 more than once" in line
    line = _error_line(*_ppdm(capsys, *gen, "--exclude", "1,6", "--exclude", "6,1"))
    assert "--exclude '6,1' repeats the combination '1,6'" in line
    assert not (tmp_path / "g").exists()
    # a valid combination is applied: no published pattern holds both items (11 and 14 are in
    # most of the patterns without it)
    for dst, exclude in (("g", ["--exclude", "11,14"]), ("h", [])):
        code, out, err = _ppdm(capsys, "--json", *gen[:3], str(tmp_path / dst), *gen[4:], *exclude)
        assert code == 0, err
    from ppdm_dask.krimp.release import PATTERNS_FILE

    def holding_both(dst):
        patterns = pd.read_parquet(tmp_path / dst / PATTERNS_FILE)
        return sum({11, 14} <= set(int(i) for i in x) for x in patterns["items"])

    assert holding_both("g") == 0 and holding_both("h") > 0

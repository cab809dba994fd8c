"""``ppdm ingest`` and the event options of the basket commands, as a user runs them: the baskets
equal a pandas group-by, mining straight from the events equals mining the ingested dataset, and
no user value reaches the dataset, its manifest, the summary or stderr."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask import read
from ppdm_dask.cli import main
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.data.siphash import siphash_users
from ppdm_dask.ledger import Ledger
from ppdm_dask.mining import read_itemsets
from ppdm_dask.random import Key

from .test_cli import run

pytestmark = pytest.mark.oldest  # ingest on the oldest supported pandas, pyarrow and numpy too

EVENTS = str(sample_path("events"))


def _events() -> pd.DataFrame:
    return pq.read_table(EVENTS).to_pandas()


def _sessions(df: pd.DataFrame, gap: pd.Timedelta) -> Counter:
    """The gap rule written out: a user's events by time, a new session after a pause > gap."""
    out: list[frozenset] = []
    for _, g in df.dropna(subset=["user", "item", "ts"]).groupby("user"):
        g = g.sort_values("ts", kind="stable")
        cut = (g["ts"].diff() > gap).cumsum()
        out += [frozenset(s) for s in g.groupby(cut)["item"].agg(set)]
    return Counter(out)


def _all_text(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_ingest_sessions_equal_the_gap_rule_and_hold_no_user(tmp_path):
    dst, umap = tmp_path / "sessions", tmp_path / "private" / "users.parquet"
    umap.parent.mkdir()
    r = run(
        "--json", "--key-file", str(tmp_path / "k"), "ingest", EVENTS, str(dst),
        "--user", "user", "--item", "item", "--time", "ts", "--session-gap", "30min", "--user-map", str(umap),
    )  # fmt: skip
    summary = json.loads(r.stdout)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k", "private", "sessions"]  # the staging folder is gone
    df = _events()
    tx = read(str(dst))
    got = Counter(frozenset(b) for b in tx.to_lists())
    assert got == _sessions(df, pd.Timedelta("30min"))
    assert summary["n_baskets"] == tx.n_transactions and summary["n_users"] == df["user"].nunique()
    users = set(df["user"].dropna())
    published = _all_text(dst) + r.stdout.encode() + r.stderr.encode()
    assert not [u for u in users if u.encode() in published]
    values = {str(v) for f in dst.glob("*.parquet") for col in pq.read_table(f).to_pydict().values() for v in col}
    assert not users & values
    # the private map gives every basket back to its user
    m = pq.read_table(umap).to_pandas()
    assert set(m["user"]) == users and sorted(m["row"]) == list(range(tx.n_transactions))
    rows = tx.to_lists()
    by_user = Counter()
    for u, row in zip(m["user"], m["row"]):
        by_user[u] += len(rows[row])
    firsts = df.dropna(subset=["user", "item", "ts"]).groupby("user")
    some = next(iter(users))
    assert {i for row in m.loc[m["user"] == some, "row"] for i in rows[row]} == set(firsts.get_group(some)["item"])


def test_mining_straight_from_the_events_equals_mining_the_ingested_dataset(tmp_path):
    opts = ["--user", "user", "--item", "item"]
    run("ingest", EVENTS, str(tmp_path / "baskets"), *opts)
    run("mine", str(tmp_path / "baskets"), "--min-support", "0.1", "--out", str(tmp_path / "a.parquet"))
    run("mine", EVENTS, *opts, "--min-support", "0.1", "--out", str(tmp_path / "b.parquet"))
    a, b = read_itemsets(str(tmp_path / "a.parquet")), read_itemsets(str(tmp_path / "b.parquet"))
    assert len(a) > 50 and a.as_dict() == b.as_dict()
    # oracle: the one-item supports are the number of users with the item
    df = _events().dropna(subset=["user", "item"])
    users_of = df.groupby("item")["user"].nunique()
    singles = {next(iter(s)): c for s, c in a.as_dict().items() if len(s) == 1}
    assert singles == {i: int(c) for i, c in users_of.items() if c >= a.min_count}


def test_a_release_straight_from_the_events_keeps_one_input_in_the_ledger(tmp_path):
    """Without --key-file the keyed order comes from the ledger's secret: the same events give
    the same baskets in the same order, so the ledger sees one input released twice."""
    ledger = tmp_path / "ledger"
    # one basket per person: the floor holds for the person (a bound, as the DP tools bound contributions)
    opts = ["--user", "user", "--item", "item", "--time", "ts", "--session-gap", "30min", "--max-baskets-per-user", "1"]
    for i in (1, 2):
        run("--ledger", str(ledger), "emask", "distort", EVENTS, str(tmp_path / f"r{i}"), "--p", "0.3", "--q", "0.97",
            "--no-report", *opts, "--allow-composition")  # fmt: skip
    inputs = [p for p in (ledger / "records").iterdir() if p.is_dir()]
    assert len(inputs) == 1 and len(list(inputs[0].iterdir())) == 2


def test_generate_events_then_ingest_hive_days_with_counts(tmp_path):
    """A generated Hive-partitioned log (``ppdm generate events``), one basket per user and day,
    occurrences kept as weights: against pandas on the files the generator wrote."""
    log = tmp_path / "log"
    run("--key-file", str(tmp_path / "k"), "generate", "events", str(log), "--events", "3000", "--users", "200", "--hive")
    assert sorted(p.name for p in log.iterdir())[0] == "day=2026-01-01"
    r = run("--json", "ingest", str(log), str(tmp_path / "b"), "--user", "user", "--item", "item", "--time", "ts",
            "--window", "1d", "--count")  # fmt: skip
    assert json.loads(r.stdout)["mode"] == "window"
    df = pd.concat(pq.read_table(f).to_pandas() for f in log.rglob("*.parquet"))
    df["day"] = df["ts"].dt.floor("1D")
    expected = Counter(
        frozenset(g.groupby("item").size().items()) for _, g in df.dropna(subset=["user", "item", "ts"]).groupby(["user", "day"])
    )
    tx = read(str(tmp_path / "b"))
    m, w = tx.compute(), tx.weights.compute()
    labels = tx.vocabulary.labels
    got = Counter(
        frozenset(
            (labels[j], int(v)) for j, v in zip(m.indices[m.indptr[i] : m.indptr[i + 1]], w.data[w.indptr[i] : w.indptr[i + 1]])
        )
        for i in range(m.shape[0])
    )
    assert got == expected


def _person(users: pd.Series, key: Key) -> list[int]:
    """The documented pseudonym: SipHash of the user under the person key's derived words."""
    words = np.frombuffer(key.mac("ppdm-person", b"events-user"), dtype="<u8")[:2]
    return siphash_users(pa.array(users.tolist()), int(words[0]), int(words[1])).tolist()


def test_ingest_bounds_baskets_per_user_and_keys_persons_by_the_ledger(tmp_path):
    dst, umap = tmp_path / "b", tmp_path / "private" / "users.parquet"
    umap.parent.mkdir()
    opts = ["--user", "user", "--item", "item", "--time", "ts", "--session-gap", "30min", "--max-baskets-per-user", "2"]
    r = run("ingest", EVENTS, str(dst), *opts, "--user-map", str(umap))
    df = _events()
    sessions: Counter = Counter()
    for user, g in df.dropna(subset=["user", "item", "ts"]).groupby("user"):
        sessions[user] = int((g["ts"].sort_values().diff() > pd.Timedelta("30min")).sum()) + 1
    sizes = np.array(list(sessions.values()))
    dropped, over = int(np.maximum(sizes - 2, 0).sum()), int((sizes > 2).sum())
    assert dropped > 0
    assert f"at most 2 baskets per user: dropped {dropped:,} baskets of {over:,} users" in r.stdout
    assert f"baskets per user: median {np.median(sizes):g}, p90 {np.percentile(sizes, 90):g}, max {sizes.max():,}" in r.stdout
    tx = read(str(dst))
    m = pq.read_table(umap).to_pandas().sort_values("row")
    assert Counter(m["user"]) == {u: min(n, 2) for u, n in sessions.items()}
    person = tx.columns["person"].compute()
    assert person.dtype == np.uint64 and person.tolist() == _person(m["user"], Ledger().person_key())
    assert tx.metadata["ingest"]["max_baskets_per_user"] == 2 and tx.metadata["ingest"]["person"] == "user"
    users = set(df["user"].dropna())
    published = _all_text(dst) + r.stdout.encode() + r.stderr.encode()
    assert not [u for u in users if u.encode() in published]
    values = {str(v) for f in dst.glob("*.parquet") for col in pq.read_table(f).to_pydict().values() for v in col}
    assert not users & values


def test_ingest_without_a_ledger_keys_persons_by_the_key_file(tmp_path):
    umap = tmp_path / "private" / "users.parquet"
    umap.parent.mkdir()
    r = run("--json", "--no-ledger", "--key-file", str(tmp_path / "k"), "ingest", EVENTS, str(tmp_path / "b"),
            "--user", "user", "--item", "item", "--max-baskets-per-user", "3", "--user-map", str(umap))  # fmt: skip
    summary = json.loads(r.stdout)
    assert summary["max_baskets_per_user"] == 3 and summary["n_baskets_over_bound"] == 0  # user mode: one basket each
    assert summary["baskets_per_user"] == {"median": 1, "p90": 1, "max": 1}
    m = pq.read_table(umap).to_pandas().sort_values("row")
    person = read(str(tmp_path / "b")).columns["person"].compute()
    assert person.tolist() == _person(m["user"], Key.from_file(tmp_path / "k"))


@pytest.mark.parametrize("bad", ["0", "-1", "x"])
def test_a_bad_bound_is_one_error_line_naming_the_flag(tmp_path, capsys, bad):
    argv = ["--scheduler", "sync", "--no-progress", "ingest", EVENTS, str(tmp_path / "b"), "--user", "user", "--item", "item",
            "--time", "ts", "--session-gap", "30min", f"--max-baskets-per-user={bad}"]  # fmt: skip
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert e.value.code == 2 and out == "" and not (tmp_path / "b").exists()
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: ") and "--max-baskets-per-user" in lines[0], err

"""The synthetic event-log generator (``ppdm_dask.data.eventlog``) and its bundled sample.

Oracles: pandas counts of the written files (the summary), the Zipf law written out by hand,
arrival order (a row is out of order only if it is late), the 30-minute session rule with a
pandas ``diff`` (several sessions per user), and a fresh generation for the shipped sample."""

from __future__ import annotations

import fsspec
import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from ppdm_dask.data.datasets import SAMPLES, load_sample, sample_path
from ppdm_dask.data.eventlog import generate_events, main
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.random import Key

SMALL = {"n_events": 6_000, "n_users": 300, "n_items": 80, "key_or_seed": 7}


def read(url: str) -> pd.DataFrame:
    return ds.dataset(url, format="parquet", partitioning="hive").to_table().to_pandas()


def test_bundled_sample_is_a_fresh_generation(tmp_path):
    shipped = pq.read_table(sample_path("events"))
    main(["--sample", str(tmp_path / "events.parquet")])
    fresh = pq.read_table(tmp_path / "events.parquet")
    assert shipped.schema.equals(fresh.schema) and shipped.num_rows == fresh.num_rows == 20_000
    assert shipped.equals(fresh)
    assert sample_path("events").stat().st_size < 300_000
    assert "events" in SAMPLES
    events = load_sample("events").compute()
    assert list(events.columns) == ["user", "item", "ts", "qty"] and len(events) == 20_000
    # what SOURCES.md and the sample's description say
    assert events["user"].nunique() == 811 and events["item"].nunique() == 200
    assert events["user"].value_counts().iloc[0] == 929


def test_summary_matches_the_files(tmp_path):
    out = tmp_path / "log"
    s = generate_events(str(out), **SMALL, n_files=3, rows_per_group=700)
    df = read(str(out))
    assert len(df) == s["n_events"] == 6_000 and s["files"] == [f"part-{f:05d}.parquet" for f in range(3)]
    counts = df["user"].value_counts()
    assert s["n_users_seen"] == df["user"].nunique() <= 300
    assert s["n_items_seen"] == df["item"].nunique() <= 80
    assert s["max_user_events"] == counts.iloc[0]
    ((bot, n_bot),) = s["bots"]  # one bot (max(1, 300 // 100_000)), with its events counted right
    assert counts[bot] == n_bot
    assert df["user"].str.fullmatch(r"u\d{7}").all() and df["item"].str.fullmatch(r"sku-\d{5}").all()
    assert s["bytes"] == sum((out / f).stat().st_size for f in s["files"])
    for f in s["files"]:  # events split as evenly as possible, row groups of at most rows_per_group
        meta = pq.ParquetFile(out / f).metadata
        assert meta.num_rows == 2_000 and meta.num_row_groups == 3
        assert max(meta.row_group(g).num_rows for g in range(3)) <= 700


def test_same_seed_same_files_other_seed_other_files(tmp_path):
    a = generate_events(str(tmp_path / "a.parquet"), **SMALL)
    b = generate_events(str(tmp_path / "b.parquet"), **SMALL)
    c = generate_events(str(tmp_path / "c.parquet"), **{**SMALL, "key_or_seed": 8})
    k = generate_events(str(tmp_path / "k.parquet"), **{**SMALL, "key_or_seed": Key(7)})
    ta, tb, tc, tk = (pq.read_table(tmp_path / f"{n}.parquet") for n in "abck")
    assert ta.equals(tb) and ta.equals(tk) and not ta.equals(tc)
    assert a["files"] == ["a.parquet"] and a["n_late"] == b["n_late"]
    assert k["parameters"]["seed"] is None  # a key is never echoed into the summary
    assert c["n_events"] == 6_000


def test_a_log_not_clean_baskets(tmp_path):
    """Sessions found by a 30 min gap, ties in time, late rows, rows not sorted by user."""
    s = generate_events(str(tmp_path / "e.parquet"), n_events=20_000, n_users=500, n_items=100, key_or_seed=3)
    df = read(str(tmp_path / "e.parquet"))
    assert not df["user"].is_monotonic_increasing and not df["user"].is_monotonic_decreasing
    # arrival order: only a late event can be earlier than an event written before it
    behind = (df["ts"] < df["ts"].cummax().shift(fill_value=df["ts"].iloc[0])).sum()
    assert 0 < behind <= s["n_late"] < 0.01 * len(df)
    # the session rule written out: a new session where the gap to the user's previous event > 30 min
    by_user = df.sort_values(["user", "ts"], kind="stable")
    gap = by_user.groupby("user")["ts"].diff()
    sessions = (gap.isna() | (gap > pd.Timedelta("30min"))).groupby(by_user["user"]).sum()
    active = by_user["user"].value_counts()
    assert sessions[active[active >= 10].index].median() >= 3
    assert (gap == pd.Timedelta(0)).sum() > 0.02 * len(df)  # ties in time inside users' sessions
    start = pd.Timestamp("2026-01-01", tz="UTC")
    assert df["ts"].min() >= start and df["ts"].max() < start + pd.Timedelta(days=7, hours=2)
    assert (df["ts"].dt.microsecond == 0).all() and (df["qty"] >= 1).all() and str(df["qty"].dtype) == "int32"


def test_item_popularity_is_zipf(tmp_path):
    n_items, zipf, n = 40, 1.1, 60_000
    generate_events(
        str(tmp_path / "z.parquet"), n_events=n, n_users=2_000, n_items=n_items, key_or_seed=11, zipf=zipf, bundle_fraction=0
    )
    observed = read(str(tmp_path / "z.parquet"))["item"].value_counts().to_numpy() / n
    p = np.arange(1, n_items + 1) ** -zipf
    p /= p.sum()
    assert len(observed) == n_items
    np.testing.assert_allclose(observed[:10], p[:10], atol=0.006)  # 3-4 standard errors at n = 60 000


def test_bots_take_their_share(tmp_path):
    s = generate_events(
        str(tmp_path / "b"), n_events=40_000, n_users=400, n_items=50, key_or_seed=5, bots=2, bot_share=0.2, n_files=2
    )
    df = read(str(tmp_path / "b"))
    counts = df["user"].value_counts()
    bots = dict(map(tuple, s["bots"]))
    assert len(bots) == 2 and all(counts[u] == c for u, c in bots.items())
    assert set(bots) == set(counts.index[:2])
    assert sum(bots.values()) / len(df) == pytest.approx(0.2, abs=0.03)


def test_integer_labels_and_hive_days(tmp_path):
    s = generate_events(
        str(tmp_path / "h"), **SMALL, n_files=6, days=3, hive=True, item_type="int", user_type="int", start="2026-03-01"
    )
    assert s["files"] == [f"day=2026-03-0{1 + f // 2}/part-{f:05d}.parquet" for f in range(6)]
    df = read(str(tmp_path / "h"))
    assert str(df["user"].dtype) == "int64" and str(df["item"].dtype) == "int64"
    assert df["user"].between(0, 299).all() and df["item"].between(0, 79).all()
    assert "day" not in pq.read_schema(tmp_path / "h" / s["files"][0]).names  # Hive: the day is in the path only
    day = pd.to_datetime(df["day"].astype(str)).dt.tz_localize("UTC")
    late_start = df["ts"] - day  # a file's sessions start in its day, and run at most minutes past it
    assert (late_start >= pd.Timedelta(0)).all() and (late_start < pd.Timedelta(hours=25)).all()


def test_any_fsspec_url():
    url = "memory://ppdm-eventlog-test/log"
    try:
        s = generate_events(url, **SMALL, n_files=2)
        fs = fsspec.filesystem("memory")
        with fs.open("/ppdm-eventlog-test/log/part-00001.parquet", "rb") as fh:
            assert pq.read_table(fh).num_rows == 3_000
        assert s["n_files"] == 2
    finally:
        fsspec.filesystem("memory").rm("/ppdm-eventlog-test", recursive=True)


@pytest.mark.parametrize(
    ("change", "parameter"),
    [
        ({"n_events": 0}, "n_events"),
        ({"item_type": "float"}, "item_type"),
        ({"user_type": 3}, "user_type"),
        ({"hive": True, "n_files": 5}, "n_files"),
        ({"late_fraction": 1.0}, "late_fraction"),
        ({"bots": 300}, "bots"),
        ({"start": "yesterday"}, "start"),
    ],
)
def test_bad_parameters(tmp_path, change, parameter):
    with pytest.raises(InvalidParameter, match=parameter) as info:
        generate_events(str(tmp_path / "x"), **{**SMALL, **change})
    assert info.value.parameter == parameter
    assert not (tmp_path / "x").exists()

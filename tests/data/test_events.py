"""read_events (event log -> baskets) against pandas oracles written here, and its promises:
the same bytes whatever the input layout, keyed order, no user value in any output."""

from __future__ import annotations

import json
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask.data.events import read_events
from ppdm_dask.data.siphash import siphash_pairs, siphash_users
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DataFormatError, InvalidParameter
from ppdm_dask.random import Key

KEY = Key(0x1234)


# ------------------------------------------------------------------------------ event logs
def event_log(
    n: int = 3000, *, users: int = 200, items: int = 12, str_users: bool = False, str_items: bool = True, seed: int = 0
) -> pd.DataFrame:
    """Events with ties in time, out-of-order rows, gap-exact neighbours and nulls."""
    rng = np.random.default_rng(seed)
    u = rng.zipf(1.6, n) % users
    it = rng.integers(0, items, n)
    t = rng.integers(0, 400, n) * 5  # multiples of 5: many ties and events exactly a gap apart
    df = pd.DataFrame(
        {
            "user": pd.array([f"uid-{x:05d}x" for x in u], dtype="string") if str_users else pd.array(u * 7 + 100, dtype="Int64"),
            "item": pd.array([f"sku{x}" for x in it], dtype="string") if str_items else pd.array(it * 3 + 1, dtype="Int64"),
            "t": pd.array(t, dtype="Int64"),
        }
    )
    for col, frac in (("user", 0.01), ("item", 0.01), ("t", 0.02)):
        df.loc[rng.random(n) < frac, col] = pd.NA
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # late events: rows out of time order


def write_parquet(df: pd.DataFrame, path, *, files: int = 1, row_group: int = 10**9) -> str:
    path.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(len(df)), files)):
        table = pa.Table.from_pandas(df.iloc[part], preserve_index=False)
        pq.write_table(table, path / f"part-{i:03d}.parquet", row_group_size=row_group)
    return str(path)


def as_multiset(baskets) -> Counter:
    return Counter(frozenset(b) for b in baskets)


# ------------------------------------------------------------------------------ oracles
def oracle_users(df: pd.DataFrame, *, time: bool = False) -> Counter:
    need = ["user", "item"] + (["t"] if time else [])
    d = df.dropna(subset=need)
    return as_multiset(d.groupby("user")["item"].agg(set).tolist())


def sessions_by_user(df: pd.DataFrame, gap: int) -> dict:
    """The gap rule written out: sort a user's events by time; a new session starts where the
    time minus the previous event's time is more than the gap. User -> its sessions in order."""
    d = df.dropna(subset=["user", "item", "t"])
    out: dict = {}
    for user, g in d.groupby("user"):
        g = g.sort_values("t", kind="stable")
        sessions: list[set] = [set()]
        prev = None
        for t, item in zip(g["t"].tolist(), g["item"].tolist()):
            if prev is not None and t - prev > gap:
                sessions.append(set())
            sessions[-1].add(item)
            prev = t
        out[user] = sessions
    return out


def oracle_sessions(df: pd.DataFrame, gap: int) -> Counter:
    return as_multiset(s for sessions in sessions_by_user(df, gap).values() for s in sessions)


def oracle_windows(df: pd.DataFrame, window: int) -> Counter:
    d = df.dropna(subset=["user", "item", "t"]).copy()
    d["w"] = np.floor(d["t"].astype(float) / window).astype(int)
    return as_multiset(d.groupby(["user", "w"])["item"].agg(set).tolist())


def csr_bytes(tx: TransactionArray):
    m = tx.compute(progress=False)
    person = tx.columns["person"].compute()
    assert person.dtype == np.uint64 and tx.columns["person"].chunks[0] == tx.partition_rows
    return (m.indptr.tobytes(), m.indices.tobytes(), tx.partition_rows, tx.vocabulary.labels.tolist(), person.tobytes())


# ------------------------------------------------------------------------------ oracles
@pytest.mark.parametrize("str_users,str_items", [(False, True), (True, False)])
def test_user_mode_equals_pandas_group_by(tmp_path, str_users, str_items):
    df = event_log(str_users=str_users, str_items=str_items)
    src = write_parquet(df, tmp_path / "ev", files=3, row_group=400)
    tx, s = read_events(src, user="user", item="item", key=KEY, events_per_block=500)
    assert as_multiset(tx.to_lists()) == oracle_users(df)
    assert len(tx) == s.n_baskets == s.n_users == df.dropna(subset=["user", "item"])["user"].nunique()
    assert s.n_null_user == int(df["user"].isna().sum())
    assert s.n_null_item == int((df["user"].notna() & df["item"].isna()).sum())
    assert tx.vocabulary.labels.tolist() == sorted(df["item"].dropna().unique().tolist())
    assert tx.vocabulary.is_integer == (not str_items)


@pytest.mark.parametrize("gap", [0, 5, 40])
def test_session_mode_equals_the_gap_rule(tmp_path, gap):
    df = event_log(str_users=True)
    src = write_parquet(df, tmp_path / "ev", files=2, row_group=700)
    tx, s = read_events(src, user="user", item="item", time="t", session_gap=gap, key=KEY, events_per_block=600)
    assert as_multiset(tx.to_lists()) == oracle_sessions(df, gap)
    assert s.mode == "session" and s.n_null_time == int(df.dropna(subset=["user", "item"])["t"].isna().sum())


def test_window_mode_equals_floor_windows(tmp_path):
    df = event_log()
    src = write_parquet(df, tmp_path / "ev", files=2)
    tx, _ = read_events(src, user="user", item="item", time="t", window=50, key=KEY, events_per_block=800)
    assert as_multiset(tx.to_lists()) == oracle_windows(df, 50)


def test_timestamps_with_duration_strings_and_a_zone(tmp_path):
    df = event_log(n=1500)
    d = df.dropna(subset=["t"]).copy()
    base = pd.Timestamp("2024-03-01", tz="Europe/Paris")
    d["t"] = base + pd.to_timedelta(d["t"].astype("int64"), unit="min")
    table = pa.Table.from_pandas(d, preserve_index=False).cast(
        pa.schema([("user", pa.int64()), ("item", pa.string()), ("t", pa.timestamp("ms", tz="Europe/Paris"))])
    )
    pq.write_table(table, tmp_path / "ts.parquet", row_group_size=300)
    tx, _ = read_events(str(tmp_path / "ts.parquet"), user="user", item="item", time="t", session_gap="15min", key=KEY)
    minutes = d.assign(t=((d["t"] - base) / pd.Timedelta(minutes=1)).astype(int))
    assert as_multiset(tx.to_lists()) == oracle_sessions(minutes, 15)
    # hour windows of UTC time, aligned at the epoch
    tx, _ = read_events(str(tmp_path / "ts.parquet"), user="user", item="item", time="t", window="1h", key=KEY)
    utc = d.assign(t=(d["t"].dt.tz_convert("UTC") - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(minutes=1))
    assert as_multiset(tx.to_lists()) == oracle_windows(utc, 60)


def test_count_keeps_events_per_item_as_weights(tmp_path):
    df = event_log(n=1500)
    src = write_parquet(df, tmp_path / "ev", files=2, row_group=200)
    tx, _ = read_events(src, user="user", item="item", count=True, key=KEY, events_per_block=300)
    m, w = tx.compute(progress=False), TransactionArray(tx.weights, tx.vocabulary).compute(progress=False)
    labels = tx.vocabulary.labels
    got = Counter(
        frozenset(zip(labels[m.indices[m.indptr[i] : m.indptr[i + 1]]].tolist(), w.data[w.indptr[i] : w.indptr[i + 1]].tolist()))
        for i in range(m.shape[0])
    )
    d = df.dropna(subset=["user", "item"])
    want = Counter(frozenset((k, float(v)) for k, v in g.value_counts().items()) for _, g in d.groupby("user")["item"])
    assert got == want


# ------------------------------------------------------------------------------ layout
@pytest.mark.parametrize(
    "mode",
    [
        {},
        {"time": "t", "session_gap": 10},
        {"time": "t", "window": 100},
        {"time": "t", "session_gap": 10, "max_baskets_per_user": 2, "person_key": Key(5)},
    ],
)
def test_same_bytes_from_1_4_16_files_and_row_groups_and_staging(tmp_path, mode):
    """The baskets, their order and their person column (csr_bytes)."""
    df = event_log(n=2500)
    outs = []
    for files, rg in ((1, 10**9), (4, 150), (16, 40)):
        src = write_parquet(df, tmp_path / f"f{files}", files=files, row_group=rg)
        tx, _ = read_events(src, user="user", item="item", key=KEY, events_per_block=700, **mode)
        outs.append(csr_bytes(tx))
    tx, _ = read_events(src, user="user", item="item", key=KEY, events_per_block=700, staging=str(tmp_path / "stage"), **mode)
    outs.append(csr_bytes(tx))
    assert all(o == outs[0] for o in outs[1:])
    assert len(outs[0][2]) == 4  # ceil(events used / 700) output blocks


def test_csv_byte_ranges_equal_parquet(tmp_path):
    df = event_log(n=2000)
    df.to_csv(tmp_path / "ev.csv", index=False)
    src = write_parquet(df, tmp_path / "pq")
    a, _ = read_events(
        str(tmp_path / "ev.csv"), user="user", item="item", time="t", session_gap=20, key=KEY, events_per_block=150
    )
    b, _ = read_events(src, user="user", item="item", time="t", session_gap=20, key=KEY, events_per_block=150)
    assert csr_bytes(a) == csr_bytes(b)


def test_hive_partition_column_as_time_and_memory_url(tmp_path):
    import fsspec

    df = event_log(n=1200).dropna(subset=["t"])
    df["day"] = (df["t"] // 500).astype("int64")
    pq.write_to_dataset(
        pa.Table.from_pandas(df.drop(columns="t"), preserve_index=False), tmp_path / "hive", partition_cols=["day"]
    )
    tx, _ = read_events(str(tmp_path / "hive"), user="user", item="item", time="day", window=1, key=KEY)
    assert as_multiset(tx.to_lists()) == oracle_windows(df.assign(t=df["day"]), 1)
    mem = fsspec.filesystem("memory")
    with mem.open("/events-test/e.parquet", "wb") as fh:
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), fh)
    tx, _ = read_events("memory://events-test/e.parquet", user="user", item="item", key=KEY)
    assert as_multiset(tx.to_lists()) == oracle_users(df)
    mem.rm("/events-test", recursive=True)


def test_same_bytes_on_a_cluster(tmp_path, on_cluster):
    df = event_log(n=1500)
    src = write_parquet(df, tmp_path / "ev", files=3, row_group=200)
    with_cluster, _ = read_events(src, user="user", item="item", time="t", session_gap=10, key=KEY, events_per_block=400)
    got = csr_bytes(with_cluster)
    import dask

    with dask.config.set(scheduler="sync"):
        local, _ = read_events(src, user="user", item="item", time="t", session_gap=10, key=KEY, events_per_block=400)
        want = csr_bytes(local)
    assert got == want


# ------------------------------------------------------------------------------ heavy users
def _heavy_log() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [(u, f"i{rng.integers(0, 30)}", int(rng.integers(0, 1000))) for u in range(40) for _ in range(rng.integers(1, 8))]
    rows += [(999, f"i{k % 30}", k) for k in range(120)]  # a bot
    rows += [(998, f"i{k % 7}", 5) for k in range(60)]  # a bot with ties in time
    return pd.DataFrame(rows, columns=["user", "item", "t"]).sample(frac=1.0, random_state=1)


@pytest.mark.parametrize("policy", ["keep", "cap", "drop"])
def test_heavy_users_against_pandas(tmp_path, policy):
    df = _heavy_log()
    src = write_parquet(df, tmp_path / "ev", files=3, row_group=50)
    cap = 25
    tx, s = read_events(
        src, user="user", item="item", time="t", max_user_events=cap, heavy_users=policy, key=KEY, events_per_block=100
    )
    sizes = df.groupby("user").size()
    heavy = set(sizes[sizes > cap].index)
    if policy == "drop":
        want = df[~df["user"].isin(heavy)]
    elif policy == "cap":  # the cap latest events: sorted by (time, item label), the last ones
        want = df.sort_values(["user", "t", "item"]).groupby("user").tail(cap)
    else:
        want = df
    assert as_multiset(tx.to_lists()) == oracle_users(want)
    assert s.n_heavy == 2 and [n for _, n in s.heavy_users] == [120, 60]
    assert all(p.startswith("user-") and len(p) == 15 for p, _ in s.heavy_users)
    assert s.n_events_used == len(want)
    text = json.dumps(s.as_dict())
    assert "999" not in text and "998" not in text


# ------------------------------------------------------------------------------ privacy
def test_no_user_value_outside_the_user_map(tmp_path):
    df = event_log(n=1500, str_users=True)
    src = write_parquet(df, tmp_path / "ev", files=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tx, s = read_events(
            src, user="user", item="item", time="t", session_gap=10, key=KEY, user_map=str(tmp_path / "private" / "map.parquet")
        )
        tx.to_parquet(str(tmp_path / "out"))
    markers = set(df["user"].dropna())
    texts = [json.dumps(s.as_dict()), json.dumps(tx.metadata), repr(tx)] + [str(w.message) for w in caught]
    for f in (tmp_path / "out").rglob("*"):
        if f.is_file():
            texts.append(f.read_bytes().decode("latin-1"))
            if f.suffix == ".parquet":
                t = pq.read_table(f)
                texts += [str(v) for c in t.columns for v in c.to_pylist()]
    blob = "\n".join(texts)
    assert not any(m in blob for m in markers)
    umap = pq.read_table(tmp_path / "private" / "map.parquet").to_pandas()
    assert set(umap["user"]) == set(df.dropna(subset=["user", "item", "t"])["user"])
    # the map is right: every row's basket is that user's session
    baskets = tx.to_lists()
    d = df.dropna(subset=["user", "item", "t"])
    for user, g in umap.groupby("user"):
        got = as_multiset(baskets[r] for r in g["row"])
        assert got == oracle_sessions(d[d["user"] == user], 10)
    assert sorted(umap["row"]) == list(range(len(tx)))


def test_keyed_order_is_unrelated_to_first_events(tmp_path):
    from scipy.stats import spearmanr

    rng = np.random.default_rng(7)
    n_users = 5000
    df = pd.DataFrame(
        {"user": np.repeat(np.arange(n_users), 2), "item": rng.integers(0, 50, 2 * n_users), "t": np.arange(2 * n_users)}
    )
    src = write_parquet(df, tmp_path / "ev")
    tx, _ = read_events(src, user="user", item="item", key=KEY, user_map=str(tmp_path / "m.parquet"))
    umap = pq.read_table(tmp_path / "m.parquet").to_pandas()
    first = df.groupby("user")["t"].min()
    rho = spearmanr(umap["row"], first.loc[umap["user"]].to_numpy()).statistic
    assert abs(rho) < 0.05
    same, _ = read_events(src, user="user", item="item", key=KEY, user_map=str(tmp_path / "m2.parquet"))
    assert csr_bytes(same) == csr_bytes(tx)
    other, _ = read_events(src, user="user", item="item", key=Key(99), user_map=str(tmp_path / "m3.parquet"))
    rows_other = pq.read_table(tmp_path / "m3.parquet").to_pandas().set_index("user")["row"]
    assert abs(spearmanr(umap["row"], rows_other.loc[umap["user"]]).statistic) < 0.05
    # the same key with other parameters: an unrelated order (one key never lines two ingests up)
    read_events(src, user="user", item="item", key=KEY, count=True, user_map=str(tmp_path / "m4.parquet"))
    rows_count = pq.read_table(tmp_path / "m4.parquet").to_pandas().set_index("user")["row"]
    assert abs(spearmanr(umap["row"], rows_count.loc[umap["user"]]).statistic) < 0.05


# ------------------------------------------------------------------------------ errors
def test_errors_name_the_option_or_column(tmp_path):
    df = event_log(n=200)
    src = write_parquet(df, tmp_path / "ev")
    with pytest.raises(
        DataFormatError, match=r"no column 'sku' \(`item`\) in part-000.parquet \(columns: \['item', 't', 'user'\]\)"
    ):
        read_events(src, user="user", item="sku")
    with pytest.raises(InvalidParameter, match="session_gap needs a time column") as e:
        read_events(src, user="user", item="item", session_gap=5)
    assert e.value.parameter == "session_gap"
    with pytest.raises(InvalidParameter, match="exclusive"):
        read_events(src, user="user", item="item", time="t", session_gap=5, window=5)
    df2 = df.dropna(subset=["t"]).assign(t=lambda d: pd.to_datetime(d["t"].astype("int64"), unit="s"))
    pq.write_table(pa.Table.from_pandas(df2, preserve_index=False), tmp_path / "ts.parquet")
    with pytest.raises(InvalidParameter, match="session_gap 'soon' is not a duration") as e:
        read_events(str(tmp_path / "ts.parquet"), user="user", item="item", time="t", session_gap="soon")
    assert e.value.parameter == "session_gap" and "\n" not in str(e.value)
    with pytest.raises(InvalidParameter, match="heavy_users"):
        read_events(src, user="user", item="item", heavy_users="ban")


def test_a_bad_csv_value_is_not_quoted_in_the_error(tmp_path):
    rows = ["user,item"] + [f"{i},a" for i in range(20_000)] + ["secret-user-value,b"]  # types from the first 64 KiB
    (tmp_path / "ev.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(DataFormatError, match="cannot read ev.csv") as e:
        read_events(str(tmp_path / "ev.csv"), user="user", item="item", key=KEY)
    assert "secret-user-value" not in str(e.value)


def test_only_null_events_give_an_empty_dataset(tmp_path):
    df = pd.DataFrame({"user": pd.array([None, 1], "Int64"), "item": pd.array(["a", None], "string")})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "e.parquet")
    tx, s = read_events(str(tmp_path / "e.parquet"), user="user", item="item", key=KEY)
    assert len(tx) == 0 and tx.n_items == 0 and tx.to_lists() == []
    assert (s.n_events, s.n_null_user, s.n_null_item, s.n_events_used) == (2, 1, 1, 0)


def test_float_time_windows(tmp_path):
    df = event_log(n=800).dropna(subset=["t"])
    df["t"] = df["t"].astype("float64") / 3.0
    src = write_parquet(df, tmp_path / "ev")
    tx, _ = read_events(src, user="user", item="item", time="t", window=2.5, key=KEY)
    assert as_multiset(tx.to_lists()) == oracle_windows(df, 2.5)


def test_sessions_through_staging_with_counts_and_a_user_map(tmp_path):
    df = event_log(n=1500, str_users=True)
    src = write_parquet(df, tmp_path / "ev", files=3, row_group=100)
    tx, s = read_events(
        src,
        user="user",
        item="item",
        time="t",
        session_gap=15,
        count=True,
        key=KEY,
        events_per_block=300,
        staging=str(tmp_path / "stage"),
        user_map=str(tmp_path / "map.parquet"),
    )
    assert s.extra["staging_folder"].startswith(str(tmp_path / "stage"))
    m, w = tx.compute(progress=False), TransactionArray(tx.weights, tx.vocabulary).compute(progress=False)
    labels = tx.vocabulary.labels
    rows = [
        frozenset(zip(labels[m.indices[m.indptr[i] : m.indptr[i + 1]]].tolist(), w.data[w.indptr[i] : w.indptr[i + 1]].tolist()))
        for i in range(m.shape[0])
    ]
    # the oracle: the gap rule as a loop, with each item's events counted per session
    d = df.dropna(subset=["user", "item", "t"])
    umap = pq.read_table(tmp_path / "map.parquet").to_pandas()
    for user, g in d.groupby("user"):
        g = g.sort_values("t", kind="stable")
        sessions, prev = [], None
        for t, item in zip(g["t"].tolist(), g["item"].tolist()):
            if prev is None or t - prev > 15:
                sessions.append(Counter())
            sessions[-1][item] += 1
            prev = t
        mine = umap[umap["user"] == user].sort_values("session")
        assert mine["session"].tolist() == list(range(len(sessions)))
        assert [rows[r] for r in mine["row"]] == [frozenset((k, float(v)) for k, v in c.items()) for c in sessions]


def test_hive_events_on_s3_with_staging_there(s3, tmp_path):
    import s3fs  # type: ignore[import-untyped]

    opts = s3["storage_options"]
    fs = s3fs.S3FileSystem(**opts)
    df = event_log(n=900).dropna(subset=["t"])
    df["day"] = (df["t"] // 700).astype("int64")
    local = tmp_path / "hive"
    pq.write_to_dataset(pa.Table.from_pandas(df, preserve_index=False), local, partition_cols=["day"])
    url = f"{s3['prefix']}/events"
    fs.put(str(local), url.removeprefix("s3://"), recursive=True)
    tx, _ = read_events(
        url, user="user", item="item", time="t", session_gap=10, key=KEY, storage_options=opts, staging=f"{s3['prefix']}/stage"
    )
    assert as_multiset(tx.to_lists()) == oracle_sessions(df, 10)
    # the classmethod is the same call
    same = TransactionArray.from_events(str(local), user="user", item="item", time="t", session_gap=10, key=KEY)
    assert csr_bytes(same) == csr_bytes(tx)


def test_cap_in_session_mode_and_date_windows(tmp_path):
    df = _heavy_log()
    src = write_parquet(df, tmp_path / "ev", files=2, row_group=60)
    tx, s = read_events(src, user="user", item="item", time="t", session_gap=30, max_user_events=25, heavy_users="cap", key=KEY)
    capped = df.sort_values(["user", "t", "item"]).groupby("user").tail(25)
    assert as_multiset(tx.to_lists()) == oracle_sessions(capped, 30) and s.n_events_capped == 120 + 60 - 50
    # a date column: windows of 7 days aligned at the epoch (1970-01-01, a Thursday)
    days = df.assign(t=pd.to_datetime(df["t"], unit="D").dt.date)
    pq.write_table(pa.Table.from_pandas(days, preserve_index=False), tmp_path / "d.parquet")
    tx, _ = read_events(str(tmp_path / "d.parquet"), user="user", item="item", time="t", window="7D", key=KEY)
    assert as_multiset(tx.to_lists()) == oracle_windows(df, 7)


def test_whole_floats_are_integers_and_other_floats_an_error(tmp_path):
    # pandas stores an integer column with missing values as float64
    df = event_log(n=600)
    floats = df.assign(user=df["user"].astype("float64"), item=df["item"])
    pq.write_table(pa.Table.from_pandas(floats, preserve_index=False), tmp_path / "f.parquet")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "i.parquet")
    a, _ = read_events(str(tmp_path / "f.parquet"), user="user", item="item", key=KEY)
    b, _ = read_events(str(tmp_path / "i.parquet"), user="user", item="item", key=KEY)
    assert csr_bytes(a) == csr_bytes(b)
    bad = floats.assign(user=floats["user"] + 0.5)
    pq.write_table(pa.Table.from_pandas(bad, preserve_index=False), tmp_path / "b.parquet")
    with pytest.raises(DataFormatError, match=r"user column 'user' holds \d+ non-integer number") as e:
        read_events(str(tmp_path / "b.parquet"), user="user", item="item", key=KEY)
    assert ".5" not in str(e.value)


# ------------------------------------------------------------------------------ the person
def person_words(person_key: Key) -> tuple[int, int]:
    """The documented derivation: the first two little-endian words of the person key's MAC."""
    w = np.frombuffer(person_key.mac("ppdm-person", b"events-user"), dtype="<u8")[:2]
    return int(w[0]), int(w[1])


def order_words(key: Key, **params) -> tuple[int, int, int, int]:
    """The documented derivation of the user hash (k0, k1) and basket key (s0, s1) words: the MAC
    of the canonical JSON of the ingest's parameters (the bound only when one is given)."""
    identity = {"count": False, "heavy_users": "keep", "max_user_events": 100_000, "item": "item", "user": "user"}
    identity.update(params)
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    w = np.frombuffer(key.mac("ingest-users", text.encode()), dtype="<u8")
    return int(w[0]), int(w[1]), int(w[2]), int(w[3])


def rows_of_users(tx: TransactionArray, umap_path) -> pd.DataFrame:
    """The private user map, sorted by row and checked to cover every row once."""
    umap = pq.read_table(umap_path).to_pandas().sort_values("row").reset_index(drop=True)
    assert umap["row"].tolist() == list(range(len(tx)))
    return umap


def pseudonyms(users: pd.Series, person_key: Key) -> np.ndarray:
    return siphash_users(pa.array(users.tolist()), *person_words(person_key))


@pytest.mark.parametrize(
    "mode,str_users",
    [({}, False), ({"time": "t", "session_gap": 5}, True), ({"time": "t", "window": 50}, False)],
)
def test_person_column_is_the_keyed_hash_of_each_rows_user(tmp_path, mode, str_users):
    df = event_log(n=2000, str_users=str_users)
    src = write_parquet(df, tmp_path / "ev", files=3, row_group=300)
    umap_path = tmp_path / "map.parquet"
    tx, _ = read_events(
        src, user="user", item="item", key=KEY, person_key=Key(77), user_map=str(umap_path), events_per_block=500, **mode
    )
    umap = rows_of_users(tx, umap_path)
    person = tx.columns["person"].compute()
    assert person.dtype == np.uint64 and len(person) == len(tx) and tx.n_partitions == 4
    assert person.tolist() == pseudonyms(umap["user"], Key(77)).tolist()
    # one pseudonym per user: as many distinct pseudonyms as users
    assert len(set(person.tolist())) == umap["user"].nunique()
    assert tx.metadata["ingest"]["person"] == "user"
    # without a person key, the ingest key is the person key
    tx2, _ = read_events(src, user="user", item="item", key=KEY, user_map=str(tmp_path / "m2.parquet"), **mode)
    umap2 = rows_of_users(tx2, tmp_path / "m2.parquet")
    assert tx2.columns["person"].compute().tolist() == pseudonyms(umap2["user"], KEY).tolist()


def test_one_person_key_gives_one_pseudonym_whatever_the_ingest(tmp_path):
    df = event_log(n=1500, str_users=True)
    src = write_parquet(df, tmp_path / "ev", files=2)

    def person_of_user(name: str, **kw) -> dict:
        tx, _ = read_events(src, user="user", item="item", user_map=str(tmp_path / f"{name}.parquet"), **kw)
        umap = rows_of_users(tx, tmp_path / f"{name}.parquet")
        person = tx.columns["person"].compute()
        out: dict = {}
        for user, row in zip(umap["user"], umap["row"]):
            assert out.setdefault(user, int(person[row])) == int(person[row])  # all of a user's rows agree
        return out

    users = person_of_user("users", key=KEY, person_key=Key(3))
    gap5 = person_of_user("gap5", key=KEY, person_key=Key(3), time="t", session_gap=5)
    gap40 = person_of_user("gap40", key=Key(99), person_key=Key(3), time="t", session_gap=40, max_baskets_per_user=1)
    windows = person_of_user("win", key=Key(4), person_key=Key(3), time="t", window=30, heavy_users="cap", max_user_events=5)
    assert users == gap5 == gap40 == windows and len(users) > 100
    other = person_of_user("other", key=KEY, person_key=Key(4), time="t", session_gap=5)
    assert set(other) == set(gap5) and not set(other.values()) & set(gap5.values())


def numbered_baskets(df: pd.DataFrame, mode: str, span: int) -> dict:
    """User -> {session or window number: items}, written out from the rules."""
    if mode == "session":
        return {u: dict(enumerate(s)) for u, s in sessions_by_user(df, span).items()}
    d = df.dropna(subset=["user", "item", "t"])
    out: dict = {}
    for (u, w), g in d.assign(w=(d["t"].astype(int) // span)).groupby(["user", "w"]):
        out.setdefault(u, {})[int(w)] = set(g["item"])
    return out


@pytest.mark.parametrize("mode,span,bound", [("session", 5, 2), ("window", 60, 3)])
def test_bound_keeps_the_baskets_of_smallest_key_against_brute_force(tmp_path, mode, span, bound):
    df = event_log(n=3000, str_users=True)
    src = write_parquet(df, tmp_path / "ev", files=3, row_group=400)
    params = {"time": "t", "session_gap" if mode == "session" else "window": span}
    umap_path = tmp_path / "map.parquet"
    tx, s = read_events(
        src,
        user="user",
        item="item",
        key=KEY,
        max_baskets_per_user=bound,
        user_map=str(umap_path),
        events_per_block=600,
        **params,
    )
    # brute force: every basket of every user keyed as documented, the `bound` smallest kept
    k0, k1, s0, s1 = order_words(KEY, time="t", mode=mode, span=span, max_baskets_per_user=bound)
    truth = numbered_baskets(df, mode, span)
    kept: dict = {}
    for user, baskets in truth.items():
        numbers = np.array(sorted(baskets), np.int64)
        h = siphash_users(pa.array([user]), k0, k1)
        keys = siphash_pairs(s0, s1, np.repeat(h, numbers.size), numbers)
        kept[user] = set(numbers[np.argsort(keys, kind="stable")[:bound]].tolist())
    umap = rows_of_users(tx, umap_path)
    got: dict = {}
    for user, session in zip(umap["user"], umap["session"]):
        got.setdefault(user, set()).add(int(session))
    assert got == kept
    baskets = tx.to_lists()
    assert all(set(baskets[r]) == truth[u][int(n)] for u, n, r in zip(umap["user"], umap["session"], umap["row"]))
    assert as_multiset(baskets) == as_multiset(truth[u][n] for u, ns in kept.items() for n in ns)
    # the summary: what the bound dropped, and the baskets per user before it
    sizes = np.array([len(b) for b in truth.values()])
    assert sizes.max() > bound  # the bound had something to drop
    assert s.max_baskets_per_user == bound and s.n_baskets == len(tx) == int(np.minimum(sizes, bound).sum())
    assert s.n_baskets_over_bound == int(np.maximum(sizes - bound, 0).sum())
    assert s.n_users_over_bound == int((sizes > bound).sum())
    assert s.baskets_per_user == {
        "median": pytest.approx(float(np.median(sizes))),
        "p90": pytest.approx(float(np.percentile(sizes, 90))),
        "max": int(sizes.max()),
    }
    assert tx.metadata["ingest"]["max_baskets_per_user"] == bound
    json.dumps(s.as_dict())
    # the person column of the kept baskets
    assert tx.columns["person"].compute().tolist() == pseudonyms(umap["user"], KEY).tolist()


def test_bound_in_user_mode_is_met_and_summary_without_bound(tmp_path):
    df = event_log(n=1000)
    src = write_parquet(df, tmp_path / "ev")
    tx, s = read_events(src, user="user", item="item", key=KEY, max_baskets_per_user=1)
    n_users = df.dropna(subset=["user", "item"])["user"].nunique()
    assert len(tx) == s.n_baskets == n_users and (s.n_baskets_over_bound, s.n_users_over_bound) == (0, 0)
    assert s.baskets_per_user == {"median": 1, "p90": 1, "max": 1}
    tx, s = read_events(src, user="user", item="item", time="t", session_gap=5, key=KEY)
    sizes = np.array([len(v) for v in sessions_by_user(df, 5).values()])
    assert s.max_baskets_per_user is None and (s.n_baskets_over_bound, s.n_users_over_bound) == (0, 0)
    assert s.baskets_per_user["max"] == sizes.max() and s.baskets_per_user["median"] == np.median(sizes)
    assert tx.metadata["ingest"]["max_baskets_per_user"] is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bound_must_be_a_positive_integer(tmp_path, bad):
    src = write_parquet(event_log(n=100), tmp_path / "ev")
    with pytest.raises(InvalidParameter, match="max_baskets_per_user must be a positive integer") as e:
        read_events(src, user="user", item="item", time="t", session_gap=5, max_baskets_per_user=bad)
    assert e.value.parameter == "max_baskets_per_user"


def test_person_column_round_trips_through_parquet(tmp_path):
    from ppdm_dask import read

    df = event_log(n=1500)
    src = write_parquet(df, tmp_path / "ev", files=2)
    tx, _ = read_events(src, user="user", item="item", time="t", session_gap=10, key=KEY, events_per_block=400)
    want = tx.columns["person"].compute()
    manifest = tx.to_parquet(str(tmp_path / "out"))
    assert "person" in manifest["columns"] and manifest["column_types"]["person"] == np.dtype(np.uint64).str
    back = read(str(tmp_path / "out"))
    got = back.columns["person"].compute()
    assert got.dtype == np.uint64 and got.tolist() == want.tolist()
    assert back.metadata["ingest"]["person"] == "user"
    assert pq.read_table(tmp_path / "out" / "part-00000.parquet").schema.field("person").type == pa.uint64()
    # repartition and persist keep it aligned
    again = back.repartition(npartitions=3).persist()
    assert again.columns["person"].chunks[0] == again.partition_rows
    assert again.columns["person"].compute().tolist() == want.tolist() and again.to_lists() == back.to_lists()

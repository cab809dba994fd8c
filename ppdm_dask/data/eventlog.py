"""Synthetic event logs: the click streams and purchases that ``ppdm ingest`` groups into baskets.

:func:`generate_events` writes Parquet files with one row per event, columns ``user`` (``"u0001234"``
or int64), ``item`` (``"sku-00042"`` or int64), ``ts`` (timestamp[us], UTC) and ``qty`` (int32),
shaped like a real log rather than like clean baskets:

* item popularity follows a Zipf law over ``n_items`` (rank -> label through a fixed random
  permutation, so the popular items are not the small labels), and each session leans on one
  "bundle" of 2-4 items (so that mining finds rules with a lift above 1, as in real shopping data);
* users have a heavy-tailed (log-normal) activity, and a few **bots** share ``bot_share`` of all
  events between them (each far above the ingest's heavy-user threshold at benchmark sizes);
* a user's events come in **sessions**: bursts of a few events seconds to minutes apart
  (``tie_fraction`` of them at the very same second), the sessions starting anywhere in the
  ``days``-long window, so a 30-minute session gap finds several sessions per user;
* each file covers a slice of the window and its rows are in **arrival** order, not sorted by
  user; ``late_fraction`` of the events arrive minutes to hours after their time stamp (late,
  out-of-order events).

Everything is drawn with numpy ``Generator`` streams derived from the seed or key, one stream per
row group, vectorised (no per-event Python loop), and written one row group at a time: memory is
bounded by ``rows_per_group`` events plus two arrays of ``n_users`` numbers, whatever ``n_events``
(100 M events take a few hundred MB). The same seed gives the same files.

Regenerate the bundled sample (``samples/events_small.parquet``) with
``python -m ppdm_dask.data.eventlog --sample ppdm_dask/data/samples/events_small.parquet``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InvalidParameter
from ..random import Key, Tag, as_key

__all__ = ["generate_events", "SAMPLE_PARAMETERS", "SAMPLE_SEED", "SCHEMA_STR", "main"]

#: public seed of the bundled sample (not a secret: the sample is meant to be reproducible)
SAMPLE_SEED = 20260101
#: the parameters of ``samples/events_small.parquet`` (``generate_events(path, **SAMPLE_PARAMETERS)``)
SAMPLE_PARAMETERS: dict[str, Any] = {
    "n_events": 20_000,
    "n_users": 1_000,
    "n_items": 200,
    "key_or_seed": SAMPLE_SEED,
    "days": 7,
}

#: the schema with string users and items
SCHEMA_STR = pa.schema([("user", pa.string()), ("item", pa.string()), ("ts", pa.timestamp("us", tz="UTC")), ("qty", pa.int32())])
_USER_DIGITS, _ITEM_DIGITS = 7, 5
_SECONDS_PER_DAY = 86_400
#: mean gap between two events of one session, seconds (exponential; far below a 30 min gap)
_IN_SESSION_GAP_S = 90.0
#: late events arrive this many seconds after their time stamp (uniform)
_LATE_DELAY_S = (300, 3 * 3600)
#: spread (sigma of log) of the ordinary users' activity
_ACTIVITY_SIGMA = 1.0


@dataclass(frozen=True)
class _World:
    """What every row group shares: user activity, item popularity and the bundles."""

    user_cdf: np.ndarray  # float64, n_users: cumulative share of sessions per user
    item_cdf: np.ndarray  # float64, n_items: cumulative Zipf popularity by rank
    item_of_rank: np.ndarray  # int64, n_items: rank -> item number
    bundle_cdf: np.ndarray  # float64, n_bundles: Zipf popularity of the bundles
    bundle_members: np.ndarray  # int64 (n_bundles, 4): items of each bundle (padded)
    bundle_size: np.ndarray  # int64, n_bundles: 2..4
    bots: np.ndarray  # int64: user numbers of the bots


def _world(key: Key, n_users: int, n_items: int, zipf: float, bots: int, bot_share: float) -> _World:
    rng = key.generator(Tag.SAMPLE, 0)
    activity = rng.lognormal(0.0, _ACTIVITY_SIGMA, size=n_users)
    bot_ids = np.sort(rng.choice(n_users, size=bots, replace=False)) if bots else np.zeros(0, np.int64)
    if bots:
        # the bots' weights are set so that together they draw bot_share of the sessions
        others = activity.sum() - activity[bot_ids].sum()
        activity[bot_ids] = others * bot_share / (1.0 - bot_share) / bots
    user_cdf = np.cumsum(activity / activity.sum())
    ranks = np.arange(1, n_items + 1, dtype=np.float64)
    item_cdf = np.cumsum(ranks**-zipf / np.sum(ranks**-zipf))
    item_of_rank = rng.permutation(n_items).astype(np.int64)
    n_bundles = max(1, n_items // 10)
    bundle_size = rng.integers(2, 5, size=n_bundles).astype(np.int64)
    members = np.stack([rng.choice(n_items, size=4, replace=n_items < 4) for _ in range(n_bundles)]).astype(np.int64)
    b_ranks = np.arange(1, n_bundles + 1, dtype=np.float64)
    bundle_cdf = np.cumsum(b_ranks**-zipf / np.sum(b_ranks**-zipf))
    for cdf in (user_cdf, item_cdf, bundle_cdf):
        cdf[-1] = 1.0  # rounding: a uniform draw in [0, 1) always falls inside
    return _World(user_cdf, item_cdf, item_of_rank, bundle_cdf, members, bundle_size, bot_ids.astype(np.int64))


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: the index of the first cumulative share above each uniform."""
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1).astype(np.int64)


def _session_lengths(rng: np.random.Generator, m: int, mean: float) -> np.ndarray:
    """Geometric session lengths (>= 1 event, mean ``mean``) summing to exactly ``m``."""
    out: list[np.ndarray] = []
    total = 0
    while total < m:
        lengths = rng.geometric(1.0 / mean, size=int((m - total) / mean * 1.2) + 16).astype(np.int64)
        out.append(lengths)
        total += int(lengths.sum())
    lengths = np.concatenate(out)
    ends = np.cumsum(lengths)
    n = int(np.searchsorted(ends, m)) + 1  # sessions needed to reach m events
    lengths = lengths[:n].copy()
    lengths[-1] -= int(ends[n - 1]) - m  # the last session is cut at m events
    return lengths


def _group_events(
    rng: np.random.Generator,
    world: _World,
    m: int,
    slice_start_s: int,
    slice_seconds: int,
    *,
    session_events: float,
    tie_fraction: float,
    late_fraction: float,
    bundle_fraction: float,
) -> dict[str, np.ndarray]:
    """``m`` events of one row group (numbers, arrival order): user, item, ts (s), qty."""
    lengths = _session_lengths(rng, m, session_events)
    n_sessions = len(lengths)
    s_user = _draw(world.user_cdf, rng.random(n_sessions))
    s_start = slice_start_s + np.floor(rng.random(n_sessions) * slice_seconds).astype(np.int64)
    s_bundle = _draw(world.bundle_cdf, rng.random(n_sessions))
    session = np.repeat(np.arange(n_sessions), lengths)
    first = np.cumsum(lengths) - lengths  # first event of each session
    # gaps inside a session: exponential, whole seconds, some exactly 0 (ties in time)
    gap = np.floor(rng.exponential(_IN_SESSION_GAP_S, size=m)).astype(np.int64)
    gap[rng.random(m) < tie_fraction] = 0
    gap[first] = 0
    walk = np.cumsum(gap)
    ts = s_start[session] + walk - walk[first][session]
    # items: mostly Zipf over all items, some from the session's bundle
    item = world.item_of_rank[_draw(world.item_cdf, rng.random(m))]
    in_bundle = rng.random(m) < bundle_fraction
    b = s_bundle[session]
    pick = np.floor(rng.random(m) * world.bundle_size[b]).astype(np.int64)
    item = np.where(in_bundle, world.bundle_members[b, pick], item)
    qty = rng.geometric(0.7, size=m).astype(np.int32)
    # arrival order: the file is a log, appended as events arrive; late events arrive later
    late = rng.random(m) < late_fraction
    arrival = ts + np.where(late, rng.integers(*_LATE_DELAY_S, size=m), 0)
    order = np.argsort(arrival, kind="stable")
    return {"user": s_user[session][order], "item": item[order], "ts": ts[order], "qty": qty[order], "late": late}


def _labels(prefix: str, numbers: np.ndarray, digits: int) -> pa.Array:
    """``prefix`` + zero-padded numbers, as an arrow string array (vectorised in arrow)."""
    text = pc.utf8_lpad(pc.cast(pa.array(numbers, pa.int64()), pa.string()), width=digits, padding="0")
    return pc.binary_join_element_wise(prefix, text, "")


def _table(ev: dict[str, np.ndarray], item_type: str, user_type: str, digits: tuple[int, int]) -> pa.Table:
    users = _labels("u", ev["user"], digits[0]) if user_type == "str" else pa.array(ev["user"], pa.int64())
    items = _labels("sku-", ev["item"], digits[1]) if item_type == "str" else pa.array(ev["item"], pa.int64())
    ts = pa.array(ev["ts"] * 1_000_000, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pa.table({"user": users, "item": items, "ts": ts, "qty": pa.array(ev["qty"], pa.int32())})


def _check(name: str, value: Any, ok: bool, fix: str) -> None:
    if not ok:
        raise InvalidParameter(f"generate_events: {name}={value!r} {fix}", parameter=name)


def _start_seconds(start: str | dt.date | dt.datetime) -> int:
    try:
        stamp = np.datetime64(start.isoformat() if isinstance(start, (dt.date, dt.datetime)) else str(start), "s")
    except ValueError:
        raise InvalidParameter(
            f"generate_events: start={start!r} is not a date", parameter="start", fix="give an ISO date like 2026-01-01"
        ) from None
    return int(stamp.astype(np.int64))


def _split(total: int, parts: int) -> list[int]:
    """``total`` split in ``parts`` near-equal counts (the first ones one larger)."""
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


def generate_events(
    url: str,
    *,
    n_events: int,
    n_users: int,
    n_items: int,
    key_or_seed: Key | int | bytes,
    zipf: float = 1.1,
    n_files: int = 1,
    start: str | dt.date | dt.datetime = "2026-01-01",
    days: int = 7,
    item_type: str = "str",
    user_type: str = "str",
    hive: bool = False,
    bots: int | None = None,
    bot_share: float = 0.04,
    session_events: float = 5.0,
    tie_fraction: float = 0.05,
    late_fraction: float = 0.002,
    bundle_fraction: float = 0.3,
    storage_options: Mapping[str, Any] | None = None,
    rows_per_group: int = 1_000_000,
    compression: str = "zstd",
) -> dict[str, Any]:
    """Write a synthetic event log (Parquet) and return its summary.

    Parameters
    ----------
    url : str
        fsspec URL. A path ending in ``.parquet`` (with ``n_files=1`` and no ``hive``) is written as
        that one file; anything else is a folder that receives ``part-00000.parquet`` ... (with
        ``hive``: ``day=2026-01-01/part-00000.parquet`` ..., the day being the arrival day of the
        file's slice). Existing files of those names are overwritten.
    n_events, n_users, n_items : int
        Events written (exactly), size of the user population (users drawing no session do not
        appear: ``n_users_seen`` in the summary), number of distinct items.
    key_or_seed : Key or int or bytes
        Seed of every random stream (the same seed gives the same files).
    zipf : float
        Exponent of the item (and bundle) popularity law, ``p(rank) ~ rank**-zipf``.
    n_files : int
        Files, each covering an equal slice of the window; with ``hive`` a multiple of ``days``.
    start, days : str or date, int
        Window of the time stamps: ``days`` days from ``start`` (UTC midnight of an ISO date).
        Sessions start inside it; their last events may run a few minutes past its end.
    item_type, user_type : {"str", "int"}
        ``"sku-00042"`` / ``"u0001234"`` strings, or the numbers as int64.
    hive : bool
        Hive-partition the folder by arrival day (``day=YYYY-MM-DD``; the column is not in the files).
    bots : int, optional
        Users sharing ``bot_share`` of all sessions (default ``max(1, n_users // 100_000)``; 0: none).
    bot_share : float
        Share of the sessions drawn by the bots together, in [0, 1).
    session_events : float
        Mean events per session (geometric lengths, >= 1).
    tie_fraction, late_fraction, bundle_fraction : float
        Shares of the events that repeat the previous event's second, that arrive 5 min to 3 h late
        (written out of order), and whose item comes from the session's bundle.
    storage_options : mapping, optional
        Passed to fsspec.
    rows_per_group : int
        Events per Parquet row group, i.e. per generation step (the memory bound).
    compression : str
        Parquet codec.

    Returns
    -------
    dict
        ``files`` (paths relative to ``url``), ``n_events``, ``n_users`` (population),
        ``n_users_seen``, ``n_items_seen``, ``n_late``, ``max_user_events``, ``bots`` (labels and
        event counts, largest first), ``bytes`` and the parameters (not a key: only an int seed).

    Raises
    ------
    InvalidParameter
        A size that is not a positive integer, an unknown type, ``n_files`` not a multiple of
        ``days`` with ``hive``, a share outside [0, 1).
    """
    import fsspec

    for name, value in (("n_events", n_events), ("n_users", n_users), ("n_items", n_items), ("n_files", n_files)):
        _check(name, value, isinstance(value, (int, np.integer)) and value >= 1, "must be a positive integer")
    _check("days", days, isinstance(days, (int, np.integer)) and days >= 1, "must be a positive integer")
    _check("rows_per_group", rows_per_group, rows_per_group >= 1, "must be a positive integer")
    _check("item_type", item_type, item_type in ("str", "int"), 'must be "str" or "int"')
    _check("user_type", user_type, user_type in ("str", "int"), 'must be "str" or "int"')
    _check("zipf", zipf, zipf > 0, "must be > 0")
    _check("session_events", session_events, session_events >= 1, "must be >= 1")
    for name, fraction in (
        ("bot_share", bot_share),
        ("tie_fraction", tie_fraction),
        ("late_fraction", late_fraction),
        ("bundle_fraction", bundle_fraction),
    ):
        _check(name, fraction, 0 <= fraction < 1, "must be in [0, 1)")
    n_bots = max(1, n_users // 100_000) if bots is None else int(bots)
    _check("bots", bots, 0 <= n_bots < n_users, "must be in [0, n_users)")
    share = float(bot_share) if n_bots else 0.0
    if hive and n_files % days:  # each day's folder gets the same number of files
        raise InvalidParameter(
            f"generate_events: n_files={n_files!r} must be a multiple of days={days} with hive=True", parameter="n_files"
        )
    start_s = _start_seconds(start)

    seed_key = as_key(key_or_seed)
    key = seed_key.derive("ppdm-eventlog")  # streams of their own: never those of a release under the same key
    world = _world(key, int(n_users), int(n_items), float(zipf), n_bots, share)
    digits = (max(_USER_DIGITS, len(str(n_users - 1))), max(_ITEM_DIGITS, len(str(n_items - 1))))
    schema = _table({k: np.zeros(0, np.int64) for k in ("user", "item", "ts", "qty")}, item_type, user_type, digits).schema

    fs, root = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    root = root.rstrip("/")
    single = root.endswith(".parquet") and n_files == 1 and not hive
    window = int(days) * _SECONDS_PER_DAY
    bounds = [start_s + (window * f) // n_files for f in range(n_files + 1)]
    per_user = np.zeros(n_users, np.int64)
    item_seen = np.zeros(n_items, bool)
    files, n_late, written = [], 0, 0
    for f, m_f in enumerate(_split(int(n_events), int(n_files))):
        if single:
            rel = ""
        else:
            day = np.datetime64(bounds[f], "s").astype("datetime64[D]")
            rel = (f"day={day}/" if hive else "") + f"part-{f:05d}.parquet"
        path = f"{root}/{rel}" if rel else root
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        n_groups = max(1, -(-m_f // int(rows_per_group)))
        with fs.open(path, "wb") as fh, pq.ParquetWriter(fh, schema, compression=compression) as writer:
            for g, m in enumerate(_split(m_f, n_groups)):
                if m == 0:
                    continue
                rng = key.generator(Tag.SAMPLE, 1, f, g)
                ev = _group_events(
                    rng,
                    world,
                    m,
                    bounds[f],
                    bounds[f + 1] - bounds[f],
                    session_events=session_events,
                    tie_fraction=tie_fraction,
                    late_fraction=late_fraction,
                    bundle_fraction=bundle_fraction,
                )
                per_user += np.bincount(ev["user"], minlength=n_users)
                item_seen[ev["item"]] = True
                n_late += int(ev["late"].sum())
                writer.write_table(_table(ev, item_type, user_type, digits), row_group_size=m)
        written += fs.size(path)
        files.append(rel or root.rsplit("/", 1)[-1])

    def label(u: int) -> str | int:
        return f"u{u:0{digits[0]}d}" if user_type == "str" else int(u)

    bot_rows = sorted(((label(int(u)), int(per_user[u])) for u in world.bots), key=lambda r: -r[1])
    return {
        "url": url,
        "files": files,
        "n_files": len(files),
        "bytes": int(written),
        "n_events": int(n_events),
        "n_users": int(n_users),
        "n_users_seen": int(np.count_nonzero(per_user)),
        "n_items": int(n_items),
        "n_items_seen": int(item_seen.sum()),
        "n_late": n_late,
        "max_user_events": int(per_user.max()),
        "bots": [list(r) for r in bot_rows],
        "parameters": {
            "seed": int(key_or_seed) if isinstance(key_or_seed, (int, np.integer)) else None,
            "zipf": zipf,
            "start": str(np.datetime64(start_s, "s")),
            "days": int(days),
            "item_type": item_type,
            "user_type": user_type,
            "hive": hive,
            "bots": n_bots,
            "bot_share": share,
            "session_events": session_events,
            "tie_fraction": tie_fraction,
            "late_fraction": late_fraction,
            "bundle_fraction": bundle_fraction,
            "rows_per_group": int(rows_per_group),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m ppdm_dask.data.eventlog URL --events N --users N --items N --seed S``
    (or ``--sample PATH`` for the bundled sample); prints the summary as JSON."""
    ap = argparse.ArgumentParser(prog="python -m ppdm_dask.data.eventlog", description=__doc__.split("\n")[0])
    ap.add_argument("url", nargs="?", help="output file (.parquet) or folder")
    ap.add_argument("--sample", metavar="PATH", help="write the bundled sample's parameters to PATH")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=20_000)
    ap.add_argument("--items", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=SAMPLE_SEED)
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--hive", action="store_true")
    ap.add_argument("--int-items", action="store_true")
    ap.add_argument("--int-users", action="store_true")
    ap.add_argument("--rows-per-group", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    if args.sample:
        summary = generate_events(args.sample, **SAMPLE_PARAMETERS)
    elif args.url:
        summary = generate_events(
            args.url,
            n_events=args.events,
            n_users=args.users,
            n_items=args.items,
            key_or_seed=args.seed,
            n_files=args.files,
            days=args.days,
            zipf=args.zipf,
            hive=args.hive,
            item_type="int" if args.int_items else "str",
            user_type="int" if args.int_users else "str",
            rows_per_group=args.rows_per_group,
        )
    else:
        ap.error("give an output URL or --sample PATH")
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":  # pragma: no cover - command line
    raise SystemExit(main())

"""Event-log ingest at scale: 100 M events (about 2 M users, 50 k items, Zipf popularity, 20 bots)
grouped into baskets on a 2-worker LocalCluster with 1 GB per worker, against a plain
``dask.dataframe`` group-by-to-lists of the same events in the same run.

Jobs, each on a fresh cluster (process workers, 1 thread, ``memory_limit="1GB"``), each warmed up
untimed on the bundled ``events`` sample first (imports, numba caches):

* **anchor**: ``dd.read_parquet(url, columns=["user", "item"])``, a p2p ``shuffle("user")``, then
  per partition ``drop_duplicates().groupby("user").item.agg(list)`` and ``to_parquet`` of the
  lists (the user dropped). Of the idiomatic forms this was the fastest that also writes every
  basket (``groupby.apply(sorted(set))`` through the same shuffle took as long only counting
  them; ``groupby.unique(split_out=)`` is a tree reduction that holds object arrays per user);
* **ours, users**: ``read_events(url, user="user", item="item", staging=...)`` then
  ``tx.to_parquet``: one basket per user, keyed order, the user never written;
* **ours, sessions**: the same with ``time="ts", session_gap="30min"`` (one basket per session).

Per job: wall time, events/s, peak RSS of the largest worker (sampled every 0.5 s from the
workers), bytes the workers spilled (their own counter; target 0), and the baskets and
(basket, item) pairs written; the anchor and our user mode must agree on both.

Data are generated once by :func:`ppdm_dask.data.eventlog.generate_events` into
``benchmarks/.data/events-<size>/`` (or ``--data``/``PPDM_INGEST_DATA``; Hive-partitioned by day,
140 files for 100 M events) and kept; a ``_generator.json`` marker with the summary says the
folder is complete (regenerated when it is missing or its parameters differ).

Usage::

    python benchmarks/run.py ingest            # 100 M events (--quick: 5 M)
    python benchmarks/bench_ingest.py --small  # 5 M events, 100 k users
    python benchmarks/bench_ingest.py --jobs anchor --generate-only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LIMIT = "1GB"
SEED = 39  # public: the benchmark's data are meant to be reproducible
SIZES: dict[str, dict[str, int]] = {
    "full": {"n_events": 100_000_000, "n_users": 2_000_000, "n_items": 50_000, "n_files": 140},
    "small": {"n_events": 5_000_000, "n_users": 100_000, "n_items": 50_000, "n_files": 14},
}
JOBS = ("anchor", "anchor-tuned", "users", "sessions")
ANCHORS = ("anchor", "anchor-tuned")
#: the tuned anchor: p2p's send buffer (1 GiB by default, as large as a worker) cut to 128 MiB
TUNED = {"distributed.p2p.comm.buffer": "128 MiB"}
#: an anchor that has not finished by then is stopped and reported as such
ANCHOR_TIMEOUT_S = {"full": 900, "small": 300}
SESSION_GAP = "30min"


def data_root() -> Path:
    return Path(os.environ.get("PPDM_INGEST_DATA", str(HERE / ".data")))


def ensure_data(size: str, root: Path | None = None, log: Callable[[str], None] = print) -> tuple[str, dict]:
    """The folder of ``size`` events (generated unless a complete copy is there) and its summary."""
    from ppdm_dask.data.eventlog import generate_events

    root = root or data_root()
    root.mkdir(parents=True, exist_ok=True)
    ignore = root / ".gitignore"
    if root == HERE / ".data" and not ignore.exists():
        ignore.write_text("*\n")  # generated data never go into git
    folder = root / f"events-{size}"
    marker = folder / "_generator.json"  # '_' prefix: Parquet readers skip it
    params: dict[str, Any] = {**SIZES[size], "key_or_seed": SEED, "days": 7, "hive": True}
    if marker.exists():
        summary = json.loads(marker.read_text())
        if summary.get("request") == params:
            log(f"[ingest] using {folder} ({summary['n_events']:,} events, {summary['bytes'] / 2**20:,.0f} MiB)")
            return str(folder), summary
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.perf_counter()
    summary = generate_events(str(folder), **params)
    summary["request"] = params
    summary["generation_s"] = time.perf_counter() - t0
    marker.write_text(json.dumps(summary, indent=1))
    log(
        f"[ingest] generated {summary['n_events']:,} events of {summary['n_users_seen']:,} users in "
        f"{summary['n_files']} files ({summary['bytes'] / 2**20:,.0f} MiB) in {summary['generation_s']:.0f} s"
    )
    return str(folder), summary


# ---------------------------------------------------------------------- the jobs
def anchor_job(url: str, out: str, timeout: float | None = None) -> dict[str, Any]:
    """Plain dask.dataframe: p2p shuffle by user, per partition de-duplicated lists, to Parquet."""
    import dask
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
    from distributed import get_client

    ddf = dd.read_parquet(url, columns=["user", "item"])
    list_type = pd.ArrowDtype(pa.list_(pa.string()))

    def baskets(df: pd.DataFrame) -> pd.DataFrame:
        lists = df.drop_duplicates().groupby("user", sort=False, observed=True)["item"].agg(list)
        return pd.DataFrame({"items": pd.array(lists.to_list(), dtype=list_type)})

    with dask.config.set({"dataframe.shuffle.method": "p2p"}):
        shuffled = ddf.shuffle("user", npartitions=ddf.npartitions)
        lists = shuffled.map_partitions(baskets, meta=pd.DataFrame({"items": pd.Series([], dtype=list_type)}))
        write = lists.to_parquet(out, write_index=False, compute=False)
        future = get_client().compute(write)
        try:
            future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()
            return {"failed": f"not finished after {timeout:.0f} s"}
    return {}


def anchor_counts(out: str) -> tuple[int, int]:
    """Baskets and (basket, item) pairs in the anchor's output (read back, untimed)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    rows = pairs = 0
    for batch in ds.dataset(out, format="parquet").to_batches(columns=["items"]):
        rows += batch.num_rows
        pairs += int(pc.sum(pc.list_value_length(batch.column(0))).as_py() or 0)
    return rows, pairs


def ours_job(url: str, out: str, staging: str, sessions: bool) -> dict[str, Any]:
    """``read_events`` (staged through files) then ``to_parquet``; counts from the manifest."""
    from ppdm_dask.data.events import read_events

    extra: dict[str, Any] = {"time": "ts", "session_gap": SESSION_GAP} if sessions else {}
    tx, summary = read_events(url, user="user", item="item", staging=staging, **extra)
    manifest = tx.to_parquet(out)
    s = summary.as_dict()
    return {
        "baskets": int(manifest["n_transactions"]),
        "pairs": int(manifest["nnz"]),
        "n_heavy": s.get("n_heavy"),
        "n_users": s.get("n_users"),
    }


# ---------------------------------------------------------------------- measuring
def _warm_up(client, job: str, scratch: Path) -> None:
    """The job once on the bundled sample (untimed): imports and compiled kernels in the workers."""
    from ppdm_dask.data.datasets import sample_path

    sample = str(sample_path("events"))
    tmp = Path(tempfile.mkdtemp(prefix="warm-", dir=scratch))
    try:
        if job in ANCHORS:
            anchor_job(sample, str(tmp / "out"))
        else:
            ours_job(sample, str(tmp / "out"), str(tmp / "staging"), sessions=job == "sessions")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(
    job: str, url: str, scratch: Path, timeout: float | None = None, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run ``job`` on a fresh 2-worker LocalCluster with 1 GB per worker."""
    import dask
    import distributed  # noqa: F401 - its config defaults must be loaded before config.set below
    from bench_mining import _WorkerRSS
    from bench_scale import _cluster, spilled_bytes

    tmp = Path(tempfile.mkdtemp(prefix=f"{job}-", dir=scratch))
    out, staging = str(tmp / "out"), str(tmp / "staging")
    with dask.config.set(TUNED if job == "anchor-tuned" else {}):  # the nannies pass it to their workers
        cluster, client = _cluster(LIMIT)
    result: dict[str, Any] = {}
    try:
        client.wait_for_workers(2)
        _warm_up(client, job, scratch)
        with _WorkerRSS(client, interval=0.5) as rss:
            t0 = time.perf_counter()
            try:
                if job in ANCHORS:
                    result = anchor_job(url, out, timeout)
                else:
                    result = ours_job(url, out, staging, sessions=job == "sessions")
            except Exception as exc:  # noqa: BLE001 - a failed job is a result (e.g. workers killed)
                result = {"failed": f"{type(exc).__name__}: {exc}"[:400]}
            secs = time.perf_counter() - t0
        result.update(seconds=secs, peak_worker_rss=int(rss.max_worker), spilled=spilled_bytes(client))
    finally:
        client.close()
        cluster.close()
    if job in ANCHORS and not result.get("failed"):
        result["baskets"], result["pairs"] = anchor_counts(out)
    shutil.rmtree(tmp, ignore_errors=True)
    log(
        f"[ingest {job}] {result['seconds']:.1f} s, peak worker RSS {result['peak_worker_rss'] / 2**20:,.0f} MiB, "
        f"spilled {result['spilled'] / 2**20:,.0f} MiB, baskets {result.get('baskets')}, pairs {result.get('pairs')}"
        + (f", FAILED {result['failed']}" if result.get("failed") else "")
    )
    return result


ANCHOR_LABEL = {"anchor": "dask p2p shuffle + groupby lists", "anchor-tuned": "dask p2p shuffle (128 MiB buffer) + groupby lists"}


def best_anchor(runs: dict[str, dict]) -> str | None:
    """The anchor to compare with: the fastest that finished."""
    done = [j for j in ANCHORS if j in runs and not runs[j].get("failed")]
    return min(done, key=lambda j: runs[j]["seconds"]) if done else None


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def rows_of(size: str, data: dict, runs: dict[str, dict]) -> list[dict]:
    """The suite's rows (run.py's layout): each anchor, then each of our jobs against the best anchor."""
    n = data["n_events"]
    public = {k: v for k, v in data.items() if k != "files"}
    best = best_anchor(runs)
    anc = runs[best] if best else {}
    rows = []
    for job in ANCHORS:
        if job in runs:
            r = runs[job]
            rows.append(
                {
                    "name": f"ingest {n / 1e6:,.0f} M events: anchor {ANCHOR_LABEL[job]}",
                    "ours_s": None,
                    "anchor": ANCHOR_LABEL[job],
                    "anchor_s": None if r.get("failed") else r["seconds"],
                    "note": f"peak {_mib(r['peak_worker_rss'])}, spilled {_mib(r['spilled'])}, {r.get('baskets')} baskets"
                    + (f" | FAILED: {r['failed']}" if r.get("failed") else ""),
                    "extra": {"size": size, "data": public, "job": job, "run": r},
                }
            )
    for job, what in (("users", "one basket per user"), ("sessions", f"sessions, gap {SESSION_GAP}")):
        if job not in runs:
            continue
        r = runs[job]
        same = (
            job == "users"
            and not r.get("failed")
            and bool(anc)
            and (r.get("baskets"), r.get("pairs"))
            == (
                anc.get("baskets"),
                anc.get("pairs"),
            )
        )
        rows.append(
            {
                "name": f"ingest {n / 1e6:,.0f} M events: ours, {what}",
                "ours_s": None if r.get("failed") else r["seconds"],
                "anchor": ANCHOR_LABEL[best] if best else "no anchor finished",
                "anchor_s": anc.get("seconds"),
                "note": (
                    f"{n / r['seconds'] / 1e6:.2f} M events/s, peak {_mib(r['peak_worker_rss'])}, "
                    f"spilled {_mib(r['spilled'])}, {r.get('baskets')} baskets, {r.get('n_heavy')} heavy users"
                    + (" | same baskets and pairs as the anchor" if same else "")
                    + (f" | FAILED: {r['failed']}" if r.get("failed") else "")
                ),
                "extra": {"size": size, "data": public, "job": job, "run": r, "anchor_job": best},
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    """The table of docs/benchmarks.md."""
    lines = [
        "| job | time | events/s | peak worker RSS | spilled | baskets | ours / anchor |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ex = row["extra"]
        n, r = ex["data"]["n_events"], ex["run"]
        label = f"{ex['job']}: {row['anchor'] if ex['job'] in ANCHORS else 'read_events + to_parquet'}"
        if r.get("failed"):
            lines.append(f"| {label} | {r['failed'][:60]} | | {_mib(r['peak_worker_rss'])} | {_mib(r['spilled'])} | | |")
            continue
        ratio = row["ours_s"] / row["anchor_s"] if row["ours_s"] and row["anchor_s"] else None
        lines.append(
            f"| {label} | {r['seconds']:.1f} s | {n / r['seconds'] / 1e6:.2f} M | {_mib(r['peak_worker_rss'])} | "
            f"{_mib(r['spilled'])} | {r.get('baskets') or 0:,} | {f'{ratio:.2f}' if ratio else '-'} |"
        )
    return "\n".join(lines)


def run(quick: bool = False, jobs: tuple[str, ...] = JOBS, root: Path | None = None) -> list[dict]:
    """run.py entry point: ``quick`` is the 5 M-event size."""
    sys.path.insert(0, str(HERE))
    size = "small" if quick else "full"
    try:
        import ppdm_dask.data.events  # noqa: F401 - the ingest core, on its way (issue 39)
    except ImportError:
        if set(jobs) - set(ANCHORS):
            print("[ingest] ppdm_dask.data.events is not there: timing the anchor only")
        jobs = tuple(j for j in jobs if j in ANCHORS)
    url, data = ensure_data(size, root)
    scratch = Path(tempfile.mkdtemp(prefix="ppdm-ingest-", dir=Path(url).parent))
    try:
        runs = {job: measure(job, url, scratch, ANCHOR_TIMEOUT_S[size]) for job in jobs}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = rows_of(size, data, runs)
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="5 M events, 100 k users (a quick check)")
    ap.add_argument("--jobs", default=",".join(JOBS), help=f"comma-separated, of {JOBS}")
    ap.add_argument("--data", default="", help="folder of the generated data (default benchmarks/.data or $PPDM_INGEST_DATA)")
    ap.add_argument("--generate-only", action="store_true", help="generate the data and stop")
    ap.add_argument(
        "--json", default="", help="where to write the rows (default benchmarks/results/ingest.json; --small: ingest-quick.json)"
    )
    a = ap.parse_args()
    root = Path(a.data) if a.data else None
    if a.generate_only:
        ensure_data("small" if a.small else "full", root)
        raise SystemExit(0)
    jobs = tuple(j for j in a.jobs.split(",") if j)
    unknown = set(jobs) - set(JOBS)
    if unknown:
        ap.error(f"unknown jobs {sorted(unknown)}; available: {JOBS}")
    rows = run(quick=a.small, jobs=jobs, root=root)
    from run import format_table

    print(format_table(rows))
    path = Path(a.json or HERE / "results" / f"ingest{'-quick' if a.small else ''}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"suite": "ingest", "quick": a.small, "rows": rows}, indent=1))

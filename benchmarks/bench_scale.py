"""Scale suite: every family at 1x, 10x and 30x of its benchmark size, on a 2-worker LocalCluster
with 1 GB per worker and, side by side, without a memory limit.

Per run: wall time, peak RSS of the largest worker, bytes the Dask workers spilled to disk
(their own counters), the memory plans the job chose, and a fingerprint of the result (the two
memory settings must agree). Per family: the slope of log time against log size.

Data are generated into a temporary folder (the Quest generator, or keyed replication of the
real sets) and deleted afterwards; generation time is not measured.

Usage::

    python benchmarks/run.py scale                       # every family, 1x 10x 30x
    python benchmarks/bench_scale.py --families apriori,emask --scales 1,10
    PPDM_SCALE_FAMILIES=apriori PPDM_SCALE_SCALES=1,10 python benchmarks/run.py scale
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
LIMITED = "1GB"


class Family(NamedTuple):
    """``prepare(scale, tmp) -> inputs`` (untimed, shared by both memory settings) and
    ``job(inputs, client) -> dict`` with ``fingerprint`` (str) and optional ``plans``/``note``."""

    size: Callable[[int], str]
    prepare: Callable[[int, Path], Any]
    job: Callable[[Any, Any], dict]


def fingerprint(*arrays: Any) -> str:
    """Short hash of arrays/values, to compare results across memory settings."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes() if not isinstance(a, (str, bytes)) else str(a).encode())
    return h.hexdigest()[:16]


def spilled_bytes(client) -> int:
    """Bytes the workers wrote to disk since they started (their cumulative spill counter; what
    is on disk at the end is usually 0 again)."""

    def on_worker(dask_worker):
        metrics = getattr(dask_worker.data, "cumulative_metrics", None) or {}
        return int(metrics.get(("disk-write", "bytes"), 0))

    return int(sum(client.run(on_worker).values()))


#: The first scale of a family is run once untimed when it is at most this multiple (cheap there,
#: and the compile time of the kernels is a large part of a small job).
WARMUP_MAX_SCALE = 1


def _cluster(limit: str | int):
    import dask
    from distributed import Client, LocalCluster

    from ppdm_dask.cluster import worker_environment

    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment()}):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1", memory_limit=limit
        )
    return cluster, Client(cluster, set_as_default=True)


def measure(job: Callable[[Any, Any], dict], inputs: Any, limit: str | int) -> dict:
    """Run ``job`` on a fresh 2-worker LocalCluster with ``limit`` per worker (0: none)."""
    from bench_mining import _WorkerRSS

    cluster, client = _cluster(limit)
    try:
        client.wait_for_workers(2)
        with _WorkerRSS(client, interval=0.5) as rss:
            t0 = time.perf_counter()
            out = job(inputs, client)
            secs = time.perf_counter() - t0
        out.update(seconds=secs, peak_worker_rss=int(rss.max_worker), spilled=spilled_bytes(client))
        return out
    finally:
        client.close()
        cluster.close()


def slope(sizes: list[float], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) against log(size)."""
    if len(sizes) < 2:
        return float("nan")
    x, y = np.log(sizes), np.log(seconds)
    return float(np.polyfit(x, y, 1)[0])


def families() -> dict[str, Family]:
    sys.path.insert(0, str(HERE))
    from _scale_mining import FAMILIES as mining

    out = dict(mining)
    for extra in ("_scale_sketch", "_scale_anonymity"):
        try:
            out.update(__import__(extra).FAMILIES)
        except ImportError:  # a family module not written yet
            pass
    return out


def run_family(name: str, fam: Family, scales: list[int], log: Callable[[str], None] = print) -> list[dict]:
    rows, times = [], {"1GB": [], "unlimited": []}
    for scale in scales:
        tmp = Path(tempfile.mkdtemp(prefix=f"ppdm-scale-{name}-{scale}x-"))
        try:
            t0 = time.perf_counter()
            inputs = fam.prepare(scale, tmp)
            log(f"[{name} {scale}x] {fam.size(scale)} prepared in {time.perf_counter() - t0:.0f} s")
            runs = {}
            if scale == scales[0] and scale <= WARMUP_MAX_SCALE:
                # untimed: the first job in a fresh checkout compiles the numba kernels (2 s of a 4 s
                # Apriori at 1x), which would otherwise land on whichever setting runs first
                measure(fam.job, inputs, 0)
                log(f"[{name} {scale}x] warm-up run done (numba caches)")
            for label, limit in (("unlimited", 0), ("1GB", LIMITED)):
                runs[label] = measure(fam.job, inputs, limit)
                r = runs[label]
                log(
                    f"[{name} {scale}x {label}] {r['seconds']:.1f} s, peak worker RSS {r['peak_worker_rss'] / 2**20:,.0f} MiB, "
                    f"spilled {r['spilled'] / 2**20:,.0f} MiB; {r.get('note', '')}; plans: {r.get('plans', '-')}"
                )
                if not r.get("failed"):  # a failed run has no time to fit a slope to
                    times[label].append(r["seconds"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        lim, unl = runs["1GB"], runs["unlimited"]
        failed = "; ".join(f"{label} run FAILED: {r['failed']}" for label, r in runs.items() if r.get("failed"))
        same = not failed and lim["fingerprint"] == unl["fingerprint"]
        rows.append(
            {
                "name": f"{name} {scale}x: {fam.size(scale)}",
                "ours_s": lim["seconds"],
                "anchor": "no memory limit",
                "anchor_s": unl["seconds"],
                "note": (
                    f"1 GB/worker: peak {lim['peak_worker_rss'] / 2**20:,.0f} MiB, spilled {lim['spilled'] / 2**20:,.0f} MiB | "
                    f"unlimited: peak {unl['peak_worker_rss'] / 2**20:,.0f} MiB | same result {same}"
                    + (f" | {failed}" if failed else "")
                ),
                "extra": {"scale": scale, "1GB": lim, "unlimited": unl, "same_result": same},
            }
        )
    sizes = [float(s) for s in scales]
    for label in ("1GB", "unlimited"):
        if len(times[label]) == len(sizes) and len(sizes) > 1:
            rows.append(
                {
                    "name": f"{name}: slope of log time vs log size ({label})",
                    "ours_s": slope(sizes, times[label]),
                    "anchor": "linear",
                    "anchor_s": 1.0,
                    "unit": "slope",
                    "note": "target <= 1.1",
                }
            )
    return rows


def run(quick: bool = False, family_names: list[str] | None = None, scales: list[int] | None = None) -> list[dict]:
    fams = families()
    names = family_names or [n for n in os.environ.get("PPDM_SCALE_FAMILIES", "").split(",") if n] or list(fams)
    scales = (
        scales or [int(s) for s in os.environ.get("PPDM_SCALE_SCALES", "").split(",") if s] or ([1] if quick else [1, 10, 30])
    )
    rows = []
    for name in names:
        if name not in fams:
            raise SystemExit(f"unknown family {name!r}; available: {sorted(fams)}")
        rows += run_family(name, fams[name], scales)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default="", help="comma-separated (default: all)")
    ap.add_argument("--scales", default="", help="comma-separated multiples of the benchmark size (default 1,10,30)")
    ap.add_argument("--json", default="", help="write the rows to this file")
    a = ap.parse_args()
    out = run(
        family_names=[f for f in a.families.split(",") if f] or None, scales=[int(s) for s in a.scales.split(",") if s] or None
    )
    sys.path.insert(0, str(HERE))
    from run import format_table

    print(format_table(out))
    if a.json:
        Path(a.json).write_text(json.dumps({"suite": "scale", "rows": out}, indent=1, default=str))

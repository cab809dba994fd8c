"""The scale jobs on a real multi-process cluster started from the command line.

Starts ``dask scheduler`` and two ``dask worker --memory-limit 1GB`` processes, submits
``ppdm mine``, ``ppdm emask distort`` + ``ppdm emask mine`` and ``ppdm anonymize`` (Adult
replicated, lattice, k = 10) with ``ppdm --scheduler tcp://...``, then runs the same commands on
a 2-worker LocalCluster (``ppdm --workers 2``) and compares the results (itemsets and their
counts or estimates, the anonymization's node and discernibility). Prints one table; the
job summaries (wall time, memory plans) are kept as JSON.

Usage::

    python benchmarks/scale_cli_cluster.py [--scale 30] [--jobs mine,emask,anonymize] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
QI = "sex,age,race,marital-status,education,native-country,workclass,occupation"


def _shared() -> Path:
    env = os.environ.get("PPDM_SHARED_DATA")
    return Path(env) if env else HERE.parents[1] / "shared" / "data"


class CommandLineCluster:
    """``dask scheduler`` + ``n`` ``dask worker`` processes (one thread, ``memory_limit`` each)."""

    def __init__(self, tmp: Path, n: int = 2, memory_limit: str = "1GB") -> None:
        self.file = tmp / "scheduler.json"
        log = open(tmp / "cluster.log", "w")
        # as cluster/README.md says: every process reads the project's recipe (memory thresholds,
        # the environment the nannies give the workers: malloc trim threshold, Arrow's pool)
        env = {**os.environ, "DASK_CONFIG": str(HERE.parent / "cluster" / "dask.yaml")}
        self.procs = [
            subprocess.Popen(
                ["dask", "scheduler", "--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(self.file)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        ]
        deadline = time.time() + 60
        while not self.file.exists() and time.time() < deadline:
            time.sleep(0.2)
        for _ in range(n):
            self.procs.append(
                subprocess.Popen(
                    [
                        "dask",
                        "worker",
                        "--scheduler-file",
                        str(self.file),
                        "--nthreads",
                        "1",
                        "--memory-limit",
                        memory_limit,
                        "--no-dashboard",
                        "--local-directory",
                        str(tmp / "workers"),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
        from distributed import Client

        with Client(scheduler_file=str(self.file)) as c:
            c.wait_for_workers(n, timeout=120)
            self.address = c.scheduler.address

    def spilled(self) -> int:
        from bench_scale import spilled_bytes
        from distributed import Client

        with Client(self.address) as c:
            return spilled_bytes(c)

    def close(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()


def ppdm(scheduler: list[str], key: Path, *args: str) -> dict:
    cmd = ["ppdm", *scheduler, "--key-file", str(key), "--json", "--no-progress", *args]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout)
    out["wall_seconds"] = time.perf_counter() - t0
    return out


def itemsets_digest(folder: Path) -> str:
    import hashlib

    import pyarrow.parquet as pq

    t = pq.read_table(str(folder)).to_pandas()
    cols = [c for c in t.columns if c in ("items", "itemset")] or [t.columns[0]]
    keyed = sorted(
        (tuple(sorted(r[cols[0]])), tuple(np.round(float(x), 9) for x in r.drop(cols[0]).values if np.isscalar(x)))
        for _, r in t.iterrows()
    )
    return hashlib.sha256(repr(keyed).encode()).hexdigest()[:16]


def jobs(scale: int, tmp: Path, scheduler: list[str], tag: str, which: list[str], spilled=lambda: 0) -> dict:
    from _scale_mining import P, Q, quest_folder

    key = tmp / "job.key"
    out: dict = {}
    if "mine" in which or "emask" in which:
        src = quest_folder(scale)
    if "mine" in which:
        s = ppdm(scheduler, key, "mine", src, "--min-support", "0.003", "--out", str(tmp / f"fi-{tag}"))
        out["mine"] = {
            "seconds": s["wall_seconds"],
            "itemsets": s["itemsets"],
            "digest": itemsets_digest(tmp / f"fi-{tag}"),
            "plans": sorted({st.get("rows", "") + " | " + st.get("memory", "") for st in s["levels"] if st.get("memory")}),
        }
        out = _with_spill(out, spilled)
    if "emask" in which:
        d = ppdm(scheduler, key, "emask", "distort", src, str(tmp / f"dist-{tag}"), "--p", str(P), "--q", str(Q), "--no-report")
        m = ppdm(
            scheduler,
            key,
            "emask",
            "mine",
            str(tmp / f"dist-{tag}"),
            "--p",
            str(P),
            "--q",
            str(Q),
            "--min-support",
            "0.003",
            "--out",
            str(tmp / f"efi-{tag}"),
        )
        out["emask"] = {
            "seconds": d["wall_seconds"] + m["wall_seconds"],
            "itemsets": m["itemsets"],
            "digest": itemsets_digest(tmp / f"efi-{tag}"),
        }
    out = _with_spill(out, spilled)
    if "anonymize" in which:
        from _adult import write_copies

        from ppdm_dask.data.uci import load_adult

        src = tmp / "adult.parquet"
        if not src.exists():
            df, _ = load_adult(full=True)
            write_copies(df, 33 * scale, 3 * scale, src)  # files of 11 copies (331,782 rows)
        a = ppdm(
            scheduler,
            key,
            "anonymize",
            str(src),
            str(tmp / f"adult-{tag}"),
            "--qi",
            QI,
            "--sensitive",
            "salary-class",
            "--hierarchies",
            str(_shared() / "adult"),
            "--k",
            "10",
            "--no-report",
        )
        out["anonymize"] = {
            "seconds": a["wall_seconds"],
            "digest": json.dumps({k: a.get(k) for k in ("node", "discernibility", "dm") if k in a}),
            "summary": {k: v for k, v in a.items() if k in ("node", "discernibility", "dm", "k_achieved", "rows")},
        }
        out = _with_spill(out, spilled)
    return out


def _with_spill(out: dict, spilled) -> dict:
    """Give the job finished since the last call the bytes the workers spilled meanwhile."""
    now = spilled()
    for name, job in out.items():
        if name != "_spill_mark" and "spilled" not in job:
            job["spilled"] = now - out.get("_spill_mark", {}).get("bytes", 0)
    out["_spill_mark"] = {"bytes": now}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=30)
    ap.add_argument("--jobs", default="mine,emask,anonymize")
    ap.add_argument("--json", default="")
    ap.add_argument("--cli-only", action="store_true", help="skip the LocalCluster comparison")
    a = ap.parse_args()
    which = a.jobs.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="ppdm-cli-cluster-"))
    try:
        cl = CommandLineCluster(tmp)
        try:
            cli_runs = jobs(a.scale, tmp, ["--scheduler", cl.address], "cli", which, cl.spilled)
            spilled = cl.spilled()
        finally:
            cl.close()
        local_runs = cli_runs if a.cli_only else jobs(a.scale, tmp, ["--workers", "2"], "local", which)
        print(f"{'job':10} {'dask scheduler + 2 dask worker --memory-limit 1GB':>50} {'LocalCluster(2)':>16}  same result")
        for j in which:
            c, l = cli_runs[j], local_runs[j]
            print(
                f"{j:10} {c['seconds']:>48.1f} s {l['seconds']:>14.1f} s  {c['digest'] == l['digest']}"
                f"  (command-line workers spilled {c.get('spilled', 0) / 2**20:,.0f} MiB)"
            )
        print(f"bytes spilled by the command-line workers: {spilled:,}")
        if a.json:
            Path(a.json).write_text(
                json.dumps({"scale": a.scale, "cli": cli_runs, "local": local_runs, "spilled": spilled}, indent=1)
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

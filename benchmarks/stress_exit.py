"""Stress the exit path of ``ppdm`` on bad input: every run must end with one ``ppdm: error:``
line and exit code 2, never an abort at interpreter exit (status 134, ``terminate called without
an active exception``) or a crash.

Runs the error cases below in ``--loops`` concurrent loops of ``--runs`` runs each (the loops
compete for the cores, which widens the races an exit can lose) and prints, per case, the exit
codes counted and the runs whose stderr was not exactly one error line. Exits 1 when any run
aborted, crashed or printed more than one line.

Cases (``--cases``, comma-separated; default: all the threads-scheduler ones):

* ``truncated``: ``info`` of a Parquet dataset one of whose 4 parts is truncated (its manifest
  entry says the truncated size, so only the read finds it);
* ``bad-q``: ``emask distort mushroom.parquet out --p 0.5 --q -0.2``;
* ``missing``: ``info`` of a file that does not exist;
* ``bad-key``: ``emask distort`` with ``--key-file`` holding random bytes;
* ``*-cluster`` (e.g. ``truncated-cluster``): the same on the default LocalCluster of process
  workers (``--workers 2``, no ``--scheduler``; slow: a cluster start per run).

Usage::

    python benchmarks/stress_exit.py [--runs 100] [--loops 3] [--cases truncated,bad-q,missing,bad-key]
    python benchmarks/stress_exit.py --runs 10 --cases truncated-cluster,bad-key-cluster
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THREAD_CASES = ("truncated", "bad-q", "missing", "bad-key")


def _shared() -> Path:
    env = os.environ.get("PPDM_SHARED_DATA")
    return Path(env) if env else HERE.parents[1] / "shared" / "data"


def _ppdm() -> list[str]:
    exe = Path(sys.executable).parent / "ppdm"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ppdm_dask.cli"]


def prepare(work: Path) -> dict[str, Path]:
    """The inputs of the cases in ``work``: mushroom as 4 Parquet parts, a copy with one part
    truncated (and its manifest entry saying so), a key file of random bytes."""
    mushroom = _shared() / "fimi" / "mushroom.dat"
    good = work / "mushroom.parquet"
    subprocess.run(
        _ppdm() + ["--scheduler", "threads", "--no-progress", "convert", str(mushroom), str(good), "--partitions", "4"],
        check=True,
        capture_output=True,
    )
    bad = work / "truncated.parquet"
    shutil.copytree(good, bad)
    part = bad / "part-00002.parquet"
    part.write_bytes((good / "part-00002.parquet").read_bytes()[:3000])
    manifest = json.loads((bad / "_SUCCESS").read_text())
    for entry in manifest["partitions"]:
        if entry["file"] == part.name:
            entry["bytes"] = 3000
    (bad / "_SUCCESS").write_text(json.dumps(manifest, indent=1))
    key = work / "random.key"
    key.write_bytes(os.urandom(64) + b"\xff\xfe")
    return {"good": good, "bad": bad, "key": key, "missing": work / "no-such-file.dat"}


def case_argv(case: str, inputs: dict[str, Path], out: Path) -> list[str]:
    """The command line of one run of ``case`` (global options first, then the command)."""
    cluster = case.endswith("-cluster")
    base = case[: -len("-cluster")] if cluster else case
    glob = ["--workers", "2"] if cluster else ["--scheduler", "threads"]
    glob.append("--no-progress")
    if base == "bad-key":
        glob += ["--key-file", str(inputs["key"])]
    command = {
        "truncated": ["info", str(inputs["bad"])],
        "bad-q": ["emask", "distort", str(inputs["good"]), str(out), "--p", "0.5", "--q", "-0.2"],
        "missing": ["info", str(inputs["missing"])],
        "bad-key": ["emask", "distort", str(inputs["good"]), str(out), "--p", "0.5", "--q", "0.97", "--allow-weak"],
    }[base]
    return _ppdm() + glob + command


def run_loop(
    loop: int, runs: int, cases: list[str], inputs: dict[str, Path], work: Path, results: list, lock: threading.Lock
) -> None:
    cwd = work / f"loop{loop}"
    cwd.mkdir(exist_ok=True)
    for i in range(runs):
        case = cases[(i + loop) % len(cases)]
        out = cwd / f"out-{i}"
        t0 = time.perf_counter()
        r = subprocess.run(case_argv(case, inputs, out), capture_output=True, text=True, cwd=cwd, timeout=600)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        one_line = len(lines) == 1 and lines[0].startswith("ppdm: error: ")
        with lock:
            results.append(
                {
                    "case": case,
                    "code": r.returncode,
                    "one_line": one_line,
                    "stderr": r.stderr,
                    "seconds": time.perf_counter() - t0,
                }
            )
        shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100, help="runs per loop (default 100)")
    ap.add_argument("--loops", type=int, default=3, help="concurrent loops (default 3)")
    ap.add_argument("--cases", default=",".join(THREAD_CASES), help="comma-separated cases (see the module doc)")
    ap.add_argument("--json", help="write the counts and the failing runs' stderr here")
    args = ap.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    known = set(THREAD_CASES) | {f"{c}-cluster" for c in THREAD_CASES}
    unknown = sorted(set(cases) - known)
    if unknown:
        ap.error(f"unknown case(s) {unknown}; choose from {sorted(known)}")

    with tempfile.TemporaryDirectory(prefix="ppdm-stress-exit-") as tmp:
        work = Path(tmp)
        inputs = prepare(work)
        results: list[dict] = []
        lock = threading.Lock()
        t0 = time.perf_counter()
        loops = [
            threading.Thread(target=run_loop, args=(n, args.runs, cases, inputs, work, results, lock)) for n in range(args.loops)
        ]
        for t in loops:
            t.start()
        for t in loops:
            t.join()
        elapsed = time.perf_counter() - t0

    by_case: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad_runs = []
    for r in results:
        by_case[r["case"]][r["code"]] += 1
        if r["code"] != 2 or not r["one_line"] or "terminate called" in r["stderr"]:
            bad_runs.append(r)
    print(f"{len(results)} runs in {args.loops} concurrent loops, {elapsed:.0f} s")
    print(f"{'case':<22} {'runs':>5}  exit codes")
    for case in cases:
        counts = by_case[case]
        print(f"{case:<22} {sum(counts.values()):>5}  " + ", ".join(f"{code}: {n}" for code, n in sorted(counts.items())))
    aborts = sum(1 for r in results if r["code"] in (134, -6) or "terminate called" in r["stderr"])
    not_one_line = sum(1 for r in results if not r["one_line"])
    print(f"aborts: {aborts}; runs whose stderr was not one error line: {not_one_line}")
    for r in bad_runs[:5]:
        print(f"--- {r['case']} exit {r['code']}:\n{r['stderr'].rstrip()}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "runs": len(results),
                    "loops": args.loops,
                    "seconds": elapsed,
                    "counts": {c: dict(v) for c, v in by_case.items()},
                    "aborts": aborts,
                    "not_one_line": not_one_line,
                    "failures": bad_runs,
                },
                indent=1,
                default=str,
            )
        )
    return 1 if bad_runs else 0


if __name__ == "__main__":
    sys.exit(main())

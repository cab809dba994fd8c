"""Run benchmark suites and print comparison tables (ours vs the anchor, as ratios).

Usage::

    python benchmarks/run.py [SUITE ...] [--quick] [--json-dir benchmarks/results]

Suites are modules ``benchmarks/bench_<name>.py`` exposing ``run(quick: bool) -> list[dict]``;
each row has ``name``, ``ours_s``, ``anchor``, ``anchor_s`` and optional ``note``/``extra``/``unit``
(``unit`` other than seconds: the two numbers are values such as accuracies, compared with the
anchor or a target). Ratios (ours / anchor) are what to compare: these machines are noisy.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def available() -> list[str]:
    return sorted(p.stem[len("bench_") :] for p in HERE.glob("bench_*.py"))


def format_table(rows: list[dict]) -> str:
    header = f"{'benchmark':52} {'ours':>10} {'anchor':>28} {'anchor':>10} {'ratio':>7}  unit: note"
    lines = [header, "-" * len(header)]
    for r in rows:
        ours, anc = r.get("ours_s"), r.get("anchor_s")
        ratio = f"{ours / anc:7.2f}" if ours and anc else "      -"
        lines.append(
            f"{r['name'][:52]:52} {ours if ours is not None else float('nan'):10.3f} {str(r.get('anchor', '-'))[:28]:>28} "
            f"{anc if anc is not None else float('nan'):10.3f} {ratio}  {r.get('unit', 's')}: {r.get('note', '')}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suites", nargs="*", help=f"suites to run (default: all of {available()})")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--json-dir", default=str(HERE / "results"), help="where to write <suite>.json")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    # benchmark releases are measured, not published: a ledger of this run's own, never the user's
    # (and repeated runs must not compose with each other)
    os.environ.setdefault("PPDM_LEDGER", tempfile.mkdtemp(prefix="ppdm-bench-ledger-"))
    suites = args.suites or available()
    for name in suites:
        if name not in available():
            ap.error(f"unknown suite {name!r}; available: {available()}")
        mod = importlib.import_module(f"bench_{name}")
        t0 = time.perf_counter()
        rows = mod.run(quick=args.quick)
        print(
            f"\n== {name} ({time.perf_counter() - t0:.0f} s; {platform.node()}, {platform.processor() or platform.machine()}) =="
        )
        print(format_table(rows))
        out = Path(args.json_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}{'-quick' if args.quick else ''}.json").write_text(
            json.dumps({"suite": name, "quick": args.quick, "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

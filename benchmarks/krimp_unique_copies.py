"""Unique copies of the KRIMP generator (the attack "the generator copies unique people"):
the share of the original's unique records that reappear verbatim among the released rows, and
the share of released rows that copy one, on led7 (min-count 2 and 10), tic-tac-toe end-game
boards (min-count 10; every board unique) and mushroom (closed candidates at min-count 20, the
paper's setting); the cost of the rule (time of fit + release, DS and the pattern comparison).

Brute force, in memory: Python sets of rows.
``python benchmarks/krimp_unique_copies.py [--allow] [--keys=5 --keys=6 ...]`` (``--allow``: with
``allow_weak=["unique copies"]``, the generator without the rule; one run per key).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tic-tac-toe boards of tests/krimp/boards.py


def _data(name: str):
    from ppdm_dask import TransactionArray, read
    from ppdm_dask.data.datasets import sample_path

    if name == "tictactoe":
        from tests.krimp.boards import tictactoe_rows

        return TransactionArray.from_lists(tictactoe_rows())
    return read(str(sample_path(name)))


def measure(name: str, min_count: int, closed: bool = False, key: int = 5, allow: bool = False, ds: bool = True) -> dict:
    from ppdm_dask import Key
    from ppdm_dask.krimp import KrimpGenerator
    from ppdm_dask.krimp.scores import dissimilarity

    tx = _data(name)
    original = [frozenset(r) for r in tx.to_lists()]
    counts = Counter(original)
    uniques = {r for r, c in counts.items() if c == 1}
    kw = {"allow_weak": ["unique copies"]} if allow else {}
    try:
        KrimpGenerator(2, allow_weak=["unique copies"])._floor(2)
    except Exception:  # before the rule existed: no such floor name
        kw = {}
    t0 = time.perf_counter()
    gen = KrimpGenerator(min_count, closed=closed, key=Key(key), **kw).fit(tx)
    t1 = time.perf_counter()
    rel = gen.release()
    rows = [frozenset(r) for r in rel.data.to_lists()]
    t2 = time.perf_counter()
    gen_set = set(rows)
    out = {
        "data": name,
        "min_count": min_count,
        "closed": closed,
        "key": key,
        "rows": len(original),
        "unique_original": len(uniques),
        "unique_copied": len(uniques & gen_set),
        "unique_copied_pct": 100.0 * len(uniques & gen_set) / max(1, len(uniques)),
        "rows_copying_unique_pct": 100.0 * sum(r in uniques for r in rows) / len(rows),
        "seconds_fit": round(t1 - t0, 2),
        "seconds_generate": round(t2 - t1, 2),
    }
    if ds:
        out["ds"] = float(dissimilarity(rel.data, tx, min_support=min_count, closed=closed, prune=False))
        figs = rel.report_figures(tx)
        by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
        for fid in ("patterns_close", "membership_advantage", "rows_redrawn", "unique_copies", "nas"):
            if fid in by_id:
                out[fid] = by_id[fid].value
    return out


CASES = [("led7", 2, False), ("led7", 10, False), ("tictactoe", 10, False), ("tictactoe", 2, False), ("mushroom", 20, True)]

if __name__ == "__main__":
    allow = "--allow" in sys.argv
    keys = [int(a.split("=")[1]) for a in sys.argv if a.startswith("--keys=")] or [5]
    for n, m, c in CASES:
        for k in keys:
            print(json.dumps(measure(n, m, c, key=k, allow=allow)), flush=True)

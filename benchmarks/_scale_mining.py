"""Scale families of the mining side (benchmarks/bench_scale.py): Apriori and EMASK (distort +
mine) on Quest T10.I4.D{1M x scale}.N1K at 0.3 %, the way ``ppdm mine`` / ``ppdm emask mine`` run
them (the input persisted only when it fits, the counter's memory plans)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

MIN_SUPPORT = 0.003
P, Q = 0.4, 0.98  # the paper's recommended EMASK setting
_CACHE: dict[int, str] = {}
#: $PPDM_SCALE_DATA keeps the generated data between runs (never committed); else a temporary
#: folder removed at exit.
_KEEP = os.environ.get("PPDM_SCALE_DATA")
_CACHE_DIR = Path(_KEEP) if _KEEP else Path(tempfile.mkdtemp(prefix="ppdm-scale-quest-"))
if not _KEEP:
    atexit.register(shutil.rmtree, _CACHE_DIR, True)


def quest_spec(scale: int) -> str:
    return f"T10.I4.D{scale}M.N1K"


def quest_folder(scale: int) -> str:
    """Quest baskets of this scale, generated once per process into a temporary folder."""
    if scale not in _CACHE:
        from distributed import Client, LocalCluster

        from ppdm_dask import Key
        from ppdm_dask.data.quest import quest

        folder = str(_CACHE_DIR / quest_spec(scale))
        if os.path.exists(os.path.join(folder, "_SUCCESS")):
            _CACHE[scale] = folder
            return folder
        with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="6GB", dashboard_address=None) as c, Client(c):
            quest(quest_spec(scale), key=Key(1)).to_parquet(folder, progress=False)
        _CACHE[scale] = folder
    return _CACHE[scale]


def _plans(fi, input_plan: str) -> str:
    memory = list(dict.fromkeys(st[f] for st in fi.level_stats for f in ("rows", "memory") if st.get(f)))
    return " | ".join([input_plan, *memory])


def _mine(folder: str, client, fn):
    from ppdm_dask import read
    from ppdm_dask.io import input_for_passes

    tx, why = input_for_passes(read(folder), folder, client=client)
    t0 = time.perf_counter()
    fi = fn(tx)
    return fi, why, time.perf_counter() - t0


def apriori_job(folder: str, client) -> dict:
    from bench_scale import fingerprint

    from ppdm_dask.mining import apriori

    fi, why, secs = _mine(folder, client, lambda tx: apriori(tx, MIN_SUPPORT, client=client))
    ids = [fi.levels[k][0] for k in sorted(fi.levels)]
    counts = [fi.levels[k][1] for k in sorted(fi.levels)]
    return {"fingerprint": fingerprint(*ids, *counts), "plans": _plans(fi, why), "note": f"{len(fi):,} itemsets"}


def emask_job(inputs: tuple[str, Path], client) -> dict:
    from bench_scale import fingerprint

    from ppdm_dask import Key, read
    from ppdm_dask.emask import distort, mine

    folder, tmp = inputs
    out = str(tmp / f"distorted-{time.monotonic_ns()}")
    t0 = time.perf_counter()
    distort(read(folder), P, Q, key=Key(7)).to_parquet(out, progress=False)
    t_distort = time.perf_counter() - t0
    fi, why, t_mine = _mine(out, client, lambda tx: mine(tx, P, Q, MIN_SUPPORT, client=client))
    shutil.rmtree(out, ignore_errors=True)
    ids = [fi.levels[k][0] for k in sorted(fi.levels)]
    est = [fi.levels[k][1] for k in sorted(fi.levels)]
    return {
        "fingerprint": fingerprint(*ids, *est),
        "plans": _plans(fi, why),
        "note": f"{len(fi):,} itemsets; distort {t_distort:.1f} s, mine {t_mine:.1f} s",
    }


def _families():
    from bench_scale import Family

    return {
        "apriori": Family(lambda s: f"Quest {quest_spec(s)} @ 0.3%", lambda s, tmp: quest_folder(s), apriori_job),
        "emask": Family(
            lambda s: f"EMASK p={P} q={Q}, Quest {quest_spec(s)} @ 0.3%", lambda s, tmp: (quest_folder(s), tmp), emask_job
        ),
    }


FAMILIES = _families()

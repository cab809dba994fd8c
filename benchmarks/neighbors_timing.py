"""kNN: exact ALLPAIRS (``ppdm_dask.neighbors.knn``) and approximate (``approximate_knn``).

Data: Quest C20.I6.D200K (key 1; 200,000 rows, 1,000 items, ~20 items per row, binary) and the
20 Newsgroups term counts (``../shared/data/text/20news_bydate_counts.npz``, all 18,846 docs,
counts kept as float32 weights). k = 10, cosine.

Rows: exact on one thread (``scheduler="sync"``) and on a 2-worker LocalCluster (1 thread each;
JIT caches warmed by a tiny run first; data persisted before timing); approximate on the cluster
with recall against the exact graph (ties counted by distance). The single-thread and cluster
exact graphs are checked to be identical.

Target: exact C20.I6.D200K k=10 <= 90 s wall on the 2-worker cluster (the whole k-variance
anonymisation must fit in 2 minutes).

Run: ``python benchmarks/neighbors_timing.py [--skip-single] [--large]``
(``--large`` adds C20.I6.D400K to show how exact and approximate costs scale).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

TARGET_S = 90.0
APPROX = ((512, 8), (1024, 8), (256, 16))


def _news_path() -> Path:
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "text" / "20news_bydate_counts.npz"


def _news():
    from ppdm_dask import TransactionArray

    z = np.load(_news_path())
    x = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    return TransactionArray.from_scipy(x, npartitions=4)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in ("indices", "distances", "dots", "cross"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-single", action="store_true", help="skip the single-thread exact run")
    ap.add_argument("--large", action="store_true", help="also C20.I6.D400K")
    args = ap.parse_args()

    import dask

    from ppdm_dask.cluster import get_client
    from ppdm_dask.data.quest import quest
    from ppdm_dask.neighbors import approximate_knn, knn, recall
    from ppdm_dask.random import Key

    rows: list[tuple[str, str, str, float, str]] = []
    datasets = [("C20.I6.D200K", lambda: quest("C20.I6.D200K", key=Key(1)))]
    if _news_path().exists():
        datasets.append(("20news (18,846 docs)", _news))
    if args.large:
        datasets.append(("C20.I6.D400K", lambda: quest("C20.I6.D400K", key=Key(1))))

    warm = quest("C20.I6.D2K", key=Key(1))
    single = {}
    if not args.skip_single:
        with dask.config.set(scheduler="sync"):
            knn(warm, 10, progress=False)
            approximate_knn(warm, 10, n_candidates=64, n_rounds=2, key=1, progress=False)
            for name, make in datasets[:2]:
                tx = make().persist(progress=False)
                t, g = _timed(lambda: knn(tx, 10, progress=False))
                single[name] = g
                rows.append((name, "exact", "1 thread (sync)", t, "-"))
                print(rows[-1], flush=True)

    with get_client(n_workers=2, threads_per_worker=1) as client:
        knn(warm, 10, client=client, progress=False)  # load the JIT caches on the workers
        approximate_knn(warm, 10, n_candidates=64, n_rounds=2, key=1, client=client, progress=False)
        for name, make in datasets:
            tx = make().persist(client=client, progress=False)
            t, exact = _timed(lambda: knn(tx, 10, client=client, progress=False))
            note = (
                "identical to 1 thread"
                if name in single and _same(single[name], exact)
                else ("MISMATCH" if name in single else "-")
            )
            rows.append((name, "exact", "2 workers", t, note))
            print(rows[-1], flush=True)
            for w, r in APPROX:
                t, g = _timed(lambda: approximate_knn(tx, 10, n_candidates=w, n_rounds=r, key=1, client=client, progress=False))
                rows.append((name, f"approx W={w} R={r}", "2 workers", t, f"recall {recall(g, exact):.3f}"))
                print(rows[-1], flush=True)

    print()
    print(f"{'data':<22} {'method':<20} {'where':<16} {'seconds':>8}  note")
    for name, method, where, t, note in rows:
        print(f"{name:<22} {method:<20} {where:<16} {t:8.1f}  {note}")
    ok = [t for name, method, where, t, _ in rows if name == "C20.I6.D200K" and method == "exact" and where == "2 workers"]
    if ok:
        print(
            f"\ntarget: exact C20.I6.D200K k=10 on 2 workers <= {TARGET_S:.0f} s: {'met' if ok[0] <= TARGET_S else 'MISSED'} ({ok[0]:.1f} s)"
        )


if __name__ == "__main__":
    main()

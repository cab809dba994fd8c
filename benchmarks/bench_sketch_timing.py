"""Sketch anonymization: running time (the paper's Figs 13-14) and the issue's performance targets.

* Fig. 13: time vs non-zeros per record: projections of C30.I6.D200K onto the first x/30 of the
  items (x = 5..30), as the paper builds its Cx.I6.D200K series ("projections of increasing
  dimensionality"), so the records keep their structure while their length grows.
* Fig. 14: time vs N on samples of C20.I6.D1M (200K..1M records).
  Timed: k-variance anonymity with partition-scope k-NN (the paper's "partition based method",
  docs/sketches.md#clarification-partition-local-neighbours) on partitions of a fixed PARTITION_ROWS rows, so its cost per record is constant;
  and sketching alone with a fixed number of components (the per-non-zero work of the method; one
  thread). Best of REPEATS runs; a least-squares line and its R² per series.
* Sketching throughput (one thread, 256 components): target >= 50 M (non-zero x component)/s.
* k-variance (k = 5, exact global k-NN) on C20.I6.D200K on the 2-worker LocalCluster: <= 120 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import dask
import numpy as np

HERE = Path(__file__).resolve().parent
PARTITION_ROWS = 20_000
REPEATS = 3
SKETCH_COMPONENTS = 256


def _linear_fit(x, t):
    x, t = np.asarray(x, float), np.asarray(t, float)
    a, b = np.polyfit(x, t, 1)
    pred = a * x + b
    r2 = 1.0 - np.sum((t - pred) ** 2) / np.sum((t - t.mean()) ** 2)
    return float(a), float(b), float(r2)


def _best(fn) -> float:
    out = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def _timings(tx) -> dict:
    from ppdm_dask.sketch import KVarianceAnonymizer, sketch

    kv = _best(lambda: KVarianceAnonymizer(5, knn_scope="partition", key=1).fit_transform(tx, progress=False).data.persist(progress=False))
    with dask.config.set(scheduler="sync"):
        sk = _best(lambda: sketch(tx, SKETCH_COMPONENTS, key=1).persist(progress=False))
    return {"kvariance_partition": kv, "sketch": sk}


def _kvariance_on_cluster(spec: str) -> dict:
    from ppdm_dask.cluster import get_client
    from ppdm_dask.data.quest import quest
    from ppdm_dask.random import Key
    from ppdm_dask.sketch import KVarianceAnonymizer

    with get_client(n_workers=2, threads_per_worker=1) as client:
        tx = quest(spec, key=Key(1)).persist(progress=False)
        t0 = time.perf_counter()
        an = KVarianceAnonymizer(5, key=1)
        sk = an.fit_transform(tx, client=client, progress=False).data.persist(progress=False)
        _ = sk.m.sum().compute()
        secs = time.perf_counter() - t0
    return {"spec": spec, "seconds": secs, **{k: an.report_[k] for k in ("knn_seconds", "n_iter", "n_suppressed", "mean_components")}}


def _plots(results: dict, out_dir: Path) -> list[str]:
    from bench_sketch import _plots as sketch_plots

    series = {"k_sweep": [], "delta_sweep": [], "dimensionality": [], **results}
    return sketch_plots(series, out_dir)


def run(quick: bool = False) -> list[dict]:
    import sys

    sys.path.insert(0, str(HERE))
    from ppdm_dask import TransactionArray
    from ppdm_dask.data.quest import quest
    from ppdm_dask.random import Key
    from ppdm_dask.sketch import sketch

    results: dict[str, list] = {"time_vs_nnz": [], "time_vs_n": []}
    rows: list[dict] = []
    n_time = 20_000 if quick else 200_000
    with dask.config.set(scheduler="threads"):
        base = quest(f"C30.I6.D{n_time}", key=Key(2)).compute(progress=False).tocsc()
        for x in ((5, 20) if quick else (5, 10, 15, 20, 25, 30)):
            mat = base[:, : round(base.shape[1] * x / 30)].tocsr()  # item ids are random: a prefix is a random projection
            tx = TransactionArray.from_scipy(mat, npartitions=max(1, mat.shape[0] // PARTITION_ROWS)).persist(progress=False)
            nnz = tx.nnz / tx.n_transactions
            results["time_vs_nnz"].append({"x": nnz, **_timings(tx)})
            print(f"  C30 projected to {x}/30 of the items: {results['time_vs_nnz'][-1]}", flush=True)
        mat = quest(f"C20.I6.D{100_000 if quick else 1_000_000}", key=Key(3)).compute(progress=False)
        for frac in (0.2, 0.4, 0.6, 0.8, 1.0):
            n = int(frac * mat.shape[0])
            tx = TransactionArray.from_scipy(mat[:n], npartitions=max(1, n // PARTITION_ROWS)).persist(progress=False)
            results["time_vs_n"].append({"x": n, **_timings(tx)})
            print(f"  N={n}: {results['time_vs_n'][-1]}", flush=True)
        tput_tx = quest(f"C20.I6.D{n_time}", key=Key(4)).persist(progress=False)
    with dask.config.set(scheduler="sync"):
        t_sk = _best(lambda: sketch(tput_tx, 256, key=1).persist(progress=False))
    tput = tput_tx.nnz * 256 / t_sk / 1e6
    kv = _kvariance_on_cluster("C20.I6.D20K" if quick else "C20.I6.D200K")
    for key_, xlab in (("time_vs_nnz", "nnz/record"), ("time_vs_n", "records")):
        rs = results[key_]
        for m in ("kvariance_partition", "sketch"):
            a, b, r2 = _linear_fit([r["x"] for r in rs], [r[m] for r in rs])
            pts = ", ".join(f"{r['x']:.0f}:{r[m]:.2f}s" for r in rs)
            rows.append({"name": f"time vs {xlab} ({m}): linear fit R²", "ours_s": r2, "anchor": "target R² >= 0.98", "anchor_s": 0.98,
                         "note": f"slope {a:.3g} s/unit, intercept {b:.2f} s; {pts}", "unit": "R²"})
    rows.append({"name": "sketching throughput, 256 components, 1 thread", "ours_s": tput, "anchor": "target 50 M/s/core", "anchor_s": 50.0,
                 "note": f"M (non-zero x component) per second; {tput_tx.nnz:,} non-zeros in {t_sk:.2f} s", "unit": "M/s"})
    rows.append({"name": "k-variance k=5, exact global k-NN, 2-worker LocalCluster", "ours_s": kv["seconds"], "anchor": "target 120 s", "anchor_s": 120.0,
                 "note": f"{kv['spec']}: k-NN {kv['knn_seconds']:.1f} s, sweeps {kv['n_iter']}, suppressed {kv['n_suppressed']}, mean m {kv['mean_components']:.1f}"})
    files = _plots(results, HERE / "results" / ("sketch-quick" if quick else "sketch"))
    if files:
        rows.append({"name": f"plots: {len(files)} PNG files", "ours_s": None, "anchor": "-", "anchor_s": None, "note": str(Path(files[0]).parent)})
    return rows

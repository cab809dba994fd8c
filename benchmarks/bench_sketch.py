"""Sketch anonymization (Aggarwal & Yu): the paper's Figures 3-14 as tables (and PNG plots).

* Figs 3-5 / 7-9: k-NN classification accuracy and k-means average cosine similarity vs the
  k-variance anonymity level k, beside the no-distortion baseline, on 20 Newsgroups (stand-in
  for the non-public Text17), Quest C20.I4.D200K and C20.I6.D200K (two classes).
* Figs 6 / 10: the same vs δ (δ-anonymity) on 20 Newsgroups.
* Figs 11-12: accuracy and similarity ratios (anonymized / original) vs the number of base
  items (Q20.I6.D200K.Gx) at δ = 0.2, 0.3, 0.4.
* Figs 13-14: running time vs non-zeros per record (Cx.I6.D200K) and vs N (samples of
  C20.I6.D1M), with a least-squares line and its R².
* Performance: sketching throughput per core; k-variance (exact global k-NN) on C20.I6.D200K
  on a 2-worker LocalCluster.

Quality sweeps on the Quest data use a random sample of EVAL_ROWS records (the full sets are
used for the timing rows); every number is in the JSON output and the note of the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import dask
import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
K_LEVELS = (2, 5, 10, 20)
DELTAS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
DIM_DELTAS = (0.2, 0.3, 0.4)
NEIGHBORS = 10  # k of the k-NN classifier (majority vote)
EVAL_ROWS = 20_000
MID_LEVELS = (5, 10)  # "mid anonymity levels" checked against the 0.9 accuracy-ratio target


def _sample(X, y, n, seed=0):
    if X.shape[0] <= n:
        return X, y
    rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], n, replace=False))
    return X[rows], y[rows]


def _kvar(k, threshold="corrected"):
    from ppdm_dask.sketch import KVarianceAnonymizer

    return lambda tx, g: KVarianceAnonymizer(k, generator=g, threshold=threshold).fit_transform(tx, progress=False)


def _kvar_paper(k):
    return _kvar(k, "paper")


def _delta(d):
    from ppdm_dask.sketch import DeltaAnonymizer

    return lambda tx, g: DeltaAnonymizer(d, generator=g).fit_transform(tx)


def _sweep(label, X, y, levels, factory, param, npartitions):
    from ppdm_dask.sketch.evaluation import evaluate

    rows, baseline = [], None
    for v in levels:
        r = evaluate(X, y, factory(v), key=11, n_neighbors=NEIGHBORS, npartitions=npartitions, baseline=baseline)
        baseline = r.pop("baseline")
        rows.append({"dataset": label, param: v, **r})
        print(f"  {label} {param}={v}: acc {r['accuracy']:.3f} / {r['baseline_accuracy']:.3f}, sim {r['similarity']:.3f} / "
              f"{r['baseline_similarity']:.3f}, suppressed {r['suppressed']:.3f}, mean m {r['mean_components']:.1f} ({r['seconds']:.0f} s)", flush=True)
    return rows


def _linear_fit(x, t):
    x, t = np.asarray(x, float), np.asarray(t, float)
    a, b = np.polyfit(x, t, 1)
    pred = a * x + b
    r2 = 1.0 - np.sum((t - pred) ** 2) / np.sum((t - t.mean()) ** 2)
    return float(a), float(b), float(r2)


def _time_anonymize(tx, method):
    from ppdm_dask.sketch import DeltaAnonymizer, KVarianceAnonymizer

    t0 = time.perf_counter()
    if method == "delta":
        DeltaAnonymizer(0.3, key=1).fit_transform(tx).persist(progress=False)
    else:
        KVarianceAnonymizer(5, knn_scope="partition", key=1).fit_transform(tx, progress=False).persist(progress=False)
    return time.perf_counter() - t0


def _plots(results, out_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plots are optional: pip install ".[bench]"
        print("  (matplotlib not installed: no PNG plots)")
        return []
    files = []
    out_dir.mkdir(parents=True, exist_ok=True)

    def fig(name, series, xlabel, ylabel, baseline=None, logx=False):
        plt.figure(figsize=(4.5, 3.2))
        for lab, xs, ys in series:
            plt.plot(xs, ys, marker="o", label=lab)
        if baseline is not None:
            plt.axhline(baseline, color="grey", ls="--", label="original data")
        if logx:
            plt.xscale("log")
        plt.xlabel(xlabel)
        plt.ylabel(ylabel)
        plt.legend(fontsize=7)
        plt.tight_layout()
        path = out_dir / f"{name}.png"
        plt.savefig(path, dpi=110)
        plt.close()
        files.append(str(path))

    fig_no = {"20news": (3, 7), "C20.I4.D200K": (4, 8), "C20.I6.D200K": (5, 9)}
    for ds, (fa, fc) in fig_no.items():
        rs = [r for r in results["k_sweep"] if r["dataset"].split(" ")[0] == ds]
        if not rs:
            continue
        ser_a, ser_c = [], []
        for thr in ("corrected", "paper"):
            sub = [r for r in rs if r["threshold"] == thr]
            ser_a.append((f"{thr} threshold", [r["k"] for r in sub], [r["accuracy"] for r in sub]))
            ser_c.append((f"{thr} threshold", [r["k"] for r in sub], [r["similarity"] for r in sub]))
        fig(f"fig{fa:02d}_accuracy_vs_k_{ds}", ser_a, "anonymity level k", "accuracy", rs[0]["baseline_accuracy"], logx=True)
        fig(f"fig{fc:02d}_similarity_vs_k_{ds}", ser_c, "anonymity level k", "avg cosine similarity", rs[0]["baseline_similarity"], logx=True)
    rs = results["delta_sweep"]
    if rs:
        ds_ = [r["delta"] for r in rs]
        fig("fig06_accuracy_vs_delta_20news", [("sketches", ds_, [r["accuracy"] for r in rs])], "δ", "accuracy", rs[0]["baseline_accuracy"], logx=True)
        fig("fig10_similarity_vs_delta_20news", [("sketches", ds_, [r["similarity"] for r in rs])], "δ", "avg cosine similarity", rs[0]["baseline_similarity"], logx=True)
    rs = results["dimensionality"]
    if rs:
        series_a, series_c = [], []
        for d in DIM_DELTAS:
            sub = [r for r in rs if r["delta"] == d]
            series_a.append((f"δ={d}", [r["n_items"] for r in sub], [r["accuracy_ratio"] for r in sub]))
            series_c.append((f"δ={d}", [r["n_items"] for r in sub], [r["similarity_ratio"] for r in sub]))
        fig("fig11_accuracy_ratio_vs_dimensionality", series_a, "base items", "accuracy ratio")
        fig("fig12_similarity_ratio_vs_dimensionality", series_c, "base items", "similarity ratio")
    for key_, name, xl in (("time_vs_nnz", "fig13_time_vs_nnz", "non-zeros per record"), ("time_vs_n", "fig14_time_vs_n", "records")):
        rs = results[key_]
        if rs:
            fig(name, [(m, [r["x"] for r in rs], [r[m] for r in rs]) for m in ("delta", "kvariance_partition")], xl, "seconds")
    return files


def run(quick: bool = False) -> list[dict]:
    import sys

    sys.path.insert(0, str(HERE))
    from _sketch_data import newsgroups, quest_dimensionality, quest_two_class

    from ppdm_dask import TransactionArray
    from ppdm_dask.data.quest import quest
    from ppdm_dask.random import Key

    eval_rows = 4000 if quick else EVAL_ROWS
    k_levels = (2, 10) if quick else K_LEVELS
    deltas = (0.2, 2.0) if quick else DELTAS
    dims = (1000, 2000) if quick else (1000, 1400, 2000)
    results: dict[str, list] = {"k_sweep": [], "delta_sweep": [], "dimensionality": [], "time_vs_nnz": [], "time_vs_n": []}
    rows: list[dict] = []
    with dask.config.set(scheduler="threads"):
        # ---- Figs 3-10
        Xn, yn, _ = newsgroups()
        Xn, yn = _sample(Xn, yn, 3000 if quick else Xn.shape[0])
        datasets = [("20news", Xn, yn)]
        for spec in ("C20.I4.D200K", "C20.I6.D200K"):
            X, y = quest_two_class(spec.replace("D200K", "D20K") if quick else spec, key=1)
            datasets.append((spec, *_sample(X, y, eval_rows)))
        for label, X, y in datasets:
            results["k_sweep"] += [{**r, "threshold": "corrected"} for r in _sweep(label, X, y, k_levels, _kvar, "k", 4)]
            results["k_sweep"] += [{**r, "threshold": "paper"} for r in _sweep(label + " (paper threshold)", X, y, k_levels, _kvar_paper, "k", 4)]
        results["delta_sweep"] += _sweep("20news", Xn, yn, deltas, _delta, "delta", 4)
        # ---- Figs 11-12
        for n_items in dims:
            X, y = quest_dimensionality(n_items, D="20K" if quick else "200K")
            X, y = _sample(X, y, eval_rows)
            for d in DIM_DELTAS:
                results["dimensionality"] += [{**r, "n_items": n_items} for r in _sweep(f"G{n_items}", X, y, (d,), _delta, "delta", 4)]
        # ---- Figs 13-14 (full-size data; timing of δ sketching and partition-scope k-variance)
        n_time = 20_000 if quick else 200_000
        for x in ((5, 20) if quick else (5, 10, 15, 20, 25, 30)):
            tx = quest(f"C{x}.I6.D{n_time}", key=Key(2)).persist(progress=False)
            nnz = tx.nnz / tx.n_transactions
            results["time_vs_nnz"].append({"x": nnz, "delta": _time_anonymize(tx, "delta"), "kvariance_partition": _time_anonymize(tx, "kvariance")})
        big = quest(f"C20.I6.D{100_000 if quick else 1_000_000}", key=Key(3)).persist(progress=False)
        mat = big.compute(progress=False)
        for frac in (0.2, 0.4, 0.6, 0.8, 1.0):
            n = int(frac * mat.shape[0])
            tx = TransactionArray.from_scipy(mat[:n], npartitions=max(1, round(8 * frac))).persist(progress=False)
            results["time_vs_n"].append({"x": n, "delta": _time_anonymize(tx, "delta"), "kvariance_partition": _time_anonymize(tx, "kvariance")})
        # ---- sketching throughput (one thread)
        from ppdm_dask.sketch import sketch

        tput_tx = quest(f"C20.I6.D{n_time}", key=Key(4)).persist(progress=False)
        with dask.config.set(scheduler="sync"):
            t0 = time.perf_counter()
            sketch(tput_tx, 256, key=1).persist(progress=False)
            t_sk = time.perf_counter() - t0
        tput = tput_tx.nnz * 256 / t_sk / 1e6
    # ---- k-variance, exact global k-NN, on the 2-worker LocalCluster
    kv_time = _kvariance_on_cluster("C20.I6.D20K" if quick else "C20.I6.D200K")

    # ---- tables
    for r in results["k_sweep"] + results["delta_sweep"] + results["dimensionality"]:
        par = f"k={r['k']}" if "k" in r else f"δ={r['delta']}"
        rows.append({"name": f"{r['dataset']} {par}: accuracy (anchor: original)", "ours_s": r["accuracy"], "anchor": "k-NN on original", "anchor_s": r["baseline_accuracy"],
                     "note": f"sim {r['similarity']:.4f}/{r['baseline_similarity']:.4f} ({r['similarity_ratio']:.3f}); suppressed {100 * r['suppressed']:.1f}%; mean m {r['mean_components']:.1f}", "unit": "accuracy", "measures": r})
    for key_, xlab in (("time_vs_nnz", "nnz/record"), ("time_vs_n", "records")):
        rs = results[key_]
        for m in ("delta", "kvariance_partition"):
            a, b, r2 = _linear_fit([r["x"] for r in rs], [r[m] for r in rs])
            pts = ", ".join(f"{r['x']:.0f}:{r[m]:.2f}s" for r in rs)
            rows.append({"name": f"time vs {xlab} ({m}): linear fit R²", "ours_s": r2, "anchor": "target R² >= 0.98", "anchor_s": 0.98,
                         "note": f"slope {a:.3g} s per unit, intercept {b:.2f} s; {pts}", "unit": "R²"})
    rows.append({"name": "sketching throughput, 256 components, 1 thread", "ours_s": tput, "anchor": "target 50 M/s/core", "anchor_s": 50.0,
                 "note": "M (non-zero x component) per second", "unit": "M/s"})
    rows.append({"name": "k-variance k=5, exact global k-NN, 2-worker LocalCluster", "ours_s": kv_time["seconds"], "anchor": "target 120 s", "anchor_s": 120.0,
                 "note": f"{kv_time['spec']}: k-NN {kv_time['knn_seconds']:.1f} s, sweeps {kv_time['n_iter']}, suppressed {kv_time['n_suppressed']}, mean m {kv_time['mean_components']:.1f}", "unit": "s"})
    for thr in ("corrected", "paper"):
        mid = [r for r in results["k_sweep"] if r["k"] in MID_LEVELS and r["threshold"] == thr]
        if mid:
            worst = min(r["accuracy_ratio"] for r in mid)
            rows.append({"name": f"min accuracy ratio at k in {MID_LEVELS} ({thr} threshold)", "ours_s": worst, "anchor": "target >= 0.9", "anchor_s": 0.9, "note": "", "unit": "ratio"})
    dim = results["dimensionality"]
    if dim:
        for d in DIM_DELTAS:
            ratios = [r["accuracy_ratio"] for r in dim if r["delta"] == d]
            rows.append({"name": f"dimensionality δ={d}: accuracy ratio range", "ours_s": min(ratios), "anchor": "max over dims", "anchor_s": max(ratios),
                         "note": "flat = max/min close to 1", "unit": "ratio"})
    files = _plots(results, HERE / "results" / ("sketch-quick" if quick else "sketch"))
    if files:
        rows.append({"name": f"plots: {len(files)} PNG files", "ours_s": None, "anchor": "-", "anchor_s": None, "note": os.path.dirname(files[0])})
    return rows


def _kvariance_on_cluster(spec: str) -> dict:
    from ppdm_dask.cluster import get_client
    from ppdm_dask.data.quest import quest
    from ppdm_dask.random import Key
    from ppdm_dask.sketch import KVarianceAnonymizer

    with get_client(n_workers=2, threads_per_worker=1) as client:
        tx = quest(spec, key=Key(1)).persist(progress=False)
        t0 = time.perf_counter()
        an = KVarianceAnonymizer(5, key=1)
        sk = an.fit_transform(tx, client=client, progress=False).persist(progress=False)
        client.wait_for_workers(1)
        _ = sk.m.sum().compute()
        secs = time.perf_counter() - t0
    return {"spec": spec, "seconds": secs, **{k: an.report_[k] for k in ("knn_seconds", "n_iter", "n_suppressed", "mean_components")}}

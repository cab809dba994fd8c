"""Sketch anonymization (Aggarwal & Yu): the paper's Figures 3-14 as tables (and PNG plots).

* Figs 3-5 / 7-9: k-NN classification accuracy and k-means average cosine similarity vs the
  k-variance anonymity level k, beside the no-distortion baseline, on 20 Newsgroups (stand-in
  for the non-public Text17), Quest C20.I4.D200K and C20.I6.D200K (two classes).
* Figs 6 / 10: the same vs δ (δ-anonymity) on 20 Newsgroups.
* Figs 11-12: accuracy and similarity ratios (anonymized / original) vs the number of base
  items (Q20.I6.D200K.Gx) at δ = 0.2, 0.3, 0.4.
* Figs 13-14 and the performance targets: ``bench_sketch_timing.py`` (suite ``sketch_timing``).

Quality sweeps on the Quest data use a random sample of EVAL_ROWS records (the full sets are
used by the timing suite); every number is in the JSON output and the note of the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import dask
import numpy as np

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

    return lambda tx, g: KVarianceAnonymizer(k, generator=g, threshold=threshold).fit_transform(tx, progress=False).data


def _kvar_paper(k):
    return _kvar(k, "paper")


def _delta(d):
    from ppdm_dask.sketch import DeltaAnonymizer

    return lambda tx, g: DeltaAnonymizer(d, generator=g).fit_transform(tx).data


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


def _plots(results, out_dir):
    from _plot import have_matplotlib, line_figure

    if not have_matplotlib():
        return []
    files = []

    def fig(name, series, xlabel, ylabel, baseline=None, logx=False):
        files.append(line_figure(out_dir / f"{name}.png", series, xlabel, ylabel, baseline, logx))

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
        rs = results.get(key_)
        if rs:
            fig(name, [(m, [r["x"] for r in rs], [r[m] for r in rs]) for m in ("kvariance_partition", "sketch")], xl, "seconds")
    return files


def run(quick: bool = False) -> list[dict]:
    import sys

    sys.path.insert(0, str(HERE))
    from _sketch_data import newsgroups, quest_dimensionality, quest_two_class


    eval_rows = 4000 if quick else EVAL_ROWS
    k_levels = (2, 10) if quick else K_LEVELS
    deltas = (0.2, 2.0) if quick else DELTAS
    dims = (1000, 2000) if quick else (1000, 1400, 2000)
    results: dict[str, list] = {"k_sweep": [], "delta_sweep": [], "dimensionality": []}
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
    # ---- tables
    for r in results["k_sweep"] + results["delta_sweep"] + results["dimensionality"]:
        par = f"k={r['k']}" if "k" in r else f"δ={r['delta']}"
        rows.append({"name": f"{r['dataset']} {par}: accuracy (anchor: original)", "ours_s": r["accuracy"], "anchor": "k-NN on original", "anchor_s": r["baseline_accuracy"],
                     "note": f"sim {r['similarity']:.4f}/{r['baseline_similarity']:.4f} ({r['similarity_ratio']:.3f}); suppressed {100 * r['suppressed']:.1f}%; mean m {r['mean_components']:.1f}", "unit": "accuracy", "measures": r})
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


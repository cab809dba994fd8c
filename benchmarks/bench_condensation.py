"""Condensation with per-record privacy levels (Aggarwal & Yu): the paper's Figures 8-15 as tables.

* UCI Ionosphere, Ecoli, Pima, Abalone: 1-NN accuracy on pseudo-data (anchor: 1-NN on the
  original records) and covariance compatibility μ, static and dynamic condensation, privacy
  levels uniform on [α−4, α] for a sweep of α (the paper's x-axis).
* Partition-then-merge vs the single-machine algorithm: SSQ on the same data (target: within 10%).
* Scale: 1,000,000 x 10 Gaussian-mixture records, levels 2..20, static condensation + pseudo-data
  on the 2-worker LocalCluster (target <= 120 s), peak worker memory.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ALPHAS = (5, 10, 15, 20, 25, 30)
DATASETS = ("ionosphere", "ecoli", "pima", "abalone")


def gaussian_mixture(n: int, d: int = 10, clusters: int = 20, seed: int = 0) -> np.ndarray:
    """``n`` points from ``clusters`` random Gaussians in ``d`` dimensions (random scales)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(clusters, d))
    scales = rng.uniform(0.3, 2.0, size=(clusters, d))
    which = rng.integers(clusters, size=n)
    return centres[which] + scales[which] * rng.standard_normal((n, d))


def _uci_rows(quick: bool) -> list[dict]:
    from ppdm_dask.condensation.evaluation import evaluate
    from ppdm_dask.data.uci import load_uci

    rows = []
    alphas = (5, 20) if quick else ALPHAS
    for name in DATASETS:
        X, y = load_uci(name)
        task = "age" if name == "abalone" else "classify"
        for method in ("static", "dynamic"):
            for a in alphas:
                r = {"dataset": name, **evaluate(X, y, alpha=a, method=method, task=task, key=1, repeats=1 if quick else 3)}
                print(
                    f"  {name} {method} alpha={a}: acc {r['accuracy']:.3f} / {r['baseline_accuracy']:.3f}, mu {r['mu']:.3f}, "
                    f"groups {r['n_groups']:.0f} (mean size {r['mean_group_size']:.1f}), clamped {r['clamped']:.0f} ({r['seconds']:.1f} s)",
                    flush=True,
                )
                rows.append(
                    {
                        "name": f"{name} {method} α={a}: 1-NN accuracy",
                        "ours_s": r["accuracy"],
                        "anchor": "1-NN on original",
                        "anchor_s": r["baseline_accuracy"],
                        "unit": "accuracy",
                        "note": f"μ {r['mu']:.3f}; groups {r['n_groups']:.0f}, mean size {r['mean_group_size']:.1f}",
                        "measures": r,
                    }
                )
    return rows


def _ssq_rows(quick: bool) -> list[dict]:
    from ppdm_dask.condensation import Condenser, privacy_levels

    n = 40_000 if quick else 400_000
    X = gaussian_mixture(n, seed=1)
    p = privacy_levels(n, 2, 20, key=2)
    t0 = time.perf_counter()
    single = Condenser(rows_per_partition=None, key=3).fit(X, p)
    t_single = time.perf_counter() - t0
    rows = []
    for cells in (2, 4):
        t0 = time.perf_counter()
        ptm = Condenser(rows_per_partition=n // cells, key=3).fit(X, p)
        t_ptm = time.perf_counter() - t0
        ptm.check(X)
        s1, s2 = single.report_["ssq"], ptm.report_["ssq"]
        print(f"  SSQ single {s1:.6g} ({t_single:.1f} s) vs {cells} cells {s2:.6g} ({t_ptm:.1f} s)", flush=True)
        rows.append(
            {
                "name": f"SSQ, {n:,} x 10, {cells} cells of {n // cells:,} vs one (target ratio <= 1.10)",
                "ours_s": s2,
                "anchor": "single-machine SSQ",
                "anchor_s": s1,
                "unit": "SSQ",
                "note": f"single-machine {t_single:.1f} s, {cells} cells {t_ptm:.1f} s (threads)",
            }
        )
    return rows


def _scale_row(quick: bool) -> dict:
    from bench_mining import _WorkerRSS

    from ppdm_dask.cluster import get_client
    from ppdm_dask.condensation import Condenser, privacy_levels
    from ppdm_dask.progress import compute

    n = 100_000 if quick else 1_000_000
    X = gaussian_mixture(n, seed=4)
    p = privacy_levels(n, 2, 20, key=5)
    import dask.array as da

    with get_client(n_workers=2, threads_per_worker=1) as client:
        Xd = da.from_array(X, chunks=(n // 16, 10)).persist()
        client.wait_for_workers(2)
        with _WorkerRSS(client) as rss:
            t0 = time.perf_counter()
            cond = Condenser(key=6).fit(Xd, p, client=client)
            t_fit = time.perf_counter() - t0
            (Y,) = compute(cond.generate(key=7).sum(axis=0), progress=False, client=client)
            secs = time.perf_counter() - t0
    print(
        f"  scale {n:,}: fit {t_fit:.1f} s, total {secs:.1f} s, groups {cond.report_['n_groups']}, cells {cond.report_['n_cells']}, "
        f"peak worker RSS {rss.max_worker / 2**20:.0f} MB",
        flush=True,
    )
    return {
        "name": f"static condensation {n:,} x 10, levels 2..20, LocalCluster(2)",
        "ours_s": secs,
        "anchor": "target 120 s",
        "anchor_s": 120.0,
        "note": f"fit {t_fit:.1f} s + pseudo-data; {cond.report_['n_groups']:,} groups in {cond.report_['n_cells']} cells, "
        f"repaired {cond.report_['repaired_groups']}; peak worker RSS {rss.max_worker / 2**20:.0f} MB",
    }


def _plots(rows: list[dict], out_dir: Path) -> list[str]:
    """Accuracy and μ vs α per data set, static and dynamic, beside the original-data baseline
    (the paper's Figs 8-15)."""
    from _plot import have_matplotlib, line_figure

    if not have_matplotlib():
        return []
    files = []
    meas = [r["measures"] for r in rows if "measures" in r]
    for i, name in enumerate(DATASETS):
        sub = [m for m in meas if m["dataset"] == name]
        if not sub:
            continue
        acc = [
            (meth, [m["alpha"] for m in sub if m["method"] == meth], [m["accuracy"] for m in sub if m["method"] == meth])
            for meth in ("static", "dynamic")
        ]
        mu = [
            (meth, [m["alpha"] for m in sub if m["method"] == meth], [m["mu"] for m in sub if m["method"] == meth])
            for meth in ("static", "dynamic")
        ]
        files.append(
            line_figure(
                out_dir / f"fig{8 + 2 * i:02d}_accuracy_vs_alpha_{name}.png",
                acc,
                "privacy level α",
                "1-NN accuracy",
                sub[0]["baseline_accuracy"],
            )
        )
        files.append(
            line_figure(
                out_dir / f"fig{9 + 2 * i:02d}_mu_vs_alpha_{name}.png", mu, "privacy level α", "covariance compatibility μ"
            )
        )
    return files


def run(quick: bool = False) -> list[dict]:
    import sys

    sys.path.insert(0, str(HERE))
    rows = _uci_rows(quick)
    files = _plots(rows, HERE / "results" / ("condensation-quick" if quick else "condensation"))
    rows += _ssq_rows(quick)
    rows.append(_scale_row(quick))
    if files:
        rows.append(
            {
                "name": f"plots: {len(files)} PNG files",
                "ours_s": None,
                "anchor": "-",
                "anchor_s": None,
                "note": str(Path(files[0]).parent),
            }
        )
    return rows

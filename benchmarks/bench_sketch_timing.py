"""Sketch anonymization: running time (the paper's Figs 13-14) and the performance targets.

* Fig. 13: time vs non-zeros per record: projections of C30.I6.D200K onto the first x/30 of the
  items (x = 5..30 in steps of 2.5), as the paper builds its Cx.I6.D200K series ("projections of
  increasing dimensionality"), so the records keep their structure while their length grows.
* Fig. 14: time vs N on samples of C20.I6.D1M (200K..1M records).
  Timed: k-variance anonymity with partition-scope k-NN (the paper's "partition based method",
  docs/sketches.md#clarification-partition-local-neighbours) on partitions of a fixed
  PARTITION_ROWS rows, so its cost per record is constant; and sketching alone with a fixed
  number of components (the per-non-zero work of the method; one thread, repeated INNER times
  per measurement so that one measurement is well above the timer's and the scheduler's noise).

How the linear law is told from noise: every size is measured REPEATS times, the repetitions
interleaved over the sizes (round robin, so drift of the machine spreads over all sizes). The
least-squares line is fitted to all measurements and reported with the standard errors of its
slope and intercept, R² over all measurements, the largest R² the repetition noise allows
(1 - pure-error SS / total SS) and the lack-of-fit F-test (residual variance beyond the
repetition noise; p > 0.05: nothing in the data contradicts a straight line).

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
REPEATS = 5
INNER = 5  # sketching runs per measurement
SKETCH_COMPONENTS = 256
NNZ_STEPS = tuple(np.arange(5.0, 30.01, 2.5))


def linear_law(x, t) -> dict:
    """Least squares ``t = a x + b`` over replicated measurements, with the lack-of-fit test.

    Returns slope, intercept, their standard errors, R² over all points, the R² ceiling the
    pure (repetition) error allows, the lack-of-fit F statistic and its p-value.
    """
    from scipy import stats

    x, t = np.asarray(x, float), np.asarray(t, float)
    n = x.size
    A = np.column_stack([x, np.ones(n)])
    (a, b), *_ = np.linalg.lstsq(A, t, rcond=None)
    resid = t - (a * x + b)
    ss_res = float(resid @ resid)
    ss_tot = float(((t - t.mean()) ** 2).sum())
    s2 = ss_res / max(1, n - 2)
    cov = s2 * np.linalg.inv(A.T @ A)
    levels = np.unique(x)
    ss_pe = float(sum(((t[x == v] - t[x == v].mean()) ** 2).sum() for v in levels))
    df_pe, df_lof = n - levels.size, levels.size - 2
    ss_lof = max(0.0, ss_res - ss_pe)
    if df_pe > 0 and df_lof > 0 and ss_pe > 0:
        F = (ss_lof / df_lof) / (ss_pe / df_pe)
        p = float(stats.f.sf(F, df_lof, df_pe))
    else:
        F, p = float("nan"), float("nan")
    return {
        "slope": float(a),
        "slope_se": float(np.sqrt(cov[0, 0])),
        "intercept": float(b),
        "intercept_se": float(np.sqrt(cov[1, 1])),
        "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan"),
        "r2_ceiling": 1.0 - ss_pe / ss_tot if ss_tot > 0 else float("nan"),
        "lack_of_fit_F": float(F),
        "lack_of_fit_p": p,
        "n": int(n),
        "sizes": int(levels.size),
    }


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _series(inputs: list, repeats: int) -> list[dict]:
    """Time both series on every input, repetitions interleaved (round robin)."""
    from ppdm_dask.sketch import KVarianceAnonymizer, sketch

    def kv(tx):
        KVarianceAnonymizer(5, knn_scope="partition", key=1).fit_release(tx, progress=False).data.persist(progress=False)

    def sk(tx):
        with dask.config.set(scheduler="sync"):
            for _ in range(INNER):
                sketch(tx, SKETCH_COMPONENTS, key=1).persist(progress=False)

    kv(inputs[0][1])  # warm-up: numba compilation, imports
    sk(inputs[0][1])
    out = []
    for rep in range(repeats):
        for x, tx in inputs:
            out.append(
                {"x": x, "rep": rep, "kvariance_partition": _time(lambda: kv(tx)), "sketch": _time(lambda: sk(tx)) / INNER}
            )
        print(
            f"  repetition {rep + 1}/{repeats}: "
            + ", ".join(f"{r['x']:.1f}:{r['kvariance_partition']:.2f}/{r['sketch']:.3f}s" for r in out[-len(inputs) :]),
            flush=True,
        )
    return out


def _kvariance_on_cluster(spec: str) -> dict:
    from ppdm_dask.cluster import get_client
    from ppdm_dask.data.quest import quest
    from ppdm_dask.random import Key
    from ppdm_dask.sketch import KVarianceAnonymizer

    with get_client(n_workers=2, threads_per_worker=1) as client:
        tx = quest(spec, key=Key(1)).persist(progress=False)
        t0 = time.perf_counter()
        an = KVarianceAnonymizer(5, key=1)
        sk = an.fit_release(tx, client=client, progress=False).data.persist(progress=False)
        _ = sk.m.sum().compute()
        secs = time.perf_counter() - t0
    return {
        "spec": spec,
        "seconds": secs,
        **{k: an.report_[k] for k in ("knn_seconds", "n_iter", "n_suppressed", "mean_components")},
    }


def _plots(results: dict, fits: dict, out_dir: Path) -> list[str]:
    from _plot import have_matplotlib

    if not have_matplotlib():
        return []
    import matplotlib.pyplot as plt

    files = []
    for key_, name, xl in (
        ("time_vs_nnz", "fig13_time_vs_nnz", "non-zeros per record"),
        ("time_vs_n", "fig14_time_vs_n", "records"),
    ):
        rs = results.get(key_)
        if not rs:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
        for ax, m in zip(axes, ("kvariance_partition", "sketch")):
            x = np.array([r["x"] for r in rs])
            t = np.array([r[m] for r in rs])
            f = fits[(key_, m)]
            ax.scatter(x, t, s=10, alpha=0.6, label="measurements")
            xs = np.linspace(0, x.max(), 50)
            ax.plot(
                xs,
                f["slope"] * xs + f["intercept"],
                color="C1",
                label=f"fit: R² {f['r2']:.2f} (ceiling {f['r2_ceiling']:.2f}), lack of fit p {f['lack_of_fit_p']:.2f}",
            )
            ax.set_xlabel(xl)
            ax.set_ylabel("seconds")
            ax.set_title(m.replace("_", " "), fontsize=9)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=6)
        fig.tight_layout()
        path = out_dir / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(str(path))
    return files


def run(quick: bool = False) -> list[dict]:
    import sys

    sys.path.insert(0, str(HERE))
    from ppdm_dask import TransactionArray
    from ppdm_dask.data.quest import quest
    from ppdm_dask.random import Key
    from ppdm_dask.sketch import sketch

    repeats = 2 if quick else REPEATS
    n_time = 20_000 if quick else 200_000
    results: dict[str, list] = {}
    with dask.config.set(scheduler="threads"):
        base = quest(f"C30.I6.D{n_time}", key=Key(2)).compute(progress=False).tocsc()
        inputs = []
        for x in (5.0, 17.5, 30.0) if quick else NNZ_STEPS:
            mat = base[:, : round(base.shape[1] * x / 30)].tocsr()  # item ids are random: a prefix is a random projection
            tx = TransactionArray.from_scipy(mat, npartitions=max(1, mat.shape[0] // PARTITION_ROWS)).persist(progress=False)
            inputs.append((tx.nnz / tx.n_transactions, tx))
        print("  Fig. 13: time vs non-zeros per record", flush=True)
        results["time_vs_nnz"] = _series(inputs, repeats)
        mat = quest(f"C20.I6.D{100_000 if quick else 1_000_000}", key=Key(3)).compute(progress=False)
        inputs = []
        for frac in (0.2, 0.4, 0.6, 0.8, 1.0):
            n = int(frac * mat.shape[0])
            inputs.append(
                (n, TransactionArray.from_scipy(mat[:n], npartitions=max(1, n // PARTITION_ROWS)).persist(progress=False))
            )
        print("  Fig. 14: time vs records", flush=True)
        results["time_vs_n"] = _series(inputs, max(2, repeats - 2))
        tput_tx = quest(f"C20.I6.D{n_time}", key=Key(4)).persist(progress=False)
    with dask.config.set(scheduler="sync"):
        t_sk = min(_time(lambda: sketch(tput_tx, 256, key=1).persist(progress=False)) for _ in range(3))
    tput = tput_tx.nnz * 256 / t_sk / 1e6
    kv = _kvariance_on_cluster("C20.I6.D20K" if quick else "C20.I6.D200K")
    rows, fits = [], {}
    for key_, xlab in (("time_vs_nnz", "nnz/record"), ("time_vs_n", "records")):
        rs = results[key_]
        for m in ("kvariance_partition", "sketch"):
            f = linear_law([r["x"] for r in rs], [r[m] for r in rs])
            fits[(key_, m)] = f
            verdict = "consistent with a straight line" if f["lack_of_fit_p"] > 0.05 else "departs from a straight line"
            rows.append(
                {
                    "name": f"time vs {xlab} ({m}): linear fit R²",
                    "ours_s": f["r2"],
                    "anchor": "R² ceiling of the noise",
                    "anchor_s": f["r2_ceiling"],
                    "note": f"slope {f['slope']:.3g} ± {f['slope_se']:.2g} s/unit, intercept {f['intercept']:.3f} ± {f['intercept_se']:.2g} s; "
                    f"lack of fit F {f['lack_of_fit_F']:.2f}, p {f['lack_of_fit_p']:.3f}: {verdict}; "
                    f"{f['n']} measurements at {f['sizes']} sizes",
                    "unit": "R²",
                    "fit": f,
                }
            )
    rows.append(
        {
            "name": "sketching throughput, 256 components, 1 thread",
            "ours_s": tput,
            "anchor": "target 50 M/s/core",
            "anchor_s": 50.0,
            "note": f"M (non-zero x component) per second; {tput_tx.nnz:,} non-zeros in {t_sk:.2f} s",
            "unit": "M/s",
        }
    )
    rows.append(
        {
            "name": "k-variance k=5, exact global k-NN, 2-worker LocalCluster",
            "ours_s": kv["seconds"],
            "anchor": "target 120 s",
            "anchor_s": 120.0,
            "note": f"{kv['spec']}: k-NN {kv['knn_seconds']:.1f} s, sweeps {kv['n_iter']}, suppressed {kv['n_suppressed']}, mean m {kv['mean_components']:.1f}",
        }
    )
    files = _plots(results, fits, HERE / "results" / ("sketch-quick" if quick else "sketch"))
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
    rows.append(
        {
            "name": "raw measurements",
            "ours_s": None,
            "anchor": "-",
            "anchor_s": None,
            "note": "see 'measurements'",
            "measurements": results,
        }
    )
    return rows


if __name__ == "__main__":  # the cluster part spawns worker processes that re-import this module
    print(run(quick=True))

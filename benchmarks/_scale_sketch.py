"""Scale families of the sketch and condensation side (benchmarks/bench_scale.py).

* ``sketch-delta``: δ-anonymous sketches (δ = 0.2, m_max 256) of Quest T10.I4.D{s}M.N1K, the way
  ``ppdm sketch IN OUT --delta 0.2 --no-report`` runs them: read the Parquet input (lazy, not
  persisted), ``DeltaAnonymizer.fit_transform``, ``SketchRelease.write`` (keyed shuffle of the
  rows into part files, read back and recounted before the commit).
* ``sketch-kvariance``: k-variance anonymous sketches (k = 5, cosine, ``approximate=True``: keyed
  MinHash windows, 8 rounds of 512) of Quest C20.I6 at s x 333,333 records, fitted and written
  the same way. The note gives the recall of the approximate neighbour search on a public sample
  of <= 2,000 records, against exact neighbours found by brute force in numpy during ``prepare``
  (untimed), scored with :func:`ppdm_dask.neighbors.recall`.
* ``condensation``: static condensation (``Condenser``, 200,000-row k-d cells) of a Gaussian
  mixture of s x 333,333 records x 10 attributes, per-record privacy levels drawn from 2..20,
  then the pseudo-data (summed, as benchmarks/bench_condensation.py's scale row does).

A job that the cluster cannot finish (e.g. ``KilledWorker``: one task needs more than the worker
memory limit) is reported as a failed run (fingerprint ``FAILED ...``, the error in the note)
instead of ending the suite. The brute-force recall reference costs ~30 s per 333,333 records
(prepare, untimed).

Driver-side steps are timed by wrapping the library's module-level helpers in this process for
the duration of the job (nothing in the library is changed).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from _scale_mining import quest_folder, quest_spec

DELTA = 0.2
M_MAX = 256
K = 5
KV_ROWS = 333_333  # records per unit of scale (top: 30x = 10M)
RECALL_SAMPLE = 2_000
CONDENSE_ROWS = 333_333
CONDENSE_DIM = 10
CONDENSE_BLOCK = 100_000  # rows per input file / dask chunk of the condensation input
LEVELS = (2, 20)


# ----------------------------------------------------------------------------- helpers
class _Clock:
    """Seconds spent in wrapped driver-side functions, by label."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, label: str, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t0

        return timed

    def get(self, label: str) -> float:
        return self.seconds.get(label, 0.0)


@contextlib.contextmanager
def _timing(clock: _Clock, *targets: tuple[Any, str, str]) -> Iterator[_Clock]:
    """Wrap ``module.attr`` (called by the library through its module globals) with the clock."""
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in targets]
    try:
        for mod, attr, label in targets:
            setattr(mod, attr, clock.wrap(label, getattr(mod, attr)))
        yield clock
    finally:
        for mod, attr, fn in saved:
            setattr(mod, attr, fn)


def _guarded(job):
    """Run ``job``; if the cluster cannot finish it (e.g. ``KilledWorker``: a task needs more than
    the worker memory limit), report the failure as the run's result instead of ending the suite."""

    def run(inputs, client) -> dict:
        t0 = time.perf_counter()
        try:
            return job(inputs, client)
        except Exception as exc:  # noqa: BLE001 - the failure is the measurement
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            try:  # let the nanny bring the workers back, so the suite's RSS poll finds them
                client.wait_for_workers(2, timeout=120)
            except Exception:  # noqa: BLE001, S110 - best effort
                pass
            return {
                "fingerprint": f"FAILED {type(exc).__name__}",
                "plans": "-",
                "failed": f"{type(exc).__name__}: {msg}",
                "note": f"FAILED after {time.perf_counter() - t0:.0f} s: {type(exc).__name__}: {msg[:300]}",
            }

    run.__name__ = getattr(job, "__name__", "job")
    return run


def _release_digest(manifest: dict) -> list[str]:
    """The content hashes of the written part files (the manifest also holds timestamps)."""
    return [p["sha256"] for p in manifest["partitions"]]


def _write(release, out: str, client) -> tuple[dict, float]:
    t0 = time.perf_counter()
    manifest = release.write(out, client=client, progress=False, check=True)
    return manifest, time.perf_counter() - t0


def _generate_quest(spec: str, folder: str) -> str:
    """Quest data of ``spec`` in ``folder`` (or, with ``PPDM_SCALE_DATA``, kept there between runs)."""
    import _scale_mining
    from distributed import Client, LocalCluster

    if _scale_mining._KEEP:
        folder = str(_scale_mining._CACHE_DIR / spec)
        if os.path.exists(os.path.join(folder, "_SUCCESS")):
            return folder

    from ppdm_dask import Key
    from ppdm_dask.data.quest import quest

    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="6GB", dashboard_address=None) as c, Client(c):
        quest(spec, key=Key(1)).to_parquet(folder, progress=False)
    return folder


# ----------------------------------------------------------------------------- sketch-delta
def delta_job(inputs: tuple[str, Path], client) -> dict:
    from bench_scale import fingerprint

    from ppdm_dask import Key, read
    from ppdm_dask.sketch import DeltaAnonymizer

    folder, tmp = inputs
    out = str(tmp / f"delta-release-{time.monotonic_ns()}")
    t0 = time.perf_counter()
    tx = read(folder)  # as `ppdm sketch`: the input is read lazily, never persisted
    an = DeltaAnonymizer(DELTA, m_max=M_MAX, key=Key(11))
    release = an.fit_transform(tx, client=client)  # fit: one pass computing every record's m
    t_fit = time.perf_counter() - t0
    manifest, t_write = _write(release, out, client)
    r = an.report_
    n_parts = len(manifest["partitions"])
    plans = (
        f"input lazy ({tx.n_partitions} Parquet partitions, not persisted); release: keyed all-to-all shuffle of dense "
        f"n x {M_MAX} float64 sketch blocks into {n_parts} part files of <= {release.default_rows_per_file:,} rows, "
        f"read back for the check"
    )
    note = (
        f"{r['n_records']:,} records, suppressed {r['n_suppressed']:,}, mean m {r['mean_components']:.1f}; "
        f"fit {t_fit:.1f} s, write+check {t_write:.1f} s; {sum(p['bytes'] for p in manifest['partitions']) / 2**20:,.0f} MiB written"
    )
    return {"fingerprint": fingerprint(*_release_digest(manifest), r["n_suppressed"]), "plans": plans, "note": note}


# ----------------------------------------------------------------------------- sketch-kvariance
def kv_spec(scale: int) -> str:
    return f"C20.I6.D{scale * KV_ROWS}"


def exact_sample_knn(X, rows: np.ndarray, k: int, *, data_block: int = 100_000, sample_block: int = 500):
    """Exact cosine k-NN of the records ``rows`` of the CSR matrix ``X`` against all records, by
    brute force (dense products block by block), in the library's order (distance, index); the
    record itself and records with ``|x| = 0`` are excluded. Returns ``(indices, distances)``,
    ``(len(rows), k)``, padded with -1 / inf."""
    import scipy.sparse as sp

    X = sp.csr_array(X, dtype=np.float64)
    n = X.shape[0]
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    best_d = np.full((rows.size, k), np.inf)
    best_i = np.full((rows.size, k), -1, np.int64)
    for s0 in range(0, rows.size, sample_block):
        srows = rows[s0 : s0 + sample_block]
        S = X[srows].toarray().T  # (d, c)
        cand_d, cand_i = [best_d[s0 : s0 + srows.size]], [best_i[s0 : s0 + srows.size]]
        for b0 in range(0, n, data_block):
            b1 = min(n, b0 + data_block)
            dots = X[b0:b1] @ S  # (rows of the block, c): exact integer counts for 0/1 data
            with np.errstate(divide="ignore", invalid="ignore"):
                d = 1.0 - dots / np.sqrt(sq[b0:b1, None] * sq[None, srows])
            d[sq[b0:b1] == 0, :] = np.inf
            hit = (srows >= b0) & (srows < b1)
            d[srows[hit] - b0, np.flatnonzero(hit)] = np.inf  # not its own neighbour
            kk = min(k, b1 - b0)
            part = np.argpartition(d, kk - 1, axis=0)[:kk] if kk < b1 - b0 else np.argsort(d, axis=0)[:kk]
            cand_d.append(np.take_along_axis(d, part, axis=0).T)
            cand_i.append(part.T + b0)
        cd, ci = np.concatenate(cand_d, axis=1), np.concatenate(cand_i, axis=1)
        ci = np.where(np.isfinite(cd), ci, -1)
        order = np.lexsort((np.where(ci < 0, np.iinfo(np.int64).max, ci), cd), axis=1)[:, :k]
        best_d[s0 : s0 + srows.size] = np.take_along_axis(cd, order, axis=1)
        best_i[s0 : s0 + srows.size] = np.take_along_axis(ci, order, axis=1)
    best_i[~np.isfinite(best_d)] = -1
    return best_i, best_d


def kv_prepare(scale: int, tmp: Path) -> dict:
    import _scale_mining

    from ppdm_dask import read

    folder = _generate_quest(kv_spec(scale), str(tmp / kv_spec(scale)))
    cache = _scale_mining._CACHE_DIR / f"{kv_spec(scale)}-exact-{RECALL_SAMPLE}-k{K}.npz" if _scale_mining._KEEP else None
    if cache is not None and cache.exists():  # the brute-force oracle of a kept data set
        saved = np.load(cache)
        return {
            "folder": folder,
            "tmp": tmp,
            "rows": saved["rows"],
            "exact_indices": saved["idx"],
            "exact_distances": saved["dist"],
        }
    X = read(folder).compute(progress=False)
    nonzero = np.flatnonzero(np.diff(X.indptr) > 0)
    rows = np.sort(np.random.default_rng(2024).choice(nonzero, size=min(RECALL_SAMPLE, nonzero.size), replace=False))
    t0 = time.perf_counter()
    idx, dist = exact_sample_knn(X, rows, K)
    print(
        f"  [sketch-kvariance {scale}x] exact neighbours of {rows.size:,} sample records by brute force in "
        f"{time.perf_counter() - t0:.1f} s (untimed)",
        flush=True,
    )
    if cache is not None:
        np.savez(cache, rows=rows, idx=idx, dist=dist)
    return {"folder": folder, "tmp": tmp, "rows": rows, "exact_indices": idx, "exact_distances": dist}


def kv_job(inputs: dict, client) -> dict:
    from bench_scale import fingerprint

    import ppdm_dask.neighbors.approximate as approx_mod
    from ppdm_dask import Key, read
    from ppdm_dask.neighbors import KNNGraph, recall
    from ppdm_dask.sketch import KVarianceAnonymizer

    out = str(inputs["tmp"] / f"kv-release-{time.monotonic_ns()}")
    clock = _Clock()
    t0 = time.perf_counter()
    with _timing(clock, (approx_mod, "_windows", "windows"), (approx_mod.K, "merge_topk_unique", "assemble")):
        tx = read(inputs["folder"])
        an = KVarianceAnonymizer(K, m_max=M_MAX, approximate=True, key=Key(21))
        release = an.fit_release(tx, client=client)
    t_fit = time.perf_counter() - t0
    manifest, t_write = _write(release, out, client)
    r = an.report_
    g, rows = an.graph_, inputs["rows"]

    def sub(indices, distances):
        nan = np.full(indices.shape, np.nan)
        return KNNGraph(indices, distances, nan, nan, np.zeros(indices.shape[0]), K, "cosine", "sample")

    rec = recall(sub(g.indices[rows], g.distances[rows]), sub(inputs["exact_indices"], inputs["exact_distances"]))
    driver = clock.get("windows") + clock.get("assemble") + r["sweep_seconds"]
    plans = f"approximate_knn: {g.plan}; m on the driver; release shuffle into {len(manifest['partitions'])} files"
    note = (
        f"recall {rec:.3f} on {rows.size:,} sampled records (exact by brute force); k-NN {r['knn_seconds']:.1f} s "
        f"(driver: window sort {clock.get('windows'):.1f} s, merging the waves' lists {clock.get('assemble'):.1f} s), "
        f"sweeps {r['sweep_seconds']:.1f} s ({r['n_iter']} iterations, converged {r['converged']}), "
        f"fit {t_fit:.1f} s, write+check {t_write:.1f} s, driver steps {driver:.1f} s = {100 * driver / (t_fit + t_write):.0f}%; "
        f"suppressed {r['n_suppressed']:,}, mean m {r['mean_components']:.1f}"
    )
    return {
        "fingerprint": fingerprint(an.m_, *_release_digest(manifest)),
        "plans": plans,
        "note": note,
        "recall": rec,
        "driver_seconds": driver,
    }


# ----------------------------------------------------------------------------- condensation
def _mixture_block(n: int, b: int, centres: np.ndarray, scales: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng([4, b])
    which = rng.integers(centres.shape[0], size=n)
    return centres[which] + scales[which] * rng.standard_normal((n, centres.shape[1]))


def condense_prepare(scale: int, tmp: Path) -> dict:
    """The benchmark's Gaussian mixture (20 clusters, random scales), written block by block to
    .npy files (one per dask chunk), and per-record privacy levels 2..20."""
    from ppdm_dask import Key
    from ppdm_dask.condensation import privacy_levels

    n = scale * CONDENSE_ROWS
    rng = np.random.default_rng(0)
    centres = rng.uniform(-10, 10, size=(20, CONDENSE_DIM))
    scales = rng.uniform(0.3, 2.0, size=(20, CONDENSE_DIM))
    folder = tmp / "mixture"
    folder.mkdir()
    files = []
    for b, lo in enumerate(range(0, n, CONDENSE_BLOCK)):
        rows = min(CONDENSE_BLOCK, n - lo)
        path = folder / f"block-{b:05d}.npy"
        np.save(path, _mixture_block(rows, b, centres, scales))
        files.append((str(path), rows))
    return {"files": files, "levels": privacy_levels(n, *LEVELS, key=Key(5))}


def condense_job(inputs: dict, client) -> dict:
    import dask
    import dask.array as da
    from bench_scale import fingerprint

    import ppdm_dask.condensation.condenser as cond_mod
    from ppdm_dask import Key
    from ppdm_dask.condensation import Condenser
    from ppdm_dask.progress import compute

    X = da.concatenate(
        [
            da.from_delayed(dask.delayed(np.load)(path), shape=(rows, CONDENSE_DIM), dtype=np.float64)
            for path, rows in inputs["files"]
        ],
        axis=0,
    )
    clock = _Clock()
    t0 = time.perf_counter()
    with _timing(
        clock,
        (cond_mod, "compute", "distributed"),
        (cond_mod, "compute_each", "cells"),
        (cond_mod, "repair_groups", "repair"),
        (cond_mod, "kd_cells", "kd"),
    ):
        cond = Condenser(key=Key(6)).fit(X, inputs["levels"], client=client)
    t_fit = time.perf_counter() - t0
    t1 = time.perf_counter()
    (total,) = compute(cond.generate(key=Key(7)).sum(axis=0), progress=False, client=client)
    t_gen = time.perf_counter() - t1
    r, gt = cond.report_, cond.groups_
    on_workers = clock.get("distributed") + clock.get("cells")  # the waves' cells and the standardization
    driver = t_fit - on_workers
    plans = (
        f"{r['n_cells']} k-d cells of ~200,000 rows (bucket/gather all-to-all), {r['memory']}; every cell's "
        f"group table, rows and labels gathered to the driver; repair on the driver"
    )
    note = (
        f"{r['n_groups']:,} groups (mean size {r['mean_group_size']:.1f}, min {r['min_group_size']}), "
        f"{r['repaired_groups']:,} repaired; fit {t_fit:.1f} s (on the workers {on_workers:.1f} s, "
        f"driver {driver:.1f} s of which repair {clock.get('repair'):.1f} s = {100 * driver / (t_fit + t_gen):.0f}% of the job), "
        f"pseudo-data {t_gen:.1f} s"
    )
    return {
        "fingerprint": fingerprint(gt.n, gt.mean, gt.m2, gt.req, total),
        "plans": plans,
        "note": note,
        "driver_seconds": driver,
    }


# ----------------------------------------------------------------------------- registry
def _families():
    from bench_scale import Family

    return {
        "sketch-delta": Family(
            lambda s: f"δ={DELTA} sketches (m_max {M_MAX}), Quest {quest_spec(s)}",
            lambda s, tmp: (quest_folder(s), tmp),
            _guarded(delta_job),
        ),
        "sketch-kvariance": Family(
            lambda s: f"k-variance k={K} approximate k-NN, Quest {kv_spec(s)}", kv_prepare, _guarded(kv_job)
        ),
        "condensation": Family(
            lambda s: f"static condensation {s * CONDENSE_ROWS:,} x {CONDENSE_DIM}, levels {LEVELS[0]}..{LEVELS[1]}",
            condense_prepare,
            _guarded(condense_job),
        ),
    }


FAMILIES = _families()

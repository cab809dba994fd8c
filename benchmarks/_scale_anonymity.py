"""Scale families of the anonymity side (benchmarks/bench_scale.py).

* ``kanon-lattice`` — k-anonymity, k = 10, optimal lattice search (min discernibility), on Adult
  (8 QIs, salary-class sensitive, the shared ARX hierarchies) replicated 33 x scale times
  (top: 990 copies, 29.9 M rows) in Parquet files of 11 copies each;
* ``kanon-mondrian`` — the same data and k with strict Mondrian (``method="mondrian"``);
* ``km-anonymity`` — k^m-anonymity, k = 10, m = 2, the library's default algorithm (AA) with a
  balanced fan-out-5 item hierarchy, on BMS-WebView-1 replicated 3 x scale times (top: 90
  copies, 5.4 M transactions), one copy per Parquet file.

Each job runs the estimator the way ``ppdm anonymize`` / ``ppdm km-anonymize`` do
(``fit_release`` on the lazily read files) and writes the release into the temporary folder
with its default read-back check. The replicas are exact copies (as ``_adult.write_copies``), so
the number of distinct QI tuples / itemsets does not grow with the scale: only the distributed
passes (frequency set or count tree, publish, shuffle and write, check) see more rows.

Fingerprint: the decision (lattice node / partition count / k^m cut), the information loss (DM
and GCP / NCP) and the sha256 of every written part file. The release key is fixed, so the
files are byte-identical exactly when the released rows are (the keyed order depends on the key
and the global row number only), which implies equal multisets of released rows.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

K = 10
M = 2
ADULT_COPIES = 33  # per scale unit: 33 x 30,162 = 995,346 rows
ADULT_COPIES_PER_FILE = 11
BMS_COPIES = 3  # per scale unit: 3 x 59,602 = 178,806 transactions
FAN_OUT = 5
RELEASE_KEY = 20240611  # fixed: the same released rows give the same bytes


# ----------------------------------------------------------------------------- k-anonymity
def _adult():
    from ppdm_dask.data.uci import ADULT_QI, load_adult

    df, h = load_adult(full=True)
    return df, list(ADULT_QI), {a: h[a] for a in ADULT_QI}


def adult_rows(scale: int) -> int:
    return ADULT_COPIES * scale * 30_162


def prepare_adult(scale: int, tmp: Path) -> dict:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _adult import write_copies

    df, qi, h = _adult()
    reps = ADULT_COPIES * scale
    folder = tmp / "adult.parquet"
    n = write_copies(df, reps, reps // ADULT_COPIES_PER_FILE, folder)
    return {"folder": str(folder), "qi": qi, "hierarchies": h, "rows": n, "tmp": tmp}


def _kanon_job(inputs: dict, client, method: str) -> dict:
    import dask.dataframe as dd
    from bench_scale import fingerprint, spilled_bytes

    from ppdm_dask import Key
    from ppdm_dask.anonymity import KAnonymizer

    out = inputs["tmp"] / f"release-{method}-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    ddf = dd.read_parquet(inputs["folder"], dtype_backend="pyarrow")
    est = KAnonymizer(
        inputs["qi"], k=K, sensitive="salary-class", hierarchies=inputs["hierarchies"], method=method, key=Key(RELEASE_KEY)
    )
    release = est.fit_release(ddf, client=client)
    res = est.result_
    t_fit = time.perf_counter() - t0
    manifest = release.write(str(out), client=client)  # default: read back and recount k before the commit
    t_write = time.perf_counter() - t0 - t_fit
    spilled = spilled_bytes(client)
    shutil.rmtree(out, ignore_errors=True)
    s = res.summary()
    parts = manifest["partitions"]
    decision = sorted(res.node.items()) if res.node else s.get("n_partitions")
    fp = fingerprint(
        str(decision), str(res.dm), f"{res.gcp:.12f}", str(res.n_suppressed), str(s["n_classes"]), *[p["sha256"] for p in parts]
    )
    what = (
        f"node {list(res.node.values())}, {s['nodes_evaluated']}/{s['lattice_nodes']} nodes evaluated"
        if res.node
        else f"{s['n_partitions']:,} Mondrian partitions"
    )
    note = (
        f"{res.n_records:,} rows, {s['n_distinct_tuples']:,} distinct QI tuples; {what}; DM {res.dm:,}, GCP {res.gcp:.4f}, "
        f"{s['n_classes']:,} classes; fit {t_fit:.1f} s (driver decision {res.seconds:.1f} s, frequency-set pass "
        f"{t_fit - res.seconds:.1f} s), write+check {t_write:.1f} s ({len(parts)} files, "
        f"{sum(p['bytes'] for p in parts) / 2**20:,.0f} MiB); spilled during the job {spilled / 2**20:,.0f} MiB"
    )
    plans = (
        "frequency set by a groupby tree reduction, publish by map_partitions, input re-read per pass; "
        f"release: {_shuffle_plan(manifest)}"
    )
    return {"fingerprint": fp, "plans": plans, "note": note}


def _shuffle_plan(manifest: dict) -> str:
    order = manifest.get("release", {}).get("row_order", {})
    return f"{order.get('shuffle', '?')} keyed shuffle ({order.get('shuffle_reason', 'no reason recorded')})"


def lattice_job(inputs: dict, client) -> dict:
    return _kanon_job(inputs, client, "lattice")


def mondrian_job(inputs: dict, client) -> dict:
    return _kanon_job(inputs, client, "mondrian")


# ----------------------------------------------------------------------------- k^m-anonymity
def _bms_path() -> Path:
    from _sketch_data import shared_data_dir

    return next((shared_data_dir() / "fimi").glob("BMS-WebView-1*"))


def prepare_bms(scale: int, tmp: Path) -> dict:
    import sys

    import dask
    import scipy.sparse as sp

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ppdm_dask.data.transactions import TransactionArray

    with dask.config.set(scheduler="threads"):  # untimed, on the driver (no cluster is up)
        one = TransactionArray.from_fimi(str(_bms_path()))
        mat = one.compute()
        reps = BMS_COPIES * scale
        big = sp.csr_array(sp.vstack([mat] * reps, format="csr"))
        tx = TransactionArray.from_scipy(big, vocabulary=one.vocabulary, npartitions=reps)  # one copy per file
        folder = tmp / "bms.parquet"
        tx.to_parquet(str(folder))
        # compile (or load from numba's disk cache) the count / DA kernels once, untimed, so that
        # neither memory setting pays the JIT compilation
        from ppdm_dask.anonymity import Hierarchy
        from ppdm_dask.anonymity.km import km_anonymize

        km_anonymize(one, Hierarchy.balanced(one.n_items, FAN_OUT, labels=one.vocabulary.labels), K, M)
    return {"folder": str(folder), "rows": int(big.shape[0]), "nnz": int(big.nnz), "tmp": tmp}


def km_job(inputs: dict, client) -> dict:
    from bench_scale import fingerprint, spilled_bytes

    from ppdm_dask import Key, read
    from ppdm_dask.anonymity import KmAnonymizer

    out = inputs["tmp"] / f"release-km-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    tx = read(inputs["folder"])  # as ppdm km-anonymize: not persisted, every pass reads the files
    est = KmAnonymizer(k=K, m=M, fan_out=FAN_OUT, key=Key(RELEASE_KEY))  # default method: AA
    release = est.fit_release(tx, client=client)
    res = est.result_
    t_fit = time.perf_counter() - t0
    manifest = release.write(str(out), client=client)  # default: read back and recount k^m before the commit
    t_write = time.perf_counter() - t0 - t_fit
    spilled = spilled_bytes(client)
    shutil.rmtree(out, ignore_errors=True)
    parts = manifest["partitions"]
    fp = fingerprint(
        res.method, "|".join(res.cut), f"{res.ncp:.12f}", str(res.n_generalized_items), *[p["sha256"] for p in parts]
    )
    count_s = sum(r["count_seconds"] for r in res.rounds)
    da_s = sum(r["da_seconds"] for r in res.rounds)
    rounds = ", ".join(
        f"round {r['round']}: {r['itemsets']:,} itemsets count {r['count_seconds']:.1f} s DA {r['da_seconds']:.2f} s"
        for r in res.rounds
    )
    note = (
        f"{inputs['rows']:,} transactions; {res.method}: cut {len(res.cut)} nodes, {res.n_generalized_items} items generalised, "
        f"NCP {res.ncp:.4f}; fit {t_fit:.1f} s (count-tree passes {count_s:.1f} s, driver DA {da_s:.2f} s; {rounds}), "
        f"write+check {t_write:.1f} s ({len(parts)} files); spilled during the job {spilled / 2**20:,.0f} MiB"
    )
    plans = f"count trees by tree reduction, recode per block, input re-read per pass; release: {_shuffle_plan(manifest)}"
    return {"fingerprint": fp, "plans": plans, "note": note}


def _families():
    from bench_scale import Family

    return {
        "kanon-lattice": Family(
            lambda s: f"lattice k={K}, Adult x{ADULT_COPIES * s} ({adult_rows(s):,} rows)", prepare_adult, lattice_job
        ),
        "kanon-mondrian": Family(
            lambda s: f"Mondrian k={K}, Adult x{ADULT_COPIES * s} ({adult_rows(s):,} rows)", prepare_adult, mondrian_job
        ),
        "km-anonymity": Family(
            lambda s: f"k^m AA k={K} m={M}, BMS-WebView-1 x{BMS_COPIES * s} ({BMS_COPIES * s * 59_602:,} tx)", prepare_bms, km_job
        ),
    }


FAMILIES = _families()

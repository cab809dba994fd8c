"""k-anonymity, l-diversity, k^m-anonymity and access control (issue 7).

* Adult (30,162 records, 8 QIs = all columns but salary-class, hierarchies of shared/data/adult):
  lattice (optimal full-domain, min DM) and greedy Datafly for k in {2, 5, 10, 25, 50, 100},
  suppression 0% / 5%, without and with l = 2 on salary-class; every release verified by the
  independent checker, and the lattice result compared between 1 and 8 partitions.
* Mondrian (ours, weighted on the frequency set) against anonypy's Mondrian in the same run
  (anchor measured earlier on this machine: k = 5 in 27.9 s, DM 312,784; k = 100 in 2.3 s,
  DM 4,530,216); the clustering l-diverse partition.
* k^m-anonymity on BMS-WebView-1 with a balanced fan-out-5 item hierarchy, k in {5, 10, 50},
  m in {2, 3}: DA vs AA time and NCP, verified.
* Access control: a 10-permission, 3-role workload on Adult; the imprecision heuristic vs Mondrian.
* Scale: Adult replicated 100 times (3,016,200 rows, Parquet, 25 files), lattice k = 10 on a
  2-worker LocalCluster, end to end (frequency set, search, publish + write, independent check),
  peak worker memory.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
KS = (2, 5, 10, 25, 50, 100)


def _adult():
    from ppdm_dask.data.uci import ADULT_QI, load_adult

    df, h = load_adult(full=True)
    return df, list(ADULT_QI), {a: h[a] for a in ADULT_QI}


def _row(name, res, secs, anchor="-", anchor_s=None, extra=""):
    s = res.summary()
    return {
        "name": name,
        "ours_s": secs,
        "anchor": anchor,
        "anchor_s": anchor_s,
        "note": f"DM {s['discernibility']:,}, GCP {s['gcp']:.4f}, classes {s['n_classes']:,}, suppressed {s['n_suppressed']:,}{extra}",
        "extra": {k: v for k, v in s.items() if k not in ("ncp",)},
    }


def _full_domain_rows(quick: bool) -> list[dict]:
    import dask.dataframe as dd

    from ppdm_dask.anonymity import anonymize

    df, qi, h = _adult()
    d8 = dd.from_pandas(df, npartitions=8)
    rows = []
    for k in KS[:2] if quick else KS:
        for supp in (0.0, 0.05):
            for l in (None, 2):
                tag = f"k={k} supp={supp:.0%}" + (" l=2" if l else "")
                t0 = time.perf_counter()
                lat = anonymize(df, qi, k=k, l=l, sensitive="salary-class", hierarchies=h, max_suppression=supp)
                t_lat = time.perf_counter() - t0
                v = lat.verify()
                lat8 = anonymize(d8, qi, k=k, l=l, sensitive="salary-class", hierarchies=h, max_suppression=supp)
                same = (lat8.node, lat8.dm, lat8.n_suppressed) == (lat.node, lat.dm, lat.n_suppressed)
                t0 = time.perf_counter()
                gre = anonymize(df, qi, k=k, l=l, sensitive="salary-class", hierarchies=h, max_suppression=supp, method="datafly")
                t_gre = time.perf_counter() - t0
                vg = gre.verify()
                print(
                    f"  {tag}: lattice DM {lat.dm:,} node {list(lat.node.values())} {t_lat:.2f} s ({lat.search['nodes_evaluated']}/"
                    f"{lat.search['lattice_nodes']} nodes) verified {v.ok} 1==8 parts {same}; datafly DM {gre.dm:,} {t_gre:.2f} s",
                    flush=True,
                )
                rows.append(
                    _row(
                        f"lattice {tag}",
                        lat,
                        t_lat,
                        "datafly (greedy)",
                        t_gre,
                        f"; node {list(lat.node.values())}; {lat.search['nodes_evaluated']}/{lat.search['lattice_nodes']} nodes; "
                        f"verified {v.ok}; 1 vs 8 partitions identical {same}; datafly DM {gre.dm:,} (x{gre.dm / lat.dm:.2f}), "
                        f"GCP {gre.gcp:.4f}, verified {vg.ok}",
                    )
                )
    return rows


def _anonypy(df: pd.DataFrame, qi: list[str], k: int) -> tuple[float, int]:
    """anonypy's Mondrian (k-anonymity): time and DM of its partitions."""
    from anonypy import mondrian

    d = df.copy()
    for a in qi:
        if a != "age":
            d[a] = d[a].astype("category")
    t0 = time.perf_counter()
    m = mondrian.Mondrian(d, qi, "salary-class")
    parts = m.partition(k)
    secs = time.perf_counter() - t0
    return secs, int(sum(len(p) ** 2 for p in parts))


def _partition_rows(quick: bool) -> list[dict]:
    from ppdm_dask.anonymity import anonymize

    df, qi, h = _adult()
    rows = []
    anchors = {5: (27.9, 312_784), 100: (2.3, 4_530_216)}
    for k in (5, 100) if quick else KS:
        t0 = time.perf_counter()
        r = anonymize(df, qi, k=k, sensitive="salary-class", hierarchies=h, method="mondrian")
        secs = time.perf_counter() - t0
        ok = r.verify().ok
        extra = f"; verified {ok}"
        anchor, anchor_s = "-", None
        if k in anchors:
            try:
                a_s, a_dm = _anonypy(df, qi, k)
                anchor, anchor_s = f"anonypy (DM {a_dm:,})", a_s
                extra += f"; anonypy DM {a_dm:,} in {a_s:.1f} s (earlier anchor {anchors[k][0]} s, DM {anchors[k][1]:,})"
            except ImportError:
                extra += "; anonypy not installed (pip install '.[bench]')"
        print(f"  mondrian k={k}: DM {r.dm:,} {secs:.2f} s{extra}", flush=True)
        rows.append(_row(f"mondrian k={k}", r, secs, anchor, anchor_s, extra))
        t0 = time.perf_counter()
        c = anonymize(df, qi, k=k, l=2, sensitive="salary-class", hierarchies=h, method="cluster")
        csecs = time.perf_counter() - t0
        cv = c.verify().ok
        t0 = time.perf_counter()
        m2 = anonymize(df, qi, k=k, l=2, sensitive="salary-class", hierarchies=h, method="mondrian")
        msecs = time.perf_counter() - t0
        print(
            f"  cluster k={k} l=2: DM {c.dm:,} {csecs:.2f} s verified {cv}; mondrian l=2 DM {m2.dm:,} {msecs:.2f} s", flush=True
        )
        rows.append(
            _row(
                f"cluster l-diverse k={k} l=2",
                c,
                csecs,
                "mondrian k, l=2",
                msecs,
                f"; verified {cv}; {c.search['n_clusters']:,} clusters, {c.search['n_repaired_merges']:,} Repair-L merges; "
                f"mondrian l=2 DM {m2.dm:,}, GCP {m2.gcp:.4f}",
            )
        )
    return rows


WORKLOAD = [
    {"role": "hr", "name": "graduates 25-34", "where": {"age": [25, 34], "education": ["Bachelors", "Masters"]}},
    {"role": "hr", "name": "female managers", "where": {"sex": "Female", "occupation": "Exec-managerial"}},
    {"role": "hr", "name": "federal 40s", "where": {"workclass": "Federal-gov", "age": [40, 49]}},
    {"role": "census", "name": "born in Mexico", "where": {"native-country": "Mexico"}},
    {"role": "census", "name": "Amer-Indian 30-50", "where": {"race": "Amer-Indian-Eskimo", "age": [30, 50]}},
    {"role": "census", "name": "widowed 60+", "where": {"marital-status": "Widowed", "age": [60, 90]}},
    {"role": "census", "name": "teenagers", "where": {"age": [17, 19]}},
    {"role": "marketing", "name": "doctorates", "where": {"education": "Doctorate"}},
    {"role": "marketing", "name": "tech support 25-40", "where": {"occupation": "Tech-support", "age": [25, 40]}},
    {
        "role": "marketing",
        "name": "divorced women 40s",
        "where": {"sex": "Female", "marital-status": "Divorced", "age": [40, 49]},
    },
]


def _access_rows(quick: bool) -> list[dict]:
    from ppdm_dask.anonymity.access_control import QISchema, parse_query, query_count
    from ppdm_dask.anonymity.anonymize import anonymize_for_permissions
    from ppdm_dask.anonymity.frequency import frequency_set

    df, qi, _ = _adult()
    # bounds: 25% of each query's true answer size
    fs = frequency_set(df, qi)
    tuples, w, _, _ = fs.tuples()
    X = fs.numeric_matrix(tuples)
    schema = QISchema(
        tuple(qi),
        tuple(not d.numeric for d in fs.domains),
        {d.name: tuple(str(v) for v in d.values) for d in fs.domains if not d.numeric},
    )
    perms = [{**p, "bound": 0.25 * query_count(X, w, parse_query(p["where"], schema), schema=schema)} for p in WORKLOAD]
    rows = []
    for k, l in [(10, None)] if quick else [(5, None), (10, None), (25, None), (5, 2), (10, 2)]:
        t0 = time.perf_counter()
        r = anonymize_for_permissions(df, qi, perms, k=k, l=l, sensitive="salary-class")
        secs = time.perf_counter() - t0
        s = r.release.summary()
        roles = "; ".join(
            f"{role} {rs.n_satisfied}/{rs.n_permissions} (Mondrian {r.baseline.roles[role].n_satisfied})"
            for role, rs in r.report.roles.items()
        )
        print(
            f"  access control k={k} l={l}: met {s['permissions_satisfied']}/10 (Mondrian {s['mondrian_permissions_satisfied']}), "
            f"imprecision {s['total_imprecision']:,} (Mondrian {s['mondrian_total_imprecision']:,}) {secs:.2f} s",
            flush=True,
        )
        rows.append(
            {
                "name": f"access control k={k}" + (f" l={l}" if l else ""),
                "ours_s": float(s["permissions_satisfied"]),
                "anchor": "plain Mondrian",
                "anchor_s": float(s["mondrian_permissions_satisfied"]) or None,
                "unit": "permissions met",
                "note": f"total imprecision {s['total_imprecision']:,} vs Mondrian {s['mondrian_total_imprecision']:,}; {roles}; "
                f"DM {s['discernibility']:,}; {secs:.2f} s; verified {r.release.verify().ok}",
                "extra": {
                    "report": r.report.to_pandas().to_dict(orient="records"),
                    "mondrian": r.baseline.to_pandas().to_dict(orient="records"),
                },
            }
        )
    return rows


def _km_rows(quick: bool) -> list[dict]:
    from _sketch_data import shared_data_dir

    from ppdm_dask.anonymity import Hierarchy
    from ppdm_dask.anonymity.km import is_km_anonymous, km_anonymize
    from ppdm_dask.data.transactions import TransactionArray

    path = next((shared_data_dir() / "fimi").glob("BMS-WebView-1*"))
    tx = TransactionArray.from_fimi(str(path)).persist()
    hier = Hierarchy.balanced(tx.n_items, 5, labels=tx.vocabulary.labels)  # vocabulary labels are sorted
    rows = []
    for m in (2,) if quick else (2, 3):
        for k in (5, 50) if quick else (5, 10, 50):
            out = {}
            for method in ("DA", "AA"):
                t0 = time.perf_counter()
                r = km_anonymize(tx, hier, k, m, method=method, progress=False)
                secs = time.perf_counter() - t0
                ver = is_km_anonymous(r.transactions, k, m, progress=False)
                out[method] = (secs, r, ver)
            (da_s, da, dv), (aa_s, aa, av) = out["DA"], out["AA"]
            print(
                f"  k^m k={k} m={m}: DA {da_s:.2f} s NCP {da.ncp:.4f} ok {dv}; AA {aa_s:.2f} s NCP {aa.ncp:.4f} ok {av}",
                flush=True,
            )
            rows.append(
                {
                    "name": f"k^m BMS-WebView-1 k={k} m={m}: AA",
                    "ours_s": aa_s,
                    "anchor": "DA",
                    "anchor_s": da_s,
                    "note": f"NCP AA {aa.ncp:.4f} vs DA {da.ncp:.4f}; generalised items AA {aa.n_generalized_items} / DA "
                    f"{da.n_generalized_items}; verified AA {av} DA {dv}",
                    "extra": {"AA": aa.summary(), "DA": da.summary()},
                }
            )
    return rows


def _scale_rows(quick: bool) -> list[dict]:
    import dask.dataframe as dd
    from _adult import write_copies
    from bench_mining import _WorkerRSS

    from ppdm_dask.anonymity import KAnonymizer, anonymize
    from ppdm_dask.cluster import get_client

    df, qi, h = _adult()
    reps, files = (10, 5) if quick else (100, 25)
    tmp = Path(tempfile.mkdtemp(prefix="ppdm-adult-x"))
    rows = []
    try:
        src = tmp / "adult.parquet"
        n = write_copies(df, reps, files, src)
        with get_client(n_workers=2, threads_per_worker=1) as client:
            client.wait_for_workers(2)
            # k = 10 as the issue asks (every Adult class x100 is >= 10, so nothing needs generalising),
            # and k = 10 * reps, the same problem as k = 10 on Adult: DM must be reps^2 x Adult's
            for k in (10, 10 * reps):
                with _WorkerRSS(client) as rss:
                    t0 = time.perf_counter()
                    ddf = dd.read_parquet(str(src), dtype_backend="pyarrow")
                    est = KAnonymizer(qi, k=k, sensitive="salary-class", hierarchies=h)
                    release = est.fit_release(ddf, client=client)
                    res = est.result_
                    t_search = time.perf_counter() - t0
                    # the release's own read-back check is the "+check" step below
                    release.write(str(tmp / f"release-{k}"), progress=False, client=client, check=False)
                    t_write = time.perf_counter() - t0
                    v = res.verify(client=client)
                    secs = time.perf_counter() - t0
                ref = anonymize(df, qi, k=k // reps, sensitive="salary-class", hierarchies=h) if k > 10 else None
                exact = (
                    f"; DM = {reps}^2 x Adult k={k // reps}: {res.dm == ref.dm * reps * reps} (same node {res.node == ref.node})"
                    if ref
                    else ""
                )
                print(
                    f"  scale {n:,} rows k={k}: search {t_search:.1f} s, +write {t_write:.1f} s, +check {secs:.1f} s, DM {res.dm:,}, "
                    f"node {list(res.node.values())}, verified {v.ok}, peak worker RSS {rss.max_worker / 2**20:.0f} MB{exact}",
                    flush=True,
                )
                rows.append(
                    {
                        "name": f"lattice k={k}, Adult x{reps} ({n:,} rows), LocalCluster(2)",
                        "ours_s": secs,
                        "anchor": "-",
                        "anchor_s": None,
                        "note": f"frequency set + search {t_search:.1f} s, + publish/write {t_write - t_search:.1f} s, + independent "
                        f"check {secs - t_write:.1f} s; node {list(res.node.values())}, DM {res.dm:,}{exact}; verified {v.ok}; "
                        f"peak worker RSS {rss.max_worker / 2**20:.0f} MB",
                    }
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def run(quick: bool = False) -> list[dict]:
    import sys

    sys.path.insert(0, str(HERE))
    rows = _full_domain_rows(quick)
    rows += _partition_rows(quick)
    rows += _access_rows(quick)
    rows += _km_rows(quick)
    rows += _scale_rows(quick)
    return rows

"""The cost of a safe release: keyed row order + hashed files + read-back recount, against a
plain Parquet write of the same data, on a 2-process LocalCluster.

* transactions: the EMASK release of T10.I4.D1M.N1K (p = 0.4, q = 0.98) — ``release.write``
  against ``to_parquet`` of the very same distorted TransactionArray (input order, no hashes, no
  recount);
* sketches: the δ-anonymous sketches (δ = 2) of T10.I4.D200K.N1K — ``release.write`` against
  ``SketchArray.to_parquet``;
* relational: the k = 10 Mondrian release of Adult ×20 (603,240 rows; needs ../shared/data) —
  ``release.write`` against dask's ``to_parquet`` of the released table;
* ``ppdm_dask.verify`` of each written release (every SHA-256 + the recount) against reading its
  plain copy back once.

The ratios are what to compare: the overhead of the protocol over a plain write.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from _timing import best_of


def _shared_adult() -> Path | None:
    from _adult import adult_path

    path = adult_path()
    return path.parent if path is not None else None


def _fresh(path: str) -> str:
    shutil.rmtree(path, ignore_errors=True)
    return path


def run(quick: bool = False) -> list[dict]:
    import dask
    import pandas as pd
    from distributed import Client, LocalCluster

    from ppdm_dask import Key, read, verify
    from ppdm_dask.cluster import worker_environment
    from ppdm_dask.data.quest import quest
    from ppdm_dask.emask import Distorter
    from ppdm_dask.sketch import DeltaAnonymizer

    tmp = tempfile.mkdtemp(prefix="ppdm-bench-release-")
    rows: list[dict] = []
    key = Key(7)
    spec = "T10.I4.D100K.N1K" if quick else "T10.I4.D1M.N1K"
    sk_spec = "T10.I4.D20K.N1K" if quick else "T10.I4.D200K.N1K"
    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment()}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        src = os.path.join(tmp, "quest")
        quest(spec, key=Key(1)).to_parquet(src, progress=False)
        tx = read(src).persist()

        rel = Distorter(0.4, 0.98, key=key).fit(tx, client=client).transform(tx)
        t_rel, m = best_of(lambda: rel.write(_fresh(os.path.join(tmp, "d_rel")), client=client), repeat=3)
        t_plain, _ = best_of(lambda: rel.data.to_parquet(_fresh(os.path.join(tmp, "d_plain"))), repeat=3)
        rows.append(
            {
                "name": f"EMASK release write, {spec}",
                "ours_s": t_rel,
                "anchor": "plain to_parquet",
                "anchor_s": t_plain,
                "note": f"{len(m['partitions'])} files, verdict ok={m['guarantees']['ok']}",
            }
        )
        t_ver, v = best_of(lambda: verify(os.path.join(tmp, "d_rel")), repeat=3)
        t_read, _ = best_of(lambda: read(os.path.join(tmp, "d_plain")).describe(), repeat=3)
        rows.append(
            {
                "name": f"verify EMASK release, {spec}",
                "ours_s": t_ver,
                "anchor": "read + describe",
                "anchor_s": t_read,
                "note": f"{len(v)} checks, ok={v.ok}",
            }
        )

        sk_src = quest(sk_spec, key=Key(2))
        srel = DeltaAnonymizer(delta=2.0, key=key).fit_transform(sk_src)
        sdata = srel.data.persist()
        srel.data = sdata
        t_srel, sm = best_of(lambda: srel.write(_fresh(os.path.join(tmp, "s_rel")), client=client), repeat=3)
        t_splain, _ = best_of(lambda: sdata.to_parquet(_fresh(os.path.join(tmp, "s_plain"))), repeat=3)
        rows.append(
            {
                "name": f"sketch (delta=2) release write, {sk_spec}",
                "ours_s": t_srel,
                "anchor": "SketchArray.to_parquet",
                "anchor_s": t_splain,
                "note": f"{sm['n_records']:,} records, {sm['n_suppressed']:,} suppressed",
            }
        )
        from ppdm_dask.sketch import read_sketches

        t_sver, sv = best_of(lambda: verify(os.path.join(tmp, "s_rel")), repeat=3)
        t_sread, _ = best_of(lambda: read_sketches(os.path.join(tmp, "s_plain")).compute(), repeat=3)
        rows.append(
            {
                "name": f"verify sketch release, {sk_spec}",
                "ours_s": t_sver,
                "anchor": "read_sketches + compute",
                "anchor_s": t_sread,
                "note": f"{len(sv)} checks, ok={sv.ok}",
            }
        )

        adult_dir = _shared_adult()
        if adult_dir is None:
            rows.append(
                {
                    "name": "relational release (Adult x20)",
                    "ours_s": None,
                    "anchor": "-",
                    "anchor_s": None,
                    "note": "not run: ../shared/data/adult not found (set PPDM_SHARED_DATA)",
                }
            )
        else:
            from ppdm_dask.anonymity import KAnonymizer
            from ppdm_dask.data.uci import ADULT_QI

            times = 2 if quick else 20
            adult = pd.read_csv(adult_dir / "adult.csv", sep=";", dtype=str)
            big = os.path.join(tmp, "adult_big.csv")
            pd.concat([adult] * times, ignore_index=True).to_csv(big, index=False)
            from ppdm_dask import read_table

            df = read_table(big, dtype={"age": "int"})
            arel = KAnonymizer(list(ADULT_QI), k=10, sensitive="salary-class", method="mondrian", key=key).fit(df).release()
            t_arel, am = best_of(lambda: arel.write(_fresh(os.path.join(tmp, "a_rel")), client=client), repeat=3)
            t_aplain, _ = best_of(lambda: arel.data.to_parquet(_fresh(os.path.join(tmp, "a_plain"))), repeat=3)
            rows.append(
                {
                    "name": f"Mondrian k=10 release write, Adult x{times}",
                    "ours_s": t_arel,
                    "anchor": "dask to_parquet",
                    "anchor_s": t_aplain,
                    "note": f"{am['n_records']:,} rows, {len(am['partitions'])} files",
                }
            )
            t_aver, av = best_of(lambda: verify(os.path.join(tmp, "a_rel")), repeat=3)
            t_aread, _ = best_of(lambda: read_table(os.path.join(tmp, "a_plain")).compute(), repeat=3)
            rows.append(
                {
                    "name": f"verify Mondrian release, Adult x{times}",
                    "ours_s": t_aver,
                    "anchor": "read_table + compute",
                    "anchor_s": t_aread,
                    "note": f"{len(av)} checks, ok={av.ok}",
                }
            )
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows

"""What the privacy and utility report costs, against the job that made the release.

* scale: Adult ×100 (3,016,200 rows, 25 Parquet files; needs ../shared/data), lattice k = 10 on a
  2-worker LocalCluster. Anchor: the anonymization job (fit + write, with its read-back check).
  Ours: the report the job writes beside the release (risk of release and original, utility
  against the original; the verdict of the write-time check) — the target is ≤ 50 % of the job;
  and ``ppdm report`` on the written release (re-verifies every file and recounts first).
* gallery: one release of real data per family (Adult, BMS-WebView-1 k^m, T10I4D100K with EMASK,
  20 Newsgroups sketches, Pima condensed, led7 generated), its report against the original, and
  the page rendered by headless Chromium into ``benchmarks/results/report/<family>.png`` (with
  the HTML page beside it). Anchor: the release itself (fit + write).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
GALLERY = HERE / "results" / "report"


def _shared() -> Path | None:
    env = os.environ.get("PPDM_SHARED_DATA")
    for c in ([Path(env)] if env else []) + [HERE.parent.parent / "shared" / "data"]:
        if (c / "fimi").is_dir():
            return c
    return None


def _render(html: Path, png: Path) -> bool:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        return False
    with tempfile.TemporaryDirectory() as prof:
        subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={prof}",
                "--window-size=1100,12000",
                f"--screenshot={png}",
                html.as_uri(),
            ],
            capture_output=True,
            timeout=180,
        )
    if not png.exists():
        return False
    import matplotlib.image as mpimg

    img = mpimg.imread(str(png))
    ink = np.flatnonzero((img[..., :3] < 0.92).any(axis=(1, 2)))  # cut the blank window below the page
    mpimg.imsave(str(png), img[: int(ink[-1]) + 40 if ink.size else img.shape[0]])
    return True


def _scale_rows(shared: Path, quick: bool) -> list[dict]:
    import dask.dataframe as dd
    from _adult import write_copies

    from ppdm_dask import open_release
    from ppdm_dask.anonymity import KAnonymizer
    from ppdm_dask.cluster import get_client
    from ppdm_dask.data.uci import ADULT_QI, load_adult

    df, h = load_adult(full=True)
    qi = list(ADULT_QI)
    reps, files = (10, 5) if quick else (100, 25)
    tmp = Path(tempfile.mkdtemp(prefix="ppdm-report-x"))
    try:
        src = tmp / "adult.parquet"
        n = write_copies(df, reps, files, src)
        with get_client(n_workers=2, threads_per_worker=1) as client:
            client.wait_for_workers(2)
            t0 = time.perf_counter()
            ddf = dd.read_parquet(str(src), dtype_backend="pyarrow")
            release = KAnonymizer(qi, k=10, sensitive="salary-class", hierarchies={a: h[a] for a in qi}).fit_release(
                ddf, client=client
            )
            release.write(str(tmp / "release"), client=client)
            t_job = time.perf_counter() - t0
            t0 = time.perf_counter()
            doc = open_release(str(tmp / "release")).adopt(release).report(ddf, verify=False, client=client)
            t_report = time.perf_counter() - t0
            t0 = time.perf_counter()
            open_release(str(tmp / "release")).adopt(release).report(ddf, audience="external", client=client)
            t_full = time.perf_counter() - t0
        n_fig = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] in ("value", "plot"))
        print(
            f"  Adult x{reps} ({n:,} rows): job {t_job:.1f} s, report {t_report:.1f} s ({t_report / t_job:.0%}), "
            f"report with re-verification {t_full:.1f} s",
            flush=True,
        )
        return [
            {
                "name": f"report of lattice k=10, Adult x{reps} ({n:,} rows)",
                "ours_s": t_report,
                "anchor": "anonymization job",
                "anchor_s": t_job,
                "note": f"the report a job writes: {n_fig} figures and plots, original's risk and utility; "
                f"target <= 0.5 x the job; verified {doc['verdict']['ok']}",
            },
            {
                "name": f"ppdm report (re-verifies), Adult x{reps}",
                "ours_s": t_full,
                "anchor": "anonymization job",
                "anchor_s": t_job,
                "note": "SHA-256 of every file + recount + figures (external audience)",
            },
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _family_releases(shared: Path, quick: bool):
    """``(family, data name, make() -> (release, original))`` for the gallery."""
    import scipy.sparse as sp

    from ppdm_dask import Key, read
    from ppdm_dask.anonymity import KAnonymizer, KmAnonymizer
    from ppdm_dask.condensation import Condenser, privacy_levels
    from ppdm_dask.data.transactions import TransactionArray
    from ppdm_dask.data.uci import ADULT_QI, load_adult, load_uci
    from ppdm_dask.emask import Distorter, choose_parameters
    from ppdm_dask.krimp import KrimpGenerator
    from ppdm_dask.sketch import DeltaAnonymizer

    def adult():
        df, h = load_adult(full=True)
        import dask.dataframe as dd

        ddf = dd.from_pandas(df, npartitions=4)
        qi = list(ADULT_QI)
        return KAnonymizer(
            qi, k=10, sensitive="salary-class", method="mondrian", hierarchies={a: h[a] for a in qi}, key=Key(1)
        ).fit_release(ddf), ddf

    def bms():
        tx = read(str(shared / "fimi" / "BMS-WebView-1.dat"))
        return KmAnonymizer(None, k=10, m=2, fan_out=5, key=Key(2)).fit_release(tx), tx

    def t10():
        tx = read(str(shared / "fimi" / "T10I4D100K.dat"))
        s0 = tx.describe(progress=False)["mean_length"] / tx.n_items
        c = max(choose_parameters(s0, 0.01), key=lambda c: c.basic_privacy)  # the most private pair the floor allows
        return Distorter(c.p, c.q, key=Key(3)).fit_transform(tx), tx

    def news():
        z = np.load(shared / "text" / "20news_bydate_counts.npz")
        X = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        rows = np.sort(np.random.default_rng(0).choice(X.shape[0], 2000 if quick else 5000, replace=False))
        tx = TransactionArray.from_scipy(
            X[rows], npartitions=4, columns={"label": np.asarray(z["labels"])[rows], "record_id": rows.astype(np.int64)}
        )
        return DeltaAnonymizer(delta=20.0, m_max=32, key=Key(4), keep_record_ids=True).fit_transform(tx), tx

    def pima():
        X, y = load_uci("pima", shared / "uci")
        df = pd.DataFrame(X, columns=[f"a{j}" for j in range(X.shape[1])])
        df["class"] = y.astype(float)
        p = privacy_levels(len(df), 6, 10, key=5)
        return Condenser(key=Key(5)).fit(df, p).release(), df

    def led7():
        tx = read(str(shared / "lucs" / "led7.dat"))
        return KrimpGenerator(min_support=2, laplace=0.001, key=Key(6)).fit(tx).release(), tx

    return [
        ("relational", "Adult, Mondrian k=10", adult),
        ("km", "BMS-WebView-1, k=10 m=2", bms),
        ("emask", "T10I4D100K, most private p, q", t10),
        ("sketch", "20 Newsgroups, delta=20", news),
        ("condensation", "Pima, levels 6-10", pima),
        ("krimp", "led7, min-support 2", led7),
    ]


def _gallery_rows(shared: Path, quick: bool) -> list[dict]:
    from ppdm_dask import open_release

    GALLERY.mkdir(parents=True, exist_ok=True)
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="ppdm-gallery-"))
    try:
        for family, what, make in _family_releases(shared, quick):
            t0 = time.perf_counter()
            release, original = make()
            release.write(str(tmp / family))
            t_rel = time.perf_counter() - t0
            t0 = time.perf_counter()
            doc = (
                open_release(str(tmp / family))
                .adopt(release)
                .report(original, out=str(GALLERY / f"{family}.html"), overwrite=True)
            )
            t_rep = time.perf_counter() - t0
            rendered = _render(GALLERY / f"{family}.html", GALLERY / f"{family}.png")
            (GALLERY / f"{family}.json").unlink()  # the page and its picture are kept; the JSON is in the page
            n_val = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] == "value")
            n_fig = sum(1 for s in doc["sections"] for i in s["items"] if i["type"] == "plot")
            print(
                f"  {family}: release {t_rel:.1f} s, report {t_rep:.1f} s ({n_val} figures, {n_fig} plots), rendered {rendered}",
                flush=True,
            )
            rows.append(
                {
                    "name": f"report: {family} ({what})",
                    "ours_s": t_rep,
                    "anchor": "release (fit + write)",
                    "anchor_s": t_rel,
                    "note": f"{n_val} figures, {n_fig} plots; verified {doc['verdict']['ok']}; "
                    f"page {'rendered' if rendered else 'not rendered (no chromium)'}",
                }
            )
            json.dumps(doc)  # the document is plain JSON
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def run(quick: bool = False) -> list[dict]:
    shared = _shared()
    if shared is None:
        return [
            {
                "name": "report",
                "ours_s": None,
                "anchor": "-",
                "anchor_s": None,
                "note": "not run: ../shared/data not found (set PPDM_SHARED_DATA)",
            }
        ]
    return _gallery_rows(shared, quick) + _scale_rows(shared, quick)

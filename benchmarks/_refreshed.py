"""A refreshed extract released twice: a fresh anonymisation against the consistent release, on
the people sample and on Adult (used by ``bench_people.py``).

Each case writes the first extract's release into a ledger of its own, then the second extract
twice: a fresh Mondrian anonymisation (accepted with ``allow_composition``, then withdrawn: a
trial) and the consistent release. It reports the people the two extracts share, those the fresh
release leaves in an intersection class below k and the shared people in a class of one
sensitive value that was diverse in both (the ledger's figures: ``tests/anonymity`` checks them
against a brute force by name), the same after the consistent release, and what each costs.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _case(
    name: str,
    month1: pd.DataFrame,
    month2: pd.DataFrame,
    first_qi: list[str],
    second_qi: list[str],
    *,
    k: int,
    l: float | None,
    sensitive: str,
    identifier: str,
    hierarchies: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from ppdm_dask.anonymity import KAnonymizer
    from ppdm_dask.data.tables import from_pandas
    from ppdm_dask.ledger import Ledger
    from ppdm_dask.random import Key

    work = Path(tempfile.mkdtemp(prefix="bench-refreshed-"))
    ledger = Ledger(work / "ledger")
    columns = [c for c in month1.columns if c not in (identifier, sensitive)]

    def est(qi: list[str], key: int, **kw: Any) -> Any:
        return KAnonymizer(
            qi,
            k=k,
            l=l,
            identifiers=identifier,
            sensitive=sensitive,
            insensitive=[c for c in columns if c not in qi],
            method="mondrian",
            hierarchies={a: h for a, h in (hierarchies or {}).items() if a in qi} or None,
            key=Key(key),
            ledger=ledger,
            **kw,
        )

    est(first_qi, 1).fit_release(from_pandas(month1, npartitions=2)).write(str(work / "m1"))
    t0 = time.perf_counter()
    fresh = est(second_qi, 2).fit_release(from_pandas(month2, npartitions=2))
    mf = fresh.write(str(work / "fresh"), allow_composition=True)
    t_fresh = time.perf_counter() - t0
    ledger.forget(mf["release"]["id"], reason="a trial")
    t0 = time.perf_counter()
    e = est(second_qi, 3, consistent=True)
    consistent = e.fit_release(from_pandas(month2, npartitions=2))
    consistent.write(str(work / "consistent"))
    t_consistent = time.perf_counter() - t0
    ff, cf, info = fresh.composition.figures, consistent.composition.figures, e.consistent_
    note = (
        f"{info['shared_people']:,} people shared; fresh: {ff['shared_below_k']:,} shared people below k = {k} "
        f"({ff['shared_below_k'] / max(1, info['shared_people']):.1%}), {ff.get('people_disclosed', 0):,} disclosed, "
        f"{info['fresh']['suppressed']:,} records suppressed, GCP {info['fresh']['gcp']:.3f}, {t_fresh:.1f} s; "
        f"consistent: {cf['shared_below_k']:,} below k, {cf.get('people_disclosed', 0):,} disclosed, "
        f"{info['consistent']['suppressed']:,} suppressed ({info['shared_people_suppressed']:,} shared, "
        f"{info['new_records_suppressed']:,} new), GCP {info['consistent']['gcp']:.3f}, {t_consistent:.1f} s"
    )
    return {
        "name": f"{name}: shared people below k, consistent vs fresh",
        "ours_s": float(cf["shared_below_k"]),
        "anchor": "a fresh anonymisation",
        "anchor_s": float(ff["shared_below_k"]),
        "unit": "people",
        "note": note,
        "extra": {"fresh": ff, "consistent": cf, "method": info},
    }


def people_case() -> dict[str, Any]:
    """The people sample: rows 1-900 on (age, zip), then rows 101-1000 on (age, sex), k = 5."""
    from ppdm_dask.data.datasets import sample_path
    from ppdm_dask.data.tables import read_table

    people = read_table(str(sample_path("people")), dtype=["age=int"]).compute().reset_index(drop=True)
    return _case(
        "people (900 + 900 rows, 800 shared)",
        people.iloc[:900].reset_index(drop=True),
        people.iloc[100:].reset_index(drop=True),
        ["age", "zip"],
        ["age", "sex"],
        k=5,
        l=None,
        sensitive="diagnosis",
        identifier="name",
    )


def adult_case(shared: Path | None = None) -> dict[str, Any] | None:
    """Adult (30,162 records): two overlapping 90 % samples (a fixed seed), an id column as the
    identifier; k = 10, l = 2 on occupation; (age, sex, race, marital-status) then (age, sex,
    education, workclass). None without the shared data."""
    from _adult import adult_path

    path = adult_path(shared)
    if path is None:
        return None
    df = pd.read_csv(path, sep=";", dtype=str).assign(id=lambda f: np.arange(len(f)).astype(str))
    df["age"] = df["age"].astype(np.int64)
    rng = np.random.default_rng(20260101)
    n = len(df)
    a = np.sort(rng.choice(n, int(0.9 * n), replace=False))
    b = np.sort(rng.choice(n, int(0.9 * n), replace=False))
    return _case(
        f"Adult (2 x {len(a):,} of {n:,} records)",
        df.iloc[a].reset_index(drop=True),
        df.iloc[b].reset_index(drop=True),
        ["age", "sex", "race", "marital-status"],
        ["age", "sex", "education", "workclass"],
        k=10,
        l=2,
        sensitive="occupation",
        identifier="id",
    )

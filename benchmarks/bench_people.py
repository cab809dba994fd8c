"""The person is the unit: what composing by person costs, and what a refreshed extract costs.

``python benchmarks/run.py people [--quick]``, two parts:

* **composition at scale** — an EMASK release of 10 M baskets of 1 M people (baskets grouped
  from events: a ``person`` column), composed by person against 5 earlier releases of the same
  people (2 M baskets each) on a 2-worker LocalCluster with 1 GB per worker, one thread each.
  The anchor is the release job itself, written without a ledger (``ledger=None``): the same
  fit, distortion, keyed shuffle, write and recount. Ours is the same job recorded in the ledger:
  its people written per bucket with the write, the overlaps with the 5 earlier releases, the
  join person by person and the decision. The ratio ``(ours - anchor) / anchor`` is the
  composition's share (target <= 0.3); the workers' spill counter must stay 0.
* **a refreshed extract** — the people sample (rows 1-900 then 101-1000, k = 5) and Adult (two
  overlapping 90 % samples, k = 10, l = 2 on occupation, other quasi-identifiers in the second):
  the people shared, those a fresh anonymisation of the second extract leaves below k and the
  classes of one occupation it discloses, against the consistent release (0 and 0), and what each
  costs (records suppressed, GCP).

``--quick``: 1 M baskets of 100 k people against 2 earlier releases; the people sample only.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: baskets, people, earlier releases and their baskets (full, quick)
SCALE = {"full": (10_000_000, 1_000_000, 5, 2_000_000), "quick": (1_000_000, 100_000, 2, 200_000)}
N_ITEMS = 100
ROWS_PER_BLOCK = 500_000


def _block(seed: int, i: int, rows: int, n_people: int) -> tuple[Any, np.ndarray]:
    """Kernel: ``rows`` baskets of 1-8 of the N_ITEMS items (popular ones more often) and the
    pseudonym of each basket's person (uniform over ``n_people``)."""
    import scipy.sparse as sp

    rng = np.random.default_rng([seed, i])
    lengths = np.minimum(rng.geometric(0.35, rows), 8)
    items = np.minimum(rng.zipf(1.6, lengths.sum()) - 1, N_ITEMS - 1).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    m = sp.csr_array((np.ones(items.size, np.int32), items, indptr), shape=(rows, N_ITEMS))
    m.sum_duplicates()
    m.data[:] = 1
    m = sp.csr_array((m.data.astype(np.int32), m.indices.astype(np.int32), m.indptr.astype(np.int32)), shape=m.shape)
    person = rng.integers(0, n_people, rows).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # the same people in every extract
    return m, person


def _baskets(seed: int, n: int, n_people: int) -> Any:
    """A lazy TransactionArray of ``n`` baskets with a ``person`` column."""
    import operator

    import dask
    import dask.array as da

    from ppdm_dask import TransactionArray
    from ppdm_dask.data.vocabulary import Vocabulary
    from ppdm_dask.graph import blocks_from_tasks, unique_name

    rows = [min(ROWS_PER_BLOCK, n - s) for s in range(0, n, ROWS_PER_BLOCK)]
    parts = [dask.delayed(_block, pure=True)(seed, i, r, n_people) for i, r in enumerate(rows)]
    name = unique_name("bench-people", seed, n, n_people)
    blocks = blocks_from_tasks(name, [(operator.getitem, p.key, 0) for p in parts], rows, N_ITEMS, dependencies=parts)
    person = da.concatenate(
        [da.from_delayed(dask.delayed(operator.getitem)(p, 1), shape=(r,), dtype=np.uint64) for p, r in zip(parts, rows)]
    )
    return TransactionArray(
        blocks, Vocabulary.range(N_ITEMS), columns={"person": person}, metadata={"ingest": {"person": "user"}}
    )


def _write_input(folder: Path, seed: int, n: int, n_people: int, client: Any) -> str:
    url = str(folder / f"baskets-{seed}-{n}")
    if not Path(url).exists():
        _baskets(seed, n, n_people).to_parquet(url)  # on the default client (the cluster)
    return url


def _release(url: str, key: int, ledger: Any, out: str, client: Any) -> float:
    from ppdm_dask import read
    from ppdm_dask.emask import Distorter
    from ppdm_dask.random import Key

    t0 = time.perf_counter()
    tx = read(url)
    rel = Distorter(0.5, 0.97, key=Key(key), ledger=ledger, allow_weak=True).fit_transform(tx, client=client)
    rel.write(out, client=client, allow_composition=True, ledger=ledger)
    return time.perf_counter() - t0


def composition(quick: bool) -> list[dict]:
    from bench_mining import _WorkerRSS
    from bench_scale import _cluster, spilled_bytes

    from ppdm_dask.ledger import Ledger
    from ppdm_dask.ledger import compose as C

    n, n_people, n_earlier, n_each = SCALE["quick" if quick else "full"]
    work = Path(tempfile.mkdtemp(prefix="bench-people-"))
    cluster, client = _cluster("1GB")
    rows: list[dict] = []
    try:
        client.wait_for_workers(2)
        big = _write_input(work, 1, n, n_people, client)
        earlier = [_write_input(work, 10 + j, n_each, n_people, client) for j in range(n_earlier)]
        ledger = Ledger(work / "ledger")
        for j, url in enumerate(earlier):
            _release(url, 100 + j, ledger, str(work / f"earlier-{j}"), client)
        _release(big, 7, None, str(work / "warm-up"), client)  # compile and warm the cluster once
        finish = {"s": 0.0}
        original = C.Admission.finish

        def timed(self: Any, *a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return original(self, *a, **kw)
            finally:
                finish["s"] += time.perf_counter() - t

        C.Admission.finish = timed  # type: ignore[method-assign]
        try:
            with _WorkerRSS(client, interval=0.5) as rss:
                anchor = _release(big, 8, None, str(work / "alone"), client)
                spilled0 = spilled_bytes(client)
                ours = _release(big, 9, ledger, str(work / "composed"), client)
                spilled = spilled_bytes(client)
        finally:
            C.Admission.finish = original  # type: ignore[method-assign]
        shared = ledger.records()[-1].composition.get("people", {}).get("shared", {})
        note = (
            f"{n:,} baskets of {n_people:,} people against {n_earlier} earlier releases "
            f"(shared {min(shared.values()) if shared else 0:,}-{max(shared.values()) if shared else 0:,} people each); "
            f"composition {ours - anchor:.1f} s = {(ours - anchor) / anchor:.2f} of the release job (target <= 0.3), "
            f"join and decision {finish['s']:.1f} s; peak worker RSS {rss.max_worker / 2**20:,.0f} MiB; "
            f"spilled {spilled / 2**20:.0f} MiB (before the composed job {spilled0 / 2**20:.0f} MiB)"
        )
        print(f"[people] {note}")
        rows.append(
            {
                "name": f"EMASK release composed by person ({n / 1e6:g} M baskets, {n_earlier} earlier)",
                "ours_s": ours,
                "anchor": "the release job, no ledger",
                "anchor_s": anchor,
                "note": note,
            }
        )
    finally:
        client.close()
        cluster.close()
    return rows


def refreshed(quick: bool) -> list[dict]:
    from _refreshed import adult_case, people_case

    rows = []
    for case in [people_case()] + ([] if quick else [adult_case()]):
        if case is None:
            continue
        print(f"[people] {case['name']}: {case['note']}")
        rows.append(case)
    return rows


def run(quick: bool = False) -> list[dict]:
    return refreshed(quick) + composition(quick)


if __name__ == "__main__":
    from run import format_table

    print(format_table(run("--quick" in sys.argv)))

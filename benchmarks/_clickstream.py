"""A second click-stream data set for the mining benchmarks, generated (no download needed).

BMS-WebView-2 (77,512 sessions of a web shop) is not shipped with the project and cannot be
fetched here; this is a set of the same kind and size made by the project's own event-log
generator (:func:`ppdm_dask.data.eventlog.generate_events`: Zipf-popular pages, bundles, bots,
late events) grouped into sessions by a 30-minute gap (:func:`ppdm_dask.data.events.read_events`).
Fixed seeds: every run mines the same baskets in the same order.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

#: Events, visitors and pages of the generated log (about 77 k sessions, 4.4 pages each).
N_EVENTS = 400_000
N_USERS = 33_000
N_ITEMS = 3_340
SEED = 40


def clickstream(folder: str | Path | None = None):
    """The click-stream baskets as a persisted TransactionArray (one block; repartition as needed)."""
    from ppdm_dask.data.eventlog import generate_events
    from ppdm_dask.data.events import read_events
    from ppdm_dask.random import Key

    folder = Path(folder or tempfile.mkdtemp(prefix="ppdm-clickstream-"))
    path = folder / "clickstream-events.parquet"
    if not path.exists():
        generate_events(str(path), n_events=N_EVENTS, n_users=N_USERS, n_items=N_ITEMS, key_or_seed=SEED, days=28)
    tx, _ = read_events(str(path), user="user", item="item", time="ts", session_gap="30min", key=Key(SEED))
    return tx.repartition(None, npartitions=1).persist(progress=False)


if __name__ == "__main__":  # python benchmarks/_clickstream.py: its size
    import numpy as np

    tx = clickstream()
    csr = tx.compute()
    print(
        f"{tx.n_transactions:,} baskets, {tx.n_items:,} items, {csr.nnz / csr.shape[0]:.2f} per basket, max {np.diff(csr.indptr).max()}"
    )

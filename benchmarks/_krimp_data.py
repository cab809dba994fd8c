"""Large categorical data for the distributed KRIMP benchmark: mushroom (LUCS) replicated and
lightly perturbed, generated on the fly (never committed).

Every copy of the 8,124 records is kept attribute by attribute, except that each cell is, with
probability ``noise`` (default 1 %), replaced by a value drawn uniformly from its attribute's
domain — keyed (``Key``/``Tag``, one stream per block of rows), so the data depend on the key
only. The perturbation keeps the closed candidates meaningful (plain copies would leave every
closed set's support an exact multiple of the original and every cover identical per copy), and
the number of distinct rows grows with the number of copies.
"""

from __future__ import annotations

import numpy as np

BLOCK = 1 << 16


def mushroom_rows(copies: int, *, noise: float = 0.01, key: int = 17) -> tuple[np.ndarray, np.ndarray]:
    """``(cells, labels)``: an (8,124·copies) × 23 matrix of item labels (one per attribute) and
    the sorted item labels."""
    from _sketch_data import shared_data_dir

    from ppdm_dask.data.transactions import TransactionArray
    from ppdm_dask.krimp import infer_domains
    from ppdm_dask.random import Key, Tag

    path = shared_data_dir() / "lucs" / "mushroom.dat"
    base = np.array([sorted(map(int, line.split())) for line in open(path) if line.strip()], np.int64)
    domains = infer_domains(TransactionArray.from_fimi(str(path)))
    attr_of = {int(v): a for a, dom in enumerate(domains) for v in np.asarray(dom).tolist()}
    # columns in attribute order (each row holds one value of every attribute)
    order = np.argsort(np.vectorize(attr_of.get)(base), axis=1, kind="stable")
    base = np.take_along_axis(base, order, axis=1)
    n0, a = base.shape
    cells = np.tile(base, (copies, 1))
    doms = [np.asarray(d, np.int64) for d in domains]
    k = Key(key)
    for b0 in range(0, cells.shape[0], BLOCK):
        rng = k.generator(Tag.SAMPLE, b0 // BLOCK)  # the generic tag for callers' own sampling
        blk = cells[b0 : b0 + BLOCK]
        hit = rng.random(blk.shape) < noise
        for j in range(a):
            rows = np.nonzero(hit[:, j])[0]
            if rows.size:
                blk[rows, j] = doms[j][rng.integers(0, doms[j].size, rows.size)]
    labels = np.unique(np.concatenate(doms))
    return cells, labels


def mushroom_replicated(copies: int, *, npartitions: int | None = None, noise: float = 0.01, key: int = 17):
    """The replicated, perturbed mushroom data as a TransactionArray (columns = item labels)."""
    import scipy.sparse as sp

    from ppdm_dask.data.transactions import TransactionArray

    cells, labels = mushroom_rows(copies, noise=noise, key=key)
    n, a = cells.shape
    col = np.searchsorted(labels, cells.ravel())
    m = sp.csr_array(
        (np.ones(col.size, np.int32), col.astype(np.int32), np.arange(0, n * a + 1, a, dtype=np.int64)), shape=(n, labels.size)
    )
    m.sort_indices()
    return TransactionArray.from_scipy(m, vocabulary=labels.tolist(), npartitions=npartitions)


def write_mushroom_replicated(copies: int, folder: str, *, npartitions: int, noise: float = 0.001, key: int = 17) -> str:
    """Write the data as a ppdm Parquet dataset of ``npartitions`` parts (in this process, with
    the synchronous scheduler: nothing large travels to workers) and return its path; read it
    back with :func:`ppdm_dask.read` so that each partition is loaded where it is needed."""
    import os

    import dask

    path = os.path.join(folder, f"mushroom-x{copies}")
    with dask.config.set(scheduler="sync"):
        mushroom_replicated(copies, noise=noise, key=key, npartitions=npartitions).to_parquet(path)
    return path

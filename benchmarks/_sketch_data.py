"""Data sets of the sketch-anonymization experiments (Aggarwal & Yu §4; docs/sketches.md#mining-on-sketches),
as in-memory ``(records, labels)`` pairs for the evaluation harness.

* ``newsgroups()`` — 20 Newsgroups "bydate" term counts (18,846 docs x 55,548 terms, 20 classes),
  the public stand-in for the paper's non-public Text17 (163,000 Yahoo! docs, 17 classes). Built
  by ``shared/data/text/build_20news_counts.py``.
* ``quest_two_class("C20.I4.D200K")`` / ``"C20.I6.D200K"`` — two independent Quest instances
  T20.Ix.D100K (own patterns each) stacked and labelled 0 / 1 (the paper's footnote: notation of
  Agrawal & Srikant).
* ``quest_dimensionality(x)`` — the paper's Q20.I6.D200K.Gx: C20.I6.D200K over ``x`` base items
  (x = 1000 is C20.I6.D200K).
* ``bootstrap_split(n, key)`` — the paper's train:test = 2:1 split.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ppdm_dask.random import Key, KeyLike, Tag, as_key

__all__ = [
    "shared_data_dir",
    "newsgroups",
    "quest_two_class",
    "quest_dimensionality",
    "DIMENSIONALITY_SERIES",
    "bootstrap_split",
]

#: Base item counts of the dimensionality study. The paper names only G1000 (= C20.I6.D200K) and
#: G1200 and prints no axis values; this series is the harness's choice.
DIMENSIONALITY_SERIES = (1000, 1200, 1400, 1600, 1800, 2000)


_NEWSGROUPS_FILE = Path("text") / "20news_bydate_counts.npz"


def shared_data_dir() -> Path:
    """``$PPDM_SHARED_DATA`` if set, else ``shared/data`` beside the checkout."""
    env = os.environ.get("PPDM_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def newsgroups(path: str | os.PathLike | None = None) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
    """20 Newsgroups term counts.

    Parameters
    ----------
    path : path-like, optional
        The ``.npz`` file; default ``<shared data>/text/20news_bydate_counts.npz``.

    Returns
    -------
    X : scipy.sparse.csr_array of int32 (18846, 55548)
        Term counts per document (38 documents are empty).
    labels : ndarray of int64
        Newsgroup index (0..19, alphabetical group names).
    is_train : ndarray of bool
        The official "bydate" split (11,314 train / 7,532 test).
    """
    path = Path(path) if path is not None else shared_data_dir() / _NEWSGROUPS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"20 Newsgroups counts not found at {path} (set PPDM_SHARED_DATA)")
    with np.load(path, allow_pickle=False) as z:
        X = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=tuple(int(s) for s in z["shape"]))
        labels = z["labels"].astype(np.int64)
        is_train = z["split"] == 0
    X.sort_indices()
    return X, labels, is_train


def _quest_arrays(spec: str, key: KeyLike) -> tuple[sp.csr_array, np.ndarray]:
    from ppdm_dask.data.quest import quest

    tx = quest(spec, key=as_key(key))
    if "label" not in tx.columns:
        raise ValueError(f"{spec!r} is not a two-class spec (use the C.. notation)")
    X = sp.csr_array(tx.compute(progress=False))
    labels = np.asarray(tx.columns["label"].compute(), dtype=np.int64)
    return X, labels


def quest_two_class(spec: str = "C20.I4.D200K", key: KeyLike = 1) -> tuple[sp.csr_array, np.ndarray]:
    """A two-class Quest data set (0/1 baskets over ``N`` items).

    Parameters
    ----------
    spec : str
        ``"C20.I4.D200K"`` or ``"C20.I6.D200K"`` (any ``C..`` Quest notation): two T20.Ix
        instances of D/2 rows each, with independent patterns.
    key : Key or int, default 1
        Key of the generator (fixed for reproducible experiments).

    Returns
    -------
    X : scipy.sparse.csr_array of int32 (D, N)
        One row per basket, 1 for each item bought.
    labels : ndarray of int64 (D,)
        0 for the first D/2 rows (first instance), 1 for the rest.
    """
    return _quest_arrays(spec, key)


def quest_dimensionality(
    n_items: int,
    *,
    T: int = 20,
    I: int = 6,
    D: str = "200K",
    key: KeyLike = 1,  # noqa: E741
) -> tuple[sp.csr_array, np.ndarray]:
    """The paper's Q20.I6.D200K.Gx: C{T}.I{I}.D{D} over ``n_items`` base items.

    ``quest_dimensionality(1000)`` is C20.I6.D200K; see :data:`DIMENSIONALITY_SERIES`.
    """
    return _quest_arrays(f"C{T}.I{I}.D{D}.N{int(n_items)}", key)


def bootstrap_split(n: int, key: KeyLike = 1, ratio: float = 2 / 3) -> tuple[np.ndarray, np.ndarray]:
    """Random train/test split of ``n`` records, ``ratio`` of them for training (2:1 default).

    The paper's "bootstrapping procedure in which the ratio of the training to the test data was
    2:1" is read as a random split without replacement (sampling with replacement would leave
    about 37% out-of-bag, not 1/3). Stream ``(Tag.EVALUATION_SPLIT, 2)`` of ``key``.

    Returns
    -------
    (train, test) : sorted int64 index arrays, disjoint, covering ``0..n-1``.
    """
    if not 0 < ratio < 1:
        raise ValueError(f"ratio must be in (0, 1), got {ratio}")
    key = key if isinstance(key, Key) else as_key(key)
    perm = key.generator(Tag.EVALUATION_SPLIT, 2).permutation(int(n))
    n_train = int(round(ratio * n))
    return np.sort(perm[:n_train]).astype(np.int64), np.sort(perm[n_train:]).astype(np.int64)

"""Publishing an anonymisation decided on the frequency set.

Methods that work on the frequency set (lattice, Datafly, Mondrian, access control) decide one
published label per quasi-identifier for every distinct QI tuple (and whether the tuple's records
are suppressed). :func:`publish` applies that table to the records partition by partition
(``map_partitions``: leaf codes -> tuple index by ``searchsorted`` on packed keys -> labels), so
the released table is built where the data lives and keeps the input's partitioning. Writing it
is the job of :class:`~ppdm_dask.anonymity.release.AnonymizedRelease` (keyed row order, verified
before the commit).
"""

from __future__ import annotations

from collections.abc import Sequence

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..data.hierarchy import ROOT, key_codes
from ..data.tables import TEXT_DTYPE
from ..errors import DataFormatError, InvalidParameter
from .frequency import FrequencySet

__all__ = ["publish"]


def _tuple_keys(codes: np.ndarray, radices: Sequence[int]) -> np.ndarray:
    key = np.zeros(len(codes), dtype=np.int64)
    for j, r in enumerate(radices):
        key = key * int(r) + codes[:, j]
    return key


def _publish_partition(
    part: pd.DataFrame,
    qi: list[str],
    leaf_keys: list[pd.Index],
    radices: list[int],
    sorted_keys: np.ndarray,
    order: np.ndarray,
    published: list[tuple[np.ndarray, pd.api.extensions.ExtensionArray]],
    extra: list[str],
) -> pd.DataFrame:
    codes = np.empty((len(part), len(qi)), dtype=np.int64)
    for j, a in enumerate(qi):
        c = key_codes(part[a], leaf_keys[j])
        if (c < 0).any():
            bad = pd.unique(part[a][c < 0].astype(str))[:10]
            raise DataFormatError(f"column {a!r} has values not seen when the anonymisation was computed: {list(bad)}")
        codes[:, j] = c
    key = _tuple_keys(codes, radices)
    pos = np.searchsorted(sorted_keys, key)
    pos = np.minimum(pos, len(sorted_keys) - 1)
    if len(key) and not np.array_equal(sorted_keys[pos], key):
        raise DataFormatError("the table changed while it was being anonymised (unknown QI combination)")
    t = order[pos]
    # each tuple's published label as a code into the column's distinct labels: one take
    out = {a: published[j][1].take(published[j][0][t]) for j, a in enumerate(qi)}
    res = pd.DataFrame(out, index=part.index)
    for col in extra:
        res[col] = part[col]
    return res


def publish(
    df: dd.DataFrame,
    fs: FrequencySet,
    tuple_codes: np.ndarray,
    labels: np.ndarray,
    suppressed: np.ndarray,
    *,
    keep: Sequence[str] = (),
) -> dd.DataFrame:
    """The released table: QI columns replaced by their published labels.

    Parameters
    ----------
    df : dask.dataframe.DataFrame
        The original table (the one ``fs`` was computed from).
    fs : FrequencySet
    tuple_codes : ndarray (n_tuples, q)
        Distinct QI tuples (leaf codes).
    labels : ndarray (n_tuples, q) of str
        Published label of every QI of every tuple.
    suppressed : ndarray (n_tuples,) of bool
        Tuples whose records are suppressed (every QI becomes ``'*'``).
    keep : sequence of str
        Non-QI columns to publish besides the sensitive attribute (all others are dropped).

    Returns
    -------
    dask.dataframe.DataFrame
        QI columns as strings, then the sensitive attribute and ``keep``; same partitions and
        index as ``df``.
    """
    keep = list(keep)
    unknown = [c for c in keep if c not in df.columns]
    if unknown:
        raise InvalidParameter(f"unknown column(s) to keep {unknown}; the table has {list(df.columns)}")
    clash = [c for c in keep if c in fs.qi]
    if clash:
        raise InvalidParameter(f"keep={clash}: quasi-identifiers are always published generalised")
    extra = ([fs.sensitive] if fs.sensitive else []) + [c for c in keep if c != fs.sensitive]
    radices = [len(d.values) for d in fs.domains]
    if float(np.prod([float(r) for r in radices])) >= 2.0**62:
        raise InvalidParameter("too many distinct quasi-identifier combinations to publish by packed keys")
    key = _tuple_keys(np.asarray(tuple_codes, dtype=np.int64), radices)
    order = np.argsort(key, kind="stable")
    leaf_keys = [pd.Index(d.keys) for d in fs.domains]
    meta = pd.DataFrame({a: pd.Series([], dtype=TEXT_DTYPE) for a in fs.qi})
    for col in extra:
        meta[col] = df._meta[col]
    # one copy of the lookup per worker rather than one per task
    shown = np.where(np.asarray(suppressed, bool)[:, None], ROOT, np.asarray(labels, dtype=object))
    published = []
    for j in range(len(fs.qi)):
        distinct, at = np.unique(shown[:, j].astype(str), return_inverse=True)
        published.append((at.astype(np.int64).ravel(), pd.array(distinct, dtype=TEXT_DTYPE)))
    args = dask.delayed((leaf_keys, radices, key[order], order, published), pure=True)
    qi = list(fs.qi)  # not the whole frequency set: it would travel with every task
    return df.map_partitions(lambda part, a: _publish_partition(part, qi, *a, extra), args, meta=meta, enforce_metadata=False)

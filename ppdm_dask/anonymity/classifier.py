"""How well a classifier learnt on the release predicts a label of held-out original records.

The classifier is the one a release supports without further modelling: for each equivalence
class (the tuple of released quasi-identifier values) the most frequent label among its training
records; a class without training records gets the overall most frequent label. It is trained
on the released rows of the training records and tested on the other records: each test record
is put in the class its quasi-identifiers were generalised to (the release row of that record)
and its true label is compared with the class's prediction. The same classifier on the
original quasi-identifier tuples is the baseline (the accuracy the data had before it was
anonymised), and the majority-class rate (:func:`majority_rate`: the share of the most frequent
label among the held-out records, the accuracy of always guessing it) is the floor either
accuracy is to be read against: an accuracy near it means the quasi-identifiers predict nothing.

The split is public and fixed (``TEST_SHARE`` of the records, chosen by the record's position in
the input with a multiplicative hash), so the figure is reproducible and the same records are
held out for the release and the baseline. On a large table the figure is estimated on the first
partitions holding ``MAX_RECORDS`` records (known partition sizes; the same records on both
sides), which bounds its cost. The release rows must be in input order: a release
in memory, or the one that was written (handed over with ``adopt``).

Kernels (:func:`label_counts`, :func:`accuracy`) are pure pandas/numpy; :func:`classifier_accuracy`
wires them per partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "TEST_SHARE",
    "MAX_RECORDS",
    "is_test",
    "label_counts",
    "accuracy",
    "majority_rate",
    "classifier_accuracy",
    "ClassifierPlan",
]

#: share of the records held out for testing
TEST_SHARE = 0.2
#: records the figure is estimated on (the first partitions holding at least this many): the
#: accuracy of 40,000 held-out records is known to ±0.5 %, and the release in memory is computed
#: again for these partitions only
MAX_RECORDS = 200_000
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def is_test(rows: np.ndarray) -> np.ndarray:
    """Whether each (global, 0-based) record position is held out: the fractional part of
    ``row · φ`` below ``TEST_SHARE`` (an evenly spread, public choice)."""
    with np.errstate(over="ignore"):
        h = (np.asarray(rows, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    return (h >> np.uint64(11)).astype(np.float64) / float(2**53) < TEST_SHARE


def label_counts(part: pd.DataFrame, offset: int, columns: Sequence[str], label: str) -> tuple[int, pd.DataFrame]:
    """Kernel: ``(rows, counts)`` of one partition, its records counted by (class, label, held
    out); ``class`` a 64-bit hash of the row's values in ``columns`` as text, ``offset`` the
    partition's first position."""
    test = is_test(np.arange(offset, offset + len(part)))
    cls = pd.util.hash_pandas_object(part[list(columns)].astype(str), index=False).to_numpy()
    df = pd.DataFrame({"cls": cls, "label": part[label].astype(str).to_numpy(), "test": test})
    return len(part), df.groupby(["cls", "label", "test"], sort=False).size().rename("n").reset_index()


def _merge(parts: list[tuple[int, pd.DataFrame]]) -> tuple[list[int], pd.DataFrame]:
    return [p[0] for p in parts], pd.concat([p[1] for p in parts], ignore_index=True)


def accuracy(counts: pd.DataFrame) -> tuple[float, int, int]:
    """``(accuracy, test records, training records)`` of the majority-label-per-class classifier
    from merged :func:`label_counts`."""
    counts = counts.groupby(["cls", "label", "test"], sort=False)["n"].sum().reset_index()
    train, test = counts[~counts["test"]], counts[counts["test"]]
    n_test, n_train = int(test["n"].sum()), int(train["n"].sum())
    if not n_test or not n_train:
        return float("nan"), n_test, n_train
    overall = train.groupby("label")["n"].sum().idxmax()
    # the most frequent label per class; ties broken by the label's text (deterministic)
    best = train.sort_values(["cls", "n", "label"], ascending=[True, False, True]).drop_duplicates("cls")
    predicted = test["cls"].map(dict(zip(best["cls"], best["label"]))).fillna(overall)
    return float(test.loc[predicted.to_numpy() == test["label"].to_numpy(), "n"].sum() / n_test), n_test, n_train


def majority_rate(counts: pd.DataFrame) -> float:
    """The share of the most frequent label among the held-out (test) records of merged
    :func:`label_counts`: the accuracy of always guessing that label (NaN without test records)."""
    test = counts[counts["test"].to_numpy(dtype=bool)]
    per = test.groupby("label")["n"].sum()
    total = int(per.sum())
    return float(per.max() / total) if total else float("nan")


class ClassifierPlan:
    """The lazy counts of :func:`classifier_accuracy` (``lazy``, to be computed with other
    passes) and :meth:`finish`, which turns their results into accuracies."""

    def __init__(
        self,
        tables: Sequence[tuple[Any, Sequence[str]]],
        label: str,
        partition_rows: Sequence[int] | None,
        max_records: int | None,
    ) -> None:
        self.total_rows = int(sum(partition_rows)) if partition_rows is not None else None
        if partition_rows is not None and max_records and all(t.npartitions == len(partition_rows) for t, _ in tables):
            upto = int(np.searchsorted(np.cumsum(partition_rows), max_records)) + 1
            if upto < len(partition_rows):
                tables = [(t.partitions[:upto], c) for t, c in tables]
                partition_rows = list(partition_rows)[:upto]
        self.tables, self.label = list(tables), label
        #: the majority-class rate of each table's held-out records (set by :meth:`finish`)
        self.majority_rates: list[float] = []
        self.guess = [
            list(partition_rows) if partition_rows is not None and len(partition_rows) == t.npartitions else None
            for t, _ in self.tables
        ]
        #: lazy: row counts of the tables whose partition sizes are unknown (a first pass)
        self.lengths = [t.map_partitions(len) for (t, _), g in zip(self.tables, self.guess) if g is None]

    def counts(self, lengths: Sequence[Any] = ()) -> list[Any]:
        """Lazy per-table counts (after the partition sizes are known)."""
        found = iter(lengths)
        self.guess = [g if g is not None else [int(n) for n in next(found)] for g in self.guess]
        return [self._lazy(t, c, g) for (t, c), g in zip(self.tables, self.guess)]

    def _lazy(self, table: Any, columns: Sequence[str], rows: Sequence[int]) -> Any:
        import dask

        offsets = np.concatenate([[0], np.cumsum(np.asarray(rows, dtype=np.int64))[:-1]])
        parts = [
            dask.delayed(label_counts, pure=True)(p, int(o), list(columns), self.label)
            for p, o in zip(table[[*columns, self.label]].to_delayed(), offsets)
        ]
        return dask.delayed(_merge, pure=True)(parts)

    def finish(self, merged: Sequence[tuple[list[int], pd.DataFrame]], **compute_kwargs: Any) -> list[tuple[float, int, int]]:
        """Accuracies from the computed :meth:`counts`; a table whose partitions were not the
        sizes assumed is counted again at its true offsets."""
        from ..progress import compute

        merged = list(merged)
        for i, ((t, c), g) in enumerate(zip(self.tables, self.guess)):
            if list(merged[i][0]) != list(g):
                (merged[i],) = compute(self._lazy(t, c, merged[i][0]), **compute_kwargs)
        self.majority_rates = [majority_rate(m[1]) for m in merged]
        return [accuracy(m[1]) for m in merged]


def classifier_accuracy(
    tables: Sequence[tuple[Any, Sequence[str]]],
    label: str,
    *,
    partition_rows: Sequence[int] | None = None,
    max_records: int | None = MAX_RECORDS,
    **compute_kwargs: Any,
) -> list[tuple[float, int, int]]:
    """:func:`accuracy` of each ``(table, columns)`` (dask DataFrames in input order, the same
    records), in one pass over all of them.

    ``partition_rows``: the row counts of the tables' partitions when known (a release records
    those of its input); each kernel returns its length and a table whose partitions differ is
    counted again with its own offsets. Without, a first pass counts the rows. With known
    counts and ``max_records``, only the first partitions holding that many records are used.
    """
    from ..progress import compute

    plan = ClassifierPlan(tables, label, partition_rows, max_records)
    lengths = compute(*plan.lengths, **compute_kwargs) if plan.lengths else ()
    return plan.finish(compute(*plan.counts(lengths), **compute_kwargs), **compute_kwargs)

"""Result containers of frequent-itemset mining."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.vocabulary import Vocabulary

__all__ = ["FrequentItemsets", "write_table"]


@dataclass
class FrequentItemsets:
    """Frequent itemsets with their support counts.

    Attributes
    ----------
    levels : dict
        ``k -> (itemsets, counts)``: ``itemsets`` is an ``(n_k, k)`` int32 array of column ids
        (rows sorted ascending, lexicographic order), ``counts`` int64.
    vocabulary : Vocabulary
        Maps column ids back to the original item labels.
    n_transactions : int
    min_count : int
        Absolute support threshold used (count >= min_count).
    level_stats : list of dict
        Per level: ``length``, ``candidates``, ``frequent``, ``seconds``.
    """

    levels: dict[int, tuple[np.ndarray, np.ndarray]]
    vocabulary: Vocabulary
    n_transactions: int
    min_count: int
    level_stats: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return int(sum(c.size for _, c in self.levels.values()))

    @property
    def max_length(self) -> int:
        return max((k for k, (_, c) in self.levels.items() if c.size), default=0)

    @property
    def counts(self) -> np.ndarray:
        """Counts of all itemsets, by length then lexicographic order of column ids."""
        parts = [self.levels[k][1] for k in sorted(self.levels)]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    @property
    def supports(self) -> np.ndarray:
        """Supports as fractions of the transactions."""
        return self.counts / max(self.n_transactions, 1)

    @property
    def itemsets(self) -> list[tuple]:
        """All itemsets as tuples of original labels, in the order of :attr:`counts`."""
        out: list[tuple] = []
        for k in sorted(self.levels):
            ids, _ = self.levels[k]
            labels = self.vocabulary.labels[ids].tolist()
            out.extend(tuple(r) for r in labels)
        return out

    def as_dict(self) -> dict[frozenset, int]:
        """``{frozenset(labels): count}``."""
        return {frozenset(s): int(c) for s, c in zip(self.itemsets, self.counts.tolist())}

    def to_pandas(self):
        """DataFrame with columns ``itemset`` (tuple of labels), ``length``, ``count``, ``support``."""
        import pandas as pd

        counts = self.counts
        sets = self.itemsets
        return pd.DataFrame(
            {
                "itemset": pd.Series(sets, dtype=object),
                "length": np.array([len(s) for s in sets], dtype=np.int64),
                "count": counts,
                "support": counts / max(self.n_transactions, 1),
            }
        )

    def to_mlxtend(self) -> Any:
        """The itemsets as ``mlxtend.frequent_patterns.apriori(df, min_support, use_colnames=True)``
        returns them: columns ``support`` (float64) and ``itemsets`` (frozensets of labels), in
        the order of :attr:`counts` (mlxtend's own order when its one-hot columns are sorted)."""
        from .export import itemsets_to_mlxtend

        return itemsets_to_mlxtend(self)

    def by_length(self) -> dict[int, Any]:
        """``{k: DataFrame of the k-itemsets}``."""
        df = self.to_pandas()
        return {int(k): g.reset_index(drop=True) for k, g in df.groupby("length")}

    def to_parquet(self, url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False) -> None:
        """Write one Parquet file (``items: list<label>``, ``length``, ``count``, ``support``),
        atomically; public parameters (n_transactions, min_count) in the key-value metadata."""
        import pyarrow as pa

        counts = self.counts
        table = pa.table(
            {
                "items": pa.array([list(s) for s in self.itemsets]),
                "length": pa.array([len(s) for s in self.itemsets], type=pa.int32()),
                "count": pa.array(counts),  # int64 counts, or float64 reconstructed supports
                "support": pa.array(counts / max(self.n_transactions, 1)),
            }
        )
        write_table(table, url, {"n_transactions": self.n_transactions, "min_count": self.min_count}, storage_options, overwrite)

    def __repr__(self) -> str:
        per = ", ".join(f"{k}: {c.size}" for k, (_, c) in sorted(self.levels.items()))
        return f"FrequentItemsets({len(self)} itemsets over {self.n_transactions} transactions, min_count={self.min_count}; by length {{{per}}})"


def write_table(
    table: Any, url: str, metadata: Mapping[str, Any], storage_options: Mapping[str, Any] | None, overwrite: bool
) -> None:
    """Write an Arrow table to one Parquet file atomically, public ``metadata`` in its footer."""
    import json

    import pyarrow.parquet as pq

    from ..data.atomic import atomic_file

    table = table.replace_schema_metadata({b"ppdm": json.dumps(dict(metadata)).encode()})
    with atomic_file(url, storage_options=storage_options, overwrite=overwrite) as fh:
        pq.write_table(table, fh, compression="zstd")

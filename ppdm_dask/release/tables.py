"""Releases of relational tables: the row blocks are pandas DataFrames (a dask DataFrame's
partitions); written as Parquet part files or one CSV file."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from .base import Release
from .order import BlockOps

__all__ = ["TableRelease", "TABLE_OPS", "suppressed_rows"]

#: In-memory bytes planned for one output block: an output file's task holds its rows about
#: five times (the staged pieces, their concatenation, the keyed order, the suppression filter,
#: the Arrow table), so workers with 1 GB keep a few such blocks at once.
BLOCK_BYTES = 64 * 2**20
#: Planned bytes of one text cell (a short label: its Arrow offset and bytes, or a Python str).
TEXT_CELL_BYTES = 48
#: Rows per output file at most.
MAX_ROWS_PER_FILE = 500_000


def _n_rows(block: pd.DataFrame) -> int:
    return len(block)


def _take(block: pd.DataFrame, idx: np.ndarray) -> pd.DataFrame:
    return block.iloc[idx].reset_index(drop=True)


def _concat(blocks: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(blocks, ignore_index=True) if len(blocks) > 1 else blocks[0].reset_index(drop=True)


TABLE_OPS = BlockOps(_n_rows, _take, _concat)


def suppressed_rows(block: pd.DataFrame, qi: tuple[str, ...]) -> np.ndarray:
    """Rows whose every quasi-identifier is ``'*'`` (suppressed records)."""
    if not qi or not len(block):
        return np.zeros(len(block), dtype=bool)
    rows: np.ndarray = np.logical_and.reduce([_is_star(block[c]) for c in qi])
    return rows


def _is_star(col: pd.Series) -> np.ndarray:
    """``col == '*'`` as a bool array (vectorised for string columns; never true for numbers)."""
    if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
        return np.zeros(len(col), dtype=bool)
    return np.asarray((col == "*").fillna(False), dtype=bool)


def _finish(block: pd.DataFrame, qi: tuple[str, ...], keep_suppressed: bool) -> pd.DataFrame:
    """The released rows of ``block``: suppressed rows left out unless they are kept."""
    if keep_suppressed:
        return block
    sup = suppressed_rows(block, qi)
    return block[~sup].reset_index(drop=True) if sup.any() else block


def _encode(block: pd.DataFrame, qi: tuple[str, ...], keep_suppressed: bool) -> tuple[pa.Table, dict[str, Any]]:
    """Kernel: one output block as its part file, with nothing but the released rows: suppressed
    rows left out (not counted: how many of a known group of people were suppressed is a figure
    of the original), pandas ``attrs`` cleared (they would travel in the file's schema metadata:
    whatever a caller attached to the input frame is not the release's)."""
    block = _finish(block, qi, keep_suppressed)
    if block.attrs:
        block = block.copy(deep=False)
        block.attrs = {}
    return pa.Table.from_pandas(block, preserve_index=False), {}


class TableRelease(Release):
    """A relational release: ``data`` is a dask DataFrame of the published columns.

    Suppressed records (every quasi-identifier ``'*'``) are left out of the written files, unless
    the parameter ``keep_suppressed`` is true; their number is the owner's (it is a figure of the
    original), never written into the release.
    """

    ops: ClassVar[BlockOps] = TABLE_OPS
    csv_output: ClassVar[bool] = True

    #: rows of each partition of ``data`` when the estimator knows them (saves a pass)
    partition_rows: list[int] | None = None

    def __init__(self, data: Any, *, partition_rows: Sequence[int] | None = None, **kwargs: Any) -> None:
        """As :class:`~ppdm_dask.release.Release`, plus ``partition_rows`` (see the attribute)."""
        super().__init__(data, **kwargs)
        self.partition_rows = [int(r) for r in partition_rows] if partition_rows is not None else None

    @property
    def default_rows_per_file(self) -> int:  # type: ignore[override]
        """Rows per part file so that a block stays about :data:`BLOCK_BYTES` in memory, from
        the columns' types (numbers their width, text :data:`TEXT_CELL_BYTES`); at most
        :data:`MAX_ROWS_PER_FILE`, at least 1,024."""
        per_row = 8.0 + sum(
            float(t.itemsize) if pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) else TEXT_CELL_BYTES
            for t in self.data.dtypes
        )
        return int(min(MAX_ROWS_PER_FILE, max(1024, BLOCK_BYTES // per_row)))

    @property
    def qi(self) -> tuple[str, ...]:
        return tuple(self.roles.quasi_identifiers) if self.roles is not None else tuple(self.parameters.get("qi", ()))

    @property
    def keep_suppressed(self) -> bool:
        return bool(self.parameters.get("keep_suppressed", False))

    def _row_blocks(self) -> tuple[list[Any], list[int]]:
        from ..progress import compute

        parts = list(self.data.to_delayed())
        rows = self.partition_rows
        if rows is None or len(rows) != len(parts):
            (lengths,) = compute(self.data.map_partitions(len), progress=False)
            rows = [int(r) for r in np.asarray(lengths).ravel()]
        return parts, list(rows)

    def _encoder(self) -> Callable[[Any], tuple[pa.Table, dict[str, Any]]]:
        return partial(_encode, qi=self.qi, keep_suppressed=self.keep_suppressed)

    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        return {"columns": [str(c) for c in self.data.columns], "n_records": int(sum(p["rows"] for p in partitions))}

    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        from ..data.tables import table_from_manifest

        return table_from_manifest(fs, path, manifest, url, verify=verify)

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Callable[..., Any]) -> dict[str, Any]:
        rows = 0
        for i, b in enumerate(blocks):
            (block,) = compute(b)
            block = _finish(block, self.qi, self.keep_suppressed)
            fh.write(block.to_csv(index=False, header=(i == 0), lineterminator="\n").encode("utf-8"))
            rows += len(block)
        return {"rows": rows, "columns": [str(c) for c in self.data.columns], "n_records": rows}

    @classmethod
    def _open_csv(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str) -> Any:
        import posixpath

        import dask.dataframe as dd

        name = manifest["partitions"][0]["file"]
        full = fs.unstrip_protocol(posixpath.join(path, name))
        opts = getattr(fs, "storage_options", {}) or {}
        return dd.read_csv(
            full,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            blocksize=None,
            storage_options=dict(opts),
            dtype_backend="pyarrow",
        )

    @classmethod
    def read_original(cls, url: str, *, storage_options: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        from ..data.tables import read_table

        return read_table(url, storage_options=storage_options, **kwargs)

"""Releases of transactions: the row blocks are ``(items CSR, weights CSR or None, columns)``;
written in the ppdm transaction layout (so :func:`ppdm_dask.read` reads a release like any
dataset) or as one basket CSV file."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

import dask
import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ..data.parquet import FORMAT_NAME, VOCABULARY_FILE, public_metadata, transactions_from_manifest, transactions_table
from ..data.persons import PERSON_COLUMN
from .base import Release
from .order import BlockOps

__all__ = ["TransactionRelease", "TRANSACTION_OPS"]

#: row-aligned columns that identify records: never published unless asked for
RECORD_ID_COLUMNS = ("record_id",)
#: In-memory bytes planned for one output block (as CSR: 8 bytes per entry, 16 with weights):
#: workers with 1 GB read, shuffle and write several such blocks at once.
BLOCK_BYTES = 64 * 2**20
#: Rows per output file when the rows' length is not known beforehand, and the most in any case.
MAX_ROWS_PER_FILE = 1_000_000


def _n_rows(block: tuple[Any, ...]) -> int:
    return int(block[0].shape[0])


def _take(block: tuple[Any, ...], idx: np.ndarray) -> tuple[Any, ...]:
    items, weights, cols = block
    return (
        sp.csr_array(items[idx]),
        sp.csr_array(weights[idx]) if weights is not None else None,
        {k: np.asarray(v)[idx] for k, v in cols.items()},
    )


def _concat(blocks: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    items = sp.csr_array(sp.vstack([b[0] for b in blocks], format="csr")) if len(blocks) > 1 else blocks[0][0]
    items.indices = items.indices.astype(np.int32, copy=False)
    items.indptr = items.indptr.astype(np.int32, copy=False)
    weights = None
    if blocks[0][1] is not None:
        weights = sp.csr_array(sp.vstack([b[1] for b in blocks], format="csr")) if len(blocks) > 1 else blocks[0][1]
    cols = {k: np.concatenate([np.asarray(b[2][k]) for b in blocks]) for k in blocks[0][2]}
    return items, weights, cols


TRANSACTION_OPS = BlockOps(_n_rows, _take, _concat)


def _block(items: Any, weights: Any, cols: dict[str, Any]) -> tuple[Any, ...]:
    return items, weights, cols


def _encode(block: tuple[Any, ...], kv: bytes) -> tuple[pa.Table, dict[str, Any]]:
    items, weights, cols = block
    return transactions_table(items, weights, cols, kv), {"nnz": int(items.indices.size)}


class TransactionRelease(Release):
    """A release of transactions: ``data`` is a TransactionArray.

    Record ids are dropped unless the parameter ``keep_record_ids`` is true.
    """

    data_format: ClassVar[str] = FORMAT_NAME
    ops: ClassVar[BlockOps] = TRANSACTION_OPS
    csv_output: ClassVar[bool] = True

    @property
    def default_rows_per_file(self) -> int:  # type: ignore[override]
        """Rows per part file so that a block stays about :data:`BLOCK_BYTES` in memory (at
        most :data:`MAX_ROWS_PER_FILE`, at least 1,024)."""
        length = self.mean_row_length()
        if length is None:
            return MAX_ROWS_PER_FILE
        per_row = 8.0 * max(1.0, length) * (2 if self.data.weights is not None else 1) + 8
        return int(min(MAX_ROWS_PER_FILE, max(1024, BLOCK_BYTES // per_row)))

    def row_bytes(self) -> float | None:
        """A row as CSR (8 bytes per entry, 16 with weights) plus its sort key and row id."""
        length = self.mean_row_length()
        return None if length is None else 8.0 * length * (2 if self.data.weights is not None else 1) + 24

    def mean_row_length(self) -> float | None:
        """Expected entries per released row, when known without a pass (here: from the
        entry counts of a dataset read from its manifest); families that know better override."""
        nnz = getattr(self.data, "partition_nnz", None)
        return None if nnz is None else sum(nnz) / max(1, self.data.n_transactions)

    def _columns(self) -> dict[str, Any]:
        keep_ids = bool(self.parameters.get("keep_record_ids", False))
        # the person's pseudonym (baskets grouped from events) is never published, kept or not
        return {k: v for k, v in self.data.columns.items() if k != PERSON_COLUMN and (keep_ids or k not in RECORD_ID_COLUMNS)}

    def _row_blocks(self) -> tuple[list[Any], list[int]]:
        tx = self.data
        items = tx.blocks.to_delayed().ravel()
        weights = tx.weights.to_delayed().ravel() if tx.weights is not None else [None] * len(items)
        cols = {k: v.to_delayed().ravel() for k, v in self._columns().items()}
        blocks = [
            dask.delayed(_block, pure=True)(items[i], weights[i], {k: c[i] for k, c in cols.items()}) for i in range(len(items))
        ]
        return blocks, list(tx.partition_rows)

    def public_metadata(self) -> dict[str, Any]:
        """The data's metadata as the release publishes it: the family, method and the entries
        that are public parameters of the release. The input's own metadata (its source path, a
        generator's settings ...) describes the input, not the release, and is left out."""
        meta = {k: v for k, v in self.data.metadata.items() if k in self.parameters}
        return public_metadata({"release": self.family, "method": self.method, **meta})

    def _kv(self) -> bytes:
        meta = self.public_metadata()
        return json.dumps({"format": FORMAT_NAME, "version": 2, "n_items": self.data.n_items, "metadata": meta}).encode()

    def _encoder(self) -> Callable[[Any], tuple[pa.Table, dict[str, Any]]]:
        return partial(_encode, kv=self._kv())

    def _extra_tables(self) -> dict[str, pa.Table]:
        return {VOCABULARY_FILE: pa.table({"label": pa.array(self.data.vocabulary.labels)})}

    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        tx = self.data
        cols = self._columns()
        return {
            "n_transactions": int(sum(p["rows"] for p in partitions)),
            "n_items": tx.n_items,
            "nnz": int(sum(p.get("nnz", 0) for p in partitions)),
            "vocabulary": VOCABULARY_FILE,
            "label_type": "int" if tx.vocabulary.is_integer else "str",
            "columns": sorted(cols),
            "column_types": {k: np.dtype(v.dtype).str for k, v in sorted(cols.items())},
            "weights": tx.weights is not None,
            "metadata": self.public_metadata(),
        }

    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        return transactions_from_manifest(fs, path, manifest, url, verify=verify)

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Callable[..., Any]) -> dict[str, Any]:
        from ..data.formats import basket_csv_text

        labels = self.data.vocabulary.labels
        rows = nnz = 0
        for b in blocks:
            (block,) = compute(b)
            fh.write(basket_csv_text(block[0], labels))
            rows += block[0].shape[0]
            nnz += int(block[0].indices.size)
        return {
            "rows": rows,
            "n_transactions": rows,
            "n_items": self.data.n_items,
            "nnz": nnz,
            "label_type": "int" if self.data.vocabulary.is_integer else "str",
            "metadata": self.public_metadata(),
        }

    @classmethod
    def _open_csv(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str) -> Any:
        import posixpath

        from ..data.formats import read_csv

        name = manifest["partitions"][0]["file"]
        full = fs.unstrip_protocol(posixpath.join(path, name))
        tx = read_csv(full, storage_options=dict(getattr(fs, "storage_options", {}) or {}), progress=False)
        return tx

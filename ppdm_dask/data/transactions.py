"""TransactionArray: a partitioned sparse transaction database on Dask.

A transaction database is a dask array of row blocks, each a ``scipy.sparse.csr_array`` of
int32 column ids (sorted, unique per row, data = int32 ones), with the number of rows of every
block known, plus the item :class:`~ppdm_dask.data.vocabulary.Vocabulary` (original labels <->
column ids), public metadata, optional row-aligned columns (``label``, ``record_id``,
``privacy_level``, ``person``) and optional per-item ``weights`` (a parallel dask array of float32 CSR blocks
with the same structure).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, DuplicateItemsWarning, InvalidParameter
from ..graph import CSR_META, blocks_from_tasks, concat_rows, tree_reduce, tree_sum, unique_name
from . import _kernels as K
from .vocabulary import Vocabulary

__all__ = ["TransactionArray", "DEFAULT_TARGET_BYTES", "ROW_COLUMNS"]

#: Default partition size (bytes of CSR: indices + data + indptr). Partitions are sized by bytes,
#: not by rows, so that each task carries far more work than the few milliseconds a task costs.
DEFAULT_TARGET_BYTES = 128 * 2**20
#: Optional row-aligned columns understood by the Parquet layout. ``person`` (uint64) is the keyed
#: pseudonym of the person each row belongs to (baskets grouped from an event log,
#: :func:`ppdm_dask.data.events.read_events`): internal, never published by a release.
ROW_COLUMNS = ("label", "record_id", "privacy_level", "person")
_FLOAT_META = sp.csr_array((0, 0), dtype=np.float32)


def _rows_split(n_rows: int, n_parts: int) -> list[int]:
    n_parts = max(1, int(n_parts))
    base, extra = divmod(n_rows, n_parts)
    return [base + (1 if i < extra else 0) for i in range(n_parts)]


def _slice_rows(matrix: sp.csr_array, start: int, stop: int) -> sp.csr_array:
    out = matrix[start:stop]
    return sp.csr_array(out)


def _csr_bytes(rows: int, nnz: int) -> int:
    return 8 * nnz + 4 * (rows + 1)


class TransactionArray:
    """Row-partitioned sparse 0/1 transactions with an item vocabulary.

    Parameters
    ----------
    blocks : dask.array.Array
        Shape ``(n_transactions, n_items)``, chunks ``((rows...), (n_items,))``, each chunk a
        ``scipy.sparse.csr_array`` with int32 indices/indptr, int32 ones as data.
    vocabulary : Vocabulary
        ``len(vocabulary) == n_items``.
    metadata : mapping, optional
        Public, JSON-serialisable parameters (never secrets); written to Parquet metadata.
    columns : mapping of str to dask.array.Array, optional
        1-D row-aligned arrays (same row chunks as ``blocks``).
    weights : dask.array.Array, optional
        float32 CSR blocks with exactly the structure of ``blocks``.
    partition_nnz : sequence of int, optional
        Entries in each block when known without a pass (from a dataset's manifest); memory
        plans use it (:class:`~ppdm_dask.mining.counting.SupportCounter`). Dropped by every
        operation that changes the blocks.

    Notes
    -----
    Build instances with the ``from_*`` constructors or :func:`ppdm_dask.read`; they validate
    input. Empty partitions and empty transactions are legal.
    """

    def __init__(
        self,
        blocks: da.Array,
        vocabulary: Vocabulary,
        *,
        metadata: Mapping[str, Any] | None = None,
        columns: Mapping[str, da.Array] | None = None,
        weights: da.Array | None = None,
        partition_nnz: Sequence[int] | None = None,
    ) -> None:
        if blocks.ndim != 2 or len(blocks.chunks[1]) != 1:
            raise DataFormatError("blocks must be 2-D with a single chunk along the item axis")
        if any(math.isnan(c) for c in blocks.chunks[0]):
            raise DataFormatError("the number of rows of every block must be known")
        if blocks.shape[1] != len(vocabulary):
            raise DataFormatError(f"blocks have {blocks.shape[1]} item columns but the vocabulary has {len(vocabulary)}")
        self.blocks = blocks
        self.vocabulary = vocabulary
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.columns: dict[str, da.Array] = {}
        for name, col in (columns or {}).items():
            if col.ndim != 1 or col.chunks[0] != blocks.chunks[0]:
                raise DataFormatError(f"column {name!r} is not aligned with the row blocks")
            self.columns[name] = col
        if weights is not None and weights.chunks != blocks.chunks:
            raise DataFormatError("weights must have the same chunks as the transactions")
        self.weights = weights
        if partition_nnz is not None and len(partition_nnz) != len(blocks.chunks[0]):
            raise DataFormatError("partition_nnz needs one entry per row block")
        self.partition_nnz = None if partition_nnz is None else tuple(int(v) for v in partition_nnz)

    # ------------------------------------------------------------------ properties
    @property
    def n_transactions(self) -> int:
        """Number of transactions (rows)."""
        return int(self.blocks.shape[0])

    @property
    def n_items(self) -> int:
        """Number of items (columns) in the vocabulary."""
        return int(self.blocks.shape[1])

    @property
    def n_partitions(self) -> int:
        """Number of row blocks."""
        return int(self.blocks.numblocks[0])

    @property
    def partition_rows(self) -> tuple[int, ...]:
        """Rows in each partition."""
        return tuple(int(c) for c in self.blocks.chunks[0])

    def __len__(self) -> int:
        return self.n_transactions

    def __repr__(self) -> str:
        return (
            f"TransactionArray(n_transactions={self.n_transactions}, n_items={self.n_items}, "
            f"n_partitions={self.n_partitions}, columns={sorted(self.columns)})"
        )

    def _replace(self, **changes: Any) -> TransactionArray:
        kw: dict[str, Any] = dict(
            blocks=self.blocks,
            vocabulary=self.vocabulary,
            metadata=self.metadata,
            columns=self.columns,
            weights=self.weights,
            # the entry counts describe these blocks only
            partition_nnz=self.partition_nnz if "blocks" not in changes else None,
        )
        kw.update(changes)
        blocks = kw.pop("blocks")
        vocabulary = kw.pop("vocabulary")
        return TransactionArray(blocks, vocabulary, **kw)

    # ------------------------------------------------------------------ statistics
    def item_supports_lazy(self, *, split_every: int = 8) -> da.Array:
        """Lazy support count of every item: per-block ``bincount`` summed in a tree."""
        return tree_sum(self.blocks, K.item_counts, (self.n_items,), np.int64, self.n_items, split_every=split_every)

    def item_supports(self, *, fraction: bool = False, **compute_kwargs: Any) -> np.ndarray:
        """Support of every item (index = column id), as counts or fractions of transactions."""
        from ..progress import compute

        (counts,) = compute(self.item_supports_lazy(), **compute_kwargs)
        if fraction:
            return counts / max(self.n_transactions, 1)
        return counts

    def row_lengths(self) -> da.Array:
        """Lazy 1-D array of transaction lengths."""
        return self.blocks.map_blocks(K.row_lengths, drop_axis=1, dtype=np.int64, meta=np.empty(0, np.int64))

    def _summary_lazy(self):
        parts = [dask.delayed(K.block_summary, pure=True)(b) for b in self.blocks.to_delayed().ravel()]
        return tree_reduce(parts, K.merge_summaries)

    @property
    def nnz(self) -> int:
        """Total number of (transaction, item) pairs (computes)."""
        return int(self.describe(progress=False)["nnz"])

    @property
    def density(self) -> float:
        """Fraction of ones in the N x n_items matrix (computes)."""
        return float(self.describe(progress=False)["density"])

    def describe(self, **compute_kwargs: Any) -> dict[str, Any]:
        """Summary: rows, items, nnz, density, length statistics and histogram, partitions."""
        from ..progress import compute

        (s,) = compute(self._summary_lazy(), **compute_kwargs)
        n, d = self.n_transactions, self.n_items
        hist = s["hist"]
        return {
            "n_transactions": n,
            "n_items": d,
            "nnz": s["nnz"],
            "density": s["nnz"] / (n * d) if n and d else 0.0,
            "mean_length": s["nnz"] / n if n else 0.0,
            "min_length": s["min_len"],
            "max_length": s["max_len"],
            "empty_transactions": s["empty"],
            "length_histogram": {int(k): int(v) for k, v in enumerate(hist) if v},
            "n_partitions": self.n_partitions,
            "partition_rows": list(self.partition_rows),
            "columns": sorted(self.columns),
            "weighted": self.weights is not None,
            "metadata": dict(self.metadata),
        }

    # ------------------------------------------------------------------ conversion
    def compute(self, **compute_kwargs: Any) -> sp.csr_array:
        """The whole database as one ``scipy.sparse.csr_array`` (brings it to the client)."""
        from ..progress import compute

        parts = compute(*self.blocks.to_delayed().ravel(), **compute_kwargs)
        return _vstack(list(parts), self.n_items)

    def to_sparse(self) -> da.Array:
        """A dask array of pydata ``sparse.GCXS`` chunks (for dask.array-style operations)."""
        import sparse

        meta = sparse.GCXS.from_numpy(np.zeros((0, 0), dtype=np.int32))
        return self.blocks.map_blocks(sparse.GCXS.from_scipy_sparse, dtype=np.int32, meta=meta)

    def to_lists(self, *, labels: bool = True) -> list[list[Any]]:
        """Transactions as Python lists of labels (or column ids); for small data and tests."""
        m = self.compute(progress=False)
        vals = self.vocabulary.labels[m.indices] if labels else m.indices
        vals = vals.tolist()
        ip = m.indptr
        return [vals[ip[i] : ip[i + 1]] for i in range(m.shape[0])]

    def persist(self, **kwargs: Any) -> TransactionArray:
        """Persist the blocks (and columns/weights) in memory, on the cluster if one is active."""
        from ..progress import persist

        cols = list(self.columns.items())
        extra = [self.weights] if self.weights is not None else []
        out = persist(self.blocks, *[c for _, c in cols], *extra, **kwargs)
        blocks = out[0]
        columns = {name: out[1 + i] for i, (name, _) in enumerate(cols)}
        weights = out[-1] if extra else None
        return self._replace(blocks=blocks, columns=columns, weights=weights, partition_nnz=self.partition_nnz)

    # ------------------------------------------------------------------ partitioning
    def repartition(self, target_bytes: int | None = DEFAULT_TARGET_BYTES, *, npartitions: int | None = None) -> TransactionArray:
        """New row blocks of about ``target_bytes`` of CSR each (or exactly ``npartitions``).

        Sizes are planned from per-block nnz (one small computation); rows keep their order.
        """
        if npartitions is not None:
            if npartitions < 1:
                raise InvalidParameter("npartitions must be >= 1")
            if npartitions > max(1, self.n_transactions):  # empty partitions only cost tasks (and memory to plan them)
                raise InvalidParameter(
                    f"{npartitions} partitions is more than the {self.n_transactions} transactions",
                    python=f"npartitions <= {max(1, self.n_transactions)}",
                    fix=f"`npartitions` <= {max(1, self.n_transactions)}",
                )
            new = _rows_split(self.n_transactions, npartitions)
        else:
            if target_bytes is None or target_bytes <= 0:
                raise InvalidParameter("target_bytes must be positive")
            nnz = self._block_nnz()
            new = _plan_rows_by_bytes(self.partition_rows, nnz, int(target_bytes))
        return self._rechunk(tuple(new))

    def _block_nnz(self) -> np.ndarray:
        from ..progress import compute

        part = self.blocks.map_blocks(
            lambda b: np.array([b.indices.size], dtype=np.int64),
            drop_axis=1,
            dtype=np.int64,
            chunks=((1,) * self.n_partitions,),
            meta=np.empty(0, np.int64),
        )
        (nnz,) = compute(part, progress=False)
        return nnz

    def _rechunk(self, rows: tuple[int, ...]) -> TransactionArray:
        if rows == self.partition_rows:
            return self
        blocks = _rechunk_rows(self.blocks, rows, self.n_items, CSR_META)
        columns = {k: v.rechunk({0: rows}) for k, v in self.columns.items()}
        weights = _rechunk_rows(self.weights, rows, self.n_items, _FLOAT_META) if self.weights is not None else None
        return self._replace(blocks=blocks, columns=columns, weights=weights)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_scipy(
        cls,
        matrix: Any,
        *,
        vocabulary: Vocabulary | Sequence[Any] | None = None,
        npartitions: int | None = None,
        target_bytes: int = DEFAULT_TARGET_BYTES,
        columns: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransactionArray:
        """From a scipy sparse matrix/array or a pydata ``sparse`` array (rows = transactions).

        Non-zero entries are the items. When the stored values are not all 1 they are kept as
        float32 ``weights`` (e.g. term counts). NaN or infinite values are rejected.
        """
        try:
            import sparse as _sparse

            if isinstance(matrix, _sparse.SparseArray):
                matrix = matrix.to_scipy_sparse()
        except ImportError:  # pragma: no cover - sparse is a dependency
            pass
        if isinstance(matrix, np.ndarray):
            matrix = sp.csr_array(matrix)
        if not sp.issparse(matrix) or matrix.ndim != 2:
            raise DataFormatError("from_scipy needs a 2-D scipy.sparse or pydata sparse array")
        m = sp.csr_array(matrix, copy=True)
        if m.data.dtype.kind == "f" and not np.all(np.isfinite(m.data)):
            raise DataFormatError("the matrix holds NaN or infinite values")
        m.eliminate_zeros()
        m.sum_duplicates()
        m.sort_indices()
        weights = None
        if m.data.size and not (m.data.dtype.kind == "b" or np.all(m.data == 1)):
            weights = m.data.astype(np.float32)
        vocab = _as_vocabulary(vocabulary, m.shape[1])
        block = K.csr_block(m.indptr.astype(np.int64), m.indices, m.shape[1])
        return cls._from_local(block, vocab, weights, npartitions, target_bytes, columns, metadata)

    @classmethod
    def from_lists(
        cls,
        transactions: Iterable[Iterable[Any]],
        *,
        npartitions: int | None = None,
        target_bytes: int = DEFAULT_TARGET_BYTES,
        columns: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransactionArray:
        """From Python lists of item labels (non-negative ints or strings).

        Duplicate items within a transaction are removed with a :class:`DuplicateItemsWarning`.
        """
        rows = [list(t) for t in transactions]
        counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        indptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        flat = [x for r in rows for x in r]
        labels = np.array(flat, dtype=object) if flat else np.zeros(0, np.int64)
        return cls.from_label_arrays(
            indptr, labels, npartitions=npartitions, target_bytes=target_bytes, columns=columns, metadata=metadata
        )

    @classmethod
    def from_arrow(
        cls,
        array: Any,
        *,
        npartitions: int | None = None,
        target_bytes: int = DEFAULT_TARGET_BYTES,
        columns: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransactionArray:
        """From a pyarrow list array / chunked array, or a pandas Series of lists."""
        import pyarrow as pa

        from .parquet import arrow_list_to_labels

        if not isinstance(array, (pa.Array, pa.ChunkedArray)):
            try:
                array = pa.array(array)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise DataFormatError(f"cannot read the input as lists of items: {exc}") from None
        indptr, labels = arrow_list_to_labels(array)
        return cls.from_label_arrays(
            indptr, labels, npartitions=npartitions, target_bytes=target_bytes, columns=columns, metadata=metadata
        )

    from_pandas = from_arrow

    @classmethod
    def from_label_arrays(
        cls,
        indptr: np.ndarray,
        labels: np.ndarray,
        *,
        npartitions: int | None = None,
        target_bytes: int = DEFAULT_TARGET_BYTES,
        columns: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransactionArray:
        """From CSR-style offsets and the item labels of all transactions (in memory)."""
        indptr = np.asarray(indptr, dtype=np.int64)
        if indptr.ndim != 1 or indptr.size == 0 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
            raise DataFormatError("indptr must start at 0 and be non-decreasing")
        scan = K.scan_label_block((indptr, labels))
        _warn_duplicates(scan["duplicates"])
        vocab = Vocabulary(scan["labels"], assume_sorted=True)
        block = K.encode_label_block((indptr, labels), vocab.labels)
        return cls._from_local(block, vocab, None, npartitions, target_bytes, columns, metadata)

    @classmethod
    def _from_local(
        cls,
        block: sp.csr_array,
        vocab: Vocabulary,
        weights: np.ndarray | None,
        npartitions: int | None,
        target_bytes: int,
        columns: Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
    ) -> TransactionArray:
        n = block.shape[0]
        if npartitions is None:
            npartitions = max(1, math.ceil(_csr_bytes(n, block.indices.size) / max(target_bytes, 1)))
        if npartitions < 1:
            raise InvalidParameter("npartitions must be >= 1")
        rows = _rows_split(n, npartitions)
        bounds = np.r_[0, np.cumsum(rows)]
        name = unique_name("transactions", block.indptr, block.indices, vocab, tuple(rows))
        tasks = [(_slice_rows, block, int(bounds[i]), int(bounds[i + 1])) for i in range(len(rows))]
        blocks = blocks_from_tasks(name, tasks, rows, len(vocab))
        wblocks = None
        if weights is not None:
            wmat = sp.csr_array((weights, block.indices, block.indptr), shape=block.shape)
            wname = unique_name("weights", name, weights)
            wtasks = [(_slice_rows, wmat, int(bounds[i]), int(bounds[i + 1])) for i in range(len(rows))]
            wblocks = blocks_from_tasks(wname, wtasks, rows, len(vocab), meta=_FLOAT_META, dtype=np.float32)
        cols = {}
        for cname, values in (columns or {}).items():
            arr = np.asarray(values)
            if arr.shape != (n,):
                raise DataFormatError(f"column {cname!r} has {arr.shape[0] if arr.ndim else 0} values for {n} transactions")
            cols[cname] = da.from_array(arr, chunks=(tuple(rows),))
        return cls(blocks, vocab, metadata=metadata, columns=cols, weights=wblocks)

    @classmethod
    def from_label_blocks(
        cls,
        sources: Sequence[Any],
        *,
        metadata: Mapping[str, Any] | None = None,
        columns: Mapping[str, Sequence[Any]] | None = None,
        **compute_kwargs: Any,
    ) -> TransactionArray:
        """From delayed label blocks ``(indptr, labels)``, one per partition (e.g. file chunks).

        Two passes: a scan (rows, distinct labels, duplicates; tree-merged vocabulary), then a
        lazy encoding of each block to CSR. ``columns`` maps a name to one delayed 1-D array
        per block.
        """
        from ..progress import compute

        scans = [dask.delayed(K.scan_label_block, pure=True)(s) for s in sources]
        vocab_lazy = tree_reduce(scans, _merge_scans)
        (stats,) = compute(vocab_lazy, **compute_kwargs)
        _warn_duplicates(stats["duplicates"])
        vocab = Vocabulary(stats["labels"], assume_sorted=True)
        rows = stats["rows_per_block"]
        encoded = [dask.delayed(K.encode_label_block, pure=True)(s, vocab.labels) for s in sources]
        name = unique_name("transactions", [e.key for e in encoded])
        tasks = [(_identity, e.key) for e in encoded]
        blocks = blocks_from_tasks(name, tasks, rows, len(vocab), dependencies=encoded)
        cols = {}
        for cname, parts in (columns or {}).items():
            arrs = [da.from_delayed(p, shape=(r,), dtype=np.int64) for p, r in zip(parts, rows)]
            cols[cname] = concat_rows(arrs, rows)
        return cls(blocks, vocab, metadata=metadata, columns=cols)

    # ------------------------------------------------------------------ I/O (see parquet/formats)
    @classmethod
    def from_parquet(
        cls, url: str, *, storage_options: Mapping[str, Any] | None = None, items_column: str = "items"
    ) -> TransactionArray:
        """Read a Parquet dataset (ppdm layout, or any Parquet file/folder with a list column of
        item labels, ``items_column``)."""
        from .parquet import read_parquet

        return read_parquet(url, storage_options=storage_options, items_column=items_column)

    @classmethod
    def from_events(cls, url: str | Sequence[str], *, user: str, item: str, **kwargs: Any) -> TransactionArray:
        """Group an event table (one row per user, item[, time]) into baskets in keyed order;
        see :func:`ppdm_dask.data.events.read_events` for the options (and its summary)."""
        from .events import read_events

        return read_events(url, user=user, item=item, **kwargs)[0]

    @classmethod
    def from_fimi(
        cls, url: str, *, storage_options: Mapping[str, Any] | None = None, blocksize: int | str = "64MiB"
    ) -> TransactionArray:
        """Read a FIMI ``.dat`` file (one transaction per line, whitespace-separated integer ids)."""
        from .formats import read_fimi

        return read_fimi(url, storage_options=storage_options, blocksize=blocksize)

    def to_parquet(
        self, url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        """Write atomically as a ppdm Parquet dataset; returns the committed manifest."""
        from .parquet import write_parquet

        return write_parquet(self, url, storage_options=storage_options, overwrite=overwrite, **kwargs)

    def to_fimi(
        self, url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, **kwargs: Any
    ) -> None:
        """Write a FIMI ``.dat`` text file atomically (labels must be integers)."""
        from .formats import write_fimi

        write_fimi(self, url, storage_options=storage_options, overwrite=overwrite, **kwargs)


# ---------------------------------------------------------------------- helpers
def _identity(x: Any) -> Any:
    return x


def _merge_scans(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Tree-combine scan results: union of labels, summed duplicates, row counts in order."""
    labels = [p["labels"] for p in parts]
    kinds = {l.dtype.kind for l in labels if l.size}
    if len(kinds) > 1:
        raise DataFormatError("items must be all integers or all strings, found both")
    merged = np.unique(np.concatenate(labels)) if labels else np.zeros(0, np.int64)
    rows: list[int] = []
    for p in parts:
        rows.extend(p.get("rows_per_block", [p["rows"]]))
    return {
        "labels": merged,
        "duplicates": sum(p["duplicates"] for p in parts),
        "rows_per_block": rows,
        "rows": sum(rows),
    }


def _warn_duplicates(n: int) -> None:
    if n:
        warnings.warn(
            f"{n} duplicate item(s) inside transactions were removed",
            DuplicateItemsWarning,
            stacklevel=3,
        )


def _as_vocabulary(vocabulary: Vocabulary | Sequence[Any] | None, n_items: int) -> Vocabulary:
    if vocabulary is None:
        return Vocabulary.range(n_items)
    vocab = vocabulary if isinstance(vocabulary, Vocabulary) else None
    if vocab is None:
        labels = np.asarray(vocabulary)
        if labels.size != n_items:
            raise DataFormatError(f"vocabulary has {labels.size} labels for {n_items} columns")
        if labels.size > 1 and not np.all(labels[1:] > labels[:-1]):
            raise DataFormatError("vocabulary labels must be sorted and unique (column j = label j)")
        vocab = Vocabulary(labels, assume_sorted=True)
    if len(vocab) != n_items:
        raise DataFormatError(f"vocabulary has {len(vocab)} labels for {n_items} columns")
    return vocab


def _vstack(parts: list[sp.csr_array], n_items: int) -> sp.csr_array:
    parts = [p for p in parts if p.shape[0]]
    if not parts:
        return sp.csr_array((0, n_items), dtype=np.int32)
    out = sp.csr_array(sp.vstack(parts, format="csr"))
    out.indices = out.indices.astype(np.int32, copy=False)
    out.indptr = out.indptr.astype(np.int32, copy=False)
    return out


def _concat_slices(n_items: int, dtype: Any, *pieces: sp.csr_array) -> sp.csr_array:
    parts = [sp.csr_array(p) for p in pieces if p.shape[0]]
    if not parts:
        return sp.csr_array((0, n_items), dtype=dtype)
    out = sp.csr_array(sp.vstack(parts, format="csr"))
    out.indices = out.indices.astype(np.int32, copy=False)
    out.indptr = out.indptr.astype(np.int32, copy=False)
    return out


def _rechunk_rows(arr: da.Array, rows: tuple[int, ...], n_items: int, meta: Any) -> da.Array:
    """Row re-blocking that keeps empty blocks and int32 CSR (dask's rechunk drops neither
    guarantee explicitly, so the graph is built here: each new block = slices of old ones)."""
    old = np.r_[0, np.cumsum(arr.chunks[0])]
    new = np.r_[0, np.cumsum(rows)]
    if old[-1] != new[-1]:
        raise InvalidParameter("repartition must keep the number of rows")
    src = arr.to_delayed().ravel()
    tasks = []
    for j in range(len(rows)):
        lo, hi = new[j], new[j + 1]
        pieces = []
        first = max(int(np.searchsorted(old, lo, side="right")) - 1, 0)
        for i in range(first, len(src)):
            if old[i] >= hi and hi > lo:
                break
            a, b = max(lo, old[i]), min(hi, old[i + 1])
            if b > a:
                pieces.append((_slice_rows, src[i].key, int(a - old[i]), int(b - old[i])))
            if old[i + 1] >= hi:
                break
        tasks.append((_concat_slices, n_items, meta.dtype, *pieces))
    name = unique_name("repartition", arr.name, rows)
    return blocks_from_tasks(name, tasks, rows, n_items, meta=meta, dtype=meta.dtype, dependencies=[arr])


def _plan_rows_by_bytes(rows: Sequence[int], nnz: np.ndarray, target: int) -> list[int]:
    """Row counts of new blocks of ~``target`` bytes, assuming uniform density inside a block."""
    rows_arr = np.asarray(rows, dtype=np.int64)
    n = int(rows_arr.sum())
    if n == 0:
        return [0]
    bytes_per_block = 8 * np.asarray(nnz, np.float64) + 4.0 * rows_arr
    total = float(bytes_per_block.sum())
    n_new = max(1, math.ceil(total / target))
    # cumulative bytes as a piecewise-linear function of the row index
    cum_rows = np.r_[0, np.cumsum(rows_arr)].astype(np.float64)
    cum_bytes = np.r_[0, np.cumsum(bytes_per_block)]
    targets = np.linspace(0, total, n_new + 1)[1:-1]
    cuts = np.round(np.interp(targets, cum_bytes, cum_rows)).astype(np.int64)
    bounds = np.unique(np.r_[0, cuts, n])
    return np.diff(bounds).tolist()

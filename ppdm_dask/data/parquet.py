"""Parquet layout of a TransactionArray, on any fsspec URL, with atomic commits.

Layout of a dataset at ``URL`` (a folder)::

    URL/part-00000.parquet ...   one file per partition, one row group each;
                                 column ``items: list<int32>`` holds column ids, optional
                                 ``weights: list<float32>``, ``label``, ``record_id``,
                                 ``privacy_level``, ``person`` (uint64); key-value
                                 metadata ``ppdm`` (public only)
    URL/_vocabulary.parquet      column ``label``: the item label of each column id
    URL/_SUCCESS                 JSON manifest, written last: the commit marker

Writes follow the folder protocol of :mod:`ppdm_dask.data.folder` (temporary folder, commit,
``_SUCCESS`` last, every part file listed with its rows, bytes and SHA-256). A reader refuses a
ppdm folder without ``_SUCCESS`` and checks the parts against the manifest (missing or resized
files at once, row counts as each part is read, checksums with ``verify=True``).

Any other Parquet file or folder with a list column (default ``items``) is read as foreign
data: its values are item labels (ints or strings), and a vocabulary is built in a first pass.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from ..errors import (
    CorruptDatasetError,
    DataFormatError,
    DatasetNotFoundError,
    IncompleteDatasetError,
    InvalidParameter,
    ItemIdError,
)
from ..graph import blocks_from_tasks, concat_rows, unique_name
from . import _kernels as K
from .folder import MANIFEST, check_listing, open_fs, read_manifest, read_part, write_folder, write_part
from .vocabulary import Vocabulary

__all__ = [
    "write_parquet",
    "read_parquet",
    "arrow_list_to_csr",
    "arrow_list_to_labels",
    "csr_to_arrow_list",
    "public_metadata",
    "transactions_table",
    "table_transactions",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "VOCABULARY_FILE",
]

FORMAT_NAME = "ppdm-transactions"
#: 1: rows per part; 2: also bytes and SHA-256 per part, release fields (manifest v2)
FORMAT_VERSION = 2
VOCABULARY_FILE = "_vocabulary.parquet"
_SECRET_WORDS = ("key", "seed", "secret", "password", "token")


# ---------------------------------------------------------------------- arrow <-> CSR kernels
def _list_chunk(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)):
        raise DataFormatError(f"expected a list column of items, found type {col.type}")
    if col.null_count:
        first = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise DataFormatError(f"transaction {first} is null; write an empty list for an empty transaction")
    return col


def _offsets_values(col: pa.Array) -> tuple[np.ndarray, pa.Array]:
    offsets = col.offsets.to_numpy()
    # ListArray.values ignores slicing: cut the child array by the offsets.
    values = col.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    if values.null_count:
        raise DataFormatError("null item inside a transaction")
    if offsets[0] != 0:
        offsets = offsets - offsets[0]
    return offsets, values


def arrow_list_to_csr(col: pa.ChunkedArray | pa.Array, n_items: int, *, validate: bool = True) -> sp.csr_array:
    """CSR block from a ``list<int32>`` column of column ids: offsets/values are used in place.

    With ``validate`` the ids are range-checked and checked to be sorted and unique per row.
    """
    offsets, values = _offsets_values(_list_chunk(col))
    if not pa.types.is_integer(values.type):
        raise DataFormatError(f"items must be integer column ids, found {values.type}")
    ids = values.to_numpy(zero_copy_only=False)
    if ids.dtype != np.int32:
        ids = ids.astype(np.int32)
    if validate and ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= n_items:
            raise ItemIdError(f"item column id {lo if lo < 0 else hi} outside 0..{n_items - 1}")
        if not K.canonical_mask(offsets, ids):
            raise DataFormatError("items of a transaction are not sorted and unique (corrupt dataset)")
    indptr = offsets if offsets.dtype == np.int32 else offsets.astype(np.int32)
    return sp.csr_array((np.ones(ids.size, np.int32), ids, indptr), shape=(offsets.size - 1, int(n_items)))


def arrow_list_to_labels(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, labels)`` of a list column of item labels (ints or strings)."""
    offsets, values = _offsets_values(_list_chunk(col))
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        labels = np.asarray(values.to_pylist(), dtype=str) if len(values) else np.zeros(0, "<U1")
    elif pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        labels = values.to_numpy(zero_copy_only=False)
    else:
        raise DataFormatError(f"items must be integers or strings, found {values.type}")
    return offsets.astype(np.int64), K.normalize_labels(labels)


def csr_to_arrow_list(block: sp.csr_array) -> pa.ListArray:
    """``list<int32>`` array sharing the CSR buffers."""
    offsets = pa.array(block.indptr.astype(np.int32, copy=False))
    values = pa.array(block.indices.astype(np.int32, copy=False))
    return pa.ListArray.from_arrays(offsets, values, type=pa.list_(pa.int32()))


# ---------------------------------------------------------------------- metadata
def public_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Check that metadata holds only public, JSON-serialisable parameters.

    Raises
    ------
    InvalidParameter
        A value is a :class:`~ppdm_dask.random.Key` or a name looks like a secret.
    """
    from ..random import Key

    out = {}
    for k, v in metadata.items():
        if isinstance(v, Key) or any(w in str(k).lower() for w in _SECRET_WORDS):
            raise InvalidParameter(f"metadata entry {k!r} looks secret; keys and seeds are never written")
        try:
            json.dumps(v)
        except TypeError:
            raise InvalidParameter(f"metadata entry {k!r} is not JSON-serialisable") from None
        out[str(k)] = v
    return out


# ---------------------------------------------------------------------- writing
def transactions_table(
    block: sp.csr_array, weights: sp.csr_array | None, cols: Mapping[str, np.ndarray], kv: bytes | None = None
) -> pa.Table:
    """One part file's table: ``items`` (+ ``weights``, row-aligned columns), metadata ``ppdm``."""
    arrays = {"items": csr_to_arrow_list(block)}
    if weights is not None:
        offsets = pa.array(weights.indptr.astype(np.int32, copy=False))
        arrays["weights"] = pa.ListArray.from_arrays(
            offsets, pa.array(weights.data.astype(np.float32)), type=pa.list_(pa.float32())
        )
    for name, values in cols.items():
        arrays[name] = pa.array(np.asarray(values))
    table = pa.table(arrays) if arrays else pa.table({})
    return table.replace_schema_metadata({b"ppdm": kv}) if kv is not None else table


def table_transactions(
    table: pa.Table, n_items: int, *, validate: bool = True, weights: bool = False
) -> tuple[sp.csr_array, sp.csr_array | None]:
    """``(items, weights)`` CSR blocks of a part file's table (inverse of :func:`transactions_table`)."""
    if table.num_rows == 0:
        return sp.csr_array((0, n_items), dtype=np.int32), (sp.csr_array((0, n_items), dtype=np.float32) if weights else None)
    block = arrow_list_to_csr(table.column("items"), n_items, validate=validate)
    if not weights:
        return block, None
    offs, vals = _offsets_values(_list_chunk(table.column("weights")))
    if not np.array_equal(offs, block.indptr):
        raise DataFormatError("weights are not aligned with items")
    w = sp.csr_array((vals.to_numpy(zero_copy_only=False).astype(np.float32), block.indices, block.indptr), shape=block.shape)
    return block, w


def _write_part(
    fs, path: str, block: sp.csr_array, weights: sp.csr_array | None, cols: dict[str, np.ndarray], kv: bytes, compression: str
) -> dict[str, Any]:
    entry = write_part(fs, path, transactions_table(block, weights, cols, kv), compression=compression)
    return {**entry, "nnz": int(block.indices.size)}


def write_parquet(
    tx: Any,
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    compression: str = "zstd",
    progress: bool = False,
) -> dict[str, Any]:
    """Write ``tx`` as a ppdm Parquet dataset at ``url``, atomically.

    Parameters
    ----------
    tx : TransactionArray
    url : str
        Target folder: a local path or any fsspec URL (``s3://bucket/prefix``).
    storage_options : mapping, optional
        Passed to fsspec (e.g. ``{"endpoint_url": ..., "key": ..., "secret": ...}``).
    overwrite : bool
        Replace an existing dataset (the old one is removed only after the new one is
        fully written).
    compression : str
        Parquet codec.

    Returns
    -------
    dict
        The manifest written to ``_SUCCESS``.
    """
    from ..progress import compute

    meta = public_metadata(tx.metadata)
    kv = json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION, "n_items": tx.n_items, "metadata": meta}).encode()
    names = [f"part-{i:05d}.parquet" for i in range(tx.n_partitions)]
    blocks = tx.blocks.to_delayed().ravel()
    weights = tx.weights.to_delayed().ravel() if tx.weights is not None else [None] * len(blocks)
    col_parts = {k: v.to_delayed().ravel() for k, v in tx.columns.items()}

    def write(fs, tmp: str) -> dict[str, Any]:
        writes = [
            dask.delayed(_write_part, pure=False)(
                fs,
                posixpath.join(tmp, names[i]),
                blocks[i],
                weights[i],
                {k: parts[i] for k, parts in col_parts.items()},
                kv,
                compression,
            )
            for i in range(len(blocks))
        ]
        (results,) = compute(writes, progress=progress)
        vocab = write_part(
            fs, posixpath.join(tmp, VOCABULARY_FILE), pa.table({"label": pa.array(tx.vocabulary.labels)}), compression=compression
        )
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "n_transactions": int(sum(r["rows"] for r in results)),
            "n_items": tx.n_items,
            "nnz": int(sum(r["nnz"] for r in results)),
            "partitions": results,
            "vocabulary": VOCABULARY_FILE,
            "files": [vocab],
            "label_type": "int" if tx.vocabulary.is_integer else "str",
            "columns": sorted(tx.columns),
            "column_types": {k: np.dtype(v.dtype).str for k, v in sorted(tx.columns.items())},
            "weights": tx.weights is not None,
            "metadata": meta,
        }

    return write_folder(url, storage_options, overwrite, write)


# ---------------------------------------------------------------------- reading
def _part_transactions(table: pa.Table, entry: dict, folder: str, url: str, n_items: int, **kw: Any) -> Any:
    """The transactions of a part file read by :func:`read_part`; a part whose items decode but
    break the format (an altered byte that Parquet does not notice) is named in the error."""
    try:
        return table_transactions(table, n_items, **kw)
    except CorruptDatasetError:
        raise
    except DataFormatError as exc:  # the same kind of error, naming the file
        raise type(exc)(f"{url or folder}: {entry['file']}: {exc.args[0] if exc.args else exc}") from None


def _read_items(fs, folder: str, entry: dict, n_items: int, validate: bool, verify: bool, url: str) -> sp.csr_array:
    table = read_part(fs, folder, entry, columns=["items"], verify=verify, url=url)
    return _part_transactions(table, entry, folder, url, n_items, validate=validate)[0]


def _read_weights(fs, folder: str, entry: dict, n_items: int, verify: bool, url: str) -> sp.csr_array:
    table = read_part(fs, folder, entry, columns=["items", "weights"], verify=verify, url=url)
    return _part_transactions(table, entry, folder, url, n_items, validate=False, weights=True)[1]


def read_column(fs, folder: str, entry: dict, name: str, verify: bool = False, url: str | None = None) -> np.ndarray:
    """One row-aligned column of a part file listed in a manifest (checked like every part)."""
    return read_part(fs, folder, entry, columns=[name], verify=verify, url=url).column(name).to_numpy()


def _read_labels_row_group(fs, path: str, row_group: int, column: str) -> tuple[np.ndarray, np.ndarray]:
    with fs.open(path, "rb") as fh:
        pf = pq.ParquetFile(fh)
        table = pf.read_row_group(row_group, columns=[column])
    return arrow_list_to_labels(table.column(column))


def _is_ppdm_file(fs, path: str) -> bool:
    try:
        with fs.open(path, "rb") as fh:
            md = pq.ParquetFile(fh).schema_arrow.metadata or {}
    except Exception:
        return False
    return b"ppdm" in md


def read_parquet(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    items_column: str = "items",
    validate: bool = True,
    verify: bool = False,
    progress: bool = False,
) -> Any:
    """Read a Parquet dataset as a TransactionArray (lazy for ppdm datasets).

    Parameters
    ----------
    url : str
        A ppdm dataset folder, or any Parquet file/folder with a list column of item labels.
    storage_options : mapping, optional
        fsspec options (credentials, ``endpoint_url`` ...).
    items_column : str
        Name of the list column of item labels in foreign Parquet data (strings or integers;
        CLI: ``--items-column``). An event table (one row per user and item) is read with
        :func:`ppdm_dask.data.events.read_events` instead.
    validate : bool
        Range- and order-check item ids of ppdm datasets while reading (cheap, vectorised).
    verify : bool
        Also check every part file of a ppdm dataset against its SHA-256 in the manifest
        (CLI: ``--verify-input``). Missing or resized parts and wrong row counts are always
        detected.

    Raises
    ------
    DatasetNotFoundError, IncompleteDatasetError, DataFormatError, CorruptDatasetError
    """
    fs, path = open_fs(url, storage_options)
    if not fs.exists(path):
        raise DatasetNotFoundError(f"no dataset at {url}")
    if fs.isdir(path):
        manifest_path = posixpath.join(path, MANIFEST)
        if fs.exists(manifest_path):
            return _read_ppdm(fs, path, manifest_path, url, validate, verify)
        files = sorted(
            p for p in fs.ls(path, detail=False) if p.endswith(".parquet") and not posixpath.basename(p).startswith(("_", "."))
        )
        if not files:
            raise DatasetNotFoundError(f"no Parquet files in {url}")
        if any(_is_ppdm_file(fs, f) for f in files[:1]):
            raise IncompleteDatasetError(
                f"{url} holds an uncommitted ppdm dataset (no {MANIFEST}); the job that wrote it failed or is still running"
            )
    else:
        files = [path]
        if _is_ppdm_file(fs, path):
            raise IncompleteDatasetError(f"{url} is one part of a ppdm dataset; read its folder")
    return _read_foreign(fs, files, items_column, url, progress)


def _read_ppdm(fs, path: str, manifest_path: str, url: str, validate: bool, verify: bool = False):
    try:
        manifest = read_manifest(fs, manifest_path, url, FORMAT_NAME, FORMAT_VERSION)
    except DataFormatError:
        from .folder import load_manifest_json
        from .kind import kind_of_manifest_format, refuse_table

        doc = load_manifest_json(fs, manifest_path, url)  # a table release given as baskets: say which commands read it
        refuse_table(url, kind_of_manifest_format(doc.get("format") if isinstance(doc, dict) else None), text=False)
        raise
    return transactions_from_manifest(fs, path, manifest, url, validate=validate, verify=verify)


def transactions_from_manifest(
    fs, path: str, manifest: Mapping[str, Any], url: str, *, validate: bool = True, verify: bool = False
) -> Any:
    """The lazy TransactionArray of a committed (or just written) ppdm transaction folder,
    its part files checked against ``manifest`` (see :func:`read_parquet`)."""
    import dask.array as da

    from .transactions import TransactionArray

    parts = list(manifest["partitions"])
    extra = [e for e in manifest.get("files", []) if e.get("file") == manifest["vocabulary"]]
    check_listing(fs, path, parts + extra, url)
    n_items = int(manifest["n_items"])
    vocab_entry = extra[0] if extra else {"file": manifest["vocabulary"]}
    labels = read_part(fs, path, vocab_entry, verify=verify, url=url).column("label").to_numpy(zero_copy_only=False)
    vocab = Vocabulary(labels, assume_sorted=True)
    if len(vocab) != n_items:
        raise DataFormatError(f"{url}: vocabulary has {len(vocab)} labels, manifest says {n_items} items")
    rows = [int(p["rows"]) for p in parts]
    token = unique_name("read-parquet", url, manifest, verify)
    blocks = blocks_from_tasks(token, [(_read_items, fs, path, e, n_items, validate, verify, url) for e in parts], rows, n_items)
    weights = None
    if manifest.get("weights"):
        weights = blocks_from_tasks(
            "w" + token,
            [(_read_weights, fs, path, e, n_items, verify, url) for e in parts],
            rows,
            n_items,
            meta=sp.csr_array((0, 0), dtype=np.float32),
            dtype=np.float32,
        )
    columns = {}
    types = manifest.get("column_types", {})
    for name in manifest.get("columns", []):
        dtype = np.dtype(types.get(name, "int64"))
        arrs = [
            da.from_delayed(dask.delayed(read_column, pure=True)(fs, path, e, name, verify, url), shape=(r,), dtype=dtype)
            for e, r in zip(parts, rows)
        ]
        columns[name] = concat_rows(arrs, rows, dtype=dtype)
    nnz = [p.get("nnz") for p in parts]
    return TransactionArray(
        blocks,
        vocab,
        metadata=manifest.get("metadata", {}),
        columns=columns,
        weights=weights,
        partition_nnz=None if None in nnz else nnz,
    )


def _read_foreign(fs, files: list[str], column: str, url: str, progress: bool = False):
    from .transactions import TransactionArray

    sources = []
    for f in files:
        try:
            with fs.open(f, "rb") as fh:
                pf = pq.ParquetFile(fh)
                schema = pf.schema_arrow
                n_groups = pf.metadata.num_row_groups
        except Exception as exc:
            raise DataFormatError(f"{url}: unreadable Parquet file {posixpath.basename(f)} ({exc})") from None
        _check_items_column(url, schema, column)
        for g in range(n_groups):
            sources.append(dask.delayed(_read_labels_row_group, pure=True)(fs, f, g, column))
    if not sources:
        return TransactionArray.from_lists([])
    return TransactionArray.from_label_blocks(sources, metadata={"source": url}, progress=progress)


def _check_items_column(url: str, schema: pa.Schema, column: str) -> None:
    """Refuse a foreign Parquet file without the list column ``column``, saying what it holds:
    another list column (give its name), scalar columns only (an event table, one row per user
    and item, or a relational table)."""
    from .kind import TABLE_COMMANDS, kind_of_parquet_schema

    types = dict(zip(schema.names, schema.types))
    lists = [n for n, t in types.items() if pa.types.is_list(t) or pa.types.is_large_list(t)]
    if column in types and column not in lists:
        raise DataFormatError(
            f"{url}: column {column!r} has type {types[column]}, expected a list of items",
            fix="`items_column` naming a list column"
            + (f" ({', '.join(lists)})" if lists else "")
            + "; an event table (one row per user and item) is grouped into baskets by `user` and `item`",
        )
    if column in lists:
        return
    if lists:
        raise DataFormatError(
            f"{url}: no list column {column!r}; its list columns: {', '.join(lists)}",
            fix=f"`items_column` {lists[0]}",
        )
    kind = kind_of_parquet_schema(schema.names, schema.types, column)
    if kind.kind == "table":
        raise DataFormatError(
            f"{url} is a table, not baskets ({kind.reason})",
            fix="an event table (one row per user and item) is grouped into baskets by its `user` and `item` "
            f"columns; other tables are released with {TABLE_COMMANDS}",
        )
    raise DataFormatError(f"{url}: no column {column!r} (columns: {schema.names})", fix="`items_column`")

"""Parquet layout of a TransactionArray, on any fsspec URL, with atomic commits.

Layout of a dataset at ``URL`` (a folder)::

    URL/part-00000.parquet ...   one file per partition, one row group each;
                                 column ``items: list<int32>`` holds column ids, optional
                                 ``weights: list<float32>``, ``label``, ``record_id``,
                                 ``privacy_level``; key-value metadata ``ppdm`` (public only)
    URL/_vocabulary.parquet      column ``label``: the item label of each column id
    URL/_SUCCESS                 JSON manifest, written last: the commit marker

Writes go to a sibling temporary prefix ``URL.__ppdm_tmp-<random>``, which is moved to ``URL``
only after every partition is written; ``_SUCCESS`` is written after the move. A reader refuses
a ppdm folder without ``_SUCCESS``, so a failed or running job never yields a readable partial
dataset. On a local file system the move is a single rename.

Any other Parquet file or folder with a list column (default ``items``) is read as foreign
data: its values are item labels (ints or strings), and a vocabulary is built in a first pass.
"""

from __future__ import annotations

import json
import posixpath
import secrets
from typing import Any, Callable, Mapping

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from ..errors import (
    DataFormatError,
    DatasetExistsError,
    DatasetNotFoundError,
    IncompleteDatasetError,
    InvalidParameter,
    ItemIdError,
)
from . import _kernels as K
from ._graph import blocks_from_tasks, concat_rows, unique_name
from .vocabulary import Vocabulary

__all__ = [
    "write_parquet",
    "read_parquet",
    "arrow_list_to_csr",
    "arrow_list_to_labels",
    "csr_to_arrow_list",
    "public_metadata",
    "FORMAT_NAME",
]

FORMAT_NAME = "ppdm-transactions"
FORMAT_VERSION = 1
MANIFEST = "_SUCCESS"
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
def _fs(url: str, storage_options: Mapping[str, Any] | None):
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except (ValueError, ImportError) as exc:
        raise DataFormatError(f"cannot open {url}: {exc}") from None
    return fs, path.rstrip("/") or path


def _write_part(fs, path: str, block: sp.csr_array, weights: sp.csr_array | None, cols: dict[str, np.ndarray], kv: bytes, compression: str) -> tuple[int, int]:
    arrays = {"items": csr_to_arrow_list(block)}
    if weights is not None:
        offsets = pa.array(weights.indptr.astype(np.int32, copy=False))
        arrays["weights"] = pa.ListArray.from_arrays(offsets, pa.array(weights.data.astype(np.float32)), type=pa.list_(pa.float32()))
    for name, values in cols.items():
        arrays[name] = pa.array(np.asarray(values))
    table = pa.table(arrays)
    table = table.replace_schema_metadata({b"ppdm": kv})
    with fs.open(path, "wb") as fh:
        # one row group per partition: row_group_size >= rows
        pq.write_table(table, fh, compression=compression, row_group_size=max(block.shape[0], 1))
    return int(block.shape[0]), int(block.indices.size)


def write_parquet(
    tx: Any,
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    compression: str = "zstd",
    progress: bool = True,
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
                fs, posixpath.join(tmp, names[i]), blocks[i], weights[i],
                {k: parts[i] for k, parts in col_parts.items()}, kv, compression,
            )
            for i in range(len(blocks))
        ]
        (results,) = compute(writes, progress=progress)
        vocab_table = pa.table({"label": pa.array(tx.vocabulary.labels)})
        with fs.open(posixpath.join(tmp, VOCABULARY_FILE), "wb") as fh:
            pq.write_table(vocab_table, fh, compression=compression)
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "n_transactions": int(sum(r for r, _ in results)),
            "n_items": tx.n_items,
            "nnz": int(sum(z for _, z in results)),
            "partitions": [{"file": n, "rows": r, "nnz": z} for n, (r, z) in zip(names, results)],
            "vocabulary": VOCABULARY_FILE,
            "label_type": "int" if tx.vocabulary.is_integer else "str",
            "columns": sorted(tx.columns),
            "weights": tx.weights is not None,
            "metadata": meta,
        }

    return write_folder(url, storage_options, overwrite, write)


def write_folder(
    url: str,
    storage_options: Mapping[str, Any] | None,
    overwrite: bool,
    write: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """The atomic folder protocol of every ppdm dataset: run ``write(fs, tmp) -> manifest`` in a
    sibling temporary folder, commit it to ``url`` (:func:`commit_folder`), then write the
    manifest ``_SUCCESS`` last; on any failure the temporary folder is removed and an existing
    dataset is left untouched."""
    fs, path = _fs(url, storage_options)
    if fs.exists(path) and not overwrite:
        raise DatasetExistsError(f"{url} already exists; pass overwrite=True (CLI: --overwrite) to replace it")
    tmp = f"{path}.__ppdm_tmp-{secrets.token_hex(6)}"
    fs.makedirs(tmp, exist_ok=True)
    try:
        manifest = write(fs, tmp)
        if fs.exists(path):
            fs.rm(path, recursive=True)
        commit_folder(fs, tmp, path)
        with fs.open(posixpath.join(path, MANIFEST), "w") as fh:
            fh.write(json.dumps(manifest, indent=1))
    except BaseException:
        try:
            fs.rm(tmp, recursive=True)
        except Exception:  # the original error matters more than the cleanup's
            pass
        raise
    return manifest


def _is_local(fs) -> bool:
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return bool({"file", "local"} & set(protocols))


def commit_folder(fs, tmp: str, path: str) -> None:
    """Move the finished temporary folder ``tmp`` to ``path``.

    Local file systems: one atomic rename. Object stores have no rename: each object is
    copied to its final key, then the temporary prefix is deleted; readers still see nothing
    until the manifest is written after this returns.
    """
    if _is_local(fs):
        fs.mv(tmp, path, recursive=True)
        return
    files = [f for f in fs.find(tmp) if not f.endswith("/")]
    for f in files:
        fs.copy(f, posixpath.join(path, posixpath.relpath(f, tmp)))
    fs.rm(tmp, recursive=True)


# ---------------------------------------------------------------------- reading
def _read_part(fs, path: str, n_items: int, validate: bool) -> sp.csr_array:
    with fs.open(path, "rb") as fh:
        table = pq.read_table(fh, columns=["items"])
    if table.num_rows == 0:
        return sp.csr_array((0, n_items), dtype=np.int32)
    return arrow_list_to_csr(table.column("items"), n_items, validate=validate)


def _read_weights(fs, path: str, n_items: int) -> sp.csr_array:
    with fs.open(path, "rb") as fh:
        table = pq.read_table(fh, columns=["items", "weights"])
    if table.num_rows == 0:
        return sp.csr_array((0, n_items), dtype=np.float32)
    block = arrow_list_to_csr(table.column("items"), n_items, validate=False)
    offs, vals = _offsets_values(_list_chunk(table.column("weights")))
    if not np.array_equal(offs, block.indptr):
        raise DataFormatError("weights are not aligned with items")
    return sp.csr_array((vals.to_numpy(zero_copy_only=False).astype(np.float32), block.indices, block.indptr), shape=block.shape)


def _read_column(fs, path: str, name: str) -> np.ndarray:
    with fs.open(path, "rb") as fh:
        table = pq.read_table(fh, columns=[name])
    return table.column(name).to_numpy()


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
    column: str = "items",
    validate: bool = True,
    progress: bool = True,
) -> Any:
    """Read a Parquet dataset as a TransactionArray (lazy for ppdm datasets).

    Parameters
    ----------
    url : str
        A ppdm dataset folder, or any Parquet file/folder with a list column of item labels.
    storage_options : mapping, optional
        fsspec options (credentials, ``endpoint_url`` ...).
    column : str
        Name of the list column for foreign Parquet data.
    validate : bool
        Range- and order-check item ids of ppdm datasets while reading (cheap, vectorised).

    Raises
    ------
    DatasetNotFoundError, IncompleteDatasetError, DataFormatError
    """
    fs, path = _fs(url, storage_options)
    if not fs.exists(path):
        raise DatasetNotFoundError(f"no dataset at {url}")
    if fs.isdir(path):
        manifest_path = posixpath.join(path, MANIFEST)
        if fs.exists(manifest_path):
            return _read_ppdm(fs, path, manifest_path, url, validate)
        files = sorted(p for p in fs.ls(path, detail=False) if p.endswith(".parquet") and not posixpath.basename(p).startswith("_"))
        if not files:
            raise DatasetNotFoundError(f"no Parquet files in {url}")
        if any(_is_ppdm_file(fs, f) for f in files[:1]):
            raise IncompleteDatasetError(f"{url} holds an uncommitted ppdm dataset (no {MANIFEST}); the job that wrote it failed or is still running")
    else:
        files = [path]
        if _is_ppdm_file(fs, path):
            raise IncompleteDatasetError(f"{url} is one part of a ppdm dataset; read its folder")
    return _read_foreign(fs, files, column, url, progress)


def read_manifest(fs, manifest_path: str, url: str, format_name: str, max_version: int) -> dict[str, Any]:
    """The ``_SUCCESS`` manifest of a committed dataset, checked to be ``format_name`` written by
    this or an older format version (every ppdm dataset reader starts here)."""
    try:
        with fs.open(manifest_path, "r") as fh:
            manifest = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataFormatError(f"{url}: unreadable {MANIFEST} manifest") from None
    if manifest.get("format") != format_name:
        raise DataFormatError(f"{url}: not a {format_name} dataset")
    if manifest.get("version", 0) > max_version:
        raise DataFormatError(f"{url}: written by a newer ppdm-dask (format version {manifest['version']})")
    return manifest


def _read_ppdm(fs, path: str, manifest_path: str, url: str, validate: bool):
    from .transactions import TransactionArray
    import dask.array as da

    manifest = read_manifest(fs, manifest_path, url, FORMAT_NAME, FORMAT_VERSION)
    n_items = int(manifest["n_items"])
    with fs.open(posixpath.join(path, manifest["vocabulary"]), "rb") as fh:
        labels = pq.read_table(fh).column("label").to_numpy(zero_copy_only=False)
    vocab = Vocabulary(labels, assume_sorted=True)
    if len(vocab) != n_items:
        raise DataFormatError(f"{url}: vocabulary has {len(vocab)} labels, manifest says {n_items} items")
    parts = manifest["partitions"]
    files = [posixpath.join(path, p["file"]) for p in parts]
    rows = [int(p["rows"]) for p in parts]
    token = unique_name("read-parquet", url, manifest)
    blocks = blocks_from_tasks(token, [(_read_part, fs, f, n_items, validate) for f in files], rows, n_items)
    weights = None
    if manifest.get("weights"):
        weights = blocks_from_tasks(
            "w" + token, [(_read_weights, fs, f, n_items) for f in files], rows, n_items,
            meta=sp.csr_array((0, 0), dtype=np.float32), dtype=np.float32,
        )
    columns = {}
    for name in manifest.get("columns", []):
        arrs = [da.from_delayed(dask.delayed(_read_column, pure=True)(fs, f, name), shape=(r,), dtype=np.int64) for f, r in zip(files, rows)]
        columns[name] = concat_rows(arrs, rows)
    return TransactionArray(blocks, vocab, metadata=manifest.get("metadata", {}), columns=columns, weights=weights)


def _read_foreign(fs, files: list[str], column: str, url: str, progress: bool = True):
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
        if column not in schema.names:
            raise DataFormatError(f"{url}: no column {column!r} (columns: {schema.names})")
        typ = schema.field(column).type
        if not (pa.types.is_list(typ) or pa.types.is_large_list(typ)):
            raise DataFormatError(f"{url}: column {column!r} has type {typ}, expected a list of items")
        for g in range(n_groups):
            sources.append(dask.delayed(_read_labels_row_group, pure=True)(fs, f, g, column))
    if not sources:
        return TransactionArray.from_lists([])
    return TransactionArray.from_label_blocks(sources, metadata={"source": url}, progress=progress)

"""Numeric tables in and condensed releases out (Parquet or CSV on any fsspec URL).

A condensed release is a folder written atomically (:func:`ppdm_dask.data.folder.write_folder`):

* ``part-NNNNN.parquet`` — the pseudo-data, one float64 column per input attribute (same names);
* ``_groups.parquet`` — the published group statistics, one row per group: ``n``, ``Ps``,
  ``Fs`` (list of d values) and ``Sc`` (list of d·d values, row-major);
* ``_SUCCESS`` — the manifest (counts, attribute names, privacy summary; never a key or a member).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from ..errors import DataFormatError, InvalidParameter
from .groups import GroupTable

__all__ = ["read_table", "table_to_array", "write_release", "read_groups"]

FORMAT_NAME = "ppdm-condensed"
FORMAT_VERSION = 1
GROUPS_FILE = "_groups.parquet"  # leading underscore: dataset readers skip it


def read_table(url: str, *, storage_options: Mapping[str, Any] | None = None, sep: str = ",",
               pyarrow: bool = False) -> dd.DataFrame:
    """A Parquet dataset/file or a CSV file (by extension; ``sep`` separated) as a dask DataFrame
    (with pyarrow dtypes when ``pyarrow``)."""
    opts = dict(storage_options or {})
    kw = {"dtype_backend": "pyarrow"} if pyarrow else {}
    if url.rstrip("/").endswith((".csv", ".csv.gz", ".txt")):
        return dd.read_csv(url, storage_options=opts, blocksize="64MB", sep=sep, **kw)
    return dd.read_parquet(url, storage_options=opts, **kw)


def table_to_array(df: dd.DataFrame, *, columns: list[str] | None = None, exclude: tuple[str, ...] = ()) -> tuple[da.Array, list[str]]:
    """The numeric attributes of ``df`` as a float64 dask array with known row chunks.

    ``columns`` selects attributes (default: every numeric column not in ``exclude``); a
    selected non-numeric column is an error (no silent drop).
    """
    if columns is None:
        columns = [c for c in df.columns if c not in exclude and is_numeric_dtype(df[c].dtype) and not is_bool_dtype(df[c].dtype)]
        skipped = [c for c in df.columns if c not in exclude and c not in columns]
        if skipped:
            raise DataFormatError(f"non-numeric columns {skipped}: pass the attributes to condense explicitly (--columns)")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidParameter(f"unknown columns {missing}; the table has {list(df.columns)}")
    if not columns:
        raise InvalidParameter("no numeric attributes to condense")
    X = df[columns].astype("float64").to_dask_array(lengths=True)
    return X, list(columns)


def _write_part(fs: Any, path: str, block: np.ndarray, columns: list[str]) -> int:
    table = pa.table({c: pa.array(block[:, j]) for j, c in enumerate(columns)})
    with fs.open(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return int(block.shape[0])


def write_release(
    url: str,
    groups: GroupTable,
    pseudo: da.Array,
    columns: list[str],
    *,
    summary: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Write pseudo-data and group statistics atomically; returns the manifest."""
    from ..data.folder import write_folder
    from ..progress import compute

    if pseudo.shape[1] != len(columns) or groups.d != len(columns):
        raise InvalidParameter("pseudo-data, groups and column names disagree on the number of attributes")
    blocks = pseudo.to_delayed().ravel()
    names = [f"part-{i:05d}.parquet" for i in range(len(blocks))]
    pub = groups.published()

    def write(fs: Any, tmp: str) -> dict[str, Any]:
        writes = [dask.delayed(_write_part, pure=False)(fs, posixpath.join(tmp, n), b, columns) for n, b in zip(names, blocks)]
        (rows,) = compute(writes, progress=progress)
        G, d = len(groups), groups.d
        gt = pa.table({
            "n": pa.array(pub["n"].astype(np.int64)),
            "Ps": pa.array(pub["Ps"].astype(np.float64)),
            "Fs": pa.FixedSizeListArray.from_arrays(pa.array(pub["Fs"].reshape(-1)), d) if G else pa.array([], pa.list_(pa.float64(), d)),
            "Sc": pa.FixedSizeListArray.from_arrays(pa.array(pub["Sc"].reshape(-1)), d * d) if G else pa.array([], pa.list_(pa.float64(), d * d)),
        })
        with fs.open(posixpath.join(tmp, GROUPS_FILE), "wb") as fh:
            pq.write_table(gt, fh, compression="zstd")
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "columns": list(columns),
            "n_records": int(sum(rows)),
            "n_groups": int(G),
            "partitions": [{"file": n, "rows": r} for n, r in zip(names, rows)],
            "groups": GROUPS_FILE,
            **dict(summary or {}),
        }

    return write_folder(url, storage_options, overwrite, write)


def read_groups(url: str, *, storage_options: Mapping[str, Any] | None = None) -> tuple[GroupTable, list[str]]:
    """The published group statistics of a release written by :func:`write_release`."""
    from ..data.folder import MANIFEST, open_fs, read_manifest

    fs, path = open_fs(url, storage_options)
    manifest = read_manifest(fs, posixpath.join(path, MANIFEST), url, FORMAT_NAME, FORMAT_VERSION)
    with fs.open(posixpath.join(path, GROUPS_FILE), "rb") as fh:
        t = pq.read_table(fh)
    d = len(manifest["columns"])
    n = t.column("n").to_numpy()
    Fs = np.asarray(t.column("Fs").combine_chunks().flatten()).reshape(-1, d)
    Sc = np.asarray(t.column("Sc").combine_chunks().flatten()).reshape(-1, d, d)
    return GroupTable.from_published(n, Fs, Sc, t.column("Ps").to_numpy()), manifest["columns"]

"""Published sketches (:class:`SketchArray`), their computation (:func:`sketch`) and Parquet I/O.

Parquet layout of a sketch dataset at ``URL`` (a folder, the commit protocol of
:mod:`ppdm_dask.data.folder`; format version 2)::

    URL/part-00000.parquet ...  one file (one row group) per block: ``sketch: list<float32>``
                                with exactly m_i values per record (suppressed records are left
                                out, or kept as empty lists), ``m: int32``, carried row columns
                                (``label`` ...)
    URL/_SUCCESS                JSON manifest written last: format, generator (public seed),
                                public metadata, ``n_records`` (input), ``n_suppressed``,
                                ``n_published``, every part with its rows, bytes and SHA-256

A release (:class:`~ppdm_dask.sketch.release.SketchRelease`) has the same layout, its rows in
a keyed random order and the release record in the manifest; its manifest and part entries
leave out ``n_records`` and ``n_suppressed`` (figures of the input) unless the suppressed
records are written as empty rows.

Values are stored as float32 on disk (half the bytes; relative error 6e-8, far below the
sketches' own statistical error) and are float64 in memory.
"""

from __future__ import annotations

import json
import numbers
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import pyarrow as pa

from ..data.folder import MANIFEST, check_listing, open_fs, read_manifest, read_part, write_folder, write_part
from ..data.parquet import public_metadata, read_column
from ..errors import (
    CorruptDatasetError,
    DataFormatError,
    DatasetNotFoundError,
    IncompleteDatasetError,
    InvalidParameter,
)
from ..graph import blocks_from_tasks, concat_rows, unique_name
from ..random import KeyLike
from .generator import SketchGenerator

__all__ = [
    "SketchArray",
    "sketch",
    "read_sketches",
    "sketches_from_manifest",
    "sketch_table",
    "compact_table",
    "compact_values",
    "FORMAT_NAME",
    "resolve_generator",
]

FORMAT_NAME = "ppdm-sketches"
#: 2: every part hashed in the manifest (rows, bytes, SHA-256), ``n_published``
FORMAT_VERSION = 2
_VALUES_META = np.empty((0, 0), dtype=np.float64)


class SketchArray:
    """Published sketches of N records: zero-padded values plus the number of components.

    Parameters
    ----------
    values : dask.array.Array
        float64 ``(N, m_max)``, chunks ``((rows...), (m_max,))``; row i holds its ``m[i]``
        components followed by zeros (zero padding makes the plain row dot product of two
        sketches the sum over their first ``min(m_i, m_j)`` components).
    m : dask.array.Array
        int32 ``(N,)`` with the row chunks of ``values``; 0 means suppressed.
    generator : SketchGenerator
        The shared public ±1 generator (needed to reconstruct attributes).
    n_items : int
        Dimension d of the original records.
    columns : mapping of str to dask.array.Array, optional
        Row-aligned columns carried over from the input (``label``, ``record_id`` ...).
    metadata : mapping, optional
        Public parameters (method, delta or k, m_max ...); never a key.
    """

    def __init__(
        self,
        values: da.Array,
        m: da.Array,
        generator: SketchGenerator,
        n_items: int,
        *,
        columns: Mapping[str, da.Array] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if values.ndim != 2 or len(values.chunks[1]) != 1:
            raise DataFormatError("sketch values must be 2-D with a single chunk along the components")
        if m.ndim != 1 or m.chunks[0] != values.chunks[0]:
            raise DataFormatError("m must be 1-D with the row chunks of the values")
        if not isinstance(generator, SketchGenerator):
            raise InvalidParameter("generator must be a SketchGenerator")
        self.values = values
        self.m = m
        self.generator = generator
        self.n_items = int(n_items)
        self.columns: dict[str, da.Array] = {}
        for name, col in (columns or {}).items():
            if col.ndim != 1 or col.chunks[0] != values.chunks[0]:
                raise DataFormatError(f"column {name!r} is not aligned with the sketch rows")
            self.columns[name] = col
        self.metadata: dict[str, Any] = dict(metadata or {})

    # ------------------------------------------------------------------ properties
    @property
    def n_records(self) -> int:
        """Number of records N (suppressed ones included)."""
        return int(self.values.shape[0])

    @property
    def m_max(self) -> int:
        """Width of the padded value matrix (the largest allowed m_i)."""
        return int(self.values.shape[1])

    @property
    def n_partitions(self) -> int:
        """Number of row blocks."""
        return int(self.values.numblocks[0])

    @property
    def partition_rows(self) -> tuple[int, ...]:
        """Rows in each partition."""
        return tuple(int(c) for c in self.values.chunks[0])

    def __len__(self) -> int:
        return self.n_records

    def __repr__(self) -> str:
        return (
            f"SketchArray(n_records={self.n_records}, m_max={self.m_max}, n_items={self.n_items}, "
            f"n_partitions={self.n_partitions}, generator={self.generator!r}, columns={sorted(self.columns)})"
        )

    def _replace(self, **changes: Any) -> SketchArray:
        kw: dict[str, Any] = dict(
            values=self.values,
            m=self.m,
            generator=self.generator,
            n_items=self.n_items,
            columns=self.columns,
            metadata=self.metadata,
        )
        kw.update(changes)
        return SketchArray(kw.pop("values"), kw.pop("m"), kw.pop("generator"), kw.pop("n_items"), **kw)

    # ------------------------------------------------------------------ computing
    def compute(self, **compute_kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(values, m)`` as NumPy arrays (brings them to the client)."""
        from ..progress import compute

        values, m = compute(self.values, self.m, **compute_kwargs)
        return np.asarray(values, dtype=np.float64), np.asarray(m, dtype=np.int32)

    def persist(self, **kwargs: Any) -> SketchArray:
        """Persist values, m and columns in (cluster) memory."""
        from ..progress import persist

        names = list(self.columns)
        out = persist(self.values, self.m, *[self.columns[n] for n in names], **kwargs)
        return self._replace(values=out[0], m=out[1], columns=dict(zip(names, out[2:])))

    def summary(self, **compute_kwargs: Any) -> dict[str, Any]:
        """``n_records``, ``n_suppressed``, ``mean_components`` (over kept records) and
        ``m_max``. Computes only ``m`` (no sketching unless m depends on it); free after
        :meth:`persist`."""
        from ..progress import compute

        compute_kwargs.setdefault("progress", False)
        n_supp, total = compute((self.m == 0).sum(), self.m.astype(np.int64).sum(), **compute_kwargs)
        return _summary(self.n_records, int(n_supp), int(total), self.m_max)

    def n_suppressed(self, **compute_kwargs: Any) -> int:
        """Number of suppressed records (m_i = 0)."""
        return int(self.summary(**compute_kwargs)["n_suppressed"])

    # ------------------------------------------------------------------ I/O
    def to_parquet(
        self,
        url: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        overwrite: bool = False,
        compression: str = "zstd",
        progress: bool = False,
        keep_suppressed: bool = False,
    ) -> dict[str, Any]:
        """Write atomically as a sketch dataset (layout in the module docstring); returns the
        committed manifest, which includes the :meth:`summary` figures computed in the same
        pass (``n_records`` = input records, ``n_suppressed`` of them). Suppressed records
        (m = 0) are left out of the files — a suppressed record publishes nothing, not even its
        label or id — unless ``keep_suppressed=True`` (rows with an empty sketch, for
        row-aligned releases). The generator's public seed is written; no key ever is. The rows
        are in input order: a release (keyed row order, verified) is written by
        :class:`~.release.SketchRelease`."""
        from ..progress import compute

        kv = part_metadata(self)
        names = [f"part-{i:05d}.parquet" for i in range(self.n_partitions)]
        vals = self.values.to_delayed().ravel()
        ms = self.m.to_delayed().ravel()
        col_parts = {k: v.to_delayed().ravel() for k, v in self.columns.items()}

        def write(fs: Any, tmp: str) -> dict[str, Any]:
            writes = [
                dask.delayed(_write_part, pure=False)(
                    fs,
                    posixpath.join(tmp, names[i]),
                    vals[i],
                    ms[i],
                    {k: parts[i] for k, parts in col_parts.items()},
                    kv,
                    compression,
                    keep_suppressed,
                )
                for i in range(len(names))
            ]
            (parts,) = compute(writes, progress=progress)
            return {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                **layout_fields(self, list(parts), keep_suppressed, self.columns),
                "partitions": list(parts),
            }

        return write_folder(url, storage_options, overwrite, write)


def _summary(n: int, n_suppressed: int, total: int, m_max: int) -> dict[str, Any]:
    kept = n - n_suppressed
    return {
        "n_records": int(n),
        "n_suppressed": int(n_suppressed),
        "mean_components": float(total / kept) if kept else 0.0,
        "m_max": int(m_max),
    }


# ---------------------------------------------------------------------- sketching
def _check_m_block(m: np.ndarray, m_max: int) -> np.ndarray:
    m = np.asarray(m)
    if m.size and (m.dtype.kind not in "iu" or m.min() < 0 or m.max() > m_max):
        raise InvalidParameter(f"numbers of components must be integers in [0, {m_max}]")
    return m.astype(np.int32, copy=False)


def _shipped_rows(values: np.ndarray, rows: Sequence[int], client: Any) -> da.Array:
    """A per-record driver array as a dask array chunked like ``rows``: on a distributed client
    each chunk travels to the workers once (:func:`~ppdm_dask.progress.ship`) instead of inside the
    task graph (40 MB of int32 at 10 M records); on the local schedulers it is embedded."""
    from ..progress import ship

    bounds = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)])
    pieces = ship([values[a:b] for a, b in zip(bounds[:-1], bounds[1:])], client)
    parts = [
        da.from_delayed(dask.delayed(np.asarray, pure=True)(piece), shape=(int(r),), dtype=values.dtype)
        for piece, r in zip(pieces, rows)
    ]
    return concat_rows(parts, rows, dtype=values.dtype)


def _sketch_task(
    block: Any, weights: Any, m: Any, generator: SketchGenerator, m_max: int, start: int = 0, stop: int | None = None
) -> np.ndarray:
    if stop is not None and (start, stop) != (0, block.shape[0]):  # a row range of the block
        block = block[start:stop]
        weights = weights[start:stop] if weights is not None else None
    if weights is not None:  # same structure as block; its data are the x values (e.g. counts)
        src, data = weights, weights.data
    else:
        src, data = block, np.ones(block.indices.size, dtype=np.float64)
    if not np.isscalar(m):
        m = _check_m_block(m, m_max)
    return generator.sketch_csr(src.indptr, src.indices, data, src.shape[0], m, m_max)


def resolve_generator(key: KeyLike, generator: SketchGenerator | None) -> SketchGenerator:
    """The sketch generator of ``key`` or the given ``generator`` (one of the two)."""
    if generator is not None and key is not None:
        raise InvalidParameter("pass either key or generator, not both")
    if generator is None:
        return SketchGenerator.from_key(key)
    if not isinstance(generator, SketchGenerator):
        raise InvalidParameter("generator must be a SketchGenerator")
    return generator


def sketch(
    tx: Any,
    n_components: int | np.ndarray | da.Array,
    *,
    key: KeyLike = None,
    generator: SketchGenerator | None = None,
    m_max: int | None = None,
    client: Any = None,
) -> SketchArray:
    """Sketch every record of a TransactionArray with the shared ±1 generator
    (docs/sketches.md#the-shared-sign-generator).

    Parameters
    ----------
    tx : TransactionArray
        Records; the values x are ``tx.weights`` when present (e.g. term counts), else 1.
    n_components : int, 1-D integer array or dask array
        Components per record: one int for all, or m_i per record (0 = suppressed). A dask
        array is aligned with (or rechunked to) the row blocks of ``tx``.
    key : Key, int or bytes, optional
        Secret key from which the public generator seed is derived one-way
        (:meth:`SketchGenerator.from_key`). Mutually exclusive with ``generator``; when both
        are omitted a fresh OS-entropy key is used.
    generator : SketchGenerator, optional
        An existing generator (to sketch data that will be compared with other sketches).
    m_max : int, optional
        Width of the padded values; default: the largest m_i (computed once for a dask
        ``n_components``).
    client : distributed.Client, optional
        Where a per-record ``n_components`` array is scattered (default: the active client, if
        any); the returned array then refers to that client's copy.

    Returns
    -------
    SketchArray
        Lazy; one MAP task per row block. Deterministic given the generator, hence identical
        for any partitioning and scheduler.
    """
    gen = resolve_generator(key, generator)
    rows = tx.partition_rows
    n = tx.n_transactions
    meta: dict[str, Any] = {"method": "sketch", "n_items": tx.n_items}
    if isinstance(n_components, numbers.Integral) and not isinstance(n_components, bool):
        n_comp = int(n_components)
        if n_comp < 0:
            raise InvalidParameter("n_components must be >= 0")
        m_max = n_comp if m_max is None else m_max
        m_da = da.full((n,), n_comp, dtype=np.int32, chunks=(rows,))
        meta["n_components"] = n_comp
        m_args: list[Any] = [n_comp] * len(rows)
    elif isinstance(n_components, da.Array):
        if n_components.ndim != 1 or n_components.shape[0] != n or n_components.dtype.kind not in "iu":
            raise InvalidParameter(f"n_components must be a 1-D integer array of length {n}")
        m_in = n_components if n_components.chunks[0] == rows else n_components.rechunk({0: rows})
        if m_max is None:
            from ..progress import compute

            (m_max,) = compute(m_in.max(), progress=False) if n else (0,)
        m_da = m_in.map_blocks(_check_m_block, int(m_max), dtype=np.int32)
        m_args = [(m_da.name, i) for i in range(len(rows))]
    else:
        arr = np.asarray(n_components)
        if arr.ndim != 1 or arr.shape[0] != n or (arr.size and arr.dtype.kind not in "iu"):
            raise InvalidParameter(f"n_components must be an int or a 1-D integer array of length {n}")
        if arr.size and arr.min() < 0:
            raise InvalidParameter("numbers of components must be >= 0")
        m_max = (int(arr.max()) if arr.size else 0) if m_max is None else m_max
        m_da = _shipped_rows(_check_m_block(arr, int(m_max)), rows, client)
        m_args = [(m_da.name, i) for i in range(len(rows))]
    if isinstance(m_max, bool) or not isinstance(m_max, numbers.Integral) or m_max < 0:
        raise InvalidParameter(f"m_max must be a non-negative integer, got {m_max!r}")
    m_max = int(m_max)
    if m_max > M_MAX_LIMIT:  # the padded width: a record's values must fit one output block (and the coefficient table, memory)
        raise InvalidParameter(f"m_max={m_max} components per record is more than a sketch block holds ({M_MAX_LIMIT:,})")
    if isinstance(n_components, numbers.Integral) and int(n_components) > m_max:
        raise InvalidParameter(f"n_components={n_components} exceeds m_max={m_max}")
    if gen.max_components is not None and m_max > gen.max_components:
        raise InvalidParameter(f"the generator has only {gen.max_components} components, m_max={m_max}")
    if gen.n_items is not None and tx.n_items > gen.n_items:
        raise InvalidParameter(f"{tx.n_items} items exceed the generator's item range ({gen.n_items})")
    if gen.max_components is None:
        gen.coefficients(m_max)  # derived once here; the cache travels with the tasks
    meta["m_max"] = m_max

    w = tx.weights
    # dense values take 8 * m_max bytes per row: cut every input block into row ranges whose
    # values stay within SKETCH_BLOCK_BYTES (values do not depend on the blocks)
    ranges = sub_block_ranges(rows, 8 * max(1, m_max), SKETCH_BLOCK_BYTES)
    out_rows = tuple(b - a for _, a, b in ranges)
    columns = dict(tx.columns)
    if out_rows != tuple(rows):
        m_da = m_da.rechunk({0: out_rows})
        columns = {k: c.rechunk({0: out_rows}) for k, c in columns.items()}
        if not isinstance(n_components, numbers.Integral):
            m_args = [(m_da.name, j) for j in range(len(out_rows))]
        else:
            m_args = [m_args[0]] * len(out_rows)
    deps = [tx.blocks, m_da] + ([w] if w is not None else [])
    name = unique_name("sketch", tx.blocks.name, w.name if w is not None else None, m_da.name, gen, m_max)
    tasks = [
        (_sketch_task, (tx.blocks.name, i, 0), (w.name, i, 0) if w is not None else None, m_args[j], gen, m_max, a, b)
        for j, (i, a, b) in enumerate(ranges)
    ]
    values = blocks_from_tasks(name, tasks, out_rows, m_max, meta=_VALUES_META, dtype=np.float64, dependencies=deps)
    return SketchArray(values, m_da, gen, tx.n_items, columns=columns, metadata=meta)


#: Bytes of one block of dense sketch values (8 * m_max per row); larger input blocks are cut.
SKETCH_BLOCK_BYTES = 32 * 2**20
#: Largest ``m_max``: one record's padded values fill a sketch block.
M_MAX_LIMIT = SKETCH_BLOCK_BYTES // 8


def sub_block_ranges(rows: Sequence[int], row_bytes: int, block_bytes: int) -> list[tuple[int, int, int]]:
    """``(input block, first row, end row)`` of every output block: each input block cut into
    the fewest equal row ranges of at most ``block_bytes`` (at least one row each)."""
    per = max(1, block_bytes // max(1, row_bytes))
    out = []
    for i, r in enumerate(rows):
        pieces = max(1, -(-int(r) // per))
        bounds = np.linspace(0, int(r), pieces + 1).astype(np.int64)
        out += [(i, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    return out


# ---------------------------------------------------------------------- part files
def part_metadata(sk: SketchArray) -> bytes:
    """The ``ppdm`` key-value metadata of every part file of ``sk`` (public parameters only)."""
    return json.dumps(
        {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "n_items": sk.n_items,
            "m_max": sk.m_max,
            "generator": sk.generator.to_metadata(),
            "metadata": public_metadata(sk.metadata),
        }
    ).encode()


def sketch_table(
    values: np.ndarray, m: np.ndarray, cols: Mapping[str, np.ndarray], kv: bytes | None, keep_suppressed: bool = False
) -> tuple[pa.Table, dict[str, Any]]:
    """One part file's table: ``sketch`` (exactly m_i float32 values per record), ``m`` and the
    row-aligned columns; and its stats ``{"n_suppressed", "components"}``.

    Suppressed records (m = 0) are left out unless ``keep_suppressed``: a suppressed record
    publishes nothing, not even its row (label, record id).
    """
    m = np.asarray(m, dtype=np.int32)
    return compact_table(compact_values(values, m), m, cols, kv, keep_suppressed)


def compact_values(values: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Each row's first m_i values of a dense block, as float32, one row after the other."""
    values = np.asarray(values)
    return values[np.arange(values.shape[1])[None, :] < np.asarray(m)[:, None]].astype(np.float32)


def compact_table(
    flat: np.ndarray, m: np.ndarray, cols: Mapping[str, np.ndarray], kv: bytes | None, keep_suppressed: bool = False
) -> tuple[pa.Table, dict[str, Any]]:
    """:func:`sketch_table` from compact rows: ``flat`` holds each row's m_i float32 values, one
    row after the other (suppressed rows hold none, so leaving them out leaves ``flat`` as is)."""
    m = np.asarray(m, dtype=np.int32)
    flat = np.asarray(flat, dtype=np.float32)
    n_supp = int(np.count_nonzero(m == 0))
    if not keep_suppressed and n_supp:
        keep = m > 0
        m = m[keep]
        cols = {c: np.asarray(v)[keep] for c, v in cols.items()}
    offsets = np.zeros(m.size + 1, dtype=np.int32)
    np.cumsum(m, out=offsets[1:])
    arrays = {
        "sketch": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.float32()), type=pa.list_(pa.float32())),
        "m": pa.array(m, type=pa.int32()),
    }
    for cname, col in cols.items():
        arrays[cname] = pa.array(np.asarray(col))
    table = pa.table(arrays)
    if kv is not None:
        table = table.replace_schema_metadata({b"ppdm": kv})
    return table, {"n_suppressed": n_supp, "components": int(m.astype(np.int64).sum())}


def layout_fields(
    sk: SketchArray, partitions: list[dict[str, Any]], keep_suppressed: bool, columns: Mapping[str, Any]
) -> dict[str, Any]:
    """The manifest fields of a sketch folder (``read_sketches`` reads them)."""
    n_supp = int(sum(p.get("n_suppressed", 0) for p in partitions))
    published = int(sum(p["rows"] for p in partitions))
    n_in = published if keep_suppressed else published + n_supp
    total = int(sum(p.get("components", 0) for p in partitions))
    return {
        **_summary(n_in, n_supp, total, sk.m_max),
        "n_published": published,
        "n_items": sk.n_items,
        "value_type": "float32",
        "generator": sk.generator.to_metadata(),
        "suppressed_rows_written": bool(keep_suppressed),
        "columns": {k: np.dtype(v.dtype).str for k, v in columns.items()},
        "metadata": public_metadata(sk.metadata),
    }


def _write_part(
    fs: Any,
    path: str,
    values: np.ndarray,
    m: np.ndarray,
    cols: dict[str, np.ndarray],
    kv: bytes,
    compression: str,
    keep_suppressed: bool,
) -> dict[str, Any]:
    table, stats = sketch_table(values, m, cols, kv, keep_suppressed)
    return {**write_part(fs, path, table, compression=compression), **stats}


# ---------------------------------------------------------------------- reading
def _read_values(fs: Any, folder: str, entry: Mapping[str, Any], m_max: int, verify: bool, url: str) -> np.ndarray:
    table = read_part(fs, folder, entry, columns=["sketch"], verify=verify, url=url)
    col = table.column("sketch")
    col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if len(col) == 0:
        return np.zeros((0, m_max), dtype=np.float64)
    offsets = col.offsets.to_numpy()
    flat = col.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])).to_numpy(zero_copy_only=False)
    m = np.diff(offsets)
    if m.size and m.max() > m_max:
        raise CorruptDatasetError(f"{url}: {entry['file']} holds a sketch of {int(m.max())} components, more than m_max={m_max}")
    out = np.zeros((m.size, m_max), dtype=np.float64)
    out[np.arange(m_max)[None, :] < m[:, None]] = flat
    return out


def sketches_from_manifest(fs: Any, path: str, manifest: Mapping[str, Any], url: str, *, verify: bool = False) -> SketchArray:
    """The lazy SketchArray of a committed sketch folder, every part
    checked against its manifest entry when read (rows; SHA-256 with ``verify``)."""
    parts = list(manifest["partitions"])
    check_listing(fs, path, parts, url)
    gen = SketchGenerator.from_metadata(manifest["generator"])
    m_max = int(manifest["m_max"])
    rows = [int(p["rows"]) for p in parts]
    token = unique_name("read-sketches", url, manifest, verify)
    values = blocks_from_tasks(
        token, [(_read_values, fs, path, e, m_max, verify, url) for e in parts], rows, m_max, meta=_VALUES_META, dtype=np.float64
    )

    def column(name: str, dtype: Any) -> da.Array:
        arrs = [
            da.from_delayed(dask.delayed(read_column, pure=True)(fs, path, e, name, verify, url), shape=(r,), dtype=dtype)
            for e, r in zip(parts, rows)
        ]
        return concat_rows(arrs, rows, dtype=dtype)

    m = column("m", np.int32)
    columns = {name: column(name, np.dtype(t)) for name, t in manifest.get("columns", {}).items()}
    return SketchArray(values, m, gen, int(manifest["n_items"]), columns=columns, metadata=manifest.get("metadata", {}))


def read_sketches(url: str, *, storage_options: Mapping[str, Any] | None = None, verify: bool = False) -> SketchArray:
    """Read a sketch dataset (a release, or a folder written by :meth:`SketchArray.to_parquet`)
    lazily.

    Parameters
    ----------
    verify : bool
        Check the SHA-256 of every part against the manifest as it is read.

    Raises
    ------
    DatasetNotFoundError
        Nothing at ``url``.
    IncompleteDatasetError
        A folder without the ``_SUCCESS`` manifest (failed or running write).
    CorruptDatasetError
        A part file missing, resized, or with other rows than the manifest says.
    DataFormatError
        Not a sketch dataset, or another format version.
    """
    fs, path = open_fs(url, storage_options)
    if not fs.exists(path):
        raise DatasetNotFoundError(f"no sketch dataset at {url}")
    manifest_path = posixpath.join(path, MANIFEST)
    if not fs.isdir(path) or not fs.exists(manifest_path):
        raise IncompleteDatasetError(f"{url} holds no committed sketch dataset (no {MANIFEST})")
    manifest = read_manifest(fs, manifest_path, url, FORMAT_NAME, FORMAT_VERSION)
    return sketches_from_manifest(fs, path, manifest, url, verify=verify)

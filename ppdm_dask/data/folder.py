"""The dataset folder protocol shared by every ppdm dataset and release, on any fsspec URL.

A dataset is a folder of part files plus ``_SUCCESS``, a JSON manifest written **last**:

* writing goes to a hidden temporary sibling folder ``.NAME.__ppdm_tmp-...`` that every reader
  ignores; the manifest is written into it last, and it is committed in one step that never
  replaces another job's output (:mod:`ppdm_dask.data.commit`), so a failed, killed or
  racing job never leaves a readable half dataset;
* the manifest lists every part file with its rows, bytes and SHA-256 (format version 2), so a
  reader can tell a complete dataset from one whose files were lost, truncated, swapped or
  altered: :func:`check_listing` (cheap: one listing, sizes) always, :func:`read_part` checks
  each file's row count when it reads it and, on request, its checksum.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import (
    CorruptDatasetError,
    DataFormatError,
    DatasetExistsError,
    DatasetNotFoundError,
)

__all__ = [
    "MANIFEST",
    "open_fs",
    "write_folder",
    "read_manifest",
    "check_version",
    "write_part",
    "write_file",
    "read_part",
    "check_listing",
    "sha256_file",
    "refuse_existing",
]

MANIFEST = "_SUCCESS"
_HASH_CHUNK = 8 * 2**20


def open_fs(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """``(filesystem, path)`` of ``url`` (trailing slashes removed)."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except (ValueError, ImportError) as exc:
        raise DataFormatError(f"cannot open {url}: {exc}") from None
    path = path.rstrip("/") or path
    from .commit import restore_interrupted

    restore_interrupted(fs, path)  # an --overwrite killed between its two renames (no atomic swap here)
    return fs, path


def refuse_existing(
    url: str, storage_options: Mapping[str, Any] | None = None, *, overwrite: bool = False, folder: bool | None = None
) -> None:
    """Check an output before any work: without ``overwrite`` it must not exist; with
    ``overwrite`` it must be replaceable (:func:`~ppdm_dask.data.commit.check_replaceable`: a
    folder only when it is a ppdm dataset holding nothing else). ``folder`` says what will be
    written there (``None``: either, a folder in the way is still checked)."""
    from .commit import check_replaceable, refuse_bad_destination

    fs, path = open_fs(url, storage_options)
    refuse_bad_destination(fs, path, url)
    if not overwrite:
        if fs.exists(path):
            raise DatasetExistsError(f"{url} already exists", python="overwrite=True", parameter="overwrite")
        return
    from .sources import read_from

    source = read_from(path) if fs.exists(path) else None
    if source is not None:  # the job's input is read lazily: replacing it first would destroy it
        raise DatasetExistsError(
            f"{url} is the input of this job ({source}); --overwrite would replace it before it is read",
            cli="write to another path",
        )
    if folder is None:
        folder = fs.isdir(path) if fs.exists(path) else True
    check_replaceable(fs, path, url, folder=folder)


# ---------------------------------------------------------------------- writing
def write_folder(
    url: str,
    storage_options: Mapping[str, Any] | None,
    overwrite: bool,
    write: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """Run ``write(fs, tmp) -> manifest`` in a hidden temporary sibling folder, write the manifest
    ``_SUCCESS`` into it last, then commit it to ``url`` in one step
    (:func:`~ppdm_dask.data.commit.commit_path`: a no-replace rename, or an atomic swap with
    ``overwrite``). On any failure the temporary folder is removed and an existing dataset is
    left untouched; temporaries of dead writers of ``url`` are removed first."""
    from .commit import clean_stale, commit_path, make_temp_folder, temp_sibling

    fs, path = open_fs(url, storage_options)
    refuse_existing(url, storage_options, overwrite=overwrite, folder=True)
    clean_stale(fs, path)
    tmp = temp_sibling(path)
    make_temp_folder(fs, tmp, url)
    try:
        manifest = write(fs, tmp)
        with fs.open(posixpath.join(tmp, MANIFEST), "w") as fh:
            fh.write(json.dumps(manifest, indent=1))
        commit_path(fs, tmp, path, url, overwrite=overwrite, folder=True)
    except BaseException:
        try:
            fs.rm(tmp, recursive=True)
        except Exception:  # the original error matters more than the cleanup's
            pass
        raise
    return manifest


def write_file(fs: Any, path: str, data: bytes | pa.Buffer) -> dict[str, Any]:
    """Write ``data`` to ``path``; returns ``{"file", "bytes", "sha256"}`` for the manifest."""
    with fs.open(path, "wb") as fh:
        fh.write(data)
    return {
        "file": posixpath.basename(path),
        "bytes": len(data) if not isinstance(data, pa.Buffer) else data.size,
        "sha256": hashlib.sha256(memoryview(data)).hexdigest(),
    }


def write_part(fs: Any, path: str, table: pa.Table, *, compression: str = "zstd") -> dict[str, Any]:
    """Write ``table`` as one Parquet file with one row group; returns its manifest entry
    ``{"file", "rows", "bytes", "sha256"}`` (hashed from the bytes written, no second read)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression, row_group_size=max(table.num_rows, 1))
    entry = write_file(fs, path, sink.getvalue())
    return {"file": entry["file"], "rows": int(table.num_rows), "bytes": entry["bytes"], "sha256": entry["sha256"]}


# ---------------------------------------------------------------------- reading
def load_manifest_json(fs: Any, manifest_path: str, url: str) -> Any:
    """The parsed JSON of a manifest file; a missing, non-JSON or unreadable manifest (or a
    folder in its place) is one error naming the dataset."""
    name = posixpath.basename(manifest_path)
    try:
        with fs.open(manifest_path, "r") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise DatasetNotFoundError(f"{url}: no {name} manifest (not a committed ppdm dataset)") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CorruptDatasetError(f"{url}: unreadable {name} manifest (not JSON)") from None
    except IsADirectoryError:
        raise CorruptDatasetError(f"{url}: {name} is a folder, not a manifest file") from None
    except OSError as exc:
        raise CorruptDatasetError(f"{url}: cannot read its {name} manifest ({exc.strerror or exc})") from None


def read_manifest(fs: Any, manifest_path: str, url: str, format_name: str | Sequence[str], version: int) -> dict[str, Any]:
    """The ``_SUCCESS`` manifest of a committed dataset, checked to be of ``format_name`` (one
    name or several) in format ``version`` (see :func:`check_version`)."""
    manifest = load_manifest_json(fs, manifest_path, url)
    names = (format_name,) if isinstance(format_name, str) else tuple(format_name)
    if not isinstance(manifest, dict) or manifest.get("format") not in names:
        raise DataFormatError(
            f"{url}: not a {' or '.join(names)} dataset (format {manifest.get('format') if isinstance(manifest, dict) else None!r})"
        )
    check_version(manifest, url, version)
    _check_totals(manifest, url)
    return manifest


def check_version(manifest: Mapping[str, Any], url: str, version: int) -> None:
    """Refuse a manifest in another format version than ``version``, the one this package
    writes: a newer one, and an older one (only development versions, never released, wrote
    version 1: its parts are not hashed, so it is not read)."""
    got = manifest.get("version", 0)
    if got == version:
        return
    if isinstance(got, int) and got > version:
        raise DataFormatError(f"{url}: written by a newer ppdm-dask (format version {got})")
    raise DataFormatError(
        f"{url}: format version {got!r}, written by a development version of ppdm-dask; this "
        f"version reads format version {version} only: write the dataset again"
    )


#: the manifest field that counts the rows of the part files, per format
_ROW_TOTALS = {
    "ppdm-transactions": "n_transactions",
    "ppdm-table": "n_records",
    "ppdm-anonymized": "n_records",
    "ppdm-condensed": "n_records",
    "ppdm-sketches": "n_published",
}


def _check_totals(manifest: Mapping[str, Any], url: str) -> None:
    """The manifest's row total must be the sum of its parts' rows (a manifest edited in one place
    and not the other would otherwise report one figure and read another)."""
    field = _ROW_TOTALS.get(str(manifest.get("format")))
    parts = manifest.get("partitions")
    if field is None or field not in manifest or not isinstance(parts, list):
        return
    try:
        rows = sum(int(p["rows"]) for p in parts)
        total = int(manifest[field])
    except (KeyError, TypeError, ValueError):
        raise CorruptDatasetError(f"{url}: {MANIFEST} has a part without a row count, or a non-numeric {field}") from None
    if rows != total:
        raise CorruptDatasetError(
            f"{url}: {MANIFEST} says {field} = {total:,} but its part files hold {rows:,} rows (altered manifest)"
        )


def check_listing(fs: Any, path: str, entries: Sequence[Mapping[str, Any]], url: str) -> None:
    """Cheap check of a committed folder against its manifest entries: every listed file is
    present and, when the manifest records it, has its recorded size (one listing call).

    Raises
    ------
    CorruptDatasetError
        Naming the first missing or resized file.
    """
    try:
        listing = {posixpath.basename(d["name"].rstrip("/")): d for d in fs.ls(path, detail=True)}
    except FileNotFoundError:
        raise DatasetNotFoundError(f"no dataset at {url}") from None
    for e in entries:
        name = e["file"]
        if name not in listing:
            raise CorruptDatasetError(f"{url}: part file {name} listed in the manifest is missing")
        size = listing[name].get("size")
        if e.get("bytes") is not None and size is not None and int(size) != int(e["bytes"]):
            raise CorruptDatasetError(
                f"{url}: {name} has {int(size):,} bytes, the manifest says {int(e['bytes']):,} (truncated, replaced or altered)"
            )


def sha256_file(fs: Any, path: str) -> str:
    """SHA-256 of a file, streamed in 8 MiB chunks."""
    h = hashlib.sha256()
    with fs.open(path, "rb") as fh:
        while True:
            chunk = fh.read(_HASH_CHUNK)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def read_part(
    fs: Any,
    folder: str,
    entry: Mapping[str, Any],
    *,
    columns: Sequence[str] | None = None,
    verify: bool = False,
    url: str | None = None,
) -> pa.Table:
    """Read one part file listed in a manifest, checked against its entry.

    The row count is always compared with the manifest; with ``verify`` the file's SHA-256 too
    (the file is read once, hashed, then parsed from memory).

    Raises
    ------
    CorruptDatasetError
        The file is missing, unreadable (truncated), or its rows / checksum differ from the
        manifest; the message names the dataset and the file.
    """
    name = entry["file"]
    where = f"{url or folder}: {name}"
    path = posixpath.join(folder, name)
    try:
        if verify and entry.get("sha256"):
            data = fs.cat_file(path)
            digest = hashlib.sha256(data).hexdigest()
            if digest != entry["sha256"]:
                raise CorruptDatasetError(f"{where} does not match its checksum in the manifest (altered or replaced)")
            table = pq.read_table(pa.BufferReader(data), columns=list(columns) if columns is not None else None)
        else:
            with fs.open(path, "rb") as fh:
                table = pq.read_table(fh, columns=list(columns) if columns is not None else None)
    except CorruptDatasetError:
        raise
    except FileNotFoundError:
        raise CorruptDatasetError(f"{where} listed in the manifest is missing") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptDatasetError(f"{where} is unreadable (truncated or not Parquet): {str(exc).splitlines()[0]}") from None
    if entry.get("rows") is not None and table.num_rows != int(entry["rows"]):
        raise CorruptDatasetError(f"{where} holds {table.num_rows:,} rows, the manifest says {int(entry['rows']):,}")
    return table

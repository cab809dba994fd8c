"""Relational tables in, typed and losing nothing: CSV or Parquet on any fsspec URL.

* **CSV** columns are read as **strings** unless a schema says otherwise, so ``02138`` stays
  ``"02138"`` and a code such as ``NA`` stays a value: only an empty field is missing. Types are
  given per column (``dtype={"age": "int"}``, CLI ``--dtype age=int``) or by a schema file
  (``{"age": "int", "zip": "string"}``, CLI ``--schema FILE``); a value that does not parse is
  an error naming the column, the value and the flag. The separator is sniffed from the first
  64 KiB unless given.
* **Parquet** keeps its own types. A ppdm release folder is read through its manifest: every
  part file is checked (present, size, row count; SHA-256 with ``verify=True``).

Tables are dask DataFrames with pyarrow-backed dtypes.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataFormatError, DatasetNotFoundError, IncompleteDatasetError, InvalidParameter
from .folder import MANIFEST, check_listing, load_manifest_json, open_fs, read_manifest, read_part
from .kind import kind_of_manifest_format, kind_of_parquet_schema, kind_of_text, read_head, refuse_baskets
from .sidefiles import read_json_file
from .sources import remember_url

if TYPE_CHECKING:  # dask.dataframe costs ~0.4 s to import: only the table readers need it
    import dask.dataframe as dd

__all__ = [
    "read_table",
    "from_pandas",
    "parse_dtypes",
    "load_schema",
    "sniff_separator",
    "table_from_manifest",
    "parse_numbers",
    "TYPES",
    "TABLE_FORMATS",
    "is_csv",
    "TEXT_DTYPE",
]

#: Column types accepted in ``dtype=`` / ``--dtype`` / schema files, and the pandas dtype of each.
TYPES: dict[str, Any] = {
    "string": pd.ArrowDtype(pa.string()),
    "int": pd.ArrowDtype(pa.int64()),
    "float": pd.ArrowDtype(pa.float64()),
    "bool": pd.ArrowDtype(pa.bool_()),
}
_ALIASES = {
    "str": "string",
    "text": "string",
    "category": "string",
    "int64": "int",
    "integer": "int",
    "float64": "float",
    "double": "float",
    "number": "float",
    "boolean": "bool",
}
#: Manifest formats of ppdm folders that hold a relational table.
TABLE_FORMATS = ("ppdm-anonymized", "ppdm-condensed", "ppdm-table")
_SNIFF_BYTES = 64 * 1024
_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


def _is_slice(values: Any) -> bool:
    """Whether an arrow-backed column is a slice of a larger array (a chunk with an offset)."""
    try:
        arr = pa.Array.from_pandas(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return False
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return any(c.offset for c in chunks)


def from_pandas(df: pd.DataFrame, npartitions: int = 1) -> dd.DataFrame:
    """``dask.dataframe.from_pandas(df)``, its arrow-backed columns copied first when they are
    slices of a larger array. Dask names a frame by a hash of its arrow buffers, not of the slice
    they hold (dask/dask#11322, apache/arrow#26685): two slices of one table of equal length
    (rows 1-900 and rows 101-1000) would otherwise get one name, and dask's expression cache
    would hand back the first frame for the second."""
    import dask.dataframe as dd

    sliced = [c for c in df.columns if not isinstance(df[c].dtype, np.dtype) and _is_slice(df[c])]
    if sliced:
        df = df.assign(**{c: df[c].astype(object).astype(df[c].dtype) for c in sliced})
    return dd.from_pandas(df, npartitions=npartitions)


def is_csv(url: str) -> bool:
    """Whether ``url`` names a CSV (or tab-separated text) file, compressed or not."""
    name = url.rstrip("/").lower()
    for comp in (".gz", ".bz2", ".xz", ".zst"):
        if name.endswith(comp):
            name = name[: -len(comp)]
    return name.endswith((".csv", ".tsv", ".txt"))


def parse_dtypes(spec: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """``{"age": "int"}`` from a mapping or from ``["age=int", ...]`` (CLI ``--dtype``)."""
    if spec is None:
        return {}
    items = spec.items() if isinstance(spec, Mapping) else []
    if not isinstance(spec, Mapping):
        pairs = []
        for text in spec:
            col, sep, typ = str(text).partition("=")
            if not sep or not col.strip() or not typ.strip():
                raise InvalidParameter(f"expected COLUMN=TYPE, got {text!r}", fix="`dtype` age=int")
            pairs.append((col.strip(), typ.strip()))
        items = pairs
    out = {}
    for col, typ in items:
        t = _ALIASES.get(str(typ).lower(), str(typ).lower())
        if t not in TYPES:
            raise InvalidParameter(
                f"unknown type {typ!r} for column {col!r}; use one of {sorted(TYPES)}", fix=f"`dtype` {col}=string|int|float|bool"
            )
        out[str(col)] = t
    return out


def load_schema(url: str, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Column types from a JSON schema file: ``{"age": "int", ...}`` or ``{"columns": {...}}``."""
    doc = read_json_file(url, what="schema", parameter="schema", storage_options=storage_options)
    cols = doc.get("columns", doc) if isinstance(doc, dict) else None
    if not isinstance(cols, dict):
        raise DataFormatError(f"schema file {url}: expected an object mapping column names to types", fix="`schema` FILE")
    return parse_dtypes(cols)


def _head(url: str, storage_options: Mapping[str, Any] | None) -> bytes:
    """The first 64 KiB of a (possibly compressed) file: what the separator is sniffed from and
    the header checked in."""
    import fsspec

    with fsspec.open(url, "rb", compression="infer", **dict(storage_options or {})) as fh:
        return fh.read(_SNIFF_BYTES)


def sniff_separator(url: str, *, storage_options: Mapping[str, Any] | None = None, head: bytes | None = None) -> str:
    """The field separator of a CSV file, guessed from its first 64 KiB among , ; tab | (``head``:
    those bytes, already read)."""
    if head is None:
        head = _head(url, storage_options)
    text = head.decode("utf-8", errors="replace")
    if len(head) == _SNIFF_BYTES and "\n" in text:
        text = text[: text.rindex("\n")]  # whole lines only
    lines = [ln for ln in text.splitlines() if ln.strip()][:50]
    if not lines:
        return ","
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t|").delimiter
    except csv.Error:
        # one column, or no consistent candidate: the most frequent candidate of the header line
        counts = {d: lines[0].count(d) for d in ",;\t|"}
        best = max(counts, key=counts.get)
        return best if counts[best] else ","


def _check_header(head: bytes, shown: str, sep: str) -> None:
    """Refuse a CSV with no rows below its header, or a header that names a column twice (pandas
    would silently read the second as ``name.1``, and ``--qi name`` would then pick one of the
    two). ``head``: the file's first 64 KiB."""
    lines = [ln for ln in head.decode("utf-8", errors="replace").removeprefix("\ufeff").splitlines() if ln.strip()]
    if len(head) < _SNIFF_BYTES and len(lines) <= 1:  # the whole file was read: nothing below the header
        raise DataFormatError(f"{shown} has a header but no rows" if lines else f"{shown} is empty")
    names = next(csv.reader(lines[:1], delimiter=sep), []) if lines else []
    seen: set[str] = set()
    dup = [n for n in names if n in seen or seen.add(n)]
    if dup:
        raise DataFormatError(
            f"{shown}: the header names column(s) {sorted(set(dup))} more than once; every column needs its own name"
        )


#: The dtype of text columns (a CSV column not declared otherwise, a published generalised
#: label): pyarrow-backed strings with the one missing value ``<NA>``, the same under every
#: supported pandas. pandas' ``"string"`` alias is not: python-backed before pandas 3, written to
#: Parquet as ``string`` rather than ``large_string``.
TEXT_DTYPE = pd.StringDtype("pyarrow")


def _header_names(data: bytes, sep: str) -> list[str]:
    """The column names of a CSV block's first record (dask repeats the header in every block)."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace", newline="")
    return next(csv.reader(text, delimiter=sep), [])


def _read_csv_block(source: Any, *, sep: str, ppdm_url: str = "", nrows: int | None = None, **_: Any) -> pd.DataFrame:
    """Kernel: one block of a table CSV, every column as text (:data:`TEXT_DTYPE`), only an empty
    field missing. A parse error names the file.

    The block is parsed by pyarrow with every column *declared* a string, not by ``pd.read_csv``:
    pandas' pyarrow engine infers types first and casts to ``str`` afterwards on pandas < 3 (and on
    pandas 3 with a scalar ``dtype`` and pyarrow < 25), which turns ``02138`` into ``2138`` (and,
    beside an empty field, into ``2138.0``, the empty field into ``nan``); its C engine keeps the
    text but fills a row with fewer fields than the header with missing values, which pyarrow
    refuses. dask reads its 10-row sample for the meta with ``nrows`` (which pyarrow cannot do):
    that sample goes through the C engine, which with ``dtype=str`` never infers.
    """
    import pyarrow.csv as pcsv

    data = source.getvalue() if hasattr(source, "getvalue") else source.read()
    try:
        if nrows is not None:
            head = pd.read_csv(
                io.BytesIO(data), sep=sep, dtype=str, keep_default_na=False, na_values=[""], nrows=nrows, engine="c"
            )
            return head.astype(TEXT_DTYPE)
        names = _header_names(data, sep)
        if not data.rstrip(b"\r\n").count(b"\n"):  # the header alone: pyarrow refuses it without a line break
            return pd.DataFrame({n: pd.array([], dtype=TEXT_DTYPE) for n in names})
        table = pcsv.read_csv(
            io.BytesIO(data),
            parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, null_values=[""], strings_can_be_null=True
            ),
        )
    except (pa.ArrowInvalid, pd.errors.ParserError) as exc:
        why = str(exc).splitlines()[0].removeprefix("CSV parse error: ").removeprefix("Error tokenizing data. C error: ")
        what = "a row does not match the header" if why.startswith("Expected") else "cannot read as CSV"
        raise DataFormatError(f"{ppdm_url}: {what}: {why}", fix="`sep` if the separator was guessed wrong") from None
    return table.to_pandas(types_mapper={pa.string(): TEXT_DTYPE}.get)


@functools.cache
def _dask_read_csv() -> Any:
    """dask's CSV reader over :func:`_read_csv_block` (dask passes ``sep`` and ``ppdm_url``
    through)."""
    from dask.dataframe.io.csv import make_reader

    return make_reader(_read_csv_block, "read_csv", "CSV")


def parse_numbers(
    values: pd.Series, message: str, *, integer: bool = False, python: str | None = None, fix: str | None = None
) -> np.ndarray:
    """Kernel: a column that may hold text as float64 (missing values NaN). A present value that
    is not a number (or, with ``integer``, not a whole number) raises ``DataFormatError`` with
    ``message: [the first offending values]`` and the given fix hints."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.zeros(arr.size, dtype=bool)
    else:
        text = values.astype(object)
        arr = pd.to_numeric(text.where(text.notna(), None), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.isnan(arr) & text.notna().to_numpy()
    if integer:
        bad |= np.isfinite(arr) & (arr != np.round(arr))
    if bad.any():
        shown = pd.unique(values[bad].astype(str))[:5].tolist()
        raise DataFormatError(f"{message}: {shown}", python=python, fix=fix)
    return arr


def _convert(part: pd.DataFrame, types: dict[str, str], url: str) -> pd.DataFrame:
    """Cast string columns to their declared types; a value that does not parse is an error."""
    out = part.copy()
    for col, t in types.items():
        s = part[col]
        hints = {"python": f"dtype={{{col!r}: 'string'}}", "fix": f"`dtype` {col}=string"}
        if t == "string":
            out[col] = s.astype(TYPES["string"])
            continue
        if t == "bool":
            text = s.astype(object)
            present = text.notna().to_numpy()
            low = text.astype(str).str.strip().str.lower()
            bad = present & ~low.isin(_TRUE | _FALSE).to_numpy()
            if bad.any():
                shown = pd.unique(text[bad].astype(str))[:5].tolist()
                raise DataFormatError(f"{url}: column {col!r} declared bool has values that are not: {shown}", **hints)
            out[col] = pd.array(pa.array(low.isin(_TRUE).to_numpy(), mask=~present), dtype=TYPES["bool"])
            continue
        arr = parse_numbers(s, f"{url}: column {col!r} declared {t} has values that are not {t}s", integer=(t == "int"), **hints)
        if t == "int":
            missing = np.isnan(arr)
            out[col] = pd.array(pa.array(np.where(missing, 0, arr).astype(np.int64), mask=missing), dtype=TYPES["int"])
        else:
            out[col] = pd.array(arr, dtype=TYPES["float"])
    return out


def table_from_manifest(fs: Any, path: str, manifest: Mapping[str, Any], url: str, *, verify: bool = False) -> dd.DataFrame:
    """The lazy table of a ppdm folder whose manifest lists its part files; every part is checked
    against its entry when read (rows; SHA-256 with ``verify``)."""
    import dask.dataframe as dd

    parts = list(manifest.get("partitions", []))
    check_listing(fs, path, parts, url)
    if not parts:
        raise DataFormatError(f"{url}: the manifest lists no part files")
    first = read_part(fs, path, {**parts[0], "rows": None}, verify=False, url=url)
    meta = first.schema.empty_table().to_pandas(types_mapper=pd.ArrowDtype)
    return dd.from_map(
        _read_frame,
        parts,
        fs=fs,
        folder=path,
        verify=verify,
        url=url,
        meta=meta,
        label=f"read-release-{manifest.get('format', 'table')}",
        enforce_metadata=False,
    )


def _read_frame(entry: Mapping[str, Any], *, fs: Any, folder: str, verify: bool, url: str) -> pd.DataFrame:
    return read_part(fs, folder, entry, verify=verify, url=url).to_pandas(types_mapper=pd.ArrowDtype)


def _refuse_uncommitted(fs: Any, path: str, url: str) -> None:
    """A folder of ppdm part files (``part-00000.parquet`` ...) without its ``_SUCCESS`` is an
    uncommitted or damaged ppdm output, not foreign data: reading it as Parquet would take
    whatever parts happen to be there."""
    import re

    if not fs.isdir(path):
        return
    names = [n.rstrip("/").rsplit("/", 1)[-1] for n in fs.ls(path, detail=False)]
    parts = [n for n in names if n.endswith(".parquet") and not n.startswith(("_", "."))]
    if parts and all(re.fullmatch(r"part-\d{5}\.parquet", n) for n in parts):
        raise IncompleteDatasetError(
            f"{url} holds ppdm part files but no {MANIFEST} manifest: the job that wrote it "
            "failed, is still running, or the manifest was removed"
        )


def read_table(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    sep: str | None = None,
    dtype: Mapping[str, str] | Sequence[str] | None = None,
    schema: str | None = None,
    blocksize: str | int | None = "64MB",
    verify: bool = False,
) -> dd.DataFrame:
    """A CSV file or a Parquet file/folder as a dask DataFrame with pyarrow dtypes.

    Parameters
    ----------
    url : str
        Local path or fsspec URL; ``.csv`` / ``.tsv`` / ``.txt`` (optionally compressed) is CSV,
        anything else Parquet.
    sep : str, optional
        CSV separator; sniffed when omitted.
    dtype : mapping or list of "COL=TYPE"
        Column types (``string``, ``int``, ``float``, ``bool``); CSV columns not named stay
        strings. For Parquet, the named columns are cast.
    schema : str, optional
        JSON file of column types (merged under ``dtype``).
    verify : bool
        Check the SHA-256 of every part of a ppdm folder against its manifest.

    Raises
    ------
    DatasetNotFoundError
        Nothing at ``url`` (the message names it).
    DataFormatError
        Unknown column in ``dtype``, a value that does not parse, an unreadable file.
    """
    import dask.dataframe as dd

    opts = dict(storage_options or {})
    types = {**(load_schema(schema, storage_options=opts) if schema else {}), **parse_dtypes(dtype)}
    fs, path = open_fs(url, opts)
    globbed = any(ch in path for ch in "*?[")
    if not globbed and not fs.exists(path):
        raise DatasetNotFoundError(f"no such file or folder: {url}")
    if is_csv(url):
        if not globbed and fs.isdir(path):
            raise DataFormatError(f"{url} is a folder, not a CSV file (a folder of CSV files is read with a glob: {url}/*.csv)")
        first = sorted(fs.expand_path(path))[0] if globbed else path
        first_url = fs.unstrip_protocol(first) if hasattr(fs, "unstrip_protocol") else first
        head = _head(first_url, opts)  # read once: the kind, the separator and the header checks
        refuse_baskets(url, kind_of_text(head, complete=len(head) < _SNIFF_BYTES))
        if sep is None:
            sep = sniff_separator(first_url, head=head)
        _check_header(head, url if not globbed else first_url, sep)
        from fsspec.utils import infer_compression

        bs = None if infer_compression(url) is not None else blocksize
        try:
            df = _dask_read_csv()(url, sep=sep, blocksize=bs, storage_options=opts, ppdm_url=url)
        except DataFormatError:
            raise
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
            raise DataFormatError(
                f"{url}: cannot read as CSV with separator {sep!r}: {str(exc).splitlines()[0]}", parameter="sep"
            ) from None
        fmt = "csv"
    else:
        from .formats import detect_format

        if detect_format(url) == "fimi":  # .dat / .fimi (.txt is CSV here): baskets, no table format
            got = read_head(url, opts)
            if got is not None:
                refuse_baskets(url, kind_of_text(got[0], complete=got[1]))
        manifest = None
        if fs.isdir(path) and fs.exists(f"{path}/{MANIFEST}"):
            try:
                manifest = read_manifest(fs, f"{path}/{MANIFEST}", url, TABLE_FORMATS, 2)
            except DataFormatError:  # a transaction dataset given as a table: say which commands read it
                doc = load_manifest_json(fs, f"{path}/{MANIFEST}", url)
                refuse_baskets(url, kind_of_manifest_format(doc.get("format") if isinstance(doc, dict) else None))
                raise
        if manifest is not None:
            df = table_from_manifest(fs, path, manifest, url, verify=verify)
        else:
            _refuse_uncommitted(fs, path, url)
            try:
                df = dd.read_parquet(url, storage_options=opts, dtype_backend="pyarrow")
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise DataFormatError(f"{url}: unreadable Parquet: {str(exc).splitlines()[0]}") from None
            meta = df._meta.dtypes
            refuse_baskets(url, kind_of_parquet_schema(list(meta.index), [getattr(t, "pyarrow_dtype", None) for t in meta]))
        fmt = "parquet"
    unknown = [c for c in types if c not in df.columns]
    if unknown:
        raise DataFormatError(
            f"{url} has no column(s) {unknown} (named in the types); its columns are {list(df.columns)}", fix="`dtype` / `schema`"
        )
    if types:
        meta = _convert(df._meta, types, url)
        df = df.map_partitions(_convert, types, url, meta=meta)
    return remember_url(df, url, format=fmt, storage_options=opts)

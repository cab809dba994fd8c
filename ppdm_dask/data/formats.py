"""Text formats: FIMI ``.dat`` and basket CSV, on any fsspec URL.

Reading splits a file into byte ranges at line boundaries (``dask.bytes.read_bytes``), parses
each range in a task, builds the vocabulary in a tree reduction, then encodes the blocks
lazily. Writing formats blocks in parallel and streams them, in order, into a temporary file
that is moved into place only when complete.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import dask
from dask.bytes import read_bytes

from ..errors import DataFormatError, DatasetNotFoundError
from . import _kernels as K
from .atomic import atomic_file

__all__ = ["read_fimi", "write_fimi", "read_csv", "write_csv", "detect_format", "basket_csv_text"]


def detect_format(url: str) -> str:
    """``"fimi"``, ``"csv"`` or ``"parquet"`` from a URL's extension (a folder is Parquet)."""
    name = url.rstrip("/").lower()
    for comp in (".gz", ".bz2", ".xz", ".zst"):
        if name.endswith(comp):
            name = name[: -len(comp)]
    if name.endswith((".dat", ".fimi", ".txt")):
        return "fimi"
    if name.endswith(".csv"):
        return "csv"
    return "parquet"


def _text_blocks(
    url: str, storage_options: Mapping[str, Any] | None, blocksize: int | str | None, with_paths: bool = False
) -> list:
    """Delayed byte blocks of the file(s) at ``url``, split at newlines.

    ``with_paths=True`` gives ``(path, block_index_in_its_file, block)`` triples instead.
    """
    from fsspec.utils import infer_compression

    if infer_compression(url) is not None:
        blocksize = None  # compressed streams cannot be split by byte ranges
    try:
        _, blocks, paths = read_bytes(
            url,
            delimiter=b"\n",
            blocksize=blocksize,
            sample=False,
            compression="infer",
            include_path=True,
            **dict(storage_options or {}),
        )
    except FileNotFoundError:
        raise DatasetNotFoundError(f"no file at {url}") from None
    except (OSError, ValueError) as exc:
        if "No such file" in str(exc) or "not found" in str(exc).lower():
            raise DatasetNotFoundError(f"no file at {url}") from None
        raise DataFormatError(f"cannot read {url}: {exc}") from None
    _refuse_folders(url, paths, storage_options)
    compression = infer_compression(url)
    if compression is not None:  # one block per file, read by a task that names the file when the stream is damaged
        from fsspec.core import url_to_fs

        fs = url_to_fs(url, **dict(storage_options or {}))[0]
        blocks = [
            [dask.delayed(_decompressed, pure=True)(fs, path, compression)] if file_blocks else []
            for path, file_blocks in zip(paths, blocks)
        ]
    flat = [(path, i, b) for path, file_blocks in zip(paths, blocks) for i, b in enumerate(file_blocks)]
    if not flat:
        if paths:  # the file (or every file the URL names) exists and holds nothing
            raise DataFormatError(f"{url} is empty: no transactions to read")
        raise DatasetNotFoundError(f"no file at {url}")
    return flat if with_paths else [b for _, _, b in flat]


def _decompressed(fs: Any, path: str, compression: str) -> bytes:
    """The decompressed bytes of one file; a truncated or damaged stream is one error naming it."""
    import lzma
    import zlib

    try:
        with fs.open(path, "rb", compression=compression) as fh:
            return fh.read()
    except (EOFError, zlib.error, lzma.LZMAError, OSError, ValueError) as exc:  # gzip.BadGzipFile is an OSError
        raise DataFormatError(f"{path}: damaged or truncated {compression} file ({exc})") from None


def _refuse_folders(url: str, paths: list, storage_options: Mapping[str, Any] | None) -> None:
    """A folder named like a text file (``x.dat``, ``x.csv``) would be read as a file of its
    directory entry's size and fail inside a task: refuse it here, naming it."""
    from fsspec.core import url_to_fs

    try:
        fs, _ = url_to_fs(url, **dict(storage_options or {}))
        folders = [p for p in paths if fs.isdir(p)]
    except (OSError, ValueError):  # the read itself will say what is wrong
        return
    if folders:
        raise DataFormatError(
            f"{url} is a folder, not a FIMI or CSV file (a folder of Parquet parts is read with --format parquet)"
        )


def read_fimi(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    blocksize: int | str | None = "64MiB",
    progress: bool = False,
    check_kind: bool = True,
) -> Any:
    """Read FIMI text (one transaction per line, whitespace-separated non-negative integer ids).

    Compressed files (``.gz`` ...) are read as one block. Empty lines are empty transactions.
    Item labels are the integers in the file; column ids are their ranks (see Vocabulary).
    A file that looks like a table is refused naming the table readers
    (:mod:`ppdm_dask.data.kind`; ``check_kind=False`` reads it anyway).
    """
    from .kind import check_baskets_file
    from .transactions import TransactionArray

    check_baskets_file(url, storage_options, check_kind=check_kind)
    raw = _text_blocks(url, storage_options, blocksize, with_paths=True)
    one_file = len({path for path, _, _ in raw}) == 1 and not any(c in url for c in "*?[")
    # errors name the file (and the byte block past the first: lines are counted per block)
    names = [(url if one_file else path) + (f", block {i + 1}," if i else "") for path, i, _ in raw]
    sources = [dask.delayed(K.parse_fimi_bytes, pure=True)(b, name) for (_, _, b), name in zip(raw, names)]
    return TransactionArray.from_label_blocks(sources, metadata={"source": url}, progress=progress)


def read_csv(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    blocksize: int | str | None = "64MiB",
    sep: str = ",",
    progress: bool = False,
    check_kind: bool = True,
) -> Any:
    """Read basket CSV: one transaction per line, item labels separated by ``sep``.

    RFC 4180 quoting with ``sep`` as separator: ``"a,b"`` is one label, ``""`` inside quotes is
    a quote, quoted text is kept verbatim; unquoted fields are stripped of whitespace; empty
    fields are no item. A quoted field must close on its line (labels cannot contain line breaks),
    otherwise :class:`DataFormatError` names the file and the line. Labels are integers when
    every item in the file is a decimal integer, strings otherwise. A file that looks like a
    table (a header row of column names over records with a fixed number of fields) is refused
    naming the table readers (:mod:`ppdm_dask.data.kind`; ``check_kind=False`` reads it anyway).
    """
    from .kind import check_baskets_file
    from .transactions import TransactionArray

    check_baskets_file(url, storage_options, check_kind=check_kind)
    raw = _text_blocks(url, storage_options, blocksize, with_paths=True)
    scans = dask.compute(*[dask.delayed(_csv_scan)(b, sep) for _, _, b in raw])
    one_file = len({path for path, _, _ in raw}) == 1 and not any(c in url for c in "*?[")  # errors name the URL
    first_lines, line = [], 1
    for (path, i, _), (_, n_newlines, error) in zip(raw, scans):
        line = 1 if i == 0 else line
        name = url if one_file else path
        if error is not None:
            raise DataFormatError(f"{name} line {line + error[0] - 1}: {error[1]}")
        first_lines.append((name, line))
        line += n_newlines
    as_int = all(kind for kind, _, _ in scans)
    sources = [
        dask.delayed(K.parse_csv_bytes, pure=True)(b, sep=sep, as_int=as_int, source=name, first_line=first)
        for (_, _, b), (name, first) in zip(raw, first_lines)
    ]
    return TransactionArray.from_label_blocks(sources, metadata={"source": url}, progress=progress)


def _csv_scan(data: bytes, sep: str) -> tuple[bool, int, tuple[int, str] | None]:
    """First pass over a block: all-integer labels?, its newline count, and its first syntax error."""
    try:
        _, labels = K.parse_csv_bytes(data, sep=sep, as_int=None)
    except K.CSVSyntaxError as exc:
        return False, data.count(b"\n"), (exc.line, exc.reason)
    except UnicodeDecodeError as exc:  # binary data, or text in another encoding
        bad = data[exc.start : exc.start + 1].hex()
        return (
            False,
            data.count(b"\n"),
            (data.count(b"\n", 0, exc.start) + 1, f"not UTF-8 text (byte 0x{bad} cannot be decoded; save the file as UTF-8)"),
        )
    return labels.dtype.kind == "i" or labels.size == 0, data.count(b"\n"), None


def _write_text(tx: Any, url: str, formatter: Callable, storage_options, overwrite: bool, batch: int, progress: bool) -> None:
    from ..progress import compute

    labels = tx.vocabulary.labels
    blocks = tx.blocks.to_delayed().ravel()
    with atomic_file(url, storage_options=storage_options, overwrite=overwrite) as fh:
        for start in range(0, len(blocks), batch):
            texts = compute(
                *[dask.delayed(formatter)(b, labels) for b in blocks[start : start + batch]],
                progress=progress and start == 0 and len(blocks) <= batch,
            )
            for t in texts:
                fh.write(t)


def write_fimi(
    tx: Any,
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    batch: int = 16,
    progress: bool = False,
) -> None:
    """Write FIMI text atomically. Item labels must be integers (FIMI has no names)."""
    if not tx.vocabulary.is_integer:
        raise DataFormatError("FIMI needs integer item labels; write CSV or Parquet for named items")
    _write_text(tx, url, K.format_fimi_block, storage_options, overwrite, batch, progress)


def write_csv(
    tx: Any,
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    batch: int = 16,
    sep: str = ",",
    progress: bool = False,
) -> None:
    """Write basket CSV atomically, RFC 4180 quoting (see :func:`read_csv`).

    Labels with ``sep``, a quote, a CR or surrounding whitespace are quoted, inner quotes
    doubled; an empty label or one with a line feed cannot be written (:class:`DataFormatError`).
    """
    formatter = K.format_csv_block if sep == "," else functools.partial(K.format_csv_block, sep=sep)
    _write_text(tx, url, formatter, storage_options, overwrite, batch, progress)


def basket_csv_text(block: Any, labels: Any) -> bytes:
    """Basket CSV text of one CSR block (one line per transaction, RFC 4180 quoting)."""
    return K.format_csv_block(block, labels)

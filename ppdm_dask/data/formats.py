"""Text formats: FIMI ``.dat`` and basket CSV, on any fsspec URL.

Reading splits a file into byte ranges at line boundaries (``dask.bytes.read_bytes``), parses
each range in a task, builds the vocabulary in a tree reduction, then encodes the blocks
lazily. Writing formats blocks in parallel and streams them, in order, into a temporary file
that is moved into place only when complete.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

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


def _text_blocks(url: str, storage_options: Mapping[str, Any] | None, blocksize: int | str | None) -> list:
    from fsspec.utils import infer_compression

    if infer_compression(url) is not None:
        blocksize = None  # compressed streams cannot be split by byte ranges
    try:
        _, blocks = read_bytes(
            url, delimiter=b"\n", blocksize=blocksize, sample=False, compression="infer",
            **dict(storage_options or {}),
        )
    except FileNotFoundError:
        raise DatasetNotFoundError(f"no file at {url}") from None
    except (OSError, ValueError) as exc:
        if "No such file" in str(exc) or "not found" in str(exc).lower():
            raise DatasetNotFoundError(f"no file at {url}") from None
        raise DataFormatError(f"cannot read {url}: {exc}") from None
    flat = [b for file_blocks in blocks for b in file_blocks]
    if not flat:
        raise DatasetNotFoundError(f"no file at {url}")
    return flat


def read_fimi(url: str, *, storage_options: Mapping[str, Any] | None = None, blocksize: int | str | None = "64MiB", progress: bool = False) -> Any:
    """Read FIMI text (one transaction per line, whitespace-separated non-negative integer ids).

    Compressed files (``.gz`` ...) are read as one block. Empty lines are empty transactions.
    Item labels are the integers in the file; column ids are their ranks (see Vocabulary).
    """
    from .transactions import TransactionArray

    raw = _text_blocks(url, storage_options, blocksize)
    sources = [dask.delayed(K.parse_fimi_bytes, pure=True)(b) for b in raw]
    return TransactionArray.from_label_blocks(sources, metadata={"source": url}, progress=progress)


def read_csv(url: str, *, storage_options: Mapping[str, Any] | None = None, blocksize: int | str | None = "64MiB", sep: str = ",", progress: bool = False) -> Any:
    """Read basket CSV: one transaction per line, item labels separated by ``sep``.

    Labels are integers when every item in the file is a decimal integer, strings otherwise.
    """
    from .transactions import TransactionArray

    raw = _text_blocks(url, storage_options, blocksize)
    kinds = dask.compute(*[dask.delayed(_csv_all_int)(b, sep) for b in raw])
    as_int = all(kinds)
    sources = [dask.delayed(K.parse_csv_bytes, pure=True)(b, sep=sep, as_int=as_int) for b in raw]
    return TransactionArray.from_label_blocks(sources, metadata={"source": url}, progress=progress)


def _csv_all_int(data: bytes, sep: str) -> bool:
    _, labels = K.parse_csv_bytes(data, sep=sep, as_int=None)
    return labels.dtype.kind == "i" or labels.size == 0


def _write_text(tx: Any, url: str, formatter: Callable, storage_options, overwrite: bool, batch: int, progress: bool) -> None:
    from ..progress import compute

    labels = tx.vocabulary.labels
    blocks = tx.blocks.to_delayed().ravel()
    with atomic_file(url, storage_options=storage_options, overwrite=overwrite) as fh:
        for start in range(0, len(blocks), batch):
            texts = compute(*[dask.delayed(formatter)(b, labels) for b in blocks[start : start + batch]], progress=progress and start == 0 and len(blocks) <= batch)
            for t in texts:
                fh.write(t)


def write_fimi(tx: Any, url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, batch: int = 16, progress: bool = False) -> None:
    """Write FIMI text atomically. Item labels must be integers (FIMI has no names)."""
    if not tx.vocabulary.is_integer:
        raise DataFormatError("FIMI needs integer item labels; write CSV or Parquet for named items")
    _write_text(tx, url, K.format_fimi_block, storage_options, overwrite, batch, progress)


def write_csv(tx: Any, url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, batch: int = 16, progress: bool = False) -> None:
    """Write basket CSV atomically (labels with commas are quoted)."""
    _write_text(tx, url, K.format_csv_block, storage_options, overwrite, batch, progress)


def basket_csv_text(block: Any, labels: Any) -> bytes:
    """Basket CSV text of one CSR block (one line per transaction, labels with commas quoted)."""
    return K.format_csv_block(block, labels)

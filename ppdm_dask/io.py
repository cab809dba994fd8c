"""One entry point to read and write transaction data in any supported format."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .data.formats import detect_format, read_csv, read_fimi, write_csv, write_fimi
from .data.parquet import read_parquet, write_parquet
from .data.sources import remember_url
from .errors import InvalidParameter

__all__ = ["read", "write", "input_for_passes", "FORMATS"]

FORMATS = ("parquet", "fimi", "csv")


def read(
    url: str,
    *,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    check_kind: bool = True,
    **kwargs: Any,
):
    """Read transactions from ``url`` (local path or fsspec URL such as ``s3://...``).

    Parameters
    ----------
    url : str
    format : {"parquet", "fimi", "csv"}, optional
        Inferred from the extension when omitted (``.dat``/``.txt`` FIMI, ``.csv`` CSV, a
        folder or ``.parquet`` Parquet; ``.gz`` etc. are decompressed).
    storage_options : mapping, optional
        fsspec options.
    check_kind : bool
        Refuse input that looks like a table (a header row of column names over records, or a
        ppdm table folder) with one error naming the table readers (:mod:`ppdm_dask.data.kind`).
        ``False`` reads a text file as baskets anyway (a basket CSV whose first line is a basket
        of rare labels); a Parquet table cannot be read as baskets either way.

    Returns
    -------
    TransactionArray
    """
    fmt = (format or detect_format(url)).lower()
    if fmt == "parquet":
        tx = read_parquet(url, storage_options=storage_options, **kwargs)
    elif fmt == "fimi":
        tx = read_fimi(url, storage_options=storage_options, check_kind=check_kind, **kwargs)
    elif fmt == "csv":
        tx = read_csv(url, storage_options=storage_options, check_kind=check_kind, **kwargs)
    else:
        raise InvalidParameter(f"unknown format {format!r}; choose one of {FORMATS}", fix="`format` parquet|fimi|csv")
    return remember_url(tx, url, format=fmt, storage_options=storage_options)


def write(
    tx: Any,
    url: str,
    *,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    **kwargs: Any,
) -> None:
    """Write ``tx`` to ``url`` atomically in the given (or inferred) format."""
    fmt = (format or detect_format(url)).lower()
    if fmt == "parquet":
        write_parquet(tx, url, storage_options=storage_options, overwrite=overwrite, **kwargs)
    elif fmt == "fimi":
        write_fimi(tx, url, storage_options=storage_options, overwrite=overwrite, **kwargs)
    elif fmt == "csv":
        write_csv(tx, url, storage_options=storage_options, overwrite=overwrite, **kwargs)
    else:
        raise InvalidParameter(f"unknown format {format!r}; choose one of {FORMATS}")


def input_for_passes(
    tx: Any, url: str, *, format: str | None = None, progress: bool = False, client: Any = None
) -> tuple[Any, str]:
    """``tx`` (read from ``url``) ready for a job that reads it several times, and the reason
    for the job summary.

    A ppdm Parquet dataset stays lazy: the support counter packs its rows in the first pass
    when they fit in the workers' memory, else every pass reads the files again
    (:mod:`ppdm_dask.mining.counting`); persisting the CSR blocks as well would only take
    memory (8 bytes per entry against about 1.3). Text formats (FIMI, CSV) are parsed once and
    persisted.
    """
    if (format or detect_format(url)) == "parquet" and getattr(tx, "partition_nnz", None) is not None:
        return tx, "input: read from the Parquet files by the first pass (see the rows' plan)"
    return tx.persist(progress=progress, client=client), "input: parsed once and persisted"

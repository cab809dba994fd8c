"""One entry point to read and write transaction data in any supported format."""

from __future__ import annotations

from typing import Any, Mapping

from .data.formats import detect_format, read_csv, read_fimi, write_csv, write_fimi
from .data.parquet import read_parquet, write_parquet
from .data.sources import remember_url
from .errors import InvalidParameter

__all__ = ["read", "write", "persist_if_fits", "FORMATS", "INPUT_MEMORY_SHARE"]

#: Share of the workers' memory that a job's persisted input may take (the rest: per-pass state
#: such as bitsets, and the tasks' temporaries).
INPUT_MEMORY_SHARE = 0.4

FORMATS = ("parquet", "fimi", "csv")


def read(url: str, *, format: str | None = None, storage_options: Mapping[str, Any] | None = None, **kwargs: Any):
    """Read transactions from ``url`` (local path or fsspec URL such as ``s3://...``).

    Parameters
    ----------
    url : str
    format : {"parquet", "fimi", "csv"}, optional
        Inferred from the extension when omitted (``.dat``/``.txt`` FIMI, ``.csv`` CSV, a
        folder or ``.parquet`` Parquet; ``.gz`` etc. are decompressed).
    storage_options : mapping, optional
        fsspec options.

    Returns
    -------
    TransactionArray
    """
    fmt = (format or detect_format(url)).lower()
    if fmt == "parquet":
        tx = read_parquet(url, storage_options=storage_options, **kwargs)
    elif fmt == "fimi":
        tx = read_fimi(url, storage_options=storage_options, **kwargs)
    elif fmt == "csv":
        tx = read_csv(url, storage_options=storage_options, **kwargs)
    else:
        raise InvalidParameter(f"unknown format {format!r}; choose one of {FORMATS}", cli="--format parquet|fimi|csv")
    return remember_url(tx, url, format=fmt, storage_options=storage_options)


def write(tx: Any, url: str, *, format: str | None = None, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, **kwargs: Any) -> None:
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


def persist_if_fits(tx: Any, url: str, *, format: str | None = None, storage_options: Mapping[str, Any] | None = None,
                    progress: bool = False, client: Any = None) -> tuple[Any, str]:
    """``tx`` (read from ``url``) persisted when it fits in :data:`INPUT_MEMORY_SHARE` of the
    workers' memory, else left lazy so that every pass reads the files again instead of the
    workers spilling it; and the reason, for a job summary.

    The size of a committed ppdm dataset comes from its manifest (no pass over the data); text
    formats (FIMI, CSV) are parsed once and persisted.
    """
    from distributed.system import MEMORY_LIMIT

    from .cluster import memory_plan
    from .data.parquet import stored_nbytes

    nbytes = stored_nbytes(url, storage_options) if (format or detect_format(url)) == "parquet" else None
    if nbytes is None:
        return tx.persist(progress=progress, client=client), "input persisted (its size is known only once parsed)"
    plan, why, _ = memory_plan(nbytes, INPUT_MEMORY_SHARE, client, local=INPUT_MEMORY_SHARE * MEMORY_LIMIT, what="input")
    return (tx.persist(progress=progress, client=client) if plan == "persist" else tx), why

"""One entry point to read and write transaction data in any supported format."""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import Any, Callable, Mapping

from .data.formats import detect_format, read_csv, read_fimi, write_csv, write_fimi
from .data.parquet import read_parquet, write_parquet
from .data.sources import remember_url
from .errors import InvalidParameter

__all__ = ["read", "write", "input_for_passes", "settle_arrow_threads", "FORMATS"]

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


def input_for_passes(tx: Any, url: str, *, format: str | None = None, progress: bool = False, client: Any = None) -> tuple[Any, str]:
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


# ---------------------------------------------------------------------- Arrow's threads at exit
def _arrow_task_counters() -> list[Callable[[], int]]:
    """Counters of the tasks queued or running in Arrow's CPU and I/O thread pools, read
    through libarrow's exported C++ API (``arrow::internal::ThreadPool::GetNumTasks``); empty
    when pyarrow is not loaded or the library does not export them (another platform or ABI)."""
    if "pyarrow" not in sys.modules or not sys.platform.startswith("linux"):
        return []
    try:
        import ctypes

        import pyarrow

        name = f"libarrow.so.{pyarrow.cpp_build_info.so_version}"
        path = next(p for d in pyarrow.get_library_dirs() if os.path.exists(p := os.path.join(d, name)))
        lib = ctypes.CDLL(path)  # already loaded by pyarrow: the same handle
        pools = [lib["_ZN5arrow8internal16GetCpuThreadPoolEv"], lib["_ZN5arrow2io8internal15GetIOThreadPoolEv"]]
        num_tasks = lib["_ZN5arrow8internal10ThreadPool11GetNumTasksEv"]
    except (ImportError, AttributeError, OSError, StopIteration):
        return []
    for get in pools:
        get.restype, get.argtypes = ctypes.c_void_p, []
    num_tasks.restype, num_tasks.argtypes = ctypes.c_int, [ctypes.c_void_p]
    return [functools.partial(num_tasks, pool) for pool in (get() for get in pools) if pool]


def settle_arrow_threads(timeout: float = 10.0) -> bool:
    """Wait until Arrow's CPU and I/O thread pools run no task (at most ``timeout`` seconds);
    true when they are idle (or pyarrow is not in use).

    Arrow finishes a read on its own threads after the Python call that made it has returned:
    the last references to the buffers it read from a Python file object (``PyBuffer``) are
    dropped there, which takes the GIL. When the interpreter starts to finalize in between,
    CPython ends such a thread inside a C++ destructor and the process aborts
    ("terminate called without an active exception", exit status 134). Call this before the
    interpreter exits: it sleeps (the GIL released) while any Arrow task is queued or running.
    """
    counters = _arrow_task_counters()
    deadline = time.monotonic() + timeout
    idle = 0
    while counters and idle < 2:  # twice in a row: a task may hand work to the other pool
        idle = idle + 1 if sum(count() for count in counters) == 0 else 0
        if idle < 2:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
    return True

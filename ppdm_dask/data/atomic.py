"""Atomic single-file writes on any fsspec URL: write a hidden temporary sibling, then commit it
in one step that never replaces another job's file (:mod:`ppdm_dask.data.commit`)."""

from __future__ import annotations

import contextlib
import posixpath
from typing import IO, Any, Iterator, Mapping

__all__ = ["atomic_file"]


@contextlib.contextmanager
def atomic_file(url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside ``url``; on success it becomes ``url`` (replacing an existing
    file only with ``overwrite``), on any error it is removed and ``url`` is untouched (a failed
    job never leaves a half-written file).

    Raises
    ------
    DatasetExistsError
        ``url`` exists and ``overwrite`` is false (checked before and again at the commit), or
        ``url`` is a folder.
    """
    from .commit import clean_stale, commit_path, temp_sibling
    from .folder import open_fs, refuse_existing

    fs, path = open_fs(url, storage_options)
    refuse_existing(url, storage_options, overwrite=overwrite, folder=False)
    parent = posixpath.dirname(path)
    if parent:
        fs.makedirs(parent, exist_ok=True)
    clean_stale(fs, path)
    tmp = temp_sibling(path)
    try:
        with fs.open(tmp, mode) as fh:
            yield fh
        commit_path(fs, tmp, path, url, overwrite=overwrite, folder=False)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm(tmp)
        raise

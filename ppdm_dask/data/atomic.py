"""Atomic single-file writes on any fsspec URL: write a hidden temporary sibling, then commit it
in one step that never replaces another job's file (:mod:`ppdm_dask.data.commit`)."""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterator, Mapping
from typing import IO, Any

from ..errors import OutputNotWritableError

__all__ = ["atomic_file"]


@contextlib.contextmanager
def atomic_file(
    url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, mode: str = "wb"
) -> Iterator[IO]:
    """Open a temporary file beside ``url``; on success it becomes ``url`` (replacing an existing
    file only with ``overwrite``), on any error it is removed and ``url`` is untouched (a failed
    job never leaves a half-written file).

    Raises
    ------
    DatasetExistsError
        ``url`` exists and ``overwrite`` is false (checked before and again at the commit), or
        ``url`` is a folder.
    """
    from .commit import clean_stale, commit_path, make_temp_folder, temp_sibling
    from .folder import open_fs, refuse_existing

    fs, path = open_fs(url, storage_options)
    refuse_existing(url, storage_options, overwrite=overwrite, folder=False)
    parent = posixpath.dirname(path)
    if parent:
        make_temp_folder(fs, parent, url)  # the parent folder: created if missing, or one clear error
    clean_stale(fs, path)
    tmp = temp_sibling(path)
    try:
        try:
            fh_ctx = fs.open(tmp, mode)
        except OSError as exc:
            raise OutputNotWritableError(
                f"cannot write {url}: {exc.strerror or exc}", cli="choose an output path in a writable folder"
            ) from None
        with fh_ctx as fh:
            yield fh
        commit_path(fs, tmp, path, url, overwrite=overwrite, folder=False)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm(tmp)
        raise

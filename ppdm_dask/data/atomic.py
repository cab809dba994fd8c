"""Atomic single-file writes on any fsspec URL: write a temporary sibling, then move it."""

from __future__ import annotations

import contextlib
import posixpath
import secrets
from typing import IO, Any, Iterator, Mapping

from ..errors import DatasetExistsError

__all__ = ["atomic_file"]


@contextlib.contextmanager
def atomic_file(url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside ``url``; on success it replaces ``url``, on any error it is
    removed and ``url`` is untouched (a failed job never leaves a half-written file).

    Raises
    ------
    DatasetExistsError
        ``url`` exists and ``overwrite`` is false.
    """
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    if fs.exists(path) and not overwrite:
        raise DatasetExistsError(f"{url} already exists", python="overwrite=True", cli="--overwrite")
    parent = posixpath.dirname(path)
    if parent:
        fs.makedirs(parent, exist_ok=True)
    tmp = f"{path}.__ppdm_tmp-{secrets.token_hex(6)}"
    try:
        with fs.open(tmp, mode) as fh:
            yield fh
        if fs.exists(path):
            fs.rm(path)
        fs.mv(tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm(tmp)
        raise

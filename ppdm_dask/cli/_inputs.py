"""Inputs of a command checked before its job starts a scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["refuse_missing"]

_GLOB_CHARS = frozenset("*?[")


def refuse_missing(url: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`~ppdm_dask.errors.DatasetNotFoundError` when nothing is at ``url`` (a path,
    a glob pattern or an fsspec URL).

    A job checks its inputs with this before its scheduler starts: a mistyped path is then one
    error line at once, not after a LocalCluster has started. The check only says "missing":
    where the store cannot tell (no permission to list, a store that answers otherwise), the
    job's reader reports what is wrong, as it would have without the check.
    """
    from ..errors import DatasetNotFoundError

    if "://" not in url:  # a local path: no fsspec import for the common case
        import glob
        import os

        path = os.path.expanduser(url)
        found = os.path.exists(path) or bool(_GLOB_CHARS & set(path) and glob.glob(path))  # a name may hold '[' too
    else:
        try:
            from fsspec.core import url_to_fs

            fs, where = url_to_fs(url, **dict(storage_options or {}))
            found = bool(fs.exists(where) or (_GLOB_CHARS & set(where) and fs.glob(where)))
        except Exception:  # noqa: BLE001 - not a verdict on the input: its reader will say what is wrong
            return
    if not found:
        raise DatasetNotFoundError(f"no such file or folder: {url}")

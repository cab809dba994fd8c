"""Where a collection was read from, so that a release can fingerprint its input.

The readers (:func:`ppdm_dask.read`, :func:`ppdm_dask.data.tables.read_table`) remember the
files behind the collection they return, keyed by the collection's Dask name. A release made
from that collection looks its source up (:func:`source_of`) and writes into its manifest the
input URL and, per file, its size and SHA-256 (:func:`fingerprint`), hashed on the workers.
Storage options (credentials) are never part of a fingerprint.
"""

from __future__ import annotations

import posixpath
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dask

from .folder import sha256_file

__all__ = ["Source", "remember", "remember_url", "source_of", "fingerprint", "collection_name", "read_from"]

_MAX_REMEMBERED = 256
_REGISTRY: OrderedDict[str, Source] = OrderedDict()


@dataclass(frozen=True)
class Source:
    """The files a collection was read from.

    Attributes
    ----------
    url : str
        What the user passed (credentials in the URL are removed).
    format : str
        ``parquet``, ``csv``, ``fimi``, a ppdm format name ...
    root : str
        Path of ``url`` on the file system (file names are written relative to it).
    files : tuple of str
        Full paths of the files read.
    fs : fsspec file system (not compared, never written)
    """

    url: str
    format: str
    root: str
    files: tuple[str, ...]
    fs: Any = field(default=None, compare=False, repr=False)


def _clean_url(url: str) -> str:
    # s3://KEY:SECRET@bucket/path -> s3://bucket/path
    return re.sub(r"^([a-zA-Z][\w+.-]*://)[^/@]*@", r"\1", str(url))


def collection_name(obj: Any) -> str | None:
    """The Dask name that identifies ``obj`` (TransactionArray, dask array or DataFrame)."""
    blocks = getattr(obj, "blocks", None)
    if blocks is not None and hasattr(blocks, "name"):
        return str(blocks.name)
    name = getattr(obj, "_name", None)
    if isinstance(name, str):
        return name
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) and hasattr(obj, "dask") else None


def remember(obj: Any, *, url: str, format: str, fs: Any, root: str, files: Sequence[str]) -> Any:
    """Record that ``obj`` was read from ``files``; returns ``obj``."""
    name = collection_name(obj)
    if name is not None:
        _REGISTRY[name] = Source(url=_clean_url(url), format=format, root=root, files=tuple(files), fs=fs)
        _REGISTRY.move_to_end(name)
        while len(_REGISTRY) > _MAX_REMEMBERED:
            _REGISTRY.popitem(last=False)
    return obj


def remember_url(obj: Any, url: str, *, format: str, storage_options: Any = None) -> Any:
    """Record that ``obj`` was read from ``url`` (a file, a glob or a folder: every file under
    it but temporary folders); returns ``obj``."""
    from .folder import open_fs

    fs, path = open_fs(url, storage_options)
    try:
        if fs.isdir(path):
            files = sorted(f for f in fs.find(path) if "__ppdm_tmp-" not in f)
        else:
            files = sorted(fs.expand_path(path)) if any(ch in path for ch in "*?[") else [path]
    except OSError:
        return obj
    root = path if fs.isdir(path) else posixpath.dirname(path)
    return remember(obj, url=url, format=format, fs=fs, root=root, files=files)


def read_from(path: str) -> str | None:
    """The URL of a remembered input that lives at or under ``path`` (None if none does): an
    output must not replace a collection that is still read lazily from there."""
    prefix = path.rstrip("/") + "/"
    for src in reversed(_REGISTRY.values()):
        if src.root.rstrip("/") == path.rstrip("/") or any(f.startswith(prefix) or f == path for f in src.files):
            return src.url
    return None


def source_of(obj: Any) -> Source | None:
    """The source recorded for ``obj`` (None for in-memory or derived collections)."""
    name = collection_name(obj)
    return _REGISTRY.get(name) if name is not None else None


def _entry(fs: Any, path: str, root: str) -> dict[str, Any]:
    rel = posixpath.relpath(path, root) if path != root else posixpath.basename(path)
    return {"file": rel, "bytes": int(fs.size(path)), "sha256": sha256_file(fs, path)}


def fingerprint(source: Source | None, **compute_kwargs: Any) -> dict[str, Any]:
    """``{"url", "format", "files": [{"file", "bytes", "sha256"}]}`` of ``source`` (files hashed
    in parallel tasks); ``{"url": None}`` for data that was not read from files."""
    if source is None:
        return {"url": None, "format": "in-memory", "files": []}
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    tasks = [dask.delayed(_entry, pure=False)(source.fs, f, source.root) for f in source.files]
    (entries,) = compute(tasks, **compute_kwargs) if tasks else ([],)
    return {"url": source.url, "format": source.format, "files": list(entries)}

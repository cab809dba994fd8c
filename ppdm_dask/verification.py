"""``ppdm_dask.verify``: re-check a written release from its files alone.

1. the manifest: a committed ppdm release of a known family and version;
2. the files: every file the manifest lists is present with its size and SHA-256, and no other
   file sits in the release folder;
3. the parameters against the privacy floors (explicit overrides are reported as such);
4. the family's guarantee recounted from the released data (k, l, k^m, group sizes against
   privacy levels, δ / k-variance conditions, suppressed records absent ...);
5. with ``original``: the release against the original data.

The result is a :class:`~ppdm_dask.release.Verdict` with one check per condition; the command
``ppdm verify`` exits 0 only when it is ok and prints one line per failed check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .release import Release, Verdict
from .release.files import file_checks, verify_files

__all__ = ["verify", "open_release", "file_checks"]


def open_release(url: str, *, storage_options: Mapping[str, Any] | None = None, verify: bool = False) -> Release:
    """The release written at ``url``, of any family (data lazy; see :meth:`Release.open`: the
    family's class comes from :mod:`ppdm_dask.families`)."""
    return Release.open(url, storage_options=storage_options, verify=verify)


def verify(
    url: str,
    *,
    original: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    checksums: bool = True,
    **compute_kwargs: Any,
) -> Verdict:
    """Re-check the release at ``url`` from its files alone (see the module docstring).

    Parameters
    ----------
    url : str
        A release folder, or a CSV release file (with its ``.manifest.json`` beside it).
    original : str or data, optional
        The original data (URL or object), to check the release against it.
    checksums : bool
        Hash every file (default); without, only presence and sizes are checked.
    **compute_kwargs
        ``client=``, ``progress=`` for the distributed passes.

    Returns
    -------
    Verdict
    """
    return verify_files(url, original=original, storage_options=storage_options, checksums=checksums, **compute_kwargs)

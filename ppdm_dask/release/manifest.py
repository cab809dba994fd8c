"""The public record of a release (manifest version 2): what was released, from what, how, and
what was verified.

Fields common to every release (each family adds its layout fields, e.g. ``n_items``)::

    format, version           the data format of the folder and its version (2)
    release.family            a family of ppdm_dask.families (relational, km, emask, sketch ...)
    release.method            the algorithm (lattice, mondrian, AA, delta, static ...)
    release.parameters        the public parameters (k, l, p, q, delta, levels, min-support ...)
    release.roles             attribute roles (relational releases)
    release.overrides         privacy floors the user explicitly overrode
    release.key_fingerprint   a one-way fingerprint of the key (never the key)
    release.row_order         how rows were ordered (keyed, number of files)
    release.versions          package versions; release.created (UTC)
    input                     rows, schema, URL and the size + SHA-256 of every input file
    guarantees                the verdict of the independent recount on the written files
    summary                   privacy and utility figures
    partitions, files         every output file with its rows, bytes and SHA-256

No storage option, credential or key is ever written.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import platform
from collections.abc import Mapping
from typing import Any

__all__ = ["MANIFEST_VERSION", "versions", "created", "public_parameters"]

MANIFEST_VERSION = 2
_PACKAGES = ("ppdm-dask", "numpy", "scipy", "pandas", "pyarrow", "dask", "distributed", "numba")
_SECRET_WORDS = ("key", "seed", "secret", "password", "token", "credential")


def versions() -> dict[str, str]:
    """Python and package versions of the writing process."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def created() -> str:
    """Now, in UTC, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def public_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse parameters whose name or value looks secret (the manifest is public)."""
    from ..errors import InvalidParameter
    from ..random import Key

    out = {}
    for k, v in parameters.items():
        if isinstance(v, Key) or any(w in str(k).lower() for w in _SECRET_WORDS):
            raise InvalidParameter(f"release parameter {k!r} looks secret; keys and seeds are never written")
        out[str(k)] = v
    return out

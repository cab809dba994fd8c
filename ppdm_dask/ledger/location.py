"""Where the ledger lives when none is named: ``--ledger`` / ``PPDM_LEDGER``, else a folder in
the user's data directory (docs/ledger.md#where-the-ledger-lives)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ENV_VAR", "default_location"]

#: the environment variable naming the ledger (a local path or an fsspec URL)
ENV_VAR = "PPDM_LEDGER"


def _data_home() -> Path:
    """The user's data directory (the XDG rule on Linux, the platform's place elsewhere)."""
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def default_location() -> str:
    """``$PPDM_LEDGER`` when set, else ``<user data dir>/ppdm-dask/ledger``."""
    named = os.environ.get(ENV_VAR, "").strip()
    if named:
        return named
    return str(_data_home() / "ppdm-dask" / "ledger")

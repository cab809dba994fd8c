"""ppdm-dask: privacy-preserving data mining on Dask.

The public API is re-exported here; see README.md for a tour.
"""

from __future__ import annotations

from . import errors
from .data.tables import read_table
from .data.transactions import TransactionArray
from .data.vocabulary import Vocabulary
from .io import read
from .random import Key, as_key
from .release import Check, Release, Roles, Verdict
from .verification import open_release, verify

__version__ = "0.1.0"

__all__ = ["TransactionArray", "Vocabulary", "Key", "as_key", "read", "read_table", "errors", "Release", "Roles", "Verdict",
           "Check", "verify", "open_release", "__version__"]

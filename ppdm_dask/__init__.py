"""ppdm-dask: privacy-preserving data mining on Dask.

The public API is re-exported here; see README.md for a tour.
"""

from __future__ import annotations

from . import errors
from .data.transactions import TransactionArray
from .data.vocabulary import Vocabulary
from .io import read
from .random import Key, as_key

__version__ = "0.1.0"

__all__ = ["TransactionArray", "Vocabulary", "Key", "as_key", "read", "errors", "__version__"]

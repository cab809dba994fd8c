"""ppdm-dask: privacy-preserving data mining on Dask.

The public API is re-exported here; see README.md for a tour.
"""

from __future__ import annotations

from . import errors
from .arrow_threads import register_exit_wait
from .data.tables import read_table
from .data.transactions import TransactionArray
from .data.vocabulary import Vocabulary
from .io import read
from .random import Key, as_key
from .release import Check, Release, Roles, Verdict
from .verification import open_release, verify

__version__ = "0.1.0"

# Every program that uses the package, not only the command line, waits at exit for the reads
# Arrow still closes on its own threads: otherwise the interpreter can finalize under one and
# the process aborts ("terminate called without an active exception", status 134), seen after
# a script that wrote and read back Parquet had printed all its output.
register_exit_wait()

__all__ = ["TransactionArray", "Vocabulary", "Key", "as_key", "read", "read_table", "errors", "Release", "Roles", "Verdict",
           "Check", "verify", "open_release", "__version__"]

"""ppdm-dask: privacy-preserving data mining on Dask.

The public API is re-exported here; see README.md for a tour. The re-exported names are loaded
on first use (PEP 562): ``import ppdm_dask`` alone loads neither Dask's collections nor pandas,
numba or scipy, so the ``ppdm`` command line and a script's start stay quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors
from .arrow_threads import register_exit_wait
from .lazy import lazy_exports

if TYPE_CHECKING:  # the names as type checkers and IDEs see them
    from .data.tables import read_table
    from .data.transactions import TransactionArray
    from .data.vocabulary import Vocabulary
    from .io import read
    from .random import Key, as_key
    from .release import Check, Release, Roles, Verdict
    from .verification import open_release, verify

__version__ = "0.1.0"

#: public name -> the module that defines it (imported when the name is first read)
_LAZY: dict[str, str] = {
    "TransactionArray": ".data.transactions",
    "Vocabulary": ".data.vocabulary",
    "Key": ".random",
    "as_key": ".random",
    "read": ".io",
    "read_table": ".data.tables",
    "Release": ".release",
    "Roles": ".release",
    "Verdict": ".release",
    "Check": ".release",
    "verify": ".verification",
    "open_release": ".verification",
}

# Every program that uses the package, not only the command line, waits at exit for the reads
# Arrow still closes on its own threads: otherwise the interpreter can finalize under one and
# the process aborts ("terminate called without an active exception", status 134), seen after
# a script that wrote and read back Parquet had printed all its output. Registering is cheap
# (no pyarrow import); registered first, the wait runs last, after the handlers of the
# libraries a job loads later.
register_exit_wait()

__all__ = [
    "TransactionArray",
    "Vocabulary",
    "Key",
    "as_key",
    "read",
    "read_table",
    "errors",
    "Release",
    "Roles",
    "Verdict",
    "Check",
    "verify",
    "open_release",
    "__version__",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY, __all__)

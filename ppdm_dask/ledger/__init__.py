"""The release ledger: every release of an input recorded, repeated releases composed and
budgeted (docs/ledger.md).

* :class:`Ledger` — where the records live (a local folder or an fsspec URL), their secret and
  lock (:mod:`.store`);
* :class:`Composition` and :class:`Admission` — what a new release composes with the earlier
  ones, and a job's passage through the ledger (:mod:`.compose`).
"""

from .compose import DEFAULT, Admission, Composition, CompositionRefused, earlier_releases, resolve
from .location import ENV_VAR, default_location
from .store import STATUSES, Ledger, Record

__all__ = [
    "Ledger",
    "Record",
    "Composition",
    "CompositionRefused",
    "Admission",
    "earlier_releases",
    "resolve",
    "DEFAULT",
    "ENV_VAR",
    "default_location",
    "STATUSES",
]

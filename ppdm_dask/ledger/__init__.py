"""The release ledger: every release of an input recorded, repeated releases composed and
budgeted (docs/ledger.md).

* :class:`Ledger` — where the records live (a local folder or an fsspec URL), their secret and
  lock (:mod:`.store`);
* :class:`Composition` and :class:`Admission` — what a new release composes with the earlier
  ones, and a job's passage through the ledger (:mod:`.compose`);
* :class:`PeopleJoin` — a release's people and the earlier releases sharing them, joined person
  by person (:mod:`.people`: hash-partitioned Parquet of per-person values).
"""

from .compose import DEFAULT, Admission, Composition, CompositionRefused, PeopleJoin, earlier_releases, resolve
from .location import ENV_VAR, default_location
from .store import STATUSES, Ledger, Record

__all__ = [
    "Ledger",
    "Record",
    "Composition",
    "CompositionRefused",
    "Admission",
    "PeopleJoin",
    "earlier_releases",
    "resolve",
    "DEFAULT",
    "ENV_VAR",
    "default_location",
    "STATUSES",
]

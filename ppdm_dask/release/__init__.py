"""The release layer shared by every method family: one :class:`Release` protocol (data, public
parameters, ``summary``, ``verify``, ``write``), :class:`Verdict` / :class:`Check` for every check,
attribute :class:`Roles`, the keyed row order and the manifest v2.

Family releases live in their packages (``anonymity``, ``emask``, ``sketch``, ``condensation``,
``krimp``), registered in :mod:`ppdm_dask.families`; :func:`ppdm_dask.verify` re-checks any
written release from its files alone.
"""

from .base import Release, is_csv_destination, sidecar_manifest
from .figures import Figures, Plot, Series, Table, Value, histogram
from .roles import Roles
from .tables import TableRelease
from .transactions import TransactionRelease
from .verdict import Check, Verdict

__all__ = [
    "Release",
    "TableRelease",
    "TransactionRelease",
    "Roles",
    "Check",
    "Verdict",
    "is_csv_destination",
    "sidecar_manifest",
    "Figures",
    "Plot",
    "Series",
    "Table",
    "Value",
    "histogram",
]

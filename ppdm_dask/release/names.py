"""Names that more than one module matches, defined once.

A check's name is read by people (``ppdm verify``, the report) and matched by code (the report
folds the per-file checks into one row, a composition limit is told from a floor by where it
is). A module that matches a name imports it from here, or from the family that owns the
check (e.g. :data:`ppdm_dask.krimp.release.MIN_SUPPORT`): renaming a check is one edit and no
module matches prose. This module imports nothing.
"""

from __future__ import annotations

__all__ = ["FILE_CHECK", "COMPOSITION_WHERE", "COMPOSITION_OVERRIDE"]

#: The check of one file against its manifest entry (size and SHA-256), one per listed file.
FILE_CHECK = "file matches the manifest"
#: ``Check.where`` of a limit of the composition with the input's earlier releases (the ledger
#: decides it, not the release's own recount).
COMPOSITION_WHERE = "ledger"
#: The prefix of a manifest override that accepts a composition limit (``--allow-composition``):
#: ``"composition: " + the limit's check name``.
COMPOSITION_OVERRIDE = "composition: "

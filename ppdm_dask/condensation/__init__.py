"""Condensation with per-record privacy levels (Aggarwal & Yu; see docs/condensation.md).

Records are grouped so that every group holds at least as many records as the largest privacy
level of its members; only the group statistics (n, Σx, Σxxᵀ, Σp) are kept, and pseudo-data with
the same first and second moments is generated from them.

* :class:`Condenser` — static construction (Segment, Cannibalize, Attrition) as a
  partition-then-merge Dask job; :func:`construct_groups` is the sequential kernel.
* :class:`StreamingCondenser` — dynamic maintenance over a stream of blocks (add to the nearest
  group that can take the record, split along the principal axis).
* :func:`generate` / :func:`generate_dask` — pseudo-data; :class:`GroupTable` /
  :class:`CondensedGroup` — the statistics; :func:`check_condensation` — independent check.
* :class:`CondensedRelease` — what ``transform`` returns: pseudo-data and the published
  statistics (with each group's largest privacy level), written and verified by the release
  layer; :func:`read_groups` reads the statistics of a written release.
"""

from .condenser import Condenser, check_condensation, repair_groups
from .dynamic import StreamingCondenser
from .groups import CondensedGroup, GroupTable
from .inputs import privacy_levels
from .release import CondensedRelease, read_groups
from .pseudo import canonical_eigh, generate, generate_dask, pseudo_points
from .static import construct_groups, group_ssq
from .stream import condense_stream

__all__ = [
    "Condenser",
    "CondensedRelease",
    "read_groups",
    "StreamingCondenser",
    "condense_stream",
    "CondensedGroup",
    "GroupTable",
    "construct_groups",
    "group_ssq",
    "generate",
    "generate_dask",
    "pseudo_points",
    "canonical_eigh",
    "check_condensation",
    "privacy_levels",
    "repair_groups",
]

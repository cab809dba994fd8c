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
* :class:`CondensedRelease` — what ``release()`` returns: pseudo-data (none equal to a unique
  original record) and each group's size with its largest privacy level (the statistics only on
  request, of groups of more than d + 1 records), written and verified by the release layer;
  :func:`read_groups` / :func:`read_statistics` read them back. Every random step draws from the
  release's stream key (docs/condensation.md#one-key-many-releases).
* :mod:`.attacks` — records rebuilt from published statistics, membership inference;
  :mod:`.closest` — distance to closest record; :mod:`.copies` — pseudo-records equal to
  original records.
"""

from .condenser import Condenser, check_condensation, repair_groups
from .dynamic import StreamingCondenser
from .groups import CondensedGroup, GroupTable
from .inputs import privacy_levels
from .pseudo import canonical_eigh, generate, generate_dask, pseudo_points
from .release import CondensedRelease, read_groups, read_statistics
from .static import construct_groups, group_ssq
from .stream import condense_stream

__all__ = [
    "Condenser",
    "CondensedRelease",
    "read_groups",
    "read_statistics",
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

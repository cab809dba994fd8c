"""k-anonymity, l-diversity and k^m-anonymity: hierarchies, anonymisers, independent checks,
information-loss and risk metrics, accuracy-constrained access control.

The estimators (:class:`KAnonymizer`, :class:`AccessControlAnonymizer`, :class:`KmAnonymizer`)
check roles and privacy floors and return releases (:class:`AnonymizedRelease`,
:class:`KmRelease`) that write themselves in a keyed row order and verify before committing.
Every ``check_*`` function returns a :class:`~ppdm_dask.release.Verdict`, every ``is_*`` a bool.
"""

from __future__ import annotations

from ..data.hierarchy import Hierarchy
from ._diversity import KINDS as L_KINDS
from ._diversity import T_KINDS
from .anonymize import METHODS, AccessControlResult, AnonymizationResult, anonymize, anonymize_for_permissions
from .checks import check_k_anonymity, check_l_diversity, check_t_closeness, equivalence_classes, is_k_anonymous, is_l_diverse
from .estimators import AccessControlAnonymizer, KAnonymizer, KmAnonymizer
from .frequency import FrequencySet, frequency_set
from .hierarchies import load_hierarchies
from .km import check_km_anonymity, is_km_anonymous, km_anonymize
from .km_release import KmRelease
from .lattice import LatticeResult, datafly, lattice_search
from .metrics import (
    average_class_size,
    discernibility,
    ncp,
    ncp_categorical,
    ncp_level,
    ncp_numeric,
    prosecutor_risk,
)
from .mondrian import class_regions, mondrian_partition
from .publish import publish
from .release import AnonymizedRelease

__all__ = [
    "Hierarchy",
    "KAnonymizer",
    "AccessControlAnonymizer",
    "KmAnonymizer",
    "AnonymizedRelease",
    "KmRelease",
    "anonymize",
    "anonymize_for_permissions",
    "km_anonymize",
    "AnonymizationResult",
    "AccessControlResult",
    "METHODS",
    "L_KINDS",
    "T_KINDS",
    "frequency_set",
    "FrequencySet",
    "load_hierarchies",
    "lattice_search",
    "datafly",
    "LatticeResult",
    "mondrian_partition",
    "class_regions",
    "publish",
    "equivalence_classes",
    "check_k_anonymity",
    "check_l_diversity",
    "check_t_closeness",
    "check_km_anonymity",
    "is_k_anonymous",
    "is_l_diverse",
    "is_km_anonymous",
    "discernibility",
    "average_class_size",
    "prosecutor_risk",
    "ncp",
    "ncp_categorical",
    "ncp_numeric",
    "ncp_level",
]

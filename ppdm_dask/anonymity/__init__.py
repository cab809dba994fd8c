"""k-anonymity, l-diversity and k^m-anonymity: hierarchies, anonymisers, independent checks,
information-loss and risk metrics, accuracy-constrained access control."""

from __future__ import annotations

from .anonymize import METHODS, AnonymizationResult, anonymize
from .checks import check_k_anonymity, check_l_diversity, equivalence_classes
from .frequency import FrequencySet, frequency_set
from ..data.hierarchy import Hierarchy
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
from .release import write_release

# SPEC §3.2 names
is_k_anonymous = check_k_anonymity
is_l_diverse = check_l_diversity

__all__ = [
    "Hierarchy",
    "anonymize",
    "AnonymizationResult",
    "METHODS",
    "frequency_set",
    "FrequencySet",
    "lattice_search",
    "datafly",
    "LatticeResult",
    "mondrian_partition",
    "class_regions",
    "write_release",
    "equivalence_classes",
    "check_k_anonymity",
    "check_l_diversity",
    "is_k_anonymous",
    "is_l_diverse",
    "discernibility",
    "average_class_size",
    "prosecutor_risk",
    "ncp",
    "ncp_categorical",
    "ncp_numeric",
    "ncp_level",
]

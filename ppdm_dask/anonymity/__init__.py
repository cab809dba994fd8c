"""k-anonymity and l-diversity: hierarchies, independent checks, information-loss and risk metrics."""

from __future__ import annotations

from .checks import check_k_anonymity, check_l_diversity, equivalence_classes
from .hierarchy import Hierarchy
from .metrics import (
    average_class_size,
    discernibility,
    ncp,
    ncp_categorical,
    ncp_level,
    ncp_numeric,
    prosecutor_risk,
)

__all__ = [
    "Hierarchy",
    "equivalence_classes",
    "check_k_anonymity",
    "check_l_diversity",
    "discernibility",
    "average_class_size",
    "prosecutor_risk",
    "ncp",
    "ncp_categorical",
    "ncp_numeric",
    "ncp_level",
]

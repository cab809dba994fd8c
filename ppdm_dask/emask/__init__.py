"""EMASK / MASK: privacy-preserving association rule mining on distorted data
(Agrawal, Krishnan & Haritsa; formulas and errata in SPEC §4)."""

from .distortion import check_pq, distort, distort_record
from .mining import EstimatedItemsets, mine
from .reconstruction import IllConditionedWarning, reconstruct_classes, reconstruct_support, transition_matrix

__all__ = [
    "distort",
    "distort_record",
    "check_pq",
    "mine",
    "EstimatedItemsets",
    "transition_matrix",
    "reconstruct_classes",
    "reconstruct_support",
    "IllConditionedWarning",
]

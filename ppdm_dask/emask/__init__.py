"""EMASK / MASK: privacy-preserving association rule mining on distorted data
(Agrawal, Krishnan & Haritsa; formulas and errata in SPEC §4)."""

from .distortion import check_pq, distort, distort_record
from .mining import EstimatedItemsets, mine
from .parameters import ParameterChoice, choose_parameters, estimate_s0
from .privacy import basic_privacy, err6, ldp_epsilon, r1, record_epsilon, reinterrogated_privacy, relative_error
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
    "basic_privacy",
    "r1",
    "err6",
    "relative_error",
    "ldp_epsilon",
    "record_epsilon",
    "reinterrogated_privacy",
    "choose_parameters",
    "ParameterChoice",
    "estimate_s0",
]

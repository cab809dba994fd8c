"""EMASK / MASK: privacy-preserving association rule mining on distorted data
(Agrawal, Krishnan & Haritsa; formulas and corrections in docs/emask.md).

:class:`Distorter` (fit: s0 and the basic-privacy floor; release or transform(X): a :class:`DistortedRelease`)
is the release path; :func:`distort` the plain function for library users."""

from .audit import audit, realign
from .distorter import Distorter
from .distortion import check_pq, distort, distort_record
from .mining import EstimatedItemsets, mine
from .parameters import ParameterChoice, choose_parameters, estimate_s0
from .privacy import basic_privacy, err6, ldp_epsilon, r1, record_epsilon, reinterrogated_privacy, relative_error
from .reconstruction import IllConditionedWarning, reconstruct_classes, reconstruct_support, transition_matrix
from .release import DistortedRelease

__all__ = [
    "Distorter",
    "DistortedRelease",
    "audit",
    "realign",
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

"""k-anonymity, l-diversity and k^m-anonymity: hierarchies, anonymisers, independent checks,
information-loss and risk metrics, accuracy-constrained access control.

The estimators (:class:`KAnonymizer`, :class:`AccessControlAnonymizer`, :class:`KmAnonymizer`)
check roles and privacy floors and return releases (:class:`AnonymizedRelease`,
:class:`KmRelease`) that write themselves in a keyed row order and verify before committing.
Every ``check_*`` function returns a :class:`~ppdm_dask.release.Verdict`, every ``is_*`` a bool.

The public names load on first use (:mod:`ppdm_dask.lazy`): the command line reads the
choices of its options (:mod:`.names`) without loading the anonymisers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names as type checkers and IDEs see them
    from ..data.hierarchy import Hierarchy
    from .anonymize import AccessControlResult, AnonymizationResult, anonymize, anonymize_for_permissions
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
    from .names import L_KINDS, METHODS, T_KINDS
    from .publish import publish
    from .release import AnonymizedRelease

#: public name -> the module that defines it
_LAZY: dict[str, str] = {
    "Hierarchy": "..data.hierarchy",
    "L_KINDS": ".names",
    "T_KINDS": ".names",
    "METHODS": ".names",
    "AccessControlResult": ".anonymize",
    "AnonymizationResult": ".anonymize",
    "anonymize": ".anonymize",
    "anonymize_for_permissions": ".anonymize",
    "check_k_anonymity": ".checks",
    "check_l_diversity": ".checks",
    "check_t_closeness": ".checks",
    "equivalence_classes": ".checks",
    "is_k_anonymous": ".checks",
    "is_l_diverse": ".checks",
    "AccessControlAnonymizer": ".estimators",
    "KAnonymizer": ".estimators",
    "KmAnonymizer": ".estimators",
    "FrequencySet": ".frequency",
    "frequency_set": ".frequency",
    "load_hierarchies": ".hierarchies",
    "check_km_anonymity": ".km",
    "is_km_anonymous": ".km",
    "km_anonymize": ".km",
    "KmRelease": ".km_release",
    "LatticeResult": ".lattice",
    "datafly": ".lattice",
    "lattice_search": ".lattice",
    "average_class_size": ".metrics",
    "discernibility": ".metrics",
    "ncp": ".metrics",
    "ncp_categorical": ".metrics",
    "ncp_level": ".metrics",
    "ncp_numeric": ".metrics",
    "prosecutor_risk": ".metrics",
    "class_regions": ".mondrian",
    "mondrian_partition": ".mondrian",
    "publish": ".publish",
    "AnonymizedRelease": ".release",
}

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

__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY, __all__)

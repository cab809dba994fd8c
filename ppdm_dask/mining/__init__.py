"""Exact frequent-itemset mining and association rules on TransactionArrays."""

from .apriori import ItemsetExplosionWarning, ResultTooLargeError, apriori, min_count_of
from .counting import SupportCounter
from .results import FrequentItemsets
from .rules import METRICS, AssociationRules, association_rules

__all__ = [
    "apriori",
    "association_rules",
    "FrequentItemsets",
    "SupportCounter",
    "AssociationRules",
    "ResultTooLargeError",
    "ItemsetExplosionWarning",
    "min_count_of",
    "METRICS",
]

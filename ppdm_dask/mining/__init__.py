"""Exact frequent-itemset mining and association rules on TransactionArrays."""

from .apriori import ItemsetExplosionWarning, ResultTooLargeError, apriori, min_count_of
from .results import FrequentItemsets
from .rules import METRICS, AssociationRules, association_rules

__all__ = [
    "apriori",
    "association_rules",
    "FrequentItemsets",
    "AssociationRules",
    "ResultTooLargeError",
    "ItemsetExplosionWarning",
    "min_count_of",
    "METRICS",
]

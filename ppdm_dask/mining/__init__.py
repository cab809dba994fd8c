"""Exact frequent-itemset mining and association rules on TransactionArrays."""

from .apriori import ItemsetExplosionWarning, ResultTooLargeError, apriori, min_count_of
from .counting import SupportCounter
from .export import read_itemsets, read_rules, write_itemsets, write_rules
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
    "read_itemsets",
    "read_rules",
    "write_itemsets",
    "write_rules",
]

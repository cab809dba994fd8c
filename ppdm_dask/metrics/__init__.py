"""Evaluation metrics of privacy-preserving mining results (docs/emask.md#accuracy-metrics) and
the risk and utility figures of transaction releases
(docs/mining.md#report-figures-the-km-audit-curve-and-unique-baskets)."""

from .itemsets import identity_errors, itemset_accuracy, support_error
from .km_audit import KmAudit, km_audit, unique_baskets
from .release_utility import itemset_utility

__all__ = ["support_error", "identity_errors", "itemset_accuracy", "KmAudit", "km_audit", "unique_baskets", "itemset_utility"]

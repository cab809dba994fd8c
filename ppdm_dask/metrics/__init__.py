"""Evaluation metrics of privacy-preserving mining results (docs/emask.md#accuracy-metrics)."""

from .itemsets import identity_errors, itemset_accuracy, support_error

__all__ = ["support_error", "identity_errors", "itemset_accuracy"]

"""Evaluation metrics of privacy-preserving mining results (SPEC §4.6)."""

from .itemsets import identity_errors, itemset_accuracy, support_error

__all__ = ["support_error", "identity_errors", "itemset_accuracy"]

"""The partitioned sparse transaction collection and its I/O."""

from .transactions import TransactionArray
from .vocabulary import Vocabulary

__all__ = ["TransactionArray", "Vocabulary"]

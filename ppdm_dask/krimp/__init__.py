"""KRIMP: MDL code tables (Vreeken, van Leeuwen & Siebes); see docs/krimp.md."""

from ._kernels import Database, as_database
from .candidates import Candidates, mine_candidates
from .codetable import CodeTable, cover, cover_usages, encoded_length, length_from_usages
from .generator import GenerationError, KrimpGenerator, infer_domains
from .scores import (
    anonymity_score,
    avg_patterns_per_row,
    cover_usages_dask,
    dissimilarity,
    ds_from_tables,
    normalized_anonymity_score,
    pattern_comparison,
)
from .search import KrimpResult, krimp

__all__ = [
    "Database",
    "as_database",
    "CodeTable",
    "cover",
    "cover_usages",
    "encoded_length",
    "Candidates",
    "mine_candidates",
    "KrimpResult",
    "krimp",
    "length_from_usages",
    "KrimpGenerator",
    "GenerationError",
    "infer_domains",
    "anonymity_score",
    "normalized_anonymity_score",
    "dissimilarity",
    "ds_from_tables",
    "pattern_comparison",
    "avg_patterns_per_row",
    "cover_usages_dask",
]

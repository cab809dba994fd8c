"""The choices of the anonymisers' options, light enough for the command line's help and usage
errors (no pandas, no Dask collections)."""

from __future__ import annotations

__all__ = ["METHODS", "L_KINDS", "T_KINDS"]

#: the anonymisation algorithms of :func:`~ppdm_dask.anonymity.anonymize`
METHODS = ("lattice", "datafly", "mondrian", "cluster")
#: the kinds of l-diversity
L_KINDS = ("distinct", "entropy", "recursive")
#: the ground distances of t-closeness; ``auto``: ordered for a numeric sensitive column, equal otherwise
T_KINDS = ("auto", "ordered", "equal")

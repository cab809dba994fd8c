"""The one table from a parameter name, as the library's errors carry it, to its ``ppdm`` flag.

The library names parameters only (``parameter="min_support"``, ``fix="raise `min_support`"``,
:class:`~ppdm_dask.errors.PPDMError`); the command line prints the flag of each name from
:data:`FLAGS`. Renaming a flag is one line here (and the option itself); a test walks every
command's options and checks that each flag below exists and that every name an error of the
library can carry is here or in :data:`LIBRARY_ONLY`.

A name is the Python keyword argument where the command line has the same parameter
(``quasi_identifiers`` -> ``--qi``); where a flag sets something the library spells otherwise
(``ppdm sketch knn --neighbors`` for the classifier's ``k``, ``--min-count`` for an integer
``min_support``, ``--partition-rows`` of ``ppdm data quest`` for ``rows_per_partition``), the
error's fix names the flag's own name.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import PPDMError

__all__ = ["FLAGS", "LIBRARY_ONLY", "flag_of", "cli_message"]

#: parameter name -> ``ppdm`` flag
FLAGS: Mapping[str, str] = {
    # supports and bounds of the miners
    "min_support": "--min-support",
    "min_count": "--min-count",
    "min_confidence": "--min-confidence",
    "max_len": "--max-len",
    "max_length": "--max-length",
    "max_candidates": "--max-candidates",
    "max_itemsets": "--max-itemsets",
    "closed": "--closed",
    # overrides recorded in the manifest
    "allow_weak": "--allow-weak",
    "allow_composition": "--allow-composition",
    "allow_unique": "--allow-unique",
    "allow_unique_copies": "--allow-unique-copies",
    "overwrite": "--overwrite",
    # EMASK
    "p": "--p",
    "q": "--q",
    "privacy_floor": "--privacy-floor",
    "epsilon_budget": "--epsilon-budget",
    "items": "--items",
    # KRIMP generator
    "laplace": "--laplace",
    "n_rows": "--rows",
    "domain_order": "--domain-order",
    # sketches
    "k": "--k",
    "m": "--m",
    "m_max": "--m-max",
    "delta": "--delta",
    "knn_scope": "--knn-scope",
    "neighbors": "--neighbors",
    "n_clusters": "--clusters",
    # anonymity
    "l": "--l",
    "c": "--c",
    "t": "--t",
    "l_kind": "--l-kind",
    "t_kind": "--t-kind",
    "method": "--method",
    "fan_out": "--fan-out",
    "hierarchy": "--hierarchy",
    "hierarchies": "--hierarchies",
    "permissions": "--permissions",
    "sampling_fraction": "--sampling-fraction",
    "population_size": "--population-size",
    "weights": "--weight-column",
    # condensation
    "privacy_level": "--privacy-level",
    "privacy_range": "--privacy-range",
    "privacy_column": "--privacy-column",
    "columns": "--columns",
    "rows_per_partition": "--rows-per-partition",
    # roles of a table
    "identifiers": "--identifier",
    "person": "--person",
    "consistent": "--consistent",
    "quasi_identifiers": "--qi",
    "sensitive": "--sensitive",
    "insensitive": "--insensitive",
    # inputs and outputs
    "format": "--format",
    "items_column": "--items-column",
    "user": "--user",
    "item": "--item",
    "time": "--time",
    "session_gap": "--session-gap",
    "window": "--window",
    "max_user_events": "--max-user-events",
    "heavy_users": "--heavy-users",
    "max_baskets_per_user": "--max-baskets-per-user",
    "n_files": "--files",
    "as_baskets": "--as-baskets",
    "sep": "--sep",
    "dtype": "--dtype",
    "schema": "--schema",
    "npartitions": "--partitions",
    "partition_rows": "--partition-rows",
    "key": "--key-file",
    "original": "--original",
    "audience": "--audience",
    "ledger": "--ledger",
    "no_ledger": "--no-ledger",
    "reason": "--reason",
}

#: parameters of the library that no ``ppdm`` flag sets (an error about one of them cannot come
#: from the command line's own options; it is shown under its Python name)
LIBRARY_ONLY: frozenset[str] = frozenset(
    {
        "batch_size",
        "engine",
        "events_per_block",
        "start",
        "url",
        "block_rows",
        "blocks_per_partition",
        "index_memory",
        "memory",
        "max_iter",
        "n",
        "n_transactions",
        "lp_factor",
        "init_number",
        "max_m",
        "size",
        "neighbourhood",
        "threshold",
        "tol",
    }
)


def flag_of(name: str) -> str:
    """The flag of parameter ``name`` (the name itself when no flag sets it)."""
    return FLAGS.get(name, name)


def cli_message(exc: PPDMError) -> str:
    """The message of ``exc`` as the command line prints it: every parameter as its flag."""
    return exc.message_for("cli", FLAGS)

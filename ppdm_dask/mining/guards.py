"""The guards of the level-wise miners: how many candidates and itemsets a level may bring, and
how much of the driver's memory they may take (pure Python, no dask).

Apriori and EMASK-Apriori go through them in :class:`~ppdm_dask.mining.levelwise.LevelwiseDriver`;
the KRIMP candidate miner checks its own tables with :func:`check_memory`.
"""

from __future__ import annotations

import warnings

from ..errors import ResultTooLargeError

__all__ = [
    "DEFAULT_MAX_ITEMSETS",
    "DEFAULT_MAX_CANDIDATES",
    "MEMORY_SHARE",
    "ItemsetExplosionWarning",
    "available_bytes",
    "format_bytes",
    "candidate_bytes",
    "check_memory",
    "check_candidates",
    "check_itemsets",
]

#: Default bound on the number of frequent itemsets + pending candidates.
DEFAULT_MAX_ITEMSETS = 50_000_000
#: Default bound on the candidates of one level, checked *before* they are built
#: (:func:`check_candidates`).
DEFAULT_MAX_CANDIDATES = 20_000_000


class ItemsetExplosionWarning(UserWarning):
    """A level has a very large number of candidates."""


#: Driver bytes per candidate of length k: ``BYTES_PER_CANDIDATE + BYTES_PER_CANDIDATE_ITEM * k``.
#: The prefix join and subset pruning of :func:`~.candidates.apriori_gen` hold a few 8-byte arrays
#: per joined pair at their peak, the candidates 4 bytes per item, then their counts and the
#: frequent rows kept (traced peaks of a level: 96 bytes per candidate at k = 5 on 60-item rows,
#: 119 and 124 at k = 5 and 6 on mushroom at min-count 1).
BYTES_PER_CANDIDATE = 64
BYTES_PER_CANDIDATE_ITEM = 10


def candidate_bytes(n_candidates: int, k: int, extra_per_candidate: int = 0) -> int:
    """Estimated driver memory to build and count ``n_candidates`` candidates of length ``k``."""
    return int(n_candidates) * (BYTES_PER_CANDIDATE + BYTES_PER_CANDIDATE_ITEM * int(k) + int(extra_per_candidate))


#: Never use more than this share of the driver's available memory for one level's candidates.
MEMORY_SHARE = 0.5


def available_bytes() -> int | None:
    """The memory available on this machine now, in bytes (None: psutil cannot tell)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # no psutil or no /proc: the count bound alone applies
        return None


def format_bytes(n: float) -> str:
    """``n`` bytes for a message: GiB from 1 GiB on, else MiB."""
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def check_memory(need: int, what: str, *, python: str, fix: str, memory: int | None = None) -> None:
    """Refuse ``what`` (a clause of the error, e.g. "level 5 would build ...") when its ``need``
    bytes pass :data:`MEMORY_SHARE` of the available memory (``memory``: that figure, default
    measured now by :func:`available_bytes`); ``python``/``fix`` say how to ask for less (``fix`` names
    parameters in backticks: the command line shows them as flags)."""
    avail = available_bytes() if memory is None else memory
    if avail is not None and need > MEMORY_SHARE * avail:
        raise ResultTooLargeError(
            f"{what}, more than {MEMORY_SHARE:.0%} of the {format_bytes(avail)} of memory available", python=python, fix=fix
        )


def check_candidates(
    n_candidates: int,
    k: int,
    max_candidates: int | None,
    *,
    extra_per_candidate: int = 0,
    upper_bound: bool = False,
    memory: int | None = None,
) -> None:
    """Refuse a level of ``n_candidates`` candidates of length ``k`` **before** it is built: more
    than ``max_candidates`` (None: no bound), or an estimated memory over :data:`MEMORY_SHARE` of
    the driver's available memory (``memory``: that figure, default measured now).

    ``upper_bound``: ``n_candidates`` counts the joined pairs before subset pruning (what
    :func:`~.candidates.apriori_gen` allocates; the candidates may be fewer).
    """
    need = candidate_bytes(n_candidates, k, extra_per_candidate)
    what = (
        f"level {k} would build {'up to ' if upper_bound else ''}{n_candidates:,} candidate itemsets "
        f"(about {format_bytes(need)} on the driver)"
    )
    fix_py = "raise min_support, set max_length, or raise max_candidates"
    fix = "raise `min_support` or `min_count`, set `max_length`, or raise `max_candidates`"
    if max_candidates is not None and n_candidates > max_candidates:
        raise ResultTooLargeError(f"{what}, over the bound of {max_candidates:,} candidates", python=fix_py, fix=fix)
    check_memory(
        need,
        what,
        python="raise min_support or set max_length",
        fix="raise `min_support` or `min_count`, or set `max_length`",
        memory=memory,
    )


def check_itemsets(total: int, max_itemsets: int, too_many: str, many: int, many_text: str, *, stacklevel: int = 2) -> None:
    """Refuse a result past ``max_itemsets`` (``too_many`` says what it would be); warn with
    :class:`ItemsetExplosionWarning` when ``many`` passes a tenth of it (``many_text`` says what)."""
    if total > max_itemsets:
        raise ResultTooLargeError(
            f"{too_many}, over the bound of {max_itemsets:,}",
            python="raise min_support, set max_length, or raise max_itemsets",
            fix="raise `min_support` or `min_count`, set `max_length`, or raise `max_itemsets`",
        )
    if many > max_itemsets // 10:
        warnings.warn(f"{many_text}; the output may explode", ItemsetExplosionWarning, stacklevel=stacklevel + 1)

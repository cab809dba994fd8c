"""Optimal full-domain generalisation with a suppression limit (lattice search), and Datafly.

The search space is the generalisation lattice: one level per quasi-identifier, from all leaves
(0, ..., 0) to all roots. A node is *feasible* when the records of its classes that are smaller
than k (or not l-diverse, or not t-close) — which are suppressed whole — number at most
``max_suppression * N``. Among feasible nodes the search returns the one with minimum
discernibility DM = sum |E|^2 over kept classes + suppressed * N (ties: fewer total levels, then
the lexicographically smallest level vector).

Search: nodes in order of height (sum of levels). Every node's classes come from rolling the
frequency set up (``_lattice_kernels``). Pruning uses a monotone lower bound — the exact
argument of the bound-based pruning of Flash/ARX for a monotone metric: for any generalisation Y
of X, DM(Y) >= sum over all classes E of X of |E|^2 (a kept class of Y is a union of X classes,
and a suppressed record costs N >= the size of its X class). So once that sum at X reaches the
best DM found, no generalisation of X can be better and all of them are skipped; the bound is
inherited along the lattice, so pruned nodes are never rolled up. A greedy Datafly solution seeds
the best DM. The result is exact (tested against exhaustive evaluation).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InfeasiblePrivacyError, InvalidParameter
from ._diversity import Closeness
from ._lattice_kernels import NodeStats, node_stats
from .frequency import FrequencySet

MAX_LATTICE_NODES = 5_000_000


@dataclass
class LatticeResult:
    """Outcome of a full-domain search.

    Attributes
    ----------
    node : tuple of int
        Chosen level per quasi-identifier.
    stats : NodeStats
        Classes of the chosen node.
    dm : int
        Discernibility of the chosen node.
    suppressed_classes : ndarray of bool
        Per class of the chosen node (numbered as by ``class_index``): suppressed or not.
    inverse : ndarray
        Class of each frequency-set row.
    n_nodes, n_evaluated : int
        Lattice size and how many nodes were rolled up (the rest were pruned).
    seconds : float
        Search time (excluding the frequency set).
    """

    node: tuple[int, ...]
    stats: NodeStats
    dm: int
    suppressed_classes: np.ndarray
    inverse: np.ndarray
    n_nodes: int
    n_evaluated: int
    seconds: float
    trace: list[NodeStats] = field(default_factory=list, repr=False)


def _validate(fs: FrequencySet, k: int, max_suppression: float) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameter(f"k must be an integer >= 1, got {k!r}")
    if not 0.0 <= float(max_suppression) <= 1.0:
        raise InvalidParameter(f"max_suppression must be a fraction in [0, 1], got {max_suppression!r}")
    n = fs.n_records
    if k > n:
        raise InfeasiblePrivacyError(f"k={k} is larger than the number of records ({n})")
    missing = [d.name for d in fs.domains if not d.maps]
    if missing:
        raise InvalidParameter(f"quasi-identifier(s) {missing} have no generalisation hierarchy")
    return int(np.floor(float(max_suppression) * n + 1e-9))


def _evaluate(fs: FrequencySet, node: Sequence[int], k: int, l, kind, c, closeness=None):
    return node_stats(
        fs.codes, fs.counts, fs.sensitive_codes, fs.n_sensitive, [d.maps for d in fs.domains], node, k, l, kind, c, closeness
    )


def datafly(
    fs: FrequencySet,
    k: int,
    *,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
    max_suppression: float = 0.0,
    closeness: Closeness | None = None,
) -> LatticeResult:
    """Greedy Datafly-style full-domain generalisation (Sweeney 1998), the baseline.

    From the bottom node, while more than ``max_suppression * N`` records would be suppressed,
    generalise the quasi-identifier with the most distinct values at the current node by one level
    (ties: the first). Fast but not optimal.
    """
    start = time.perf_counter()
    limit = _validate(fs, k, max_suppression)
    node = [0] * len(fs.domains)
    n_eval = 0
    while True:
        stats, inv, bad = _evaluate(fs, node, k, l, kind, c, closeness)
        n_eval += 1
        if stats.suppressed <= limit:
            break
        distinct = [
            len(np.unique(d.maps[node[j]][fs.codes[:, j]])) if node[j] < d.height - 1 else -1 for j, d in enumerate(fs.domains)
        ]
        j = int(np.argmax(distinct))
        if distinct[j] < 0:  # every attribute is at its root and still infeasible
            raise InfeasiblePrivacyError(_infeasible_message(stats, k, l, limit))
        node[j] += 1
    n_nodes = int(np.prod([d.height for d in fs.domains]))
    return LatticeResult(tuple(node), stats, stats.dm(fs.n_records), bad, inv, n_nodes, n_eval, time.perf_counter() - start)


def _infeasible_message(stats: NodeStats, k: int, l, limit: int) -> str:
    what = f"k={k}" + (f", l={l}" if l is not None and l > 1 else "")
    return (
        f"no generalisation satisfies {what} within the suppression limit ({limit} records): even the most "
        f"general node suppresses {stats.suppressed} records (too few records or sensitive values)"
    )


def lattice_search(
    fs: FrequencySet,
    k: int,
    *,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
    max_suppression: float = 0.0,
    trace: bool = False,
    closeness: Closeness | None = None,
) -> LatticeResult:
    """Minimum-discernibility full-domain generalisation with a suppression limit (exact).

    Parameters
    ----------
    fs : FrequencySet
        Frequency set with a hierarchy for every quasi-identifier.
    k : int
        Minimum class size.
    l, kind, c : optional
        l-diversity of the sensitive attribute (``fs`` must have one).
    max_suppression : float
        Largest fraction of records that may be suppressed (0 = none).
    closeness : Closeness, optional
        t-closeness of every kept class to the kept records (columns: ``fs.sensitive_values``).
    trace : bool
        Keep the statistics of every evaluated node (tests, diagnostics).

    Returns
    -------
    LatticeResult

    Raises
    ------
    InfeasiblePrivacyError
        No node is feasible (k larger than N, or l larger than the sensitive values allow).
    """
    start = time.perf_counter()
    limit = _validate(fs, k, max_suppression)
    if ((l is not None and l > 1) or closeness is not None) and fs.sensitive is None:
        raise InvalidParameter("l-diversity and t-closeness need a sensitive attribute")
    heights = [d.height for d in fs.domains]
    n_nodes = int(np.prod(heights))
    if n_nodes > MAX_LATTICE_NODES:
        raise InvalidParameter(
            f"the lattice has {n_nodes:,} nodes (> {MAX_LATTICE_NODES:,}); use fewer levels or method='mondrian'"
        )
    n_total = fs.n_records
    best: tuple[int, int, tuple[int, ...]] | None = None
    nodes = sorted(itertools.product(*[range(h) for h in heights]), key=lambda v: (sum(v), v))
    traced: list[NodeStats] = []
    n_eval = 0

    def consider(node: tuple[int, ...], stats: NodeStats) -> None:
        nonlocal best
        if stats.suppressed <= limit:
            cand = (stats.dm(n_total), sum(node), node)
            if best is None or cand < best:
                best = cand

    bottom = nodes[0]
    stats, _, _ = _evaluate(fs, bottom, k, l, kind, c, closeness)
    n_eval += 1
    if trace:
        traced.append(stats)
    consider(bottom, stats)
    # the bottom node meets the lower bound of every node: it is optimal (e.g. nothing to do)
    bottom_optimal = stats.suppressed <= limit and stats.dm(n_total) <= stats.bound
    if bottom_optimal:
        nodes = nodes[:1]
    # Suppressed records never increase under generalisation for k-anonymity and distinct
    # l-diversity (a kept class stays kept inside any union of classes), and for every kind when
    # nothing may be suppressed; then feasibility is monotone and a top-down pass tags every
    # specialisation of an infeasible node without rolling it up (predictive tagging). t-closeness
    # is monotone when nothing may be suppressed (a union of t-close classes is t-close: the EMD
    # to a fixed distribution is convex), not with suppression (the reference moves).
    if ((l is None or l <= 1 or kind == "distinct") and closeness is None) or limit == 0:
        infeasible: set[tuple[int, ...]] = set()
        for node in reversed(nodes[1:]):
            if any(node[:j] + (node[j] + 1,) + node[j + 1 :] in infeasible for j in range(len(node)) if node[j] < heights[j] - 1):
                infeasible.add(node)
                continue
            stats, _, _ = _evaluate(fs, node, k, l, kind, c, closeness)
            n_eval += 1
            if trace:
                traced.append(stats)
            if stats.suppressed > limit:
                infeasible.add(node)
            else:
                consider(node, stats)
    else:
        # non-monotone feasibility: bottom-up with the monotone DM lower bound (module docstring),
        # seeded with the greedy solution
        try:
            seed = datafly(fs, k, l=l, kind=kind, c=c, max_suppression=max_suppression, closeness=closeness)
        except InfeasiblePrivacyError:
            seed = None  # no greedy solution: the search starts from the bottom node's bound only
        if seed is not None:
            consider(seed.node, seed.stats)
        bound: dict[tuple[int, ...], int] = {bottom: stats.bound}
        for node in nodes[1:]:
            inherited = 0
            for j in range(len(node)):
                if node[j]:
                    inherited = max(inherited, bound[node[:j] + (node[j] - 1,) + node[j + 1 :]])
            if best is not None and inherited >= best[0]:
                bound[node] = inherited  # no generalisation of a predecessor can beat best
                continue
            stats, _, _ = _evaluate(fs, node, k, l, kind, c, closeness)
            n_eval += 1
            if trace:
                traced.append(stats)
            bound[node] = max(inherited, stats.bound)
            consider(node, stats)
    if best is None:
        top = tuple(h - 1 for h in heights)
        stats, _, _ = _evaluate(fs, top, k, l, kind, c, closeness)
        raise InfeasiblePrivacyError(_infeasible_message(stats, k, l, limit))
    node = best[2]
    stats, inv, bad = _evaluate(fs, node, k, l, kind, c, closeness)
    return LatticeResult(node, stats, stats.dm(n_total), bad, inv, n_nodes, n_eval, time.perf_counter() - start, traced)

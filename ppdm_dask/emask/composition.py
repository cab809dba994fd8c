"""Repeated EMASK releases of one input, composed (docs/emask.md#repeated-releases).

Every release of an input distorts the same item bits again, with noise of its own (each
release draws from its own streams). Somebody holding several releases whose rows they can line
up sees, for one bit, one distorted copy per release, and learns more than from any one of them:

* **local-DP ε** composes sequentially: the outputs of independent mechanisms on one bit have
  the product of their likelihood ratios, so ``ε_item = Σ_i ε(p_i, q_i)``
  (:func:`~ppdm_dask.emask.privacy.ldp_epsilon`) and, for a whole record over the
  ``n_items_i`` item bits of release ``i``, ``ε_record = Σ_i n_items_i · ε(p_i, q_i)`` (the worst
  case of :func:`~ppdm_dask.emask.privacy.record_epsilon`; ``n_items`` is a public parameter);
* **basic privacy** of the vector ``y`` of the r distorted copies of a bit ``x``:
  ``R1 = Σ_y P(y | x=1) · P(x=1 | y)`` with ``P(y | x=1) = Π p_i^{y_i} (1 − p_i)^{1 − y_i}``,
  ``P(y | x=0) = Π (1 − q_i)^{y_i} q_i^{1 − y_i}`` and ``P(x=1 | y)`` by Bayes at the input's
  average item support s0; ``BP = 100 (1 − R1)``. For r = 1 it is
  :func:`~ppdm_dask.emask.privacy.basic_privacy` at s0.

:func:`compose_release` turns this into the ledger's :class:`~ppdm_dask.ledger.Composition` of a
new release: the figures, the public part (from public parameters only: p, q, n_items, the
floors and the budget) and two limits, the composed basic privacy against the highest privacy
floor of the composed releases ("from the floors", the default budget) and, when the owner set
one, the composed ε per item against ``epsilon_budget``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidParameter
from ..release.verdict import Check
from .distortion import check_pq
from .privacy import ldp_epsilon

__all__ = [
    "Terms",
    "composed_epsilon",
    "composed_r1",
    "composed_basic_privacy",
    "compose_release",
    "json_number",
    "BP_CHECK",
    "BUDGET_CHECK",
    "person_basic_privacy",
    "bucket_epsilon",
    "combine_epsilon",
    "person_figures",
    "MAX_STATES",
]

#: names of the composition's limits (``--allow-composition`` accepts them, recorded as overrides)
BP_CHECK = "composed basic privacy"
BUDGET_CHECK = "composed epsilon budget"


@dataclass(frozen=True)
class Terms:
    """What one EMASK release brings to a composition.

    Attributes
    ----------
    p, q : float
        Its distortion parameters (public).
    n_items : int
        Its number of item bits per record (public).
    privacy_floor : float or None
        Its basic-privacy floor in percent (public).
    epsilon_budget : float or None
        The ε-per-item budget the owner gave with it (None: none).
    s0 : float or None
        The input's average item support over its item universe (the owner's; never public).
    """

    p: float
    q: float
    n_items: int
    privacy_floor: float | None = None
    epsilon_budget: float | None = None
    s0: float | None = None

    @property
    def epsilon(self) -> float:
        """Local-DP ε of one item bit of this release."""
        return ldp_epsilon(self.p, self.q)

    @classmethod
    def of_release(cls, release: Any) -> Terms:
        """The terms of a :class:`~ppdm_dask.emask.release.DistortedRelease`."""
        p, q = release._pq()
        n_items = release.parameters.get("n_items")
        if not _is_int(n_items):
            n_items = release.data.n_items
        return cls(
            p,
            q,
            int(n_items),
            _number(release.parameters.get("privacy_floor")),
            _number(getattr(release, "epsilon_budget", None)),
            release.owner_s0(),
        )

    @classmethod
    def of_record(cls, record: Any) -> Terms | None:
        """The terms of a ledger record of an EMASK release (its figures, else its public
        parameters); None for another family or a record without p and q."""
        if record.family != "emask":
            return None
        figures = dict(record.get("figures") or {})
        params = dict(record.get("parameters") or {})
        try:
            p, q = check_pq(figures.get("p", params.get("p")), figures.get("q", params.get("q")))
        except (InvalidParameter, TypeError, ValueError):
            return None
        n_items = figures.get("n_items", params.get("n_items"))
        if not _is_int(n_items):
            return None
        return cls(
            p,
            q,
            int(n_items),
            _number(figures.get("privacy_floor", params.get("privacy_floor"))),
            _number(figures.get("epsilon_budget")),
            _number(figures.get("s0")),
        )

    def figures(self) -> dict[str, Any]:
        """JSON-ready figures of the ledger record (``s0`` and the basic privacy are the
        owner's: the ledger keeps them, no public file shows them)."""
        from .privacy import basic_privacy

        out: dict[str, Any] = {
            "p": self.p,
            "q": self.q,
            "n_items": self.n_items,
            "privacy_floor": self.privacy_floor,
            "epsilon_budget": self.epsilon_budget,
            "epsilon_per_item": json_number(self.epsilon),
            "epsilon_per_record": json_number(self.n_items * self.epsilon),
        }
        if self.s0 is not None and 0.0 < self.s0 < 1.0:
            out["s0"] = self.s0
            out["basic_privacy"] = basic_privacy(self.p, self.q, s0=self.s0)
        return out


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def json_number(x: float) -> float | str:
    """``x``, or ``"inf"`` when infinite (public files stay strict JSON)."""
    return x if math.isfinite(x) else "inf"


def composed_epsilon(terms: Iterable[Terms]) -> tuple[float, float]:
    """``(ε per item, ε per record)`` of releases composed sequentially:
    ``Σ ε(p_i, q_i)`` and ``Σ n_items_i · ε(p_i, q_i)`` (infinite when one of them is)."""
    per_item = per_record = 0.0
    for t in terms:
        e = t.epsilon
        per_item += e
        per_record += t.n_items * e if t.n_items else 0.0
    return per_item, per_record


def composed_r1(pairs: Sequence[tuple[float, float]], s0: float) -> float:
    """The reconstruction probability of a 1 from its r distorted copies,
    ``R1 = Σ_y P(y | x=1) · P(x=1 | y)`` at average item support ``s0``.

    ``P(x=1 | y)`` depends on ``y`` only through the likelihood ratio ``P(y|1) / P(y|0)``, so the
    outcomes are gathered by their ratio as the releases are added one at a time (outcomes of
    releases with equal (p, q) that differ by an exchange merge): at most
    ``Π_g (m_g + 1)`` states for ``m_g`` releases of each distinct (p, q), never the ``2^r``
    outcomes. Outcomes impossible under ``x = 1`` add nothing and are dropped.

    Parameters
    ----------
    pairs : sequence of (p, q)
        The distortion parameters of the releases (at least one).
    s0 : float
        Average item support in (0, 1).
    """
    if not pairs:
        raise InvalidParameter("composed_r1 needs at least one release's (p, q)")
    if isinstance(s0, bool) or not isinstance(s0, (int, float)) or not 0.0 < float(s0) < 1.0:
        raise InvalidParameter(f"s0 must lie in (0, 1), got {s0!r}")
    s0 = float(s0)
    # state: ratio key -> [P(y|1), P(y|0)] summed over the outcomes y with that ratio
    states: dict[float, list[float]] = {0.0: [1.0, 1.0]}
    for p, q in pairs:
        p, q = check_pq(p, q)
        nxt: dict[float, list[float]] = {}
        for m1, m0 in states.values():
            for a, b in ((p, 1.0 - q), (1.0 - p, q)):  # y_i = 1, then y_i = 0
                n1 = m1 * a
                if n1 == 0.0:
                    continue  # impossible when x = 1: no weight in R1, ever after
                n0 = m0 * b
                key = math.inf if n0 == 0.0 else round(math.log(n1) - math.log(n0), 9)
                acc = nxt.setdefault(key, [0.0, 0.0])
                acc[0] += n1
                acc[1] += n0
        states = nxt
    return math.fsum(m1 * (s0 * m1) / (s0 * m1 + (1.0 - s0) * m0) for m1, m0 in states.values())


def composed_basic_privacy(pairs: Sequence[tuple[float, float]], s0: float) -> float:
    """``BP = 100 (1 − R1)`` of r releases of one bit (:func:`composed_r1`), percent."""
    return 100.0 * (1.0 - composed_r1(pairs, s0))


#: the most outcome classes :func:`composed_r1` may track for one person (beyond: not evaluated
#: exactly, and the floor is taken as failed)
MAX_STATES = 200_000


def _states(multiplicity: Sequence[int]) -> int:
    out = 1
    for m in multiplicity:
        out *= int(m) + 1
    return out


def person_basic_privacy(p: float, q: float, s0: float, copies: int) -> float:
    """Basic privacy of an item bit of a person distorted ``copies`` times at (p, q): a person
    with ``copies`` baskets who has (or lacks) the item in each of them (the worst case)."""
    return composed_basic_privacy([(p, q)] * max(1, int(copies)), s0)


def vector_basic_privacy(pairs: Sequence[tuple[float, float]], copies: Sequence[int], s0: float) -> float | None:
    """Basic privacy of a bit seen ``copies[j]`` times through release ``j`` (``pairs[j]``), or
    None when the exact figure would track more than :data:`MAX_STATES` outcome classes."""
    groups: dict[tuple[float, float], int] = {}
    for pq, c in zip(pairs, copies):
        if c > 0:
            groups[pq] = groups.get(pq, 0) + int(c)
    if not groups:
        return 100.0
    if _states(list(groups.values())) > MAX_STATES:
        return None
    return composed_basic_privacy([pq for pq, c in groups.items() for _ in range(c)], s0)


def _unique_weights(values: np.ndarray, weights: np.ndarray, *, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    if values.shape[0] == 0:
        return values, np.zeros(0, np.int64)
    uniq, inv = np.unique(values, return_inverse=True, axis=axis)
    return uniq, np.bincount(inv.ravel(), weights=weights, minlength=uniq.shape[0]).astype(np.int64)


def bucket_epsilon(
    own: dict[str, np.ndarray], theirs: list[dict[str, np.ndarray]], *, per_person: Sequence[bool]
) -> dict[str, Any]:
    """Join kernel: for every person of this release in one bucket range, the baskets they have
    in this release and in each earlier EMASK release (``per_person[j]``: release ``j`` names the
    person; else each record is its own person and counts once).

    Returns the distinct vectors of baskets per release with the people (or records, each its own
    person) that have them: ε per person and the basic privacy of their items follow from them."""
    n = own["person"].size
    counts = np.zeros((n, 1 + len(theirs)), dtype=np.int64)
    counts[:, 0] = own["records"] if per_person[0] else 1
    for j, t in enumerate(theirs, start=1):
        _, ia, ib = np.intersect1d(own["person"], t["person"], assume_unique=True, return_indices=True)
        counts[ia, j] = t["records"][ib] if per_person[j] else 1
    weight = np.ones(n, np.int64) if per_person[0] else own["records"].astype(np.int64)
    vectors, w = _unique_weights(counts, weight, axis=0)
    return {"vectors": vectors, "weights": w}


def combine_epsilon(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine the partial counts of several buckets."""
    vectors = np.concatenate([p["vectors"] for p in parts])
    weights = np.concatenate([p["weights"] for p in parts])
    v, w = _unique_weights(vectors, weights, axis=0)
    return {"vectors": v, "weights": w}


def _quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][int(np.searchsorted(cum, q * cum[-1], side="left"))]) if cum.size else 0.0


def person_figures(
    total: dict[str, Any], terms: Sequence[Terms], s0: float | None, floor: float | None, budget: float | None
) -> dict[str, Any]:
    """The per-person figures of a composition from the combined counts (:func:`combine_epsilon`)
    and the releases' terms (this release first): ε per item of a person, summed over all their
    baskets in every release (median, 90th percentile, largest), the people beyond the budget,
    the largest number of baskets of one person, and the basic privacy of the most exposed
    person's item (a bit seen in every basket of theirs: the element-wise largest counts, which
    no person's basic privacy falls below, since more copies never raise it) with, when that
    is below the floor, the people whose own counts are below it."""
    vectors, weights = total["vectors"], total["weights"]
    eps = np.array([t.epsilon for t in terms], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        per = np.where(vectors > 0, vectors * eps[None, :], 0.0).sum(axis=1) if vectors.size else np.zeros(0)
    people = int(weights.sum())
    out: dict[str, Any] = {
        "people": people,
        "epsilon_per_person_median": _quantile(per, weights, 0.5),
        "epsilon_per_person_p90": _quantile(per, weights, 0.9),
        "epsilon_per_person_max": float(per.max()) if per.size else 0.0,
        "max_baskets_per_person": int(vectors.sum(axis=1).max()) if vectors.size else 0,
        "people_in_earlier_releases": int(weights[(vectors[:, 1:] > 0).any(axis=1)].sum()) if vectors.shape[1] > 1 else 0,
    }
    if budget is not None:
        out["people_over_budget"] = int(weights[per > budget * (1.0 + 1e-12)].sum())
    if s0 is not None and 0.0 < s0 < 1.0 and vectors.size:
        pairs = [(t.p, t.q) for t in terms]
        # BP depends on a person's counts only through the copies per distinct (p, q): group the
        # releases by (p, q) and evaluate each distinct vector of group totals once
        groups = sorted(set(pairs))
        member = np.array([groups.index(pq) for pq in pairs], dtype=np.int64)
        totals = np.zeros((vectors.shape[0], len(groups)), dtype=np.int64)
        for g in range(len(groups)):
            totals[:, g] = vectors[:, member == g].sum(axis=1)
        worst = totals.max(axis=0)
        bp = vector_basic_privacy(groups, worst.tolist(), s0)
        out["basic_privacy_worst_person"] = bp
        if floor is not None and (bp is None or bp < floor):
            distinct, inverse = np.unique(totals, axis=0, return_inverse=True)
            weight_of = np.bincount(inverse.ravel(), weights=weights, minlength=distinct.shape[0]).astype(np.int64)
            below = unknown = 0
            for v, w in zip(distinct, weight_of):
                got = vector_basic_privacy(groups, v.tolist(), s0)
                if got is None:
                    unknown += int(w)
                elif got < floor:
                    below += int(w)
            out["people_below_floor"] = below + unknown
            if unknown:
                out["people_not_evaluated"] = unknown
    return out


def _bound(parameters: dict[str, Any], kind: str | None) -> int | None:
    """Baskets per person a release promises at most: its ``max_baskets_per_person``, 1 when each
    record is its own person, else None (no bound)."""
    got = parameters.get("max_baskets_per_person")
    if isinstance(got, int) and not isinstance(got, bool) and got > 0:
        return int(got)
    return 1 if kind == "record" else None


def compose_release(release: Any, earlier: Sequence[Any], people: Any = None) -> Any:
    """An EMASK release composed with the ``earlier`` ledger records (of its input; once written,
    also every earlier EMASK release that shares people with it: ``people``, a
    :class:`~ppdm_dask.ledger.PeopleJoin`).

    Figures (the owner's): ``epsilon_per_item``, ``epsilon_per_record``, ``basic_privacy`` (at
    the input's s0), ``emask_releases``, ``privacy_floor`` (the highest of the composed
    releases), ``epsilon_budget`` (the smallest given with any of them); by person
    (:func:`person_figures`): ε per person over all their baskets in every release, the largest
    number of baskets of one person, the basic privacy of the most exposed person. Public: the
    parameters' figures and the ε per person the releases' bounds promise (``"unbounded"`` when
    one has no bound on baskets per person). Limits: ``composed basic privacy`` >= the floor
    (when an earlier EMASK release exists: a single release is held to its own floor,
    ``allow_weak``), by person once composed by person; ``composed epsilon budget`` (ε per item,
    or per person once composed by person, <= the budget, when there is one).
    """
    from ..ledger.compose import Composition

    comp = Composition(list(earlier))
    mine = Terms.of_release(release)
    theirs: list[Terms] = []
    others: list[str] = []
    bounds: list[int | None] = []
    for rec in earlier:
        t = Terms.of_record(rec)
        if t is None:
            others.append(f"{rec.family}/{rec.get('method')}" if rec.family != "emask" else f"emask {rec.release_id} (no p, q)")
        else:
            theirs.append(t)
            bounds.append(_bound(dict(rec.get("parameters") or {}), (rec.get("figures") or {}).get("person_kind")))
    terms = [*theirs, mine]
    bounds.append(_bound(dict(release.parameters), getattr(getattr(release, "people", None), "kind", None)))
    eps_item, eps_record = composed_epsilon(terms)
    floors = [t.privacy_floor for t in terms if t.privacy_floor is not None]
    budgets = [t.epsilon_budget for t in terms if t.epsilon_budget is not None]
    floor = max(floors) if floors else None
    budget = min(budgets) if budgets else None

    s0 = mine.s0 if mine.s0 is not None else next((t.s0 for t in reversed(theirs) if t.s0 is not None), None)
    bp = composed_basic_privacy([(t.p, t.q) for t in terms], s0) if s0 is not None and 0.0 < s0 < 1.0 else None

    comp.figures.update(epsilon_per_item=eps_item, epsilon_per_record=eps_record)
    if bp is not None:
        comp.figures["basic_privacy"] = bp
    comp.figures["emask_releases"] = len(terms)
    if floor is not None:
        comp.figures["privacy_floor"] = floor
    if budget is not None:
        comp.figures["epsilon_budget"] = budget
    # what the bounds on baskets per person promise (public parameters only)
    per_person_bound: float | str = "unbounded"
    if all(b is not None for b in bounds):
        per_person_bound = json_number(sum(float(b or 0) * t.epsilon for b, t in zip(bounds, terms)))
    comp.public.update(
        epsilon_per_item=json_number(eps_item),
        epsilon_per_record=json_number(eps_record),
        epsilon_per_person=per_person_bound,
        emask_releases=len(terms),
        epsilon_budget=budget,
        privacy_floor=floor,
    )

    by_person = None
    if people is not None:
        joined = [(r, ref) for r, ref, _ in people.earlier if r.family == "emask" and Terms.of_record(r) is not None]
        person_terms = [mine] + [Terms.of_record(r) for r, _ in joined]  # this release first, as the join
        flags = [people.mine.kind != "record"] + [ref.kind != "record" for _, ref in joined]
        from functools import partial

        kernel = partial(_epsilon_kernel, per_person=flags)
        total_counts = people.join(kernel, combine_epsilon, columns=())
        by_person = person_figures(total_counts, [t for t in person_terms if t is not None], s0, floor, budget)
        comp.figures.update({k: v for k, v in by_person.items() if k != "people"})
        comp.figures["people"] = by_person["people"]

    if theirs and floor is not None:
        if bp is None:
            comp.notes.append("the input's average item support is not known here: the composed basic privacy is not checked")
        elif by_person is not None and "basic_privacy_worst_person" in by_person:
            worst = by_person["basic_privacy_worst_person"]
            below = int(by_person.get("people_below_floor", 0))
            comp.checks.append(
                Check(
                    BP_CHECK,
                    below == 0,
                    worst if worst is not None else "not evaluated",
                    floor,
                    stats={"people_below_floor": below},
                    detail=f"of an item of the most exposed person, seen in every basket of theirs in {len(person_terms)} "
                    f"EMASK release(s); {below:,} people below the floor",
                )
            )
        else:
            comp.checks.append(
                Check(
                    BP_CHECK,
                    bp >= floor,
                    bp,
                    floor,
                    detail=f"of an item bit seen in all {len(terms)} EMASK releases, rows lined up",
                )
            )
    if budget is not None:
        if by_person is not None:
            over = int(by_person.get("people_over_budget", 0))
            worst_eps = by_person["epsilon_per_person_max"]
            comp.checks.append(
                Check(
                    BUDGET_CHECK,
                    over == 0,
                    worst_eps,
                    f"<= {budget:g}",
                    stats={"people_over_budget": over},
                    detail=f"local-DP ε per item of a person, summed over all their baskets in {len(person_terms)} "
                    f"EMASK release(s); {over:,} people over the budget",
                )
            )
        else:
            comp.checks.append(
                Check(
                    BUDGET_CHECK,
                    eps_item <= budget * (1.0 + 1e-12),
                    eps_item,
                    f"<= {budget:g}",
                    detail=f"local-DP ε per item summed over {len(terms)} EMASK release(s)",
                )
            )
    if others:
        comp.notes.append(f"{len(others)} earlier release(s) of other kinds add nothing to ε: {', '.join(others)}")
    if len({t.n_items for t in terms}) > 1:
        comp.notes.append("the releases have different item universes: the composed basic privacy is at this release's s0")
    return comp


def _epsilon_kernel(
    own: dict[str, np.ndarray], theirs: list[dict[str, np.ndarray]], per_person: Sequence[bool]
) -> dict[str, Any]:
    return bucket_epsilon(own, theirs, per_person=per_person)

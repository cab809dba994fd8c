"""The officer's summary of a condensed release: the guarantee in words, what it protects and
what an attacker can still learn, and the threat model's attacks as :class:`Attack` results
(docs/threat-model.md#condensation, docs/condensation.md#report-figures).

Most attacks turn figures the report already measured into attack results (no second pass):

``attack_reconstruction`` (release)
    Records rebuilt from the public files alone: every record of a group of one (its
    pseudo-record is the record) and the members of the groups the published statistics
    determine (:func:`.attacks.solve_groups`: groups of two, groups without spread). With the
    original, the rebuilt records that equal an original record are counted in the comparison
    figure ``records_recovered``. Baseline 0, threshold 0.
``attack_copies`` (comparison)
    Share of pseudo-records equal to an original record that no other original shares
    (``pseudo_copies``). Baseline 0, threshold 0.
``attack_dcr`` (comparison)
    Share of pseudo-records closer to their closest original than the originals' own
    5th-percentile nearest-neighbour distance (``dcr_below_original_p5``). A record of the same
    population that was not condensed lands there about 5 % of the time (an original's distance
    to its nearest other original is that of a hold-out record, by exchangeability): baseline
    0.05, threshold :data:`DCR_THRESHOLD`.
``attack_membership`` (comparison)
    The distance-to-closest-record attacker of ``membership_advantage``: its balanced accuracy
    at its best threshold, ``0.5 + (TPR - FPR) / 2``, against 0.5. Threshold
    :data:`MIA_THRESHOLD` plus half the advantage two samples of the experiment's sizes from one
    population reach by chance (the mean Kolmogorov-Smirnov distance, ``0.87 sqrt((m + h) / (m h))``).
``attack_attribute`` (comparison)
    Attribute disclosure as synthpop measures it for synthetic data: for a public-seeded sample
    of up to :data:`ATTRIBUTE_SAMPLE` original records and each attribute, the attacker knows
    the record's other attributes, takes the nearest pseudo-record on them (standardised
    Euclidean) and reads its value; a guess is right within :data:`ATTRIBUTE_TOLERANCE` of the
    attribute's standard deviation. The baseline is the same guess from the nearest *other
    original* record (the threat model's adversary knows every record but the target's): the
    advantage is what the release adds to that. The attribute with the largest advantage is
    reported (the one furthest beyond its threshold): :data:`ATTRIBUTE_THRESHOLD` plus twice the
    standard error of the paired difference on the sample (from the records only one of the two
    guesses gets right).

Without the original only ``attack_reconstruction`` runs, and a note says the others need it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial import cKDTree

from ..release.figures import Attack, Figures, Text, Value
from ..report.units import count_of as _n
from ..report.units import percent as _percent

if TYPE_CHECKING:
    from .release import CondensedRelease

__all__ = [
    "with_summary",
    "summary_figures",
    "reconstruction_attack",
    "attack_results",
    "attribute_attack",
    "nearest_values",
    "membership_chance",
    "DCR_THRESHOLD",
    "MIA_THRESHOLD",
    "ATTRIBUTE_THRESHOLD",
    "ATTRIBUTE_TOLERANCE",
    "ATTRIBUTE_SAMPLE",
    "HEADLINE",
]

#: pseudo-records closer than the originals' 5th-percentile neighbour distance, above the 5 % of fresh records
DCR_THRESHOLD = 0.05
#: balanced accuracy of the membership attacker above 0.5 (plus its chance level)
MIA_THRESHOLD = 0.05
#: share of records whose attribute the release gives beyond what the other records give
ATTRIBUTE_THRESHOLD = 0.05
#: a guessed value is right within this share of the attribute's standard deviation
ATTRIBUTE_TOLERANCE = 0.1
#: original records the attribute-disclosure attack targets at most (public-seeded sample)
ATTRIBUTE_SAMPLE = 1000
_ATTRIBUTE_SEED = 0x5EED_0037
#: the utility figures the summary prefers (after any single-number quality score)
HEADLINE = ("covariance_compatibility", "nn_accuracy_pseudo", "nn_accuracy_ratio")
_TESTS = "tests/condensation/test_threat.py"


# ---------------------------------------------------------------------- release side
def reconstruction_attack(rel: CondensedRelease, X: Any = None, **ckw: Any) -> tuple[Attack, Value | None]:
    """``attack_reconstruction``: the records the public files determine (see the module
    docstring), and with ``X`` (the original, an array or a dask array; brought into memory only
    when some records were rebuilt) the ``records_recovered`` figure: the rebuilt records equal
    to an original record (a comparison, kept out of the release-side attack)."""
    from .attacks import records_recovered, solve_groups

    n = np.asarray(rel.published.get("n", []), np.int64)
    N = int(n.sum())
    ones = int(np.count_nonzero(n == 1))
    rebuilt = np.zeros((0, rel.d))
    solved = 0
    recovered = None
    stats = rel.statistics
    if stats is not None and len(stats["n"]):
        sn = np.asarray(stats["n"], np.int64)
        G = sn.size
        Fs = np.asarray(stats["Fs"], np.float64).reshape(G, -1)
        d = Fs.shape[1]
        Sc = np.asarray(stats["Sc"], np.float64).reshape(G, d, d)
        # only groups of two and groups without spread can be solved: pick them out vectorised
        scatter = Sc - Fs[:, :, None] * Fs[:, None, :] / np.maximum(sn, 1)[:, None, None]
        flat = np.abs(scatter).reshape(G, -1).max(axis=1) <= 1e-9 * np.maximum(1.0, np.abs(Sc).reshape(G, -1).max(axis=1))
        pick = (sn <= 2) | flat
        if pick.any():
            rec = solve_groups(sn[pick], Fs[pick], Sc[pick])
            rebuilt, solved = rec.records, int(rec.records.shape[0])
        ones -= min(ones, int(np.count_nonzero(sn == 1)))  # groups of one with statistics: counted once
    determined = solved + ones
    found = (
        f"{determined:,} of {_n(N, 'record')} determined by the public files: {ones:,} in groups of one record "
        f"(the pseudo-record is the record), {solved:,} rebuilt from published group statistics"
        + ("" if stats is not None else " (none published)")
    )
    if X is not None and rebuilt.shape[0]:
        from ..progress import compute

        X = compute(X, **ckw)[0] if hasattr(X, "dask") else np.asarray(X, np.float64)
        recovered = Value(
            "records_recovered",
            "Records rebuilt from the public files that equal an original record",
            records_recovered(rebuilt, X),
            about="comparison",
            unit="records",
            note=f"of {rebuilt.shape[0]:,} rebuilt; equal to the last digit (relative 1e-9)",
        )
    return Attack(
        "attack_reconstruction",
        "reconstruction of records from the published group statistics",
        determined / N if N else 0.0,
        0.0,
        0.0,
        "share of records rebuilt exactly from the public files",
        about="release",
        found=found,
        test=f"{_TESTS}::test_reconstruction_attack_by_hand; tests/condensation/test_attacks.py::"
        "test_records_rebuilt_from_the_earlier_layout_and_none_at_defaults",
    ), recovered


# ---------------------------------------------------------------------- from the measured figures
def membership_chance(members: int, holdout: int) -> float:
    """The mean largest ``TPR - FPR`` between two samples of these sizes from one population:
    the mean Kolmogorov-Smirnov distance, about ``0.87 sqrt((m + h) / (m h))``."""
    if members <= 0 or holdout <= 0:
        return 1.0
    return 0.8687 * math.sqrt((members + holdout) / (members * holdout))


def attack_results(rel: CondensedRelease, values: dict[str, Value]) -> list[Attack]:
    """The comparison attacks read from the measured risk figures (``values`` by id)."""
    from .report_figures import MIA_SAMPLE

    out: list[Attack] = []
    N = int(np.asarray(rel.published.get("n", []), np.int64).sum())
    v = values.get("pseudo_copies")
    if v is not None and N:
        out.append(
            Attack(
                "attack_copies",
                "copies of unique original records among the pseudo-records",
                int(v.value) / N,
                0.0,
                0.0,
                "share of pseudo-records equal to an original record no other original shares",
                about="comparison",
                found=f"{int(v.value):,} of {N:,} pseudo-records; {v.note}",
                test="tests/condensation/test_attacks.py::test_verify_with_the_original_refuses_the_original_"
                f"as_pseudo_data; {_TESTS}::test_a_forged_release_is_flagged",
            )
        )
    v = values.get("dcr_below_original_p5")
    if v is not None and v.value is not None and np.isfinite(v.value):
        nn5 = values.get("original_nn_p5")
        out.append(
            Attack(
                "attack_dcr",
                "distance to closest record",
                float(v.value) / 100.0,
                0.05,
                DCR_THRESHOLD,
                "share of pseudo-records closer to an original than the originals' own 5th-percentile "
                "nearest-neighbour distance (a hold-out record: about 5 %)",
                about="comparison",
                found=(f"closer than {float(nn5.value):.4g}" if nn5 is not None and nn5.value is not None else "")
                + f"; {v.note}",
                test=f"{_TESTS}::test_attacks_recomputed_by_brute_force; tests/condensation/test_closest.py::"
                "test_report_figures_recount_against_brute_force",
            )
        )
    v = values.get("membership_advantage")
    if v is not None and v.value is not None:
        size = min(N, MIA_SAMPLE)
        members = int(round(0.5 * size))
        chance = membership_chance(members, size - members)
        adv = float(v.value)
        out.append(
            Attack(
                "attack_membership",
                "membership inference (distance-to-closest-record attacker)",
                0.5 + adv / 2,
                0.5,
                MIA_THRESHOLD + chance / 2,
                "balanced accuracy of the attacker telling condensed records from held-out ones",
                about="comparison",
                found=f"TPR - FPR {adv:.3f} (by chance about {chance:.3f} for {members:,} + {size - members:,} "
                f"records); {v.note}",
                test=f"tests/condensation/test_attacks.py::test_membership_advantage_bounds; {_TESTS}::"
                "test_attacks_recomputed_by_brute_force",
            )
        )
    return out


# ---------------------------------------------------------------------- attribute disclosure
def nearest_values(
    part: Any, start: int, queries: np.ndarray, scale: np.ndarray, own: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel: for every query and attribute ``j``, the row of one block nearest to the query on
    the other attributes (Euclidean after dividing by ``scale``): ``(squared distance (q, d),
    its value of j (q, d), its global row (q, d))``. ``own[i]`` is the global row of query
    ``i`` itself (left out: the nearest *other* record), -1 for none; inf / NaN / -1 where the
    block has no candidate."""
    from ._figure_kernels import as_matrix

    A = as_matrix(part)
    q = np.asarray(queries, np.float64)
    nq, d = q.shape
    dist, val, at = np.full((nq, d), np.inf), np.full((nq, d), np.nan), np.full((nq, d), -1, np.int64)
    n = A.shape[0]
    if not n or not nq or d < 2:
        return dist, val, at
    As, qs = A / scale, q / scale
    k = min(2, n) if own is not None else 1
    r = np.arange(nq)
    for j in range(d):
        other = [c for c in range(d) if c != j]
        dj, ij = cKDTree(As[:, other]).query(qs[:, other], k=k)
        dj, ij = np.asarray(dj, np.float64).reshape(nq, k), np.asarray(ij).reshape(nq, k)
        if own is not None:  # the query itself is among its two nearest rows when it is in this block
            dj = np.where(start + ij == np.asarray(own)[:, None], np.inf, dj)
        pick = np.argmin(dj, axis=1)
        best, idx = dj[r, pick], ij[r, pick]
        ok = np.isfinite(best)
        dist[:, j] = np.where(ok, best**2, np.inf)
        val[:, j] = np.where(ok, A[np.minimum(idx, n - 1), j], np.nan)
        at[:, j] = np.where(ok, start + idx, -1)
    return dist, val, at


def _merge(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """The value of the nearest row over all blocks (ties: the smallest global row)."""
    d = np.stack([p[0] for p in parts])
    v = np.stack([p[1] for p in parts])
    g = np.stack([np.where(p[2] >= 0, p[2], np.iinfo(np.int64).max) for p in parts])
    best = np.lexsort((g.reshape(len(parts), -1), d.reshape(len(parts), -1)), axis=0)[0].reshape(d.shape[1:])
    return np.take_along_axis(v, best[None], axis=0)[0]


def attribute_attack(rel: CondensedRelease, X: Any, **ckw: Any) -> tuple[Attack | None, str | None]:
    """``attack_attribute`` (see the module docstring) on the original ``X`` (a dask array with
    one column chunk): one distributed pass over the pseudo-data and one over the original."""
    import dask

    from ..progress import compute

    N, d = int(X.shape[0]), int(X.shape[1])
    if N < 3 or d < 2:
        return None, "attribute disclosure: needs at least 2 attributes and 3 records"
    rng = np.random.default_rng(_ATTRIBUTE_SEED)
    rows = np.sort(rng.permutation(N)[:ATTRIBUTE_SAMPLE])
    s = X.sum(axis=0), (X * X).sum(axis=0)
    target, total, squares = compute(X[rows], *s, **ckw)
    target = np.asarray(target, np.float64)
    mean = np.asarray(total) / N
    sd = np.sqrt(np.maximum(np.asarray(squares) / N - mean**2, 0.0))
    scale = np.where(sd > 0, sd, 1.0)
    task = dask.delayed(nearest_values, pure=True)
    pseudo_parts = list(rel.data.to_delayed())
    sizes = [int(c) for c in rel.partition_rows] if getattr(rel, "partition_rows", None) else None
    if sizes is None or len(sizes) != len(pseudo_parts):
        (sizes,) = compute([dask.delayed(len)(p) for p in pseudo_parts], **ckw)
    p_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    o_off = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    p_tasks = [task(p, int(p_off[i]), target, scale, None) for i, p in enumerate(pseudo_parts)]
    o_tasks = [task(b, int(o_off[i]), target, scale, rows) for i, b in enumerate(X.to_delayed().ravel())]
    p_res, o_res = compute(p_tasks, o_tasks, **ckw)
    from_release, from_others = _merge(list(p_res)), _merge(list(o_res))
    tol = ATTRIBUTE_TOLERANCE * sd
    hit = np.abs(from_release - target) <= tol
    base = np.abs(from_others - target) <= tol
    success, baseline = hit.mean(axis=0), base.mean(axis=0)
    # the paired difference's sampling noise: 2 standard errors from the discordant pairs
    only, other = (hit & ~base).mean(axis=0), (base & ~hit).mean(axis=0)
    noise = 2.0 * np.sqrt(np.maximum(only + other - (only - other) ** 2, 0.0) / rows.size)
    threshold = ATTRIBUTE_THRESHOLD + noise
    j = int(np.argmax(success - baseline - threshold))  # the attribute furthest beyond its threshold
    names = rel.columns or [f"x{c}" for c in range(d)]
    per = ", ".join(f"{names[c]} {_percent(success[c])} (others {_percent(baseline[c])})" for c in range(d))
    return Attack(
        "attack_attribute",
        f"attribute disclosure ({names[j]} from the other attributes)",
        float(success[j]),
        float(baseline[j]),
        float(threshold[j]),
        f"share of records whose {names[j]} the nearest pseudo-record on the other attributes gives within "
        f"{ATTRIBUTE_TOLERANCE:g} standard deviations ({tol[j]:.4g}); baseline: the nearest other original record",
        about="comparison",
        found=f"{rows.size:,} original records targeted (sampling noise {noise[j]:.3f}); per attribute: {per}",
        test=f"{_TESTS}::test_attribute_attack_by_brute_force",
    ), None


# ---------------------------------------------------------------------- words
def _levels_words(params: dict[str, Any]) -> str:
    if "privacy_range" in params:
        lo, hi = params["privacy_range"]
        return f"privacy levels drawn from {lo}-{hi} per record"
    if params.get("privacy_level") is not None:
        return f"one privacy level, {params['privacy_level']}, for every record"
    if params.get("privacy_column"):
        return f"per-record privacy levels from the column {params['privacy_column']!r}"
    return "per-record privacy levels"


def _smallest_level(rel: CondensedRelease) -> Text | None:
    """What the smallest privacy level means for the records at that level."""
    n = np.asarray(rel.published.get("n", []), np.int64)
    p = np.asarray(rel.published.get("p_max", []), np.int64)
    if not n.size:
        return None
    params = rel.parameters
    floor = (
        int(params["privacy_range"][0])
        if "privacy_range" in params
        else (int(params["privacy_level"]) if params.get("privacy_level") is not None else None)
    )
    if floor is not None:
        level, k = floor, int(n.min())  # every group holds records of at least that level
        where = (
            f"Records at the smallest privacy level, {level}, sit in groups of at least {_n(level, 'record')}; here "
            f"the smallest group has {k}"
        )
    else:  # levels per record, not published: the smallest level a group names bounds its members'
        level = int(p.min())
        at = p == level
        k = int(n[at].min())
        where = (
            f"The smallest largest-level a group names is {level} ({_n(at.sum(), 'group')}, {_n(n[at].sum(), 'record')})"
            f": records at or below it sit in groups of at least {_n(k, 'record')}"
        )
    text = (
        f"{where}. Each pseudo-record of such a group is drawn from the mean and covariance of at least {_n(k, 'record')}: "
        f"an attacker who locates a record's group learns its values only to within the group's spread and, among "
        f"its members, picks the right record with probability at most 1/{k} = {1 / max(k, 1):.2f}"
    )
    text += ". A group of two records places its two pseudo-records on the line through both members." if k == 2 else "."
    return Text("learn_smallest_level", text)


def _learn(rel: CondensedRelease, values: dict[str, Value], attacks: list[Attack]) -> list[Any]:
    out: list[Any] = []
    t = _smallest_level(rel)
    if t is not None:
        out.append(t)
    n = np.asarray(rel.published.get("n", []), np.int64)
    lo, hi = (int(n.min()), int(n.max())) if n.size else (0, 0)
    sizes = f"all of {_n(lo, 'record')}" if lo == hi else f"of {lo}-{hi} records"
    out.append(
        Text(
            "learn_groups",
            f"The group structure: {_n(n.size, 'group')}, {sizes}, and the largest privacy level in each (_groups.parquet).",
        )
    )
    if rel.statistics is not None:
        rows = int(len(rel.statistics["n"]))
        out.append(
            Text(
                "learn_statistics",
                f"The mean and covariance of each of the {_n(rows, 'group')} whose statistics are "
                "published; an adversary who knows every other member of such a group gets "
                "the last one exactly from its sums.",
            )
        )
    by = {a.id: a for a in attacks}
    a = by.get("attack_membership")
    if a is not None:
        out.append(
            Text(
                "learn_membership",
                f"Whether a candidate record was condensed: the best distance attacker is "
                f"right {_percent(a.success)} of the time against 50 % by guessing.",
                about="comparison",
            )
        )
    a = by.get("attack_dcr")
    if a is not None:
        out.append(
            Text(
                "learn_location",
                f"Where records are: {_percent(a.success)} of the pseudo-records sit closer to "
                "an original than 95 % of the originals sit to their nearest neighbour (about "
                "5 % for records of the population that were not condensed).",
                about="comparison",
            )
        )
    a = by.get("attack_attribute")
    if a is not None:
        out.append(
            Text(
                "learn_attribute",
                f"An attribute from the others: {a.name.split('(')[1].rstrip(')')}, right "
                f"within {ATTRIBUTE_TOLERANCE:g} standard deviations for {_percent(a.success)} "
                f"of the records against {_percent(a.baseline)} from the other original records.",
                about="comparison",
            )
        )
    return out


def with_summary(rel: CondensedRelease, fig: Figures, original: Any = None, **ckw: Any) -> Figures:
    """``fig`` with the summary of :func:`summary_figures` added; the headline is ``fig``'s own
    first (a quality score another part of the report chose), then the summary's, at most three."""
    return fig.with_summary(summary_figures(rel, fig, original, **ckw))


def summary_figures(rel: CondensedRelease, fig: Figures, original: Any = None, **ckw: Any) -> Figures:
    """The summary's content of a condensed release (see the module docstring): ``fig`` holds
    the measured risk and utility figures (:func:`.report_figures.condensed_report_figures`);
    ``original`` as there."""
    ckw.setdefault("progress", False)
    values = {i.id: i for i in fig.risk + fig.utility if isinstance(i, Value)}
    pub = rel.published
    n = np.asarray(pub.get("n", []), np.int64)
    p = np.asarray(pub.get("p_max", []), np.int64)
    N, G = int(n.sum()), int(n.size)
    k = int(n.min()) if G else 0
    margin = int((n - p).min()) if G else 0
    stats = rel.statistics
    if stats is None:
        stats_words = "no group statistics are published"
    else:
        from .release import statistics_min_size

        stats_words = (
            f"the statistics of {_n(len(stats['n']), 'group')} of at least {statistics_min_size(rel.d)} records "
            "are published, none of a smaller group"
        )
    ones = int(np.count_nonzero(n == 1))
    singles = "no group of a single record" if not ones else f"{_n(ones, 'group')} of a single record (floor overridden)"
    copies = "no pseudo-record is kept that equals a record unique in the original (such records are drawn again)" + (
        ", but those of groups of one record, which are their record" if ones else ""
    )
    guarantee = (
        f"Every pseudo-record is drawn from the first and second moments (mean and covariance) of a group of at "
        f"least k = {_n(k, 'record')}, and every group is at least as large as its members' largest privacy level "
        f"({_levels_words(rel.parameters)}): {_n(N, 'record')} in {_n(G, 'group')}, the smallest of {k}, "
        f"smallest margin n - p_max = {margin}; {singles}; {stats_words}; {copies}."
    )
    protects = (
        "Protects against finding a person's record among the released rows: no row is an original record and "
        "each comes from a group of at least the record's privacy level, whose members it does not tell apart. "
        "It does not hide where the records are (pseudo-records lie within their group's spread), membership "
        "when groups are small, the group structure, or a large group's last member from its published "
        "statistics."
    )
    X = None
    attacks: list[Attack] = []
    notes: list[str] = []
    if original is not None:
        Xd, _ = rel._original_arrays(original)
        if int(Xd.shape[1]) == rel.d:
            Xd = Xd.rechunk({1: -1})
            attacks += attack_results(rel, values)
            attack, why = attribute_attack(rel, Xd, **ckw)
            attacks += [attack] if attack is not None else []
            notes += [why] if why else []
            X = Xd
    else:
        notes.append(
            "attacks: only the reconstruction from the public files runs without the original; the copies, "
            "distance to closest record, membership inference and attribute disclosure need --original"
        )
    attack, recovered = reconstruction_attack(rel, X, **ckw)
    attacks.insert(0, attack)
    warnings: list[str | Text] = []
    if stats is not None and len(stats["n"]):
        warnings.append(
            f"group statistics published ({_n(len(stats['n']), 'group')}): an adversary who knows every other "
            "member of such a group gets the last one exactly from its sums"
        )
    scores = [i.id for i in fig.utility if isinstance(i, Value) and i.score]
    headline = list(dict.fromkeys(scores + [h for h in HEADLINE if h in values]))[:3]
    return Figures(
        risk=[recovered] if recovered is not None else [],
        notes=notes,
        guarantee=guarantee,
        protects=protects,
        learn=_learn(rel, values, attacks),
        attacks=attacks,
        headline=headline,
        warnings=warnings,
    )

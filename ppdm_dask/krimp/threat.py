"""The officer's summary of a KRIMP generator release: the guarantee in words, what it protects
and what an attacker can still learn, and the threat model's attacks as :class:`Attack`
results (docs/threat-model.md#krimp-generator, docs/krimp.md#report-figures).

Every attack needs the original (``about="comparison"``); without it the summary says so. Most
turn figures the report already measured into attack results:

``attack_copies``
    Share of the generated rows equal to a record that is unique in the original
    (``unique_copies``; synthpop's replicated uniques). Baseline 0, threshold 0.
``attack_dcr``
    Distance to closest record at its smallest, 0 (rows compare as sets of items): share of the
    generated rows equal to an original record (``rows_copying_records``) against the share of
    original records equal to another original record (``records_shared``) — how often a
    record of the population that is not in the original equals one of its records (by
    exchangeability, leaving each record out in turn). Threshold :data:`DCR_THRESHOLD`.
``attack_membership``
    The Hamming-distance attacker of ``membership_advantage``: its balanced accuracy
    ``0.5 + |TPR - FPR| / 2`` against 0.5; threshold :data:`MIA_THRESHOLD` plus half the
    advantage the same scores reach with shuffled labels (``membership_chance``).
``attack_attribute``
    synthpop's attribute disclosure DiSCO (disclosive in the synthetic data, correct in the
    original), per attribute: the attacker knows a target record's items in every other
    attribute; the release discloses the target attribute when the generated rows holding those
    items all hold one value there, and that value is the target's. Run on a public-seeded
    sample of up to :data:`ATTRIBUTE_SAMPLE` original records (:func:`disco_counts`: one
    distributed pass over the generated rows and one over the original, rows matched by hashes
    of their items with one attribute left out); the baseline is the
    same attack on the *other* original records (the threat model's adversary knows every
    record but the target's). The attribute furthest beyond its threshold is reported:
    :data:`ATTRIBUTE_THRESHOLD` plus twice the standard error of the paired difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..release.figures import Attack, Figures, Text, Value
from ..report.units import count_of as _n
from ..report.units import percent as _percent

if TYPE_CHECKING:
    from .release import GeneratedRelease

__all__ = [
    "with_summary",
    "summary_figures",
    "attack_results",
    "attribute_attack",
    "disco_kernel",
    "disco_counts",
    "target_hashes",
    "sample_rows_kernel",
    "DCR_THRESHOLD",
    "MIA_THRESHOLD",
    "ATTRIBUTE_THRESHOLD",
    "ATTRIBUTE_SAMPLE",
    "HEADLINE",
]

#: generated rows equal to an original record, above the share of original records that equal another
DCR_THRESHOLD = 0.05
#: balanced accuracy of the membership attacker above 0.5 (plus half its chance-level advantage)
MIA_THRESHOLD = 0.05
#: records whose attribute the release discloses beyond what the other records disclose
ATTRIBUTE_THRESHOLD = 0.05
#: original records the attribute-disclosure attack targets at most (public-seeded sample)
ATTRIBUTE_SAMPLE = 1000
_SAMPLE_SEED = 0x5EED_0038
#: the utility figures the summary prefers (after any single-number quality score)
HEADLINE = ("ds", "patterns_close", "itemsets_rho")
_TESTS = "tests/krimp/test_threat.py"


# ---------------------------------------------------------------------- from the measured figures
def attack_results(rel: GeneratedRelease, values: dict[str, Value]) -> list[Attack]:
    """The attacks read from the measured risk figures (``values`` by id)."""
    out: list[Attack] = []
    rows = int(rel.data.n_transactions)
    v = values.get("unique_copies")
    if v is not None and rows:
        out.append(
            Attack(
                "attack_copies",
                "copies of unique original records among the generated rows",
                int(v.value) / rows,
                0.0,
                0.0,
                "share of generated rows equal to a record unique in the original",
                about="comparison",
                found=f"{int(v.value):,} of {_n(rows, 'row')}; {v.note}",
                test="tests/krimp/test_attacks.py::test_forgery_with_the_original_rows_fails; "
                f"{_TESTS}::test_attacks_recomputed_by_brute_force",
            )
        )
    v, base = values.get("rows_copying_records"), values.get("records_shared")
    if v is not None and base is not None:
        out.append(
            Attack(
                "attack_dcr",
                "distance to closest record (generated rows equal to an original record)",
                float(v.value) / 100.0,
                float(base.value) / 100.0,
                DCR_THRESHOLD,
                "share of generated rows at distance 0 from an original record; baseline: the original "
                "records equal to another one (what records of the population outside the original do)",
                about="comparison",
                found=f"{v.note} equal an original record; {base.note} of the original equal another",
                test=f"{_TESTS}::test_attacks_recomputed_by_brute_force",
            )
        )
    v, chance = values.get("membership_advantage"), values.get("membership_chance")
    if v is not None and v.value is not None:
        c = float(chance.value) if chance is not None else 0.0
        adv = float(v.value)
        out.append(
            Attack(
                "attack_membership",
                "membership inference (Hamming distance to the closest generated row)",
                0.5 + adv / 2,
                0.5,
                MIA_THRESHOLD + c / 2,
                "balanced accuracy of the attacker telling the records the generator was fitted on from held-out ones",
                about="comparison",
                found=f"|TPR - FPR| {adv:.3f} (by chance {c:.3f}); {v.note}",
                test=f"tests/krimp/test_attacks.py::test_membership_advantage_is_bounded; {_TESTS}::"
                "test_attacks_recomputed_by_brute_force",
            )
        )
    return out


# ---------------------------------------------------------------------- attribute disclosure (DiSCO)
def sample_rows_kernel(block: Any, start: int, rows: np.ndarray) -> sp.csr_array:
    """Kernel: the rows of one CSR block (global rows from ``start``) that are in ``rows``
    (sorted global rows of the public sample)."""
    b = sp.csr_array(block)
    lo, hi = np.searchsorted(rows, [start, start + b.shape[0]])
    return b[np.asarray(rows[lo:hi] - start, np.int64)]


def _item_domains(labels: np.ndarray, domains: list[list[Any]]) -> np.ndarray:
    """The domain of every label of a vocabulary (-1: in no domain)."""
    dom_of = {v: d for d, values in enumerate(domains) for v in values}
    return np.array([dom_of.get(v, -1) for v in np.asarray(labels).tolist()], np.int64)


def disco_kernel(
    block: Any, h1: np.ndarray, item_domain: np.ndarray, full: np.ndarray, minus: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel: for every target and the rows ``g`` of the CSR ``block``: ``same`` (t,) the rows
    equal to the target, ``other`` (t, D) the rows equal to it in every attribute but ``j``
    (another value in ``j``).

    Rows and targets compare through wrapping 64-bit sums of their items' label hashes ``h1``
    (:func:`~ppdm_dask.data.fingerprints.label_hashes` of the block's vocabulary; two distinct
    item sets collide with probability 2⁻⁶⁴ per pair): ``full`` (t,) is each target's sum and
    ``minus`` (t, D) its sum without its item of domain ``j``; a row's sum without its item of
    ``j`` equals ``minus[:, j]`` exactly when it holds the target's items in every other
    attribute. Rows without exactly one item of every domain are left out."""
    t, D = minus.shape
    same, other = np.zeros(t, np.int64), np.zeros((t, D), np.int64)
    n = block.shape[0]
    if not n or not t:
        return same, other
    ip = np.asarray(block.indptr, np.int64)
    idx = np.asarray(block.indices, np.int64)
    row = np.repeat(np.arange(n), np.diff(ip))
    dom = item_domain[idx]
    ok = dom >= 0
    counts = np.bincount(row[ok] * D + dom[ok], minlength=n * D).reshape(n, D)
    valid = (counts == 1).all(axis=1)
    valid[row[~ok]] = False
    keep = valid[row] & ok
    hashes = np.zeros((n, D), np.uint64)
    hashes[row[keep], dom[keep]] = h1[idx[keep]]
    hashes = hashes[valid]
    with np.errstate(over="ignore"):
        total = hashes.sum(axis=1, dtype=np.uint64)
        srt = np.sort(total)
        same = np.searchsorted(srt, full, side="right") - np.searchsorted(srt, full, side="left")
        for j in range(D):
            key = np.sort(total - hashes[:, j])
            other[:, j] = np.searchsorted(key, minus[:, j], side="right") - np.searchsorted(key, minus[:, j], side="left") - same
    return same.astype(np.int64), other


def _add(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def target_hashes(targets: Sequence[Sequence[Any]], domains: list[list[Any]]) -> tuple[np.ndarray, np.ndarray]:
    """``(full (t,), minus (t, D))`` of :func:`disco_kernel` for targets holding one item of
    every domain (lists of labels)."""
    from ..data.fingerprints import label_hashes

    dom_of = {v: d for d, values in enumerate(domains) for v in values}
    D = len(domains)
    by_domain = np.empty((len(targets), D), dtype=object)
    for r, row in enumerate(targets):
        for i in row:
            by_domain[r, dom_of[i]] = i
    flat = by_domain.reshape(-1).tolist()
    h = label_hashes(np.asarray(flat))[0].reshape(len(targets), D) if flat else np.zeros((0, D), np.uint64)
    with np.errstate(over="ignore"):
        full = h.sum(axis=1, dtype=np.uint64)
        minus = full[:, None] - h
    return full, minus


def disco_counts(
    tx: Any, targets: Sequence[Sequence[Any]], domains: list[list[Any]], **ckw: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``(same (t,), other (t, D))`` of :func:`disco_kernel` over every block of the
    TransactionArray ``tx`` (one pass, summed in a tree reduction)."""
    import dask

    from ..data.fingerprints import label_hashes
    from ..graph import tree_reduce
    from ..progress import compute

    labels = np.asarray(tx.vocabulary.labels)
    h1 = label_hashes(labels)[0]
    full, minus = target_hashes(targets, domains)
    args = [dask.delayed(x, pure=True) for x in (h1, _item_domains(labels, domains), full, minus)]
    parts = [dask.delayed(disco_kernel, pure=True)(b, *args) for b in tx.blocks.to_delayed().ravel()]
    if not parts:
        return np.zeros(len(targets), np.int64), np.zeros((len(targets), len(domains)), np.int64)
    ckw.setdefault("progress", False)
    (out,) = compute(tree_reduce(parts, _add), **ckw)
    return out


def _sample(original: Any, **ckw: Any) -> list[list[Any]]:
    """The public-seeded sample of up to :data:`ATTRIBUTE_SAMPLE` original records (by global
    row: the same records however the original is partitioned), as lists of labels."""
    import dask

    from ..progress import compute

    n = int(original.n_transactions)
    rows = np.sort(np.random.default_rng(_SAMPLE_SEED).permutation(n)[:ATTRIBUTE_SAMPLE])
    starts = np.concatenate([[0], np.cumsum(original.partition_rows)]).astype(np.int64)
    ckw.setdefault("progress", False)
    (blocks,) = compute(
        [
            dask.delayed(sample_rows_kernel, pure=True)(b, int(starts[i]), rows)
            for i, b in enumerate(original.blocks.to_delayed().ravel())
        ],
        **ckw,
    )
    labels = np.asarray(original.vocabulary.labels)
    out = []
    for b in blocks:
        for r in range(b.shape[0]):
            out.append(labels[b.indices[b.indptr[r] : b.indptr[r + 1]]].tolist())
    return out


def attribute_attack(rel: GeneratedRelease, original: Any, **ckw: Any) -> tuple[Attack | None, str | None]:
    """``attack_attribute`` (see the module docstring)."""
    domains = [list(d) for d in (rel.parameters.get("domains") or [])]
    D = len(domains)
    if D < 2:
        return None, "attribute disclosure: the release records fewer than two attribute domains"
    dom_of = {v: d for d, values in enumerate(domains) for v in values}
    targets = [r for r in _sample(original, **ckw) if len(r) == D and len({dom_of.get(i, -1) for i in r} - {-1}) == D]
    if not targets:
        return None, "attribute disclosure: no original record holds one item of every domain"
    same_r, other_r = disco_counts(rel.data, targets, domains, **ckw)
    same_o, other_o = disco_counts(original, targets, domains, **ckw)
    hit = (same_r[:, None] > 0) & (other_r == 0)
    base = (same_o[:, None] > 1) & (other_o == 0)  # the target itself left out
    m = len(targets)
    success, baseline = hit.mean(axis=0), base.mean(axis=0)
    only, others = (hit & ~base).mean(axis=0), (base & ~hit).mean(axis=0)
    noise = 2.0 * np.sqrt(np.maximum(only + others - (only - others) ** 2, 0.0) / m)
    threshold = ATTRIBUTE_THRESHOLD + noise
    j = int(np.argmax(success - baseline - threshold))
    name = f"attribute {j + 1} ({', '.join(map(str, domains[j][:4]))}{', ...' if len(domains[j]) > 4 else ''})"
    per = ", ".join(f"{c + 1}: {_percent(success[c])} (others {_percent(baseline[c])})" for c in range(D))
    return Attack(
        "attack_attribute",
        f"attribute disclosure, DiSCO ({name} from the other attributes)",
        float(success[j]),
        float(baseline[j]),
        float(threshold[j]),
        "share of records whose value the generated rows matching their other attributes all hold, and no "
        "other; baseline: the same from the other original records",
        about="comparison",
        found=f"{m:,} original records targeted (sampling noise {noise[j]:.3f}); per attribute: {per}",
        test=f"{_TESTS}::test_disco_by_brute_force",
    ), None


# ---------------------------------------------------------------------- words
def _learn(rel: GeneratedRelease, values: dict[str, Value], attacks: list[Attack]) -> list[Any]:
    p = rel.parameters
    floor = rel._pattern_floor()
    n_pat = int(rel.patterns.num_rows)
    times = _n(floor - 1, "time") if isinstance(floor, int) else "fewer times than min_support"
    out: list[Any] = [
        Text(
            "learn_not_dp",
            "Not differential privacy: the code table is fitted deterministically on the data and "
            "every record moves the distribution of the generated rows; nothing bounds what one record "
            "adds, the figures below are measured.",
        ),
        Text(
            "learn_patterns",
            f"Each of the {_n(n_pat, 'published pattern')} is held by at least "
            f"{_n(floor, 'original record') if isinstance(floor, int) else floor}, without its count: an "
            f"adversary who knows every other record and counts a pattern {times} among them learns "
            "that the target holds it.",
        ),
        Text(
            "learn_negative",
            "A released row is no unique record of the input (rule: "
            f"{p.get('unique_copies')}): an adversary who knows every record but the target's and "
            "sees a row no other record equals learns that the target's record is not that row.",
        ),
    ]
    if p.get("domains"):
        out.append(
            Text(
                "learn_values",
                f"The {len(p['domains'])} attribute domains list their values "
                f"({sum(len(d) for d in p['domains']):,} in all): with inferred domains, every "
                "value that occurs in the original at least once.",
            )
        )
    v = values.get("rows_reproduced")
    if v is not None:
        out.append(
            Text(
                "learn_shared",
                f"Records shared by several people reappear as they are: {v.value:.1f} % of the "
                f"original records are generated rows ({v.note}).",
                about="comparison",
            )
        )
    by = {a.id: a for a in attacks}
    a = by.get("attack_membership")
    if a is not None:
        out.append(
            Text(
                "learn_membership",
                f"Whether a candidate record was in the data: the best distance attacker is "
                f"right {_percent(a.success)} of the time against 50 % by guessing.",
                about="comparison",
            )
        )
    a = by.get("attack_attribute")
    if a is not None:
        what = a.name.split("(", 1)[1][:-1]
        out.append(
            Text(
                "learn_attribute",
                f"An attribute from the others: the generated rows give {what} "
                f"right and unambiguously for {_percent(a.success)} of the records, against "
                f"{_percent(a.baseline)} from the other original records.",
                about="comparison",
            )
        )
    return out


def with_summary(rel: GeneratedRelease, fig: Figures, original: Any = None, **ckw: Any) -> Figures:
    """``fig`` with the summary of :func:`summary_figures` added; the headline is ``fig``'s own
    first (a quality score another part of the report chose), then the summary's, at most three."""
    return fig.with_summary(summary_figures(rel, fig, original, **ckw))


def summary_figures(rel: GeneratedRelease, fig: Figures, original: Any = None, **ckw: Any) -> Figures:
    """The summary's content of a KRIMP generator release (see the module docstring): ``fig``
    holds the measured figures of :meth:`GeneratedRelease.report_figures`; ``original`` a
    TransactionArray or None."""
    ckw.setdefault("progress", False)
    values = {i.id: i for i in fig.risk + fig.utility if isinstance(i, Value)}
    p = rel.parameters
    rule = p.get("unique_copies")
    floor = rel._pattern_floor()
    n_pat = int(rel.patterns.num_rows)
    copies = (
        "no row equals a record that is unique in the original (such rows are drawn again)"
        if rule == "redrawn"
        else "rows equal to a record unique in the original may be released (the unique-copy rule was lifted)"
    )
    held = _n(floor, "original record") if isinstance(floor, int) else f"{floor} original records"
    n_dom = int(p.get("n_domains") or len(p.get("domains") or []))
    guarantee = (
        f"{_n(rel.data.n_transactions, 'row')} generated from the code table's {_n(n_pat, 'published pattern')} "
        f"(each held by at least {held}; min_support {p.get('min_support')}) and single items, one item in each "
        f"of the {_n(n_dom, 'attribute')}; {copies}."
    )
    protects = (
        "Protects against finding a unique person's complete record among the released rows, and publishes no "
        "pattern of fewer than two records and no count of the original. It is not differential privacy: records "
        "shared with others reappear, near copies of unique records (one attribute different) may be released, "
        "and membership and attributes can be inferred to the measured extent."
    )
    attacks: list[Attack] = []
    notes: list[str] = []
    if original is None:
        notes.append(
            "attacks: every attack on a KRIMP release (copies, distance to closest record, membership "
            "inference, attribute disclosure) compares it with the original and needs --original"
        )
    else:
        attacks += attack_results(rel, values)
        attack, why = attribute_attack(rel, original, **ckw)
        attacks += [attack] if attack is not None else []
        notes += [why] if why else []
    scores = [i.id for i in fig.utility if isinstance(i, Value) and i.score]
    headline = list(dict.fromkeys(scores + [h for h in HEADLINE if h in values]))[:3]
    return Figures(
        notes=notes,
        guarantee=guarantee,
        protects=protects,
        learn=_learn(rel, values, attacks),
        attacks=attacks,
        headline=headline,
        warnings=[],
    )

"""The officer's summary of KRIMP generator releases (ppdm_dask.krimp.threat): every attack's
success recomputed independently with Python sets and dictionaries of rows (copies, rows equal
to an original record, synthpop's DiSCO with the target left out of the baseline), in agreement
with tests/krimp/test_attacks.py (no unique record copied at the defaults; the original's rows
as the release refused)."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from ppdm_dask import Key, TransactionArray
from ppdm_dask.krimp import KrimpGenerator
from ppdm_dask.krimp import threat as T
from ppdm_dask.report.decision import decide
from ppdm_dask.report.units import percent

D = 4
DOMAINS = [[10 * (a + 1) + v for v in range(3)] for a in range(D)]


def _rows(n=400, seed=0):
    """Correlated categorical records: many shared, some unique."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 3, size=(n, 1))
    vals = np.where(rng.random((n, D)) < 0.75, base, rng.integers(0, 3, size=(n, D)))
    return [[10 * (a + 1) + int(v) for a, v in enumerate(r)] for r in vals]


@pytest.fixture(scope="module")
def generated():
    original = _rows()
    tx = TransactionArray.from_lists(original).repartition(npartitions=2)
    rel = KrimpGenerator(2, key=Key(5), domains=DOMAINS).fit(tx).release()
    return original, tx, rel, rel.report_figures(tx)


def _by_domain(row):
    return tuple(sorted(row))  # one item per domain, labels ordered by domain


def _disco(targets, rows, leave_out):
    """Per target and attribute j: the rows equal to the target in every other attribute all hold
    the target's value of j (and at least one does); ``leave_out``: the target is one of ``rows``."""
    out = np.zeros((len(targets), D), bool)
    for j in range(D):
        seen = defaultdict(Counter)
        for r in rows:
            r = _by_domain(r)
            seen[r[:j] + r[j + 1 :]][r[j]] += 1
        for t, r in enumerate(targets):
            r = _by_domain(r)
            values = Counter(seen[r[:j] + r[j + 1 :]])
            if leave_out:
                values[r[j]] -= 1
            values = +values
            out[t, j] = set(values) == {r[j]}
    return out


def test_attacks_recomputed_by_brute_force(generated):
    original, tx, rel, fig = generated
    a = {x.id: x for x in fig.attacks}
    assert set(a) == {"attack_copies", "attack_dcr", "attack_membership", "attack_attribute"}
    assert all(x.about == "comparison" for x in a.values())
    gen = [frozenset(r) for r in rel.data.to_lists()]
    counts = Counter(frozenset(r) for r in original)
    unique = {r for r, c in counts.items() if c == 1}
    n, N = len(gen), len(original)
    assert unique and any(c > 1 for c in counts.values())
    # unique records copied: none with the rule (test_attacks: 0 in every case)
    assert a["attack_copies"].success == sum(r in unique for r in gen) / n == 0 and not a["attack_copies"].flagged
    # distance 0: rows equal to an original record, against the records equal to another
    assert a["attack_dcr"].success == pytest.approx(sum(r in counts for r in gen) / n)
    assert a["attack_dcr"].baseline == pytest.approx(sum(c for c in counts.values() if c > 1) / N)
    # membership: the measured advantage as a balanced accuracy, threshold from its chance level
    values = {v.id: v for v in fig.risk}
    adv, chance = values["membership_advantage"].value, values["membership_chance"].value
    assert f"by chance (labels shuffled): {chance:.3f}" in values["membership_advantage"].note
    assert a["attack_membership"].success == pytest.approx(0.5 + adv / 2)
    assert a["attack_membership"].threshold == pytest.approx(T.MIA_THRESHOLD + chance / 2)
    # DiSCO: every record targeted (400 < ATTRIBUTE_SAMPLE), in the order of the blocks
    success = _disco(original, rel.data.to_lists(), False).mean(axis=0)
    baseline = _disco(original, original, True).mean(axis=0)
    j = int(a["attack_attribute"].name.split("attribute ")[2].split(" ")[0]) - 1
    assert a["attack_attribute"].success == pytest.approx(success[j])
    assert a["attack_attribute"].baseline == pytest.approx(baseline[j])
    for c in range(D):
        assert f"{c + 1}: {percent(success[c])} (others {percent(baseline[c])})" in a["attack_attribute"].found


def test_disco_by_brute_force():
    rows = _rows(300, seed=2)
    rows[7] = rows[7][:2]  # a row without an item of every domain: left out
    targets = _rows(60, seed=3)
    want_same = [sum(sorted(r) == sorted(t) for r in rows) for t in targets]
    full = [r for r in rows if len(r) == D]
    for parts in (1, 3):
        tx = TransactionArray.from_lists(rows).repartition(npartitions=parts)
        same, other = T.disco_counts(tx, targets, DOMAINS)
        assert same.tolist() == want_same
        for t, r in enumerate(targets):
            r = _by_domain(r)
            for j in range(D):
                want = sum(
                    1
                    for g in full
                    if _by_domain(g)[:j] + _by_domain(g)[j + 1 :] == r[:j] + r[j + 1 :] and _by_domain(g)[j] != r[j]
                )
                assert other[t, j] == want


def test_a_forged_release_is_flagged(generated):
    """The original's rows as the release (test_attacks.py::test_forgery_with_the_original_rows_fails):
    the unique copies are flagged and the recount refuses it."""
    original, tx, rel, _ = generated
    forged = KrimpGenerator(2, key=Key(5), domains=DOMAINS).fit(tx).release()
    forged.data = tx
    fig = forged.report_figures(tx)
    a = {x.id: x for x in fig.attacks}
    unique = sum(1 for c in Counter(frozenset(r) for r in original).values() if c == 1)
    assert a["attack_copies"].success == pytest.approx(unique / len(original)) and a["attack_copies"].flagged
    # every record is in the release: it discloses at least what the other records do, the uniques more
    success = _disco(original, original, False).mean(axis=0)
    baseline = _disco(original, original, True).mean(axis=0)
    assert (success >= baseline).all() and (success > baseline).any()
    assert f"{percent(success[0])} (others {percent(baseline[0])})" in a["attack_attribute"].found
    decision = decide(forged.guarantee_checks(tx), fig.attacks, fig.warnings)
    assert decision.colour == "red" and "attack_copies" in {r.id for r in decision.risks}
    # the release alone: no attack can run, and the summary says why
    alone = forged.report_figures()
    assert alone.attacks == [] and any("--original" in n for n in alone.notes)
    assert decide(forged.guarantee_checks(), alone.attacks, alone.warnings).colour == "green"


def test_summary_words_carry_this_release(generated):
    original, tx, rel, fig = generated
    n_pat = rel.patterns.num_rows
    head = f"{rel.data.n_transactions:,} rows generated from the code table's {n_pat:,} published pattern"
    assert fig.guarantee.startswith(head)
    assert "each held by at least 2 original records" in fig.guarantee and "drawn again" in fig.guarantee
    learn = {t.id: t.text for t in fig.learn}
    assert {"learn_not_dp", "learn_patterns", "learn_negative", "learn_membership", "learn_attribute"} <= set(learn)
    reproduced = {v.id: v for v in fig.risk}["rows_reproduced"].value
    assert f"{reproduced:.1f} % of the original records" in learn["learn_shared"]
    about = {t.id: t.about for t in fig.learn}  # what needs the original stays out of the external report
    assert about["learn_shared"] == about["learn_membership"] == about["learn_attribute"] == "comparison"
    assert about["learn_patterns"] == about["learn_not_dp"] == "release"
    assert (
        fig.headline and set(fig.headline) <= {v.id for v in fig.utility} and fig.headline[:2] == ["utility_quality_score", "ds"]
    )
    # the figures the attacks read, recounted
    risk = {v.id: v for v in fig.risk}
    counts = Counter(frozenset(r) for r in original)
    unique = {r for r, c in counts.items() if c == 1}
    gen = {frozenset(r) for r in rel.data.to_lists()}
    assert risk["unique_records_copied"].value == pytest.approx(100 * len(unique & gen) / len(unique)) == 0
    assert risk["records_shared"].about == "original"


def test_attribute_attack_does_not_depend_on_the_partitioning():
    """led7 (3,200 records): a public sample of 1,000 records by global row, the same attack
    however the original and the generated rows are cut."""
    from ppdm_dask import read
    from ppdm_dask.data.datasets import sample_path

    led7 = read(str(sample_path("led7")))
    rel = KrimpGenerator(20, key=Key(5)).fit(led7).release()
    one, _ = T.attribute_attack(rel, led7.repartition(npartitions=1))
    rel.data = rel.data.repartition(npartitions=3)
    three, _ = T.attribute_attack(rel, led7.repartition(npartitions=4))
    assert one == three and "1,000 original records targeted" in one.found
    # the sample: the records at the seeded global rows
    rows = np.sort(np.random.default_rng(T._SAMPLE_SEED).permutation(3200)[:1000])
    every = led7.to_lists()
    assert T._sample(led7.repartition(npartitions=5)) == [every[i] for i in rows]

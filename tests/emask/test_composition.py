"""Repeated EMASK releases of one input composed in the ledger (ppdm_dask.emask.composition).

Oracles: the ε sums by hand from the randomised-response formula; the composed basic privacy
against a direct enumeration of the 2^r outcomes written here from the definition, and against a
simulation that estimates every posterior from counted bits (no Bayes formula); for one release
it is the library's basic_privacy.
"""

from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pytest

from ppdm_dask import Key, TransactionArray
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.quest import quest
from ppdm_dask.emask import Distorter, basic_privacy
from ppdm_dask.emask.composition import (
    BP_CHECK,
    BUDGET_CHECK,
    Terms,
    compose_release,
    composed_basic_privacy,
    composed_epsilon,
    composed_r1,
)
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.ledger import CompositionRefused, Ledger, Record

LN20 = math.log(0.4 / 0.02)  # ε of (0.4, 0.98): max(ln(p/(1-q)), ln(q/(1-p))) = ln 20 (0.98/0.6 is smaller)


@pytest.fixture(scope="module")
def tx():
    """T10.I4.D1K.N1K: s0 ≈ 0.01 (basic privacy of (0.4, 0.98) ≈ 92.9 %, of two ≈ 82 %, of three ≈ 70 %)."""
    return quest("T10.I4.D1K.N1K", key=Key(1)).persist(progress=False)


# ---------------------------------------------------------------------------- oracles
def enumerated_r1(pairs, s0):
    """R1 = Σ_y P(y|x=1)·P(x=1|y) over every outcome y ∈ {0,1}^r, straight from the definition."""
    total = 0.0
    for y in itertools.product((0, 1), repeat=len(pairs)):
        like1 = like0 = 1.0
        for (p, q), bit in zip(pairs, y):
            like1 *= p if bit else 1 - p
            like0 *= (1 - q) if bit else q
        if like1 == 0:
            continue
        total += like1 * (s0 * like1 / (s0 * like1 + (1 - s0) * like0))
    return total


def simulated_r1(pairs, s0, n, seed):
    """R1 estimated from simulated bits: each posterior P(x=1|y) is the share of 1s among the
    simulated bits whose copies read y; R1 is that share averaged over the true 1s (the
    probability-weighted reconstruction of docs/emask.md#basic-privacy)."""
    rng = np.random.default_rng(seed)
    x = rng.random(n) < s0
    code = np.zeros(n, np.int64)
    for i, (p, q) in enumerate(pairs):
        keep = np.where(x, rng.random(n) < p, rng.random(n) < q)
        y = np.where(keep, x, ~x)
        code |= y.astype(np.int64) << i
    ones = np.bincount(code[x], minlength=1 << len(pairs))
    seen = np.bincount(code, minlength=1 << len(pairs))
    posterior = np.divide(ones, seen, out=np.zeros(len(seen)), where=seen > 0)
    return float(posterior[code[x]].mean())


# ---------------------------------------------------------------------------- the formulas
@pytest.mark.parametrize("p,q", [(0.4, 0.98), (0.9, 0.9), (0.5, 0.97), (0.3, 0.99), (0.05, 0.6)])
@pytest.mark.parametrize("s0", [0.01, 0.2, 0.7])
def test_one_release_is_basic_privacy(p, q, s0):
    assert composed_basic_privacy([(p, q)], s0) == pytest.approx(basic_privacy(p, q, s0=s0), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    "pairs",
    [
        [(0.4, 0.98), (0.5, 0.97)],
        [(0.4, 0.98)] * 2,
        [(0.9, 0.9), (0.4, 0.98), (0.9, 0.9)],
        [(0.4, 0.98)] * 3 + [(0.6, 0.96)] * 2,
        [(1.0, 0.95), (0.4, 0.98)],
    ],
)
@pytest.mark.parametrize("s0", [0.01, 0.3])
def test_composed_r1_equals_enumeration(pairs, s0):
    assert composed_r1(pairs, s0) == pytest.approx(enumerated_r1(pairs, s0), rel=1e-12)


def test_composed_r1_of_two_releases_against_simulation():
    pairs, s0 = [(0.4, 0.98), (0.6, 0.9)], 0.2
    mc = simulated_r1(pairs, s0, n=400_000, seed=3)  # ~80,000 ones: standard error < 0.002
    assert composed_r1(pairs, s0) == pytest.approx(mc, abs=0.01)
    # and the composition is worth something to the attacker: well above one release's R1
    assert composed_r1(pairs, s0) > composed_r1(pairs[:1], s0) + 0.05


def test_every_release_lowers_basic_privacy_whatever_the_order():
    pairs = [(0.4, 0.98), (0.5, 0.97), (0.9, 0.9), (0.3, 0.99)]
    bps = [composed_basic_privacy(pairs[: r + 1], 0.01) for r in range(len(pairs))]
    assert all(b2 < b1 for b1, b2 in zip(bps, bps[1:])), bps
    assert composed_basic_privacy(pairs[::-1], 0.01) == pytest.approx(bps[-1], rel=1e-12)


def test_epsilon_sums_by_hand():
    a = Terms(0.4, 0.98, 1000)
    b = Terms(0.5, 0.97, 800)  # ε = max(ln(0.5/0.03), ln(0.97/0.5)) = ln(50/3)
    per_item, per_record = composed_epsilon([a, b, a])
    assert per_item == pytest.approx(2 * LN20 + math.log(50 / 3), rel=1e-12)
    assert per_record == pytest.approx(2 * 1000 * LN20 + 800 * math.log(50 / 3), rel=1e-12)
    assert composed_epsilon([a, Terms(1.0, 0.9, 10)])[0] == math.inf  # a 1 that always stays 1 after a 0 left 0: ε = ∞


def test_bad_s0_and_no_release():
    with pytest.raises(InvalidParameter, match="s0"):
        composed_r1([(0.4, 0.98)], 1.0)
    with pytest.raises(InvalidParameter):
        composed_r1([], 0.1)


# ---------------------------------------------------------------------------- releases through the ledger
def _rows(path):
    return sorted(os.listdir(path))


def test_two_releases_then_a_third_beyond_the_budget(tx, tmp_path):
    said: list[tuple[str, list[str]]] = []

    def notify(line):
        said.append((line, _rows(tmp_path)))  # what exists when the job speaks: nothing of its own yet

    est = [Distorter(0.4, 0.98, key=Key(10 + i), privacy_floor=60, epsilon_budget=7) for i in range(3)]
    first = est[0].fit_transform(tx)
    m1 = first.write(str(tmp_path / "r0"), notify=notify)
    assert [s for s, _ in said][0].startswith("ledger: first recorded release of this input")
    assert m1["release"]["ledger"]["composition"]["releases"] == 1
    said.clear()

    m2 = est[1].fit_transform(tx).write(str(tmp_path / "r1"), notify=notify)
    text = "\n".join(s for s, _ in said)
    before = [listing for line, listing in said[: [s for s, _ in said].index("ledger: this input has 1 earlier release(s):") + 6]]
    assert all(listing == ["r0"] for listing in before), said  # said before the work
    # once written (before the commit), the composition by person: each record its own person here
    assert "1 earlier release(s) share this input or its people" in text and "people shared" in text
    assert "this input has 1 earlier release(s)" in text and m1["release"]["id"] in text
    n = tx.n_items
    assert f"composed epsilon per item: {2 * LN20:.4g}" in text
    assert f"composed epsilon per record: {2 * n * LN20:.4g}" in text
    comp = m2["release"]["ledger"]["composition"]
    assert comp["releases"] == 2 and comp["emask_releases"] == 2 and comp["epsilon_budget"] == 7
    assert comp["epsilon_per_item"] == pytest.approx(2 * LN20) and comp["epsilon_per_record"] == pytest.approx(2 * n * LN20)
    assert {c["name"]: c["ok"] for c in comp["limits"]} == {BP_CHECK: True, BUDGET_CHECK: True}
    # the owner's s0 and the composed basic privacy are in the ledger, never in the manifest
    s0 = est[1].s0_
    r1_2 = enumerated_r1([(0.4, 0.98)] * 2, s0)
    public = json.dumps(m2)
    assert "basic_privacy" not in json.dumps(comp) and repr(s0) not in public and f"{100 * (1 - r1_2):.6g}"[:6] not in public
    rec = [r for r in Ledger.default().records() if r.release_id == m2["release"]["id"]][0]
    assert rec.get("figures")["s0"] == s0
    assert rec.composition["figures"]["basic_privacy"] == pytest.approx(100 * (1 - r1_2), rel=1e-12)

    third = est[2].fit_transform(tx)
    with pytest.raises(CompositionRefused) as err:
        third.write(str(tmp_path / "r2"))
    msg = cli_message(err.value)
    assert "--allow-composition" in msg and BUDGET_CHECK in msg and f"{3 * LN20:.6g}" in msg
    assert not (tmp_path / "r2").exists()
    assert len(Ledger.default().records()) == 2  # a refused release leaves no record

    m3 = third.write(str(tmp_path / "r2"), allow_composition=True)
    assert m3["release"]["overrides"] == [f"composition: {BUDGET_CHECK}"]
    comp = m3["release"]["ledger"]["composition"]
    assert comp["releases"] == 3 and comp["epsilon_per_item"] == pytest.approx(3 * LN20)
    assert {c["name"]: c["overridden"] for c in comp["limits"]} == {BP_CHECK: False, BUDGET_CHECK: True}
    assert [r.status for r in Ledger.default().records()] == ["committed"] * 3


def test_default_budget_is_the_floor(tx, tmp_path):
    # at the default floor of 90 %, one release of (0.4, 0.98) passes (92.9 %), two do not (≈ 82 %)
    Distorter(0.4, 0.98, key=Key(1)).fit_transform(tx).write(str(tmp_path / "a"))
    second = Distorter(0.4, 0.98, key=Key(2)).fit_transform(tx)
    with pytest.raises(CompositionRefused, match=BP_CHECK) as err:
        second.write(str(tmp_path / "b"))
    assert "--allow-composition" in cli_message(err.value)
    m = second.write(str(tmp_path / "b"), allow_composition=True)
    assert m["release"]["overrides"] == [f"composition: {BP_CHECK}"]
    assert m["release"]["ledger"]["composition"]["privacy_floor"] == 90


def test_same_release_again_and_opting_out(tx, tmp_path):
    # the same key, parameters and input are the same release: written twice it composes with nothing
    Distorter(0.4, 0.98, key=Key(4)).fit_transform(tx).write(str(tmp_path / "a"))
    m = Distorter(0.4, 0.98, key=Key(4)).fit_transform(tx).write(str(tmp_path / "b"))
    assert m["release"]["ledger"]["composition"]["releases"] == 1
    m = Distorter(0.4, 0.98, key=Key(5), ledger=None).fit_transform(tx).write(str(tmp_path / "c"))
    assert m["release"]["ledger"]["recorded"] is False


def test_budget_is_not_part_of_the_release(tx):
    plain = Distorter(0.4, 0.98, key=Key(6)).fit_transform(tx)
    budgeted = Distorter(0.4, 0.98, key=Key(6), epsilon_budget=5.0).fit_transform(tx)
    assert budgeted.identity == plain.identity and "epsilon_budget" not in budgeted.parameters
    assert (budgeted.data.compute() != plain.data.compute()).nnz == 0
    assert budgeted.epsilon_budget == 5.0 and budgeted.ledger_figures()["epsilon_budget"] == 5.0


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "3"])
def test_bad_budget(tx, bad):
    est = Distorter(0.4, 0.98, epsilon_budget=bad)
    assert est.get_params()["epsilon_budget"] is bad  # stored unchanged, checked in fit
    with pytest.raises(InvalidParameter, match="epsilon_budget") as err:
        est.fit(tx)
    assert "--epsilon-budget" in cli_message(err.value)


def test_earlier_records_other_families_and_the_smallest_budget(tx):
    rel = Distorter(0.5, 0.97, key=Key(8), privacy_floor=50).fit_transform(tx)

    def record(family, parameters, figures=None):
        return Record(
            {
                "record": family,
                "release_id": f"id-{family}",
                "family": family,
                "method": family,
                "parameters": parameters,
                "figures": figures or {},
            }
        )

    earlier = [
        record("km", {"k": 5, "m": 2}),
        record("emask", {"p": 0.4, "q": 0.98, "n_items": 500, "privacy_floor": 80}),  # parameters only
        Record(
            {
                "record": "b",
                "release_id": "id-b",
                "family": "emask",
                "method": "emask",
                "parameters": {"p": 0.9, "q": 0.9, "n_items": 1000, "privacy_floor": 60},
                "figures": {"epsilon_budget": 9.0},
            }
        ),
    ]
    comp = compose_release(rel, earlier)
    eps = math.log(50 / 3)
    assert comp.figures["epsilon_per_item"] == pytest.approx(LN20 + math.log(9) + eps)
    assert comp.figures["epsilon_per_record"] == pytest.approx(500 * LN20 + 1000 * math.log(9) + tx.n_items * eps)
    assert comp.public["emask_releases"] == 3 and comp.releases == 4
    assert comp.public["privacy_floor"] == 80 and comp.public["epsilon_budget"] == 9.0  # the highest floor, the smallest budget
    assert comp.figures["basic_privacy"] == pytest.approx(
        100 * (1 - enumerated_r1([(0.4, 0.98), (0.9, 0.9), (0.5, 0.97)], rel.owner_s0())), rel=1e-12
    )
    # ln 20 + ln 9 + ln(50/3) = 8.01 <= 9; three releases at s0 ≈ 0.01 fall below the floor of 80
    assert {c.name: c.ok for c in comp.checks} == {BP_CHECK: False, BUDGET_CHECK: True}
    assert any("km/km" in n for n in comp.notes)


def test_equal_baskets_of_two_inputs_are_taken_for_one_person_and_the_refusal_says_so(tx, tmp_path):
    # no person column: a basket is its own person, so another input holding equal baskets (an
    # overlapping extract, or baskets equal by chance) composes with them, and the refusal names
    # that reading and the flags that name people instead
    lists = tx.to_lists()
    other = quest("T10.I4.D1K.N1K", key=Key(2)).to_lists()
    Distorter(0.4, 0.98, key=Key(1)).fit_transform(TransactionArray.from_lists(lists[:600])).write(str(tmp_path / "a"))
    second = Distorter(0.4, 0.98, key=Key(2)).fit_transform(TransactionArray.from_lists(lists[400:] + other[:400]))
    with pytest.raises(CompositionRefused, match=BP_CHECK) as err:
        second.write(str(tmp_path / "b"))
    msg = cli_message(err.value)
    shared = len(set(map(tuple, lists[:600])) & set(map(tuple, lists[400:] + other[:400])))
    assert f"{shared:,} people shared" in msg and shared >= 200
    assert "no person column: equal records in two releases are taken for one person" in msg and "--person or --user" in msg

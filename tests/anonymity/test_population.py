"""Population uniqueness models (Pitman, Zayatz, SNB, Dankar's rule) and sdcMicro's individual
risk (ppdm_dask.anonymity.population, docs/anonymity.md#population-risk): hand computations on
small frequency tables written out here, the models' own equations checked by plugging the
solved parameters back in (with plain loops, not the module's digamma forms), the SNB closed
forms against a direct sum over the negative binomial, and ARX's published figures on the full
Adult table (ARX's TestRiskMetrics.testDecisionRule2)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ppdm_dask.anonymity import population as P
from ppdm_dask.anonymity import risk as R
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.errors import InvalidParameter

#: 3 classes of 1 record, 2 of 2, 1 of 3: n = 10 records in u = 6 classes
SMALL = {1: 3, 2: 2, 3: 1}
#: a heavy-tailed partition (Pitman's model fits it): 229 records in 134 classes
HEAVY = {1: 100, 2: 20, 3: 8, 5: 3, 10: 2, 30: 1}


def _n(freq):
    return sum(size * count for size, count in freq.items())


# ---------------------------------------------------------------- inputs
def test_size_counts_accepts_the_report_frames():
    sizes = [1, 1, 1, 2, 2, 3]  # one class each
    a = P.size_counts(R.size_frequencies(sizes))
    b = P.size_counts(pd.Series(sizes).value_counts())
    c = P.size_counts(SMALL)
    for got in (a, b, c):
        assert got[0].tolist() == [1, 2, 3] and got[1].tolist() == [3, 2, 1]


def test_sampling_fraction_and_population_size():
    assert P.sampling_fraction(10, 0.5) == (0.5, 20.0)
    assert P.sampling_fraction(10, population_size=40) == (0.25, 40.0)
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(InvalidParameter, match="sampling fraction"):
            P.sampling_fraction(10, bad)
    with pytest.raises(InvalidParameter, match="smaller than the table's 10 records") as e:
        P.sampling_fraction(10, population_size=9)
    assert "--population-size" in cli_message(e.value)
    with pytest.raises(InvalidParameter, match="not both"):
        P.sampling_fraction(10, 0.5, 20)


# ---------------------------------------------------------------- Zayatz by hand
def test_zayatz_by_hand():
    # n = 10, pi = 1/2, N = 20. P(exactly 1 of a class of j records in a sample of 10 of 20):
    # j = 1: 10/20; j = 2: 2 C(18,9) / C(20,10) = 2*10*10/(20*19) = 10/19;
    # j = 3: 3 C(17,9) / C(20,10) = 3*10*10*9/(20*19*18) = 15/38
    p1, p2, p3 = Fraction(1, 2), Fraction(10, 19), Fraction(15, 38)
    cond = 3 * p1 / (3 * p1 + 2 * p2 + 1 * p3)  # = 57/112
    assert cond == Fraction(57, 112)
    expected = 3 * cond / Fraction(1, 2)  # sample uniques x P(population unique) / pi = 171/56
    assert P.zayatz_uniques(SMALL, 0.5) == pytest.approx(float(expected), rel=1e-12)
    r = P.population_uniqueness(SMALL, 0.5)
    assert r.estimates["zayatz"] == pytest.approx(171 / 56, rel=1e-12)
    assert r.share("zayatz") == pytest.approx(171 / 56 / 20, rel=1e-12)
    assert r.in_sample("zayatz") == pytest.approx(171 / 56 / 2, rel=1e-12)


# ---------------------------------------------------------------- Pitman
def _pitman_equations_by_loops(t, a, freq):
    """The two estimating equations of Pitman's likelihood written as the plain sums."""
    n, u = _n(freq), sum(freq.values())
    g1 = sum(1 / (t + i * a) for i in range(1, u)) - sum(1 / (t + i) for i in range(1, n))
    g2 = sum(i / (t + i * a) for i in range(1, u)) - sum(c * sum(1 / (k - a) for k in range(1, j)) for j, c in freq.items())
    return g1, g2


def _pitman_loglik_by_loops(t, a, freq):
    n, u = _n(freq), sum(freq.values())
    return (
        sum(math.log(t + i * a) for i in range(1, u))
        - sum(math.log(t + i) for i in range(1, n))
        + sum(c * sum(math.log(k - a) for k in range(1, j)) for j, c in freq.items())
    )


def test_pitman_fit_solves_its_equations_and_maximises_the_likelihood():
    fit = P.pitman_fit(HEAVY)
    assert fit.converged and 0 < fit.alpha < 1 and fit.theta > -fit.alpha
    g1, g2 = _pitman_equations_by_loops(fit.theta, fit.alpha, HEAVY)
    assert abs(g1) < 1e-9 and abs(g2) < 1e-7
    best = _pitman_loglik_by_loops(fit.theta, fit.alpha, HEAVY)
    for dt, da in ((0.5, 0), (-0.5, 0), (0, 0.01), (0, -0.01), (0.3, 0.005)):
        assert _pitman_loglik_by_loops(fit.theta + dt, fit.alpha + da, HEAVY) < best


def test_pitman_uniques_by_hand():
    fit = P.pitman_fit(HEAVY)
    pi = 0.05
    N = _n(HEAVY) / pi
    by_hand = math.exp(math.lgamma(fit.theta + 1) - math.lgamma(fit.theta + fit.alpha)) * N**fit.alpha
    assert P.pitman_uniques(HEAVY, pi) == pytest.approx(by_hand, rel=1e-12)
    r = P.population_uniqueness(HEAVY, pi)
    assert r.estimates["pitman"] == pytest.approx(by_hand, rel=1e-12)
    assert r.dankar_model == "pitman" and r.dankar == r.estimates["pitman"]  # pi <= 0.1


def test_pitman_without_a_maximum_falls_back_to_zayatz():
    # every record unique: the likelihood grows towards alpha = 1, there is no maximum inside
    fit = P.pitman_fit({1: 10})
    assert not fit.converged and math.isnan(fit.theta)
    r = P.population_uniqueness({1: 10}, 0.05)
    assert math.isnan(r.estimates["pitman"])
    assert r.dankar_model == "zayatz" and r.dankar == pytest.approx(10 / 0.05)  # all of them population uniques
    assert any("Pitman" in n for n in r.notes)


# ---------------------------------------------------------------- SNB
def test_snb_closed_forms_against_a_direct_sum():
    # F = 1 + Y, Y ~ NB(alpha, beta) (scipy: nbinom(n=alpha, p=beta)); f | F ~ Binomial(F, pi)
    for alpha, beta, pi in ((0.7, 0.3, 0.2), (2.5, 0.6, 0.05), (0.15, 0.12, 0.5), (1.0, 0.5, 1.0)):
        y = np.arange(0, 20000)
        pF = stats.nbinom.pmf(y, alpha, beta)
        F = y + 1
        p1 = float((pF * stats.binom.pmf(1, F, pi)).sum())
        p2 = float((pF * stats.binom.pmf(2, F, pi)).sum())
        got = P.snb_class_probabilities(alpha, beta, pi)
        assert got[0] == pytest.approx(p1, rel=1e-9) and got[1] == pytest.approx(p2, rel=1e-9)


def test_shlosser_by_hand():
    # q = 1/2 on SMALL (c_1 = 3, c_2 = 2, c_3 = 1, u = 6):
    # sum i q^2 (1-q^2)^(i-1) c_i   = 0.75 + 0.75 + 0.421875   = 1.921875
    # sum (1-q)^i ((1+q)^i - 1) c_i = 0.75 + 0.625 + 0.296875  = 1.671875
    # sum (1-q)^i c_i               = 1.5 + 0.5 + 0.125        = 2.125
    # sum i q (1-q)^(i-1) c_i       = 1.5 + 1 + 0.375          = 2.875
    expected = 6 + 3 * (1.921875 / 1.671875) * (2.125 / 2.875) ** 2
    assert P.shlosser_classes(SMALL, 0.5) == pytest.approx(expected, rel=1e-12)
    # ARX's code: sum (1-q)^i (1+q)^i c_i - 1 per size = 2.25 - 1 + 0.5625*2 - 1 + 0.421875 - 1
    arx = 6 + 3 * (1.921875 / (0.75 * 3 - 1 + 0.5625 * 2 - 1 + 0.421875 - 1)) * (2.125 / 2.875) ** 2
    assert P.shlosser_classes(SMALL, 0.5, arx=True) == pytest.approx(arx, rel=1e-12)
    assert P.shlosser_classes(SMALL, 1.0) == 6


def test_snb_fit_solves_its_equations_and_uniques_by_hand():
    pi = 0.3
    fit = P.snb_fit(HEAVY, pi)
    assert fit.converged and fit.alpha > 0 and 0 < fit.beta < 1
    p1, p2 = P.snb_class_probabilities(fit.alpha, fit.beta, pi)
    assert fit.K * p1 == pytest.approx(HEAVY[1], rel=1e-8) and fit.K * p2 == pytest.approx(HEAVY[2], rel=1e-8)
    assert fit.K == pytest.approx(P.shlosser_classes(HEAVY, pi))
    assert P.snb_uniques(HEAVY, pi) == pytest.approx(fit.K * fit.beta**fit.alpha, rel=1e-12)


def test_snb_without_classes_of_two_has_no_estimate():
    fit = P.snb_fit({1: 5, 3: 2}, 0.3)
    assert not fit.converged and math.isnan(P.snb_uniques({1: 5, 3: 2}, 0.3))


# ---------------------------------------------------------------- Dankar's rule and pi = 1
def test_dankar_rule_above_a_tenth_takes_the_smaller_of_zayatz_and_snb():
    for pi in (0.2, 0.3, 0.5, 0.9):
        r = P.population_uniqueness(HEAVY, pi)
        z, s = r.estimates["zayatz"], r.estimates["snb"]
        assert not math.isnan(s)
        assert r.dankar == min(z, s) and r.dankar_model == ("zayatz" if z < s else "snb")


def test_sampling_fraction_one_gives_the_sample_uniques():
    for freq in (SMALL, HEAVY, {1: 4, 2: 1, 7: 1}):
        r = P.population_uniqueness(freq, 1.0)
        assert all(r.estimates[m] == freq[1] for m in P.MODELS) and r.dankar == freq[1]
        assert r.share("dankar") == pytest.approx(freq[1] / _n(freq))
        # Zayatz and SNB reach it by their own formulas (Pitman's is asymptotic: not evaluated there)
        assert P.zayatz_uniques(freq, 1.0) == pytest.approx(freq[1], rel=1e-12)
        assert P.snb_uniques(freq, 1.0) == pytest.approx(freq[1], rel=1e-8)
    r = P.population_uniqueness(SMALL, population_size=_n(SMALL))
    assert r.pi == 1.0 and r.dankar == SMALL[1]


def test_no_sample_uniques_no_population_uniques():
    r = P.population_uniqueness({2: 4, 5: 1}, 0.01)
    assert r.dankar == 0 and all(v == 0 for v in r.estimates.values()) and r.dankar_model is None


# ---------------------------------------------------------------- published figures (ARX)
def test_arx_published_figures_on_full_adult(shared_data):
    # ARX's TestRiskMetrics.testDecisionRule2: adult.csv, every attribute with a hierarchy a QI,
    # population = rows / pi; ARX compares four significant digits. ARX's SNB (its code's
    # formulas) does not converge there: its rule picks Pitman (pi <= 0.1) or Zayatz.
    from ppdm_dask.data.uci import load_adult

    df, _ = load_adult(full=True)
    attrs = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation", "salary-class"]
    freq = df.groupby(attrs).size().value_counts()
    assert P.population_uniqueness(freq, 1.0).share("dankar") == pytest.approx(0.5142895033485844, abs=1e-12)
    published = {0.1: ("pitman", 0.27684993883653597), 0.01: ("pitman", 0.1446083531167384), 0.2: ("zayatz", 0.3577099234829125)}
    for pi, (model, value) in published.items():
        arx = P.population_uniqueness(freq, pi, arx_snb=True)
        assert math.isnan(arx.estimates["snb"])
        assert arx.dankar_model == model and arx.share("dankar") == pytest.approx(value, abs=1e-9)
    assert P.population_uniqueness(freq, 0.1).share("zayatz") == pytest.approx(0.3207402393466189, abs=1e-9)
    # with the published SNB formulas the equations do have a solution on this table, and at
    # pi = 0.2 it is below Zayatz's, so the rule picks SNB
    ours = P.population_uniqueness(freq, 0.2)
    assert ours.dankar_model == "snb" and ours.share("snb") < 0.3577099234829125


# ---------------------------------------------------------------- sdcMicro's individual risk
def test_individual_risk_by_hand():
    # p = f / F; f = 1: p/(1-p) log(1/p); f = 2: p/(1-p) - (p/(1-p))^2 log(1/p); f >= 3: p / (f - (1 - p))
    f = np.array([1, 2, 3, 4, 2])
    F = np.array([4.0, 8.0, 12.0, 4.0, 1.0])  # the last: weights summing below f count as F = f
    r = P.individual_risk(f, F)
    assert r[0] == pytest.approx((1 / 4) / (3 / 4) * math.log(4))
    assert r[1] == pytest.approx((1 / 3) - (1 / 3) ** 2 * math.log(4))  # p = 1/4: p/(1-p) = 1/3
    assert r[2] == pytest.approx(0.25 / (3 - 0.75))
    assert r[3] == pytest.approx(1 / 4)  # p = 1: the class is its population, 1 / f
    assert r[4] == pytest.approx(1 / 2)
    # near p = 1 the closed forms tend to 1 / f
    assert P.individual_risk([1, 2], [1.000001, 2.000002]) == pytest.approx([1.0, 0.5], abs=1e-5)


def test_weighted_risk_on_a_weighted_toy_table():
    # records: classes A (1 record, weight 10), B (2 records, weights 5 + 15), C (3 records, weight 4 each)
    toy = pd.DataFrame({"q": ["A", "B", "B", "C", "C", "C"], "w": [10.0, 5, 15, 4, 4, 4]})
    classes = toy.groupby("q")["w"].agg(["size", "sum"]).rename(columns={"size": "f", "sum": "F"}).reset_index()
    w = P.weighted_risk(classes, threshold=0.2)
    rA = (0.1 / 0.9) * math.log(10)
    rB = (0.1 / 0.9) - (0.1 / 0.9) ** 2 * math.log(10)
    rC = 0.25 / (3 - 0.75)
    assert w.expected == pytest.approx(rA + 2 * rB + 3 * rC)
    assert w.share == pytest.approx((rA + 2 * rB + 3 * rC) / 6)
    assert w.highest == pytest.approx(max(rA, rB, rC))
    assert w.above == (1 if rA > 0.2 else 0) + (2 if rB > 0.2 else 0) + (3 if rC > 0.2 else 0)
    assert w.population == pytest.approx(42.0)

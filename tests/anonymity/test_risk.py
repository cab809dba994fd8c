"""The report's population figures and riskiest quasi-identifier combinations
(ppdm_dask.anonymity.risk.population_figures, .combinations; docs/anonymity.md#population-risk):
the combinations against a brute-force pandas group-by over every subset of the raw records,
the report's population values against the models run on class sizes recounted with pandas, the
sdcMicro risk against a hand computation, and the options' errors."""

from __future__ import annotations

import itertools
import math

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import KAnonymizer
from ppdm_dask.anonymity import combinations as C
from ppdm_dask.anonymity import population as P
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.uci import ADULT_QI, load_adult
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.random import Key

from .test_basics import PATIENTS, QI, published
from .test_report_figures import kishor_moved, wrap


def items(figures):
    return {i.id: i for i in (*figures.risk, *figures.utility)}


# ---------------------------------------------------------------- combinations: brute force
def brute_force(records: pd.DataFrame, qi, k):
    """Every subset of ``qi`` grouped with pandas on the records themselves."""
    n = len(records)
    out = {}
    for r in range(1, len(qi) + 1):
        for s in itertools.combinations(qi, r):
            sizes = records.groupby(list(s)).size()
            out[", ".join(s)] = (
                len(sizes),
                len(sizes) / n,
                1 - float((sizes * (sizes - 1)).sum()) / (n * (n - 1)),
                float(sizes[sizes == 1].sum()) / n,
                float(sizes[sizes < k].sum()) / n,
            )
    return out


@pytest.mark.parametrize("k", [2, 3])
def test_combinations_against_brute_force(k):
    df, _ = load_adult()
    qi = ["sex", "age", "race", "education", "workclass"]
    records = df[qi].astype(str)
    # the class table the report holds: one row per distinct tuple, here split in two halves to
    # check repeated tuples are added up
    half = len(records) // 2
    classes = pd.concat(
        [
            records.iloc[:half].groupby(qi).size().rename("count").reset_index(),
            records.iloc[half:].groupby(qi).size().rename("count").reset_index(),
        ],
        ignore_index=True,
    )
    table, cut = C.combination_risk(classes, qi, "count", k)
    want = brute_force(records, qi, k)
    assert not cut and len(table) == 31 == len(want)
    for _, row in table.iterrows():
        exp = want[row["quasi-identifiers"]]
        assert row["classes"] == exp[0]
        assert [row["distinction"], row["separation"], row["uniques"], row["below_k"]] == pytest.approx(list(exp[1:]))
    # sorted from the riskiest
    u = table["uniques"].to_numpy()
    assert (np.diff(u) <= 1e-15).all() and table.iloc[0]["uniques"] == max(v[3] for v in want.values())


def test_subsets_are_capped():
    qi = [f"q{i}" for i in range(12)]
    subs, cut = C.subsets(qi)
    assert cut and len(subs) == C.MAX_SUBSETS and tuple(qi) in subs
    assert [len(s) for s in subs[:12]] == [1] * 12 and len(set(subs)) == len(subs)
    assert sorted(len(s) for s in subs[:-1]) == [len(s) for s in subs[:-1]]  # the smallest first
    subs, cut = C.subsets(qi[:4])
    assert not cut and len(subs) == 15


# ---------------------------------------------------------------- the report's figures
def test_report_without_a_sampling_fraction_says_what_it_needs():
    f = wrap(published()).report_figures()
    assert any("--sampling-fraction" in n and "--population-size" in n for n in f.notes)
    assert "risk_population_uniques" not in items(f)
    assert "risk_qi_combinations" in items(f)  # needs no sampling fraction


def test_report_population_values_match_the_models_on_recounted_classes():
    t = kishor_moved()  # classes of 2, 2, 2, 1, 3 records on (Age band, Gender, State)
    f = wrap(t).report_figures(sampling_fraction=0.3)
    sizes = t.groupby(QI).size()
    want = P.population_uniqueness(sizes.value_counts(), 0.3)
    got = items(f)
    for m in P.MODELS:
        v = got[f"risk_population_uniques_{m}"].value
        assert (math.isnan(v) and math.isnan(want.share(m))) or v == pytest.approx(want.share(m))
    assert got["risk_population_uniques"].value == pytest.approx(want.share("dankar"))
    assert f"picks {want.dankar_model}" in got["risk_population_uniques"].note
    assert got["risk_sampling_fraction"].value == 0.3
    # Zayatz by hand (n = 10, N = 10 / 0.3 -> 33 records): Kishor is the only sample unique
    N, n = 33, 10
    from scipy.stats import hypergeom

    p = {j: hypergeom.pmf(1, N, j, n) for j in (1, 2, 3)}
    cond = p[1] / (p[1] + 3 * p[2] + p[3])
    assert got["risk_population_uniques_zayatz"].value == pytest.approx(cond / 0.3 / (n / 0.3))
    assert any("unique in the population" in w for w in f.warnings)  # Kishor: an estimated population unique


def test_report_population_size_and_original():
    t = published()
    f = wrap(t).report_figures(PATIENTS, population_size=40)
    got = items(f)
    # a 2-anonymous release has no sample uniques: no population uniques whatever the model
    assert got["risk_population_uniques"].value == 0 and got["risk_sampling_fraction"].value == pytest.approx(10 / 40)
    # the original (exact ages) on the same QIs: 6 sample uniques among 10 records
    raw = PATIENTS.groupby(QI).size()
    want = P.population_uniqueness(raw.value_counts(), population_size=40)
    assert got["risk_original_population_uniques"].value == pytest.approx(want.share("dankar"))
    assert got["risk_original_population_uniques"].about == "original"
    comb = got["risk_original_qi_combinations"]
    brute = brute_force(PATIENTS[QI].astype(str), QI, 2)
    top = comb.rows[0]
    assert top[5] == pytest.approx(max(v[3] for v in brute.values()))
    assert {r[0] for r in comb.rows} == set(brute)  # 7 subsets, all shown


def test_report_weights_published_and_in_the_original():
    t = kishor_moved()
    weights = np.array([3.0, 5, 2, 8, 4, 6, 2, 10, 7, 1])
    released, original = t.assign(w=weights), PATIENTS.assign(w=weights)
    f = wrap(released).report_figures(original, weights="w", sampling_fraction=0.2)
    got = items(f)
    # the release's classes with their weight sums, recounted with pandas; the risk by hand
    cl = released.groupby(QI)["w"].agg(["size", "sum"])
    r = []
    for fk, Fk in cl.itertuples(index=False):
        p = fk / Fk
        r += [
            (p / (1 - p)) * math.log(1 / p)
            if fk == 1
            else (p / (1 - p)) - (p / (1 - p)) ** 2 * math.log(1 / p)
            if fk == 2
            else p / (fk - (1 - p))
        ] * fk
    assert got["risk_weighted_expected"].value == pytest.approx(sum(r))
    assert got["risk_weighted_global"].value == pytest.approx(sum(r) / 10)
    assert got["risk_weighted_max"].value == pytest.approx(max(r))
    assert got["risk_weighted_above"].value == sum(x > 0.2 for x in r)
    assert "risk_original_weighted_expected" in got
    # weights only in the original: the release's individual risk is not claimed, a note says why
    g = wrap(t).report_figures(original, weights="w")
    assert "risk_weighted_expected" not in items(g) and "risk_original_weighted_expected" in items(g)
    assert any("not published" in n for n in g.notes)


def test_report_option_errors():
    t = published()
    with pytest.raises(InvalidParameter, match="sampling fraction 1.5"):
        wrap(t).report_figures(sampling_fraction=1.5)
    with pytest.raises(InvalidParameter, match="smaller than the table's 10 records"):
        wrap(t).report_figures(population_size=5)
    with pytest.raises(InvalidParameter, match="weight column 'nope'") as e:
        wrap(t).report_figures(PATIENTS, weights="nope")
    assert "--weight-column" in cli_message(e.value)
    with pytest.raises(InvalidParameter, match="2 missing or non-numeric values"):
        wrap(t).report_figures(PATIENTS.assign(w=["1", "x", "2", None, "3", "1", "1", "1", "1", "1"]), weights="w")


def test_report_population_figures_do_not_depend_on_partitions():
    df, hier = load_adult()
    qi = list(ADULT_QI)[:4]
    df, hier = df[qi + ["salary-class"]], {a: h for a, h in hier.items() if a in qi}
    rel = KAnonymizer(qi, k=3, sensitive="salary-class", hierarchies=hier, method="mondrian", key=Key(2)).fit_release(df)
    out = []
    for parts in (1, 3):
        f = rel.report_figures(dd.from_pandas(df, npartitions=parts), hierarchies=hier, sampling_fraction=0.05)
        out.append([i.to_dict() for i in f.risk if "population" in i.id or "combinations" in i.id])
    assert out[0] == out[1] and out[0]

"""The officer's summary of condensed releases (ppdm_dask.condensation.threat): every attack's
success recomputed independently — nearest neighbours by the full distance matrix in numpy,
copies by a pandas merge, records rebuilt against the condenser's private membership — and in
agreement with the bounds of tests/condensation/test_attacks.py (nothing rebuilt at the
defaults, membership flagged at levels 2-6 and not at 10-20, the original as pseudo-data
refused)."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from ppdm_dask.condensation import Condenser, privacy_levels
from ppdm_dask.condensation import threat as T
from ppdm_dask.condensation.release import GROUPS_FILE
from ppdm_dask.random import Key
from ppdm_dask.release import Release
from ppdm_dask.report.decision import decide
from ppdm_dask.report.units import percent
from ppdm_dask.verification import verify
from tests.release.helpers import forge_part, manifest_of


def _mixture(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(6, d))
    return c[rng.integers(6, size=n)] + rng.standard_normal((n, d)) * [1.0, 3.0, 0.5][:d]


def _frame(n=300, seed=7):
    return pd.DataFrame(_mixture(n, seed=seed), columns=["a", "b", "c"])


def _attacks(fig):
    return {a.id: a for a in fig.attacks}


@pytest.fixture(scope="module")
def condensed():
    df = _frame()
    rel = Condenser(privacy_levels=(2, 5), key=Key(4)).fit(df).release()
    return df, rel, rel.report_figures(df)


def test_attacks_recomputed_by_brute_force(condensed):
    df, rel, fig = condensed
    a = _attacks(fig)
    assert set(a) == {"attack_reconstruction", "attack_copies", "attack_dcr", "attack_membership", "attack_attribute"}
    assert all(x.about == "comparison" for k, x in a.items() if k != "attack_reconstruction")
    P, X = rel.data.compute().to_numpy(), df.to_numpy()
    N = len(X)
    # distance to closest record: the full distance matrices
    dcr = np.sqrt(((P[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    XX = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(XX, np.inf)
    nn5 = np.percentile(XX.min(axis=1), 5)
    assert a["attack_dcr"].success == pytest.approx(np.mean(dcr < nn5))
    assert a["attack_dcr"].baseline == 0.05 and a["attack_dcr"].threshold == T.DCR_THRESHOLD
    # copies of unique originals: a pandas merge of the pseudo-records with the originals seen once
    orig = df.assign(_n=1).groupby(["a", "b", "c"], as_index=False)["_n"].sum()
    copies = pd.DataFrame(P, columns=["a", "b", "c"]).merge(orig[orig["_n"] == 1], on=["a", "b", "c"])
    assert a["attack_copies"].success == len(copies) / N == 0 and not a["attack_copies"].flagged
    # membership: the balanced accuracy of the measured advantage, its chance level by hand
    adv = next(v for v in fig.risk if v.id == "membership_advantage").value
    assert a["attack_membership"].success == pytest.approx(0.5 + adv / 2) and a["attack_membership"].baseline == 0.5
    assert a["attack_membership"].threshold == pytest.approx(0.05 + 0.5 * 0.8687 * np.sqrt(300 / 150**2))
    # no statistics published: nothing rebuilt (test_attacks: 0 at the defaults)
    assert a["attack_reconstruction"].success == 0 and a["attack_reconstruction"].about == "release"


def _attribute_oracle(P, X, tol=0.1):
    """Per attribute: the share of records whose value the nearest pseudo-record on the other
    attributes (standardised) gives within tol sd, and the same from the nearest other original."""
    sd = X.std(axis=0)
    Ps, Xs = P / sd, X / sd
    success, baseline = [], []
    for j in range(X.shape[1]):
        o = [c for c in range(X.shape[1]) if c != j]
        dp = ((Xs[:, None, o] - Ps[None, :, o]) ** 2).sum(axis=2)
        do = ((Xs[:, None, o] - Xs[None, :, o]) ** 2).sum(axis=2)
        np.fill_diagonal(do, np.inf)
        success.append(np.mean(np.abs(P[dp.argmin(axis=1), j] - X[:, j]) <= tol * sd[j]))
        baseline.append(np.mean(np.abs(X[do.argmin(axis=1), j] - X[:, j]) <= tol * sd[j]))
    return np.array(success), np.array(baseline)


def test_attribute_attack_by_brute_force(condensed):
    df, rel, fig = condensed
    attack = _attacks(fig)["attack_attribute"]
    P, X = rel.data.compute().to_numpy(), df.to_numpy()
    success, baseline = _attribute_oracle(P, X)  # every record targeted: 300 < ATTRIBUTE_SAMPLE
    j = ["a", "b", "c"].index(attack.name.split("(")[1].split(" ")[0])
    assert attack.success == pytest.approx(success[j]) and attack.baseline == pytest.approx(baseline[j])
    for c, name in enumerate("abc"):
        assert f"{name} {percent(success[c])} (others {percent(baseline[c])})" in attack.found
    assert attack.threshold > T.ATTRIBUTE_THRESHOLD  # plus the sampling noise
    # the same figures whatever the partitioning of the pseudo-data and of the original
    pseudo = rel.data.compute()
    rel3 = Condenser(privacy_levels=(2, 5), key=Key(4)).fit(df).release()
    rel3.data, rel3.partition_rows = dd.from_pandas(pseudo, npartitions=3), None
    X3 = rel3._original_arrays(dd.from_pandas(df, npartitions=4))[0].rechunk({1: -1})
    again, _ = T.attribute_attack(rel3, X3)
    assert again == attack


@pytest.mark.parametrize("levels, flagged", [((2, 6), True), ((10, 20), False)])
def test_membership_flagged_as_measured(levels, flagged):
    """test_attacks.py::test_membership_advantage_bounds: above 0.1 at levels 2-6, at most 0.1 at 10-20."""
    df = pd.DataFrame(_mixture(2000, seed=0), columns=["a", "b", "c"])
    rel = Condenser(privacy_levels=levels, key=Key(1)).fit(df).release()
    fig = rel.report_figures(df)
    a = _attacks(fig)["attack_membership"]
    assert a.flagged is flagged
    assert (2 * a.advantage > 0.1) is flagged
    colour = decide(rel.guarantee_checks(df), fig.attacks, fig.warnings).colour
    assert colour == "amber" if flagged else colour in ("green", "amber")


def _earlier_layout(folder, groups) -> None:
    """_groups.parquet as releases before statistics were withheld wrote it (every group's n, Fs, Sc)."""
    d = groups.d
    forge_part(
        folder,
        GROUPS_FILE,
        pa.table(
            {
                "n": pa.array(groups.n),
                "Ps": pa.array(groups.ps),
                "Fs": pa.FixedSizeListArray.from_arrays(pa.array(groups.Fs.reshape(-1)), d),
                "Sc": pa.FixedSizeListArray.from_arrays(pa.array(groups.Sc.reshape(-1)), d * d),
                "p_max": pa.array(groups.req),
            }
        ),
    )


def test_reconstruction_attack_by_hand(tmp_path):
    X = _mixture(400, seed=3)
    cond = Condenser(privacy_levels=(2, 6), key=Key(101)).fit(X)
    rel = cond.release()
    rel.write(str(tmp_path / "now"))
    now = Release.open(str(tmp_path / "now")).report_figures()
    assert _attacks(now)["attack_reconstruction"].success == 0  # statistics withheld: nothing to rebuild
    rel.write(str(tmp_path / "earlier"))
    _earlier_layout(tmp_path / "earlier", cond.groups_)
    size = np.bincount(cond._labels)[cond._labels]  # oracle: the private membership
    rebuilt = int(np.count_nonzero(size <= 2))
    attack, recovered = T.reconstruction_attack(Release.open(str(tmp_path / "earlier")), X)
    assert attack.success == pytest.approx(rebuilt / 400) and attack.flagged and rebuilt > 0
    assert recovered.value == rebuilt and recovered.about == "comparison" and attack.about == "release"
    # large groups' statistics published: none of them determines its members
    big = Condenser(privacy_levels=(2, 12), key=Key(3), publish_statistics=True).fit(X).release()
    fig = big.report_figures()
    assert _attacks(fig)["attack_reconstruction"].success == 0
    assert any("statistics published" in w for w in fig.warnings)
    assert decide(big.guarantee_checks(), fig.attacks, fig.warnings).colour == "amber"


def _forge_originals(folder, X, columns) -> None:
    start = 0
    for part in manifest_of(folder)["partitions"]:
        r = int(part["rows"])
        forge_part(folder, part["file"], pa.table({c: X[start : start + r, j] for j, c in enumerate(columns)}))
        start += r


def test_a_forged_release_is_flagged(tmp_path):
    df = _frame(240, seed=5)
    X = df.to_numpy()
    Condenser(privacy_levels=(2, 6), key=Key(7)).fit(df).release().write(str(tmp_path / "r"), rows_per_file=100)
    _forge_originals(tmp_path / "r", X, list(df.columns))
    forged = Release.open(str(tmp_path / "r"))
    alone = forged.report_figures()
    assert [a.id for a in alone.attacks] == ["attack_reconstruction"] and any("--original" in n for n in alone.notes)
    fig = forged.report_figures(df)
    a = _attacks(fig)
    assert a["attack_copies"].success == 1.0 and a["attack_copies"].flagged
    assert a["attack_dcr"].success == 1.0 and a["attack_dcr"].flagged
    assert a["attack_attribute"].success == 1.0 and a["attack_attribute"].flagged
    decision = decide(verify(str(tmp_path / "r"), original=df).checks, fig.attacks, fig.warnings)
    assert decision.colour == "red" and decision.risks[0].id in {"attack_copies", "attack_dcr", "attack_attribute"}


def test_summary_words_carry_this_release(condensed):
    df, rel, fig = condensed
    n = rel.published["n"]
    assert f"{int(n.sum()):,} records in {len(n):,} groups, the smallest of {int(n.min())}" in fig.guarantee
    assert "privacy levels drawn from 2-5" in fig.guarantee and fig.protects
    learn = {t.id: t.text for t in fig.learn}
    k = int(n.min())
    smallest = learn["learn_smallest_level"]
    assert "smallest privacy level, 2," in smallest and f"1/{k} = {1 / k:.2f}" in smallest
    assert f"{len(n):,} groups" in learn["learn_groups"]
    # what needs the original stays out of the external report
    about = {t.id: t.about for t in fig.learn}
    assert about["learn_membership"] == about["learn_location"] == about["learn_attribute"] == "comparison"
    assert about["learn_smallest_level"] == about["learn_groups"] == "release"
    # the quality score (a single-number comparison score) first, then the family's own figures
    assert fig.headline == ["utility_quality_score", "covariance_compatibility"] and not fig.warnings
    # with a class column the 1-NN accuracies join the headline
    df2 = df.assign(label=(df["a"] > 0).astype(float))
    p = privacy_levels(len(df2), 2, 5, key=1)
    fig2 = Condenser(key=Key(4)).fit(df2, p).release().report_figures(df2)
    assert fig2.headline == ["utility_quality_score", "covariance_compatibility", "nn_accuracy_pseudo"]
    assert set(fig2.headline) <= {v.id for v in fig2.utility}
    assert "levels were given per record" not in fig2.guarantee and "per-record privacy levels" in fig2.guarantee


def test_a_headline_chosen_before_comes_first(condensed):
    """A quality score the figures already put in the headline stays first, once."""
    from ppdm_dask.release.figures import Figures, Value

    df, rel, fig = condensed
    score = Value("quality_score", "Quality score", 0.9, about="comparison", score=True)
    base = Figures(risk=list(fig.risk), utility=fig.utility + [score], headline=["quality_score"])
    out = T.with_summary(rel, base)
    assert out.headline == ["quality_score", "utility_quality_score", "covariance_compatibility"]
    assert [a.id for a in out.attacks] == ["attack_reconstruction"]  # no original given here

"""Attacks on condensed releases (docs/condensation.md#what-an-attacker-can-still-learn): records
rebuilt from published group statistics — many in the layout that published every group's
n, Fs, Sc, none at the defaults, none from the statistics of groups of more than d + 1 records;
a release whose pseudo-data are the original records fails verify --original; the
membership-inference advantage stays within its measured bounds. Oracles: the condenser's
private membership (which records share a group), hand-computed groups, brute-force
thresholds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from ppdm_dask.cli import cli
from ppdm_dask.condensation import Condenser, StreamingCondenser, privacy_levels
from ppdm_dask.condensation.attacks import (
    _best_threshold,
    membership_advantage,
    reconstruct_records,
    records_recovered,
    solve_groups,
)
from ppdm_dask.condensation.release import COPY_CHECK, GROUPS_FILE, STATISTICS_CHECK, STATISTICS_FILE, read_statistics
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.random import Key
from ppdm_dask.verification import verify
from tests.release.helpers import forge_part, manifest_of

ECOLI = ["mcg", "gvh", "lip", "chg", "aac", "alm1", "alm2"]


def _mixture(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(6, d))
    return c[rng.integers(6, size=n)] + rng.standard_normal((n, d))


def _inputs():
    ecoli = pd.read_csv(sample_path("ecoli"))[ECOLI]
    gen = pd.DataFrame(_mixture(1500, d=3, seed=8), columns=["a", "b", "c"])
    return {"ecoli": ecoli, "generated": gen}


def _earlier_layout(folder, groups) -> None:
    """Rewrite ``_groups.parquet`` as the layout before this change published it: n, Ps, Fs, Sc
    and p_max of every group (checksums updated, as an old release on disk)."""
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


def test_solve_groups_by_hand():
    # two records (1, 2) and (3, 6): n = 2, Fs = (4, 8), Sc = (1,2)(1,2)ᵀ + (3,6)(3,6)ᵀ
    a, b = np.array([1.0, 2.0]), np.array([3.0, 6.0])
    one = np.array([7.0, -1.0])
    same = np.array([0.5, 0.25])
    three = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    n = [2, 1, 4, 3]
    Fs = [a + b, one, 4 * same, three.sum(0)]
    Sc = [np.outer(a, a) + np.outer(b, b), np.outer(one, one), 4 * np.outer(same, same), three.T @ three]
    rec = solve_groups(n, Fs, Sc)
    assert rec.solved_groups == 3 and rec.groups == 4  # a group of three records is not determined
    got = {tuple(np.round(r, 12)) for r in rec.records}
    assert got == {(1.0, 2.0), (3.0, 6.0), (7.0, -1.0), (0.5, 0.25)}
    assert records_recovered(rec, np.vstack([a, b, one, three])) == 3


@pytest.mark.parametrize("data", ["ecoli", "generated"])
def test_records_rebuilt_from_the_earlier_layout_and_none_at_defaults(tmp_path, data):
    df = _inputs()[data]
    X = df.to_numpy(float)
    cond = Condenser(privacy_levels=(2, 6), key=Key(101)).fit(df)
    rel = cond.release()
    rel.write(str(tmp_path / "now"))
    # the defaults publish no statistics: nothing to rebuild
    assert read_statistics(str(tmp_path / "now")) is None
    assert records_recovered(reconstruct_records(str(tmp_path / "now")), X) == 0
    # the same release in the layout before this change: every record of a group of two comes back
    rel.write(str(tmp_path / "earlier"))
    _earlier_layout(tmp_path / "earlier", cond.groups_)
    size = np.bincount(cond._labels)[cond._labels]  # oracle: the private membership
    expected = int(np.count_nonzero(size <= 2))
    got = records_recovered(reconstruct_records(str(tmp_path / "earlier")), X)
    assert got == expected > 0
    # and verify now names the leak of such a release
    failed = {c.name: c for c in verify(str(tmp_path / "earlier")).failures()}
    assert failed[STATISTICS_CHECK].figure == int(np.count_nonzero(cond.groups_.n <= X.shape[1] + 1))


@pytest.mark.parametrize("method", ["static", "dynamic"])
def test_published_statistics_only_of_large_groups(tmp_path, method):
    X = _mixture(1500, d=3, seed=9)
    p = privacy_levels(1500, 2, 12 if method == "static" else 4, key=4)  # groups on both sides of d + 1
    est = (
        Condenser(key=Key(3), publish_statistics=True)
        if method == "static"
        else StreamingCondenser(key=Key(3), publish_statistics=True)
    )
    rel = est.fit(X, p).release()
    man = rel.write(str(tmp_path / "s"))
    assert man["release"]["parameters"]["publish_statistics"] is True and man["statistics"] == STATISTICS_FILE
    stats = read_statistics(str(tmp_path / "s"))
    d = 3
    large = rel.groups.n > d + 1
    assert 0 < len(stats) == int(large.sum()) < len(rel.groups)  # the small groups are left out and counted
    assert sorted(stats.n.tolist()) == sorted(rel.groups.n[large].tolist())
    np.testing.assert_allclose(np.sort(stats.Fs[:, 0]), np.sort(rel.groups.Fs[large, 0]), rtol=1e-12)
    summary = man["summary"]["privacy"]
    assert summary["statistics_published"] == int(large.sum()) and summary["statistics_withheld"] == int((~large).sum())
    assert records_recovered(reconstruct_records(str(tmp_path / "s")), X) == 0
    v = verify(str(tmp_path / "s"), original=(X, p))
    assert v.ok and v[STATISTICS_CHECK].figure == 0, v.lines(failed_only=True)


def test_a_small_group_added_to_the_statistics_is_named(tmp_path):
    X = _mixture(800, d=3, seed=10)
    p = privacy_levels(800, 2, 12, key=5)
    cond = Condenser(key=Key(3), publish_statistics=True).fit(X, p)
    cond.release().write(str(tmp_path / "s"))
    g = cond.groups_.take(cond.groups_.n <= 4)  # a group of at most d + 1 records
    stats = read_statistics(str(tmp_path / "s"))
    forge_part(
        tmp_path / "s",
        STATISTICS_FILE,
        pa.table(
            {
                "n": pa.array(np.concatenate([stats.n, g.n[:1]])),
                "Fs": pa.FixedSizeListArray.from_arrays(pa.array(np.concatenate([stats.Fs, g.Fs[:1]]).reshape(-1)), 3),
                "Sc": pa.FixedSizeListArray.from_arrays(pa.array(np.concatenate([stats.Sc, g.Sc[:1]]).reshape(-1)), 9),
            }
        ),
    )
    failed = {c.name: c for c in verify(str(tmp_path / "s")).failures()}
    assert failed[STATISTICS_CHECK].figure == 1 and failed[STATISTICS_CHECK].where.startswith(STATISTICS_FILE)


def _forge_originals(folder, X, columns, noise=0.0) -> None:
    """Replace the pseudo-data by the original records (optionally moved by ``noise`` relative),
    rewriting the checksums: only a look at the rows can tell."""
    start = 0
    for part in manifest_of(folder)["partitions"]:
        r = int(part["rows"])
        rows = X[start : start + r] * (1.0 + noise)
        forge_part(folder, part["file"], pa.table({c: rows[:, j] for j, c in enumerate(columns)}))
        start += r


@pytest.mark.parametrize("noise", [0.0, 1e-12])
def test_verify_with_the_original_refuses_the_original_as_pseudo_data(tmp_path, noise):
    ecoli = _inputs()["ecoli"]
    X = ecoli.to_numpy(float)
    Condenser(privacy_levels=(2, 6), key=Key(7)).fit(ecoli).release().write(str(tmp_path / "r"), rows_per_file=200)
    assert verify(str(tmp_path / "r"), original=ecoli).ok
    _forge_originals(tmp_path / "r", X, ECOLI, noise)
    assert verify(str(tmp_path / "r")).ok  # the files alone cannot tell (NOT CHECKED: the copies)
    failed = {c.name: c for c in verify(str(tmp_path / "r"), original=ecoli).failures()}
    assert set(failed) == {COPY_CHECK} and failed[COPY_CHECK].figure == len(np.unique(X, axis=0))
    csv = tmp_path / "ecoli.csv"
    ecoli.to_csv(csv, index=False)
    r = CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", "verify", str(tmp_path / "r"), "--original", str(csv)])
    assert r.exit_code != 0 and f"FAILED {COPY_CHECK}" in r.output


def test_one_copied_record_is_counted(tmp_path):
    X = _mixture(600, seed=11)
    p = privacy_levels(600, 2, 6, key=6)
    Condenser(key=Key(2)).fit(X, p).release().write(str(tmp_path / "r"), rows_per_file=600)
    part = manifest_of(tmp_path / "r")["partitions"][0]["file"]
    t = pd.read_parquet(tmp_path / "r" / part)
    t.iloc[17] = X[123]
    forge_part(tmp_path / "r", part, pa.Table.from_pandas(t, preserve_index=False))
    check = verify(str(tmp_path / "r"), original=(X, p))[COPY_CHECK]
    assert not check.ok and check.figure == 1 and "1 exactly" in check.detail


def test_best_threshold_against_brute_force():
    rng = np.random.default_rng(0)
    m, h = rng.random(40), rng.random(50) + 0.3
    adv, tpr, fpr, t = _best_threshold(m, h)
    best = max((np.mean(m <= s) - np.mean(h <= s), s) for s in np.concatenate([m, h]))
    assert adv == pytest.approx(best[0]) and tpr - fpr == pytest.approx(adv) and np.mean(m <= t) == pytest.approx(tpr)


def test_membership_advantage_bounds():
    """The DCR attacker against half the records condensed (measured: 0.20-0.22 at levels 2-6,
    0.03-0.07 at 10-20 over keys; 0.03 between two samples of 1000 from one distribution)."""
    X = _mixture(2000, seed=0)

    def attack(low, high):
        def condense(train, rows):
            rel = Condenser(privacy_levels=(low, high), rows_per_partition=None, key=Key(1)).fit(train).release()
            return rel.data.compute().to_numpy()

        return membership_advantage(X, condense, key=1)

    small, large = attack(2, 6), attack(10, 20)
    assert small.members == small.holdout == 1000
    assert 0.1 < small.advantage <= 0.3  # groups of 2-6 records: members sit measurably closer to the pseudo-data
    assert large.advantage <= 0.1 < small.advantage

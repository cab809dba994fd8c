"""Per-release randomness of condensed releases (docs/condensation.md#one-key-many-releases):
the same key, parameters and input give the same bytes at 1 and 4 partitions; another key or
other parameters give unrelated pseudo-data and orders; the input's digest is recomputed from the
original by verify and by the key holder (tables with a privacy column, drawn levels, streams)."""

from __future__ import annotations

import glob
import os

import dask.array as da
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy.spatial import cKDTree

from ppdm_dask.condensation import Condenser, StreamingCondenser, privacy_levels
from ppdm_dask.condensation.release import CondensedRelease, condensed_release
from ppdm_dask.condensation.static import construct_groups
from ppdm_dask.data.digest import content_digest
from ppdm_dask.random import Key, Tag
from ppdm_dask.release.attacks import rank_correlation
from ppdm_dask.verification import open_release, verify
from tests.release.helpers import data_bytes


def _mixture(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(6, d))
    return c[rng.integers(6, size=n)] + rng.standard_normal((n, d))


def _pseudo(folder) -> np.ndarray:
    """The pseudo-data of a written release, rows in file order."""
    files = sorted(glob.glob(os.path.join(str(folder), "part-*.parquet")))
    return pd.concat([pq.read_table(f).to_pandas() for f in files]).to_numpy()


ESTIMATORS = {
    "static": lambda **kw: Condenser(rows_per_partition=700, **kw),
    "dynamic": lambda **kw: StreamingCondenser(**kw),
}


@pytest.mark.parametrize("method", ["static", "dynamic"])
def test_same_key_parameters_and_input_give_the_same_bytes_at_1_and_4_partitions(tmp_path, method):
    X = _mixture(1200, seed=1)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    for parts in (1, 4):
        import dask.dataframe as dd

        data = dd.from_pandas(df, npartitions=parts)  # levels drawn from the release's stream key
        ESTIMATORS[method](privacy_levels=(2, 6), key=Key(3)).fit(data).release().write(
            str(tmp_path / f"p{parts}"), rows_per_file=500
        )
    one, four = data_bytes(tmp_path / "p1"), data_bytes(tmp_path / "p4")
    assert sorted(one) == sorted(four) and all(one[k] == four[k] for k in one)
    assert (
        open_release(str(tmp_path / "p1")).manifest["release"]["id"]
        == open_release(str(tmp_path / "p4")).manifest["release"]["id"]
    )


def test_another_key_or_other_parameters_give_unrelated_order(tmp_path):
    X = _mixture(3000, seed=5)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    tree = cKDTree(X)

    def closest(est, name):  # each written position -> the original its pseudo-record lies closest to
        est.fit(df).release().write(str(tmp_path / name), rows_per_file=1000)
        return tree.query(_pseudo(tmp_path / name))[1]

    base = closest(Condenser(privacy_levels=(2, 6), key=Key(9)), "base")
    again = closest(Condenser(privacy_levels=(2, 6), key=Key(9)), "again")
    np.testing.assert_array_equal(base, again)
    for name, est in (
        ("other-key", Condenser(privacy_levels=(2, 6), key=Key(10))),
        ("other-parameters", Condenser(privacy_levels=(2, 6), key=Key(9), rows_per_partition=1500)),
    ):
        other = closest(est, name)
        assert abs(rank_correlation(base, other)) < 0.05, name
        assert np.mean(base == other) < 0.01, name  # the same record's neighbourhood at the same position: chance level


def test_the_same_groups_under_two_identities_draw_unrelated_pseudo_data():
    """Pseudo-data draw from the release's stream key, not from the key itself: two releases of
    the very same groups with one key and other public parameters share no draw (earlier, both
    pseudo-data sets were the same numbers)."""
    X = _mixture(900, seed=2)
    p = privacy_levels(900, 3, 6, key=1)
    groups = Condenser(rows_per_partition=None, key=Key(4)).fit(X, p).groups_
    common = {
        "privacy_levels": "per record (not published)",
        "columns": ["x0", "x1", "x2"],
        "standardize": False,
        "publish_statistics": False,
    }
    digest = content_digest(X, p)
    a = (
        condensed_release(
            groups, method="static", parameters={**common, "rows_per_partition": None}, key=Key(4), input_digest=digest
        )
        .data.compute()
        .to_numpy()
    )
    b = (
        condensed_release(
            groups, method="static", parameters={**common, "rows_per_partition": 10_000}, key=Key(4), input_digest=digest
        )
        .data.compute()
        .to_numpy()
    )
    c = (
        condensed_release(
            groups, method="static", parameters={**common, "rows_per_partition": None}, key=Key(4), input_digest=digest
        )
        .data.compute()
        .to_numpy()
    )
    np.testing.assert_array_equal(a, c)
    # pseudo-data in group order: the draws are y - centroid, on each group's own scale
    centre = np.repeat(groups.mean, groups.n, axis=0)
    scale = np.repeat(np.sqrt(np.diagonal(groups.covariance, axis1=1, axis2=2)), groups.n, axis=0)
    ua, ub = ((a - centre) / scale).ravel(), ((b - centre) / scale).ravel()
    assert abs(rank_correlation(ua, ub)) < 0.05 and not np.isin(a.round(12), b.round(12)).any()


def test_static_streams_derive_from_the_identity():
    """Segment's draws and the drawn levels come from streams_for(key, method, parameters,
    digest of the records): recomputed here from their definitions."""
    X = _mixture(400, seed=3)
    c = Condenser(privacy_levels=(2, 5), rows_per_partition=None, key=Key(8)).fit(X)
    params = {
        "privacy_range": [2, 5],
        "columns": ["x0", "x1", "x2"],
        "rows_per_partition": None,
        "standardize": False,
        "publish_statistics": False,
    }
    skey = CondensedRelease.streams_for(Key(8), "static", params, content_digest(X, None))  # drawn levels are not input
    p = skey.generator(Tag.PRIVACY_LEVELS, 0).integers(2, 6, size=400)
    np.testing.assert_array_equal(c._privacy, p)
    labels = construct_groups(X, p, skey.generator(Tag.CONDENSE_STATIC, 0))
    np.testing.assert_array_equal(np.sort(np.bincount(labels)), np.sort(c.groups_.n))


def test_verify_and_the_key_holder_recompute_the_input_digest(tmp_path):
    """A table with a privacy column: the levels are input; verify with the key names the input,
    owner_stream_key gives the stream key of the release in memory, another input is told apart."""
    X = _mixture(500, seed=4)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(level=privacy_levels(500, 2, 6, key=2))
    rel = Condenser(privacy_column="level", key=Key(5)).fit(df).release()
    rel.write(str(tmp_path / "r"))
    written = open_release(str(tmp_path / "r"))
    assert written.owner_stream_key(Key(5), df) == rel.stream_key
    assert verify(str(tmp_path / "r"), original=df, key=Key(5))["made from this original with this key"].ok
    other = df.assign(level=np.where(np.arange(500) == 7, df["level"] + 1, df["level"]))  # one level changed
    assert not verify(str(tmp_path / "r"), original=other, key=Key(5))["made from this original with this key"].ok


def test_a_stream_is_its_records_in_arrival_order(tmp_path):
    """StreamingCondenser: the input is every record received (and its level), in arrival order,
    digested block by block; however the stream is cut, the release is the same; reordering the
    stream makes another release."""
    X = _mixture(700, seed=6)
    p = privacy_levels(700, 2, 5, key=3)

    def stream(bounds, order=None):
        Y, q = (X, p) if order is None else (X[order], p[order])
        c = StreamingCondenser(init_number=100, key=Key(2))
        for a, b in bounds:
            c.partial_fit(Y[a:b], q[a:b])
        return c.release()

    one = stream([(0, 700)])
    cut = stream([(0, 50), (50, 333), (333, 700)])
    np.testing.assert_array_equal(one.data.compute().to_numpy(), cut.data.compute().to_numpy())
    assert one.input_digest == content_digest(X, p)
    one.write(str(tmp_path / "s"))
    assert verify(str(tmp_path / "s"), original=(X, p), key=Key(2))["made from this original with this key"].ok
    fitted = StreamingCondenser(init_number=100, key=Key(2)).fit(da.from_array(X, chunks=123), p).release()
    np.testing.assert_array_equal(fitted.data.compute().to_numpy(), one.data.compute().to_numpy())
    rev = stream([(0, 700)], order=np.arange(700)[::-1])
    assert rev.stream_key != one.stream_key

"""The officer's summary of sketch releases (ppdm_dask.sketch.threat): δ translated into the
reconstruction error (the normal law by hand), and the record reconstruction attack recomputed
in numpy with the explicit ±1 sign matrix and the column means."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.random import Key
from ppdm_dask.sketch import DeltaAnonymizer, KVarianceAnonymizer
from ppdm_dask.sketch.threat import RECONSTRUCTION_THRESHOLD, attribute_sets, presence_error


def _x(n=150, d=40, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((n, d)) < 0.2).astype(np.float64)


def _tx(x, npartitions=3):
    return TransactionArray.from_scipy(sp.csr_array(x), npartitions=npartitions, columns={"label": np.arange(x.shape[0]) % 3})


def test_presence_error_by_hand():
    # δ = 0.25: standard error 0.5, the threshold 0.5 is one standard error away: Φ(−1) = 0.158655
    assert presence_error(0.25) == pytest.approx(0.1586553, abs=1e-7)
    assert presence_error(1.0) == pytest.approx(0.3085375, abs=1e-7)  # Φ(−0.5)


def test_delta_in_words():
    x = _x()
    rel = DeltaAnonymizer(0.3, key=Key(5)).fit(_tx(x)).transform(_tx(x))
    figs = rel.report_figures()
    by_id = {i.id: i for i in figs.learn}
    assert by_id["learn_attribute_standard_error"].value == pytest.approx(math.sqrt(0.3))
    assert by_id["learn_presence_error"].value == pytest.approx(100 * 0.5 * math.erfc(1 / (2 * math.sqrt(0.3)) / math.sqrt(2)))
    assert "0.548" in by_id["learn_reconstruction_error"].text and "length exactly" in by_id["learn_variance_revealed"].text
    assert "δ = 0.3" in figs.guarantee and "label" in figs.protects and not figs.attacks


@pytest.mark.parametrize("delta, flagged", [(0.02, True), (0.5, False)])
def test_reconstruction_against_numpy(delta, flagged):
    x = _x()
    tx = _tx(x)
    rel = DeltaAnonymizer(delta, key=Key(5), m_max=64).fit(tx).transform(tx)
    figs = rel.report_figures(tx)
    attack = {a.id: a for a in figs.attacks}["attack_record_reconstruction"]
    # every published record is sampled (fewer than 200): recompute with the explicit signs
    values, m = rel.data.compute(progress=False)
    pub = np.flatnonzero(m > 0)
    X = sp.csr_array(x[pub])
    R = rel.data.generator.signs(np.arange(x.shape[1]), 64).astype(np.float64)  # (m_max, d)
    means = x.mean(axis=0)
    es = em = 0.0
    for i, cols in zip(pub, attribute_sets(X)):
        k = int(m[i])
        est = values[i, :k] @ R[:k, cols] / k
        es += ((est - x[i, cols]) ** 2).sum()
        em += ((means[cols] - x[i, cols]) ** 2).sum()
    assert attack.success == pytest.approx(max(0.0, 1 - es / em), rel=1e-9, abs=1e-12)
    assert attack.flagged is flagged and attack.threshold == RECONSTRUCTION_THRESHOLD
    assert figs.headline == ["knn_accuracy_ratio", "cosine_mean_abs_error", "dot_mean_relative_error"]


def test_kvariance_summary():
    x = _x(n=120)
    tx = _tx(x)
    rel = KVarianceAnonymizer(4, key=Key(5)).fit(tx).release()
    figs = rel.report_figures(tx)
    assert "k = 4 nearest neighbours" in figs.guarantee
    assert [a.id for a in figs.attacks] == ["attack_record_reconstruction"]

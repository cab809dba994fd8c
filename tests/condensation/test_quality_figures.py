"""The condensed release's quality score against scipy / numpy on the pseudo-data, and the
majority-class rate beside the 1-NN accuracy (recounted with numpy on the same test sample)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy.stats import ks_2samp

from ppdm_dask.condensation import Condenser
from ppdm_dask.condensation import report_figures as RF
from ppdm_dask.random import Key

from .test_report_figures import _frame, _items


def test_quality_and_majority_rate():
    df, p = _frame(n=600, seed=2)
    rel = Condenser(rows_per_partition=250, key=Key(7)).fit(df, p).release()
    items = _items(rel.report_figures(df))
    pseudo = rel.data.compute()
    pseudo.columns = df.columns
    shapes = {c: 1 - ks_2samp(df[c], pseudo[c]).statistic for c in df.columns}
    pairs = [
        1 - abs(np.corrcoef(df[a], df[b])[0, 1] - np.corrcoef(pseudo[a], pseudo[b])[0, 1]) / 2
        for a, b in combinations(df.columns, 2)
    ]
    got = {r[0]: r[2] for r in items["utility_column_shape_table"].rows}
    assert got == pytest.approx(shapes)
    assert items["utility_pair_trends"].value == pytest.approx(np.mean(pairs))
    assert items["utility_quality_score"].value == pytest.approx((np.mean(list(shapes.values())) + np.mean(pairs)) / 2)
    assert items["utility_quality_score"].score and items["utility_quality_score"].about == "comparison"
    N = len(df)
    test = np.sort(np.random.default_rng(RF._TEST_SEED).permutation(N)[: min(RF.TEST_SAMPLE, N // 3)])
    _, counts = np.unique(df["class"].to_numpy()[test], return_counts=True)
    assert items["nn_majority_rate"].value == pytest.approx(counts.max() / counts.sum())

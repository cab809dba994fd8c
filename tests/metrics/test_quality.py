"""The quality score against a direct computation on small frames: scipy's two-sample KS,
pandas value counts and crosstabs for the total variation distance, numpy's corrcoef for the
correlations; partition independence; the basket variant against a dense 0/1 frame."""

from __future__ import annotations

from itertools import combinations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp

from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.metrics import quality as Q


def _frames(seed: int = 0, n: int = 400, m: int = 300) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    x = rng.normal(40, 10, n)
    real = pd.DataFrame(
        {
            "age": np.round(x).astype(int),
            "income": x * 3 + rng.normal(0, 8, n),
            "sex": rng.choice(["f", "m"], n),
            "job": rng.choice(["a", "b", "c", None], n, p=[0.4, 0.3, 0.2, 0.1]),
        }
    )
    y = rng.normal(43, 12, m)
    synth = pd.DataFrame(
        {
            "age": np.round(y).astype(int),
            "income": rng.normal(125, 40, m),
            "sex": rng.choice(["f", "m"], m, p=[0.7, 0.3]),
            "job": rng.choice(["a", "b", "d"], m),
        }
    )
    return real, synth


def _tvd_complement(a: pd.Series, b: pd.Series) -> float:
    p = a.value_counts(normalize=True, dropna=False)
    q = b.value_counts(normalize=True, dropna=False)
    p, q = p.align(q, fill_value=0.0)
    return 1 - 0.5 * float((p - q).abs().sum())


def _binned(real: pd.Series, col: pd.Series) -> pd.Series:
    edges = np.linspace(real.min(), real.max(), Q.PAIR_BINS + 1)[1:-1]
    return pd.Series(np.digitize(col.to_numpy(dtype=float), edges))


def _direct(real: pd.DataFrame, synth: pd.DataFrame, numeric: list[str]) -> tuple[dict, dict]:
    shapes = {}
    for c in real.columns:
        if c in numeric:
            shapes[c] = 1 - ks_2samp(real[c], synth[c]).statistic
        else:
            shapes[c] = _tvd_complement(real[c].fillna("<missing>"), synth[c].fillna("<missing>"))
    pairs = {}
    order = numeric + [c for c in real.columns if c not in numeric]
    for a, b in combinations(order, 2):
        if a in numeric and b in numeric:
            ra = np.corrcoef(real[a], real[b])[0, 1]
            rs = np.corrcoef(synth[a], synth[b])[0, 1]
            pairs[(a, b)] = 1 - abs(ra - rs) / 2
        else:

            def cell(df, c):
                return _binned(real[c], df[c]) if c in numeric else df[c].fillna("<missing>").reset_index(drop=True)

            ct_r = pd.crosstab(cell(real, a), cell(real, b), normalize=True).stack()
            ct_s = pd.crosstab(cell(synth, a), cell(synth, b), normalize=True).stack()
            ct_r, ct_s = ct_r.align(ct_s, fill_value=0.0)
            pairs[(a, b)] = 1 - 0.5 * float((ct_r - ct_s).abs().sum())
    return shapes, pairs


@pytest.mark.parametrize("parts", [1, 3])
def test_against_scipy_pandas_numpy(parts):
    real, synth = _frames()
    got = Q.quality_report(dd.from_pandas(real, npartitions=parts), dd.from_pandas(synth, npartitions=parts + 1))
    shapes, pairs = _direct(real, synth, ["age", "income"])
    assert {c: s for c, (_, s) in got.shapes.items()} == pytest.approx(shapes)
    assert {k: s for k, (_, s) in got.pairs.items()} == pytest.approx(pairs)
    assert got.score == pytest.approx((np.mean(list(shapes.values())) + np.mean(list(pairs.values()))) / 2)
    assert 0 < got.score < 1


def test_identical_tables_score_one_and_a_grid_bounds_ks(monkeypatch):
    real, _ = _frames(1)
    same = Q.quality_report(real, real.sample(frac=1.0, random_state=2))
    assert same.score == pytest.approx(1.0)
    # past the distinct-value cap the CDFs are compared on a grid: never above the exact gap, close to it
    _, synth = _frames(1)
    monkeypatch.setattr(Q, "EXACT_VALUES", 10)
    grid = Q.quality_report(real[["income"]], synth[["income"]])
    exact = ks_2samp(real["income"], synth["income"]).statistic
    ks = 1 - grid.shapes["income"][1]
    assert ks <= exact + 1e-12 and ks == pytest.approx(exact, abs=0.02)
    assert any("KS measured" in n for n in grid.notes)


def test_basket_quality_against_dense_frames():
    rng = np.random.default_rng(5)
    items = ["bread", "milk", "eggs", "tea", "jam"]
    real = [[i for i in items if rng.random() < p] for p in rng.uniform(0.1, 0.8, 300)]
    synth = [[i for i in items[:4] if rng.random() < 0.4] for _ in range(200)]
    to = TransactionArray.from_lists(real, npartitions=3)
    ts = TransactionArray.from_lists(synth, npartitions=2)
    got = Q.basket_quality(to, ts, top=3)
    dense = lambda rows: pd.DataFrame([[int(i in r) for i in items] for r in rows], columns=items)  # noqa: E731
    dr, ds = dense(real), dense(synth)
    for i in items:
        assert got.shapes[i][1] == pytest.approx(_tvd_complement(dr[i], ds[i]))
    top = list(dr.sum().sort_values(ascending=False, kind="stable").index[:3])
    assert {frozenset(k) for k in got.pairs} == {frozenset(p) for p in combinations(top, 2)}
    for (a, b), (_, s) in got.pairs.items():
        ct_r = pd.crosstab(dr[a], dr[b], normalize=True).stack()
        ct_s = pd.crosstab(ds[a], ds[b], normalize=True).stack()
        ct_r, ct_s = ct_r.align(ct_s, fill_value=0.0)
        assert s == pytest.approx(1 - 0.5 * float((ct_r - ct_s).abs().sum()))


def test_figures():
    real, synth = _frames()
    items = {i.id: i for i in Q.quality_figures(Q.quality_report(real, synth), "the rows")}
    assert items["utility_quality_score"].score and items["utility_quality_score"].unit == "share"
    assert {"utility_column_shapes", "utility_pair_trends", "utility_column_shape_table"} <= set(items)

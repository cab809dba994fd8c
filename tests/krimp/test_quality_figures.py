"""The KRIMP release's quality score against a direct recount on the rows as lists (item
support fractions, 2 x 2 tables of the most frequent items)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.krimp import KrimpGenerator
from ppdm_dask.metrics.quality import TOP_ITEMS
from ppdm_dask.random import Key


def test_generated_rows_quality():
    rng = np.random.default_rng(3)
    rows = []  # one item per attribute (a: 0-2, b: 3-5, c: 6-8, d: 9-10), b and c following a
    for _ in range(400):
        a = int(rng.choice(3, p=[0.5, 0.3, 0.2]))
        b = 3 + (a if rng.random() < 0.7 else int(rng.integers(3)))
        c = 6 + (a if rng.random() < 0.5 else int(rng.integers(3)))
        rows.append([a, b, c, 9 + int(rng.random() < 0.3)])
    tx = TransactionArray.from_lists(rows, npartitions=2)
    rel = KrimpGenerator(20, key=Key(5)).fit(tx).release()
    figs = rel._quality_figures(tx, {})  # what report_figures adds with the original (the rest of it is slow)
    by_id = {i.id: i for i in figs.utility}
    gen = [set(map(str, r)) for r in rel.data.to_lists()]
    orig = [set(map(str, r)) for r in rows]
    so, sg = Counter(i for r in orig for i in r), Counter(i for r in gen for i in r)
    shapes = {i: 1 - abs(so[i] / len(orig) - sg[i] / len(gen)) for i in set(so) | set(sg)}
    assert {r[0]: r[2] for r in by_id["utility_column_shape_table"].rows} == pytest.approx(shapes)
    top = sorted(so, key=lambda i: (-so[i], int(i)))[:TOP_ITEMS]

    def table(db, a, b):
        n = len(db)
        both = sum(1 for r in db if a in r and b in r)
        na, nb = sum(1 for r in db if a in r), sum(1 for r in db if b in r)
        return np.array([both, na - both, nb - both, n - na - nb + both]) / n

    pairs = [1 - 0.5 * np.abs(table(orig, a, b) - table(gen, a, b)).sum() for a, b in combinations(top, 2)]
    assert by_id["utility_pair_trends"].value == pytest.approx(np.mean(pairs))
    assert by_id["utility_quality_score"].value == pytest.approx((np.mean(list(shapes.values())) + np.mean(pairs)) / 2)

"""Report figures of KRIMP generator releases: NAS by hand, reproduced records against a
brute-force set intersection, the pattern comparison recounted directly, DS, and led7."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from ppdm_dask import Key, TransactionArray, read
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.krimp import KrimpGenerator
from ppdm_dask.krimp.release import GeneratedRelease, patterns_table
from ppdm_dask.krimp.scores import normalized_anonymity_score


def _reproduced(generated, original):
    """Brute force: original records (with multiplicity) whose item set is a generated row."""
    gen = {frozenset(r) for r in generated}
    return sum(1 for r in original if frozenset(r) in gen)


def _release(gen_rows, patterns=()):
    data = TransactionArray.from_lists(gen_rows)
    return GeneratedRelease(
        data, method="krimp-generator", parameters={"min_support": 2, "n_rows": len(gen_rows)}, patterns=patterns_table(patterns)
    )


def test_nas_and_reproduced_by_hand():
    # docs/krimp.md example: db_o = [a, a, b, c, c, c, d], db_p = [a, b, e, e] -> AS = 1, AS(db_o, db_o) = 11/6, NAS = 6/11
    a, b, c, d, e = [1, 2], [3], [1, 4], [5, 6], [7]
    db_o = [a, a, b, c, c, c, d]
    db_p = [a, b, e, e]
    rel = _release(db_p)
    figs = rel.report_figures(TransactionArray.from_lists(db_o).repartition(npartitions=2))
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    assert by_id["nas"].value == pytest.approx(6 / 11)
    assert normalized_anonymity_score(db_p, db_o, exact=True) == Fraction(6, 11)
    # a, a and b reappear: 3 of 7 records
    assert _reproduced(db_p, db_o) == 3
    assert by_id["rows_reproduced"].value == pytest.approx(100 * 3 / 7)
    # b and d are the unique records; one released row copies b
    assert by_id["unique_copies"].value == 1 and "1 of the original's 2 unique records" in by_id["unique_copies"].note
    assert by_id["nas"].about == by_id["rows_reproduced"].about == "comparison"
    assert any("no pattern" in n for n in figs.notes)


def test_pattern_comparison_recounted():
    gen_rows = [[1, 2, 3], [1, 2], [2, 3], [1, 2, 3], [4], [1, 4], [2, 3]]
    patterns = [[1, 2], [2, 3], [1, 4]]
    # an original of 10 rows in which {1,2}, {2,3}, {1,4} have supports 4, 2, 5
    original = [[1, 2, 4], [1, 2, 4], [1, 2], [1, 2], [2, 3], [2, 3], [1, 4], [1, 4], [1, 4], [5]]
    rel = _release(gen_rows, patterns)
    alone = rel.report_figures()  # the public file holds no support: no comparison from the release alone
    assert not {"pattern_supports", "patterns_close"} & {i.id for i in (*alone.risk, *alone.utility)}
    figs = rel.report_figures(TransactionArray.from_lists(original))
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    # generated supports: {1,2}: 3/7, {2,3}: 4/7, {1,4}: 1/7 against 0.4, 0.2, 0.5
    gen = np.array([3, 4, 1]) / 7
    rec = np.array([4, 2, 5]) / 10
    assert by_id["pattern_supports"].series[0].x == pytest.approx(rec.tolist())
    assert by_id["pattern_supports"].series[0].y == pytest.approx(gen.tolist())
    close = np.abs(gen - rec) <= 0.25 * rec  # only {1,2}: |0.4286 - 0.4| = 0.029 <= 0.1
    assert close.tolist() == [True, False, False]
    assert by_id["patterns_close"].value == pytest.approx(100 / 3)
    assert by_id["patterns_close"].about == by_id["pattern_supports"].about == "comparison"


@pytest.fixture(scope="module")
def led7():
    """led7 from the shared folder when present, else the sample that ships with the package
    (the same 3,200 rows): the test always runs."""
    from tests.conftest import _shared_data

    root = _shared_data()
    if root is not None and (root / "lucs" / "led7.dat").exists():
        return read(str(root / "lucs" / "led7.dat"))
    return read(str(sample_path("led7")))


def test_led7_generated(led7):
    tx = led7.repartition(npartitions=2)
    gen = KrimpGenerator(20, key=Key(5)).fit(tx)
    rel = gen.release()
    figs = rel.report_figures(tx)
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    generated, original = rel.data.to_lists(), tx.to_lists()
    assert by_id["rows_reproduced"].value == pytest.approx(100.0 * _reproduced(generated, original) / len(original))
    assert by_id["nas"].value == pytest.approx(normalized_anonymity_score(generated, original))
    assert 0.0 <= by_id["nas"].value <= 1.0
    assert "ds" in by_id and by_id["ds"].value > -1.0
    # pattern comparison: recount every public pattern in the generated rows directly
    items = rel.patterns.column("items").to_pylist()
    rec = np.array([sum(1 for r in original if set(p) <= set(r)) for p in items]) / len(original)
    sets = [frozenset(r) for r in generated]
    gen_sup = np.array([sum(1 for r in sets if set(p) <= r) for p in items]) / len(generated)
    assert by_id["pattern_supports"].series[0].y == pytest.approx(gen_sup.tolist())
    assert by_id["patterns_close"].value == pytest.approx(100.0 * np.mean(np.abs(gen_sup - rec) <= 0.25 * rec))
    # no released row copies a unique original record (brute force), and the rows redrawn are counted
    orig_counts = Counter(frozenset(r) for r in original)
    assert not {r for r, c in orig_counts.items() if c == 1} & set(sets)
    assert by_id["unique_copies"].value == 0 and by_id["rows_redrawn"].value == rel.redraw_counts()["rows_redrawn"]
    assert by_id["membership_advantage"].about == "comparison" and 0.0 <= by_id["membership_advantage"].value <= 1.0
    # unique baskets of the generated rows
    counts = Counter(sets)
    assert by_id["unique_baskets_release"].value == pytest.approx(100.0 * sum(v == 1 for v in counts.values()) / len(sets))
    assert "itemsets_rho" in by_id and "min_support 0.01" in by_id["itemsets_rho"].note

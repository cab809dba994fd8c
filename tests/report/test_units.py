"""How the report writes numbers: shares as percentages, the singular for one, the units
convention of ``ppdm_dask.release.figures`` (hand-written expectations)."""

from __future__ import annotations

import pytest

from ppdm_dask.report.units import percent, plural, show_number, show_value


@pytest.mark.parametrize(
    "value, unit, text",
    [
        (1, "records", "1 record"),
        (2, "records", "2 records"),
        (0, "records", "0 records"),
        (1.0, "records", "1 record"),
        (1, "classes", "1 class"),
        (3, "classes", "3 classes"),
        (1, "items", "1 item"),
        (1, "baskets", "1 basket"),
        (1, "rows", "1 row"),
        (1, "itemsets", "1 itemset"),
        (1, "groups", "1 group"),
        (1234, "records", "1,234 records"),
        (1, "records per class", "1 record per class"),
        (1, "bits", "1 bit"),
        (1, "ε", "1 ε"),
    ],
)
def test_counts_take_the_singular_for_one(value, unit, text):
    assert show_value(value, unit) == text


@pytest.mark.parametrize(
    "value, unit, text",
    [
        (0.125, "fraction of records", "12.5 % of records"),
        (0, "fraction of records", "0 % of records"),
        (0.125, "share", "12.5 %"),
        (1, "share of baskets", "100 % of baskets"),
        (5.4154, "relative error", "541.5 %"),
        (0.054154, "relative", "5.4 %"),
        (12.5, "%", "12.5 %"),
        (100.0, "%", "100 %"),
        (7.25, "% of rows", "7.2 % of rows"),
        (0.0004, "share", "0.04 %"),
        (0.9996, "share", "99.96 %"),
        (0.99999, "share", "99.999 %"),
    ],
)
def test_shares_read_as_percentages(value, unit, text):
    assert show_value(value, unit) == text


def test_other_values_as_before():
    assert show_value(0.3125) == show_number(0.3125) == "0.3125"
    assert show_value("holds") == "holds" and show_value(None, "records") == "– records"
    assert show_value(2.5, "ε") == "2.5000 ε" and show_value(True) == "yes"
    assert percent(float("inf")) == "inf" and plural("records", 2) == "records" and plural("", 1) == ""


def test_share_columns_of_tables_read_as_percentages():
    from ppdm_dask.report.html import _blocks, _cell

    table = {
        "type": "table",
        "id": "t",
        "columns": ["threshold", "fraction of records with risk > threshold", "records"],
        "rows": [[0.1, 0.5025, 1005]],
    }
    block = _blocks([table])[0]
    assert block["share_columns"] == [1]
    assert [_cell(c, i in block["share_columns"]) for i, c in enumerate(table["rows"][0])] == ["0.1000", "50.2 %", "1,005"]

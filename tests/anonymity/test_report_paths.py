"""The relational report figures of the anonymizer's own input come from its frequency set (no
pass over the input); of any other table from passes over it. Both ways give the same figures
(the passes are checked against pandas and pycanon in ``test_report_figures``)."""

from __future__ import annotations

import dask.dataframe as dd
import pytest

from ppdm_dask.anonymity import KAnonymizer, load_hierarchies
from ppdm_dask.data.datasets import sample_files
from ppdm_dask.data.tables import read_table
from ppdm_dask.data.uci import ADULT_QI, load_adult
from ppdm_dask.random import Key
from ppdm_dask.release import Release


def _items(fig):
    return {i.id: i.to_dict() for i in (*fig.risk, *fig.utility)}


def _same(a, b):
    assert set(a) == set(b)
    for k in a:
        assert a[k] == pytest.approx(b[k]) if not isinstance(a[k], dict) else a[k] == b[k], k


@pytest.mark.parametrize("method", ["mondrian", "lattice"])
def test_frequency_set_and_passes_agree(method, tmp_path):
    if method == "mondrian":
        csv, zips, _ = sample_files("people")
        table = read_table(str(csv), dtype={"age": "int"})
        hier = load_hierarchies([f"zip={zips}"], None, ["zip"])
        est = KAnonymizer(
            ["age", "sex", "zip"],
            k=5,
            l=2,
            sensitive="diagnosis",
            identifiers=["name"],
            method="mondrian",
            hierarchies=hier,
            key=Key(4),
        )
    else:
        df, h = load_adult()
        table = dd.from_pandas(df, npartitions=3)
        qi = list(ADULT_QI)
        est = KAnonymizer(qi, k=5, sensitive="salary-class", hierarchies={a: h[a] for a in qi}, max_suppression=0.02, key=Key(4))
    rel = est.fit_release(table)
    assert rel.input_frequency is not None and rel._frequency_of(table) is not None
    from_fs = _items(rel.report_figures(table))
    rel.write(str(tmp_path / "r"))
    opened = Release.open(str(tmp_path / "r"))
    assert opened._frequency_of(table) is None  # a release read back knows nothing of its input
    other = table.repartition(npartitions=2)  # the same records, another collection: counted by passes
    handed = opened.adopt(rel)
    assert handed._frequency_of(other) is None and handed._frequency_of(table) is not None
    _same(from_fs, _items(handed.report_figures(other)))
    _same(from_fs, _items(handed.report_figures(table)))

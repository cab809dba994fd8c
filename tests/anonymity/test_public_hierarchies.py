"""The hierarchies a table release publishes: written and read back, every node's NCP equals the
anonymiser's (``metrics.ncp`` on the full hierarchy), and no leaf is in the table."""

from __future__ import annotations

from ppdm_dask.anonymity import load_hierarchies
from ppdm_dask.anonymity.metrics import ncp
from ppdm_dask.anonymity.public_hierarchies import node_ncp, public_hierarchies_table, read_public_hierarchies
from ppdm_dask.data.datasets import sample_files
from ppdm_dask.data.hierarchy import Hierarchy


def test_round_trip_and_ncp_as_the_anonymiser():
    _, zips, _ = sample_files("people")
    hier = {
        **load_hierarchies([f"zip={zips}"], None, ["zip"]),
        "age": Hierarchy.from_intervals(width=10, low=0, high=100, name="age"),
    }
    table = public_hierarchies_table(hier, ["age", "sex", "zip"])
    back = read_public_hierarchies(table)
    assert set(back) == {"age", "zip"}  # sex has no hierarchy: nothing published
    for attr, h in hier.items():
        for level in range(1, h.levels):
            for node in h.nodes(level):
                assert node_ncp(back[attr], str(node)) == ncp(h, node, level), (attr, node)
    leaves = {str(x) for x in hier["zip"].leaves}
    assert not leaves & set(table.column("node").to_pylist())
    assert read_public_hierarchies(table.to_pydict())["zip"].under == back["zip"].under  # the CSV manifest form

"""The public files of a condensed release reveal nothing about the input beyond the release:
the manifest's layout fields, parameters, summary and guarantees are recounted from the
released files and public parameters; figures of the original (SSQ, input counts, distances to
the originals, the membership experiment) stay in the owner's summary and internal report; the
public files are no oracle on a guessed input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ppdm_dask.condensation import Condenser
from ppdm_dask.data.digest import content_digest
from ppdm_dask.data.tables import read_table
from ppdm_dask.random import Key
from ppdm_dask.release.attacks import input_oracle, public_files
from ppdm_dask.verification import open_release
from tests.release.helpers import manifest_of


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(5, 3))
    X = c[rng.integers(5, size=n)] + rng.standard_normal((n, 3))
    return pd.DataFrame(X.round(3), columns=["a", "b", "c"]).assign(level=rng.integers(2, 6, size=n))


def test_manifest_holds_only_what_the_files_recount(tmp_path):
    df = _table()
    rel = Condenser(privacy_column="level", key=Key(1)).fit(df).release()
    man = rel.write(str(tmp_path / "r"))
    t = pq.read_table(tmp_path / "r" / "_groups.parquet").to_pandas()
    assert list(t.columns) == ["n", "p_max"]
    n, p_max = t["n"].to_numpy(), t["p_max"].to_numpy()
    assert set(man) == {
        "format",
        "version",
        "columns",
        "n_records",
        "n_groups",
        "groups",
        "statistics",
        "partitions",
        "files",
        "release",
        "input",
        "guarantees",
        "summary",
    }
    assert man["columns"] == ["a", "b", "c"] and man["n_records"] == int(n.sum()) and man["n_groups"] == len(n)
    assert man["input"] == {"fingerprint": man["input"]["fingerprint"]}
    assert set(man["release"]["parameters"]) == {
        "privacy_column",
        "columns",
        "rows_per_partition",
        "standardize",
        "publish_statistics",
    }
    summary = man["summary"]
    assert set(summary) == {"family", "method", "parameters", "records", "privacy"}  # no utility, no input counts
    assert summary["records"] == {"released": int(n.sum())}
    assert summary["privacy"] == {
        "groups": len(n),
        "smallest_group": int(n.min()),
        "largest_privacy_level": int(p_max.max()),
        "min_size_margin": int((n - p_max).min()),
        "groups_of_one_record": int((n == 1).sum()),
    }
    # the owner's figures are not in any public file
    owner = rel.summary()
    text = b"\n".join(public_files(str(tmp_path / "r")).values())
    for figure in (owner["utility"]["ssq"], owner["privacy"]["mean_group_size"]):
        # a spelling of two characters ("4") is in any binary file: only the distinctive ones
        spellings = {s for s in (repr(figure), f"{figure:.6g}") if len(s) >= 3}
        assert spellings and not any(s.encode() in text for s in spellings)
    assert b"level" in text  # the privacy column's name is a public parameter (verify --original reads the levels by it)
    assert json.loads((tmp_path / "r" / "_SUCCESS").read_text())["guarantees"]["ok"]


def test_external_report_holds_no_figure_of_the_original(tmp_path):
    df = _table(seed=1)
    rel = Condenser(privacy_column="level", key=Key(2)).fit(df).release()
    rel.write(str(tmp_path / "r"))
    written = open_release(str(tmp_path / "r")).adopt(rel)
    internal = written.report(df)
    external = written.report(df, audience="external")
    ids = {i["id"] for s in external["sections"] for i in s["items"]}
    internal_ids = {i["id"] for s in internal["sections"] for i in s["items"]}
    private = {
        "dcr_closer_than_neighbour",
        "dcr_p5",
        "original_nn_p5",
        "dcr_ratio_p5",
        "dcr_histogram",
        "membership_advantage",
        "pseudo_copies",
        "pseudo_records_redrawn",
        "covariance_compatibility",
    }
    assert private <= internal_ids and not (private & ids)
    assert {"groups", "smallest_group", "group_size_vs_level"} <= ids
    assert "ssq" not in json.dumps(external["summary"])


def test_public_files_are_no_oracle_on_the_input(tmp_path):
    """An adversary knowing every input row but one record's level tries each candidate level:
    nothing computable from a candidate file appears in the public files."""
    df = _table(n=200, seed=2)
    paths = []
    for level in range(2, 7):
        cand = df.copy()
        cand.loc[0, "level"] = level
        path = tmp_path / f"cand{level}.csv"
        cand.to_csv(path, index=False)
        paths.append(str(path))
    true = read_table(paths[1], dtype={"a": "float", "b": "float", "c": "float", "level": "int"})
    Condenser(privacy_column="level", key=Key(3)).fit(true).release().write(str(tmp_path / "r"))

    def digest_of(path):
        t = pd.read_csv(path)
        return content_digest(t[["a", "b", "c"]].to_numpy(float), t["level"].to_numpy())

    found = input_oracle(str(tmp_path / "r"), paths, digest_of=digest_of)
    assert not any(f["found"] for f in found), found
    assert "cand3.csv" not in json.dumps(manifest_of(tmp_path / "r"))

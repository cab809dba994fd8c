"""The bundled samples: what SOURCES.md says they are (rows, columns, and, with the shared data
folder, the copy or subset of the full data set they claim to be)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from ppdm_dask import read
from ppdm_dask.data.datasets import SAMPLES, list_samples, load_sample, sample_files, sample_path
from ppdm_dask.errors import InvalidParameter

TRANSACTIONS = {
    "mushroom": (8124, 119),
    "chess": (3196, 75),
    "bms-webview-1-5k": (5000, None),
    "iris": (150, 19),
    "pima": (768, 38),
    "led7": (3200, 24),
}


@pytest.mark.parametrize("name", sorted(TRANSACTIONS))
def test_transaction_samples(name):
    rows, items = TRANSACTIONS[name]
    tx = read(str(sample_path(name)))
    assert tx.n_transactions == rows and (items is None or tx.n_items == items)


def test_table_samples_and_files():
    adult = pd.read_csv(sample_path("adult"), sep=";", dtype=str)
    assert adult.shape == (2000, 9) and list(adult.columns)[-1] == "salary-class" and not adult.isna().any().any()
    files = [p.name for p in sample_files("adult")]
    assert files[0] == "adult_2k.csv" and len([f for f in files if f.startswith("adult_hierarchy_")]) == 9
    perms = json.loads((sample_path("adult").parent / "adult_permissions.json").read_text())["permissions"]
    assert {p["role"] for p in perms} == {"census", "marketing", "health"}
    ecoli = load_sample("ecoli").compute()
    assert ecoli.shape == (336, 9) and ecoli["sequence"].is_unique
    people = load_sample("people").compute()
    assert people.shape == (1000, 5) and people["zip"].str.len().eq(5).all()
    assert set(list_samples()) == set(SAMPLES)
    with pytest.raises(InvalidParameter, match="unknown sample"):
        sample_path("nope")


def test_samples_are_what_they_claim(shared_data):
    """Needs the shared folder: each sample against the full data set it was taken from."""
    full = pd.read_csv(shared_data / "adult" / "adult.csv", sep=";", dtype=str)
    rows = np.sort(np.random.default_rng(1996).choice(len(full), size=2000, replace=False))
    sample = pd.read_csv(sample_path("adult"), sep=";", dtype=str)
    pd.testing.assert_frame_equal(sample.reset_index(drop=True), full.iloc[rows].reset_index(drop=True))
    for f in sample_files("adult")[1:10]:
        assert f.read_bytes() == (shared_data / "adult" / f.name).read_bytes()
    assert gzip.decompress(sample_path("led7").read_bytes()) == (shared_data / "lucs" / "led7.dat").read_bytes()
    raw = [line.split() for line in (shared_data / "uci" / "ecoli.data").read_text().splitlines() if line.strip()]
    ecoli = pd.read_csv(sample_path("ecoli"), dtype=str)
    assert ecoli.values.tolist() == raw

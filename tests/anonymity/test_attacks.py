"""Attacks on relational releases (ppdm_dask.anonymity.attacks), and what one key no longer
lines up.

Two Mondrian releases of one table with one key used to come out in the same row order: the
same person at the same position of both (sensitive values equal at 100 % of the positions of
the people sample against 12.7 % at other positions, commit 781abb4), so an adversary could
intersect the two classes of a target record by record. Now every release's row order derives
from its identity (parameters included): the same-position equality is the chance one, and
the intersection is left with the values published as is (the composition attack, which only
a budget over the releases of a table prevents).

The attack functions are checked against a hand-made example and a literal brute force; the
releases are checked with the owner's positions (``output_positions``) and an insensitive row
number column.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import KAnonymizer, KmAnonymizer
from ppdm_dask.anonymity.attacks import class_matches, intersection_attack, released_rows, same_position_equality
from ppdm_dask.data.datasets import load_sample, sample_path
from ppdm_dask.data.people import DIAGNOSES, ZIPS
from ppdm_dask.data.tables import read_table
from ppdm_dask.random import Key
from ppdm_dask.release.attacks import rank_correlation
from ppdm_dask.release.order import output_positions
from tests.release.helpers import data_bytes, manifest_of

QI = ["age", "sex", "zip"]


# ---------------------------------------------------------------- the attack, by hand
def _hand() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Six people; release A cuts on age (20-29 / 30-39), release B on zip; positions aligned.

    Candidates by position: r0 -> A {0,1,2} & B {0,3,5} = {0} (flu), r4 -> A {3,4,5} & B {1,2,4}
    = {4} (flu): 2 of 6 unique and disclosed; every other target keeps two positions of two
    values. By value (A's and B's class value counts, the minimum of each): r0 -> A {flu 2,
    migraine 1}, B {flu, cold, asthma} -> {flu 1}; r4 -> A {cold, flu, asthma}, B {flu 2,
    migraine 1} -> {flu 1}: the same 2 of 6; r1, r2, r3, r5 keep 3 candidates.
    """
    orig = pd.DataFrame(
        {
            "age": [25, 27, 22, 35, 31, 33],
            "zip": ["02138", "02139", "02139", "02138", "02139", "02138"],
            "d": ["flu", "flu", "migraine", "cold", "flu", "asthma"],
        }
    )
    a = pd.DataFrame({"age": ["20-29"] * 3 + ["30-39"] * 3, "zip": ["02138|02139"] * 6, "d": orig["d"]})
    b = pd.DataFrame({"age": ["20-39"] * 6, "zip": orig["zip"], "d": orig["d"]})
    return orig, a, b


def test_intersection_by_hand():
    orig, a, b = _hand()
    t = orig[["age", "zip"]]
    pos = intersection_attack(a, b, t, ["age", "zip"], "d", truth=orig["d"])
    assert pos["by"] == "position" and pos["linkage"]["same"] == 1.0  # aligned: found by the adversary
    assert (pos["unique"], pos["disclosed"], pos["disclosed_correct"]) == pytest.approx((2 / 6, 2 / 6, 2 / 6))
    assert pos["mean_candidates"] == pytest.approx(10 / 6) and pos["alone_a"] == pos["alone_b"] == 0
    val = intersection_attack(a, b, t, ["age", "zip"], "d", by="value", truth=orig["d"])
    assert (val["unique"], val["disclosed"], val["disclosed_correct"]) == pytest.approx((2 / 6, 2 / 6, 2 / 6))
    assert val["mean_candidates"] == pytest.approx(14 / 6)
    # B in another order: positions no longer line up, the value attack is the same
    shuffled = b.iloc[[3, 0, 5, 1, 4, 2]].reset_index(drop=True)
    other = intersection_attack(a, shuffled, t, ["age", "zip"], "d", truth=orig["d"])
    assert other["by"] == "value" and {k: other[k] for k in ("unique", "disclosed", "mean_candidates")} == {
        k: val[k] for k in ("unique", "disclosed", "mean_candidates")
    }


def _covers(label: str, value) -> bool:
    """A released label covers an original value (literal reading, for the brute force)."""
    if label == "*":
        return True
    if "|" in label:
        return str(value) in label.split("|")
    if "-" in label and isinstance(value, (int, np.integer)):
        lo, hi = (int(x) for x in label.split("-"))
        return lo <= value <= hi
    return label == str(value)


def _brute(a: pd.DataFrame, b: pd.DataFrame, orig: pd.DataFrame, qi: list[str], by: str) -> dict[str, float]:
    """Record by record: the candidates of every target, unique / disclosed / correct."""
    unique = disclosed = correct = total = 0
    ra, rb = a.to_dict("records"), b.to_dict("records")
    for t in orig.to_dict("records"):
        ia = [i for i, r in enumerate(ra) if all(_covers(r[q], t[q]) for q in qi)]
        ib = [i for i, r in enumerate(rb) if all(_covers(r[q], t[q]) for q in qi)]
        if by == "position":
            cand = Counter(ra[i]["d"] for i in set(ia) & set(ib))
        else:
            ca, cb = Counter(ra[i]["d"] for i in ia), Counter(rb[i]["d"] for i in ib)
            cand = Counter({v: min(ca[v], cb[v]) for v in ca if cb[v]})
        n = sum(cand.values())
        total += n
        unique += n == 1
        if len(cand) == 1:
            disclosed += 1
            correct += next(iter(cand)) == t["d"]
    n_t = len(orig)
    return {
        "unique": unique / n_t,
        "disclosed": disclosed / n_t,
        "disclosed_correct": correct / n_t,
        "mean_candidates": total / n_t,
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_intersection_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 60
    orig = pd.DataFrame(
        {
            "age": rng.integers(20, 50, n),
            "sex": rng.choice(["f", "m"], n),
            "zip": rng.choice(["01", "02", "03", "04"], n),
            "d": rng.choice(list("wxyz"), n),
        }
    )
    dec = orig["age"] // 10 * 10
    a = pd.DataFrame(
        {
            "age": [f"{x}-{x + 9}" for x in dec],
            "sex": np.where(rng.random(n) < 0.2, "*", orig["sex"]),
            "zip": np.where(orig["zip"].isin(["01", "02"]), "01|02", "03|04"),
            "d": orig["d"],
        }
    )
    half = np.where(orig["age"] < 35, "20-34", "35-49")
    b = pd.DataFrame({"age": half, "sex": "f|m", "zip": orig["zip"], "d": orig["d"]})
    qi = ["age", "sex", "zip"]
    for by in ("position", "value"):
        got = intersection_attack(a, b, orig[qi], qi, "d", by=by, truth=orig["d"])
        want = _brute(a, b, orig, qi, by)
        assert {k: got[k] for k in want} == pytest.approx(want), by
    # class matches: every target matches the class of its own row
    m, row_class = class_matches(a, orig[qi], qi)
    assert m[np.arange(n), row_class].all()
    perm = rng.permutation(n)
    got = intersection_attack(a, b.iloc[perm].reset_index(drop=True), orig[qi], qi, "d", truth=orig["d"])
    assert got["by"] == "value" and got["disclosed"] == pytest.approx(_brute(a, b, orig, qi, "value")["disclosed"])


# ---------------------------------------------------------------- the public files as an input oracle
def test_public_files_are_no_oracle_on_the_input(tmp_path):
    """An adversary who knows every record of the people sample but the first person's diagnosis
    builds the 8 candidate inputs and looks for anything computable from each (SHA-256, size,
    content digest, the unsalted fingerprint) in the release folder and its external report: at
    781abb4 the manifest held the input's SHA-256 (the true diagnosis found, 1 of 1); now
    nothing is found for any candidate."""
    from ppdm_dask.data.digest import content_digest
    from ppdm_dask.release.attacks import input_oracle

    df = pd.read_csv(sample_path("people"), dtype=str, keep_default_na=False)
    paths = []
    for d in DIAGNOSES:
        x = df.copy()
        x.loc[0, "diagnosis"] = d
        paths.append(str(tmp_path / f"people-{d}.csv"))
        x.to_csv(paths[-1], index=False)
    true = paths[DIAGNOSES.index(df.loc[0, "diagnosis"])]
    assert open(true, "rb").read() == open(sample_path("people"), "rb").read()  # the candidate is the input, byte for byte
    people = read_table(true, dtype={"age": "int"})
    rel = KAnonymizer(QI, k=5, l=2, sensitive="diagnosis", identifiers="name", method="mondrian", key=Key(4)).fit_release(people)
    out = str(tmp_path / "rel")
    rel.write(out)
    from ppdm_dask.verification import open_release

    open_release(out).adopt(rel).report(people, audience="external")
    assert (tmp_path / "rel.report-external.json").exists()
    found = input_oracle(out, paths, digest_of=lambda p: content_digest(read_table(p, dtype={"age": "int"})))
    assert not any(r["found"] for r in found), found
    # the control: the input's SHA-256 in a public file (as the manifest of 781abb4 had it) tells the value
    import hashlib
    import shutil

    shutil.copytree(out, tmp_path / "leaky")
    (tmp_path / "leaky" / "_input.json").write_text(f'{{"sha256": "{hashlib.sha256(open(true, "rb").read()).hexdigest()}"}}')
    leaky = input_oracle(str(tmp_path / "leaky"), paths)
    assert [r["found"] for r in leaky] == [p == true for p in paths]


# ---------------------------------------------------------------- two releases with one key
def _two(df, tmp_path, name, *, rows_per_file=None, key=Key(2026), **kw):
    """Mondrian releases k = 5 and k = 8 (l = 2 on diagnosis) of ``df`` with one key, written."""
    out = []
    for k in (5, 8):
        rel = KAnonymizer(QI, k=k, l=2, sensitive="diagnosis", method="mondrian", key=key, **kw).fit_release(df)
        # the ledger refuses the second (its classes cross the first's): accepted, this studies the attack
        rel.write(str(tmp_path / f"{name}-k{k}"), rows_per_file=rows_per_file, allow_composition=True)
        out.append(rel)
    return out


def test_people_two_mondrian_releases_one_key(tmp_path):
    """The people sample, Mondrian k = 5 and k = 8, l = 2 on diagnosis, one key: positions carry
    no link (same-position equality of diagnoses 12.7 % against 12.4 % elsewhere; at 781abb4
    100 % against 12.7 %), so the intersection falls back to values: no target unique, no
    diagnosis disclosed (the k = 8 classes are unions of k = 5 ones on this table)."""
    people = read_table(str(sample_path("people")), dtype={"age": "int"})
    ra, rb = _two(people, tmp_path, "people", identifiers="name")
    a, b = released_rows(str(tmp_path / "people-k5")), released_rows(str(tmp_path / "people-k8"))
    link = same_position_equality(a, b, ["diagnosis"])
    assert link["ratio"] <= 1.1, link
    orig = people.compute()
    got = intersection_attack(a, b, orig[QI], QI, "diagnosis", truth=orig["diagnosis"])
    assert got["by"] == "value" and got == intersection_attack(
        a, b, orig[QI], QI, "diagnosis", by="value", truth=orig["diagnosis"]
    )
    assert got["disclosed"] <= max(got["alone_a"], got["alone_b"]) + 0.01 and got["unique"] <= 0.01
    # the positive control: the releases in the input's order (what one key used to give) line up
    ia, ib = ra.data.compute(), rb.data.compute()
    aligned = intersection_attack(ia, ib, orig[QI], QI, "diagnosis", truth=orig["diagnosis"])
    assert aligned["by"] == "position" and aligned["linkage"]["same"] == 1.0 and aligned["linkage"]["ratio"] > 5
    assert aligned["disclosed_correct"] == aligned["disclosed"]  # aligned positions never mislead


@pytest.fixture(scope="module")
def generated() -> pd.DataFrame:
    """20,000 generated people: a row number (insensitive, unique: tracks each record), zip, age,
    sex, diagnosis (sd of Spearman's rho under independence ~0.007)."""
    rng = np.random.default_rng(35)
    n = 20_000
    w = 1.0 / np.arange(1, len(ZIPS) + 1) ** 0.8
    return pd.DataFrame(
        {
            "row": np.arange(n).astype(str),
            "zip": rng.choice(ZIPS, n, p=w / w.sum()),
            "age": rng.integers(18, 91, n),
            "sex": rng.choice(["female", "male"], n),
            "diagnosis": rng.choice(DIAGNOSES, n),
        }
    )


def test_generated_two_releases_one_key_unrelated_order(generated, tmp_path):
    ra, rb = _two(generated, tmp_path, "gen", rows_per_file=6000, insensitive="row", allow_unique="row")
    a, b = released_rows(str(tmp_path / "gen-k5")), released_rows(str(tmp_path / "gen-k8"))
    n = len(generated)
    assert len(a) == len(b) == n and len(list((tmp_path / "gen-k5").glob("part-*"))) == 4
    link = same_position_equality(a, b, ["diagnosis"])
    assert link["ratio"] <= 1.1, link
    # the owner's positions (key, release identity) are where each record was written
    pos = []
    for rel, written in ((ra, a), (rb, b)):
        p = output_positions(rel.stream_key, n, 4)
        assert (written["row"].to_numpy()[p] == generated["row"].to_numpy()).all()
        pos.append(p)
    rho = rank_correlation(pos[0], pos[1])
    assert abs(rho) < 0.05, rho  # the same record at unrelated positions of the two releases
    got = intersection_attack(a, b, generated[QI], QI, "diagnosis", as_is=["diagnosis"], truth=generated["diagnosis"])
    assert got["by"] == "value" and got["disclosed"] <= max(got["alone_a"], got["alone_b"]) + 0.01


def test_generated_same_key_same_bytes_at_1_and_4_partitions(generated, tmp_path):
    import dask.dataframe as dd

    outs, manifests = [], []
    for parts in (1, 4):
        x = dd.from_pandas(generated.head(5000), npartitions=parts)
        est = KAnonymizer(
            QI, k=5, l=2, sensitive="diagnosis", insensitive="row", allow_unique="row", method="mondrian", key=Key(7)
        )
        est.fit_release(x).write(str(tmp_path / f"p{parts}"), rows_per_file=2000)
        outs.append(data_bytes(tmp_path / f"p{parts}"))
        m = manifest_of(tmp_path / f"p{parts}")
        m["release"].pop("created")
        manifests.append(m)
    assert len(outs[0]) == 3 and outs[0] == outs[1] and manifests[0] == manifests[1]


def test_km_other_parameters_same_key_unrelated_order(tmp_path):
    """k^m releases of the same baskets with one key and k = 5 / k = 10: the owner's positions of
    each transaction are unrelated (5,000 transactions: sd of rho ~0.014)."""
    tx = load_sample("bms-webview-1-5k")
    rels = []
    for k in (5, 10):
        rel = KmAnonymizer(k=k, m=2, fan_out=5, key=Key(11)).fit_release(tx)
        rel.write(str(tmp_path / f"km{k}"), rows_per_file=2000)
        rels.append(rel)
    n = tx.n_transactions
    pos = [output_positions(r.stream_key, n, 3) for r in rels]
    for rel, p, k in zip(rels, pos, (5, 10)):  # the owner's positions are where each basket was written
        from ppdm_dask.verification import open_release

        written = open_release(str(tmp_path / f"km{k}")).data.to_lists()
        assert [sorted(written[i]) for i in p[:200]] == [sorted(x) for x in rel.data.to_lists()[:200]]
    rho = rank_correlation(pos[0], pos[1])
    assert abs(rho) < 0.05, rho

"""The person is the unit for table releases (docs/ledger.md#the-person): the same records in any
order, partitioning or file format are one input; a refreshed extract is composed person by
person with the earlier release of the same people, against a brute-force intersection by name
over the two written tables (the owner undoes the keyed order); the consistent release of the
refreshed extract passes, and the same brute force finds no shared person below k and no class
of one sensitive value that was diverse before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import KAnonymizer
from ppdm_dask.anonymity.composition import CHECK_NAME, DIVERSITY_CHECK
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.data.digest import content_digest
from ppdm_dask.data.tables import from_pandas, read_table
from ppdm_dask.ledger import CompositionRefused, Ledger
from ppdm_dask.random import Key
from ppdm_dask.release.order import output_positions
from ppdm_dask.verification import open_release
from tests.release.helpers import manifest_of


@pytest.fixture(scope="module")
def people():
    return read_table(str(sample_path("people")), dtype=["age=int"]).compute().reset_index(drop=True)


def _mondrian(qi, key, *, k=5, ledger, columns=("age", "sex", "zip"), identifier="name", sensitive="diagnosis", **kw):
    others = [c for c in columns if c not in qi]
    return KAnonymizer(
        qi,
        k=k,
        identifiers=identifier,
        sensitive=sensitive,
        insensitive=others,
        method="mondrian",
        key=Key(key),
        ledger=ledger,
        **kw,
    )


def test_the_same_records_in_any_order_partitioning_or_format_are_one_input(people, tmp_path):
    csv = str(sample_path("people"))
    parquet = tmp_path / "people.parquet"
    people.to_parquet(parquet, index=False)
    shuffled = people.sample(frac=1.0, random_state=4).reset_index(drop=True)
    digests = [
        content_digest(read_table(csv, dtype=["age=int"])),
        content_digest(read_table(str(parquet))),
        *[content_digest(from_pandas(shuffled, npartitions=n)) for n in (1, 4, 16)],
    ]
    assert len({d.records for d in digests}) == 1  # one input to the ledger ...
    assert len({d.order for d in digests[2:]}) == 1 and digests[2].order != digests[0].order  # ... rows in another order
    assert content_digest(from_pandas(people.iloc[1:], npartitions=2)).records != digests[0].records

    # released at k = 5, then the same records shuffled at k = 8: refused, as the ordered copy is
    ledger = Ledger(tmp_path / "ledger")
    first = _mondrian(["age", "zip"], 1, ledger=ledger).fit_release(read_table(csv, dtype=["age=int"]))
    m1 = first.write(str(tmp_path / "k5"))
    for frame in (from_pandas(shuffled, npartitions=4), read_table(str(parquet))):
        with pytest.raises(CompositionRefused, match=CHECK_NAME) as refused:
            _mondrian(["age", "zip"], 1, k=8, ledger=ledger).fit_release(frame).write(str(tmp_path / "k8"))
        assert m1["release"]["id"][:12] in str(refused.value) and "1,000 people shared" in str(refused.value)
    inputs = {r["input"] for r in ledger.records()}
    assert len(inputs) == 1  # every attempt was recorded as a release of the one input


def _in_input_order(url, key, original):
    """The key holder's view of a written release: its rows (suppressed ones kept, as '*') put
    back in the input's order."""
    rel = open_release(url)
    files = int(manifest_of(url)["release"]["row_order"]["files"])
    n = len(original)
    pos = output_positions(rel.owner_stream_key(Key(key), from_pandas(original, npartitions=2)), n, files)
    written = rel.data.compute().reset_index(drop=True)
    assert len(written) == n
    return written.iloc[pos].reset_index(drop=True)


def _classes(table, extract, qi, identifier):
    """Each person's class in a written release, by identifier (None: not published)."""
    text = table[qi].astype(str)
    label = text.agg("|".join, axis=1).where(~(text == "*").all(axis=1), None)
    return pd.Series(label.to_numpy(), index=extract[identifier].to_numpy())


def _brute(c1: pd.Series, c2: pd.Series, sens: pd.Series, k: int):
    """By identifier over both releases: the people published at least once, those shared, the
    shared ones in an intersection class below k (smaller than their class in each release
    alone), the shared ones in an intersection class of one sensitive value whose two classes
    were each diverse."""
    names = sorted(set(c1.index) | set(c2.index))
    frame = pd.DataFrame({"a": c1.reindex(names), "b": c2.reindex(names), "s": sens.reindex(names)}, index=names)
    frame = frame[frame[["a", "b"]].notna().any(axis=1)].fillna({"a": "<none>", "b": "<none>"})
    size = frame.groupby(["a", "b"])["s"].transform("size")
    alone = pd.concat(
        [
            frame["a"].map(frame.loc[frame["a"] != "<none>", "a"].value_counts()).where(frame["a"] != "<none>"),
            frame["b"].map(frame.loc[frame["b"] != "<none>", "b"].value_counts()).where(frame["b"] != "<none>"),
        ],
        axis=1,
    ).min(axis=1)
    below = (size < k) & (size < alone)
    shared = (frame["a"] != "<none>") & (frame["b"] != "<none>")
    one_value = frame.groupby(["a", "b"])["s"].transform("nunique") == 1
    div_a = frame.groupby("a")["s"].transform("nunique") > 1
    div_b = frame.groupby("b")["s"].transform("nunique") > 1
    disclosed = shared & one_value & div_a & div_b
    return {
        "published": len(frame),
        "shared": int(shared.sum()),
        "below": int(below.sum()),
        "shared_below": int((below & shared).sum()),
        "disclosed": int(disclosed.sum()),
    }


def _refreshed(tmp_path, month1, month2, first_qi, second_qi, *, k, shared, **kw):
    """Month 1 released, month 2 released fresh (refused, then accepted and withdrawn) and
    consistently; every figure of the ledger against the brute force by identifier."""
    identifier, sensitive = kw.get("identifier", "name"), kw.get("sensitive", "diagnosis")
    ledger = Ledger(tmp_path / "ledger")
    first = _mondrian(first_qi, 1, k=k, ledger=ledger, **kw).fit_release(from_pandas(month1, npartitions=2))
    m1 = first.write(str(tmp_path / "m1"))
    fresh = _mondrian(second_qi, 2, k=k, ledger=ledger, keep_suppressed=True, **kw).fit_release(
        from_pandas(month2, npartitions=3)
    )
    with pytest.raises(CompositionRefused, match=CHECK_NAME) as refused:
        fresh.write(str(tmp_path / "fresh-refused"))
    assert f"{m1['release']['id'][:12]} at " in str(refused.value) and f"{shared:,} people shared" in str(refused.value)
    # refused once its files were written (by person): recorded as such, nothing at its destination
    (gone,) = [r for r in ledger.records() if r.get("destination", "").endswith("fresh-refused")]
    assert gone.status == "not committed" and gone.line().endswith("[not committed: refused by the composition]")
    assert not (tmp_path / "fresh-refused").exists()
    mf = fresh.write(str(tmp_path / "fresh"), allow_composition=True)
    figures = fresh.composition.figures
    assert fresh.composition.people["shared"] == {m1["release"]["id"]: shared}

    one = _in_input_order(str(tmp_path / "m1"), 1, month1)
    two = _in_input_order(str(tmp_path / "fresh"), 2, month2)
    c1, c2 = _classes(one, month1, first_qi, identifier), _classes(two, month2, second_qi, identifier)
    sens = pd.concat(
        [
            pd.Series(month1[sensitive].to_numpy(), index=month1[identifier]),
            pd.Series(month2[sensitive].to_numpy(), index=month2[identifier]),
        ]
    )
    sens = sens[~sens.index.duplicated()]
    brute = _brute(c1, c2, sens, k)
    assert brute["shared"] == shared and brute["published"] == len(set(month1[identifier]) | set(month2[identifier]))
    assert figures["shared_people_published"] == brute["shared"]
    assert figures["people_published"] == brute["published"]
    assert figures["shared_below_k"] == brute["shared_below"] > 0
    assert figures["people_below_k"] == brute["below"]
    assert figures["people_disclosed"] == brute["disclosed"]

    # the consistent release of the same extract (the fresh one withdrawn: it never reached
    # anyone): accepted, and the brute force agrees
    ledger.forget(mf["release"]["id"], reason="a trial, not published")
    est = _mondrian(second_qi, 3, k=k, ledger=ledger, keep_suppressed=True, consistent=True, **kw)
    consistent = est.fit_release(from_pandas(month2, npartitions=3))
    manifest = consistent.write(str(tmp_path / "consistent"))
    limits = {c["name"]: (c["ok"], c["overridden"]) for c in manifest["release"]["ledger"]["composition"]["limits"]}
    assert limits == {CHECK_NAME: (True, False), DIVERSITY_CHECK: (True, False)}
    assert manifest["release"]["parameters"]["consistent"] is True
    three = _in_input_order(str(tmp_path / "consistent"), 3, month2)
    c3 = _classes(three, month2, second_qi, identifier)
    brute = _brute(c1, c3, sens, k)
    assert brute["shared_below"] == 0 and brute["disclosed"] == 0 and brute["below"] == 0
    assert consistent.composition.figures["people_below_k"] == 0 and consistent.composition.figures["people_disclosed"] == 0
    # what it cost, beside the fresh anonymisation of the same extract
    info = est.consistent_
    assert info["shared_people"] == shared
    assert info["consistent"]["suppressed"] == int((three[second_qi].astype(str) == "*").all(axis=1).sum()) > 0
    assert info["consistent"]["gcp"] > info["fresh"]["gcp"] and np.isfinite(info["consistent"]["gcp"])
    return figures, info


def test_a_refreshed_extract_composes_by_person_and_its_consistent_release_passes(people, tmp_path):
    figures, _ = _refreshed(
        tmp_path,
        people.iloc[:900].reset_index(drop=True),
        people.iloc[100:].reset_index(drop=True),
        ["age", "zip"],
        ["age", "sex"],
        k=5,
        shared=800,
    )
    assert figures["shared_below_k"] == 770  # as measured by hand when the ledger composed by file only


@pytest.mark.slow  # Adult: four releases of 27,145 records and their brute force by id (about 10 s)
def test_adult_two_overlapping_samples(shared_data, tmp_path):
    df = pd.read_csv(shared_data / "adult" / "adult.csv", sep=";", dtype=str).assign(id=lambda f: np.arange(len(f)).astype(str))
    df["age"] = df["age"].astype(np.int64)
    rng = np.random.default_rng(20260101)
    n = len(df)
    a = np.sort(rng.choice(n, int(0.9 * n), replace=False))
    b = np.sort(rng.choice(n, int(0.9 * n), replace=False))
    columns = [c for c in df.columns if c not in ("id", "occupation")]
    figures, info = _refreshed(
        tmp_path,
        df.iloc[a].reset_index(drop=True),
        df.iloc[b].reset_index(drop=True),
        ["age", "sex", "race", "marital-status"],
        ["age", "sex", "education", "workclass"],
        k=10,
        shared=int(np.intersect1d(a, b).size),
        l=2,
        columns=columns,
        identifier="id",
        sensitive="occupation",
    )
    assert figures["shared_below_k"] / info["shared_people"] > 0.5


def test_the_composition_attack_on_a_refreshed_extract(people, tmp_path):
    """The attack of the threat model (docs/threat-model.md#releases-of-the-same-people): an
    adversary who knows the shared people's quasi-identifiers intersects their classes in the
    two releases by the values published as is (Ganta et al.'s composition attack) and guesses
    each one's diagnosis. A fresh release of the second extract (published only by overriding
    the ledger) guesses better than either release alone; the consistent release does not, and
    discloses (almost) nobody."""
    from ppdm_dask.anonymity.attacks import intersection_attack, released_rows

    ledger = Ledger(tmp_path / "ledger")
    qi = ["age", "zip", "sex"]
    month1, month2 = people.iloc[:900].reset_index(drop=True), people.iloc[100:].reset_index(drop=True)
    _mondrian(qi, 1, ledger=ledger, l=2).fit_release(from_pandas(month1, npartitions=2)).write(str(tmp_path / "a"))
    fresh = _mondrian(qi, 2, ledger=ledger, l=2).fit_release(from_pandas(month2, npartitions=2))
    with pytest.raises(CompositionRefused):
        fresh.write(str(tmp_path / "b-refused"))  # the default: the ledger refuses it
    mf = fresh.write(str(tmp_path / "b"), allow_composition=True)
    ledger.forget(mf["release"]["id"], reason="the attacker's view of an overridden release")
    _mondrian(qi, 3, ledger=ledger, l=2, consistent=True).fit_release(from_pandas(month2, npartitions=2)).write(
        str(tmp_path / "c")
    )
    a, b, c = (released_rows(str(tmp_path / x)) for x in "abc")
    shared = people.iloc[100:900].reset_index(drop=True)
    got = {
        name: intersection_attack(a, x, shared[qi], qi, "diagnosis", truth=shared["diagnosis"])
        for name, x in (("fresh", b), ("consistent", c))
    }
    f, g = got["fresh"], got["consistent"]
    assert f["base_rate"] == pytest.approx(shared["diagnosis"].value_counts(normalize=True).iloc[0])
    # the fresh one: the pair guesses better than the better release alone (measured 0.393 against 0.354)
    assert f["best_guess"] > max(f["best_guess_a"], f["best_guess_b"]) + 0.02
    # the consistent one: no better than the first release alone; disclosures at most 1 %
    assert g["best_guess"] <= g["best_guess_a"] + 0.01 and g["disclosed_correct"] <= 0.01

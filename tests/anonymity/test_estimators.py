"""The anonymity estimators (KAnonymizer, AccessControlAnonymizer, KmAnonymizer) and their
releases: the estimator contract, roles and floors checked before the work, the guarantee
recounted by the release (alone and against the original), the Adult oracle through the
estimator."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pycanon.anonymity as pycanon
import pytest

from ppdm_dask.anonymity import (
    AccessControlAnonymizer,
    AnonymizedRelease,
    Hierarchy,
    KAnonymizer,
    KmAnonymizer,
    KmRelease,
    is_k_anonymous,
)
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.datasets import load_sample, sample_path
from ppdm_dask.data.tables import read_table
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DataFormatError, InvalidParameter, NotFittedError, RoleError, WeakParameterError
from ppdm_dask.random import Key
from ppdm_dask.release import Release, Roles
from ppdm_dask.verification import verify
from tests.release.helpers import manifest_of

PEOPLE_QI = ["age", "sex", "zip"]


@pytest.fixture(scope="module")
def people():
    return read_table(str(sample_path("people")), dtype=["age=int"])


def _k(**kw) -> KAnonymizer:
    args = {"k": 5, "identifiers": "name", "sensitive": "diagnosis", "method": "mondrian", **kw}
    return KAnonymizer(PEOPLE_QI, **args)


def _exploding(columns: list[str]) -> dd.DataFrame:
    """A table whose data cannot be computed: anything refused before the heavy work is refused
    without touching it."""

    def boom():
        raise RuntimeError("the data was read")

    meta = pd.DataFrame({c: pd.Series([], dtype="string") for c in columns})
    return dd.from_delayed([dask.delayed(boom)()], meta=meta, verify_meta=False)


# ---------------------------------------------------------------- estimator contract
@pytest.mark.parametrize(
    "make",
    [
        lambda: _k(key=Key(99)),
        lambda: AccessControlAnonymizer(
            [{"role": "r", "bound": 5, "where": {"age": [20, 30]}}],
            PEOPLE_QI,
            k=5,
            identifiers="name",
            sensitive="diagnosis",
            key=Key(99),
        ),
        lambda: KmAnonymizer(k=3, m=2, fan_out=4, key=Key(99)),
    ],
)
def test_estimator_contract(make, people):
    est = make()
    params = est.get_params()
    assert type(est)(**params).get_params() == params  # __init__ stores its arguments unchanged
    assert est.set_params(k=7) is est and est.get_params()["k"] == 7
    est.set_params(k=params["k"])
    with pytest.raises(InvalidParameter):
        est.set_params(bogus=1)
    text = repr(est)
    assert "key=<secret>" in text and "99" not in text
    with pytest.raises(NotFittedError):
        est.report_
    with pytest.raises(NotFittedError):
        est.release()
    data = load_sample("bms-webview-1-5k") if isinstance(est, KmAnonymizer) else people
    rel = est.fit_release(data)
    assert isinstance(rel, Release) and isinstance(rel, KmRelease if isinstance(est, KmAnonymizer) else AnonymizedRelease)
    assert isinstance(est.report_, dict) and est.overrides_ == ()
    assert rel.verify().ok and "99" not in repr(rel)
    assert est.release().parameters == rel.parameters  # the release of what was fitted, again
    assert not hasattr(est, "transform")  # it releases the table it was fitted on, no other


def test_library_progress_is_off_by_default():
    import inspect

    from ppdm_dask.anonymity import anonymize, check_km_anonymity, frequency_set, is_km_anonymous, km_anonymize

    for fn in (anonymize, km_anonymize, check_km_anonymity, is_km_anonymous, frequency_set):
        assert inspect.signature(fn).parameters["progress"].default is False, fn.__name__
    for cls in (KAnonymizer, AccessControlAnonymizer, KmAnonymizer):
        assert inspect.signature(cls.fit).parameters["progress"].default is False


# ---------------------------------------------------------------- roles and floors, before the work
def test_roles_are_required_and_checked_first():
    x = _exploding(["name", "zip", "age", "sex", "diagnosis"])
    with pytest.raises(RoleError, match="have no role: name, zip, age, sex, diagnosis") as e:
        KAnonymizer([], k=5, method="mondrian").fit(x)
    assert "--identifier" in cli_message(e.value) and "quasi_identifiers=" in str(e.value)
    with pytest.raises(RoleError, match="no role: diagnosis"):
        KAnonymizer(PEOPLE_QI, k=5, identifiers="name", method="mondrian").fit(x)
    with pytest.raises(RoleError, match="disease"):  # a misspelt column is reported as such
        KAnonymizer(PEOPLE_QI, k=5, identifiers="name", sensitive="disease", method="mondrian").fit(x)
    with pytest.raises(RoleError, match="two roles"):
        KAnonymizer(PEOPLE_QI, k=5, identifiers="name,age", sensitive="diagnosis").fit(x)
    with pytest.raises(WeakParameterError, match="k >= 2"):
        KAnonymizer(PEOPLE_QI, k=1, identifiers="name", sensitive="diagnosis", method="mondrian").fit(x)
    with pytest.raises(WeakParameterError, match="l >= 2"):
        KAnonymizer(PEOPLE_QI, k=5, l=1, identifiers="name", sensitive="diagnosis", method="mondrian").fit(x)
    with pytest.raises(WeakParameterError, match="k >= 2"):
        KmAnonymizer(k=1, fan_out=3).fit(object())  # refused before the input is even looked at
    with pytest.raises(InvalidParameter, match="unknown privacy floor"):
        KAnonymizer(PEOPLE_QI, k=1, identifiers="name", sensitive="diagnosis", allow_weak=["k>=2"]).fit(x)


def test_nearly_unique_columns_are_refused(people):
    with pytest.raises(RoleError, match="likely direct identifier.*name") as e:
        KAnonymizer(["name", *PEOPLE_QI], k=5, sensitive="diagnosis", method="mondrian").fit(people)
    assert e.value.python == "allow_unique=['name']"
    rows = people.assign(row=people.index.astype(str))
    with pytest.raises(RoleError, match="row"):
        _k(insensitive="row").fit(rows)
    rel = _k(insensitive="row", allow_unique="row").fit_release(rows)
    assert list(rel.data.columns) == [*PEOPLE_QI, "diagnosis", "row"] and rel.roles.allow_unique == ("row",)


def test_overrides_are_explicit_and_recorded(people, tmp_path):
    est = _k(k=1, allow_weak=True)
    rel = est.fit_release(people)
    assert est.overrides_ == ("k >= 2",) and rel.overrides == ("k >= 2",)
    v = rel.verify()
    assert v.ok and v["k >= 2"].overridden and not v["k >= 2"].ok
    manifest = rel.write(str(tmp_path / "weak"))
    assert manifest["release"]["overrides"] == ["k >= 2"]
    assert verify(str(tmp_path / "weak")).ok
    assert _k(k=1, allow_weak=["k >= 2"]).fit(people).overrides_ == ("k >= 2",)
    assert _k(k=5, allow_weak=True).fit(people).overrides_ == ()  # nothing weak, nothing recorded


def test_interval_hierarchy_reads_numbers(tmp_path):
    h = {"age": Hierarchy.from_intervals(width=10, low=0, high=100, name="age")}
    people = read_table(str(sample_path("people")))  # every column a string
    rel = _k(hierarchies=h).fit_release(people)
    ages = rel.data["age"].compute()
    assert ages.str.fullmatch(r"\d+(-\d+)?").all()  # numeric ranges, not value sets
    bad = pd.read_csv(sample_path("people"), dtype=str, keep_default_na=False)
    bad.loc[7, "age"] = "forty"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DataFormatError, match="'age'.*forty") as e:
        _k(hierarchies=h).fit(read_table(str(tmp_path / "bad.csv")))
    assert "bad.csv" in str(e.value)


# ---------------------------------------------------------------- the release and its checks
def test_release_drops_identifiers_and_verifies(people, tmp_path):
    rel = _k(key=Key(5)).fit_release(people)
    assert "name" not in rel.data.columns and rel.roles.identifiers == ("name",)
    assert rel.parameters["qi"] == PEOPLE_QI and rel.parameters["k"] == 5 and rel.parameters["sensitive"] == "diagnosis"
    assert rel.figures["records"] == {"input": 1000, "released": 1000, "suppressed": 0}
    assert rel.partition_rows == [1000]  # counted with the frequency set: no extra pass
    v = rel.verify(original=people)
    assert v.ok and {"k-anonymity", "identifiers absent", "identifier values absent", "records", "sensitive values"} <= {
        c.name for c in v
    }
    manifest = rel.write(str(tmp_path / "r"))
    assert manifest["guarantees"]["ok"]
    # public: the released rows and the class figures recounted from the written files; the
    # input's rows, the suppressed records and the utility (the original's domains) stay the owner's
    assert not {"n_input_records", "n_suppressed_dropped"} & set(manifest)
    assert all(set(p) == {"file", "rows", "bytes", "sha256"} for p in manifest["partitions"])
    pub = manifest["summary"]
    assert pub["records"] == {"released": 1000} and "utility" not in pub
    g = {c["name"]: c for c in manifest["guarantees"]["checks"]}
    st = g["k-anonymity"]["stats"]
    assert pub["privacy"] == {
        "k achieved": st["min_class_size"],
        "classes": st["n_classes"],
        "max risk": pytest.approx(1 / st["min_class_size"]),
        "average risk": pytest.approx(st["n_classes"] / 1000),
    }
    released = pd.read_parquet(tmp_path / "r")
    assert pub["privacy"]["k achieved"] == pycanon.k_anonymity(released, PEOPLE_QI)
    assert pub["privacy"]["classes"] == len(released.groupby(PEOPLE_QI).size())
    assert rel.summary()["records"] == {"input": 1000, "released": 1000, "suppressed": 0} and "utility" in rel.summary()
    assert g["row count"]["detail"].endswith("n_records") and g["records"]["status"] == "unchecked"
    assert verify(str(tmp_path / "r"), original=str(sample_path("people"))).ok


def test_guarantee_checks_catch_broken_releases(people):
    roles = Roles(identifiers=["name"], quasi_identifiers=PEOPLE_QI, sensitive=["diagnosis"])
    params = {"k": 2, "qi": PEOPLE_QI, "sensitive": "diagnosis", "keep_suppressed": False}
    base = pd.DataFrame(
        {"age": ["20-30"] * 4, "sex": ["*"] * 4, "zip": ["021**"] * 4, "diagnosis": ["flu", "flu", "asthma", "healthy"]}
    )
    orig = people.compute()
    ok = AnonymizedRelease(dd.from_pandas(base, npartitions=1), method="x", parameters=params, roles=roles)
    assert ok.verify().ok
    v = ok.verify(original=orig)  # 4 rows are not the 1,000 of the original
    assert not v["records"].ok and v["records"].figure == 4 and v["records"].threshold == 1000
    # the leak: names published (as members of a value set) -> caught against the original
    leak = base.assign(zip=["021**|" + orig["name"].iloc[0]] * 4)
    v = AnonymizedRelease(dd.from_pandas(leak, npartitions=2), method="x", parameters=params, roles=roles).verify(original=orig)
    assert not v["identifier values absent"].ok and v["identifier values absent"].figure == 1
    # an identifier column, a column without a role, a class below k, a sensitive value not in the original
    bad = base.assign(name=orig["name"].iloc[:4].to_numpy(), extra=1)
    bad.loc[0, "zip"] = "02138"
    bad.loc[1, "diagnosis"] = "invented"
    v = AnonymizedRelease(dd.from_pandas(bad, npartitions=1), method="x", parameters=params, roles=roles).verify(original=orig)
    failed = {c.name for c in v.failures()}
    assert {"identifiers absent", "columns have roles", "k-anonymity", "sensitive values"} <= failed
    assert v["identifiers absent"].where == "name" and v["columns have roles"].where == "extra"
    # l-diversity recounted when l is given
    v = AnonymizedRelease(dd.from_pandas(base, npartitions=1), method="x", parameters={**params, "l": 3}, roles=roles).verify()
    assert v.ok and v["l-diversity"].figure == 3
    v = AnonymizedRelease(dd.from_pandas(base, npartitions=1), method="x", parameters={**params, "l": 4}, roles=roles).verify()
    assert not v.ok and not v["l-diversity"].ok and v["l-diversity"].figure == 3 and v["l-diversity"].threshold == 4


def test_suppressed_records_left_out_unless_kept(people, tmp_path):
    h = {
        "age": Hierarchy.from_intervals(width=10, low=0, high=100),
        "zip": load_sample("people-hierarchy-zip"),
        "sex": load_sample("people-hierarchy-sex"),
    }
    for keep in (False, True):
        est = _k(k=10, method="lattice", hierarchies=h, max_suppression=0.05, keep_suppressed=keep)
        rel = est.fit_release(people)
        n_sup = est.report_["n_suppressed"]
        assert n_sup > 0
        manifest = rel.write(str(tmp_path / f"keep-{keep}"))
        written = pd.read_parquet(tmp_path / f"keep-{keep}")
        stars = int((written[PEOPLE_QI] == "*").all(axis=1).sum())
        assert (stars, len(written)) == ((n_sup, 1000) if keep else (0, 1000 - n_sup))
        # how many were left out is the owner's figure: not in any public field
        assert "n_suppressed_dropped" not in manifest and all("n_suppressed" not in p for p in manifest["partitions"])
        assert manifest["summary"]["records"] == {"released": len(written)}
        v = verify(str(tmp_path / f"keep-{keep}"), original=people)
        assert v.ok and v["records"].figure == len(written) and f"+ {n_sup} suppressed" in v["records"].detail
        # against another original: more suppressed records than max_suppression allows
        more = dd.concat([people, people.head(60, compute=False)])
        v = verify(str(tmp_path / f"keep-{keep}"), original=more)
        assert not v["records"].ok and v["records"].threshold == 1060
        assert is_k_anonymous(written, PEOPLE_QI, 10)
        kept = written[~(written[PEOPLE_QI] == "*").all(axis=1)]
        assert pycanon.k_anonymity(kept, PEOPLE_QI) >= 10


def test_access_control_release(people, tmp_path):
    perms = [
        {"role": "census", "name": "young", "bound": 40, "where": {"age": [18, 29]}},
        {"role": "research", "name": "cambridge", "bound": 30, "where": {"zip": ["02138", "02139"]}},
    ]
    est = AccessControlAnonymizer(perms, PEOPLE_QI, k=5, identifiers="name", sensitive="diagnosis", key=Key(1))
    rel = est.fit_release(people)
    assert rel.method == "access-control" and rel.parameters["permissions"] == ["young", "cambridge"]
    r = est.report_
    assert [p["name"] for p in r["permission_report"]] == ["young", "cambridge"]
    assert {x["role"] for x in r["role_report"]} == {"census", "research"} and len(r["mondrian_role_report"]) == 2
    rel.write(str(tmp_path / "ac"))
    assert verify(str(tmp_path / "ac"), original=people).ok
    assert pycanon.k_anonymity(pd.read_parquet(tmp_path / "ac"), PEOPLE_QI) >= 5


def test_km_release_checks_against_the_original(tmp_path):
    tx = load_sample("bms-webview-1-5k")
    est = KmAnonymizer(k=5, m=2, fan_out=5, method="DA", key=Key(3))
    rel = est.fit_release(tx)
    assert rel.family == "km" and rel.parameters == {"k": 5, "m": 2, "hierarchy": "balanced, fan-out 5"}
    v = rel.verify(original=tx)
    assert v.ok and [c.name for c in v] == [
        "k >= 2",
        "k^m-anonymity",
        "transaction count",
        "transactions",
        "transaction lengths",
        "published items",
    ]
    assert v["k^m-anonymity"].figure >= 5 and v["transaction count"].figure == 5000
    # a forged release: one transaction longer than any original one, with a foreign label
    lists = rel.data.to_lists()
    lists[0] = sorted(set(rel.data.vocabulary.labels.tolist()))  # every published item at once
    forged = KmRelease(
        TransactionArray.from_lists(lists + [["foreign"]] * 5),
        method="DA",
        parameters=rel.parameters,
        figures=rel.figures,
        input_info=rel.input_info,
    )
    v = forged.verify(original=tx)
    failed = {c.name for c in v.failures()}
    assert {"transaction count", "transactions", "transaction lengths", "published items"} <= failed
    rel.write(str(tmp_path / "km"))
    assert verify(str(tmp_path / "km"), original=tx).ok


def test_km_public_parameters_never_name_the_hierarchy_file(tmp_path):
    """A hierarchy given as a file: the public parameter says what it is, not where it was."""
    from ppdm_dask.release.attacks import public_files

    path = tmp_path / "owner_private_items.csv"
    path.write_text("a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\n")
    tx = TransactionArray.from_lists([["a", "b"], ["c"], ["a", "d"], ["b", "c"]] * 5)
    rel = KmAnonymizer(str(path), k=2, m=2, key=Key(1)).fit_release(tx)
    assert rel.parameters == {"k": 2, "m": 2, "hierarchy": "given, 3 levels"}
    rel.write(str(tmp_path / "km"))
    files = public_files(str(tmp_path / "km"))
    assert files and not any(b"owner_private" in blob for blob in files.values())
    m = manifest_of(tmp_path / "km")
    assert m["summary"]["records"] == {"released": 20} and "utility" not in m["summary"]
    assert {c["name"]: c.get("status") for c in m["guarantees"]["checks"]}["published items"] == "unchecked"
    # read back without the owner's cut: published items held to the original's item count
    v = verify(str(tmp_path / "km"), original=tx)
    assert v.ok and v["published items"].threshold == 4


def test_part_files_carry_no_pandas_attrs():
    """Whatever the caller attached to a frame (``attrs``) would travel in a Parquet file's
    schema metadata: the table encoder clears it and publishes no per-file statistics (not even
    the number of suppressed rows it left out)."""
    from ppdm_dask.release.tables import _encode

    block = pd.DataFrame({"age": ["20-29", "*"], "diagnosis": ["flu", "cold"]})
    block.attrs = {"source": "/owner/secret.csv"}
    table, stats = _encode(block, qi=("age",), keep_suppressed=False)
    assert b"secret" not in table.schema.metadata[b"pandas"] and stats == {} and table.num_rows == 1
    assert block.attrs == {"source": "/owner/secret.csv"}  # the caller's frame is left as it was


def test_km_same_key_same_bytes_for_any_partitioning(tmp_path):
    from tests.release.helpers import data_bytes

    tx = load_sample("bms-webview-1-5k")
    outs = []
    for parts in (1, 4):
        t = tx.repartition(npartitions=parts)
        assert t.n_partitions == parts
        KmAnonymizer(k=5, m=2, fan_out=5, key=Key(11)).fit_release(t).write(str(tmp_path / f"km-{parts}"), rows_per_file=2000)
        outs.append(data_bytes(tmp_path / f"km-{parts}"))
    assert len(outs[0]) == 4 and outs[0] == outs[1]  # 3 parts + the vocabulary


# ---------------------------------------------------------------- the Adult oracle through the estimator
def test_adult_oracle_through_the_estimator(shared_data, tmp_path):
    from ppdm_dask.anonymity import load_hierarchies
    from ppdm_dask.data.uci import ADULT_QI

    src = shared_data / "adult" / "adult.csv"
    df = read_table(str(src))
    hier = load_hierarchies((), str(shared_data / "adult"), ADULT_QI)
    est = KAnonymizer(list(ADULT_QI), k=5, sensitive="salary-class", hierarchies=hier, key=Key(8))
    rel = est.fit_release(df)
    assert est.report_["discernibility"] == 33_627_534 and est.report_["n_classes"] == 45
    manifest = rel.write(str(tmp_path / "adult"))
    assert rel.summary()["utility"]["discernibility"] == 33_627_534 and "utility" not in manifest["summary"]
    released = pd.read_parquet(tmp_path / "adult")
    assert (
        len(released) == 30162 and pycanon.k_anonymity(released, list(ADULT_QI)) == manifest["summary"]["privacy"]["k achieved"]
    )
    v = verify(str(tmp_path / "adult"), original=str(src))
    assert v.ok and v["k-anonymity"].stats["n_classes"] == 45 and np.isclose(v["records"].figure, 30162)


def test_on_local_cluster(people, tmp_path, cluster_client):
    """Fit, write (read back and recounted before the commit) and verify against the original on
    two worker processes: the same release bytes as on the local scheduler."""
    from tests.release.helpers import data_bytes

    for name, client in (("sync", None), ("cluster", cluster_client)):
        rel = _k(key=Key(21)).fit_release(people.repartition(npartitions=3), client=client)
        rel.write(str(tmp_path / name), client=client, rows_per_file=400)
        assert verify(str(tmp_path / name), original=people, client=client).ok
    assert data_bytes(tmp_path / "sync") == data_bytes(tmp_path / "cluster")
    bad = pd.read_csv(sample_path("people"), dtype=str, keep_default_na=False)
    bad.loc[500, "age"] = "forty"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    h = {"age": Hierarchy.from_intervals(width=10, low=0, high=100)}
    with pytest.raises(DataFormatError, match="'age'.*forty") as e:  # raised on a worker, message and hints kept
        _k(hierarchies=h).fit(read_table(str(tmp_path / "bad.csv")), client=cluster_client)
    assert "--hierarchy age=FILE" in cli_message(e.value)

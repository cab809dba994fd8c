"""Verdict / Check and attribute roles."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ppdm_dask.cli.flags import cli_message
from ppdm_dask.errors import RoleError
from ppdm_dask.release import Check, Roles, Verdict


def test_verdict_ok_failures_lines_and_round_trip():
    v = Verdict(
        [
            Check("k-anonymity", True, np.int64(5), 5),
            Check("l-diversity", False, 1.5, 2.0, where="class 3"),
            Check("basic privacy", False, 58.0, 90.0, overridden=True),
        ]
    )
    assert not v.ok and not bool(v)
    assert [c.name for c in v.failures()] == ["l-diversity"]
    assert v["k-anonymity"].figure == 5 and "l-diversity" in v and "nope" not in v
    with pytest.raises(KeyError, match="nope"):
        v["nope"]
    assert v.lines(failed_only=True) == ["FAILED l-diversity: 1.5 (needs 2) in class 3"]
    assert v.checks[2].line().startswith("OVERRIDDEN basic privacy")
    d = json.loads(json.dumps(v.to_dict()))  # JSON-friendly (numpy figures converted)
    assert d["ok"] is False and d["checks"][0]["figure"] == 5
    back = Verdict.from_dict(d)
    assert back.to_dict() == v.to_dict()
    assert Verdict([Check("a", True), Check("b", False, overridden=True)]).ok
    assert Verdict().ok and len(Verdict() + [Check("x", False)]) == 1


def test_roles_validate_lists_unclassified_columns():
    cols = ["name", "age", "sex", "zip", "diagnosis"]
    with pytest.raises(RoleError) as e:
        Roles(quasi_identifiers=["age"]).validate(cols, source="people.csv")
    msg = cli_message(e.value)
    assert "name, sex, zip, diagnosis;" in msg and "--identifier" in msg and "people.csv" in msg
    with pytest.raises(RoleError, match="no quasi-identifier"):
        Roles(identifiers="name", insensitive="age,sex,zip,diagnosis").validate(cols)
    with pytest.raises(RoleError, match="no column"):
        Roles(quasi_identifiers="age,height").validate(cols)
    with pytest.raises(RoleError, match="two roles"):
        Roles(identifiers="name", quasi_identifiers="name,age")
    r = Roles(identifiers="name", quasi_identifiers="age, sex,zip", sensitive="diagnosis")
    r.validate(cols)
    assert r.of("name") == "identifier" and r.of("zip") == "quasi_identifier" and r.of("x") is None
    assert r.published == ["age", "sex", "zip", "diagnosis"]
    assert Roles.from_dict(r.to_dict()) == r


def test_nearly_unique_columns_refused_unless_declared():
    r = Roles(quasi_identifiers=["age", "ssn"], insensitive=["row"])
    distinct = {"age": 70, "ssn": 995, "row": 1000}
    with pytest.raises(RoleError) as e:
        r.check_unique(distinct, 1000)
    assert "ssn" in str(e.value) and "row" in str(e.value) and "age" not in str(e.value).split("accept")[0].split(":")[1]
    Roles(quasi_identifiers=["age", "ssn"], insensitive=["row"], allow_unique=["ssn", "row"]).check_unique(distinct, 1000)
    # small tables: every column looks unique; nothing is refused below the minimum size
    r.check_unique({"age": 10, "ssn": 10, "row": 10}, 10)

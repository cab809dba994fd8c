"""The decision a report opens with, against hand-made checks and attacks: green only when every
check holds with no override, no attack above its threshold and no warning; amber with an
override (named with its consequence), a flagged attack or a warning; red when a check fails."""

from __future__ import annotations

from ppdm_dask.release import Check
from ppdm_dask.release.figures import Attack
from ppdm_dask.report.decision import decide

K_OK = Check("k-anonymity", True, 5, 5)
FILES_OK = Check("file matches the manifest", True, where="part-00000.parquet")
K_WEAK = Check(
    "k >= 2",
    False,
    1,
    2,
    overridden=True,
    detail="k = 1 publishes unique records: anyone who knows a record's quasi-identifiers finds it",
)
K_FAILS = Check("k-anonymity", False, 3, 5, where="part-00001.parquet")


def attack(id, success, baseline, threshold, about="release"):
    return Attack(id, id.replace("_", " "), success, baseline, threshold, "share of records", about=about)


def test_green_when_everything_holds():
    d = decide([K_OK, FILES_OK], [attack("linkage", 0.2, 0.15, 0.1)])
    assert d.colour == "green" and d.reasons == [] and [a.id for a in d.risks] == ["linkage"]
    assert d.headline.startswith("Release may be approved")


def test_an_override_is_amber_naming_the_floor_and_its_consequence():
    d = decide([K_WEAK, FILES_OK])
    assert d.colour == "amber" and len(d.reasons) == 1
    assert "--allow-weak" in d.reasons[0] and "k >= 2" in d.reasons[0] and K_WEAK.detail in d.reasons[0]


def test_a_flagged_attack_is_amber_and_the_largest_risks_come_first():
    attacks = [attack("a", 0.30, 0.25, 0.1), attack("b", 0.9, 0.5, 0.2), attack("c", 0.6, 0.2, 0.5), attack("d", 0.5, 0.1, 0.3)]
    d = decide([K_OK], attacks)
    # advantages: a 0.05, b 0.4 (flagged), c 0.4 (not: threshold 0.5), d 0.4 (flagged)
    assert d.colour == "amber"
    assert {a.id for a in d.risks[:2]} == {"b", "d"} and d.risks[2].id == "c" and len(d.risks) == 3
    assert len(d.reasons) == 2 and all("against a baseline of" in r for r in d.reasons)
    assert "90 % against a baseline of 50 %" in next(r for r in d.reasons if r.startswith("b:"))


def test_an_attack_exactly_at_its_threshold_is_not_flagged():
    assert decide([K_OK], [attack("a", 0.35, 0.25, 0.1)]).colour == "green"


def test_a_warning_is_amber():
    d = decide([K_OK], [], ["salary-class is sensitive but no l-diversity or t-closeness was asked for"])
    assert d.colour == "amber" and d.reasons == ["salary-class is sensitive but no l-diversity or t-closeness was asked for."]


def test_a_failed_check_is_red_whatever_else():
    d = decide([K_FAILS, K_WEAK, FILES_OK], [attack("b", 0.9, 0.5, 0.2)], ["w"])
    assert d.colour == "red" and d.reasons[0].startswith("Check failed: k-anonymity (3 against 5) in part-00001.parquet")
    assert d.headline.startswith("Refuse")


def test_warnings_and_unchecked_statuses_are_not_failures():
    note = Check("provenance", False, status="unchecked")
    assert decide([K_OK, note]).colour == "green"

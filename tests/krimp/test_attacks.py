"""The KRIMP generator release under attack (docs/krimp.md#what-an-attacker-can-still-learn):
unique records never copied, patterns never below the floor, public files without figures of
the original, per-release streams, the forgery `verify --original` refuses, and the
membership-inference advantage — each against a brute-force oracle (Python sets of rows)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdm_dask import Key, TransactionArray, read, verify
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.data.digest import content_digest
from ppdm_dask.data.parquet import csr_to_arrow_list
from ppdm_dask.krimp import KrimpGenerator
from ppdm_dask.krimp import generator as generator_module
from ppdm_dask.krimp.attacks import membership_advantage, membership_inference, nearest_distances
from ppdm_dask.krimp.generator import GenerationError
from ppdm_dask.krimp.release import PATTERNS_FILE, UNIQUE_COPIES_CHECK, GeneratedRelease

from ..release.helpers import data_bytes, forge_part, manifest_of
from .boards import tictactoe_rows


@pytest.fixture(scope="module")
def led7():
    return read(str(sample_path("led7")))


@pytest.fixture(scope="module")
def boards():
    return TransactionArray.from_lists(tictactoe_rows())


def _uniques(tx) -> set[frozenset]:
    counts = Counter(frozenset(r) for r in tx.to_lists())
    return {r for r, c in counts.items() if c == 1}


def _rows(tx) -> list[frozenset]:
    return [frozenset(r) for r in tx.to_lists()]


# ---------------------------------------------------------------------------- unique copies
@pytest.mark.parametrize("data, min_support", [("led7", 2), ("led7", 10), ("boards", 10)])
def test_no_released_row_copies_a_unique_record(data, min_support, request):
    tx = request.getfixturevalue(data)
    unique = _uniques(tx)
    assert unique and (data != "boards" or len(unique) == tx.n_transactions == 958)  # every board is unique
    rule = KrimpGenerator(min_support, key=Key(5)).fit(tx)
    free = KrimpGenerator(min_support, key=Key(5), allow_weak=["unique copies"]).fit(tx)
    rel = rule.release()
    assert rel.parameters["unique_copies"] == "redrawn" and rel.overrides == ()
    assert not unique & set(_rows(rel.data))
    # the same first draws without the rule: exactly the rows the rule redrew copy a unique record,
    # every other row is the same
    n = 4000
    with_rule, without = _rows(rule.sample(n, key=Key(9), block_rows=512)), _rows(free.sample(n, key=Key(9), block_rows=512))
    copies = [i for i, r in enumerate(without) if r in unique]
    assert copies, "the attack works without the rule"
    assert rule.redraws_["rows_redrawn"] == len(copies) and rule.redraws_["redraws"] >= len(copies)
    assert all(with_rule[i] == without[i] for i in range(n) if i not in set(copies))
    assert not unique & set(with_rule)


def test_copies_allowed_only_when_named_and_recorded(led7, tmp_path):
    unique = _uniques(led7)
    # a blanket allow_weak lifts the min-support floor, never the rule
    weak = KrimpGenerator(1, key=Key(3), allow_weak=True).fit(led7).release()
    assert weak.overrides == ("min-support",) and weak.parameters["unique_copies"] == "redrawn"
    assert not unique & set(_rows(weak.data))
    gen = KrimpGenerator(2, key=Key(3), allow_weak=["unique copies"]).fit(led7)
    rel = gen.release()
    copied = unique & set(_rows(rel.data))
    assert copied and rel.parameters["unique_copies"] == "allowed" and rel.overrides == ("unique copies",)
    url = tmp_path / "allowed"
    rel.write(str(url))
    m = manifest_of(url)
    assert m["release"]["overrides"] == ["unique copies"] and m["release"]["parameters"]["unique_copies"] == "allowed"
    verdict = verify(str(url), original=led7)
    assert verdict.ok
    assert verdict["unique copies"].line().startswith("OVERRIDDEN unique copies: allowed (needs redrawn)")
    check = verdict[UNIQUE_COPIES_CHECK]
    assert check.overridden and check.figure == sum(1 for r in _rows(rel.data) if r in unique)
    assert f"{len(copied)} of its {len(unique)} unique records" in check.detail
    # the parameter forged back to "redrawn" without its override: the recount fails
    m["release"]["parameters"]["unique_copies"] = "redrawn"
    m["release"]["overrides"] = []
    (url / "_SUCCESS").write_text(json.dumps(m))
    failed = verify(str(url), original=led7).failures()
    assert [c.name for c in failed] == [UNIQUE_COPIES_CHECK]


def test_rule_output_is_partition_independent(boards, tmp_path):
    gen = KrimpGenerator(10, key=Key(21)).fit(boards)
    ref = gen.sample_lists(3000, key=Key(4), block_rows=256)
    assert gen.redraws_["rows_redrawn"] > 500  # a third of the boards generated are copies at first
    for bpp in (1, 5):
        assert gen.sample(3000, key=Key(4), block_rows=256, blocks_per_partition=bpp).to_lists() == ref
    # the release: same key, parameters and input -> the same bytes, input in 1 or 4 partitions
    urls = []
    for parts in (1, 4):
        url = tmp_path / f"p{parts}"
        KrimpGenerator(10, key=Key(21)).fit(boards.repartition(npartitions=parts)).release().write(str(url))
        urls.append(url)
    assert data_bytes(urls[0]) == data_bytes(urls[1])


def test_nothing_but_copies_is_refused(monkeypatch):
    monkeypatch.setattr(generator_module, "MAX_REDRAWS", 20)
    gen = KrimpGenerator(2, key=Key(1)).fit([[1, 3, 5]] + [[2, 4, 6]] * 3)  # {1,3,5} unique, {2,4,6} not
    rows = gen.sample_lists(200, key=Key(2))
    assert [1, 3, 5] not in rows and [2, 4, 6] in rows
    only = KrimpGenerator(1, key=Key(1), allow_weak=True).fit([[1, 3, 5]])  # one record: the only row there is
    with pytest.raises(GenerationError, match="unique in the original") as err:
        only.sample_lists(5, key=Key(2))
    assert "--allow-unique-copies" in cli_message(err.value)
    copies = KrimpGenerator(1, key=Key(1), allow_weak=["min-support", "unique copies"]).fit([[1, 3, 5]])
    assert copies.sample_lists(2, key=Key(2)) == [[1, 3, 5]] * 2


# ---------------------------------------------------------------------------- published patterns
def test_patterns_never_below_the_floor(led7, tmp_path):
    gen = KrimpGenerator(1, key=Key(8), allow_weak=["min-support"]).fit(led7)
    rel = gen.release()
    url = tmp_path / "weak"
    rel.write(str(url))
    table = pq.read_table(url / PATTERNS_FILE)
    assert table.column_names == ["items"]
    published = [frozenset(x) for x in table.column("items").to_pylist()]
    rows = _rows(led7)
    support = {p: sum(1 for r in rows if p <= r) for p in published}
    assert published and min(support.values()) >= 2  # brute force: no published pattern of one record
    assert not set(published) & _uniques(led7)  # in particular no complete unique record
    # the code table did hold patterns of one record: drawn, but withheld
    ct = gen.code_table_
    drawn_rare = [frozenset(x.tolist()) for x, s in zip(ct.itemsets[: ct.n_nontrivial], ct.supports) if s < 2]
    assert drawn_rare and not set(drawn_rare) & set(published)
    assert rel.figures["privacy"]["patterns_withheld"] == len(drawn_rare)
    assert (
        rel.summary()["privacy"]["patterns_published"]
        == len(published)
        == manifest_of(url)["summary"]["privacy"]["patterns_published"]
    )
    verdict = verify(str(url), original=led7)
    assert verdict.ok and verdict["min-support"].overridden
    line = verdict["min-support"].line()
    assert line.startswith("OVERRIDDEN min-support: 1 (needs 2)") and "not published" in line
    assert verdict["pattern support in the original"].threshold == 2 and verdict["pattern support in the original"].figure >= 2


# ---------------------------------------------------------------------------- public files
def test_public_files_hold_no_figure_of_the_original(led7, tmp_path):
    gen = KrimpGenerator(0.0011, key=Key(8), n_rows=1000).fit(led7)  # a fraction: 4 of the 3,200 records
    url = tmp_path / "rel"
    gen.release().write(str(url))
    m = manifest_of(url)
    assert m["input"] == {"fingerprint": m["input"]["fingerprint"]}  # keyed, nothing else
    assert set(m["summary"]) == {"family", "method", "parameters", "records", "privacy"}
    assert m["summary"]["records"] == {"released": 1000}
    assert m["summary"]["privacy"] == {
        "min_support": 4,
        "unique_copies": "redrawn",
        "patterns_published": gen.code_table_.n_nontrivial,
    }
    # the part files' metadata records the count, never the fraction (both would tell |db|)
    meta = json.loads(pq.read_schema(url / "part-00000.parquet").metadata[b"ppdm"])["metadata"]
    assert meta["min_support"] == 4 and "0.0011" not in json.dumps(meta)

    def keys(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield k
                yield from keys(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v)

    names = set(keys(m))
    assert not names & {
        "support",
        "usage",
        "supports",
        "usages",
        "fitted_rows",
        "L_percent",
        "smallest_pattern_support",
        "unique_records_in_input",
        "rows_redrawn",
        "redraws",
        "patterns_withheld",
    }
    # the 3,200 fitted rows appear nowhere as a count (1,000 rows were released)
    assert "3200" not in json.dumps({k: v for k, v in m.items() if k not in ("partitions", "files")})
    assert {p.name for p in Path(url).iterdir()} == {"_SUCCESS", "_vocabulary.parquet", PATTERNS_FILE, "part-00000.parquet"}
    assert pq.read_table(url / "part-00000.parquet").column_names == ["items", "n_patterns"]
    # the vocabulary is the union of the public domains
    labels = pq.read_table(url / "_vocabulary.parquet").column("label").to_pylist()
    assert labels == sorted(i for d in m["release"]["parameters"]["domains"] for i in d)


# ---------------------------------------------------------------------------- per-release streams
def _same_position_ratio(a: list[frozenset], b: list[frozenset]) -> float:
    """Rows equal at the same position against rows equal at random positions (1: unrelated)."""
    same = np.mean([x == y for x, y in zip(a, b)])
    ca, cb = Counter(a), Counter(b)
    chance = sum(ca[r] * cb[r] for r in ca) / (len(a) * len(b))
    return float(same / chance)


def test_streams_derive_from_the_release_identity(led7):
    key = Key(77)
    gen = KrimpGenerator(2, key=key, n_rows=20_000).fit(led7)
    rel = gen.release()
    assert rel.input_digest == content_digest(led7)
    assert rel.stream_key == GeneratedRelease.streams_for(key, "krimp-generator", rel.parameters, content_digest(led7))
    base = _rows(rel.data)
    assert base == _rows(gen.release().data)  # same key, parameters and input: the same rows
    # the literal procedure with the key itself is not the release's stream
    assert _same_position_ratio(base, _rows(gen.sample(20_000, key=key))) < 1.1
    other = KrimpGenerator(2, laplace=0.0011, key=key, n_rows=20_000).fit(led7).release()
    assert _same_position_ratio(base, _rows(other.data)) < 1.1
    # another input (one record less; nearly the same code table) -> unrelated rows too
    fewer = TransactionArray.from_lists(led7.to_lists()[1:])
    moved = KrimpGenerator(2, key=key, n_rows=20_000).fit(fewer).release()
    assert _same_position_ratio(base, _rows(moved.data)) < 1.1


# ---------------------------------------------------------------------------- verify --original
def test_forgery_with_the_original_rows_fails(led7, tmp_path):
    url = tmp_path / "rel"
    rel = KrimpGenerator(2, key=Key(6)).fit(led7).release()
    rel.write(str(url))
    written = read(str(url))
    # the released rows replaced by the original records, in the release's vocabulary; checksums rewritten
    labels = written.vocabulary.labels.tolist()
    index = {v: j for j, v in enumerate(labels)}
    import scipy.sparse as sp

    orig = led7.to_lists()
    ids = [sorted(index[i] for i in r) for r in orig]
    csr = sp.csr_array(
        (
            np.ones(sum(map(len, ids)), np.int32),
            np.concatenate(ids).astype(np.int32),
            np.r_[0, np.cumsum([len(x) for x in ids])].astype(np.int32),
        ),
        shape=(len(ids), len(labels)),
    )
    table = pq.read_table(url / "part-00000.parquet")
    forged = pa.table({"items": csr_to_arrow_list(csr), "n_patterns": pa.array(np.ones(len(ids), np.int64))})
    forge_part(url, "part-00000.parquet", forged.cast(table.schema))
    alone = verify(str(url))
    assert alone.ok and alone[UNIQUE_COPIES_CHECK].status == "unchecked"  # the rows alone cannot tell
    assert "NOT CHECKED " + UNIQUE_COPIES_CHECK in alone[UNIQUE_COPIES_CHECK].line()
    verdict = verify(str(url), original=led7)
    failed = verdict.failures()
    assert [c.name for c in failed] == [UNIQUE_COPIES_CHECK]
    assert failed[0].figure == len(_uniques(led7)) == 131
    assert failed[0].line().startswith(f"FAILED {UNIQUE_COPIES_CHECK}: 131 (needs 0)")
    assert verdict["normalized anonymity score"].figure == pytest.approx(1.0)


# ---------------------------------------------------------------------------- membership inference
def test_nearest_distances_and_advantage_against_brute_force():
    rng = np.random.default_rng(3)
    gen_rows = [sorted(set(rng.choice(12, size=rng.integers(1, 6), replace=False).tolist())) for _ in range(60)]
    cands = [sorted(set(rng.choice(14, size=rng.integers(1, 6), replace=False).tolist())) for _ in range(25)]
    tx = TransactionArray.from_lists(gen_rows)
    want = [min(len(set(c) ^ set(g)) for g in gen_rows) for c in cands]
    for parts in (1, 3):
        assert nearest_distances(cands, tx.repartition(npartitions=parts)).tolist() == want
    m, h = rng.integers(0, 5, 40), rng.integers(1, 7, 30)
    best = max(abs(np.mean(m <= t) - np.mean(h <= t)) for t in range(-1, 8))
    res = membership_advantage(m, h)
    assert res["advantage"] == pytest.approx(best) and res["rule"] == "member when distance <= t"
    assert res["exact_match_advantage"] == pytest.approx(np.mean(m == 0) - np.mean(h == 0))
    assert res["tpr"] - res["fpr"] == pytest.approx(best)
    # both directions: far from every released row can be the sign of a member too
    far = membership_advantage([3, 4, 5], [0, 1, 4])
    assert far["advantage"] == pytest.approx(2 / 3) and far["rule"] == "member when distance > t" and far["threshold"] == 1.0
    assert far["tpr"] == 1.0 and far["fpr"] == pytest.approx(1 / 3)
    assert membership_advantage([1, 2], [1, 2])["advantage"] == 0.0 and membership_advantage([0, 0], [5, 5])["advantage"] == 1.0


def test_membership_advantage_is_bounded(boards):
    """Tic-tac-toe boards (all unique), min-count 10, 400 members against 400 hold-out boards.
    Without the rule the generator copies members (exact match tells them apart); with it no
    member is copied, copies point to the hold-out instead (the attacker reverses the rule),
    and the advantage stays within 0.15 (chance level here: about 0.03)."""
    key = Key(12)
    domains = [[3 * i + v for v in (1, 2, 3)] for i in range(9)] + [[28, 29]]

    def experiment(allow):
        def fit_generate(members):
            return KrimpGenerator(10, allow_weak=allow, domains=domains).fit(members).sample(key=key)

        return membership_inference(boards, fit_generate, key, candidates=400)

    free = experiment(["unique copies"])
    assert free["member_copies"] >= 40 and free["exact_match_advantage"] > 0.05
    assert free["rule"] == "member when distance <= t" and free["advantage"] <= 0.15
    ruled = experiment(False)
    assert ruled["member_copies"] == 0 and ruled["holdout_copies"] > 0 and ruled["exact_match_advantage"] < 0
    assert ruled["advantage"] <= 0.15 and ruled["chance_advantage"] < 0.06

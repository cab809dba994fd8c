"""Attacks on EMASK releases (docs/emask.md#what-an-attacker-can-still-learn), on generated data:

* two releases of the same baskets with one key file: the rows at one position of both files
  share no more items than rows at random positions, and AND-ing them recovers true items no
  better than AND-ing random rows (before per-release streams: precision 0.87, one release 0.17);
* ``verify --original`` refuses a "release" that keeps every true item (ε = ∞) with its
  checksums rewritten, naming the flip-rate check; honest releases pass it (false-alarm rate
  measured on many small honest releases, and the test statistic's calibration checked);
* no exact figure of the original (s0, its number of ones) in any public file.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
from scipy import stats

from ppdm_dask import Key, TransactionArray, open_release, verify
from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.parquet import csr_to_arrow_list
from ppdm_dask.data.quest import quest
from ppdm_dask.emask import Distorter, distort
from ppdm_dask.emask._flip_kernels import row_flip_sums
from ppdm_dask.emask._kernels import distort_block
from ppdm_dask.emask.attacks import and_attack, on_columns, rows_in_file_order, shared_items_linkage, truth_in_file_order
from ppdm_dask.emask.flip_rates import ALPHA, item_flip_test, row_flip_test
from ppdm_dask.release.attacks import public_files

from ..release.helpers import forge_part


@pytest.fixture(scope="module")
def quest_tx():
    """T10.I4.D5K.N1K: s0 ≈ 0.01, where (0.4, 0.98) has basic privacy ≈ 92.9 %."""
    return quest("T10.I4.D5K.N1K", key=Key(1)).persist(progress=False)


def _csr(tx: TransactionArray) -> sp.csr_array:
    return sp.csr_array(tx.compute(progress=False))


# ---------------------------------------------------------------------------- attack 2: one key, two releases
def test_two_releases_with_one_key_do_not_line_up(quest_tx, tmp_path):
    key = Key(7)
    urls = []
    for i, (p, q) in enumerate([(0.4, 0.98), (0.5, 0.97)]):
        urls.append(str(tmp_path / f"rel{i}"))
        Distorter(p, q, key=key, allow_weak=True).fit_transform(quest_tx).write(urls[-1], allow_composition=True)
    labels = np.asarray(quest_tx.vocabulary.labels)
    (a, la), (b, lb) = rows_in_file_order(urls[0]), rows_in_file_order(urls[1])
    a, b = on_columns(a, la, labels), on_columns(b, lb, labels)
    truth = truth_in_file_order(urls[0], key, quest_tx)
    attack = and_attack(a, b, truth)
    link = shared_items_linkage(a, b)
    # the rows at one position belong to unrelated baskets (before: ratio 5.56)
    assert link["ratio"] <= 1.1, link
    # the AND is no better than AND-ing random rows (before: precision 0.87 against 0.17)
    assert attack["precision"] <= 1.15 * attack["random_pairs_precision"], attack
    assert attack["precision"] < 0.3 and abs(attack["one_release_precision"] - 0.17) < 0.03, attack
    # the attack itself works when the rows do line up and the noise is correlated: the same
    # stream key for both distortions, rows in input order (what one key file gave before)
    same = Key(99)
    x = _csr(quest_tx)
    d1, d2 = _csr(distort(quest_tx, 0.4, 0.98, key=same)), _csr(distort(quest_tx, 0.5, 0.97, key=same))
    control = and_attack(d1, d2, x)
    assert control["precision"] > 0.7 and control["advantage"] > 0.5, control
    assert shared_items_linkage(d1, d2)["ratio"] > 3


# ---------------------------------------------------------------------------- attack 4: the original as a release
def _keep_every_true_item(x: sp.csr_array, p: float, q: float, seed: int) -> sp.csr_array:
    """Every true item kept (recall 1, ε = ∞), plus noise ones at the rate that gives the number
    of ones a (p, q) distortion would have: the density checks cannot tell."""
    n, d = x.shape
    c = x.nnz
    rate = (p * c + (1 - q) * (n * d - c) - c) / (n * d - c)
    noise = sp.random_array((n, d), density=rate, format="csr", rng=np.random.default_rng(seed))
    noise.data[:] = 1
    out = sp.csr_array(((x + noise) > 0).astype(np.int32))
    out.indices, out.indptr = out.indices.astype(np.int32), out.indptr.astype(np.int32)
    return out


def test_verify_with_the_original_refuses_a_release_that_keeps_every_true_item(quest_tx, tmp_path):
    key = Key(5)
    url = tmp_path / "rel"
    honest = Distorter(0.4, 0.98, key=key).fit_transform(quest_tx)
    honest.write(str(url))
    assert verify(str(url), original=quest_tx, key=key).ok
    x = _csr(quest_tx)
    forged = _keep_every_true_item(x, 0.4, 0.98, seed=0)
    # the forger knows the key: the forged rows go where the honest ones were (keyed order)
    from ppdm_dask.release.order import output_positions

    pos = output_positions(open_release(str(url)).owner_stream_key(key, quest_tx), x.shape[0], 1)
    in_file = np.empty(x.shape[0], np.int64)
    in_file[pos] = np.arange(x.shape[0])
    forge_part(url, "part-00000.parquet", pa.table({"items": csr_to_arrow_list(sp.csr_array(forged[in_file]))}))
    # without the original it passes: only aggregates can be recounted, and they were matched
    alone = verify(str(url))
    assert alone.ok and alone["flip rates as declared"].status == "unchecked"
    # with the original: the flip rates estimated from the item counts are far from (0.4, 0.98)
    v = verify(str(url), original=quest_tx)
    assert [c.name for c in v.failures()] == ["flip rates as declared"]
    bad = v["flip rates as declared"]
    assert bad.stats["p_hat"] > 0.95 and bad.figure > 100 * bad.stats["threshold"]
    assert v["ones consistent with a (p, q) distortion of the original"].ok  # the aggregate alone cannot tell
    # with the key: row by row, every one of the original was kept
    v = verify(str(url), original=quest_tx, key=key)
    assert {c.name for c in v.failures()} == {"flip rates as declared", "flip rates per row"}
    assert v["flip rates per row"].stats["p_hat"] == 1.0


def _test_data(n: int, d: int, seed: int) -> sp.csr_array:
    """Small baskets with item supports from 0 to 0.6 (a few items nobody holds)."""
    rng = np.random.default_rng(seed)
    support = np.r_[np.zeros(2), rng.uniform(0.0, 0.6, d - 2)]
    x = (rng.random((n, d)) < support).astype(np.int32)
    return sp.csr_array(x)


@pytest.mark.parametrize("p, q", [(0.4, 0.98), (0.9, 0.9), (0.5, 0.8)])
def test_flip_rate_checks_pass_honest_releases_and_are_calibrated(p, q):
    # 1,000 honest distortions of small data (200 baskets, 30 items) with the package's kernel:
    # the checks at their level (ALPHA ≈ 2e-9) never fail, and their statistics follow the laws
    # they are tested against (χ²(2), the binomial, a scaled χ²): at the 5 % level about 5 % exceed
    x = _test_data(200, 30, seed=int(100 * p + 10 * q))
    c = x.sum(axis=0)
    trials = 1000
    scores, z_kept, z_disp, failures = [], [], [], 0
    for seed in range(trials):
        y = distort_block(x, p, q, np.random.default_rng(seed))
        t = item_flip_test(np.asarray(y.sum(axis=0)), c, 200, p, q)
        r = row_flip_test(row_flip_sums(x, y, None, None, 30, p, q), p, q)
        failures += (not t["ok"]) + (not r["ok"])
        scores.append(t["statistic"])
        z_kept.append(r["z"]["kept"])
        z_disp.append(r["z"]["added_dispersion"])
    assert failures == 0
    lo, hi = trials * 0.05 - 4 * math.sqrt(trials * 0.05 * 0.95), trials * 0.05 + 4 * math.sqrt(trials * 0.05 * 0.95)
    assert lo <= int(np.sum(np.asarray(scores) > stats.chi2.isf(0.05, 2))) <= hi
    assert lo <= int(np.sum(np.abs(z_kept) > 1.96)) <= hi
    assert lo <= int(np.sum(np.abs(z_disp) > 1.96)) <= hi
    assert ALPHA == pytest.approx(2 * stats.norm.sf(6.0))


def test_item_flip_test_against_a_hand_computed_example():
    # two items, N = 10; declared (p, q) = (0.5, 0.9): E k = 0.5 c + 0.1 (10 - c), Var = 0.25 c + 0.09 (10 - c)
    c = np.array([10.0, 0.0])
    k = np.array([5.0, 1.0])  # exactly the means: the estimate is the declared pair, T = 0
    t = item_flip_test(k, c, 10, 0.5, 0.9)
    assert t["statistic"] == pytest.approx(0.0, abs=1e-12) and t["dof"] == 2
    assert t["p_hat"] == pytest.approx(0.5) and t["q_hat"] == pytest.approx(0.9)
    # item 0 only tells p (all ones), item 1 only q: p̂ = 8/10, q̂ = 1 - 3/10; standard errors
    # sqrt(0.25 / 10) and sqrt(0.09 / 10); T is the sum of the two squared z-scores
    t = item_flip_test(np.array([8.0, 3.0]), c, 10, 0.5, 0.9)
    assert t["p_hat"] == pytest.approx(0.8) and t["q_hat"] == pytest.approx(0.7)
    assert t["se_p"] == pytest.approx(math.sqrt(0.025)) and t["se_q"] == pytest.approx(math.sqrt(0.009))
    assert t["statistic"] == pytest.approx((3 / math.sqrt(2.5)) ** 2 + (2 / math.sqrt(0.9)) ** 2)
    # q = 1: an item nobody holds cannot appear; one that does is an exact mismatch
    t = item_flip_test(np.array([5.0, 1.0]), c, 10, 0.5, 1.0)
    assert t["exact_mismatches"] == 1 and not t["ok"]


# ---------------------------------------------------------------------------- no figure of the original in public files
def test_public_files_hold_no_exact_figure_of_the_original(quest_tx, tmp_path):
    url = str(tmp_path / "rel")
    rel = Distorter(0.4, 0.98, key=Key(3)).fit_transform(quest_tx)
    manifest = rel.write(url)
    written = open_release(url).adopt(rel)
    written.report(quest_tx, audience="external", progress=False)
    written.report(quest_tx, progress=False)  # the internal report, beside the folder: not public
    files = public_files(url)
    assert any(name.endswith(".report-external.json") for name in files)
    assert not any(name.endswith((".report.json", ".report.html")) for name in files)
    s0 = rel.owner_s0()
    nnz = int(_csr(quest_tx).nnz)
    blob = b"\n".join(files.values())
    for text in {f"{s0:.7g}", f"{s0:.6g}", repr(s0), f"{s0 * 100:.5g}"}:
        assert text.encode() not in blob, text
    assert str(nnz).encode() not in blob and f"{nnz:,}".encode() not in blob
    assert b'"s0"' not in blob
    assert "s0" not in manifest["release"]["parameters"] and "s0" not in manifest["metadata"]
    # what the release does say about s0 is its own estimate, anybody's to recount
    public = manifest["summary"]["privacy"]
    n_bits = 5000 * 1000
    s_hat = (manifest["nnz"] / n_bits - 0.02) / 0.38
    assert public["s0_estimated_from_release"] == pytest.approx(s_hat, rel=1e-12)
    assert public["s0_estimated_from_release"] != pytest.approx(s0, rel=1e-4)
    external = json.loads(next(v for k, v in files.items() if k.endswith(".report-external.json")))
    ids = {i["id"] for sec in external["sections"] for i in sec["items"]}
    assert "basic_privacy" in ids and "basic_privacy_original" not in ids
    # the owner keeps the exact figures: the console summary and the internal report
    internal = json.loads(open(url + ".report.json").read())
    assert internal["summary"]["privacy"]["s0"] == pytest.approx(s0)
    assert "basic_privacy_original" in {i["id"] for sec in internal["sections"] for i in sec["items"]}


# ---------------------------------------------------------------------------- the item universe
def _target_data(holds: bool) -> TransactionArray:
    """3,000 baskets over items 0..38; basket 17 also holds item 39 when ``holds`` (nobody
    else does): as read from baskets, the input's items are 0..39 or 0..38."""
    rng = np.random.default_rng(0)
    x = (rng.random((3000, 40)) < 0.06).astype(np.int32)
    x[:, 39] = 0
    x[17, 39] = int(holds)
    return TransactionArray.from_scipy(sp.csr_array(x if holds else x[:, :39]), npartitions=3)


def test_the_item_list_is_an_oracle_unless_a_public_catalogue_is_given(tmp_path):
    import pyarrow.parquet as pq

    from ppdm_dask.emask import audit
    from ppdm_dask.errors import InvalidParameter

    def vocabulary(url):
        return pq.read_table(f"{url}/_vocabulary.parquet").column("label").to_pylist()

    out = {}
    for holds in (True, False):
        tx = _target_data(holds)
        for items in (None, list(range(40))):
            url = str(tmp_path / f"{holds}-{items is not None}")
            Distorter(0.5, 0.95, key=Key(3), allow_weak=True, items=items).fit_transform(tx).write(url, allow_composition=True)
            out[holds, items is not None] = url
            assert verify(url, original=tx, key=Key(3)).ok
            assert audit(tx, open_release(url), 0.05, key=Key(3))["reinterrogated_privacy"] is not None
    # the input's own items: item 39 is listed exactly when the target holds it (ε = ∞ for
    # "does the target hold an item nobody else has?", whatever p and q)
    assert 39 in vocabulary(out[True, False]) and 39 not in vocabulary(out[False, False])
    # a public catalogue: the same item list either way; item 39 is distorted like any other
    assert vocabulary(out[True, True]) == vocabulary(out[False, True]) == list(range(40))
    from ..release.helpers import manifest_of

    a, b = manifest_of(out[True, True]), manifest_of(out[False, True])
    assert a["n_items"] == b["n_items"] == 40 and a["release"]["parameters"] == b["release"]["parameters"]
    counts = np.asarray(open_release(out[False, True]).data.item_supports())
    assert counts[39] > 0  # nobody holds it, the noise does (Binomial(3000, 0.05))
    # the catalogue must list every item of the data, of the data's type
    with pytest.raises(InvalidParameter, match="not in the item catalogue") as err:
        Distorter(0.5, 0.95, allow_weak=True, items=list(range(30))).fit(_target_data(True))
    assert "--items" in cli_message(err.value)
    with pytest.raises(InvalidParameter, match="label type"):
        Distorter(0.5, 0.95, allow_weak=True, items=[str(i) for i in range(40)]).fit(_target_data(True))

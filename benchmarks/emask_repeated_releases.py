"""Repeated EMASK releases of one basket set, combined row by row (docs/emask.md#repeated-releases).

Quest T10.I4.D5K.N1K (key 1); releases (0.4, 0.98), (0.5, 0.97), (0.4, 0.98), written with one
key file (Key(7): the third is then the first again) or with three keys, each scenario in a
ledger of its own. The worst case: the owner puts every release's rows back in the input's order
(key and original) and guesses an item present when it is present in all the releases combined;
its precision and recall against one release's, beside what the ledger composed. Then the same
AND as the files hold them (keyed orders), and, for comparison, two distortions drawing the
same random numbers (what one key file gave before every release had streams of its own).

``python benchmarks/emask_repeated_releases.py`` (a minute on one core).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from ppdm_dask import Key, open_release  # noqa: E402
from ppdm_dask.data.quest import quest  # noqa: E402
from ppdm_dask.emask import Distorter, distort  # noqa: E402
from ppdm_dask.emask.attacks import and_attack, on_columns, rows_in_file_order, truth_in_file_order  # noqa: E402
from ppdm_dask.emask.audit import realign  # noqa: E402
from ppdm_dask.emask.composition import composed_basic_privacy  # noqa: E402
from ppdm_dask.ledger import Ledger  # noqa: E402

PQS = [(0.4, 0.98), (0.5, 0.97), (0.4, 0.98)]
SCENARIOS = {"one key file": [Key(7)] * 3, "three keys": [Key(7), Key(8), Key(9)]}


def main() -> None:
    tx = quest("T10.I4.D5K.N1K", key=Key(1)).persist(progress=False)
    x = sp.csr_array(tx.compute(progress=False))
    labels = np.asarray(tx.vocabulary.labels)
    work = tempfile.mkdtemp(prefix="emask-repeated-")

    def aligned(url: str, key: Key) -> sp.csr_array:
        rel = open_release(url)
        back = realign(
            rel.data, rel.owner_stream_key(key, tx), int(rel.manifest["release"]["row_order"]["files"]), tx.partition_rows
        )
        return on_columns(sp.csr_array(back.compute(progress=False)), np.asarray(back.vocabulary.labels), labels)

    def score(m: sp.csr_array) -> str:
        hit = sp.csr_array(m.multiply(x)).nnz
        return f"precision {hit / m.nnz:.3f} recall {hit / x.nnz:.3f}"

    for name, keys in SCENARIOS.items():
        ledger = Ledger(f"{work}/ledger-{name.replace(' ', '-')}")
        urls, comps = [], []
        for i, ((p, q), key) in enumerate(zip(PQS, keys)):
            est = Distorter(p, q, key=key, allow_weak=True, ledger=ledger)
            urls.append(f"{work}/{name.replace(' ', '-')}-{i}")
            manifest = est.fit_transform(tx).write(urls[-1], allow_composition=True, notify=lambda line: None)
            comps.append(manifest["release"]["ledger"]["composition"])
        s0 = est.s0_
        rows = [aligned(u, k) for u, k in zip(urls, keys)]
        print(f"{name} (s0 = {s0:.5f})")
        combined = rows[0]
        for r in range(3):
            if r:
                combined = sp.csr_array(combined.multiply(rows[r]))
            c = comps[r]
            print(
                f"  {r + 1} release(s), rows lined up, AND: {score(combined)}; ledger: {c['releases']} release(s), "
                f"eps/item {c['epsilon_per_item']:.3f}, BP {composed_basic_privacy(PQS[: c['releases']], s0):.2f} %"
            )
        files = [on_columns(*rows_in_file_order(u), labels) for u in urls[:2]]
        fo = and_attack(files[0], files[1], truth_in_file_order(urls[0], keys[0], tx))
        print(
            f"  2 releases as the files hold them, AND: precision {fo['precision']:.3f} "
            f"(rows at random positions {fo['random_pairs_precision']:.3f})"
        )
    same = Key(99)
    d1 = sp.csr_array(distort(tx, *PQS[0], key=same).compute(progress=False))
    d2 = sp.csr_array(distort(tx, *PQS[1], key=same).compute(progress=False))
    print(f"two distortions from the same random numbers, rows lined up, AND: {score(sp.csr_array(d1.multiply(d2)))}")


if __name__ == "__main__":
    main()

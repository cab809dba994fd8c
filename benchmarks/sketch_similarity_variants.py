"""The similarity variants tried for mining on sketches (docs/sketches.md#what-was-tried).

10-NN accuracy on 20 Newsgroups (2:1 split of ``evaluation.train_test_split(key=11)``), δ-anonymous
sketches of every document with one generator, every variant ranking the same sketches. A
standalone numpy harness (not a suite of ``run.py``): ``python benchmarks/sketch_similarity_variants.py``.
Writes ``results/sketch_similarity_variants.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
DELTAS = (0.2, 0.5, 1.0)
K = 10


def sketches(delta: float):
    sys.path.insert(0, str(HERE))
    from _sketch_data import newsgroups

    from ppdm_dask.random import Key
    from ppdm_dask.sketch.delta import _block_components
    from ppdm_dask.sketch.evaluation import train_test_split
    from ppdm_dask.sketch.generator import SketchGenerator

    X, y, _ = newsgroups()
    X = sp.csr_array(X, dtype=np.float64)
    m = np.asarray(_block_components(X, None, delta, 256), dtype=np.int64)
    S = SketchGenerator.from_key(Key(5)).sketch_csr(X.indptr, X.indices, X.data, X.shape[0], m, 256)
    train, test = train_test_split(X.shape[0], key=11)
    return S, m, y, train, test


def variants(lam_eb: float):
    def same(d):
        return d["dots"] / np.sqrt(d["sa"] * d["sb"])

    def full(d):
        return d["dots"] / np.sqrt(d["fa"] * d["fb"])

    def shrink(f, lam):
        return lambda d: f(d) * d["q"] / (d["q"] + lam)

    return {
        "same-component cosine (old)": same,
        "dot / full-sketch norms": full,
        "full-sketch norms, shrunk lam=64": shrink(full, 64.0),
        "same-component, shrunk lam=16": shrink(same, 16.0),
        "same-component, shrunk lam=64": shrink(same, 64.0),
        f"same-component, shrunk lam=EB ({lam_eb:.0f})": shrink(same, lam_eb),
        "lower confidence bound z=2": lambda d: same(d) - 2 * np.sqrt((1 + same(d) ** 2) / d["q"]),
    }


def accuracy(S, m, y, train, test, score) -> tuple[float, float]:
    P = np.zeros((S.shape[0], S.shape[1] + 1))
    np.cumsum(S * S, axis=1, out=P[:, 1:])
    full = P[np.arange(m.size), m] / np.maximum(m, 1)
    live = train[m[train] > 0]
    St, mt, Pt, ft, yt = S[live], m[live], P[live], full[live], y[live]
    prior = np.bincount(yt, minlength=y.max() + 1) / live.size
    rng = np.random.default_rng(0)
    correct, hubs = 0, np.zeros(live.size)
    for lo in range(0, test.size, 1000):
        q = test[lo : lo + 1000]
        mm = np.minimum.outer(m[q], mt)
        d = {
            "q": mm,
            "dots": (S[q] @ St.T) / np.maximum(mm, 1),
            "sa": np.take_along_axis(P[q], mm, 1) / np.maximum(mm, 1),
            "sb": Pt[np.arange(mt.size)[None, :], mm] / np.maximum(mm, 1),
            "fa": full[q][:, None],
            "fb": ft[None, :],
        }
        with np.errstate(all="ignore"):
            sc = np.nan_to_num(score(d), nan=0.0)
        sc = np.where(mm > 0, sc, -np.inf)
        idx = np.argpartition(-sc, K, axis=1)[:, :K]
        idx = np.take_along_axis(idx, np.argsort(-np.take_along_axis(sc, idx, 1), axis=1), 1)
        pred = np.empty(q.size, np.int64)
        for i, row in enumerate(yt[idx]):
            c = np.bincount(row, minlength=prior.size)
            pred[i] = next(v for v in row if c[v] == c.max())
        supp = m[q] == 0
        pred[supp] = rng.choice(prior.size, supp.sum(), p=prior)
        correct += int((pred == y[q]).sum())
        np.add.at(hubs, idx[~supp].ravel(), 1)
    return correct / test.size, hubs.max() / test.size


def main() -> None:
    from ppdm_dask.sketch._mining_kernels import estimate_shrinkage, shrinkage_sample

    out = []
    for delta in DELTAS:
        S, m, y, train, test = sketches(delta)
        sample = train[shrinkage_sample(m[train])]  # as SketchKNNClassifier.fit does
        lam, _ = estimate_shrinkage(S[sample], m[sample])
        for name, score in variants(lam).items():
            acc, hub = accuracy(S, m, y, train, test, score)
            out.append({"delta": delta, "variant": name, "accuracy": acc, "max_hub_share": hub})
            print(f"δ={delta}: {name:42s} accuracy {acc:.3f}  largest hub {100 * hub:.1f}% of queries", flush=True)
    (HERE / "results" / "sketch_similarity_variants.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

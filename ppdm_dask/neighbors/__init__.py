"""Distributed k-nearest-neighbour search on TransactionArrays.

* :func:`knn` — exact kNN graph: ALLPAIRS over row blocks with a TREE merge (``scope="global"``)
  or within partitions (``scope="partition"``, the paper's linear-time variant).
* :func:`approximate_knn` — candidates from keyed MinHash-sorted windows, exact re-ranking.
* :func:`recall` — quality of an approximate graph against the exact one.

The graph carries what k-variance anonymity (docs/sketches.md#k-variance-anonymity) needs: neighbours, distances, dot
products ``x.y``, ``sum_t x_t^2 y_t^2`` and the squared norms.
"""

from .approximate import approximate_knn, recall
from .exact import METRICS, SCOPES, KNNGraph, knn

__all__ = ["knn", "approximate_knn", "recall", "KNNGraph", "METRICS", "SCOPES"]

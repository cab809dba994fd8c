"""Sketch-based privacy for sparse text and binary data (Aggarwal & Yu; see docs/sketches.md).

Records are published as AMS-style ±1 sketches with a shared, public generator
(:class:`SketchGenerator`); the number of components per record controls the variance of any
reconstruction. :class:`DeltaAnonymizer` chooses it per record (δ-anonymity),
:class:`KVarianceAnonymizer` from the k nearest neighbours (k-variance anonymity); both return
a :class:`SketchRelease` (``.data`` the sketches; ``write`` / ``verify``);
:class:`SketchKNNClassifier` and :class:`SketchKMeans` mine the published sketches;
:mod:`.primitives` estimates attributes, dot products, norms, distances, cosines and centroids
from the published sketches.
"""

from __future__ import annotations

from . import primitives
from .delta import DeltaAnonymizer, anonymize_record, delta_components
from .generator import SketchGenerator
from .kvariance import KVarianceAnonymizer, kvariance_components
from .mining import SketchKMeans, SketchKNNClassifier, average_cosine_similarity, classification_accuracy
from .primitives import *  # noqa: F403  (the estimators on sketches: their list is primitives.__all__)
from .release import SketchRelease
from .sketches import SketchArray, read_sketches, sketch

__all__ = [
    # generator and published sketches
    "SketchGenerator",
    "SketchArray",
    "sketch",
    "read_sketches",
    "SketchRelease",
    # anonymizers
    "DeltaAnonymizer",
    "anonymize_record",
    "delta_components",
    "KVarianceAnonymizer",
    "kvariance_components",
    # mining on sketches
    "SketchKNNClassifier",
    "SketchKMeans",
    "average_cosine_similarity",
    "classification_accuracy",
    # primitives on sketches and their exact variances (docs/sketches.md#estimators-and-their-variances)
    *primitives.__all__,
]

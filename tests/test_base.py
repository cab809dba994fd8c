"""The estimator contract shared by every family (scikit-learn's rules)."""

from __future__ import annotations

import inspect
import pickle

import pytest

from ppdm_dask.base import Estimator, Transformer, check_is_fitted
from ppdm_dask.errors import InvalidParameter, NotFittedError
from ppdm_dask.random import Key


class Doubler(Transformer):
    def __init__(self, factor=2, *, key=None, name="d"):
        self.factor = factor
        self.key = key
        self.name = name

    def fit(self, X, *, client=None, progress=False):
        self._resolve_key()
        self._X = X
        self.total_ = sum(X) * self.factor
        self.report_ = {"total": self.total_}
        return self

    def release(self, *, client=None, progress=False):
        check_is_fitted(self)
        return self.transform(self._X)

    def transform(self, X):
        check_is_fitted(self)
        return [x * self.factor for x in X]


def test_params_repr_and_fitting():
    d = Doubler(3, key=Key(99))
    assert d.get_params() == {"factor": 3, "key": Key(99), "name": "d"}
    assert repr(d) == "Doubler(factor=3, key=<secret>)" and "99" not in repr(d)
    assert d.set_params(factor=4) is d and d.factor == 4
    with pytest.raises(InvalidParameter, match="no parameter 'fator'"):
        d.set_params(fator=1)
    with pytest.raises(NotFittedError, match="call fit"):
        d.report_
    with pytest.raises(NotFittedError):
        d.transform([1])
    with pytest.raises(AttributeError):
        d.something_else
    with pytest.raises(NotFittedError):
        d.release()
    assert d.fit_transform([1, 2]) == [4, 8] and d.report_ == {"total": 12}
    assert d.fit_release([3]) == [12] and d.release() == [12] and d.key_ == Key(99)
    clone = type(d)(**d.get_params())
    assert clone.get_params() == d.get_params() and "report_" not in vars(clone)
    assert pickle.loads(pickle.dumps(d)).report_ == {"total": 12}


def test_star_args_are_refused():
    class Bad(Estimator):
        def __init__(self, *args):
            self.args = args

        def fit(self, X, *, client=None, progress=False):
            return self

        def release(self, *, client=None, progress=False):
            return None

    with pytest.raises(TypeError, match="name its parameters"):
        Bad().get_params()


def test_the_key_is_resolved_once_at_fit():
    fixed, fresh = Doubler(key=7).fit([1]), Doubler().fit([1])
    assert fixed.key_ == Key(7) and isinstance(fresh.key_, Key)  # int keys are wrapped; None draws one
    assert fresh.fit([2]).key_ != Doubler().fit([2]).key_  # a fresh secret key per estimator ...
    assert repr(fresh) == "Doubler()" and "key_" not in repr(fixed)  # ... never shown
    with pytest.raises(NotFittedError):
        Doubler(key=7).key_


# ---------------------------------------------------------------- every family follows the key rule
def _families():
    """``name -> (make(key), data, released values of a release)`` for every estimator family,
    on small data."""
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    from ppdm_dask.anonymity import AccessControlAnonymizer, KAnonymizer, KmAnonymizer
    from ppdm_dask.condensation import Condenser, StreamingCondenser, privacy_levels
    from ppdm_dask.data.datasets import load_sample, sample_path
    from ppdm_dask.data.tables import read_table
    from ppdm_dask.data.transactions import TransactionArray
    from ppdm_dask.emask import Distorter
    from ppdm_dask.krimp import KrimpGenerator
    from ppdm_dask.sketch import DeltaAnonymizer, KVarianceAnonymizer

    rng = np.random.default_rng(0)
    baskets = TransactionArray.from_scipy(sp.csr_array((rng.random((200, 30)) < 0.2).astype(float)), npartitions=2)
    x = (rng.random((120, 20)) < 0.3) * rng.integers(1, 4, size=(120, 20))
    records = TransactionArray.from_scipy(sp.csr_array(x.astype(float)), npartitions=2)
    X = rng.uniform(-10, 10, size=(4, 3))[rng.integers(4, size=240)] + rng.standard_normal((240, 3))
    table = pd.DataFrame(X, columns=["a", "b", "c"]).assign(level=privacy_levels(240, 2, 5, key=1))
    people = read_table(str(sample_path("people")), dtype=["age=int"])
    qi = ["age", "sex", "zip"]

    def lists(rel):
        return sorted(map(sorted, rel.data.to_lists()))

    def sketches(rel):
        values, m = rel.data.compute(progress=False)
        return [np.asarray(values).tolist(), np.asarray(m).tolist()]

    def frame(rel):
        return rel.data.compute().round(12).values.tolist()

    def table_rows(rel):  # a table is not random: only the keyed order of its written rows is
        return [rel.data.compute().values.tolist(), rel.stream_key]

    return {
        "emask": (lambda key: Distorter(0.5, 0.9, key=key, allow_weak=True), baskets, lists),
        "delta": (lambda key: DeltaAnonymizer(delta=2.0, m_max=8, key=key), records, sketches),
        "k-variance": (lambda key: KVarianceAnonymizer(k=2, m_max=8, key=key), records, sketches),
        "condenser": (lambda key: Condenser(privacy_column="level", key=key), table, frame),
        "streaming": (lambda key: StreamingCondenser(privacy_column="level", key=key), table, frame),
        "k-anonymity": (
            lambda key: KAnonymizer(qi, k=5, identifiers="name", sensitive="diagnosis", method="mondrian", key=key),
            people,
            table_rows,
        ),
        "access-control": (
            lambda key: AccessControlAnonymizer(
                [{"role": "r", "bound": 5, "where": {"age": [20, 30]}}],
                qi,
                k=5,
                identifiers="name",
                sensitive="diagnosis",
                key=key,
            ),
            people,
            table_rows,
        ),
        "km": (lambda key: KmAnonymizer(k=3, m=2, fan_out=4, key=key), records, lambda rel: [lists(rel), rel.stream_key]),
        "krimp": (lambda key: KrimpGenerator(2, key=key), load_sample("iris"), lists),
    }


FAMILIES = ["emask", "delta", "k-variance", "condenser", "streaming", "k-anonymity", "access-control", "km", "krimp"]


@pytest.fixture(scope="module")
def families():
    return _families()


@pytest.mark.parametrize("name", FAMILIES)
def test_every_release_of_a_fit_has_the_fitted_key(families, name):
    make, data, values = families[name]
    est = make(Key(11)).fit(data)
    first, second = est.release(), est.release()
    assert est.key_ == Key(11) and first.key is est.key_ and second.key is est.key_
    assert values(first) == values(second)  # one fitted key: the same released values
    again = make(Key(11)).fit(data).release()
    other = make(Key(12)).fit(data).release()
    assert values(again) == values(first) and values(other) != values(first)  # a different key, different values


@pytest.mark.parametrize("name", FAMILIES)
def test_without_a_key_one_is_drawn_at_fit(families, name):
    make, data, values = families[name]
    est = make(None).fit(data)
    assert isinstance(est.key_, Key)  # set by fit, before any release or write
    rel = est.release()
    assert rel.key is est.key_ and est.release().key is est.key_
    assert values(est.release()) == values(rel)
    assert make(None).fit(data).key_ != est.key_


def test_a_release_keeps_its_key_through_write(tmp_path):
    from ppdm_dask.release import Release

    make, data, _ = _families()["emask"]
    est = make(None).fit(data)
    rel = est.release()
    rel.write(str(tmp_path / "r"), ledger=None)
    assert rel.key is est.key_  # write used the key of the fit, drew none
    back = Release.open(str(tmp_path / "r"))
    assert back.key is None  # the files never hold it ...
    assert back.adopt(rel).key is est.key_  # ... the owner's release in memory does


def test_a_release_built_directly_gets_its_key_at_construction():
    from ppdm_dask.emask.release import DistortedRelease

    a = DistortedRelease(None, method="emask", parameters={"p": 0.5, "q": 0.9})
    b = DistortedRelease(None, method="emask", parameters={"p": 0.5, "q": 0.9})
    assert isinstance(a.key, Key) and a.key != b.key and a.stream_key is not None
    given = DistortedRelease(None, method="emask", parameters={"p": 0.5, "q": 0.9}, key=Key(3))
    assert given.key == Key(3)


def test_transform_only_where_it_transforms_other_data(families):
    from ppdm_dask.emask import Distorter
    from ppdm_dask.sketch import DeltaAnonymizer

    estimators = {name: make(None) for name, (make, _, _) in families.items()}
    assert set(estimators) == set(FAMILIES)
    for name, est in estimators.items():
        assert callable(est.release) and callable(est.fit_release), name
        assert hasattr(est, "transform") == hasattr(est, "fit_transform") == isinstance(est, Transformer), name
    assert {type(e) for e in estimators.values() if isinstance(e, Transformer)} == {Distorter, DeltaAnonymizer}

    def concrete(cls):
        for sub in cls.__subclasses__():
            if not inspect.isabstract(sub) and sub.__module__.startswith("ppdm_dask."):
                yield sub
            yield from concrete(sub)

    assert set(concrete(Estimator)) == {type(e) for e in estimators.values()}  # no family left out above


def test_a_transformer_transforms_other_data_with_the_fitted_parameters(families):
    make, data, values = families["delta"]
    est = make(Key(5)).fit(data)
    assert est.transform(data).key is est.key_
    assert values(est.transform(data)) == values(est.release())

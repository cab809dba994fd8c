"""The estimator contract shared by every family (scikit-learn's rules)."""

from __future__ import annotations

import pickle

import pytest

from ppdm_dask.base import Estimator, check_is_fitted
from ppdm_dask.errors import InvalidParameter, NotFittedError
from ppdm_dask.random import Key


class Doubler(Estimator):
    def __init__(self, factor=2, *, key=None, name="d"):
        self.factor = factor
        self.key = key
        self.name = name

    def fit(self, X, *, client=None, progress=False):
        self.total_ = sum(X) * self.factor
        self.report_ = {"total": self.total_}
        return self

    def transform(self, X=None):
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
    assert d.fit_transform([1, 2]) == [4, 8] and d.report_ == {"total": 12}
    clone = type(d)(**d.get_params())
    assert clone.get_params() == d.get_params() and "report_" not in vars(clone)
    assert pickle.loads(pickle.dumps(d)).report_ == {"total": 12}


def test_star_args_are_refused():
    class Bad(Estimator):
        def __init__(self, *args):
            self.args = args

        def fit(self, X, *, client=None, progress=False):
            return self

        def transform(self, X=None):
            return X

    with pytest.raises(TypeError, match="name its parameters"):
        Bad().get_params()

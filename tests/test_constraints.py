"""Declared parameter constraints (:mod:`ppdm_dask.constraints`) and the estimators' one check
of them (:meth:`ppdm_dask.base.Estimator.validate_params`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdm_dask.base import Estimator
from ppdm_dask.constraints import Interval, Options, Predicate, check, validate
from ppdm_dask.errors import InvalidParameter


@pytest.mark.parametrize(
    "closed, left_in, right_in", [("both", True, True), ("left", True, False), ("right", False, True), ("neither", False, False)]
)
def test_interval_bounds_follow_closed(closed, left_in, right_in):
    iv = Interval(float, 0, 1, closed=closed)
    assert iv.accepts(0) is left_in and iv.accepts(1) is right_in and iv.accepts(0.5)
    assert not iv.accepts(-1e-9) and not iv.accepts(1 + 1e-9)


def test_integer_interval_refuses_bools_floats_and_returns_python_ints():
    iv = Interval(int, 1, None)
    for bad in (True, 1.0, "1", None, 0, -3):
        assert not iv.accepts(bad), bad
    assert iv.accepts(np.int64(7)) and type(check("k", np.int64(7), [iv])) is int


def test_float_interval_refuses_nan_inf_and_bools():
    iv = Interval(float, 0, None)
    for bad in (math.nan, math.inf, True, "0.5"):
        assert not iv.accepts(bad), bad
    assert check("laplace", 2, [iv]) == 2.0 and type(check("laplace", np.float32(0.5), [iv])) is float


def test_options_compare_values_not_truthiness():
    opt = Options(("random", "columns"))
    assert opt.accepts("random") and opt.accepts(np.str_("columns"))
    assert not opt.accepts("Random") and not opt.accepts(None) and not opt.accepts(np.array(["random"]))
    assert not Options((1, 2)).accepts(True)  # True == 1, but True is not the option 1


def test_the_first_met_constraint_normalizes():
    cons = [None, Interval(int, 1, None), Interval(float, 0, 1, closed="right")]
    assert check("min_support", None, cons) is None
    assert check("min_support", 3, cons) == 3 and type(check("min_support", 3, cons)) is int
    assert check("min_support", 0.25, cons) == 0.25
    with pytest.raises(InvalidParameter) as e:
        check("min_support", 0.0, cons)
    assert e.value.parameter == "min_support"
    assert str(e.value) == "min_support must be an integer >= 1 or a number in (0, 1] (or None), got 0.0"


def test_validate_names_the_first_refused_parameter_and_passes_undeclared_values():
    cons = {"k": [Interval(int, 1, None)], "m": [Interval(int, 1, None)], "kind": [Options({"a"})]}
    assert validate(cons, {"k": np.int32(2), "m": 1, "other": object}) == {"k": 2, "m": 1, "other": object}
    with pytest.raises(InvalidParameter, match=r"^m must be an integer >= 1, got 0$") as e:
        validate(cons, {"k": 2, "m": 0, "kind": "b"})
    assert e.value.parameter == "m"
    with pytest.raises(InvalidParameter, match=r"^kind must be one of 'a', got 'b'$"):
        validate(cons, {"kind": "b"})


def test_bool_type_predicate_and_key_entries():
    assert check("closed", True, [bool]) is True
    with pytest.raises(InvalidParameter, match="closed must be True or False, got 1"):
        check("closed", 1, [bool])
    even = Predicate(lambda v: isinstance(v, int) and v % 2 == 0, "an even integer")
    assert check("n", 4, [even]) == 4
    with pytest.raises(InvalidParameter, match="n must be an even integer, got 3"):
        check("n", 3, [even])
    secret = object()
    assert check("key", secret, ["key"]) is secret
    with pytest.raises(TypeError):
        check("x", 1, ["no such constraint"])


class _Toy(Estimator):
    _parameter_constraints = {"k": [Interval(int, 2, None)], "how": [Options(("a", "b"))]}

    def __init__(self, k=2, how="a", note=None):
        self.k, self.how, self.note = k, how, note

    def fit(self, X, *, client=None, progress=False):
        self.params_ = self.validate_params()
        return self

    def release(self, *, client=None, progress=False):
        return None


def test_estimator_checks_its_declared_parameters_at_fit_only():
    est = _Toy(k=1)  # construction stores, never checks (get_params/set_params/clone)
    with pytest.raises(InvalidParameter, match="k must be an integer >= 2, got 1") as e:
        est.fit(None)
    assert e.value.parameter == "k"
    assert _Toy(k=np.int64(3), how="b", note="x").fit(None).params_ == {"k": 3, "how": "b"}


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: __import__("ppdm_dask.emask", fromlist=["Distorter"]).Distorter(0.5, 0.9, privacy_floor=101), "privacy_floor"),
        (lambda: __import__("ppdm_dask.emask", fromlist=["Distorter"]).Distorter(0.5, 0.9, epsilon_budget=0), "epsilon_budget"),
        (lambda: __import__("ppdm_dask.sketch", fromlist=["DeltaAnonymizer"]).DeltaAnonymizer(delta=-1.0), "delta"),
        (lambda: __import__("ppdm_dask.krimp", fromlist=["KrimpGenerator"]).KrimpGenerator(laplace=-1), "laplace"),
    ],
)
def test_family_estimators_refuse_at_fit_naming_the_parameter(make, name):
    with pytest.raises(InvalidParameter) as e:
        make().fit([[1, 2], [2, 3]])
    assert e.value.parameter == name and str(e.value).startswith(f"{name} must be")

"""Declared parameter constraints: the constraint objects, and every public strategy's
declarations checked with one message when ``fit`` starts."""
import inspect
import math
import re
from numbers import Integral, Real

import numpy as np
import pytest

import clusterkit
from clusterkit import (Breathing, Clusterer, EStep, FittedSeeder, HardMStep, RefinerSequence,
                        Seeder)
from clusterkit._engine.constraints import (InstanceOf, Interval, Options, Satisfies,
                                            check_parameters, describe)
from clusterkit._engine.strategy import _Strategy

from ._helpers import composition

STRATEGIES = sorted(
    (cls for cls in vars(clusterkit).values()
     if isinstance(cls, type) and issubclass(cls, _Strategy) and not inspect.isabstract(cls)),
    key=lambda cls: cls.__name__)
X = np.random.RandomState(0).normal(size=(200, 2))
N_CLUSTERS = 8


def _default(cls):
    """An instance with the defaults (the arguments without a default given)."""
    if cls is RefinerSequence:
        return cls((Breathing(),))
    return cls(Clusterer(2)) if cls is FittedSeeder else cls()


def _declared(cls):
    return [pytest.param(cls, name, id=f"{cls.__name__}.{name}")
            for name in cls._parameter_constraints]


DECLARED = [param for cls in STRATEGIES for param in _declared(cls)]


class _Wrong:
    """A value of a type no constraint takes."""

    def __repr__(self):
        return "<wrong>"


# --- the constraint objects -------------------------------------------------------------------

@pytest.mark.parametrize("constraint, phrase", [
    (Interval(Integral, 1), "an integer >= 1"),
    (Interval(Integral, None, 3), "an integer <= 3"),
    (Interval(Real, 0, closed="neither"), "a number > 0"),
    (Interval(Real, None, 0, closed="left"), "a number < 0"),
    (Interval(Real, 0, 1, closed="right"), "a number in (0, 1]"),
    (Interval(Real, 0, 1, closed="left"), "a number in [0, 1)"),
    (Interval(Real, 0, finite=True), "a finite number >= 0"),
    (Interval(Real), "a number"),
])
def test_intervals_say_what_they_allow(constraint, phrase):
    assert describe([constraint]) == phrase


def test_descriptions_list_the_alternatives():
    assert describe([Options("qe", "free_energy")]) == "'qe' or 'free_energy'"
    assert describe([Interval(Integral, 1), Options("auto", "all"), None]) == (
        "an integer >= 1, 'auto', 'all' or None")
    assert describe([InstanceOf(EStep), None]) == "an EStep or None"
    assert describe([InstanceOf(Seeder)]) == "a Seeder"
    assert describe([Satisfies(callable, "a callable")]) == "a callable"


def test_interval_ends_and_kinds():
    positive = Interval(Real, 0, closed="neither")
    assert positive.accepts(1e-300) and positive.accepts(math.inf)
    assert not positive.accepts(0.0) and not positive.accepts(math.nan)
    assert not Interval(Real, 0, finite=True).accepts(math.inf)
    unit = Interval(Real, 0, 1, closed="left")
    assert unit.accepts(0) and unit.accepts(np.float32(0.5)) and not unit.accepts(1.0)
    count = Interval(Integral, 1)
    assert count.accepts(1) and count.accepts(np.int64(7))
    assert not count.accepts(0) and not count.accepts(2.0)
    # True is a switch, not a number
    for constraint in (count, positive, unit):
        assert not constraint.takes_type(True) and not constraint.accepts(True)


class _Owner:
    def __init__(self, **params):
        vars(self).update(params)


@pytest.mark.parametrize("value, error", [
    (0, ValueError),        # an integer, out of range
    ("many", ValueError),   # a string, not an option
    (2.5, TypeError),       # no constraint takes a float
    (True, TypeError),
    (None, TypeError),
])
def test_type_or_value_error(value, error):
    constraints = {"size": [Interval(Integral, 1), Options("auto")]}
    with pytest.raises(error, match=r"^_Owner: size must be an integer >= 1 or 'auto'; got "
                                    + re.escape(repr(value)) + r"\.$"):
        check_parameters(_Owner(size=value), constraints)
    check_parameters(_Owner(size="auto"), constraints)
    check_parameters(_Owner(size=3), constraints)


def test_long_values_are_shown_by_type():
    with pytest.raises(TypeError, match=r"^_Owner: centers must be None; got a ndarray\.$"):
        check_parameters(_Owner(centers=np.zeros((50, 50))), {"centers": [None]})


def test_a_researchers_strategy_gets_its_constraints_checked_first():
    """A subclass's own ``_validate`` runs after its declared constraints, and one without
    its own ``_validate`` is checked too."""
    calls = []

    class Damped(HardMStep):
        _parameter_constraints = {"damping": [Interval(Real, 0, 1)]}

        def __init__(self, damping=0.5):
            self.damping = damping

        def _validate(self, X, n_clusters, composition):
            calls.append(self.damping)

    class Plain(Damped):
        pass

    Damped()._validate(X, N_CLUSTERS, composition())
    assert calls == [0.5]
    with pytest.raises(ValueError, match=r"^Damped: damping must be a number in \[0, 1\]; "
                                         r"got 2\.0\.$"):
        Damped(2.0)._validate(X, N_CLUSTERS, composition())
    assert calls == [0.5]
    with pytest.raises(ValueError, match=r"^Plain: damping must be"):
        Clusterer(2, mstep=Plain(-1.0)).fit(X)


# --- every public strategy --------------------------------------------------------------------

@pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
def test_every_parameter_is_declared(cls):
    assert sorted(cls._parameter_constraints) == sorted(cls._get_param_names())


@pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
def test_defaults_are_accepted(cls):
    strategy = _default(cls)
    strategy._check_parameters()
    strategy._validate(X, N_CLUSTERS, composition())


@pytest.mark.parametrize("cls, name", DECLARED)
def test_a_value_of_the_wrong_type_is_a_type_error(cls, name):
    strategy = _default(cls).set_params(**{name: _Wrong()})
    expected = (f"{cls.__name__}: {name} must be {describe(cls._parameter_constraints[name])}; "
                "got <wrong>.")
    with pytest.raises(TypeError, match="^" + re.escape(expected) + "$"):
        strategy._validate(X, N_CLUSTERS, composition())


#: Values of the types the constraints take, at least one outside every declared range.
CANDIDATES = [-1, 0, -0.5, 1.5, math.nan, math.inf, "no-such-option"]


@pytest.mark.parametrize("cls, name", DECLARED)
def test_a_value_out_of_range_is_a_value_error(cls, name):
    constraints = cls._parameter_constraints[name]
    wrong = [value for value in CANDIDATES
             if any(c is not None and c.takes_type(value) for c in constraints)
             and not any(c is not None and c.accepts(value) for c in constraints)]
    if not any(isinstance(c, (Interval, Options)) for c in constraints):
        assert not wrong  # an instance or a duck type: only the wrong type is refused
        return
    assert wrong
    for value in wrong:
        strategy = _default(cls).set_params(**{name: value})
        expected = f"{cls.__name__}: {name} must be {describe(constraints)}; got {value!r}."
        with pytest.raises(ValueError, match="^" + re.escape(expected) + "$"):
            strategy._validate(X, N_CLUSTERS, composition())

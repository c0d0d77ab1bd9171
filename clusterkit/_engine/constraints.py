"""Declared constraints on a strategy's hyper-parameters, and the one check that reads them.

A strategy class lists what each of its constructor arguments may be in its class attribute
``_parameter_constraints`` (see :class:`~clusterkit._engine.strategy._Strategy`), e.g.::

    _parameter_constraints = {
        "batch_size": [Interval(Integral, 1)],
        "decay": [Interval(Real, 0, 1, closed="right")],
        "spread": [Options("deviation", "standard_error")],
        "step": [Interval(Real, 0, closed="neither", finite=True), None],
    }

A value is valid if it satisfies any constraint of its list (``None`` in a list allows
``None``). :func:`check_parameters` refuses an invalid value with one message,
``"MiniBatch: batch_size must be an integer >= 1; got 0."``: a ``TypeError`` if no constraint
takes a value of its type (a float for an integer, a string for a number, anything but a
:class:`~clusterkit.Seeder` for a seeder), a ``ValueError`` otherwise (an integer out of range,
an unknown string option, NaN).
"""
import math
from numbers import Integral

__all__ = ["Interval", "Options", "InstanceOf", "Satisfies", "check_parameters", "check_value",
           "describe"]


class _Constraint:
    """What one constraint says about a value."""

    def takes_type(self, value):
        """Whether ``value`` is of a type this constraint can accept (else ``TypeError``)."""
        raise NotImplementedError

    def accepts(self, value):
        """Whether ``value`` satisfies the constraint."""
        raise NotImplementedError

    def phrases(self):
        """What the constraint allows, as phrases of the message (``["an integer >= 1"]``)."""
        raise NotImplementedError


def _is_number(value, kind):
    # bool is an Integral, but True is a switch, not a count or a tolerance
    return isinstance(value, kind) and not isinstance(value, bool)


class Interval(_Constraint):
    """Integers or real numbers in an interval.

    Parameters
    ----------
    kind : {numbers.Integral, numbers.Real}
        Integers (``bool`` excluded) or real numbers (integers included, ``bool``
        excluded).
    low, high : int or float or None, default=None
        The ends; ``None`` leaves that side unbounded.
    closed : {"both", "left", "right", "neither"}, default="both"
        Which ends belong to the interval.
    finite : bool, default=False
        Refuse ``inf`` and ``-inf`` even where an unbounded side allows them (NaN fails every
        comparison and is refused whenever there is an end).
    """

    def __init__(self, kind, low=None, high=None, *, closed="both", finite=False):
        self.kind = kind
        self.low, self.high = low, high
        self.low_closed = closed in ("both", "left")
        self.high_closed = closed in ("both", "right")
        self.finite = finite

    def takes_type(self, value):
        return _is_number(value, self.kind)

    def accepts(self, value):
        if not self.takes_type(value):
            return False
        if self.finite and not math.isfinite(value):
            return False
        if self.low is not None and not (value >= self.low if self.low_closed
                                         else value > self.low):
            return False
        return self.high is None or bool(value <= self.high if self.high_closed
                                         else value < self.high)

    def phrases(self):
        noun = "an integer" if self.kind is Integral else (
            "a finite number" if self.finite else "a number")
        if self.low is not None and self.high is not None:
            return [f"{noun} in {'[' if self.low_closed else '('}{self.low}, "
                    f"{self.high}{']' if self.high_closed else ')'}"]
        if self.low is not None:
            return [f"{noun} {'>=' if self.low_closed else '>'} {self.low}"]
        if self.high is not None:
            return [f"{noun} {'<=' if self.high_closed else '<'} {self.high}"]
        return [noun]


class Options(_Constraint):
    """One of a few values (strings, in the order the message lists them)."""

    def __init__(self, *options):
        self.options = options

    def takes_type(self, value):
        return isinstance(value, tuple({type(option) for option in self.options}))

    def accepts(self, value):
        return self.takes_type(value) and value in self.options

    def phrases(self):
        return [repr(option) for option in self.options]


class InstanceOf(_Constraint):
    """An instance of a class (a :class:`~clusterkit.Seeder`, say)."""

    def __init__(self, cls):
        self.cls = cls

    def takes_type(self, value):
        return isinstance(value, self.cls)

    accepts = takes_type

    def phrases(self):
        name = self.cls.__name__
        return [f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"]


class Satisfies(_Constraint):
    """Any value ``test(value)`` is true for (a duck-typed kind, refused with ``TypeError``).

    Parameters
    ----------
    test : callable
        ``test(value) -> bool``.
    description : str
        What ``test`` accepts, as the message says it ("a scipy.sparse matrix").
    """

    def __init__(self, test, description):
        self.test = test
        self.description = description

    def takes_type(self, value):
        return bool(self.test(value))

    accepts = takes_type

    def phrases(self):
        return [self.description]


class _IsNone(_Constraint):
    def takes_type(self, value):
        return value is None

    accepts = takes_type

    def phrases(self):
        return ["None"]


def _as_constraint(constraint):
    return _IsNone() if constraint is None else constraint


def _listed(phrases):
    return phrases[0] if len(phrases) == 1 else f"{', '.join(phrases[:-1])} or {phrases[-1]}"


def _shown(value):
    """The value as the message shows it: its repr, or its type when that is long."""
    text = repr(value)
    return text if len(text) <= 80 and "\n" not in text else f"a {type(value).__name__}"


def describe(constraints):
    """What a list of constraints allows, as the message says it."""
    return _listed([phrase for constraint in constraints
                    for phrase in _as_constraint(constraint).phrases()])


def check_parameters(owner, constraints):
    """Raise unless every parameter of ``owner`` named in ``constraints`` satisfies one of its
    constraints.

    Parameters
    ----------
    owner : object
        The object whose attributes are checked (a strategy; its class names the messages).
    constraints : dict
        Parameter name -> list of constraints (:class:`Interval`, :class:`Options`,
        :class:`InstanceOf`, :class:`Satisfies` or ``None``).

    Raises
    ------
    TypeError
        If no constraint of a parameter takes a value of its type.
    ValueError
        If a value has a type some constraint takes but satisfies none.
    """
    for name, allowed in constraints.items():
        check_value(type(owner).__name__, name, getattr(owner, name), allowed)


def check_value(owner_name, name, value, allowed):
    """Raise unless ``value`` satisfies one of the constraints ``allowed``, with
    :func:`check_parameters`'s message ``"{owner_name}: {name} must be ...; got ..."``: for a
    value given under another name than the strategy's (a preset's parameter passed on to
    a strategy), so that the message names what the user passed."""
    allowed = [_as_constraint(constraint) for constraint in allowed]
    if any(constraint.accepts(value) for constraint in allowed):
        return
    error = (ValueError if any(constraint.takes_type(value) for constraint in allowed)
             else TypeError)
    raise error(f"{owner_name}: {name} must be {describe(allowed)}; got {_shown(value)}.")

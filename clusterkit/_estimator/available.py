"""Methods that exist only for some compositions (``partial_fit``, ``predict_proba``, ...),
with the reason in the ``AttributeError`` when they do not."""
from functools import update_wrapper, wraps
from types import MethodType

__all__ = ["available_if"]


class _AvailableIf:
    """scikit-learn's ``available_if`` descriptor, with the check's reason in the message.

    ``hasattr`` is ``False`` where the check raises an ``AttributeError``, as with
    scikit-learn's; the error reads ``This 'Clusterer' has no attribute 'partial_fit': <the
    check's reason>`` (scikit-learn's own leaves the reason in ``__cause__``, which a
    one-line report of the error does not show).
    """

    def __init__(self, fn, check):
        self.fn = fn
        self.check = check
        update_wrapper(self, fn)

    def _check(self, obj, owner):
        message = f"This {owner.__name__!r} has no attribute {self.fn.__name__!r}"
        try:
            available = self.check(obj)
        except AttributeError as reason:
            raise AttributeError(f"{message}: {reason}") from reason
        if not available:
            raise AttributeError(message)

    def __get__(self, obj, owner=None):
        if obj is not None:
            self._check(obj, type(obj) if owner is None else owner)
            return MethodType(self.fn, obj)

        @wraps(self.fn)  # on the class: the function, for its docstring and monkeypatching
        def function(*args, **kwargs):
            self._check(args[0], owner)
            return self.fn(*args, **kwargs)
        return function


def available_if(check):
    """The decorated method exists on an instance when ``check(instance)`` is true; where it
    raises an ``AttributeError``, that error's message is the reason given (see
    :class:`_AvailableIf`)."""
    return lambda fn: _AvailableIf(fn, check)

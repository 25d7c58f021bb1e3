"""The base every rankci module shares: argument checks, the warning class, JSON conversion.

One place for one kind of error message, so that every function words the same mistake the same
way (scikit-learn's ``check_*`` functions are the model).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable
from numbers import Integral, Real
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the functions that need it: importing _base stays cheap
    import numpy as np


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError listing them."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"unknown {name} {value!r}; choose one of {listed}")
    return value


def check_alpha(alpha: object, name: str = "alpha") -> float:
    """A miscoverage level strictly between 0 and 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def check_nonnegative(value: object, name: str) -> float:
    """A finite number >= 0 (for example the indifference margin delta)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (for example a number of resamples)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def fresh_seed() -> int:
    """A new 64-bit seed from the operating system's entropy.

    Used when a method that draws random numbers is given no seed: the draws are as random as
    before, and the seed is recorded, so the result can be reproduced.

    Examples
    --------
    >>> 0 <= fresh_seed() < 2**64
    True
    """
    return secrets.randbits(64)


def seeded_generator(rng: object) -> tuple[int | None, np.random.Generator]:
    """The seed to record and the Generator to draw from, for an ``rng`` argument.

    An int is its own seed; None draws a fresh seed (:func:`fresh_seed`), recorded so that the
    result can be reproduced; a Generator is used as it is, with no seed to record.

    Examples
    --------
    >>> seed, generator = seeded_generator(7)
    >>> seed, float(generator.random()) == float(as_generator(7).random())
    (7, True)
    >>> seeded_generator(None)[0] is not None
    True
    """
    import numpy as np

    if rng is None:
        rng = fresh_seed()
    generator = as_generator(rng)
    seed = None if isinstance(rng, np.random.Generator) else int(rng)
    return seed, generator


def as_generator(rng: object) -> np.random.Generator:
    """scipy's convention for randomness: None, an int seed, a SeedSequence or a Generator.

    ``numpy.random.RandomState`` is refused: its streams differ from Generator's, and mixing the two
    would make "same seed, same answer" untrue.
    """
    import numpy as np

    if isinstance(rng, np.random.Generator):
        return rng
    if (
        rng is None
        or isinstance(rng, (Integral, np.random.SeedSequence))
        and not isinstance(rng, bool)
    ):
        return np.random.default_rng(rng)
    raise ValueError(
        f"rng must be None, an int seed or a numpy.random.Generator, got {type(rng).__name__}"
    )


def format_pvalue(p: float, spec: str = ".3g") -> str:
    """A p-value as text: ``< 1e-300`` for an underflow to 0 (no p-value is exactly 0), else the
    number formatted by ``spec``.

    Examples
    --------
    >>> format_pvalue(0.0), format_pvalue(0.01234)
    ('< 1e-300', '0.0123')
    """
    return "< 1e-300" if p == 0 else format(float(p), spec)


class RankciWarning(UserWarning):
    """A result is valid but weaker than it could be (for example too few resamples)."""


def jsonable(value: object) -> object:
    """Convert numpy scalars and containers to JSON-safe Python objects.

    Dict keys become strings, arrays and tuples become lists, numpy scalars become Python ones, and
    non-finite floats become None (JSON has no NaN).

    Examples
    --------
    >>> import numpy as np
    >>> jsonable({"n": np.int64(3), "x": np.array([0.5, np.nan]), 1: (True,)})
    {'n': 3, 'x': [0.5, None], '1': [True]}
    """
    import numpy as np

    ndarray, integer, floating, bool_ = np.ndarray, np.integer, np.floating, np.bool_
    isfinite = math.isfinite  # value is a Python float here: same answer as np.isfinite, faster

    def convert(value: object) -> object:
        if isinstance(value, dict):
            return {str(k): convert(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if isinstance(value, ndarray):
            return [convert(v) for v in value.tolist()]
        if isinstance(value, integer):
            return int(value)
        if isinstance(value, floating):
            value = float(value)
        if isinstance(value, float) and not isfinite(value):
            return None
        if isinstance(value, bool_):
            return bool(value)
        return value

    return convert(value)


class LazyModule:
    """A module imported on first attribute access: ``pd = LazyModule("pandas")`` at the top of a
    module keeps ``pd.DataFrame`` working everywhere in it while a command that never touches a
    DataFrame (``rankci rank`` on Parquet) never pays pandas' import.

    Examples
    --------
    >>> json_module = LazyModule("json")
    >>> json_module.dumps([1])
    '[1]'
    """

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str) -> object:
        import importlib

        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"LazyModule({self._name!r})"


def is_dataframe(value: object) -> bool:
    """Whether ``value`` is a pandas DataFrame, without importing pandas (an object can only be
    one when pandas is already imported).

    Examples
    --------
    >>> is_dataframe([1, 2])
    False
    """
    import sys

    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def is_series(value: object) -> bool:
    """Whether ``value`` is a pandas Series, without importing pandas (as :func:`is_dataframe`).

    Examples
    --------
    >>> is_series({"a": 1.0})
    False
    """
    import sys

    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.Series)


class Deferred:
    """A value a :class:`DeferredField` computes on its first read: ``Deferred(function)``, or a
    subclass overriding :meth:`compute` (for example
    :class:`rankci.evidence.ttest.TailPValues`, which also answers some questions about the
    value without computing all of it).

    Examples
    --------
    >>> Deferred(lambda: 42).compute()
    42
    """

    def __init__(self, function=None) -> None:
        self._function = function

    def compute(self) -> object:
        """The value (computed on each call: the field keeps the first)."""
        return self._function()


class DeferredField:
    """A dataclass field whose value may be given as a :class:`Deferred`, computed on first read.

    ``pvalue: np.ndarray = DeferredField()`` in a (frozen) dataclass: the constructor takes the
    value or a Deferred; the first read of the attribute computes a Deferred and keeps the
    result, so every reader sees the value. :func:`peek` gives what is stored without computing
    it. The field has no default.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Box:
    ...     value: int = DeferredField()
    >>> box = Box(Deferred(lambda: 6 * 7))
    >>> isinstance(peek(box, "value"), Deferred), box.value, peek(box, "value")
    (True, 42, 42)
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> object:
        if instance is None:  # no class-level default: dataclasses see a required field
            raise AttributeError(self.name)
        value = instance.__dict__[self.name]
        if isinstance(value, Deferred):
            value = value.compute()
            instance.__dict__[self.name] = value
        return value

    def __set__(self, instance: object, value: object) -> None:
        # reached only from the dataclass __init__ (object.__setattr__): a frozen dataclass
        # refuses other assignments before they get here
        instance.__dict__[self.name] = value


def peek(instance: object, name: str) -> object:
    """What a :class:`DeferredField` holds, a :class:`Deferred` not yet computed included."""
    return instance.__dict__[name]

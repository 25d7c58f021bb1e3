"""The base every rankci module shares: argument checks, the warning class, JSON conversion.

One place for one kind of error message, so that every function words the same mistake the same
way (scikit-learn's ``check_*`` functions are the model).
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real

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
        or not np.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (for example a number of resamples)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def as_generator(rng: object) -> np.random.Generator:
    """scipy's convention for randomness: None, an int seed, a SeedSequence or a Generator.

    ``numpy.random.RandomState`` is refused: its streams differ from Generator's, and mixing the two
    would make "same seed, same answer" untrue.
    """
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
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    return value

"""The registries of the method's choices: the paired tests and the multiplicity procedures.

One entry per choice, with everything the rest of rankci reads about it:

* its **name** (the value of ``MethodSpec.test`` or ``MethodSpec.multiplicity``),
* a one-line **summary** (the command line's help and the docs),
* its **options**, each an :class:`Option` with its default, type and allowed values, so that a
  bad value is refused when the :class:`~rankci.method.MethodSpec` is made, naming the option
  and its allowed range (in the command line's flags when it comes from the command line),
* its **function**, named by its module path (``"rankci.evidence.yuen:yuen_test"``) and imported
  on first use: this module imports nothing heavy, so the command line lists the choices and
  checks the values without loading numpy.

:data:`TEST_REGISTRY` is read by :class:`~rankci.method.MethodSpec`,
:func:`rankci.evidence.pairwise.pairwise_tests` and the flags of ``rankci rank``;
:data:`MULTIPLICITY_REGISTRY` by :class:`~rankci.method.MethodSpec`,
:func:`rankci.leaderboard.certify` and the same flags. Adding a test is one module in
``evidence/`` and one :class:`Entry` here; adding a certifier is one module in ``certify/`` and
one :class:`Entry` here.

The functions' contracts:

* a **test** is ``function(units, delta, **options)`` (and ``rng=`` when ``random``), returning an
  :class:`rankci.evidence.moments.TestArrays`: M x M estimate, statistic, p-value, n, se, df and
  the smallest attainable p-value;
* a **certifier** is ``function(scores, spec, rng)``, returning a
  :class:`rankci.certify.certification.Certification`.

Examples
--------
>>> TEST_REGISTRY["yuen"].option("trim").check(0.1)
0.1
>>> TEST_REGISTRY["yuen"].option("trim").check(0.9)
Traceback (most recent call last):
...
ValueError: trim must be in [0, 0.5), got 0.9
>>> MULTIPLICITY_REGISTRY["max-t"].option("draws").check(0, name="--draws")
Traceback (most recent call last):
...
ValueError: --draws must be an integer >= 1, got 0
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

__all__ = [
    "Entry",
    "MULTIPLICITY_REGISTRY",
    "Option",
    "TEST_REGISTRY",
]


def _is_bool(value: object) -> bool:
    """True and False, and numpy's bools (without importing numpy)."""
    kind = type(value)
    numpy_bool = kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")
    return isinstance(value, bool) or numpy_bool


@dataclass(frozen=True)
class Option:
    """One option of a test or a procedure: its default, its type and its allowed values.

    Parameters
    ----------
    name : str
        The keyword (``trim``) and the key in ``MethodSpec.test_options`` /
        ``multiplicity_options``.
    default : object
        The value used when the option is not given.
    kind : {"int", "float", "bool", "choice"}
    help : str
        One line for the command line's help and the docs.
    minimum : number, optional
        Smallest allowed value (inclusive), for "int" and "float".
    below : number, optional
        Allowed values are strictly below this, for "float".
    choices : tuple of str
        The allowed values of a "choice".
    flag : str, optional
        The command line's flag; default ``--`` and the name with dashes.
    flag_sets : bool, optional
        For a "bool": the value the (store_true) flag sets, for example ``--single-step`` sets
        ``stepdown=False``; the flag is then the option's only spelling on the command line.
    flag_help : str, optional
        For a "bool": what the flag does, for the command line's help (default ``help``).
    metavar : str, optional
        The value's name in the command line's help (default the name in capitals).
    """

    name: str
    default: Any
    kind: str
    help: str
    minimum: float | None = None
    below: float | None = None
    choices: tuple[str, ...] = ()
    flag: str = ""
    flag_sets: bool | None = None
    flag_help: str = ""
    metavar: str = ""

    @property
    def cli_flag(self) -> str:
        """The command line's flag for this option."""
        return self.flag or "--" + self.name.replace("_", "-")

    def allowed(self) -> str:
        """The allowed values in words (``"in [0, 0.5)"``, ``"an integer >= 1"``, ...)."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "bool":
            return "True or False"
        if self.kind == "int":
            return "an integer" + ("" if self.minimum is None else f" >= {self.minimum:g}")
        if self.below is not None:
            low = "-inf" if self.minimum is None else f"{self.minimum:g}"
            return f"in [{low}, {self.below:g})"
        return "a finite number" + ("" if self.minimum is None else f" >= {self.minimum:g}")

    def check(self, value: object, name: str | None = None) -> Any:
        """``value`` if it is allowed (an int as int, a float as float), else a ValueError.

        ``name`` is how the message names the option (the flag on the command line); default
        the keyword.
        """
        name = name or self.name
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ValueError(f"unknown {name} {value!r}; choose {self.allowed()}")
            return value
        if self.kind == "bool":
            if not _is_bool(value):
                raise ValueError(f"{name} must be True or False, got {value!r}")
            return bool(value)
        if self.kind == "int":
            low = self.minimum
            if isinstance(value, bool) or not isinstance(value, Integral) or (
                low is not None and value < low
            ):
                raise ValueError(f"{name} must be {self.allowed()}, got {value!r}")
            return int(value)
        if (
            _is_bool(value)
            or not isinstance(value, Real)
            or not math.isfinite(value)
            or (self.minimum is not None and value < self.minimum)
            or (self.below is not None and value >= self.below)
        ):
            raise ValueError(f"{name} must be {self.allowed()}, got {value!r}")
        return float(value)


@dataclass(frozen=True)
class Entry:
    """One test or one multiplicity procedure of a registry.

    Parameters
    ----------
    name : str
    summary : str
        One line: what it is.
    function : str
        ``"module:attribute"`` of the function (imported by :meth:`load`, on first use).
    options : tuple of Option
    random : bool
        Whether it draws random numbers (it then takes ``rng=`` and the spec records a seed).
    tests : tuple of str or None
        For a procedure: the only tests it can be combined with (None: any test).
    """

    name: str
    summary: str
    function: str
    options: tuple[Option, ...] = ()
    random: bool = False
    tests: tuple[str, ...] | None = None

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    def option(self, name: str) -> Option:
        """The option called ``name``."""
        for option in self.options:
            if option.name == name:
                return option
        raise KeyError(f"{self.name!r} has no option {name!r}")

    def defaults(self) -> dict[str, Any]:
        """Every option at its default."""
        return {o.name: o.default for o in self.options}

    def check_options(self, options: Mapping[str, Any], kind: str = "test") -> dict[str, Any]:
        """The given options, each checked; an option the entry does not take is an error.

        ``kind`` names the field in the message (``test='t' takes the options ...``).
        """
        unknown = sorted(set(options) - set(self.option_names))
        if unknown:
            if not self.options:
                raise ValueError(
                    f"{kind}={self.name!r} takes no options, got {', '.join(unknown)}"
                )
            raise ValueError(
                f"{kind}={self.name!r} takes the options {', '.join(self.option_names)}; "
                f"got {', '.join(unknown)}"
            )
        return {name: self.option(name).check(options[name]) for name in options}

    def resolve(self, options: Mapping[str, Any], kind: str = "test") -> dict[str, Any]:
        """Every option: the given ones checked, the others at their defaults."""
        return {**self.defaults(), **self.check_options(options, kind)}

    def load(self) -> Callable[..., Any]:
        """The function (imported on first use, then kept: a ranking loads two per call)."""
        function = _LOADED.get(self.function)
        if function is None:
            module, _, attribute = self.function.partition(":")
            function = _LOADED[self.function] = getattr(importlib.import_module(module), attribute)
        return function


#: ``"module:attribute" -> function`` of the entries loaded so far (:meth:`Entry.load`)
_LOADED: dict[str, Callable[..., Any]] = {}


def _registry(*entries: Entry) -> Mapping[str, Entry]:
    return MappingProxyType({entry.name: entry for entry in entries})


_EXACT_BOUND_N = Option(
    "exact_bound_n",
    0,
    "int",
    "opt-in exact floor, scores in [0, 1]: a pair with at most N units is never given a p-value "
    "below Hoeffding's exact bound, valid for every score distribution but with little power "
    "(default 0: no floor; validation/small_sample_rule.py)",
    minimum=0,
    metavar="N",
)
_REPS = Option(
    "reps",
    9999,
    "int",
    "resamples; the p-value is (1 + #exceed) / (reps + 1) (rank: at least enough for Holm's "
    "first threshold)",
    minimum=1,
)

_TRIM = Option(
    "trim",
    0.2,
    "float",
    "proportion trimmed from each tail (0 gives the paired t)",
    minimum=0.0,
    below=0.5,
)

#: The paired tests of ``H_jl: theta_j - theta_l <= delta`` (:func:`rankci.pairwise_tests`).
TEST_REGISTRY: Mapping[str, Entry] = _registry(
    Entry(
        "auto",
        "per pair: the exact McNemar (sign) test where both models' units are 0/1 and "
        "delta = 0, else the plain paired t (mean difference; the default)",
        "rankci.evidence.auto:auto_test",
        (_EXACT_BOUND_N,),
    ),
    Entry(
        "t",
        "paired t: (mean(d) - delta) / (sd(d) / sqrt(n)) on n - 1 df (mean difference)",
        "rankci.evidence.ttest:t_test",
        (_EXACT_BOUND_N,),
    ),
    Entry(
        "wilcoxon",
        "Wilcoxon signed-rank test of d - delta, exact or normal with tie correction "
        "(pseudo-median)",
        "rankci.evidence.wilcoxon:wilcoxon_test",
        (
            Option(
                "zero_method",
                "wilcox",
                "choice",
                "zero differences: dropped (wilcox, as R), or ranked and their ranks dropped "
                "(pratt)",
                choices=("wilcox", "pratt"),
            ),
            Option(
                "correction",
                False,
                "bool",
                "continuity correction of the normal approximation (R's correct=TRUE)",
                flag_sets=True,
            ),
            Option(
                "distribution",
                "auto",
                "choice",
                "null distribution: exact, normal (approx), or auto (exact for n <= 50 without "
                "ties or zeros)",
                choices=("auto", "exact", "approx"),
            ),
        ),
    ),
    Entry(
        "yuen",
        "Yuen's dependent-groups trimmed-mean t (trimmed means)",
        "rankci.evidence.yuen:yuen_test",
        (_TRIM,),
    ),
    Entry(
        "z",
        "the paired t statistic against the standard normal (mean difference)",
        "rankci.evidence.ttest:z_test",
        (_EXACT_BOUND_N,),
    ),
    Entry(
        "sign",
        "exact binomial (McNemar) test on the discordant units; binary unit scores and "
        "delta = 0 only",
        "rankci.evidence.sign:sign_test",
    ),
    Entry(
        "bootstrap",
        "centred paired bootstrap of mean(d), units resampled jointly (mean difference)",
        "rankci.evidence.resampling:bootstrap_test",
        (_REPS,),
        random=True,
    ),
    Entry(
        "bootstrap-t",
        "bootstrap-t of trimmed means: Yuen's statistic against its paired bootstrap law, "
        "each resample studentised by its own winsorised SE (trimmed means)",
        "rankci.evidence.trimmed_bootstrap:bootstrap_t_test",
        (_TRIM, _REPS),
        random=True,
    ),
    Entry(
        "permutation",
        "sign-flip (within-unit label swap) test of mean(d - delta) (mean difference)",
        "rankci.evidence.resampling:permutation_test",
        (_REPS,),
        random=True,
    ),
)

#: The multiplicity procedures: pairwise evidence -> certified dominances
#: (:func:`rankci.leaderboard.certify`).
MULTIPLICITY_REGISTRY: Mapping[str, Entry] = _registry(
    Entry(
        "holm",
        "Holm's step-down over the one-sided paired p-values (valid under any dependence)",
        "rankci.certify.holm:certify_tests",
    ),
    Entry(
        "bonferroni",
        "Bonferroni over the one-sided paired p-values (valid under any dependence)",
        "rankci.certify.holm:certify_tests",
    ),
    Entry(
        "max-t",
        "Romano-Wolf step-down with critical values from the joint law of the studentized "
        "mean differences (tighter, asymptotic; test auto, t or z: the t statistics)",
        "rankci.certify.maxt:certify_spec",
        (
            Option(
                "resampling",
                "gaussian",
                "choice",
                "gaussian: N(0, Sigma) multiplier draws; bootstrap: resample units (or clusters)",
                choices=("gaussian", "bootstrap"),
            ),
            Option("draws", 1000, "int", "draws for the critical values", minimum=1),
            Option(
                "covariance",
                "independent",
                "choice",
                "covariance of the model means: independent units, or cluster-robust over the "
                "cluster column",
                choices=("independent", "cluster"),
            ),
            Option(
                "stepdown",
                True,
                "bool",
                "the step-down over the critical values (True) or one critical value for all "
                "pairs (False)",
                flag="--single-step",
                flag_sets=False,
                flag_help="one critical value for all pairs instead of the step-down",
            ),
            Option(
                "small_sample",
                True,
                "bool",
                "small-sample corrections: G / (G - 1) on Sigma and the null-restricted "
                "statistics (True), or the plain HC0 Wald statistics (False)",
                flag="--no-small-sample",
                flag_sets=False,
                flag_help="the plain HC0 Wald statistics, without the small-sample corrections "
                "(G / (G - 1) on Sigma, null-restricted statistics)",
            ),
        ),
        random=True,
        tests=("auto", "t", "z"),
    ),
)

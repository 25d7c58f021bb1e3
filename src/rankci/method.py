"""The method specification: one frozen, validated record of how a ranking is computed.

A :class:`MethodSpec` holds every choice between the scores and the certified dominances:

* the **unit** of analysis and the **missing**-cell rule (scores -> units),
* the paired **test** and its options (units -> pairwise evidence),
* the **multiplicity** procedure and its options, the **coverage**, the level **alpha** and the
  indifference margin **delta** (evidence -> certified dominances),
* the **seed** actually used by the methods that draw random numbers.

It is validated once, when it is made: the choices, and the value of every option of the test
and of the multiplicity procedure, each against its entry in :mod:`rankci.registry` (a bad value
names the option and its allowed range). Every :class:`rankci.Ranking` carries the one it was made
with (``ranking.spec``), JSON output records it (``spec.to_dict()``), and it re-runs:
``rankci.rank(data, spec=ranking.spec)`` gives the same ranking again. Every fixed-sample entry
point takes it as ``spec=`` or builds it from its keywords (one rule:
:func:`rankci.leaderboard.resolve_spec`): ``rank``, ``rank_by_cluster``, ``rank_benchmarks``,
``check_claims``, ``tau_best``, ``mixed_ranking`` and ``plan``. The per-cluster report, tau-best
and the cluster filter change one field with :meth:`MethodSpec.replace` instead of passing
keyword bundles along.

This module imports nothing heavy (no numpy; :mod:`rankci._base` neither), so the command line can
offer its choices without loading the statistics.

References
----------
Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
ranks with application to ranking institutions. Biometrics 78(1), 238-247 (the unit, test and
multiplicity choices of Algorithms 1 and 2).

Examples
--------
>>> spec = MethodSpec(test="wilcoxon", alpha=0.1)
>>> spec.replace(unit="cluster").unit
'cluster'
>>> MethodSpec.from_dict(spec.to_dict()) == spec
True
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral
from types import MappingProxyType
from typing import Any

from rankci._base import (
    check_alpha,
    check_choice,
    check_nonnegative,
    check_positive_int,
    fresh_seed,
)
from rankci.registry import MULTIPLICITY_REGISTRY, TEST_REGISTRY

__all__ = [
    "COVARIANCES",
    "COVERAGES",
    "MISSING",
    "MULTIPLICITIES",
    "MULTIPLICITY_OPTIONS",
    "MethodSpec",
    "PER_ITEM_HELP",
    "RANDOM_TESTS",
    "RESAMPLINGS",
    "TESTS",
    "TEST_OPTIONS",
    "UNITS",
    "UNIT_SCOPE",
    "fresh_seed",
    "parse_per_item",
]

UNITS = ("observation", "item", "cluster", "prompt")
MISSING = ("complete", "pairwise")
COVERAGES = ("simultaneous", "marginal")

#: The paired tests (:data:`rankci.registry.TEST_REGISTRY`).
TESTS: tuple[str, ...] = tuple(TEST_REGISTRY)
#: The multiplicity procedures (:data:`rankci.registry.MULTIPLICITY_REGISTRY`).
MULTIPLICITIES: tuple[str, ...] = tuple(MULTIPLICITY_REGISTRY)
#: The tests that draw random numbers (and so record a seed).
RANDOM_TESTS: tuple[str, ...] = tuple(name for name, e in TEST_REGISTRY.items() if e.random)
RESAMPLINGS: tuple[str, ...] = MULTIPLICITY_REGISTRY["max-t"].option("resampling").choices
COVARIANCES: tuple[str, ...] = MULTIPLICITY_REGISTRY["max-t"].option("covariance").choices

#: The options each paired test takes (:func:`rankci.evidence.pairwise.pairwise_tests`), from
#: the registry.
TEST_OPTIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {name: entry.option_names for name, entry in TEST_REGISTRY.items()}
)

#: The options of each multiplicity procedure (:func:`rankci.leaderboard.certify`), from the
#: registry.
MULTIPLICITY_OPTIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {name: entry.option_names for name, entry in MULTIPLICITY_REGISTRY.items()}
)

#: What the inference extends to, per unit of analysis.
UNIT_SCOPE: Mapping[str, str] = MappingProxyType(
    {
        "observation": "the observed evaluation set only",
        "item": "new questions like these",
        "cluster": "new clusters (subjects) like these",
        "prompt": "new prompt variants like these",
    }
)


#: what a per-item rule over repeated trials may be, in messages and help (:mod:`rankci.trials`)
PER_ITEM_HELP = "mean, pass@K or pass^K (K a positive integer, for example pass@5)"

_RULE = re.compile(r"^(pass@|pass\^)([0-9]+)$")


def parse_per_item(rule: object, name: str = "per_item") -> tuple[str, int | None]:
    """``("mean", None)``, ``("pass@", K)`` or ``("pass^", K)`` from a per-item rule.

    ``name`` is the argument (or flag) named in the error.

    Examples
    --------
    >>> parse_per_item("pass@5"), parse_per_item("pass^2"), parse_per_item("mean")
    (('pass@', 5), ('pass^', 2), ('mean', None))
    """
    if rule == "mean":
        return "mean", None
    match = _RULE.match(rule) if isinstance(rule, str) else None
    if match is None or int(match.group(2)) < 1:
        raise ValueError(f"{name} must be {PER_ITEM_HELP}; got {rule!r}")
    return match.group(1), int(match.group(2))


def _frozen(options: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    if options is None:
        return MappingProxyType({})
    if not isinstance(options, Mapping):
        raise ValueError(f"{name} must be a mapping of option names to values, got {options!r}")
    return MappingProxyType({str(k): options[k] for k in sorted(options)})


@dataclass(frozen=True)
class MethodSpec:
    """How a ranking is computed, from the units to the certified dominances.

    Parameters
    ----------
    unit : {"item", "observation", "cluster", "prompt"}, default "item"
        The unit of analysis: what the inference extends to (:data:`UNIT_SCOPE`).
    test : str, default "auto"
        The one-sided paired test of ``H_jl: theta_j - theta_l <= delta`` (:data:`TESTS`:
        "auto", "t", "wilcoxon", "yuen", "z", "sign", "bootstrap", "permutation",
        "bootstrap-t"); ``auto`` (the
        default) is the exact McNemar (sign) test on pairs of 0/1 units with delta = 0 and the
        plain paired t elsewhere (:mod:`rankci.evidence.auto`).
    test_options : mapping, optional
        Options of the test (:data:`TEST_OPTIONS`): ``exact_bound_n`` (auto, t, z: the
        opt-in Hoeffding floor, default 0), ``trim`` (Yuen, bootstrap-t),
        ``reps`` (bootstrap, permutation, bootstrap-t), ``zero_method``, ``correction`` and
        ``distribution`` (Wilcoxon). Only the options given are stored; the others keep the
        test's defaults.
    coverage : {"simultaneous", "marginal"}, default "simultaneous"
    alpha : float, default 0.05
        The level: the guarantee holds with probability at least ``1 - alpha``.
    delta : float, default 0
        Indifference margin: only differences larger than delta are certified.
    missing : {"complete", "pairwise"}, default "complete"
        Keep the units scored by every model, or compare each pair on the units both have.
    multiplicity : {"holm", "bonferroni", "max-t"}, default "holm"
    multiplicity_options : mapping, optional
        Options of max-t (:data:`MULTIPLICITY_OPTIONS`): ``resampling``, ``draws``,
        ``covariance``, ``stepdown``, ``small_sample``.
    seed : int or None
        The seed of the random draws (bootstrap or permutation tests, max-t critical values);
        None when the method draws nothing, or when a ``numpy.random.Generator`` was given
        instead of a seed.
    cluster_filter : mapping or None
        ``{"alpha_split": (a, b), "top": k}`` to first drop the non-informative clusters at level
        ``a * alpha`` and rank the rest at ``b * alpha`` (``rank(filter_uninformative=True)``);
        None (default) ranks on every cluster.
    trials : str or None
        The per-item rule that turned each (model, item) cell's repeated trials into its one
        score (:mod:`rankci.trials`): ``"mean"``, ``"pass@K"`` or ``"pass^K"``; None (default)
        when the scores have no trial column. Every entry point sets it from the scores
        (``Scores.from_frame(trial=..., per_item=...)``), and a spec that names a rule re-scores
        trial data by it (:meth:`rankci.Scores.per_item`), so ``spec=ranking.spec`` re-runs the
        same rule.

    Raises
    ------
    ValueError
        For an unknown choice, an option the test or the procedure does not take, an option
        value outside its allowed range (:mod:`rankci.registry`), or max-t with a test other
        than t or z.

    Examples
    --------
    >>> MethodSpec(multiplicity="max-t", multiplicity_options={"draws": 5000}, seed=1).draws_random
    True
    >>> MethodSpec(test="t", test_options={"reps": 10})
    Traceback (most recent call last):
    ...
    ValueError: test='t' takes the options exact_bound_n; got reps
    >>> MethodSpec(test="yuen", test_options={"trim": 0.9})
    Traceback (most recent call last):
    ...
    ValueError: trim must be in [0, 0.5), got 0.9
    """

    unit: str = "item"
    test: str = "auto"
    test_options: Mapping[str, Any] = field(default_factory=dict)
    coverage: str = "simultaneous"
    alpha: float = 0.05
    delta: float = 0.0
    missing: str = "complete"
    multiplicity: str = "holm"
    multiplicity_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    cluster_filter: Mapping[str, Any] | None = None
    trials: str | None = None

    def __post_init__(self) -> None:
        check_choice("unit", self.unit, UNITS)
        check_choice("test", self.test, TESTS)
        check_choice("coverage", self.coverage, COVERAGES)
        check_choice("missing", self.missing, MISSING)
        check_choice("multiplicity", self.multiplicity, MULTIPLICITIES)
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        object.__setattr__(self, "delta", check_nonnegative(self.delta, "delta"))
        seed = self.seed
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0
        ):
            raise ValueError(f"seed must be None or an integer >= 0, got {seed!r}")
        object.__setattr__(self, "seed", None if seed is None else int(seed))
        test = TEST_REGISTRY[self.test]
        test_options = test.check_options(_frozen(self.test_options, "test_options"), "test")
        object.__setattr__(self, "test_options", _frozen(test_options, "test_options"))
        procedure = MULTIPLICITY_REGISTRY[self.multiplicity]
        options = _frozen(self.multiplicity_options, "multiplicity_options")
        options = procedure.check_options(options, "multiplicity")
        object.__setattr__(self, "multiplicity_options", _frozen(options, "multiplicity_options"))
        if self.cluster_filter is not None:
            object.__setattr__(self, "cluster_filter", _cluster_filter(self.cluster_filter))
        if self.trials is not None:
            parse_per_item(self.trials, "trials")
        if procedure.tests is not None and self.test not in procedure.tests:
            raise ValueError(
                f"multiplicity={self.multiplicity!r} uses studentized mean differences "
                f"(test='auto', 't' or 'z'); it cannot be combined with test={self.test!r}. Use "
                "multiplicity='holm' for that test"
            )

    # ------------------------------------------------------------------ derived facts
    @property
    def draws_random(self) -> bool:
        """Whether the method draws random numbers (and so needs a seed to be reproducible)."""
        return TEST_REGISTRY[self.test].random or MULTIPLICITY_REGISTRY[self.multiplicity].random

    def seeded(self) -> MethodSpec:
        """This specification with a seed wherever the method draws random numbers.

        A spec that already has a seed, or draws nothing, is returned as it is; otherwise a
        fresh seed (:func:`fresh_seed`) is recorded.
        """
        if self.seed is not None or not self.draws_random:
            return self
        return self.replace(seed=fresh_seed())

    # ------------------------------------------------------------------ conversions
    def replace(self, **changes: Any) -> MethodSpec:
        """A copy with some fields changed, validated again (``dataclasses.replace``).

        Examples
        --------
        >>> MethodSpec().replace(alpha=0.1).alpha
        0.1
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(
                f"MethodSpec has no field {unknown[0]!r}; its fields are "
                + ", ".join(f.name for f in dataclasses.fields(self))
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of every field; :meth:`from_dict` reads it back."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = dict(value) if isinstance(value, Mapping) else value
        if self.cluster_filter is not None:
            out["cluster_filter"]["alpha_split"] = list(self.cluster_filter["alpha_split"])
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> MethodSpec:
        """The specification a :meth:`to_dict` (or a JSON output's ``"spec"``) describes."""
        if not isinstance(values, Mapping):
            raise ValueError(f"a method specification is a mapping, got {type(values).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(
                f"unknown field {unknown[0]!r} in the method specification; its fields are "
                + ", ".join(sorted(fields))
            )
        return cls(**dict(values))

    @classmethod
    def from_keywords(
        cls,
        *,
        unit: str = "item",
        test: str = "auto",
        coverage: str = "simultaneous",
        alpha: float = 0.05,
        delta: float = 0.0,
        missing: str = "complete",
        multiplicity: str = "holm",
        caller: str = "rank",
        accepted: str | None = None,
        **options: Any,
    ) -> MethodSpec:
        """The specification of ``rankci.rank``'s keywords: options go to the test or to max-t.

        ``options`` that neither the test nor the multiplicity procedure takes are an error that
        lists the keywords of ``caller`` (``accepted``; default those of ``rankci.rank``). The
        seed is not a keyword here: the caller records the seed of its ``rng`` (scipy's
        convention) with :meth:`replace`.

        Examples
        --------
        >>> MethodSpec.from_keywords(test="yuen", trim=0.1).test_options["trim"]
        0.1
        """
        test_names = TEST_OPTIONS.get(test, ())
        procedure_names = MULTIPLICITY_OPTIONS.get(multiplicity, ())
        test_options = {k: v for k, v in options.items() if k in test_names}
        procedure_options = {k: v for k, v in options.items() if k in procedure_names}
        unknown = sorted(set(options) - set(test_options) - set(procedure_options))
        if unknown:
            names = sorted({n for group in TEST_OPTIONS.values() for n in group}
                           | {n for group in MULTIPLICITY_OPTIONS.values() for n in group})
            raise ValueError(
                f"{caller}() got an unknown option {unknown[0]!r} for test={test!r} and "
                f"multiplicity={multiplicity!r}. Its keywords are {accepted or _RANK_KEYWORDS}, "
                f"and the options {', '.join(names)} (each for its own test or procedure: see "
                "rankci.registry)"
            )
        return cls(
            unit=unit,
            test=test,
            test_options=test_options,
            coverage=coverage,
            alpha=alpha,
            delta=delta,
            missing=missing,
            multiplicity=multiplicity,
            multiplicity_options=procedure_options,
        )

    def describe(self) -> str:
        """One line: the procedure in words.

        Examples
        --------
        >>> MethodSpec().describe()
        'holm over one-sided paired auto tests on item units, simultaneous coverage, alpha = 0.05'
        """
        margin = f", delta = {self.delta:g}" if self.delta > 0 else ""
        seed = f", seed {self.seed}" if self.seed is not None else ""
        trials = f", per-item {self.trials} over trials" if self.trials is not None else ""
        return (
            f"{self.multiplicity} over one-sided paired {self.test} tests on {self.unit} units"
            f"{trials}, {self.coverage} coverage, alpha = {self.alpha:g}{margin}{seed}"
        )


_RANK_KEYWORDS = (
    "data, unit, test, coverage, alpha, delta, missing, multiplicity, rng, "
    "filter_uninformative, alpha_split, top, spec"
)


def _cluster_filter(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or set(value) != {"alpha_split", "top"}:
        raise ValueError(
            f"cluster_filter must be a mapping with the keys alpha_split and top, got {value!r}"
        )
    split = value["alpha_split"]
    try:
        first, second = (float(a) for a in split)
    except (TypeError, ValueError):
        raise ValueError(f"alpha_split must be two fractions, got {split!r}") from None
    if first <= 0 or second <= 0 or first + second > 1 + 1e-12:
        raise ValueError(
            f"alpha_split must be two positive fractions summing to <= 1, got {split!r}"
        )
    top = check_positive_int(value["top"], "top")
    return MappingProxyType({"alpha_split": (first, second), "top": top})

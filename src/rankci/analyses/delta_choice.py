r"""The indifference margin δ chosen from the data, with the guarantee kept (seed 000).

A δ tuned on the data it is then tested on voids the ranking's guarantee. Two ways keep it:

* **sample split** (``how="split"``): the units are split at random (seeded) into a choosing part
  A and a testing part B; δ̂ is computed on A only, and the ranking uses B only. The parts are
  independent when the units are, so given δ̂ the ranking's guarantee holds as for a δ fixed in
  advance (Cox 1975): with probability at least 1 − α, every certified "j better than l" has
  :math:`\theta_j - \theta_l > \hat\delta`.
* **α split** (``how="alpha-split"``): all units are used twice, and α is spent twice. The target
  is the gap of a reference pair (a, b) the user deems equivalent, for example one model at two
  seeds or two checkpoints: :math:`\delta^* = |\theta_a - \theta_b|`. With
  :math:`\alpha_\delta` (default 0.3 α, the seed's split for the cluster filter) δ̂ is the upper
  confidence bound

  .. math::

      \hat\delta = \max(|\bar d - t_{1-\alpha_\delta/2,\,n-1}\, s_d/\sqrt n|,\
      |\bar d + t_{1-\alpha_\delta/2,\,n-1}\, s_d/\sqrt n|), \qquad d = x_a - x_b,

  so that :math:`P(\hat\delta \ge \delta^*) \ge 1 - \alpha_\delta`, and the ranking runs at level
  :math:`\alpha - \alpha_\delta` with margin δ̂. Every paired test's p-value grows with δ, and
  Holm's (and max-t's) rejections shrink when the p-values grow, so on the event
  :math:`\hat\delta \ge \delta^*` the statements certified at δ̂ are among those certified at
  δ*. By Bonferroni over the two stages (Berger and Boos 1994): with probability at least
  1 − α, every certified "j better than l" has :math:`\theta_j - \theta_l > \delta^*`.

The sample split takes any rule (``rule=``, a function of the choosing part's units, or the
reference pair's observed gap); the α split needs a confidence bound, so it takes the reference
pair. Both are as exact as the paired tests and the t bound are (asymptotic for t, z).

References
----------
Cox, D. R. (1975). A note on data-splitting for the evaluation of significance levels.
Biometrika 62(2), 441-444.
Berger, R. L. and Boos, D. D. (1994). P values maximized over a confidence set for the nuisance
parameter. Journal of the American Statistical Association 89(427), 1012-1016.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from rankci._base import check_alpha, check_choice, jsonable, seeded_generator
from rankci.data import Scores, UnitScores
from rankci.leaderboard import rank
from rankci.ranking import Ranking

__all__ = ["DELTA_CHOICES", "DeltaChoice", "choose_delta", "reference_gap_bound"]

#: How δ is chosen: on a separate part of the units, or by spending part of alpha.
DELTA_CHOICES = ("split", "alpha-split")


@dataclass(frozen=True, repr=False)
class DeltaChoice:
    """A ranking whose margin δ was chosen from the data, and the guarantee that still holds.

    Attributes
    ----------
    delta : float
        The margin chosen (δ̂) and used by ``ranking``.
    how : {"split", "alpha-split"}
    ranking : Ranking
        The ranking at margin ``delta`` (on the testing part for ``"split"``).
    alpha : float
        The level of the whole procedure (choice of δ included).
    guarantee : str
        What holds, in words, with the level of the whole procedure.
    selection : dict
        How δ was chosen (JSON-safe): the rule, the reference pair, the seed and the units of
        each part (split), or alpha_delta, the estimate and the bound (alpha split).
    """

    delta: float
    how: str
    ranking: Ranking
    alpha: float
    guarantee: str
    selection: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The ranking's table."""
        return self.ranking.to_frame()

    def to_dict(self) -> dict:
        """JSON-safe: delta, how, alpha, the guarantee, the selection and the ranking."""
        return {
            "delta": float(self.delta),
            "how": self.how,
            "alpha": self.alpha,
            "guarantee": self.guarantee,
            "selection": jsonable(self.selection),
            "ranking": self.ranking.to_dict(),
        }

    def __repr__(self) -> str:
        return (
            f"DeltaChoice(how={self.how!r}, delta={self.delta:.4g}, alpha={self.alpha:g})\n"
            f"  {self.guarantee}\n" + "\n".join("  " + line for line in
                                               repr(self.ranking).splitlines())
        )


def reference_gap_bound(units: UnitScores, reference: Sequence[str], alpha_delta: float) -> dict:
    r"""Estimate and upper confidence bound of :math:`|\theta_a - \theta_b|` for a reference pair.

    The two-sided t interval :math:`\bar d \pm t_{1-\alpha_\delta/2,\,n-1}\, s_d/\sqrt n` of
    :math:`\theta_a - \theta_b` covers with probability :math:`1 - \alpha_\delta`, and on that
    event :math:`|\theta_a - \theta_b|` is at most the larger absolute end point.

    Returns
    -------
    dict
        ``estimate`` (:math:`|\bar d|`), ``lower``, ``upper`` (the interval of
        :math:`\theta_a - \theta_b`), ``bound`` (the larger absolute end point) and ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.column_stack([np.r_[0.5, 0.7, 0.6, 0.8], np.r_[0.4, 0.7, 0.5, 0.6]])
    >>> out = reference_gap_bound(Scores.from_matrix(x).units(), ("m0", "m1"), 0.05)
    >>> round(out["estimate"], 10), round(out["bound"], 4)
    (0.1, 0.2299)
    """
    a, b = _reference(units, reference)
    d = units.values[:, a] - units.values[:, b]
    d = d[np.isfinite(d)]
    n = d.size
    if n < 2:
        raise ValueError(
            f"reference={tuple(reference)!r}: the two models share {n} unit(s); the bound needs 2"
        )
    half = stats.t.ppf(1.0 - alpha_delta / 2.0, n - 1) * d.std(ddof=1) / math.sqrt(n)
    lower, upper = float(d.mean() - half), float(d.mean() + half)
    return {
        "estimate": abs(float(d.mean())),
        "lower": lower,
        "upper": upper,
        "bound": max(abs(lower), abs(upper)),
        "n": int(n),
    }


def _reference(units: UnitScores, reference: Sequence[str]) -> tuple[int, int]:
    pair = tuple(str(m) for m in reference)
    if len(pair) != 2 or pair[0] == pair[1]:
        raise ValueError(f"reference must name two different models, got {reference!r}")
    for model in pair:
        if model not in units.models:
            raise ValueError(f"reference: unknown model {model!r}")
    return units.models.index(pair[0]), units.models.index(pair[1])


_SPLIT_AXIS = {"item": "items", "observation": "items", "cluster": "clusters", "prompt": "prompts"}


def _split(scores: Scores, unit: str, fraction: float, generator: np.random.Generator):
    """(choosing part, testing part, record): the units' labels split at random."""
    axis = _SPLIT_AXIS[unit]
    labels = {"items": scores.items, "clusters": scores.clusters, "prompts": scores.prompts}[axis]
    if labels is None:
        raise ValueError(f"unit={unit!r} needs a {axis[:-1]} column to split the data by")
    n = len(labels)
    if n < 2:
        raise ValueError(f"a sample split needs at least 2 {axis}, got {n}")
    size = min(max(int(round(fraction * n)), 1), n - 1)
    order = generator.permutation(n)
    choose = sorted(labels[i] for i in order[:size])
    test = sorted(labels[i] for i in order[size:])
    record = {"split_by": axis, "choosing_units": size, "testing_units": n - size}
    return scores.subset(**{axis: choose}), scores.subset(**{axis: test}), record


def choose_delta(
    scores: Scores,
    *,
    how: str = "split",
    reference: Sequence[str] | None = None,
    rule: Callable[[UnitScores], float] | None = None,
    fraction: float = 0.5,
    alpha: float = 0.05,
    alpha_delta: float | None = None,
    unit: str = "item",
    missing: str = "complete",
    rng: int | np.random.Generator | None = None,
    **rank_keywords: Any,
) -> DeltaChoice:
    """Choose δ from the data by a sample split or an α split, then rank at that δ.

    Parameters
    ----------
    scores : Scores
    how : {"split", "alpha-split"}
        See the module docstring for what each guarantees.
    reference : (str, str), optional
        A pair of models deemed equivalent (one model at two seeds, two checkpoints): δ is their
        observed gap on the choosing part (``"split"``), or the upper confidence bound of their
        gap (``"alpha-split"``, required).
    rule : callable, optional
        ``"split"`` only, instead of ``reference``: any function of the choosing part's
        :class:`~rankci.data.UnitScores` returning δ ≥ 0.
    fraction : float
        ``"split"``: the share of the units (items, clusters or prompts, by ``unit``) that
        chooses δ, in (0, 1).
    alpha : float
        The level of the whole procedure.
    alpha_delta : float, optional
        ``"alpha-split"``: the part of alpha spent on the bound (default 0.3 alpha).
    unit, missing : str
        As for :func:`rankci.rank`; the split draws whole units.
    rng : int, Generator or None
        The split (and any draws of the ranking); None draws a fresh seed, which is recorded.
    **rank_keywords
        Passed to :func:`rankci.rank` (``test``, ``coverage``, ``multiplicity``, options).

    Returns
    -------
    DeltaChoice

    References
    ----------
    Cox, D. R. (1975). A note on data-splitting for the evaluation of significance levels.
    Biometrika 62(2), 441-444.
    Berger, R. L. and Boos, D. D. (1994). P values maximized over a confidence set for the
    nuisance parameter. Journal of the American Statistical Association 89(427), 1012-1016.

    Examples
    --------
    >>> import numpy as np
    >>> gen = np.random.default_rng(0)
    >>> x = np.clip(gen.normal([0.70, 0.69, 0.55, 0.40], 0.1, size=(400, 4)), 0, 1)
    >>> scores = Scores.from_matrix(x, models=["a", "a-rerun", "b", "c"])
    >>> result = choose_delta(scores, how="alpha-split", reference=("a", "a-rerun"))
    >>> 0.0 < result.delta < 0.05, result.ranking.alpha
    (True, 0.035)
    >>> result.guarantee.startswith("With probability at least 95%")
    True
    """
    check_choice("how", how, DELTA_CHOICES)
    alpha = check_alpha(alpha)
    if "delta" in rank_keywords or "spec" in rank_keywords:
        raise ValueError("choose_delta chooses delta itself; do not pass delta= or spec=")
    seed, generator = seeded_generator(rng)
    if how == "split":
        return _by_split(
            scores, reference, rule, fraction, alpha, unit, missing, seed, generator,
            rank_keywords,
        )
    if rule is not None:
        raise ValueError("how='alpha-split' needs a confidence bound for delta: give reference=, "
                         "not rule= (any rule works with how='split')")
    if reference is None:
        raise ValueError("how='alpha-split' needs reference=(model_a, model_b)")
    alpha_delta = 0.3 * alpha if alpha_delta is None else check_alpha(alpha_delta, "alpha_delta")
    if alpha_delta >= alpha:
        raise ValueError(f"alpha_delta must be below alpha={alpha:g}, got {alpha_delta:g}")
    bound = reference_gap_bound(scores.units(unit, missing), reference, alpha_delta)
    delta = bound["bound"]
    level = alpha - alpha_delta
    ranking = rank(scores, unit=unit, missing=missing, alpha=level, delta=delta,
                   rng=_child(seed, generator), **rank_keywords)
    a, b = (str(m) for m in reference)
    guarantee = (
        f"With probability at least {1 - alpha:.0%}, every certified 'j better than l' has "
        f"theta_j - theta_l > |theta_{a} - theta_{b}|, the gap of the reference pair "
        f"({a!r}, {b!r}): delta = {delta:.4g} is the {1 - alpha_delta:.1%} upper confidence "
        f"bound of that gap on {bound['n']} {unit} units (alpha_delta = {alpha_delta:g}), and "
        f"the ranking runs at alpha = {level:g} with this delta (Bonferroni over the two "
        f"stages). The second stage's own statement, at its alpha = {level:g}: "
        f"{ranking.guarantee}"
    )
    selection = {"rule": "reference pair, upper confidence bound", "reference": [a, b],
                 "alpha_delta": alpha_delta, "ranking_alpha": level, **bound, "seed": seed}
    return DeltaChoice(delta, how, ranking, alpha, guarantee, selection)


def _child(seed: int | None, generator: np.random.Generator) -> int | np.random.Generator:
    """The ranking's random source: a seed derived from the recorded one (or the generator)."""
    return generator if seed is None else int(np.random.SeedSequence(seed).spawn(1)[0]
                                               .generate_state(1)[0])


def _by_split(scores, reference, rule, fraction, alpha, unit, missing, seed, generator, keywords):
    if (reference is None) == (rule is None):
        raise ValueError("how='split' needs exactly one of reference= and rule=")
    if isinstance(fraction, bool) or not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"fraction must be strictly between 0 and 1, got {fraction!r}")
    choosing, testing, record = _split(scores, unit, float(fraction), generator)
    choosing_units = choosing.units(unit, missing)
    if rule is None:
        a, b = _reference(choosing_units, reference)
        d = choosing_units.values[:, a] - choosing_units.values[:, b]
        delta = abs(float(np.nanmean(d)))
        described = f"the observed gap of the reference pair ({reference[0]!r}, {reference[1]!r})"
        record.update(rule="reference pair, observed gap", reference=[str(m) for m in reference])
    else:
        delta = rule(choosing_units)
        if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)) or not (
            math.isfinite(delta) and delta >= 0
        ):
            raise ValueError(f"rule must return a finite number >= 0, got {delta!r}")
        delta = float(delta)
        described = f"the rule {getattr(rule, '__name__', 'given')}"
        record["rule"] = getattr(rule, "__name__", "callable")
    ranking = rank(testing, unit=unit, missing=missing, alpha=alpha, delta=delta,
                   rng=_child(seed, generator), **keywords)
    guarantee = (
        f"With probability at least {1 - alpha:.0%}, every certified 'j better than l' has "
        f"theta_j - theta_l > {delta:.4g}: delta is {described} on {record['choosing_units']} "
        f"{record['split_by']} drawn at random (seed {seed}), and the ranking uses only the "
        f"other {record['testing_units']}, so given delta its guarantee holds as for a margin "
        f"fixed in advance (the parts are independent when the {record['split_by']} are). "
        f"The ranking's own statement, given delta: {ranking.guarantee}"
    )
    record["seed"] = seed
    return DeltaChoice(delta, "split", ranking, alpha, guarantee, record)

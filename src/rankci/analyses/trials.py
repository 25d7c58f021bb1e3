"""Repeated trials: how much of a score's noise is the items and how much the reruns.

For one model with items i = 1..a, n_i trials on item i (N = sum n_i), item means ybar_i and
grand mean ybar (weighted by n_i), the one-way random-effects ANOVA (method of moments, unequal
n_i) gives

* within-item (trial) variance   ``s_w^2 = MSW = sum_i sum_t (y_it - ybar_i)^2 / (N - a)``;
* between-item variance          ``s_b^2 = max(0, (MSB - MSW) / n0)``, with
  ``MSB = sum_i n_i (ybar_i - ybar)^2 / (a - 1)`` and ``n0 = (N - sum_i n_i^2 / N) / (a - 1)``;
* the ICC                         ``s_b^2 / (s_b^2 + s_w^2)``;
* the flip rate: the fraction of items with two trials or more whose trials disagree;
* the standard error of the score (the mean of the item means) for **new items**,
  ``sd(ybar_i) / sqrt(a)``, and for a **rerun** (same items, new trials),
  ``sqrt(s_w^2 sum_i 1/n_i) / a`` (``sqrt(s_w^2 / n / a)`` with n trials on every item).

The same components plan a budget of I items x T trials: the score's variance is
``(s_b^2 + s_w^2 / T) / I`` (:func:`plan_trials`), and a pair's difference has between part
``s_bd^2`` (the variance of the item-mean differences less their trial part) and trial part
``s_wj^2 + s_wl^2``.

These are components of the per-trial scores (the ``mean`` rule), whatever per-item rule the
Scores were built with. With prompt variants, an "item" here is an (item, prompt) cell: the
trials are nested in it.

References
----------
Searle, S. R., Casella, G., & McCulloch, C. E. (1992). Variance Components. Wiley, Sec. 3.5
(one-way classification, unbalanced data: the ANOVA estimators and n0).
Miller, E. (2024). Adding error bars to evals. arXiv:2411.00640 (the within-question variance
of resampled answers and the standard error of a rerun).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import check_alpha, check_positive_int
from rankci.data import Scores

__all__ = ["TrialVariance", "TrialPlan", "trial_variance", "plan_trials"]


def _need_trials(scores: Scores, what: str) -> pd.DataFrame:
    if not isinstance(scores, Scores) or scores.trials is None:
        raise ValueError(
            f"{what} needs repeated trials: read the scores with a trial column (trial=..., "
            "or Inspect logs with epochs='trial')"
        )
    return scores.trials.frame


def _cells(frame: pd.DataFrame, models: tuple[str, ...]):
    """Per (cell, model): n, sum, sum of squares, min, max; cells = item (x prompt)."""
    key = frame["item"].astype(str)
    if "prompt" in frame.columns:
        key = key + "\x1f" + frame["prompt"].astype(str)
    cell_code, cell_labels = pd.factorize(key, sort=True)
    model_code = pd.Categorical(frame["model"], categories=list(models)).codes
    y = frame["score"].to_numpy(dtype=float)
    n_cells, n_models = len(cell_labels), len(models)
    flat = cell_code.astype(np.int64) * n_models + model_code
    size = n_cells * n_models
    n = np.bincount(flat, minlength=size).reshape(n_cells, n_models)
    s1 = np.bincount(flat, weights=y, minlength=size).reshape(n_cells, n_models)
    s2 = np.bincount(flat, weights=y * y, minlength=size).reshape(n_cells, n_models)
    lo = np.full(size, np.inf)
    hi = np.full(size, -np.inf)
    np.minimum.at(lo, flat, y)
    np.maximum.at(hi, flat, y)
    return n, s1, s2, lo.reshape(n_cells, n_models), hi.reshape(n_cells, n_models)


def _components(n, s1, s2):
    """Per model (columns): a, N, item means, MSW, MSB, n0, between, within."""
    scored = n > 0
    a = scored.sum(axis=0)
    total_n = n.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(scored, s1 / np.maximum(n, 1), np.nan)
        ss_within = np.where(scored, s2 - s1 * np.nan_to_num(means), 0.0).sum(axis=0)
        ss_within = np.maximum(ss_within, 0.0)
        msw = np.where(total_n > a, ss_within / (total_n - a), np.nan)
        grand = s1.sum(axis=0) / total_n
        msb = np.nansum(n * (means - grand) ** 2, axis=0) / (a - 1)
        n0 = (total_n - (n**2).sum(axis=0) / total_n) / (a - 1)
        between = np.maximum((msb - msw) / n0, 0.0)
    return a, total_n, means, msw, msb, n0, between


@dataclass(frozen=True, repr=False, eq=False)
class TrialVariance:
    """The variance split of each model's trials (:func:`trial_variance`).

    Attributes
    ----------
    table : DataFrame
        One row per model: score (mean of item means), items, trials (total), trials_min,
        trials_max, between (s_b^2), within (s_w^2), icc, flip_rate, se_new_items, se_rerun.
    """

    table: pd.DataFrame

    def __repr__(self) -> str:
        return f"TrialVariance({len(self.table)} models)"


def trial_variance(scores: Scores) -> TrialVariance:
    """Between-item and within-item (trial) variance per model, ICC, flip rate, two SEs.

    See the module docstring for the formulas (one-way random-effects ANOVA, unequal trials).

    Parameters
    ----------
    scores : Scores
        Read with a trial column (``read_scores(..., trial=...)``).

    Returns
    -------
    TrialVariance

    Raises
    ------
    ValueError
        Scores without trials.

    Examples
    --------
    >>> import pandas as pd
    >>> from rankci import read_scores
    >>> table = pd.DataFrame({"model": ["a"] * 6 + ["b"] * 6, "item": list("xxyyzz") * 2,
    ...                       "trial": [0, 1] * 6,
    ...                       "score": [1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0]})
    >>> split = trial_variance(read_scores(table))
    >>> split.table[["flip_rate", "within"]].round(3).values.tolist()
    [[0.333, 0.167], [0.333, 0.167]]
    """
    frame = _need_trials(scores, "trial_variance")
    n, s1, s2, lo, hi = _cells(frame, scores.models)
    a, total_n, means, msw, _, _, between = _components(n, s1, s2)
    with np.errstate(invalid="ignore", divide="ignore"):
        icc = between / (between + msw)
        repeated = n >= 2
        flips = ((hi > lo) & repeated).sum(axis=0)
        flip_rate = np.where(repeated.sum(axis=0) > 0, flips / repeated.sum(axis=0), np.nan)
        score = np.nanmean(means, axis=0)
        se_new = np.nanstd(means, axis=0, ddof=1) / np.sqrt(a)
        inverse_n = np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0).sum(axis=0)
        se_rerun = np.sqrt(msw * inverse_n) / a
    nz = np.where(n > 0, n, np.iinfo(np.int64).max)
    table = pd.DataFrame(
        {
            "model": list(scores.models),
            "score": score,
            "items": a,
            "trials": total_n,
            "trials_min": nz.min(axis=0),
            "trials_max": n.max(axis=0),
            "between": between,
            "within": msw,
            "icc": icc,
            "flip_rate": flip_rate,
            "se_new_items": se_new,
            "se_rerun": se_rerun,
        }
    )
    return TrialVariance(table=table)


@dataclass(frozen=True, repr=False, eq=False)
class TrialPlan:
    """Interval width and pairwise resolution over budgets of items x trials.

    Attributes
    ----------
    budgets : DataFrame
        One row per (items, trials): cost (items x trials), width (the widest model's
        expected interval width), mean_width, resolution (expected fraction of pairs
        separated), pairs_separated (expected count).
    cheapest : dict or None
        For ``target_width``: the (items, trials) with the smallest cost items x (trials +
        item_cost) whose widest model's width is at most the target, with at most
        ``max_items`` items; None without a target; ``{"feasible": False, ...}`` when no split
        within ``max_items`` and ``max_trials`` reaches it.
    components : DataFrame
        The per-model components used (between, within).
    """

    budgets: pd.DataFrame
    cheapest: dict | None
    components: pd.DataFrame
    alpha: float
    multiplicity: str

    def __repr__(self) -> str:
        return f"TrialPlan({len(self.budgets)} budgets)"


def _pair_components(n, s1, msw):
    """Between part of each pair's item-mean differences, on the cells both models have."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(n > 0, s1 / np.maximum(n, 1), np.nan)
        trial_part = np.where(n > 0, msw / np.maximum(n, 1), np.nan)
    m = means.shape[1]
    between = np.full((m, m), np.nan)
    gap = np.full((m, m), np.nan)
    for j in range(m):  # a loop over models; the pairs of j at once
        d = means[:, [j]] - means
        ok = np.isfinite(d)
        count = ok.sum(axis=0)
        d0 = np.where(ok, d, 0.0)
        mean_d = d0.sum(axis=0) / np.maximum(count, 1)
        var_d = (np.where(ok, (d0 - mean_d) ** 2, 0.0)).sum(axis=0) / np.maximum(count - 1, 1)
        noise = np.where(ok, trial_part[:, [j]] + trial_part, 0.0).sum(axis=0) / np.maximum(
            count, 1
        )
        between[j] = np.maximum(var_d - noise, 0.0)
        gap[j] = mean_d
    return between, gap


def plan_trials(
    scores: Scores,
    items: list[int] | None = None,
    trials: list[int] | None = None,
    *,
    alpha: float = 0.05,
    target_width: float | None = None,
    max_items: int | None = None,
    max_trials: int = 20,
    item_cost: float = 0.0,
    multiplicity: str = "bonferroni",
) -> TrialPlan:
    """Interval width and pairwise resolution for budgets of I items x T trials per item.

    With the components of :func:`trial_variance`, at I items and T trials a model's score has
    variance ``(s_b^2 + s_w^2 / T) / I`` and expected interval width
    ``2 z sqrt((s_b^2 + s_w^2 / T) / I)``, ``z = Phi^-1(1 - alpha/2)``; a pair with pilot gap D
    is separated with probability ``Phi(|D| / sqrt((s_bd^2 + (s_wj^2 + s_wl^2) / T) / I) - z')``
    (``z'`` at ``alpha`` or, ``multiplicity="bonferroni"``, at ``alpha / (M(M-1)/2)``, as
    :func:`rankci.plan`). The resolution is the mean of these over the pairs.

    Parameters
    ----------
    scores : Scores
        Pilot scores with a trial column.
    items, trials : list of int, optional
        The budgets (default: the pilot's item count and 1, 2, 5, 10 trials).
    alpha : float
    target_width : float, optional
        The widest model's interval width to reach: the cheapest split is reported.
    max_items : int, optional
        The most items there are (default: the pilot's items; a benchmark cannot grow at will).
    max_trials : int
        The most trials per item searched for the target.
    item_cost : float
        The cost of one more item in units of one trial (default 0: only runs cost). With a
        free item pool, one trial per item is always cheapest; more trials pay off only when
        items run out (``max_items``) or cost more than a run.
    multiplicity : {"none", "bonferroni"}

    Examples
    --------
    >>> import pandas as pd
    >>> from rankci import read_scores
    >>> table = pd.DataFrame({"model": ["a"] * 8 + ["b"] * 8, "item": list("wwxxyyzz") * 2,
    ...                       "trial": [0, 1] * 8,
    ...                       "score": [1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0]})
    >>> plan = plan_trials(read_scores(table), items=[4, 100], trials=[1, 4])
    >>> plan.budgets[["items", "trials", "cost"]].values.tolist()
    [[4, 1, 4], [4, 4, 16], [100, 1, 100], [100, 4, 400]]
    """
    alpha = check_alpha(alpha)
    if multiplicity not in ("none", "bonferroni"):
        raise ValueError(f"multiplicity must be 'none' or 'bonferroni', got {multiplicity!r}")
    frame = _need_trials(scores, "plan_trials")
    n, s1, s2, _, _ = _cells(frame, scores.models)
    a, _, _, msw, _, _, between = _components(n, s1, s2)
    if np.any(~np.isfinite(msw)):
        bad = [m for m, w in zip(scores.models, msw) if not np.isfinite(w)]
        raise ValueError(
            f"model {bad[0]!r} has one trial per item, so its trial variance is unknown; "
            "planning over trials needs at least two trials on some items"
        )
    pilot_items = int(a.max())
    items = [pilot_items] if items is None else [check_positive_int(i, "items") for i in items]
    trials = [1, 2, 5, 10] if trials is None else [check_positive_int(t, "trials") for t in trials]
    max_items = pilot_items if max_items is None else check_positive_int(max_items, "max_items")
    m = len(scores.models)
    n_pairs = m * (m - 1) // 2
    level = alpha / n_pairs if multiplicity == "bonferroni" else alpha
    z = special.ndtri(1 - alpha / 2)
    z_pair = special.ndtri(1 - level / 2)
    pair_between, gap = _pair_components(n, s1, msw)
    upper = np.triu_indices(m, 1)
    rows = []
    for i in items:
        for t in trials:
            var = (between + msw / t) / i
            width = 2 * z * np.sqrt(var)
            pair_var = (pair_between + (msw[:, None] + msw[None, :]) / t) / i
            with np.errstate(invalid="ignore", divide="ignore"):
                power = special.ndtr(np.abs(gap) / np.sqrt(pair_var) - z_pair)[upper]
            rows.append(
                {
                    "items": i,
                    "trials": t,
                    "cost": i * t,
                    "width": float(width.max()),
                    "mean_width": float(width.mean()),
                    "resolution": float(np.nanmean(power)),
                    "pairs_separated": float(np.nansum(power)),
                }
            )
    cheapest = None
    if target_width is not None:
        if not target_width > 0:
            raise ValueError(f"target_width must be > 0, got {target_width!r}")
        t_grid = np.arange(1, check_positive_int(max_trials, "max_trials") + 1)
        need = np.ceil(
            (2 * z) ** 2 * (between[None, :] + msw[None, :] / t_grid[:, None]) / target_width**2
        ).max(axis=1)
        need = np.maximum(need, 2)
        ok = need <= max_items
        if ok.any():
            cost = need * (t_grid + item_cost)
            best = int(np.argmin(np.where(ok, cost, np.inf)))
            cheapest = {
                "feasible": True,
                "items": int(need[best]),
                "trials": int(t_grid[best]),
                "cost": float(cost[best]),
                "target_width": float(target_width),
                "max_items": int(max_items),
                "item_cost": float(item_cost),
            }
        else:
            floor = 2 * z * np.sqrt((between + msw / t_grid[-1]) / max_items).max()
            cheapest = {
                "feasible": False,
                "target_width": float(target_width),
                "max_items": int(max_items),
                "max_trials": int(t_grid[-1]),
                "best_width": float(floor),
                "why": (
                    f"even {max_items} items x {int(t_grid[-1])} trials give width "
                    f"{floor:.3g}: the between-item variance alone needs more items"
                ),
            }
    components = pd.DataFrame(
        {"model": list(scores.models), "between": between, "within": msw, "items": a}
    )
    return TrialPlan(
        budgets=pd.DataFrame(rows),
        cheapest=cheapest,
        components=components,
        alpha=alpha,
        multiplicity=multiplicity,
    )

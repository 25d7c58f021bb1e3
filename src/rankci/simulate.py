"""Seeded synthetic leaderboards with a known truth, for tests, benchmarks and validation.

The generator is a logistic random-effects model (as in the R oracle data of ``tests/fixtures``)::

    eta[j, i, v] = ability[j] + u[c(i)] + w[i] + g[j, c(i)] + s[i, v]
    score ~ Bernoulli(expit(eta))

with cluster effects ``u ~ N(0, sigma_cluster^2)``, item effects ``w ~ N(0, sigma_item^2)``,
model-by-cluster interactions ``g ~ N(0, sigma_model_cluster^2)`` and item-by-prompt effects
``s ~ N(0, sigma_prompt^2)``. Every model sees the same random-effect distribution, so the
population accuracy ``theta_j = E[expit(ability_j + Z)]`` (Z the sum of the random effects)
increases with the ability: the true ranking is the ranking of the abilities, whatever the
unit of analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from rankci._base import as_generator, check_positive_int
from rankci.data import Scores
from rankci.ranking import observed_ranks

__all__ = ["Simulation", "simulate_scores", "population_accuracy"]


@dataclass(frozen=True, repr=False, eq=False)
class Simulation:
    """A simulated leaderboard and its truth.

    Attributes
    ----------
    scores : Scores
    matrix : ndarray (n_observations, n_models)
        Items (x prompts) by models, NaN where a cell was made missing.
    ability : ndarray (M,)
    theta : ndarray (M,)
        Population accuracy of each model (Gauss-Hermite integral over the random effects).
    true_rank : ndarray (M,) of int
        ``1 + #{l : theta_l > theta_j}`` (tied abilities share the better rank).
    """

    scores: Scores
    matrix: np.ndarray
    ability: np.ndarray
    theta: np.ndarray
    true_rank: np.ndarray

    def __repr__(self) -> str:
        return f"Simulation({self.scores!r})"


@lru_cache(maxsize=8)
def _hermite_nodes(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.hermite_e.hermegauss(nodes)


def population_accuracy(ability: Sequence[float], sigma: float, nodes: int = 80) -> np.ndarray:
    """``E[expit(a + sigma Z)]``, Z standard normal, by Gauss-Hermite quadrature.

    The population accuracy of a model with logit-scale ability ``a`` when the random effects add
    up to a normal with standard deviation ``sigma`` (probabilists' Hermite nodes,
    ``numpy.polynomial.hermite_e.hermegauss``).

    Parameters
    ----------
    ability : sequence of float
        Logit-scale abilities.
    sigma : float
        Standard deviation of the summed random effects.
    nodes : int, default 80
        Quadrature nodes.

    Returns
    -------
    numpy.ndarray
        One accuracy per ability.

    References
    ----------
    Abramowitz, M. and Stegun, I. A. (1964). Handbook of Mathematical Functions. National Bureau of
    Standards, Sec. 25.4 (Gauss-Hermite quadrature).
    Agresti, A. (2013). Categorical Data Analysis, 3rd ed. Wiley (logistic random-effects models).

    Examples
    --------
    With ``sigma = 0`` it is ``expit(a)``; otherwise it agrees with adaptive integration:

    >>> import numpy as np
    >>> from scipy import integrate, special, stats
    >>> population_accuracy([0.0, 1.0], 0.0).round(6).tolist()
    [0.5, 0.731059]
    >>> special.expit([0.0, 1.0]).round(6).tolist()
    [0.5, 0.731059]
    >>> population_accuracy([0.0, 1.0], 1.5).round(6).tolist()
    [0.5, 0.670739]
    >>> f = lambda z: special.expit(1.0 + 1.5 * z) * stats.norm.pdf(z)
    >>> round(integrate.quad(f, -np.inf, np.inf)[0], 6)
    0.670739
    """
    x, w = _hermite_nodes(nodes)
    a = np.asarray(ability, dtype=float)[:, None]
    return (w / w.sum() * (1.0 / (1.0 + np.exp(-(a + sigma * x))))).sum(axis=1)


def simulate_scores(
    ability: Sequence[float],
    n_items: int,
    *,
    n_clusters: int | None = None,
    n_prompts: int | None = None,
    sigma_cluster: float = 0.0,
    sigma_item: float = 1.0,
    sigma_model_cluster: float = 0.0,
    sigma_prompt: float = 0.0,
    missing_rate: float = 0.0,
    rng: int | np.random.Generator | None = None,
) -> Simulation:
    """Draw a leaderboard: M models (one per ability) on ``n_items`` items.

    Parameters
    ----------
    ability : sequence of float
        Logit-scale abilities; equal abilities are exact ties.
    n_items : int
        Items; with ``n_clusters`` they are split as evenly as possible among the clusters.
    n_prompts : int, optional
        Prompt variants per item (each item-prompt pair is scored).
    sigma_cluster, sigma_item, sigma_model_cluster, sigma_prompt : float
        Standard deviations of the random effects (logit scale).
    missing_rate : float
        Probability that a (model, observation) cell is missing (MCAR).
    rng : int, Generator or None

    Returns
    -------
    Simulation
        The scores, the items x models matrix, and the truth (``theta``, ``true_rank``).

    References
    ----------
    De Boeck, P. and Wilson, M. (eds.) (2004). Explanatory Item Response Models: A Generalized
    Linear and Nonlinear Approach. Springer, New York.

    Examples
    --------
    >>> sim = simulate_scores([0.0, 0.5, 1.0], 200, rng=1)
    >>> sim.matrix.shape
    (200, 3)
    >>> sim.true_rank.tolist()
    [3, 2, 1]
    """
    generator = as_generator(rng)
    ability = np.asarray(ability, dtype=float)
    n_models = ability.size
    n_items = check_positive_int(n_items, "n_items", minimum=2)
    n_groups = 1 if n_clusters is None else check_positive_int(n_clusters, "n_clusters")
    n_variants = 1 if n_prompts is None else check_positive_int(n_prompts, "n_prompts")
    cluster_of_item = np.arange(n_items) * n_groups // n_items

    u = generator.normal(0.0, sigma_cluster, n_groups)
    w = generator.normal(0.0, sigma_item, n_items)
    g = generator.normal(0.0, sigma_model_cluster, (n_groups, n_models))
    s = generator.normal(0.0, sigma_prompt, (n_items, n_variants))

    eta = (
        ability[None, None, :]
        + (u[cluster_of_item] + w)[:, None, None]
        + g[cluster_of_item][:, None, :]
        + s[:, :, None]
    )  # items x prompts x models
    correct = generator.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))
    matrix = correct.reshape(n_items * n_variants, n_models).astype(float)
    if missing_rate > 0:
        matrix[generator.random(matrix.shape) < missing_rate] = np.nan

    # labels are zero-padded, so their sorted order is the generation order and the codes can be
    # handed to Scores directly (the generator's output needs no validation)
    rows, cols = np.nonzero(np.isfinite(matrix))
    clusters = None
    if n_clusters is not None:
        clusters = tuple(f"c{k:0{len(str(n_groups - 1))}d}" for k in range(n_groups))
    prompts = None if n_prompts is None else tuple(f"p{k}" for k in range(n_variants))
    scores = Scores(
        models=tuple(f"m{k:0{len(str(n_models - 1))}d}" for k in range(n_models)),
        items=tuple(f"i{k:0{len(str(n_items - 1))}d}" for k in range(n_items)),
        clusters=clusters,
        prompts=prompts,
        model_code=cols.astype(np.int32),
        item_code=(rows // n_variants).astype(np.int32),
        prompt_code=None if n_prompts is None else (rows % n_variants).astype(np.int32),
        item_cluster=None if n_clusters is None else cluster_of_item.astype(np.int32),
        score=matrix[rows, cols],
    )
    sigma = float(
        np.sqrt(sigma_cluster**2 + sigma_item**2 + sigma_model_cluster**2 + sigma_prompt**2)
    )
    theta = population_accuracy(ability, sigma)
    return Simulation(
        scores=scores,
        matrix=matrix,
        ability=ability,
        theta=theta,
        true_rank=observed_ranks(ability),
    )

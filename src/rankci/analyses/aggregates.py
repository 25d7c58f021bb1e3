"""Rank intervals for the aggregates leaderboards publish over benchmarks (issue 28, item 3).

Each aggregate is a function of the (benchmarks x models) matrix ``S`` of benchmark scores
(``S_bj`` the mean of model j's unit scores on benchmark b; NaN where j was not run on b), applied
to the last two axes of an array, so one call also serves a stack of bootstrap draws:

* ``"win-rate"`` -- HELM's mean win rate (``compute_aggregate_row_win_rates`` in
  ``stanford-crfm/helm``, ``src/helm/benchmark/presentation/summarize.py``). On benchmark b with
  ``n_b`` models present, ``w_bj = (#{l : S_bl < S_bj} + (#{l : S_bl = S_bj} - 1) / 2) / (n_b - 1)``
  (a tie counts half a win); benchmarks with fewer than two models are skipped; the aggregate is
  the mean of ``w_bj`` over the benchmarks model j has (a model missing a scenario is averaged
  over the scenarios it has, as HELM does).
* ``"borda"`` -- MTEB's Borda count over tasks (``borda_count`` in ``embeddings-benchmark/mteb``,
  ``mteb/task_aggregation.py``): every task ranks the models on it; with M candidates the best
  gets M - 1 points, the next M - 2, ...; tied models share the mean of the points of their
  places (the tournament Borda count); a model missing a task gets 0 points for it. In closed
  form, for a model present on b, ``p_bj = #{l : S_bl < S_bj} + (#{l : S_bl = S_bj} - 1) / 2
  + (M - n_b)``; the aggregate is ``sum_b p_bj``.
* ``"normalised"`` -- the Open LLM Leaderboard v2 mean of baseline-normalised scores:
  ``max(0, (S_bj - g_b) / (1 - g_b))`` with ``g_b`` the random-guess baseline of benchmark b
  (0.25 for four choices), averaged over benchmarks (scores in [0, 1]).
* ``"weighted"`` -- ``sum_b w_b S_bj`` (the overall table of :func:`rankci.rank_benchmarks`).

Ties are exact equalities, as in both sources; the benchmark scores are rounded to 12 decimals
first so that two means of the same value computed in different orders tie.

Simultaneous rank intervals, two targets of inference:

* ``target="items"`` (new items on these benchmarks): a bootstrap stratified by benchmark --
  the items of each benchmark are drawn with replacement within that benchmark, jointly for all
  models (pairing kept) -- recomputes the aggregate ``A*``. Every pair gets
  ``T_jl = (A_j - A_l) / se_jl`` with ``se_jl`` the bootstrap SD of ``A*_j - A*_l``, and the
  Romano-Wolf max-t step-down (:func:`rankci.certify.stepdown.stepdown_maxt`) on the null draws
  ``A* - A`` certifies dominances at family-wise level alpha; a pair whose bootstrap SD is zero
  (its difference never moved in any draw) is certified when its difference is not zero, and
  counted in ``details["zero_se_pairs"]``.
* ``target="benchmarks"`` (new benchmarks from the same population): the benchmarks are the
  units; each aggregate is a mean of per-benchmark contributions ``c_bj`` (win rates, Borda
  points / (M - 1), normalised scores, ``B w_b S_bj``), and the paired tests of the project
  (:func:`rankci.pairwise_tests`, with its exact floor for few units) with Holm give the
  dominances. With too few benchmarks for any p-value to pass Holm's first threshold
  ``alpha / (M (M - 1))``, the result says how many benchmarks it needs.

References
----------
Liang, P., Bommasani, R., Lee, T., et al. (2023). Holistic evaluation of language models.
Transactions on Machine Learning Research.
Muennighoff, N., Tazi, N., Magne, L. and Reimers, N. (2023). MTEB: Massive text embedding
benchmark. Proceedings of EACL 2023, 2014-2037.
Fourrier, C., Habib, N., Lozovskaya, A., Szafer, K. and Wolf, T. (2024). Open LLM Leaderboard v2.
Hugging Face.
Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple hypothesis
testing. Journal of the American Statistical Association 100(469), 94-108.
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
of Statistics 6(2), 65-70.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
from scipy import stats

from rankci._base import RankciWarning, as_generator, check_alpha, check_choice, check_positive_int
from rankci.certify.holm import PROCEDURES, certify_holm, first_threshold
from rankci.certify.stepdown import stepdown_maxt
from rankci.data import Scores
from rankci.evidence import bootstrap as boot
from rankci.evidence.moments import variance_is_zero
from rankci.evidence.pairwise import pairwise_tests
from rankci.ranking import Ranking, ranking_from_dominance

#: how the benchmarks of an overall table are weighted (besides a mapping of weights)
WEIGHTS = ("equal", "items")


def benchmark_weights(weights, tables: dict) -> dict[str, float]:
    """Each benchmark's weight in the overall table, summing to 1: ``"equal"``, ``"items"`` (by
    its number of units) or a mapping benchmark -> weight >= 0 (``tables``: benchmark ->
    anything with ``n_units``)."""
    pairwise = tables
    names = list(pairwise)
    if isinstance(weights, Mapping):
        unknown = sorted(set(map(str, weights)) - set(names))
        if unknown:
            raise ValueError(f"weight given for unknown benchmark {unknown[0]!r}")
        lacking = [n for n in names if n not in weights]
        if lacking:
            raise ValueError(f"no weight given for benchmark {lacking[0]!r}")
        raw = np.array([float(weights[n]) for n in names])
        if not np.all(np.isfinite(raw)) or np.any(raw < 0) or raw.sum() <= 0:
            raise ValueError("benchmark weights must be finite, >= 0 and not all zero")
    else:
        check_choice("weights", weights, WEIGHTS)
        if weights == "equal":
            raw = np.ones(len(names))
        else:
            raw = np.array([float(pairwise[n].n_units) for n in names])
    raw = raw / raw.sum()
    return {n: float(w) for n, w in zip(names, raw)}

__all__ = [
    "AGGREGATES",
    "TARGETS",
    "aggregate_scores",
    "benchmarks_needed",
    "benchmark_means",
    "borda_points",
    "contributions",
    "normalised_scores",
    "rank_aggregate",
    "stepdown_dominance",
    "win_rates",
]

AGGREGATES = ("weighted", "win-rate", "borda", "normalised")
TARGETS = ("items", "benchmarks")
DEFAULT_DRAWS = 2000
_DECIMALS = 12

TITLES = {
    "weighted": "weighted mean of the benchmark scores",
    "win-rate": "mean win rate over benchmarks (HELM)",
    "borda": "Borda count over benchmarks (MTEB)",
    "normalised": "mean of baseline-normalised scores (Open LLM Leaderboard v2)",
}


# ---------------------------------------------------------------------- the aggregates
def _beats(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HELM's wins ``#{l: s_l < s_j} + (#{l: s_l = s_j} - 1) / 2`` and ``n_b`` on the last axes.

    That count is the mid-rank minus one among the models present (ranks 1 = worst; a tied
    group of t models starting after ``below`` others has mid-rank ``below + (t + 1) / 2``), so
    one ``rankdata(method="average")`` per row gives it in O(M log M), NaN left out.
    """
    s = np.round(np.asarray(scores, dtype=float), _DECIMALS)
    present = np.isfinite(s)
    if s.size == 0:
        return s.copy(), present.sum(axis=-1, keepdims=True)
    ranks = stats.rankdata(s, axis=-1, method="average", nan_policy="omit")
    wins = np.where(present, ranks - 1.0, np.nan)
    return wins, present.sum(axis=-1, keepdims=True)


def win_rates(scores: np.ndarray) -> np.ndarray:
    """Per-benchmark HELM win rates of a (..., benchmarks, models) score array.

    ``w_bj = (#{l : S_bl < S_bj} + (#{l : S_bl = S_bj} - 1) / 2) / (n_b - 1)``, n_b the models
    present on b; NaN where j is missing or fewer than two models are present.

    Parameters
    ----------
    scores : array_like (..., B, M)
        Benchmark scores, higher is better, NaN where a model was not run.

    Returns
    -------
    ndarray (..., B, M)

    References
    ----------
    Liang, P., Bommasani, R., Lee, T., et al. (2023). Holistic evaluation of language models.
    Transactions on Machine Learning Research.

    Examples
    --------
    >>> win_rates([[0.9, 0.5, 0.5], [0.2, 0.7, float("nan")]]).tolist()
    [[1.0, 0.25, 0.25], [0.0, 1.0, nan]]
    """
    wins, n = _beats(scores)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= 2, wins / (n - 1), np.nan)


def borda_points(scores: np.ndarray) -> np.ndarray:
    """Per-task MTEB Borda points of a (..., tasks, models) score array.

    With M models in all and n_b present on task b, a present model gets
    ``#{l : S_bl < S_bj} + (#{l : S_bl = S_bj} - 1) / 2 + (M - n_b)`` (the best M - 1, tied
    models the mean of their places' points), a missing one 0.

    References
    ----------
    Muennighoff, N., Tazi, N., Magne, L. and Reimers, N. (2023). MTEB: Massive text embedding
    benchmark. Proceedings of EACL 2023, 2014-2037.

    Examples
    --------
    >>> borda_points([[0.9, 0.5, 0.5], [0.2, 0.7, float("nan")]]).tolist()
    [[2.0, 0.5, 0.5], [1.0, 2.0, 0.0]]
    """
    wins, n = _beats(scores)
    m = wins.shape[-1]
    return np.where(np.isnan(wins), 0.0, wins + (m - n))


def normalised_scores(scores: np.ndarray, baselines: np.ndarray) -> np.ndarray:
    """``max(0, (S_bj - g_b) / (1 - g_b))``: scores above the random baseline g_b, rescaled.

    References
    ----------
    Fourrier, C., Habib, N., Lozovskaya, A., Szafer, K. and Wolf, T. (2024). Open LLM Leaderboard
    v2. Hugging Face.

    Examples
    --------
    >>> normalised_scores([[0.25, 0.625, 0.1]], [0.25]).tolist()
    [[0.0, 0.5, 0.0]]
    """
    s = np.asarray(scores, dtype=float)
    g = np.asarray(baselines, dtype=float)[:, None]
    return np.maximum((s - g) / (1.0 - g), 0.0)


def contributions(
    scores: np.ndarray,
    aggregate: str,
    weights: np.ndarray | None = None,
    baselines: np.ndarray | None = None,
) -> np.ndarray:
    """Per-benchmark contributions ``c_bj`` whose mean over the benchmarks ranks as the aggregate.

    win-rate: ``w_bj``; borda: ``p_bj / (M - 1)``; normalised: the normalised score;
    weighted: ``B w_b S_bj``. All but weighted (with unequal weights) lie in [0, 1].

    Examples
    --------
    >>> contributions([[0.9, 0.5], [0.2, 0.7]], "borda").tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    check_choice("aggregate", aggregate, AGGREGATES)
    s = np.asarray(scores, dtype=float)
    n_benchmarks, m = s.shape[-2], s.shape[-1]
    if aggregate == "win-rate":
        return win_rates(s)
    if aggregate == "borda":
        return borda_points(s) / max(m - 1, 1)
    if aggregate == "normalised":
        return normalised_scores(s, baselines)
    w = np.full(n_benchmarks, 1.0 / n_benchmarks) if weights is None else np.asarray(weights)
    return s * (n_benchmarks * w)[:, None]


def aggregate_scores(
    scores: np.ndarray,
    aggregate: str,
    weights: np.ndarray | None = None,
    baselines: np.ndarray | None = None,
) -> np.ndarray:
    """The aggregate of every model, from a (..., benchmarks, models) array of benchmark scores.

    ``"win-rate"``: mean of the win rates over the benchmarks the model has (NaN if none);
    ``"borda"``: total Borda points; ``"normalised"``: mean normalised score; ``"weighted"``:
    ``sum_b w_b S_bj`` (equal weights by default). NaN where the last two need a missing score.

    Parameters
    ----------
    scores : array_like (..., B, M)
    aggregate : {"weighted", "win-rate", "borda", "normalised"}
    weights : array_like (B,), optional
        Benchmark weights summing to 1 (``"weighted"``).
    baselines : array_like (B,), optional
        Random-guess baselines in [0, 1) (``"normalised"``).

    Returns
    -------
    ndarray (..., M)

    References
    ----------
    Liang, P., Bommasani, R., Lee, T., et al. (2023). Holistic evaluation of language models.
    Transactions on Machine Learning Research.
    Muennighoff, N., Tazi, N., Magne, L. and Reimers, N. (2023). MTEB: Massive text embedding
    benchmark. Proceedings of EACL 2023, 2014-2037.

    Examples
    --------
    >>> s = [[0.9, 0.5, 0.5], [0.2, 0.7, 0.4]]
    >>> aggregate_scores(s, "win-rate").tolist()
    [0.5, 0.625, 0.375]
    >>> aggregate_scores(s, "borda").tolist()
    [2.0, 2.5, 1.5]
    """
    check_choice("aggregate", aggregate, AGGREGATES)
    s = np.asarray(scores, dtype=float)
    if aggregate == "win-rate":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a model with no benchmark: NaN
            return np.nanmean(win_rates(s), axis=-2)
    if aggregate == "borda":
        return borda_points(s).sum(axis=-2)
    return contributions(s, aggregate, weights, baselines).mean(axis=-2)


# ---------------------------------------------------------------------- step-down on draws
def stepdown_dominance(
    observed: np.ndarray, draws: np.ndarray, alpha: float = 0.05, width: float = 1.0
) -> tuple[np.ndarray, dict]:
    """Certified dominances from bootstrap draws of an aggregate: studentised max-t step-down.

    For every pair, ``T_jl = (A_j - A_l) / se_jl`` with ``se_jl`` the SD (ddof 1) of
    ``A*_j - A*_l`` over the draws; the null draws are ``A* - A``; both directions of every pair
    form the family of :func:`rankci.certify.stepdown.stepdown_maxt`. A pair with zero SD (by
    :func:`rankci.evidence.moments.variance_is_zero` with the aggregate's range ``width``) has
    ``T = +-inf`` when its difference is not zero (certified), 0 otherwise.

    Parameters
    ----------
    observed : ndarray (M,)
        The aggregate on the data.
    draws : ndarray (R, M)
        The aggregate on R resamples (NaN: a model without scores in that draw).
    alpha : float
    width : float
        The range of the aggregate (1 for win rates, B (M - 1) for Borda totals).

    Returns
    -------
    dominance : ndarray (M, M) of bool
    facts : dict
        ``critical_values`` per step, ``zero_se_pairs`` (certified without variation).

    References
    ----------
    Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple
    hypothesis testing. Journal of the American Statistical Association 100(469), 94-108.

    Examples
    --------
    >>> import numpy as np
    >>> draws = np.array([[1.0, 0.0], [0.9, 0.2], [1.1, 0.1], [1.0, -0.1]] * 50)
    >>> d, facts = stepdown_dominance(np.array([1.0, 0.05]), draws)
    >>> d.tolist()
    [[False, True], [False, False]]
    """
    observed = np.asarray(observed, dtype=float)
    draws = np.asarray(draws, dtype=float)
    m = observed.size
    first, second = np.triu_indices(m, k=1)
    null = draws - observed
    diff = observed[first] - observed[second]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.nanstd(null[:, first] - null[:, second], axis=0, ddof=1)
    zero = variance_is_zero(spread**2, width)
    with np.errstate(invalid="ignore", divide="ignore"):
        forward = np.where(zero, np.sign(diff) * np.inf, diff / spread)
    forward = np.where(zero & (diff == 0), 0.0, forward)
    scale = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, spread))
    rf, rb, crits = stepdown_maxt(first, second, forward, -forward, scale, null, alpha)
    dominance = np.zeros((m, m), dtype=bool)
    dominance[first[rf], second[rf]] = True
    dominance[second[rb], first[rb]] = True
    zero_certified = zero & (rf | rb)
    facts = {
        "critical_values": [float(c) for c in crits],
        "zero_se_pairs": int(zero_certified.sum()),
    }
    return dominance, facts


# ---------------------------------------------------------------------- benchmarks as units
#: Benchmarks as units are few units of continuous scores (per-benchmark contributions to the
#: aggregate), where the plain t's level is not assured below 25 units
#: (validation/small_sample_rule.py, beta designs: Holm FWER up to 0.126 at n = 5); so the target
#: "benchmarks" takes the exact floor (Hoeffding's bound, valid for every law of scores in
#: [0, 1]) up to this many benchmarks unless ``exact_bound_n`` is given.
BENCHMARK_FLOOR_N = 24


def _with_floor(test: str, test_options: dict) -> dict:
    if test in ("auto", "t", "z"):
        return {"exact_bound_n": BENCHMARK_FLOOR_N, **test_options}
    return dict(test_options)


def benchmarks_needed(
    n_models: int, alpha: float, test: str = "t", delta: float = 0.0, **test_options
) -> int | None:
    """The fewest benchmarks (units) at which the paired test could pass Holm's first threshold.

    The smallest n whose smallest attainable p-value (:attr:`rankci.Pairwise.smallest_pvalue`,
    with bounded contributions) is at most ``alpha / (M (M - 1))``; None above 10,000. The t and
    z take the exact floor up to :data:`BENCHMARK_FLOOR_N` benchmarks unless ``exact_bound_n``
    is given.

    Examples
    --------
    >>> benchmarks_needed(5, 0.05)   # t with its exact floor: 2^-n <= 0.05 / 20
    9
    """
    threshold = first_threshold(n_models * (n_models - 1), alpha, "simultaneous")
    column = np.linspace(0.5, 1.0, 2)
    test_options = _with_floor(test, test_options)

    def reachable(n: int) -> bool:
        x = np.column_stack([np.resize(column, n), np.zeros(n)])
        pw = pairwise_tests(Scores.from_matrix(x).units(), test, delta=delta, **test_options)
        return float(pw.smallest_pvalue) <= threshold and n >= 3

    low, high = 2, 3
    while not reachable(high):
        low, high = high, high * 2
        if high > 10_000:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reachable(mid) else (mid, high)
    return high


# ---------------------------------------------------------------------- input
def benchmark_means(parts: Mapping[str, Scores], unit: str = "item", missing: str = "complete"):
    """Models (union, in order of first appearance), the (B x M) means and each part's units."""
    models: list[str] = []
    units = {}
    for name, scores in parts.items():
        u = scores.units(unit, missing)
        units[name] = u
        models.extend(m for m in u.models if m not in models)
    means = np.full((len(parts), len(models)), np.nan)
    for b, u in enumerate(units.values()):
        x = u.values
        finite = np.isfinite(x)
        index = [models.index(m) for m in u.models]
        with np.errstate(invalid="ignore", divide="ignore"):
            means[b, index] = np.where(finite, x, 0.0).sum(axis=0) / finite.sum(axis=0)
    return models, means, units


def _baselines(baselines, names: list[str]) -> np.ndarray:
    if baselines is None:
        raise ValueError(
            "aggregate='normalised' needs the random-guess baseline of every benchmark: pass "
            "baselines={name: value}, e.g. 0.25 for four choices (benchmarks: "
            + ", ".join(repr(n) for n in names) + ")"
        )
    if not isinstance(baselines, Mapping):
        baselines = dict(zip(names, np.broadcast_to(np.asarray(baselines, float), len(names))))
    unknown = sorted(set(map(str, baselines)) - set(names))
    if unknown:
        raise ValueError(
            f"baselines names unknown benchmark {unknown[0]!r}; benchmarks are: "
            + ", ".join(repr(n) for n in names)
        )
    lacking = [n for n in names if n not in baselines]
    if lacking:
        raise ValueError(
            f"no baseline given for benchmark {lacking[0]!r} (aggregate='normalised' needs one "
            "per benchmark in baselines=)"
        )
    out = np.array([float(baselines[n]) for n in names])
    for name, g in zip(names, out):
        if not np.isfinite(g) or g < 0 or g >= 1:
            raise ValueError(
                f"the baseline of benchmark {name!r} is {g:g}; a random-guess baseline must lie "
                "in [0, 1) (1 / number of choices), as (score - baseline) / (1 - baseline) "
                "divides by 1 - baseline"
            )
    return out


# ---------------------------------------------------------------------- the analysis
def rank_aggregate(
    parts: Mapping[str, Scores],
    *,
    aggregate: str = "win-rate",
    target: str = "items",
    alpha: float = 0.05,
    weights: str | Mapping[str, float] = "equal",
    baselines: Mapping[str, float] | None = None,
    unit: str = "item",
    missing: str = "complete",
    draws: int = DEFAULT_DRAWS,
    test: str = "t",
    multiplicity: str = "holm",
    rng: int | np.random.Generator | None = None,
    **test_options,
) -> Ranking:
    """Simultaneous rank intervals for an aggregate over benchmarks (HELM, MTEB, Open LLM LB).

    Parameters
    ----------
    parts : mapping of str to Scores
        One Scores per benchmark (at least two).
    aggregate : {"win-rate", "borda", "normalised", "weighted"}
        See the module docstring for the definitions and their sources.
    target : {"items", "benchmarks"}
        ``"items"``: new items on these benchmarks (stratified bootstrap, max-t step-down);
        ``"benchmarks"``: new benchmarks (benchmarks as units, paired ``test`` with Holm).
    alpha : float, default 0.05
    weights : "equal", "items" or mapping
        Benchmark weights of ``"weighted"``.
    baselines : mapping of benchmark to float in [0, 1)
        Random-guess baselines of ``"normalised"`` (one per benchmark).
    unit, missing : str
        The units within each benchmark (:meth:`rankci.Scores.units`).
    draws : int, default 2000
        Bootstrap draws (``target="items"``).
    test, multiplicity, **test_options
        The paired test and procedure of ``target="benchmarks"``.
    rng : int or Generator, optional

    Returns
    -------
    Ranking
        ``score`` is the aggregate; ``details`` holds the aggregate, the target, the benchmark
        scores, and with target "benchmarks" the number of benchmarks needed.

    Raises
    ------
    ValueError
        One benchmark; a missing or invalid baseline; a model missing a benchmark where the
        aggregate or target has no rule for it (see the notes).

    Notes
    -----
    A model missing a benchmark: win-rate follows HELM (its mean over the benchmarks it has),
    borda follows MTEB (0 points there); normalised and weighted leave the model out of the
    table (counted in ``excluded``); ``target="benchmarks"`` refuses (the benchmarks must be
    complete units).

    References
    ----------
    Liang, P., Bommasani, R., Lee, T., et al. (2023). Holistic evaluation of language models.
    Transactions on Machine Learning Research.
    Muennighoff, N., Tazi, N., Magne, L. and Reimers, N. (2023). MTEB: Massive text embedding
    benchmark. Proceedings of EACL 2023, 2014-2037.
    Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple
    hypothesis testing. Journal of the American Statistical Association 100(469), 94-108.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> rng = np.random.default_rng(0)
    >>> parts = {b: rankci.Scores.from_matrix((rng.random((300, 3)) < p).astype(float),
    ...                                      models=["a", "b", "c"])
    ...          for b, p in (("x", [0.9, 0.5, 0.2]), ("y", [0.8, 0.6, 0.1]))}
    >>> r = rank_aggregate(parts, aggregate="win-rate", rng=1, draws=500)
    >>> r.score.tolist(), r.dominance_pairs()
    ([1.0, 0.5, 0.0], [('a', 'b'), ('a', 'c'), ('b', 'c')])
    """
    check_choice("aggregate", aggregate, AGGREGATES)
    check_choice("target", target, TARGETS)
    check_choice("multiplicity", multiplicity, PROCEDURES)
    alpha = check_alpha(alpha)
    draws = check_positive_int(draws, "draws")
    names = [str(n) for n in parts]
    if len(names) < 2:
        only = f" (only {names[0]!r})" if names else ""
        raise ValueError(
            f"an aggregate over benchmarks needs at least two benchmarks{only}: give the scores "
            "of two or more benchmarks, or rank the one benchmark on its own"
        )
    models, means, units = benchmark_means(parts, unit, missing)
    g = _baselines(baselines, names) if aggregate == "normalised" else None
    if aggregate == "normalised":
        for name in names:
            x = units[name].values
            finite = x[np.isfinite(x)]
            if finite.size and (finite.min() < 0 or finite.max() > 1):
                raise ValueError(
                    f"aggregate='normalised' needs scores in [0, 1]; benchmark {name!r} has "
                    f"scores in [{finite.min():g}, {finite.max():g}]"
                )
    if aggregate == "weighted":  # the weights of rank_benchmarks' overall table (n_units)
        w = np.array(list(benchmark_weights(weights, units).values()))
    else:
        w = None
    absent = {
        m: [names[b] for b in np.flatnonzero(np.isnan(means[:, j]))] for j, m in enumerate(models)
    }
    absent = {m: bs for m, bs in absent.items() if bs}
    excluded: dict = {}
    rule = None
    if absent and target == "benchmarks":
        model, bs = next(iter(absent.items()))
        raise ValueError(
            f"target='benchmarks' uses the benchmarks as paired units, so every model needs "
            f"every benchmark; model {model!r} has no scores on benchmark {bs[0]!r}. Leave the "
            "model out, or use target='items'"
        )
    if absent and aggregate in ("normalised", "weighted"):
        keep = [j for j, m in enumerate(models) if m not in absent]
        excluded["models_not_in_every_benchmark"] = list(absent)
        rule = f"models missing a benchmark are left out of the {aggregate} table"
        models = [models[j] for j in keep]
        means = means[:, keep]
        if len(models) < 2:
            raise ValueError(
                "fewer than two models are scored on every benchmark, so there is no "
                f"{aggregate} table"
            )
    elif absent:
        excluded["models_missing_benchmarks"] = absent
        rule = (
            "HELM's rule: a model's win rate is its mean over the benchmarks it has"
            if aggregate == "win-rate"
            else "MTEB's rule: a model gets 0 Borda points on a benchmark it is missing"
        )
    observed = aggregate_scores(means, aggregate, w, g)
    if np.isnan(observed).any():
        lost = [m for m, v in zip(models, observed) if np.isnan(v)]
        raise ValueError(
            f"model {lost[0]!r} has no benchmark with another model to compare with, so it has "
            "no win rate; leave it out"
        )
    m = len(models)
    width = {"win-rate": 1.0, "borda": float(len(names) * (m - 1))}.get(aggregate, 1.0)
    if aggregate == "weighted":
        width = float(max(np.nanmax(means) - np.nanmin(means), 1.0))
    n_units = int(sum(u.n_units for u in units.values()))
    details: dict = {
        "aggregate": aggregate,
        "target": target,
        "benchmarks": names,
        "benchmark_scores": {
            name: {mod: float(v) for mod, v in zip(models, means[b]) if np.isfinite(v)}
            for b, name in enumerate(names)
        },
    }
    if rule:
        details["missing_rule"] = rule
    if g is not None:
        details["baselines"] = dict(zip(names, g.tolist()))
    if w is not None:
        details["weights"] = dict(zip(names, w.tolist()))
    title = TITLES[aggregate]
    if target == "items":
        generator = as_generator(rng)
        stack = np.full((draws, len(names), m), np.nan)
        for b, name in enumerate(names):
            u = units[name]
            index = [models.index(x) for x in u.models if x in models]
            cols = [k for k, x in enumerate(u.models) if x in models]
            stack[:, b, index] = boot.bootstrap_means(u.values[:, cols], draws, generator)
        replicated = aggregate_scores(stack, aggregate, w, g)
        dominance, facts = stepdown_dominance(observed, replicated, alpha, width)
        details.update(facts)
        procedure = {
            "test": "aggregate-bootstrap",
            "unit": unit,
            "multiplicity": "max-t step-down",
            "resampling": "bootstrap stratified by benchmark",
            "covariance": "per-pair bootstrap SE",
            "draws": draws,
            "aggregate": aggregate,
            "target": target,
        }
        guarantee = (
            f"With probability at least {1 - alpha:.0%} (asymptotically, by the bootstrap), "
            f"every certified dominance and rank interval of the {title} is true simultaneously "
            f"(Romano-Wolf max-t step-down on the {m * (m - 1)} ordered pairs, studentised by a "
            f"bootstrap of {draws} draws stratified by benchmark); inference extends to new "
            f"items of these {len(names)} benchmarks, not to other benchmarks. The bootstrap is "
            "not reliable where benchmark scores are tied or nearly so (win rate and Borda are "
            "step functions there): see docs/benchmarks.md."
        )
        if facts["zero_se_pairs"]:
            details["zero_se_note"] = (
                f"{facts['zero_se_pairs']} pairs were certified because their aggregate "
                f"difference did not change in any of the {draws} draws"
            )
    else:
        c = contributions(means, aggregate, w, g)
        units_b = Scores.from_matrix(
            c, models=models, items=names, bounds=None
        ).units("item", "complete")
        options = _with_floor(test, test_options)
        pairwise = pairwise_tests(units_b, test, delta=0.0, rng=rng, **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said below in benchmark words
            cert = certify_holm(pairwise, alpha, "simultaneous", multiplicity)
        dominance = cert.dominance
        bounded = bool(np.nanmin(c) >= 0 and np.nanmax(c) <= 1)
        needed = benchmarks_needed(m, alpha, test, **options) if bounded else None
        details["benchmarks_needed"] = needed
        if needed is not None and len(names) < needed:
            message = (
                f"nothing can be certified: with {len(names)} benchmarks as units the {test} test "
                f"cannot pass Holm's first threshold alpha / (M (M - 1)) = "
                f"{first_threshold(m * (m - 1), alpha):.3g} for {m} models; the target "
                f"'benchmarks' needs >= {needed} benchmarks at this table's alpha = {alpha:g} "
                "(or fewer models, or the target 'items')"
            )
            details["nothing_certified"] = message
            warnings.warn(message, RankciWarning, stacklevel=2)
        procedure = {
            "test": test,
            "unit": "benchmark",
            "multiplicity": multiplicity,
            "aggregate": aggregate,
            "target": target,
        }
        guarantee = (
            f"With probability at least {1 - alpha:.0%}, every certified dominance and rank "
            f"interval of the {title} is true simultaneously ({multiplicity.capitalize()} over "
            f"the {m * (m - 1)} ordered pairs; paired {test} tests with the {len(names)} "
            f"benchmarks as units"
            + (
                f", each p-value at least Hoeffding's exact bound up to "
                f"{options['exact_bound_n']} benchmarks"
                if options.get("exact_bound_n")
                else ""
            )
            + "); inference extends to new benchmarks drawn like these."
        )
        n_units = len(names)
    return ranking_from_dominance(
        models,
        observed,
        dominance,
        alpha=alpha,
        coverage="simultaneous",
        procedure=procedure,
        n_units=n_units,
        excluded=excluded,
        guarantee=guarantee,
        details=details,
    )

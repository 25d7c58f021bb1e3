"""Plots of rankci results, drawn with matplotlib's object API.

Every function returns a :class:`matplotlib.figure.Figure` (no pyplot state is touched, so they
are safe in servers and threads); save it with ``fig.savefig("plot.png")`` or
``fig.savefig("plot.svg")``.
Models are listed best first, as on a leaderboard.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rankci.ranking import Ranking

__all__ = [
    "plot_rank_intervals",
    "plot_score_intervals",
    "plot_dominance",
    "plot_tiers",
    "plot_cluster_rank_intervals",
    "plot_monitor_progress",
    "plot_monitor_intervals",
]

INTERVAL_COLOR = "#3b6ea8"
POINT_COLOR = "#c8553d"
GRID_COLOR = "#d9d9d9"


def _height(n_rows: int, per_row: float = 0.28, minimum: float = 2.4) -> float:
    return max(minimum, 0.9 + per_row * n_rows)


def _model_axis(ax, labels, fontsize=None):
    ax.set_yticks(np.arange(len(labels)))
    ax.set_yticklabels(labels, fontsize=fontsize or (8 if len(labels) > 25 else 9))
    ax.set_ylim(len(labels) - 0.5, -0.5)  # best model on top
    ax.grid(axis="x", color=GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)


def plot_rank_intervals(ranking: Ranking, title: str | None = None) -> Figure:
    """Each model's rank interval [L, U] as a bar, with its observed rank marked.

    As in the figures of "Quantifying Ranking Uncertainty in LLM Benchmarks": models on the vertical
    axis (best first), ranks on the horizontal axis (rank 1 on the left).

    Parameters
    ----------
    ranking : Ranking
        From :func:`rankci.rank` (or a monitor).
    title : str, optional
        Default: the coverage and the confidence level.

    Returns
    -------
    matplotlib.figure.Figure

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> ranking = rankci.rank(scores)
    >>> x.mean(axis=0).round(3).tolist(), ranking.lower.tolist(), ranking.upper.tolist()
    ([0.765, 0.595, 0.315], [1, 2, 3], [1, 2, 3])
    >>> fig = plot_rank_intervals(ranking)
    >>> ax = fig.axes[0]
    >>> [t.get_text() for t in ax.get_yticklabels()], ax.get_title()
    (['a', 'b', 'c'], 'Rank intervals (simultaneous, 95%)')
    """
    frame = ranking.to_frame()
    m = len(frame)
    fig = Figure(figsize=(7.0, _height(m)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(m)
    # each rank occupies a unit-wide cell, so an interval [L, U] spans L - 0.4 .. U + 0.4
    ax.hlines(
        y,
        frame["rank_lower"] - 0.4,
        frame["rank_upper"] + 0.4,
        color=INTERVAL_COLOR,
        linewidth=5,
        alpha=0.75,
        label="rank interval",
    )
    ax.plot(frame["rank"], y, "o", color=POINT_COLOR, markersize=4, label="observed rank")
    _model_axis(ax, frame["model"])
    ax.set_xlim(0.4, ranking.n_models + 0.6)
    ax.set_xlabel("rank (1 = best)")
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_title(
        title or f"Rank intervals ({ranking.coverage}, {1 - ranking.alpha:.0%})", fontsize=10
    )
    return fig


def plot_score_intervals(table: pd.DataFrame, title: str | None = None) -> Figure:
    """Forest plot of score intervals.

    ``table`` has one row per model with columns ``model``, ``score``, ``lower`` and ``upper``
    (for example ``score_intervals(...).to_frame()``); models are drawn best score first.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model: ``model``, ``score``, ``lower``, ``upper``.
    title : str, optional
        Default ``"Score intervals"``.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        If a column is missing.

    References
    ----------
    Lewis, S. and Clarke, M. (2001). Forest plots: trying to see the wood and the trees. BMJ
    322(7300), 1479-1480.
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model": ["a", "b"], "score": [0.5, 0.7],
    ...                       "lower": [0.4, 0.6], "upper": [0.6, 0.8]})
    >>> ax = plot_score_intervals(table).axes[0]
    >>> [t.get_text() for t in ax.get_yticklabels()], ax.get_title()
    (['b', 'a'], 'Score intervals')
    """
    missing = {"model", "score", "lower", "upper"} - set(table.columns)
    if missing:
        raise ValueError(f"the score-interval table lacks columns {sorted(missing)}")
    frame = table.sort_values(["score", "model"], ascending=[False, True]).reset_index(drop=True)
    m = len(frame)
    fig = Figure(figsize=(7.0, _height(m)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(m)
    ax.hlines(y, frame["lower"], frame["upper"], color=INTERVAL_COLOR, linewidth=2.2)
    ax.plot(frame["score"], y, "o", color=POINT_COLOR, markersize=4)
    _model_axis(ax, frame["model"])
    ax.set_xlabel("score")
    ax.set_title(title or "Score intervals", fontsize=10)
    return fig


def plot_dominance(ranking: Ranking, title: str | None = None) -> Figure:
    """The certified-dominance matrix: a filled cell (row a, column b) means "a better than b".

    Parameters
    ----------
    ranking : Ranking
        A simultaneous ranking (it has a dominance matrix).
    title : str, optional
        Default: the number of certified ordered pairs out of M(M-1).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For a marginal ranking (no dominance matrix).

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    Disjoint single-rank intervals certify all three ordered pairs a > b, a > c, b > c:

    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> ranking = rankci.rank(scores)
    >>> x.mean(axis=0).round(3).tolist(), ranking.lower.tolist(), ranking.upper.tolist()
    ([0.765, 0.595, 0.315], [1, 2, 3], [1, 2, 3])
    >>> ax = plot_dominance(ranking).axes[0]
    >>> ax.get_title(), int(ranking.dominance.sum())
    ('Certified dominances (3 of 6 pairs)', 3)
    """
    if ranking.dominance is None:
        raise ValueError(
            "marginal rankings certify no joint statements, so there is no dominance matrix; "
            "use coverage='simultaneous'"
        )
    order = ranking.order()
    labels = [ranking.models[i] for i in order]
    matrix = ranking.dominance[np.ix_(order, order)].astype(float)
    m = len(labels)
    side = max(3.5, min(11.0, 1.5 + 0.24 * m))
    fig = Figure(figsize=(side + 1.2, side), layout="constrained")
    ax = fig.subplots()
    ax.imshow(matrix, cmap="Blues", vmin=0, vmax=1.4, interpolation="nearest")
    ticks = np.arange(m)
    fontsize = 6 if m > 30 else 8
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, rotation=90, fontsize=fontsize)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=fontsize)
    ax.set_xlabel("certified worse model")
    ax.set_ylabel("certified better model")
    ax.set_title(
        title or f"Certified dominances ({int(matrix.sum())} of {m * (m - 1)} pairs)", fontsize=10
    )
    return fig


def plot_tiers(ranking: Ranking, title: str | None = None) -> Figure:
    """Models by score, coloured and grouped by tier (tier s: true rank s or worse).

    Parameters
    ----------
    ranking : Ranking
        A simultaneous ranking (it has tiers).
    title : str, optional
        Default: the number of tiers.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For a marginal ranking (no tiers).

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> ranking = rankci.rank(scores)
    >>> x.mean(axis=0).round(3).tolist(), ranking.lower.tolist(), ranking.upper.tolist()
    ([0.765, 0.595, 0.315], [1, 2, 3], [1, 2, 3])
    >>> ax = plot_tiers(ranking).axes[0]
    >>> ax.get_title(), ranking.tier.tolist()
    ('Tiers (3 tiers)', [1, 2, 3])
    """
    if ranking.tier is None:
        raise ValueError("marginal rankings have no tiers; use coverage='simultaneous'")
    frame = ranking.to_frame()
    m = len(frame)
    tiers = frame["tier"].to_numpy(dtype=int)
    fig = Figure(figsize=(7.0, _height(m)), layout="constrained")
    ax = fig.subplots()
    palette = ["#3b6ea8", "#e09f3e", "#5b8e7d", "#9e2a2b", "#7d5ba6", "#4f6d7a"]
    colors = [palette[(t - 1) % len(palette)] for t in tiers]
    y = np.arange(m)
    ax.barh(y, frame["score"], color=colors, height=0.7)
    for row, (score, tier) in enumerate(zip(frame["score"], tiers)):
        ax.text(score, row, f"  tier {tier}", va="center", fontsize=7)
    for row in np.flatnonzero(np.diff(tiers) != 0):
        ax.axhline(row + 0.5, color="#555555", linewidth=0.6, linestyle="--")
    _model_axis(ax, frame["model"])
    ax.set_xlim(0, max(1.0, float(frame["score"].max()) * 1.15))
    ax.set_xlabel("score")
    ax.set_title(title or f"Tiers ({int(tiers.max())} tiers)", fontsize=10)
    return fig


def plot_cluster_rank_intervals(
    cluster_rankings, columns: int | None = None, title: str | None = None
) -> Figure:
    """Rank intervals within each cluster, as small multiples sharing the model order.

    ``cluster_rankings`` is the result of :func:`rankci.rank_by_cluster`. Models keep the same
    vertical position in every panel (ordered by their mean over clusters), so a model's rank can be
    followed across clusters.

    Parameters
    ----------
    cluster_rankings : ClusterRankings
        From :func:`rankci.rank_by_cluster`.
    columns : int, optional
        Panels per row (default up to 4).
    title : str, optional
        Default ``"Rank intervals within each cluster"``.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        If no cluster could be ranked.

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"model": np.tile(["a", "b", "c"], 200),
    ...                       "item": np.repeat(np.arange(200), 3).astype(str),
    ...                       "score": x.ravel(), "cluster": np.repeat(["g1", "g2"], 300)})
    >>> by_cluster = rankci.rank_by_cluster(rankci.Scores.from_frame(frame, cluster="cluster"))
    >>> fig = plot_cluster_rank_intervals(by_cluster)
    >>> [ax.get_title() for ax in fig.axes], fig.get_suptitle()
    (['g1', 'g2'], 'Rank intervals within each cluster')
    """
    rankings = cluster_rankings.rankings
    if not rankings:
        raise ValueError("no cluster could be ranked, so there is nothing to plot")
    models = sorted({m for r in rankings.values() for m in r.models})
    mean_score = {
        m: np.mean([r.score[r.models.index(m)] for r in rankings.values() if m in r.models])
        for m in models
    }
    models.sort(key=lambda m: (-mean_score[m], m))
    position = {m: k for k, m in enumerate(models)}
    n = len(rankings)
    columns = columns or min(4, n)
    rows = math.ceil(n / columns)
    panel_height = _height(len(models), per_row=0.16, minimum=1.8)
    fig = Figure(figsize=(3.2 * columns + 1.6, panel_height * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, sharey=True, squeeze=False)).ravel()
    for ax, (name, r) in zip(axes, rankings.items()):
        y = np.array([position[m] for m in r.models])
        ax.hlines(y, r.lower - 0.4, r.upper + 0.4, color=INTERVAL_COLOR, linewidth=3, alpha=0.75)
        ax.plot(r.rank, y, "o", color=POINT_COLOR, markersize=2.5)
        ax.set_xlim(0.4, r.n_models + 0.6)
        ax.set_title(str(name), fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", color=GRID_COLOR, linewidth=0.5)
    for ax in axes[n:]:
        ax.set_visible(False)
    axes[0].set_yticks(np.arange(len(models)))
    axes[0].set_yticklabels(models, fontsize=6 if len(models) > 20 else 7)
    axes[0].set_ylim(len(models) - 0.5, -0.5)
    for ax in axes[::columns]:
        ax.tick_params(axis="y", labelleft=True, labelsize=6 if len(models) > 20 else 7)
    fig.suptitle(title or "Rank intervals within each cluster", fontsize=10)
    return fig


def _looks_frame(run) -> pd.DataFrame:
    looks = pd.DataFrame(run.looks)
    if looks.empty:
        raise ValueError("the monitor took no look, so there is nothing to plot")
    return looks


def plot_monitor_progress(run, title: str | None = None) -> Figure:
    """Certified ordered pairs, and the evaluation cost, against items evaluated.

    ``run`` is a :class:`rankci.sequential.MonitorRun` (from ``replay``). The cost axis shows the
    evaluations used as a share of scoring every model on every item, so the gap to the diagonal
    is the compute saved by retiring models whose question was settled.

    Parameters
    ----------
    run : MonitorRun
        From :func:`rankci.sequential.replay`.
    title : str, optional
        Default: the share of the evaluation cost saved.

    Returns
    -------
    matplotlib.figure.Figure

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md).
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    Without a retirement rule every model is scored on every item, so nothing is saved:

    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> from rankci.sequential import replay
    >>> run = replay(scores, look_every="10%")
    >>> fig = plot_monitor_progress(run)
    >>> fig.axes[0].get_title(), run.cost_fraction
    ('Anytime-valid monitor: 0% of the evaluation cost saved', 1.0)
    """
    looks = _looks_frame(run)
    m = run.ranking.n_models
    fig = Figure(figsize=(7.0, 3.4), layout="constrained")
    ax = fig.subplots()
    ax.step(
        looks["t"],
        looks["n_certified"],
        where="post",
        color=INTERVAL_COLOR,
        label="certified ordered pairs",
    )
    ax.set_ylim(0, m * (m - 1) / 2 * 1.05)
    ax.set_xlabel("items evaluated")
    ax.set_ylabel("certified pairs")
    ax.grid(color=GRID_COLOR, linewidth=0.5)
    cost = ax.twinx()
    full = np.asarray(looks["t"], dtype=float) * m
    cost.plot(
        looks["t"],
        100 * looks["evaluations"] / (run.n_items * m),
        color=POINT_COLOR,
        label="evaluations used (% of all)",
    )
    cost.plot(
        looks["t"],
        100 * full / (run.n_items * m),
        color=POINT_COLOR,
        linestyle=":",
        linewidth=1,
        label="without retirement",
    )
    cost.set_ylim(0, 105)
    cost.set_ylabel("% of full evaluation cost")
    handles = ax.get_legend_handles_labels()[0] + cost.get_legend_handles_labels()[0]
    ax.legend(
        handles, [h.get_label() for h in handles], loc="upper left", fontsize=8, frameon=False
    )
    saved = 1 - run.cost_fraction
    ax.set_title(
        title or f"Anytime-valid monitor: {saved:.0%} of the evaluation cost saved", fontsize=10
    )
    return fig


def plot_monitor_intervals(run, title: str | None = None) -> Figure:
    """Width of each model's rank interval at every look, against items evaluated.

    Rows are models (best final score first), columns are looks; the colour is ``U - L``, so a
    row turns light as its rank is pinned down. A black mark shows where a model was retired
    (its interval is frozen from then on). Valid at every look at once (anytime-valid).

    Parameters
    ----------
    run : MonitorRun
        From :func:`rankci.sequential.replay`.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        If the run took no look or its looks carry no rank intervals.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md).
    Hunter, J. D. (2007). Matplotlib: A 2D graphics environment. Computing in Science &
    Engineering 9(3), 90-95.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> from rankci.sequential import replay
    >>> run = replay(scores, look_every="10%")
    >>> ax = plot_monitor_intervals(run).axes[0]
    >>> [t.get_text() for t in ax.get_yticklabels()], len(run.looks)
    (['a', 'b', 'c'], 10)
    """
    looks = _looks_frame(run)
    if "lower" not in looks:
        raise ValueError("these looks carry no rank intervals")
    ranking = run.ranking
    m = ranking.n_models
    order = ranking.order()
    width = (np.vstack(looks["upper"].to_numpy()) - np.vstack(looks["lower"].to_numpy()))[:, order]
    t = looks["t"].to_numpy(dtype=float)
    edges = np.concatenate([[0.0], t])
    fig = Figure(figsize=(7.0, _height(m, per_row=0.2, minimum=3.0)), layout="constrained")
    ax = fig.subplots()
    mesh = ax.pcolormesh(
        edges,
        np.arange(m + 1) - 0.5,
        width.T,
        cmap="Blues",
        vmin=0,
        vmax=max(m - 1, 1),
        shading="flat",
    )
    retired_at = {}
    for record in run.looks:
        for model in record.get("retired", []):
            retired_at.setdefault(model, record["t"])
    rows = {ranking.models[j]: k for k, j in enumerate(order)}
    for model, when in retired_at.items():
        ax.plot([when, when], [rows[model] - 0.45, rows[model] + 0.45], color="black", lw=1.2)
    _model_axis(ax, [ranking.models[j] for j in order])
    ax.set_xlim(0, t[-1])
    ax.set_xlabel("items evaluated")
    fig.colorbar(mesh, ax=ax, label="rank-interval width U − L", shrink=0.6)
    ax.set_title(title or "Rank-interval width at every look (black: model retired)", fontsize=10)
    return fig

"""Plots on the bundled data, and the HTML report checked in a real headless browser."""

import io

import numpy as np
import pytest
from browser import browser
from matplotlib.figure import Figure
from matplotlib.image import imread

import rankci
from rankci.report import (
    build_report,
    plot_cluster_rank_intervals,
    plot_dominance,
    plot_rank_intervals,
    plot_score_intervals,
    plot_tiers,
    write_report,
)


@pytest.fixture(scope="module")
def chembench():
    scores = rankci.datasets.load_chembench()
    return scores, rankci.rank(scores)


def _png_is_drawn(fig: Figure) -> np.ndarray:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    image = imread(io.BytesIO(buffer.getvalue()))
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert len(np.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 5  # not blank
    return image


@pytest.mark.parametrize("plot", [plot_rank_intervals, plot_tiers, plot_dominance])
def test_ranking_plots_export_png_and_svg(chembench, plot, tmp_path):
    _, ranking = chembench
    fig = plot(ranking)
    assert isinstance(fig, Figure)
    _png_is_drawn(fig)
    fig.savefig(tmp_path / "plot.svg")
    svg = (tmp_path / "plot.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert set(ranking.models) <= set(labels)


def test_rank_interval_plot_draws_each_models_interval(chembench):
    _, ranking = chembench
    ax = plot_rank_intervals(ranking).axes[0]
    segments = ax.collections[0].get_segments()
    frame = ranking.to_frame()
    for segment, row in zip(segments, frame.itertuples()):
        assert segment[0][0] == pytest.approx(row.rank_lower - 0.4)
        assert segment[1][0] == pytest.approx(row.rank_upper + 0.4)


def test_cluster_small_multiples(chembench):
    scores, _ = chembench
    fig = plot_cluster_rank_intervals(rankci.rank_by_cluster(scores))
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == len(scores.clusters)
    assert {ax.get_title() for ax in visible} == set(scores.clusters)
    _png_is_drawn(fig)


def test_score_interval_forest_plot(chembench):
    scores, ranking = chembench
    table = rankci.score_intervals(scores, "normal", verdict=False).to_frame()
    fig = plot_score_intervals(table)
    _png_is_drawn(fig)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert (
        labels == table.sort_values(["score", "model"], ascending=[False, True])["model"].tolist()
    )
    segments = fig.axes[0].collections[0].get_segments()
    by_model = table.set_index("model")
    for label, segment in zip(labels, segments):
        assert segment[0][0] == pytest.approx(by_model.loc[label, "lower"])
        assert segment[1][0] == pytest.approx(by_model.loc[label, "upper"])
    with pytest.raises(ValueError, match="lacks columns"):
        plot_score_intervals(table.drop(columns="upper"))


def test_marginal_rankings_have_no_joint_plots(chembench):
    scores, _ = chembench
    marginal = rankci.rank(scores, coverage="marginal")
    with pytest.raises(ValueError, match="no joint statements"):
        plot_dominance(marginal)
    with pytest.raises(ValueError, match="no tiers"):
        plot_tiers(marginal)
    html = build_report(scores, ranking=marginal, by_cluster=False)
    assert "For each model separately" in html


def test_report_is_self_contained(chembench, tmp_path):
    scores, ranking = chembench
    path = write_report(scores, tmp_path / "r.html", ranking=ranking, k=3)
    text = path.read_text()
    for section in (
        "leaderboard",
        "score-intervals",
        "rank-plots",
        "clusters",
        "omnibus",
        "method",
    ):
        assert f'<section id="{section}">' in text
    assert "http://" not in text and "https://" not in text  # no network fetches
    assert text.count('<img class="plot"') >= 4 and "data:image/png;base64," in text
    assert ranking.guarantee in text.replace("&#x27;", "'")


@pytest.mark.browser
def test_report_in_a_real_browser(tmp_path, mmlu):
    ranking = rankci.rank(mmlu)
    path = write_report(
        mmlu, tmp_path / "report.html", ranking=ranking, k=3, monitor={"retire": "topk", "k": 3}
    )
    with browser() as context:
        page = context.new_page()
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        assert page.locator("#leaderboard-table tbody tr").count() == mmlu.n_models
        ids = page.evaluate("Array.from(document.querySelectorAll('[id]')).map(e => e.id)")
        assert len(ids) == len(set(ids))
        images = page.evaluate(
            "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
        )
        assert len(images) == 7 and all(ok and w > 0 and h > 0 for ok, w, h in images)
        sections = page.evaluate("Array.from(document.querySelectorAll('section')).map(s => s.id)")
        assert sections == [
            "leaderboard",
            "score-intervals",
            "rank-plots",
            "clusters",
            "omnibus",
            "monitor",
            "method",
        ]
        shot = imread(io.BytesIO(page.screenshot(full_page=True)))
        assert shot.shape[0] > 1000
        assert len(np.unique(shot[::7, ::7].reshape(-1, shot.shape[-1]), axis=0)) > 20

        # sorting by the score column (ascending on first click) puts the weakest model first
        page.locator("#leaderboard-table th").nth(1).click()  # the score column
        first = page.locator("#leaderboard-table tbody tr td").first.inner_text()
        assert first == ranking.models[int(np.argmin(ranking.score))]

        # readable at phone width: nothing but the table's own scroller overflows
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= 390
        assert problems == []


def test_score_intervals_in_the_table_are_about_the_scores_shown(chembench):
    scores, _ = chembench
    ranking = rankci.rank(scores, unit="item", missing="complete")
    intervals = (
        rankci.score_intervals(scores, "normal", unit="item", missing="complete", verdict=False)
        .to_frame()
        .set_index("model")
    )
    html = build_report(
        scores, ranking=ranking, score_intervals="normal", by_cluster=False, omnibus=False
    )
    for j, model in enumerate(ranking.models):
        lo, hi = intervals.loc[model, ["lower", "upper"]]
        assert lo <= ranking.score[j] <= hi
        assert f"[{lo:.4f}, {hi:.4f}]" in html


def test_omnibus_section_reports_the_tests_and_variance_components(chembench):
    scores, _ = chembench
    anova = rankci.rm_anova(scores)
    section = rankci.report.html.omnibus_section(scores)
    assert f"= {anova.F:.4g}" in section.body and "Friedman" in section.body
    assert "Variance components" in section.body and "residual" in section.body


def test_monitor_plots_follow_the_replay():
    from rankci.report import plot_monitor_intervals, plot_monitor_progress
    from rankci.sequential import replay

    scores = rankci.datasets.load_chembench()
    run = replay(scores, retire="topk", k=3, look_every="2%")
    m, n = scores.n_models, run.n_items
    progress = plot_monitor_progress(run)
    steps = progress.axes[0].lines[0]
    assert list(steps.get_xdata()) == [look["t"] for look in run.looks]
    assert list(steps.get_ydata()) == [look["n_certified"] for look in run.looks]
    assert (
        f"{1 - run.cost_fraction:.0%} of the evaluation cost saved" in progress.axes[0].get_title()
    )
    # one row per model (best first), one column per look
    widths = plot_monitor_intervals(run).axes[0].collections[0].get_array().reshape(m, -1)
    order = run.ranking.order()
    final = (run.ranking.upper - run.ranking.lower)[order]
    np.testing.assert_array_equal(np.asarray(widths)[:, -1], final)
    assert widths.shape[1] == len(run.looks)
    section = rankci.report.html.monitor_section(run)
    assert f"{run.evaluations:,} of {n * m:,}" in section.body

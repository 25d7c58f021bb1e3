"""``--judge COL --human COL`` on ``rankci rank`` and ``rankci scores``: judge scores corrected by
human labels (prediction-powered inference, :mod:`rankci.analyses.ppi`).

With either flag (or ``--inclusion-col``, ``--lam``), DATA is a long table with a judge score
on every (model, item) row and a human score on the labelled rows (empty elsewhere); the
columns default to ``judge`` and ``human``. The output puts three fits side by side -- judge
only (biased), human only (wide), PPI -- with the effective number of human labels gained, and
ranks (or gives intervals) on the PPI units.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rankci.analyses.ppi import PPIScores
    from rankci.ranking import Ranking

__all__ = [
    "add_ppi_arguments",
    "ppi_requested",
    "load_ppi",
    "fits_table",
    "rank_ppi",
    "render_fits",
    "run_rank",
    "run_scores",
    "run_plan",
]

#: the tests of the mean (PPI corrects a mean; a rank or sign test of the rectified units
#: would test something else)
MEAN_TESTS = ("t", "z")

_FLAGS = (
    (re.compile(r"\blam=1\b"), "--lam 1"),
    (re.compile(r"\binclusion="), "--inclusion-col "),
    (re.compile(r'sampling="stratified"'), "--inclusion-col"),
    (re.compile(r"\bbounds="), "--bounds "),
    (re.compile(r"^lam must be"), "--lam must be"),
    (re.compile(r"the judge column"), "the --judge column"),
    (re.compile(r"the human column"), "the --human column"),
    (re.compile(r"the inclusion column"), "the --inclusion-col column"),
)


def add_ppi_arguments(parser: argparse.ArgumentParser, per_pair: bool, lam: bool = True) -> None:
    """The PPI flags; ``per_pair``: ``--lam per-pair`` is offered (ranking only); ``lam=False``:
    no ``--lam`` (planning assumes the tuned lam)."""
    group = parser.add_argument_group(
        "judge scores corrected by human labels (PPI; docs/judges.md)"
    )
    group.add_argument(
        "--judge",
        metavar="COL",
        help="judge-score column (every model and item); with --judge or --human, DATA's "
        "judge scores are corrected by its human labels (default column: judge)",
    )
    group.add_argument(
        "--human",
        metavar="COL",
        help="human-score column, empty where the item was not labelled (default: human)",
    )
    group.add_argument(
        "--inclusion-col",
        metavar="COL",
        help="stratified labelling: each row's known probability of being labelled (default: "
        "uniform at random, probability n_labelled / N)",
    )
    if not lam:
        return
    choices = "auto, per-pair or a number" if per_pair else "auto or a number"
    group.add_argument(
        "--lam",
        metavar="LAM",
        help=f"PPI power tuning ({choices}; default auto: PPI++, each model's own lam"
        + (
            "; per-pair: the lam of each pair's difference, Holm or Bonferroni only, and the "
            "default of rank when every model has the same labelled items"
            if per_pair
            else ""
        )
        + "; 1: classic PPI, nothing estimated; 0: human only)",
    )


def ppi_requested(args: argparse.Namespace) -> bool:
    return any(
        getattr(args, name, None) is not None for name in ("judge", "human", "inclusion_col", "lam")
    )


def parse_lam(text: str | None, per_pair: bool) -> str | float:
    if text is None or text == "auto":
        return "auto"
    if per_pair and text == "per-pair":
        return "per-pair"
    try:
        return float(text)
    except ValueError:
        allowed = "auto, per-pair or a number" if per_pair else "auto or a number"
        raise ValueError(f"--lam must be {allowed}, got {text!r}") from None


def flag_words(message: str) -> str:
    """A message of :mod:`rankci.analyses.ppi` in the words of the command line."""
    for pattern, flag in _FLAGS:
        message = pattern.sub(flag, message)
    return message


def load_ppi(args: argparse.Namespace, lam: str | float) -> PPIScores:
    """Read DATA as a table and fit PPI (errors and warnings in flag words)."""
    import warnings
    from pathlib import Path

    from rankci._base import RankciWarning
    from rankci.analyses.ppi import ppi_scores
    from rankci.commands.loading import score_bounds
    from rankci.io import read_table

    source = args.data
    if not isinstance(source, (str, os.PathLike)) or not os.path.isfile(source):
        raise ValueError(
            f"--judge/--human read one table file (csv, tsv, parquet, jsonl); {source!r} is not "
            "a file"
        )
    fmt = args.input_format if args.input_format in ("csv", "tsv", "parquet", "jsonl") else "auto"
    frame = read_table(Path(source), fmt)
    bounds = score_bounds(args)
    cluster = args.cluster_col or None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RankciWarning)
        try:
            fit = ppi_scores(
                frame,
                judge=args.judge or "judge",
                human=args.human or "human",
                model=args.model_col or "model",
                item=args.item_col or "item",
                cluster=cluster,
                sampling="stratified" if args.inclusion_col else "uniform",
                inclusion=args.inclusion_col,
                lam="auto" if lam == "per-pair" else lam,
                bounds=bounds,
            )
        except ValueError as error:
            raise ValueError(flag_words(str(error))) from None
    for warning in caught:  # the RankciWarnings are in fit.warnings, which the output shows
        if issubclass(warning.category, RankciWarning):
            if getattr(args, "format", "table") == "csv":
                print(f"rankci: warning: {flag_words(str(warning.message))}", file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    n = fit.n_labelled
    print(
        f"rankci: read {source}: {len(fit.models)} models, {fit.n_items} judged items, "
        f"{int(n.min())}-{int(n.max())} human labels per model "
        f"({fit.sampling} sampling)",
        file=sys.stderr,
    )
    return fit


def fits_table(fit: PPIScores, alpha: float):
    """The three fits side by side, one row per model, in PPI order."""
    table = fit.intervals(alpha)
    columns = ["model", "judge", "judge_lower", "judge_upper", "human", "human_lower",
               "human_upper", "ppi", "ppi_lower", "ppi_upper", "n_labelled", "lam", "corr",
               "effective_labels"]  # fmt: skip
    return table[columns].sort_values("ppi", ascending=False, kind="stable").reset_index(drop=True)


def render_fits(fit: PPIScores, alpha: float) -> str:
    """The text block: the three fits and what the PPI gained."""
    from rankci.commands.tables import text_table

    table = fits_table(fit, alpha).round(4)
    gained = fit.effective_labels / fit.n_labelled
    lines = [
        f"three fits, {1 - alpha:.0%} normal intervals per model (marginal): judge only (all "
        f"{fit.n_items} items, the judge's scale: biased), human only (the labelled items), PPI "
        f"(lam {fit.lam_rule}; {fit.sampling} sampling)",
        "",
        text_table(table),
        "",
        f"effective human labels: PPI is worth {gained.min():.2f}-{gained.max():.2f} x the "
        "labels (n_labelled x Var(human only) / Var(PPI))",
    ]
    lines += [f"warning: {flag_words(w)}" for w in fit.warnings]
    return "\n".join(lines)


def rank_ppi(fit: PPIScores, common: dict, lam: str | float) -> Ranking:
    """The ranking on the PPI units (paired t or z, Holm or max-t), or with the lam of each
    pair (``--lam per-pair``: Holm or Bonferroni)."""
    from rankci.leaderboard import rank

    if common["test"] == "auto":  # the default: on PPI's rectified (not 0/1) units auto is the
        common = {**common, "test": "t"}  # t; named so, since PPI needs a test of the mean
    if common["test"] not in MEAN_TESTS:
        raise ValueError(
            f"--judge/--human: PPI corrects means, so the paired test must be a test of the mean "
            f"(--test t or z), got --test {common['test']}"
        )
    if common["unit"] != "item":
        raise ValueError(f"--judge/--human: PPI units are items, got --unit {common['unit']}")
    if lam != "per-pair":
        return rank(fit.scores, **common)
    if common["multiplicity"] not in ("holm", "bonferroni"):
        raise ValueError(
            "--lam per-pair gives one test per pair, so --multiplicity holm or bonferroni; "
            "max-t needs the joint law of the means (use --lam auto)"
        )
    from rankci.analyses.ppi import ppi_pairwise
    from rankci.certify.holm import certify_holm

    evidence = ppi_pairwise(fit, delta=common["delta"])
    return certify_holm(
        evidence, common["alpha"], common["coverage"], common["multiplicity"]
    ).ranking()


def run_rank(args: argparse.Namespace) -> int:
    """``rankci rank --judge/--human``: the three fits, then the ranking on the PPI units."""
    import json

    from rankci.commands.method_flags import method_options
    from rankci.commands.output import emit, ranking_json
    from rankci.commands.tables import markdown_table, render_ranking

    common = method_options(args)
    lam = parse_lam(args.lam, per_pair=True)
    for flag, given in (
        ("--by-cluster", args.by_cluster),
        ("--q-values", args.q_values),
        ("--filter-uninformative", args.filter_uninformative),
    ):
        if given:
            raise ValueError(f"{flag} does not combine with --judge/--human (PPI) yet")
    fit = load_ppi(args, lam)
    if args.lam is None:
        lam = default_ranking_lam(fit, common["multiplicity"])
    ranking = rank_ppi(fit, common, lam)
    fmt = args.format
    if fmt == "json":
        payload = json.loads(ranking_json(ranking.to_dict(args.top_k, pairs=args.pairs)))
        payload["ppi"] = fit.to_dict()
        payload["ppi"]["lam_ranking"] = "per-pair" if lam == "per-pair" else fit.lam_rule
        text = json.dumps(payload, indent=2, allow_nan=False)
    elif fmt == "csv":
        text = ranking.to_frame(args.top_k).to_csv(index=False)
    elif fmt == "markdown":
        text = "\n\n".join(
            [
                markdown_table(fits_table(fit, args.alpha).round(4)),
                render_ranking(ranking, fmt, args.top_k),
            ]
        )
    else:
        title = "rank intervals on the PPI units, " + (
            "lam per pair (each difference's own; --lam auto: each model's own)"
            if lam == "per-pair"
            else f"lam {fit.lam_rule} per model"
        )
        text = "\n\n".join(
            [render_fits(fit, args.alpha), title, render_ranking(ranking, fmt, args.top_k)]
        )
    emit(text, args)
    return 0


def default_ranking_lam(fit: PPIScores, multiplicity: str) -> str:
    """The lam of ``rankci rank --human`` without ``--lam``: each pair's own (``per-pair``)
    where it applies -- Holm or Bonferroni, the same labelled items for every model -- since a
    model's own lam is tuned for its mean, not for differences (in validation/ppi_judges.py
    the per-pair rank intervals were 2-8 x narrower than the per-model ones from 50 graded
    labels on); else ``auto`` (each model's own)."""
    W = fit.arrays["W"]
    same = bool((W == W[:, :1]).all())
    return "per-pair" if same and multiplicity in ("holm", "bonferroni") else "auto"


def run_scores(args: argparse.Namespace, render) -> int:
    """``rankci scores --judge/--human``: the three fits side by side, the PPI intervals (normal)
    and the paired verdict on the PPI units; ``render`` is ``rankci scores``' own renderer."""
    from rankci._base import jsonable
    from rankci.analyses.intervals import score_intervals
    from rankci.commands.output import emit, to_json

    lam = parse_lam(args.lam, per_pair=False)
    if args.method not in ("auto", "normal"):
        raise ValueError(
            f"--judge/--human: the PPI intervals are normal (CLT) intervals of the rectified "
            f"units, got --method {args.method}"
        )
    if args.by_cluster:
        raise ValueError("--by-cluster does not combine with --judge/--human (PPI) yet")
    fit = load_ppi(args, lam)
    result = score_intervals(fit.scores, "normal", alpha=args.alpha, verdict=not args.no_verdict)
    if args.format == "json":
        payload = {**result.to_dict(), "ppi": fit.to_dict()}
        emit(to_json(jsonable(payload), args), args)
    elif args.format == "csv":
        emit(fits_table(fit, args.alpha).to_csv(index=False), args)
    else:
        emit(
            "\n\n".join(
                [
                    render_fits(fit, args.alpha),
                    "PPI score intervals and the paired verdict on the PPI units",
                    render(result, None, "table", args),
                ]
            ),
            args,
        )
    return 0


def run_plan(args: argparse.Namespace) -> int:
    """``rankci plan --judge/--human --target-width W``: human labels each model needs for a PPI
    interval at most W wide, from the pilot's human sd and judge-human correlation
    (:func:`rankci.analyses.ppi.ppi_labels_needed`, the tuned lam; N = the pilot's judged items).
    """
    import numpy as np

    from rankci.analyses.ppi import ppi_labels_needed
    from rankci.commands.output import emit, to_json
    from rankci.commands.tables import text_table

    if args.target_width is None:
        raise ValueError(
            "--judge/--human with rankci plan: give --target-width W (the labels "
            "needed for intervals at most W wide)"
        )
    for flag, given in (
        ("--pair", args.pair),
        ("--covariance cluster", args.covariance == "cluster"),
    ):
        if given:
            raise ValueError(f"{flag} does not combine with --judge/--human (PPI) yet")
    fit = load_ppi(args, "auto")
    H, W = fit.arrays["H"], fit.arrays["W"]
    lab = W > 0
    Hl = np.where(lab, H, 0.0)
    mean = (W * Hl).sum(axis=0) / W.sum(axis=0)
    sd_h = np.sqrt((W * np.where(lab, Hl - mean, 0.0) ** 2).sum(axis=0) / W.sum(axis=0))
    rows = []
    for j, model in enumerate(fit.models):
        corr = float(fit.corr[j])
        try:
            needed = ppi_labels_needed(
                args.target_width,
                sd_human=float(sd_h[j]),
                corr=corr,
                n_items=fit.n_items,
                alpha=args.alpha,
            )
            human_only = ppi_labels_needed(
                args.target_width,
                sd_human=float(sd_h[j]),
                corr=0.0,
                n_items=fit.n_items,
                alpha=args.alpha,
            )
            reason = None
        except ValueError as error:
            needed = human_only = None
            reason = str(error)
        rows.append(
            {
                "model": model,
                "sd_human": float(sd_h[j]),
                "corr": corr,
                "labels_ppi": needed,
                "labels_human_only": human_only,
                "labelled_now": int(fit.n_labelled[j]),
                "unreachable": reason,
            }
        )
    payload = {
        "target_width": args.target_width,
        "alpha": args.alpha,
        "n_items": fit.n_items,
        "labels": rows,
        "warnings": list(fit.warnings),
    }
    if args.format == "json":
        emit(to_json(payload, args), args)
        return 0
    import pandas as pd

    table = pd.DataFrame(rows).drop(columns="unreachable")
    lines = [
        f"human labels for PPI intervals at most {args.target_width:g} wide ({1 - args.alpha:.0%},"
        f" each model), with the {fit.n_items} judged items of the pilot and the tuned lam:",
        "",
        text_table(table.round(4)),
        "",
        "n = (1 - corr^2) sd^2 / ((W / 2z)^2 - corr^2 sd^2 / N) (docs/judges.md); human only: "
        "corr = 0. Normal approximation from the pilot's sd and correlation; the study asks for "
        "at least 50 labels per model (validation/ppi_judges.py).",
    ]
    lines += [f"{r['model']}: {r['unreachable']}" for r in rows if r["unreachable"]]
    lines += [f"warning: {flag_words(w)}" for w in fit.warnings]
    emit("\n".join(lines), args)
    return 0

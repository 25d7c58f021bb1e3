"""``rankci scores DATA``: score intervals, overlap flags and the paired verdict."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rankci.commands.flags import add_alpha_argument, add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.messages import cli_message, early_stopping_note
from rankci.commands.output import emit, target_sentence, to_json, with_target
from rankci.commands.ppi_flags import add_ppi_arguments, ppi_requested, run_scores
from rankci.commands.tables import text_table
from rankci.method import UNITS

if TYPE_CHECKING:
    import pandas as pd

    from rankci.analyses.intervals import ScoreIntervals
    from rankci.analyses.subscores import SubScores

NAME = "scores"
HELP = "each model's score with a confidence interval, overlap flags and the paired verdict"
OUTPUT_FORMATS = ("table", "json", "csv")
#: the interval methods (rankci.analyses.intervals.METHODS; tests/commands/test_startup.py
#: checks that the two agree)
METHODS = ("auto", "normal", "cluster", "bootstrap", "bca", "cluster-bootstrap", "cluster-wild",
           "wilson", "clopper-pearson")  # fmt: skip
WILD_WEIGHTS = ("rademacher", "webb")  # rankci.evidence.wild_cluster.WEIGHTS
LIST_LIMIT = 12  # list the flagged pairs by name up to this many models

_METHOD_WORDS = {
    "normal": "normal (CLT) interval",
    "cluster": "clustered standard error (Miller)",
    "bootstrap": "bootstrap percentile interval",
    "bca": "bootstrap BCa interval",
    "cluster-bootstrap": "cluster bootstrap percentile interval",
    "cluster-wild": "wild cluster bootstrap-t interval",
    "wilson": "Wilson score interval",
    "clopper-pearson": "Clopper-Pearson exact binomial interval",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    group = parser.add_argument_group("method")
    group.add_argument(
        "--method",
        default="auto",
        choices=METHODS,
        help="interval method (default: auto, clopper-pearson when every score is 0 or 1, the "
        "percentile bootstrap otherwise; wilson and clopper-pearson need 0/1 scores; "
        "cluster-wild: the wild cluster bootstrap-t, better coverage than cluster below 30 "
        "clusters)",
    )
    group.add_argument(
        "--reps",
        type=int,
        default=1000,
        help="bootstrap resamples (default 1000); cluster-wild: random weight vectors B, used "
        "only when the 2^G sign vectors are more than B (else all are enumerated)",
    )
    group.add_argument(
        "--wild-weights",
        default="rademacher",
        choices=WILD_WEIGHTS,
        help="--method cluster-wild: Rademacher (+-1, default) or Webb's six-point weights",
    )
    group.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for the bootstrap methods (default 0, as rankci report, so both agree)",
    )
    add_alpha_argument(group, "each interval covers")
    correction = group.add_mutually_exclusive_group()
    correction.add_argument(
        "--small-sample",
        dest="small_sample",
        action="store_const",
        const="cadjust",
        default="auto",
        help="cluster methods: multiply the clustered variance by G/(G-1) and use Student's t "
        "with G-1 df. Default: CR2 at every number of clusters",
    )
    correction.add_argument(
        "--cr2",
        dest="small_sample",
        action="store_const",
        const="cr2",
        help="cluster methods: the Bell-McCaffrey (CR2) correction with Satterthwaite df, at any "
        "number of clusters; best when cluster sizes differ",
    )
    correction.add_argument(
        "--no-small-sample",
        dest="small_sample",
        action="store_const",
        const="none",
        help="cluster methods: the plain clustered variance with normal quantiles (under-covers "
        "with few clusters)",
    )
    group.add_argument(
        "--by-cluster",
        action="store_true",
        help="also give every model's interval within each cluster (subscores)",
    )
    group.add_argument(
        "--unit", default="item", choices=UNITS, help="unit of analysis (default: item)"
    )
    group.add_argument(
        "--missing",
        default="complete",
        choices=("complete", "pairwise"),
        help="only the items every model has (default, as in rankci rank) or each model on the "
        "items it has",
    )
    group.add_argument(
        "--no-verdict", action="store_true", help="skip the paired verdict (paired tests + Holm)"
    )
    group.add_argument(
        "--pairs",
        action="store_true",
        help="json: the overlapping, separated and unordered pairs as full lists of name pairs "
        "instead of the compact per-model runs of rankci rank (docs/json.md); large on big boards",
    )
    add_ppi_arguments(parser, per_pair=False)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.intervals import score_intervals
    from rankci.analyses.subscores import subscores

    if ppi_requested(args):  # judge scores corrected by human labels
        return run_scores(args, render)
    scores = load_data(args)
    common = dict(
        alpha=args.alpha,
        reps=args.reps,
        rng=args.seed,
        unit=args.unit,
        missing=args.missing,
        verdict=not args.no_verdict,
    )
    small_sample = args.small_sample
    result = score_intervals(
        scores, args.method, small_sample=small_sample, wild_weights=args.wild_weights, **common
    )
    # the method auto chose for the whole data holds within every cluster too
    by_cluster = subscores(scores, result.method, **common) if args.by_cluster else None
    stopped = scores.notes.get("early_stopped")
    split = None
    if scores.trials is not None and scores.notes["repeated_trials"]["trials_per_item"][1] > 1:
        from rankci.analyses.trials import trial_variance

        split = trial_variance(scores)
    emit(render(result, by_cluster, args.format, args, early_stopped=stopped, trials=split), args)
    return 0


def render(
    result: ScoreIntervals,
    by_cluster: SubScores | None,
    fmt: str,
    args: argparse.Namespace | None = None,
    early_stopped: dict | None = None,
    trials=None,
) -> str:
    """The command's output; ``early_stopped`` (``Scores.notes["early_stopped"]``) flags
    adaptively stopped data: a line in the table, the key ``early_stopped`` in the JSON."""
    if fmt == "json":
        pairs = bool(getattr(args, "pairs", False))
        payload = with_target(result.to_dict(pairs=pairs), result.unit)
        if by_cluster is not None:
            sub = by_cluster.to_dict(pairs=pairs)
            payload["within_cluster_method"] = sub["within_cluster_method"]
            payload["clusters"] = sub["clusters"]
        if early_stopped:
            from rankci._base import jsonable

            payload["early_stopped"] = jsonable(early_stopped)
        if trials is not None:
            from rankci._base import jsonable

            payload["trial_variance"] = jsonable(trials.table.to_dict(orient="records"))
        return to_json(payload, args)
    if fmt == "csv":
        frame = result.to_frame().assign(cluster=None)
        if by_cluster is not None:
            import pandas as pd

            frame = pd.concat([frame, by_cluster.to_frame()], ignore_index=True)
        return frame[["cluster", *[c for c in frame.columns if c != "cluster"]]].to_csv(index=False)
    blocks = [_block(result, title=None)]
    note = early_stopping_note(early_stopped)
    if note:
        blocks.insert(0, note)
    if by_cluster is not None:
        for name, part in by_cluster.intervals.items():
            blocks.append(_block(part, title=f"cluster {name!r}"))
    if trials is not None:
        blocks.append(_trials_block(trials))
    blocks.append(result.guarantee + "\n" + target_sentence(result.unit))
    return "\n\n".join(blocks)


def _trials_block(split) -> str:
    """The variance split of the trials (rankci.analyses.trials.trial_variance)."""
    columns = "model items trials between within icc flip_rate se_new_items se_rerun"
    table = split.table[columns.split()]
    return "\n".join(
        [
            "repeated trials: variance of the per-trial scores between items and within items "
            "(one-way ANOVA); flip_rate: share of items whose trials disagree; se_new_items: "
            "the score's SE for new items, se_rerun: for rerunning the same items",
            "",
            text_table(table, floatfmt=".4f"),
        ]
    )


def _summary(result: ScoreIntervals) -> str:
    words = _METHOD_WORDS[result.method]
    options = result.options
    if options.get("method_rule"):
        words += " (--method auto: " + (
            "every score is 0 or 1)"
            if result.method == "clopper-pearson"
            else "the scores are not all 0 or 1)"
        )
    if "draws" in options:  # cluster-wild
        seed = f", seed {options['seed']}" if options.get("seed") is not None else ""
        words += f" ({options['wild_weights']} weights, " + (
            f"all {options['draws']} weight vectors)"
            if options["enumerated"]
            else f"{options['draws']} random weight vectors{seed})"
        )
    elif "reps" in options:
        seed = f", seed {options['seed']}" if options.get("seed") is not None else ""
        words += f" ({options['reps']} resamples{seed})"
    if "n_clusters" in options:
        words += f", {options['n_clusters']} clusters"
        if options.get("small_sample", "none") != "none" and "draws" not in options:
            words += f", small-sample correction {options['small_sample']}"
    return (
        f"{result.n_models} models, {result.n_units} {result.unit} units; {words}, "
        f"{1 - result.alpha:.0%} intervals"
    )


def _display(result: ScoreIntervals) -> pd.DataFrame:
    import numpy as np

    frame = result.to_frame()
    index = {m: k for k, m in enumerate(result.models)}
    rows = np.array([index[m] for m in frame["model"]], dtype=int)
    frame["overlaps"] = result.overlap[rows].sum(axis=1)
    if result.separated is not None:
        ordered = result.separated | result.separated.T
        frame["unseparated"] = (~ordered[rows]).sum(axis=1) - 1
    return frame


def _pair_words(pairs: list[tuple[str, str]], joiner: str) -> str:
    return ", ".join(f"{a} {joiner} {b}" for a, b in pairs) if pairs else "none"


def _block(result: ScoreIntervals, title: str | None) -> str:
    lines = [title] if title else []
    lines += [_summary(result), "", text_table(_display(result)), ""]
    n_pairs = result.n_models * (result.n_models - 1) // 2
    overlapping = result.indistinguishable()
    lines.append(
        f"overlapping intervals ('statistically indistinguishable'; per pair, not "
        f"simultaneous): "
        f"{len(overlapping)} of {n_pairs} pairs"
    )
    if result.n_models <= LIST_LIMIT:
        lines.append("  " + _pair_words(overlapping, "~"))
    if result.separated is not None:
        separated = result.separated_pairs()
        lines.append(
            f"paired verdict ({result.verdict_procedure['description']} + Holm, simultaneous): "
            f"{len(separated)} of {n_pairs} pairs separated"
        )
        if result.n_models <= LIST_LIMIT:
            lines.append("  " + _pair_words(separated, ">"))
    lines += _degenerate_lines(result)
    return "\n".join(lines)


def _degenerate_lines(result: ScoreIntervals) -> list[str]:
    """One line per model whose interval has zero width, with the reason in flag words."""
    degenerate = result.degenerate
    if not degenerate:
        return []
    lines = [f"degenerate (zero-width) intervals: {len(degenerate)} of {result.n_models} models"]
    names = [result.models[j] for j in result.order() if result.models[j] in degenerate]
    lines += [f"  {model}: {cli_message(degenerate[model])}" for model in names]
    return lines

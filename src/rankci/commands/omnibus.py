"""``rankci omnibus DATA``: one test of "all models are equal", then the pairwise follow-up.

``--method anova`` (repeated-measures ANOVA with sphericity corrections), ``friedman`` (rank test,
Kendall's W, Iman-Davenport F) or ``mixed`` (``score ~ model + (1|cluster) + (1|cluster:item)``
by REML, with estimated marginal means, contrasts and mixed-model rank intervals).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rankci._base import check_alpha, format_pvalue
from rankci.commands.flags import add_alpha_argument, add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.output import emit, target, target_sentence, to_json
from rankci.commands.tables import text_table
from rankci.method import COVERAGES

if TYPE_CHECKING:
    import pandas as pd

NAME = "omnibus"
HELP = "omnibus test that all models are equal (RM-ANOVA, Friedman or linear mixed model)"
OUTPUT_FORMATS = ("table", "json")
OMNIBUS_METHODS = ("anova", "friedman", "mixed")
# the libraries' tuples, repeated so that building the parser imports no statistics
# (tests/commands/test_startup.py checks that they agree)
DF_METHODS = ("satterthwaite", "kenward-roger", "asymptotic")  # rankci.mixed.DF_METHODS
PROCEDURES = ("holm", "bonferroni")  # rankci.certify.holm.PROCEDURES
#: pair tables (post-hoc, contrasts, side by side) longer than this are summarised in the text
#: output unless --full-table is given; the JSON always has every pair
FULL_TABLE_PAIRS = 45
#: separated pairs listed in a summary
SUMMARY_ROWS = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    group = parser.add_argument_group("method")
    group.add_argument(
        "--method",
        default="anova",
        choices=OMNIBUS_METHODS,
        help="anova (repeated measures), friedman (ranks) or mixed (linear mixed "
        "model with cluster and question random effects); default anova",
    )
    add_alpha_argument(group)
    group.add_argument(
        "--posthoc", action="store_true", help="anova: Tukey HSD; friedman: Nemenyi (all pairs)"
    )
    group.add_argument(
        "--random",
        choices=("cluster", "item", "model:cluster"),
        default="cluster",
        help="mixed: the random effects of items and clusters: cluster (default: "
        "(1|cluster) + (1|cluster:item)), item ((1|item) only) or model:cluster (also "
        "(1|model:cluster), so that contrasts generalise to new clusters even when a model's "
        "advantage varies between clusters)",
    )
    group.add_argument(
        "--df",
        default="satterthwaite",
        choices=DF_METHODS,
        help="mixed: degrees of freedom of the t and F tests (kenward-roger: pbkrtest's "
        "adjusted covariance and scaled F; with --side-by-side both the Satterthwaite and the "
        "Kenward-Roger columns are shown)",
    )
    group.add_argument(
        "--coverage",
        default="simultaneous",
        choices=COVERAGES,
        help="mixed: rank intervals simultaneous or marginal",
    )
    group.add_argument(
        "--multiplicity",
        default="holm",
        choices=PROCEDURES,
        help="mixed: correction for the rank intervals",
    )
    group.add_argument(
        "--delta", type=float, default=0.0, help="mixed: indifference margin for the rank intervals"
    )
    group.add_argument(
        "--side-by-side",
        action="store_true",
        help="mixed: naive, paired, clustered and mixed statistics for every pair",
    )
    add_output_arguments(parser, OUTPUT_FORMATS)
    parser.add_argument_group("output").add_argument(
        "--full-table",
        action="store_true",
        help=f"text output: print every pair of the post-hoc, contrast and side-by-side tables "
        f"(above {FULL_TABLE_PAIRS} pairs they are summarised: what is separated, and a count of "
        "the rest); the JSON always has every pair",
    )


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.omnibus import friedman, rm_anova
    from rankci.analyses.posthoc import nemenyi, tukey_hsd
    from rankci.analyses.sidebyside import side_by_side
    from rankci.mixed import mixed_model, mixed_ranking

    check_alpha(args.alpha)
    scores = load_data(args)
    # the JSON payload is built only for --format json and the text only for the table: with
    # many models either one is tens of thousands of pair rows
    as_json = args.format == "json"
    parts: list = []  # (JSON key or None for the top level, to_dict, to_text)
    if args.method == "anova":
        result = rm_anova(scores)
        posthoc = tukey_hsd(scores, args.alpha) if args.posthoc else None
        parts.append(
            (None, result.to_dict, lambda: _anova_text(result, scores.prompts is not None))
        )
    elif args.method == "friedman":
        result = friedman(scores)
        posthoc = nemenyi(scores, args.alpha) if args.posthoc else None
        parts.append(
            (None, result.to_dict, lambda: _friedman_text(result, scores.prompts is not None))
        )
    else:
        model = mixed_model(scores, df=args.df, alpha=args.alpha, random=args.random)
        ranking = mixed_ranking(
            model,
            alpha=args.alpha,
            coverage=args.coverage,
            multiplicity=args.multiplicity,
            delta=args.delta,
        )
        parts.append((None, model.to_dict, lambda: _mixed_text(model, ranking, args.full_table)))
        parts.append(("ranking", ranking.to_dict, None))
        posthoc = None
        if args.side_by_side:
            if args.df == "kenward-roger":
                satterthwaite = mixed_model(
                    scores,
                    df="satterthwaite",
                    alpha=args.alpha,
                    random=args.random,
                    theta=model.theta,
                )
                table = side_by_side(
                    scores, mixed=satterthwaite, alpha=args.alpha, kenward_roger=model
                )
            else:
                table = side_by_side(scores, mixed=model, alpha=args.alpha)
            parts.append(
                ("side_by_side", table.to_dict, lambda: _side_by_side_text(table, args.full_table))
            )
    if posthoc is not None:
        parts.append(("posthoc", posthoc.to_dict, lambda: _posthoc_text(posthoc, args.full_table)))
    # the items are random subjects (RM-ANOVA, Friedman); the mixed model's random effects
    aim = "item" if args.method != "mixed" or args.random == "item" else "mixed"
    if as_json:
        payload: dict = {}
        for key, to_dict, _ in parts:
            if key is None:
                payload.update(to_dict())
            else:
                payload[key] = to_dict()
        payload["target"] = target(aim)
    else:
        text = "\n\n".join(to_text() for _, _, to_text in parts if to_text is not None)
        text += "\n\n" + target_sentence(aim)
    emit(to_json(payload, args) if as_json else text, args)
    return 0


def _p(value: float) -> str:
    """A p-value for text output; an underflow to 0 is shown as a bound."""
    text = format_pvalue(value, ".4g")
    return text if value == 0 else f"= {text}"


def _by_score(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """A per-model table best first (by ``column``, descending; ties by name), as every rank
    table of rankci is; the JSON keeps the models' own order."""
    return frame.sort_values([column, "model"], ascending=[False, True], kind="stable")


def _excluded_line(excluded: dict, n_items: int, prompts: bool) -> str:
    dropped = excluded.get("observations_excluded", 0)
    if not dropped:
        return f"{n_items} items, all scored by every model"
    what = "item-prompt pairs" if prompts else "items"
    return (
        f"{n_items} complete items; {dropped} {what} excluded ({excluded['rows_excluded']} "
        "scores): not scored by every model"
    )


def _anova_text(r, prompts: bool) -> str:
    import pandas as pd

    lines = [
        "Repeated-measures ANOVA (items = subjects, model = within factor)",
        _excluded_line(r.excluded, r.n_items, prompts),
        f"F({r.df_num:g}, {r.df_den:g}) = {r.F:.4f}, p {_p(r.p)}",
        f"Greenhouse-Geisser epsilon = {r.gg_epsilon:.4f}, p {_p(r.p_gg)}; "
        f"Huynh-Feldt epsilon = {r.hf_epsilon:.4f}, p {_p(r.p_hf)}",
        (
            f"Mauchly W = {r.mauchly_w:.4f}, p {_p(r.mauchly_p)}; "
            if "mauchly" not in r.notes
            else f"Mauchly W: n/a ({r.notes['mauchly']}); "
        )
        + f"partial eta^2 = {r.eta2_partial:.4f}, generalized eta^2 = {r.eta2_generalized:.4f}",
        "",
        text_table(r.to_frame(), ".6g"),
        "",
        text_table(
            _by_score(pd.DataFrame({"model": r.models, "mean": r.means, "se": r.se}), "mean")
        ),
    ]
    return "\n".join(lines)


def _friedman_text(r, prompts: bool) -> str:
    lines = [
        "Friedman rank test (items = blocks)",
        _excluded_line(r.excluded, r.n_items, prompts),
        f"chi2({r.df:g}) = {r.chi2:.4f}, p {_p(r.p)}; Kendall's W = {r.kendall_w:.4f}",
        f"Iman-Davenport F({r.id_df_num:g}, {r.id_df_den:g}) = {r.iman_davenport:.4f}, "
        f"p {_p(r.p_iman_davenport)}",
        "",
        text_table(_by_score(r.to_frame(), "mean_rank")),  # rank 1 = the lowest score per item
    ]
    return "\n".join(lines)


def _pair_lines(
    frame, flagged, order, what: str, how: str, ordered: str, full: bool, floatfmt: str = ".4g"
) -> list[str]:
    """The pair table, or above FULL_TABLE_PAIRS pairs (without --full-table) a summary: how
    many pairs are flagged (``what``, by the rule ``how``) and how many are not, the first
    SUMMARY_ROWS flagged pairs in ``order`` (described by ``ordered``), and a count of the
    flagged pairs not listed."""
    import numpy as np

    n = len(frame)
    if full or n <= FULL_TABLE_PAIRS:
        return [text_table(frame, floatfmt)]
    flagged = np.asarray(flagged, dtype=bool)
    count = int(flagged.sum())
    rows = np.flatnonzero(flagged)
    rows = rows[np.argsort(np.asarray(order)[rows], kind="stable")][:SUMMARY_ROWS]
    lines = [f"{n} pairs: {count} {what} ({how}), {n - count} not."]
    if count:
        lines.append(
            f"The {count} {what} pairs, {ordered}:"
            if count == len(rows)
            else f"The first {len(rows)} of the {count} {what} pairs, {ordered}:"
        )
        lines.append(text_table(frame.iloc[rows], floatfmt))
    if count > len(rows):
        lines.append(f"... and {count - len(rows)} more {what} pairs.")
    lines.append(f"--full-table prints all {n} pairs; --format json always has them.")
    return lines


def _posthoc_text(p, full: bool = False) -> str:
    name = "Tukey HSD" if p.procedure == "tukey" else "Nemenyi"
    frame = p.to_frame()
    p_adj = frame["p_adjusted"].to_numpy()
    body = _pair_lines(
        frame,
        p_adj <= p.alpha,
        p_adj,
        "separated",
        f"p_adjusted <= {p.alpha:g}",
        "smallest adjusted p-value first",
        full,
    )
    return "\n".join([f"{name} (alpha = {p.alpha:g})", *_premise_lines(p), *body, p.guarantee])


def _premise_lines(p) -> list[str]:
    """The omnibus result and the premises of a post-hoc procedure, with a note per failure."""
    from rankci.analyses.posthoc import INSTEAD

    omnibus = p.notes.get("omnibus")
    lines = [f"{omnibus[0].upper()}{omnibus[1:]}."] if omnibus else []
    pre = p.premises
    if p.procedure == "tukey":
        sph = pre["sphericity"]
        mauchly = (
            f"Mauchly W = {sph['W']:.4g}, p {_p(sph['p'])}"
            if sph["holds"] is not None
            else "Mauchly's test not defined"
        )
        lines.append(
            f"Premises: sphericity ({mauchly}); balance ({pre['balance']}); pooled SE of a "
            f"difference {pre['pooled_se']:.4g}, paired SEs {pre['paired_se_min']:.4g} to "
            f"{pre['paired_se_max']:.4g}"
        )
    elif "exchangeability" in pre:
        lines.append(f"Premises: exchangeable ranks ({pre['exchangeability']})")
    failed = [text for key, text in p.notes.items() if key != "omnibus"]
    lines += [f"Note: {text}." for text in failed]
    if failed:
        lines.append(f"Note: {INSTEAD}.")
    return lines


def _mixed_text(model, ranking, full: bool = False) -> str:
    t = model.model_test
    vc = model.to_frame("variance_components")
    lines = [
        f"Linear mixed model (REML): {model.formula}",
        f"{model.n_obs} rows, {model.n_items} items, {model.n_clusters} clusters",
        "",
        text_table(vc, ".6f"),
        "",
        f"Type III F for model ({model.df_method} df): F({t['df_num']}, {t['df_den']:.2f}) = "
        f"{t['F']:.4f}, p {_p(t['p'])}"
        + (f" (scaled by {t['scale']:.6g})" if "scale" in t else ""),
        "",
        "Estimated marginal means",
        text_table(_by_score(model.to_frame("emmeans"), "emmean")),
        "",
        "Pairwise contrasts (Holm and Bonferroni: exact family-wise error; Tukey: approximate "
        "under a mixed model or unbalanced data)",
        *_pair_lines(
            model.contrasts.drop(columns=["lower", "upper"]),
            model.contrasts["p_holm"].to_numpy() <= model.alpha,
            model.contrasts["p_holm"].to_numpy(),
            "separated",
            f"p_holm <= {model.alpha:g}",
            "smallest Holm p-value first",
            full,
        ),
        "",
        "Rank intervals from the mixed-model contrasts",
        text_table(_rank_frame(ranking)),
        ranking.guarantee,
    ]
    return "\n".join(lines)


def _rank_frame(ranking) -> pd.DataFrame:
    frame = ranking.to_frame()
    bounds = zip(frame.rank_lower, frame.rank_upper, strict=True)
    frame["rank interval"] = [f"[{a}, {b}]" for a, b in bounds]
    return frame[["model", "score", "rank", "rank interval", "tier"]]


def _side_by_side_text(table, full: bool = False) -> str:
    import numpy as np

    frame = table.to_frame()
    keep = [c for c in frame.columns if c.startswith(("se_", "ratio_"))]
    if "df_mixed_kr" in frame:  # Kenward-Roger changes the df above all: show both
        keep += ["df_mixed", "df_mixed_kr"]
    shown = frame[["first", "second", "estimate", *keep, "disagree"]].copy()
    for column in frame.columns:
        if column.startswith("significant_"):
            shown[column.removeprefix("significant_")] = np.where(frame[column], "*", "")
    disagree = frame["disagree"].to_numpy(dtype=bool)
    order = -np.abs(frame["estimate"].to_numpy())  # largest differences first
    return "\n".join(
        [
            "Naive, paired, clustered and mixed standard errors (ratio = SE / naive SE; * = "
            f"significant after Holm at alpha = {table.alpha:g})",
            *_pair_lines(
                shown,
                disagree,
                order,
                "disagreeing",
                table.notes.get("disagree", "naive verdict differs"),
                "largest differences first",
                full,
            ),
        ]
    )

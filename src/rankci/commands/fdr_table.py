"""``rankci rank --q-values bh|by``: the per-pair table with FDR q-values beside the FWER column.

The rank table, its intervals, tiers and guarantee are family-wise (FWER) statements and stay
exactly as they are. This flag adds a second, separately labelled table: one row per ordered
pair (the family of the ranking, ``H: theta_first - theta_second <= delta``), with the pair's
one-sided p-value, whether the ranking certified it (FWER) and its Benjamini-Hochberg or
Benjamini-Yekutieli q-value (FDR, :func:`rankci.certify.fdr.fdr_qvalues`). Each column says which
error rate it controls; nothing in the ranking is derived from the q-values.

pandas and numpy are imported by the functions that use them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rankci.commands.output import ranking_json
from rankci.commands.tables import markdown_table, render_ranking, text_table

if TYPE_CHECKING:
    import pandas as pd

    from rankci.data import Scores
    from rankci.evidence.pairwise import Pairwise
    from rankci.ranking import Ranking

__all__ = ["add_qvalue_argument", "check_qvalue_flags", "pair_table", "render_with_qvalues"]

#: the --q-values choices (keys of rankci.certify.fdr.FDR_PROCEDURES, without importing numpy)
QVALUE_CHOICES = ("bh", "by")


def add_qvalue_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--q-values`` flag of ``rankci rank``."""
    parser.add_argument(
        "--q-values",
        choices=QVALUE_CHOICES,
        default=None,
        dest="q_values",
        help="add a per-pair table with Benjamini-Hochberg (bh) or Benjamini-Yekutieli (by) "
        "q-values: they control the false discovery rate (FDR), not the family-wise error "
        "rate (FWER) of the rank intervals; the table says which column controls which",
    )


def check_qvalue_flags(args: argparse.Namespace) -> None:
    """Refuse, before the data are read, the combinations the q-value table does not support."""
    if getattr(args, "q_values", None) is None:
        return
    if args.by_cluster:
        raise ValueError("--q-values is not available with --by-cluster; run it per cluster")
    if args.format == "csv":
        raise ValueError(
            "--q-values adds a second table (one row per pair), which a CSV file cannot hold "
            "beside the rank table; use --format json, table or markdown"
        )
    if args.coverage == "marginal":
        raise ValueError(
            "--q-values needs --coverage simultaneous: its FDR family is all ordered pairs, "
            "the family of the simultaneous ranking"
        )


def _evidence(ranking: Ranking, scores: Scores) -> Pairwise:
    """The ranking's pairwise tests, or (max-t keeps none) the same tests made again."""
    if ranking.pairwise is not None:
        return ranking.pairwise
    from rankci.evidence.pairwise import pairwise_tests

    spec = ranking.spec
    units = scores.units(spec.unit, spec.missing)
    return pairwise_tests(
        units, spec.test, delta=spec.delta, rng=spec.seed, **dict(spec.test_options)
    )


def pair_table(ranking: Ranking, scores: Scores, method: str) -> tuple[pd.DataFrame, dict]:
    """One row per ordered pair with its FWER and FDR columns, and the labels of the columns.

    Columns: ``first``, ``second``, ``estimate``, ``n``, ``pvalue`` (one-sided, unadjusted),
    ``certified_fwer`` (the ranking's certified statement "first better than second", family-wise
    at alpha), ``q_<method>`` (the FDR q-value over the same M (M - 1) pairs) and
    ``discovery_fdr`` (``q <= alpha``). Rows are sorted by p-value.
    """
    import numpy as np
    import pandas as pd

    from rankci.certify.fdr import FDR_PROCEDURES, fdr_qvalues

    if ranking.dominance is None:
        raise ValueError("--q-values needs the simultaneous ranking's certified pairs")
    evidence = _evidence(ranking, scores)
    if tuple(evidence.models) != tuple(ranking.models):
        raise ValueError("--q-values: the pairwise tests and the ranking name different models")
    p = np.array(evidence.pvalue, dtype=float)
    np.fill_diagonal(p, np.nan)
    q = fdr_qvalues(p, method)
    j, l = np.nonzero(~np.eye(len(ranking.models), dtype=bool))
    names = np.asarray(ranking.models, dtype=object)
    q_column = f"q_{method}"
    frame = pd.DataFrame(
        {
            "first": names[j],
            "second": names[l],
            "estimate": np.asarray(evidence.estimate, dtype=float)[j, l],
            "n": np.asarray(evidence.n)[j, l],
            "pvalue": p[j, l],
            "certified_fwer": np.asarray(ranking.dominance, dtype=bool)[j, l],
            q_column: q[j, l],
            "discovery_fdr": q[j, l] <= ranking.alpha,
        }
    )
    frame = frame.sort_values(["pvalue", "first", "second"], kind="stable").reset_index(drop=True)
    alpha = ranking.alpha
    labels = {
        "pvalue": f"one-sided p-value of H: theta_first - theta_second <= {evidence.delta:g} "
        f"({evidence.test} test), unadjusted",
        "certified_fwer": f"FWER <= {alpha:g}: the ranking's certified statement 'first better "
        f"than second'; all certified statements hold together with probability at least "
        f"{1 - alpha:.0%} ({ranking.procedure.get('multiplicity', '')})",
        q_column: FDR_PROCEDURES[method] + f"; q-value over the {len(frame)} ordered pairs",
        "discovery_fdr": f"{q_column} <= {alpha:g}: FDR <= {alpha:g}, the expected share of "
        "false statements among these flags; not FWER, and no rank interval, tier or certified "
        "statement is derived from it",
    }
    return frame, labels


def _probability(value: float) -> str:
    """A p- or q-value for a text table: 3 significant digits, "< 1e-300" below that."""
    if value != value:  # NaN
        return "-"
    return "< 1e-300" if value < 1e-300 else f"{value:.3g}"


def render_with_qvalues(
    ranking: Ranking, scores: Scores, method: str, fmt: str, k: int | None, pairs: bool
) -> str:
    """The rank output, then the labelled per-pair table (json: the key ``"pairwise_fdr"``)."""
    frame, labels = pair_table(ranking, scores, method)
    if fmt == "json":
        import json

        from rankci._base import jsonable

        payload = json.loads(render_ranking(ranking, fmt, k, pairs=pairs))  # the plain output
        rows = jsonable(frame.to_dict(orient="records"))
        payload["pairwise_fdr"] = {
            "procedure": method,
            "controls": {"certified_fwer": "FWER", f"q_{method}": "FDR", "discovery_fdr": "FDR"},
            "columns": labels,
            "alpha": ranking.alpha,
            "pairs": rows,
        }
        return ranking_json(payload)
    head = render_ranking(ranking, fmt, k, pairs=pairs)
    title = (
        f"Per-pair table: FWER and FDR columns ({len(frame)} ordered pairs, smallest p first)"
    )
    legend = [f"{name}: {text}" for name, text in labels.items()]
    shown = frame.assign(
        pvalue=frame["pvalue"].map(_probability),
        **{f"q_{method}": frame[f"q_{method}"].map(_probability)},
        certified_fwer=frame["certified_fwer"].map({True: "yes", False: "no"}),
        discovery_fdr=frame["discovery_fdr"].map({True: "yes", False: "no"}),
    )
    if fmt == "markdown":
        return "\n\n".join(
            [head, f"**{title}**", markdown_table(shown), "\n".join(f"- {x}" for x in legend)]
        )
    return "\n".join([head, "", title, *legend, "", text_table(shown)])

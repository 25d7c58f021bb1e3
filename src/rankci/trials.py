"""Repeated trials of one item: the per-item rules and the trial table behind a Scores.

An agent or a sampled answer is often run several times on the same item (Inspect ``epochs``,
lm-eval ``repeats``, τ-bench trials). A ``trial`` column, nested in the item (and in the prompt
variant, when there is one), holds the repeat; rankci then turns each (model, item[, prompt])
cell's trials into one per-item score by the rule the spec chooses, so every test, Holm, max-t,
the mixed model and the monitor see one score per item, as before:

==========  =================================================  =============================
rule        per-item score from n trials with c successes      reference
==========  =================================================  =============================
``mean``    c / n (any scores: the mean over the trials)       the default
``pass@K``  1 - C(n - c, K) / C(n, K): some of K trials pass   Chen et al. (2021)
``pass^K``  C(c, K) / C(n, K): all of K trials pass            Yao et al. (2024)
==========  =================================================  =============================

Both estimators are the unbiased estimators of the probability over K trials drawn without
replacement from the cell's n trials, so each cell uses its own n (unequal counts are handled and
reported). ``pass@K`` and ``pass^K`` need binary trial scores and n >= K in every cell; both are
refused otherwise, naming the column, or the items and models.

Trial ids are labels, ordered as numbers when every id is an integer and as text otherwise.
Two kinds of unequal counts are told apart:

* **fewer trials** (a prefix): a cell whose ids are the first ones of the table's ids, such as
  trials 0, 1, 2 of a model run three times beside models run five times, or an item run fewer
  times for every model. Handled: each cell's rule uses its own n; the counts are recorded in
  ``Scores.notes["repeated_trials"]`` and warned about.
* **gaps**: a cell that lacks a trial id that comes before its own last id, when the table has
  that id elsewhere (trials 0, 1, 3 while others have 2): a trial that ran and was lost, which
  would bias every rule upwards if it failed. Refused by default (``trial_gaps="refuse"``),
  naming the model, the item and the missing ids; ``trial_gaps="allow"`` reads them as unequal
  counts, with the gaps counted in ``notes["repeated_trials"]["gaps"]`` and warned about. The
  honest repair is usually to score the lost trial 0 rather than leave it out.

numpy and pandas only; :mod:`rankci.data` calls :func:`collapse_trials` from
``Scores.from_frame(trial=...)``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from rankci._base import LazyModule, RankciWarning
from rankci.method import PER_ITEM_HELP, parse_per_item

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

__all__ = [
    "PER_ITEM_HELP",
    "TRIAL_GAPS",
    "trial_gaps",
    "TrialTable",
    "collapse_trials",
    "parse_per_item",
    "pass_at_k",
    "pass_hat_k",
    "per_item_scores",
    "per_item_sentence",
]

#: what ``trial_gaps=`` may be (``--trial-gaps``)
TRIAL_GAPS = ("refuse", "allow")


def _id_order(ids: pd.Series) -> dict[str, int]:
    """The rank of each trial id: numeric order when every id is an integer, else text order."""
    unique = pd.unique(ids)
    numbers = pd.to_numeric(pd.Series(unique), errors="coerce")
    if numbers.notna().all() and (numbers == numbers.round()).all():
        order = np.argsort(numbers.to_numpy(), kind="stable")
    else:
        order = np.argsort(np.asarray(unique, dtype=str), kind="stable")
    return {str(unique[j]): rank for rank, j in enumerate(order)}


def trial_gaps(labels: pd.DataFrame, cell_keys: list[str]) -> pd.DataFrame:
    """The cells whose trial ids skip one the table has: columns of ``cell_keys``, ``missing``.

    A cell lacks id t "in a gap" when some cell has t and t comes before the cell's last id
    (ids ordered by :func:`_id_order`); a cell that holds the first n ids is not a gap.

    Examples
    --------
    >>> frame = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 3, "item": ["x"] * 7,
    ...                       "trial": ["0", "1", "2", "3", "0", "1", "3"]})
    >>> trial_gaps(frame, ["model", "item"]).to_dict("records")
    [{'model': 'b', 'item': 'x', 'missing': ['2']}]
    """
    order = _id_order(labels["trial"])
    names = sorted(order, key=order.get)
    rank = labels["trial"].map(order).to_numpy()
    frame = labels[cell_keys].copy()
    frame["rank"] = rank
    grouped = frame.groupby(cell_keys, sort=True, observed=True)["rank"]
    stats = grouped.agg(["size", "max"]).reset_index()
    # a cell without gaps holds every id ranked up to its last one, and the ranks are 0..K-1
    gapped = stats[stats["size"] < stats["max"] + 1]
    if gapped.empty:
        return pd.DataFrame(columns=[*cell_keys, "missing"])
    held = grouped.apply(lambda r: set(r.to_numpy().tolist()))
    missing = []
    for row in gapped.itertuples(index=False):
        key = tuple(getattr(row, k) for k in cell_keys)
        have = held.loc[key if len(key) > 1 else key[0]]
        missing.append([names[t] for t in range(int(row.max)) if t not in have])
    out = gapped[cell_keys].reset_index(drop=True)
    out["missing"] = missing
    return out


def _ratio(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """prod_{j<k} (top - j) / (n - j) = C(top, k) / C(n, k) for 0 <= top <= n, n >= k."""
    top = np.asarray(top, dtype=float)
    n = np.asarray(n, dtype=float)
    out = np.ones(np.broadcast(top, n).shape)
    for j in range(k):  # a loop over the K factors, never over items
        out = out * np.clip(top - j, 0.0, None) / (n - j)
    return out


def _check_counts(n: np.ndarray, c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(n)
    c = np.asarray(c)
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("the successes c must lie between 0 and the trials n")
    if np.any(n < k):
        raise ValueError(f"k={k} needs n >= k trials; the smallest n is {int(n.min())}")
    return n, c


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass@k: the probability that at least one of k of the n trials passes.

    .. math:: \\widehat{\\text{pass@}k} = 1 - \\binom{n - c}{k} \\Big/ \\binom{n}{k}
              = 1 - \\prod_{j=0}^{k-1} \\frac{n - c - j}{n - j}

    computed as the product (no large binomials), vectorised over cells.

    Parameters
    ----------
    n, c : array of int
        Trials and successes per cell (0 <= c <= n, n >= k).
    k : int

    References
    ----------
    Chen, M., Tworek, J., Jun, H., et al. (2021). Evaluating Large Language Models Trained on
    Code. arXiv:2107.03374 (the unbiased estimator, their Eq. 1 and Figure 3).

    Examples
    --------
    >>> pass_at_k([5, 5, 4], [0, 1, 4], 2).round(4).tolist()
    [0.0, 0.4, 1.0]
    """
    n, c = _check_counts(n, c, k)
    return 1.0 - _ratio(n - c, n, k)


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass^k: the probability that all of k of the n trials pass.

    .. math:: \\widehat{\\text{pass}^k} = \\binom{c}{k} \\Big/ \\binom{n}{k}
              = \\prod_{j=0}^{k-1} \\frac{c - j}{n - j}

    Parameters
    ----------
    n, c : array of int
        Trials and successes per cell (0 <= c <= n, n >= k).
    k : int

    References
    ----------
    Yao, S., Shinn, N., Razavi, P., & Narasimhan, K. (2024). τ-bench: A Benchmark for
    Tool-Agent-User Interaction in Real-World Domains. arXiv:2406.12045 (pass^k).

    Examples
    --------
    >>> pass_hat_k([5, 5, 4], [5, 3, 1], 2).round(4).tolist()
    [1.0, 0.3, 0.0]
    """
    n, c = _check_counts(n, c, k)
    return _ratio(c, n, k)


def per_item_scores(n: np.ndarray, total: np.ndarray, rule: str, binary: bool = True) -> np.ndarray:
    """The per-item score of each cell: ``total / n`` (mean), pass@K or pass^K of (n, total).

    Examples
    --------
    >>> per_item_scores([4, 4], [1, 3], "pass^2").round(4).tolist()
    [0.0, 0.5]
    """
    kind, k = parse_per_item(rule)
    n = np.asarray(n)
    if kind == "mean":
        return np.asarray(total, dtype=float) / n
    if not binary:
        raise ValueError(f"{rule} needs 0/1 trial scores")
    successes = np.rint(np.asarray(total, dtype=float)).astype(np.int64)
    return pass_at_k(n, successes, k) if kind == "pass@" else pass_hat_k(n, successes, k)


def per_item_sentence(record: dict) -> str:
    """What a result's scores are, from ``Scores.notes["repeated_trials"]`` (for guarantees).

    Examples
    --------
    >>> per_item_sentence({"per_item": "pass@3", "trials_per_item": [5, 5]}).split(", so ")[0]
    "Each item's score is its unbiased pass@3 over its trials (5 per item)"
    """
    rule = record["per_item"]
    low, high = record["trials_per_item"]
    counts = f"{low} per item" if low == high else f"{low} to {high} per item"
    what = "mean over" if rule == "mean" else f"unbiased {rule} over"
    target = "mean score" if rule == "mean" else f"mean {rule}"
    return (
        f"Each item's score is its {what} its trials ({counts}), so a model's score is its "
        f"{target} over the items."
    )


@dataclass(frozen=True, repr=False, eq=False)
class TrialTable:
    """The trial-level rows behind a :class:`rankci.Scores` built with a trial column.

    Attributes
    ----------
    frame : DataFrame
        Columns model, item, [cluster], [prompt], trial (text labels) and score, one row per
        trial, after validation (so :meth:`rankci.Scores.per_item` can apply another rule).
    rule : str
        The per-item rule the Scores' scores were made with.
    column : str
        The trial column's name in the table read (for messages).
    score_column : str
        The score column's name in the table read (for messages).
    bounds : (float, float) or None
        The score range the table was read with.
    gaps : {"refuse", "allow"}
        The ``trial_gaps`` rule the table was read with (kept when re-scored).
    """

    frame: pd.DataFrame
    rule: str
    column: str
    score_column: str
    bounds: tuple[float, float] | None
    gaps: str = "refuse"

    @property
    def n_rows(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return f"TrialTable({self.n_rows} trial rows, per_item={self.rule!r})"


def collapse_trials(
    frame: pd.DataFrame,
    values: np.ndarray,
    *,
    model: str,
    item: str,
    trial: str,
    score: str,
    cluster: str | None,
    prompt: str | None,
    per_item: str,
    bounds: tuple[float, float] | None,
    gaps: str = "refuse",
) -> tuple[pd.DataFrame, dict, TrialTable]:
    """One row per (model, item[, prompt]) cell with its per-item score, from trial rows.

    ``values`` are the validated numeric scores of ``frame``'s rows. Returns the collapsed long
    table (columns model, item, [cluster], [prompt], score), the JSON-safe record for
    ``Scores.notes["repeated_trials"]`` and the :class:`TrialTable`.

    Raises
    ------
    ValueError
        A duplicated (model, item[, prompt], trial) row; a blank trial id; pass@K / pass^K
        on scores that are not 0/1 (naming the score column and a row) or on a cell with fewer
        than K trials (naming the items and models).
    """
    kind, k = parse_per_item(per_item)
    if gaps not in TRIAL_GAPS:
        raise ValueError(f"trial_gaps must be 'refuse' or 'allow', got {gaps!r}")
    raw = frame[trial]
    if raw.isna().any():
        row = int(np.flatnonzero(raw.isna().to_numpy())[0])
        raise ValueError(f"column {trial!r} is empty at row {row}; every row needs a {trial}")
    labels = pd.DataFrame(
        {
            "model": frame[model].astype(str).to_numpy(),
            "item": frame[item].astype(str).to_numpy(),
        }
    )
    if cluster is not None:
        labels["cluster"] = frame[cluster].astype(str).to_numpy()
    if prompt is not None:
        labels["prompt"] = frame[prompt].astype(str).to_numpy()
    labels["trial"] = raw.astype(str).to_numpy()
    blank = np.flatnonzero(labels["trial"].str.strip().to_numpy() == "")
    if blank.size:
        raise ValueError(
            f"column {trial!r} is blank at row {int(blank[0])}; every row needs a {trial}"
        )
    cell_keys = ["model", "item"] + (["prompt"] if prompt is not None else [])
    repeated = labels.duplicated(cell_keys + ["trial"], keep=False).to_numpy()
    if repeated.any():
        rows = np.flatnonzero(repeated)[:2]
        first = labels.iloc[rows[0]]
        where = ", ".join(f"{key} {first[key]!r}" for key in cell_keys)
        raise ValueError(
            f"duplicated score for ({where}, trial {first['trial']!r}) at rows "
            f"{int(rows[0])} and {int(rows[1])}; each trial of a (model, item"
            f"{', prompt' if prompt is not None else ''}) needs exactly one score in column "
            f"{trial!r}"
        )
    binary = bool(np.all((values == 0) | (values == 1)))
    if kind != "mean" and not binary:
        row = int(np.flatnonzero((values != 0) & (values != 1))[0])
        raise ValueError(
            f"per_item={per_item!r} counts passing trials, so it needs 0/1 scores, but score "
            f"column {score!r} is {values[row]:g} at row {row} (model "
            f"{labels['model'].iloc[row]!r}, item {labels['item'].iloc[row]!r}); use "
            "per_item='mean' for graded scores"
        )
    labels["score"] = values
    gapped = trial_gaps(labels, cell_keys)
    if len(gapped) and gaps == "refuse":
        shown = "; ".join(
            ", ".join(f"{key} {row[key]!r}" for key in cell_keys)
            + f": trial {', '.join(map(repr, row['missing']))} missing"
            for row in gapped.head(5).to_dict("records")
        )
        more = f" and {len(gapped) - 5} more" if len(gapped) > 5 else ""
        raise ValueError(
            f"trials with gaps in column {trial!r}: {len(gapped)} cells lack a trial that comes "
            f"before their last one and that other cells have ({shown}{more}). A lost trial "
            "biases every per-item rule; score it (0 if it failed) or, to read these cells as "
            "unequal counts, pass trial_gaps='allow' (--trial-gaps allow)"
        )
    grouped = labels.groupby(cell_keys, sort=True, observed=True)
    cells = grouped["score"].agg(["size", "sum"]).reset_index()
    n = cells["size"].to_numpy()
    if kind != "mean" and np.any(n < k):
        short = cells[n < k]
        models = sorted(set(short["model"]))
        shown = ", ".join(
            f"{row.item!r} ({row.model}: {row.size})" for row in short.head(5).itertuples()
        )
        more = f" and {len(short) - 5} more" if len(short) > 5 else ""
        raise ValueError(
            f"per_item={per_item!r} needs at least {k} trials per item, but {len(short)} "
            f"(model, item) cells have fewer: {shown}{more} (models: "
            f"{', '.join(map(repr, models[:5]))}{', ...' if len(models) > 5 else ''}); choose a "
            f"smaller K, or leave these items out"
        )
    cells["score"] = per_item_scores(n, cells["sum"].to_numpy(), per_item, binary)
    if cluster is not None:
        first_cluster = grouped["cluster"].first().reset_index(drop=True)
        cells["cluster"] = first_cluster.to_numpy()
    record = _trial_record(labels, cells, cell_keys, trial, per_item, gapped)
    order = [c for c in ("model", "item", "cluster", "prompt") if c in cells.columns]
    collapsed = cells[order + ["score"]]
    table = TrialTable(
        frame=labels[order + ["trial", "score"]],
        rule=per_item,
        column=trial,
        score_column=score,
        bounds=bounds,
        gaps=gaps,
    )
    return collapsed, record, table


def _trial_record(
    labels: pd.DataFrame,
    cells: pd.DataFrame,
    cell_keys: list,
    trial: str,
    per_item: str,
    gapped: pd.DataFrame,
) -> dict:
    """``notes["repeated_trials"]``: counts, unequal counts by model, trial ids cells lack."""
    n = cells["size"].to_numpy()
    by_model = cells.groupby("model")["size"].agg(["min", "max"])
    record: dict = {
        "column": trial,
        "per_item": per_item,
        "trial_ids": int(labels["trial"].nunique()),
        "trial_rows": int(len(labels)),
        "cells": int(len(cells)),
        "trials_per_item": [int(n.min()), int(n.max())],
        "unequal": bool(n.min() != n.max()),
    }
    if len(gapped):  # allowed (trial_gaps="allow"): counted and shown
        record["gaps"] = {
            "cells": int(len(gapped)),
            "examples": [
                {**{k: str(r[k]) for k in cell_keys}, "missing": [str(t) for t in r["missing"]]}
                for r in gapped.head(5).to_dict("records")
            ],
        }
    if record["unequal"]:
        record["trials_by_model"] = {
            str(m): [int(row["min"]), int(row["max"])] for m, row in by_model.iterrows()
        }
        # trial ids a cell lacks that some other cell of the same item has (models that differ)
        ids_per_item = labels.groupby("item")["trial"].nunique()
        short = cells[n < ids_per_item.reindex(cells["item"]).to_numpy()]
        record["cells_with_fewer_trials"] = int(len(short))
        if len(short):
            record["examples"] = [
                {"model": str(r.model), "item": str(r.item), "trials": int(r.size)}
                for r in short.head(5).itertuples()
            ]
        models_short = sorted(set(short["model"]))
        listed = ", ".join(
            f"{m} {by_model.loc[m, 'min']}-{by_model.loc[m, 'max']}" for m in by_model.index[:6]
        )
        warnings.warn(
            f"trials per item differ ({n.min()} to {n.max()}; trials by model: {listed}"
            + (
                f"; {len(short)} cells lack a trial id another model has for the item"
                if len(short)
                else ""
            )
            + (
                f"; {len(gapped)} cells have gaps in their trial ids, read as fewer trials "
                "(trial_gaps='allow')"
                if len(gapped)
                else ""
            )
            + f"): each item's {per_item} uses its own number of trials; if a missing trial "
            "failed rather than never ran, score it 0 instead of leaving it out"
            + (
                f" (models with fewer trials: {', '.join(models_short[:5])})"
                if models_short
                else ""
            ),
            RankciWarning,
            stacklevel=4,
        )
    return record

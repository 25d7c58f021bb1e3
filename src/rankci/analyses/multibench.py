"""Rank intervals on several benchmarks at once, plus an overall leaderboard.

Each benchmark b gets its own paired tests (any test of :func:`rankci.pairwise_tests`) on its own
items. The **overall** score of a model is a weighted mean of its benchmark scores,
``theta_j = sum_b w_b theta_bj`` (equal weights by default: the macro average most leaderboards
show). Benchmarks have disjoint item sets, so the overall difference of a pair is estimated by
combining the per-benchmark paired estimates (stratified estimation):

    D_jl = sum_b w_b dbar_bjl,   se(D_jl)^2 = sum_b w_b^2 se_bjl^2,
    t = (D_jl - delta) / se(D_jl),
    df = se(D_jl)^4 / sum_b (w_b^2 se_bjl^2)^2 / df_bjl        (Welch-Satterthwaite),

one-sided against Student t with ``df`` (test ``"t"``) or the normal (test ``"z"``).

The statements of all tables -- every benchmark's M_b(M_b - 1) ordered pairs and the overall
table's -- are tested together, so the multiplicity across benchmarks is handled:

* ``across="joint"`` (default): one family of all statements, Holm (or Bonferroni) at alpha; with
  probability >= 1 - alpha every statement of every table holds at once.
* ``across="split"``: alpha / T for each of the T tables, each with its own Holm (Bonferroni
  across tables); the same joint guarantee, sometimes more power for a table with many true
  differences.
* ``across="separate"``: every table at alpha on its own (the guarantee holds per table only).

References
----------
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Statist. 6.
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
Biometrics Bulletin 2(6), 110-114.
Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Ch. 5 (stratified random sampling).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import check_choice, jsonable
from rankci.analyses.aggregates import WEIGHTS, benchmark_weights
from rankci.certify.holm import (
    PROCEDURES,
    caveats_of,
    describe_test,
    explain_nothing_certified,
    reject,
)
from rankci.data import Scores
from rankci.evidence.moments import score_width, variance_is_zero
from rankci.evidence.pairwise import Pairwise, pairwise_tests, studentize
from rankci.io import read_scores, read_table
from rankci.leaderboard import apply_trials, resolve_spec
from rankci.method import UNIT_SCOPE, MethodSpec
from rankci.ranking import Ranking, ranking_from_dominance
from rankci.targets import target as target_of

__all__ = ["rank_benchmarks", "BenchmarkRankings", "ACROSS", "WEIGHTS", "OVERALL"]

ACROSS = ("joint", "split", "separate")
OVERALL = "overall"

#: the keywords of rank_benchmarks, for the message on an unknown one
_KEYWORDS = (
    "data, benchmark, alpha, across, multiplicity, weights, overall, unit, test, delta, "
    "missing, rng, spec, aggregate, target, baselines, draws"
)


@dataclass(frozen=True, repr=False, eq=False)
class BenchmarkRankings:
    """Per-benchmark rank intervals and an overall one, with multiplicity across benchmarks.

    Attributes
    ----------
    rankings : dict of str to Ranking
        One Ranking per benchmark, in the order given.
    overall : Ranking or None
        The overall leaderboard (weighted mean of benchmark scores), over the models present in
        every benchmark.
    alpha : float
        The level of the whole family (see ``across``).
    across : {"joint", "split", "separate"}
    weights : dict of str to float
        Benchmark weights of the overall score (summing to 1).
    guarantee : str
    excluded : dict
        Models left out of the overall table (missing from some benchmark), per-benchmark
        exclusions.
    spec : MethodSpec or None
        The method of every table (``rank_benchmarks(data, spec=result.spec)`` re-runs it).
    aggregate : str
        The overall score: ``"weighted"``, ``"win-rate"``, ``"borda"`` or ``"normalised"``
        (:mod:`rankci.analyses.aggregates`).
    target : {"items", "benchmarks"}
        What the overall table's inference extends to.
    """

    rankings: dict
    overall: Ranking | None
    alpha: float
    across: str
    weights: dict
    guarantee: str
    excluded: dict = field(default_factory=dict)
    spec: MethodSpec | None = None
    aggregate: str = "weighted"
    target: str = "items"

    @property
    def tables(self) -> dict:
        """Every table, the overall one last."""
        out = dict(self.rankings)
        if self.overall is not None:
            out[OVERALL] = self.overall
        return out

    def to_frame(self, k: int | None = None) -> pd.DataFrame:
        """Long table: benchmark (``overall`` last), then the columns of Ranking.to_frame."""
        frames = [r.to_frame(k).assign(benchmark=name) for name, r in self.tables.items()]
        frame = pd.concat(frames, ignore_index=True)
        return frame[["benchmark", *[c for c in frame.columns if c != "benchmark"]]]

    def wide(self) -> pd.DataFrame:
        """One row per model: score and rank interval in every table (``[L, U]`` strings)."""
        out = None
        for name, ranking in self.tables.items():
            frame = pd.DataFrame(
                {
                    "model": ranking.models,
                    f"{name} score": ranking.score,
                    f"{name} rank": [
                        f"[{lo}, {hi}]" for lo, hi in zip(ranking.lower, ranking.upper)
                    ],
                }
            )
            out = frame if out is None else out.merge(frame, on="model", how="outer")
        if self.overall is not None:
            out = out.sort_values(f"{OVERALL} score", ascending=False, kind="stable")
        return out.reset_index(drop=True)

    def to_dict(self, k: int | None = None) -> dict:
        return {
            "alpha": self.alpha,
            "across": self.across,
            "aggregate": self.aggregate,
            "target": target_of("benchmark" if self.target == "benchmarks" else "item"),
            "weights": jsonable(self.weights),
            "guarantee": self.guarantee,
            "excluded": jsonable(self.excluded),
            "benchmarks": {name: r.to_dict(k) for name, r in self.rankings.items()},
            OVERALL: None if self.overall is None else self.overall.to_dict(k),
            **({} if self.spec is None else {"spec": self.spec.to_dict()}),
        }

    def __repr__(self) -> str:
        lines = [
            f"BenchmarkRankings({len(self.rankings)} benchmarks"
            + (" + overall" if self.overall is not None else "")
            + f", alpha={self.alpha:g}, across={self.across!r})"
        ]
        lines.append(self.wide().to_string(index=False))
        return "\n".join(lines)


def rank_benchmarks(
    data,
    *,
    benchmark: str = "benchmark",
    alpha: float = 0.05,
    across: str = "joint",
    multiplicity: str = "holm",
    weights: str | Mapping[str, float] = "equal",
    overall: bool = True,
    unit: str = "item",
    test: str = "auto",
    delta: float = 0.0,
    missing: str = "complete",
    rng: int | np.random.Generator | None = None,
    spec: MethodSpec | None = None,
    aggregate: str = "weighted",
    target: str = "items",
    baselines: Mapping[str, float] | None = None,
    draws: int = 2000,
    **test_options,
) -> BenchmarkRankings:
    """Rank intervals per benchmark and overall, with the multiplicity across benchmarks handled.

    Parameters
    ----------
    data : mapping, DataFrame, path or Scores
        * a mapping ``{benchmark name: Scores, DataFrame or path}``;
        * a long table (DataFrame or file) with a ``benchmark`` column, split by it;
        * Scores with clusters and ``benchmark="cluster"``: each cluster is a benchmark (for
          example lm-evaluation-harness groups read with ``cluster="benchmark"``).
    benchmark : str, default "benchmark"
        The benchmark column of a table, or ``"cluster"``.
    alpha : float, default 0.05
    across : {"joint", "split", "separate"}
        How the statements of the T tables (benchmarks, plus the overall one) share alpha; see
        the module docstring.
    multiplicity : {"holm", "bonferroni"}
        The procedure within each family.
    weights : "equal", "items" or mapping name -> weight
        Weights of the overall score: equal (macro average), proportional to the benchmark's
        number of units (micro average), or given (normalised to sum to 1).
    overall : bool, default True
        Also rank the models on the overall score (needs test "t" or "z").
    unit, test, delta, missing, rng, **test_options
        As in :func:`rankci.rank`, applied within each benchmark.
    spec : MethodSpec, optional
        The method at once (``alpha``, ``multiplicity``, ``unit``, ``test``, ``delta``,
        ``missing`` and the test's options), for example ``other.spec``; then pass none of those
        keywords. Its coverage is simultaneous and its multiplicity Holm or Bonferroni.
    aggregate : {"weighted", "win-rate", "borda", "normalised"}, default "weighted"
        The overall score (:func:`rankci.analyses.aggregates.rank_aggregate`): the weighted
        mean (the stratified test above), HELM's mean win rate, MTEB's Borda count or the
        Open LLM Leaderboard's baseline-normalised mean.
    target : {"items", "benchmarks"}, default "items"
        What the overall table's inference extends to: new items on these benchmarks, or new
        benchmarks (benchmarks as units). Any aggregate other than the weighted mean on items
        is certified by :func:`~rankci.analyses.aggregates.rank_aggregate` at its share of
        alpha: with T tables, the benchmark tables share ``alpha (T - 1) / T`` (``across``
        as above) and the overall table gets ``alpha / T`` (``alpha`` with "separate").
    baselines : mapping of benchmark to float, optional
        Random-guess baselines of ``aggregate="normalised"``.
    draws : int, default 2000
        Bootstrap draws of the overall table (target "items", aggregates other than weighted).

    Returns
    -------
    BenchmarkRankings
        ``result.spec`` is the validated :class:`~rankci.method.MethodSpec`.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    Biometrics Bulletin 2(6), 110-114.
    Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Ch. 5 (stratified random sampling). Wiley,
    New York.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> frames = []
    >>> for b, p in (("arith", [0.9, 0.6, 0.3]), ("trivia", [0.5, 0.8, 0.2])):
    ...     x = rng.random((400, 3)) < p
    ...     frames.append(pd.DataFrame({"benchmark": b, "item": np.repeat(np.arange(400), 3),
    ...                                 "model": np.tile(["a", "b", "c"], 400),
    ...                                 "score": x.ravel().astype(int)}))
    >>> result = rank_benchmarks(pd.concat(frames))
    >>> result.overall.dominance_pairs()
    [('a', 'c'), ('b', 'c')]
    """
    check_choice("across", across, ACROSS)
    from rankci.analyses.aggregates import AGGREGATES, TARGETS, rank_aggregate

    check_choice("aggregate", aggregate, AGGREGATES)
    check_choice("target", target, TARGETS)
    custom = overall and (aggregate != "weighted" or target != "items")
    keywords = dict(
        alpha=alpha, multiplicity=multiplicity, unit=unit, test=test, delta=delta, missing=missing
    )
    spec, rng = resolve_spec(
        spec, rng, keywords, test_options, "rank_benchmarks", accepted=_KEYWORDS
    )
    check_choice("multiplicity", spec.multiplicity, PROCEDURES)
    if spec.coverage != "simultaneous":
        raise ValueError("rank_benchmarks makes simultaneous statements: spec.coverage must be "
                         f"'simultaneous', got {spec.coverage!r}")
    alpha, multiplicity, unit, test = spec.alpha, spec.multiplicity, spec.unit, spec.test
    delta, missing, test_options = spec.delta, spec.missing, dict(spec.test_options)
    parts = split_benchmarks(data, benchmark)
    rules = sorted({p.trials.rule for p in parts.values() if p.trials is not None})
    if spec.trials is None and rules:  # benchmarks read with trials: one rule, recorded
        spec = spec.replace(trials=rules[0])
    if spec.trials is not None:
        parts = {name: apply_trials(spec, p, "rank_benchmarks")[1] for name, p in parts.items()}
    if custom and len(parts) < 2:
        raise ValueError(
            f"aggregate={aggregate!r} over benchmarks needs at least two benchmarks (only "
            f"{next(iter(parts))!r} was given), or overall=False"
        )
    if overall and not custom and test not in ("auto", "t", "z"):
        raise ValueError(
            f"the overall table combines per-benchmark mean differences and standard errors, "
            f"which test {test!r} does not give; use test='auto', 't' or 'z', or overall=False"
        )

    pairwise: dict[str, Pairwise] = {}
    widths: dict[str, float] = {}
    for name, scores in parts.items():
        units = scores.units(unit, missing)
        pairwise[name] = pairwise_tests(units, test, delta=delta, rng=rng, **test_options)
        widths[name] = score_width(units.values)

    excluded: dict = {}
    weight_of: dict[str, float] = {}
    n_tables = len(parts) + 1
    aggregate_ranking = None
    if custom:
        share = alpha if across == "separate" else alpha / n_tables
        aggregate_ranking = rank_aggregate(
            parts,
            aggregate=aggregate,
            target=target,
            alpha=share,
            weights=weights,
            baselines=baselines,
            unit=unit,
            missing=missing,
            draws=draws,
            test=test,
            multiplicity=multiplicity,
            rng=rng,
            **test_options,
        )
        aggregate_ranking.details.update({"benchmark": OVERALL, "n_tables": n_tables})
        aggregate_ranking.procedure.update({"across": across, "alpha_table": share})
        excluded.update(aggregate_ranking.excluded)
        weight_of = dict(aggregate_ranking.details.get("weights", {}))
    if overall and not custom:
        if len(parts) < 2:
            raise ValueError("an overall table needs at least two benchmarks (or overall=False)")
        weight_of = benchmark_weights(weights, pairwise)
        combined, left_out = _combine(
            pairwise, weight_of, delta, test == "z", widths=widths
        )
        if left_out:
            excluded["models_not_in_every_benchmark"] = left_out
        pairwise[OVERALL] = combined
    else:
        pairwise = dict(pairwise)

    names = list(pairwise)
    split = custom and across != "separate"
    benchmark_alpha = alpha * (n_tables - 1) / n_tables if split else alpha
    table_alpha, decisions = _decide(names, pairwise, benchmark_alpha, across, multiplicity)
    words = _family_words(across, multiplicity, alpha, len(names))
    if custom:
        words = _aggregate_words(across, multiplicity, alpha, n_tables, aggregate_ranking)
    family = sum(int(np.isfinite(pairwise[name].pvalue).sum()) for name in names)
    rankings: dict[str, Ranking] = {}
    for name in names:
        pw = pairwise[name]
        details = {"benchmark": name, "n_tables": len(names)}
        if not decisions[name].any():
            why = explain_nothing_certified(
                pw,
                table_alpha[name],
                "simultaneous",
                n_hypotheses=family if across == "joint" else None,
                prefix=f"table {name!r}: ",
            )
            if why is not None:
                details["nothing_certified"] = why
        scope = UNIT_SCOPE[unit]
        what = (
            f"a weighted mean of the benchmark scores (weights {_weights_text(weight_of)}); "
            f"stratified paired {'t' if test == 'auto' else test} tests on {pw.n_units} {unit} "
            "units"
            if name == OVERALL
            else f"{describe_test(pw)} on {pw.n_units} {unit} units{caveats_of(pw)}"
        )
        guarantee = f"{words} Table {name!r}: {what}; inference extends to {scope}."
        procedure = {
            "test": pw.test,
            "unit": unit,
            "delta": delta,
            "multiplicity": multiplicity,
            "missing": missing,
            "across": across,
            "alpha_table": table_alpha[name],
        }
        rankings[name] = ranking_from_dominance(
            pw.models,
            pw.score,
            decisions[name],
            alpha=alpha,
            coverage="simultaneous",
            procedure=procedure,
            n_units=pw.n_units,
            excluded=pw.excluded,
            guarantee=guarantee,
            pairwise=pw,
            details=details,
        )
    overall_ranking = rankings.pop(OVERALL, aggregate_ranking)
    records = [p.notes["repeated_trials"] for p in parts.values() if "repeated_trials" in p.notes]
    if records:  # per-item scores from trials: the rule (spec.trials) in the guarantee
        from rankci.trials import per_item_sentence

        low = min(r["trials_per_item"][0] for r in records)
        high = max(r["trials_per_item"][1] for r in records)
        words = words + " " + per_item_sentence(
            {"per_item": spec.trials, "trials_per_item": [low, high]}
        )
    return BenchmarkRankings(
        rankings=rankings,
        overall=overall_ranking,
        alpha=alpha,
        across=across,
        weights=weight_of,
        guarantee=words,
        excluded=excluded,
        spec=spec,
        aggregate=aggregate,
        target=target,
    )


def _aggregate_words(across, multiplicity, alpha, n_tables, ranking) -> str:
    """The family's guarantee when the overall table is an aggregate of its own procedure."""
    procedure = multiplicity.capitalize()
    share = ranking.procedure["alpha_table"]
    if across == "separate":
        return (
            f"Within each table separately, with probability at least {1 - alpha:.0%} every "
            f"statement of that table is true ({procedure} at alpha = {alpha:g} per benchmark "
            f"table; the overall table: {ranking.guarantee}); the {n_tables} tables are not "
            "protected jointly."
        )
    how = (
        f"{procedure} over the statements of the {n_tables - 1} benchmark tables together at "
        f"alpha = {alpha * (n_tables - 1) / n_tables:.4g}"
        if across == "joint"
        else f"each benchmark table at alpha = {alpha / n_tables:.4g} with its own {procedure}"
    )
    return (
        f"With probability at least {1 - alpha:.0%}, every rank interval, certified dominance and "
        f"tier in all {n_tables} tables is true simultaneously (Bonferroni between the parts: "
        f"{how}; the overall table at alpha = {share:.4g}). Overall table: {ranking.guarantee}"
    )


# ---------------------------------------------------------------------- input
def split_benchmarks(data, benchmark: str) -> dict[str, Scores]:
    if isinstance(data, Mapping):
        if len(data) == 0:
            raise ValueError("no benchmarks given")
        parts = {}
        for name, part in data.items():
            if str(name) == OVERALL:
                raise ValueError(f"{OVERALL!r} is reserved for the overall table; rename it")
            parts[str(name)] = part if isinstance(part, Scores) else read_scores(part)
        return parts
    if isinstance(data, Scores):
        if benchmark != "cluster":
            raise ValueError(
                "Scores carry no benchmark column: pass a mapping {name: scores}, a table with "
                "a benchmark column, or benchmark='cluster' to treat clusters as benchmarks"
            )
        if data.clusters is None:
            raise ValueError("benchmark='cluster' needs scores with a cluster column")
        parts = {}
        for name in data.clusters:
            subset = data.subset(clusters=[name])
            present = subset.scored_models()
            parts[name] = (
                subset if len(present) == subset.n_models else subset.subset(models=present)
            )
        return _no_reserved(parts)
    if isinstance(data, (str, os.PathLike)):
        data = read_table(Path(data), "auto")
    if not isinstance(data, pd.DataFrame):
        raise ValueError(
            "expected a mapping of benchmarks, a table, a path or Scores, got "
            f"{type(data).__name__}"
        )
    if benchmark not in data.columns:
        available = ", ".join(repr(str(c)) for c in data.columns)
        raise ValueError(
            f"the benchmark column {benchmark!r} is not in the table; columns are: {available}"
        )
    if data[benchmark].isna().any():
        row = int(np.flatnonzero(data[benchmark].isna().to_numpy())[0])
        raise ValueError(f"column {benchmark!r} is empty at row {row}; every row needs a benchmark")
    parts = {
        str(name): read_scores(group.drop(columns=[benchmark]).reset_index(drop=True))
        for name, group in data.groupby(benchmark, sort=False)
    }
    return _no_reserved(parts)


def _no_reserved(parts: dict) -> dict:
    if OVERALL in parts:
        raise ValueError(f"{OVERALL!r} is reserved for the overall table; rename that benchmark")
    return parts


def _weights_text(weights: dict) -> str:
    return ", ".join(f"{name} {w:.3g}" for name, w in weights.items())


# ---------------------------------------------------------------------- overall
def _combine(
    pairwise: dict,
    weights: dict,
    delta: float,
    normal: bool,
    widths: dict | None = None,
):
    """The stratified overall test for every ordered pair of the models in every benchmark.

    A pair whose combined variance ``sum_b w_b^2 se_b^2`` is zero by the one absolute
    rule (:func:`rankci.evidence.moments.variance_is_zero`, with ``R = sqrt(sum_b w_b^2 R_b^2)``
    from the benchmarks' score widths ``widths[b]``, 1 where not given) has no evidence: its
    statistic is +-inf (or 0 at the margin) and its p-value 1.
    """
    names = list(pairwise)
    first = pairwise[names[0]]
    common = [m for m in first.models if all(m in pairwise[b].models for b in names)]
    everyone = sorted({m for b in names for m in pairwise[b].models})
    left_out = [m for m in everyone if m not in common]
    if len(common) < 2:
        raise ValueError(
            "fewer than two models are scored on every benchmark, so there is no overall table; "
            "pass overall=False"
        )
    m = len(common)
    estimate = np.zeros((m, m))
    variance = np.zeros((m, m))
    satterthwaite = np.zeros((m, m))
    n = np.zeros((m, m), dtype=np.int64)
    score = np.zeros(m)
    with np.errstate(invalid="ignore", divide="ignore"):
        for b in names:
            pw = pairwise[b]
            index = np.array([pw.models.index(name) for name in common])
            grid = np.ix_(index, index)
            w = weights[b]
            part = (w * pw.se[grid]) ** 2
            estimate += w * pw.estimate[grid]
            variance += part
            if not normal:
                satterthwaite += np.where(part > 0, part**2 / pw.df[grid], 0.0)
            n += pw.n[grid]
            score += w * pw.score[index]
    off = ~np.eye(m, dtype=bool)
    widths = widths or {}
    width = float(np.sqrt(sum(weights[b] ** 2 * widths.get(b, 1.0) ** 2 for b in names)))
    zero = variance_is_zero(variance, width)
    se = np.sqrt(variance)
    statistic = studentize(estimate, delta, se, zero)
    if normal:
        pvalue = special.ndtr(-statistic)
        df = None
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            df = np.where(zero | (satterthwaite <= 0), np.nan, variance**2 / satterthwaite)
        pvalue = special.stdtr(np.where(np.isfinite(df), df, 1.0), -statistic)
    pvalue = np.where(zero, 1.0, pvalue)  # a zero variance is no evidence
    for matrix in (estimate, statistic, pvalue):
        matrix[~off] = np.nan
    n_units = int(sum(pairwise[b].n_units for b in names))
    combined = Pairwise(
        models=tuple(common),
        test="stratified-z" if normal else "stratified-t",
        delta=delta,
        estimate=estimate,
        statistic=statistic,
        pvalue=pvalue,
        n=n,
        se=np.where(off, se, np.nan),
        df=df,
        unit=first.unit,
        missing=first.missing,
        options={"weights": dict(weights)},
        excluded={"models_not_in_every_benchmark": left_out} if left_out else {},
        score=score,
        n_units=n_units,
    )
    return combined, left_out


# ---------------------------------------------------------------------- multiplicity
def _decide(names, pairwise, alpha, across, multiplicity):
    """Rejections of every table: one family (joint), alpha / T each (split), alpha each."""
    table_alpha: dict[str, float] = {}
    decisions: dict[str, np.ndarray] = {}
    if across == "joint":
        flat = np.concatenate([pairwise[name].pvalue.ravel() for name in names])
        rejected = reject(flat, alpha, multiplicity)
        start = 0
        for name in names:
            size = pairwise[name].pvalue.size
            decisions[name] = rejected[start : start + size].reshape(pairwise[name].pvalue.shape)
            table_alpha[name] = alpha
            start += size
        return table_alpha, decisions
    each = alpha / len(names) if across == "split" else alpha
    for name in names:
        decisions[name] = reject(pairwise[name].pvalue, each, multiplicity)
        table_alpha[name] = each
    return table_alpha, decisions


def _family_words(across: str, multiplicity: str, alpha: float, n_tables: int) -> str:
    procedure = multiplicity.capitalize()
    if across == "joint":
        return (
            f"With probability at least {1 - alpha:.0%}, every rank interval, certified "
            f"dominance and tier in all {n_tables} tables is true simultaneously ({procedure} "
            f"over the statements of all tables together at alpha = {alpha:g})."
        )
    if across == "split":
        return (
            f"With probability at least {1 - alpha:.0%}, every rank interval, certified "
            f"dominance and tier in all {n_tables} tables is true simultaneously (alpha split "
            f"equally: each table at alpha = {alpha / n_tables:.4g} with its own {procedure})."
        )
    return (
        f"Within each table separately, with probability at least {1 - alpha:.0%} every "
        f"statement of that table is true ({procedure} at alpha = {alpha:g} per table); the "
        f"{n_tables} tables are not protected jointly."
    )

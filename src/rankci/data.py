"""The validated scores table and its aggregation into units of analysis.

A :class:`Scores` holds one score per (model, item, prompt) with the item's cluster; it is built
through :func:`rankci.read_scores` (files, DataFrames) or :meth:`Scores.from_matrix` (arrays) and
validated once, with errors that name the offending column, row, model or item.
:meth:`Scores.units` aggregates it into a units x models matrix (:class:`UnitScores`), the input of
every fixed-sample method.

Units of analysis (Section 3 of the source, "Quantifying Ranking Uncertainty in LLM Benchmarks"):

============  ===============================================  ==========================
unit          unit-level score of model j                      inference extends to
============  ===============================================  ==========================
observation   the raw score of (cluster, item, prompt)         the observed set only
item          mean over prompts                                new questions
cluster       mean over the cluster's questions and prompts    new subjects
prompt        mean over all clusters and questions             new prompt variants
============  ===============================================  ==========================
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rankci._base import (
    LazyModule,
    RankciWarning,
    check_choice,
    check_positive_int,
    is_dataframe,
    seeded_generator,
)
from rankci.method import MISSING, UNITS
from rankci.subsampling import draw_items_per_cluster

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

__all__ = [
    "Scores",
    "UnitScores",
    "UNITS",
    "MISSING",
    "InsufficientDataError",
    "PROMPT_RULE",
    "distinct_count",
    "scan_range",
]

#: The one rule for prompt variants, applied when the table is read (so every command, the mixed
#: model and the monitor included, sees the same rows): a prompt variant is kept only when every
#: model has it. The rows of a variant that some model lacks altogether are excluded and counted
#: in ``Scores.notes["excluded"]["inconsistent_prompts"]``, which every
#: ``Scores.units(...).excluded`` (and so every fixed-sample result's ``excluded``) carries. Single
#: missing cells of a shared variant are ordinary missing cells (``missing=``).
PROMPT_RULE = "prompt variants that not every model has"


class InsufficientDataError(ValueError):
    """Valid input that leaves too little to analyse (for example no item scored by every model)."""


@dataclass(frozen=True, repr=False, eq=False)
class UnitScores:
    """A units x models matrix of unit-level scores: the input of the pairwise tests.

    Attributes
    ----------
    values : ndarray, shape (n_units, n_models)
        Unit-level scores; NaN where a model has no score for a unit (only with
        ``missing="pairwise"``).
    models : tuple of str
        Column labels.
    labels : tuple of str
        Row labels (item ids, cluster names, prompt names or ``item|prompt``).
    unit : {"observation", "item", "cluster", "prompt"}
    missing : {"complete", "pairwise"}
    excluded : dict
        What was left out and why (JSON-safe counts).
    binary : bool
        True when every unit-level score is 0 or 1 (required by the sign test).
    cluster : str or None
        The cluster this matrix is restricted to, for per-cluster analyses.
    unit_cluster : ndarray of int or None
        For units nested in clusters (observation, item, cluster), each unit's cluster as a code
        into ``Scores.clusters``; None without a cluster column or for prompt units.
    """

    values: np.ndarray
    models: tuple[str, ...]
    labels: tuple[str, ...]
    unit: str
    missing: str
    excluded: dict
    binary: bool
    cluster: str | None = None
    unit_cluster: np.ndarray | None = None

    @property
    def n_units(self) -> int:
        return self.values.shape[0]

    @property
    def n_models(self) -> int:
        return self.values.shape[1]

    def range_scan(self) -> tuple[bool, float | None, float | None]:
        """``(complete, lo, hi)`` of ``values`` (:func:`scan_range`).

        Kept after the first call while ``values`` is read-only, as :meth:`Scores.units` makes
        it (the matrix cannot change under the answer), as :meth:`model_scores` is.

        Examples
        --------
        >>> from rankci import Scores
        >>> Scores.from_matrix([[1.0, 0.0], [0.5, 0.0]]).units().range_scan()
        (True, 0.0, 1.0)
        """
        return self._kept("range_scan", lambda: scan_range(self.values))

    def model_scores(self) -> np.ndarray:
        """Each model's mean over the units it has a score for (read-only, and kept, while
        ``values`` is read-only)."""
        return self._kept("model_scores", self._model_scores)

    def _kept(self, name: str, compute: Callable[[], object]):
        """``compute()``, computed once while ``values`` is read-only (arrays kept read-only)."""
        if self.values.flags.writeable:
            return compute()
        kept = self.__dict__.get("_kept_values")
        if kept is None:
            kept = {}
            object.__setattr__(self, "_kept_values", kept)  # a frozen dataclass: no field
        if name not in kept:
            value = compute()
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            kept[name] = value
        return kept[name]

    def _model_scores(self) -> np.ndarray:
        x = self.values
        if x.size and self.range_scan()[0]:  # complete: plain means
            return x.sum(axis=0) / x.shape[0]
        counts = np.isfinite(x).sum(axis=0)
        sums = np.nansum(x, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)

    def __repr__(self) -> str:
        where = f", cluster={self.cluster!r}" if self.cluster is not None else ""
        return (
            f"UnitScores(unit={self.unit!r}, n_units={self.n_units}, n_models={self.n_models}, "
            f"missing={self.missing!r}{where})"
        )


@dataclass(frozen=True, repr=False, eq=False)
class Scores:
    """Validated per-item scores of several models: one row per (model, item, prompt).

    Build it with :func:`rankci.read_scores` or :meth:`Scores.from_frame` /
    :meth:`Scores.from_matrix`; the constructor itself trusts its arguments.

    Attributes
    ----------
    models, items : tuple of str
        Sorted labels; ``model_code`` and ``item_code`` index into them.
    clusters : tuple of str or None
        Sorted cluster labels, when a cluster column was given; ``item_cluster[i]`` is the code of
        item i's cluster (items are nested in clusters).
    prompts : tuple of str or None
        Sorted prompt-variant labels, when a prompt column was given.
    score : ndarray of float
        One score per row.
    """

    models: tuple[str, ...]
    items: tuple[str, ...]
    clusters: tuple[str, ...] | None
    prompts: tuple[str, ...] | None
    model_code: np.ndarray
    item_code: np.ndarray
    prompt_code: np.ndarray | None
    item_cluster: np.ndarray | None
    score: np.ndarray
    notes: dict = field(default_factory=dict)
    #: the trial rows, when the table had a trial column (:mod:`rankci.trials`); ``score`` then
    #: holds each cell's per-item score by ``trials.rule``
    trials: object = None
    #: :meth:`units` by (unit, missing): a Scores is immutable, so each aggregation is done once
    #: (its arrays are returned read-only, so no caller can change what the next one reads)
    _units: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        model: str = "model",
        item: str = "item",
        score: str = "score",
        cluster: str | None = None,
        prompt: str | None = None,
        bounds: tuple[float, float] | None = (0.0, 1.0),
        notes: dict | None = None,
        lines: Sequence[int] | None = None,
        trial: str | None = None,
        per_item: str = "mean",
        trial_gaps: str = "refuse",
    ) -> Scores:
        """Validate a long table (one row per model, item and prompt) into Scores.

        Parameters
        ----------
        frame : DataFrame
            The long table.
        model, item, score, cluster, prompt : str
            Column names; ``cluster`` and ``prompt`` are optional.
        bounds : (float, float) or None
            Scores outside ``[lo, hi]`` are an error; None accepts any finite score. rankci's
            guarantees for bounded scores (the anytime-valid monitor) need ``(0, 1)``.
        lines : sequence of int, optional
            The 1-based line of each row in the file it was read from (``lines[r]`` for row r,
            looked up only to word an error): messages then say ``line L``. Without it they say
            ``row r``, the row's position in ``frame`` counted from 0.

        Raises
        ------
        ValueError
            Naming the column, row, model or item: a missing column, an empty label, a
            non-numeric, missing, non-finite or out-of-range score, a duplicated
            (model, item, prompt) row, an item in two clusters, fewer than two models.

        With ``trial`` (a column of repeated trials nested in the item and prompt), each cell's
        trials become one per-item score by ``per_item`` (``"mean"``, ``"pass@K"``,
        ``"pass^K"``; :mod:`rankci.trials`), the trial rows are kept in ``trials`` and their
        counts in ``notes["repeated_trials"]``. A cell whose trial ids skip one the table has
        (trials 0, 1, 3 beside 0, 1, 2, 3) is refused by default; ``trial_gaps="allow"`` reads
        it as fewer trials, counted in ``notes["repeated_trials"]["gaps"]``.
        """
        if not is_dataframe(frame):
            raise ValueError(f"expected a pandas DataFrame, got {type(frame).__name__}")
        roles = {"model": model, "item": item, "score": score, "cluster": cluster, "prompt": prompt}
        if trial is not None:
            roles["trial"] = trial
        for role, column in roles.items():
            if column is not None and column not in frame.columns:
                available = ", ".join(repr(str(c)) for c in frame.columns)
                raise ValueError(
                    f"the {role} column {column!r} is not in the table; columns are: {available}"
                )
        if len(frame) == 0:
            raise ValueError("the table has no rows")
        frame = frame.reset_index(drop=True)
        place = row_place(lines)
        if trial is not None:
            return cls._from_trials(
                frame, model, item, score, cluster, prompt, bounds, notes, trial, per_item, place,
                trial_gaps,
            )

        model_code, models = _factorize(frame[model], model, "model", place=place)
        item_code, items = _factorize(frame[item], item, "item", place=place)
        prompt_code, prompts = (None, None)
        if prompt is not None:
            prompt_code, prompts = _factorize(frame[prompt], prompt, "prompt", place=place)
        values = _numeric_scores(frame, score, model, item, bounds, place)

        n_prompts = 1 if prompts is None else len(prompts)
        key = item_code.astype(np.int64) * n_prompts + (0 if prompt_code is None else prompt_code)
        key = key * len(models) + model_code
        _refuse_duplicates(
            frame, key, model, item, prompt, place, size=len(items) * n_prompts * len(models)
        )

        if len(models) < 2:
            raise ValueError(
                f"rankci compares models, but the {model!r} column names only one model: "
                f"{models[0]!r}"
            )

        clusters, item_cluster = None, None
        if cluster is not None:
            cluster_code, clusters = _factorize(frame[cluster], cluster, "cluster", place=place)
            item_cluster = _nest_items(
                frame, item_code, cluster_code, items, clusters, item, cluster, place
            )

        return scores_from_codes(
            models=models,
            items=items,
            clusters=clusters,
            prompts=prompts,
            model_code=model_code,
            item_code=item_code,
            prompt_code=prompt_code,
            item_cluster=item_cluster,
            score=values,
            notes=dict(notes or {}),
            prompt=prompt,
        )

    @classmethod
    def _from_trials(
        cls, frame, model, item, score, cluster, prompt, bounds, notes, trial, per_item, place,
        trial_gaps="refuse",
    ) -> Scores:
        """from_frame with a trial column: validate, collapse each cell's trials, keep them."""
        from rankci.trials import collapse_trials, parse_per_item

        parse_per_item(per_item)
        _factorize(frame[model], model, "model", place=place)
        _factorize(frame[item], item, "item", place=place)
        values = _numeric_scores(frame, score, model, item, bounds, place)
        collapsed, record, table = collapse_trials(
            frame,
            values,
            model=model,
            item=item,
            trial=trial,
            score=score,
            cluster=cluster,
            prompt=prompt,
            per_item=per_item,
            bounds=bounds,
            gaps=trial_gaps,
        )
        notes = {**(notes or {}), "repeated_trials": record}
        built = cls.from_frame(
            collapsed,
            cluster="cluster" if cluster is not None else None,
            prompt="prompt" if prompt is not None else None,
            bounds=bounds,
            notes=notes,
        )
        return dataclasses.replace(built, trials=table)

    def per_item(self, rule: str) -> Scores:
        """The same trials with another per-item rule (``"mean"``, ``"pass@K"``, ``"pass^K"``).

        Scores without a trial column accept only ``"mean"`` (returned unchanged, one score per
        item being its own mean).

        Examples
        --------
        >>> import pandas as pd
        >>> table = pd.DataFrame({"model": list("aaaabbbb"), "item": list("xxyyxxyy"),
        ...                       "trial": [0, 1] * 4, "score": [1, 0, 1, 1, 0, 0, 1, 0]})
        >>> scores = Scores.from_frame(table, trial="trial")
        >>> scores.score.tolist(), scores.per_item("pass@2").score.tolist()
        ([0.5, 1.0, 0.0, 0.5], [1.0, 1.0, 0.0, 1.0])
        """
        from rankci.trials import parse_per_item

        parse_per_item(rule)
        if self.trials is None:
            if rule == "mean":
                return self
            raise ValueError(
                f"per_item={rule!r} needs repeated trials: these scores have no trial column "
                "(name it with trial=...)"
            )
        if rule == self.trials.rule:
            return self
        notes = {k: v for k, v in self.notes.items() if k != "repeated_trials"}
        kept = {k: v for k, v in notes.get("excluded", {}).items() if k != "inconsistent_prompts"}
        notes.pop("excluded", None)
        if kept:
            notes["excluded"] = kept
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rescored = self._rescore(rule, notes)
        for warning in caught:  # the unequal counts were said when the trials were read
            if not str(warning.message).startswith("trials per item differ"):
                warnings.warn(warning.message, warning.category, stacklevel=2)
        # the trial column keeps the name it had in the table read
        rescored.notes["repeated_trials"]["column"] = self.trials.column
        return dataclasses.replace(
            rescored, trials=dataclasses.replace(rescored.trials, column=self.trials.column)
        )

    def _rescore(self, rule: str, notes: dict) -> Scores:
        return Scores.from_frame(
            self.trials.frame.rename(columns={"score": self.trials.score_column}),
            cluster="cluster" if self.clusters is not None else None,
            prompt="prompt" if self.prompts is not None else None,
            score=self.trials.score_column,
            bounds=self.trials.bounds,
            notes=notes,
            trial="trial",
            per_item=rule,
            trial_gaps=self.trials.gaps,
        )

    @classmethod
    def from_matrix(
        cls,
        matrix: np.ndarray,
        *,
        models: Sequence[str] | None = None,
        items: Sequence[str] | None = None,
        clusters: Sequence[str] | None = None,
        bounds: tuple[float, float] | None = (0.0, 1.0),
    ) -> Scores:
        """Scores from an items x models array; NaN marks a cell that was not scored.

        ``clusters`` gives each item's cluster label. Default labels are ``m0, m1, ...`` and
        ``i0, i1, ...`` (zero-padded so that they sort in order).
        """
        matrix = np.asarray(matrix, dtype=float)
        if matrix.ndim != 2:
            raise ValueError(f"expected an items x models matrix, got shape {matrix.shape}")
        n_items, n_models = matrix.shape
        models = _default_labels("m", n_models) if models is None else [str(m) for m in models]
        items = _default_labels("i", n_items) if items is None else [str(i) for i in items]
        if len(models) != n_models or len(items) != n_items:
            raise ValueError(
                f"matrix has shape {matrix.shape} but {len(items)} item and {len(models)} model "
                "labels were given"
            )
        rows, cols = np.nonzero(~np.isnan(matrix))
        frame = pd.DataFrame(
            {
                "model": np.asarray(models, dtype=object)[cols],
                "item": np.asarray(items, dtype=object)[rows],
                "score": matrix[rows, cols],
            }
        )
        cluster_column = None
        if clusters is not None:
            if len(clusters) != n_items:
                raise ValueError(f"{len(clusters)} cluster labels given for {n_items} items")
            frame["cluster"] = np.asarray([str(c) for c in clusters], dtype=object)[rows]
            cluster_column = "cluster"
        empty = [m for m, seen in zip(models, np.isfinite(matrix).any(axis=0)) if not seen]
        if empty:
            raise ValueError(f"model {empty[0]!r} has no scores (its column is empty)")
        return cls.from_frame(frame, cluster=cluster_column, bounds=bounds)

    # ------------------------------------------------------------------ basic facts
    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_rows(self) -> int:
        return len(self.score)

    @property
    def is_binary(self) -> bool:
        return bool(np.all((self.score == 0) | (self.score == 1)))

    def __repr__(self) -> str:
        parts = [f"{self.n_models} models", f"{self.n_items} items"]
        if self.clusters is not None:
            parts.append(f"{len(self.clusters)} clusters")
        if self.prompts is not None:
            parts.append(f"{len(self.prompts)} prompts")
        parts.append(f"{self.n_rows} scores")
        return f"Scores({', '.join(parts)})"

    #: the most models :meth:`_repr_html_` lists (the best by mean score, then a count)
    HTML_ROWS = 30

    def _repr_html_(self) -> str:
        """The notebook view: what was read, and each model's mean score, scored items and
        unscored items (best first; at most :attr:`HTML_ROWS` rows), and what was excluded."""
        import html

        counts = np.bincount(self.model_code, minlength=self.n_models)
        sums = np.bincount(self.model_code, weights=self.score, minlength=self.n_models)
        means = sums / np.maximum(counts, 1)
        order = np.lexsort((np.arange(self.n_models), -means))
        n_obs = self.n_items * (1 if self.prompts is None else len(self.prompts))
        rows = "".join(
            f"<tr><td>{html.escape(self.models[j])}</td><td>{means[j]:.4f}</td>"
            f"<td>{int(counts[j])}</td><td>{max(n_obs - int(counts[j]), 0)}</td></tr>"
            for j in order[: self.HTML_ROWS]
        )
        more = self.n_models - min(self.n_models, self.HTML_ROWS)
        if more:
            rows += f'<tr><td colspan="4">... and {more} more models</td></tr>'
        excluded = self.notes.get("excluded", {})
        note = "; ".join(
            f"{record.get('rows')} rows excluded ({record.get('reason')})"
            for record in excluded.values()
            if isinstance(record, dict)
        )
        return (
            f"<div><p><b>{html.escape(repr(self))}</b></p>"
            "<table><thead><tr><th>model</th><th>mean score</th><th>scores</th>"
            f"<th>not scored</th></tr></thead><tbody>{rows}</tbody></table>"
            + (f"<p><small>{html.escape(note)}</small></p>" if note else "")
            + "</div>"
        )

    def to_frame(self) -> pd.DataFrame:
        """The long table: model, item, [cluster], [prompt], score."""
        out = {
            "model": pd.Categorical.from_codes(self.model_code, self.models),
            "item": np.asarray(self.items, dtype=object)[self.item_code],
        }
        if self.clusters is not None:
            out["cluster"] = pd.Categorical.from_codes(
                self.item_cluster[self.item_code], self.clusters
            )
        if self.prompts is not None:
            out["prompt"] = pd.Categorical.from_codes(self.prompt_code, self.prompts)
        out["score"] = self.score
        return pd.DataFrame(out)

    def subset(
        self,
        *,
        models: Sequence[str] | None = None,
        clusters: Sequence[str] | None = None,
        items: Sequence[str] | None = None,
        prompts: Sequence[str] | None = None,
        items_per_cluster: int | None = None,
        rng: int | np.random.Generator | None = None,
    ) -> Scores:
        """The rows of some models, clusters, items or prompt variants, or k items per cluster.

        The model list is kept as asked (all models by default), even when a model has no rows in
        the selection; items, clusters and prompts are those that remain. The selections combine
        (rows in all of them).

        Parameters
        ----------
        models, clusters, items : sequence of str, optional
            The labels to keep.
        prompts : sequence of str, optional
            A subset N_T of the prompt variants (seed 000's prompt subsets): inference with
            ``unit="prompt"`` then extends to new variants like these.
        items_per_cluster : int, optional
            k: in every cluster, k items drawn uniformly without replacement among the items
            the other selections leave (:func:`rankci.subsampling.draw_items_per_cluster`); a
            cluster with k items or fewer keeps them all, and is named in the record and in a
            RankciWarning.
        rng : int, Generator or None
            The draws of ``items_per_cluster``; None draws a fresh seed, which is recorded.

        Every selection by ``items``, ``prompts`` or ``items_per_cluster`` is recorded in
        ``notes["excluded"]["subsample"]`` (a list, one record per call): what was asked, the
        seed, and the items and prompts kept and dropped, so every result computed from the
        subset reports it in its ``excluded``.

        Examples
        --------
        >>> import numpy as np
        >>> scores = Scores.from_matrix(
        ...     np.arange(12.0).reshape(6, 2) / 12, clusters=["a", "a", "a", "b", "b", "b"]
        ... )
        >>> two = scores.subset(items_per_cluster=2, rng=0)
        >>> two.n_items, two.notes["excluded"]["subsample"][0]["seed"]
        (4, 0)
        """
        keep = np.ones(self.n_rows, dtype=bool)
        model_codes = np.arange(self.n_models)
        record: dict = {}
        if models is not None:
            model_codes = np.unique([self._code(self.models, m, "model") for m in models])
            keep &= np.isin(self.model_code, model_codes)
        if clusters is not None:
            if self.clusters is None:
                raise ValueError("these scores have no cluster column")
            codes = [self._code(self.clusters, c, "cluster") for c in clusters]
            keep &= np.isin(self.item_cluster[self.item_code], codes)
        if items is not None:
            codes = [self._code(self.items, i, "item") for i in _labels(items, "items")]
            keep &= np.isin(self.item_code, codes)
            record["items"] = len(set(codes))
        if prompts is not None:
            if self.prompts is None:
                raise ValueError("prompts= needs a prompt column (prompt variant or template)")
            wanted = _labels(prompts, "prompts")
            codes = [self._code(self.prompts, p, "prompt") for p in wanted]
            keep &= np.isin(self.prompt_code, codes)
            record["prompts"] = sorted(set(str(p) for p in wanted))
        if items_per_cluster is not None:
            keep &= self._items_per_cluster(keep, items_per_cluster, rng, record)
        if not keep.any():
            raise ValueError("the selection has no scores")
        notes = dict(self.notes)
        if record:
            notes = self._record_subsample(notes, record, keep)
        model_map = np.full(self.n_models, -1, dtype=np.int32)
        model_map[model_codes] = np.arange(model_codes.size)
        item_code, item_kept = _compact(self.item_code[keep])
        prompt_code, prompts = None, None
        if self.prompt_code is not None:
            prompt_code, prompt_kept = _compact(self.prompt_code[keep])
            prompts = tuple(self.prompts[p] for p in prompt_kept)
        clusters_out, item_cluster = None, None
        if self.clusters is not None:
            item_cluster, cluster_kept = _compact(self.item_cluster[item_kept])
            clusters_out = tuple(self.clusters[c] for c in cluster_kept)
        return Scores(
            models=tuple(self.models[m] for m in model_codes),
            items=tuple(self.items[i] for i in item_kept),
            clusters=clusters_out,
            prompts=prompts,
            model_code=model_map[self.model_code[keep]],
            item_code=item_code.astype(np.int32),
            prompt_code=None if prompt_code is None else prompt_code.astype(np.int32),
            item_cluster=None if item_cluster is None else item_cluster.astype(np.int32),
            score=self.score[keep],
            notes=notes,
            trials=_subset_trials(self, model_codes, keep),
        )

    def _items_per_cluster(self, keep: np.ndarray, k: object, rng: object, record: dict):
        """The rows of k items drawn per cluster among the items of the rows ``keep``."""
        k = check_positive_int(k, "items_per_cluster")
        if self.clusters is None:
            raise ValueError(
                "items_per_cluster needs a cluster column (the items are drawn within clusters)"
            )
        seed, generator = seeded_generator(rng)
        candidates = np.unique(self.item_code[keep])
        cluster_of = self.item_cluster[candidates]
        chosen = candidates[draw_items_per_cluster(cluster_of, k, generator)]
        sizes = np.bincount(cluster_of, minlength=len(self.clusters))
        short = {
            self.clusters[c]: int(sizes[c]) for c in np.flatnonzero((sizes > 0) & (sizes < k))
        }
        record.update(items_per_cluster=k, seed=seed)
        if short:
            record["clusters_with_fewer_items"] = short
            named = ", ".join(f"{c!r} ({n})" for c, n in list(short.items())[:5])
            more = f" and {len(short) - 5} more" if len(short) > 5 else ""
            warnings.warn(
                f"items_per_cluster={k}: {len(short)} cluster(s) have fewer items and keep all "
                f"of them: {named}{more}",
                RankciWarning,
                stacklevel=3,
            )
        return np.isin(self.item_code, chosen)

    def _record_subsample(self, notes: dict, record: dict, keep: np.ndarray) -> dict:
        """``notes`` with this subsample appended to ``notes["excluded"]["subsample"]``."""
        kept_items = np.unique(self.item_code[keep]).size
        record["items_kept"] = int(kept_items)
        record["items_dropped"] = int(np.unique(self.item_code).size - kept_items)
        if self.prompt_code is not None:
            kept_prompts = np.unique(self.prompt_code[keep]).size
            record["prompts_kept"] = int(kept_prompts)
            record["prompts_dropped"] = int(np.unique(self.prompt_code).size - kept_prompts)
        record["rows_dropped"] = int((~keep).sum())
        excluded = dict(notes.get("excluded", {}))
        excluded["subsample"] = [*excluded.get("subsample", []), record]
        return {**notes, "excluded": excluded}

    def scored_models(self) -> tuple[str, ...]:
        """The models with at least one score."""
        counts = np.bincount(self.model_code, minlength=self.n_models)
        return tuple(m for m, c in zip(self.models, counts) if c > 0)

    @staticmethod
    def _code(labels: tuple[str, ...], label: str, what: str) -> int:
        try:
            return labels.index(str(label))
        except ValueError:
            raise ValueError(f"unknown {what} {label!r}") from None

    # ------------------------------------------------------------------ aggregation
    def observation_matrix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observations x models matrix (NaN = not scored).

        Returns ``(matrix, obs_item, obs_prompt)``: an observation is an (item, prompt) pair,
        ``obs_item`` and ``obs_prompt`` give its item and prompt codes (prompt 0 when there is no
        prompt column). Observations are in (item, prompt) order.
        """
        n_prompts = 1 if self.prompts is None else len(self.prompts)
        prompt_code = 0 if self.prompt_code is None else self.prompt_code
        obs_key = self.item_code.astype(np.int64) * n_prompts + prompt_code
        present = np.zeros(self.n_items * n_prompts, dtype=bool)
        present[obs_key] = True
        keys = np.flatnonzero(present)
        obs_index = (np.cumsum(present) - 1)[obs_key]
        matrix = np.full((len(keys), self.n_models), np.nan)
        matrix[obs_index, self.model_code] = self.score
        return matrix, keys // n_prompts, keys % n_prompts

    def units(self, unit: str = "item", missing: str = "complete") -> UnitScores:
        """Aggregate to a units x models matrix (see the module docstring for the units).

        Parameters
        ----------
        unit : {"observation", "item", "cluster", "prompt"}
        missing : {"complete", "pairwise"}
            ``"complete"`` keeps only the observations (item, prompt) scored by every model, so each
            unit averages the same observations for every model; what is dropped is counted in
            ``excluded``. ``"pairwise"`` keeps everything: a model's unit score averages the
            observations it has in that unit, and each pair of models is later compared on the
            units both have.
        """
        cached = self._units.get((unit, missing))
        if cached is not None:
            return cached
        check_choice("unit", unit, UNITS)
        check_choice("missing", missing, MISSING)
        result = self._aggregate(unit, missing)
        for array in (result.values, result.unit_cluster):
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
        self._units[(unit, missing)] = result
        return result

    def _aggregate(self, unit: str, missing: str) -> UnitScores:
        """:meth:`units`, computed (uncached)."""
        if unit == "cluster" and self.clusters is None:
            raise ValueError("unit='cluster' needs a cluster column (for example subject or task)")
        if unit == "prompt" and self.prompts is None:
            raise ValueError("unit='prompt' needs a prompt column (prompt variant or template)")

        matrix, obs_item, obs_prompt = self.observation_matrix()
        scored = np.isfinite(matrix)
        unscored = np.flatnonzero(~scored.any(axis=0))
        if unscored.size:
            raise InsufficientDataError(
                f"model {self.models[unscored[0]]!r} has no scores in this selection"
            )
        missing_by_model = (~scored).sum(axis=0)
        excluded: dict = {
            "missing": missing,
            "observations": int(matrix.shape[0]),
            "observations_excluded": 0,
            "rows_excluded": 0,
            "missing_cells_by_model": {
                m: int(c) for m, c in zip(self.models, missing_by_model) if c > 0
            },
        }
        # what was excluded when the table was read (PROMPT_RULE), so every result says so
        for key, value in self.notes.get("excluded", {}).items():
            excluded[key] = dict(value) if isinstance(value, dict) else value
        if missing == "complete":
            complete = scored.all(axis=1)
            if not complete.all():
                excluded["observations_excluded"] = int((~complete).sum())
                excluded["rows_excluded"] = int(scored[~complete].sum())
                excluded["reason"] = "observations (item, prompt) not scored by every model"
                matrix, obs_item, obs_prompt = (
                    matrix[complete],
                    obs_item[complete],
                    obs_prompt[complete],
                )
            if matrix.shape[0] == 0:
                raise InsufficientDataError(
                    "no item is scored by every model, so missing='complete' leaves nothing; "
                    "use missing='pairwise' or drop the models with few scores"
                )
        else:
            excluded["reason"] = "none; each pair uses the units scored for both models"

        nested = self.item_cluster is not None
        unit_cluster = None
        if unit == "observation":
            unit_of_obs = np.arange(matrix.shape[0])
            labels = self._observation_labels(obs_item, obs_prompt)
            unit_cluster = self.item_cluster[obs_item] if nested else None
        elif unit == "item":
            unit_of_obs, item_codes = _compact(obs_item)
            if item_codes.size == len(self.items):  # every item: the codes are 0..n-1
                labels = self.items
            else:
                labels = tuple(map(self.items.__getitem__, item_codes.tolist()))
            unit_cluster = self.item_cluster[item_codes] if nested else None
        elif unit == "cluster":
            unit_of_obs, cluster_codes = _compact(self.item_cluster[obs_item])
            labels = tuple(self.clusters[c] for c in cluster_codes)
            unit_cluster = cluster_codes
            empty = sorted(set(self.clusters) - set(labels))
            if empty:
                excluded["clusters_excluded"] = empty
                excluded["clusters_excluded_reason"] = "no observation left in the cluster"
        else:
            unit_of_obs, prompt_codes = _compact(obs_prompt)
            labels = tuple(self.prompts[p] for p in prompt_codes)

        values = _mean_by_unit(matrix, unit_of_obs, len(labels))
        finite = values[np.isfinite(values)]
        binary = bool(np.all((finite == 0) | (finite == 1)))
        cluster = None
        if self.clusters is not None and len(self.clusters) == 1:
            cluster = self.clusters[0]
        return UnitScores(
            values=values,
            models=self.models,
            labels=labels,
            unit=unit,
            missing=missing,
            excluded=excluded,
            binary=binary,
            cluster=cluster,
            unit_cluster=unit_cluster,
        )

    def _observation_labels(self, obs_item: np.ndarray, obs_prompt: np.ndarray) -> tuple:
        if self.prompts is None:
            return tuple(self.items[i] for i in obs_item)
        return tuple(f"{self.items[i]}|{self.prompts[p]}" for i, p in zip(obs_item, obs_prompt))


# ---------------------------------------------------------------------- helpers
def _subset_trials(scores: Scores, model_codes: np.ndarray, keep: np.ndarray):
    """The trial rows of the cells a subset keeps (None without trials)."""
    if scores.trials is None:
        return None
    frame = scores.trials.frame
    kept = pd.DataFrame(
        {
            "model": np.asarray(scores.models, dtype=object)[scores.model_code[keep]],
            "item": np.asarray(scores.items, dtype=object)[scores.item_code[keep]],
        }
    )
    keys = ["model", "item"]
    if scores.prompt_code is not None:
        kept["prompt"] = np.asarray(scores.prompts, dtype=object)[scores.prompt_code[keep]]
        keys.append("prompt")
    rows = frame.merge(kept, on=keys, how="inner")[frame.columns]
    return dataclasses.replace(scores.trials, frame=rows.reset_index(drop=True))


_DECIMAL_COMMA = re.compile(r"[+-]?(\d+,\d*|,\d+)")


def _labels(values: object, name: str) -> list[str]:
    """A non-empty list of labels (a single string is one label, not its characters)."""
    listed = [values] if isinstance(values, str) else list(values)
    if not listed:
        raise ValueError(f"{name} is empty; give at least one label")
    return [str(v) for v in listed]


def _default_labels(prefix: str, n: int) -> list[str]:
    width = len(str(max(n - 1, 0)))
    return [f"{prefix}{k:0{width}d}" for k in range(n)]


def _compact(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber codes 0..k-1 in sorted order; returns (new codes, the original code of each)."""
    uniques, inverse = np.unique(codes, return_inverse=True)
    return inverse, uniques


def _mean_by_unit(matrix: np.ndarray, unit_of_obs: np.ndarray, n_units: int) -> np.ndarray:
    """Mean of each model's scored observations within each unit (NaN where it has none)."""
    if n_units == matrix.shape[0] and np.array_equal(unit_of_obs, np.arange(n_units)):
        return matrix.copy()
    scored = np.isfinite(matrix)
    rows, cols = np.nonzero(scored)
    n_models = matrix.shape[1]
    key = unit_of_obs[rows] * n_models + cols
    sums = np.bincount(key, weights=matrix[rows, cols], minlength=n_units * n_models)
    counts = np.bincount(key, minlength=n_units * n_models)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means.reshape(n_units, n_models)


def row_place(lines: Sequence[int] | None = None) -> Callable[[int], str]:
    """How a message names row r of a table: ``line L`` (its 1-based line in the file it was
    read from, ``lines[r]``) or, without ``lines``, ``row r`` (its position, from 0).

    Examples
    --------
    >>> row_place()(0), row_place([2, 3, 5])(2)
    ('row 0', 'line 5')
    """
    if lines is None:
        return lambda row: f"row {row}"
    return lambda row: f"line {int(lines[row])}"


_BY_ROW = row_place()  # the default of the validators: "row r"


def _factorize(
    column: pd.Series,
    name: str,
    role: str | None = None,
    place: Callable[[int], str] = _BY_ROW,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer codes and sorted string labels of a label column; empty labels are an error.

    Labels are text, exactly as written: a value that is not already a string is converted with
    ``str()`` (an integer 7 is ``"7"``; a float column warns, since ``7.0`` reads as ``"7.0"``).
    Labels that differ only by surrounding whitespace are an error naming both; labels of models,
    clusters and prompts that differ only by case get a warning (item ids may differ by case on
    purpose, as hashes do).
    """
    null = column.isna().to_numpy()
    if null.any():
        row = int(np.flatnonzero(null)[0])
        raise ValueError(f"column {name!r} is empty at {place(row)}; every row needs a {name}")
    codes, uniques = pd.factorize(column, sort=False)
    floats = [u for u in uniques if isinstance(u, (float, np.floating))]
    if floats:
        warnings.warn(
            f"the {role or name} column {name!r} holds floating-point numbers, read as text with "
            f"str() ({floats[0]!r} is {str(floats[0])!r}); identifiers are text: write them as "
            "strings (or integers) to keep them exactly as written",
            RankciWarning,
            stacklevel=4,
        )
    labels = np.asarray([str(u) for u in uniques], dtype=object)
    blank = np.flatnonzero([lab.strip() == "" for lab in labels])
    if blank.size:
        row = int(np.flatnonzero(codes == blank[0])[0])
        raise ValueError(f"column {name!r} is blank at {place(row)}; every row needs a {name}")
    sorted_labels, remap = np.unique(labels, return_inverse=True)
    result = tuple(str(s) for s in sorted_labels)
    if role is not None:
        check_spellings(result, role, f"the {role} column {name!r}")
    return remap.astype(np.int32)[codes], result


def check_spellings(labels: Sequence[str], role: str, where: str) -> None:
    """Refuse labels that differ only by surrounding whitespace; warn when only case differs.

    ``where`` names the place in the messages ("the model column 'model'").
    """
    seen: dict[str, str] = {}
    for label in labels:
        key = label.strip()
        if key in seen and seen[key] != label:
            raise ValueError(
                f"{where} has two spellings of one {role} that differ only "
                f"by surrounding whitespace: {seen[key]!r} and {label!r}; remove the spaces so "
                f"that each {role} has one name"
            )
        seen.setdefault(key, label)
    if role == "item":
        return
    folded: dict[str, str] = {}
    for label in labels:
        key = label.casefold()
        if key in folded and folded[key] != label:
            warnings.warn(
                f"{where} has {role} names that differ only by case: "
                f"{folded[key]!r} and {label!r}; they are read as two different {role}s",
                RankciWarning,
                stacklevel=4,
            )
            return
        folded.setdefault(key, label)


def _shared_prompts(
    model_code: np.ndarray, prompt_code: np.ndarray, n_models: int, n_prompts: int
) -> np.ndarray:
    """Rows kept by :data:`PROMPT_RULE`: their prompt variant is one that every model has."""
    pairs = np.unique(prompt_code.astype(np.int64) * n_models + model_code)
    prompt_models = np.bincount(pairs // n_models, minlength=n_prompts)
    return prompt_models[prompt_code] == n_models


def scores_from_codes(*, notes: dict, prompt: str | None = None, **fields) -> Scores:
    """Scores from validated codes: the last step of :meth:`Scores.from_frame`, shared with the
    readers that factorise a file themselves (:mod:`rankci.io`). With prompt variants, the rows
    of a variant some model lacks are left out (:data:`PROMPT_RULE`) and counted in
    ``notes["excluded"]["inconsistent_prompts"]``; a model left with no rows is an error naming
    the ``prompt`` column.

    Examples
    --------
    >>> codes = dict(models=("a", "b"), items=("q",), clusters=None, item_cluster=None)
    >>> s = scores_from_codes(notes={}, prompt="prompt", prompts=("p0", "p1"), **codes,
    ...     model_code=np.array([0, 1, 0], dtype=np.int32), item_code=np.zeros(3, np.int32),
    ...     prompt_code=np.array([0, 0, 1], dtype=np.int32), score=np.array([1.0, 0.0, 1.0]))
    >>> s.prompts, s.score.tolist(), s.notes["excluded"]["inconsistent_prompts"]["rows"]
    (('p0',), [1.0, 0.0], 1)
    """
    if fields["prompt_code"] is not None:
        fields = _keep_shared_prompts(fields, notes, prompt)
    return Scores(**fields, notes=notes)


def _keep_shared_prompts(fields: dict, notes: dict, prompt: str | None) -> dict:
    """The fields of Scores without the rows of prompt variants some model lacks
    (:data:`PROMPT_RULE`); what was left out is recorded in ``notes`` (changed in place)."""
    models, prompts = fields["models"], fields["prompts"]
    model_code, item_code, prompt_code = (
        fields[k] for k in ("model_code", "item_code", "prompt_code")
    )
    keep = _shared_prompts(model_code, prompt_code, len(models), len(prompts))
    if keep.all():
        return fields
    notes.setdefault("excluded", {})["inconsistent_prompts"] = _prompt_record(
        keep, model_code, item_code, prompt_code, models, prompts
    )
    lost = sorted(set(range(len(models))) - set(np.unique(model_code[keep])))
    if lost:
        raise ValueError(
            f"model {models[lost[0]]!r} has only prompt variants that some other model "
            f"lacks; rankci keeps the variants every model has, so none of "
            f"{models[lost[0]]!r}'s scores is left; check the {prompt!r} column"
        )
    fields = dict(fields, model_code=model_code[keep], score=fields["score"][keep])
    item_code, kept_items = _compact(item_code[keep])
    fields["items"] = tuple(fields["items"][i] for i in kept_items)
    prompt_code, kept_prompts = _compact(prompt_code[keep])
    fields["prompts"] = tuple(prompts[p] for p in kept_prompts)
    if fields["item_cluster"] is not None:
        item_cluster, kept_clusters = _compact(fields["item_cluster"][kept_items])
        fields["clusters"] = tuple(fields["clusters"][c] for c in kept_clusters)
        fields["item_cluster"] = item_cluster.astype(np.int32)
    fields["item_code"] = item_code.astype(np.int32)
    fields["prompt_code"] = prompt_code.astype(np.int32)
    return fields


def _prompt_record(
    keep: np.ndarray,
    model_code: np.ndarray,
    item_code: np.ndarray,
    prompt_code: np.ndarray,
    models: tuple[str, ...],
    prompts: tuple[str, ...],
) -> dict:
    """What :data:`PROMPT_RULE` excluded (JSON-safe counts)."""
    n_prompts = len(prompts)
    dropped = ~keep
    obs = item_code[dropped].astype(np.int64) * n_prompts + prompt_code[dropped]
    by_model = np.bincount(model_code[dropped], minlength=len(models))
    return {
        "rows": int(dropped.sum()),
        "observations": int(np.unique(obs).size),
        "variants": [prompts[p] for p in np.unique(prompt_code[dropped])],
        "rows_by_model": {m: int(c) for m, c in zip(models, by_model) if c},
        "reason": PROMPT_RULE,
    }


def _numeric_scores(
    frame: pd.DataFrame,
    score: str,
    model: str,
    item: str,
    bounds: tuple[float, float] | None,
    place: Callable[[int], str] = _BY_ROW,
) -> np.ndarray:
    raw = frame[score]

    def where(row: int) -> str:
        who, what = str(frame[model].iloc[row]), str(frame[item].iloc[row])
        return f"{place(row)} (model {who!r}, item {what!r})"

    if pd.api.types.is_bool_dtype(raw):
        values = raw.astype(float).to_numpy()
    else:
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        row = int(bad[0])
        original = raw.iloc[row]
        if pd.isna(original):
            raise ValueError(
                f"score column {score!r} has no value at {where(row)}; a cell that was not "
                "scored should be left out of the table, not given an empty score"
            )
        hint = ""
        if isinstance(original, str) and _DECIMAL_COMMA.fullmatch(original.strip()):
            hint = (
                "; it looks like a decimal comma: write decimals with a point (0.5), or separate "
                "the fields with ';' (rankci reads decimal commas in ';'-separated files)"
            )
        raise ValueError(
            f"score column {score!r} is not numeric at {where(row)}: {original!r}{hint}"
        )
    infinite = np.flatnonzero(~np.isfinite(values))
    if infinite.size:
        row = int(infinite[0])
        raise ValueError(f"score column {score!r} is not finite at {where(row)}: {values[row]}")
    if bounds is not None:
        lo, hi = bounds
        outside = np.flatnonzero((values < lo) | (values > hi))
        if outside.size:
            row = int(outside[0])
            raise ValueError(
                f"score column {score!r} is outside [{lo:g}, {hi:g}] at {where(row)}: "
                f"{values[row]:g} ({outside.size} such rows); rescale the scores to [0, 1], "
                "or pass bounds=(low, high) with the scores' range (bounds=None: any finite "
                "score); the anytime-valid monitor needs [0, 1]"
            )
    return values


def scan_range(x: np.ndarray) -> tuple[bool, float | None, float | None]:
    """``(complete, lo, hi)``: whether every score is finite, and :func:`finite_range`, in one pass.

    Examples
    --------
    >>> scan_range(np.array([[0.5, np.nan], [2.0, -1.0]]))
    (False, -1.0, 2.0)
    >>> scan_range(np.zeros((0, 2)))
    (True, None, None)
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return True, None, None
    lo, hi = float(x.min()), float(x.max())
    if np.isfinite(lo) and np.isfinite(hi):
        return True, lo, hi
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return False, None, None
    return False, float(finite.min()), float(finite.max())


def distinct_count(key: np.ndarray, size: int) -> int:
    """How many distinct values the integer codes ``key`` (each in ``[0, size)``) take.

    One pass marking a table of ``size`` flags when ``size`` is at most a few times the number of
    codes (the usual dense key of a board), a sort otherwise; the same count either way.

    Examples
    --------
    >>> distinct_count(np.array([3, 0, 3, 1]), 4)
    3
    """
    key = np.asarray(key)
    if key.size == 0:
        return 0
    if size <= 4 * key.size + 1024:
        seen = np.zeros(size, dtype=bool)
        seen[key] = True
        return int(np.count_nonzero(seen))
    return int(np.unique(key).size)


def _refuse_duplicates(
    frame: pd.DataFrame,
    key: np.ndarray,
    model: str,
    item: str,
    prompt: str | None,
    place: Callable[[int], str] = _BY_ROW,
    size: int | None = None,
) -> None:
    if size is not None and distinct_count(key, size) == key.size:  # no key twice: one pass
        return
    order = np.argsort(key, kind="stable")
    repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
    if repeated.size == 0:
        return
    first, second = int(order[repeated[0]]), int(order[repeated[0] + 1])
    first, second = min(first, second), max(first, second)
    places = place(first).split()
    what = f"model {str(frame[model].iloc[first])!r}, item {str(frame[item].iloc[first])!r}"
    if prompt is not None:
        what += f", prompt {str(frame[prompt].iloc[first])!r}"
    raise ValueError(
        f"duplicated score for ({what}) at {places[0]}s {places[1]} and {place(second).split()[1]} "
        f"({repeated.size} duplicated rows in all); each (model, item"
        f"{', prompt' if prompt is not None else ''}) needs exactly one score"
        + ("" if prompt is not None else "; if these are prompt variants, name the prompt column")
    )


def _nest_items(
    frame: pd.DataFrame,
    item_code: np.ndarray,
    cluster_code: np.ndarray,
    items: tuple[str, ...],
    clusters: tuple[str, ...],
    item: str,
    cluster: str,
    place: Callable[[int], str] = _BY_ROW,
) -> np.ndarray:
    """Each item's cluster code; an item seen in two clusters is an error."""
    item_cluster = np.full(len(items), -1, dtype=np.int32)
    item_cluster[item_code] = cluster_code
    conflict = np.flatnonzero(item_cluster[item_code] != cluster_code)
    if conflict.size:
        row = int(conflict[0])
        i = item_code[row]
        raise ValueError(
            f"item {items[i]!r} is in two clusters ({clusters[item_cluster[i]]!r} and "
            f"{clusters[cluster_code[row]]!r}, {place(row)}); items must be nested in the "
            f"{cluster!r} column"
        )
    return item_cluster

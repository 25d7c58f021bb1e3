"""Read HELM per-instance results into :class:`rankci.Scores`.

``helm-run --suite S`` writes one directory per run, ``benchmark_output/runs/S/<run name>/``, with
``run_spec.json`` (the scenario, the adapter settings with ``adapter_spec.model``, the run groups),
``scenario_state.json`` (every request and completion) and ``per_instance_stats.json``: one entry
per (instance, train trial, perturbation) with its ``stats``, each named
``{"name": "exact_match", "split": "test", "perturbation": ...}`` and holding a ``mean``.

What rankci takes from them, and how to change it:

=========  =========================================================  ==========================
role       default                                                    override
=========  =========================================================  ==========================
model      ``adapter_spec.model`` of the run spec (``openai/gpt2``)   ``model=`` (name, mapping)
item       ``<scenario>/<instance_id>``; the scenario is the run       --
           spec's name with its scenario arguments
           (``mmlu:subject=anatomy``), without the model and
           the run expanders
cluster    the scenario (``mmlu:subject=anatomy``)                    ``cluster="benchmark"``
                                                                      (``mmlu``), ``"group"``
                                                                      (the first run group),
                                                                      None
prompt     the train trial (``trial0``, ...) when a run has several   ``perturbations=True`` adds
                                                                      the perturbation
score      the ``mean`` of stat ``exact_match``                       ``metric=`` (name or list)
=========  =========================================================  ==========================

Only the instances of one split are read per scenario: by default ``test`` when every run of
the scenario has it, else the one split its runs evaluated (HELM reports HellaSwag on ``valid``);
``split="valid"`` (``--split``) forces one split for every scenario. ``notes["split"]`` maps each
scenario to its split; the instances of other splits are counted in
``notes["other_split_instances"]``. Train trials follow ``trials=`` (``all``, ``first``,
``common``, ``mean``; ``--trials``), and a trial some model lacks is named. The
scenario keeps the run name's ``dataset=`` argument (``commonsense:dataset=hellaswag``), which
some scenarios take in the run name rather than in their arguments, so a suite holding several
datasets of one scenario reads them as different scenarios (same benchmark cluster).

Entries computed on perturbed inputs (``data_augmentation=robustness`` and the like) are left out
by default and counted in ``notes["perturbed_entries_skipped"]``; with ``perturbations=True`` each
perturbation is a prompt variant (``original``, ``mild_mix``, ``typos(prob=0.1)``: a
perturbation's settings are part of its name). Two runs of one model on the
same scenario (for example in two suites) are an error naming both directories.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rankci._base import check_choice
from rankci.adapters._common import (
    LogReader,
    ModelNames,
    Source,
    build_scores,
    check_not_lfs_pointer,
    expand_sources,
    model_namer,
    select_tasks,
    task_names,
    tasks_not_run,
    warn,
)
from rankci.data import Scores

__all__ = ["read_helm", "PREFERRED_METRICS"]

PREFERRED_METRICS = ("exact_match",)
CLUSTERS = ("scenario", "benchmark", "group")


def read_helm(
    source: Source,
    *,
    metric: str | Sequence[str] | None = None,
    model: ModelNames = None,
    cluster: str | None = "scenario",
    perturbations: bool = False,
    split: str | None = None,
    trials: str = "all",
    tasks: Sequence[str] | str | None = None,
    exclude_tasks: Sequence[str] | str | None = None,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    as_frame: bool = False,
) -> Scores | pd.DataFrame:
    """Read HELM ``per_instance_stats.json`` of several models (and scenarios) into Scores.

    Parameters
    ----------
    source : path, glob pattern, or list of them
        ``benchmark_output``, a suite directory ``benchmark_output/runs/<suite>``, run
        directories, or ``per_instance_stats.json`` files; directories are searched recursively.
    metric : str or list of str, optional
        The per-instance stat used as the score (its ``mean``); a list gives an order of
        preference. Default ``exact_match``.
    model : str, mapping or callable, optional
        Rename the models found.
    cluster : {"scenario", "benchmark", "group"} or None
    perturbations : bool, default False
        Also read the entries computed on perturbed inputs, as prompt variants.
    split : str, optional
        The split whose instances are read (HELM's ``test``, ``valid``, ...), for every scenario;
        a run with no instance of it is an error naming the splits it has. Default: per
        scenario, ``test`` when every run of it has test instances, else the one split its runs
        evaluated (HellaSwag: ``valid``), as HELM itself reports them; recorded in
        ``notes["split"]`` (scenario -> split).
    trials : {"all", "first", "common", "mean"}, default "all"
        What to do with the train trials (``--num-train-trials``, different in-context
        examples): ``all``: each trial is a prompt variant (``trial0``, ``trial1``, ...), and a
        trial that some model lacks altogether is named in a warning (the prompt-variant rule
        then leaves it out for every model); ``first``: only trial 0; ``common``: per scenario,
        the trials every model ran; ``mean``: each item's score is the mean over its trials.
        The trials set aside are counted in ``notes["trials_set_aside"]``.
    tasks, exclude_tasks : sequence of str, optional
        Read only (or leave out) these scenarios (``mmlu:subject=anatomy``) or benchmarks
        (``mmlu``); glob patterns allowed.
    bounds : (float, float) or None, default (0, 1)
    as_frame : bool, default False
        Return the long table (notes in ``.attrs["notes"]``) instead of Scores: one model's runs,
        or runs to combine later.

    Returns
    -------
    Scores
        ``notes`` records the run directories, the metric per scenario, the perturbed entries
        skipped, the instances without the metric and the items some models lack.

    References
    ----------
    Liang, P., Bommasani, R., Lee, T., et al. (2023). Holistic Evaluation of Language Models.
    Transactions on Machine Learning Research.
    HELM documentation (Stanford CRFM), https://crfm-helm.readthedocs.io/ (the
    ``benchmark_output/runs/<suite>/<run>`` directories).

    Examples
    --------
    One run directory per model, with ``run_spec.json`` and ``per_instance_stats.json``:

    >>> import json, os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> for model, values in [("openai/gpt-a", [1, 0]), ("openai/gpt-b", [1, 1])]:
    ...     name = "mmlu:subject=anatomy,model=" + model.replace("/", "_")
    ...     run = os.path.join(folder.name, name)
    ...     os.makedirs(run)
    ...     spec = {"name": name, "adapter_spec": {"model": model}, "groups": ["mmlu"],
    ...             "scenario_spec": {"args": {"subject": "anatomy"}}}
    ...     stats = [{"instance_id": f"id{i}", "train_trial_index": 0,
    ...               "stats": [{"name": {"name": "exact_match", "split": "test"}, "mean": v}]}
    ...              for i, v in enumerate(values)]
    ...     with open(os.path.join(run, "run_spec.json"), "w") as handle:
    ...         json.dump(spec, handle)
    ...     with open(os.path.join(run, "per_instance_stats.json"), "w") as handle:
    ...         json.dump(stats, handle)
    >>> scores = read_helm(folder.name, metric="exact_match")
    >>> scores.models, scores.n_items
    (('openai/gpt-a', 'openai/gpt-b'), 2)
    >>> scores.to_frame().values.tolist()[1]
    ['openai/gpt-a', 'mmlu:subject=anatomy/id1', 'mmlu:subject=anatomy', 0.0]
    >>> folder.cleanup()
    """
    if cluster is not None and cluster not in CLUSTERS and cluster not in ("", "none"):
        listed = ", ".join(repr(c) for c in CLUSTERS)
        raise ValueError(f"unknown cluster {cluster!r}; choose one of {listed}, or None")
    cluster = None if cluster in ("", "none") else cluster
    check_choice("trials", trials, TRIAL_RULES)
    runs = [_read_run_spec(d) for d in _find_runs(expand_sources(source, "HELM runs"))]
    rename = model_namer(model, sorted({r["model"] for r in runs}))
    every_run = [{**r, "model": rename(r["model"])} for r in runs]
    runs, skipped = select_tasks(runs, tasks, exclude_tasks)
    not_run = tasks_not_run(every_run, task_names(tasks))
    if not_run:
        warn(
            "HELM runs: scenarios asked for that a model never ran: "
            + "; ".join(f"{m}: {', '.join(t)}" for m, t in not_run.items())
        )
    seen: dict[tuple[str, str], Path] = {}
    for run in runs:
        run["model"] = rename(run["model"])
        key = (run["model"], run["scenario"])
        if key in seen:
            raise ValueError(
                f"model {run['model']!r} has two runs of scenario {run['scenario']!r}: "
                f"{str(seen[key])!r} and {str(run['path'])!r}; read one of them (one suite, or "
                "one run directory each)"
            )
        seen[key] = run["path"]
    for run in runs:
        run["entries"] = _load_entries(run)
        run["chosen"] = _choose_metric(metric, _offered(run["entries"]), run)
        run["splits"] = _eval_splits(run["entries"], run["chosen"])
    split_of = _choose_splits(runs, split)

    frames = []
    metric_used: dict[str, str] = {}
    perturbed_skipped: dict[str, int] = {}
    without_metric: dict[str, int] = {}
    other_split: dict[str, int] = {}
    for run in runs:
        frame, chosen, n_perturbed, n_without, n_other = _read_instances(
            run, perturbations, split_of[run["scenario"]]
        )
        scenario = run["scenario"]
        if metric_used.setdefault(scenario, chosen) != chosen:
            raise ValueError(
                f"scenario {scenario!r} offers different metrics in different runs "
                f"({metric_used[scenario]!r} and {chosen!r}); name one with metric="
            )
        label = f"{run['model']}/{scenario}"
        if n_perturbed:
            perturbed_skipped[label] = n_perturbed
        if n_without:
            without_metric[label] = n_without
        if n_other:
            other_split[label] = n_other
        frame["scenario"] = scenario
        if cluster is not None:
            frame["cluster"] = run[cluster]
        frames.append(frame)
    long = pd.concat(frames, ignore_index=True)
    long, trial_notes = _apply_trial_rule(long, trials)
    with_trials = bool((long["trial"] > 0).any())
    prompt = with_trials or perturbations
    if prompt:
        parts = []
        if with_trials:
            parts.append("trial" + long["trial"].astype(str))
        if perturbations:
            parts.append(long["perturbation"])
        label = parts[0]
        for extra in parts[1:]:
            label = label + "|" + extra
        long["prompt"] = label
    long = long.drop(columns=["trial", "perturbation", "scenario"])
    notes = {
        "source": "helm",
        "runs": [str(r["path"]) for r in runs],
        "metric": metric_used,
        "cluster": cluster,
        "perturbations": bool(perturbations),
        "split": split_of,
        "split_rule": (
            "forced (split=)"
            if split is not None
            else "test where every run of the scenario has it, else the one split evaluated"
        ),
        "trials": trials,
        **trial_notes,
    }
    if other_split:
        notes["other_split_instances"] = other_split
    if skipped:
        notes["tasks_skipped"] = skipped
    if perturbed_skipped:
        notes["perturbed_entries_skipped"] = perturbed_skipped
    if without_metric:
        notes["instances_without_metric"] = without_metric
    if not_run:
        notes["tasks_not_run"] = not_run
    return build_scores(
        long,
        cluster=cluster is not None,
        prompt=prompt,
        bounds=bounds,
        notes=notes,
        source="HELM",
        models_found=sorted({r["model"] for r in every_run}),
        as_frame=as_frame,
        reasons={
            m: "it never ran " + ", ".join(repr(t) for t in names) for m, names in not_run.items()
        },
    )


# ---------------------------------------------------------------------- files
def _find_runs(paths: list[Path]) -> list[Path]:
    runs: list[Path] = []
    for path in paths:
        if path.is_dir():
            if (path / "per_instance_stats.json").exists():
                runs.append(path)
            else:
                runs.extend(sorted(p.parent for p in path.rglob("per_instance_stats.json")))
        elif path.name == "per_instance_stats.json":
            runs.append(path.parent)
        else:
            raise ValueError(
                f"{str(path)!r} is not a HELM run: expected a directory or a "
                "per_instance_stats.json file"
            )
    if not runs:
        raise ValueError(
            "no HELM per_instance_stats.json found in "
            + ", ".join(repr(str(p)) for p in paths)
            + " (look in benchmark_output/runs/<suite>/)"
        )
    return list(dict.fromkeys(runs))


def _load_json(path: Path):
    check_not_lfs_pointer(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        raise ValueError(f"could not read {str(path)!r} as JSON: {error}") from None


def _read_run_spec(directory: Path) -> dict:
    spec_path = directory / "run_spec.json"
    if not spec_path.exists():
        raise ValueError(f"{str(directory)!r} has per_instance_stats.json but no run_spec.json")
    spec = _load_json(spec_path)
    name = str(spec.get("name") or directory.name)
    adapter = spec.get("adapter_spec") or {}
    model = adapter.get("model") or adapter.get("model_deployment")
    if not model:
        raise ValueError(f"{str(spec_path)!r} names no model (adapter_spec.model)")
    benchmark = name.split(":", 1)[0]
    args = dict((spec.get("scenario_spec") or {}).get("args") or {})
    # some scenarios (commonsense, ...) take the dataset in the run name, not in their arguments
    name_args = _name_args(name)
    if "dataset" in name_args and "dataset" not in args:
        args["dataset"] = name_args["dataset"]
    settings = ",".join(f"{k}={_plain_arg(v)}" for k, v in sorted(args.items()))
    groups = spec.get("groups") or [benchmark]
    scenario = benchmark + (f":{settings}" if settings else "")
    return {
        "task": scenario,
        "aliases": [benchmark],
        "path": directory,
        "name": name,
        "model": str(model),
        "scenario": benchmark + (f":{settings}" if settings else ""),
        "benchmark": benchmark,
        "group": str(groups[0]),
    }


def _name_args(name: str) -> dict[str, str]:
    """The ``key=value`` arguments of a run name ``scenario:key=value,...``."""
    _, _, rest = name.partition(":")
    out = {}
    for part in rest.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _plain_arg(value) -> str:
    if isinstance(value, (list, tuple)):
        return "+".join(map(str, value))
    return str(value)


# ---------------------------------------------------------------------- instances
def _load_entries(run: dict) -> list:
    path = run["path"] / "per_instance_stats.json"
    entries = _load_json(path)
    if not isinstance(entries, list):
        raise ValueError(f"{str(path)!r} is not a list of per-instance entries")
    return entries


def _offered(entries: list) -> list[str]:
    offered: list[str] = []
    for entry in entries[:50]:
        for stat in entry.get("stats") or []:
            name = (stat.get("name") or {}).get("name")
            if name and name not in offered:
                offered.append(name)
    return offered


def _eval_splits(entries: list, chosen: str) -> list[str]:
    """The splits on which the run has the stat ``chosen`` (HELM's evaluated splits)."""
    splits: dict[str, None] = {}
    for entry in entries:
        for stat in entry.get("stats") or []:
            name = stat.get("name") or {}
            if name.get("name") == chosen:
                if name.get("split") is not None:
                    splits[str(name["split"])] = None
                break
    return list(splits)


def _choose_splits(runs: list[dict], split: str | None) -> dict[str, str]:
    """The split read for each scenario: ``split`` when given; otherwise ``test`` when every
    run of the scenario has it, else the one split they all evaluated (a scenario HELM reports
    on ``valid``, such as HellaSwag). Several candidates and no test is an error."""
    by_scenario: dict[str, list[dict]] = {}
    for run in runs:
        by_scenario.setdefault(run["scenario"], []).append(run)
    out: dict[str, str] = {}
    for scenario, group in sorted(by_scenario.items()):
        if split is not None:
            out[scenario] = split
            continue
        known = [set(run["splits"]) for run in group if run["splits"]]
        if not known or all("test" in s for s in known):
            out[scenario] = "test"
            continue
        common = set.intersection(*known)
        if len(common) == 1:
            out[scenario] = common.pop()
            continue
        listed = "; ".join(
            f"{run['model']}: {', '.join(run['splits']) or 'no split named'}" for run in group
        )
        candidates = sorted(common) or sorted(set.union(*known))
        raise ValueError(
            f"scenario {scenario!r} has no test split in every run and "
            + ("several splits in common" if common else "no split that every run evaluated")
            + f" ({listed}): choose one with split={candidates[0]!r}"
        )
    return out


#: what read_helm(trials=) does with the train trials
TRIAL_RULES = ("all", "first", "common", "mean")


def _apply_trial_rule(long: pd.DataFrame, rule: str) -> tuple[pd.DataFrame, dict]:
    """The rows kept (or averaged) under the trial rule, and the notes saying what it did."""
    notes: dict = {}
    if not len(long) or not (long["trial"] > 0).any():
        return long, notes
    label = long["model"] + "/" + long["scenario"]
    if rule == "all":
        models = sorted(set(long["model"]))
        lacking = {}
        for trial in sorted(set(long["trial"])):
            having = set(long.loc[long["trial"] == trial, "model"])
            if len(having) < len(models):
                lacking[f"trial{trial}"] = [m for m in models if m not in having]
        if lacking:
            notes["trials_lacking"] = lacking
            warn(
                "HELM runs: "
                + "; ".join(
                    f"{t} is lacking from the runs of " + ", ".join(repr(m) for m in ms)
                    for t, ms in lacking.items()
                )
                + ": each trial is a prompt variant, and a variant that not every model has is "
                "left out for every model (counted in the rows excluded); trials='first' reads "
                "trial 0 only, trials='common' the trials every model ran, trials='mean' the "
                "mean over each item's trials"
            )
        return long, notes
    if rule == "mean":
        counts = long.groupby(label, sort=True)["trial"].nunique()
        keys = [c for c in ("model", "item", "perturbation", "scenario", "cluster") if c in long]
        averaged = long.groupby(keys, sort=False, as_index=False).agg(score=("score", "mean"))
        averaged["trial"] = 0
        notes["trials_averaged"] = {str(k): int(v) for k, v in counts.items()}
        if counts.nunique() > 1:
            warn(
                "HELM runs: the runs differ in their number of train trials ("
                + ", ".join(f"{k}: {v}" for k, v in counts.items())
                + "); under trials='mean' an item's score averages a different number of "
                "in-context example sets for different models"
            )
        return averaged[[*long.columns]], notes
    if rule == "first":
        keep = (long["trial"] == 0).to_numpy()
    else:  # common: per scenario, the trials every model of it ran
        models_of_scenario = long.groupby("scenario")["model"].transform("nunique")
        models_of_trial = long.groupby(["scenario", "trial"])["model"].transform("nunique")
        keep = (models_of_trial == models_of_scenario).to_numpy()
    if (~keep).any():
        dropped = long.loc[~keep]
        aside = dropped.groupby(label[~keep], sort=True)["trial"].unique()
        notes["trials_set_aside"] = {
            str(k): sorted(int(t) for t in v) for k, v in aside.items()
        }
        warn(
            f"HELM runs: trials={rule!r} sets aside {int((~keep).sum())} rows: "
            + "; ".join(
                f"trial {', '.join(map(str, v))} of {k}"
                for k, v in notes["trials_set_aside"].items()
            )
        )
    return long.loc[keep].reset_index(drop=True), notes


def _read_instances(run: dict, perturbations: bool, split: str = "test"):
    path = run["path"] / "per_instance_stats.json"
    entries, chosen = run["entries"], run["chosen"]
    items, trials, labels, values = [], [], [], []
    n_perturbed = n_without = n_other = 0
    splits: dict[str, None] = {}
    for entry in entries:
        perturbation = entry.get("perturbation")
        if perturbation and not perturbations:
            n_perturbed += 1
            continue
        value, found, entry_split = None, False, None
        for stat in entry.get("stats") or []:
            name = stat.get("name") or {}
            if name.get("name") == chosen:
                entry_split = name.get("split")
                splits[str(entry_split)] = None
                if entry_split is not None and entry_split != split:
                    break
                found = True
                if stat.get("count", 1):
                    value = stat.get("mean")
                    if value is None and stat.get("count"):
                        value = stat["sum"] / stat["count"]
                break
        if entry_split is not None and entry_split != split:
            n_other += 1
            continue
        if value is None:
            n_without += 1 if found or entry_split is None else 0
            continue
        items.append(f"{run['scenario']}/{entry['instance_id']}")
        trials.append(int(entry.get("train_trial_index", 0)))
        labels.append(_perturbation_label(perturbation))
        values.append(float(value))
    if not values and n_other:
        raise ValueError(
            f"run {run['name']!r} has no {chosen!r} stats on split {split!r}; its instances are "
            f"on split {', '.join(repr(s) for s in splits)}: choose one with split="
            f"{next(iter(splits))!r}"
        )
    frame = pd.DataFrame(
        {
            "model": run["model"],
            "item": np.asarray(items, dtype=object),
            "trial": np.asarray(trials, dtype=np.int64),
            "perturbation": np.asarray(labels, dtype=object),
            "score": np.asarray(values, dtype=float),
        }
    )
    repeated = frame.duplicated(["item", "trial", "perturbation"])
    if repeated.any():
        first = frame[repeated].iloc[0]
        raise ValueError(
            f"{str(path)!r}: instance {first['item']!r} (trial {first['trial']}, "
            f"{first['perturbation']}) appears twice"
        )
    return frame, chosen, n_perturbed, n_without, n_other


#: the fields of HELM's PerturbationDescription that do not change the perturbation
_PERTURBATION_FLAGS = frozenset({"name", "robustness", "fairness", "computed_on"})


def _perturbation_label(perturbation) -> str:
    """``original``, or the perturbation with its settings (``typos(prob=0.1)``): two strengths
    of one perturbation are different prompt variants, never paired."""
    if not perturbation:
        return "original"
    name = str(perturbation.get("name", "perturbed"))
    settings = ", ".join(
        f"{k}={v}"
        for k, v in sorted(perturbation.items())
        if k not in _PERTURBATION_FLAGS and v is not None
    )
    if settings:
        name = f"{name}({settings})"
    computed = perturbation.get("computed_on")
    return name if computed in (None, "perturbed") else f"{name}:{computed}"


def _choose_metric(metric, offered: list[str], run: dict) -> str:
    wanted = (
        list(PREFERRED_METRICS)
        if metric is None
        else ([metric] if isinstance(metric, str) else [str(m) for m in metric])
    )
    for name in wanted:
        if name in offered:
            return name
    raise ValueError(
        f"run {run['name']!r} has no per-instance stat "
        + " or ".join(repr(w) for w in wanted)
        + "; it has: "
        + ", ".join(repr(o) for o in offered)
    )


#: this module's entry in the log-reader registry (:data:`rankci.formats.LOG_READERS`)
READER = LogReader(
    format="helm",
    label="HELM",
    read=read_helm,
    takes=frozenset({"metric", "split", "trials"}),
    score_option="metric",
    benchmark_cluster="benchmark",
    names_a_log=lambda path: path.name in ("per_instance_stats.json", "run_spec.json"),
    marks_directory=lambda path: path.name == "per_instance_stats.json",
    refusals={"item": "HELM items are its instance ids; item= does not apply"},
)

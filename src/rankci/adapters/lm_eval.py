"""Read lm-evaluation-harness ``--log_samples`` output into :class:`rankci.Scores`.

``lm_eval run ... --output_path OUT --log_samples`` writes, for each model, a directory
``OUT/<model>/`` holding ``results_<date>.json`` (aggregate metrics, the model name, the groups and
their subtasks) and one ``samples_<task>_<date>.jsonl`` per task: one JSON line per document (and
filter) with ``doc_id``, ``doc``, ``doc_hash``, ``filter`` and one field per per-sample metric
(``acc``, ``acc_norm``, ``exact_match``, ...).

What rankci takes from them, and how to change it:

=========  ========================================================  ============================
role       default                                                   override
=========  ========================================================  ============================
model      ``model_name`` of the results file beside the samples     ``model=`` (name, mapping)
           (the directory name when there is none)
item       ``<task>/<doc_id>``                                       ``item="doc.id"`` (a field)
cluster    the task (subtask), e.g. ``mmlu_anatomy``                 ``cluster="group"``,
                                                                     ``"benchmark"``, ``"doc.X"``,
                                                                     ``None``
score      ``acc`` if the task has it, else ``exact_match``, else     ``metric=`` (name, list
           the task's first metric; the task's first filter           or {task: name}),
                                                                     ``filter=``
=========  ========================================================  ============================

``cluster="group"`` is the innermost group listing the task (``mmlu_stem`` for ``mmlu_anatomy``),
``cluster="benchmark"`` the outermost (``mmlu``); a task outside every group is its own cluster.
Items are matched across models by id; a document whose ``doc_hash`` differs between two models
under the same id is an error (the models were run on different data). When a directory holds
several runs of one task for one model, the latest is read and the others are listed in
``notes["superseded"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rankci.adapters._common import (
    ModelNames,
    Source,
    build_scores,
    expand_sources,
    get_field,
    model_namer,
    select_tasks,
)
from rankci.data import Scores

__all__ = ["read_lm_eval", "PREFERRED_METRICS"]

PREFERRED_METRICS = ("acc", "exact_match")
CLUSTER_CHOICES = ("task", "group", "benchmark")

_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
SAMPLES_FILE = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl?$")
RESULTS_FILE = re.compile(rf"^results_(?P<date>{_DATE})\.json$")
# fields of a sample line that are not per-sample metrics
_NOT_METRICS = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)

try:  # a faster JSON parser when one is installed; the standard library otherwise
    import orjson as _orjson

    _loads = _orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


def read_lm_eval(
    source: Source,
    *,
    metric: str | Sequence[str] | Mapping[str, str] | None = None,
    filter: str | Sequence[str] | Mapping[str, str] | None = None,
    model: ModelNames = None,
    item: str | None = None,
    cluster: str | None = "task",
    tasks: Sequence[str] | None = None,
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> Scores:
    """Read the per-sample logs of lm-evaluation-harness (``--log_samples``) for several models.

    Parameters
    ----------
    source : path, glob pattern, or list of them
        The ``--output_path`` directory (one subdirectory per model), a model's directory, single
        ``samples_*.jsonl`` / ``results_*.json`` files, or a pattern such as ``"out/*/"``.
        Directories are searched recursively.
    metric : str, list of str, or mapping task -> str, optional
        The per-sample metric used as the score; a list gives an order of preference (each task
        uses the first it has). Default: ``["acc", "exact_match"]``, then the task's first
        metric. The choice per task is recorded in ``notes["metric"]``.
    filter : str, list of str, or mapping task -> str, optional
        The filter whose results are read (``strict-match``, ``flexible-extract``, ...), chosen
        like ``metric``. Default: the task's first filter; a task with a single filter (``none``)
        always uses it.
    model : str, mapping or callable, optional
        Rename the models found (a single name when the logs hold one model).
    item : str, optional
        A field of the sample line naming the item (``"doc.id"``, ``"doc_hash"``); the default is
        the document index ``doc_id``. Ids are prefixed with the task: ``"<task>/<id>"``.
    cluster : {"task", "group", "benchmark"}, a field such as ``"doc.subject"``, or None
        Where each item's cluster comes from (see the module docstring).
    tasks : sequence of str, optional
        Read only these tasks (the others are counted in ``notes["tasks_skipped"]``).
    bounds : (float, float) or None, default (0, 1)
        Allowed score range; None for metrics outside [0, 1].

    Returns
    -------
    Scores
        With ``notes`` recording the files read, the metric and filter of every task, documents
        without a metric value, superseded runs and the items some models lack
        (``notes["missing"]``, also announced with a :class:`rankci.RankciWarning`).

    Raises
    ------
    ValueError
        No samples files found, an unknown metric or filter (naming the task and what it has),
        a metric that is not a per-sample number, a document that differs between models under
        the same id, two runs of one model and task that disagree on the model name.

    References
    ----------
    EleutherAI lm-evaluation-harness documentation, docs/interface.md (``--output_path`` and
    ``--log_samples``: the ``results_<date>.json`` and ``samples_<task>_<date>.jsonl`` files),
    https://github.com/EleutherAI/lm-evaluation-harness.

    Examples
    --------
    Two models' ``samples_*.jsonl`` files, one directory per model:

    >>> import json, os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> for model, acc in [("model-a", [1, 1, 0]), ("model-b", [0, 1, 0])]:
    ...     os.makedirs(os.path.join(folder.name, model))
    ...     name = os.path.join(folder.name, model, "samples_arc_2024-01-01T00-00-00.jsonl")
    ...     with open(name, "w") as handle:
    ...         for doc_id, value in enumerate(acc):
    ...             line = {"doc_id": doc_id, "filter": "none", "acc": value}
    ...             _ = handle.write(json.dumps(line))
    ...             _ = handle.write(chr(10))
    >>> scores = read_lm_eval(folder.name, metric="acc")
    >>> scores.models, scores.n_items
    (('model-a', 'model-b'), 3)
    >>> scores.to_frame().values.tolist()[:2]
    [['model-a', 'arc/0', 'arc', 1.0], ['model-a', 'arc/1', 'arc', 1.0]]
    >>> folder.cleanup()
    """
    files = _find_sample_files(expand_sources(source, "lm-evaluation-harness samples"))
    found_models = sorted({f["model"] for f in files})
    rename = model_namer(model, found_models)
    files, superseded = _latest_runs(files, rename)
    files, skipped_tasks = select_tasks(files, tasks)

    cluster_mode = _cluster_mode(cluster)
    frames = []
    metric_used: dict[str, str] = {}
    filter_used: dict[str, str] = {}
    no_value: dict[str, int] = {}
    for f in files:
        frame, chosen_metric, chosen_filter, n_none = _read_samples(
            f, metric, filter, item, cluster_mode
        )
        task = f["task"]
        for used, chosen in ((metric_used, chosen_metric), (filter_used, chosen_filter)):
            if used.setdefault(task, chosen) != chosen:
                raise ValueError(
                    f"task {task!r} offers different metrics or filters in different models' logs "
                    f"({used[task]!r} and {chosen!r}); name them with metric= and filter="
                )
        if n_none:
            no_value[f"{f['model']}/{task}"] = n_none
        frames.append(frame)
    long = pd.concat(frames, ignore_index=True)
    _check_same_documents(long)
    long = long.drop(columns=["doc_hash"])
    notes = {
        "source": "lm-eval",
        "files": [str(f["path"]) for f in files],
        "metric": metric_used,
        "filter": filter_used,
        "cluster": cluster if cluster is not None else None,
    }
    if no_value:
        notes["samples_without_value"] = no_value
    if superseded:
        notes["superseded"] = superseded
    if skipped_tasks:
        notes["tasks_skipped"] = skipped_tasks
    return build_scores(
        long,
        cluster=cluster_mode is not None,
        prompt=False,
        bounds=bounds,
        notes=notes,
        source="lm-evaluation-harness",
    )


# ---------------------------------------------------------------------- files
def _find_sample_files(paths: list[Path]) -> list[dict]:
    """One entry per samples file: path, task, date, directory, model name, groups."""
    sample_paths: list[Path] = []
    for path in paths:
        if path.is_dir():
            sample_paths.extend(p for p in path.rglob("samples_*.json*") if SAMPLES_FILE.match(p.name))
        elif SAMPLES_FILE.match(path.name):
            sample_paths.append(path)
        elif RESULTS_FILE.match(path.name):
            date = RESULTS_FILE.match(path.name)["date"]
            sample_paths.extend(
                p for p in path.parent.glob(f"samples_*_{date}.json*") if SAMPLES_FILE.match(p.name)
            )
        else:
            raise ValueError(
                f"{str(path)!r} is not an lm-evaluation-harness log: expected a directory, a "
                "samples_<task>_<date>.jsonl or a results_<date>.json file"
            )
    if not sample_paths:
        raise ValueError(
            "no lm-evaluation-harness samples files (samples_<task>_<date>.jsonl) found in "
            + ", ".join(repr(str(p)) for p in paths)
            + "; run lm_eval with --log_samples"
        )
    results_cache: dict[Path, dict] = {}
    files = []
    for path in sorted(set(sample_paths)):
        match = SAMPLES_FILE.match(path.name)
        info = _results_for(path.parent, match["date"], results_cache)
        files.append(
            {
                "path": path,
                "task": match["task"],
                "date": match["date"],
                "model": info["model"] or path.parent.name,
                "parents": info["parents"],
            }
        )
    return files


def _results_for(directory: Path, date: str, cache: dict) -> dict:
    """Model name and group structure from the results file of the same run (or the latest)."""
    if directory not in cache:
        runs = {}
        for p in directory.glob("results_*.json"):
            m = RESULTS_FILE.match(p.name)
            if m:
                runs[m["date"]] = p
        cache[directory] = {"runs": runs, "parsed": {}}
    entry = cache[directory]
    runs = entry["runs"]
    if not runs:
        return {"model": None, "parents": {}}
    key = date if date in runs else max(runs)
    if key not in entry["parsed"]:
        with open(runs[key], encoding="utf-8") as handle:
            try:
                results = json.load(handle)
            except json.JSONDecodeError as error:
                raise ValueError(f"could not read {str(runs[key])!r}: {error}") from error
        entry["parsed"][key] = {
            "model": _model_name(results),
            "parents": _group_parents(results.get("group_subtasks") or {}),
        }
    return entry["parsed"][key]


def _model_name(results: dict) -> str | None:
    name = results.get("model_name")
    if name:
        return str(name)
    args = (results.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
            if args.get(key):
                return str(args[key])
    if isinstance(args, str):
        for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
            hit = re.search(rf"(?:^|,){key}=([^,]+)", args)
            if hit:
                return hit.group(1)
    return None


def _group_parents(group_subtasks: dict) -> dict[str, str]:
    """child -> the group listing it."""
    parents: dict[str, str] = {}
    for group, children in group_subtasks.items():
        for child in children or []:
            parents.setdefault(str(child), str(group))
    return parents


def _latest_runs(files: list[dict], rename) -> tuple[list[dict], list[str]]:
    """Keep the latest run of each (model, task); list the superseded files."""
    for f in files:
        f["model"] = rename(f["model"])
    latest: dict[tuple[str, str], dict] = {}
    superseded: list[str] = []
    for f in sorted(files, key=lambda f: (f["date"], str(f["path"]))):
        key = (f["model"], f["task"])
        if key in latest:
            superseded.append(str(latest[key]["path"]))
        latest[key] = f
    return sorted(latest.values(), key=lambda f: (f["model"], f["task"])), superseded


# ---------------------------------------------------------------------- samples
def _cluster_mode(cluster: str | None) -> str | None:
    if cluster is None or cluster == "" or cluster == "none":
        return None
    if not isinstance(cluster, str):
        raise ValueError(f"cluster must be a string or None, got {type(cluster).__name__}")
    if cluster in CLUSTER_CHOICES or "." in cluster or cluster in ("doc", "target"):
        return cluster
    listed = ", ".join(repr(c) for c in CLUSTER_CHOICES)
    raise ValueError(
        f"unknown cluster {cluster!r}; choose one of {listed}, a field of the sample line such "
        "as 'doc.subject', or None"
    )


def _load_lines(path: Path) -> list[dict]:
    with open(path, "rb") as handle:
        data = handle.read()
    if path.suffix == ".json" and data.lstrip()[:1] == b"[":
        return json.loads(data)
    records = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(_loads(line))
        except ValueError as error:
            raise ValueError(f"{str(path)!r}, line {number}: not valid JSON ({error})") from None
    return records


def _choose(option, task: str, offered: list[str], what: str, default: Sequence[str] = ()):
    """The option for this task: a name, a list of names in order of preference, or a mapping
    task -> name; with no choice, the first of ``default`` offered, else the first offered.
    A task offering a single filter uses it whatever was asked."""
    if isinstance(option, Mapping):
        option = option.get(task)
    if option is None:
        preferred = [o for o in default if o in offered]
        return preferred[0] if preferred else offered[0]
    wanted = [option] if isinstance(option, str) else [str(o) for o in option]
    for name in wanted:
        if name in offered:
            return name
    if what == "filter" and len(offered) == 1:
        return offered[0]
    raise ValueError(
        f"task {task!r} has no {what} "
        + " or ".join(repr(w) for w in wanted)
        + "; it has: "
        + ", ".join(repr(o) for o in offered)
        + f" (give a list of {what}s in order of preference, or a mapping task -> {what})"
    )


def _metrics_of(record: dict) -> list[str]:
    listed = record.get("metrics")
    if isinstance(listed, list) and listed:
        return [str(m) for m in listed]
    return [k for k in record if k not in _NOT_METRICS]


def _read_samples(f: dict, metric, filter, item: str | None, cluster_mode: str | None):
    path, task = f["path"], f["task"]
    records = _load_lines(path)
    if not records:
        raise ValueError(f"{str(path)!r} holds no samples")
    filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in records))
    chosen_filter = _choose(filter, task, filters, "filter")
    records = [r for r in records if str(r.get("filter", "none")) == chosen_filter]
    offered = _metrics_of(records[0])
    chosen_metric = _choose(metric, task, offered, "metric", PREFERRED_METRICS)

    values = np.empty(len(records))
    keep = np.ones(len(records), dtype=bool)
    ids, hashes, clusters = [], [], []
    parents = f["parents"]
    for k, r in enumerate(records):
        value = r.get(chosen_metric)
        if value is None:
            keep[k] = False
            values[k] = np.nan
        elif isinstance(value, bool) or isinstance(value, (int, float)):
            values[k] = float(value)
        else:
            raise ValueError(
                f"{str(path)!r}, doc_id {r.get('doc_id')!r}: metric {chosen_metric!r} of task "
                f"{task!r} is {type(value).__name__} {str(value)[:60]!r}, not a number; it is "
                "aggregated over the whole corpus (bleu, f1, ...), so it has no per-item score"
            )
        ids.append(_item_id(r, item, path))
        hashes.append(r.get("doc_hash"))
        if cluster_mode is not None:
            clusters.append(_cluster_of(r, task, cluster_mode, parents, path))
    frame = pd.DataFrame(
        {
            "model": f["model"],
            "item": [f"{task}/{i}" for i in ids],
            "score": values,
            "doc_hash": hashes,
        }
    )
    if cluster_mode is not None:
        frame["cluster"] = clusters
    frame = frame[keep].reset_index(drop=True)
    duplicated = frame["item"].duplicated()
    if duplicated.any():
        first = frame["item"][duplicated].iloc[0]
        raise ValueError(
            f"{str(path)!r}: item {first!r} appears twice for filter {chosen_filter!r}; "
            "choose a unique item field with item="
        )
    return frame, chosen_metric, chosen_filter, int((~keep).sum())


def _item_id(record: dict, item: str | None, path: Path) -> str:
    if item is None:
        if "doc_id" not in record:
            raise ValueError(f"{str(path)!r}: a sample has no 'doc_id'; name the item with item=")
        return str(record["doc_id"])
    try:
        return str(get_field(record, item))
    except KeyError:
        raise ValueError(
            f"{str(path)!r}, doc_id {record.get('doc_id')!r}: no field {item!r} for the item id"
        ) from None


def _cluster_of(record: dict, task: str, mode: str, parents: dict, path: Path) -> str:
    if mode == "task":
        return task
    if mode == "group":
        return parents.get(task, task)
    if mode == "benchmark":
        top, seen = task, {task}
        while top in parents and parents[top] not in seen:
            top = parents[top]
            seen.add(top)
        return top
    try:
        return str(get_field(record, mode))
    except KeyError:
        raise ValueError(
            f"{str(path)!r}, doc_id {record.get('doc_id')!r}: no field {mode!r} for the cluster"
        ) from None


def _check_same_documents(long: pd.DataFrame) -> None:
    """The same item id must be the same document (same doc_hash) for every model."""
    hashes = long[["item", "doc_hash"]].dropna()
    if hashes.empty:
        return
    per_item = hashes.groupby("item", sort=False)["doc_hash"].nunique()
    bad = per_item[per_item > 1]
    if bad.empty:
        return
    item = bad.index[0]
    rows = long[long["item"] == item].drop_duplicates("doc_hash")
    who = ", ".join(f"{m!r}" for m in rows["model"].head(2))
    raise ValueError(
        f"item {item!r} is a different document for models {who} (doc_hash differs; "
        f"{len(bad)} such items): the models were run on different data (dataset version, "
        "--limit with shuffling, or a changed task); match items by a field with item="
    )

"""Reading time of evaluation-harness logs at realistic sizes (issue 8).

The logs are written in each harness's own format, scaled up from the real fixtures in
``tests/fixtures`` (lm-evaluation-harness 0.4.13 sample lines, HELM 0.5.16 per-instance entries)
and from an Inspect log's header and sample summary: every line or entry is a real one with its
ids and values replaced, so what is parsed has the size and nesting of the real thing.

* lm-eval: MMLU-like, 57 subtasks in one group, 14,042 documents, 4 choices; one directory per
  model with ``samples_<task>_<date>.jsonl`` (about 2 kB a line) and ``results_<date>.json``.
* Inspect: one ``.eval`` log per model, 2,000 samples x 5 epochs (header + sample summaries).
* HELM: 10 scenarios x 1,000 instances per model, one run directory per (model, scenario).

Log size is the JSON parsed (``.eval`` archives uncompressed). Each case runs in a fresh
subprocess (peak resident memory is its own); the time is the best of ``--repeats`` reads
(``rankci.adapters.read_*`` from the files to validated Scores).

Run:  python benchmarks/bench_adapters.py            (all sizes, best of 3)
      python benchmarks/bench_adapters.py --quick    (small sizes once; for CI)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

SIZES = {
    "lm-eval": [(5, 57, 14_042), (20, 57, 14_042)],
    "inspect": [(5, 1, 10_000), (20, 1, 10_000)],
    "helm": [(5, 10, 10_000), (20, 10, 10_000)],
}
QUICK = {"lm-eval": [(3, 5, 500)], "inspect": [(3, 1, 500)], "helm": [(3, 2, 500)]}


# ---------------------------------------------------------------------- writing logs
def _bernoulli(seed: int, n: int, p: float) -> list[float]:
    import numpy as np

    return (np.random.default_rng(seed).random(n) < p).astype(float).tolist()


def write_lm_eval(root: Path, models: int, tasks: int, docs: int) -> None:
    (template_path,) = (FIXTURES / "lm_eval" / "logs" / "model-a").glob("samples_toy_arith_*")
    template = json.loads(template_path.read_text().splitlines()[0])
    question = "Which of the following best describes the structure that collects urine? " * 3
    per_task = [docs // tasks + (1 if k < docs % tasks else 0) for k in range(tasks)]
    names = [f"mmlu_subject_{k:02d}" for k in range(tasks)]
    date = "2026-01-01T00-00-00.000000"
    for m in range(models):
        directory = root / f"model-{m:02d}"
        directory.mkdir(parents=True)
        results = {
            "model_name": f"org/model-{m:02d}",
            "group_subtasks": {"mmlu": names},
            "results": {},
        }
        (directory / f"results_{date}.json").write_text(json.dumps(results))
        for k, (name, n) in enumerate(zip(names, per_task)):
            correct = _bernoulli(1000 * m + k, n, 0.4 + 0.02 * m)
            lines = []
            for i in range(n):
                doc = {"question": f"{question} ({name} {i})", "choices": ["A", "B", "C", "D"]}
                doc["answer"] = i % 4
                record = dict(template)
                record["doc_id"] = i
                record["doc"] = doc
                record["arguments"] = {
                    f"gen_args_{c}": {"arg_0": doc["question"] + "\nAnswer:", "arg_1": f" {c}"}
                    for c in "ABCD"
                }
                record["doc_hash"] = hashlib.sha256(json.dumps(doc).encode()).hexdigest()
                record["acc"] = record["acc_norm"] = correct[i]
                lines.append(json.dumps(record))
            (directory / f"samples_{name}_{date}.jsonl").write_text("\n".join(lines) + "\n")


def _inspect_template() -> tuple[dict, dict]:
    """Header and one sample summary of a real Inspect log (run with the mock model)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    def outputs(messages, tools, tool_choice, config):
        out = ModelOutput.from_content(model="mock", content="yes")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    with tempfile.TemporaryDirectory() as tmp:
        task = Task(
            dataset=MemoryDataset([Sample(input="Is 2 even?", target="yes", id="s1")]),
            solver=generate(),
            scorer=match(),
            name="bench",
        )
        (log,) = eval(
            task,
            model=get_model("mockllm/m", custom_outputs=outputs),
            log_dir=tmp,
            display="none",
        )
        with zipfile.ZipFile(log.location) as archive:
            import zipfile_zstd  # noqa: F401

            header = json.loads(archive.read("header.json"))
            summary = json.loads(archive.read("summaries.json"))[0]
    return header, summary


def write_inspect(root: Path, models: int, tasks: int, samples: int) -> None:
    header, summary = _inspect_template()
    epochs = 5
    items = samples // epochs
    root.mkdir(parents=True)
    for m in range(models):
        head = json.loads(json.dumps(header))
        head["eval"]["model"] = f"mockllm/model-{m:02d}"
        head["eval"]["config"]["epochs"] = epochs
        correct = _bernoulli(m, items * epochs, 0.4 + 0.02 * m)
        entries = []
        for e in range(epochs):
            for i in range(items):
                entry = dict(summary)
                entry["id"] = f"q{i:05d}"
                entry["epoch"] = e + 1
                entry["input"] = f"Question {i}: which of these is right? " * 4
                entry["scores"] = {"match": {**summary["scores"]["match"]}}
                entry["scores"]["match"]["value"] = "C" if correct[e * items + i] else "I"
                entries.append(entry)
        path = root / f"model-{m:02d}.eval"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("header.json", json.dumps(head))
            archive.writestr("summaries.json", json.dumps(entries))


def write_helm(root: Path, models: int, scenarios: int, instances: int) -> None:
    source = next((FIXTURES / "helm" / "runs" / "toy").glob("simple_classification*strong"))
    spec = json.loads((source / "run_spec.json").read_text())
    entry = json.loads((source / "per_instance_stats.json").read_text())[0]
    per_scenario = instances // scenarios
    for m in range(models):
        for s in range(scenarios):
            name = f"bench_{s:02d}:model=org_model-{m:02d}"
            directory = root / name
            directory.mkdir(parents=True)
            run_spec = json.loads(json.dumps(spec))
            run_spec["name"] = name
            run_spec["adapter_spec"]["model"] = f"org/model-{m:02d}"
            (directory / "run_spec.json").write_text(json.dumps(run_spec, indent=2))
            correct = _bernoulli(100 * m + s, per_scenario, 0.4 + 0.02 * m)
            out = []
            for i in range(per_scenario):
                stats = [dict(stat) for stat in entry["stats"]]
                for stat in stats:
                    if stat["name"]["name"] == "exact_match":
                        stat["mean"] = stat["sum"] = stat["max"] = stat["min"] = correct[i]
                out.append({"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats})
            (directory / "per_instance_stats.json").write_text(json.dumps(out, indent=2))


WRITERS = {"lm-eval": write_lm_eval, "inspect": write_inspect, "helm": write_helm}


# ---------------------------------------------------------------------- one case
def _size(path: Path) -> int:
    """Bytes of JSON to parse: a .eval archive counts uncompressed."""
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as archive:
            return sum(info.file_size for info in archive.infolist())
    return path.stat().st_size


def _case(fmt: str, models: int, groups: int, items: int, repeats: int) -> dict:
    import resource
    import time
    import warnings

    from rankci.adapters import read_helm, read_inspect, read_lm_eval

    reader = {"lm-eval": read_lm_eval, "inspect": read_inspect, "helm": read_helm}[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "logs"
        WRITERS[fmt](root, models, groups, items)
        size = sum(_size(p) for p in root.rglob("*") if p.is_file())
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scores = reader(root)
            best = min(best, time.perf_counter() - start)
        shutil.rmtree(root)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return {
        "format": fmt,
        "models": models,
        "rows": scores.n_rows,
        "items": scores.n_items,
        "mb": size / 1e6,
        "seconds": best,
        "peak_gib": peak,
    }


def run(fmt: str, models: int, groups: int, items: int, repeats: int) -> dict:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from bench_adapters import _case;"
        "print(json.dumps(_case(sys.argv[2], *map(int, sys.argv[3:]))))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run(
        [sys.executable, "-c", code, here, fmt, str(models), str(groups), str(items), str(repeats)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", nargs="+", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    repeats = 1 if args.quick else args.repeats
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        "| format | models | items | scores | log size (MB) | read (s) | MB/s | peak memory (GiB) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for fmt in args.formats:
        for models, groups, items in sizes[fmt]:
            r = run(fmt, models, groups, items, repeats)
            print(
                f"| {fmt} | {r['models']} | {r['items']:,} | {r['rows']:,} | {r['mb']:,.0f} | "
                f"{r['seconds']:.2f} | {r['mb'] / r['seconds']:,.0f} | {r['peak_gib']:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

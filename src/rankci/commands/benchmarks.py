"""``rankci benchmarks DATA...``: rank intervals per benchmark and overall, multiplicity handled."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rankci.commands.flags import (
    add_alpha_argument,
    add_data_arguments,
    add_output_arguments,
    add_top_k_argument,
)
from rankci.commands.loading import data_format, load_data
from rankci.commands.method_flags import add_option_arguments, given_options
from rankci.commands.output import (
    command_record,
    emit,
    target_sentence,
    to_json,
    with_target,
)
from rankci.commands.tables import (
    display_frame,
    markdown_table,
    ranking_target,
    summary_lines,
    text_table,
)
from rankci.formats import LOG_FORMATS
from rankci.method import TESTS, UNITS
from rankci.registry import TEST_REGISTRY

if TYPE_CHECKING:
    from rankci.analyses.multibench import BenchmarkRankings

NAME = "benchmarks"
HELP = "rank intervals on several benchmarks and overall, with the multiplicity across them handled"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")
# the libraries' tuples, repeated so that building the parser imports no statistics
# (tests/commands/test_startup.py checks that they agree)
ACROSS = ("joint", "split", "separate")  # rankci.analyses.multibench.ACROSS
WEIGHTS = ("equal", "items")  # rankci.analyses.multibench.WEIGHTS
PROCEDURES = ("holm", "bonferroni")  # rankci.certify.holm.PROCEDURES
AGGREGATE_FLAGS = ("weighted", "win-rate", "borda", "normalised")  # aggregates.AGGREGATES
TARGETS = ("items", "benchmarks")  # rankci.analyses.aggregates.TARGETS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser, many=True)
    group = parser.add_argument_group("benchmarks")
    group.add_argument(
        "--benchmark-col",
        default="benchmark",
        help="with one table: the column naming the benchmark (default: benchmark); 'cluster' "
        "uses the clusters. Several DATA are one benchmark each (NAME=PATH names it); one log "
        "directory gives one benchmark per lm-eval top-level group, Inspect task or HELM scenario",
    )
    group.add_argument(
        "--across",
        default="joint",
        choices=ACROSS,
        help="joint: one Holm family of all tables' statements (default); split: alpha / T per "
        "table; separate: alpha per table (no joint guarantee)",
    )
    group.add_argument(
        "--weights",
        default="equal",
        choices=WEIGHTS,
        help="overall score: equal weights (mean of benchmark scores) or by number of items",
    )
    group.add_argument("--no-overall", action="store_true", help="leave out the overall table")
    group.add_argument(
        "--aggregate",
        default="weighted",
        choices=AGGREGATE_FLAGS,
        help="the overall score: weighted mean (default), HELM's mean win rate, MTEB's Borda "
        "count, or the Open LLM Leaderboard's mean of baseline-normalised scores",
    )
    group.add_argument(
        "--target",
        default="items",
        choices=TARGETS,
        help="what the overall table's inference extends to: new items on these benchmarks "
        "(default; stratified bootstrap for aggregates other than weighted) or new benchmarks "
        "(benchmarks as units)",
    )
    group.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="NAME=G",
        help="--aggregate normalised: the random-guess baseline of benchmark NAME (e.g. "
        "mmlu=0.25 for four choices; repeat per benchmark), or one G for every benchmark",
    )
    group.add_argument(
        "--baseline-col",
        metavar="C",
        help="--aggregate normalised, one table: the column holding each benchmark's baseline",
    )
    group.add_argument(
        "--draws",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap draws of an aggregate's overall table (--target items; default 2000)",
    )
    method = parser.add_argument_group("method")
    method.add_argument("--unit", default="item", choices=UNITS, help="unit of analysis")
    method.add_argument(
        "--test",
        default="auto",
        choices=TESTS,
        help="paired test (default: auto, the exact McNemar (sign) test on pairs of 0/1 units "
        "with --delta 0, the plain paired t elsewhere)",
    )
    add_alpha_argument(
        method, "the whole family's statements hold", note="--across separate: each table's"
    )
    method.add_argument("--delta", type=float, default=0.0, help="indifference margin")
    method.add_argument("--missing", default="complete", choices=("complete", "pairwise"))
    method.add_argument("--multiplicity", default="holm", choices=PROCEDURES)
    add_top_k_argument(method)
    method.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for the bootstrap and permutation tests (default 0; recorded in the output)",
    )
    add_option_arguments(method, TEST_REGISTRY, "--test")
    add_output_arguments(parser, OUTPUT_FORMATS)


def _named(entry: str) -> tuple[str | None, str]:
    from pathlib import Path

    name, sep, path = entry.partition("=")
    if sep and name and not Path(entry).exists():
        return name, path
    return None, entry


def load_benchmarks(args: argparse.Namespace):
    """The data argument of rank_benchmarks and its ``benchmark`` option."""
    from pathlib import Path

    if len(args.data) > 1:
        parts = {}
        for entry in args.data:
            name, path = _named(entry)
            name = name or Path(path.rstrip("/")).stem.split(".")[0]
            if name in parts:
                raise ValueError(f"two benchmarks are named {name!r}; name them with NAME=PATH")
            parts[name] = load_data(args, path)
        return parts, "benchmark"
    (entry,) = args.data
    fmt = data_format(args, entry)
    if fmt in LOG_FORMATS:
        from rankci.adapters import BENCHMARK_CLUSTER

        return load_data(args, entry, cluster=BENCHMARK_CLUSTER[fmt]), "cluster"
    if args.benchmark_col == "cluster":
        return load_data(args, entry), "cluster"
    from rankci.io import read_table

    table = read_table(Path(entry), fmt)
    if args.benchmark_col not in table.columns:
        columns = ", ".join(repr(str(c)) for c in table.columns)
        raise ValueError(
            f"the benchmark column {args.benchmark_col!r} is not in {entry!r} (its columns: "
            f"{columns}); name the column with --benchmark-col COLUMN, use the clusters with "
            "--benchmark-col cluster, or give one DATA per benchmark (A.csv B.csv)"
        )
    return table, args.benchmark_col


def parse_baselines(entries: list[str]) -> dict | float | None:
    """``--baseline NAME=G`` (repeated) as a mapping, or one ``--baseline G`` for all benchmarks."""
    if not entries:
        return None
    out: dict = {}
    for entry in entries:
        name, sep, value = entry.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(
                f"--baseline {entry!r}: expected NAME=G or G with G a number, e.g. mmlu=0.25"
            ) from None
        if not sep:
            if len(entries) > 1:
                raise ValueError("give one --baseline G for every benchmark, or NAME=G for each")
            return number
        if name in out:
            raise ValueError(f"--baseline gives benchmark {name!r} twice")
        out[name] = number
    return out


def _baselines_from_column(table, benchmark: str, column: str) -> dict:
    import numpy as np

    if column not in table.columns:
        raise ValueError(f"the --baseline-col column {column!r} is not in the table")
    values = table.groupby(benchmark, sort=False)[column]
    spread = values.nunique(dropna=False)
    if (spread > 1).any():
        name = str(spread.index[int(np.flatnonzero(spread.to_numpy() > 1)[0])])
        raise ValueError(
            f"--baseline-col {column!r} takes more than one value within benchmark {name!r}; "
            "a benchmark has one baseline"
        )
    return {str(name): float(value) for name, value in values.first().items()}


def _check_baselines(baselines, names) -> None:
    """Name every benchmark that lacks a valid baseline, in the command line's words."""
    import numpy as np

    if baselines is None:
        raise ValueError(
            "--aggregate normalised needs every benchmark's random-guess baseline: "
            "--baseline NAME=G for each of " + ", ".join(names) + " (e.g. 0.25 for four "
            "choices), one --baseline G for all, or --baseline-col"
        )
    if isinstance(baselines, dict):
        unknown = sorted(set(baselines) - set(names))
        if unknown:
            raise ValueError(
                f"--baseline names unknown benchmark {unknown[0]!r}; benchmarks are: "
                + ", ".join(names)
            )
        lacking = [n for n in names if n not in baselines]
        if lacking:
            raise ValueError(f"--baseline: no baseline for benchmark {lacking[0]!r}")
        items = baselines.items()
    else:
        items = [(n, baselines) for n in names]
    for name, g in items:
        if not np.isfinite(g) or g < 0 or g >= 1:
            raise ValueError(
                f"--baseline: the baseline of benchmark {name!r} is {g:g}; it must lie in [0, 1) "
                "(1 / number of choices)"
            )


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.multibench import rank_benchmarks, split_benchmarks

    options = given_options(args, TEST_REGISTRY, args.test, "--test")  # before the data
    baselines = parse_baselines(args.baseline)
    if (baselines is not None or args.baseline_col) and args.aggregate != "normalised":
        raise ValueError("--baseline and --baseline-col apply to --aggregate normalised only")
    if args.aggregate != "weighted" and args.no_overall:
        raise ValueError(f"--aggregate {args.aggregate} is the overall table: drop --no-overall")
    data, benchmark = load_benchmarks(args)
    if args.baseline_col:
        if not hasattr(data, "columns"):
            raise ValueError("--baseline-col needs one table with a benchmark column")
        baselines = _baselines_from_column(data, benchmark, args.baseline_col)
        data = data.drop(columns=[args.baseline_col])
    if args.aggregate != "weighted" or args.target != "items":
        data = split_benchmarks(data, benchmark)
        benchmark = "benchmark"
        if len(data) < 2:
            raise ValueError(
                f"--aggregate {args.aggregate} needs at least two benchmarks; got only "
                f"{next(iter(data))!r}: give two or more DATA, or a table whose --benchmark-col "
                "names two or more benchmarks"
            )
        if args.aggregate == "normalised":
            _check_baselines(baselines, list(data))
    if TEST_REGISTRY[args.test].random and "reps" not in options:
        options["reps"] = TEST_REGISTRY[args.test].option("reps").default
    try:
        result = _rank(rank_benchmarks, data, benchmark, baselines, options, args)
    except ValueError as error:  # the aggregates' keywords in the command line's words
        raise ValueError(_aggregate_flags(str(error))) from None
    emit(render(result, args.format, args.top_k, args), args)
    return 0


def _aggregate_flags(message: str) -> str:
    import re

    message = re.sub(r"\b(aggregate|target)='([\w-]+)'", r"--\1 \2", message)
    message = re.sub(r"\bpass baselines=\{name: value\}", "pass --baseline NAME=G", message)
    return re.sub(r"\bbaselines=", "--baseline", message)


def _rank(rank_benchmarks, data, benchmark, baselines, options, args):
    return rank_benchmarks(
        data,
        benchmark=benchmark,
        alpha=args.alpha,
        across=args.across,
        multiplicity=args.multiplicity,
        weights=args.weights,
        overall=not args.no_overall,
        unit=args.unit,
        test=args.test,
        delta=args.delta,
        missing=args.missing,
        rng=args.seed,
        aggregate=args.aggregate,
        target=args.target,
        baselines=baselines,
        draws=args.draws,
        **options,
    )


def render(
    result: BenchmarkRankings,
    fmt: str,
    k: int | None = None,
    args: argparse.Namespace | None = None,
) -> str:
    from rankci.analyses.multibench import OVERALL

    unit = ranking_target(next(iter(result.tables.values())))[0] if result.tables else "item"
    if result.target == "benchmarks":  # the overall table's statements are about new benchmarks
        unit = "benchmark"
    if fmt == "json":
        return to_json(command_record(with_target(result.to_dict(k), unit), args))
    if fmt == "csv":
        return result.to_frame(k).to_csv(index=False)
    table = markdown_table if fmt == "markdown" else text_table
    blocks = [table(result.wide())]
    for name, ranking in result.tables.items():
        title = f"## {name}" if fmt == "markdown" else f"{name}"
        custom = result.aggregate != "weighted" or result.target != "items"
        if name == OVERALL and custom:
            title += f" ({_aggregate_title(result, ranking)})"
        elif name == OVERALL:
            weights = ", ".join(f"{b} {w:.3g}" for b, w in result.weights.items())
            title += f" (weighted mean of the benchmark scores: {weights})"
        blocks.append(
            "\n".join([title, *summary_lines(ranking), "", table(display_frame(ranking, k))])
        )
    if result.excluded.get("models_not_in_every_benchmark"):
        left = ", ".join(result.excluded["models_not_in_every_benchmark"])
        blocks.append(f"not in the overall table (missing from some benchmark): {left}")
    blocks.append(result.guarantee + "\n" + target_sentence(unit))
    return "\n\n".join(blocks)


def _aggregate_title(result: BenchmarkRankings, ranking) -> str:
    from rankci.analyses.aggregates import TITLES

    details = ranking.details
    words = f"aggregate {result.aggregate}: {TITLES[result.aggregate]}; target {result.target}"
    if details.get("weights"):
        words += "; weights " + ", ".join(f"{b} {w:.3g}" for b, w in details["weights"].items())
    if details.get("baselines"):
        words += "; baselines " + ", ".join(f"{b} {g:g}" for b, g in details["baselines"].items())
    if details.get("missing_rule"):
        words += f"; {details['missing_rule']}"
    for key in ("zero_se_note", "nothing_certified"):
        if details.get(key):
            words += f"; {details[key]}"
    return words

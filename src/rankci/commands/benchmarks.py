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


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.multibench import rank_benchmarks

    options = given_options(args, TEST_REGISTRY, args.test, "--test")  # before the data
    data, benchmark = load_benchmarks(args)
    if TEST_REGISTRY[args.test].random and "reps" not in options:
        options["reps"] = TEST_REGISTRY[args.test].option("reps").default
    result = rank_benchmarks(
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
        **options,
    )
    emit(render(result, args.format, args.top_k, args), args)
    return 0


def render(
    result: BenchmarkRankings,
    fmt: str,
    k: int | None = None,
    args: argparse.Namespace | None = None,
) -> str:
    from rankci.analyses.multibench import OVERALL

    unit = ranking_target(next(iter(result.tables.values())))[0] if result.tables else "item"
    if fmt == "json":
        return to_json(command_record(with_target(result.to_dict(k), unit), args))
    if fmt == "csv":
        return result.to_frame(k).to_csv(index=False)
    table = markdown_table if fmt == "markdown" else text_table
    blocks = [table(result.wide())]
    for name, ranking in result.tables.items():
        title = f"## {name}" if fmt == "markdown" else f"{name}"
        if name == OVERALL:
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

"""``rankci rank DATA``: rank intervals, tiers and top-k status from paired tests + Holm."""

from __future__ import annotations

import argparse

from rankci.commands.flags import add_alpha_argument, add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.output import command_spec, emit
from rankci.commands.tables import render_clusters, render_ranking
from rankci.method import COVERAGES, MULTIPLICITIES, TESTS, UNITS
from rankci.registry import MULTIPLICITY_REGISTRY, TEST_REGISTRY

NAME = "rank"
HELP = "rank intervals, tiers and top-k status from paired tests (Holm or max-t step-down)"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_method_arguments(parser)
    add_output_arguments(parser, OUTPUT_FORMATS)


def add_method_arguments(parser: argparse.ArgumentParser) -> None:
    group = add_evidence_arguments(parser)
    group.add_argument(
        "--coverage",
        default="simultaneous",
        choices=COVERAGES,
        help="simultaneous (all statements at once) or marginal (one model at a time)",
    )
    group.add_argument(
        "--by-cluster",
        action="store_true",
        help="rank intervals within each cluster (unit item or prompt)",
    )
    group.add_argument(
        "--filter-uninformative",
        action="store_true",
        help="drop clusters where nearly all models reach the top ranks, "
        "splitting alpha 0.3/0.7 between the screen and the ranking",
    )
    group.add_argument(
        "--alpha-split",
        type=float,
        nargs=2,
        default=(0.3, 0.7),
        metavar=("FILTER", "RANK"),
        help="alpha fractions for the screen and the ranking",
    )
    group.add_argument("--top-k", type=int, metavar="K", help="also report top-K status")
    parser.add_argument(
        "--pairs",
        action="store_true",
        help="json: the certified relation as the full list of [better, worse] pairs instead of "
        "the compact per-model runs (docs/json.md); large on big boards",
    )


def add_evidence_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Options that say how the pairwise evidence is obtained (shared with ``taubest``)."""
    group = parser.add_argument_group("method")
    group.add_argument(
        "--unit",
        default="item",
        choices=UNITS,
        help="unit of analysis: what the inference extends to (default: item)",
    )
    group.add_argument("--test", default="t", choices=TESTS, help="paired test (default: t)")
    add_alpha_argument(group)
    group.add_argument(
        "--delta",
        type=float,
        default=0.0,
        help="indifference margin: certify only differences larger than this",
    )
    group.add_argument(
        "--missing",
        default="complete",
        choices=("complete", "pairwise"),
        help="items scored by every model (default) or pair by pair",
    )
    group.add_argument(
        "--multiplicity",
        default="holm",
        choices=MULTIPLICITIES,
        help="holm (default; valid under any dependence), bonferroni, or max-t "
        "(Romano-Wolf step-down with critical values from the joint law of the "
        "statistics: tighter, asymptotic; test t only)",
    )
    group.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for the bootstrap and permutation tests and the max-t draws (default 0; "
        "recorded in the output)",
    )
    add_option_arguments(group, TEST_REGISTRY, "--test")
    maxt = parser.add_argument_group("max-t (with --multiplicity max-t)")
    add_option_arguments(maxt, MULTIPLICITY_REGISTRY, "--multiplicity")
    return group


def add_option_arguments(group: argparse._ArgumentGroup, registry, choice_flag: str) -> None:
    """One flag per option of the registry's entries (:mod:`rankci.registry`).

    Every flag defaults to None (not given), so that only the options given reach the method
    specification; a bool option is a flag without a value that sets ``flag_sets``.
    """
    seen: set[str] = set()
    for entry in registry.values():
        for option in entry.options:
            if option.name in seen:
                continue
            seen.add(option.name)
            users = [e.name for e in registry.values() if option.name in e.option_names]
            where = f"{choice_flag} {', '.join(users)}"
            if option.kind == "bool":
                group.add_argument(
                    option.cli_flag,
                    dest=option.name,
                    action="store_const",
                    const=option.flag_sets,
                    default=None,
                    help=f"{option.flag_help or option.help} ({where})",
                )
                continue
            group.add_argument(
                option.cli_flag,
                dest=option.name,
                type={"int": int, "float": float}.get(option.kind, str),
                choices=option.choices or None,
                default=None,
                metavar=None if option.choices else (option.metavar or option.name.upper()),
                help=f"{option.help} ({where}; default {option.default})",
            )


def given_options(args: argparse.Namespace, registry, chosen: str, choice_flag: str) -> dict:
    """The options of entry ``chosen`` given on the command line, each checked (errors name
    the flag: ``--trim must be in [0, 0.5), got 0.9``).

    A flag of another entry of the registry is an error too: it would have no effect.
    """
    entry = registry[chosen]
    given = {}
    for other in registry.values():
        for option in other.options:
            value = getattr(args, option.name, None)
            if value is None or option.name in given:
                continue
            value = option.check(value, name=option.cli_flag)
            if option.name not in entry.option_names:
                users = [e.name for e in registry.values() if option.name in e.option_names]
                raise ValueError(
                    f"{option.cli_flag} is an option of {choice_flag} {' or '.join(users)}; this "
                    f"run uses {choice_flag} {entry.name}"
                )
            given[option.name] = value
    return given


def test_options(args: argparse.Namespace) -> dict:
    """The options of the test and of the multiplicity procedure given on the command line.

    Read from the registries; a bad value is an error naming the flag (``--trim must be in
    [0, 0.5), got 0.9``).
    """
    options = given_options(args, TEST_REGISTRY, args.test, "--test")
    options.update(given_options(args, MULTIPLICITY_REGISTRY, args.multiplicity, "--multiplicity"))
    return options


def method_options(args: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`rankci.rank` from the method options."""
    return dict(
        unit=args.unit,
        test=args.test,
        coverage=args.coverage,
        alpha=args.alpha,
        delta=args.delta,
        missing=args.missing,
        multiplicity=args.multiplicity,
        rng=args.seed,
        **test_options(args),
    )


def command_record(payload: dict, args: argparse.Namespace) -> dict:
    """A result's JSON with ``"spec"`` recording the command's own options as well.

    For the commands whose result carries a :class:`~rankci.method.MethodSpec` beside options of
    their own (benchmarks, check, plan): ``"spec"`` is the command's options, as for the
    commands without a MethodSpec, and its ``"method"`` is the result's MethodSpec
    (``MethodSpec.from_dict(payload["spec"]["method"])`` reads it back).
    """

    method = payload.get("spec")
    record = {"command": getattr(args, "command", None), **command_spec(args), "method": method}
    return {**payload, "spec": record}


def run(args: argparse.Namespace) -> int:
    from rankci.leaderboard import rank, rank_by_cluster

    common = method_options(args)  # a bad option fails before the data are read
    scores = load_data(args)
    if args.by_cluster:
        result = rank_by_cluster(scores, **common)
        emit(render_clusters(result, args.format, args.top_k, pairs=args.pairs), args)
    else:
        result = rank(
            scores,
            filter_uninformative=args.filter_uninformative,
            alpha_split=tuple(args.alpha_split),
            **common,
        )
        emit(render_ranking(result, args.format, args.top_k, pairs=args.pairs), args)
    return 0

"""The method's flags: unit, test, multiplicity and their options, generated from the registry.

``rankci rank`` takes all of them (:func:`add_method_arguments`); ``taubest``, ``report``,
``benchmarks`` and ``check`` take the parts they use. Every option flag is built from its
:class:`rankci.registry.Option` (name, type, choices, help), so a test or procedure added to the
registry gets its flags here with no change; a bad value is an error naming the flag before the
data are read (:func:`given_options`). Nothing here imports numpy.
"""

from __future__ import annotations

import argparse

from rankci.commands.flags import add_alpha_argument, add_top_k_argument
from rankci.method import COVERAGES, MULTIPLICITIES, TESTS, UNITS
from rankci.registry import MULTIPLICITY_REGISTRY, TEST_REGISTRY

__all__ = [
    "add_evidence_arguments",
    "add_method_arguments",
    "add_option_arguments",
    "given_options",
    "method_options",
    "test_options",
]


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
    add_top_k_argument(group)
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
    group.add_argument(
        "--test",
        default="auto",
        choices=TESTS,
        help="paired test (default: auto, the exact McNemar (sign) test on pairs of 0/1 units "
        "with --delta 0, the plain paired t elsewhere)",
    )
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
                named = " or ".join([", ".join(users[:-1]), users[-1]] if users[:-1] else users)
                raise ValueError(
                    f"{option.cli_flag} is an option of {choice_flag} {named}; this "
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

"""``rankci check DATA --claim ...``: claims as CI checks, decided together at level alpha.

Exit status: 0 when every claim is supported, 1 when some claim is not (contradicted or not
decided), 2 when the input is unusable (a bad claim, an unknown model, unreadable data).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from rankci.commands.flags import add_alpha_argument, add_data_arguments, add_output_arguments
from rankci.commands.loading import VoteTableError, load_data
from rankci.commands.messages import early_stopping_note
from rankci.commands.method_flags import add_option_arguments, given_options
from rankci.commands.output import command_record, emit, target_sentence, to_json, with_target
from rankci.commands.tables import markdown_table
from rankci.commands.votes_rank import add_vote_arguments
from rankci.formats import LOG_FORMATS
from rankci.registry import TEST_REGISTRY

if TYPE_CHECKING:
    from rankci.analyses.claims import ClaimCheck
    from rankci.data import Scores

NAME = "check"
HELP = (
    "decide claims (A > B, A >= B - 0.01, A in top 3, A is best, A ~ B within 0.02) or a new run "
    "against a baseline, all at once at level alpha; exit 0 when every claim is supported"
)
OUTPUT_FORMATS = ("text", "markdown", "junit", "json")
#: the labels the two runs' models get in --baseline mode
SIDES = ("new", "baseline")
#: the tests of a check (one-sided paired tests with margins of either sign), from the registry;
#: their option --exact-bound-n (the opt-in exact floor) comes with them
TESTS = {name: TEST_REGISTRY[name] for name in ("auto", "t", "z")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    group = parser.add_argument_group("claims")
    group.add_argument(
        "--claim",
        action="append",
        metavar="CLAIM",
        help='a claim, repeatable: "A > B", "A > B + 0.01", "A >= B - 0.01" (non-inferiority), '
        '"A in top 3", "A is best", "A ~ B within 0.02" (equivalence, TOST); quote model names '
        "with blanks or symbols: \"'gpt-4o [dir]' > llama\" (docs/check.md)",
    )
    group.add_argument(
        "--baseline",
        metavar="OTHER_DATA",
        help="a baseline run of the same items (a score file or harness logs, read like DATA): "
        "every task of DATA is tested against it, paired, Holm across tasks; models are named "
        "'NAME (new)' and 'NAME (baseline)' in claims",
    )
    group.add_argument(
        "--margin",
        type=float,
        default=0.0,
        help="--baseline: 0 (default) tests superiority, new better than baseline on each task; "
        "M > 0 tests non-inferiority, new not worse than baseline by M or more",
    )
    method = parser.add_argument_group("method")
    add_alpha_argument(
        method, "every supported claim is true and every contradicted claim false, jointly,"
    )
    method.add_argument(
        "--unit",
        default="item",
        choices=("item", "observation", "cluster", "prompt"),
        help="unit of analysis (default: item); --baseline tests the items within each task",
    )
    method.add_argument(
        "--test",
        default="auto",
        choices=tuple(TESTS),
        help="one-sided paired test (default: auto, the exact McNemar (sign) test for claims "
        "without a margin on pairs of 0/1 units, the plain paired t elsewhere)",
    )
    add_option_arguments(method, TESTS, "--test")
    method.add_argument(
        "--missing",
        default="complete",
        choices=("complete", "pairwise"),
        help="items scored by every model (default) or pair by pair",
    )
    add_vote_arguments(parser, board=False)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.claims import (
        ClaimGroup,
        claims_spec,
        decide_claims,
        parse_claim,
        with_trials,
    )
    from rankci.leaderboard import apply_trials

    claims = tuple(parse_claim(text) for text in args.claim or ())  # a bad claim fails first
    keywords = dict(alpha=args.alpha, unit=args.unit, test=args.test, missing=args.missing)
    keywords.update(given_options(args, TESTS, args.test, "--test"))  # --exact-bound-n
    spec = claims_spec(None, keywords, "check")
    if args.margin < 0:
        raise ValueError(f"--margin must be >= 0 (a non-inferiority margin), got {args.margin:g}")
    groups, shared = [], None
    if args.votes and args.baseline:
        raise ValueError("--baseline compares two score runs; it does not apply with --votes")
    if args.baseline:
        if args.unit == "cluster":
            raise ValueError(
                "--baseline tests the items within each task; --unit cluster does not apply"
            )
        scores = read_runs(args)
        groups, shared = run_groups(scores, args.margin, args.unit)
    elif args.votes:
        return run_vote_claims(args, claims)
    else:
        try:
            scores = load_data(args)
        except VoteTableError as found:  # recognised as votes, as rankci rank recognises them
            return run_vote_claims(args, claims, found.layout)
    if not claims and not args.baseline:
        raise ValueError(
            "nothing to check: give --claim CLAIM (repeatable) or --baseline OTHER_DATA"
        )
    spec, scores = apply_trials(spec, scores, "check")  # the per-item rule over trials, if any
    if claims:
        groups.append(ClaimGroup(scores.units(args.unit, args.missing), claims))
    check = with_trials(decide_claims(groups, spec=spec), scores)
    stopped = scores.notes.get("early_stopped")
    emit(render(check, args.format, shared, args, early_stopped=stopped), args)
    return 0 if check.all_supported else 1


def run_vote_claims(args: argparse.Namespace, claims: tuple, layout: str = "auto") -> int:
    """The claims on a vote table: z tests of the Bradley-Terry strengths, Holm over the call
    (:func:`rankci.votes.claims.check_vote_claims`); the target is new votes like these."""
    from rankci.commands.votes_rank import load_votes, vote_cluster, vote_layout_of
    from rankci.votes.claims import check_vote_claims
    from rankci.votes.rank import VotesSpec

    if not claims:
        raise ValueError("nothing to check on votes: give --claim CLAIM (repeatable)")
    given = given_options(args, TESTS, args.test, "--test")
    scored = args.test not in ("auto", "z") or args.unit != "item" or args.missing != "complete"
    if scored or given or args.baseline:
        raise ValueError(
            "a vote table is checked by z tests of the Bradley-Terry strengths on its votes: "
            "--test, --unit, --missing, --exact-bound-n and --baseline do not apply (drop them)"
        )
    votes = load_votes(args, vote_layout_of(args, layout))
    spec = VotesSpec(
        ties=args.ties,
        position=args.position,
        covariates=tuple(args.covariates),
        covariance=args.vote_covariance,
        cluster=vote_cluster(args),
        bootstrap_reps=args.bootstrap_reps,
        multiplicity="holm",
        alpha=args.alpha,
    )
    check = check_vote_claims(votes, claims, alpha=args.alpha, spec=spec)
    emit(render(check, args.format, None, args), args)
    return 0 if check.all_supported else 1


# ---------------------------------------------------------------------- two runs
def _tag(name: str, side: str) -> str:
    return f"{name} ({side})"


def _side_frame(args: argparse.Namespace, path: str, side: str):
    """One run as a long or wide table whose model names carry the side, not yet validated."""
    import glob as globbing
    from pathlib import Path

    from rankci.commands.loading import data_format, log_options
    from rankci.io import ALIASES, read_table_text

    text = os.fspath(path)
    if not globbing.has_magic(text) and not os.path.exists(text):
        raise FileNotFoundError(f"no such file or directory: {text!r}")
    fmt = data_format(args, path)
    if fmt in LOG_FORMATS:
        from rankci.adapters import read_log

        frame = read_log(
            fmt,
            path,
            item=args.item_col,
            cluster=args.cluster_col,
            as_frame=True,
            **log_options(args),
        )
        frame = frame.assign(model=[_tag(str(m), side) for m in frame["model"]])
        return "logs", frame
    frame, _ = read_table_text(Path(path), fmt)
    frame.columns = [str(c) for c in frame.columns]
    lowered = {c.lower(): c for c in frame.columns}
    model = args.model_col or next((lowered[a] for a in ALIASES["model"] if a in lowered), None)
    if model is not None and args.layout != "wide":
        if model not in frame.columns:
            raise ValueError(f"the model column {model!r} is not in {text}")
        return "table", frame.assign(**{model: [_tag(str(m), side) for m in frame[model]]})
    ids = {args.item_col, args.cluster_col, args.prompt_col}
    ids |= {
        lowered[a] for role in ("item", "cluster", "prompt") for a in ALIASES[role] if a in lowered
    }
    return "table", frame.rename(columns={c: _tag(c, side) for c in frame.columns if c not in ids})


def read_runs(args: argparse.Namespace) -> Scores:
    """DATA (the new run) and OTHER_DATA (the baseline) as one Scores, models tagged by run."""
    import pandas as pd

    from rankci.commands.loading import reading_summary
    from rankci.data import Scores
    from rankci.io import read_scores

    (kind_new, new), (kind_old, old) = (
        _side_frame(args, path, side) for path, side in zip((args.data, args.baseline), SIDES)
    )
    if kind_new != kind_old:
        raise ValueError(
            f"DATA is {kind_new} but --baseline is {kind_old}: give two score "
            "files or two harness log directories"
        )
    both = pd.concat([new, old], ignore_index=True)
    if kind_new == "logs":
        notes = dict(new.attrs.get("notes", {}))
        stopped = {  # either run may come from logs written under early stopping
            f"{key} ({side})": record
            for side, frame in zip(SIDES, (new, old))
            for key, record in (frame.attrs.get("notes", {}).get("early_stopped") or {}).items()
        }
        notes.pop("early_stopped", None)
        if stopped:
            notes["early_stopped"] = stopped
        scores = Scores.from_frame(
            both,
            cluster="cluster" if "cluster" in both else None,
            prompt="prompt" if "prompt" in both else None,
            notes=notes,
        )
    else:
        bounds = tuple(args.bounds) if args.bounds else (0.0, 1.0)
        bounds = None if bounds == (float("-inf"), float("inf")) else bounds
        scores = read_scores(
            both,
            model=args.model_col,
            item=args.item_col,
            score=args.score_col,
            cluster=args.cluster_col,
            prompt=args.prompt_col,
            layout=args.layout,
            bounds=bounds,
        )
    print(f"rankci: {reading_summary(scores, f'{args.data} + {args.baseline}')}", file=sys.stderr)
    return scores


def _pairs(scores: Scores) -> list[tuple[str, str]]:
    strip = {
        side: {m[: -len(side) - 3]: m for m in scores.models if m.endswith(f" ({side})")}
        for side in SIDES
    }
    new, old = strip["new"], strip["baseline"]
    if set(new) == set(old):
        return [(new[name], old[name]) for name in sorted(new)]
    if len(new) == 1 and len(old) == 1:
        return [(next(iter(new.values())), next(iter(old.values())))]
    raise ValueError(
        f"--baseline: DATA has the models {sorted(new)} and the baseline {sorted(old)}; give one "
        "model on each side, or the same model names on both"
    )


def run_groups(scores: Scores, margin: float, unit: str) -> tuple[list, dict]:
    """One claim per (model pair, task): "new >= baseline - margin" (">" when margin is 0),
    with the items each run has and the other lacks (reported, never dropped silently)."""
    import numpy as np

    from rankci.analyses.claims import ClaimGroup, parse_claim

    tasks = scores.clusters or (None,)
    item_task = (
        scores.item_cluster if scores.clusters is not None else np.zeros(scores.n_items, dtype=int)
    )
    groups, shared = [], {}
    for first, second in _pairs(scores):
        have = {}
        for name in (first, second):
            have[name] = np.zeros(scores.n_items, dtype=bool)
            have[name][scores.item_code[scores.model_code == scores.models.index(name)]] = True
        for t, task in enumerate(tasks):
            in_task = item_task == t
            both = have[first] & have[second] & in_task
            only = {
                side: np.flatnonzero(have[a] & ~have[b] & in_task)
                for side, a, b in (("new", first, second), ("baseline", second, first))
            }
            label = task if task is not None else "all items"
            record = {
                "task": label,
                "items_shared": int(both.sum()),
                "only_new": int(only["new"].size),
                "only_baseline": int(only["baseline"].size),
                "only_new_examples": [scores.items[i] for i in only["new"][:5]],
                "only_baseline_examples": [scores.items[i] for i in only["baseline"][:5]],
            }
            shared[f"{first} vs {second} / {label}"] = record
            if both.sum() < 2:
                raise ValueError(
                    f"task {label!r}: {int(both.sum())} item(s) scored by both {first!r} and "
                    f"{second!r} ({record['only_new']} only in the new run, "
                    f"{record['only_baseline']} only in the baseline); a paired test needs 2 "
                    "or more: check that the two runs cover the same items (--tasks)"
                )
            part = scores.subset(models=[first, second], clusters=None if task is None else [task])
            quoted = [name.replace("\\", "\\\\").replace("'", "\\'") for name in (first, second)]
            op = f">= '{quoted[1]}' - {margin:g}" if margin > 0 else f"> '{quoted[1]}'"
            claim = parse_claim(f"'{quoted[0]}' {op}")
            groups.append(ClaimGroup(part.units(unit, "complete"), (claim,), label, record))
    return groups, shared


# ---------------------------------------------------------------------- output
def _not_shared_lines(shared: dict | None) -> list[str]:
    if not shared:
        return []
    lines = []
    for where, r in shared.items():
        if r["only_new"] or r["only_baseline"]:
            lines.append(
                f"{where}: {r['items_shared']} items shared; {r['only_new']} only in the new run"
                + (
                    f" ({', '.join(r['only_new_examples'])}{', ...' if r['only_new'] > 5 else ''})"
                    if r["only_new"]
                    else ""
                )
                + f", {r['only_baseline']} only in the baseline"
                + (
                    f" ({', '.join(r['only_baseline_examples'])}"
                    f"{', ...' if r['only_baseline'] > 5 else ''})"
                    if r["only_baseline"]
                    else ""
                )
                + "; not tested"
            )
    return lines or ["every item is in both runs"]


def _headline(check: ClaimCheck) -> str:
    n = sum(r.supported for r in check.results)
    verdict = "PASS" if check.all_supported else "FAIL"
    family = check.details.get("family", {})
    grown = family.get("rank_claim_tests") and family.get("pair_claim_tests")
    how = (
        f"Holm over {check.family_size} tests: {family['pair_claim_tests']} for the pair claims, "
        f"{family['rank_claim_tests']} for the ordered pairs the rank claims read"
        if grown
        else f"Holm over {check.family_size} tests"
    )
    return (
        f"rankci check {verdict}: {n} of {len(check.results)} claims supported "
        f"(alpha = {check.alpha:g}, {how})"
    )


def render(
    check: ClaimCheck,
    fmt: str,
    shared: dict | None,
    args: argparse.Namespace,
    early_stopped: dict | None = None,
) -> str:
    """The command's output; ``early_stopped`` (``Scores.notes["early_stopped"]``) flags
    adaptively stopped data: a line in the text, markdown and JUnit output, a JSON key."""
    note = early_stopping_note(early_stopped)
    if fmt == "json":
        payload = with_target(check.to_dict(), check.unit)
        if shared is not None:
            payload["baseline"] = {"source": args.baseline, "margin": args.margin, "tasks": shared}
        if early_stopped:
            from rankci._base import jsonable

            payload["early_stopped"] = jsonable(early_stopped)
        return to_json(command_record(payload, args))
    if fmt == "junit":
        return junit_xml(check, shared, note)
    missing = _not_shared_lines(shared)
    if fmt == "markdown":
        frame = check.to_frame()
        frame["claim"] = [f"`{text}`" for text in frame["claim"]]
        frame["result"] = [f"**{r}**" if r != "supported" else r for r in frame["result"]]
        parts = [
            f"### {_headline(check)}",
            markdown_table(frame),
            f"_{check.guarantee}_ {target_sentence(check.unit)}",
        ]
        if note:
            parts.insert(1, f"**{note}**")
        if missing:
            parts.append(
                "**Items not shared by the two runs:**\n\n"
                + "\n".join(f"- {line}" for line in missing)
            )
        return "\n\n".join(parts)
    lines = [_headline(check), *([note] if note else []), ""]
    for r in check.results:
        where = f" [{r.group}]" if r.group else ""
        lines += [f"{r.result:<13} {r.claim.text}{where}", f"{'':13} {r.evidence}"]
    lines += ["", check.guarantee, target_sentence(check.unit)]
    if missing:
        lines += ["", "items not shared by the two runs:", *(f"  {line}" for line in missing)]
    return "\n".join(lines)


def junit_xml(check: ClaimCheck, shared: dict | None = None, note: str | None = None) -> str:
    """JUnit XML (Ant schema: tests/fixtures/junit/junit.xsd): one test case per claim; a claim
    not supported is a failure whose type is its result; ``note`` (early stopping) goes in
    ``system-out`` and the ``early_stopping`` property."""
    import datetime
    import socket
    import xml.etree.ElementTree as ET

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (
        datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
        if epoch
        else datetime.datetime.now(datetime.timezone.utc)
    ).strftime("%Y-%m-%dT%H:%M:%S")
    failures = sum(not r.supported for r in check.results)
    counts = {
        "tests": str(len(check.results)),
        "failures": str(failures),
        "errors": "0",
        "time": "0",
    }
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": "rankci check",
            "package": "rankci",
            "id": "0",
            "timestamp": when,
            "hostname": socket.gethostname() or "localhost",
            **counts,
        },
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("alpha", f"{check.alpha:g}"),
        ("test", check.test),
        ("unit", check.unit),
        ("multiplicity", "holm"),
        ("family_size", str(check.family_size)),
        ("guarantee", check.guarantee),
        *([("early_stopping", note)] if note else []),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": value})
    for r in check.results:
        name = r.claim.text + (f" [{r.group}]" if r.group else "")
        case = ET.SubElement(
            suite, "testcase", {"name": name, "classname": "rankci.check", "time": "0"}
        )
        if not r.supported:
            failure = ET.SubElement(
                case, "failure", {"message": f"{r.result}: {r.claim.text}", "type": r.result}
            )
            failure.text = r.evidence
    ET.SubElement(suite, "system-out").text = "\n".join(
        [f"{r.result}: {r.claim.text}: {r.evidence}" for r in check.results]
        + [check.guarantee, *([note] if note else []), *_not_shared_lines(shared)]
    )
    ET.SubElement(suite, "system-err").text = ""
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")

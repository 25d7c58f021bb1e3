"""``rankci monitor DATA``: replay an evaluation through the anytime-valid monitor.

Contract for reproducibility: items missing a score for any model are excluded (and counted); the
remaining n items are sorted by item id as strings; the evaluation order is
``numpy.random.default_rng(S).permutation(n)`` of that list (``--order-seed S``); looks fall on
every K-th item (``--look-every K`` or ``P%`` of n, rounded up) and on the last item.

The flags of the monitor's settings are built from the fields of
:class:`rankci.sequential.spec.MonitorSpec` (:func:`setting_flags`), which checks their values.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from rankci.commands.flags import add_data_arguments
from rankci.commands.loading import load_data
from rankci.commands.output import emit, target_sentence, to_json, with_target
from rankci.commands.tables import text_table
from rankci.sequential.spec import (
    BETS,
    CERTIFIERS,
    FREEZE_WORDS,
    REPLAY_DEFAULTS,
    RETIRE_RULES,
    SAMPLINGS,
    MonitorSpec,
)

if TYPE_CHECKING:
    from rankci.sequential import MonitorRun

NAME = "monitor"
HELP = (
    "anytime-valid rank intervals while an evaluation runs: replay DATA in a seeded random "
    "order, certify at every look, retire models early"
)
OUTPUT_FORMATS = ("table", "json")
# the choices of the settings, read from rankci.sequential.spec (no numpy: the parser stays light)
__all__ = ["BETS", "CERTIFIERS", "FREEZE_CHOICES", "RETIRE_RULES", "SAMPLINGS", "setting_flags"]
FREEZE_CHOICES = FREEZE_WORDS  # --freeze -> MonitorSpec(freeze=)


def numbers(text: str) -> tuple[float, ...]:
    """``"0.1,0.2"`` -> (0.1, 0.2): a list flag (``--grid``)."""
    return tuple(float(part) for part in text.split(",") if part.strip())


_TYPES = {"float": float, "int": int, "floats": numbers}
_CLI_NOTES = {"retire": " (width:T for U - L <= T)", "grid": " (comma-separated)"}


def setting_flags() -> dict[str, str]:
    """Each setting of :class:`~rankci.sequential.spec.MonitorSpec` -> the flag that sets it
    (``width`` is the T of ``--retire width:T``; ``n_items`` is set from the data)."""
    out = {}
    for setting in dataclasses.fields(MonitorSpec):
        flag = setting.metadata.get("flag", "--" + setting.name.replace("_", "-"))
        if flag is not None:
            out[setting.name] = flag
    return out


def _flag_options(setting: dataclasses.Field) -> dict[str, Any]:
    """argparse options of one setting: its default, choices or type and help, from the spec."""
    meta = setting.metadata
    default = REPLAY_DEFAULTS.get(setting.name, setting.default)
    options: dict[str, Any] = {"default": default}
    if meta.get("words"):
        words = meta["words"]
        options["choices"] = tuple(words)
        options["default"] = next(w for w, v in words.items() if v is default or v == default)
    elif meta.get("choices") and setting.name != "retire":  # --retire also takes width:T
        options["choices"] = meta["choices"]
    elif meta.get("type") in _TYPES:
        options["type"] = _TYPES[meta["type"]]
    if meta.get("metavar"):
        options["metavar"] = meta["metavar"]
    shown = options["default"]
    shown = ",".join(map(str, shown)) if isinstance(shown, tuple) else shown
    text = meta["help"] + _CLI_NOTES.get(setting.name, "")
    text += "" if shown is None else f" (default {shown})"
    options["help"] = text.replace("%", "%%")
    return options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    group = parser.add_argument_group("monitor")
    group.add_argument(
        "--order-seed",
        dest="order_seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the item order (default 0)",
    )
    flags = setting_flags()
    for setting in dataclasses.fields(MonitorSpec):
        flag = flags.get(setting.name)
        if flag is not None and " " not in flag:  # width: the T of --retire width:T
            group.add_argument(flag, dest=setting.name, **_flag_options(setting))
    state = parser.add_argument_group("saved state")
    state.add_argument(
        "--save",
        metavar="STATE.npz",
        help="after the replay, write the monitor's whole state to STATE.npz (atomically), to "
        "be continued by --resume on the items or votes that arrive next",
    )
    state.add_argument(
        "--resume",
        metavar="STATE.npz",
        help="continue the monitor saved in STATE.npz: DATA's items (or votes) are fed after "
        "those it consumed, with its saved settings (a monitor flag that differs is refused); "
        "on an entry=open monitor, DATA's new models join it first",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    output.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def parse_retire(value: str) -> tuple[str, int]:
    """``RULE`` or ``width:T`` -> (rule, width target)."""
    rule, _, target = value.partition(":")
    if rule != "width" and target:
        raise ValueError(f"--retire {value!r}: only the width rule takes a target (width:T)")
    if rule not in RETIRE_RULES:
        raise ValueError(
            f"--retire {value!r}: unknown retirement rule {rule!r}; choose one of "
            + ", ".join(RETIRE_RULES)
        )
    if not target:
        return rule, 0
    try:
        width = int(target)
    except ValueError:
        raise ValueError(f"--retire {value!r}: the width target must be an integer") from None
    return rule, width


def monitor_spec(args: argparse.Namespace) -> MonitorSpec:
    """The :class:`~rankci.sequential.spec.MonitorSpec` of the flags (errors name the flags)."""
    values = {name: getattr(args, name) for name in setting_flags() if hasattr(args, name)}
    values["retire"], values["width"] = parse_retire(args.retire)
    values["freeze"] = FREEZE_CHOICES[args.freeze]
    return MonitorSpec.from_flags(values)


def run(args: argparse.Namespace) -> int:
    from rankci.commands.loading import vote_layout_of
    from rankci.sequential import replay

    _check_save_path(args)
    if str(args.data).endswith(".parquet"):
        from rankci.service.export import is_board_export

        if is_board_export(args.data):
            return run_board_export(args)
    if vote_layout_of(args.data, args) is not None:
        return run_votes(args)
    resumed = _resumed(args, "scores")
    spec = monitor_spec(args) if resumed is None else None
    _finite_bounds(args)
    scores = load_data(args)
    scores, rescaled = _rescaled(scores, args)
    result = replay(scores, spec, order_seed=args.order_seed, monitor=resumed)
    if args.save:
        result.monitor.save(args.save)
    emit(render(result, args.format, args, rescaled), args)
    return 0


def _check_save_path(args: argparse.Namespace) -> None:
    """``--save`` into a folder that exists (checked before any work)."""
    import os

    if args.save:
        folder = os.path.dirname(os.path.abspath(args.save))
        if not os.path.isdir(folder):
            raise ValueError(f"--save {args.save}: the folder {folder} does not exist")


def _resumed(args: argparse.Namespace, data: str):
    """The monitor of ``--resume STATE`` (None without it): a score monitor for a score table
    (``data="scores"``), an arena monitor for votes; monitor flags that differ from its saved
    settings are refused, naming them."""
    if not args.resume:
        return None
    from rankci.sequential.persistence import (
        ARENA_FORMAT,
        FORMAT,
        OLD_FORMATS,
        OPEN_FORMAT,
        read_state,
    )

    formats = (ARENA_FORMAT,) if data == "votes" else (FORMAT, *OLD_FORMATS, OPEN_FORMAT)
    try:
        form, _, _ = read_state(args.resume, *formats)
    except ValueError as error:
        kind = "a vote table" if data == "votes" else "a score table"
        raise ValueError(f"--resume {error} (DATA {args.data} is {kind})") from None
    if form == ARENA_FORMAT:
        from rankci.votes.sequential import ArenaMonitor as restore_with
    elif form == OPEN_FORMAT:
        from rankci.sequential.entry import OpenMonitor as restore_with
    else:
        from rankci.sequential.monitor import Monitor as restore_with
    monitor = restore_with.restore(args.resume)
    conflicts = resume_conflicts(args, monitor.spec)
    if conflicts:
        raise ValueError(
            f"--resume {args.resume}: the saved monitor keeps its settings; "
            + "; ".join(conflicts)
            + ". Drop these flags (or start a new monitor without --resume)"
        )
    return monitor


def resume_conflicts(args: argparse.Namespace, saved: MonitorSpec) -> list[str]:
    """The monitor flags given (other than their defaults) that differ from the saved spec,
    each as ``"--flag VALUE (saved: VALUE)"``."""
    flags = setting_flags()
    given = [
        name
        for name, flag in flags.items()
        if " " not in flag and hasattr(args, name) and getattr(args, name) != _default_of(name)
    ]
    if not given:
        return []
    values = {name: getattr(args, name) for name in given}
    if "retire" in values:
        values["retire"], values["width"] = parse_retire(args.retire)
    if "freeze" in values:
        values["freeze"] = FREEZE_CHOICES[args.freeze]
    current = {f.name: getattr(saved, f.name) for f in dataclasses.fields(MonitorSpec)}
    asked = MonitorSpec.from_flags({**current, **values})
    out = []
    for name in given:
        names = ("retire", "width") if name == "retire" else (name,)
        if any(getattr(asked, n) != getattr(saved, n) for n in names):
            shown = getattr(saved, name)
            if name == "retire" and saved.retire == "width":
                shown = f"width:{saved.width}"
            out.append(f"{flags[name]} {getattr(args, name)} (saved: {shown})")
    return out


def run_votes(args: argparse.Namespace) -> int:
    """A vote table: the arena monitor (:mod:`rankci.votes.sequential`) over the votes in time
    order (the ``timestamp`` column, else the file order); ``--order-seed`` is not used."""
    import sys

    from rankci.formats import VOTE_FORMATS
    from rankci.sequential.spec import parse_look_every
    from rankci.votes.read import read_votes, reading_summary
    from rankci.votes.sequential import replay_votes

    resumed = _resumed(args, "votes")
    if resumed is None:
        values = {name: getattr(args, name) for name in setting_flags() if hasattr(args, name)}
        values["retire"], values["width"] = parse_retire(args.retire)
        values["freeze"] = FREEZE_CHOICES[args.freeze]
        if values.get("sampling") == "finite" and values.get("n_items") is not None:
            raise ValueError("--sampling finite --n-items: a vote table is an open stream of votes")
        values["sampling"] = "iid"
        values["n_items"] = None
        spec = MonitorSpec.from_flags(values)
    else:
        spec = resumed.spec
    fmt = args.input_format if args.input_format in VOTE_FORMATS else "auto"
    votes = read_votes(args.data, format=fmt)
    print(f"rankci: {reading_summary(votes)}", file=sys.stderr)
    if votes.n_votes == 0:
        raise ValueError(f"{args.data}: the vote table holds no votes")
    # the look interval as a vote count, recorded in the spec (a "P%" is of this table's votes)
    every = parse_look_every(spec.look_every or "1%", votes.n_votes)
    if resumed is None:
        mon = replay_votes(votes, spec.replace(look_every=every), look_every=every)
    else:
        mon = replay_votes(votes, look_every=every, monitor=resumed)
    if args.save:
        mon.save(args.save)
    emit(render_votes(mon, args.format, args, excluded=votes.excluded), args)
    return 0


def run_board_export(args: argparse.Namespace) -> int:
    """An export of a ``rankci serve`` board (``rankci export``): the board rebuilt as the
    server rebuilds it (:func:`rankci.service.export.replay_export`), so its looks, certified
    pairs and rank bounds are the board's, bit for bit. The settings and the item order are the
    board's, read from the file: the monitor flags do not apply, and one set to other than its
    default is refused."""
    import sys

    from rankci.service.export import replay_export

    changed = [
        flag
        for name, flag in setting_flags().items()
        if " " not in flag and hasattr(args, name) and getattr(args, name) != _default_of(name)
    ]
    if args.order_seed != 0:
        changed.append("--order-seed")
    changed += [flag for flag in ("--save", "--resume") if getattr(args, flag[2:], None)]
    if changed:
        raise ValueError(
            f"{args.data} is a board export: its settings and item order are the board's "
            f"(stored in the file), so {', '.join(changed)} cannot apply; drop them"
        )
    board = replay_export(args.data)
    if board.spec.kind == "votes":  # the arena monitor, fed every full chunk as the board fed it
        looks = board.monitor.looks()
        print(
            f"rankci: replayed votes board {board.spec.id!r} from {args.data}: "
            f"{board.received} votes ({board.monitor.n_votes} fed to the monitor, the rest "
            f"waiting for a full chunk of {board.spec.look_every}), {len(board.events)} events, "
            f"{len(looks)} looks",
            file=sys.stderr,
        )
        emit(render_votes(board.monitor, args.format, args), args)
        return 0
    print(
        f"rankci: replayed board {board.spec.id!r} from {args.data}: {board.received} scores, "
        f"{len(board.events)} events, {len(board.monitor.looks)} looks",
        file=sys.stderr,
    )
    emit(render_board(board, args.format, args), args)
    return 0


def _default_of(name: str):
    """The command-line default of a setting (what argparse fills in when it is not given)."""
    setting = next(f for f in dataclasses.fields(MonitorSpec) if f.name == name)
    return _flag_options(setting)["default"]


def render_board(board, fmt: str, args: argparse.Namespace | None = None) -> str:
    """A replayed board: its history (looks, events, entries, first certifications) and the
    ranking at its last look."""
    history = board.history()
    ranking = board.ranking
    if fmt == "json":
        payload = {
            "board": board.spec.id,
            "n_scores": board.received,
            "state": board.state,
            **history,
            "ranking": ranking.to_dict(),
        }
        return to_json(payload, args)
    import pandas as pd

    entries = {e["model"]: e for e in history["entries"]}
    frame = ranking.to_frame()
    table = pd.DataFrame(
        {
            "model": frame["model"],
            "score": frame["score"].round(4),
            "rank interval": [
                f"[{lo}, {hi}]" for lo, hi in zip(frame["rank_lower"], frame["rank_upper"])
            ],
            "joined at": [entries[m]["t"] for m in frame["model"]],
            "scores": [entries[m]["n_scores"] for m in frame["model"]],
        }
    )
    head = (
        f"board {board.spec.id}: {board.spec.n_models} models, {board.spec.n_items} items, "
        f"{board.received} scores; {len(history['looks'])} looks, the last at "
        f"t={history['looks'][-1]['t'] if history['looks'] else 0}; "
        f"{len(history['first_certified'])} certified pairs; state {board.state}"
    )
    return "\n".join([head, "", text_table(table), "", ranking.guarantee])


ARENA_TARGET = (
    "target: the head-to-head preference of each pair, P(j wins) + P(tie)/2 in a vote between j "
    "and l under the vote-generating process (not the Bradley-Terry strength when Bradley-Terry "
    "is misspecified)"
)


def render_votes(
    mon, fmt: str, args: argparse.Namespace | None = None, excluded: dict | None = None
) -> str:
    """The arena monitor's output: the board, the looks, the target and the guarantee."""
    import numpy as np

    from rankci.votes.sequential import arena_guarantee

    cert = mon.certified()
    try:
        ranking = mon.ranking()
        cycle = None
    except ValueError as error:
        ranking, cycle = None, str(error)
    share = mon.win_share()
    pairs = [{"winner": mon.models[j], "loser": mon.models[l]} for j, l in zip(*np.nonzero(cert))]
    entry = mon.spec.entry
    if fmt == "json":
        payload = {
            "target": ARENA_TARGET,
            "guarantee": arena_guarantee(mon.alpha, mon.n_models, entry),
            "unit": "vote",
            "n_votes": mon.n_votes,
            "alpha": mon.alpha,
            "bet": mon.spec.bet,
            "certifier": "bonferroni",
            "looks": mon.looks(),
            "certified": pairs,
            "threshold": mon.certifier.threshold if entry != "open" else None,
            "excluded": dict(excluded or {}),
            "models": (
                ranking.to_dict()["models"]
                if ranking is not None
                else [{"model": m, "win_share": float(s)} for m, s in zip(mon.models, share)]
            ),
        }
        if entry == "open":  # each pair's threshold is its later entrant's
            payload["entrants"] = [dict(e) for e in mon.entrants]
        if cycle:
            payload["cycle"] = cycle
        return to_json(payload, args)
    head = (
        f"{mon.n_models} models, {mon.n_votes} votes in time order; bonferroni certifier, "
        f"{mon.spec.bet} bet, alpha = {mon.alpha:g}; {len(mon.looks())} looks"
    )
    lines = [head, f"certified head-to-head dominances: {len(pairs)}"]
    if not pairs and entry == "open":
        lines.append(
            "nothing certified: no pair's wealth reached its threshold 1/alpha_jl (its later "
            "entrant's level); more votes between the closest pairs are needed"
        )
    elif not pairs:
        top = float(np.nanmax(mon.log_wealth()))
        lines.append(
            f"nothing certified: no pair's wealth reached M(M-1)/alpha = "
            f"{mon.certifier.threshold:g} (the largest is {np.exp(top):.3g}); more votes "
            "between the closest pairs are needed"
        )
    if ranking is not None:
        import pandas as pd

        frame = pd.DataFrame(
            {
                "model": ranking.models,
                "win share": np.round(ranking.score, 4),
                "rank interval": [f"[{lo}, {hi}]" for lo, hi in zip(ranking.lower, ranking.upper)],
            }
        ).sort_values(["win share", "model"], ascending=[False, True])
        lines += ["", text_table(frame)]
    else:
        lines.append(cycle)
    guarantee = arena_guarantee(mon.alpha, mon.n_models, entry)
    return "\n".join([*lines, "", guarantee, ARENA_TARGET])


def _finite_bounds(args: argparse.Namespace) -> None:
    """The monitor bets on scores in a known range: ``--bounds`` must be finite."""
    bounds = getattr(args, "bounds", None)
    if bounds is not None and not all(abs(b) < float("inf") for b in bounds):
        raise ValueError(
            f"rankci monitor needs the scores' range: --bounds {bounds[0]:g} {bounds[1]:g} "
            "is not finite; give the range the scores can take (--bounds 0 100 for "
            "percentages), and the monitor rescales them to [0, 1]"
        )


def _rescaled(scores, args: argparse.Namespace):
    """Scores read with ``--bounds LOW HIGH`` (other than 0 1), mapped to [0, 1] by
    (x - LOW) / (HIGH - LOW): the monitor's bets need scores in [0, 1]. Returns the scores and
    the bounds rescaled from (None when nothing was rescaled)."""
    import dataclasses as dc

    bounds = getattr(args, "bounds", None)
    if bounds is None or tuple(bounds) == (0.0, 1.0):
        return scores, None
    low, high = bounds
    notes = {**scores.notes, "rescaled_from": [low, high]}
    return dc.replace(scores, score=(scores.score - low) / (high - low), notes=notes), (low, high)


def render(
    result: MonitorRun,
    fmt: str,
    args: argparse.Namespace | None = None,
    rescaled: tuple[float, float] | None = None,
) -> str:
    import pandas as pd

    if fmt == "json":
        payload = with_target(result.to_dict(), result.config["sampling"])
        if rescaled is not None:
            payload["rescaled_from"] = list(rescaled)
        return to_json(payload, args)
    config = result.config
    frame = result.to_frame()
    frame.insert(
        4,
        "rank interval",
        [f"[{lo}, {hi}]" for lo, hi in zip(frame["rank_lower"], frame["rank_upper"])],
    )
    frame = frame.drop(columns=["rank_lower", "rank_upper"])
    if "rank_set" in frame:
        frame["rank_set"] = ["{" + ", ".join(map(str, s)) + "}" for s in frame["rank_set"]]
    retired = result.ranking.details.get("retired", {})
    frame["retired at"] = pd.array([retired.get(m, {}).get("t") for m in frame["model"]])
    head = (
        f"{result.ranking.n_models} models, {result.n_items} items "
        f"(sampling {config['sampling']}, order seed {config['order_seed']}); "
        f"{config['certifier']} certifier, {config['bet']} bet, alpha = {config['alpha']:g}"
        f"{', settled pairs frozen' if config.get('freeze') else ''}; "
        f"{len(result.looks)} looks, one every {config['look_every']} items"
    )
    lines = [head]
    if rescaled is not None:
        lines.append(
            f"scores rescaled from [{rescaled[0]:g}, {rescaled[1]:g}] (--bounds) to [0, 1] by "
            f"(score - {rescaled[0]:g}) / {rescaled[1] - rescaled[0]:g}; the scores below are on "
            "that scale"
        )
    if result.excluded.get("items_excluded"):
        lines.append(
            f"excluded: {result.excluded['items_excluded']} items not scored by every model"
        )
    prompts = result.excluded.get("inconsistent_prompts")
    if prompts:
        lines.append(
            f"excluded when the table was read: {prompts['rows']} rows of "
            f"{len(prompts['variants'])} {prompts['reason']} ({', '.join(prompts['variants'])})"
        )
    lines.append(
        f"stopped after {result.n_consumed} items; evaluations used: {result.evaluations} "
        f"({result.cost_fraction:.1%} of the full evaluation)"
    )
    checkpoints = _checkpoints(result.looks)
    if checkpoints:
        lines.append("certified pairs: " + ", ".join(f"{n} at t={t}" for t, n in checkpoints))
    aim = target_sentence(config["sampling"], "anytime")
    return "\n".join([*lines, "", text_table(frame), "", result.ranking.guarantee, aim])


def _checkpoints(looks: list[dict], count: int = 5) -> list[tuple[int, int]]:
    """A few looks spread over the run, the last one included."""
    if not looks:
        return []
    picks = sorted({round(i * (len(looks) - 1) / (count - 1)) for i in range(count)})
    return [(looks[i]["t"], looks[i]["n_certified"]) for i in picks]

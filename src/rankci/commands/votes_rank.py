"""``rankci rank DATA --votes``: DATA is a vote table; a Bradley-Terry board through max-t / Holm.

Not a command of its own (no ``NAME``): ``rankci rank`` adds these flags and hands over when
``--votes`` is given. The vote file is read by :func:`load_votes`, the one function that turns
DATA into :class:`rankci.votes.Votes` here.
"""

from __future__ import annotations

import argparse

TIES = ("half", "davidson", "rao-kupper")
COVARIANCES = ("auto", "model", "sandwich", "cluster", "bootstrap")
WINNERS = {"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 3}


def add_vote_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a vote table (used with ``--votes``)."""
    group = parser.add_argument_group("votes (DATA a table of pairwise votes, with --votes)")
    group.add_argument(
        "--votes", action="store_true",
        help="DATA is a vote table: columns model_a, model_b, winner (model_a / model_b / tie / "
        "tie (bothbad)), optional prompt, voter, position and numeric covariates; --cluster-col "
        "names the cluster column of the clustered covariance (default: prompt, else voter; "
        "'none' for none)",
    )
    group.add_argument("--ties", default="half", choices=TIES,
                       help="tie convention: half a win to each side (LMArena), Davidson or Rao-Kupper")
    group.add_argument("--position", action="store_true",
                       help="fit a first-position effect (column position, else model_a first)")
    group.add_argument("--covariates", nargs="+", default=[], metavar="NAME",
                       help="style control: NAME_a / NAME_b columns (normalised differences) or a NAME column")
    group.add_argument("--vote-covariance", default="auto", choices=COVARIANCES,
                       help="covariance of the strengths (auto: clustered by the cluster column, else sandwich; --covariance is max-t's for scores)")
    group.add_argument("--bootstrap-reps", type=int, default=200, metavar="N",
                       help="re-fits of --covariance bootstrap")
    group.add_argument("--probes", action="store_true",
                       help="also run the probes (connectivity, separation, position, "
                       "intransitivity, voters, votes needed), each with its test and threshold")
    group.add_argument("--elo-anchor", metavar="MODEL", help="the model whose Elo display is --elo-rating")
    group.add_argument("--elo-rating", type=float, default=1000.0, metavar="R",
                       help="Elo display of the anchor (default 1000; the mean without --elo-anchor)")


def load_votes(path: str):
    """DATA -> Votes: the model_a / model_b / winner columns of a CSV, TSV, Parquet or JSONL file.

    The placeholder for the readers (``read_votes``): every vote path of the command line reads
    its file here and nowhere else.
    """
    import numpy as np
    import pandas as pd

    from rankci.votes import Votes

    lower = path.lower()
    if lower.endswith(".parquet"):
        frame = pd.read_parquet(path)
    elif lower.endswith((".jsonl", ".ndjson")):
        frame = pd.read_json(path, lines=True)
    else:
        frame = pd.read_csv(path, sep="\t" if lower.endswith(".tsv") else ",")
    missing = [c for c in ("model_a", "model_b", "winner") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (a vote table needs model_a, "
                         f"model_b and winner; columns are {', '.join(map(str, frame.columns))})")
    a, b = frame["model_a"].astype(str), frame["model_b"].astype(str)
    winner = frame["winner"].astype(str).str.strip().str.lower()
    # a winner may also name the model
    named_a, named_b = winner == a.str.lower(), winner == b.str.lower()
    code = winner.map(WINNERS)
    code = code.where(~named_a, 0).where(~named_b, 1)
    unknown = code.isna()
    selfplay = a == b
    if unknown.any():
        row = int(np.flatnonzero(unknown.to_numpy())[0])
        raise ValueError(f"{path}: row {row + 2}: winner {frame['winner'].iloc[row]!r} is not "
                         "model_a, model_b, tie, tie (bothbad) or one of the two models")
    keep = ~selfplay.to_numpy()
    models, codes = np.unique(np.concatenate([a.to_numpy(), b.to_numpy()]), return_inverse=True)
    n = len(frame)
    columns = {c: frame[c].to_numpy()[keep] for c in frame.columns
               if c not in ("model_a", "model_b", "winner")}
    return Votes.from_arrays(
        codes[:n][keep], codes[n:][keep], code.to_numpy().astype(int)[keep], models=list(models),
        columns=columns, excluded={"self_battles": int(selfplay.sum())}, source={"file": path},
    )


def run_votes(args: argparse.Namespace) -> int:
    from rankci.commands.output import emit, ranking_json
    from rankci.commands.tables import display_frame, markdown_table, text_table
    from rankci.votes import rank_votes

    if args.multiplicity not in ("max-t", "holm"):
        raise ValueError(f"--multiplicity {args.multiplicity} is not offered for votes; use max-t or holm")
    votes = load_votes(args.data)
    cluster = getattr(args, "cluster_col", None) or "auto"
    cluster = None if cluster.lower() == "none" else cluster
    ranking = rank_votes(
        votes, alpha=args.alpha, multiplicity=args.multiplicity, coverage=args.coverage,
        delta=args.delta, ties=args.ties, position=args.position, covariates=args.covariates,
        covariance=args.vote_covariance, cluster=cluster, bootstrap_reps=args.bootstrap_reps,
        draws=getattr(args, "draws", None) or 1000, seed=args.seed, elo_anchor=args.elo_anchor, elo_rating=args.elo_rating,
    )
    probes = None
    if args.probes:
        from rankci.votes.probes import probe_votes

        probes = probe_votes(votes, ranking=ranking, alpha=args.alpha, rng=ranking.spec.seed)
    if args.format == "json":
        payload = ranking.to_dict(args.top_k, pairs=args.pairs)
        if probes is not None:
            payload["probes"] = probes
        emit(ranking_json(payload), args)
        return 0
    if args.format == "csv":
        emit(ranking.to_frame(args.top_k).to_csv(index=False), args)
        return 0
    spec = ranking.spec
    head = (
        f"{ranking.n_models} models, {ranking.n_units} votes; Bradley-Terry ({spec.ties} ties), "
        f"{spec.covariance} covariance" + (f" by {spec.cluster}" if spec.cluster else "")
        + f", {spec.multiplicity}, {ranking.coverage} coverage, alpha = {ranking.alpha:g}"
    )
    lines = [head]
    if votes.excluded.get("self_battles"):
        lines.append(f"excluded: {votes.excluded['self_battles']} votes of a model against itself")
    frame = display_frame(ranking, args.top_k).rename(columns={"rank_ub": "Rank (UB)"})
    for name, c in ranking.details.get("coefficients", {}).items():
        lines.append(f"{name}: {c['estimate']:+.4f} log-odds [{c['lower']:+.4f}, {c['upper']:+.4f}]")
    note = ("Rank (UB) is LMArena's overlap rule (1 + models whose marginal 95% interval lies wholly "
            "above); it carries no joint guarantee. The rank interval does.")
    table = markdown_table(frame) if args.format == "markdown" else text_table(frame)
    probe_lines = []
    if probes is not None:
        probe_lines = ["", "probes (flagged when the threshold is crossed):"] + [
            f"  {name}: {'FLAGGED' if p['flagged'] else 'ok'} - {p['message']} "
            f"[{p['test']}; threshold: {p['threshold']}]"
            for name, p in probes.items() if isinstance(p, dict)
        ]
    emit("\n".join([*lines, "", table, "", ranking.guarantee, note, *probe_lines]), args)
    return 0
